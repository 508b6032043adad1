"""Workspaces: the read-only union of several graphs, each fact tagged with its graph."""

from __future__ import annotations

import argparse
import contextlib
import datetime
import email.utils
import http.server
import io
import json
import socket
import threading
import time
import warnings
from pathlib import Path

import pytest

from trike import NotFoundError, StorageError, TrikeDB, TrikeError
from trike.workspace import ReadOnlyError, Workspace, is_workspace, open_any, open_workspace

ROOT = Path(__file__).resolve().parent.parent

PLATFORM = """\
ontology:
  predicates:
    INGESTS_TO: {description: job -> table, domain: job, range: table}
    FEEDS: {description: table -> table, domain: table, range: table}
    OWNED_BY: {description: asset -> team, range: team, functional: true}
nodes:
  crm-sync-job: {type: job, schedule: hourly}
  RAW_CRM: {type: table, schema: RAW, pii: true}
  STG_CUSTOMERS: {type: table, schema: STG}
  data-platform: {type: team}
triples:
- {s: crm-sync-job, p: INGESTS_TO, o: RAW_CRM}
- {s: RAW_CRM, p: FEEDS, o: STG_CUSTOMERS}
- {s: STG_CUSTOMERS, p: FEEDS, o: MART_REVENUE}
- {s: RAW_CRM, p: OWNED_BY, o: data-platform}
- {s: RAW_INVOICES, p: OWNED_BY, o: data-platform, valid_to: 2020-01-01}
"""

BILLING = """\
ontology:
  predicates:
    FEEDS: {description: table -> table, domain: table, range: table}
    OWNED_BY: {description: asset -> team, range: team, functional: true}
nodes:
  RAW_INVOICES: {type: table, schema: RAW}
  MART_REVENUE: {type: table, schema: MART}
  billing-team: {type: team}
triples:
- {s: RAW_INVOICES, p: FEEDS, o: MART_REVENUE}
- {s: RAW_CRM, p: FEEDS, o: STG_CUSTOMERS}
- {s: MART_REVENUE, p: OWNED_BY, o: billing-team}
- {s: RAW_INVOICES, p: OWNED_BY, o: billing-team, valid_from: 2020-01-01, prov: charter}
"""


@pytest.fixture
def ws_file(tmp_path) -> Path:
    (tmp_path / "platform").mkdir()
    (tmp_path / "platform" / "graph.yaml").write_text(PLATFORM, encoding="utf-8")
    (tmp_path / "billing.yaml").write_text(BILLING, encoding="utf-8")
    ws = tmp_path / "workspace.yaml"
    ws.write_text("workspace: {name: acme}\n"
                  "graphs:\n"
                  "  platform: platform/graph.yaml\n"
                  "  billing: {path: ./billing.yaml, description: invoices}\n", encoding="utf-8")
    return ws


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(folder.rglob("*.yaml"))}


# ------------------------------------------------------------------------------------------ the union

def test_every_fact_carries_its_graph_and_graph_filters(ws_file):
    ws = open_workspace(ws_file)
    assert isinstance(ws, Workspace) and ws.name == "acme"
    facts = ws.facts()
    assert len(facts) == 9 and len(ws) == 9
    assert all(f["graph"] in ("platform", "billing") for f in facts)
    # the same triple in two graphs is two facts, one per graph
    assert [f["graph"] for f in ws.match("RAW_CRM", "FEEDS")] == ["platform", "billing"]
    owned = ws.match(p="OWNED_BY")  # valid today: the expired platform fact is left out
    assert {(f["s"], f["o"], f["graph"]) for f in owned} == {
        ("RAW_CRM", "data-platform", "platform"), ("MART_REVENUE", "billing-team", "billing"),
        ("RAW_INVOICES", "billing-team", "billing")}
    assert next(f for f in owned if f["s"] == "RAW_INVOICES") == {
        "s": "RAW_INVOICES", "p": "OWNED_BY", "o": "billing-team", "valid_from": datetime.date(2020, 1, 1),
        "prov": "charter", "graph": "billing"}
    assert len(ws.match(p="OWNED_BY", as_of="all")) == 4
    assert {f["graph"] for f in ws.match(p="FEEDS", graph="billing")} == {"billing"}
    assert {f["graph"] for f in ws.match(p="FEEDS", graph="bill*")} == {"billing"}
    assert len(ws.match(p="FEEDS", graph=["billing", "platform"])) == 4
    assert ws.match(p="FEEDS", limit=3) == ws.match(p="FEEDS")[:3]
    assert ws.match(p="*_BY", prov="charter") == [f for f in owned if f.get("prov") == "charter"]
    assert ws.count(p="FEEDS") == 4 and len(ws.facts(graph="platform")) == 5
    with pytest.raises(NotFoundError, match="no graph named 'ledger'.*platform, billing"):
        ws.match(graph="ledger")
    assert [g["name"] for g in ws.graphs()] == ["platform", "billing"]
    assert ws.graphs()[1]["description"] == "invoices" and ws.graphs()[1]["facts"] == 4
    assert isinstance(ws.graph("billing"), TrikeDB)


