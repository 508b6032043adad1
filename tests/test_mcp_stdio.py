"""`trike mcp FILE` over stdio in a subprocess, driven by the MCP SDK's own client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
CLI = "import sys; from trike.cli import main; sys.exit(main())"

GRAPH = """\
ontology:
  predicates:
    OWNED_BY: {description: "asset -> team that owns it", domain: table, range: team, functional: true}
    DEPENDS_ON: {description: "asset -> asset it reads from"}
nodes:
  orders_db: {type: table, description: All web orders}
  data-team: {type: team}
  web-team: {type: team}
triples:
- {s: orders_db, p: OWNED_BY, o: data-team, source: wiki}
- {s: orders_db, p: DEPENDS_ON, o: kafka-orders}
- {s: report, p: DEPENDS_ON, o: orders_db}
"""


def server_env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "TRIKE_EMBED_MODEL": "none",
            "TRIKE_CACHE_DIR": str(tmp_path / "cache")}


def params(graph: Path, tmp_path: Path, *extra: str) -> Any:
    from mcp import StdioServerParameters

    return StdioServerParameters(command=sys.executable, args=["-c", CLI, "mcp", str(graph), *extra],
                                 env=server_env(tmp_path), cwd=str(tmp_path))


@pytest.fixture()
def graph(tmp_path: Path) -> Path:
    folder = tmp_path / "kg"
    folder.mkdir()
    path = folder / "graph.yaml"
    path.write_text(GRAPH, encoding="utf-8")
    return path


def data(result: Any) -> dict:
    assert not result.is_error, result.content[0].text
    return result.structured_content


def error(result: Any) -> str:
    assert result.is_error, result.structured_content
    return result.content[0].text


def test_stdio_session(graph: Path, tmp_path: Path) -> None:
    """Every tool over a real stdio connection; the file changes exactly as the writes say."""
    from mcp import Client

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "data.csv").write_text("s,p,o\n", encoding="utf-8")

    async def session() -> None:
        async with Client(params(graph, tmp_path), read_timeout_seconds=60) as client:
            names = sorted(t.name for t in (await client.list_tools()).tools)
            assert names == sorted(["sparql", "match", "search", "find", "get_node", "related", "ontology",
                                    "stats", "history", "ask", "add_triple", "set_node", "remove_triples",
                                    "import_source"])

            # ---- reads
            assert data(await client.call_tool("stats", {}))["facts"] == 3
            onto = data(await client.call_tool("ontology", {}))
            assert onto["predicates"]["OWNED_BY"]["functional"] is True
            m = data(await client.call_tool("match", {"p": "DEPENDS_ON", "limit": 1}))
            assert m["count"] == 1 and m["total"] == 2 and m["truncated"] is True
            node = data(await client.call_tool("get_node", {"name": "orders_db"}))
            assert node["props"]["description"] == "All web orders" and len(node["in"]) == 1
            rel = data(await client.call_tool("related", {"name": "report", "depth": 2}))
            assert set(rel["nodes"]) == {"report", "orders_db", "data-team", "kafka-orders"}
            q = data(await client.call_tool("sparql", {"query": "SELECT ?t WHERE { t:orders_db t:OWNED_BY ?t }"}))
            assert q["rows"] == [{"t": "data-team"}]
            found = data(await client.call_tool("search", {"query": "web orders"}))
            assert "results" in found
            find = await client.call_tool("find", {"question": "orders", "where": {"type": "table"}})
            assert not find.is_error or "not available yet" in error(find)
            for tool, args in [("history", {"subject": "orders_db"}), ("ask", {"question": "who owns orders?"})]:
                res = await client.call_tool(tool, args)
                assert not res.is_error or "not available yet" in error(res), (tool, res)

            # ---- errors are tool errors, the server lives on
            assert "Similar names: orders_db" in error(await client.call_tool("get_node", {"name": "orders"}))
            assert "read-only" in error(await client.call_tool("sparql", {"query": "DELETE WHERE { ?s ?p ?o }"}))
            assert "SERVICE" in error(await client.call_tool(
                "sparql", {"query": "SELECT * WHERE { SERVICE <http://127.0.0.1:9/> { ?s ?p ?o } }"}))
            assert "bad SPARQL" in error(await client.call_tool("sparql", {"query": "SELECT ?x WHERE {"}))
            assert "depth" in error(await client.call_tool("related", {"name": "report", "depth": 9}))
            assert "limit" in error(await client.call_tool("match", {"limit": "lots"}))

            # ---- refused writes change nothing
            before = graph.read_bytes()
            text = error(await client.call_tool("add_triple", {"s": "report", "p": "FEEDS", "o": "x"}))
            assert "Allowed predicates: OWNED_BY, DEPENDS_ON" in text
            text = error(await client.call_tool("add_triple", {"s": "orders_db", "p": "OWNED_BY", "o": "web-team"}))
            assert "functional" in text
            text = error(await client.call_tool("import_source", {"path": str(outside / "data.csv")}))
            assert "outside the folders" in text
            assert "at least one" in error(await client.call_tool("remove_triples", {}))
            assert graph.read_bytes() == before

            # ---- accepted writes are in the file at once
            fact = data(await client.call_tool("add_triple", {"s": "billing", "p": "DEPENDS_ON",
                                                                "o": "orders_db", "attrs": {"source": "agent"}}))
            assert fact["fact"] == {"s": "billing", "p": "DEPENDS_ON", "o": "orders_db", "source": "agent"}
            assert graph.read_text(encoding="utf-8").endswith(
                "- {s: billing, p: DEPENDS_ON, o: orders_db, source: agent}\n")  # appended: a one-line diff
            await client.call_tool("set_node", {"name": "billing", "props": {"type": "service"}})
            assert yaml.safe_load(graph.read_text(encoding="utf-8"))["nodes"]["billing"] == {"type": "service"}
            removed = data(await client.call_tool("remove_triples", {"s": "report"}))
            assert removed == {"removed": 1}
            assert "report" not in graph.read_text(encoding="utf-8")

            # ---- an edit by someone else is seen before the next answer
            with graph.open("a", encoding="utf-8") as fh:
                fh.write("- {s: dashboard, p: DEPENDS_ON, o: billing}\n")
            m = data(await client.call_tool("match", {"o": "billing"}))
            assert [f["s"] for f in m["results"]] == ["dashboard"]
            graph.write_text(GRAPH, encoding="utf-8")
            assert data(await client.call_tool("stats", {}))["facts"] == 3

    anyio.run(session)
    final = yaml.safe_load(graph.read_text(encoding="utf-8"))
    assert len(final["triples"]) == 3


def test_stdio_read_only_and_legacy_handshake(graph: Path, tmp_path: Path) -> None:
    from mcp import Client

    async def session() -> None:
        async with Client(params(graph, tmp_path, "--read-only"), mode="legacy",
                          read_timeout_seconds=60) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert names == {"sparql", "match", "search", "find", "get_node", "related", "ontology", "stats",
                             "history", "ask"}
            res = await client.call_tool("add_triple", {"s": "a", "p": "DEPENDS_ON", "o": "b"})
            assert res.is_error
            assert data(await client.call_tool("match", {"s": "orders_db"}))["total"] == 2

    before = graph.read_bytes()
    anyio.run(session)
    assert graph.read_bytes() == before


def test_stdio_broken_file_is_a_tool_error_until_fixed(graph: Path, tmp_path: Path) -> None:
    from mcp import Client

    graph.write_text("triples:\n- {s: a, p: DEPENDS_ON\n", encoding="utf-8")

    async def session() -> None:
        async with Client(params(graph, tmp_path), read_timeout_seconds=60) as client:
            assert len((await client.list_tools()).tools) == 14
            text = error(await client.call_tool("stats", {}))
            assert "cannot be read" in text and "graph.yaml" in text
            graph.write_text(GRAPH, encoding="utf-8")
            assert data(await client.call_tool("stats", {}))["facts"] == 3

    anyio.run(session)


def test_cli_usage_errors(tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", CLI, "mcp", *args], capture_output=True, text=True,
                              env=server_env(tmp_path), stdin=subprocess.DEVNULL, timeout=60)

    res = run(str(tmp_path / "missing" / "graph.yaml"))
    assert res.returncode == 2 and "does not exist" in res.stderr
    res = run(str(tmp_path))
    assert res.returncode == 2 and "folder" in res.stderr
    res = run(str(tmp_path / "g.yaml"), "--allow-dir", str(tmp_path / "nope"))
    assert res.returncode == 2 and "--allow-dir" in res.stderr
    res = run("--help")
    assert res.returncode == 0 and "--read-only" in res.stdout


def test_stdio_raw_json_rpc(graph: Path, tmp_path: Path) -> None:
    """The wire itself: one JSON-RPC message per line on stdout, nothing else there."""
    proc = subprocess.Popen([sys.executable, "-c", CLI, "mcp", str(graph)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=server_env(tmp_path))
    assert proc.stdin is not None
    msgs = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "match", "arguments": {"s": "orders_db", "p": "OWNED_BY"}}},
    ]
    assert proc.stdout is not None
    by_id: dict[int, dict] = {}
    try:
        for m in msgs:  # a client keeps stdin open until it has its answers
            proc.stdin.write(json.dumps(m) + "\n")
            proc.stdin.flush()
            if "id" in m:
                line = proc.stdout.readline()
                reply = json.loads(line)  # every stdout line is one JSON-RPC message
                by_id[reply["id"]] = reply
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
        assert proc.stdout.read() == ""
    assert set(by_id) == {1, 2, 3}
    assert by_id[1]["result"]["serverInfo"]["name"] == "trike"
    assert by_id[1]["result"]["protocolVersion"] == "2025-06-18"
    assert len(by_id[2]["result"]["tools"]) == 14
    result = by_id[3]["result"]
    assert result["structuredContent"]["results"] == [
        {"s": "orders_db", "p": "OWNED_BY", "o": "data-team", "source": "wiki"}]


def raw_session(graph: Path, env: dict[str, str], msgs: list[dict]) -> dict[int, dict]:
    """Send `msgs` one by one (waiting for each reply) to a fresh `trike mcp`; the replies by id."""
    proc = subprocess.Popen([sys.executable, "-c", CLI, "mcp", str(graph)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    replies: dict[int, dict] = {}
    try:
        for m in msgs:
            proc.stdin.write(json.dumps(m) + "\n")
            proc.stdin.flush()
            if "id" in m:
                reply = json.loads(proc.stdout.readline())
                replies[reply["id"]] = reply
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
        assert proc.stdout.read() == ""  # nothing left over (the SDK's own reply to a cached initialize)
    return replies


HANDSHAKE = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize",
     "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    {"jsonrpc": "2.0", "id": 3, "method": "ping"},
    {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
     "params": {"name": "add_triple", "arguments": {"s": "x", "p": "DEPENDS_ON", "o": "y"}}},
    {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "stats", "arguments": {}}},
]


def test_fast_start_answers_the_handshake_as_the_sdk_does(graph: Path, tmp_path: Path) -> None:
    """The first start records the SDK's handshake replies; the next start answers them from the cache
    before the SDK has loaded, identically, and the SDK's session then works as usual."""
    env = server_env(tmp_path)
    cache = tmp_path / "cache"
    cold = raw_session(graph, env, HANDSHAKE)
    files = list(cache.glob("mcp-handshake-*.json"))
    assert len(files) == 1
    recorded = json.loads(files[0].read_text(encoding="utf-8"))
    assert set(recorded["2025-06-18"]) == {"initialize", "tools/list"}

    warm = raw_session(graph, env, HANDSHAKE)
    for i in (1, 2, 3):
        assert warm[i] == cold[i]
    assert warm[4]["result"]["isError"] is False            # an idempotent write, done twice
    assert warm[5]["result"]["structuredContent"]["facts"] == 4

    off = raw_session(graph, {**env, "TRIKE_MCP_FAST_START": "0"}, HANDSHAKE)
    for i in (1, 2, 3):
        assert off[i] == cold[i]

    # a version the cache does not know is answered by the SDK itself (and then recorded too)
    other = [dict(HANDSHAKE[0], params={**HANDSHAKE[0]["params"], "protocolVersion": "2025-03-26"}),
             *HANDSHAKE[1:3]]
    replies = raw_session(graph, env, other)
    assert replies[1]["result"]["protocolVersion"] == "2025-03-26"
    assert replies[2]["result"] == cold[2]["result"]
    assert "2025-03-26" in json.loads(files[0].read_text(encoding="utf-8"))

    # a damaged cache is ignored
    files[0].write_text("{not json", encoding="utf-8")
    again = raw_session(graph, env, HANDSHAKE[:3])
    assert again[2] == cold[2]


def test_fast_start_with_the_sdk_client(graph: Path, tmp_path: Path) -> None:
    """Warm cache, both handshakes of the SDK client (legacy initialize, 2026 discover)."""
    from mcp import Client

    async def session(mode: str) -> None:
        async with Client(params(graph, tmp_path), mode=mode, read_timeout_seconds=60) as client:
            assert len((await client.list_tools()).tools) == 14
            res = await client.call_tool("get_node", {"name": "orders_db"})
            assert res.structured_content["props"]["type"] == "table"

    for mode in ("legacy", "legacy", "auto"):
        anyio.run(session, mode)
    assert list((tmp_path / "cache").glob("mcp-handshake-*.json"))
