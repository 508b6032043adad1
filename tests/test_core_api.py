"""The Python API and the ontology gate."""

from __future__ import annotations

import datetime as dt

import pytest

from trike import ConflictError, NotFoundError, OntologyError, QueryError, TrikeDB, TrikeError


def test_add_is_idempotent_and_updates_attributes(tmp_path):
    db = TrikeDB(tmp_path / "g.yaml")
    db.add("a", "P", "b")
    db.add("a", "P", "b")
    assert len(db.facts()) == 1
    db.add("a", "P", "b", weight=2)
    db.add("a", "P", "b", note="x")
    assert db.facts() == [{"s": "a", "p": "P", "o": "b", "weight": 2, "note": "x"}]
    assert TrikeDB(tmp_path / "g.yaml").facts() == db.facts()


def test_file_is_created_on_first_write(tmp_path):
    p = tmp_path / "g.yaml"
    db = TrikeDB(p)
    assert not p.exists()
    assert db.match() == []
    db.add("a", "P", "b")
    assert p.exists()


def test_a_missing_folder_is_an_error_not_created(tmp_path):
    db = TrikeDB(tmp_path / "typo" / "g.yaml")
    with pytest.raises(TrikeError, match="does not exist"):
        db.add("a", "P", "b")
    assert not (tmp_path / "typo").exists()


def test_sparql_service_is_refused(pipeline_file):
    db = TrikeDB(pipeline_file)
    with pytest.raises(QueryError, match="SERVICE"):
        db.sparql("SELECT * WHERE { SERVICE <http://127.0.0.1:9/sparql> { ?s ?p ?o } }")
    with pytest.raises(QueryError, match="SERVICE"):
        db.update("INSERT { ?s t:P ?o } WHERE { SERVICE <http://127.0.0.1:9/> { ?s ?p ?o } }")
    # the word inside a string or an IRI is not a SERVICE clause
    assert db.sparql('SELECT ?s WHERE { ?s ?p "SERVICE <http://x/>" }') == []


def test_remove_patterns(pipeline_file):
    db = TrikeDB(pipeline_file)
    assert db.remove(p="INGESTS_TO") == 1
    assert db.remove(s="*") == 2
    assert db.facts() == []
    with pytest.raises(TrikeError, match="at least one"):
        db.remove()
    assert TrikeDB(pipeline_file).facts() == []


def test_set_node_merges_and_deletes(pipeline_file):
    db = TrikeDB(pipeline_file)
    db.set_node("crm-sync-job", owner="data", schedule=None)
    assert db.get_node("crm-sync-job")["props"] == {"type": "job", "owner": "data"}
    assert TrikeDB(pipeline_file).get_node("crm-sync-job")["props"] == {"type": "job", "owner": "data"}


def test_batch_is_one_save_and_all_or_nothing(tmp_path):
    p = tmp_path / "g.yaml"
    db = TrikeDB(p, ontology={"predicates": {"P": "x", "Q": "y"}})
    db.add("seed", "P", "x")
    before = p.read_text()
    with pytest.raises(OntologyError):
        with db.batch():
            db.add("a", "P", "b")
            db.set_node("a", type="thing")
            db.add("a", "NOPE", "c")  # refused: the whole batch goes
    assert p.read_text() == before
    assert db.match("a") == [] and "a" not in db.nodes()
    with db.batch():
        for i in range(100):
            db.add(f"n{i}", "P", f"n{i + 1}")
        db.set_node("n0", type="start")
    db2 = TrikeDB(p)
    assert len(db2.facts()) == 101 and db2.get_node("n0")["props"] == {"type": "start"}


def test_match_globs_and_attribute_filters(pipeline_file):
    db = TrikeDB(pipeline_file)
    assert [f["p"] for f in db.match(s="*-job")] == ["INGESTS_TO"]
    assert [f["s"] for f in db.match(o="RAW_*")] == ["crm-sync-job", "LEGACY_DUMP"]
    assert [f["s"] for f in db.match(p="?ROVIDES")] == ["salesflow-crm"]
    assert [f["s"] for f in db.match(deprecated=True)] == ["LEGACY_DUMP"]
    assert db.match(deprecated=False) == []
    assert [f["s"] for f in db.match(prov="memo*")] == ["LEGACY_DUMP"]
    assert len(db.match(limit=2)) == 2


