"""Time: validity windows of facts and the history of a subject's values.

A fact may carry `valid_from` and `valid_to` (dates). It is valid on day D when
`valid_from <= D < valid_to`; a missing bound is open, so a fact without either is valid always.
For a `functional` predicate the core closes the current value (sets its `valid_to`) when a newer value
with a later `valid_from` is added, so the graph keeps every value a subject ever had; `history` lists
them in time order with their sources.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from .graph import valid_at
from .values import to_date

__all__ = ["history", "window_text", "overlaps"]

_KEYS = ("s", "p", "o", "valid_from", "valid_to", "prov", "confidence")


def _bound(value: Any) -> Any:
    """A validity bound as a date when it reads as one (the file may hold strings like '2024-09')."""
    day = to_date(value)
    return day if day is not None else value


def history(db: Any, subject: str, predicate: str | None = None) -> list[dict]:
    """Every value of `subject`'s facts (only `predicate` when given), valid or not, oldest first.

    Each entry is `{"s", "p", "o", "valid_from", "valid_to", "prov", "confidence", "current"}` (missing
    attributes are None; other attributes of the fact follow). Sorted by `valid_from` (facts without one
    first, as they are valid from the beginning), then by `valid_to`, then in the file's order.
    `current` is true when the fact is valid today. An unknown subject raises `NotFoundError`.
    """
    facts = db.match(subject, predicate, as_of="all") if not _has_glob(subject, predicate) else [
        f for f in db.match(None, None, None, as_of="all")
        if f["s"] == subject and (predicate is None or f["p"] == predicate)
    ]
    if not facts:
        db.get_node(subject, limit=1)  # NotFoundError with close names when the subject is unknown
        return []
    today = _dt.date.today()
    rows: list[tuple[tuple, int, dict]] = []
    for i, f in enumerate(facts):
        attrs = {k: v for k, v in f.items() if k not in ("s", "p", "o")}
        row = {k: f.get(k) for k in _KEYS}
        row["valid_from"] = _bound(row["valid_from"])
        row["valid_to"] = _bound(row["valid_to"])
        row["current"] = valid_at(attrs, today)
        for k, v in attrs.items():
            if k not in row:
                row[k] = v
        vf, vt = to_date(row["valid_from"]), to_date(row["valid_to"])
        key = (vf is not None, vf or _dt.date.min, vt is None, vt or _dt.date.max)
        rows.append((key, i, row))
    rows.sort(key=lambda r: (r[0], r[1]))
    return [r[2] for r in rows]


def _has_glob(*names: Any) -> bool:
    return any(isinstance(n, str) and any(c in n for c in "*?[") for n in names)


def overlaps(attrs: dict | None, start: _dt.date | None, end: _dt.date | None) -> bool:
    """Is a fact with these attributes valid at some day of [start, end)? (None bounds are open.)"""
    if not attrs:
        return True
    f = to_date(attrs.get("valid_from"))
    t = to_date(attrs.get("valid_to"))
    if f is not None and end is not None and f >= end:
        return False
    if t is not None and start is not None and t <= start:
        return False
    return True


def window_text(valid_from: Any, valid_to: Any) -> str:
    """'2024-01-12..2024-09-02', 'from 2024-09-02', 'until 2024-09-02' or '' (always valid)."""
    f = to_date(valid_from)
    t = to_date(valid_to)
    if f and t:
        return f"{f.isoformat()}..{t.isoformat()}"
    if f:
        return f"from {f.isoformat()}"
    if t:
        return f"until {t.isoformat()}"
    return ""
