"""An import plan: the node and fact writes an importer wants, each with a verdict computed by simulating
the ontology gate over the graph as it would be after the earlier writes of the same import.

Verdicts of a fact:

- `new`: the fact is not in the graph; it is added.
- `same`: the fact is already there; nothing changes, or only a source is added to its `prov` (the
  confidence of the sources is then combined by noisy-or).
- `update`: the fact is there with other attributes that change, or it is a new value of a functional
  predicate that closes the current value (`closes` lists the facts whose `valid_to` is set).
- `rejected`: the ontology gate refuses it (`reason` says why) or the value cannot be stored.
- `conflict`: a second value of a functional predicate at the same time, or a value that returns to one
  the subject had before (one fact holds one validity window).

The simulation calls the gate's own checks (`Ontology.check_predicate`, `check_types`,
`functional_plan`), and the attributes it sends to `TrikeDB.add` are chosen so that the real write does
exactly what was simulated (see `Plan.fact`).
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConflictError, OntologyError, TrikeError
from ..values import emit, to_date

_MISSING = object()
VERDICTS = ("new", "same", "update", "rejected", "conflict")
PROBLEMS = ("rejected", "conflict")


class ImportRefused(TrikeError):
    """A real import found facts the gate refuses; nothing was written. `report` has every verdict."""

    def __init__(self, message: str, report: dict):
        super().__init__(message)
        self.report = report


@dataclass
class Op:
    kind: str  # "node" | "fact"
    name: str = ""
    props: dict = field(default_factory=dict)
    s: str = ""
    p: str = ""
    o: Any = None
    attrs: dict = field(default_factory=dict)
    verdict: str = "new"


def _norm_prov(value: Any) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _merge_like_add(prev: dict | None, attrs: dict) -> dict | None:
    """The attributes `TrikeDB._add` stores when `attrs` is added to an existing fact with `prev`."""
    from ..db import _merge_prov, _noisy_or

    merged = dict(prev or {})
    for k, v in attrs.items():
        if k == "prov" and "prov" in merged and merged["prov"] != v:
            merged["prov"] = _merge_prov(merged["prov"], v)
            if "confidence" in attrs and "confidence" in merged:
                combined = _noisy_or(merged["confidence"], attrs["confidence"])
                if combined is not None:
                    merged["confidence"] = combined
                    attrs = {a: b for a, b in attrs.items() if a != "confidence"}
        elif k == "confidence" and "prov" in attrs and merged.get("prov") not in (None, attrs["prov"]):
            continue
        else:
            merged[k] = v
    return merged or None


def _short_reason(exc: BaseException) -> str:
    text = str(exc)
    return text.split(" Allowed predicates:")[0]


def _fact_view(key: tuple, attrs: dict | None) -> dict:
    d = {"s": key[0], "p": key[1], "o": key[2]}
    if attrs:
        d.update(attrs)
    return d


class Plan:
    """Collects writes, simulating the gate as it goes. `entries` are the verdicts, `ops` the writes."""

    def __init__(self, db: Any, source: str, kind: str):
        self.db = db
        self.onto = db._onto  # the gate's own checks are reused, not re-implemented
        self.source = source
        self.kind = kind
        self.ops: list[Op] = []
        self.facts: list[dict] = []
        self.nodes: list[dict] = []
        self.warnings: list[str] = []
        self.info: dict[str, Any] = {}
        self._sp: dict[tuple[str, str], dict[tuple, dict | None]] = {}
        self._node_props: dict[str, dict] = {}
        self._db_nodes: dict[str, dict] | None = None
        self._touching: dict[str, list[tuple]] = {}  # node -> planned fact keys that mention it

    # ------------------------------------------------------------------ state of the graph-to-be
    def _all_db_nodes(self) -> dict[str, dict]:
        if self._db_nodes is None:
            self._db_nodes = self.db.nodes()
        return self._db_nodes

    def props_of(self, name: str) -> dict | None:
        if name in self._node_props:
            return self._node_props[name]
        return self._all_db_nodes().get(name)

    def type_of(self, name: str) -> str | None:
        props = self.props_of(name) if isinstance(name, str) else None
        t = (props or {}).get("type")
        return t if isinstance(t, str) else None

    def _facts_sp(self, s: str, p: str) -> dict[tuple, dict | None]:
        got = self._sp.get((s, p))
        if got is None:
            if any(c in s + p for c in "*?["):
                rows = [f for f in self.db.match(None, None, None, as_of="all") if f["s"] == s and f["p"] == p]
            else:
                rows = self.db.match(s, p, as_of="all")
            got = {}
            for f in rows:
                attrs = {k: v for k, v in f.items() if k not in ("s", "p", "o")}
                got[(f["s"], f["p"], f["o"])] = attrs or None
            self._sp[(s, p)] = got
        return got

    # ------------------------------------------------------------------ nodes
    def node(self, name: str, props: dict, *, where: str | None = None, only_missing: tuple = ()) -> str:
        """Plan `set_node(name, **props)`. Keys in `only_missing` are set only when the node has no value
        for them yet (an importer does not retype a node that someone typed already)."""
        entry: dict[str, Any] = {"name": name}
        if where:
            entry["where"] = where
        try:
            if not isinstance(name, str) or not name:
                raise TrikeError(f"node name must be a non-empty string, got {name!r}")
            old = dict(self.props_of(name) or {})
            clean = {}
            for k, v in props.items():
                if k in only_missing and old.get(k) not in (None, ""):
                    continue
                if v is not None:
                    emit(v)
                clean[str(k)] = v
            new = dict(old)
            for k, v in clean.items():
                if v is None:
                    new.pop(k, None)
                else:
                    new[k] = v
            if new.get("type") != old.get("type") and self.onto.enabled:
                self._check_retype(name, new)
        except (TrikeError, TypeError) as exc:
            entry.update(verdict="rejected", reason=_short_reason(exc))
            self.nodes.append(entry)
            return "rejected"
        exists = name in self._node_props or name in self._all_db_nodes()
        if new == old and exists:
            verdict = "same"
        elif not old:
            verdict = "new"
        else:
            verdict = "update"
            entry["changed"] = sorted(k for k in set(new) | set(old) if new.get(k) != old.get(k))
        entry["verdict"] = verdict
        self.nodes.append(entry)
        self._node_props[name] = new
        if verdict != "same":
            self.ops.append(Op("node", name=name, props=clean, verdict=verdict))
        return verdict

    def _check_retype(self, name: str, new: dict) -> None:
        keys = {}
        for f in self.db.match(name, None, None, as_of="all"):
            keys[(f["s"], f["p"], f["o"])] = None
        for f in self.db.match(None, None, name, as_of="all"):
            keys[(f["s"], f["p"], f["o"])] = None
        for key in self._touching.get(name, ()):
            keys[key] = None

        def type_of(n: str) -> str | None:
            if n == name:
                t = new.get("type")
                return t if isinstance(t, str) else None
            return self.type_of(n)

        for s, p, o in keys:
            self.onto.check_types(s, p, o, type_of)

    # ------------------------------------------------------------------ facts
    def fact(self, s: Any, p: Any, o: Any, attrs: dict | None = None, *, where: str | None = None,
             keep_earliest: bool = False) -> str:
        """Plan `add(s, p, o, **attrs)` and return its verdict.

        keep_earliest: the fact is a statement made on `valid_from` (a report's date). When the fact is
        already known, the statement corroborates it: its source is added, and its `valid_from` moves
        only earlier, never later. A statement of a value the subject had before but that was closed
        since (`valid_to` <= its date) is a conflict: one fact holds one validity window."""
        attrs = {k: v for k, v in (attrs or {}).items() if v is not None}
        entry: dict[str, Any] = {"s": s, "p": p, "o": o}
        if attrs:
            entry["attrs"] = dict(attrs)
        if where:
            entry["where"] = where
        try:
            for what, v in (("s", s), ("p", p)):
                if not isinstance(v, str) or not v:
                    raise TrikeError(f"{what} must be a non-empty name, got {v!r}")
            if o is None or o == "" or isinstance(o, (dict, list, tuple)):
                raise TrikeError(f"o must be a node name or a scalar value, got {o!r}")
            emit(o)
            for k, v in attrs.items():
                if k in ("s", "p", "o"):
                    raise TrikeError(f"attribute name {k!r} is reserved")
                emit(v)
            self.onto.check_predicate(p)
            self.onto.check_types(s, p, o, self.type_of)
        except (OntologyError, TrikeError, TypeError) as exc:
            entry.update(verdict="rejected", reason=_short_reason(exc))
            self.facts.append(entry)
            return "rejected"

        key = (s, p, o)
        sp = self._facts_sp(s, p)
        prev = sp.get(key, _MISSING)
        send = dict(attrs)
        if prev is not _MISSING:
            pa = prev or {}
            old_from, old_to = to_date(pa.get("valid_from")), to_date(pa.get("valid_to"))
            new_from = to_date(send.get("valid_from"))
            if keep_earliest:
                if old_to is not None and new_from is not None and new_from >= old_to:
                    entry.update(verdict="conflict", reason=(
                        f"{s} {p} {o!r} was valid until {old_to.isoformat()}; a statement of it on "
                        f"{new_from.isoformat()} would need a second validity window (one fact holds one). "
                        f"Current value: {self._current_text(sp, key)}"))
                    self.facts.append(entry)
                    return "conflict"
                if "valid_from" in send and (old_from is None and "valid_from" not in pa
                                             or old_from is not None and new_from is not None
                                             and new_from >= old_from):
                    send.pop("valid_from")  # a later statement does not move the start
                if "valid_to" not in send and old_to is not None and "valid_from" in send:
                    send["valid_to"] = pa["valid_to"]
            if "prov" in send and "prov" in pa and send["prov"] in _norm_prov(pa["prov"]):
                # this source is already listed: adding it again must not combine its confidence again
                send.pop("prov")
                send.pop("confidence", None)
            if self.onto.is_functional(p) and "valid_from" not in send and "valid_to" not in send:
                # restating a value: give the gate the fact's own window so it does not look open-ended
                if "valid_from" in pa:
                    send["valid_from"] = pa["valid_from"]
                if "valid_to" in pa:
                    send["valid_to"] = pa["valid_to"]
        closes: list = []
        if self.onto.is_functional(p):
            try:
                closes = self.onto.functional_plan(s, p, o, send, list(sp.items()))
            except ConflictError as exc:
                entry.update(verdict="conflict", reason=_short_reason(exc))
                self.facts.append(entry)
                return "conflict"
        if prev is _MISSING:
            merged = send or None
            verdict = "update" if closes else "new"
        else:
            merged = _merge_like_add(prev, send)
            if merged == prev or (not merged and not prev):
                verdict = "same"
            else:
                changed = {k for k in set(merged or {}) | set(prev or {})
                           if (merged or {}).get(k) != (prev or {}).get(k)}
                if changed <= {"prov", "confidence"}:
                    verdict = "same"
                    entry["adds_source"] = True
                else:
                    verdict = "update"
                    entry["changed"] = sorted(changed)
            if closes:
                verdict = "update"
        if closes:
            entry["closes"] = [_fact_view(k, {**(sp[k] or {}), "valid_to": day}) for k, day in closes]
            for ckey, day in closes:
                sp[ckey] = {**(sp[ckey] or {}), "valid_to": day}
        sp[key] = merged
        for n in (s, o):
            if isinstance(n, str):
                self._touching.setdefault(n, []).append(key)
        entry["verdict"] = verdict
        self.facts.append(entry)
        if merged != prev or closes:
            self.ops.append(Op("fact", s=s, p=p, o=o, attrs=send, verdict=verdict))
        return verdict

    def _current_text(self, sp: dict, key: tuple) -> str:
        today = _dt.date.today()
        from ..graph import valid_at

        cur = [k[2] for k, a in sp.items() if k != key and valid_at(a, today)]
        return ", ".join(repr(c) for c in cur) or "none"

    # ------------------------------------------------------------------ results
    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(VERDICTS, 0)
        for e in self.facts:
            out[e["verdict"]] += 1
        return out

    def node_counts(self) -> dict[str, int]:
        out = {"new": 0, "same": 0, "update": 0, "rejected": 0}
        for e in self.nodes:
            out[e["verdict"]] += 1
        return out

    def problems(self) -> list[dict]:
        return [e for e in self.facts + self.nodes if e["verdict"] in PROBLEMS]

    def report(self, *, dry_run: bool, written: bool, **extra: Any) -> dict:
        counts = self.counts()
        return {
            "source": self.source,
            "kind": self.kind,
            "dry_run": dry_run,
            "written": written,
            "counts": counts,
            "node_counts": self.node_counts(),
            "ok": not self.problems(),
            **self.info,
            **extra,
            "warnings": list(self.warnings),
            "facts": self.facts,
            "nodes": self.nodes,
        }

    def apply(self) -> None:
        """Write the planned ops (call inside `db.batch()`)."""
        db = self.db
        for op in self.ops:
            if op.kind == "node":
                db.set_node(op.name, **op.props)
            else:
                db.add(op.s, op.p, op.o, **op.attrs)