def test_query_joins_on_shared_names(pipeline_file):
    db = TrikeDB(pipeline_file)
    rows = db.query(["?vendor PROVIDES ?job", "?job INGESTS_TO ?table"])
    assert rows == [{"vendor": "salesflow-crm", "job": "crm-sync-job", "table": "RAW_CRM_CONTACTS"}]
    # facts added later by someone else join too
    db.add("RAW_CRM_CONTACTS", "MIGRATED_TO", "CRM_V2")
    rows = db.query(["?job INGESTS_TO ?t", "?t MIGRATED_TO ?new"])
    assert rows == [{"job": "crm-sync-job", "t": "RAW_CRM_CONTACTS", "new": "CRM_V2"}]
    assert db.query(["?x PROVIDES nothing-here"]) == []
    assert db.query(["salesflow-crm PROVIDES ?j", "?j INGESTS_TO RAW_CRM_CONTACTS"]) == [{"j": "crm-sync-job"}]
    with pytest.raises(QueryError, match="three parts"):
        db.query(["?a PROVIDES"])


def test_query_typed_objects_and_quoted_names(tmp_path):
    db = TrikeDB(tmp_path / "g.yaml")
    db.add("ProductA", "baud_rate", 9600)
    db.add("my node", "LIKES", "other node")
    assert db.query(["?p baud_rate 9600"]) == [{"p": "ProductA"}]
    assert db.query(['"my node" LIKES ?x']) == [{"x": "other node"}]


def test_sparql_select_ask_construct(pipeline_file):
    db = TrikeDB(pipeline_file)
    rows = db.sparql("SELECT ?job ?t WHERE { ?job t:INGESTS_TO ?t }")
    assert rows == [{"job": "crm-sync-job", "t": "RAW_CRM_CONTACTS"}]
    assert db.sparql("ASK { t:salesflow-crm t:PROVIDES t:crm-sync-job }") is True
    assert db.sparql("ASK { t:crm-sync-job t:PROVIDES t:salesflow-crm }") is False
    triples = db.sparql("CONSTRUCT { ?a t:FEEDS ?b } WHERE { ?a t:INGESTS_TO ?b }")
    assert triples == [{"s": "crm-sync-job", "p": "FEEDS", "o": "RAW_CRM_CONTACTS"}]
    # typed node properties
    assert db.sparql("SELECT ?pii WHERE { t:RAW_CRM_CONTACTS t:pii ?pii }") == [{"pii": True}]
    # reified edge attributes
    rows = db.sparql("""SELECT ?old ?since ?prov WHERE {
        ?st a rdf:Statement ; rdf:subject ?old ; rdf:predicate t:MIGRATED_TO ;
            t:since ?since ; t:prov ?prov }""")
    assert rows == [{"old": "LEGACY_DUMP", "since": "2026-04", "prov": "memo #1284"}]
    assert db.sparql("SELECT ?j WHERE { ?j a t:job }") == [{"j": "crm-sync-job"}]
    with pytest.raises(QueryError, match="bad SPARQL"):
        db.sparql("SELEKT ?x WHERE { ?x ?y ?z }")


def test_sparql_with_japanese_names(tmp_path):
    db = TrikeDB(tmp_path / "g.yaml")
    db.add("請求システム", "担当", "担当A")
    db.add("名前 に 空白", "担当", "担当A")
    rows = db.sparql("SELECT ?s WHERE { ?s t:担当 t:担当A } ORDER BY ?s")
    assert {r["s"] for r in rows} == {"請求システム", "名前 に 空白"}
    assert db.sparql("SELECT ?l WHERE { t:請求システム rdfs:label ?l }") == [{"l": "請求システム"}]


