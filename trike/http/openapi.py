"""The OpenAPI 3.1 document of the REST API (served at `/openapi.json`)."""

from __future__ import annotations

from typing import Any


def _param(name: str, description: str, *, required: bool = False, schema: dict | None = None,
           where: str = "query") -> dict[str, Any]:
    return {"name": name, "in": where, "required": required, "description": description,
            "schema": schema or {"type": "string"}}


_ERR = {"$ref": "#/components/responses/Error"}
_JSON_ANY = {"application/json": {"schema": {}}}


def _op(summary: str, *, params: list | None = None, body: dict | None = None, responses: dict | None = None,
        write: bool = False, tag: str = "graph") -> dict[str, Any]:
    op: dict[str, Any] = {
        "summary": summary,
        "tags": [tag],
        "parameters": params or [],
        "responses": {"200": {"description": "OK", "content": _JSON_ANY}, "400": _ERR, "401": _ERR,
                      "403": _ERR, **(responses or {})},
        "x-trike-scope": "write" if write else "read",
    }
    if body is not None:
        op["requestBody"] = body
    return op


FACT = {
    "type": "object",
    "required": ["s", "p", "o"],
    "properties": {
        "s": {"type": "string", "description": "subject node name"},
        "p": {"type": "string", "description": "predicate (declared in the ontology)"},
        "o": {"description": "object: a node name or a literal (string, number, boolean, 'YYYY-MM-DD' date)"},
    },
    "additionalProperties": {"description": "fact attributes (source, confidence, valid_from, ...)"},
}


def openapi_document(*, title: str = "trike", version: str = "0.1.0", server_url: str | None = None,
                     auth_mode: str = "none", scopes: dict[str, str] | None = None,
                     issuer: str | None = None) -> dict[str, Any]:
    """The document; `auth_mode` (none | token | oauth) decides the security schemes it declares."""
    asof = _param("as_of", "YYYY-MM-DD: facts valid on that day; 'all': every fact; default: today")
    limit = _param("limit", "most results", schema={"type": "integer", "minimum": 1})
    paths: dict[str, Any] = {
        "/sparql": {
            "get": _op("SPARQL 1.1 Protocol query (query=...); result format by Accept", tag="sparql",
                       params=[_param("query", "a SELECT, ASK, CONSTRUCT or DESCRIBE query", required=True)],
                       responses={"406": _ERR}),
            "post": _op(
                "Read-only SPARQL query. JSON body {\"query\": ...} answers plain JSON (like TrikeDB.sparql); "
                "form (query=...) or application/sparql-query bodies follow the SPARQL 1.1 Protocol",
                tag="sparql",
                body={"required": True, "content": {
                    "application/json": {"schema": {"type": "object", "required": ["query"],
                                                    "properties": {"query": {"type": "string"}}}},
                    "application/x-www-form-urlencoded": {"schema": {
                        "type": "object", "properties": {"query": {"type": "string"}}}},
                    "application/sparql-query": {"schema": {"type": "string"}},
                }},
                responses={"406": _ERR, "413": _ERR},
            ),
        },
        "/nodes/{name}": {"get": _op("A node: its properties, outgoing and incoming facts",
                                     params=[_param("name", "node name", required=True, where="path"), asof,
                                             limit],
                                     responses={"404": _ERR})},
        "/match": {"get": _op("Facts matching s/p/o (exact names or * ? globs); other parameters filter "
                              "attributes", params=[_param("s", "subject"), _param("p", "predicate"),
                                                    _param("o", "object"), asof, limit])},
        "/search": {"get": _op("Search facts and nodes by meaning and words",
                               params=[_param("q", "the query", required=True),
                                       _param("k", "results", schema={"type": "integer"}), asof])},
        "/find": {"get": _op("Search, then keep nodes whose properties equal `where`",
                             params=[_param("q", "the question", required=True),
                                     _param("where", "JSON object of property values"),
                                     _param("k", "results", schema={"type": "integer"}), asof])},
        "/stats": {"get": _op("Counts of facts, nodes, predicates and types")},
        "/ontology": {"get": _op("The declared predicates and classes")},
        "/export": {"get": _op("The RDF projection, or the graph itself as canonical trike YAML "
                               "(ETag / If-None-Match supported)", params=[_param(
            "format", "ttl (default), nt, jsonld or yaml", schema={"enum": ["ttl", "nt", "jsonld", "yaml"]})])},
        "/triples": {
            "post": _op("Add facts through the ontology gate (one fact, a list, or {\"triples\": [...]})",
                        write=True,
                        body={"required": True, "content": {"application/json": {"schema": {"oneOf": [
                            {"$ref": "#/components/schemas/Fact"},
                            {"type": "array", "items": {"$ref": "#/components/schemas/Fact"}},
                            {"type": "object", "properties": {"triples": {
                                "type": "array", "items": {"$ref": "#/components/schemas/Fact"}}}},
                        ]}}}},
                        responses={"409": _ERR, "413": _ERR}),
            "delete": _op("Remove the facts matching s/p/o (at least one given; query or JSON body)",
                          write=True, params=[_param("s", "subject"), _param("p", "predicate"),
                                              _param("o", "object")]),
        },
        "/healthz": {"get": {"summary": "Liveness (no authentication)", "tags": ["server"], "security": [],
                             "responses": {"200": {"description": "OK", "content": _JSON_ANY}}}},
    }
    components: dict[str, Any] = {
        "schemas": {
            "Fact": FACT,
            "Error": {"type": "object", "required": ["error", "message"],
                      "properties": {"error": {"type": "string"}, "message": {"type": "string"},
                                     "allowed": {"type": "array", "items": {"type": "string"}}}},
        },
        "responses": {"Error": {"description": "an error", "content": {
            "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}},
    }
    doc: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": title, "version": version,
                 "description": "A knowledge graph in one YAML file. MCP (streamable HTTP) is served at /mcp."},
        "paths": paths,
        "components": components,
    }
    if server_url:
        doc["servers"] = [{"url": server_url}]
    if auth_mode == "token":
        components["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        doc["security"] = [{"bearer": []}]
    elif auth_mode == "oauth":
        scheme: dict[str, Any] = {"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
                                  "description": "an access token from the identity provider"}
        components["securitySchemes"] = {"bearer": scheme}
        if issuer:
            components["securitySchemes"]["oidc"] = {
                "type": "openIdConnect", "openIdConnectUrl": issuer.rstrip("/") + "/.well-known/openid-configuration"}
        doc["security"] = [{"bearer": list(scopes or {})}]
        doc["info"]["x-trike-scopes"] = scopes or {}
    return doc
