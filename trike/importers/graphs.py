"""Facts that are already facts: CSV/TSV with s, p, o columns, and YAML/JSON graphs."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from ..errors import LoadError
from ..values import resolve_plain, to_date
from .plan import Plan

_S = ("s", "subject")
_P = ("p", "predicate")
_O = ("o", "object")
_TRUE = ("1", "true", "yes", "y", "literal")


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise LoadError(f"cannot read: {exc.strerror or exc}", str(path)) from None
    except UnicodeDecodeError as exc:
        raise LoadError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", str(path)) from None


def csv_rows(path: Path, text: str | None = None) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """Header and rows (with their line numbers) of a CSV or TSV file (delimiter from the extension,
    else sniffed among comma, tab and semicolon)."""
    text = read_text(path) if text is None else text
    if path.suffix.lower() in (".tsv", ".tab"):
        delim = "\t"
    elif path.suffix.lower() == ".csv":
        delim = ","
    else:
        try:
            delim = csv.Sniffer().sniff(text[:4096], delimiters=",\t;").delimiter
        except csv.Error:
            delim = ","
    reader = csv.reader(io.StringIO(text), delimiter=delim)
    try:
        header = next(reader)
    except StopIteration:
        return [], []
    header = [h.strip() for h in header]
    rows = []
    for row in reader:
        if not any(cell.strip() for cell in row):
            continue
        if len(row) > len(header):
            raise LoadError(f"row has {len(row)} cells but the header has {len(header)}", str(path),
                            reader.line_num)
        rows.append((reader.line_num, {header[i]: row[i] for i in range(len(row))}))
    return header, rows


def _pick(header: list[str], names: tuple[str, ...]) -> str | None:
    low = {h.lower(): h for h in header}
    for n in names:
        if n in low:
            return low[n]
    return None


def has_spo(header: list[str]) -> bool:
    return all(_pick(header, names) for names in (_S, _P, _O))


def typed_cell(text: str) -> Any:
    """A CSV cell as a typed value, read like a YAML plain scalar (9600 -> int, 2024-09-02 -> date)."""
    text = text.strip()
    if not text:
        return None
    return resolve_plain(text)


def plan_triples_csv(plan: Plan, path: Path, mapping: dict | None = None) -> None:
    """Rows of s, p, o (or subject, predicate, object); every other column is an attribute of the fact.

    The object stays a name, except when the ontology gives the predicate a datatype range, the row has
    a true `literal` column, or the mapping lists the predicate under `literals:` (then 9600 is an
    integer and 2024-09-02 a date). Attribute cells are typed values; empty cells are left out."""
    header, rows = csv_rows(path)
    if not has_spo(header):
        raise LoadError("needs columns s, p, o (or subject, predicate, object), or a --mapping that "
                        f"says how records become facts; the header is {', '.join(header) or '(empty)'}",
                        str(path), 1)
    cs, cp, co = _pick(header, _S), _pick(header, _P), _pick(header, _O)
    clit = _pick(header, ("literal",))
    literals = (mapping or {}).get("literals") or []
    all_literal = literals is True
    for line, row in rows:
        s = (row.get(cs) or "").strip()
        p = (row.get(cp) or "").strip()
        raw_o = (row.get(co) or "").strip()
        literal = (all_literal or p in literals or plan.onto.is_literal_predicate(p)
                   or (clit is not None and (row.get(clit) or "").strip().lower() in _TRUE))
        o: Any = typed_cell(raw_o) if literal else raw_o
        attrs = {}
        for col, cell in row.items():
            if col in (cs, cp, co, clit) or col is None:
                continue
            value = typed_cell(cell or "")
            if value is not None:
                attrs[col] = value
        plan.fact(s, p, o, attrs, where=f"{path.name}:{line}")


def _dates(attrs: dict) -> dict:
    out = dict(attrs)
    for k in ("valid_from", "valid_to"):
        v = out.get(k)
        if isinstance(v, str):
            day = to_date(v)
            if day is not None and len(v.strip()) == 10:
                out[k] = day
    return out


def _facts_of(items: Any, path: Path) -> list[tuple[str, str, Any, dict]]:
    out = []
    if not isinstance(items, list):
        raise LoadError("`triples` (or `facts`, `edges`) must be a list", str(path))
    for n, item in enumerate(items, 1):
        if isinstance(item, (list, tuple)) and len(item) in (3, 4):
            attrs = dict(item[3]) if len(item) == 4 and isinstance(item[3], dict) else {}
            out.append((item[0], item[1], item[2], attrs))
        elif isinstance(item, dict):
            s = item.get("s", item.get("subject", item.get("source")))
            p = item.get("p", item.get("predicate", item.get("label")))
            o = item.get("o", item.get("object", item.get("target")))
            attrs = {k: v for k, v in item.items()
                     if k not in ("s", "p", "o", "subject", "predicate", "object", "source", "target", "label")}
            out.append((s, p, o, attrs))
        else:
            raise LoadError(f"fact #{n} is neither {{s, p, o, ...}} nor [s, p, o]: {item!r}", str(path))
    return out


def plan_json_graph(plan: Plan, path: Path) -> None:
    """A JSON graph: `{"nodes": {name: props} | [{"name"|"id", ...}], "triples"|"facts"|"edges": [...]}`,
    or just a list of facts. Facts are `{"s", "p", "o", attrs...}` or `[s, p, o, {attrs}]`; validity
    dates may be ISO strings."""
    try:
        data = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise LoadError(f"bad JSON: {exc.msg}", str(path), exc.lineno) from None
    _plan_graph_data(plan, path, data)


def _plan_graph_data(plan: Plan, path: Path, data: Any) -> None:
    if isinstance(data, list):
        data = {"triples": data}
    if not isinstance(data, dict):
        raise LoadError("a graph is a mapping with `nodes` and `triples`, or a list of facts", str(path))
    nodes = data.get("nodes") or {}
    if isinstance(nodes, list):
        as_map = {}
        for item in nodes:
            if not isinstance(item, dict) or not (item.get("name") or item.get("id")):
                raise LoadError(f"a node in the `nodes` list needs a name or id: {item!r}", str(path))
            name = str(item.get("name") or item.get("id"))
            as_map[name] = {k: v for k, v in item.items() if k not in ("name", "id")}
        nodes = as_map
    if not isinstance(nodes, dict):
        raise LoadError("`nodes` must be a mapping of name -> properties (or a list)", str(path))
    for name, props in nodes.items():
        plan.node(str(name), dict(props or {}) if isinstance(props, dict) else {"description": props},
                  where=path.name)
    facts_key = next((k for k in ("triples", "facts", "edges", "links") if k in data), None)
    for k in data:
        if k not in ("nodes", "ontology", facts_key):
            plan.warnings.append(f"section {k!r} of {path.name} was not imported")
    if "ontology" in data:
        plan.warnings.append(f"the ontology section of {path.name} was not imported (the graph keeps its own)")
    for s, p, o, attrs in _facts_of(data.get(facts_key) or [], path) if facts_key else []:
        plan.fact(s, p, o, _dates(attrs), where=path.name)


def plan_yaml_graph(plan: Plan, path: Path) -> None:
    """A YAML graph in trike's own format (`nodes:`, `triples:`), or any YAML with the JSON shapes."""
    import yaml

    from .. import yamlfile

    text = read_text(path)
    try:
        data = yamlfile.parse(text, str(path))
    except LoadError as exc:
        try:
            raw = yaml.safe_load(text)
        except yaml.YAMLError:
            raw = None
        if not isinstance(raw, list):
            raise exc from None
        _plan_graph_data(plan, path, raw)
        return
    if data.triples or data.nodes or data.ontology is not None:
        for name, props in data.nodes.items():
            plan.node(name, dict(props or {}), where=path.name)
        if data.ontology is not None:
            plan.warnings.append(f"the ontology section of {path.name} was not imported (the graph keeps its own)")
        for k in data.extras:
            plan.warnings.append(f"section {k!r} of {path.name} was not imported")
        for s, p, o, attrs in data.triples:
            plan.fact(s, p, o, dict(attrs or {}), where=path.name)
        return
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise LoadError(f"bad YAML: {exc}", str(path)) from None
    _plan_graph_data(plan, path, raw or {})
