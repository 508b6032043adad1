"""`trike serve`: the graph over HTTP (REST, SPARQL 1.1 Protocol, MCP over streamable HTTP, OAuth 2.1).

`create_app(db, ...)` in `trike.http.app` builds the ASGI application; `trike.http.auth` holds the
resource-server pieces (JWT verification against an IdP's JWKS, RFC 9728 metadata, Origin checks).
Nothing heavy is imported here.
"""

from __future__ import annotations

from typing import Any

__all__ = ["create_app"]


def create_app(*args: Any, **kwargs: Any) -> Any:
    """See `trike.http.app.create_app`."""
    from trike.http.app import create_app as _create_app

    return _create_app(*args, **kwargs)
