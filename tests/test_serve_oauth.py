"""`trike serve` as an OAuth 2.1 resource server, over real HTTP with real tokens.

A test IdP (tests/idp.py) runs on loopback with RSA and EC keys, discovery metadata and a JWKS; tokens are
minted with PyJWT. The server runs in a subprocess. Covered: valid tokens (read, write, RSA and EC),
expired, not yet valid, wrong issuer, wrong audience, `alg: none`, HS256 keyed with the public key,
tampered payload and signature, unknown `kid` then key rotation (with the refetch rate limit), missing
scope (403 + step-up challenge), token in the query string, no token (401 + metadata URL), RFC 9728
metadata, the audit trail, and MCP over streamable HTTP with and without tokens.
"""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import httpx
import pytest

from trike import TrikeDB

try:
    from idp import ServeProcess, TestIdP
except ImportError:  # tests/ imported as a package
    from tests.idp import ServeProcess, TestIdP

PUBLIC = "https://kg.example.test"  # the URL clients use (behind a TLS proxy); the tokens' audience
ONTOLOGY = {"predicates": {"knows": {}, "works_at": {}}}


@pytest.fixture(scope="module")
def idp():
    with TestIdP() as provider:
        yield provider


@pytest.fixture(scope="module")
def server(idp: TestIdP, tmp_path_factory: pytest.TempPathFactory):
    graph = tmp_path_factory.mktemp("oauth") / "graph.yaml"
    db = TrikeDB(graph, ontology=ONTOLOGY)
    db.add("alice", "knows", "bob")
    with ServeProcess(graph, "--oauth-issuer", idp.issuer, "--public-url", PUBLIC,
                      "--jwks-min-refetch", "0.5") as srv:
        srv.graph_path = graph  # type: ignore[attr-defined]
        yield srv


@pytest.fixture()
def http(server: ServeProcess):
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def challenge(response: httpx.Response) -> dict[str, str]:
    header = response.headers["www-authenticate"]
    assert header.startswith("Bearer ")
    return dict(re.findall(r'(\w+)="([^"]*)"', header))


# -------------------------------------------------------------------------------- discovery


def test_no_token_gets_401_with_metadata_url_and_scope(http: httpx.Client) -> None:
    r = http.get("/nodes/alice")
    assert r.status_code == 401
    params = challenge(r)
    assert params["resource_metadata"] == PUBLIC + "/.well-known/oauth-protected-resource"
    assert params["scope"] == "trike:read"
    assert "error" not in params  # RFC 6750 §3.1: no error code when no credentials were sent
    assert r.json()["resource_metadata"] == params["resource_metadata"]

    r = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert r.status_code == 401
    params = challenge(r)
    assert params["resource_metadata"] == PUBLIC + "/.well-known/oauth-protected-resource/mcp"
    assert params["scope"].split() == ["trike:read", "trike:write"]
    assert http.get("/mcp").status_code == 401


def test_protected_resource_metadata(http: httpx.Client, idp: TestIdP) -> None:
    root = http.get("/.well-known/oauth-protected-resource")
    assert root.status_code == 200
    doc = root.json()
    assert doc["resource"] == PUBLIC
    assert doc["authorization_servers"] == [idp.issuer]
    assert doc["scopes_supported"] == ["trike:read", "trike:write"]
    assert doc["bearer_methods_supported"] == ["header"]
    assert "HS256" not in doc["resource_signing_alg_values_supported"]
    mcp = http.get("/.well-known/oauth-protected-resource/mcp").json()
    assert mcp["resource"] == PUBLIC + "/mcp"
    assert http.get("/.well-known/oauth-protected-resource/other").status_code == 404
    assert http.get("/openapi.json").json()["components"]["securitySchemes"]["bearer"]["bearerFormat"] == "JWT"


# ------------------------------------------------------------------------------ valid tokens


