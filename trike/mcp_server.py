"""The graph as MCP tools for agents (stdio here; streamable HTTP through `trike.http`).

Every tool calls one public `TrikeDB` method, so an agent goes through the same code path (and the same
ontology gate) as the Python API and the CLI. Results are plain JSON, bounded (`limit`, with
`truncated` and the total count when cut), and every refusal comes back as a tool error whose text
says how to fix the call.

Importing this module is cheap: the `mcp` SDK (pydantic, starlette, ...) is imported only by
`build_server` and `run_stdio`.

Public API (also used by the HTTP server, which mounts `build_server(...)` at /mcp):

- `build_server(db, *, read_only=False, allow_dirs=(), actor=None) -> MCPServer`
- `run_stdio(path, *, read_only=False, allow_dirs=()) -> None`
- `check_readonly_query(text) -> None`: refuses SPARQL UPDATE and SERVICE (raises `QueryError`)
- `run_readonly_sparql(db, text, *, timeout=SPARQL_TIMEOUT, lock=None)`: the check, then `db.sparql`
  under a time limit
- `db_lock(db)`: the per-graph lock the tools take around each call (pass it as `lock=` above)

See docs/mcp.md.
"""

import datetime as _dt
import json
import logging
import math
import os
import re
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ConflictError, LoadError, NotFoundError, OntologyError, QueryError, TrikeError

if TYPE_CHECKING:  # pragma: no cover
    from mcp.server.mcpserver import MCPServer

    from .db import TrikeDB

__all__ = [
    "READ_TOOLS",
    "SPARQL_TIMEOUT",
    "WRITE_TOOLS",
    "build_server",
    "check_readonly_query",
    "db_lock",
    "run_readonly_sparql",
    "run_stdio",
]

log = logging.getLogger("trike.mcp")

#: Seconds a SPARQL query may run before the tool gives up on it (`TRIKE_SPARQL_TIMEOUT` overrides).
SPARQL_TIMEOUT = float(os.environ.get("TRIKE_SPARQL_TIMEOUT", "10"))
#: How long a tool waits for the graph while another call (e.g. a query past its limit) still uses it.
BUSY_TIMEOUT = 30.0

READ_TOOLS = ("sparql", "match", "search", "find", "get_node", "related", "ontology", "stats", "history",
              "ask")
WRITE_TOOLS = ("add_triple", "set_node", "remove_triples", "import_source")

# What to use while a capability is missing.
_INSTEAD = {
    "search": " Use `match` with globs (s='*word*') or `sparql` with FILTER(CONTAINS(...)) instead.",
    "find": " Use `match` with globs or `sparql` instead.",
    "history": " Use `match` with as_of='all' to see facts with their valid_from/valid_to instead.",
    "ask": " Use `search`, `match`, `get_node` and `related` instead.",
    "import_source": " Add the facts one by one with `add_triple` instead.",
}

# Joins (`match` with patterns) are counted up to this many rows; beyond, the total is a lower bound.
_COUNT_CAP = 10_000

# Which issue brings each capability that may not exist yet (for the "not available" message).
_CAPABILITY_ISSUE = {"search": 4, "find": 4, "history": 5, "import_source": 8, "ask": 6}


# --------------------------------------------------------------------------------------------------
# SPARQL safety: read-only, no SERVICE, time limit
# --------------------------------------------------------------------------------------------------

from .sparqltext import _QUERY_FORMS, _UPDATE_WORDS, keywords, refuse_service  # noqa: E402
from .sparqltext import sparql_words as _sparql_words  # noqa: E402


def check_readonly_query(text: str) -> None:
    """Refuse anything but a plain read query: SPARQL UPDATE and federated `SERVICE` are refused.

    Raises `QueryError` with a message that tells the caller what to do instead. A query that is
    merely malformed passes here and is reported by the SPARQL engine.
    """
    if not isinstance(text, str) or not text.strip():
        raise QueryError("the query is empty: give a SPARQL SELECT, ASK, CONSTRUCT or DESCRIBE query")
    words = keywords(text)
    refuse_service(text)
    # The first keyword after the prologue (BASE/PREFIX declarations) says what the text is.
    # No read query has a bare INSERT, DELETE, LOAD, ... anywhere (they are not function names).
    form = next((w for w in words if w not in ("BASE", "PREFIX")), None)
    update = [w for w in dict.fromkeys(words) if w in _UPDATE_WORDS]
    if update:
        raise QueryError(
            f"SPARQL UPDATE ({', '.join(update)}) is refused: this tool is read-only. "
            "Change the graph with the add_triple, set_node and remove_triples tools, which check "
            "the ontology."
        )
    if form is not None and form not in _QUERY_FORMS:
        raise QueryError(
            f"not a SPARQL query: it starts with {form!r}; give a SELECT, ASK, CONSTRUCT or "
            "DESCRIBE query (after any PREFIX lines)."
        )


# A process-wide cap on SPARQL worker threads. pyoxigraph cannot interrupt a running query, so a
# query that runs past its time limit keeps its thread (and a CPU) until it finishes on its own; the
# cap keeps a client that sends many slow queries from piling such threads up.
_SPARQL_SLOTS = threading.BoundedSemaphore(max(2, os.cpu_count() or 2))


_BUSY = ("the graph is busy: an earlier SPARQL query that ran over its time limit is still being "
         "finished by the engine; retry in a moment, and keep queries cheap (bind names, add a LIMIT).")