def test_query_joins_across_graphs(ws_file):
    ws = open_workspace(ws_file)
    rows = ws.query(["?src FEEDS ?mart", "?mart OWNED_BY ?team"])
    # STG_CUSTOMERS FEEDS MART_REVENUE is in platform, MART_REVENUE OWNED_BY billing-team in billing
    assert sorted((r["src"], r["mart"], r["team"]) for r in rows) == [
        ("RAW_INVOICES", "MART_REVENUE", "billing-team"), ("STG_CUSTOMERS", "MART_REVENUE", "billing-team")]
    assert ws.query(["?src FEEDS ?mart", "?mart OWNED_BY ?team"], graph="platform") == []
    # the same triple in two graphs gives one binding
    assert ws.query(["RAW_CRM FEEDS ?x"]) == [{"x": "STG_CUSTOMERS"}]
    assert ws.query(["RAW_INVOICES OWNED_BY ?t"]) == [{"t": "billing-team"}]
    assert {r["t"] for r in ws.query(["RAW_INVOICES OWNED_BY ?t"], as_of="2019-06-01")} == {"data-platform"}
    assert {r["t"] for r in ws.query(["RAW_INVOICES OWNED_BY ?t"], as_of="all")} == {"data-platform",
                                                                                      "billing-team"}


def test_sparql_over_the_union_and_by_graph(ws_file):
    ws = open_workspace(ws_file)
    # the default graph is the union: a triple held by two graphs counts once
    assert ws.sparql("SELECT (COUNT(*) AS ?n) WHERE { t:RAW_CRM t:FEEDS ?o }") == [{"n": 1}]
    assert ws.sparql("ASK { t:STG_CUSTOMERS t:FEEDS ?m . ?m t:OWNED_BY t:billing-team }") is True
    rows = ws.sparql("SELECT ?g WHERE { GRAPH ?g { t:RAW_CRM t:FEEDS t:STG_CUSTOMERS } } ORDER BY ?g")
    assert rows == [{"g": "billing"}, {"g": "platform"}]
    assert ws.sparql("SELECT ?s WHERE { GRAPH g:billing { ?s t:OWNED_BY ?t } } ORDER BY ?s") == [
        {"s": "MART_REVENUE"}, {"s": "RAW_INVOICES"}]
    assert ws.sparql("SELECT ?s FROM <urn:trike-graph:platform> WHERE { ?s t:INGESTS_TO ?t }") == [
        {"s": "crm-sync-job"}]
    assert ws.sparql("SELECT ?s FROM g:billing WHERE { ?s t:INGESTS_TO ?t }") == []
    # fact attributes stay reified, inside the member's graph
    rows = ws.sparql("SELECT ?g ?p WHERE { GRAPH ?g { ?st rdf:subject t:RAW_INVOICES ; t:prov ?p } }")
    assert rows == [{"g": "billing", "p": "charter"}]
    constructed = ws.sparql("CONSTRUCT { ?s t:OWNED_BY ?o } WHERE { GRAPH g:platform { ?s t:OWNED_BY ?o } }")
    assert {(t["s"], t["o"]) for t in constructed} == {("RAW_CRM", "data-platform"),
                                                       ("RAW_INVOICES", "data-platform")}
    with pytest.raises(TrikeError, match="bad SPARQL"):
        ws.sparql("SELECT WHERE {")