def test_valid_token_reads_and_writes_with_audit_trail(server: ServeProcess, http: httpx.Client,
                                                       idp: TestIdP) -> None:
    token = idp.mint(PUBLIC, sub="alice@example.com")
    r = http.get("/nodes/alice", headers=bearer(token))
    assert r.status_code == 200 and r.json()["out"][0]["o"] == "bob"

    r = http.post("/triples", headers=bearer(token),
                  json={"s": "carol", "p": "works_at", "o": "acme", "by": "someone-else"})
    assert r.status_code == 200
    assert r.json()["added"][0]["by"] == "alice@example.com"  # from the token, not the body
    assert "by: alice@example.com" in Path(server.graph_path).read_text()  # type: ignore[attr-defined]

    ec = idp.mint(PUBLIC + "/mcp", key=idp.ec, sub="erin")  # EC key; audience = the MCP resource
    assert http.get("/stats", headers=bearer(ec)).status_code == 200
    both = idp.mint([PUBLIC, "https://other.example"])  # an audience list containing ours
    assert http.get("/stats", headers=bearer(both)).status_code == 200


def test_sparqlstore_with_a_bearer_token(server: ServeProcess, idp: TestIdP) -> None:
    import rdflib
    from rdflib.plugins.stores.sparqlstore import SPARQLStore

    store = SPARQLStore(server.url + "/sparql", returnFormat="json", headers=bearer(idp.mint(PUBLIC)))
    rows = list(rdflib.Graph(store=store).query("SELECT ?o WHERE { <urn:trike:alice> <urn:trike:knows> ?o }"))
    assert [str(r[0]) for r in rows] == ["urn:trike:bob"]


# ---------------------------------------------------------------------------- invalid tokens


def _rejected(http: httpx.Client, token: str, fragment: str) -> None:
    r = http.get("/stats", headers=bearer(token))
    assert r.status_code == 401, r.text
    params = challenge(r)
    assert params["error"] == "invalid_token"
    assert fragment in params["error_description"], params
    assert params["resource_metadata"].endswith("/.well-known/oauth-protected-resource")


def test_expired_token(http: httpx.Client, idp: TestIdP) -> None:
    now = int(time.time())
    _rejected(http, idp.mint(PUBLIC, iat=now - 3600, nbf=now - 3600, exp=now - 120), "expired")


def test_token_not_yet_valid(http: httpx.Client, idp: TestIdP) -> None:
    _rejected(http, idp.mint(PUBLIC, nbf=int(time.time()) + 600), "not valid yet")


def test_wrong_issuer(http: httpx.Client, idp: TestIdP) -> None:
    _rejected(http, idp.mint(PUBLIC, iss="https://evil-idp.example"), "issuer")


def test_wrong_audience(http: httpx.Client, idp: TestIdP) -> None:
    _rejected(http, idp.mint("https://another-service.example"), "not issued for this server")
    _rejected(http, idp.mint(PUBLIC, aud=None), "aud")


def test_alg_none(http: httpx.Client, idp: TestIdP) -> None:
    _rejected(http, idp.mint_unsigned(PUBLIC), "'none' is not accepted")


def test_hs256_signed_with_the_public_key(http: httpx.Client, idp: TestIdP) -> None:
    _rejected(http, idp.mint_hs256_with_public_key(PUBLIC), "'HS256' is not accepted")


def test_tampered_token(http: httpx.Client, idp: TestIdP) -> None:
    good = idp.mint(PUBLIC)
    _rejected(http, idp.tamper(good), "signature")
    _rejected(http, idp.tamper_signature(good), "signature")
    _rejected(http, idp.mint(PUBLIC, exp=None), "exp")
    _rejected(http, "not-a-jwt", "not a valid JWT")
    # a key of the wrong type for the header's algorithm (an RSA kid with ES256)
    _rejected(http, idp.mint(PUBLIC, key=idp.ec, headers={"kid": idp.rsa.kid}), "no signing key")


def test_token_in_query_string_is_refused(http: httpx.Client, idp: TestIdP) -> None:
    token = idp.mint(PUBLIC)
    for name in ("access_token", "token"):
        r = http.get("/stats", params={name: token})
        assert r.status_code == 401
        assert "Authorization header" in challenge(r)["error_description"]
    # even alongside a good header: a token in a URL ends up in logs, so the request is refused
    assert http.get("/stats", params={"access_token": token}, headers=bearer(token)).status_code == 401
    assert http.get("/stats", headers={"Authorization": f"Basic {token}"}).status_code == 401