def run_readonly_sparql(db: "TrikeDB", text: str, *, timeout: float | None = None,
                        lock: "threading.RLock | None" = None) -> Any:
    """`check_readonly_query(text)`, then `db.sparql(text)` with a time limit.

    The query runs in a daemon worker thread; if it has not finished after `timeout` seconds
    (default `SPARQL_TIMEOUT`) a `QueryError` is raised at once. pyoxigraph offers no way to cancel
    a query, so the worker goes on until the engine finishes and its result is thrown away. Meanwhile
    the graph stays busy (`TrikeDB.sparql` holds the graph's lock while the engine runs). At most
    `max(2, cpu_count)` workers exist at a time in a process; a further query waits for a free one
    within its own time limit, then is refused as busy.

    `lock` (use `db_lock(db)`, shared with the MCP tools): taken by the worker with the query's
    deadline, so a call that finds the graph busy with an abandoned query fails fast ("busy")
    instead of queueing behind it.
    """
    check_readonly_query(text)
    limit = SPARQL_TIMEOUT if timeout is None else float(timeout)
    deadline = time.monotonic() + limit
    if not _SPARQL_SLOTS.acquire(timeout=limit):
        raise QueryError(_BUSY)
    box: dict[str, Any] = {}
    done = threading.Event()
    state = threading.Lock()  # makes "the query started" vs "the caller gave up" one decision
    flags = {"started": False, "abandoned": False}

    def start() -> bool:
        with state:
            if flags["abandoned"]:
                return False
            flags["started"] = True
            return True

    def work() -> None:
        try:
            if lock is None:
                if start():
                    box["result"] = db.sparql(text)
            elif lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
                try:
                    if start():
                        box["result"] = db.sparql(text)
                finally:
                    lock.release()
        except BaseException as exc:  # handed to the caller below
            box["error"] = exc
        finally:
            _SPARQL_SLOTS.release()
            done.set()

    worker = threading.Thread(target=work, name="trike-sparql", daemon=True)
    worker.start()
    if not done.wait(max(0.0, deadline - time.monotonic())):
        with state:
            flags["abandoned"] = True
            started = flags["started"]
        if not started:
            raise QueryError(_BUSY)
        raise QueryError(
            f"the query ran longer than the {limit:g} s time limit and was abandoned. Make it cheaper: "
            "bind more terms (names or predicates instead of ?variables), add a LIMIT, avoid "
            "cartesian products of unrelated patterns."
        )
    if "error" in box:
        raise box["error"]
    if "result" not in box:
        raise QueryError(_BUSY)
    return box["result"]


# --------------------------------------------------------------------------------------------------
# Helpers shared by the tools
# --------------------------------------------------------------------------------------------------

_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_ISO_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?")


def _from_json(value: Any) -> Any:
    """JSON has no date type: an ISO date ('2024-09-01') or date-time string becomes a date value,
    as the same text would in the YAML file. Lists and mappings are converted element-wise."""
    if isinstance(value, str):
        text = value.strip()
        try:
            if _ISO_DATE.fullmatch(text):
                return _dt.date.fromisoformat(text)
            if _ISO_DATETIME.fullmatch(text):
                return _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return value
        return value
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _from_json(v) for k, v in value.items()}
    return value


def _jsonable(value: Any) -> Any:
    """Plain JSON data: dates as ISO strings, non-finite floats as strings, tuples as lists."""
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _bounded(items: Sequence[Any], limit: int, key: str = "results", total: int | None = None) -> dict[str, Any]:
    """`{key: items[:limit], "count": shown, "total": all, "truncated": bool}`."""
    total = len(items) if total is None else total
    shown = list(items[:limit])
    out: dict[str, Any] = {key: shown, "count": len(shown), "total": total, "truncated": total > len(shown)}
    if out["truncated"]:
        out["note"] = (f"showing {len(shown)} of {total}; narrow the call or raise `limit` "
                       "(the maximum is 1000) to see more")
    return out


def _trim(data: dict[str, Any], limit: int = 50) -> dict[str, Any]:
    """Cap every list inside a capability's result (whose shape this module does not own) at `limit`
    items; a cut list gets a sibling `<key>_total`, and the result `truncated: true`."""
    cut = False

    def walk(value: Any) -> Any:
        nonlocal cut
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for k, v in value.items():
                if isinstance(v, list) and len(v) > limit:
                    cut = True
                    out[k] = [walk(x) for x in v[:limit]]
                    out[f"{k}_total"] = len(v)
                else:
                    out[k] = walk(v)
            return out
        if isinstance(value, list):
            return [walk(x) for x in value]
        return value

    trimmed = walk(dict(data))
    if cut:
        trimmed["truncated"] = True
    return trimmed


_DB_LOCKS: "weakref.WeakKeyDictionary[Any, threading.RLock]" = weakref.WeakKeyDictionary()
_DB_LOCKS_FALLBACK: dict[int, threading.RLock] = {}
_DB_LOCKS_GUARD = threading.Lock()


def db_lock(db: Any) -> threading.RLock:
    """One re-entrant lock per `TrikeDB` object: tools run in worker threads and take it around their
    call, so calls on one graph are serialised (the HTTP server may share it)."""
    with _DB_LOCKS_GUARD:
        try:
            lock = _DB_LOCKS.get(db)
            if lock is None:
                lock = _DB_LOCKS[db] = threading.RLock()
            return lock
        except TypeError:  # not weak-referenceable
            return _DB_LOCKS_FALLBACK.setdefault(id(db), threading.RLock())


class _Deferred:
    """A `TrikeDB` opened in a background thread (so a stdio server answers `tools/list` while the
    graph loads). `get()` waits for it; if opening failed (say the file was broken), each later `get()`
    tries again, so a fixed file is picked up without restarting the server."""

    def __init__(self, opener: Callable[[], Any]):
        self._opener = opener
        self._db: Any = None
        self._error: BaseException | None = None
        self._done = threading.Event()
        self._retry = threading.Lock()
        threading.Thread(target=self._open, name="trike-open", daemon=True).start()

    def _open(self) -> None:
        try:
            self._db = self._opener()
            self._error = None
        except BaseException as exc:  # reported by get()
            self._error = exc
        finally:
            self._done.set()

    def get(self) -> Any:
        self._done.wait()
        if self._db is None:
            with self._retry:
                if self._db is None and self._error is not None:
                    error = self._error
                    self._open()
                    if self._db is None:
                        raise self._error or error
        return self._db


