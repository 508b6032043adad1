"""Validation: SHACL shapes (pyshacl) over the RDF projection, and a friendly YAML form of shapes.

```yaml
shapes:
- {every: SaaS契約, has: 契約単位}                      # at least one 契約単位 (subclass instances too)
- {every: table, has: OWNED_BY, max: 1, class: team}    # exactly one owner, and it is a team
- {every: job, has: schedule, in: [hourly, daily]}
- {every: team, has: ^OWNED_BY}                         # something is OWNED_BY each team
- {subjects_of: INGESTS_TO, has: schedule, min: 0, pattern: '^(hourly|daily)$'}
```

Each friendly shape compiles to a SHACL NodeShape (`sh:targetClass t:CLASS`, `sh:targetSubjectsOf` or
`sh:targetObjectsOf`) with one property shape per `has` path. The data graph is the RDF projection of the
facts that hold today (inferred ones included, fact attributes left out), every node's type and
properties, `is_a` facts as `rdf:type`, and the ontology's `subclass_of` as `rdfs:subClassOf`, so a
shape on a class applies to the instances of its subclasses. See docs/rules.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .errors import TrikeError

SHAPE_NS = "urn:trike-shape:"
SH = "http://www.w3.org/ns/shacl#"

FRIENDLY_KEYS = ("every", "subjects_of", "objects_of", "has", "min", "max", "in", "class", "datatype",
                 "pattern", "name", "message")
TARGET_KEYS = ("every", "subjects_of", "objects_of")

_DATATYPES = {
    "string": ["string"], "str": ["string"], "text": ["string"],
    "integer": ["integer"], "int": ["integer"],
    "float": ["double"], "double": ["double"], "decimal": ["decimal"],
    "number": ["integer", "double", "decimal"],
    "boolean": ["boolean"], "bool": ["boolean"],
    "date": ["date"], "datetime": ["dateTime"],
}

_TURTLE_PREFIXES = ("@prefix t: <urn:trike:> . @prefix sh: <http://www.w3.org/ns/shacl#> . "
                    "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> . "
                    "@prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> . "
                    "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> . ")

_RDF_SUFFIXES = {".ttl": "turtle", ".turtle": "turtle", ".nt": "nt", ".n3": "n3", ".jsonld": "json-ld",
                 ".json-ld": "json-ld", ".rdf": "xml", ".owl": "xml", ".xml": "xml", ".trig": "trig"}


def _libs() -> Any:
    try:
        import pyshacl  # noqa: F401
        import rdflib
    except ImportError as exc:  # pragma: no cover - the rdf extra is a test dependency
        raise TrikeError(f"validation needs rdflib and pyshacl: pip install 'trike[rdf]' ({exc})") from None
    return rdflib


# =============================================================================================== shapes in

def _as_list(value: Any) -> list:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def _looks_like_turtle(text: str) -> bool:
    head = text.lstrip()
    return ("\n" in text or head.startswith(("@prefix", "PREFIX", "prefix", "@base", "BASE", "<", "["))
            or " sh:" in text or "\tsh:" in text)


def _parse_rdf(text: str, fmt: str, where: str) -> tuple[Any, dict]:
    rdflib = _libs()
    g = rdflib.Graph()
    data = _TURTLE_PREFIXES + text if fmt in ("turtle", "n3", "trig") else text
    try:
        g.parse(data=data, format=fmt)
    except Exception as exc:  # rdflib raises many kinds of syntax errors
        raise TrikeError(f"{where}: cannot read the SHACL shapes: {str(exc).strip()}") from None
    return g, {}


def _from_yaml_value(value: Any, where: str) -> tuple[Any, dict]:
    if isinstance(value, dict) and not (set(value) & set(FRIENDLY_KEYS)):
        if "shapes" not in value:
            raise TrikeError(f"{where}: no `shapes:` section")
        value = value["shapes"]
    if value is None:
        raise TrikeError(f"{where}: no shapes found (write a `shapes:` list)")
    if isinstance(value, str):
        return _parse_rdf(value, "turtle", where)
    if isinstance(value, dict):
        value = [value]
    if isinstance(value, list):
        return compile_shapes(value, where)
    raise TrikeError(f"{where}: shapes must be a list of friendly shapes or SHACL Turtle text, "
                     f"got {type(value).__name__}")


def load_shapes(db: Any, shapes: Any = None) -> tuple[Any, dict]:
    """The SHACL shapes graph for `shapes` (see `validate`), and the labels of compiled friendly shapes."""
    rdflib = _libs()
    if shapes is None:
        section = db.section("shapes")
        if section is None:
            raise TrikeError(f"{db.path}: no shapes to validate against: pass a Turtle file, a YAML file "
                             f"with `shapes:`, or write `shapes:` in the graph file (see docs/rules.md)")
        return _from_yaml_value(section, f"{db.path} (shapes:)")
    if isinstance(shapes, rdflib.Graph):
        return shapes, {}
    if isinstance(shapes, (list, dict)):
        return _from_yaml_value(shapes, "shapes")
    if isinstance(shapes, str) and _looks_like_turtle(shapes):
        return _parse_rdf(shapes, "turtle", "shapes")
    if isinstance(shapes, (str, Path)):
        path = Path(shapes)
        if not path.is_file():
            raise TrikeError(f"{path}: no such shapes file")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise TrikeError(f"{path}: cannot read: {exc}") from None
        suffix = path.suffix.lower()
        if suffix in (".yaml", ".yml", ".json"):
            import yaml

            try:
                data = yaml.load(text, Loader=yaml.CSafeLoader)
            except yaml.YAMLError as exc:
                raise TrikeError(f"{path}: malformed YAML: {exc}") from None
            return _from_yaml_value(data, str(path))
        return _parse_rdf(text, _RDF_SUFFIXES.get(suffix, "turtle"), str(path))
    raise TrikeError(f"shapes must be a file path, Turtle text, a list of friendly shapes or an rdflib "
                     f"Graph, got {type(shapes).__name__}")


def _describe(target: str, path: str, spec: dict) -> str:
    verb = "may have" if spec.get("min") == 0 else "has"
    text = f"{target} {verb} {path}"
    quals = []
    if isinstance(spec.get("min"), int) and spec["min"] > 1:
        quals.append(f"at least {spec['min']}")
    if spec.get("max") is not None:
        quals.append(f"at most {spec['max']}")
    if spec.get("in") is not None:
        quals.append("one of " + ", ".join(str(v) for v in _as_list(spec["in"])))
    if spec.get("class") is not None:
        quals.append(_a(str(spec["class"])))
    if spec.get("datatype") is not None:
        quals.append(_a(str(spec["datatype"])))
    if spec.get("pattern") is not None:
        quals.append(f"matching {spec['pattern']}")
    return text + (f" ({', '.join(quals)})" if quals else "")


def compile_shapes(items: list, where: str = "shapes") -> tuple[Any, dict]:
    """Friendly shapes -> (SHACL shapes graph, {property shape IRI: label}). Raises TrikeError naming the
    shape and the problem."""
    rdflib = _libs()
    from rdflib import RDF, RDFS, XSD, BNode, Literal, Namespace, URIRef
    from rdflib.collection import Collection

    from .rdf import iri

    sh = Namespace(SH)
    g = rdflib.Graph()
    g.bind("sh", sh)
    g.bind("t", Namespace("urn:trike:"))
    labels: dict[str, str] = {}

    def u(name: Any) -> URIRef:
        return URIRef(iri(str(name)))

    for i, spec in enumerate(items, 1):
        label = f"{where} #{i}"
        if not isinstance(spec, dict):
            raise TrikeError(f"{label}: a shape is a mapping like {{every: CLASS, has: PROPERTY}}, got {spec!r}")
        unknown = [k for k in spec if k not in FRIENDLY_KEYS]
        if unknown:
            raise TrikeError(f"{label} {_short(spec)}: unknown key {unknown[0]!r}; "
                             f"use {', '.join(FRIENDLY_KEYS)}")
        targets = [k for k in TARGET_KEYS if spec.get(k) is not None]
        if len(targets) != 1:
            raise TrikeError(f"{label} {_short(spec)}: say which nodes the shape is about with exactly one "
                             f"of every: CLASS, subjects_of: PREDICATE, objects_of: PREDICATE")
        if not spec.get("has"):
            raise TrikeError(f"{label} {_short(spec)}: `has: PROPERTY` is missing")
        for k in ("min", "max"):
            v = spec.get(k)
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
                raise TrikeError(f"{label} {_short(spec)}: {k} must be a whole number >= 0, got {v!r}")
        if spec.get("min") is not None and spec.get("max") is not None and spec["min"] > spec["max"]:
            raise TrikeError(f"{label} {_short(spec)}: min {spec['min']} is more than max {spec['max']}")
        dt = spec.get("datatype")
        if dt is not None:
            dts = _DATATYPES.get(str(dt).lower())
            if dts is None and not str(dt).startswith("xsd:"):
                raise TrikeError(f"{label} {_short(spec)}: unknown datatype {dt!r}; use "
                                 f"{', '.join(_DATATYPES)} or xsd:NAME")
        pattern = spec.get("pattern")
        if pattern is not None:
            import re

            try:
                re.compile(str(pattern))
            except re.error as exc:
                raise TrikeError(f"{label} {_short(spec)}: bad pattern {pattern!r}: {exc}") from None
        if spec.get("in") is not None and not isinstance(spec["in"], list):
            raise TrikeError(f"{label} {_short(spec)}: `in` must be a list of allowed values")

        kind = targets[0]
        target_names = [str(t) for t in _as_list(spec[kind])]
        node_shape = URIRef(f"{SHAPE_NS}{i}")
        g.add((node_shape, RDF.type, sh.NodeShape))
        pred = {"every": sh.targetClass, "subjects_of": sh.targetSubjectsOf, "objects_of": sh.targetObjectsOf}[kind]
        for t in target_names:
            g.add((node_shape, pred, u(t)))
        target_text = {"every": "every ", "subjects_of": "every subject of ", "objects_of": "every object of "}[kind]
        target_text += " or ".join(target_names)
        g.add((node_shape, RDFS.label, Literal(target_text)))
        for j, path_name in enumerate(_as_list(spec["has"]), 1):
            path_name = str(path_name)
            inverse = path_name.startswith("^")
            base = path_name[1:] if inverse else path_name
            if not base:
                raise TrikeError(f"{label} {_short(spec)}: empty property name in `has`")
            prop = URIRef(f"{SHAPE_NS}{i}/{j}")
            g.add((node_shape, sh.property, prop))
            g.add((prop, RDF.type, sh.PropertyShape))
            path_term: Any = RDF.type if base == "type" else u(base)
            if inverse:
                b = BNode()
                g.add((b, sh.inversePath, path_term))
                path_term = b
            g.add((prop, sh.path, path_term))
            mn = spec.get("min", 1)
            if mn:
                g.add((prop, sh.minCount, Literal(mn)))
            if spec.get("max") is not None:
                g.add((prop, sh.maxCount, Literal(spec["max"])))
            if spec.get("in") is not None:
                terms: list[Any] = []
                for v in spec["in"]:
                    if isinstance(v, str):
                        terms.extend([Literal(v), u(v)])  # a string value or a node name
                    else:
                        terms.append(Literal(v))
                lst = BNode()
                Collection(g, lst, terms)
                g.add((prop, sh["in"], lst))
            if spec.get("class") is not None:
                for c in _as_list(spec["class"]):
                    g.add((prop, sh["class"], u(c)))
            if dt is not None:
                names = _DATATYPES.get(str(dt).lower()) or [str(dt)[4:]]
                if len(names) == 1:
                    g.add((prop, sh.datatype, XSD[names[0]]))
                else:
                    alts = []
                    for n in names:
                        b = BNode()
                        g.add((b, sh.datatype, XSD[n]))
                        alts.append(b)
                    lst = BNode()
                    Collection(g, lst, alts)
                    g.add((prop, sh["or"], lst))
            if pattern is not None:
                g.add((prop, sh.pattern, Literal(str(pattern))))
            text = spec.get("name") or _describe(target_text, path_name, spec)
            g.add((prop, RDFS.label, Literal(str(text))))
            if spec.get("message"):
                g.add((prop, sh.message, Literal(str(spec["message"]))))
            labels[str(prop)] = str(text)
    return g, labels


def _short(spec: Any) -> str:
    from .values import emit

    try:
        return emit(spec)
    except TypeError:
        return repr(spec)


# =============================================================================================== data graph

def data_graph(db: Any) -> Any:
    """The RDF projection that shapes are checked against (an rdflib Graph)."""
    rdflib = _libs()
    from .rdf import RDF, RDFS, graph_ntriples, iri
    from .reasoning import IS_A, current_ontology

    onto = current_ontology(db)
    facts = {(f["s"], f["p"], f["o"]): None for f in db.facts(as_of=None)}
    nodes = db.nodes()
    parts = [graph_ntriples(facts, nodes, onto.is_literal_predicate)]
    extra: list[str] = []
    for (s, p, o) in facts:
        if p == IS_A and isinstance(o, str):
            extra.append(f"<{iri(s)}> <{RDF}type> <{iri(o)}> .\n")
    for c, spec in onto.classes.items():
        sups = spec.get("subclass_of")
        for sup in sups if isinstance(sups, list) else [sups] if sups else []:
            extra.append(f"<{iri(c)}> <{RDFS}subClassOf> <{iri(str(sup))}> .\n")
    parts.extend(extra)
    g = rdflib.Graph()
    text = "".join(parts)
    if text:
        g.parse(data=text, format="nt")
    return g


# =============================================================================================== validate

def validate(db: Any, shapes: Any = None) -> list[dict]:
    """Check the graph against SHACL shapes; one dict per violation:
    `{"node", "path", "property", "shape", "constraint", "value", "severity", "message"}`.

    `shapes`: None (the file's own `shapes:` section), a path to a Turtle (.ttl/.nt/.jsonld) or YAML file
    (with `shapes:`), Turtle text (the prefixes t:, sh:, xsd:, rdf:, rdfs: are predeclared), a list of
    friendly shapes, or an rdflib Graph. Messages read like "Notion契約 has no 契約単位 [shape: every
    SaaS契約 has 契約単位]"."""
    _libs()
    import pyshacl

    shapes_graph, labels = load_shapes(db, shapes)
    data = data_graph(db)
    try:
        _conforms, results, _text = pyshacl.validate(
            data, shacl_graph=shapes_graph, inference="none", abort_on_first=False, allow_infos=True,
            allow_warnings=True, inplace=True, advanced=True)
    except Exception as exc:  # pyshacl reports bad shapes with its own exception types
        raise TrikeError(f"SHACL validation failed: {str(exc).strip()}") from None
    return _read_results(results, shapes_graph, data, labels)


