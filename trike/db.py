"""`TrikeDB`: the one public facade. The CLI, the MCP tools and the HTTP API each call one method here."""

from __future__ import annotations

import contextlib
import datetime as _dt
import difflib
import hashlib
import json
import os
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from . import yamlfile
from .errors import LoadError, NotFoundError, OntologyError, QueryError, StorageError, TrikeError
from .graph import ALL_TIME, Graph, Key, fact_dict, resolve_as_of
from .ontology import Ontology
from .storage import LocalFileStorage, Storage
from .values import to_date

_RESERVED = ("s", "p", "o")


def _load_ontology_arg(ontology: Any) -> dict | None:
    if ontology is None:
        return None
    if isinstance(ontology, dict):
        return ontology.get("ontology", ontology) if "predicates" not in ontology else ontology
    path = Path(ontology)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise LoadError(f"cannot read ontology: {exc.strerror or exc}", str(path)) from None
    data = yamlfile.parse(text, str(path))
    if data.ontology is None:
        raise LoadError("no `ontology:` section in this file", str(path))
    return data.ontology


def _noisy_or(a: Any, b: Any) -> float | None:
    try:
        fa, fb = float(a), float(b)
    except (TypeError, ValueError):
        return None
    return round(1.0 - (1.0 - fa) * (1.0 - fb), 6)


def _merge_prov(old: Any, new: Any) -> Any:
    items: list[Any] = []
    for v in (old, new):
        for x in (v if isinstance(v, list) else [v]):
            if x is not None and x not in items:
                items.append(x)
    return items[0] if len(items) == 1 else items


def merge_attrs(prev: dict | None, new: dict) -> dict | None:
    """The attributes of a fact stated again. The same source (or none): new values update the old.
    Another source: `prov` lists every source, `confidence` combines by noisy-or
    (1 - (1-a)(1-b)), and `valid_from` keeps the earliest date."""
    merged = dict(prev or {})
    old_prov = merged.get("prov")
    new_prov = new.get("prov")
    listed = old_prov if isinstance(old_prov, list) else [old_prov] if old_prov is not None else []
    another_source = new_prov is not None and old_prov is not None and new_prov not in listed \
        and new_prov != old_prov
    for k, v in new.items():
        if not another_source:
            if k == "prov" and new_prov in listed:
                continue  # a source already listed: nothing new
            if k == "confidence" and new_prov is not None and new_prov in listed and len(listed) > 1:
                continue
            merged[k] = v
        elif k == "prov":
            merged["prov"] = _merge_prov(old_prov, v)
        elif k == "confidence" and "confidence" in merged:
            combined = _noisy_or(merged["confidence"], v)
            if combined is not None:
                merged["confidence"] = combined
        elif k == "valid_from" and "valid_from" in merged:
            a, b = to_date(merged["valid_from"]), to_date(v)
            if a is not None and b is not None and b < a:
                merged["valid_from"] = v
        elif k == "valid_from" and "valid_from" not in merged and prev:
            continue  # the fact was already known without a start: keep it open
        else:
            merged[k] = v
    return merged or None


def _normalize_dates(attrs: dict) -> dict:
    """`valid_from`/`valid_to` given as 'YYYY-MM-DD' strings become dates (as YAML would read them)."""
    for k in ("valid_from", "valid_to"):
        v = attrs.get(k)
        if isinstance(v, str) and len(v) == 10:
            try:
                attrs[k] = _dt.date.fromisoformat(v)
            except ValueError:
                pass
    return attrs