def test_nodes_get_node_related_history(ws_file):
    ws = open_workspace(ws_file)
    nodes = ws.nodes()
    assert nodes["RAW_INVOICES"] == {"type": "table", "schema": "RAW"}
    assert nodes["RAW_CRM"] == {"type": "table", "schema": "RAW", "pii": True}
    node = ws.get_node("MART_REVENUE")
    assert node["graphs"] == ["platform", "billing"] and node["props"] == {"type": "table", "schema": "MART"}
    assert [(f["s"], f["graph"]) for f in node["in"]] == [("STG_CUSTOMERS", "platform"),
                                                          ("RAW_INVOICES", "billing")]
    assert [(f["o"], f["graph"]) for f in node["out"]] == [("billing-team", "billing")]
    with pytest.raises(NotFoundError, match="MART_REVENUE"):
        ws.get_node("MART_REVENU")
    rel = ws.related("crm-sync-job", depth=3)
    # crm-sync-job -> RAW_CRM (platform) -> STG_CUSTOMERS (both graphs) -> MART_REVENUE (platform)
    assert rel["nodes"]["MART_REVENUE"]["hops"] == 3
    assert rel["nodes"]["MART_REVENUE"]["graphs"] == ["platform", "billing"]
    assert ("RAW_CRM", "FEEDS", "STG_CUSTOMERS", "billing") in {(f["s"], f["p"], f["o"], f["graph"])
                                                                for f in rel["facts"]}
    hist = ws.history("RAW_INVOICES", "OWNED_BY")
    assert [(h["o"], h["graph"], h["current"]) for h in hist] == [("data-platform", "platform", False),
                                                                  ("billing-team", "billing", True)]


def test_ontology_stats_hash_and_export(ws_file):
    ws = open_workspace(ws_file)
    onto = ws.ontology()
    assert onto["enforced"] is True
    assert set(onto["predicates"]) == {"INGESTS_TO", "FEEDS", "OWNED_BY"}
    assert onto["declared_in"]["predicates"]["INGESTS_TO"] == ["platform"]
    assert onto["declared_in"]["predicates"]["FEEDS"] == ["platform", "billing"]
    stats = ws.stats()
    assert set(TrikeDB(ws_file.parent / "billing.yaml").stats()) <= set(stats)
    assert stats["facts"] == 9 and stats["distinct_facts"] == 8 and stats["workspace"] == "acme"
    assert stats["graphs"]["billing"]["facts"] == 4 and stats["graphs"]["platform"]["kind"] == "file"
    assert stats["content_hash"] == ws.content_hash()
    nq = ws.export("nq")
    assert "<urn:trike:RAW_CRM> <urn:trike:FEEDS> <urn:trike:STG_CUSTOMERS> <urn:trike-graph:billing> ." in nq
    assert "<urn:trike-graph:platform>" in nq
    trig = ws.export("trig")
    assert "g:billing {" in trig or "<urn:trike-graph:billing> {" in trig
    nt = ws.export("nt")
    assert nt.count("<urn:trike:RAW_CRM> <urn:trike:FEEDS> <urn:trike:STG_CUSTOMERS> .") == 1
    assert "@prefix t:" in ws.export("ttl")
    with pytest.raises(TrikeError, match="unknown export format"):
        ws.export("xml")
    store = ws.to_oxigraph()
    assert len(list(store.named_graphs())) == 2


def test_edits_to_members_and_to_the_workspace_file_are_seen(ws_file, tmp_path):
    ws = open_workspace(ws_file)
    before_hash, before_rev = ws.content_hash(), ws.revision
    assert ws.sparql("ASK { t:new-job t:INGESTS_TO t:RAW_CRM }") is False
    TrikeDB(ws_file.parent / "platform" / "graph.yaml").add("new-job", "INGESTS_TO", "RAW_CRM")
    assert ws.match("new-job") == [{"s": "new-job", "p": "INGESTS_TO", "o": "RAW_CRM", "graph": "platform"}]
    assert ws.sparql("ASK { GRAPH g:platform { t:new-job t:INGESTS_TO t:RAW_CRM } }") is True
    assert ws.content_hash() != before_hash and ws.revision > before_rev
    rev = ws.revision
    assert ws.revision == rev  # nothing changed: same revision
    (tmp_path / "ledger.yaml").write_text("triples:\n- {s: inv-1, p: PAID_BY, o: acme-corp}\n", encoding="utf-8")
    with open(ws_file, "a", encoding="utf-8") as fh:
        fh.write("  ledger: ledger.yaml\n")
    assert ws.match(p="PAID_BY") == [{"s": "inv-1", "p": "PAID_BY", "o": "acme-corp", "graph": "ledger"}]
    assert ws.revision > rev and [g["name"] for g in ws.graphs()] == ["platform", "billing", "ledger"]