def _read_results(results: Any, shapes: Any, data: Any, labels: dict) -> list[dict]:
    from rdflib import RDF, Namespace

    sh = Namespace(SH)
    out: list[dict] = []
    for r in results.subjects(RDF.type, sh.ValidationResult):
        focus = results.value(r, sh.focusNode)
        path = results.value(r, sh.resultPath)
        value = results.value(r, sh.value)
        comp = results.value(r, sh.sourceConstraintComponent)
        source = results.value(r, sh.sourceShape)
        severity = results.value(r, sh.resultSeverity)
        pyshacl_msg = results.value(r, sh.resultMessage)
        constraint = _local(comp).removesuffix("ConstraintComponent") if comp is not None else "?"
        constraint = constraint[:1].lower() + constraint[1:]
        path_text = _path_text(path, results)
        node = _term(focus)
        shape_name = _shape_name(source, shapes, labels)
        custom = shapes.value(source, sh.message) if source is not None else None
        if custom is not None:
            msg = _fill(str(custom), node, path_text, value)
        else:
            msg = _message(constraint, node, path_text, focus, path, value, source, shapes, data, results,
                           pyshacl_msg)
        sev = _local(severity) if severity is not None else "Violation"
        if sev != "Violation":
            msg = f"{sev.lower()}: {msg}"
        if shape_name:
            msg += f" [shape: {shape_name}]"
        out.append({
            "node": node,
            "path": path_text,
            "property": path_text,
            "shape": shape_name,
            "constraint": constraint,
            "value": _term(value) if value is not None else None,
            "severity": sev,
            "message": msg,
        })
    out.sort(key=lambda d: (str(d["node"]), str(d["path"]), d["constraint"], str(d["value"]), d["message"]))
    return out


