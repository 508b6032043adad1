"""The starlette application of `trike serve`: REST, the SPARQL 1.1 Protocol, OpenAPI, the UI and MCP.

Every database call runs in starlette's thread pool (TrikeDB serializes writes with its own lock), so the
event loop stays free while a write is saved or a query runs. MCP over streamable HTTP is the server of
`trike.mcp_server.build_server` mounted at `/mcp`: the same tools, the same code path as stdio.
"""

from __future__ import annotations

import contextlib
import json
import logging
import tempfile
import threading
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from trike.errors import ConflictError, LoadError, NotFoundError, OntologyError, QueryError, TrikeError
from trike.http.auth import (
    ANONYMOUS,
    READ,
    WELL_KNOWN_PRM,
    WRITE,
    AuthMiddleware,
    AuthPolicy,
    BodyLimit,
    OriginGuard,
    Principal,
    current_identity,
    read_body,
)
from trike.http.responses import JSONResponse, error_response

log = logging.getLogger("trike.http")

DEFAULT_MAX_BODY = 4 * 1024 * 1024
_PUBLIC = ("/healthz", "/openapi.json")
_WRITE_PATHS = ("/triples",)
_WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")


def need_for(method: str, path: str) -> str | None:
    """What a request needs: None (public), "read" or "write"."""
    if path in _PUBLIC or path.startswith("/.well-known/") or method == "OPTIONS":
        return None
    if path in _WRITE_PATHS and method in _WRITE_METHODS:
        return WRITE
    return READ


class _Bad(Exception):
    """A bad request (400) found while reading parameters."""


def _error_for(exc: BaseException) -> Response:
    from trike.http.sparql_protocol import NotAcceptable

    if isinstance(exc, ConflictError):
        extra: dict[str, Any] = {"allowed": exc.allowed}
        if exc.existing is not None:
            extra["existing"] = _jsonable(exc.existing)
        return error_response(409, str(exc), code="conflict", **extra)
    if isinstance(exc, OntologyError):
        return error_response(409, str(exc), code="ontology", allowed=exc.allowed)
    if isinstance(exc, NotFoundError):
        return error_response(404, str(exc))
    if isinstance(exc, NotAcceptable):
        return error_response(406, str(exc))
    if isinstance(exc, QueryError):
        return error_response(400, str(exc), code="bad_query")
    if isinstance(exc, LoadError):
        log.error("the graph file cannot be read: %s", exc)
        return error_response(500, str(exc), code="load_error")
    if isinstance(exc, TrikeError | _Bad | ValueError | TypeError):
        return error_response(400, str(exc))
    log.exception("request failed", exc_info=exc)
    return error_response(500, "internal error (see the server log)")


def _jsonable(value: Any) -> Any:
    from trike.mcp_server import _jsonable as to_json

    return to_json(value)


def _from_json(value: Any) -> Any:
    """The same JSON-to-value rule as the MCP tools ('2024-09-01' is a date, as in the YAML file)."""
    from trike.mcp_server import _from_json as from_json

    return from_json(value)


def _scalar(text: str) -> Any:
    """The typed value a query-string text stands for (int, float, bool, date), or None if it is just text."""
    from trike.values import parse_cli_value

    if text[:1] in "[{\"'":
        return None
    try:
        value = parse_cli_value(text)
    except Exception:
        return None
    return None if isinstance(value, str) or value is None else value


