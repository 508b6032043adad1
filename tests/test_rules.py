"""Inference: declarations in the ontology, OWL 2 RL derivations mapped back to facts, apply, freshness."""

from __future__ import annotations

import datetime as dt

import pytest

from trike import OntologyError, TrikeDB, TrikeError
from trike.reasoning import IS_A, instances, materialize, stale_inferences


def triples(facts: list[dict]) -> set[tuple]:
    return {(f["s"], f["p"], f["o"]) for f in facts}


@pytest.fixture
def db(tmp_path):
    return TrikeDB(tmp_path / "g.yaml")


# ------------------------------------------------------------------------------------------ each rule kind

def test_transitive_chain_of_three(db):
    db.declare("PART_OF", "transitive")
    db.add("a", "PART_OF", "b")
    db.add("b", "PART_OF", "c")
    db.add("c", "PART_OF", "d")
    out = db.infer()
    assert triples(out) == {("a", "PART_OF", "c"), ("a", "PART_OF", "d"), ("b", "PART_OF", "d")}
    assert all(f["inferred"] is True for f in out)


def test_symmetric_pair(db):
    db.declare("NEAR", "symmetric")
    db.add("x", "NEAR", "y")
    assert triples(db.infer()) == {("y", "NEAR", "x")}


def test_inverse_both_directions(db):
    db.declare("OWNS", "inverse_of:OWNED_BY")
    db.add("t1", "OWNED_BY", "team-a")
    db.add("team-b", "OWNS", "t2")
    assert triples(db.infer()) == {("team-a", "OWNS", "t1"), ("t2", "OWNED_BY", "team-b")}


def test_subclass_chain_gives_a_property_to_three_instances(db):
    db.declare("管理部門")
    db.declare("Slack契約", "subclass_of:SaaS契約")
    db.declare("SaaS契約", "subclass_of:契約")
    db.declare("契約", "has_value:管理部門=総務部")
    for n in ("slack-a", "slack-b", "slack-c"):
        db.set_node(n, type="Slack契約")
    got = triples(db.infer())
    want = set()
    for n in ("slack-a", "slack-b", "slack-c"):
        want |= {(n, IS_A, "SaaS契約"), (n, IS_A, "契約"), (n, "管理部門", "総務部")}
    assert got == want


def test_subproperty_domain_and_range(db):
    db.declare("MAINTAINS", "subproperty_of:RESPONSIBLE_FOR")
    db.declare("RESPONSIBLE_FOR", "domain:person", "range:asset")
    db.add("alice", "MAINTAINS", "crm-table")
    assert triples(db.infer()) == {
        ("alice", "RESPONSIBLE_FOR", "crm-table"),
        ("alice", IS_A, "person"),
        ("crm-table", IS_A, "asset"),
    }


def test_literal_values_map_back(db):
    db.declare("rows", "range:integer")
    db.declare("row_count", "range:integer", "subproperty_of:rows")
    db.add("t1", "row_count", 42)
    assert db.infer() == [{"s": "t1", "p": "rows", "o": 42, "inferred": True}]


def test_no_rdf_or_owl_bookkeeping_leaks(db):
    db.declare("PART_OF", "transitive", "domain:part", "range:whole")
    db.declare("NEAR", "symmetric")
    db.declare("part", "subclass_of:thing")
    db.add("a", "PART_OF", "b")
    db.add("b", "PART_OF", "c")
    db.add("a", "NEAR", "c")
    names = db.nodes()
    for f in db.infer():
        assert "://" not in f["p"] and "://" not in str(f["o"])
        assert f["s"] in names
        assert f["p"] in ("PART_OF", "NEAR", IS_A)


def test_functional_is_the_gates_job_not_same_as(tmp_path):
    """Two owners at once (a hand edit the gate would refuse) must not merge the two teams."""
    path = tmp_path / "g.yaml"
    path.write_text(
        "ontology:\n  predicates:\n    OWNED_BY: {functional: true}\n    OWNS: {inverse_of: OWNED_BY}\n"
        "    NEAR: {symmetric: true}\n"
        "triples:\n- {s: t1, p: OWNED_BY, o: team-a}\n- {s: t1, p: OWNED_BY, o: team-b}\n"
        "- {s: team-a, p: NEAR, o: z}\n", encoding="utf-8")
    db = TrikeDB(path)
    assert len(db.check()) == 1  # the gate reports the conflict
    assert triples(db.infer()) == {("team-a", "OWNS", "t1"), ("team-b", "OWNS", "t1"), ("z", "NEAR", "team-a")}


