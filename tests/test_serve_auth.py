"""Unit tests of the pieces of `trike serve` auth and content negotiation (in-process, no server)."""

from __future__ import annotations

import asyncio
import time

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from trike.http.app import need_for
from trike.http.auth import (
    AuthError,
    AuthPolicy,
    FixedTokenVerifier,
    JWTVerifier,
    discovery_urls,
    is_loopback_host,
    origin_of,
    resource_metadata_url,
)
from trike.http.sparql_protocol import GRAPH_TYPES, RESULT_TYPES, NotAcceptable, choose, parse_accept

try:
    from idp import SigningKey, TestIdP
except ImportError:  # tests/ imported as a package
    from tests.idp import SigningKey, TestIdP

AUD = "https://kg.example.test"


@pytest.fixture(scope="module")
def idp():
    with TestIdP() as provider:
        yield provider


def test_discovery_urls_follow_rfc8414_and_oidc() -> None:
    assert discovery_urls("https://idp.example") == [
        "https://idp.example/.well-known/oauth-authorization-server",
        "https://idp.example/.well-known/openid-configuration",
    ]
    assert discovery_urls("https://idp.example/realms/acme/") == [
        "https://idp.example/.well-known/oauth-authorization-server/realms/acme",
        "https://idp.example/.well-known/openid-configuration/realms/acme",
        "https://idp.example/realms/acme/.well-known/openid-configuration",
    ]


def test_resource_metadata_url_inserts_the_well_known_path() -> None:
    assert resource_metadata_url("https://kg.example/mcp") == \
        "https://kg.example/.well-known/oauth-protected-resource/mcp"
    assert resource_metadata_url("https://kg.example") == "https://kg.example/.well-known/oauth-protected-resource"
    assert resource_metadata_url("https://ex.example/kg/") == \
        "https://ex.example/.well-known/oauth-protected-resource/kg"


def test_origins_and_loopback() -> None:
    assert origin_of("HTTPS://App.Example:443/path") == "https://app.example"
    assert origin_of("http://localhost:8000") == "http://localhost:8000"
    assert origin_of("http://[::1]:80") == "http://[::1]"
    assert all(is_loopback_host(h) for h in ("127.0.0.1", "127.8.9.1", "::1", "[::1]", "localhost"))
    assert not any(is_loopback_host(h) for h in ("0.0.0.0", "10.0.0.1", "example.com", "::"))


def test_scope_needed_per_route() -> None:
    assert need_for("GET", "/healthz") is None and need_for("GET", "/.well-known/oauth-protected-resource") is None
    assert need_for("GET", "/nodes/x") == "read" and need_for("POST", "/sparql") == "read"
    assert need_for("POST", "/triples") == "write" and need_for("DELETE", "/triples") == "write"
    assert need_for("POST", "/mcp") == "read"  # the MCP endpoint routes by scope itself


def test_content_negotiation() -> None:
    assert parse_accept("text/csv;q=0.5, application/sparql-results+xml") == [
        ("application/sparql-results+xml", 1.0), ("text/csv", 0.5)]
    assert choose(None, RESULT_TYPES, "application/sparql-results+json")[0] == "JSON"
    assert choose("*/*", GRAPH_TYPES, "text/turtle")[0] == "TURTLE"
    assert choose("text/*", RESULT_TYPES, "application/sparql-results+json")[0] in ("CSV", "XML", "TSV")
    assert choose("application/rdf+xml, application/sparql-results+xml", GRAPH_TYPES, "text/turtle")[0] == \
        "RDF_XML"
    with pytest.raises(NotAcceptable):
        choose("image/png", RESULT_TYPES, "application/sparql-results+json")
    with pytest.raises(NotAcceptable):
        choose("application/sparql-results+json;q=0", RESULT_TYPES, "application/sparql-results+json")


