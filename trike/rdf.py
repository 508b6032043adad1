"""The RDF projection: the same facts as RDF, queried with SPARQL 1.1 by Oxigraph.

Mapping (see docs/rdf-mapping.md):
- a node or predicate name N is the IRI `urn:trike:` + N, with only the characters that IRIs forbid
  percent-encoded (space, <>"{}|\\^`, %, #, ?, controls): Japanese and other names stay readable.
  The SPARQL prefix `t:` is predeclared, so `SELECT ?s WHERE { ?s t:担当 t:担当A }` works.
- every node: `rdfs:label "N"`; its `type` property: `rdf:type t:TYPE`; other properties: typed literals.
- a fact `{s, p, o}`: `<s> <p> <o>`; `o` is an IRI when it is a name (a string) and the predicate's
  range is not a datatype, else a typed literal.
- a fact with attributes is also reified: `<urn:trike-fact:HASH> a rdf:Statement; rdf:subject <s>;
  rdf:predicate <p>; rdf:object <o>; t:ATTR value ...`.
- literals: str -> xsd:string, int -> xsd:integer, float -> xsd:double, bool -> xsd:boolean,
  date -> xsd:date, datetime -> xsd:dateTime; a list gives one triple per item.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from urllib.parse import unquote

from .errors import QueryError

NS = "urn:trike:"
FACT_NS = "urn:trike-fact:"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
XSD = "http://www.w3.org/2001/XMLSchema#"
OWL = "http://www.w3.org/2002/07/owl#"

PREFIXES = {
    "t": NS,
    "rdf": RDF,
    "rdfs": RDFS,
    "xsd": XSD,
    "owl": OWL,
    "prov": "http://www.w3.org/ns/prov#",
    "skos": "http://www.w3.org/2004/02/skos/core#",
}

_UNSAFE = re.compile(r"[\x00-\x20<>\"{}|\\^`%#?\x7f-\x9f\ufffe\uffff]")
_iri_cache: dict[str, str] = {}


def iri(name: str) -> str:
    """The IRI (without angle brackets) of a node, predicate, type or property name."""
    try:
        return _iri_cache[name]
    except KeyError:
        pass
    enc = _UNSAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group(0).encode("utf-8")), name)
    out = NS + enc
    if len(_iri_cache) < 500_000:
        _iri_cache[name] = out
    return out


_name_cache: dict[str, str] = {}


def name_of(value: str) -> str:
    """The trike name of a `urn:trike:` IRI (other IRIs are returned whole)."""
    try:
        return _name_cache[value]
    except KeyError:
        pass
    name = unquote(value[len(NS):]) if value.startswith(NS) else value
    if len(_name_cache) < 500_000:
        _name_cache[value] = name
    return name


def fact_iri(s: str, p: str, o: Any) -> str:
    h = hashlib.blake2b(f"{s}\x00{p}\x00{type(o).__name__}\x00{o}".encode(), digest_size=10)
    return FACT_NS + h.hexdigest()


# ---------------------------------------------------------------------------------- N-Triples text

def _esc(text: str) -> str:
    if '"' in text or "\\" in text or "\n" in text or "\r" in text:
        return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return text


_BOOL = f"<{XSD}boolean>"
_INT = f"<{XSD}integer>"
_DOUBLE = f"<{XSD}double>"
_DATE = f"<{XSD}date>"
_DATETIME = f"<{XSD}dateTime>"


def literal_nt(value: Any) -> str:
    t = type(value)
    if t is str:
        return f'"{_esc(value)}"'
    if t is bool:
        return f'"{"true" if value else "false"}"^^{_BOOL}'
    if t is int:
        return f'"{value}"^^{_INT}'
    if t is _dt.date:
        return f'"{value.isoformat()}"^^{_DATE}'
    if isinstance(value, bool):
        return f'"{"true" if value else "false"}"^^{_BOOL}'
    if isinstance(value, int):
        return f'"{int(value)}"^^{_INT}'
    if isinstance(value, float):
        if value != value:
            text = "NaN"
        elif value in (float("inf"), float("-inf")):
            text = "INF" if value > 0 else "-INF"
        else:
            text = repr(value)
        return f'"{text}"^^{_DOUBLE}'
    if isinstance(value, _dt.datetime):
        return f'"{value.isoformat()}"^^{_DATETIME}'
    if isinstance(value, _dt.date):
        return f'"{value.isoformat()}"^^{_DATE}'
    if isinstance(value, str):
        return f'"{_esc(value)}"'
    return f'"{_esc(json.dumps(value, default=str, ensure_ascii=False))}"^^<{RDF}JSON>'


def _values(v: Any) -> Iterable[Any]:
    if isinstance(v, (list, tuple)):
        return [x for x in v if x is not None and not isinstance(x, (list, tuple))]
    if v is None:
        return ()
    return (v,)


_LABEL = f"<{RDFS}label>"
_TYPE = f"<{RDF}type>"
_STATEMENT = f"<{RDF}Statement>"
_SUBJ = f"<{RDF}subject>"
_PRED = f"<{RDF}predicate>"
_OBJ = f"<{RDF}object>"


def node_lines(name: str, props: dict | None) -> list[str]:
    n = f"<{_iri_cache.get(name) or iri(name)}>"
    out = [f"{n} {_LABEL} {literal_nt(name)} .\n"]
    if props:
        for k, v in props.items():
            if type(v) is list or type(v) is tuple:
                items: Iterable[Any] = _values(v)
            elif v is None:
                continue
            else:
                items = (v,)
            for item in items:
                if k == "type" and type(item) is str:
                    out.append(f"{n} {_TYPE} <{_iri_cache.get(item) or iri(item)}> .\n")
                else:
                    out.append(f"{n} <{_iri_cache.get(k) or iri(k)}> {literal_nt(item)} .\n")
    return out


def object_nt(o: Any, literal: bool) -> str:
    if isinstance(o, str) and not literal:
        return f"<{_iri_cache.get(o) or iri(o)}>"
    return literal_nt(o)


def fact_lines(s: str, p: str, o: Any, attrs: dict | None, literal: bool) -> list[str]:
    cache = _iri_cache
    sn = f"<{cache.get(s) or iri(s)}>"
    pn = f"<{cache.get(p) or iri(p)}>"
    on = object_nt(o, literal)
    if not attrs:
        return [f"{sn} {pn} {on} .\n"]
    st = f"<{fact_iri(s, p, o)}>"
    out = [f"{sn} {pn} {on} .\n{st} {_TYPE} {_STATEMENT} .\n{st} {_SUBJ} {sn} .\n{st} {_PRED} {pn} .\n"
           f"{st} {_OBJ} {on} .\n"]
    for k, v in attrs.items():
        kn = cache.get(k) or iri(k)
        if type(v) is list or type(v) is tuple:
            for item in _values(v):
                out.append(f"{st} <{kn}> {literal_nt(item)} .\n")
        elif v is not None:
            out.append(f"{st} <{kn}> {literal_nt(v)} .\n")
    return out


def iter_ntriples(facts: dict, nodes: dict[str, dict], is_literal: Callable[[str], bool],
                  chunk_lines: int = 50_000) -> Iterator[str]:
    """N-Triples of the whole graph, in chunks of about `chunk_lines` lines."""
    parts: list[str] = []
    seen: set[str] = set()
    for name, props in nodes.items():
        parts.extend(node_lines(name, props))
        seen.add(name)
    lit_cache: dict[str, bool] = {}
    label = f"<{RDFS}label>"
    append = parts.append
    cache = _iri_cache
    for (s, p, o), attrs in facts.items():
        lit = lit_cache.get(p)
        if lit is None:
            lit = lit_cache[p] = is_literal(p)
        if attrs or lit or type(o) is not str:
            parts.extend(fact_lines(s, p, o, attrs, lit))
        else:  # the common case, inlined
            si = cache.get(s) or iri(s)
            pi = cache.get(p) or iri(p)
            oi = cache.get(o) or iri(o)
            append(f"<{si}> <{pi}> <{oi}> .\n")
        if s not in seen:
            seen.add(s)
            append(f"<{iri(s)}> {label} {literal_nt(s)} .\n")
        if not lit and type(o) is str and o not in seen:
            seen.add(o)
            append(f"<{iri(o)}> {label} {literal_nt(o)} .\n")
        if len(parts) >= chunk_lines:
            yield "".join(parts)
            parts.clear()
    if parts:
        yield "".join(parts)


def graph_ntriples(facts: dict, nodes: dict[str, dict], is_literal: Callable[[str], bool]) -> str:
    """N-Triples of the whole graph."""
    return "".join(iter_ntriples(facts, nodes, is_literal))


def load_store(store: Any, facts: dict, nodes: dict[str, dict], is_literal: Callable[[str], bool]) -> None:
    """Bulk-load the graph into an Oxigraph store. Large graphs are spooled through a temporary file
    in chunks, so the whole N-Triples text is never held in memory twice."""
    import tempfile

    import pyoxigraph as ox

    # Store.load is as fast as bulk_load for an in-memory store and peaks much lower; `lenient` skips
    # re-validating IRIs that `iri()` has already made valid (about 15% faster)
    if len(facts) < 200_000:
        text = graph_ntriples(facts, nodes, is_literal)
        if text:
            store.load(text.encode("utf-8"), ox.RdfFormat.N_TRIPLES, lenient=True)
        return
    with tempfile.TemporaryFile() as fh:
        for chunk in iter_ntriples(facts, nodes, is_literal):
            fh.write(chunk.encode("utf-8"))
        fh.seek(0)
        store.load(fh, ox.RdfFormat.N_TRIPLES, lenient=True)


# ---------------------------------------------------------------------------------- Oxigraph

class Projection:
    """A live Oxigraph store of the graph, kept current by the writes of TrikeDB."""

    def __init__(self, facts: dict, nodes: dict[str, dict], is_literal: Callable[[str], bool]):
        import pyoxigraph as ox

        self._ox = ox
        self.is_literal = is_literal
        self.store = ox.Store()
        load_store(self.store, facts, nodes, is_literal)

    def _quads(self, lines: list[str]) -> list:
        ox = self._ox
        return list(ox.parse("".join(lines).encode("utf-8"), ox.RdfFormat.N_TRIPLES))

    def add_fact(self, s: str, p: str, o: Any, attrs: dict | None) -> None:
        lines = fact_lines(s, p, o, attrs, self.is_literal(p))
        label = f"<{RDFS}label>"
        lines.append(f"<{iri(s)}> {label} {literal_nt(s)} .\n")
        if isinstance(o, str) and not self.is_literal(p):
            lines.append(f"<{iri(o)}> {label} {literal_nt(o)} .\n")
        self.store.extend(self._quads(lines))

    def remove_fact(self, s: str, p: str, o: Any, attrs: dict | None) -> None:
        for q in self._quads(fact_lines(s, p, o, attrs, self.is_literal(p))):
            self.store.remove(q)

    def set_node(self, name: str, old: dict | None, new: dict | None) -> None:
        for q in self._quads(node_lines(name, old)):
            self.store.remove(q)
        self.store.extend(self._quads(node_lines(name, new)))

    def drop_label(self, name: str) -> None:
        ox = self._ox
        self.store.remove(ox.Quad(ox.NamedNode(iri(name)), ox.NamedNode(RDFS + "label"), ox.Literal(name)))

    def query(self, text: str) -> Any:
        try:
            return convert_results(self.store.query(text, prefixes=PREFIXES))
        except SyntaxError as exc:
            raise QueryError(f"bad SPARQL: {exc}") from None
        except OSError as exc:
            raise QueryError(f"SPARQL failed: {exc}") from None


_XSD_INT = {XSD + t for t in ("integer", "int", "long", "short", "byte", "nonNegativeInteger",
                              "positiveInteger", "negativeInteger", "nonPositiveInteger",
                              "unsignedInt", "unsignedLong", "unsignedShort", "unsignedByte")}


def term_value(term: Any) -> Any:
    """A Python value for an Oxigraph term: names for trike IRIs, typed values for literals."""
    import pyoxigraph as ox

    if term is None:
        return None
    if type(term) is ox.NamedNode:
        return name_of(term.value)
    if isinstance(term, ox.BlankNode):
        return "_:" + term.value
    if isinstance(term, ox.Literal):
        dt = term.datatype.value
        v = term.value
        try:
            if dt in _XSD_INT:
                return int(v)
            if dt in (XSD + "double", XSD + "float", XSD + "decimal"):
                return float(v)
            if dt == XSD + "boolean":
                return v in ("true", "1")
            if dt == XSD + "date":
                return _dt.date.fromisoformat(v[:10])
            if dt == XSD + "dateTime":
                return _dt.datetime.fromisoformat(v.replace("Z", "+00:00"))
        except ValueError:
            return v
        return v
    if isinstance(term, ox.Triple):
        return {"s": term_value(term.subject), "p": term_value(term.predicate), "o": term_value(term.object)}
    return str(term)


def convert_results(res: Any) -> Any:
    import pyoxigraph as ox

    if isinstance(res, ox.QueryBoolean):
        return bool(res)
    if isinstance(res, ox.QuerySolutions):
        names = [v.value for v in res.variables]
        conv = term_value
        if len(names) == 1:
            (n,) = names
            return [{n: conv(sol[0])} for sol in res]
        idx = list(enumerate(names))
        return [{n: conv(sol[i]) for i, n in idx} for sol in res]
    if isinstance(res, ox.QueryTriples):
        return [{"s": term_value(t.subject), "p": term_value(t.predicate), "o": term_value(t.object)}
                for t in res]
    return res


def iter_ntriples_quads(text: str) -> Iterator:
    import pyoxigraph as ox

    return ox.parse(text.encode("utf-8"), ox.RdfFormat.N_TRIPLES)


# ---------------------------------------------------------------------------------- SPARQL UPDATE

def update_changes(proj: Projection, text: str, onto: Any) -> dict:
    """Run a SPARQL UPDATE on a copy of the projection and map the difference back to trike changes:
    `{"add_facts": [((s, p, o), attrs)], "remove_facts": [(s, p, o)], "node_props": {name: props}}`.

    Mapping back: a triple whose object is an IRI is a fact; `rdf:type` sets the node type; a literal
    object is a fact when its predicate is declared in the ontology, a node property otherwise;
    `rdf:Statement` resources carry fact attributes; `rdfs:label` is derived and ignored."""
    import pyoxigraph as ox

    if not isinstance(text, str) or not text.strip():
        raise QueryError("empty SPARQL update")
    before = set(proj.store)
    tmp = ox.Store()
    tmp.extend(before)
    try:
        tmp.update(text, prefixes=PREFIXES)
    except SyntaxError as exc:
        raise QueryError(f"bad SPARQL update: {exc}") from None
    except OSError as exc:
        raise QueryError(f"SPARQL update failed: {exc}") from None
    after = set(tmp)
    added = after - before
    removed = before - after
    if not added and not removed:
        return {"add_facts": [], "remove_facts": [], "node_props": {}}

    rdf_type = RDF + "type"
    label = RDFS + "label"
    stmt_preds = {RDF + "subject", RDF + "predicate", RDF + "object"}

    def is_stmt(subject: Any, store_quads: set) -> bool:
        if isinstance(subject, ox.NamedNode) and subject.value.startswith(FACT_NS):
            return True
        return ox.Quad(subject, ox.NamedNode(rdf_type), ox.NamedNode(RDF + "Statement")) in store_quads

    def name(term: Any, role: str) -> str:
        if isinstance(term, ox.NamedNode):
            return name_of(term.value)
        raise QueryError(f"cannot map a {type(term).__name__} {role} to a trike name; use t: IRIs")

    def is_fact_literal(p: str) -> bool:
        return bool(onto.enabled and p in onto.predicates)

    stmts: set = set()
    remove_facts: list[tuple] = []
    add_facts: dict[tuple, dict] = {}
    nodes_touched: set[str] = set()
    for quad, sign in [(q, -1) for q in removed] + [(q, 1) for q in added]:
        s, p, o = quad.subject, quad.predicate.value, quad.object
        if is_stmt(s, before) or is_stmt(s, after):
            stmts.add(s)
            continue
        if p == label:
            continue
        sname = name(s, "subject")
        if p == rdf_type or (isinstance(o, ox.Literal) and not is_fact_literal(name_of(p))):
            nodes_touched.add(sname)
            continue
        pname = name_of(p)
        oval = name_of(o.value) if isinstance(o, ox.NamedNode) else term_value(o)
        if isinstance(o, ox.BlankNode):
            raise QueryError("cannot map a blank node object to a trike name; use t: IRIs")
        key = (sname, pname, oval)
        if sign < 0:
            remove_facts.append(key)
        else:
            add_facts[key] = {}
    # fact attributes from rdf:Statement resources (as they are after the update)
    for st in stmts:
        parts = {q.predicate.value: q.object for q in after if q.subject == st and q.predicate.value in stmt_preds}
        old_parts = {q.predicate.value: q.object for q in before
                     if q.subject == st and q.predicate.value in stmt_preds}
        src = parts if len(parts) == 3 else old_parts
        if len(src) != 3:
            continue
        s_t, p_t, o_t = src[RDF + "subject"], src[RDF + "predicate"], src[RDF + "object"]
        key = (name(s_t, "subject"), name(p_t, "predicate"),
               name_of(o_t.value) if isinstance(o_t, ox.NamedNode) else term_value(o_t))
        attrs: dict[str, Any] = {}
        if len(parts) == 3:
            for q in after:
                if q.subject != st or q.predicate.value in stmt_preds:
                    continue
                if q.predicate.value == rdf_type and isinstance(q.object, ox.NamedNode) and \
                        q.object.value == RDF + "Statement":
                    continue
                k = name_of(q.predicate.value)
                v = term_value(q.object)
                if k in attrs:
                    attrs[k] = (attrs[k] if isinstance(attrs[k], list) else [attrs[k]]) + [v]
                else:
                    attrs[k] = v
        if key in remove_facts:
            continue
        add_facts[key] = attrs
    node_props: dict[str, dict] = {}
    for n in nodes_touched:
        subj = ox.NamedNode(iri(n))
        props: dict[str, Any] = {}
        for q in tmp.quads_for_pattern(subj, None, None):
            p = q.predicate.value
            if p == label:
                continue
            if p == rdf_type and isinstance(q.object, ox.NamedNode):
                k, v = "type", name_of(q.object.value)
            elif isinstance(q.object, ox.Literal) and not is_fact_literal(name_of(p)):
                k, v = name_of(p), term_value(q.object)
            else:
                continue
            if k in props:
                props[k] = (props[k] if isinstance(props[k], list) else [props[k]]) + [v]
            else:
                props[k] = v
        node_props[n] = props
    return {"add_facts": list(add_facts.items()), "remove_facts": remove_facts, "node_props": node_props}
