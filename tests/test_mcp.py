"""MCP server: SPARQL safety, and every tool through the SDK's in-process client.

The same tools over stdio in a subprocess are tested in test_mcp_stdio.py, and with the MCP Inspector CLI
in test_mcp_inspector.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from trike.errors import QueryError
from trike.mcp_server import (
    READ_TOOLS,
    WRITE_TOOLS,
    build_server,
    check_readonly_query,
    run_readonly_sparql,
)

ROOT = Path(__file__).resolve().parent.parent

GRAPH = """\
ontology:
  predicates:
    OWNED_BY: {description: "asset -> team that owns it", domain: table, range: team, functional: true}
    DEPENDS_ON: {description: "asset -> asset it reads from"}
    born: {description: "when it was created", range: date, functional: true}
nodes:
  orders_db: {type: table, description: All web orders}
  data-team: {type: team}
  web-team: {type: team}
  Acme Corp: {type: vendor}
triples:
- {s: orders_db, p: OWNED_BY, o: data-team, source: wiki}
- {s: orders_db, p: DEPENDS_ON, o: kafka-orders}
- {s: report, p: DEPENDS_ON, o: orders_db}
- {s: Acme Corp, p: DEPENDS_ON, o: orders_db}
"""


@pytest.fixture(autouse=True)
def _offline_search(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # no embedding model download: lexical search only
    monkeypatch.setenv("TRIKE_EMBED_MODEL", "none")
    monkeypatch.setenv("TRIKE_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture()
def graph(tmp_path: Path) -> Path:
    folder = tmp_path / "kg"
    folder.mkdir()
    path = folder / "graph.yaml"
    path.write_text(GRAPH, encoding="utf-8")
    return path


def call(server: Any, tool: str, args: dict | None = None, **client_kw: Any) -> Any:
    """One tool call through the SDK's in-process client."""
    from mcp import Client

    async def go() -> Any:
        async with Client(server, **client_kw) as client:
            return await client.call_tool(tool, args or {})

    return anyio.run(go)


def ok(result: Any) -> dict:
    assert not result.is_error, result.content[0].text
    data = result.structured_content
    assert json.loads(result.content[0].text) == data  # the text is the same data, compact
    return data


def err(result: Any) -> str:
    assert result.is_error, result.structured_content
    return result.content[0].text


# ------------------------------------------------------------------------------------ SPARQL safety

@pytest.mark.parametrize("query", [
    "SELECT * WHERE { ?s ?p ?o }",
    "select ?service where { ?service ?p ?o }",            # a variable named service
    "SELECT ?s WHERE { ?s t:SERVICE ?o . ?s t:service:x ?y }",  # prefixed names
    "PREFIX service: <urn:x:> SELECT ?s WHERE { ?s service:p ?o }",
    'SELECT ?s WHERE { ?s ?p "SERVICE <http://evil/> { }" }',  # in a string
    "SELECT ?s WHERE { ?s ?p '''multi\nline SERVICE\n''' }",
    "SELECT ?s WHERE { ?s ?p ?o } # SERVICE <http://evil/> in a comment",
    "SELECT ?s WHERE { ?s <urn:SERVICE:x> ?o }",           # in an IRI
    "ASK { t:a t:b t:c }",
    "CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }",
    "DESCRIBE t:orders_db",
    "BASE <urn:x:> PREFIX a: <urn:a:> SELECT * WHERE { ?s ?p ?o }",
    "SELECT ?x WHERE { ?x t:p t:customer-service }",
    r"SELECT ?x WHERE { ?x t:a\'b ?y . ?y ?p 'SERVICE' }",  # an escaped quote inside a local name
])
def test_readonly_queries_pass(query: str) -> None:
    check_readonly_query(query)