def test_configuration_is_validated() -> None:
    with pytest.raises(ValueError, match="unsafe"):
        JWTVerifier("https://idp.example", [AUD], algorithms=["RS256", "HS256"])
    with pytest.raises(ValueError, match="unsafe"):
        JWTVerifier("https://idp.example", [AUD], algorithms=["none"])
    with pytest.raises(ValueError, match="https"):
        JWTVerifier("http://idp.example", [AUD])
    with pytest.raises(ValueError, match="public URL"):
        AuthPolicy(verifier=JWTVerifier("https://idp.example", [AUD]))


def test_challenge_header() -> None:
    policy = AuthPolicy(verifier=JWTVerifier("https://idp.example", [AUD]), public_url=AUD + "/")
    header = policy.challenge("/mcp", "read", error="invalid_token", description='bad "quote"')
    assert header == ('Bearer realm="trike", error="invalid_token", error_description="bad \'quote\'", '
                      'resource_metadata="https://kg.example.test/.well-known/oauth-protected-resource/mcp", '
                      'scope="trike:read trike:write"')
    assert 'scope="trike:write"' in policy.challenge("/triples", "write")
    token_policy = AuthPolicy(verifier=FixedTokenVerifier("t"))
    assert token_policy.challenge("/stats", "read") == 'Bearer realm="trike"'


def test_verifier_key_selection(idp: TestIdP) -> None:
    v = JWTVerifier(idp.issuer, [AUD], min_refetch_interval=0.2)
    assert v.verify_sync(idp.mint(AUD)).subject == "alice"
    assert v.verify_sync(idp.mint(AUD, key=idp.ec)).scopes == {"trike:read", "trike:write"}
    # no kid: accepted when exactly one published key fits the algorithm, refused when several do
    no_kid = jwt.encode(idp.claims(AUD), idp.rsa.private, algorithm="RS256")
    assert v.verify_sync(no_kid).subject == "alice"
    second = idp.new_key("RSA")
    idp.publish(second)
    try:
        v2 = JWTVerifier(idp.issuer, [AUD])
        with pytest.raises(AuthError, match="no key id"):
            v2.verify_sync(jwt.encode(idp.claims(AUD), idp.rsa.private, algorithm="RS256"))
    finally:
        idp.retire(second)
    # a JWK that names another algorithm than the token's header
    with pytest.raises(AuthError, match="not accepted|is for"):
        v.verify_sync(jwt.encode(idp.claims(AUD), idp.rsa.private, algorithm="PS256",
                                 headers={"kid": idp.rsa.kid}))
    # an issuer that is only a prefix of ours is another issuer
    with pytest.raises(AuthError, match="issuer"):
        v.verify_sync(idp.mint(AUD, iss=idp.issuer + "/other"))


@pytest.mark.filterwarnings("ignore:The RSA key is 1024 bits")
def test_short_rsa_keys_are_refused(idp: TestIdP) -> None:
    weak = SigningKey("RSA")
    weak.private = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    idp.publish(weak)
    try:
        v = JWTVerifier(idp.issuer, [AUD])
        with pytest.raises(AuthError, match="2048"):
            v.verify_sync(idp.mint(AUD, key=weak))
    finally:
        idp.retire(weak)


def test_jwks_cache_rate_limit_and_rotation(idp: TestIdP) -> None:
    v = JWTVerifier(idp.issuer, [AUD], min_refetch_interval=0.3)
    v.prepare()
    start = idp.jwks_fetches
    for _ in range(5):
        with pytest.raises(AuthError, match="no signing key"):
            v.verify_sync(idp.mint(AUD, key=idp.new_key("EC")))
    assert idp.jwks_fetches == start  # inside the interval: no fetch at all
    new = idp.rotate("EC")
    time.sleep(0.35)
    assert v.verify_sync(idp.mint(AUD, key=new)).subject == "alice"
    assert idp.jwks_fetches == start + 1


def test_fixed_token_verifier() -> None:
    v = FixedTokenVerifier("abc")
    assert asyncio.run(v.verify("abc")).authenticated
    with pytest.raises(AuthError):
        asyncio.run(v.verify("abd"))