def test_the_sparql_dataset_follows_member_edits_incrementally(ws_file):
    everything = ("SELECT ?g ?s ?p ?o WHERE { { GRAPH ?g { ?s ?p ?o } } UNION { ?s ?p ?o } }")

    def rows(ws: Workspace) -> list[str]:
        return sorted(repr(sorted(r.items())) for r in ws.sparql(everything))

    ws = open_workspace(ws_file)
    rows(ws)
    platform = TrikeDB(ws_file.parent / "platform" / "graph.yaml")
    billing = TrikeDB(ws_file.parent / "billing.yaml")
    platform.add("RAW_INVOICES", "FEEDS", "MART_REVENUE")  # now in both graphs
    billing.remove(s="RAW_CRM")  # was in both graphs: stays in the union through platform
    billing.set_node("MART_REVENUE", schema="MART2")
    platform.remove(s="crm-sync-job")
    assert rows(ws) == rows(open_workspace(ws_file))
    assert ws.sparql("ASK { t:RAW_CRM t:FEEDS t:STG_CUSTOMERS }") is True
    platform.remove(s="RAW_CRM", p="FEEDS")  # gone from every graph: gone from the union
    assert ws.sparql("ASK { t:RAW_CRM t:FEEDS t:STG_CUSTOMERS }") is False
    assert rows(ws) == rows(open_workspace(ws_file))


def test_writes_are_refused_and_nothing_changes(ws_file):
    ws = open_workspace(ws_file)
    before = _snapshot(ws_file.parent)
    attempts = [
        lambda: ws.add("x", "FEEDS", "y"),
        lambda: ws.remove(s="RAW_CRM"),
        lambda: ws.set_node("RAW_INVOICES", owner="me"),
        lambda: ws.remove_node("RAW_CRM"),
        lambda: ws.set_ontology({"predicates": {}}),
        lambda: ws.set_section("shapes", {}),
        lambda: ws.update("INSERT DATA { t:a t:FEEDS t:b }"),
        lambda: ws.declare("FEEDS", "transitive"),
        lambda: ws.import_source("x.csv"),
        lambda: ws.infer(apply=True),
        lambda: ws.batch().__enter__(),
    ]
    for attempt in attempts:
        with pytest.raises(ReadOnlyError, match="workspaces are read-only") as err:
            attempt()
        assert isinstance(err.value, TrikeError)
        assert "write to the member graph file" in str(err.value)
    # the message names the member(s) that hold what you wanted to change
    with pytest.raises(ReadOnlyError) as err:
        ws.set_node("RAW_INVOICES", owner="me")
    msg = str(err.value)
    assert "that holds it" in msg and "billing (" in msg and "billing.yaml" in msg
    with pytest.raises(ReadOnlyError) as err:
        ws.add("brand-new", "FEEDS", "other")
    assert "platform (" in str(err.value) and "billing (" in str(err.value)
    assert _snapshot(ws_file.parent) == before


