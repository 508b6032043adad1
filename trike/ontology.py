"""The ontology gate: which predicates exist, which way they point, and which take one value.

```yaml
ontology:
  predicates:
    PROVIDES: "SaaS vendor -> ingestion job"              # a description only
    INGESTS_TO: {description: "job -> table", domain: job, range: table}
    OWNED_BY: {description: "asset -> team", functional: true}
    baud_rate: {range: integer, functional: true}          # a literal-valued predicate
  classes:
    Slack契約: {subclass_of: SaaS契約}
```

The gate is on when the ontology has a `predicates:` mapping. Domain and range are checked against the
node `type` (or any of its superclasses); a node without a type is not refused. A range that names a
datatype (string, integer, number, float, boolean, date, datetime, literal) takes a literal object.
"""

from __future__ import annotations

import datetime as _dt
import difflib
from collections.abc import Callable
from typing import Any

from .errors import ConflictError, OntologyError
from .values import to_date

DATATYPES: dict[str, tuple[type, ...]] = {
    "literal": (str, int, float, bool, _dt.date),
    "string": (str,),
    "str": (str,),
    "integer": (int,),
    "int": (int,),
    "number": (int, float),
    "float": (int, float),
    "decimal": (int, float),
    "double": (int, float),
    "boolean": (bool,),
    "bool": (bool,),
    "date": (_dt.date,),
    "datetime": (_dt.datetime,),
}


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return [str(value)]


def is_datatype(name: str) -> bool:
    n = name.lower()
    return n in DATATYPES or n.startswith("xsd:")


