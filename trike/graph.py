"""The in-memory graph: ordered facts, node properties, and lazily built indexes.

Facts are kept in one insertion-ordered dict `{(s, p, o): attrs-or-None}` (the order of the file).
Indexes by subject, predicate and object are built on first use and then kept up to date in place.
"""

from __future__ import annotations

import datetime as _dt
import fnmatch
import re
import shlex
from collections.abc import Iterable, Iterator
from typing import Any

from .errors import QueryError
from .values import resolve_plain, to_date

Key = tuple[str, str, Any]

ALL_TIME = "all"


def fact_dict(key: Key, attrs: dict | None) -> dict:
    d = {"s": key[0], "p": key[1], "o": key[2]}
    if attrs:
        d.update(attrs)
    return d


def _is_glob(text: Any) -> bool:
    return isinstance(text, str) and any(c in text for c in "*?[")


def valid_at(attrs: dict | None, day: _dt.date | None) -> bool:
    """Is a fact with these attributes valid on `day`? (valid_from <= day < valid_to; open bounds)."""
    if day is None or not attrs:
        return True
    vf = attrs.get("valid_from")
    vt = attrs.get("valid_to")
    if vf is None and vt is None:
        return True
    f = to_date(vf)
    t = to_date(vt)
    if f is not None and day < f:
        return False
    if t is not None and day >= t:
        return False
    return True


def resolve_as_of(as_of: Any) -> _dt.date | None:
    """None -> today; 'all' -> no time filter (None); a date or 'YYYY-MM-DD' -> that day."""
    if as_of is None:
        return _dt.date.today()
    if isinstance(as_of, str) and as_of.lower() in (ALL_TIME, "any", "*"):
        return None
    day = to_date(as_of)
    if day is None:
        raise QueryError(f"as_of must be a date like 2024-09-01 or 'all', got {as_of!r}")
    return day