def test_check_reports_disagreements_between_graphs(tmp_path):
    (tmp_path / "a.yaml").write_text(
        "ontology:\n  predicates:\n    OWNED_BY: {range: team, functional: true}\n    USES: {domain: job}\n"
        "nodes:\n  t1: {type: team}\n  svc: {tier: gold}\n"
        "triples:\n- {s: svc, p: OWNED_BY, o: t1}\n- {s: svc, p: UNDECLARED, o: x}\n", encoding="utf-8")
    (tmp_path / "b.yaml").write_text(
        "ontology:\n  predicates:\n    OWNED_BY: {range: team}\n    USES: {domain: job, description: other words}\n"
        "nodes:\n  t2: {type: team}\n  svc: {tier: silver}\n"
        "triples:\n- {s: svc, p: OWNED_BY, o: t2}\n- {s: svc, p: OWNED_BY, o: t1, graph: mine}\n",
        encoding="utf-8")
    ws_file = tmp_path / "ws.yaml"
    ws_file.write_text("graphs:\n  a: a.yaml\n  b: b.yaml\n", encoding="utf-8")
    assert is_workspace(ws_file)
    problems = Workspace(ws_file).check()
    text = "\n".join(problems)
    assert "ontology conflict: predicate OWNED_BY is declared differently in a" in text
    assert "USES" not in text  # a different description only is not a conflict
    assert "node svc: property tier differs: a says 'gold', b says 'silver'" in text
    assert "svc OWNED_BY: functional predicate has different values in different graphs: 't1' in a, 't2' in b" in text
    assert any(p.startswith("a: ") and "UNDECLARED" in p for p in problems)
    assert any(p.startswith("b: ") and "own `graph` attribute" in p for p in problems)
    # the workspace shows the member's graph name, not the fact's own `graph` attribute
    assert {f["graph"] for f in Workspace(ws_file).match("svc", "OWNED_BY", "t1")} == {"a", "b"}


# ------------------------------------------------------------------------------------------ bad files

@pytest.mark.parametrize("text, message", [
    ("nodes: {}\n", "needs a `graphs:` mapping"),
    ("graphs: []\n", "is empty"),
    ("graphs: {}\n", "is empty"),
    ("graphs:\n- a.yaml\n- ./a.yml\n", "two graphs would be named 'a'"),
    ("graphs:\n- [a.yaml]\n", "each item of a `graphs:` list"),
    ("graph:\n  a: a.yaml\ngraphs:\n  a: a.yaml\n", "unknown key 'graph'.*did you mean 'graphs'"),
    ("graphs:\n  a: {path: a.yaml, paht: b}\n", "unknown key 'paht' in graph 'a'.*did you mean 'path'"),
    ("graphs:\n  a: {path: a.yaml, url: http://x/}\n", "exactly one of `path:` or `url:`"),
    ("graphs:\n  a: missing.yaml\n", "graph 'a': missing.yaml: no such file"),
    ("graphs:\n  a: a.yaml\n  b: ./a.yaml\n", "'a' and 'b' are the same graph"),
    ("graphs:\n  'bad name': a.yaml\n", "graph name 'bad name'"),
    ("graphs:\n  a: {url: ftp://x/g.yaml}\n", "url must start with http"),
    ("graphs:\n  a: a.yaml\ntriples: []\n", "belongs in a graph file"),
    ("graphs:\n  a: [a.yaml\n", "not valid YAML"),
    ("workspace: {name: x, refresh: soon}\ngraphs:\n  a: a.yaml\n", "refresh must be a number"),
    ("graphs:\n  me: ws.yaml\n", "is itself a workspace"),
])
def test_bad_workspace_files_say_what_is_wrong(tmp_path, text, message):
    (tmp_path / "a.yaml").write_text("triples:\n- {s: a, p: R, o: b}\n", encoding="utf-8")
    ws_file = tmp_path / "ws.yaml"
    ws_file.write_text(text, encoding="utf-8")
    with pytest.raises(TrikeError, match=message) as err:
        Workspace(ws_file)
    assert str(ws_file) in str(err.value)


def test_an_optional_member_that_is_missing_is_left_out_with_a_warning(tmp_path):
    (tmp_path / "a.yaml").write_text("triples:\n- {s: a, p: R, o: b}\n", encoding="utf-8")
    ws_file = tmp_path / "workspace.yaml"
    ws_file.write_text("graphs:\n  a: a.yaml\n  later: {path: later.yaml, optional: true}\n", encoding="utf-8")
    with pytest.warns(UserWarning, match="'later' is optional and unavailable"):
        ws = Workspace(ws_file)
    assert [f["graph"] for f in ws.facts()] == ["a"]
    assert any("later" in p for p in ws.check())
    assert ws.graphs()[1]["ok"] is False and "no such file" in ws.graphs()[1]["error"]
    (tmp_path / "later.yaml").write_text("triples:\n- {s: c, p: R, o: d}\n", encoding="utf-8")
    ws.reload()
    assert [f["graph"] for f in ws.facts()] == ["a", "later"] and ws.check() == []


