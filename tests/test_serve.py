"""`trike serve` over real HTTP: REST, the SPARQL 1.1 Protocol (rdflib's SPARQLStore), MCP over streamable
HTTP with the SDK client, concurrency, limits, Origin checks, fixed-token auth and refused configurations.
OAuth is in test_serve_oauth.py."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import httpx
import pytest

from trike import TrikeDB

try:
    from idp import ServeProcess, run_serve
except ImportError:  # tests/ imported as a package
    from tests.idp import ServeProcess, run_serve

ONTOLOGY = {
    "predicates": {
        "knows": {"description": "person -> person", "domain": "person", "range": "person"},
        "age": {"range": "integer", "functional": True},
        "works_at": {"description": "person -> org"},
    },
}


def make_graph(path: Path) -> Path:
    db = TrikeDB(path, ontology=ONTOLOGY)
    with db.batch():
        db.set_node("alice", type="person")
        db.set_node("bob", type="person")
        db.add("alice", "knows", "bob", source="wiki")
        db.add("alice", "age", 42)
        db.add("bob", "works_at", "acme")
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    graph = make_graph(tmp_path_factory.mktemp("serve") / "graph.yaml")
    with ServeProcess(graph, "--max-body", "65536") as srv:
        srv.graph_path = graph  # type: ignore[attr-defined]
        yield srv


@pytest.fixture()
def http(server: ServeProcess):
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client


# ------------------------------------------------------------------------------------------- REST


def test_read_endpoints(http: httpx.Client) -> None:
    node = http.get("/nodes/alice").json()
    assert node["name"] == "alice" and node["props"] == {"type": "person"}
    assert {"s": "alice", "p": "knows", "o": "bob", "source": "wiki"} in node["out"]

    assert http.get("/match", params={"p": "knows"}).json() == [
        {"s": "alice", "p": "knows", "o": "bob", "source": "wiki"}]
    assert http.get("/match", params={"s": "alice", "p": "age"}).json()[0]["o"] == 42
    assert http.get("/match", params={"o": "42"}).json() == [{"s": "alice", "p": "age", "o": 42}]
    assert http.get("/match", params={"p": "knows", "source": "nope"}).json() == []

    stats = http.get("/stats").json()
    assert stats["facts"] >= 3 and stats["ontology_enforced"] is True
    onto = http.get("/ontology").json()
    assert "knows" in str(onto)

    ttl = http.get("/export", params={"format": "ttl"})
    assert ttl.status_code == 200 and ttl.headers["content-type"].startswith("text/turtle")
    assert "t:knows" in ttl.text or "urn:trike:knows" in ttl.text
    assert http.get("/export", params={"format": "nt"}).headers["content-type"] == "application/n-triples"
    # the graph itself, for a workspace member served by trike (conditional GET with the ETag)
    raw = http.get("/export", params={"format": "yaml"})
    assert raw.status_code == 200 and "- {s: alice, p: knows, o: bob, source: wiki}" in raw.text
    again = http.get("/export", params={"format": "yaml"}, headers={"If-None-Match": raw.headers["etag"]})
    assert again.status_code == 304

    page = http.get("/")  # the UI: one self-contained HTML page of the graph
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "<html" in page.text[:500] and "alice" in page.text
    assert http.get("/", headers={"If-None-Match": page.headers["etag"]}).status_code == 304

    doc = http.get("/openapi.json").json()
    assert doc["openapi"].startswith("3.") and "/nodes/{name}" in doc["paths"] and "/triples" in doc["paths"]
    assert http.get("/healthz").json() == {"ok": True}


def test_errors_are_json_with_the_right_status(http: httpx.Client) -> None:
    missing = http.get("/nodes/alicia")
    assert missing.status_code == 404
    assert missing.json()["error"] == "not_found" and "alice" in missing.json()["message"]

    refused = http.post("/triples", json={"s": "alice", "p": "hates", "o": "bob"})
    assert refused.status_code == 409
    body = refused.json()
    assert body["error"] == "ontology" and "knows" in body["allowed"]

    conflict = http.post("/triples", json={"s": "alice", "p": "age", "o": 43})
    assert conflict.status_code == 409 and conflict.json()["error"] == "conflict"

    bad_json = http.post("/triples", content=b"{not json", headers={"content-type": "application/json"})
    assert bad_json.status_code == 400 and bad_json.json()["error"] == "bad_request"
    assert http.post("/triples", json={"s": "alice", "p": "knows"}).status_code == 400
    assert http.post("/triples", content=b"s=1", headers={"content-type": "text/plain"}).status_code == 415
    assert http.delete("/triples").status_code == 400  # never "remove everything"
    assert http.get("/match", params={"limit": "many"}).status_code == 400
    assert http.get("/search").status_code == 400
    assert http.get("/export", params={"format": "docx"}).status_code == 400

    nowhere = http.get("/no/such/route")
    assert nowhere.status_code == 404 and nowhere.json()["error"] == "not_found"
    assert http.put("/stats").status_code == 405

    bad_query = http.post("/sparql", json={"query": "SELECT ?x WHERE {"})
    assert bad_query.status_code == 400 and bad_query.json()["error"] == "bad_query"
    update = http.post("/sparql", json={"query": "DELETE WHERE { ?s ?p ?o }"})
    assert update.status_code == 400 and "UPDATE" in update.json()["message"]
    service = http.get("/sparql", params={"query": "SELECT * WHERE { SERVICE <http://x/> { ?s ?p ?o } }"})
    assert service.status_code == 400 and "SERVICE" in service.json()["message"]
    form_update = http.post("/sparql", data={"update": "DELETE WHERE { ?s ?p ?o }"})
    assert form_update.status_code == 400


def test_request_body_limit_is_413(http: httpx.Client) -> None:
    big = {"s": "alice", "p": "knows", "o": "bob", "note": "x" * 70_000}
    r = http.post("/triples", json=big)
    assert r.status_code == 413 and r.json()["error"] == "too_large"

    def chunks():  # no Content-Length: counted while streaming
        for _ in range(20):
            yield b"x" * 8192

    r = http.post("/triples", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413
    r = http.post("/mcp", content=b"[" + b"1," * 40_000 + b"1]",
                  headers={"content-type": "application/json", "accept": "application/json, text/event-stream"})
    assert r.status_code == 413


def test_write_and_delete_round_trip(server: ServeProcess, http: httpx.Client) -> None:
    r = http.post("/triples", json={"s": "carol", "p": "works_at", "o": "acme", "attrs": {"since": "2024-09-01"}})
    assert r.status_code == 200
    fact = r.json()["added"][0]
    assert fact == {"s": "carol", "p": "works_at", "o": "acme", "since": "2024-09-01"}
    assert "by" not in fact  # no authentication, no identity

    r = http.post("/triples", json={"triples": [{"s": "dave", "p": "works_at", "o": "acme"},
                                                {"s": "erin", "p": "works_at", "o": "acme"}]})
    assert r.json()["count"] == 2

    text = Path(server.graph_path).read_text()  # type: ignore[attr-defined]
    assert "carol" in text and "since: 2024-09-01" in text

    r = http.delete("/triples", params={"s": "dave"})
    assert r.json() == {"removed": 1}
    r = http.request("DELETE", "/triples", json={"s": "erin", "p": "works_at"})
    assert r.json() == {"removed": 1}
    assert "dave" not in Path(server.graph_path).read_text()  # type: ignore[attr-defined]


def test_a_batch_is_all_or_nothing(tmp_path: Path) -> None:
    graph = make_graph(tmp_path / "g.yaml")
    with ServeProcess(graph) as srv, httpx.Client(base_url=srv.url, timeout=20) as c:
        r = c.post("/triples", json=[{"s": "fred", "p": "works_at", "o": "acme"},
                                     {"s": "fred", "p": "hates", "o": "acme"}])
        assert r.status_code == 409 and r.json()["error"] == "ontology"
        assert c.get("/match", params={"s": "fred"}).json() == []
        assert c.post("/triples", json={"s": "fred", "p": "works_at", "o": "acme"}).status_code == 200
    assert "fred" in graph.read_text()


def test_writes_after_the_file_was_rewritten_elsewhere(tmp_path: Path) -> None:
    """Someone edits the shared file (CLI, editor, git pull) while the server runs; the server's next
    write must re-read it and land, not hang."""
    graph = make_graph(tmp_path / "g.yaml")
    with ServeProcess(graph) as srv, httpx.Client(base_url=srv.url, timeout=15) as c:
        assert c.get("/stats").status_code == 200
        TrikeDB(graph).set_node("bob", type="person", team="platform")  # a rewrite, not an append
        r = c.post("/triples", json={"s": "bob", "p": "works_at", "o": "initech"})
        assert r.status_code == 200
        assert c.get("/nodes/bob").json()["props"]["team"] == "platform"
    db = TrikeDB(graph)
    assert db.match(s="bob", o="initech") and db.nodes()["bob"]["team"] == "platform"


def test_sees_changes_made_to_the_file(server: ServeProcess, http: httpx.Client) -> None:
    TrikeDB(server.graph_path).add("zoe", "works_at", "initech")  # type: ignore[attr-defined]
    assert http.get("/match", params={"s": "zoe"}).json()[0]["o"] == "initech"


# ------------------------------------------------------------------------------- SPARQL protocol


def test_sparql_json_endpoint_and_protocol_forms(http: httpx.Client) -> None:
    q = "SELECT ?o WHERE { t:alice t:knows ?o }"
    assert http.post("/sparql", json={"query": q}).json() == [{"o": "bob"}]
    assert http.post("/sparql", json={"query": "ASK { t:alice t:knows t:bob }"}).json() is True

    r = http.get("/sparql", params={"query": q})
    assert r.headers["content-type"].startswith("application/sparql-results+json")
    assert r.json()["results"]["bindings"] == [{"o": {"type": "uri", "value": "urn:trike:bob"}}]

    r = http.post("/sparql", data={"query": q}, headers={"accept": "application/sparql-results+xml"})
    assert r.headers["content-type"].startswith("application/sparql-results+xml") and "urn:trike:bob" in r.text

    r = http.post("/sparql", content=q.encode(), headers={"content-type": "application/sparql-query",
                                                          "accept": "text/csv"})
    assert r.headers["content-type"].startswith("text/csv") and "urn:trike:bob" in r.text

    r = http.get("/sparql", params={"query": "CONSTRUCT { ?s t:knows ?o } WHERE { ?s t:knows ?o }"},
                 headers={"accept": "application/n-triples"})
    assert r.headers["content-type"].startswith("application/n-triples")
    assert "<urn:trike:alice> <urn:trike:knows> <urn:trike:bob> ." in r.text

    r = http.get("/sparql", params={"query": q}, headers={"accept": "image/png"})
    assert r.status_code == 406


@pytest.mark.parametrize("return_format", ["xml", "json"])
def test_rdflib_sparqlstore_queries_the_endpoint(server: ServeProcess, return_format: str) -> None:
    import rdflib
    from rdflib.plugins.stores.sparqlstore import SPARQLStore

    store = SPARQLStore(server.url + "/sparql", returnFormat=return_format)
    graph = rdflib.Graph(store=store)
    rows = list(graph.query("SELECT ?o WHERE { <urn:trike:alice> <urn:trike:knows> ?o }"))
    assert [str(r[0]) for r in rows] == ["urn:trike:bob"]
    rows = list(graph.query("SELECT ?age WHERE { <urn:trike:alice> <urn:trike:age> ?age }"))
    assert rows[0][0].toPython() == 42  # a typed literal survives the round trip
    ask = graph.query("ASK { <urn:trike:alice> <urn:trike:knows> <urn:trike:bob> }")
    assert ask.askAnswer is True
    assert (rdflib.URIRef("urn:trike:alice"), rdflib.URIRef("urn:trike:knows"),
            rdflib.URIRef("urn:trike:bob")) in graph
    if return_format == "xml":
        built = graph.query("CONSTRUCT { ?s <urn:trike:knows> ?o } WHERE { ?s <urn:trike:knows> ?o }")
        assert len(built.graph) >= 1


# ----------------------------------------------------------------------------------------- MCP


def _mcp(url: str, calls, token: str | None = None):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def go():
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with httpx2.AsyncClient(headers=headers, timeout=30) as hc:
            async with Client(streamable_http_client(url + "/mcp", http_client=hc)) as client:
                return await calls(client)

    return asyncio.run(go())


def test_mcp_over_streamable_http_without_token(server: ServeProcess) -> None:
    async def calls(client):
        tools = {t.name for t in (await client.list_tools()).tools}
        stats = await client.call_tool("stats", {})
        added = await client.call_tool("add_triple", {"s": "mcp-user", "p": "works_at", "o": "acme"})
        node = await client.call_tool("get_node", {"name": "mcp-user"})
        return tools, stats, added, node

    tools, stats, added, node = _mcp(server.url, calls)
    assert {"sparql", "match", "add_triple", "set_node"} <= tools
    assert stats.structured_content["facts"] >= 3
    assert not added.is_error
    assert "acme" in str(node.structured_content)
    assert "mcp-user" in Path(server.graph_path).read_text()  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------ origins, hosts


def test_origin_and_host_are_validated(server: ServeProcess, http: httpx.Client) -> None:
    evil = http.get("/stats", headers={"Origin": "http://evil.example"})
    assert evil.status_code == 403 and evil.json()["error"] == "invalid_origin"
    assert "access-control-allow-origin" not in evil.headers
    mcp = http.post("/mcp", json={}, headers={"Origin": "http://evil.example"})
    assert mcp.status_code == 403
    assert http.get("/stats", headers={"Origin": server.url}).status_code == 200
    port = server.url.rsplit(":", 1)[1]
    assert http.get("/stats", headers={"Origin": f"http://localhost:{port}"}).status_code == 200
    assert http.get("/stats", headers={"Origin": "null"}).status_code == 403
    # DNS rebinding: a browser at evil.example resolved to 127.0.0.1 sends Host: evil.example
    assert http.get("/stats", headers={"Host": f"evil.example:{port}"}).status_code == 421
    # no permissive CORS
    pre = http.options("/stats", headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "GET"})
    assert "access-control-allow-origin" not in pre.headers


# -------------------------------------------------------------------------------- concurrency


def test_twenty_concurrent_writers_all_land(server: ServeProcess) -> None:
    writers, per_writer = 20, 5
    errors: list[str] = []
    barrier = threading.Barrier(writers)

    def write(i: int) -> None:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            barrier.wait()
            for j in range(per_writer):
                r = client.post("/triples", json={"s": f"writer-{i}", "p": "works_at", "o": f"org-{j}",
                                                  "n": j})
                if r.status_code != 200:
                    errors.append(f"{r.status_code} {r.text}")

    threads = [threading.Thread(target=write, args=(i,)) for i in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    fresh = TrikeDB(server.graph_path)  # type: ignore[attr-defined]
    landed = [f for f in fresh.match(s="writer-*", p="works_at")]
    assert len(landed) == writers * per_writer
    with httpx.Client(base_url=server.url) as client:
        assert len(client.get("/match", params={"s": "writer-*"}).json()) == writers * per_writer


# ------------------------------------------------------------------------------ fixed token, CLI


def test_fixed_token(tmp_path: Path) -> None:
    graph = make_graph(tmp_path / "g.yaml")
    with ServeProcess(graph, env={"TRIKE_TOKEN": "s3cret-token"}) as srv, httpx.Client(base_url=srv.url) as c:
        r = c.get("/stats")
        assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
        assert c.get("/stats", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert c.get("/stats", params={"access_token": "s3cret-token"}).status_code == 401
        ok = {"Authorization": "Bearer s3cret-token"}
        assert c.get("/stats", headers=ok).status_code == 200
        assert c.post("/triples", json={"s": "t", "p": "works_at", "o": "acme"}, headers=ok).status_code == 200
        assert c.get("/healthz").status_code == 200
        assert c.get("/.well-known/oauth-protected-resource").status_code == 404

        async def calls(client):
            return {t.name for t in (await client.list_tools()).tools}

        assert "add_triple" in _mcp(srv.url, calls, token="s3cret-token")
        with pytest.raises(BaseException):  # noqa: B017 - the SDK wraps the 401 in exception groups
            _mcp(srv.url, calls)


def test_read_only_server_and_cors(tmp_path: Path) -> None:
    graph = make_graph(tmp_path / "g.yaml")
    with ServeProcess(graph, "--read-only", "--cors-origin", "https://app.example") as srv, \
            httpx.Client(base_url=srv.url) as c:
        r = c.post("/triples", json={"s": "t", "p": "works_at", "o": "acme"})
        assert r.status_code == 403 and r.json()["error"] == "read_only"
        assert c.get("/stats").status_code == 200
        pre = c.options("/stats", headers={"Origin": "https://app.example", "Access-Control-Request-Method": "GET",
                                           "Access-Control-Request-Headers": "authorization"})
        assert pre.headers["access-control-allow-origin"] == "https://app.example"
        r = c.get("/stats", headers={"Origin": "https://app.example"})
        assert r.status_code == 200 and r.headers["access-control-allow-origin"] == "https://app.example"
        assert c.get("/stats", headers={"Origin": "https://other.example"}).status_code == 403

        async def calls(client):
            return {t.name for t in (await client.list_tools()).tools}

        tools = _mcp(srv.url, calls)
        assert "sparql" in tools and "add_triple" not in tools


def test_refuses_non_loopback_without_auth(tmp_path: Path) -> None:
    graph = make_graph(tmp_path / "g.yaml")
    r = run_serve(graph, "--host", "0.0.0.0", "--port", "0")
    assert r.returncode == 2 and "--insecure-no-auth" in r.stderr
    r = run_serve(graph, "--oauth-issuer", "https://idp.example")
    assert r.returncode == 2 and "--public-url" in r.stderr
    r = run_serve(graph, "--token", "a", "--oauth-issuer", "https://idp.example", "--public-url", "https://x")
    assert r.returncode == 2
    r = run_serve(graph, "--oauth-issuer", "http://idp.example", "--public-url", "https://x", "--port", "0")
    assert r.returncode == 2 and "https" in r.stderr