def test_missing_scope(http: httpx.Client, idp: TestIdP) -> None:
    reader = idp.mint(PUBLIC, scope="trike:read")
    assert http.get("/stats", headers=bearer(reader)).status_code == 200
    r = http.post("/triples", headers=bearer(reader), json={"s": "x", "p": "knows", "o": "y"})
    assert r.status_code == 403
    params = challenge(r)
    assert params["error"] == "insufficient_scope" and params["scope"] == "trike:write"
    assert r.json()["error"] == "insufficient_scope"
    assert http.request("DELETE", "/triples", params={"s": "alice"}, headers=bearer(reader)).status_code == 403

    nobody = idp.mint(PUBLIC, scope="openid profile")
    r = http.get("/stats", headers=bearer(nobody))
    assert r.status_code == 403 and challenge(r)["scope"] == "trike:read"
    scp_list = idp.mint(PUBLIC, scope=None, scp=["trike:read"])  # Azure/Okta style `scp` list
    assert http.get("/stats", headers=bearer(scp_list)).status_code == 200


def test_unknown_kid_then_key_rotation(http: httpx.Client, idp: TestIdP) -> None:
    assert http.get("/stats", headers=bearer(idp.mint(PUBLIC))).status_code == 200  # keys are cached
    new_key = idp.new_key("RSA")
    token = idp.mint(PUBLIC, key=new_key)
    r = http.get("/stats", headers=bearer(token))
    assert r.status_code == 401 and "no signing key" in challenge(r)["error_description"]

    # a flood of unknown kids costs the IdP at most one JWKS fetch per refetch interval
    before = idp.jwks_fetches
    for _ in range(10):
        assert http.get("/stats", headers=bearer(idp.mint(PUBLIC, key=idp.new_key("EC")))).status_code == 401
    assert idp.jwks_fetches - before <= 2

    idp.publish(new_key)  # the IdP rotates: the new key appears in its JWKS
    time.sleep(0.6)  # past the refetch interval (--jwks-min-refetch 0.5)
    fetches = idp.jwks_fetches
    assert http.get("/stats", headers=bearer(token)).status_code == 200
    assert idp.jwks_fetches == fetches + 1
    assert http.get("/stats", headers=bearer(idp.mint(PUBLIC, key=new_key))).status_code == 200
    assert idp.jwks_fetches == fetches + 1  # known kid: no fetch


# -------------------------------------------------------------------------------------- MCP


def _mcp(url: str, calls, token: str | None):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def go():
        headers = bearer(token) if token else {}
        async with httpx2.AsyncClient(headers=headers, timeout=30) as hc:
            async with Client(streamable_http_client(url + "/mcp", http_client=hc)) as client:
                return await calls(client)

    return asyncio.run(go())


def test_mcp_with_write_token_records_identity(server: ServeProcess, idp: TestIdP) -> None:
    async def calls(client):
        tools = {t.name for t in (await client.list_tools()).tools}
        added = await client.call_tool("add_triple", {"s": "dave", "p": "works_at", "o": "initech"})
        found = await client.call_tool("match", {"s": "dave"})
        return tools, added, found

    tools, added, found = _mcp(server.url, calls, idp.mint(PUBLIC + "/mcp", sub="mcp-agent"))
    assert "add_triple" in tools
    assert not added.is_error, added
    assert added.structured_content["fact"]["by"] == "mcp-agent"
    assert "initech" in str(found.structured_content)
    db = TrikeDB(server.graph_path)  # type: ignore[attr-defined]
    assert db.match(s="dave")[0]["by"] == "mcp-agent"


