"""JSON error responses shared by the HTTP layer (every error is `{"error": code, "message": text}`)."""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import Response

ERROR_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    421: "misdirected_request",
    500: "internal_error",
    503: "unavailable",
}


class JSONResponse(Response):
    """A JSON response that keeps non-ASCII text readable and serializes dates as ISO strings."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        try:  # fast path: plain data, dates as ISO strings
            return json.dumps(content, ensure_ascii=False, default=_iso, allow_nan=False,
                              separators=(",", ":")).encode()
        except (TypeError, ValueError):  # NaN/inf, odd keys or values: the same conversion as the MCP tools
            from trike.mcp_server import _jsonable

            return json.dumps(_jsonable(content), ensure_ascii=False, separators=(",", ":")).encode()


def _iso(value: Any) -> Any:
    iso = getattr(value, "isoformat", None)
    if callable(iso):
        return iso()
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    raise TypeError(f"not JSON: {type(value).__name__}")


def error_response(
    status: int,
    message: str,
    *,
    code: str | None = None,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> JSONResponse:
    """The one shape of every error the server sends."""
    body: dict[str, Any] = {"error": code or ERROR_CODES.get(status, "error"), "message": message}
    body.update(extra)
    return JSONResponse(body, status_code=status, headers=headers)