def test_graphs_may_be_a_list_named_after_the_files(tmp_path):
    (tmp_path / "billing").mkdir()
    (tmp_path / "billing" / "graph.yaml").write_text("triples:\n- {s: a, p: R, o: b}\n", encoding="utf-8")
    (tmp_path / "ledger.yaml").write_text("triples:\n- {s: c, p: R, o: d}\n", encoding="utf-8")
    (tmp_path / "x.yaml").write_text("triples:\n- {s: e, p: R, o: f}\n", encoding="utf-8")
    ws_file = tmp_path / "workspace.yaml"
    ws_file.write_text("graphs:\n- billing/graph.yaml\n- ledger.yaml\n- {name: extra, path: x.yaml}\n",
                       encoding="utf-8")
    ws = Workspace(ws_file)
    assert [g["name"] for g in ws.graphs()] == ["billing", "ledger", "extra"]
    assert [f["graph"] for f in ws.facts()] == ["billing", "ledger", "extra"]


def test_open_any(ws_file, tmp_path):
    assert isinstance(open_any(ws_file), Workspace)
    assert isinstance(open_any(ws_file.parent / "billing.yaml"), TrikeDB)
    other = tmp_path / "team.yaml"  # any name: a file with only `graphs:` is a workspace
    other.write_text("graphs:\n  b: billing.yaml\n", encoding="utf-8")
    assert isinstance(open_any(other), Workspace) and not is_workspace(ws_file.parent / "billing.yaml")


# ------------------------------------------------------------------------------------------ remote members

class _GraphServer:
    """A loopback HTTP server for one YAML graph, with ETag / If-None-Match."""

    def __init__(self, text: str, content_type: str = "application/yaml; charset=utf-8"):
        self.text = text
        self.content_type = content_type
        self.status = 200
        self.validator = "etag"
        self.requests: list[dict] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                outer.requests.append(dict(self.headers))
                if outer.status != 200:
                    self.send_error(outer.status)
                    return
                etag = f'"{abs(hash(outer.text))}"'
                stamp = email.utils.formatdate(1_700_000_000 + len(outer.text), usegmt=True)
                if outer.validator == "etag" and self.headers.get("If-None-Match") == etag or \
                        outer.validator == "last-modified" and self.headers.get("If-Modified-Since") == stamp:
                    self.send_response(304)
                    self.end_headers()
                    return
                body = outer.text.encode("utf-8")
                self.send_response(200)
                self.send_header("Content-Type", outer.content_type)
                if outer.validator == "etag":
                    self.send_header("ETag", etag)
                else:
                    self.send_header("Last-Modified", stamp)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/export?format=yaml"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                       daemon=True)
        self.thread.start()
        self.closed = False

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.httpd.shutdown()
            self.httpd.server_close()


@pytest.fixture
def server():
    srv = _GraphServer("nodes:\n  shared-team: {type: team}\ntriples:\n- {s: RAW_CRM, p: AUDITED_BY, o: shared-team}\n")
    yield srv
    srv.close()


def _remote_ws(tmp_path: Path, url: str, refresh: float = 0, extra: str = "") -> Path:
    (tmp_path / "local.yaml").write_text("triples:\n- {s: RAW_CRM, p: FEEDS, o: STG}\n", encoding="utf-8")
    ws_file = tmp_path / "workspace.yaml"
    ws_file.write_text(f"workspace: {{refresh: {refresh}, timeout: 2}}\n"
                       f"graphs:\n  local: local.yaml\n  shared: {{url: '{url}'{extra}}}\n", encoding="utf-8")
    return ws_file