def _graph_dir(db: Any) -> Path | None:
    for attr in ("path", "file", "filename"):
        value = getattr(db, attr, None)
        if isinstance(value, (str, os.PathLike)) and str(value):
            return Path(value).expanduser().resolve().parent
    storage = getattr(db, "storage", None)
    value = getattr(storage, "path", None)
    if isinstance(value, (str, os.PathLike)) and str(value):
        return Path(value).expanduser().resolve().parent
    return None


def _fix_hint(tool: str, exc: BaseException) -> str:
    """The text of a tool error: what went wrong and how to fix the call."""
    msg = str(exc).strip() or type(exc).__name__
    if isinstance(exc, ConflictError):
        return (f"{msg} (Nothing was written. To replace the value: remove_triples the old fact, then "
                "add_triple; to record a change over time give the new fact a valid_from attribute.)")
    if isinstance(exc, OntologyError):
        allowed = list(getattr(exc, "allowed", []) or [])
        if allowed and "Allowed predicates" not in msg:
            msg += f" Allowed predicates: {', '.join(allowed)}."
        return msg + (" (Nothing was written. Call the `ontology` tool for each predicate's description, "
                      "domain, range and whether it is functional.)")
    if isinstance(exc, NotFoundError):
        return msg + (" (Names are exact and case-sensitive: use `search` or `match` with a glob such "
                      "as s='*part*' to find the right name.)")
    if isinstance(exc, QueryError):
        if tool == "sparql" and msg.startswith(("bad SPARQL", "SPARQL failed")):
            return msg + (" (Names are t:NAME IRIs, see the `sparql` tool description; call `ontology` "
                          "for the predicates.)")
        return msg
    if isinstance(exc, LoadError):
        return (f"the graph file cannot be read right now: {msg}. Someone left it broken (a bad hand "
                "edit or merge); fix the file, then retry. Nothing was written.")
    if isinstance(exc, ImportError) and tool in _CAPABILITY_ISSUE:
        missing = getattr(exc, "name", None) or ""
        if missing and not missing.startswith("trike"):
            extra = "search" if tool in ("search", "find", "ask") else "rdf"
            return (f"`{tool}` needs the Python package {missing!r}, which is not installed on the "
                    f"server: install it (pip install 'trike[{extra}]') and restart the server.")
        exc = NotImplementedError(msg)
    if isinstance(exc, NotImplementedError):
        issue = _CAPABILITY_ISSUE.get(tool)
        detail = f" ({msg})" if msg and msg != "NotImplementedError" else ""
        instead = _INSTEAD.get(tool, "")
        return (f"`{tool}` is not available yet in this trike version: the capability is not "
                f"implemented{f' (issue {issue})' if issue else ''}{detail}.{instead}")
    if isinstance(exc, TrikeError):
        return msg
    if isinstance(exc, (ValueError, TypeError, KeyError)):
        return f"bad arguments for {tool}: {msg}"
    return f"internal error in {tool}: {type(exc).__name__}: {msg}"


# --------------------------------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------------------------------

_INSTRUCTIONS = """\
This server is a knowledge graph (facts subject-predicate-object, with attributes; nodes with \
properties) stored in one YAML file and guarded by an ontology. Start with `stats` and `ontology` to \
learn its size and vocabulary. Find nodes with `search` (free text) or `match` (exact names and \
globs), read one with `get_node`, explore a neighbourhood with `related`, answer structured \
questions with `match` patterns or `sparql`. Writes (`add_triple`, `set_node`, `remove_triples`, \
`import_source`) are checked against the ontology and saved to the file at once; a refused write \
changes nothing and the error says how to fix it. Results are bounded: when `truncated` is true, \
narrow the call or raise `limit`."""


