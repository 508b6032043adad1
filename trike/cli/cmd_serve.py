"""`trike serve FILE`: the graph over HTTP (UI, REST, SPARQL protocol, MCP at /mcp), with auth.

See docs/serve.md. Without auth flags the server binds to loopback only; `--token` sets one shared bearer
token; `--oauth-issuer` + `--public-url` make it an OAuth 2.1 resource server for tokens from your IdP.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path
from typing import Any


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "serve",
        help="serve the graph over HTTP: UI, REST, SPARQL protocol and MCP (streamable HTTP) at /mcp",
        description=(
            "Serve the graph FILE on one port: the HTML UI at /, a REST API (see /openapi.json), the SPARQL "
            "1.1 Protocol at /sparql and MCP over streamable HTTP at /mcp. Without --token or "
            "--oauth-issuer it listens on loopback only. See docs/serve.md."
        ),
    )
    p.add_argument("file", metavar="FILE", help="the graph's YAML file (created on the first write)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 picks a free one)")
    auth = p.add_argument_group("authentication")
    auth.add_argument("--token", default=None,
                      help="one shared bearer token (default: $TRIKE_TOKEN); for quick, local use")
    auth.add_argument("--oauth-issuer", metavar="URL",
                      help="issuer URL of your identity provider: trike becomes an OAuth 2.1 resource server")
    auth.add_argument("--public-url", metavar="URL",
                      help="the URL clients use to reach this server (the OAuth resource; e.g. https://kg.example.com)")
    auth.add_argument("--audience", action="append", default=[], metavar="A",
                      help="accepted token audience (repeatable; default: the public URL and PUBLIC_URL/mcp)")
    auth.add_argument("--required-scope", action="append", default=[], metavar="S",
                      help="a scope every request needs (repeatable)")
    auth.add_argument("--read-scope", default="trike:read", metavar="S", help="scope to read (default trike:read)")
    auth.add_argument("--write-scope", default="trike:write", metavar="S",
                      help="scope to write, implies read (default trike:write)")
    auth.add_argument("--jwks-url", metavar="URL", help="the IdP's JWKS URL (default: from its discovery metadata)")
    auth.add_argument("--identity-claim", default="sub", metavar="CLAIM",
                      help="token claim recorded as `by` on written facts (default sub; e.g. email)")
    auth.add_argument("--algorithm", action="append", default=[], metavar="ALG",
                      help="accepted signature algorithm (repeatable; default RS*, PS*, ES*, EdDSA)")
    auth.add_argument("--jwks-min-refetch", type=float, default=10.0, metavar="SECONDS",
                      help="least time between two JWKS fetches caused by unknown key ids (default 10)")
    auth.add_argument("--no-audit", action="store_true",
                      help="do not record the caller's identity as `by` on facts written through the server")
    auth.add_argument("--insecure-no-auth", action="store_true",
                      help="allow a non-loopback --host without any authentication (anyone can write!)")
    p.add_argument("--read-only", action="store_true", help="refuse every write (REST and MCP)")
    p.add_argument("--cors-origin", action="append", default=[], metavar="ORIGIN",
                   help="a browser origin allowed to call the API cross-origin (repeatable)")
    p.add_argument("--allowed-host", action="append", default=[], metavar="HOST[:PORT]",
                   help="an extra Host header value to accept (repeatable)")
    p.add_argument("--allow-dir", action="append", default=[], metavar="DIR",
                   help="a folder the MCP import_source tool may read besides the graph's own (repeatable)")
    p.add_argument("--max-body", type=int, default=4 * 1024 * 1024, metavar="BYTES",
                   help="largest request body accepted (default 4 MiB; larger: 413)")
    p.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    p.set_defaults(func=run)


def _err(message: str) -> int:
    print(f"trike serve: {message}", file=sys.stderr)
    return 2


def _bind(host: str, port: int) -> socket.socket:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, stype, proto, _, addr = infos[0]
    sock = socket.socket(family, stype, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6:
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0 if host in ("::", "") else 1)
    sock.bind(addr)
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def guard_lists(host: str, port: int, public_url: str | None,
                extra_hosts: list[str]) -> tuple[list[str], list[str] | None]:
    """(allowed Origins, allowed Host headers or None for any) for a server bound to host:port."""
    from trike.http.auth import is_loopback_host, origin_of

    origins: list[str] = []
    hosts: list[str] = []
    names: list[str] = []
    if is_loopback_host(host) or host in ("0.0.0.0", "::", ""):
        names += ["127.0.0.1", "localhost", "[::1]"]
    if host not in ("0.0.0.0", "::", "") and not is_loopback_host(host):
        names.append(_url_host(host))
    for name in names:
        origins.append(f"http://{name}:{port}")
        hosts.append(f"{name}:{port}")
        if port == 80:
            hosts.append(name)
    if public_url:
        origin = origin_of(public_url)
        origins.append(origin)
        hosts.append(origin.split("://", 1)[1])
        from urllib.parse import urlsplit

        parts = urlsplit(public_url)
        if parts.port is None and parts.hostname:
            default = 443 if parts.scheme == "https" else 80
            hosts.append(f"{_url_host(parts.hostname)}:{default}")
    hosts += [h.lower() for h in extra_hosts]
    open_bind = not is_loopback_host(host)
    if open_bind and not public_url and not extra_hosts:
        return origins, None  # reachable under names we cannot know: Host is not checked (Origin still is)
    return origins, hosts


def build(args: argparse.Namespace, port: int) -> tuple[Any, dict[str, Any]]:
    """The app for parsed args and the actual port; also returns a summary for the startup line."""
    from trike import TrikeDB
    from trike.http.app import create_app
    from trike.http.auth import DEFAULT_ALGORITHMS, AuthPolicy, FixedTokenVerifier, JWTVerifier

    path = Path(args.file).expanduser()
    db = TrikeDB(path)
    public_url = args.public_url.rstrip("/") if args.public_url else None
    verifier: Any = None
    mode = "none"
    if args.oauth_issuer:
        audiences = args.audience or [public_url, public_url + "/", public_url + "/mcp"]
        verifier = JWTVerifier(
            args.oauth_issuer, audiences, jwks_uri=args.jwks_url,
            algorithms=args.algorithm or DEFAULT_ALGORITHMS,
            identity_claim=args.identity_claim, min_refetch_interval=args.jwks_min_refetch,
        )
        mode = "oauth"
    elif args.token:
        verifier = FixedTokenVerifier(args.token)
        mode = "token"
    policy = AuthPolicy(
        verifier=verifier, public_url=public_url, read_scope=args.read_scope, write_scope=args.write_scope,
        required_scopes=args.required_scope, resource_name=f"trike: {path.name}", read_only=args.read_only,
    )
    origins, hosts = guard_lists(args.host, port, public_url, args.allowed_host)
    app = create_app(
        db, policy=policy, allowed_origins=origins, allowed_hosts=hosts, cors_origins=args.cors_origin,
        audit=not args.no_audit, max_body_bytes=args.max_body, allow_dirs=args.allow_dir,
        read_only=args.read_only, public_url=public_url or f"http://{_url_host(args.host)}:{port}",
    )
    return app, {"mode": mode, "verifier": verifier, "db": db}


def run(args: argparse.Namespace) -> int:
    from trike.http.auth import AuthError, is_loopback_host

    if args.token is None and not args.oauth_issuer:
        args.token = os.environ.get("TRIKE_TOKEN") or None
    if args.token and args.oauth_issuer:
        return _err("--token and --oauth-issuer exclude each other")
    if args.oauth_issuer and not args.public_url:
        return _err("--oauth-issuer needs --public-url (the URL clients use; it is the tokens' audience)")
    if (args.audience or args.required_scope or args.jwks_url) and not args.oauth_issuer:
        return _err("--audience, --required-scope and --jwks-url need --oauth-issuer")
    if not args.token and not args.oauth_issuer and not is_loopback_host(args.host) and not args.insecure_no_auth:
        return _err(
            f"refusing to listen on {args.host} without authentication: use --token, --oauth-issuer, "
            "or (if you really mean it) --insecure-no-auth"
        )
    if args.read_scope == args.write_scope:
        return _err("--read-scope and --write-scope must differ")
    if args.max_body < 1024:
        return _err("--max-body must be at least 1024 bytes")
    path = Path(args.file).expanduser()
    if path.is_dir():
        return _err(f"{path} is a folder; give the graph's YAML file")
    if not path.parent.is_dir():
        return _err(f"folder {path.parent} does not exist")
    for d in args.allow_dir:
        if not Path(d).expanduser().is_dir():
            return _err(f"--allow-dir {d}: not a folder")

    try:
        sock = _bind(args.host, args.port)
    except OSError as exc:
        return _err(f"cannot listen on {args.host}:{args.port}: {exc}")
    port = sock.getsockname()[1]
    try:
        app, info = build(args, port)
    except ValueError as exc:
        sock.close()
        return _err(str(exc))
    if info["mode"] == "oauth":
        try:
            info["verifier"].prepare()
        except AuthError as exc:
            print(f"trike serve: warning: {exc.description} (will retry on the first request)", file=sys.stderr)

    import uvicorn

    config = uvicorn.Config(
        app, log_level=args.log_level, access_log=args.log_level in ("debug", "info"), lifespan="on",
        proxy_headers=False, server_header=False, ws="none", timeout_graceful_shutdown=5,
    )
    server = uvicorn.Server(config)
    url = f"http://{_url_host(args.host)}:{port}"
    print(f"trike serve: {path} listening on {url} (MCP at {url}/mcp, auth: {info['mode']}"
          f"{', read-only' if args.read_only else ''})", file=sys.stderr, flush=True)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        return 130
    finally:
        sock.close()
    return 0
