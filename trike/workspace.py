"""Workspaces: a read-only union of several graphs, each fact tagged with the graph it came from.

A `workspace.yaml` names the member graphs (see docs/workspaces.md):

```yaml
workspace:
  name: acme                  # optional (default: the folder name)
  refresh: 60                 # optional: seconds between checks of remote members (default 60)
  timeout: 10                 # optional: seconds to wait for a remote member (default 10)
graphs:
  platform: ./platform/graph.yaml                  # a path, relative to this file
  billing: {path: ../billing/graph.yaml, description: invoices and plans}
  shared: {url: https://example.org/export?format=yaml, token_env: SHARED_TOKEN, optional: true}
```

`open_workspace(path)` returns a `Workspace` with the read API of `TrikeDB` and the same return shapes.
Every fact it returns carries `graph: NAME`, and `graph=NAME` (a name, a glob, or a list) filters by
member in `match`, `facts` and `query`. Members are `TrikeDB` objects, so edits to a member file are
seen on the next read; remote members use `HttpStorage` (conditional requests, a disk copy as fallback).
SPARQL runs on a dataset whose default graph is the union and where each member is also the named graph
`urn:trike-graph:NAME` (prefix `g:`), so `GRAPH ?g { ... }` tells where a fact came from.
Every write method raises `ReadOnlyError` (a `TrikeError`) naming the member files to write to instead.
"""

from __future__ import annotations

import contextlib
import difflib
import fnmatch
import hashlib
import os
import re
import threading
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from .db import TrikeDB
from .errors import LoadError, NotFoundError, QueryError, StorageError, TrikeError
from .graph import ALL_TIME, Graph, resolve_as_of

__all__ = ["GRAPH_NS", "ReadOnlyError", "Workspace", "graph_iri", "is_workspace", "open_any", "open_workspace"]

GRAPH_NS = "urn:trike-graph:"
WORKSPACE_NAMES = ("workspace.yaml", "workspace.yml")
DEFAULT_REFRESH = 60.0
DEFAULT_TIMEOUT = 10.0

_NAME = re.compile(r"^\w[\w.-]*$")
_TOP_KEYS = ("workspace", "graphs")
_WS_KEYS = ("name", "description", "refresh", "timeout")
_MEMBER_KEYS = ("path", "url", "description", "refresh", "timeout", "token_env", "optional")
_GRAPH_FILE_KEYS = ("triples", "nodes", "ontology")


class ReadOnlyError(TrikeError):
    """A write was attempted on a workspace (workspaces are read-only unions)."""


def graph_iri(name: str) -> str:
    """The IRI of a member's named graph: `urn:trike-graph:NAME`."""
    return GRAPH_NS + quote(name, safe="")


def _graph_name(value: str) -> str:
    return unquote(value[len(GRAPH_NS):])


# ============================================================================ the workspace file

@dataclass(frozen=True)
class MemberSpec:
    name: str
    kind: str  # "file" | "url"
    source: str  # as written in the workspace file
    location: str  # the resolved path, or the URL
    description: str | None = None
    refresh: float = DEFAULT_REFRESH
    timeout: float = DEFAULT_TIMEOUT
    token_env: str | None = None
    optional: bool = False


@dataclass
class WorkspaceSpec:
    name: str
    description: str | None
    members: list[MemberSpec] = field(default_factory=list)