def build_server(db: "TrikeDB", *, read_only: bool = False, allow_dirs: Iterable[str | os.PathLike] = (),
                 actor: Callable[[], str | None] | None = None) -> "MCPServer":
    """An `MCPServer` whose tools call the public methods of `db`.

    read_only: register only the read tools. allow_dirs: folders besides the graph's own from which
    `import_source` may read. actor: a zero-argument callable giving the caller's identity (or None);
    write tools then add the attribute `by=<identity>` to the facts they write.
    """
    from typing import Annotated

    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import CallToolResult, TextContent, ToolAnnotations
    from pydantic import Field

    get_db: Callable[[], Any] = db.get if isinstance(db, _Deferred) else (lambda: db)
    extra_dirs = [Path(d).expanduser().resolve() for d in allow_dirs]

    server: MCPServer = MCPServer(
        name="trike",
        title="trike knowledge graph",
        instructions=_INSTRUCTIONS + (" This server is read-only: it has no write tools." if read_only else ""),
        version=_version(),
        log_level="WARNING",
    )

    Result = Annotated[CallToolResult, dict[str, Any]]
    Limit = Annotated[int, Field(ge=1, le=1000, description="Most results to return (1-1000).")]
    AsOf = Annotated[
        str | None,
        Field(description="Date 'YYYY-MM-DD' to see the facts valid on that day; 'all' for every fact "
                          "whatever its validity; default (null): today."),
    ]

    def ok(data: dict[str, Any]) -> CallToolResult:
        data = _jsonable(data)
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)

    def call(tool: str, fn: Callable[[Any], Any], *, locked: bool = True) -> Any:
        """Run `fn(db)` under the graph's lock, turning every failure into a ToolError."""
        try:
            the_db = get_db()
            if not locked:
                return fn(the_db)
            lock = db_lock(the_db)
            if not lock.acquire(timeout=BUSY_TIMEOUT):
                raise ToolError(
                    f"{tool}: the graph is busy (an earlier call, such as a SPARQL query past its time "
                    "limit, is still running); retry in a moment."
                )
            try:
                return fn(the_db)
            finally:
                lock.release()
        except ToolError:
            raise
        except Exception as exc:
            if not isinstance(exc, (TrikeError, NotImplementedError, ImportError, ValueError, TypeError,
                                    KeyError)):
                log.exception("tool %s failed", tool)
            raise ToolError(_fix_hint(tool, exc)) from exc

    def identity() -> str | None:
        if actor is None:
            return None
        who = actor()
        return str(who) if who else None

    def read(title: str) -> ToolAnnotations:
        return ToolAnnotations(title=title, read_only_hint=True, destructive_hint=False,
                               idempotent_hint=True, open_world_hint=False)

    # ------------------------------------------------------------------ read tools

    def sparql(
        query: Annotated[str, Field(description="A SPARQL 1.1 SELECT, ASK, CONSTRUCT or DESCRIBE query.")],
        limit: Limit = 100,
    ) -> Result:
        """Run a read-only SPARQL 1.1 query over the graph (SELECT, ASK, CONSTRUCT, DESCRIBE).

        Use it for questions `match` cannot express: aggregates (COUNT, GROUP BY), OPTIONAL, FILTER,
        property paths (t:PART_OF+ for transitive chains), UNION, NOT EXISTS. For a plain lookup
        prefer `match` or `get_node`.

        How the graph looks in RDF: every node, predicate, type and property name N is the IRI
        t:N (prefix t: = <urn:trike:>); a name with characters a prefixed name cannot hold is
        written <urn:trike:N> with those characters percent-encoded (space = %20). Each node has
        rdfs:label "N"; its `type` property is rdf:type t:TYPE; its other properties are t:PROP
        literals. A fact s p o is the triple t:s t:p t:o (a literal object is a typed literal). A
        fact's attributes sit on its reified statement: ?st rdf:subject ?s ; rdf:predicate t:p ;
        rdf:object ?o ; t:source ?src. Prefixes t:, rdf:, rdfs:, xsd:, owl:, prov:, skos: are
        predeclared (no PREFIX lines needed). Results give trike names, not IRIs.

        Refused: SPARQL UPDATE (use the write tools) and SERVICE (no federated queries). Queries have
        a time limit of {timeout} s.

        Example: {"query": "SELECT ?team (COUNT(?t) AS ?n) WHERE { ?t a t:table ; t:OWNED_BY ?team }
        GROUP BY ?team ORDER BY DESC(?n)"}

        Returns {"kind": "select", "rows": [{var: value}], "count", "total", "truncated"} for
        SELECT; {"kind": "ask", "answer": true|false} for ASK; {"kind": "triples", "triples":
        [{"s", "p", "o"}], "count", "total", "truncated"} for CONSTRUCT and DESCRIBE.
        """

        def run(d: Any) -> Any:
            return run_readonly_sparql(d, query, lock=db_lock(d))

        result = call("sparql", run, locked=False)
        if isinstance(result, bool):
            return ok({"kind": "ask", "answer": result})
        rows = list(result or [])
        if _looks_construct(query):
            return ok({"kind": "triples", **_bounded(rows, limit, "triples")})
        return ok({"kind": "select", **_bounded(rows, limit, "rows")})

    def match(
        s: Annotated[str | None, Field(description="Subject node name; globs * ? [] allowed; null: any.")] = None,
        p: Annotated[str | None, Field(description="Predicate; globs allowed; null: any.")] = None,
        o: Annotated[Any, Field(description="Object: a node name (globs allowed) or a literal value "
                                            "(number, boolean, 'YYYY-MM-DD' date); null: any.")] = None,
        patterns: Annotated[
            list[str] | None,
            Field(description="Instead of s/p/o: a join of triple patterns, variables start with ?, "
                              "e.g. ['?job INGESTS_TO ?table', '?table OWNED_BY ?team']. Quote names "
                              "with spaces: '\"Acme Corp\" OWNS ?x'."),
        ] = None,
        where: Annotated[
            dict[str, Any] | None,
            Field(description="Only facts whose attributes have these values, e.g. {\"source\": "
                              "\"crm\"} (s/p/o form only)."),
        ] = None,
        as_of: AsOf = None,
        limit: Limit = 50,
    ) -> Result:
        """Look up facts by exact names, globs or a join of triple patterns. The workhorse lookup.

        Give any of s, p, o (omitted = any) to list matching facts; give `patterns` instead for
        multi-hop questions (returns variable bindings). By default only facts valid today are seen
        (as_of='all' for every fact). Use `search` instead when you do not know the exact names,
        `sparql` for aggregates or OPTIONAL.

        Examples: {"s": "orders_db", "p": "OWNED_BY"}; {"p": "DEPENDS_ON", "o": "kafka*"};
        {"patterns": ["?job INGESTS_TO ?t", "?t OWNED_BY data-team"]}.

        Returns {"results": [facts {"s","p","o", ...attributes}] or [bindings {var: value}],
        "count", "total", "truncated"}.
        """
        if patterns and any(x is not None for x in (s, p, o)):
            raise ToolError("give either s/p/o or patterns, not both")
        if patterns:
            rows = call("match", lambda d: d.query(list(patterns), as_of=as_of, limit=_COUNT_CAP + 1))
            out = _bounded(rows[:_COUNT_CAP], limit)
            if len(rows) > _COUNT_CAP:
                out.update(truncated=True, total_is_lower_bound=True)
            return ok(out)
        attrs = _from_json(where or {})
        obj = _from_json(o)
        facts = call("match", lambda d: d.match(s, p, obj, as_of=as_of, limit=limit + 1, **attrs))
        if len(facts) <= limit:
            return ok(_bounded(facts, limit))
        total = call("match", lambda d: d.count(s, p, obj, as_of=as_of, **attrs))
        return ok(_bounded(facts, limit, total=total))

    def search(
        query: Annotated[str, Field(description="Free text: words, a name, a question.")],
        k: Annotated[int, Field(ge=1, le=100, description="How many hits.")] = 10,
        as_of: AsOf = None,
    ) -> Result:
        """Free-text search over node names, properties and facts (keyword + semantic ranking).

        Use it to find the exact name of a node before `get_node`/`match`, or when the question uses
        other words than the graph. Example: {"query": "who owns the billing database"}.

        Returns {"results": [hits with name, score and the matching text], "nothing_found": bool};
        nothing_found=true means nothing relevant, not a failure.
        """
        return ok(_trim(dict(call("search", lambda d: d.search(query, k=k, as_of=as_of)))))

    def find(
        question: Annotated[str, Field(description="What to find, in words.")],
        where: Annotated[
            dict[str, Any] | None,
            Field(description="Structured filter on node properties/type, e.g. {\"type\": \"table\"}."),
        ] = None,
        k: Annotated[int, Field(ge=1, le=100, description="How many nodes.")] = 10,
        as_of: AsOf = None,
    ) -> Result:
        """Find nodes that match a description, optionally filtered by properties (search + filter).

        Use it for "which tables hold customer data?"-style questions where you want nodes, not
        facts. Example: {"question": "tables with personal data", "where": {"type": "table"}}.

        Returns {"results": [nodes with name, props and why they matched], ...}.
        """
        res = call("find", lambda d: d.find(question, where=_from_json(where), k=k, as_of=as_of))
        return ok(_trim(dict(res), 20))

    def get_node(
        name: Annotated[str, Field(description="Exact node name (case-sensitive).")],
        as_of: Annotated[
            str | None,
            Field(description="'all' (default): every fact whatever its validity; or a date "
                              "'YYYY-MM-DD' for the facts valid that day; 'today' is not special, "
                              "give the date."),
        ] = "all",
        limit: Limit = 50,
    ) -> Result:
        """Everything about one node: its properties, its outgoing facts and its incoming facts.

        Use it once you know a node's exact name (from `search` or `match`). For more than one hop
        use `related`. Example: {"name": "orders_db"}.

        Returns {"name", "props", "out": [facts], "in": [facts], "truncated"} (with "total_out" and
        "total_in" when truncated); a node that does not exist is an error that suggests similar
        names.
        """
        node = dict(call("get_node", lambda d: d.get_node(name, as_of=as_of, limit=limit)))
        node.setdefault("truncated", False)
        return ok(node)

    def related(
        name: Annotated[str, Field(description="Exact node name to start from.")],
        depth: Annotated[int, Field(ge=1, le=3, description="Hops to follow, 1 to 3.")] = 1,
        limit: Annotated[int, Field(ge=1, le=1000, description="Most facts to return.")] = 200,
        as_of: AsOf = None,
    ) -> Result:
        """The neighbourhood of a node up to `depth` hops (both directions): the nodes and the facts.

        Use it for questions that need a few hops ("what depends on what this team owns?") when
        you do not know the exact path; for a fixed path, `match` with patterns is more precise.
        Example: {"name": "orders_db", "depth": 2}.

        Returns {"center", "depth", "nodes": {name: {"hops", "props"}}, "facts": [facts],
        "truncated": bool}.
        """
        return ok(dict(call("related", lambda d: d.related(name, depth=depth, limit=limit, as_of=as_of))))

    def ontology() -> Result:
        """The vocabulary: every declared predicate with its description, domain, range and whether it
        is functional (one value per subject), plus the declared classes.

        Call it before writing (`add_triple` only accepts declared predicates when the ontology is
        enforced) and before writing SPARQL. Takes no arguments. Example: {}.

        Returns {"enforced": bool, "predicates": {name: {description, domain, range, functional}},
        "classes": {...}}.
        """
        return ok(dict(call("ontology", lambda d: d.ontology())))

    def stats() -> Result:
        """Size and shape of the graph: how many facts and nodes, the facts per predicate, the nodes
        per type, whether the ontology is enforced, and the file's content hash.

        A cheap first call to orient yourself before searching; follow with `ontology` for what the
        predicates mean. Takes no arguments. Example: {}.

        Returns {"facts", "nodes", "predicates": {name: count}, "types": {type: count},
        "ontology_enforced", "file", "content_hash", ...}.
        """
        return ok(dict(call("stats", lambda d: d.stats())))

    def history(
        subject: Annotated[str, Field(description="Exact node name.")],
        predicate: Annotated[str | None, Field(description="Only this predicate; null: all.")] = None,
        limit: Limit = 50,
    ) -> Result:
        """How a node's facts changed over time: every fact with its validity window (valid_from,
        valid_to), oldest first, including facts that are no longer valid.

        Use it for "who owned X before?" or "when did Y change?". For the current state use
        `get_node`. Example: {"subject": "orders_db", "predicate": "OWNED_BY"}.

        Returns {"results": [facts with valid_from/valid_to], "count", "total", "truncated"}.
        """
        rows = call("history", lambda d: d.history(subject, predicate))
        return ok(_bounded(list(rows), limit))

    def ask(
        question: Annotated[str, Field(description="A question in plain words.")],
        budget_tokens: Annotated[int, Field(ge=100, le=20000,
                                            description="Size of the returned context, in tokens.")] = 2000,
    ) -> Result:
        """Answer a question from the graph: gathers the relevant facts (search + neighbourhood) into
        a compact, cited context of about `budget_tokens` tokens.

        Use it for open questions when you do not know where to start; for exact lookups
        `match`/`get_node` are cheaper. Example: {"question": "Who should I ask about the orders
        pipeline?"}.

        Returns {"context" / "facts" / "answer" fields as produced by the graph, with the facts they
        rest on}.
        """
        return ok(_trim(dict(call("ask", lambda d: d.ask(question, budget_tokens=budget_tokens))), 200))

    # ------------------------------------------------------------------ write tools

    def add_triple(
        s: Annotated[str, Field(description="Subject node name.")],
        p: Annotated[str, Field(description="Predicate, declared in the ontology.")],
        o: Annotated[
            str | int | float | bool,
            Field(description="Object: a node name, or a literal (number, boolean, string; "
                              "'YYYY-MM-DD' is stored as a date)."),
        ],
        attrs: Annotated[
            dict[str, Any] | None,
            Field(description="Edge attributes, e.g. {\"source\": \"wiki\", \"valid_from\": "
                              "\"2024-09-01\"}."),
        ] = None,
    ) -> Result:
        """Add one fact (s p o) to the graph, saved to the file at once. Idempotent.

        Checked by the ontology gate: the predicate must be declared, subject/object types must fit
        its domain/range, and a functional predicate takes one value per subject (give valid_from
        to record a change over time). A refused write changes nothing and the error says why and
        which predicates are allowed. Example: {"s": "orders_db", "p": "OWNED_BY", "o":
        "data-team", "attrs": {"source": "wiki"}}.

        Returns {"fact": the stored fact}.
        """
        attributes = _from_json(attrs or {})
        who = identity()
        if who is not None:
            attributes["by"] = who
        fact = call("add_triple", lambda d: d.add(s, p, _from_json(o), **attributes))
        return ok({"fact": fact})

    def set_node(
        name: Annotated[str, Field(description="Node name (created if new).")],
        props: Annotated[
            dict[str, Any],
            Field(description="Properties to merge in, e.g. {\"type\": \"table\", \"rows\": 1200}; a "
                              "null value deletes that property."),
        ],
    ) -> Result:
        """Create a node or merge properties into it (type, description, any scalar values), saved to
        the file at once. A property set to null is deleted. The node's `type` is what the ontology
        checks domains and ranges against. Example: {"name": "orders_db", "props": {"type": "table",
        "description": "All web orders"}}.

        Returns {"node": {"name", "props"}} with the node's properties after the change.
        """
        values = _from_json(props)
        node = call("set_node", lambda d: d.set_node(name, **values))
        return ok({"node": {"name": name, "props": node}})

    def remove_triples(
        s: Annotated[str | None, Field(description="Subject (globs * ? [] allowed); null: any.")] = None,
        p: Annotated[str | None, Field(description="Predicate (globs allowed); null: any.")] = None,
        o: Annotated[Any, Field(description="Object (globs allowed for names); null: any.")] = None,
        where: Annotated[
            dict[str, Any] | None,
            Field(description="Only facts whose attributes have these values, e.g. {\"source\": \"crm\"}."),
        ] = None,
        dry_run: Annotated[bool, Field(description="Only list what would be removed.")] = False,
        max_remove: Annotated[
            int,
            Field(ge=1, description="Refuse (and remove nothing) if more facts than this match."),
        ] = 100,
    ) -> Result:
        """Remove the facts matching s/p/o (at least one must be given; all validity times), saved to
        the file at once.

        Use dry_run=true first when a glob or a missing s/p/o may match many facts; more than
        `max_remove` matches are refused unless you raise it. To change a functional value, remove
        the old fact then `add_triple` the new one. Example: {"s": "orders_db", "p": "OWNED_BY",
        "o": "old-team"}.

        Returns {"removed": n}, or with dry_run {"would_remove": [facts], "count", "total",
        "truncated"}.
        """
        if s is None and p is None and o is None and not where:
            raise ToolError("remove_triples needs at least one of s, p, o: refusing to remove every fact")
        obj = _from_json(o)
        attrs = _from_json(where or {})
        if dry_run:
            facts = call("remove_triples", lambda d: d.match(s, p, obj, as_of="all", **attrs))
            return ok({"dry_run": True, **_bounded(facts, 100, "would_remove")})

        def remove(d: Any) -> int:
            matching = d.count(s, p, obj, as_of="all", **attrs)
            if matching > max_remove:
                raise ToolError(
                    f"refused: {matching} facts match, more than max_remove={max_remove}; nothing was "
                    "removed. Check them with dry_run=true, then narrow the pattern or raise max_remove."
                )
            return d.remove(s, p, obj, **attrs)

        return ok({"removed": call("remove_triples", remove)})

    def import_source(
        path: Annotated[str, Field(description="File or folder to import: relative to the graph's "
                                               "folder, or absolute inside an allowed folder.")],
        mapping: Annotated[
            dict[str, Any] | str | None,
            Field(description="How records become facts (see the importers docs), or the path of a "
                              "YAML mapping file; null: the importer's defaults."),
        ] = None,
        dry_run: Annotated[bool, Field(description="Report what would be imported, write nothing.")] = False,
    ) -> Result:
        """Import a file or folder (CSV/TSV, YAML/JSON graph, records with a mapping, Markdown notes)
        into the graph, all or nothing, through the ontology gate.

        Only files inside the graph's folder (or folders the server was started with --allow-dir)
        can be read. Run with dry_run=true first to see what would be added.
        Example: {"path": "exports/tables.csv", "dry_run": true}.

        Returns the importer's report: counts of new/same/updated/rejected facts and nodes, warnings,
        and the facts themselves (lists are cut at 50 items, with `<list>_total`).
        """
        the_path = _allowed_path(path)
        the_mapping: Any = mapping
        if isinstance(mapping, str):
            the_mapping = str(_allowed_path(mapping))
        res = call("import_source", lambda d: d.import_source(str(the_path), mapping=the_mapping,
                                                              dry_run=dry_run))
        return ok(_trim(dict(res) if isinstance(res, dict) else {"result": res}))

    def _allowed_path(raw: str) -> Path:
        try:
            base = _graph_dir(get_db())
        except Exception as exc:
            raise ToolError(_fix_hint("import_source", exc)) from exc
        roots = ([base] if base else []) + extra_dirs
        p = Path(raw).expanduser()
        if not p.is_absolute():
            if base is None:
                raise ToolError("give an absolute path: this graph has no folder of its own")
            p = base / p
        resolved = p.resolve()
        if not any(resolved == r or resolved.is_relative_to(r) for r in roots):
            listing = ", ".join(str(r) for r in roots) or "(none)"
            raise ToolError(
                f"refused: {raw} is outside the folders this server may read ({listing}). Copy the file "
                "into the graph's folder, or restart the server with --allow-dir for its folder."
            )
        if not resolved.exists():
            raise ToolError(f"{raw} does not exist (looked for {resolved})")
        return resolved

    # ------------------------------------------------------------------ registration

    def write(title: str, *, destructive: bool = False, idempotent: bool = True) -> ToolAnnotations:
        return ToolAnnotations(title=title, read_only_hint=False, destructive_hint=destructive,
                               idempotent_hint=idempotent, open_world_hint=False)

    reads = [
        (sparql, "SPARQL query"), (match, "Match facts"), (search, "Search"), (find, "Find nodes"),
        (get_node, "Get node"), (related, "Neighbourhood"), (ontology, "Ontology"),
        (stats, "Statistics"), (history, "History"), (ask, "Ask"),
    ]
    for fn, title in reads:
        server.add_tool(fn, name=fn.__name__, title=title, description=_doc(fn), annotations=read(title),
                        structured_output=True)
    if not read_only:
        writes = [
            (add_triple, write("Add fact")),
            (set_node, write("Set node properties")),
            (remove_triples, write("Remove facts", destructive=True)),
            (import_source, write("Import file", idempotent=False)),
        ]
        for fn, ann in writes:
            server.add_tool(fn, name=fn.__name__, title=ann.title, description=_doc(fn), annotations=ann,
                            structured_output=True)
    return server


