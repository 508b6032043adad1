"""The SPARQL 1.1 Protocol form of `/sparql`: standard result formats chosen by content negotiation.

`GET /sparql?query=...`, `POST` with `application/x-www-form-urlencoded` `query=...`, or `POST` with an
`application/sparql-query` body. SELECT and ASK answer in SPARQL JSON (default), XML, CSV or TSV;
CONSTRUCT and DESCRIBE in Turtle (default), N-Triples, RDF/XML or JSON-LD. Only read queries are run
(`trike.mcp_server.check_readonly_query`), under the same time limit as the MCP `sparql` tool.
"""

from __future__ import annotations

from typing import Any

from trike.errors import QueryError

RESULT_TYPES = {
    "application/sparql-results+json": "JSON",
    "application/json": "JSON",
    "application/sparql-results+xml": "XML",
    "application/xml": "XML",
    "text/xml": "XML",
    "text/csv": "CSV",
    "text/tab-separated-values": "TSV",
}
GRAPH_TYPES = {
    "text/turtle": "TURTLE",
    "application/x-turtle": "TURTLE",
    "application/n-triples": "N_TRIPLES",
    "text/plain": "N_TRIPLES",
    "application/rdf+xml": "RDF_XML",
    "application/ld+json": "JSON_LD",
}
_DEFAULT_RESULT = "application/sparql-results+json"
_DEFAULT_GRAPH = "text/turtle"
_MEDIA = {
    "JSON": "application/sparql-results+json",
    "XML": "application/sparql-results+xml",
    "CSV": "text/csv",
    "TSV": "text/tab-separated-values",
    "TURTLE": "text/turtle",
    "N_TRIPLES": "application/n-triples",
    "RDF_XML": "application/rdf+xml",
    "JSON_LD": "application/ld+json",
}


class NotAcceptable(Exception):
    """No result format of the query's kind is acceptable to the client (406)."""


def parse_accept(header: str | None) -> list[tuple[str, float]]:
    """`Accept` as (media type, q) pairs, best first (stable for equal q)."""
    if not header:
        return [("*/*", 1.0)]
    items = []
    for index, part in enumerate(header.split(",")):
        fields = [f.strip() for f in part.split(";")]
        media = fields[0].lower()
        if not media:
            continue
        q = 1.0
        for f in fields[1:]:
            if f.lower().startswith("q="):
                try:
                    q = float(f[2:])
                except ValueError:
                    q = 0.0
        items.append((media, q, index))
    items.sort(key=lambda t: (-t[1], t[2]))
    return [(m, q) for m, q, _ in items]


def choose(accept: str | None, offered: dict[str, str], default: str) -> tuple[str, str]:
    """(format name, media type) for the best acceptable offer; raises NotAcceptable."""
    for media, q in parse_accept(accept):
        if q <= 0:
            continue
        if media in offered:
            return offered[media], _MEDIA[offered[media]]
        if media in ("*/*", "application/*", "text/*"):
            if media == "*/*" or default.startswith(media[:-1]):
                return offered[default], _MEDIA[offered[default]]
            for m in offered:
                if m.startswith(media[:-1]):
                    return offered[m], _MEDIA[offered[m]]
    raise NotAcceptable(
        "none of the acceptable types can carry this result; offered: " + ", ".join(sorted(set(offered)))
    )


class _Serializer:
    """Looks like a `TrikeDB` to `run_readonly_sparql`: `sparql(text)` returns the serialized result."""

    def __init__(self, db: Any, accept: str | None):
        self.db = db
        self.accept = accept

    def sparql(self, text: str) -> tuple[bytes, str]:
        import pyoxigraph as ox

        result = raw_query(self.db, text)
        if isinstance(result, ox.QueryTriples):
            name, media = choose(self.accept, GRAPH_TYPES, _DEFAULT_GRAPH)
            fmt = getattr(ox.RdfFormat, name)
        else:
            name, media = choose(self.accept, RESULT_TYPES, _DEFAULT_RESULT)
            fmt = getattr(ox.QueryResultsFormat, name)
        try:
            data = result.serialize(format=fmt)
        except (OSError, ValueError, SyntaxError) as exc:
            raise QueryError(f"cannot write the result as {media}: {exc}") from None
        return data, media


def raw_query(db: Any, text: str) -> Any:
    """Run a query on the graph's live Oxigraph projection and return pyoxigraph's own result."""
    return db.sparql_raw(text)


def run_protocol_query(db: Any, text: str, accept: str | None) -> tuple[bytes, str]:
    """Check, run (time-limited) and serialize a read query; returns (body, media type)."""
    from trike.mcp_server import run_readonly_sparql

    return run_readonly_sparql(_Serializer(db, accept), text)  # type: ignore[arg-type]