class Graph:
    def __init__(self) -> None:
        self.facts: dict[Key, dict | None] = {}
        self.nodes: dict[str, dict] = {}
        self._by_s: dict[str, dict[Key, None]] | None = None
        self._by_p: dict[str, dict[Key, None]] | None = None
        self._by_o: dict[Any, dict[Key, None]] | None = None
        self._timed = 0  # how many facts carry valid_from/valid_to (0: skip time filtering)

    # ------------------------------------------------------------------ indexes
    def _index(self, pos: int) -> dict:
        attr = ("_by_s", "_by_p", "_by_o")[pos]
        idx = getattr(self, attr)
        if idx is None:
            idx = {}
            for key in self.facts:
                v = key[pos]
                bucket = idx.get(v)
                if bucket is None:
                    idx[v] = {key: None}
                else:
                    bucket[key] = None
            setattr(self, attr, idx)
        return idx

    def _index_add(self, key: Key) -> None:
        for pos, idx in enumerate((self._by_s, self._by_p, self._by_o)):
            if idx is not None:
                v = key[pos]
                bucket = idx.get(v)
                if bucket is None:
                    idx[v] = {key: None}
                else:
                    bucket[key] = None

    def _index_remove(self, key: Key) -> None:
        for pos, idx in enumerate((self._by_s, self._by_p, self._by_o)):
            if idx is not None:
                bucket = idx.get(key[pos])
                if bucket is not None:
                    bucket.pop(key, None)
                    if not bucket:
                        del idx[key[pos]]

    # ------------------------------------------------------------------ changes
    def put(self, key: Key, attrs: dict | None) -> None:
        """Insert or replace a fact."""
        old = self.facts.get(key, False)
        if old is False:
            self._index_add(key)
        elif _timed(old):
            self._timed -= 1
        self.facts[key] = attrs or None
        if _timed(attrs):
            self._timed += 1

    def delete(self, key: Key) -> None:
        attrs = self.facts.pop(key)
        if _timed(attrs):
            self._timed -= 1
        self._index_remove(key)

    def load(self, facts: Iterable[tuple[str, str, Any, dict | None]], nodes: dict[str, dict]) -> None:
        self.facts = {}
        self._by_s = self._by_p = self._by_o = None
        self._timed = 0
        store = self.facts
        for s, p, o, attrs in facts:
            key = (s, p, o)
            if key in store:
                prev = store[key]
                if attrs:
                    merged = dict(prev or {})
                    merged.update(attrs)
                    attrs = merged
                else:
                    attrs = prev
            store[key] = attrs
        self._timed = sum(1 for a in store.values() if _timed(a))
        self.nodes = nodes

    # ------------------------------------------------------------------ reads
    def keys_for(self, s: Any = None, p: Any = None, o: Any = None) -> Iterable[Key]:
        """Fact keys matching exact s/p/o (None = any); uses the smallest index."""
        candidates: list[dict] = []
        if s is not None:
            candidates.append(self._index(0).get(s, {}))
        if o is not None:
            candidates.append(self._index(2).get(o, {}))
        if p is not None and (not candidates or self._by_p is not None):
            candidates.append(self._index(1).get(p, {}))
        if not candidates:
            return self.facts.keys()
        base = min(candidates, key=len)
        return [k for k in base if (s is None or k[0] == s) and (p is None or k[1] == p)
                and (o is None or k[2] == o)]

    def match(self, s: Any = None, p: Any = None, o: Any = None, attrs: dict | None = None,
              day: _dt.date | None = None) -> Iterator[tuple[Key, dict | None]]:
        # a pattern that is also an existing name is taken literally (names may contain * ? [)
        s = _Literal(s) if _is_glob(s) and s in self._index(0) else s
        p = _Literal(p) if _is_glob(p) and p in self._index(1) else p
        o = _Literal(o) if _is_glob(o) and o in self._index(2) else o
        exact = [x.value if isinstance(x, _Literal) else (None if (x is None or _is_glob(x)) else x)
                 for x in (s, p, o)]
        globs = [_glob(x) if (not isinstance(x, _Literal) and _is_glob(x)) else None for x in (s, p, o)]
        if globs[1] is not None and exact[0] is None and exact[2] is None:
            # a predicate glob: look up the matching predicates first
            preds = [q for q in self._index(1) if globs[1](q)]
            keys: Iterable[Key] = (k for q in preds for k in self._index(1)[q])
        else:
            keys = self.keys_for(*exact)
        check_time = day is not None and self._timed > 0
        facts = self.facts
        for key in keys:
            if globs[0] is not None and not globs[0](key[0]):
                continue
            if globs[1] is not None and not globs[1](key[1]):
                continue
            if globs[2] is not None and not (isinstance(key[2], str) and globs[2](key[2])):
                continue
            a = facts[key]
            if attrs and not _attrs_match(a, attrs):
                continue
            if check_time and not valid_at(a, day):
                continue
            yield key, a

    def node_names(self, literal_predicate: Any = None) -> dict[str, None]:
        """Every node: listed in `nodes:` or used as a subject or (name) object. `literal_predicate(p)`
        says which predicates take a literal (their string objects are values, not nodes)."""
        names: dict[str, None] = dict.fromkeys(self.nodes)
        lit: dict[str, bool] = {}
        for s, p, o in self.facts:
            names[s] = None
            if isinstance(o, str):
                if literal_predicate is not None:
                    is_lit = lit.get(p)
                    if is_lit is None:
                        is_lit = lit[p] = bool(literal_predicate(p))
                    if is_lit:
                        continue
                names[o] = None
        return names

    def has_node(self, name: str) -> bool:
        return name in self.nodes or bool(self._index(0).get(name)) or bool(self._index(2).get(name))

    # ------------------------------------------------------------------ conjunctive queries
    def query(self, patterns: list[str] | str, day: _dt.date | None = None,
              limit: int | None = None) -> list[dict]:
        parsed = [parse_pattern(p) for p in ([patterns] if isinstance(patterns, str) else patterns)]
        if not parsed:
            raise QueryError("query needs at least one pattern like '?job INGESTS_TO ?table'")
        results: list[dict] = []
        order = _plan(parsed)
        self._solve(order, 0, {}, results, day, limit)
        return results

    def _solve(self, pats: list, i: int, binding: dict, out: list, day, limit) -> bool:
        if i == len(pats):
            out.append(dict(binding))
            return limit is not None and len(out) >= limit
        terms = pats[i]
        bound: list[Any] = []
        for t in terms:
            if isinstance(t, _Var):
                bound.append(binding.get(t.name, _UNBOUND))
            else:
                bound.append(t)
        s = bound[0] if bound[0] is not _UNBOUND else None
        p = bound[1] if bound[1] is not _UNBOUND else None
        o_val = bound[2]
        o_options: list[Any]
        if o_val is _UNBOUND:
            o_options = [None]
        elif isinstance(o_val, _Const):
            o_options = o_val.options
        else:
            o_options = [o_val]
        s = s.options[0] if isinstance(s, _Const) else s
        p = p.options[0] if isinstance(p, _Const) else p
        check_time = day is not None and self._timed > 0
        for o in o_options:
            for key in self.keys_for(s, p, o):
                if check_time and not valid_at(self.facts[key], day):
                    continue
                new = binding
                ok = True
                added: list[str] = []
                for t, v in zip(terms, key, strict=True):
                    if isinstance(t, _Var):
                        cur = new.get(t.name, _UNBOUND)
                        if cur is _UNBOUND:
                            new[t.name] = v
                            added.append(t.name)
                        elif cur != v or type(cur) is not type(v):
                            ok = False
                            break
                if ok and self._solve(pats, i + 1, new, out, day, limit):
                    return True
                for name in added:
                    del new[name]
        return False