def _looks_construct(query: str) -> bool:
    words = [w for w in _sparql_words(query) if w not in ("BASE", "PREFIX")]
    return bool(words) and words[0] in ("CONSTRUCT", "DESCRIBE")


def _doc(fn: Callable[..., Any]) -> str:
    """A tool description from a docstring: dedented, each paragraph on one line (the line breaks of
    the source are not the model's business)."""
    import inspect

    paragraphs = inspect.cleandoc(fn.__doc__ or "").split("\n\n")
    text = "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)
    return text.replace("{timeout}", f"{SPARQL_TIMEOUT:g}")


def _version() -> str:
    from . import __version__

    return __version__


# --------------------------------------------------------------------------------------------------
# stdio
# --------------------------------------------------------------------------------------------------


def run_stdio(path: str | os.PathLike, *, read_only: bool = False,
              allow_dirs: Iterable[str | os.PathLike] = ()) -> None:
    """Serve the graph at `path` over stdio until the client closes the connection.

    The graph is opened in a background thread while the SDK starts, so `tools/list` does not wait
    for it; a tool call waits for it (and reports a broken file as a tool error). On POSIX the
    handshake is answered from a cache while the SDK is still importing (see `_FrontDoor`);
    `TRIKE_MCP_FAST_START=0` turns that off.
    """
    def opener() -> Any:
        from .db import TrikeDB

        return TrikeDB(str(path))

    front = None
    if os.name == "posix" and os.environ.get("TRIKE_MCP_FAST_START", "1") != "0":
        try:
            front = _FrontDoor(_handshake_cache_file(read_only))
            front.start()
        except Exception:  # no fast start, then: the SDK serves the real stdin/stdout itself
            log.warning("trike mcp: fast start unavailable", exc_info=True)
            front = None
    deferred = _Deferred(opener)
    # stdout carries the protocol: anything else goes to stderr.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    try:
        server = build_server(deferred, read_only=read_only, allow_dirs=allow_dirs)  # type: ignore[arg-type]
        server.run("stdio")
    finally:
        if front is not None:
            front.finish()