def test_sparql_sees_writes_without_rebuilding(tmp_path):
    db = TrikeDB(tmp_path / "g.yaml")
    db.add("a", "P", "b")
    assert db.sparql("SELECT ?o WHERE { t:a t:P ?o }") == [{"o": "b"}]
    proj = db._proj
    db.add("a", "P", "c", w=1)
    db.set_node("a", type="thing")
    assert db._proj is proj  # kept current, not rebuilt
    assert {r["o"] for r in db.sparql("SELECT ?o WHERE { t:a t:P ?o }")} == {"b", "c"}
    assert db.sparql("SELECT ?w WHERE { ?st rdf:subject t:a ; t:w ?w }") == [{"w": 1}]
    assert db.sparql("ASK { t:a a t:thing }") is True
    db.remove("a", "P", "c")
    assert db.sparql("SELECT ?o WHERE { t:a t:P ?o }") == [{"o": "b"}]
    assert db.sparql("SELECT ?w WHERE { ?st rdf:subject t:a ; t:w ?w }") == []


def test_update_goes_through_the_gate(pipeline_file):
    db = TrikeDB(pipeline_file)
    res = db.update("INSERT DATA { t:salesflow-crm t:PROVIDES t:billing-job }")
    assert res["added"] == 1
    assert db.match("salesflow-crm", "PROVIDES", "billing-job")
    before = pipeline_file.read_text()
    with pytest.raises(OntologyError, match="unknown predicate 'HACKS'"):
        db.update("INSERT DATA { t:a t:HACKS t:b }")
    assert pipeline_file.read_text() == before
    db.update("DELETE WHERE { t:LEGACY_DUMP t:MIGRATED_TO ?x }")
    assert db.match("LEGACY_DUMP") == []
    db.update('INSERT DATA { t:crm-sync-job t:owner "data team" }')
    assert db.get_node("crm-sync-job")["props"]["owner"] == "data team"
    db.update('DELETE { ?st t:schedule ?v } INSERT { ?st t:schedule "daily" } '
              'WHERE { ?st rdf:subject t:crm-sync-job ; t:schedule ?v }')
    assert db.match("crm-sync-job", "INGESTS_TO")[0]["schedule"] == "daily"
    with pytest.raises(QueryError):
        db.update("INSERT GARBAGE")


def test_get_node_and_not_found(pipeline_file):
    db = TrikeDB(pipeline_file)
    node = db.get_node("RAW_CRM_CONTACTS")
    assert node["props"] == {"type": "table", "schema": "ACME_RAW", "pii": True}
    assert {f["s"] for f in node["in"]} == {"crm-sync-job", "LEGACY_DUMP"}
    assert node["out"] == []
    with pytest.raises(NotFoundError, match="RAW_CRM_CONTACTS"):
        db.get_node("RAW_CRM_CONTACT")


def test_related_depth(pipeline_file):
    db = TrikeDB(pipeline_file)
    one = db.related("salesflow-crm", 1)
    assert [f["o"] for f in one["facts"]] == ["crm-sync-job"]
    two = db.related("salesflow-crm", 2)
    assert {f["p"] for f in two["facts"]} == {"PROVIDES", "INGESTS_TO"}
    three = db.related("salesflow-crm", 3)
    assert {f["p"] for f in three["facts"]} == {"PROVIDES", "INGESTS_TO", "MIGRATED_TO"}
    assert three["nodes"]["LEGACY_DUMP"]["hops"] == 3
    with pytest.raises(TrikeError):
        db.related("salesflow-crm", 4)


def test_stats_and_ontology(pipeline_file):
    db = TrikeDB(pipeline_file)
    st = db.stats()
    assert st["facts"] == 3 and st["nodes"] == 4 and st["predicates"]["PROVIDES"] == 1
    assert st["types"] == {"job": 1, "table": 1}
    onto = db.ontology()
    assert onto["enforced"] is True
    assert onto["predicates"]["OWNED_BY"] == {"description": "asset -> team", "functional": True}
    assert onto["predicates"]["INGESTS_TO"]["domain"] == "job"