def test_a_remote_member_is_fetched_revalidated_with_etag_and_refreshed(tmp_path, server):
    ws = Workspace(_remote_ws(tmp_path, server.url), cache_dir=tmp_path / "cache")
    assert ws.match("RAW_CRM") == [{"s": "RAW_CRM", "p": "FEEDS", "o": "STG", "graph": "local"},
                                   {"s": "RAW_CRM", "p": "AUDITED_BY", "o": "shared-team", "graph": "shared"}]
    assert ws.get_node("shared-team")["graphs"] == ["shared"]
    assert ws.sparql("SELECT ?g WHERE { GRAPH ?g { ?s t:AUDITED_BY ?o } }") == [{"g": "shared"}]
    n = len(server.requests)
    assert "yaml" in server.requests[0]["Accept"]
    ws.match("RAW_CRM")  # refresh: 0 -> asks again, answered 304 Not Modified
    assert len(server.requests) > n and server.requests[-1].get("If-None-Match")
    storage = ws.graph("shared").storage
    assert storage.not_modified >= 1
    server.text += "- {s: STG, p: AUDITED_BY, o: shared-team}\n"
    assert ws.match(p="AUDITED_BY", graph="shared")[-1]["s"] == "STG"
    with pytest.raises(ReadOnlyError, match="shared is remote"):
        ws.add("a", "AUDITED_BY", "shared-team")
    with pytest.raises(StorageError, match="read-only"):
        storage.write_text("nodes: {}\n")
    st = ws.stats()["graphs"]["shared"]
    assert st["kind"] == "url" and st["stale"] is False and st["facts"] == 2


def test_a_remote_member_is_revalidated_with_last_modified(tmp_path, server):
    server.validator = "last-modified"
    ws = Workspace(_remote_ws(tmp_path, server.url), cache_dir=False)
    assert len(ws.match(graph="shared")) == 1
    ws.match(graph="shared")
    assert server.requests[-1].get("If-Modified-Since") and ws.graph("shared").storage.not_modified >= 1
    server.text += "- {s: STG, p: AUDITED_BY, o: shared-team}\n"
    assert len(ws.match(graph="shared")) == 2


def test_remote_refresh_interval_limits_requests(tmp_path, server):
    ws = Workspace(_remote_ws(tmp_path, server.url, refresh=3600), cache_dir=False)
    for _ in range(5):
        ws.match("RAW_CRM")
    assert len(server.requests) == 1


def test_a_failed_fetch_names_the_url_and_falls_back_to_the_cached_copy(tmp_path, server):
    ws_file = _remote_ws(tmp_path, server.url)
    cache = tmp_path / "cache"
    Workspace(ws_file, cache_dir=cache).facts()  # a good fetch leaves a copy on disk
    url = server.url
    server.close()
    with pytest.warns(UserWarning, match="cannot fetch the graph.*using the cached copy"):
        ws = Workspace(ws_file, cache_dir=cache)
    assert [f["graph"] for f in ws.match("RAW_CRM")] == ["local", "shared"]
    assert any("shared: using an old copy" in p for p in ws.check())
    # no copy: a clear error naming the graph and the URL
    with pytest.raises(StorageError) as err:
        Workspace(ws_file, cache_dir=tmp_path / "empty-cache")
    msg = str(err.value)
    assert "graph 'shared'" in msg and url in msg and "cannot fetch the graph" in msg


def test_remote_errors_are_specific(tmp_path, server):
    server.status = 404
    with pytest.raises(StorageError, match="HTTP 404"):
        Workspace(_remote_ws(tmp_path, server.url), cache_dir=False)
    server.status = 200
    server.content_type = "text/html"
    with pytest.raises(StorageError, match="HTML page, not a trike YAML graph"):
        Workspace(_remote_ws(tmp_path, server.url), cache_dir=False)
    server.content_type = "text/plain"
    server.status = 401
    with pytest.raises(StorageError, match="token_env"):
        Workspace(_remote_ws(tmp_path, server.url), cache_dir=False)


def test_a_token_is_sent_from_the_environment(tmp_path, server, monkeypatch):
    ws_file = _remote_ws(tmp_path, server.url, extra=", token_env: SHARED_TOKEN")
    with pytest.raises(StorageError, match=r"\$SHARED_TOKEN is not set"):
        Workspace(ws_file, cache_dir=False)
    monkeypatch.setenv("SHARED_TOKEN", "s3cret")
    Workspace(ws_file, cache_dir=tmp_path / "c").facts()
    assert server.requests[-1]["Authorization"] == "Bearer s3cret"
    assert "s3cret" not in "".join(p.read_text() for p in (tmp_path / "c").iterdir())