# --------------------------------------------------------------------------------------------------
# Fast start: answer the handshake from a cache while the SDK imports
# --------------------------------------------------------------------------------------------------


def _handshake_cache_file(read_only: bool) -> "Path | None":
    """Where the recorded handshake of this exact server lives. The name hashes everything the
    answers depend on: this module, the versions of trike, Python, the SDK and pydantic (by their
    files, without importing them), read_only and the SPARQL time limit."""
    import hashlib
    import importlib.util

    from . import __version__

    h = hashlib.sha256()
    h.update(f"{__version__}|{sys.version}|{read_only}|{SPARQL_TIMEOUT}".encode())
    own = Path(__file__)
    for mod in ("mcp", "mcp_types", "pydantic", "pydantic_core"):
        spec = importlib.util.find_spec(mod)
        origin = Path(spec.origin) if spec and spec.origin else None
        if origin is None or not origin.exists():
            return None
        paths = [origin]
        if mod in ("mcp", "mcp_types", "pydantic"):  # the version lives in the package's metadata
            paths.extend(sorted(origin.parent.parent.glob(f"{mod}-*.dist-info/RECORD")))
        for item in paths:
            st = item.stat()
            h.update(f"|{item}:{st.st_size}:{st.st_mtime_ns}".encode())
    st = own.stat()
    h.update(f"|{own}:{st.st_size}:{st.st_mtime_ns}".encode())
    env = os.environ.get("TRIKE_CACHE_DIR")
    if env:
        folder = Path(env).expanduser()
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        folder = (Path(xdg) if xdg else Path.home() / ".cache") / "trike"
    return folder / f"mcp-handshake-{h.hexdigest()[:20]}.json"