@pytest.mark.parametrize("query, word", [
    ("SELECT * WHERE { SERVICE <http://127.0.0.1:9/sparql> { ?s ?p ?o } }", "SERVICE"),
    ("select * where { service silent <http://x/> { ?s ?p ?o } }", "SERVICE"),
    ("SELECT * WHERE { ?s ?p ?o .SERVICE <http://x/> { ?a ?b ?c } }", "SERVICE"),
    ("SELECT * WHERE { ?s ?p ?o } VALUES ?u { <http://x/> } #\n SERVICE ?u { }", "SERVICE"),
    ('SELECT * WHERE { ?s ?p "x" SERVICE <http://x/> { } }', "SERVICE"),
    ("SELECT * WHERE { ?s ?p ?o FILTER(?o<3) SERVICE<http://x/>{?a ?b ?c} }", "SERVICE"),
    ("SELECT * WHERE { ?s ?p <http://a\\u0020b#> SERVICE <http://x/> {} }", "SERVICE"),
    (r"SELECT * WHERE { \u0053ERVICE <http://x/> { ?s ?p ?o } }", "SERVICE"),  # escapes decoded first
    (r"SELECT * WHERE { ?s ?p 'a\u0027 SERVICE <http://x/> { } \u0027' }", "SERVICE"),
    ("INSERT DATA { t:a t:b t:c }", "UPDATE"),
    ("PREFIX x: <urn:x:>\nDELETE WHERE { ?s ?p ?o }", "UPDATE"),
    ("LOAD <http://example.org/data.ttl>", "UPDATE"),
    ("CLEAR ALL", "UPDATE"),
    ("DROP GRAPH <urn:g>", "UPDATE"),
    ("WITH <urn:g> DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }", "UPDATE"),
    ("SELECT * WHERE { ?s ?p ?o } ; INSERT DATA { t:a t:b t:c }", "UPDATE"),
])
def test_update_and_service_are_refused(query: str, word: str) -> None:
    with pytest.raises(QueryError, match=word):
        check_readonly_query(query)


def test_empty_and_non_query_refused() -> None:
    with pytest.raises(QueryError, match="empty"):
        check_readonly_query("   ")
    with pytest.raises(QueryError, match="not a SPARQL query"):
        check_readonly_query("SELEC ?x WHERE { ?x ?p ?o }")


def test_service_never_reaches_the_network(graph: Path) -> None:
    """Oxigraph would fetch a SERVICE endpoint (it does HTTP): the tool must refuse before it runs."""
    import socket

    from trike.db import TrikeDB

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    db = TrikeDB(graph)
    try:
        with pytest.raises(QueryError, match="SERVICE"):
            run_readonly_sparql(db, f"SELECT * WHERE {{ SERVICE <http://127.0.0.1:{port}/> {{ ?s ?p ?o }} }}")
        with pytest.raises(TimeoutError):
            listener.accept()
    finally:
        listener.close()