def test_closed_values_do_not_take_part(db):
    db.declare("OWNED_BY", "functional")
    db.declare("OWNS", "inverse_of:OWNED_BY")
    db.add("t1", "OWNED_BY", "team-a", valid_to=dt.date(2020, 1, 1))
    db.add("t1", "OWNED_BY", "team-b", valid_from=dt.date(2020, 1, 1))
    assert triples(db.infer()) == {("team-b", "OWNS", "t1")}


def test_expired_and_future_facts_are_not_premises(db):
    db.declare("PART_OF", "transitive")
    db.add("a", "PART_OF", "b", valid_to=dt.date(2001, 1, 1))
    db.add("b", "PART_OF", "c")
    db.add("c", "PART_OF", "d", valid_from=dt.date.today() + dt.timedelta(days=30))
    assert db.infer() == []


def test_hand_written_is_a_counts_as_membership(db):
    db.declare("contract", "has_value:reviewed_by=legal")
    db.declare("reviewed_by")
    db.declare(IS_A)
    db.add("notion", IS_A, "contract")
    assert triples(db.infer()) == {("notion", "reviewed_by", "legal")}


# ------------------------------------------------------------------------------------------ apply

def test_apply_writes_tagged_facts_and_is_idempotent(db):
    db.declare("PART_OF", "transitive")
    db.declare("Slack契約", "subclass_of:SaaS契約")
    db.add("a", "PART_OF", "b")
    db.add("b", "PART_OF", "c")
    db.set_node("slack", type="Slack契約")
    added = db.infer(apply=True)
    assert triples(added) == {("a", "PART_OF", "c"), ("slack", IS_A, "SaaS契約")}
    text = db.path.read_text(encoding="utf-8")
    assert "- {s: a, p: PART_OF, o: c, inferred: true}" in text
    assert "- {s: slack, p: is_a, o: SaaS契約, inferred: true}" in text
    # the gate was on (PART_OF declared), so is_a was declared for the inferred memberships
    assert IS_A in db.ontology()["predicates"]
    assert db.check() == []
    assert db.infer(apply=True) == []
    assert db.path.read_text(encoding="utf-8") == text
    assert TrikeDB(db.path).infer() == []
    assert stale_inferences(db) == {"missing": [], "obsolete": []}


def test_removing_a_base_fact_is_detected_and_repaired(db):
    """Inferred facts must not keep each other alive: a->c (inferred) plus c->d would still give a->d."""
    db.declare("PART_OF", "transitive")
    for s, o in (("a", "b"), ("b", "c"), ("c", "d")):
        db.add(s, "PART_OF", o)
    db.infer(apply=True)
    db.remove("b", "PART_OF", "c")
    stale = stale_inferences(db)
    assert stale["missing"] == []
    assert triples(stale["obsolete"]) == {("a", "PART_OF", "c"), ("a", "PART_OF", "d"), ("b", "PART_OF", "d")}
    result = materialize(db, apply=True)
    assert result["added"] == [] and len(result["removed"]) == 3
    assert triples(db.facts()) == {("a", "PART_OF", "b"), ("c", "PART_OF", "d")}
    assert stale_inferences(db) == {"missing": [], "obsolete": []}


def test_adding_a_fact_later_makes_the_snapshot_stale(db):
    db.declare("NEAR", "symmetric")
    db.add("x", "NEAR", "y")
    db.infer(apply=True)
    db.add("y", "NEAR", "z")
    stale = stale_inferences(db)
    assert triples(stale["missing"]) == {("z", "NEAR", "y")}
    assert stale["obsolete"] == []


def test_asserted_facts_are_never_tagged_inferred(db):
    db.declare("NEAR", "symmetric")
    db.add("x", "NEAR", "y")
    db.add("y", "NEAR", "x", prov="survey")
    assert db.infer(apply=True) == []
    assert db.match("y", "NEAR", "x")[0] == {"s": "y", "p": "NEAR", "o": "x", "prov": "survey"}


def test_names_with_glob_characters_are_removed_exactly(db):
    db.declare("NEAR", "symmetric")
    db.add("a[1]", "NEAR", "b*")
    db.add("a1", "NEAR", "bx")
    db.infer(apply=True)
    db.remove("a1", "NEAR", "bx")
    materialize(db, apply=True)
    assert triples(db.facts()) == {("a[1]", "NEAR", "b*"), ("b*", "NEAR", "a[1]")}