def test_a_server_that_does_not_answer_times_out(tmp_path):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)  # accepts connections, never answers
    try:
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/g.yaml"
        ws_file = _remote_ws(tmp_path, url)
        ws_file.write_text(ws_file.read_text().replace("timeout: 2", "timeout: 0.3"), encoding="utf-8")
        t0 = time.monotonic()
        with pytest.raises(StorageError, match=r"no answer within 0.3 s"):
            Workspace(ws_file, cache_dir=False)
        assert time.monotonic() - t0 < 5
    finally:
        sock.close()


def test_open_any_reads_a_url_as_a_read_only_graph(server):
    db = open_any(server.url, cache_dir=False)
    assert isinstance(db, TrikeDB) and db.match(p="AUDITED_BY")[0]["o"] == "shared-team"
    with pytest.raises(StorageError, match="read-only"):
        db.add("x", "R", "y")


# ------------------------------------------------------------------------------------------ search and CLI

def test_search_over_the_union(ws_file):
    ws = open_workspace(ws_file)
    result = ws.search("billing-team", k=5, model="none")
    facts = [r["fact"] for r in result["results"] if r["kind"] == "fact"]
    assert facts and all(f["graph"] == "billing" for f in facts if f["o"] == "billing-team")


def _cli(argv: list[str]) -> tuple[int, str, str]:
    from trike.cli import cmd_workspace
    from trike.cli.common import fail

    parser = argparse.ArgumentParser(prog="trike")
    cmd_workspace.register(parser.add_subparsers())
    args = parser.parse_args(argv)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            code = args.func(args)
        except TrikeError as exc:
            code = fail(exc)
    return code, out.getvalue(), err.getvalue()


def test_cli_ws(ws_file):
    f = str(ws_file)
    code, out, _ = _cli(["ws", f, "match", "-p", "OWNED_BY", "-g", "billing"])
    assert code == 0 and out.splitlines()[0].startswith("billing  MART_REVENUE  OWNED_BY  billing-team")
    code, out, _ = _cli(["ws", f, "query", "-w", "?src FEEDS ?m", "-w", "?m OWNED_BY ?team", "--json"])
    assert code == 0 and {"src": "STG_CUSTOMERS", "m": "MART_REVENUE", "team": "billing-team"} in json.loads(out)
    code, out, _ = _cli(["ws", f, "sparql", "SELECT ?g WHERE { GRAPH ?g { t:RAW_CRM t:FEEDS ?o } } ORDER BY ?g"])
    assert code == 0 and out.split() == ["g", "billing", "platform"]
    code, out, _ = _cli(["ws", f, "get", "MART_REVENUE", "--json"])
    assert code == 0 and json.loads(out)["graphs"] == ["platform", "billing"]
    code, out, _ = _cli(["ws", f, "graphs"])
    assert code == 0 and "platform" in out and "4 facts" in out
    code, out, _ = _cli(["ws", f, "stats", "--json"])
    assert code == 0 and json.loads(out)["facts"] == 9
    code, out, _ = _cli(["ws", f, "export", "-f", "nq"])
    assert code == 0 and "<urn:trike-graph:billing>" in out
    code, out, err = _cli(["ws", f, "check"])  # RAW_INVOICES OWNED_BY: the validity windows do not overlap
    assert code == 0 and out == "" and err.strip().endswith(": ok")
    TrikeDB(ws_file.parent / "billing.yaml").add("RAW_CRM", "OWNED_BY", "billing-team")
    code, out, err = _cli(["ws", f, "check", "--json"])
    assert code == 1 and json.loads(out)["problems"] == [
        "RAW_CRM OWNED_BY: functional predicate has different values in different graphs: "
        "'data-platform' in platform, 'billing-team' in billing"]
    code, out, _ = _cli(["ws", str(ws_file.parent), "hash"])  # a folder with a workspace.yaml
    assert code == 0 and out.strip() == open_workspace(ws_file).content_hash()
    code, _, err = _cli(["ws", f, "match", "-g", "nope"])
    assert code == 2 and "no graph named 'nope'" in err


def test_cli_check_is_clean_on_the_example():
    code, out, err = _cli(["ws", str(ROOT / "examples" / "workspace" / "workspace.yaml"), "check"])
    assert code == 0, out
    assert err.strip().endswith(": ok")