def _ok(data: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(data, status_code=status)


def _int(request: Request, name: str, default: int | None = None, *, low: int = 1,
         high: int = 1_000_000) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise _Bad(f"{name} must be an integer, got {raw!r}") from None
    if not low <= value <= high:
        raise _Bad(f"{name} must be between {low} and {high}, got {value}")
    return value


def _principal(request: Request) -> Principal:
    return request.scope.get("trike.principal") or ANONYMOUS


async def _json_body(request: Request) -> Any:
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype and ctype != "application/json" and not ctype.endswith("+json"):
        raise HTTPException(415, f"send JSON (Content-Type: application/json), not {ctype}")
    raw = await request.body()
    if not raw.strip():
        raise _Bad("the request body is empty: send JSON")
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise _Bad(f"the request body is not valid JSON: {exc}") from None


class _UiCache:
    """The HTML page of `trike.ui.to_html`, regenerated when the graph's revision changes."""

    def __init__(self, db: Any):
        self.db = db
        self.revision: int | None = None
        self.html: bytes = b""
        self.gzipped: bytes = b""
        self.etag = ""
        self.lock = threading.Lock()

    @staticmethod
    def available() -> bool:
        try:
            from trike import ui
        except ImportError:
            return False
        return callable(getattr(ui, "to_html", None))

    def page(self) -> tuple[bytes, bytes, str]:
        """(html, gzipped html, ETag)."""
        import gzip
        import hashlib

        from trike.ui import to_html

        with self.lock:
            len(self.db)  # sync with the file first (one stat), so the revision is current
            revision = self.db.revision
            if self.revision != revision or not self.html:
                with tempfile.TemporaryDirectory(prefix="trike-ui-") as tmp:
                    out = Path(tmp) / "graph.html"
                    written = to_html(self.db, out)
                    self.html = Path(written or out).read_bytes()
                self.gzipped = gzip.compress(self.html, compresslevel=6, mtime=0)
                self.etag = '"' + hashlib.sha256(self.html).hexdigest()[:32] + '"'
                self.revision = revision
            return self.html, self.gzipped, self.etag


class McpEndpoint:
    """`/mcp`: callers with the write scope reach the full tool set, read-only callers a server built with
    `read_only=True` (a write tool call from them is answered 403 insufficient_scope, so a client can
    step up its authorization)."""

    def __init__(self, policy: AuthPolicy, full: Any, readonly: Any | None):
        from mcp.server.streamable_http_manager import StreamableHTTPASGIApp

        self.policy = policy
        self.full = full
        self.readonly = readonly
        self.full_app = StreamableHTTPASGIApp(full.session_manager) if full is not None else None
        self.ro_app = StreamableHTTPASGIApp(readonly.session_manager) if readonly is not None else None
        self.write_tools: set[str] = set()

    async def compute_write_tools(self) -> None:
        if self.full is None or self.readonly is None:
            return
        full = {t.name for t in await self.full.list_tools()}
        ro = {t.name for t in await self.readonly.list_tools()}
        self.write_tools = full - ro

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        principal: Principal = scope.get("trike.principal") or ANONYMOUS
        if principal.can_write or self.ro_app is None:
            assert self.full_app is not None
            await self.full_app(scope, receive, send)
            return
        if scope.get("method") == "POST" and self.write_tools:
            body, receive = await read_body(receive)
            if self._calls_write_tool(body):
                await self.policy.forbidden("/mcp", WRITE)(scope, receive, send)
                return
        await self.ro_app(scope, receive, send)

    def _calls_write_tool(self, body: bytes) -> bool:
        try:
            message = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            return False
        messages = message if isinstance(message, list) else [message]
        for m in messages:
            if isinstance(m, dict) and m.get("method") == "tools/call":
                params = m.get("params")
                if isinstance(params, dict) and params.get("name") in self.write_tools:
                    return True
        return False


def create_app(
    db: Any,
    *,
    policy: AuthPolicy | None = None,
    allowed_origins: Iterable[str] = (),
    allowed_hosts: Iterable[str] | None = None,
    cors_origins: Iterable[str] = (),
    audit: bool = True,
    max_body_bytes: int = DEFAULT_MAX_BODY,
    allow_dirs: Iterable[str] = (),
    read_only: bool = False,
    mcp: bool = True,
    ui: bool = True,
    public_url: str | None = None,
) -> Starlette:
    """The ASGI app serving `db`. `policy` decides authentication (default: none, loopback use)."""
    policy = policy or AuthPolicy(read_only=read_only)
    read_only = read_only or policy.read_only
    cors = [o for o in cors_origins if o]
    ui_cache = _UiCache(db) if ui and _UiCache.available() else None

    def actor() -> str | None:
        return current_identity() if audit else None

    # ------------------------------------------------------------------ MCP
    mcp_endpoint: McpEndpoint | None = None
    servers: list[Any] = []
    if mcp:
        from mcp.server.transport_security import TransportSecuritySettings

        from trike.mcp_server import build_server

        # Host/Origin are checked for every route by OriginGuard; the SDK's own check would only repeat it.
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)

        def make(ro: bool) -> Any:
            server = build_server(db, read_only=ro, allow_dirs=tuple(allow_dirs), actor=actor)
            server.streamable_http_app(streamable_http_path="/mcp", transport_security=security,
                                       max_request_body_size=max_body_bytes)
            servers.append(server)
            return server

        full = make(read_only)
        ro_server = make(True) if policy.mode == "oauth" and not read_only else None
        mcp_endpoint = McpEndpoint(policy, full, ro_server)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            for server in servers:
                await stack.enter_async_context(server.session_manager.run())
            if mcp_endpoint is not None:
                await mcp_endpoint.compute_write_tools()
            yield

    # ------------------------------------------------------------------ handlers
    def endpoint(fn: Callable[[Request], Any]) -> Callable[[Request], Any]:
        async def handler(request: Request) -> Response:
            try:
                return await fn(request)
            except HTTPException:
                raise
            except Exception as exc:  # mapped to a JSON error with the right status
                return _error_for(exc)

        handler.__name__ = fn.__name__
        return handler

    @endpoint
    async def index(request: Request) -> Response:
        if ui_cache is not None:
            html, gzipped, etag = await run_in_threadpool(ui_cache.page)
            headers = {"Cache-Control": "no-cache", "ETag": etag, "Vary": "Accept-Encoding",
                       "X-Content-Type-Options": "nosniff"}
            if etag in request.headers.get("if-none-match", ""):
                return Response(status_code=304, headers=headers)
            if "gzip" in request.headers.get("accept-encoding", ""):
                return HTMLResponse(gzipped, headers={**headers, "Content-Encoding": "gzip"})
            return HTMLResponse(html, headers=headers)
        return _ok({
            "name": "trike",
            "graph": str(getattr(db, "path", "")),
            "mcp": "/mcp",
            "openapi": "/openapi.json",
            "endpoints": ["/sparql", "/nodes/{name}", "/match", "/search", "/find", "/stats", "/ontology",
                          "/triples", "/export"],
        })

    async def healthz(request: Request) -> Response:
        return _ok({"ok": True})

    async def openapi(request: Request) -> Response:
        from trike.http.openapi import openapi_document

        scopes = {policy.read_scope: "read the graph"}
        if not read_only:
            scopes[policy.write_scope] = "write the graph (implies read)"
        for s in policy.required_scopes:
            scopes.setdefault(s, "required for every request")
        issuer = getattr(policy.verifier, "issuer", None)
        return _ok(openapi_document(server_url=public_url or policy.public_url, auth_mode=policy.mode,
                                    scopes=scopes, issuer=issuer, version=_version()))

    async def protected_resource(request: Request) -> Response:
        doc = policy.protected_resource_metadata(request.url.path)
        if doc is None:
            return error_response(404, "no protected-resource metadata here")
        return JSONResponse(doc, headers={"Cache-Control": "public, max-age=3600"})

    @endpoint
    async def sparql(request: Request) -> Response:
        accept = request.headers.get("accept")
        if request.method in ("GET", "HEAD"):
            text = request.query_params.get("query")
            if text is None:
                raise _Bad("give the query as ?query=...")
            return await _protocol(text, accept)
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype == "application/x-www-form-urlencoded":
            from urllib.parse import parse_qs

            form = {k: v[0] for k, v in parse_qs((await request.body()).decode("utf-8", "replace")).items()}
            text = form.get("query")
            if not isinstance(text, str):
                if "update" in form:
                    raise _Bad("SPARQL UPDATE is not accepted here: /sparql is read-only")
                raise _Bad("the form has no query field")
            return await _protocol(text, accept)
        if ctype == "application/sparql-query":
            body = await request.body()
            return await _protocol(body.decode("utf-8", errors="replace"), accept)
        if ctype == "application/sparql-update":
            raise _Bad("SPARQL UPDATE is not accepted here: /sparql is read-only")
        data = await _json_body(request)
        if not isinstance(data, dict) or not isinstance(data.get("query"), str):
            raise _Bad('send {"query": "SELECT ..."}')
        text = data["query"]
        wants_standard = any(m in (accept or "") for m in ("sparql-results", "text/turtle", "n-triples",
                                                             "rdf+xml", "ld+json", "text/csv",
                                                             "tab-separated"))
        if wants_standard:
            return await _protocol(text, accept)
        from trike.mcp_server import run_readonly_sparql

        result = await run_in_threadpool(run_readonly_sparql, db, text)
        return _ok(result)

    async def _protocol(text: str, accept: str | None) -> Response:
        from trike.http.sparql_protocol import run_protocol_query

        body, media = await run_in_threadpool(run_protocol_query, db, text, accept)
        charset = "" if media == "application/n-triples" else "; charset=utf-8"
        return Response(body, media_type=media + charset, headers={"Vary": "Accept"})

    @endpoint
    async def node(request: Request) -> Response:
        name = request.path_params["name"]
        kw: dict[str, Any] = {}
        if request.query_params.get("as_of"):
            kw["as_of"] = request.query_params["as_of"]
        limit = _int(request, "limit")
        if limit is not None:
            kw["limit"] = limit
        return _ok(await run_in_threadpool(lambda: db.get_node(name, **kw)))

    @endpoint
    async def match(request: Request) -> Response:
        params = dict(request.query_params)
        limit = _int(request, "limit")
        params.pop("limit", None)
        as_of = params.pop("as_of", None) or None
        s = params.pop("s", None) or None
        p = params.pop("p", None) or None
        o = params.pop("o", None) or None
        attrs = {k: _from_json(v) for k, v in params.items()}

        def work() -> list[dict]:
            found = db.match(s, p, o, as_of=as_of, limit=limit, **attrs)
            typed = _scalar(o) if o is not None else None
            if typed is not None and (limit is None or len(found) < limit):
                # `o=42` also finds the integer 42 (and `o=2024-09-01` the date), not only a node named "42"
                more = db.match(s, p, typed, as_of=as_of, limit=limit, **attrs)
                found += [f for f in more if f not in found][: None if limit is None else limit - len(found)]
            return found

        return _ok(await run_in_threadpool(work))

    @endpoint
    async def search(request: Request) -> Response:
        q = request.query_params.get("q") or request.query_params.get("query")
        if not q:
            raise _Bad("give the search text as ?q=...")
        k = _int(request, "k", 10, high=1000)
        as_of = request.query_params.get("as_of") or None
        return _ok(await run_in_threadpool(lambda: db.search(q, k=k, as_of=as_of)))

    @endpoint
    async def find(request: Request) -> Response:
        q = request.query_params.get("q") or request.query_params.get("question")
        if not q:
            raise _Bad("give the question as ?q=...")
        k = _int(request, "k", 10, high=1000)
        as_of = request.query_params.get("as_of") or None
        where_raw = request.query_params.get("where")
        where = None
        if where_raw:
            try:
                where = json.loads(where_raw)
            except ValueError:
                raise _Bad('where must be a JSON object, e.g. where={"type":"table"}') from None
            if not isinstance(where, dict):
                raise _Bad('where must be a JSON object, e.g. where={"type":"table"}')
            where = _from_json(where)
        return _ok(await run_in_threadpool(lambda: db.find(q, where=where, k=k, as_of=as_of)))

    @endpoint
    async def stats(request: Request) -> Response:
        return _ok(await run_in_threadpool(db.stats))

    @endpoint
    async def ontology(request: Request) -> Response:
        return _ok(await run_in_threadpool(db.ontology))

    @endpoint
    async def export(request: Request) -> Response:
        fmt = (request.query_params.get("format") or "ttl").lower()
        media = {"ttl": "text/turtle; charset=utf-8", "turtle": "text/turtle; charset=utf-8",
                 "nt": "application/n-triples", "ntriples": "application/n-triples",
                 "jsonld": "application/ld+json", "json-ld": "application/ld+json",
                 "yaml": "application/yaml; charset=utf-8", "yml": "application/yaml; charset=utf-8"}.get(fmt)
        if media is None:
            raise _Bad(f"unknown export format {fmt!r}: use ttl, nt, jsonld or yaml")
        etag = '"' + (await run_in_threadpool(db.content_hash)).split(":", 1)[-1][:32] + '-' + fmt + '"'
        if etag in [t.strip() for t in request.headers.get("if-none-match", "").split(",")]:
            return Response(status_code=304, headers={"ETag": etag})
        text = await run_in_threadpool(db.export, fmt)
        return Response(text.encode("utf-8"), media_type=media, headers={"ETag": etag})

    def _fact_args(item: Any, who: str | None) -> tuple[str, str, Any, dict[str, Any]]:
        if not isinstance(item, dict):
            raise _Bad('a fact is a JSON object {"s": ..., "p": ..., "o": ..., attributes...}')
        item = dict(item)
        attrs = item.pop("attrs", None) or {}
        if not isinstance(attrs, dict):
            raise _Bad("attrs must be a JSON object")
        missing = [k for k in ("s", "p", "o") if item.get(k) in (None, "")]
        if missing:
            raise _Bad(f"the fact lacks {', '.join(missing)}")
        s, p, o = item.pop("s"), item.pop("p"), item.pop("o")
        if not isinstance(s, str) or not isinstance(p, str):
            raise _Bad("s and p must be strings")
        merged = {**_from_json(item), **_from_json(attrs)}
        if who:
            merged["by"] = who  # the audit trail comes from the token, never from the request body
        return s, p, _from_json(o), merged

    @endpoint
    async def add_triples(request: Request) -> Response:
        data = await _json_body(request)
        single = isinstance(data, dict) and "triples" not in data
        items = [data] if single else (data.get("triples") if isinstance(data, dict) else data)
        if not isinstance(items, list) or not items:
            raise _Bad('send a fact {"s","p","o",...}, a list of facts, or {"triples": [...]}')
        who = _principal(request).subject if audit else None
        args = [_fact_args(item, who) for item in items]

        def work() -> list[dict]:
            if len(args) == 1:
                s, p, o, attrs = args[0]
                return [db.add(s, p, o, **attrs)]
            with db.batch():
                return [db.add(s, p, o, **attrs) for s, p, o, attrs in args]

        added = await run_in_threadpool(work)
        return _ok({"added": added, "count": len(added)})

    @endpoint
    async def delete_triples(request: Request) -> Response:
        spec: dict[str, Any] = {k: request.query_params[k] for k in ("s", "p", "o") if request.query_params.get(k)}
        if not spec and request.headers.get("content-length", "0") not in ("", "0"):
            data = await _json_body(request)
            if not isinstance(data, dict):
                raise _Bad('send {"s": ..., "p": ..., "o": ...} (at least one)')
            spec = {k: data[k] for k in ("s", "p", "o") if data.get(k) not in (None, "")}
        if not spec:
            raise _Bad("give at least one of s, p, o: refusing to remove every fact")
        if "o" in spec:
            spec["o"] = _from_json(spec["o"])
        removed = await run_in_threadpool(lambda: db.remove(spec.get("s"), spec.get("p"), spec.get("o")))
        return _ok({"removed": removed})

    # ------------------------------------------------------------------ routing
    routes: list[Any] = [
        Route("/", index, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route(WELL_KNOWN_PRM, protected_resource, methods=["GET"]),
        Route(WELL_KNOWN_PRM + "/{rest:path}", protected_resource, methods=["GET"]),
        Route("/sparql", sparql, methods=["GET", "POST"]),
        Route("/nodes/{name:path}", node, methods=["GET"]),
        Route("/match", match, methods=["GET"]),
        Route("/search", search, methods=["GET"]),
        Route("/find", find, methods=["GET"]),
        Route("/stats", stats, methods=["GET"]),
        Route("/ontology", ontology, methods=["GET"]),
        Route("/export", export, methods=["GET"]),
        Route("/triples", add_triples, methods=["POST"]),
        Route("/triples", delete_triples, methods=["DELETE"]),
    ]
    if mcp_endpoint is not None:
        routes.append(Route("/mcp", mcp_endpoint))

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return error_response(exc.status_code, str(exc.detail), headers=exc.headers)

    origins = list(allowed_origins) + cors
    middleware = [Middleware(OriginGuard, allowed_origins=origins, allowed_hosts=allowed_hosts)]
    if cors:
        from starlette.middleware.cors import CORSMiddleware

        middleware.append(Middleware(
            CORSMiddleware, allow_origins=cors, allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
            allow_headers=["Authorization", "Content-Type", "Accept", "Mcp-Session-Id", "Mcp-Protocol-Version",
                           "Last-Event-ID"],
            expose_headers=["Mcp-Session-Id", "WWW-Authenticate"], max_age=600,
        ))
    middleware += [
        Middleware(BodyLimit, max_bytes=max_body_bytes),
        Middleware(AuthMiddleware, policy=policy, need_for=need_for),
    ]
    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan,
                    exception_handlers={HTTPException: http_error})
    app.state.db = db
    app.state.policy = policy
    app.state.mcp = mcp_endpoint
    return app


def _version() -> str:
    try:
        from trike import __version__

        return __version__
    except ImportError:  # pragma: no cover
        return "0"