class TrikeDB:
    """A knowledge graph stored in one YAML file.

    >>> db = TrikeDB("graph.yaml")
    >>> db.add("crm-sync-job", "INGESTS_TO", "RAW_CRM_CONTACTS", schedule="hourly")
    """

    def __init__(self, path: str | os.PathLike | None = None, ontology: Any = None, *,
                 storage: Storage | None = None, auto_reload: bool = True):
        if storage is None:
            if path is None:
                raise TrikeError("TrikeDB needs a path or a storage backend")
            storage = LocalFileStorage(path)
        self.storage = storage
        self.path = Path(path) if path is not None else Path(getattr(storage, "name", "graph.yaml"))
        self.auto_reload = auto_reload
        self._lock = threading.RLock()
        self._graph = Graph()
        self._onto_raw: dict | None = None
        self._onto = Ontology(None)
        self._extras: dict[str, Any] = {}
        self._version: object = None
        self._tail: tuple[int, bytes] | None = None  # (size, last bytes) after our last read/write
        self._appendable = False
        self._exists = False
        self.revision = 0
        self.load_warnings: list[str] = []
        self._proj: Any = None
        self._batch_depth = 0
        self._pending_lines: list[str] = []
        self._rewrite = False
        self._mutated = False
        self._cache: dict[str, tuple[int, Any]] = {}
        self._holding_lock = False
        self._override = _load_ontology_arg(ontology)
        self._load_full()

    # =================================================================== loading and syncing
    def _load_full(self) -> None:
        st = self.storage
        if not st.exists():
            self._graph = Graph()
            self._extras = {}
            self._set_ontology(self._override)
            self._version = st.version()
            self._exists = False
            self._appendable = False
            self._rewrite = self._override is not None
            self._changed()
            return
        lock = getattr(st, "lock", None)
        if self._holding_lock:
            lock = None  # we hold the exclusive lock already (a second flock would deadlock)
        with lock(shared=True) if lock else contextlib.nullcontext():
            version = st.version()
            try:
                text = st.read_text()
            except StorageError:
                raise
            if isinstance(st, LocalFileStorage):
                from .parsecache import parse_file_text

                data = parse_file_text(text, st.path)  # big files: through the parse cache
            else:
                data = yamlfile.parse(text, getattr(st, "name", None))
        graph = Graph()
        graph.load(data.triples, data.nodes)
        self._graph = graph
        self._extras = data.extras
        self._onto_raw = data.ontology
        self._exists = True
        self._appendable = data.appendable
        self._version = version
        raw = text.encode("utf-8")
        self._tail = (len(raw), raw[-64:])
        self._rewrite = False
        if self._override is not None and self._override != data.ontology:
            self._set_ontology(self._override)
            self._rewrite = True
        else:
            self._set_ontology(data.ontology)
        self.load_warnings = list(data.warnings)
        for w in data.warnings:
            warnings.warn(w, stacklevel=3)
        if data.warnings:
            self._rewrite = True  # the next write repairs the file
        self._changed()

    def _set_ontology(self, raw: dict | None) -> None:
        self._onto_raw = raw
        self._onto = Ontology(raw)
        self._proj = None

    def _changed(self) -> None:
        self.revision += 1
        self._cache.clear()

    def _sync(self) -> None:
        """Pick up changes made to the file by someone else (cheap: one stat when nothing changed)."""
        if not self.auto_reload or self._batch_depth:
            return
        version = self.storage.version()
        if version == self._version:
            return
        if not self._try_tail_reload(version):
            self._proj = None
            self._load_full()

    def _try_tail_reload(self, version: object) -> bool:
        old = self._version
        read_from = getattr(self.storage, "read_from", None)
        if (read_from is None or self._tail is None or not isinstance(old, tuple)
                or not isinstance(version, tuple) or old[0] != version[0] or version[1] <= old[1]
                or not self._appendable):
            return False
        size, last = self._tail
        try:
            chunk = read_from(size - len(last))
        except OSError:
            return False
        if not chunk.startswith(last):
            return False
        new = chunk[len(last):]
        try:
            facts = yamlfile.parse_tail(new.decode("utf-8"), str(self.path))
        except UnicodeDecodeError:
            return False
        if facts is None:
            return False
        for s, p, o, attrs in facts:
            key = (s, p, o)
            prev = self._graph.facts.get(key, False)
            if prev is not False and prev and attrs:
                merged = dict(prev)
                merged.update(attrs)
                attrs = merged
            elif prev is not False and not attrs:
                attrs = prev or None
            self._graph.put(key, attrs)
            if self._proj is not None:
                if prev:
                    self._proj.remove_fact(s, p, o, prev)
                self._proj.add_fact(s, p, o, attrs)
        self._version = version
        self._tail = (size + len(new), (last + new)[-64:])
        self._changed()
        return True

    def reload(self) -> None:
        """Re-read the file from storage."""
        with self._lock:
            self._proj = None
            self._load_full()

    # =================================================================== writing
    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """Serialize writers (threads and processes), sync first, persist after, roll back on error."""
        with self._lock:
            if self._batch_depth:
                yield
                return
            lock = getattr(self.storage, "lock", None)
            with lock() if lock else contextlib.nullcontext():
                self._holding_lock = True
                try:
                    self._sync_for_write()
                    self._mutated = False
                    try:
                        yield
                        self._persist()
                    except BaseException:
                        self._rollback()
                        raise
                finally:
                    self._holding_lock = False

    def _sync_for_write(self) -> None:
        version = self.storage.version()
        if version != self._version and not self._try_tail_reload(version):
            self._proj = None
            self._load_full()

    def _rollback(self) -> None:
        self._pending_lines = []
        if self._mutated or self._rewrite:
            self._proj = None
            try:
                self._load_full()
            except TrikeError:
                pass
        self._mutated = False

    def _persist(self) -> None:
        st = self.storage
        can_append = self._appendable and self._exists and hasattr(st, "append_text")
        if self._rewrite or (self._pending_lines and not can_append):
            text = yamlfile.dump(self._data())
            st.write_text(text)
            raw = text.encode("utf-8")
            self._tail = (len(raw), raw[-64:])
            self._appendable = bool(self._graph.facts)
            self._exists = True
            self.load_warnings = []
        elif self._pending_lines:
            chunk = "".join(self._pending_lines).encode("utf-8")
            st.append_text("".join(self._pending_lines))
            if self._tail is not None:
                size, last = self._tail
                self._tail = (size + len(chunk), (last + chunk)[-64:])
        else:
            return
        self._pending_lines = []
        self._rewrite = False
        self._version = st.version()

    def _data(self) -> yamlfile.GraphData:
        g = self._graph
        return yamlfile.GraphData(
            ontology=self._onto_raw,
            nodes=g.nodes,
            triples=[(s, p, o, a) for (s, p, o), a in g.facts.items()],
            extras=self._extras,
        )

    @contextlib.contextmanager
    def batch(self) -> Iterator[TrikeDB]:
        """Group writes: one save at the end, all or nothing if an error escapes the block."""
        with self._writing():
            self._batch_depth += 1
            try:
                yield self
            finally:
                self._batch_depth -= 1

    def _type_of(self, name: str) -> str | None:
        props = self._graph.nodes.get(name)
        if not props:
            return None
        t = props.get("type")
        return t if isinstance(t, str) else None

    def _validate_value(self, value: Any, what: str) -> None:
        from .values import emit

        try:
            emit(value)
        except TypeError as exc:
            raise TrikeError(f"{what}: {exc}") from None

    def add(self, s: str, p: str, o: Any, /, **attrs: Any) -> dict:
        """Add a fact (idempotent: the same s, p, o is one fact; new attributes update it).

        Checked by the ontology gate first. For a functional predicate, a new value with a later
        `valid_from` closes the current value (sets its `valid_to`) instead of conflicting. The same fact
        from another source keeps every source in `prov` and combines `confidence` by noisy-or."""
        s, p = self._name(s, "s"), self._name(p, "p")
        if isinstance(o, str):
            if not o:
                raise TrikeError("o is empty")
        elif o is None or isinstance(o, (dict, list, tuple)):
            raise TrikeError(f"o must be a node name or a scalar value, got {o!r}")
        self._validate_value(o, "o")
        clean = {}
        for k, v in attrs.items():
            if k in _RESERVED:
                raise TrikeError(f"attribute name {k!r} is reserved (s, p, o name the triple itself)")
            if v is None:
                continue
            self._validate_value(v, f"attribute {k}")
            clean[str(k)] = v
        _normalize_dates(clean)
        with self._writing():
            return self._add(s, p, o, clean)

    def _add(self, s: str, p: str, o: Any, attrs: dict) -> dict:
        onto = self._onto
        g = self._graph
        onto.check_predicate(p)
        onto.check_types(s, p, o, self._type_of)
        key = (s, p, o)
        prev = g.facts.get(key, False)
        if prev is False:
            new_attrs = attrs or None
        else:
            new_attrs = merge_attrs(prev, attrs)
            if new_attrs == prev or (not new_attrs and not prev):
                return fact_dict(key, prev)
        closes = []
        if onto.is_functional(p):
            existing = [(k, g.facts[k]) for k in g.keys_for(s, p, None)]
            closes = onto.functional_plan(s, p, o, new_attrs, existing)
        for ckey, day in closes:
            old = g.facts[ckey]
            updated = dict(old or {})
            updated["valid_to"] = day
            self._put(ckey, updated)
            self._rewrite = True
        self._put(key, new_attrs)
        if prev is False and not closes:
            self._pending_lines.append(yamlfile.triple_line(s, p, o, new_attrs))
        else:
            self._rewrite = True
        return fact_dict(key, new_attrs)

    def _put(self, key: Key, attrs: dict | None) -> None:
        g = self._graph
        prev = g.facts.get(key, False)
        self._mutated = True
        g.put(key, attrs)
        if self._proj is not None:
            if prev is not False:
                self._proj.remove_fact(*key, prev)
            self._proj.add_fact(*key, attrs)
        self._changed()

    def _delete(self, key: Key) -> None:
        g = self._graph
        attrs = g.facts[key]
        self._mutated = True
        g.delete(key)
        if self._proj is not None:
            self._proj.remove_fact(*key, attrs)
            for name in (key[0], key[2]):
                if isinstance(name, str) and not g.has_node(name):
                    self._proj.drop_label(name)
        self._changed()
        self._rewrite = True

    @staticmethod
    def _name(value: Any, what: str) -> str:
        if not isinstance(value, str):
            if value is None or isinstance(value, (dict, list, tuple)):
                raise TrikeError(f"{what} must be a name, got {value!r}")
            value = str(value)
        if not value:
            raise TrikeError(f"{what} is empty")
        return value

    def remove(self, s: str | None = None, p: str | None = None, o: Any = None, **attrs: Any) -> int:
        """Remove the facts that match (patterns as in `match`, all validity times). Returns the count."""
        if s is None and p is None and o is None and not attrs:
            raise TrikeError("remove needs at least one of s, p, o (refusing to remove every fact)")
        with self._writing():
            keys = [k for k, _a in self._graph.match(s, p, o, attrs or None, None)]
            for k in keys:
                self._delete(k)
            return len(keys)

    def set_node(self, name: str, /, **props: Any) -> dict:
        """Set node properties (merged into the existing ones; a value of None deletes that property).
        A new `type` is checked against the domain/range of the node's existing facts."""
        name = self._name(name, "name")
        for k, v in props.items():
            if v is not None:
                self._validate_value(v, f"property {k}")
        with self._writing():
            g = self._graph
            old = g.nodes.get(name)
            new = dict(old or {})
            for k, v in props.items():
                if v is None:
                    new.pop(k, None)
                else:
                    new[str(k)] = v
            if new == old and name in g.nodes:
                return dict(new)
            self._set_node_locked(name, new, keep_empty=True)
            return dict(new)

    def remove_node(self, name: str) -> int:
        """Remove a node: its properties and every fact that mentions it. Returns the facts removed."""
        with self._writing():
            g = self._graph
            keys = list(dict.fromkeys(list(g.keys_for(name, None, None)) + list(g.keys_for(None, None, name))))
            if name not in g.nodes and not keys:
                raise self._not_found(name)
            for k in keys:
                self._delete(k)
            if name in g.nodes:
                old = g.nodes.pop(name)
                if self._proj is not None:
                    self._proj.set_node(name, old, None)
                    self._proj.drop_label(name)
                self._mutated = True
                self._changed()
                self._rewrite = True
            return len(keys)

    def set_ontology(self, ontology: Any) -> dict:
        """Replace the ontology (a dict with `predicates:`/`classes:`, or a YAML path)."""
        raw = _load_ontology_arg(ontology)
        with self._writing():
            self._mutated = True
            self._set_ontology(raw)
            self._changed()
            self._rewrite = True
        return self.ontology()

    def section(self, name: str) -> Any:
        """An extra top-level section of the file (for example `shapes:`), or None."""
        with self._lock:
            self._sync()
            return self._extras.get(name)

    def set_section(self, name: str, value: Any) -> None:
        if name in ("ontology", "nodes", "triples"):
            raise TrikeError(f"{name!r} is not an extra section")
        if value is not None:
            self._validate_value(value, f"section {name}")
        with self._writing():
            self._mutated = True
            if value is None:
                self._extras.pop(name, None)
            else:
                self._extras[name] = value
            self._changed()
            self._rewrite = True

    # =================================================================== reading
    def _read(self) -> Graph:
        self._sync()
        return self._graph

    def match(self, s: Any = None, p: Any = None, o: Any = None, *, as_of: Any = None,
              limit: int | None = None, **attrs: Any) -> list[dict]:
        """Facts matching exact names or glob patterns (`*`, `?`) and attribute filters.
        By default only facts valid today; `as_of=DATE` for another day, `as_of="all"` for every fact."""
        day = resolve_as_of(as_of)
        with self._lock:
            g = self._read()
            out = []
            for key, a in g.match(s, p, o, attrs or None, day):
                out.append(fact_dict(key, a))
                if limit is not None and len(out) >= limit:
                    break
            return out

    def count(self, s: Any = None, p: Any = None, o: Any = None, *, as_of: Any = None, **attrs: Any) -> int:
        day = resolve_as_of(as_of)
        with self._lock:
            return sum(1 for _ in self._read().match(s, p, o, attrs or None, day))

    def query(self, patterns: list[str] | str, *, as_of: Any = None, limit: int | None = None) -> list[dict]:
        """Conjunctive triple patterns with ?variables, joined on shared names.

        >>> db.query(["?vendor PROVIDES ?job", "?job INGESTS_TO ?table"])
        [{'vendor': 'salesflow-crm', 'job': 'crm-sync-job', 'table': 'RAW_CRM_CONTACTS'}]"""
        day = resolve_as_of(as_of)
        with self._lock:
            return self._read().query(patterns, day, limit)

    def facts(self, as_of: Any = ALL_TIME) -> list[dict]:
        """Every fact as a dict (all validity times unless `as_of` is given)."""
        day = resolve_as_of(as_of)
        with self._lock:
            return [fact_dict(k, a) for k, a in self._read().match(None, None, None, None, day)]

    def nodes(self) -> dict[str, dict]:
        """Every node (listed in `nodes:` or used in a fact) -> its properties."""
        with self._lock:
            g = self._read()
            return {n: dict(g.nodes.get(n) or {}) for n in g.node_names(self._onto.is_literal_predicate)}

    def _not_found(self, name: str) -> NotFoundError:
        names = list(self._graph.node_names())
        close = difflib.get_close_matches(name, names, n=5, cutoff=0.6)
        if not close:
            low = name.lower()
            close = [n for n in names if low in n.lower()][:5]
        hint = f" Similar names: {', '.join(close)}." if close else ""
        return NotFoundError(f"no node named {name!r} in {self.path.name}.{hint}")

    def get_node(self, name: str, *, as_of: Any = ALL_TIME, limit: int | None = None) -> dict:
        """A node's properties and its outgoing and incoming facts. Raises NotFoundError."""
        day = resolve_as_of(as_of)
        with self._lock:
            g = self._read()
            out = [fact_dict(k, a) for k, a in g.match(name, None, None, None, day)]
            inc = [fact_dict(k, a) for k, a in g.match(None, None, name, None, day)]
            if name not in g.nodes and not out and not inc and not g.has_node(name):
                raise self._not_found(name)
            result: dict[str, Any] = {"name": name, "props": dict(g.nodes.get(name) or {})}
            if limit is not None and (len(out) > limit or len(inc) > limit):
                result.update(out=out[:limit], incoming=inc[:limit], truncated=True,
                              total_out=len(out), total_in=len(inc))
            else:
                result.update(out=out, incoming=inc)
            result["in"] = result.pop("incoming")
            return result

    def related(self, name: str, depth: int = 1, *, limit: int = 200, as_of: Any = None) -> dict:
        """The neighbourhood of a node: facts up to `depth` hops away (1-3), either direction."""
        if not isinstance(depth, int) or not 1 <= depth <= 3:
            raise TrikeError(f"depth must be 1, 2 or 3, got {depth!r}")
        day = resolve_as_of(as_of)
        with self._lock:
            g = self._read()
            if not g.has_node(name):
                raise self._not_found(name)
            seen_nodes = {name: 0}
            facts: dict[Key, dict | None] = {}
            frontier = [name]
            truncated = False
            for hop in range(1, depth + 1):
                nxt = []
                for n in frontier:
                    for pos in ("s", "o"):
                        kw = {pos: n}
                        for key, a in g.match(kw.get("s"), None, kw.get("o"), None, day):
                            if key in facts:
                                continue
                            if len(facts) >= limit:
                                truncated = True
                                break
                            facts[key] = a
                            other = key[2] if pos == "s" else key[0]
                            if isinstance(other, str) and other not in seen_nodes:
                                seen_nodes[other] = hop
                                nxt.append(other)
                frontier = nxt
            return {
                "center": name,
                "depth": depth,
                "nodes": {n: {"hops": h, "props": dict(g.nodes.get(n) or {})} for n, h in seen_nodes.items()},
                "facts": [fact_dict(k, a) for k, a in facts.items()],
                "truncated": truncated,
            }

    def ontology(self) -> dict:
        """The declared vocabulary: predicates (description, domain, range, functional, ...) and classes."""
        with self._lock:
            self._read()
            return self._onto.describe()

    def stats(self) -> dict:
        """Counts: facts, nodes, facts per predicate, nodes per type, inferred and timed facts."""
        with self._lock:
            g = self._read()
            cached = self._cache.get("stats")
            if cached is not None:
                return dict(cached[1])
            preds: dict[str, int] = {}
            inferred = 0
            timed = 0
            for (_s, p, _o), a in g.facts.items():
                preds[p] = preds.get(p, 0) + 1
                if a:
                    if a.get("inferred"):
                        inferred += 1
                    if "valid_from" in a or "valid_to" in a:
                        timed += 1
            names = g.node_names()
            types: dict[str, int] = {}
            for props in g.nodes.values():
                t = props.get("type")
                if isinstance(t, str):
                    types[t] = types.get(t, 0) + 1
            size = None
            with contextlib.suppress(OSError):
                size = self.path.stat().st_size
            result = {
                "file": str(self.path),
                "facts": len(g.facts),
                "nodes": len(names),
                "nodes_with_properties": len(g.nodes),
                "predicates": dict(sorted(preds.items(), key=lambda kv: -kv[1])),
                "types": dict(sorted(types.items(), key=lambda kv: -kv[1])),
                "inferred_facts": inferred,
                "timed_facts": timed,
                "ontology_enforced": self._onto.enabled,
                "file_bytes": size,
                "content_hash": self.content_hash(),
            }
            self._cache["stats"] = (self.revision, result)
            return dict(result)

    def check(self) -> list[str]:
        """Every fact in the file that the ontology gate would refuse now (hand edits included)."""
        with self._lock:
            g = self._read()
            problems = list(self._onto.violations(g.facts, self._type_of))
            return problems

    def content_hash(self) -> str:
        """A stable hash of the graph's content (ontology, nodes, facts), independent of formatting
        and order."""
        with self._lock:
            g = self._read()
            cached = self._cache.get("hash")
            if cached is not None:
                return cached[1]
            h = hashlib.sha256()
            h.update(b"trike-graph-v2\n")
            h.update(_canon(self._onto_raw).encode())
            h.update(b"\n")
            emit_key, emit = yamlfile.emit_key, yamlfile.emit
            lines = sorted(f"{emit_key(n)}: {emit(_sorted_map(p))}" for n, p in g.nodes.items())
            h.update("\n".join(lines).encode())
            h.update(b"\n--\n")
            line = yamlfile.triple_line
            lines = sorted(line(s, p, o, _sorted_map(a) if a else None) for (s, p, o), a in g.facts.items())
            h.update("".join(lines).encode())
            digest = "sha256:" + h.hexdigest()
            self._cache["hash"] = (self.revision, digest)
            return digest

    # =================================================================== projections
    def _projection(self):
        self._sync()
        if self._proj is None:
            from .rdf import Projection

            self._proj = Projection(self._graph.facts, self._graph.nodes, self._onto.is_literal_predicate)
        return self._proj

    def sparql(self, text: str, *, allow_service: bool = False) -> Any:
        """Run a SPARQL 1.1 query with Oxigraph. SELECT -> list of dicts (typed values; trike names
        for trike IRIs), ASK -> bool, CONSTRUCT/DESCRIBE -> list of {s, p, o}. Prefix `t:` is predeclared.
        Federated `SERVICE` clauses (which fetch other endpoints) are refused unless `allow_service`."""
        if not isinstance(text, str) or not text.strip():
            raise QueryError("empty SPARQL query")
        if not allow_service:
            from .sparqltext import refuse_service

            refuse_service(text)
        with self._lock:
            proj = self._projection()
        # Oxigraph queries read a snapshot: writers need not wait for a long query
        return proj.query(text)

    def sparql_raw(self, text: str, *, allow_service: bool = False) -> Any:
        """Run a SPARQL query and return pyoxigraph's own result object (QuerySolutions,
        QueryBoolean or QueryTriples), for serializers such as the SPARQL protocol endpoint."""
        from .errors import QueryError as _QE

        if not isinstance(text, str) or not text.strip():
            raise _QE("empty SPARQL query")
        if not allow_service:
            from .sparqltext import refuse_service

            refuse_service(text)
        with self._lock:
            proj = self._projection()
        from .rdf import PREFIXES

        try:
            return proj.store.query(text, prefixes=PREFIXES)
        except SyntaxError as exc:
            raise _QE(f"bad SPARQL: {exc}") from None
        except OSError as exc:
            raise _QE(f"SPARQL failed: {exc}") from None

    def update(self, text: str) -> dict:
        """Run a SPARQL UPDATE through the ontology gate: the update runs on a copy of the projection,
        the difference is mapped back to facts and node properties, and applied as one batch."""
        from .rdf import update_changes
        from .sparqltext import refuse_service

        if isinstance(text, str):
            refuse_service(text)
        with self._writing():
            proj = self._projection()
            changes = update_changes(proj, text, self._onto)
            self._batch_depth += 1
            try:
                for key in changes["remove_facts"]:
                    if key in self._graph.facts:
                        self._delete(key)
                for name, props in changes["node_props"].items():
                    self._set_node_locked(name, props)
                for (s, p, o), attrs in changes["add_facts"]:
                    if (s, p, o) in self._graph.facts:
                        self._put((s, p, o), attrs or None)
                        self._rewrite = True
                    else:
                        self._add(s, p, o, attrs or {})
            finally:
                self._batch_depth -= 1
            return {"added": len(changes["add_facts"]), "removed": len(changes["remove_facts"]),
                    "nodes_changed": len(changes["node_props"])}

    def _set_node_locked(self, name: str, props: dict, keep_empty: bool = False) -> None:
        """Replace a node's properties (the caller holds the write lock). A new `type` is checked
        against the domain/range of the node's facts first."""
        g = self._graph
        old = g.nodes.get(name)
        new = dict(props)
        if self._onto.enabled and new.get("type") != (old or {}).get("type"):
            trial = {**g.nodes, name: new}

            def type_of(n: str) -> str | None:
                t = (trial.get(n) or {}).get("type")
                return t if isinstance(t, str) else None

            for key in list(g.keys_for(name, None, None)) + list(g.keys_for(None, None, name)):
                self._onto.check_types(key[0], key[1], key[2], type_of)
        self._mutated = True
        if new or keep_empty:
            g.nodes[name] = new
        else:
            g.nodes.pop(name, None)
        if self._proj is not None:
            self._proj.set_node(name, old, new)
        self._changed()
        self._rewrite = True

    def to_oxigraph(self):
        """A pyoxigraph Store with the RDF projection (a fresh copy; yours to change)."""
        import pyoxigraph as ox

        from .rdf import load_store

        with self._lock:
            g = self._read()
            store = ox.Store()
            load_store(store, g.facts, g.nodes, self._onto.is_literal_predicate)
            return store

    def to_rdflib(self):
        """An rdflib Graph with the RDF projection (needs the `rdf` extra)."""
        import rdflib

        from .rdf import PREFIXES

        g = rdflib.Graph()
        for prefix, ns in PREFIXES.items():
            g.bind(prefix, rdflib.Namespace(ns), override=True)
        g.parse(data=self.export("nt"), format="nt")
        return g

    def to_networkx(self):
        """A networkx MultiDiGraph: nodes with their properties, one edge per fact (key = predicate,
        edge attributes = fact attributes). Literal-valued facts become edges to literal nodes."""
        import networkx as nx

        with self._lock:
            g = self._read()
            G = nx.MultiDiGraph()
            for name in g.node_names():
                G.add_node(name, **(g.nodes.get(name) or {}))
            for (s, p, o), a in g.facts.items():
                if not isinstance(o, str) or self._onto.is_literal_predicate(p):
                    lit = f"{o!r}" if not isinstance(o, str) else o
                    if lit not in G:
                        G.add_node(lit, literal=True, value=o)
                    G.add_edge(s, lit, key=p, predicate=p, **(a or {}))
                else:
                    G.add_edge(s, o, key=p, predicate=p, **(a or {}))
            return G

    def export(self, format: str = "ttl") -> str:
        """The RDF projection as Turtle (`ttl`), N-Triples (`nt`) or JSON-LD (`jsonld`); `yaml` gives the
        graph itself in canonical trike YAML."""
        import pyoxigraph as ox

        from .rdf import PREFIXES, graph_ntriples

        fmt = format.lower().lstrip(".")
        with self._lock:
            g = self._read()
            if fmt in ("yaml", "yml"):
                return yamlfile.dump(self._data())  # the graph itself, in canonical form
            nt = graph_ntriples(g.facts, g.nodes, self._onto.is_literal_predicate)
        if fmt in ("nt", "ntriples", "n-triples"):
            return nt
        formats = {"ttl": ox.RdfFormat.TURTLE, "turtle": ox.RdfFormat.TURTLE,
                   "jsonld": ox.RdfFormat.JSON_LD, "json-ld": ox.RdfFormat.JSON_LD}
        if fmt not in formats:
            raise TrikeError(f"unknown export format {format!r}: use ttl, nt, jsonld or yaml")
        store = ox.Store()
        if nt:
            store.bulk_load(nt.encode("utf-8"), ox.RdfFormat.N_TRIPLES)
        kw: dict[str, Any] = {"from_graph": ox.DefaultGraph()}
        if fmt in ("ttl", "turtle"):
            kw["prefixes"] = PREFIXES
        try:
            data = store.dump(format=formats[fmt], **kw)
        except (TypeError, ValueError):
            kw.pop("prefixes", None)
            data = store.dump(format=formats[fmt], **kw)
        return data.decode("utf-8")

    # =================================================================== later capabilities
    def search(self, query: str, k: int = 10, *, as_of: Any = None, model: str | None = None) -> dict:
        """Find facts and nodes by meaning and words (see docs/search.md)."""
        from .search import search

        return search(self, query, k=k, as_of=as_of, model=model)

    def find(self, question: str, where: dict | Callable | None = None, k: int = 10, *,
             as_of: Any = None, model: str | None = None) -> dict:
        """Search, then keep nodes whose properties equal `where` (see docs/search.md)."""
        from .search import find

        return find(self, question, where=where, k=k, as_of=as_of, model=model)

    def declare(self, predicate: str, *properties: str) -> dict:
        """Declare rule properties of a predicate or class (see docs/rules.md)."""
        from .reasoning import declare

        return declare(self, predicate, *properties)

    def infer(self, apply: bool = False) -> list[dict]:
        """The facts that OWL 2 RL rules add; `apply=True` writes them with `inferred: true`."""
        from .reasoning import infer

        return infer(self, apply=apply)

    def validate(self, shapes: Any = None) -> list[dict]:
        """SHACL validation; one entry per violation (see docs/rules.md)."""
        from .validation import validate

        return validate(self, shapes)

    def history(self, subject: str, predicate: str | None = None) -> list[dict]:
        """The values of a subject's facts in time order with validity and sources."""
        from .temporal import history

        return history(self, subject, predicate)

    def import_source(self, path: str | os.PathLike, mapping: Any = None, dry_run: bool = False) -> dict:
        """Import CSV/TSV, YAML/JSON graphs, records with a mapping, or a Markdown folder."""
        from .importers import import_source

        return import_source(self, path, mapping=mapping, dry_run=dry_run)

    def ask(self, question: str, budget_tokens: int = 2000) -> dict:
        """An answer (fast path) or a connected evidence set cut to a token budget."""
        from .ask import ask

        return ask(self, question, budget_tokens=budget_tokens)

    def to_html(self, path: str | os.PathLike) -> Path:
        """Write the graph as one self-contained HTML page."""
        from .ui import to_html

        return to_html(self, path)

    # =================================================================== misc
    def __repr__(self) -> str:
        return f"TrikeDB({str(self.path)!r}, facts={len(self._graph.facts)})"

    def __len__(self) -> int:
        with self._lock:
            return len(self._read().facts)


def _typed(v: Any) -> Any:
    if isinstance(v, _dt.datetime):
        return {"$datetime": v.isoformat()}
    if isinstance(v, _dt.date):
        return {"$date": v.isoformat()}
    if isinstance(v, dict):
        return {str(k): _typed(x) for k, x in sorted(v.items(), key=lambda kv: str(kv[0]))}
    if isinstance(v, (list, tuple)):
        return [_typed(x) for x in v]
    if isinstance(v, float):
        return {"$float": repr(v)}
    return v


def _sorted_map(d: dict) -> dict:
    if len(d) < 2:
        return d
    return {k: d[k] for k in sorted(d, key=str)}


def _canon(v: Any) -> str:
    return json.dumps(_typed(v), ensure_ascii=False, sort_keys=True, separators=(",", ":"))


__all__ = ["TrikeDB", "OntologyError"]