def _number(value: Any, what: str, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise LoadError(f"{what} must be a number of seconds (>= 0), got {value!r}", where)
    return float(value)


def _unknown_key(key: Any, allowed: tuple[str, ...], what: str, where: str) -> LoadError:
    close = difflib.get_close_matches(str(key), allowed, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return LoadError(f"unknown key {key!r} in {what}{hint}; allowed: {', '.join(allowed)}", where)


def parse_workspace(text: str, path: str | os.PathLike) -> WorkspaceSpec:
    """Read a workspace file. Member paths are resolved relative to the file's folder."""
    import yaml

    where = str(path)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise LoadError(f"not valid YAML: {getattr(exc, 'problem', None) or exc}", where, line) from None
    if not isinstance(data, dict) or "graphs" not in data:
        raise LoadError("a workspace file needs a `graphs:` mapping of NAME: path-or-url", where)
    for key in data:
        if key not in _TOP_KEYS:
            if key in _GRAPH_FILE_KEYS:
                raise LoadError(f"`{key}:` belongs in a graph file, not in a workspace file "
                                "(a workspace only lists graphs)", where)
            raise _unknown_key(key, _TOP_KEYS, "the workspace file", where)
    head = data.get("workspace") or {}
    if not isinstance(head, dict):
        raise LoadError("`workspace:` must be a mapping (name, description, refresh, timeout)", where)
    for key in head:
        if key not in _WS_KEYS:
            raise _unknown_key(key, _WS_KEYS, "`workspace:`", where)
    base = Path(path).resolve().parent
    name = str(head.get("name") or base.name or "workspace")
    refresh = _number(head.get("refresh", DEFAULT_REFRESH), "workspace.refresh", where)
    timeout = _number(head.get("timeout", DEFAULT_TIMEOUT), "workspace.timeout", where)
    graphs = data.get("graphs")
    if isinstance(graphs, list):
        graphs = _named_list(graphs, where)
    if not isinstance(graphs, dict) or not graphs:
        raise LoadError("`graphs:` is empty: name at least one graph, e.g. `platform: ./platform.yaml`", where)
    members: list[MemberSpec] = []
    seen: dict[str, str] = {}
    for raw_name, entry in graphs.items():
        gname = str(raw_name)
        if not _NAME.match(gname):
            raise LoadError(f"graph name {gname!r}: use letters, digits, _, . and - "
                            "(it tags every fact and names a SPARQL graph)", where)
        if isinstance(entry, str):
            entry = {"url": entry} if entry.startswith(("http://", "https://")) else {"path": entry}
        if not isinstance(entry, dict):
            raise LoadError(f"graph {gname!r}: give a path, a URL, or a mapping with `path:` or `url:`", where)
        for key in entry:
            if key not in _MEMBER_KEYS:
                raise _unknown_key(key, _MEMBER_KEYS, f"graph {gname!r}", where)
        if ("path" in entry) == ("url" in entry):
            raise LoadError(f"graph {gname!r}: give exactly one of `path:` or `url:`", where)
        opts = {
            "description": None if entry.get("description") is None else str(entry["description"]),
            "refresh": _number(entry.get("refresh", refresh), f"graph {gname!r} refresh", where),
            "timeout": _number(entry.get("timeout", timeout), f"graph {gname!r} timeout", where),
            "token_env": None if entry.get("token_env") is None else str(entry["token_env"]),
            "optional": bool(entry.get("optional", False)),
        }
        if "path" in entry:
            src = str(entry["path"])
            if src.startswith(("http://", "https://")):
                raise LoadError(f"graph {gname!r}: {src} is a URL; write `url: {src}`", where)
            loc = str((base / Path(src).expanduser()).resolve())
            spec = MemberSpec(gname, "file", src, loc, **opts)
        else:
            src = str(entry["url"])
            if not src.startswith(("http://", "https://")):
                raise LoadError(f"graph {gname!r}: url must start with http:// or https://, got {src!r}", where)
            spec = MemberSpec(gname, "url", src, src, **opts)
        if spec.location in seen:
            raise LoadError(f"graphs {seen[spec.location]!r} and {gname!r} are the same graph ({src})", where)
        seen[spec.location] = gname
        members.append(spec)
    return WorkspaceSpec(name=name, description=None if head.get("description") is None
                         else str(head["description"]), members=members)


def _default_name(source: str) -> str:
    """A graph name from a path or URL: the file's stem, or its folder for graph.yaml / trike.yaml."""
    from urllib.parse import urlsplit

    if source.startswith(("http://", "https://")):
        parts = urlsplit(source)
        path = Path(parts.path)
        stem = path.stem if path.stem not in ("", "export", "graph", "trike") else (path.parent.name or parts.hostname or "")
    else:
        path = Path(source)
        stem = path.stem if path.stem not in ("graph", "trike") else path.resolve().parent.name
    return re.sub(r"[^\w.-]", "-", stem).strip("-.") or "graph"


def _named_list(items: list, where: str) -> dict:
    """`graphs:` written as a list (`- a.yaml`, `- {name: x, url: ...}`): names from `name:` or the source."""
    out: dict[str, Any] = {}
    for item in items:
        if isinstance(item, str):
            name, entry = _default_name(item), item
        elif isinstance(item, dict) and ("path" in item or "url" in item or "name" in item):
            entry = {k: v for k, v in item.items() if k != "name"}
            name = str(item.get("name") or _default_name(str(item.get("path") or item.get("url") or "")))
        else:
            raise LoadError("each item of a `graphs:` list is a path, a URL, or a mapping with `path:` or "
                            f"`url:` (and optionally `name:`), got {item!r}", where)
        if name in out:
            raise LoadError(f"two graphs would be named {name!r}: give them names, e.g. "
                            f"`graphs: {{{name}: ..., {name}-2: ...}}` or `- {{name: ..., path: ...}}`", where)
        out[name] = entry
    return out


def _head(path: Path, size: int = 65536) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(size)
    except OSError:
        return ""


def is_workspace(path: str | os.PathLike) -> bool:
    """Is this file a workspace (named workspace.yaml, or a `graphs:` section and no graph sections)?"""
    p = Path(path)
    if p.name in WORKSPACE_NAMES:
        return True
    if p.suffix.lower() not in (".yaml", ".yml") or not p.is_file():
        return False
    keys = {line.split(":", 1)[0] for line in _head(p).splitlines() if line[:1].isalpha() and ":" in line}
    return "graphs" in keys and not keys & set(_GRAPH_FILE_KEYS)


def open_workspace(path: str | os.PathLike, **options: Any) -> Workspace:
    """Open a workspace file (see `Workspace`)."""
    return Workspace(path, **options)


def open_any(path: str | os.PathLike, **options: Any) -> TrikeDB | Workspace:
    """A `Workspace` for a workspace file, a read-only `TrikeDB` for an http(s) URL, else a `TrikeDB`."""
    text = os.fspath(path)
    if isinstance(text, str) and text.startswith(("http://", "https://")):
        from .storage_http import HttpStorage

        return TrikeDB(storage=HttpStorage(text, **options))
    if is_workspace(path):
        return Workspace(path, **options)
    return TrikeDB(path, **options)


# ============================================================================ members

class Member:
    """One graph of a workspace: its spec and its `TrikeDB` (None when an optional member is missing)."""

    def __init__(self, spec: MemberSpec, cache_dir: Any = None):
        self.spec = spec
        self.name = spec.name
        self.db: TrikeDB | None = None
        self.storage: Any = None
        self.error: str | None = None
        if spec.kind == "file":
            path = Path(spec.location)
            if not path.is_file():
                why = "is a directory, not a graph file" if path.is_dir() else "no such file"
                raise StorageError(f"graph {spec.name!r}: {spec.source}: {why} ({path})")
            if is_workspace(path):
                raise LoadError(f"graph {spec.name!r}: {spec.source} is itself a workspace; list its graphs "
                                "here instead (workspaces do not nest)")
            self.db = TrikeDB(path)
        else:
            from .storage_http import HttpStorage

            self.storage = HttpStorage(spec.location, timeout=spec.timeout, refresh=spec.refresh,
                                       token_env=spec.token_env, cache_dir=cache_dir)
            try:
                self.db = TrikeDB(storage=self.storage)
            except StorageError as exc:
                raise StorageError(f"graph {spec.name!r}: {exc}") from None

    def where(self) -> str:
        """The member's file (relative to the current folder when below it) or URL, for messages."""
        if self.spec.kind == "url":
            return self.storage.name if self.storage is not None else self.spec.location
        try:
            rel = os.path.relpath(self.spec.location)
        except ValueError:
            return self.spec.location
        return rel if not rel.startswith("..") else self.spec.location

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "kind": self.spec.kind, "source": self.where()}
        if self.spec.description:
            out["description"] = self.spec.description
        if self.db is None:
            out.update(ok=False, error=self.error)
            return out
        out["ok"] = True
        if self.storage is not None:
            st = self.storage.status()
            out.update(fetched_at=st["fetched_at"], stale=st["stale"])
            if st["last_error"]:
                out["error"] = st["last_error"]
        return out


def _tag(facts: list[dict], name: str) -> list[dict]:
    for f in facts:
        f["graph"] = name
    return facts


def _without_description(spec: Any) -> Any:
    if isinstance(spec, dict):
        return {k: v for k, v in spec.items() if k != "description"}
    return spec


# ============================================================================ the workspace

class Workspace:
    """A read-only union of graphs. Same read methods and return shapes as `TrikeDB`; every fact carries
    `graph: NAME`. Writes raise `ReadOnlyError`.

    >>> ws = open_workspace("workspace.yaml")
    >>> ws.match(p="OWNED_BY", graph="billing")
    """

    def __init__(self, path: str | os.PathLike, *, cache_dir: Any = None, ontology: Any = None):
        if ontology is not None:
            raise TrikeError("a workspace takes its ontology from its member graphs")
        self.path = Path(path)
        self.cache_dir = cache_dir
        self._lock = threading.RLock()
        self._members: dict[str, Member] = {}
        self._file_version: object = None
        self._revision = 0
        self._rev_key: Any = None
        self._cache: dict[Any, tuple[Any, Any]] = {}
        self._live_ds: _LiveDataset | None = None
        self.name = ""
        self.description: str | None = None
        self.warnings: list[str] = []
        self._load_spec()

    # ------------------------------------------------------------------ loading and syncing
    def _file_stat(self) -> object:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def _load_spec(self) -> None:
        version = self._file_stat()
        if version is None:
            raise LoadError("no such file", str(self.path))
        try:
            text = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise LoadError(f"cannot read: {exc}", str(self.path)) from None
        spec = parse_workspace(text, self.path)
        old = self._members
        members: dict[str, Member] = {}
        notes: list[str] = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for ms in spec.members:
                prev = old.get(ms.name)
                if prev is not None and prev.spec == ms and prev.db is not None:
                    members[ms.name] = prev
                    continue
                try:
                    members[ms.name] = Member(ms, self.cache_dir)
                except TrikeError as exc:
                    if not ms.optional:
                        cls = LoadError if isinstance(exc, LoadError) else StorageError
                        raise cls(f"{self.path}: {exc}") from None
                    m = Member.__new__(Member)
                    m.spec, m.name, m.db, m.storage, m.error = ms, ms.name, None, None, str(exc)
                    members[ms.name] = m
                    notes.append(f"graph {ms.name!r} is optional and unavailable, left out: {exc}")
        for w in caught:
            warnings.warn(w.message, stacklevel=3)
        for n in notes:
            warnings.warn(n, stacklevel=3)
        # kept for check(); a remote member on an old copy is reported by check() from its status instead
        notes = [str(w.message) for w in caught if "using the cached copy" not in str(w.message)] + notes
        self._members = members
        self.name = spec.name
        self.description = spec.description
        self.warnings = notes
        self._file_version = version
        self._cache.clear()

    def _sync(self) -> None:
        """Re-read the workspace file when it changed (members are TrikeDBs: they sync themselves)."""
        if self._file_stat() != self._file_version:
            self._load_spec()

    def reload(self) -> None:
        """Re-read the workspace file and every member (and retry unavailable optional members)."""
        with self._lock:
            self._members = {}
            self._load_spec()

    def _live(self) -> list[Member]:
        self._sync()
        return [m for m in self._members.values() if m.db is not None]

    def _state(self) -> tuple:
        """Changes whenever any member's content may have changed (each member syncs: one stat)."""
        key = []
        for m in self._live():
            assert m.db is not None
            len(m.db)  # a TrikeDB syncs with its storage when asked its size
            key.append((m.name, id(m.db), m.db.revision))
        return tuple(key)

    def _cached(self, name: Any, build: Callable[[], Any]) -> Any:
        with self._lock:
            state = self._state()
            hit = self._cache.get(name)
            if hit is not None and hit[0] == state:
                return hit[1]
            value = build()
            self._cache[name] = (state, value)
            return value

    @property
    def revision(self) -> int:
        """Increases whenever the workspace file or any member changes (a cache key, like TrikeDB's)."""
        with self._lock:
            state = self._state()
            if state != self._rev_key:
                self._rev_key = state
                self._revision += 1
            return self._revision

    def graphs(self) -> list[dict]:
        """The members in file order: name, kind (file/url), source, ok, facts, description, errors."""
        with self._lock:
            self._sync()
            out = []
            for m in self._members.values():
                st = m.status()
                if m.db is not None:
                    st["facts"] = len(m.db)
                out.append(st)
            return out

    def graph(self, name: str) -> TrikeDB:
        """The member graph `name` itself (a `TrikeDB`; read-only for remote members)."""
        with self._lock:
            self._sync()
            m = self._members.get(name)
            if m is None:
                raise NotFoundError(f"no graph named {name!r} in workspace {self.name}; "
                                    f"graphs: {', '.join(self._members)}")
            if m.db is None:
                raise TrikeError(f"graph {name!r} is unavailable: {m.error}")
            return m.db

    def _select(self, graph: Any) -> list[Member]:
        live = self._live()
        if graph is None:
            return live
        wanted = [graph] if isinstance(graph, str) else list(graph)
        names = [m.name for m in self._members.values()]
        for w in wanted:
            if not isinstance(w, str) or (not any(c in w for c in "*?[") and w not in names):
                raise NotFoundError(f"no graph named {w!r} in workspace {self.name}; graphs: {', '.join(names)}")
        return [m for m in live if any(fnmatch.fnmatchcase(m.name, w) for w in wanted)]

    # ------------------------------------------------------------------ facts
    def match(self, s: Any = None, p: Any = None, o: Any = None, *, as_of: Any = None,
              limit: int | None = None, graph: Any = None, **attrs: Any) -> list[dict]:
        """Facts of every member matching s/p/o (exact or glob) and attributes, each with `graph: NAME`,
        in member order. `graph=` keeps some members (a name, a glob or a list)."""
        resolve_as_of(as_of)  # the same error as TrikeDB for a bad date
        out: list[dict] = []
        with self._lock:
            members = self._select(graph)
        for m in members:
            assert m.db is not None
            left = None if limit is None else limit - len(out)
            if left is not None and left <= 0:
                break
            out.extend(_tag(m.db.match(s, p, o, as_of=as_of, limit=left, **attrs), m.name))
        return out

    def count(self, s: Any = None, p: Any = None, o: Any = None, *, as_of: Any = None,
              graph: Any = None, **attrs: Any) -> int:
        with self._lock:
            members = self._select(graph)
        return sum(m.db.count(s, p, o, as_of=as_of, **attrs) for m in members if m.db is not None)

    def facts(self, as_of: Any = ALL_TIME, *, graph: Any = None) -> list[dict]:
        """Every fact of every member (all validity times unless `as_of`), each with `graph: NAME`."""
        with self._lock:
            members = self._select(graph)
        out: list[dict] = []
        for m in members:
            assert m.db is not None
            out.extend(_tag(m.db.facts(as_of=as_of), m.name))
        return out

    def __len__(self) -> int:
        with self._lock:
            return sum(len(m.db) for m in self._live() if m.db is not None)

    def query(self, patterns: list[str] | str, *, as_of: Any = None, limit: int | None = None,
              graph: Any = None) -> list[dict]:
        """Conjunctive triple patterns over the union (joins may cross graphs); distinct bindings.
        `graph=` restricts the union to some members."""
        day = resolve_as_of(as_of)
        with self._lock:
            names = tuple(m.name for m in self._select(graph))
            union = self._cached(("union", names, day), lambda: self._union_graph(names, day))
        return union.query(patterns, None, limit)

    def _union_graph(self, names: tuple[str, ...], day: Any) -> Graph:
        as_of = ALL_TIME if day is None else day
        facts = []
        for m in self._live():
            if m.name in names and m.db is not None:
                facts.extend((f["s"], f["p"], f["o"], None) for f in m.db.facts(as_of=as_of))
        g = Graph()
        g.load(facts, {})
        return g

    # ------------------------------------------------------------------ nodes
    def nodes(self) -> dict[str, dict]:
        """Every node of every member -> its properties (merged; the first graph listed wins a clash,
        which `check()` reports)."""
        return {n: dict(p) for n, p in self._cached("nodes", self._merged_nodes)[0].items()}

    def _merged_nodes(self) -> tuple[dict[str, dict], dict[str, list[str]]]:
        merged: dict[str, dict] = {}
        where: dict[str, list[str]] = {}
        for m in self._live():
            assert m.db is not None
            for name, props in m.db.nodes().items():
                target = merged.setdefault(name, {})
                where.setdefault(name, []).append(m.name)
                for k, v in props.items():
                    target.setdefault(k, v)
        return merged, where

    def _not_found(self, name: str) -> NotFoundError:
        names = list(self._cached("nodes", self._merged_nodes)[0])
        close = difflib.get_close_matches(name, names, n=5, cutoff=0.6)
        if not close:
            low = name.lower()
            close = [n for n in names if low in n.lower()][:5]
        hint = f" Similar names: {', '.join(close)}." if close else ""
        return NotFoundError(f"no node named {name!r} in workspace {self.name} "
                             f"(graphs: {', '.join(self._members)}).{hint}")

    def get_node(self, name: str, *, as_of: Any = ALL_TIME, limit: int | None = None) -> dict:
        """A node across members: merged properties, outgoing and incoming facts (each with `graph`),
        and `graphs`, the members that mention it. Raises NotFoundError."""
        props: dict[str, Any] = {}
        out: list[dict] = []
        inc: list[dict] = []
        found: list[str] = []
        with self._lock:
            members = self._live()
        for m in members:
            assert m.db is not None
            try:
                r = m.db.get_node(name, as_of=as_of)
            except NotFoundError:
                continue
            found.append(m.name)
            for k, v in r["props"].items():
                props.setdefault(k, v)
            out.extend(_tag(r["out"], m.name))
            inc.extend(_tag(r["in"], m.name))
        if not found:
            with self._lock:
                raise self._not_found(name)
        result: dict[str, Any] = {"name": name, "props": props}
        if limit is not None and (len(out) > limit or len(inc) > limit):
            result.update(out=out[:limit], truncated=True, total_out=len(out), total_in=len(inc))
            result["in"] = inc[:limit]
        else:
            result.update(out=out)
            result["in"] = inc
        result["graphs"] = found
        return result

    def related(self, name: str, depth: int = 1, *, limit: int = 200, as_of: Any = None) -> dict:
        """The neighbourhood of a node across members (paths may cross graphs), 1-3 hops."""
        if not isinstance(depth, int) or not 1 <= depth <= 3:
            raise TrikeError(f"depth must be 1, 2 or 3, got {depth!r}")
        resolve_as_of(as_of)
        with self._lock:
            members = self._live()
            merged, where = self._cached("nodes", self._merged_nodes)
        if name not in merged:
            with self._lock:
                raise self._not_found(name)
        seen = {name: 0}
        facts: dict[tuple, dict] = {}
        frontier = [name]
        truncated = False
        for hop in range(1, depth + 1):
            nxt: list[str] = []
            for n in frontier:
                for pos in ("s", "o"):
                    for m in members:
                        assert m.db is not None
                        for f in m.db.match(**{pos: n}, as_of=as_of):
                            key = (m.name, f["s"], f["p"], f["o"])
                            if key in facts:
                                continue
                            if len(facts) >= limit:
                                truncated = True
                                break
                            f["graph"] = m.name
                            facts[key] = f
                            other = f["o"] if pos == "s" else f["s"]
                            if isinstance(other, str) and other in merged and other not in seen:
                                seen[other] = hop
                                nxt.append(other)
            frontier = nxt
        return {
            "center": name,
            "depth": depth,
            "nodes": {n: {"hops": h, "props": dict(merged.get(n) or {}), "graphs": list(where.get(n, []))}
                      for n, h in seen.items()},
            "facts": list(facts.values()),
            "truncated": truncated,
        }

    # ------------------------------------------------------------------ ontology
    def _merged_ontology(self) -> dict:
        preds: dict[str, dict] = {}
        classes: dict[str, dict] = {}
        pred_in: dict[str, list[str]] = {}
        class_in: dict[str, list[str]] = {}
        specs: dict[tuple[str, str], list[tuple[str, dict]]] = {}
        enforced: dict[str, bool] = {}
        for m in self._live():
            assert m.db is not None
            d = m.db.ontology()
            enforced[m.name] = bool(d.get("enforced"))
            for kind, target, where in (("predicate", preds, pred_in), ("class", classes, class_in)):
                for n, spec in (d.get("predicates" if kind == "predicate" else "classes") or {}).items():
                    target.setdefault(n, dict(spec))
                    where.setdefault(n, []).append(m.name)
                    specs.setdefault((kind, n), []).append((m.name, dict(spec)))
        conflicts = []
        for (kind, n), seen in specs.items():
            first_graph, first = seen[0]
            for other_graph, other in seen[1:]:
                if _without_description(other) != _without_description(first):
                    conflicts.append(f"ontology conflict: {kind} {n} is declared differently in "
                                     f"{first_graph} ({_show(first)}) and in {other_graph} ({_show(other)}); "
                                     f"the workspace uses {first_graph}'s")
        return {"predicates": preds, "classes": classes, "enforced": enforced,
                "declared_in": {"predicates": pred_in, "classes": class_in}, "conflicts": conflicts}

    def ontology(self) -> dict:
        """The members' ontologies merged: `{"enforced", "predicates", "classes"}` as in TrikeDB (the first
        graph listed wins a clash; `check()` reports clashes), plus `declared_in` (which graphs declare
        each predicate and class)."""
        mo = self._cached("ontology", self._merged_ontology)
        return {
            "enforced": any(mo["enforced"].values()),
            "predicates": {n: dict(s) for n, s in mo["predicates"].items()},
            "classes": {n: dict(s) for n, s in mo["classes"].items()},
            "declared_in": {k: {n: list(g) for n, g in v.items()} for k, v in mo["declared_in"].items()},
        }

    @property
    def _onto_raw(self) -> dict | None:
        """The merged ontology in file form (for the rules modules, which read `db._onto_raw`)."""
        mo = self._cached("ontology", self._merged_ontology)
        if not mo["predicates"] and not mo["classes"]:
            return None
        raw: dict[str, Any] = {}
        if any(mo["enforced"].values()):
            raw["predicates"] = {n: dict(s) for n, s in mo["predicates"].items()}
        if mo["classes"]:
            raw["classes"] = {n: dict(s) for n, s in mo["classes"].items()}
        return raw or None

    def _onto(self) -> Any:
        from .ontology import Ontology

        return self._cached("onto-object", lambda: Ontology(self._onto_raw))

    # ------------------------------------------------------------------ checks and summaries
    def check(self) -> list[str]:
        """Problems of the union: each member's own `check()` (prefixed `NAME: `), ontology clashes
        between members, node properties the members disagree on, functional predicates with different
        values in different graphs at the same time, and unavailable or stale members."""
        with self._lock:
            self._sync()
            problems = list(self.warnings)
            members = self._live()
            mo = self._cached("ontology", self._merged_ontology)
            problems += mo["conflicts"]
            for m in members:
                assert m.db is not None
                if m.spec.kind == "file" and not Path(m.spec.location).is_file():
                    problems.append(f"{m.name}: {m.where()}: the member file is gone (read as empty)")
                st = m.status()
                if st.get("stale"):
                    problems.append(f"{m.name}: using an old copy fetched {st.get('fetched_at')}: {st.get('error')}")
                problems += [f"{m.name}: {line}" for line in m.db.check()]
                own = m.db.count(graph="*", as_of=ALL_TIME)
                if own:
                    problems.append(f"{m.name}: {own} fact(s) have their own `graph` attribute; in the "
                                    "workspace `graph` names the member graph instead")
            problems += self._node_conflicts(members)
            problems += self._functional_conflicts(members)
            return problems

    def _node_conflicts(self, members: list[Member]) -> list[str]:
        values: dict[tuple[str, str], list[tuple[str, Any]]] = {}
        for m in members:
            assert m.db is not None
            for name, props in m.db.nodes().items():
                for k, v in props.items():
                    values.setdefault((name, k), []).append((m.name, v))
        out = []
        for (name, k), vals in values.items():
            first_graph, first = vals[0]
            for g, v in vals[1:]:
                if v != first or type(v) is not type(first):
                    out.append(f"node {name}: property {k} differs: {first_graph} says {first!r}, {g} says "
                               f"{v!r} (the workspace shows {first_graph}'s)")
        return out

    def _functional_conflicts(self, members: list[Member]) -> list[str]:
        from .ontology import _overlap
        from .values import to_date

        onto = self._onto()
        functional = [p for p in onto.predicates if onto.is_functional(p)]
        out = []
        for p in functional:
            by_subject: dict[str, list[tuple[str, dict]]] = {}
            for m in members:
                assert m.db is not None
                for f in m.db.match(None, p, None, as_of=ALL_TIME):
                    by_subject.setdefault(f["s"], []).append((m.name, f))
            for s, vals in by_subject.items():
                for i, (g1, f1) in enumerate(vals):
                    for g2, f2 in vals[i + 1:]:
                        if g1 == g2 or (f1["o"] == f2["o"] and type(f1["o"]) is type(f2["o"])):
                            continue
                        if _overlap(to_date(f1.get("valid_from")), to_date(f1.get("valid_to")),
                                    to_date(f2.get("valid_from")), to_date(f2.get("valid_to"))):
                            out.append(f"{s} {p}: functional predicate has different values in different "
                                       f"graphs: {f1['o']!r} in {g1}, {f2['o']!r} in {g2}")
        return out

    def stats(self) -> dict:
        """The counts of TrikeDB.stats over the union (facts counted once per graph that holds them),
        plus `workspace`, `distinct_facts` and `graphs` (per member: source, facts, nodes, hash, status)."""
        with self._lock:
            members = self._live()
            preds: dict[str, int] = {}
            inferred = timed = total = 0
            distinct: set[tuple] = set()
            per: dict[str, dict] = {}
            for m in members:
                assert m.db is not None
                facts = m.db.facts()
                for f in facts:
                    total += 1
                    preds[f["p"]] = preds.get(f["p"], 0) + 1
                    distinct.add((f["s"], f["p"], type(f["o"]).__name__, f["o"]))
                    if f.get("inferred"):
                        inferred += 1
                    if "valid_from" in f or "valid_to" in f:
                        timed += 1
                st = m.status()
                st.pop("name", None)
                st.update(facts=len(facts), nodes=len(m.db.nodes()), content_hash=m.db.content_hash())
                per[m.name] = st
            for m in self._members.values():
                if m.db is None:
                    per[m.name] = m.status()
            merged, _where = self._cached("nodes", self._merged_nodes)
            types: dict[str, int] = {}
            with_props = 0
            for props in merged.values():
                if props:
                    with_props += 1
                t = props.get("type")
                if isinstance(t, str):
                    types[t] = types.get(t, 0) + 1
            size = None
            with contextlib.suppress(OSError):
                size = self.path.stat().st_size
            return {
                "file": str(self.path),
                "workspace": self.name,
                "facts": total,
                "distinct_facts": len(distinct),
                "nodes": len(merged),
                "nodes_with_properties": with_props,
                "predicates": dict(sorted(preds.items(), key=lambda kv: -kv[1])),
                "types": dict(sorted(types.items(), key=lambda kv: -kv[1])),
                "inferred_facts": inferred,
                "timed_facts": timed,
                "ontology_enforced": self.ontology()["enforced"],
                "file_bytes": size,
                "content_hash": self.content_hash(),
                "graphs": per,
            }

    def content_hash(self) -> str:
        """A stable hash of the union: the member names with their content hashes."""
        with self._lock:
            members = self._live()
            h = hashlib.sha256(b"trike-workspace-v1\n")
            for m in sorted(members, key=lambda m: m.name):
                assert m.db is not None
                h.update(f"{m.name}={m.db.content_hash()}\n".encode())
            return "sha256:" + h.hexdigest()

    def section(self, name: str) -> Any:
        """An extra top-level section merged over members (mappings: first graph wins a key; lists are
        concatenated), e.g. `shapes:` for `validate()`."""
        out: Any = None
        with self._lock:
            members = self._live()
        for m in members:
            assert m.db is not None
            v = m.db.section(name)
            if v is None:
                continue
            if out is None:
                out = dict(v) if isinstance(v, dict) else list(v) if isinstance(v, list) else v
            elif isinstance(out, dict) and isinstance(v, dict):
                for k, x in v.items():
                    out.setdefault(k, x)
            elif isinstance(out, list) and isinstance(v, list):
                out.extend(v)
        return out

    # ------------------------------------------------------------------ RDF and SPARQL
    def _member_nt(self) -> list[tuple[str, str]]:
        return [(m.name, m.db.export("nt")) for m in self._live() if m.db is not None]

    def _dataset(self, union: bool) -> Any:
        import pyoxigraph as ox

        store = ox.Store()
        for name, nt in self._member_nt():
            if not nt:
                continue
            data = nt.encode("utf-8")
            store.bulk_load(data, ox.RdfFormat.N_TRIPLES, to_graph=ox.NamedNode(graph_iri(name)))
            if union:
                store.bulk_load(data, ox.RdfFormat.N_TRIPLES, to_graph=ox.DefaultGraph())
        return store

    def to_oxigraph(self) -> Any:
        """A pyoxigraph Store: the union in the default graph, each member in `urn:trike-graph:NAME`
        (a fresh copy; yours to change)."""
        with self._lock:
            return self._dataset(union=True)

    def sparql(self, text: str) -> Any:
        """SPARQL 1.1 over the union (the default graph), with each member also in the named graph
        `urn:trike-graph:NAME` (prefix `g:`): `SELECT ?g ?s WHERE { GRAPH ?g { ?s t:OWNED_BY ?t } }`.
        Results as TrikeDB.sparql; a member's graph IRI comes back as the member's name."""
        from .rdf import PREFIXES

        if not isinstance(text, str) or not text.strip():
            raise QueryError("empty SPARQL query")
        with self._lock:
            if self._live_ds is None:
                self._live_ds = _LiveDataset()
            self._live_ds.sync([(m.name, m.db) for m in self._live() if m.db is not None])
            store = self._live_ds.store
        try:
            res = store.query(text, prefixes={**PREFIXES, "g": GRAPH_NS})
        except SyntaxError as exc:
            raise QueryError(f"bad SPARQL: {exc}") from None
        except OSError as exc:
            raise QueryError(f"SPARQL failed: {exc}") from None
        return _convert(res)

    def export(self, format: str = "ttl") -> str:
        """The union as Turtle (`ttl`), N-Triples (`nt`) or JSON-LD (`jsonld`); with the graphs kept apart
        as N-Quads (`nq`) or TriG (`trig`), each member in `urn:trike-graph:NAME`."""
        import pyoxigraph as ox

        from .rdf import PREFIXES

        fmt = format.lower().lstrip(".")
        formats = {"ttl": ox.RdfFormat.TURTLE, "turtle": ox.RdfFormat.TURTLE,
                   "nt": ox.RdfFormat.N_TRIPLES, "ntriples": ox.RdfFormat.N_TRIPLES,
                   "n-triples": ox.RdfFormat.N_TRIPLES,
                   "jsonld": ox.RdfFormat.JSON_LD, "json-ld": ox.RdfFormat.JSON_LD,
                   "nq": ox.RdfFormat.N_QUADS, "nquads": ox.RdfFormat.N_QUADS, "n-quads": ox.RdfFormat.N_QUADS,
                   "trig": ox.RdfFormat.TRIG}
        if fmt not in formats:
            raise TrikeError(f"unknown export format {format!r}: use ttl, nt, jsonld, nq or trig")
        quads = fmt in ("nq", "nquads", "n-quads", "trig")
        with self._lock:
            store = self._dataset(union=not quads)
        kw: dict[str, Any] = {} if quads else {"from_graph": ox.DefaultGraph()}
        if fmt in ("ttl", "turtle", "trig"):
            kw["prefixes"] = {**PREFIXES, "g": GRAPH_NS}
        try:
            data = store.dump(format=formats[fmt], **kw)
        except (TypeError, ValueError):
            kw.pop("prefixes", None)
            data = store.dump(format=formats[fmt], **kw)
        return data.decode("utf-8")

    def to_rdflib(self) -> Any:
        """An rdflib Dataset: the members as named graphs (`urn:trike-graph:NAME`)."""
        import rdflib

        from .rdf import PREFIXES

        ds = rdflib.Dataset()
        for prefix, ns in {**PREFIXES, "g": GRAPH_NS}.items():
            ds.bind(prefix, rdflib.Namespace(ns), override=True)
        ds.parse(data=self.export("nq"), format="nquads")
        return ds

    def to_networkx(self) -> Any:
        """A networkx MultiDiGraph of the union; each edge has `predicate`, `graph` and the fact's attributes."""
        import networkx as nx

        onto = self._onto()
        G = nx.MultiDiGraph()
        for name, props in self.nodes().items():
            G.add_node(name, **props)
        for f in self.facts():
            s, p, o = f["s"], f["p"], f["o"]
            attrs = {k: v for k, v in f.items() if k not in ("s", "p", "o")}
            if not isinstance(o, str) or onto.is_literal_predicate(p):
                lit = f"{o!r}" if not isinstance(o, str) else o
                if lit not in G:
                    G.add_node(lit, literal=True, value=o)
                o = lit
            G.add_edge(s, o, key=(p, attrs["graph"]), predicate=p, **attrs)
        return G

    # ------------------------------------------------------------------ later capabilities (read-only)
    def search(self, query: str, k: int = 10, *, as_of: Any = None, model: str | None = None) -> dict:
        """Search the union (see docs/search.md); each fact result carries `graph`."""
        from .search import search

        return search(self, query, k=k, as_of=as_of, model=model)

    def find(self, question: str, where: Any = None, k: int = 10, *, as_of: Any = None,
             model: str | None = None) -> dict:
        from .search import find

        return find(self, question, where=where, k=k, as_of=as_of, model=model)

    def history(self, subject: str, predicate: str | None = None) -> list[dict]:
        """The values of a subject's facts over time across members; each row has `graph`."""
        from .temporal import history

        return history(self, subject, predicate)

    def ask(self, question: str, budget_tokens: int = 2000) -> dict:
        from .ask import ask

        return ask(self, question, budget_tokens=budget_tokens)

    def validate(self, shapes: Any = None) -> list[dict]:
        """SHACL validation of the union (shapes: given, or the members' `shapes:` sections merged)."""
        from .validation import validate

        return validate(self, shapes)

    def infer(self, apply: bool = False) -> list[dict]:
        """The facts OWL 2 RL rules add over the union (`apply=True` is refused: write to a member)."""
        if apply:
            self._refuse("infer(apply=True)")
        from .reasoning import infer

        return infer(self, apply=False)

    def to_html(self, path: str | os.PathLike) -> Path:
        from .ui import to_html

        return to_html(self, path)

    # ------------------------------------------------------------------ writes: refused
    def _refuse(self, what: str, *names: Any) -> None:
        with self._lock:
            members = [m for m in self._members.values() if m.db is not None]
            holders = []
            for n in names:
                if isinstance(n, str):
                    for m in members:
                        assert m.db is not None
                        if m.name not in holders and (m.db.count(n, as_of=ALL_TIME) or
                                                      m.db.count(None, None, n, as_of=ALL_TIME) or
                                                      n in m.db.nodes()):
                            holders.append(m.name)
            chosen = [m for m in members if m.name in holders] or members
            files = [m for m in chosen if m.spec.kind == "file"]
            listed = ", ".join(f"{m.name} ({m.where()})" for m in files) or "(none: every member is remote)"
            remote = [m.name for m in chosen if m.spec.kind == "url"]
            extra = f"; {', '.join(remote)} {'is' if len(remote) == 1 else 'are'} remote (write where it is " \
                    f"served)" if remote else ""
            which = "that holds it" if holders else "instead"
        raise ReadOnlyError(f"workspaces are read-only ({what}); write to the member graph file {which}: "
                            f"{listed}{extra}")

    def add(self, s: str, p: str, o: Any, /, **attrs: Any) -> dict:
        self._refuse("add", s)
        raise AssertionError  # unreachable

    def remove(self, s: str | None = None, p: str | None = None, o: Any = None, **attrs: Any) -> int:
        self._refuse("remove", s, o)
        raise AssertionError

    def set_node(self, name: str, /, **props: Any) -> dict:
        self._refuse("set_node", name)
        raise AssertionError

    def remove_node(self, name: str) -> int:
        self._refuse("remove_node", name)
        raise AssertionError

    def set_ontology(self, ontology: Any) -> dict:
        self._refuse("set_ontology")
        raise AssertionError

    def set_section(self, name: str, value: Any) -> None:
        self._refuse("set_section")

    def update(self, text: str) -> dict:
        self._refuse("SPARQL update")
        raise AssertionError

    def declare(self, predicate: str, *properties: str) -> dict:
        self._refuse("declare")
        raise AssertionError

    def import_source(self, path: Any, mapping: Any = None, dry_run: bool = False) -> dict:
        self._refuse("import")
        raise AssertionError

    @contextlib.contextmanager
    def batch(self) -> Iterator[Workspace]:
        self._refuse("batch")
        yield self  # pragma: no cover

    def __repr__(self) -> str:
        return f"Workspace({str(self.path)!r}, graphs={list(self._members)})"


class _LiveDataset:
    """The SPARQL dataset of a workspace, kept current member by member: each member's N-Triples lines in
    its named graph, and in the default graph every line that at least one member has (the union, with
    no duplicates). When a member changes, only the lines it gained or lost are applied."""

    def __init__(self) -> None:
        import pyoxigraph as ox

        self._ox = ox
        self.store = ox.Store()
        self.lines: dict[str, set[str]] = {}  # member -> its N-Triples lines
        self.holders: dict[str, int] = {}  # line -> how many members have it
        self.loaded: dict[str, tuple[int, int]] = {}  # member -> (id of its TrikeDB, its revision)

    def sync(self, members: list[tuple[str, Any]]) -> None:
        names = {name for name, _db in members}
        for gone in [n for n in self.lines if n not in names]:
            self._replace(gone, set())
            del self.lines[gone]
            self.loaded.pop(gone, None)
        for name, db in members:
            len(db)  # a TrikeDB syncs with its storage when asked its size
            key = (id(db), db.revision)
            if self.loaded.get(name) == key:
                continue
            self._replace(name, set(db.export("nt").splitlines(keepends=True)))
            self.loaded[name] = key

    def _quads(self, lines: list[str], graph: Any) -> list:
        ox = self._ox
        if not lines:
            return []
        return [ox.Quad(q.subject, q.predicate, q.object, graph)
                for q in ox.parse("".join(lines).encode("utf-8"), ox.RdfFormat.N_TRIPLES)]

    def _load(self, lines: list[str], graph: Any) -> None:
        ox = self._ox
        if len(lines) > 5000:
            self.store.bulk_load("".join(lines).encode("utf-8"), ox.RdfFormat.N_TRIPLES, to_graph=graph)
        elif lines:
            self.store.extend(self._quads(lines, graph))

    def _replace(self, name: str, new: set[str]) -> None:
        ox = self._ox
        old = self.lines.get(name, set())
        added = [line for line in new if line not in old]
        removed = [line for line in old if line not in new]
        g = ox.NamedNode(graph_iri(name))
        for q in self._quads(removed, g):
            self.store.remove(q)
        self._load(added, g)
        to_default: list[str] = []
        from_default: list[str] = []
        for line in added:
            n = self.holders.get(line, 0)
            self.holders[line] = n + 1
            if n == 0:
                to_default.append(line)
        for line in removed:
            n = self.holders[line] - 1
            if n:
                self.holders[line] = n
            else:
                del self.holders[line]
                from_default.append(line)
        for q in self._quads(from_default, ox.DefaultGraph()):
            self.store.remove(q)
        self._load(to_default, ox.DefaultGraph())
        self.lines[name] = new


def _show(spec: dict) -> str:
    from .values import emit

    try:
        return emit(spec)
    except TypeError:
        return repr(spec)


def _convert(res: Any) -> Any:
    import pyoxigraph as ox

    from .rdf import convert_results, term_value

    def value(term: Any) -> Any:
        if isinstance(term, ox.NamedNode) and term.value.startswith(GRAPH_NS):
            return _graph_name(term.value)
        return term_value(term)

    if isinstance(res, ox.QuerySolutions):
        names = [v.value for v in res.variables]
        return [{n: value(sol[n]) for n in names} for sol in res]
    if isinstance(res, ox.QueryTriples):
        return [{"s": value(t.subject), "p": value(t.predicate), "o": value(t.object)} for t in res]
    return convert_results(res)
