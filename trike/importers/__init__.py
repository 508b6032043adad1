"""Importers: compile files into facts through the ontology gate, all or nothing.

`import_source(db, path, mapping=None, dry_run=False)` picks the importer from the path:

| source | importer |
|---|---|
| a folder, or a `.md` file | Markdown notes (`markdown.py`): a node per file, `LINKS_TO` per link, sections as text |
| `.csv` / `.tsv` with s, p, o columns | facts (`graphs.py`); other columns are fact attributes |
| `.csv` / `.tsv` / `.jsonl` / `.json` / `.yaml` with a records mapping | records (`records.py`) |
| `.json` / `.yaml` / `.yml` | a graph: `nodes` + `triples` (trike's own file format included) |
| `.jsonl` / `.ndjson` of `{s, p, o, ...}` | facts |

Every write is planned first with a verdict (new, same, update, rejected, conflict; see `plan.py`).
A dry run returns the plan and writes nothing. A real import writes everything in one `db.batch()`, or
nothing: when any fact is rejected or conflicts it raises `ImportRefused` (its `report` holds the
verdicts) and the graph is unchanged.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from ..errors import LoadError
from .plan import ImportRefused, Plan
from .records import MappingError, is_records_mapping, load_mapping

__all__ = ["import_source", "ImportRefused", "MappingError", "detect_kind"]

_GRAPH_SUFFIXES = (".json", ".yaml", ".yml")
_TABLE_SUFFIXES = (".csv", ".tsv", ".tab", ".txt")
_LINES_SUFFIXES = (".jsonl", ".ndjson")


def detect_kind(path: Path, mapping: dict | None) -> str:
    """Which importer reads `path`: markdown, records, triples (CSV/TSV/JSON Lines facts) or graph."""
    kind = str((mapping or {}).get("kind") or (mapping or {}).get("format") or "").lower()
    if kind:
        if kind not in ("markdown", "records", "triples", "graph"):
            raise MappingError(f"unknown kind {kind!r}: use markdown, records, triples or graph")
        return kind
    if path.is_dir() or path.suffix.lower() in (".md", ".markdown"):
        return "markdown"
    if is_records_mapping(mapping):
        return "records"
    suffix = path.suffix.lower()
    if suffix in _TABLE_SUFFIXES or suffix in _LINES_SUFFIXES:
        return "triples"
    if suffix in _GRAPH_SUFFIXES:
        return "graph"
    raise LoadError("unknown kind of source: use a folder of Markdown notes, .csv/.tsv, .jsonl, .json or "
                    ".yaml (give a --mapping for records)", str(path))


def _plan(db: Any, path: Path, mapping: dict | None) -> Plan:
    kind = detect_kind(path, mapping)
    plan = Plan(db, str(path), kind)
    if kind == "markdown":
        from .markdown import plan_markdown

        plan_markdown(plan, path, mapping)
    elif kind == "records":
        from .records import plan_records

        plan_records(plan, path, mapping or {})
    elif kind == "triples":
        from .graphs import plan_triples_csv

        if path.suffix.lower() in _LINES_SUFFIXES:
            _plan_fact_lines(plan, path)
        else:
            plan_triples_csv(plan, path, mapping)
    else:
        from .graphs import plan_json_graph, plan_yaml_graph

        if path.suffix.lower() == ".json":
            plan_json_graph(plan, path)
        else:
            plan_yaml_graph(plan, path)
    return plan


def _plan_fact_lines(plan: Plan, path: Path) -> None:
    from .graphs import _dates, _facts_of
    from .records import read_records

    rows = read_records(path)
    if rows and not all(("s" in r or "subject" in r) and ("p" in r or "predicate" in r) for _w, r in rows):
        raise LoadError("JSON Lines records are not facts {s, p, o}: give a --mapping that says how they "
                        "become facts", str(path))
    for (where, _row), (s, p, o, attrs) in zip(rows, _facts_of([r for _w, r in rows], path), strict=True):
        plan.fact(s, p, o, _dates(attrs), where=where)


def import_source(db: Any, path: str | os.PathLike, mapping: Any = None, dry_run: bool = False) -> dict:
    """Import a file or folder into `db`; returns the report with a verdict per fact.

    Report: `{"source", "kind", "dry_run", "written", "ok", "counts": {new, same, update, rejected,
    conflict}, "node_counts", "warnings", "facts": [{"s", "p", "o", "attrs", "verdict", "reason"?,
    "closes"?, "where"}], "nodes": [{"name", "verdict", ...}], "seconds"}`. A real import raises
    `ImportRefused` (nothing written) when a fact is rejected or conflicts."""
    started = time.perf_counter()
    p = Path(path)
    if not p.exists():
        raise LoadError("no such file or folder", str(p))
    the_mapping = load_mapping(mapping)
    if dry_run:
        plan = _plan(db, p, the_mapping)
        return plan.report(dry_run=True, written=False, seconds=round(time.perf_counter() - started, 4))
    with db.batch():
        plan = _plan(db, p, the_mapping)
        problems = plan.problems()
        if problems:
            first = problems[0]
            what = (f"{first.get('s')} {first.get('p')} {first.get('o')!r}" if "s" in first
                    else f"node {first.get('name')}")
            report = plan.report(dry_run=False, written=False,
                                 seconds=round(time.perf_counter() - started, 4))
            c = report["counts"]
            raise ImportRefused(
                f"import refused, nothing was written: {c['rejected']} fact(s) rejected, {c['conflict']} "
                f"in conflict (first: {what}: {first.get('reason')}). Run with --dry-run (dry_run=True) "
                "to see every verdict.", report)
        plan.apply()
    return plan.report(dry_run=False, written=bool(plan.ops), seconds=round(time.perf_counter() - started, 4))