def test_mcp_with_read_token_cannot_write(server: ServeProcess, http: httpx.Client, idp: TestIdP) -> None:
    reader = idp.mint(PUBLIC + "/mcp", scope="trike:read", sub="reader")

    async def calls(client):
        tools = {t.name for t in (await client.list_tools()).tools}
        stats = await client.call_tool("stats", {})
        return tools, stats

    tools, stats = _mcp(server.url, calls, reader)
    assert "sparql" in tools and "add_triple" not in tools and "remove_triples" not in tools
    assert stats.structured_content["facts"] >= 1

    # a write tool call is refused with 403 insufficient_scope (the client may step up)
    r = http.post("/mcp", headers={**bearer(reader), "accept": "application/json, text/event-stream"},
                  json={"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                        "params": {"name": "add_triple", "arguments": {"s": "x", "p": "knows", "o": "y"}}})
    assert r.status_code == 403
    assert challenge(r)["error"] == "insufficient_scope" and "trike:write" in challenge(r)["scope"]
    assert TrikeDB(server.graph_path).match(s="x") == []  # type: ignore[attr-defined]


def test_mcp_without_token_is_refused(server: ServeProcess) -> None:
    async def calls(client):
        return await client.list_tools()

    with pytest.raises(BaseException) as info:  # noqa: B017 - the SDK wraps the 401 in exception groups
        _mcp(server.url, calls, None)
    assert "401" in repr(info.value) or "error" in repr(info.value).lower()


# --------------------------------------------------------------------------- configuration


def test_audience_required_scope_identity_claim_and_no_audit(idp: TestIdP, tmp_path: Path) -> None:
    graph = tmp_path / "g.yaml"
    TrikeDB(graph, ontology=ONTOLOGY).add("alice", "knows", "bob")
    args = ["--oauth-issuer", idp.issuer, "--public-url", PUBLIC, "--audience", "api://trike",
            "--required-scope", "kg:access", "--read-scope", "kg.read", "--write-scope", "kg.write",
            "--identity-claim", "email", "--no-audit"]
    with ServeProcess(graph, *args) as srv, httpx.Client(base_url=srv.url) as c:
        good = idp.mint("api://trike", scope="kg:access kg.write", email="w@example.com")
        r = c.post("/triples", headers=bearer(good), json={"s": "a", "p": "knows", "o": "b"})
        assert r.status_code == 200 and "by" not in r.json()["added"][0]
        assert c.get("/stats", headers=bearer(idp.mint(PUBLIC, scope="kg:access kg.write",
                                                        email="w@x"))).status_code == 401
        lacking = idp.mint("api://trike", scope="kg.write", email="w@example.com")
        r = c.get("/stats", headers=bearer(lacking))
        assert r.status_code == 403 and challenge(r)["scope"] == "kg:access kg.read"
        no_email = idp.mint("api://trike", scope="kg:access kg.read")
        assert c.get("/stats", headers=bearer(no_email)).status_code == 401
        doc = c.get("/.well-known/oauth-protected-resource").json()
        assert doc["scopes_supported"] == ["kg:access", "kg.read", "kg.write"]


def test_idp_with_path_and_outage(tmp_path: Path) -> None:
    """An issuer with a path (RFC 8414 path-inserted discovery) and an IdP that is down at first."""
    graph = tmp_path / "g.yaml"
    TrikeDB(graph, ontology=ONTOLOGY).add("alice", "knows", "bob")
    with TestIdP(path="/realms/team") as realm:
        with ServeProcess(graph, "--oauth-issuer", realm.issuer, "--public-url", PUBLIC) as srv, \
                httpx.Client(base_url=srv.url) as c:
            assert c.get("/stats", headers=bearer(realm.mint(PUBLIC))).status_code == 200
            assert realm.discovery_fetches >= 1
    down = TestIdP().start()
    issuer, token = down.issuer, down.mint(PUBLIC)
    down.stop()
    with ServeProcess(graph, "--oauth-issuer", issuer, "--public-url", PUBLIC) as srv, \
            httpx.Client(base_url=srv.url) as c:
        assert "warning" in srv.log  # started anyway; discovery is retried on demand
        assert c.get("/stats", headers=bearer("x.y.z")).status_code == 401  # malformed: refused at once
        r = c.get("/stats", headers=bearer(token))
        assert r.status_code == 503 and r.headers["retry-after"]  # cannot verify: not "invalid token"