def _local(term: Any) -> str:
    text = str(term)
    for sep in ("#", "/", ":"):
        if sep in text:
            text = text.rsplit(sep, 1)[1]
    return text


def _term(term: Any) -> Any:
    from rdflib import BNode, Literal, URIRef

    from .rdf import name_of

    if term is None:
        return None
    if isinstance(term, URIRef):
        return name_of(str(term))
    if isinstance(term, Literal):
        v = term.toPython()
        return str(term) if isinstance(v, Literal) else v
    if isinstance(term, BNode):
        return f"_:{term}"
    return str(term)


def _path_text(path: Any, graph: Any) -> str | None:
    from rdflib import RDF, BNode, Namespace, URIRef

    sh = Namespace(SH)
    if path is None:
        return None
    if path == RDF.type:
        return "type"
    if isinstance(path, URIRef):
        return _term(path)
    if isinstance(path, BNode):
        inv = graph.value(path, sh.inversePath)
        if inv is not None:
            return "^" + str(_path_text(inv, graph))
    return str(path)


def _shape_name(source: Any, shapes: Any, labels: dict) -> str | None:
    from rdflib import RDFS, BNode, Namespace

    sh = Namespace(SH)
    if source is None:
        return None
    if str(source) in labels:
        return labels[str(source)]
    for pred in (sh.name, RDFS.label):
        v = shapes.value(source, pred)
        if v is not None:
            return str(v)
    if isinstance(source, BNode):
        parent = shapes.value(None, sh.property, source)
        if parent is not None:
            return _shape_name(parent, shapes, labels)
        return None
    return str(_term(source))


