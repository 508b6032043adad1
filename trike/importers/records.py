"""Records (one per document: defect reports, tickets, ...) compiled into facts with a small mapping.

```yaml
record:                        # each record becomes a node
  id: report_id                # the field naming it (required)
  type: defect_report          # its node type
  properties: [date, model, description, cause, action, prevention]  # fields kept on the node
entity:                        # the thing the record is about
  field: product
  type: product                # set on the entity node when it has no type yet
  link: ABOUT                  # fact  <record> ABOUT <entity>
date: date                     # this field becomes `valid_from` of every fact from the record
source: report_id              # this field becomes `prov` (default: the record id)
fields:                        # field -> predicate; subject: entity (default) or record
  model: {predicate: HAS_MODEL, type: model}
extract:                       # regular expressions over free text (group 1, or the whole match)
  - {from: [description, cause, action], pattern: '(\\d{4,6})\\s*bps', predicate: baud_rate,
     datatype: integer, pick: last, confidence: 0.9}
```

Records are read from JSON Lines, JSON (a list), YAML (a list) or CSV/TSV, and compiled in date order, so
a later value of a functional predicate closes the earlier one. A fact stated by several records is one
fact whose `prov` lists every record; its `valid_from` is the earliest statement's date.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from pathlib import Path
from typing import Any

from ..errors import LoadError, TrikeError
from ..values import to_date
from .graphs import csv_rows, read_text
from .plan import Plan

_TOP_KEYS = {"kind", "format", "record", "entity", "date", "source", "prov", "fields", "extract",
             "confidence", "description"}
_DATATYPES = {"integer", "int", "number", "float", "string", "str", "date", "boolean", "bool"}
_PICK = ("all", "first", "last")


class MappingError(TrikeError):
    """The mapping file does not say how records become facts."""


def load_mapping(mapping: Any) -> dict | None:
    """A mapping given as a dict, or the path of a YAML/JSON file (a top-level `mapping:` key is
    unwrapped)."""
    if mapping is None:
        return None
    if isinstance(mapping, dict):
        data = mapping
    else:
        path = Path(mapping)
        text = read_text(path)
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise LoadError(f"bad YAML in the mapping: {exc}", str(path)) from None
        if not isinstance(data, dict):
            raise LoadError("a mapping file is a YAML mapping (record:, entity:, fields:, extract:, ...)",
                            str(path))
    if "mapping" in data and isinstance(data["mapping"], dict) and len(data) == 1:
        data = data["mapping"]
    return data


def is_records_mapping(mapping: dict | None) -> bool:
    if not mapping:
        return False
    kind = mapping.get("kind") or mapping.get("format")
    if kind is not None:
        return str(kind).lower() == "records"
    return any(k in mapping for k in ("record", "entity", "extract", "fields"))


class _Rule:
    def __init__(self, spec: Any, where: str, *, field: str | None = None):
        if isinstance(spec, str):
            spec = {"predicate": spec}
        if not isinstance(spec, dict):
            raise MappingError(f"{where}: expected a predicate name or a mapping, got {spec!r}")
        known = {"predicate", "subject", "type", "datatype", "literal", "confidence", "from", "field",
                 "fields", "pattern", "pick", "flags", "description"}
        extra = set(spec) - known
        if extra:
            raise MappingError(f"{where}: unknown key(s) {', '.join(sorted(extra))}; "
                               f"known: {', '.join(sorted(known))}")
        self.predicate = spec.get("predicate")
        if not isinstance(self.predicate, str) or not self.predicate:
            raise MappingError(f"{where}: needs `predicate`")
        self.subject = str(spec.get("subject", "entity"))
        if self.subject not in ("entity", "record"):
            raise MappingError(f"{where}: subject must be `entity` or `record`, got {self.subject!r}")
        self.type = spec.get("type")
        dt = spec.get("datatype")
        if dt is None and spec.get("literal"):
            dt = "string"
        if dt is not None and str(dt).lower() not in _DATATYPES:
            raise MappingError(f"{where}: datatype must be one of {', '.join(sorted(_DATATYPES))}, got {dt!r}")
        self.datatype = str(dt).lower() if dt is not None else None
        conf = spec.get("confidence")
        if conf is not None and not (isinstance(conf, (int, float)) and 0 <= conf <= 1):
            raise MappingError(f"{where}: confidence must be a number from 0 to 1, got {conf!r}")
        self.confidence = conf
        src = spec.get("from", spec.get("fields", spec.get("field", field)))
        self.fields = [str(f) for f in (src if isinstance(src, list) else [src])] if src else []
        self.pattern = None
        if "pattern" in spec:
            flags = 0
            for f in str(spec.get("flags") or ""):
                flags |= {"i": re.I, "m": re.M, "s": re.S, "x": re.X}.get(f, 0)
            try:
                self.pattern = re.compile(str(spec["pattern"]), flags)
            except re.error as exc:
                raise MappingError(f"{where}: bad regular expression {spec['pattern']!r}: {exc}") from None
            if not self.fields:
                raise MappingError(f"{where}: an extractor needs `from` (the fields to read)")
        self.pick = str(spec.get("pick", "all"))
        if self.pick not in _PICK:
            raise MappingError(f"{where}: pick must be all, first or last, got {self.pick!r}")

    def convert(self, value: Any) -> Any:
        if isinstance(value, str):
            value = value.strip()
        if value is None or value == "":
            return None
        dt = self.datatype
        try:
            if dt in ("integer", "int"):
                return int(str(value).replace(",", ""))
            if dt in ("number", "float"):
                return float(str(value).replace(",", ""))
            if dt == "date":
                return to_date(value)
            if dt in ("boolean", "bool"):
                return str(value).lower() in ("1", "true", "yes", "y")
        except ValueError:
            return None
        if isinstance(value, (dict, list)):
            return None
        return value if dt is None and not isinstance(value, str) else str(value)

    def values(self, record: dict) -> list[Any]:
        if self.pattern is None:
            raw = record.get(self.fields[0]) if self.fields else None
            items = raw if isinstance(raw, list) else [raw]
            out = [self.convert(v) for v in items]
        else:
            out = []
            for f in self.fields:
                text = record.get(f)
                if text is None:
                    continue
                for m in self.pattern.finditer(str(text)):
                    out.append(self.convert(m.group(1) if m.re.groups else m.group(0)))
        out = [v for v in out if v is not None]
        seen: list[Any] = []
        for v in out:
            if v not in seen:
                seen.append(v)
        if self.pick == "first":
            return seen[:1]
        if self.pick == "last":
            return out[-1:] if out else []
        return seen


class RecordsMapping:
    def __init__(self, raw: dict):
        extra = set(raw) - _TOP_KEYS
        if extra:
            raise MappingError(f"unknown mapping key(s) {', '.join(sorted(extra))}; known: "
                               f"{', '.join(sorted(_TOP_KEYS))}")
        rec = raw.get("record") or {}
        if isinstance(rec, str):
            rec = {"id": rec}
        if not isinstance(rec, dict) or not rec.get("id"):
            raise MappingError("the mapping needs `record: {id: FIELD}` (the field that names each record)")
        self.id_field = str(rec["id"])
        self.record_type = rec.get("type")
        props = rec.get("properties") or []
        if isinstance(props, list):
            self.properties = {str(f): str(f) for f in props}
        elif isinstance(props, dict):
            self.properties = {str(k): str(v) for k, v in props.items()}
        else:
            raise MappingError("record.properties must be a list of fields or a mapping prop: field")
        ent = raw.get("entity")
        if isinstance(ent, str):
            ent = {"field": ent}
        if ent is not None and (not isinstance(ent, dict) or not ent.get("field")):
            raise MappingError("entity must be a field name or {field: F, type: T, link: PREDICATE}")
        self.entity_field = str(ent["field"]) if ent else None
        self.entity_type = (ent or {}).get("type")
        self.entity_link = (ent or {}).get("link")
        self.date_field = raw.get("date")
        self.source_field = raw.get("source", raw.get("prov"))
        fields = raw.get("fields") or {}
        if not isinstance(fields, dict):
            raise MappingError("fields must be a mapping FIELD: PREDICATE or FIELD: {predicate: ...}")
        self.rules = [_Rule(spec, f"fields.{name}", field=str(name)) for name, spec in fields.items()]
        extract = raw.get("extract") or []
        if not isinstance(extract, list):
            raise MappingError("extract must be a list of {from, pattern, predicate, ...}")
        for i, spec in enumerate(extract):
            rule = _Rule(spec, f"extract[{i}]")
            if rule.pattern is None:
                raise MappingError(f"extract[{i}]: needs `pattern` (a regular expression)")
            self.rules.append(rule)
        if self.entity_field is None and any(r.subject == "entity" for r in self.rules):
            raise MappingError("rules have subject `entity` (the default) but the mapping has no `entity:`; "
                               "add `entity: FIELD` or give the rules `subject: record`")


def read_records(path: Path) -> list[tuple[str, dict]]:
    """(where, record) pairs from JSON Lines, JSON, YAML or CSV/TSV."""
    suffix = path.suffix.lower()
    out: list[tuple[str, dict]] = []
    if suffix in (".jsonl", ".ndjson"):
        for n, line in enumerate(read_text(path).splitlines(), 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise LoadError(f"bad JSON: {exc.msg}", str(path), n) from None
            if not isinstance(item, dict):
                raise LoadError("each line must be a JSON object (one record)", str(path), n)
            out.append((f"{path.name}:{n}", item))
        return out
    if suffix in (".json", ".yaml", ".yml"):
        text = read_text(path)
        if suffix == ".json":
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise LoadError(f"bad JSON: {exc.msg}", str(path), exc.lineno) from None
        else:
            import yaml

            try:
                data = yaml.safe_load(text)
            except yaml.YAMLError as exc:
                raise LoadError(f"bad YAML: {exc}", str(path)) from None
        if isinstance(data, dict) and isinstance(data.get("records"), list):
            data = data["records"]
        if not isinstance(data, list) or not all(isinstance(x, dict) for x in data):
            raise LoadError("records must be a list of objects (or {records: [...]})", str(path))
        return [(f"{path.name}#{i}", dict(x)) for i, x in enumerate(data, 1)]
    _header, rows = csv_rows(path)
    return [(f"{path.name}:{line}", {k: v for k, v in row.items() if k}) for line, row in rows]


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        value = value.strip()
        return value or None
    if isinstance(value, list):
        items = [_clean(v) for v in value]
        return [v for v in items if v is not None] or None
    if isinstance(value, dict):
        items = {str(k): _clean(v) for k, v in value.items()}
        return {k: v for k, v in items.items() if v is not None} or None
    return value


def plan_records(plan: Plan, path: Path, mapping: dict) -> None:
    m = RecordsMapping(mapping)
    records = read_records(path)
    dated: list[tuple[Any, int, str, dict, _dt.date | None]] = []
    for i, (where, rec) in enumerate(records):
        day = None
        if m.date_field:
            raw = rec.get(m.date_field)
            day = to_date(raw) if raw not in (None, "") else None
            if raw not in (None, "") and day is None:
                plan.warnings.append(f"{where}: {m.date_field}={raw!r} is not a date; its facts have no valid_from")
        dated.append(((day is not None, day or _dt.date.min), i, where, rec, day))
    dated.sort(key=lambda t: (t[0], t[1]))
    plan.info["records"] = len(records)
    for _key, _i, where, rec, day in dated:
        rid = rec.get(m.id_field)
        if rid in (None, ""):
            plan.warnings.append(f"{where}: no {m.id_field}; record skipped")
            continue
        rid = str(rid).strip()
        src = rec.get(m.source_field) if m.source_field else rid
        base: dict[str, Any] = {"prov": str(src).strip() if src not in (None, "") else rid}
        if day is not None:
            base["valid_from"] = day
        props: dict[str, Any] = {}
        if m.record_type:
            props["type"] = m.record_type
        for prop, f in m.properties.items():
            value = day if f == m.date_field and day is not None else _clean(rec.get(f))
            if value is not None:
                props[prop] = value
        plan.node(rid, props, where=where)
        entity = None
        if m.entity_field:
            raw = rec.get(m.entity_field)
            entity = str(raw).strip() if raw not in (None, "") else None
            if entity is None:
                plan.warnings.append(f"{where}: no {m.entity_field}; facts about the entity skipped")
            else:
                if m.entity_type:
                    plan.node(entity, {"type": m.entity_type}, where=where, only_missing=("type",))
                if m.entity_link:
                    plan.fact(rid, m.entity_link, entity, dict(base), where=where, keep_earliest=True)
        for rule in m.rules:
            subject = entity if rule.subject == "entity" else rid
            if subject is None:
                continue
            for value in rule.values(rec):
                if rule.type and rule.datatype is None and isinstance(value, str):
                    plan.node(value, {"type": rule.type}, where=where, only_missing=("type",))
                attrs = dict(base)
                if rule.confidence is not None:
                    attrs["confidence"] = rule.confidence
                plan.fact(subject, rule.predicate, value, attrs, where=where, keep_earliest=True)