def test_projections(pipeline_file):
    db = TrikeDB(pipeline_file)
    g = db.to_rdflib()
    rows = list(g.query("SELECT ?s WHERE { ?s t:PROVIDES ?o }"))
    assert str(rows[0][0]) == "urn:trike:salesflow-crm"
    G = db.to_networkx()
    assert G.nodes["crm-sync-job"]["type"] == "job"
    assert G.has_edge("crm-sync-job", "RAW_CRM_CONTACTS", key="INGESTS_TO")
    assert G.edges["LEGACY_DUMP", "RAW_CRM_CONTACTS", "MIGRATED_TO"]["prov"] == "memo #1284"
    store = db.to_oxigraph()
    assert len(list(store.query("SELECT * WHERE { ?s ?p ?o }"))) == len(store)
    ttl = db.export("ttl")
    assert "@prefix t: <urn:trike:>" in ttl and "rdf:Statement" in ttl
    nt = db.export("nt")
    assert "<urn:trike:salesflow-crm> <urn:trike:PROVIDES> <urn:trike:crm-sync-job> ." in nt
    jsonld = db.export("jsonld")
    assert "urn:trike:salesflow-crm" in jsonld
    with pytest.raises(TrikeError, match="unknown export format"):
        db.export("xml")


# ------------------------------------------------------------------------------------------ the gate

def test_unknown_predicate_names_the_allowed_ones(pipeline_file):
    db = TrikeDB(pipeline_file)
    before = pipeline_file.read_text()
    with pytest.raises(OntologyError) as err:
        db.add("a", "PROVIDE", "b")
    msg = str(err.value)
    assert "'PROVIDE'" in msg and "Did you mean PROVIDES" in msg and "INGESTS_TO" in msg
    assert "PROVIDES" in err.value.allowed
    assert pipeline_file.read_text() == before


def test_domain_range_and_backwards_triples(pipeline_file):
    db = TrikeDB(pipeline_file)
    with pytest.raises(OntologyError, match="backwards"):
        db.add("RAW_CRM_CONTACTS", "INGESTS_TO", "crm-sync-job")
    db.set_node("some-team", type="team")
    with pytest.raises(OntologyError, match="not a table"):
        db.add("crm-sync-job", "INGESTS_TO", "some-team")
    db.add("crm-sync-job", "INGESTS_TO", "untyped-thing")  # no type, no refusal
    # changing a node's type may not break its facts
    with pytest.raises(OntologyError):
        db.set_node("RAW_CRM_CONTACTS", type="team")
    assert db.get_node("RAW_CRM_CONTACTS")["props"]["type"] == "table"


def test_functional_conflict_names_the_existing_value(pipeline_file):
    db = TrikeDB(pipeline_file)
    db.add("RAW_CRM_CONTACTS", "OWNED_BY", "data-team")
    db.add("RAW_CRM_CONTACTS", "OWNED_BY", "data-team")  # same value: fine
    with pytest.raises(ConflictError, match="already has OWNED_BY = 'data-team'") as err:
        db.add("RAW_CRM_CONTACTS", "OWNED_BY", "sales-team")
    assert err.value.existing == "data-team"


def test_functional_change_over_time_closes_the_old_value(tmp_path):
    db = TrikeDB(tmp_path / "g.yaml", ontology={"predicates": {"baud_rate": {"functional": True, "range": "integer"}}})
    db.add("ProductA", "baud_rate", 19200, valid_from=dt.date(2024, 1, 12), prov="DR-001")
    db.add("ProductA", "baud_rate", 9600, valid_from=dt.date(2024, 9, 2), prov="DR-014")
    all_facts = db.match("ProductA", "baud_rate", as_of="all")
    assert all_facts[0]["valid_to"] == dt.date(2024, 9, 2)
    assert [f["o"] for f in db.match("ProductA", "baud_rate")] == [9600]
    assert [f["o"] for f in db.match("ProductA", "baud_rate", as_of="2024-05-01")] == [19200]
    assert db.query(["ProductA baud_rate ?v"], as_of=dt.date(2024, 3, 1)) == [{"v": 19200}]
    with pytest.raises(OntologyError, match="not a integer"):
        db.add("ProductB", "baud_rate", "fast")