def test_apply_refused_by_the_gate_writes_nothing(db):
    db.declare("RUNS")
    db.declare("OPERATES", "domain:team")
    db.declare("RUNS", "subproperty_of:OPERATES")
    db.set_node("t1", type="table")
    db.add("t1", "RUNS", "j1")
    before = db.path.read_text(encoding="utf-8")
    with pytest.raises(OntologyError, match="refused by the ontology gate"):
        db.infer(apply=True)
    assert db.path.read_text(encoding="utf-8") == before


def test_instances_include_subclasses_and_inferred_memberships(db):
    db.declare("Slack契約", "subclass_of:SaaS契約")
    db.declare("利用", "range:SaaS契約")
    db.set_node("slack", type="Slack契約")
    db.set_node("notion", type="SaaS契約")
    db.add("総務部", "利用", "zoom")
    db.infer(apply=True)
    assert sorted(instances(db, "SaaS契約")) == ["notion", "slack", "zoom"]


# ------------------------------------------------------------------------------------------ declare

def test_declare_stores_in_the_ontology_section(db):
    r = db.declare("DEPENDS_ON", "transitive", "description:asset -> what it needs")
    assert r == {"name": "DEPENDS_ON", "kind": "predicate",
                 "spec": {"transitive": True, "description": "asset -> what it needs"},
                 "also_declared": [], "enforced": True}
    db.declare("Slack契約", "subclass_of:SaaS契約")
    onto = TrikeDB(db.path).ontology()
    assert onto["predicates"]["DEPENDS_ON"]["transitive"] is True
    assert onto["classes"]["Slack契約"] == {"subclass_of": "SaaS契約"}
    text = db.path.read_text(encoding="utf-8")
    assert "DEPENDS_ON: {transitive: true, description: asset -> what it needs}" in text


def test_declare_switching_the_gate_on_keeps_existing_predicates(db):
    db.add("a", "OWNED_BY", "t")
    db.add("a", "MENTIONS", "b")
    assert db.ontology()["enforced"] is False
    r = db.declare("OWNS", "inverse_of:OWNED_BY")
    assert r["enforced"] is True
    assert set(r["also_declared"]) == {"OWNED_BY", "MENTIONS"}
    assert db.check() == []
    with pytest.raises(OntologyError, match="unknown predicate"):
        db.add("a", "UNDECLARED", "b")


def test_declare_class_does_not_switch_the_gate_on(db):
    db.add("a", "ANYTHING", "b")
    db.declare("Slack契約", "subclass_of:SaaS契約")
    assert db.ontology()["enforced"] is False
    db.add("a", "SOMETHING_ELSE", "b")


def test_declare_adds_inverse_target_and_removes_keys(db):
    db.declare("OWNS", "inverse_of:OWNED_BY", "symmetric")
    preds = db.ontology()["predicates"]
    assert preds["OWNED_BY"] == {"description": "inverse of OWNS"}
    db.declare("OWNS", "-symmetric")
    assert db.ontology()["predicates"]["OWNS"] == {"inverse_of": "OWNED_BY"}


def test_declare_several_values_of_a_key(db):
    db.declare("Slack契約", "subclass_of:SaaS契約", "subclass_of:チャット")
    assert db.ontology()["classes"]["Slack契約"]["subclass_of"] == ["SaaS契約", "チャット"]


def test_declare_refuses_what_existing_facts_break(db):
    db.declare("OWNED_BY")
    db.add("t1", "OWNED_BY", "a")
    db.add("t1", "OWNED_BY", "b")
    with pytest.raises(OntologyError, match="functional predicate has two values"):
        db.declare("OWNED_BY", "functional")
    assert "functional" not in db.ontology()["predicates"]["OWNED_BY"]
    db.set_node("t1", type="table")
    with pytest.raises(OntologyError, match="t1 is a table, not a team"):
        db.declare("OWNED_BY", "domain:team")


@pytest.mark.parametrize("props, message", [
    (("bogus",), "unknown declaration"),
    (("inverse_of",), "needs a value"),
    (("transitive:maybe",), "is a flag"),
    (("transitive", "subclass_of:X"), "declare them separately"),
    (("has_value:novalue",), "has_value needs"),
    (("domain:integer",), "is a datatype"),
    (("range:integer", "transitive"), "needs a predicate between nodes"),
])
def test_declare_errors(db, props, message):
    with pytest.raises(TrikeError, match=message):
        db.declare("P", *props)


def test_functional_flag_reaches_the_gate(db):
    db.declare("OWNED_BY", "functional")
    db.add("t1", "OWNED_BY", "a")
    with pytest.raises(OntologyError, match="functional"):
        db.add("t1", "OWNED_BY", "b")
