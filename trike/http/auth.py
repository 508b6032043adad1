"""Authentication for `trike serve`: an OAuth 2.1 resource server, a fixed-token mode, and request guards.

Pieces (all usable on their own):

* `JWTVerifier`: verifies access tokens issued by an external IdP. It discovers the IdP's metadata
  (RFC 8414 / OpenID Connect discovery), keeps its JWKS in a cache (fetched with PyJWT's `PyJWKClient`),
  refetches the set on an unknown `kid` at most once per `min_refetch_interval` seconds (key rotation
  without letting random `kid`s hammer the IdP), accepts only asymmetric algorithms from an allow-list,
  and checks `iss`, `aud` (this server's resource URL, RFC 8707), `exp`, `nbf` and the scopes. All network
  and crypto work runs in a worker thread, never on the event loop.
* `FixedTokenVerifier`: one shared bearer token (`--token`), compared in constant time.
* `AuthPolicy`: what a request needs (read / write scope), RFC 9728 protected-resource metadata and the
  401/403 responses with a proper `WWW-Authenticate` header (`resource_metadata`, `scope`, `error`).
* ASGI middlewares: `AuthMiddleware` (authenticates, authorizes, publishes the caller as a context
  variable), `OriginGuard` (Origin and Host validation against DNS rebinding) and `BodyLimit` (413).
"""

from __future__ import annotations

import contextvars
import hashlib
import hmac
import ipaddress
import json
import logging
import threading
import time
import urllib.error
import urllib.request
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from trike.http.responses import error_response

log = logging.getLogger("trike.http.auth")

READ = "read"
WRITE = "write"

DEFAULT_READ_SCOPE = "trike:read"
DEFAULT_WRITE_SCOPE = "trike:write"

#: Signature algorithms accepted by default: asymmetric only. `none` and the HMAC family are never
#: accepted (an HMAC "signed" with the IdP's public key is the classic algorithm-confusion attack).
DEFAULT_ALGORITHMS: tuple[str, ...] = (
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA",
)
_KEY_TYPE_OF_ALG: dict[str, tuple[str, str | None]] = {
    "RS256": ("RSA", None), "RS384": ("RSA", None), "RS512": ("RSA", None),
    "PS256": ("RSA", None), "PS384": ("RSA", None), "PS512": ("RSA", None),
    "ES256": ("EC", "P-256"), "ES384": ("EC", "P-384"), "ES512": ("EC", "P-521"),
    "EdDSA": ("OKP", None),
}
MIN_RSA_BITS = 2048
MAX_TOKEN_BYTES = 16 * 1024

WELL_KNOWN_PRM = "/.well-known/oauth-protected-resource"


# --------------------------------------------------------------------------------------------------
# errors and principals
# --------------------------------------------------------------------------------------------------


class AuthError(Exception):
    """A request could not be authenticated (401), is not allowed (403), or the IdP is unreachable (503)."""

    def __init__(self, description: str, *, status: int = 401, error: str | None = "invalid_token"):
        super().__init__(description)
        self.description = description
        self.status = status
        self.error = error


@dataclass(frozen=True)
class Principal:
    """Who is calling and what they may do."""

    subject: str | None
    scopes: frozenset[str] = frozenset()
    can_read: bool = True
    can_write: bool = True
    client_id: str | None = None
    issuer: str | None = None
    expires_at: int | None = None
    claims: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    authenticated: bool = True

    def allows(self, need: str) -> bool:
        return self.can_write if need == WRITE else (self.can_read or self.can_write)


ANONYMOUS = Principal(subject=None, authenticated=False)

#: The caller of the request being served (set by `AuthMiddleware`; the MCP SDK carries it into tools).
CURRENT_PRINCIPAL: contextvars.ContextVar[Principal | None] = contextvars.ContextVar(
    "trike_principal", default=None
)


def current_principal() -> Principal | None:
    return CURRENT_PRINCIPAL.get()


def current_identity() -> str | None:
    """The identity of the caller of the current request (the `actor` given to the MCP server)."""
    principal = CURRENT_PRINCIPAL.get()
    return principal.subject if principal is not None else None


# --------------------------------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------------------------------