class _FrontDoor:
    """Answers `initialize`, `tools/list` and `ping` from a cache while the SDK is still importing.

    Importing the `mcp` SDK (pydantic models for two protocol eras) takes most of a second or more,
    which alone would miss the start-up budget. So the process keeps the real stdin/stdout for itself
    and gives the SDK a pipe pair instead (as its fd 0 and 1, so the SDK's own stdio transport runs
    unchanged). Until the SDK answers its first message, this front door replies to the handshake
    with the answers the SDK itself gave to the same requests in an earlier run (recorded in a cache
    file keyed by everything they depend on); every message, the answered `initialize` included, is
    still passed on to the SDK in order, and the SDK's own reply to that `initialize` is dropped, so
    the SDK's session is exactly the one the client believes it has. Without a cache entry nothing is
    answered early: the replies are recorded for the next start. Anything but the legacy handshake
    (e.g. a 2026-era `server/discover`) is simply passed through.
    """

    def __init__(self, cache_file: "Path | None"):
        self.cache_file = cache_file
        self.cache: dict[str, dict[str, Any]] = {}
        if cache_file is not None:
            try:
                loaded = json.loads(cache_file.read_text(encoding="utf-8"))
                if isinstance(loaded, dict):
                    self.cache = loaded
            except (OSError, ValueError):
                pass
        self.out_lock = threading.Lock()
        self.sdk_live = threading.Event()
        self.drop_id: str | None = None      # the initialize answered here: the SDK's reply is dropped
        self.session_version: str | None = None
        self.answered_early = False
        self.pending: dict[str, tuple[str, str | None]] = {}  # id -> (method, version) to record
        self.recorded: dict[str, dict[str, Any]] = {}
        self.pump_done = threading.Event()

    def start(self) -> None:
        client_in = os.dup(0)
        client_out = os.dup(1)
        sdk_in_r, sdk_in_w = os.pipe()
        sdk_out_r, sdk_out_w = os.pipe()
        os.dup2(sdk_in_r, 0)
        os.dup2(sdk_out_w, 1)
        os.close(sdk_in_r)
        os.close(sdk_out_w)
        self.client_in = os.fdopen(client_in, "rb")
        self.client_out = os.fdopen(client_out, "wb", buffering=0)
        self.sdk_in = os.fdopen(sdk_in_w, "wb", buffering=0)
        self.sdk_out = os.fdopen(sdk_out_r, "rb")
        threading.Thread(target=self._from_client, name="trike-mcp-in", daemon=True).start()
        threading.Thread(target=self._from_sdk, name="trike-mcp-out", daemon=True).start()

    def finish(self) -> None:
        """After the SDK returned: let the pump pass on what the SDK wrote last, then stop it."""
        try:
            os.write(1, b"\x00trike-mcp-end\n")  # fd 1 is our pipe again once the SDK let it go
        except OSError:
            return
        self.pump_done.wait(10)

    def _send(self, data: bytes) -> None:
        with self.out_lock:
            self.client_out.write(data)

    def _answer(self, msg_id: Any, result: Any) -> None:
        reply = {"jsonrpc": "2.0", "id": msg_id, "result": result}
        self._send(json.dumps(reply, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")

    def _from_client(self) -> None:
        try:
            for line in self.client_in:
                forward = self._handle(line)
                if forward:
                    self.sdk_in.write(line if line.endswith(b"\n") else line + b"\n")
        except (OSError, ValueError):
            pass
        finally:
            try:
                self.sdk_in.close()  # EOF for the SDK: it shuts down as on a closed stdin
            except OSError:
                pass

    def _handle(self, line: bytes) -> bool:
        """Answer early what can be answered; True when the line must go on to the SDK."""
        try:
            msg = json.loads(line)
        except ValueError:
            return True
        if not isinstance(msg, dict) or "id" not in msg or not isinstance(msg.get("method"), str):
            return True
        method, msg_id = msg["method"], msg["id"]
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        key = json.dumps(msg_id)
        early = not self.sdk_live.is_set()
        if method == "initialize":
            version = params.get("protocolVersion")
            entry = self.cache.get(version) if isinstance(version, str) else None
            if early and entry and "initialize" in entry and "tools/list" in entry:
                self.drop_id = key
                self.answered_early = True
                self.session_version = version
                self._answer(msg_id, entry["initialize"])
            elif isinstance(version, str):
                self.session_version = version
                self.pending[key] = ("initialize", version)
            return True
        if method == "tools/list" and not params:
            entry = self.cache.get(self.session_version or "")
            if early and self.answered_early and entry and "tools/list" in entry:
                self._answer(msg_id, entry["tools/list"])
                return False
            self.pending[key] = ("tools/list", self.session_version)
            return True
        if method == "ping" and early and self.answered_early:
            self._answer(msg_id, {})
            return False
        return True

    def _from_sdk(self) -> None:
        try:
            for line in self.sdk_out:
                if line == b"\x00trike-mcp-end\n":
                    break
                self.sdk_live.set()
                if not line.lstrip().startswith((b"{", b"[")):
                    sys.stderr.buffer.write(line)  # stray output of some library: not for the client
                    sys.stderr.flush()
                elif self._keep(line):
                    self._send(line)
        except (OSError, ValueError):
            pass
        finally:
            self.pump_done.set()

    def _keep(self, line: bytes) -> bool:
        """Record the SDK's handshake replies; drop its reply to an initialize answered early."""
        if self.drop_id is None and not self.pending:
            return True
        try:
            msg = json.loads(line)
        except ValueError:
            return True
        if not isinstance(msg, dict) or "id" not in msg or "method" in msg:
            return True
        key = json.dumps(msg["id"])
        if key == self.drop_id:
            self.drop_id = None  # only once
            if "error" in msg:
                log.warning("trike mcp: the SDK refused a handshake answered from the cache: %s", msg["error"])
            return False
        got = self.pending.pop(key, None)
        if got is not None and "result" in msg and got[1]:
            method, version = got
            self.recorded.setdefault(version, {})[method] = msg["result"]
            if len(self.recorded[version]) == 2 and version not in self.cache:
                self._save(version)
        return True

    def _save(self, version: str) -> None:
        if self.cache_file is None:
            return
        try:
            data = dict(self.cache)
            data[version] = self.recorded[version]
            folder = self.cache_file.parent
            folder.mkdir(parents=True, exist_ok=True)
            month_ago = time.time() - 30 * 86400
            for old in folder.glob("mcp-handshake-*.json"):  # recordings of versions no longer used
                if old != self.cache_file and old.stat().st_mtime < month_ago:
                    old.unlink(missing_ok=True)
            tmp = self.cache_file.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
            os.replace(tmp, self.cache_file)
            self.cache = data
        except OSError:
            pass