class _Literal:
    """A name that looks like a glob pattern but is meant exactly."""

    __slots__ = ("value",)

    def __init__(self, value: str):
        self.value = value


class _Var:
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name


class _Const:
    __slots__ = ("options",)

    def __init__(self, options: list[Any]):
        self.options = options


_UNBOUND = object()


def parse_pattern(pattern: str) -> list:
    """'?vendor PROVIDES ?job' -> three terms. Names with spaces go in quotes."""
    if not isinstance(pattern, str):
        raise QueryError(f"a pattern must be a string like '?a PREDICATE ?b', got {pattern!r}")
    try:
        parts = shlex.split(pattern, posix=True)
    except ValueError as exc:
        raise QueryError(f"bad pattern {pattern!r}: {exc}") from None
    if len(parts) != 3:
        raise QueryError(
            f"bad pattern {pattern!r}: a pattern has exactly three parts, subject predicate object "
            "(variables start with ?; quote names that contain spaces)"
        )
    raw_quoted = _quoted_parts(pattern)
    terms: list = []
    for pos, part in enumerate(parts):
        if part.startswith("?") and len(part) > 1 and not raw_quoted[pos]:
            name = part[1:]
            if not re.fullmatch(r"\w+", name):
                raise QueryError(f"bad variable {part!r} in {pattern!r}: use letters, digits and _")
            terms.append(_Var(name))
        elif pos == 2 and not raw_quoted[pos]:
            value = resolve_plain(part)
            opts = [part] if value == part and type(value) is str else [value, part]
            terms.append(_Const(opts))
        else:
            terms.append(_Const([part]))
    return terms


def _quoted_parts(pattern: str) -> list[bool]:
    lex = shlex.shlex(pattern, posix=False)
    lex.whitespace_split = True
    out = [tok[:1] in "'\"" for tok in lex]
    return out + [False] * (3 - len(out))


def _plan(parsed: list[list]) -> list[list]:
    """Order patterns: most constants first, then those sharing variables with what is bound."""
    remaining = list(parsed)
    order: list[list] = []
    bound: set[str] = set()
    while remaining:
        def score(terms: list) -> tuple:
            consts = sum(1 for t in terms if isinstance(t, _Const))
            joined = sum(1 for t in terms if isinstance(t, _Var) and t.name in bound)
            return (consts + joined, consts)

        best = max(remaining, key=score)
        remaining.remove(best)
        order.append(best)
        bound.update(t.name for t in best if isinstance(t, _Var))
    return order


def _glob(pattern: str):
    rx = re.compile(fnmatch.translate(pattern))
    return lambda text: isinstance(text, str) and rx.match(text) is not None


def _attrs_match(attrs: dict | None, want: dict) -> bool:
    if not attrs:
        return False
    for k, v in want.items():
        if k not in attrs:
            return False
        have = attrs[k]
        if have == v and type(have) is type(v):
            continue
        if isinstance(have, list) and v in have:
            continue
        if isinstance(v, str) and not isinstance(have, str) and str(have) == v:
            continue
        if _is_glob(v) and isinstance(have, str) and fnmatch.fnmatchcase(have, v):
            continue
        return False
    return True


def _timed(attrs: Any) -> bool:
    return bool(attrs) and ("valid_from" in attrs or "valid_to" in attrs)