def test_same_fact_from_several_sources(tmp_path):
    db = TrikeDB(tmp_path / "g.yaml")
    db.add("ProductA", "uses", "C12", prov="DR-001", confidence=0.6)
    db.add("ProductA", "uses", "C12", prov="DR-007", confidence=0.5)
    (f,) = db.facts()
    assert f["prov"] == ["DR-001", "DR-007"]
    assert f["confidence"] == pytest.approx(0.8)


def test_without_ontology_anything_goes(tmp_path):
    db = TrikeDB(tmp_path / "g.yaml")
    db.add("a", "whatever", "b")
    assert db.ontology()["enforced"] is False


def test_hand_edits_that_break_the_ontology_load_and_check_lists_them(tmp_path):
    p = tmp_path / "g.yaml"
    p.write_text(
        "ontology:\n  predicates:\n    INGESTS_TO: {domain: job, range: table}\n    OWNED_BY: {functional: true}\n"
        "nodes:\n  j: {type: job}\n  t: {type: table}\n"
        "triples:\n- {s: t, p: INGESTS_TO, o: j}\n- {s: j, p: TYPO, o: t}\n"
        "- {s: t, p: OWNED_BY, o: a}\n- {s: t, p: OWNED_BY, o: b}\n- {s: j, p: INGESTS_TO, o: t}\n"
    )
    db = TrikeDB(p)
    problems = db.check()
    assert len(problems) == 3
    assert any("TYPO" in x for x in problems)
    assert any("backwards" in x for x in problems)
    assert any("OWNED_BY" in x and "two values" in x for x in problems)


def test_ontology_argument_is_saved_and_enforced(tmp_path):
    onto = tmp_path / "onto.yaml"
    onto.write_text("ontology:\n  predicates:\n    KNOWS: person -> person\n")
    p = tmp_path / "g.yaml"
    db = TrikeDB(p, ontology=onto)
    with pytest.raises(OntologyError):
        db.add("a", "LIKES", "b")
    db.add("a", "KNOWS", "b")
    assert "KNOWS: person -> person" in p.read_text()
    assert TrikeDB(p).ontology()["enforced"] is True


def test_bad_values_are_refused_before_writing(tmp_path):
    db = TrikeDB(tmp_path / "g.yaml")
    with pytest.raises(TrikeError, match="reserved"):
        db.add("a", "P", "b", s="x")
    with pytest.raises(TrikeError, match="cannot store"):
        db.add("a", "P", "b", obj=object())
    with pytest.raises(TrikeError):
        db.add("", "P", "b")
    with pytest.raises(TrikeError):
        db.add("a", "P", None)
    assert db.facts() == []


def test_awkward_names_round_trip_through_sparql(tmp_path):
    names = ["a b", "x<y>", 'q"uote', "c{d}|e^f`g\\h", "per%cent", "hash#tag", "what?", "tab\tname",
             "改行\nあり", "ünï", "emoji🎉", "ctl\x01"]
    db = TrikeDB(tmp_path / "g.yaml")
    with db.batch():
        for i, n in enumerate(names):
            db.add(n, "REL", names[-1 - i], note=n)
    db2 = TrikeDB(tmp_path / "g.yaml")  # through the file too
    rows = db2.sparql("SELECT ?s ?o WHERE { ?s t:REL ?o }")
    assert {(r["s"], r["o"]) for r in rows} == {(n, names[-1 - i]) for i, n in enumerate(names)}
    rows = db2.sparql("SELECT ?n WHERE { ?st rdf:subject ?s ; t:note ?n }")
    assert {r["n"] for r in rows} == set(names)