class _SlowDB:
    """Stands in for TrikeDB: `sparql` takes `seconds` (like an engine that cannot be interrupted)."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.finished = 0

    def sparql(self, text: str) -> list[dict]:
        time.sleep(self.seconds)
        self.finished += 1
        return [{"x": 1}]


def test_sparql_time_limit() -> None:
    from trike.mcp_server import db_lock

    db = _SlowDB(1.5)
    lock = db_lock(db)
    t0 = time.monotonic()
    with pytest.raises(QueryError, match="time limit"):
        run_readonly_sparql(db, "SELECT * WHERE { ?s ?p ?o }", timeout=0.2, lock=lock)
    assert time.monotonic() - t0 < 1.0          # the caller is answered at the deadline
    # the abandoned query still holds the graph: another one fails fast as busy, not after 1.5 s
    t1 = time.monotonic()
    with pytest.raises(QueryError, match="busy"):
        run_readonly_sparql(db, "ASK { ?s ?p ?o }", timeout=0.2, lock=lock)
    assert time.monotonic() - t1 < 1.0
    # once the engine is done, queries run again
    deadline = time.monotonic() + 10
    while db.finished < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    db.seconds = 0.0
    assert run_readonly_sparql(db, "SELECT * WHERE { ?s ?p ?o }", timeout=5, lock=lock) == [{"x": 1}]


def test_sparql_time_limit_through_the_tool(graph: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import trike.mcp_server as ms
    from trike.db import TrikeDB

    db = TrikeDB(graph)
    real = db.sparql
    monkeypatch.setattr(ms, "SPARQL_TIMEOUT", 0.2)
    monkeypatch.setattr(db, "sparql", lambda text: (time.sleep(1.0), real(text))[1])
    server = build_server(db)
    text = err(call(server, "sparql", {"query": "SELECT * WHERE { ?s ?p ?o }"}))
    assert "time limit" in text and "LIMIT" in text
    time.sleep(1.2)
    monkeypatch.setattr(db, "sparql", real)
    assert ok(call(server, "sparql", {"query": "ASK { ?s ?p ?o }"}))["answer"] is True


# ------------------------------------------------------------------------------------ the tools

def test_tool_list_and_descriptions(graph: Path) -> None:
    from mcp import Client

    from trike.db import TrikeDB

    async def go() -> Any:
        async with Client(build_server(TrikeDB(graph))) as client:
            return (await client.list_tools()).tools

    tools = {t.name: t for t in anyio.run(go)}
    assert set(tools) == set(READ_TOOLS) | set(WRITE_TOOLS)
    for name, tool in tools.items():
        assert len(tool.description) > 200, name            # written for a model
        assert "Example" in tool.description, name
        assert "Returns" in tool.description, name
        assert tool.input_schema["type"] == "object"
        assert tool.output_schema is not None                # structured output
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is (name in READ_TOOLS)
    props = tools["match"].input_schema["properties"]
    assert props["limit"]["default"] == 50 and props["limit"]["maximum"] == 1000
    assert tools["related"].input_schema["properties"]["depth"]["maximum"] == 3
    assert tools["sparql"].input_schema["required"] == ["query"]
    assert tools["remove_triples"].annotations.destructive_hint is True


def test_read_only_server_has_only_read_tools(graph: Path) -> None:
    from mcp import Client

    from trike.db import TrikeDB

    server = build_server(TrikeDB(graph), read_only=True)

    async def go() -> Any:
        async with Client(server) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            res = await client.call_tool("add_triple", {"s": "a", "p": "DEPENDS_ON", "o": "b"})
            return names, res

    names, res = anyio.run(go)
    assert sorted(names) == sorted(READ_TOOLS)
    assert res.is_error
    assert graph.read_text(encoding="utf-8") == GRAPH


def test_read_tools(graph: Path) -> None:
    from trike.db import TrikeDB

    server = build_server(TrikeDB(graph))
    stats = ok(call(server, "stats"))
    assert stats["facts"] == 4 and stats["ontology_enforced"] is True

    onto = ok(call(server, "ontology"))
    assert onto["predicates"]["OWNED_BY"] == {
        "description": "asset -> team that owns it", "domain": "table", "range": "team", "functional": True}

    res = ok(call(server, "match", {"p": "DEPENDS_ON", "o": "orders_db"}))
    assert res["total"] == 2 and res["truncated"] is False
    assert {f["s"] for f in res["results"]} == {"report", "Acme Corp"}

    res = ok(call(server, "match", {"p": "DEPENDS_ON", "limit": 1}))
    assert res["count"] == 1 and res["total"] == 3 and res["truncated"] is True and "note" in res

    res = ok(call(server, "match", {"s": "orders_*"}))
    assert res["total"] == 2

    res = ok(call(server, "match", {"where": {"source": "wiki"}}))
    assert [f["o"] for f in res["results"]] == ["data-team"]

    res = ok(call(server, "match", {"patterns": ["?x DEPENDS_ON ?y", "?y OWNED_BY ?team"]}))
    assert sorted(r["x"] for r in res["results"]) == ["Acme Corp", "report"]
    assert {r["team"] for r in res["results"]} == {"data-team"}

    node = ok(call(server, "get_node", {"name": "orders_db"}))
    assert node["props"]["type"] == "table"
    assert len(node["out"]) == 2 and len(node["in"]) == 2 and node["truncated"] is False
    node = ok(call(server, "get_node", {"name": "orders_db", "limit": 1}))
    assert node["truncated"] is True and node["total_in"] == 2 and len(node["in"]) == 1

    rel = ok(call(server, "related", {"name": "report", "depth": 2}))
    assert rel["nodes"]["orders_db"]["hops"] == 1 and rel["nodes"]["data-team"]["hops"] == 2
    assert rel["truncated"] is False
    rel1 = ok(call(server, "related", {"name": "report"}))
    assert "data-team" not in rel1["nodes"]

    res = ok(call(server, "sparql", {"query": "SELECT ?s WHERE { ?s t:DEPENDS_ON t:orders_db } ORDER BY ?s"}))
    assert res["kind"] == "select" and res["rows"] == [{"s": "Acme Corp"}, {"s": "report"}]
    res = ok(call(server, "sparql", {"query": "SELECT ?s ?o WHERE { ?s ?p ?o }", "limit": 3}))
    assert res["count"] == 3 and res["truncated"] is True and res["total"] > 3
    res = ok(call(server, "sparql", {"query": "ASK { t:orders_db t:OWNED_BY t:data-team }"}))
    assert res == {"kind": "ask", "answer": True}
    res = ok(call(server, "sparql", {"query": "CONSTRUCT { ?s t:FEEDS ?o } WHERE { ?o t:DEPENDS_ON ?s }"}))
    assert res["kind"] == "triples" and {"s": "orders_db", "p": "FEEDS", "o": "report"} in res["triples"]

    found = ok(call(server, "search", {"query": "web orders"}))
    assert "results" in found


def test_read_tool_errors_tell_how_to_fix(graph: Path) -> None:
    from trike.db import TrikeDB

    server = build_server(TrikeDB(graph))
    text = err(call(server, "get_node", {"name": "orders"}))
    assert "no node named 'orders'" in text and "orders_db" in text and "search" in text
    text = err(call(server, "sparql", {"query": "SELECT ?s WHERE { ?s ?p "}))
    assert "bad SPARQL" in text and "t:NAME" in text
    text = err(call(server, "sparql", {"query": "INSERT DATA { t:a t:DEPENDS_ON t:b }"}))
    assert "read-only" in text and "add_triple" in text
    text = err(call(server, "sparql", {"query": "SELECT * { SERVICE <http://127.0.0.1:9/> { ?s ?p ?o } }"}))
    assert "SERVICE" in text and "refused" in text
    text = err(call(server, "related", {"name": "report", "depth": 5}))
    assert "depth" in text and "less than or equal to 3" in text
    text = err(call(server, "match", {"s": "a", "patterns": ["?a DEPENDS_ON ?b"]}))
    assert "either" in text
    text = err(call(server, "match", {"patterns": ["?a DEPENDS_ON"]}))
    assert "three parts" in text
    text = err(call(server, "match", {"as_of": "last tuesday"}))
    assert "as_of" in text
    text = err(call(server, "no_such_tool"))
    assert "no_such_tool" in text


def test_missing_capabilities_say_so(graph: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A capability whose TrikeDB method raises NotImplementedError (or whose module is not there yet)
    is a clear tool error, and the tool works unchanged once the method exists."""
    from trike.db import TrikeDB

    db = TrikeDB(graph)
    server = build_server(db)

    def not_yet(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("coming soon")

    for tool, method, args in [("history", "history", {"subject": "orders_db"}),
                               ("ask", "ask", {"question": "who owns orders?"}),
                               ("find", "find", {"question": "tables"}),
                               ("import_source", "import_source", {"path": "graph.yaml"})]:
        monkeypatch.setattr(db, method, not_yet)
        text = err(call(server, tool, args))
        assert f"`{tool}` is not available yet" in text, text
        monkeypatch.undo()
        monkeypatch.setenv("TRIKE_EMBED_MODEL", "none")

    def missing_module(*args: Any, **kwargs: Any) -> Any:
        raise ModuleNotFoundError("No module named 'trike.temporal'", name="trike.temporal")

    monkeypatch.setattr(db, "history", missing_module)
    assert "not available yet" in err(call(server, "history", {"subject": "orders_db"}))

    monkeypatch.setattr(db, "history", lambda subject, predicate=None: [
        {"s": subject, "p": "OWNED_BY", "o": f"team{i}", "valid_from": f"2020-01-0{i + 1}"} for i in range(5)])
    res = ok(call(server, "history", {"subject": "orders_db", "limit": 2}))
    assert res["total"] == 5 and res["truncated"] is True and res["results"][0]["valid_from"] == "2020-01-01"

    monkeypatch.setattr(db, "ask", lambda question, budget_tokens=2000: {
        "question": question, "budget_tokens": budget_tokens, "facts": []})
    assert ok(call(server, "ask", {"question": "q", "budget_tokens": 500}))["budget_tokens"] == 500


def test_write_tools_persist_and_gate(graph: Path) -> None:
    import yaml

    from trike.db import TrikeDB

    server = build_server(TrikeDB(graph), actor=lambda: "agent:alice")
    before = graph.read_text(encoding="utf-8")

    # refused writes change nothing
    text = err(call(server, "add_triple", {"s": "report", "p": "OWNS", "o": "x"}))
    assert "unknown predicate 'OWNS'" in text and "Allowed predicates: OWNED_BY, DEPENDS_ON, born" in text
    text = err(call(server, "add_triple", {"s": "orders_db", "p": "OWNED_BY", "o": "web-team"}))
    assert "functional" in text and "remove_triples" in text
    text = err(call(server, "add_triple", {"s": "data-team", "p": "OWNED_BY", "o": "orders_db"}))
    assert "backwards" in text
    text = err(call(server, "add_triple", {"s": "orders_db", "p": "born", "o": "yesterday"}))
    assert "date" in text
    text = err(call(server, "set_node", {"name": "orders_db", "props": {"type": "team"}}))
    assert "refused" in text
    err(call(server, "remove_triples", {}))
    text = err(call(server, "remove_triples", {"p": "*", "max_remove": 2}))
    assert "4 facts match" in text
    assert graph.read_text(encoding="utf-8") == before

    # accepted writes are in the file at once
    fact = ok(call(server, "add_triple", {"s": "report", "p": "DEPENDS_ON", "o": "kafka-orders",
                                          "attrs": {"source": "agent", "checked": "2024-09-01"}}))["fact"]
    assert fact == {"s": "report", "p": "DEPENDS_ON", "o": "kafka-orders", "source": "agent",
                    "checked": "2024-09-01", "by": "agent:alice"}
    ok(call(server, "add_triple", {"s": "orders_db", "p": "born", "o": "2019-05-01"}))
    node = ok(call(server, "set_node", {"name": "report", "props": {"type": "dashboard", "stars": 4}}))
    assert node == {"node": {"name": "report", "props": {"type": "dashboard", "stars": 4}}}
    data = yaml.safe_load(graph.read_text(encoding="utf-8"))
    assert data["nodes"]["report"] == {"type": "dashboard", "stars": 4}
    triples = data["triples"]
    assert {"s": "report", "p": "DEPENDS_ON", "o": "kafka-orders", "source": "agent",
            "checked": __import__("datetime").date(2024, 9, 1), "by": "agent:alice"} in triples
    assert {"s": "orders_db", "p": "born", "o": __import__("datetime").date(2019, 5, 1),
            "by": "agent:alice"} in triples

    dry = ok(call(server, "remove_triples", {"s": "report", "dry_run": True}))
    assert dry["total"] == 2 and dry["dry_run"] is True
    assert ok(call(server, "remove_triples", {"s": "report", "p": "DEPENDS_ON", "o": "kafka-orders"})) == {
        "removed": 1}
    data = yaml.safe_load(graph.read_text(encoding="utf-8"))
    assert not any(t["s"] == "report" and t["o"] == "kafka-orders" for t in data["triples"])
    node = ok(call(server, "set_node", {"name": "report", "props": {"stars": None}}))
    assert node["node"]["props"] == {"type": "dashboard"}


def test_by_comes_from_actor_not_from_the_caller(graph: Path) -> None:
    from trike.db import TrikeDB

    server = build_server(TrikeDB(graph), actor=lambda: "bob")
    fact = ok(call(server, "add_triple", {"s": "x", "p": "DEPENDS_ON", "o": "y", "attrs": {"by": "mallory"}}))
    assert fact["fact"]["by"] == "bob"
    anonymous = build_server(TrikeDB(graph))
    fact = ok(call(anonymous, "add_triple", {"s": "x2", "p": "DEPENDS_ON", "o": "y"}))
    assert "by" not in fact["fact"]


def test_import_source_stays_inside_allowed_folders(graph: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from trike.db import TrikeDB

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "data.csv").write_text("s,p,o\na,DEPENDS_ON,b\n", encoding="utf-8")
    (graph.parent / "inside.csv").write_text("s,p,o\na,DEPENDS_ON,b\n", encoding="utf-8")
    (graph.parent / "sneaky.csv").symlink_to(outside / "data.csv")
    db = TrikeDB(graph)
    seen: list[str] = []
    monkeypatch.setattr(db, "import_source", lambda path, mapping=None, dry_run=False: (
        seen.append(str(path)) or {"added": 1, "dry_run": dry_run}))
    server = build_server(db)
    for path in [str(outside / "data.csv"), "../outside/data.csv", "sneaky.csv", "/etc/passwd"]:
        text = err(call(server, "import_source", {"path": path}))
        assert "refused" in text and "--allow-dir" in text and str(graph.parent) in text
    assert seen == []
    assert "does not exist" in err(call(server, "import_source", {"path": "nope.csv"}))

    res = ok(call(server, "import_source", {"path": "inside.csv", "dry_run": True}))
    assert res == {"added": 1, "dry_run": True}
    assert seen == [str((graph.parent / "inside.csv").resolve())]

    allowed = build_server(db, allow_dirs=[outside])
    ok(call(allowed, "import_source", {"path": str(outside / "data.csv")}))
    text = err(call(allowed, "import_source", {"path": "inside.csv", "mapping": "/etc/passwd"}))
    assert "refused" in text
    assert graph.read_text(encoding="utf-8") == GRAPH


def test_edits_by_others_are_seen(graph: Path) -> None:
    from trike.db import TrikeDB

    server = build_server(TrikeDB(graph))
    assert ok(call(server, "stats"))["facts"] == 4
    with graph.open("a", encoding="utf-8") as fh:
        fh.write("- {s: billing, p: DEPENDS_ON, o: orders_db}\n")
    assert ok(call(server, "match", {"s": "billing"}))["total"] == 1
    graph.write_text(GRAPH.replace("- {s: report, p: DEPENDS_ON, o: orders_db}\n", ""), encoding="utf-8")
    assert ok(call(server, "stats"))["facts"] == 3
    graph.write_text("triples: [oops\n", encoding="utf-8")
    text = err(call(server, "stats"))
    assert "cannot be read" in text and "fix the file" in text
    graph.write_text(GRAPH, encoding="utf-8")
    assert ok(call(server, "stats"))["facts"] == 4


def test_import_is_cheap() -> None:
    code = ("import sys, trike.mcp_server; "
            "heavy = [m for m in ('mcp', 'pydantic', 'rdflib', 'owlrl', 'model2vec', 'pyoxigraph', 'starlette') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    assert out.stdout.strip() == "[]"


def test_no_heavy_libraries_until_a_tool_needs_them(graph: Path) -> None:
    code = f"""
import sys, anyio
from mcp import Client
from trike.db import TrikeDB
from trike.mcp_server import build_server

async def main():
    async with Client(build_server(TrikeDB({str(graph)!r}))) as c:
        await c.list_tools()
        await c.call_tool("stats", {{}})
        await c.call_tool("match", {{"p": "DEPENDS_ON"}})
    print([m for m in ("rdflib", "owlrl", "pyshacl", "model2vec", "numpy", "pyoxigraph") if m in sys.modules])

anyio.run(main)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_capability_results_are_bounded(graph: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from trike.db import TrikeDB

    db = TrikeDB(graph)
    facts = [{"s": f"n{i}", "p": "DEPENDS_ON", "o": "x"} for i in range(500)]
    monkeypatch.setattr(db, "import_source", lambda path, mapping=None, dry_run=False: {
        "counts": {"new": 500}, "facts": facts, "warnings": []})
    res = ok(call(build_server(db), "import_source", {"path": "graph.yaml", "dry_run": True}))
    assert len(res["facts"]) == 50 and res["facts_total"] == 500 and res["truncated"] is True
    assert res["counts"] == {"new": 500} and res["warnings"] == []