def _fill(template: str, node: Any, path: Any, value: Any) -> str:
    v = _term(value) if value is not None else ""
    for k, rep in (("{node}", node), ("{$this}", node), ("{path}", path), ("{value}", v), ("{?value}", v)):
        template = template.replace(k, str(rep))
    return template


def _show(v: Any) -> str:
    if isinstance(v, str):
        return v
    from .values import emit

    try:
        return emit(v)
    except TypeError:
        return repr(v)


def _values_on_path(data: Any, focus: Any, path: Any) -> list:
    from rdflib import URIRef

    if isinstance(path, URIRef):
        return list(dict.fromkeys(data.objects(focus, path)))
    return []  # a complex path: not counted


def _message(constraint: str, node: Any, path_text: Any, focus: Any, path: Any, value: Any, source: Any,
             shapes: Any, data: Any, results: Any, fallback: Any) -> str:
    from rdflib import BNode, Literal, Namespace
    from rdflib.collection import Collection

    sh = Namespace(SH)
    inverse = isinstance(path_text, str) and path_text.startswith("^")
    base = path_text[1:] if inverse else path_text
    shown = _show(_term(value)) if value is not None else None
    # a string value quoted, a number, date or node name as it is
    quoted = repr(_term(value)) if isinstance(value, Literal) and isinstance(_term(value), str) else shown

    def count() -> list:
        if inverse and isinstance(path, BNode):
            inv = results.value(path, sh.inversePath) or shapes.value(path, sh.inversePath)
            return list(dict.fromkeys(data.subjects(inv, focus))) if inv is not None else []
        return _values_on_path(data, focus, path)

    param = {
        "minCount": sh.minCount, "maxCount": sh.maxCount, "class": sh["class"], "datatype": sh.datatype,
        "pattern": sh.pattern, "hasValue": sh.hasValue, "minInclusive": sh.minInclusive,
        "maxInclusive": sh.maxInclusive, "minExclusive": sh.minExclusive, "maxExclusive": sh.maxExclusive,
        "minLength": sh.minLength, "maxLength": sh.maxLength, "nodeKind": sh.nodeKind,
    }.get(constraint)
    limit = shapes.value(source, param) if (param is not None and source is not None) else None
    lim = _term(limit) if limit is not None else None
    if constraint == "minCount":
        vals = count()
        if not vals:
            return f"nothing is {base} {node}" if inverse else f"{node} has no {base}"
        return f"{node} has {len(vals)} {path_text} (at least {lim} needed)"
    if constraint == "maxCount":
        vals = [_show(_term(v)) for v in count()]
        listing = ", ".join(vals[:5]) + (", ..." if len(vals) > 5 else "")
        what = f"{len(vals)} things are {base} {node}" if inverse else f"{node} has {len(vals)} {base}"
        return f"{what}: {listing} (at most {lim} allowed)"
    if constraint == "in":
        allowed: list[str] = []
        lst = shapes.value(source, sh["in"]) if source is not None else None
        if lst is not None:
            for t in Collection(shapes, lst):
                s = _show(_term(t))
                if s not in allowed:
                    allowed.append(s)
        return f"{node} {path_text} is {shown}, not one of {', '.join(allowed)}"
    if constraint == "class":
        return f"{node} {path_text} {shown}, which is not {_a(str(lim))}"
    if constraint == "datatype":
        return f"{node} {path_text} is {quoted}, not {_a(_local(limit)) if limit is not None else 'of that type'}"
    if constraint == "or":
        kinds: list[str] = []
        lst = shapes.value(source, sh["or"]) if source is not None else None
        if lst is not None:
            for alt in Collection(shapes, lst):
                d = shapes.value(alt, sh.datatype)
                if d is not None:
                    kinds.append(_local(d))
        if kinds:
            return f"{node} {path_text} is {quoted}, not of type {' or '.join(kinds)}"
        return f"{node} {path_text} is {quoted}, which is none of the allowed kinds"
    if constraint == "pattern":
        return f"{node} {path_text} {quoted} does not match {lim}"
    if constraint == "hasValue":
        return f"{node} {path_text} does not include {_show(lim)}"
    if constraint in ("minInclusive", "maxInclusive", "minExclusive", "maxExclusive", "minLength", "maxLength"):
        return f"{node} {path_text} {quoted} breaks {constraint} {_show(lim)}"
    where = f"{node} {path_text}" if path_text else f"{node}"
    detail = f" ({_readable(str(fallback))})" if fallback is not None else ""
    return f"{where}: {constraint} constraint not met" + (f" by {shown}" if shown is not None else "") + detail


def _a(word: str) -> str:
    return ("an " if word[:1].lower() in "aeiou" else "a ") + word


def _readable(text: str) -> str:
    """A pyshacl message with trike IRIs written as names."""
    import re

    from .rdf import name_of

    text = re.sub(r"<(urn:trike:[^>]*)>", lambda m: name_of(m.group(1)), text)
    return re.sub(r"\bt:(\S+)", lambda m: name_of("urn:trike:" + m.group(1)), text)


__all__ = ["validate", "load_shapes", "compile_shapes", "data_graph"]