def is_loopback_host(host: str) -> bool:
    """True for localhost, 127.0.0.0/8 and ::1 (with or without brackets)."""
    host = host.strip().strip("[]").lower()
    if host in ("localhost", "localhost.") or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _require_secure_url(url: str, what: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{what} must be an http(s) URL, got {url!r}")
    if parts.scheme != "https" and not is_loopback_host(parts.hostname):
        raise ValueError(f"{what} must use https (plain http is allowed only on loopback), got {url!r}")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        return None


def _fetch_json(url: str, timeout: float) -> dict[str, Any]:
    opener = urllib.request.build_opener(_NoRedirect())
    request = urllib.request.Request(url, headers={"Accept": "application/json", "User-Agent": "trike"})
    with opener.open(request, timeout=timeout) as response:
        data = json.loads(response.read(1024 * 1024).decode("utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{url} did not return a JSON object")
    return data


def discovery_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may live, in the order the MCP authorization spec tries them."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")

    def at(p: str) -> str:
        return urlunsplit((parts.scheme, parts.netloc, p, "", ""))

    if path:
        return [
            at("/.well-known/oauth-authorization-server" + path),
            at("/.well-known/openid-configuration" + path),
            at(path + "/.well-known/openid-configuration"),
        ]
    return [at("/.well-known/oauth-authorization-server"), at("/.well-known/openid-configuration")]


def discover_metadata(issuer: str, timeout: float = 10.0) -> dict[str, Any]:
    """Fetch the issuer's authorization-server metadata; its `issuer` must be the one we were given."""
    errors = []
    for url in discovery_urls(issuer):
        try:
            meta = _fetch_json(url, timeout)
        except (OSError, ValueError, urllib.error.URLError) as exc:
            errors.append(f"{url}: {exc}")
            continue
        reported = str(meta.get("issuer", ""))
        if reported.rstrip("/") != issuer.rstrip("/"):
            errors.append(f"{url}: metadata names issuer {reported!r}, not {issuer!r}")
            continue
        if not meta.get("jwks_uri"):
            errors.append(f"{url}: metadata has no jwks_uri")
            continue
        return meta
    raise AuthError(
        "cannot discover the identity provider's metadata: " + "; ".join(errors), status=503, error=None
    )


def _scopes_of(claims: dict[str, Any]) -> frozenset[str]:
    found: set[str] = set()
    for name in ("scope", "scp"):
        value = claims.get(name)
        if isinstance(value, str):
            found.update(value.split())
        elif isinstance(value, list | tuple):
            found.update(str(v) for v in value)
    return frozenset(found)


# --------------------------------------------------------------------------------------------------
# verifiers
# --------------------------------------------------------------------------------------------------


class FixedTokenVerifier:
    """One shared secret (`--token`): whoever presents it may read and write."""

    def __init__(self, token: str, identity: str | None = None):
        if not token:
            raise ValueError("the token must not be empty")
        self._digest = hashlib.sha256(token.encode()).digest()
        self.identity = identity

    async def verify(self, token: str) -> Principal:
        given = hashlib.sha256(token.encode()).digest()
        if not hmac.compare_digest(given, self._digest):
            raise AuthError("the bearer token is not valid")
        return Principal(subject=self.identity, authenticated=True)


class JWKSCache:
    """The IdP's signing keys: fetched with `PyJWKClient`, cached for `ttl` seconds, refetched on an
    unknown `kid` no more than once per `min_refetch_interval` seconds."""

    def __init__(self, jwks_uri: str, *, ttl: float = 300.0, min_refetch_interval: float = 10.0,
                 timeout: float = 10.0):
        from jwt import PyJWKClient

        _require_secure_url(jwks_uri, "the JWKS URL")
        self.jwks_uri = jwks_uri
        self.ttl = ttl
        self.min_refetch_interval = min_refetch_interval
        # the client is used for its hardened fetch (http(s) only, no redirects, timeout); we cache ourselves
        self._client = PyJWKClient(jwks_uri, cache_jwk_set=False, timeout=timeout, cooldown_duration=0)
        self._keys: list[dict[str, Any]] = []
        self._fetched_at: float | None = None  # last successful fetch
        self._attempted_at: float | None = None  # last fetch attempt (successful or not)
        self._lock = threading.Lock()
        self._built: dict[tuple[str, str], Any] = {}
        self.fetches = 0

    def _fetch(self) -> None:
        self._attempted_at = time.monotonic()
        self.fetches += 1
        data = self._client.fetch_data()
        keys = data.get("keys")
        if not isinstance(keys, list):
            raise ValueError("the JWKS has no 'keys' list")
        self._keys = [k for k in keys if isinstance(k, dict)]
        self._built = {}
        self._fetched_at = time.monotonic()

    def _refresh(self, *, forced: bool) -> None:
        """Fetch again if the cache is stale (or, when forced, if the rate limit allows)."""
        with self._lock:
            now = time.monotonic()
            stale = self._fetched_at is None or now - self._fetched_at >= self.ttl
            if not (stale or forced):
                return
            if self._attempted_at is not None and now - self._attempted_at < self.min_refetch_interval:
                if self._fetched_at is None:
                    raise AuthError("the identity provider's keys are unavailable (retrying shortly)",
                                    status=503, error=None)
                return  # rate limit: a burst of unknown kids costs the IdP at most one fetch per interval
            try:
                self._fetch()
            except Exception as exc:  # keep serving the keys we have (an IdP hiccup is not an outage)
                log.warning("fetching the JWKS from %s failed: %s", self.jwks_uri, exc)
                if self._fetched_at is None:
                    raise AuthError(f"cannot fetch the identity provider's keys: {exc}", status=503,
                                    error=None) from exc

    def prefetch(self) -> None:
        self._refresh(forced=False)

    def _candidates(self, kid: str | None, kty: str, crv: str | None) -> list[dict[str, Any]]:
        out = []
        for jwk in self._keys:
            if jwk.get("use") not in (None, "sig"):
                continue
            ops = jwk.get("key_ops")
            if isinstance(ops, list) and "verify" not in ops:
                continue
            if jwk.get("kty") != kty or (crv is not None and jwk.get("crv") != crv):
                continue
            if kid is not None and jwk.get("kid") != kid:
                continue
            out.append(jwk)
        return out

    def key_for(self, kid: str | None, alg: str) -> Any:
        """The `PyJWK` that verifies a token with header `kid` and `alg` (raises AuthError)."""
        from jwt import PyJWK

        kty, crv = _KEY_TYPE_OF_ALG[alg]
        self._refresh(forced=False)
        found = self._candidates(kid, kty, crv)
        if not found and kid is not None:
            self._refresh(forced=True)  # key rotation: the IdP may have published a new key
            found = self._candidates(kid, kty, crv)
        if not found:
            raise AuthError(f"no signing key of the identity provider matches kid {kid!r} and alg {alg}")
        if len(found) > 1 and kid is None:
            raise AuthError("the token names no key id and the identity provider has several keys")
        jwk = found[0]
        if jwk.get("alg") not in (None, alg):
            raise AuthError(f"the key {kid!r} is for {jwk.get('alg')}, not {alg}")
        cache_key = (str(jwk.get("kid")), alg)
        built = self._built.get(cache_key)
        if built is None:
            try:
                built = PyJWK(jwk, algorithm=alg)
            except Exception as exc:
                raise AuthError(f"the identity provider's key {kid!r} is unusable: {exc}") from exc
            if kty == "RSA" and getattr(built.key, "key_size", MIN_RSA_BITS) < MIN_RSA_BITS:
                raise AuthError(f"the key {kid!r} is shorter than {MIN_RSA_BITS} bits")
            self._built[cache_key] = built
        return built


class JWTVerifier:
    """Verifies JWT access tokens issued by an external OAuth 2.1 / OpenID Connect provider."""

    def __init__(
        self,
        issuer: str,
        audiences: Iterable[str],
        *,
        jwks_uri: str | None = None,
        algorithms: Iterable[str] = DEFAULT_ALGORITHMS,
        leeway: float = 30.0,
        identity_claim: str = "sub",
        jwks_ttl: float = 300.0,
        min_refetch_interval: float = 10.0,
        timeout: float = 10.0,
        cache_size: int = 4096,
    ):
        _require_secure_url(issuer, "the OAuth issuer")
        self.issuer = issuer
        self.audiences = [a for a in audiences if a]
        if not self.audiences:
            raise ValueError("at least one audience is required")
        algs = list(algorithms)
        bad = [a for a in algs if a not in _KEY_TYPE_OF_ALG]
        if bad:
            raise ValueError(
                f"unsupported or unsafe signature algorithm(s) {bad}; allowed: {', '.join(DEFAULT_ALGORITHMS)}"
            )
        self.algorithms = algs
        self.leeway = leeway
        self.identity_claim = identity_claim
        self.timeout = timeout
        self._jwks_ttl = jwks_ttl
        self._min_refetch = min_refetch_interval
        self._jwks_uri = jwks_uri
        self._keys: JWKSCache | None = None
        self._setup_lock = threading.Lock()
        self._last_discovery: float | None = None
        self.metadata: dict[str, Any] = {}
        self._cache: OrderedDict[bytes, tuple[Principal, float]] = OrderedDict()
        self._cache_size = cache_size
        self._cache_lock = threading.Lock()
        if jwks_uri:
            self._keys = JWKSCache(jwks_uri, ttl=jwks_ttl, min_refetch_interval=min_refetch_interval,
                                   timeout=timeout)

    # -- setup -------------------------------------------------------------------------------------

    @property
    def keys(self) -> JWKSCache:
        if self._keys is not None:
            return self._keys
        with self._setup_lock:
            if self._keys is None:
                now = time.monotonic()
                if self._last_discovery is not None and now - self._last_discovery < self._min_refetch:
                    raise AuthError("the identity provider's metadata is unavailable (retrying shortly)",
                                    status=503, error=None)
                self._last_discovery = now
                self.metadata = discover_metadata(self.issuer, self.timeout)
                self.issuer = str(self.metadata["issuer"])  # the IdP's exact spelling is what `iss` carries
                self._keys = JWKSCache(str(self.metadata["jwks_uri"]), ttl=self._jwks_ttl,
                                       min_refetch_interval=self._min_refetch, timeout=self.timeout)
        return self._keys

    def prepare(self) -> None:
        """Discover the IdP and fetch its keys now (at startup) instead of on the first request."""
        self.keys.prefetch()

    # -- verification ------------------------------------------------------------------------------

    def verify_sync(self, token: str) -> Principal:
        """Verify `token` (blocking: may fetch keys). Raises AuthError."""
        import jwt

        if len(token) > MAX_TOKEN_BYTES:
            raise AuthError("the token is too long")
        cached = self._cached(token)
        if cached is not None:
            return cached
        digest = hashlib.sha256(token.encode()).digest()
        now = time.time()
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise AuthError(f"the token is not a valid JWT: {exc}") from exc
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self.algorithms:
            raise AuthError(f"the token's signature algorithm {alg!r} is not accepted")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise AuthError("the token's kid is not a string")
        key = self.keys.key_for(kid, alg)
        try:
            claims = jwt.decode(
                token,
                key=key,
                algorithms=[alg],
                audience=self.audiences,
                issuer=self.issuer,
                leeway=self.leeway,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.ExpiredSignatureError as exc:
            raise AuthError("the token has expired") from exc
        except jwt.ImmatureSignatureError as exc:
            raise AuthError("the token is not valid yet") from exc
        except jwt.InvalidAudienceError as exc:
            raise AuthError(f"the token was not issued for this server (audience must be one of "
                            f"{', '.join(self.audiences)})") from exc
        except jwt.InvalidIssuerError as exc:
            raise AuthError("the token was issued by another issuer") from exc
        except jwt.InvalidSignatureError as exc:
            raise AuthError("the token's signature is invalid") from exc
        except jwt.PyJWTError as exc:
            raise AuthError(f"the token is invalid: {exc}") from exc
        identity = claims.get(self.identity_claim)
        if identity is None or isinstance(identity, dict | list):
            raise AuthError(f"the token has no usable {self.identity_claim!r} claim")
        exp = claims.get("exp")
        client_id = claims.get("client_id") or claims.get("azp")
        principal = Principal(
            subject=str(identity),
            scopes=_scopes_of(claims),
            client_id=str(client_id) if client_id is not None else None,
            issuer=self.issuer,
            expires_at=int(exp) if isinstance(exp, int | float) else None,
            claims=claims,
        )
        until = min(float(exp) + self.leeway if isinstance(exp, int | float) else now, now + 60.0)
        with self._cache_lock:
            self._cache[digest] = (principal, until)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return principal

    def _cached(self, token: str) -> Principal | None:
        """The principal of a token verified in the last minute (and not expired since), else None."""
        digest = hashlib.sha256(token.encode()).digest()
        with self._cache_lock:
            hit = self._cache.get(digest)
            if hit is None:
                return None
            principal, until = hit
            if time.time() < until:
                self._cache.move_to_end(digest)
                return principal
            del self._cache[digest]
            return None

    async def verify(self, token: str) -> Principal:
        """Verify `token` in a worker thread (key fetches and signature checks stay off the event loop);
        a token verified recently is answered from the cache without leaving the loop."""
        import anyio.to_thread

        if len(token) <= MAX_TOKEN_BYTES:
            cached = self._cached(token)
            if cached is not None:
                return cached
        return await anyio.to_thread.run_sync(self.verify_sync, token)


# --------------------------------------------------------------------------------------------------
# policy: scopes, metadata, challenges
# --------------------------------------------------------------------------------------------------


def resource_metadata_url(resource: str) -> str:
    """RFC 9728 §3.1: the metadata of resource `https://h/p` lives at `https://h/.well-known/...-resource/p`."""
    parts = urlsplit(resource)
    path = parts.path.rstrip("/")
    return urlunsplit((parts.scheme, parts.netloc, WELL_KNOWN_PRM + path, "", ""))


def _quote(value: str) -> str:
    return value.replace("\\", "").replace('"', "'")


class AuthPolicy:
    """Authentication mode plus the rules for scopes, metadata and challenges.

    mode `none`: everyone may read and write (loopback use). mode `token`: one shared bearer token.
    mode `oauth`: JWT access tokens from an external IdP, with read and write scopes.
    """

    def __init__(
        self,
        *,
        verifier: JWTVerifier | FixedTokenVerifier | None = None,
        public_url: str | None = None,
        read_scope: str = DEFAULT_READ_SCOPE,
        write_scope: str = DEFAULT_WRITE_SCOPE,
        required_scopes: Iterable[str] = (),
        resource_name: str = "trike knowledge graph",
        read_only: bool = False,
    ):
        self.verifier = verifier
        self.public_url = public_url.rstrip("/") if public_url else None
        self.read_scope = read_scope
        self.write_scope = write_scope
        self.required_scopes = [s for s in required_scopes if s]
        self.resource_name = resource_name
        self.read_only = read_only
        if isinstance(verifier, JWTVerifier) and not self.public_url:
            raise ValueError("OAuth mode needs the server's public URL (--public-url)")

    @property
    def mode(self) -> str:
        if self.verifier is None:
            return "none"
        return "oauth" if isinstance(self.verifier, JWTVerifier) else "token"

    # -- resources and metadata --------------------------------------------------------------------

    def resource_for_path(self, path: str) -> str | None:
        """The resource identifier a request path belongs to: the MCP endpoint or the server root."""
        if not self.public_url:
            return None
        return self.public_url + "/mcp" if path == "/mcp" or path.startswith("/mcp/") else self.public_url

    def resources(self) -> list[str]:
        return [self.public_url, self.public_url + "/mcp"] if self.public_url else []

    def scopes_supported(self) -> list[str]:
        scopes = [*self.required_scopes, self.read_scope]
        if not self.read_only:
            scopes.append(self.write_scope)
        return list(dict.fromkeys(scopes))

    def scopes_needed(self, need: str, path: str) -> list[str]:
        """The scopes a client should ask for to make this request (the `scope` of a challenge)."""
        if path == "/mcp" or path.startswith("/mcp/"):
            return self.scopes_supported()
        return list(dict.fromkeys([*self.required_scopes, self.write_scope if need == WRITE else self.read_scope]))

    def protected_resource_metadata(self, metadata_path: str) -> dict[str, Any] | None:
        """RFC 9728 document served at `metadata_path` (None when nothing lives there)."""
        if self.mode != "oauth" or not self.public_url:
            return None
        assert isinstance(self.verifier, JWTVerifier)
        wanted = metadata_path.rstrip("/") or "/"
        for resource, suffix in ((self.public_url, ""), (self.public_url + "/mcp", "/mcp")):
            local = urlsplit(resource_metadata_url(resource)).path
            if wanted in (local, WELL_KNOWN_PRM + suffix):
                return {
                    "resource": resource,
                    "authorization_servers": [self.verifier.issuer],
                    "scopes_supported": self.scopes_supported(),
                    "bearer_methods_supported": ["header"],
                    "resource_signing_alg_values_supported": list(self.verifier.algorithms),
                    "resource_name": self.resource_name,
                    "resource_documentation": self.public_url + "/openapi.json",
                }
        return None

    # -- authentication ----------------------------------------------------------------------------

    async def authenticate(self, authorization: str | None) -> Principal:
        """The caller behind an `Authorization` header value (raises AuthError)."""
        if self.verifier is None:
            return Principal(subject=None, can_write=not self.read_only, authenticated=False)
        if not authorization:
            raise AuthError("authentication required: send 'Authorization: Bearer <token>'", error=None)
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise AuthError("authentication required: send 'Authorization: Bearer <token>'",
                            error="invalid_request", status=401)
        principal = await self.verifier.verify(token)
        if isinstance(self.verifier, FixedTokenVerifier):
            return Principal(subject=principal.subject, can_write=not self.read_only, authenticated=True)
        scopes = principal.scopes
        has_required = all(s in scopes for s in self.required_scopes)
        can_write = has_required and self.write_scope in scopes and not self.read_only
        can_read = has_required and (self.read_scope in scopes or self.write_scope in scopes)
        return Principal(
            subject=principal.subject, scopes=scopes, can_read=can_read, can_write=can_write,
            client_id=principal.client_id, issuer=principal.issuer, expires_at=principal.expires_at,
            claims=principal.claims, authenticated=True,
        )

    # -- challenges --------------------------------------------------------------------------------

    def challenge(self, path: str, need: str, *, error: str | None = None, description: str | None = None,
                  scopes: list[str] | None = None) -> str:
        """The `WWW-Authenticate` header value for a 401 or 403."""
        params = ['realm="trike"']
        if error:
            params.append(f'error="{error}"')
        if description:
            params.append(f'error_description="{_quote(description)}"')
        if self.mode == "oauth":
            resource = self.resource_for_path(path)
            if resource:
                params.append(f'resource_metadata="{resource_metadata_url(resource)}"')
            params.append(f'scope="{" ".join(scopes or self.scopes_needed(need, path))}"')
        return "Bearer " + ", ".join(params)

    def unauthorized(self, path: str, need: str, exc: AuthError) -> Any:
        if exc.status == 503:
            return error_response(503, exc.description, headers={"Retry-After": "10"})
        headers = {"WWW-Authenticate": self.challenge(path, need, error=exc.error, description=exc.description)}
        extra: dict[str, Any] = {}
        if self.mode == "oauth":
            resource = self.resource_for_path(path)
            if resource:
                extra["resource_metadata"] = resource_metadata_url(resource)
        status = exc.status if exc.status in (400, 401) else 401
        return error_response(status, exc.description, code=exc.error or "unauthorized", headers=headers, **extra)

    def forbidden(self, path: str, need: str, message: str | None = None) -> Any:
        scopes = self.scopes_needed(need, path) if need == READ else list(
            dict.fromkeys([*self.required_scopes, self.write_scope]))
        if self.read_only and need == WRITE:
            return error_response(403, "this server is read-only", code="read_only")
        text = message or f"insufficient scope: this request needs {' '.join(scopes)}"
        headers = {"WWW-Authenticate": self.challenge(path, need, error="insufficient_scope",
                                                      description=text, scopes=scopes)}
        return error_response(403, text, code="insufficient_scope", headers=headers, scope=" ".join(scopes))


# --------------------------------------------------------------------------------------------------
# ASGI middlewares
# --------------------------------------------------------------------------------------------------

NeedFn = Callable[[str, str], str | None]
_QUERY_TOKEN_NAMES = {"access_token", "token", "bearer", "id_token"}


class AuthMiddleware:
    """Authenticates every HTTP request that needs it and checks its scope.

    `need_for(method, path)` answers `"read"`, `"write"` or None (public: no authentication). The caller
    is stored in `scope["trike.principal"]`, in `CURRENT_PRINCIPAL` (MCP tools read it through `actor`)
    and, for the MCP SDK's session binding, in `scope["user"]`.
    """

    def __init__(self, app: ASGIApp, policy: AuthPolicy, need_for: NeedFn):
        self.app = app
        self.policy = policy
        self.need_for = need_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope.get("path", "/")
        need = self.need_for(scope.get("method", "GET"), path)
        if need is None:
            await self.app(scope, receive, send)
            return
        policy = self.policy
        if policy.mode != "none" and _query_has_token(scope.get("query_string", b"")):
            exc = AuthError("tokens are accepted only in the Authorization header, never in the URL",
                            error="invalid_request")
            await policy.unauthorized(path, need, exc)(scope, receive, send)
            return
        headers = Headers(scope=scope)
        try:
            principal = await policy.authenticate(headers.get("authorization"))
        except AuthError as exc:
            await policy.unauthorized(path, need, exc)(scope, receive, send)
            return
        if not principal.allows(need):
            await policy.forbidden(path, need)(scope, receive, send)
            return
        scope["trike.principal"] = principal
        if principal.authenticated and policy.mode == "oauth":
            scope["user"] = _sdk_user(principal, headers.get("authorization", ""))
        reset = CURRENT_PRINCIPAL.set(principal)
        try:
            await self.app(scope, receive, send)
        finally:
            CURRENT_PRINCIPAL.reset(reset)


def _query_has_token(query_string: bytes) -> bool:
    if not query_string:
        return False
    try:
        names = {k.lower() for k, _ in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True)}
    except ValueError:
        return False
    return bool(names & _QUERY_TOKEN_NAMES)


def _sdk_user(principal: Principal, authorization: str) -> Any:
    """The MCP SDK's user object: its session manager binds each MCP session to the credential's principal."""
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from mcp.server.auth.provider import AccessToken

    token = authorization.partition(" ")[2].strip()
    access = AccessToken(
        token=token,
        client_id=principal.client_id or principal.subject or "",
        scopes=sorted(principal.scopes),
        expires_at=principal.expires_at,
        subject=principal.subject,
        claims={"iss": principal.issuer} if principal.issuer else None,
    )
    return AuthenticatedUser(access)


def origin_of(url: str) -> str:
    """`scheme://host[:port]` of a URL, lower-cased, without the default port."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    if port is None or (scheme, port) in (("http", 80), ("https", 443)):
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


class OriginGuard:
    """DNS-rebinding protection (MCP streamable HTTP transport spec): a request whose `Origin` is not one of
    ours (or an allowed CORS origin) gets 403; when `allowed_hosts` is given, a request whose `Host` is not
    in it gets 421. Requests without `Origin` (non-browser clients) pass the origin check."""

    def __init__(self, app: ASGIApp, *, allowed_origins: Iterable[str], allowed_hosts: Iterable[str] | None):
        self.app = app
        self.allowed_origins = {origin_of(o) for o in allowed_origins}
        self.allowed_hosts = {h.lower() for h in allowed_hosts} if allowed_hosts is not None else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if self.allowed_hosts is not None:
            host = headers.get("host", "").lower()
            if host not in self.allowed_hosts:
                await error_response(421, f"Host {host!r} is not served here",
                                     code="invalid_host")(scope, receive, send)
                return
        origin = headers.get("origin")
        if origin is not None and origin_of(origin) not in self.allowed_origins:
            await error_response(403, f"Origin {origin!r} is not allowed",
                                 code="invalid_origin")(scope, receive, send)
            return
        await self.app(scope, receive, send)


class BodyLimit:
    """413 for request bodies over `max_bytes` (by Content-Length, and counted while streaming)."""

    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = Headers(scope=scope).get("content-length")
        if length is not None:
            try:
                declared = int(length)
            except ValueError:
                await error_response(400, "bad Content-Length")(scope, receive, send)
                return
            if declared > self.max_bytes:
                await self._too_large(scope, receive, send)
                return
        buffered: deque[Message] = deque()
        total = 0
        while True:
            message = await receive()
            buffered.append(message)
            if message["type"] != "http.request":
                break
            total += len(message.get("body", b""))
            if total > self.max_bytes:
                await self._too_large(scope, receive, send)
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            if buffered:
                return buffered.popleft()
            return await receive()

        await self.app(scope, replay, send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        await error_response(413, f"request body larger than {self.max_bytes} bytes")(scope, receive, send)


async def read_body(receive: Receive) -> tuple[bytes, Callable[[], Awaitable[Message]]]:
    """Read a whole request body and return it with a `receive` that replays it."""
    chunks: list[bytes] = []
    messages: deque[Message] = deque()
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break

    async def replay() -> Message:
        if messages:
            return messages.popleft()
        return await receive()

    return b"".join(chunks), replay