class Ontology:
    def __init__(self, raw: dict | None = None):
        self.raw = raw
        self.enabled = bool(raw) and isinstance(raw.get("predicates"), dict)
        self.predicates: dict[str, dict] = {}
        preds = (raw or {}).get("predicates") or {}
        if isinstance(preds, dict):
            for name, spec in preds.items():
                self.predicates[str(name)] = normalize_predicate(spec)
        classes = (raw or {}).get("classes") or {}
        self.classes: dict[str, dict] = {
            str(k): (v if isinstance(v, dict) else {"description": v} if v else {}) for k, v in classes.items()
        } if isinstance(classes, dict) else {}
        self._supers: dict[str, set[str]] = {}

    # ---------------------------------------------------------------- vocabulary
    def superclasses(self, cls: str) -> set[str]:
        """`cls` and every class it is (transitively) a subclass of."""
        try:
            return self._supers[cls]
        except KeyError:
            pass
        seen = {cls}
        todo = [cls]
        while todo:
            c = todo.pop()
            for sup in _as_list(self.classes.get(c, {}).get("subclass_of")):
                if sup not in seen:
                    seen.add(sup)
                    todo.append(sup)
        self._supers[cls] = seen
        return seen

    def is_literal_predicate(self, p: str) -> bool:
        spec = self.predicates.get(p)
        if not spec:
            return False
        ranges = _as_list(spec.get("range"))
        return bool(ranges) and all(is_datatype(r) for r in ranges)

    def allowed(self) -> list[str]:
        return list(self.predicates)

    def describe(self) -> dict:
        """The vocabulary for people and models: predicates with description/domain/range/flags."""
        return {
            "enforced": self.enabled,
            "predicates": {name: dict(spec) for name, spec in self.predicates.items()},
            "classes": {name: dict(spec) for name, spec in self.classes.items()},
        }

    # ---------------------------------------------------------------- the gate
    def check_predicate(self, p: str) -> None:
        if not self.enabled or p in self.predicates:
            return
        allowed = self.allowed()
        close = difflib.get_close_matches(p, allowed, n=3, cutoff=0.6)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        listing = ", ".join(allowed) if allowed else "(none declared)"
        raise OntologyError(
            f"unknown predicate {p!r}: it is not declared in the ontology.{hint} Allowed predicates: {listing}",
            allowed=allowed,
        )

    def check_types(self, s: str, p: str, o: Any, type_of: Callable[[str], str | None]) -> None:
        """Domain and range of `p` given the node types; explains a backwards triple."""
        if not self.enabled:
            return
        spec = self.predicates.get(p) or {}
        domains = _as_list(spec.get("domain"))
        ranges = _as_list(spec.get("range"))
        if not domains and not ranges:
            return
        problem = self._type_problem(s, o, domains, ranges, type_of)
        if problem is None:
            return
        desc = spec.get("description")
        arrow = f"{'|'.join(domains) or 'any'} -> {'|'.join(ranges) or 'any'}"
        hint = ""
        if isinstance(o, str) and self._type_problem(o, s, domains, ranges, type_of) is None:
            hint = f" It looks written backwards: swap s and o ({o} {p} {s})."
        raise OntologyError(
            f"{s} {p} {o!r} refused: {problem}; {p} goes {arrow}"
            + (f" ({desc})" if desc else "") + "." + hint,
            allowed=self.allowed(),
        )

    def _type_problem(self, s: Any, o: Any, domains: list[str], ranges: list[str],
                      type_of: Callable[[str], str | None]) -> str | None:
        if domains:
            st = type_of(s) if isinstance(s, str) else None
            if st is not None and not self.superclasses(st) & set(domains):
                return f"subject {s} is a {st}, not a {' or '.join(domains)}"
        if ranges:
            data_ranges = [r for r in ranges if is_datatype(r)]
            node_ranges = [r for r in ranges if not is_datatype(r)]
            if isinstance(o, str) and node_ranges:
                ot = type_of(o)
                if ot is not None and not self.superclasses(ot) & set(node_ranges):
                    if not any(_literal_fits(o, r) for r in data_ranges):
                        return f"object {o} is a {ot}, not a {' or '.join(node_ranges)}"
            elif data_ranges:
                if not any(_literal_fits(o, r) for r in data_ranges):
                    return f"object {o!r} is a {type(o).__name__}, not a {' or '.join(data_ranges)}"
            elif node_ranges and not isinstance(o, str):
                return f"object {o!r} is a literal value, but the range is a node of type {' or '.join(node_ranges)}"
        return None

    def is_functional(self, p: str) -> bool:
        spec = self.predicates.get(p)
        return bool(spec and spec.get("functional"))

    def functional_plan(self, s: str, p: str, o: Any, attrs: dict | None,
                        existing: list[tuple[tuple, dict | None]]) -> list[tuple[tuple, _dt.date]]:
        """For a functional predicate: the existing values to close (valid_to = new valid_from), or a
        ConflictError when the new value overlaps an existing one in time."""
        if not self.is_functional(p):
            return []
        new_from = to_date((attrs or {}).get("valid_from"))
        new_to = to_date((attrs or {}).get("valid_to"))
        closes: list[tuple[tuple, _dt.date]] = []
        for key, old in existing:
            if key[2] == o:
                continue
            old_from = to_date((old or {}).get("valid_from"))
            old_to = to_date((old or {}).get("valid_to"))
            if not _overlap(old_from, old_to, new_from, new_to):
                continue
            if new_from is not None and (old_from is None or old_from < new_from):
                closes.append((key, new_from))
                continue
            when = ""
            if old_from or old_to:
                when = f" (valid {old_from or '…'}..{old_to or '…'})"
            raise ConflictError(
                f"conflict: {p} is functional and {s} already has {p} = {key[2]!r}{when}; "
                f"refusing a second value {o!r}. Remove the old fact first, or give the new one a "
                f"valid_from later than the old one's to record a change over time.",
                existing=key[2],
            )
        return closes

    def violations(self, facts: dict, type_of: Callable[[str], str | None]) -> list[str]:
        """Every fact that the gate would refuse now (hand edits included)."""
        out: list[str] = []
        if not self.enabled:
            return out
        seen_functional: dict[tuple[str, str], list[tuple[tuple, dict | None]]] = {}
        for key, attrs in facts.items():
            s, p, o = key
            if p not in self.predicates:
                self_err = None
                try:
                    self.check_predicate(p)
                except OntologyError as exc:
                    self_err = str(exc).split(" Allowed predicates:")[0]
                out.append(f"{s} {p} {o}: {self_err}")
                continue
            try:
                self.check_types(s, p, o, type_of)
            except OntologyError as exc:
                out.append(str(exc))
            if self.is_functional(p):
                seen_functional.setdefault((s, p), []).append((key, attrs))
        for (s, p), values in seen_functional.items():
            if len(values) < 2:
                continue
            for i, (k1, a1) in enumerate(values):
                for k2, a2 in values[i + 1:]:
                    if _overlap(to_date((a1 or {}).get("valid_from")), to_date((a1 or {}).get("valid_to")),
                                to_date((a2 or {}).get("valid_from")), to_date((a2 or {}).get("valid_to"))):
                        out.append(f"{s} {p}: functional predicate has two values at once: "
                                   f"{k1[2]!r} and {k2[2]!r}")
        return out


def normalize_predicate(spec: Any) -> dict:
    if spec is None:
        return {}
    if isinstance(spec, str):
        return {"description": spec}
    if isinstance(spec, dict):
        return {str(k): v for k, v in spec.items()}
    return {"description": str(spec)}


def _literal_fits(o: Any, datatype: str) -> bool:
    n = datatype.lower()
    if n.startswith("xsd:"):
        n = n[4:]
    types = DATATYPES.get(n, DATATYPES["literal"])
    if isinstance(o, bool) and bool not in types:
        return False
    if n == "date" and isinstance(o, _dt.datetime):
        return False
    return isinstance(o, types)


def _overlap(a1, b1, a2, b2) -> bool:
    """Do [a1, b1) and [a2, b2) overlap? None bounds are open."""
    if a1 is not None and b2 is not None and a1 >= b2:
        return False
    if a2 is not None and b1 is not None and a2 >= b1:
        return False
    return True
