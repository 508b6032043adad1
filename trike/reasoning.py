"""Rules: OWL 2 RL inference over the RDF projection (owlrl), written back as ordinary facts.

Declarations live in the file's `ontology:` section (see docs/rules.md):

```yaml
ontology:
  predicates:
    PART_OF: {description: "component -> whole", transitive: true}
    NEAR: {symmetric: true}
    OWNS: {inverse_of: OWNED_BY}
    MANAGES: {subproperty_of: RESPONSIBLE_FOR}
    契約単位: {domain: SaaS契約}
  classes:
    Slack契約: {subclass_of: SaaS契約}
    SaaS契約: {subclass_of: 契約, has_value: {監査対象: 監査部}}
```

`infer(db)` builds an RDF graph of the asserted facts that hold today (never the facts tagged
`inferred: true`), the node types and the OWL axioms above, runs owlrl's OWL 2 RL closure, and maps
the new triples back: a triple whose subject, predicate and object are trike names is a fact; a new
class membership `X rdf:type C` is the fact `X is_a C` (a node keeps its one asserted `type`);
anything else (owl:sameAs, owl:Thing, property and class bookkeeping, blank nodes) is dropped.
`infer(db, apply=True)` writes the missing ones with `inferred: true` and removes inferred facts that
no longer follow, so the file always equals one fresh materialization.
"""

from __future__ import annotations

import copy
import datetime as _dt
import re
from typing import Any

from .errors import OntologyError, TrikeError
from .ontology import _as_list

IS_A = "is_a"
IS_A_DESCRIPTION = "node -> a class it belongs to besides its type (derived by trike infer)"

# declaration keys: flags, links to another predicate, links to a class, class axioms
PREDICATE_FLAGS = ("transitive", "symmetric", "functional")
PREDICATE_LINKS = ("inverse_of", "subproperty_of", "domain", "range")
CLASS_KEYS = ("subclass_of", "has_value")
COMMON_KEYS = ("description",)
ALL_KEYS = PREDICATE_FLAGS + PREDICATE_LINKS + CLASS_KEYS + COMMON_KEYS

_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


def _rdf_libs() -> tuple[Any, Any]:
    try:
        import owlrl
        import rdflib
    except ImportError as exc:  # pragma: no cover - the rdf extra is a test dependency
        raise TrikeError(f"inference needs rdflib and owlrl: pip install 'trike[rdf]' ({exc})") from None
    return rdflib, owlrl


def _spec_dict(spec: Any) -> dict:
    if spec is None:
        return {}
    if isinstance(spec, dict):
        return dict(spec)
    return {"description": str(spec)}


# =============================================================================================== declare

def _parse_property(text: str) -> tuple[str, Any, bool]:
    """`transitive` | `-transitive` | `inverse_of:P` | `has_value:P=V` -> (key, value, remove)."""
    if not isinstance(text, str) or not text.strip():
        raise TrikeError(f"empty declaration {text!r}")
    text = text.strip()
    remove = text.startswith("-")
    if remove:
        text = text[1:]
    key, sep, value = text.partition(":")
    key = key.strip().lower().replace("-", "_")
    aliases = {"inverse": "inverse_of", "inverseof": "inverse_of", "subpropertyof": "subproperty_of",
               "subproperty": "subproperty_of", "subclassof": "subclass_of", "subclass": "subclass_of",
               "hasvalue": "has_value"}
    key = aliases.get(key, key)
    if key not in ALL_KEYS:
        raise TrikeError(
            f"unknown declaration {text!r}: use one of transitive, symmetric, functional, inverse_of:P, "
            f"subproperty_of:P, domain:TYPE, range:TYPE, subclass_of:CLASS, has_value:P=V, description:TEXT "
            f"(prefix - to remove, e.g. -transitive)")
    value = value.strip()
    if remove:
        return key, None, True
    if key in PREDICATE_FLAGS:
        if not sep or value.lower() in _TRUE:
            return key, True, False
        if value.lower() in _FALSE:
            return key, None, True
        raise TrikeError(f"{key} is a flag: write `{key}` (or `-{key}` to remove it), not {text!r}")
    if not sep or not value:
        raise TrikeError(f"{key} needs a value: {key}:NAME")
    if key == "has_value":
        prop, eq, val = value.partition("=")
        if not eq or not prop.strip() or not val.strip():
            raise TrikeError(f"has_value needs a predicate and a value: has_value:PREDICATE=VALUE, not {text!r}")
        return key, (prop.strip(), val.strip()), False
    return key, value, False


def declare(db: Any, predicate: str, *properties: str) -> dict:
    """Declare rule properties of a predicate (`transitive`, `symmetric`, `functional`, `inverse_of:P`,
    `subproperty_of:P`, `domain:T`, `range:T`) or axioms of a class (`subclass_of:C`, `has_value:P=V`);
    `description:TEXT` for either; `-KEY` removes a key.

    The declaration is written to the file's `ontology:` section (predicates under `predicates:`, classes
    under `classes:`). Declaring the first predicate of a graph that had no `predicates:` switches the
    ontology gate on, so every predicate already used in the graph is declared too (nothing that is in the
    file becomes a violation). A declaration that would make facts already in the file violate the gate
    (a domain, range or functional flag they break) is refused with the offending facts listed."""
    from .ontology import Ontology, is_datatype
    from .values import parse_cli_value

    name = predicate
    if not isinstance(name, str) or not name.strip():
        raise TrikeError(f"declare needs a predicate or class name, got {name!r}")
    name = name.strip()
    parsed = [_parse_property(p) for p in properties]
    keys = {k for k, _v, _r in parsed}
    class_keys = keys & set(CLASS_KEYS)
    pred_keys = keys & set(PREDICATE_FLAGS + PREDICATE_LINKS)
    if class_keys and pred_keys:
        raise TrikeError(
            f"{name}: {', '.join(sorted(class_keys))} are class axioms and {', '.join(sorted(pred_keys))} "
            f"are predicate properties; declare them separately")

    with db.batch():
        db.ontology()  # sync with the file
        raw: dict = copy.deepcopy(db._onto_raw) if isinstance(db._onto_raw, dict) else {}
        old_onto = Ontology(raw or None)
        existing_class = isinstance(raw.get("classes"), dict) and name in raw["classes"]
        existing_pred = isinstance(raw.get("predicates"), dict) and name in raw["predicates"]
        is_class = bool(class_keys) or (existing_class and not pred_keys and not existing_pred)
        section = "classes" if is_class else "predicates"
        if not isinstance(raw.get(section), dict):
            raw[section] = {}
        table: dict = raw[section]
        spec = _spec_dict(table.get(name))
        list_values: dict[str, list[str]] = {}
        for key, value, remove in parsed:
            if remove:
                spec.pop(key, None)
                continue
            if key in PREDICATE_FLAGS:
                spec[key] = True
            elif key == "description":
                spec[key] = value
            elif key == "has_value":
                prop, val = value
                hv = spec.get("has_value") if isinstance(spec.get("has_value"), dict) else {}
                hv = dict(hv)
                hv[prop] = parse_cli_value(val) if old_onto.is_literal_predicate(prop) else val
                spec["has_value"] = hv
            else:
                list_values.setdefault(key, []).append(value)
        for key, values in list_values.items():
            spec[key] = values[0] if len(values) == 1 else values
        # sanity of the declaration itself
        if not is_class:
            for d in _as_list(spec.get("domain")):
                if is_datatype(d):
                    raise TrikeError(f"{name}: domain:{d} is a datatype; a domain names the subject's type")
            ranges = _as_list(spec.get("range"))
            literal = bool(ranges) and all(is_datatype(r) for r in ranges)
            if literal:
                for flag in ("transitive", "symmetric", "inverse_of"):
                    if spec.get(flag):
                        raise TrikeError(f"{name}: {flag} needs a predicate between nodes, but its range "
                                         f"{', '.join(ranges)} is a datatype")
        table[name] = spec if spec else {}
        also: list[str] = []
        if not is_class:
            preds: dict = raw["predicates"]
            if not old_onto.enabled:
                # switching the gate on: keep every predicate already in use valid
                for f in db.facts():
                    p = f["p"]
                    if p not in preds:
                        preds[p] = {}
                        also.append(p)
            for target in _as_list(spec.get("inverse_of")):
                if target not in preds:
                    preds[target] = {"description": f"inverse of {name}"}
                    also.append(target)
            for target in _as_list(spec.get("subproperty_of")):
                if target not in preds:
                    preds[target] = {"description": f"generalises {name}"}
                    also.append(target)
        else:
            if old_onto.enabled and isinstance(spec.get("has_value"), dict):
                for prop in spec["has_value"]:
                    if prop not in raw["predicates"]:
                        raise TrikeError(f"{name}: has_value uses {prop!r}, which is not a declared predicate "
                                         f"(declare it first: trike declare FILE {prop})")
        new_onto = Ontology(raw)
        _refuse_new_violations(db, old_onto, new_onto, name)
        db.set_ontology(raw)
    return {
        "name": name,
        "kind": "class" if is_class else "predicate",
        "spec": dict(spec),
        "also_declared": also,
        "enforced": new_onto.enabled,
    }


def _refuse_new_violations(db: Any, old: Any, new: Any, name: str) -> None:
    if not new.enabled:
        return
    facts = {(f["s"], f["p"], f["o"]): {k: v for k, v in f.items() if k not in ("s", "p", "o")} or None
             for f in db.facts()}
    nodes = db.nodes()

    def type_of(n: str) -> str | None:
        t = (nodes.get(n) or {}).get("type")
        return t if isinstance(t, str) else None

    before = set(old.violations(facts, type_of)) if old.enabled else set()
    fresh = [v for v in new.violations(facts, type_of) if v not in before]
    if fresh:
        shown = "\n  ".join(fresh[:10])
        more = f"\n  ... and {len(fresh) - 10} more" if len(fresh) > 10 else ""
        raise OntologyError(
            f"declaring {name} would make {len(fresh)} fact(s) already in the file violate the ontology; "
            f"fix them first:\n  {shown}{more}")


# =============================================================================================== infer

def current_ontology(db: Any) -> Any:
    """The graph's ontology (synced with the file) as an `Ontology` object."""
    from .ontology import Ontology

    d = db.ontology()
    raw: dict = {"classes": d.get("classes") or {}}
    if d.get("enforced"):
        raw["predicates"] = d.get("predicates") or {}
    return Ontology(raw)


class _Model:
    """The premises and axioms of one inference run, and the mapping back to trike names."""

    def __init__(self, db: Any):
        from .graph import valid_at
        from .ontology import is_datatype

        self.db = db
        self.onto = current_ontology(db)
        self.is_datatype = is_datatype
        today = _dt.date.today()
        self.all_facts: dict[tuple, dict | None] = {}
        self.premises: list[tuple] = []
        for f in db.facts():
            key = (f["s"], f["p"], f["o"])
            attrs = {k: v for k, v in f.items() if k not in ("s", "p", "o")} or None
            self.all_facts[key] = attrs
            if attrs and attrs.get("inferred"):
                continue
            if not valid_at(attrs, today):
                continue
            self.premises.append(key)
        self.nodes: dict[str, dict] = db.nodes()
        # asserted class memberships: the `type` property and hand-written `is_a` facts
        self.asserted_types: dict[str, set[str]] = {}
        for n, props in self.nodes.items():
            for t in _as_list(props.get("type")) if isinstance(props.get("type"), (str, list)) else []:
                self.asserted_types.setdefault(n, set()).add(t)
        for s, p, o in self.premises:
            if p == IS_A and isinstance(o, str):
                self.asserted_types.setdefault(s, set()).add(o)

    def is_literal(self, p: str) -> bool:
        return self.onto.is_literal_predicate(p)

    def axioms(self, rdflib: Any) -> tuple[list[tuple], set[str], set[str]]:
        """OWL/RDFS triples for the declarations; the predicates and classes they mention."""
        from rdflib import OWL, RDF, RDFS, BNode, URIRef

        from .rdf import iri

        def u(n: str) -> Any:
            return URIRef(iri(n))

        out: list[tuple] = []
        preds: set[str] = set()
        classes: set[str] = set()
        for p, spec in self.onto.predicates.items():
            if p == IS_A:
                continue
            if spec.get("transitive"):
                out.append((u(p), RDF.type, OWL.TransitiveProperty))
                preds.add(p)
            if spec.get("symmetric"):
                out.append((u(p), RDF.type, OWL.SymmetricProperty))
                preds.add(p)
            for q in _as_list(spec.get("inverse_of")):
                out.append((u(p), OWL.inverseOf, u(q)))
                preds.update((p, q))
            for q in _as_list(spec.get("subproperty_of")):
                out.append((u(p), RDFS.subPropertyOf, u(q)))
                preds.update((p, q))
            # several domains/ranges are "any of" for the gate (an OWL union): nothing follows from them
            doms = _as_list(spec.get("domain"))
            if len(doms) == 1 and not self.is_datatype(doms[0]):
                out.append((u(p), RDFS.domain, u(doms[0])))
                preds.add(p)
                classes.add(doms[0])
            rngs = _as_list(spec.get("range"))
            if len(rngs) == 1 and not self.is_datatype(rngs[0]):
                out.append((u(p), RDFS.range, u(rngs[0])))
                preds.add(p)
                classes.add(rngs[0])
            # `functional` is the gate's job: with unique names a second value is a conflict, not owl:sameAs
        for c, spec in self.onto.classes.items():
            for sup in _as_list(spec.get("subclass_of")):
                out.append((u(c), RDFS.subClassOf, u(sup)))
                classes.update((c, sup))
            hv = spec.get("has_value")
            if isinstance(hv, dict):
                for prop, value in hv.items():
                    prop = str(prop)
                    r = BNode()
                    out.append((r, RDF.type, OWL.Restriction))
                    out.append((r, OWL.onProperty, u(prop)))
                    out.append((r, OWL.hasValue, self.term(rdflib, prop, value)))
                    out.append((u(c), RDFS.subClassOf, r))
                    preds.add(prop)
                    classes.add(c)
        return out, preds, classes

    def term(self, rdflib: Any, p: str, o: Any) -> Any:
        from .rdf import iri

        if isinstance(o, str) and not self.is_literal(p):
            return rdflib.URIRef(iri(o))
        return rdflib.Literal(o)

    def build(self, rdflib: Any) -> tuple[Any, set]:
        """The input graph: axioms, the premises that can take part in a rule, and class memberships."""
        from rdflib import RDF, URIRef

        from .rdf import iri

        axioms, preds, classes = self.axioms(rdflib)
        g = rdflib.Graph(store="SimpleMemory")
        for t in axioms:
            g.add(t)
        if not preds and not classes:
            return g, set(g)
        for s, p, o in self.premises:
            if p == IS_A or p not in preds:
                continue  # a predicate no axiom mentions takes part in no OWL 2 RL rule we emit
            g.add((URIRef(iri(s)), URIRef(iri(p)), self.term(rdflib, p, o)))
        for n, types in self.asserted_types.items():
            for t in types:
                if t in classes:  # a class no axiom mentions takes part in no rule either
                    g.add((URIRef(iri(n)), RDF.type, URIRef(iri(t))))
        return g, set(g)

    def derive(self) -> dict[tuple, None]:
        """Every fact that follows from the premises and is not itself a premise."""
        rdflib, owlrl = _rdf_libs()
        from rdflib import RDF, Literal, URIRef

        from .rdf import NS, name_of

        g, before = self.build(rdflib)
        if not len(g):
            return {}
        owlrl.DeductiveClosure(_semantics(owlrl), axiomatic_triples=False,
                               datatype_axioms=False).expand(g)
        premises = set(self.premises)
        known_nodes = self.nodes
        out: dict[tuple, None] = {}
        for s, p, o in g:
            if (s, p, o) in before or not isinstance(s, URIRef) or not isinstance(p, URIRef):
                continue
            sv, pv = str(s), str(p)
            if not sv.startswith(NS):
                continue
            sname = name_of(sv)
            if sname not in known_nodes:
                continue  # a predicate or class of the schema, not a node of the graph
            if p == RDF.type:
                if not isinstance(o, URIRef) or not str(o).startswith(NS):
                    continue
                cname = name_of(str(o))
                if cname in self.asserted_types.get(sname, ()):
                    continue
                key: tuple = (sname, IS_A, cname)
            else:
                if not pv.startswith(NS):
                    continue
                pname = name_of(pv)
                if isinstance(o, URIRef):
                    if not str(o).startswith(NS):
                        continue
                    key = (sname, pname, name_of(str(o)))
                elif isinstance(o, Literal):
                    value = o.toPython()
                    if isinstance(value, Literal) or value is None:
                        continue
                    if isinstance(value, str) and not self.is_literal(pname):
                        continue  # would not read back as the same fact
                    key = (sname, pname, value)
                else:
                    continue
            if key in premises:
                continue
            out[key] = None
        return out


_SEMANTICS: list = []


def _semantics(owlrl: Any) -> Any:
    """owlrl's OWL 2 RL rule set without the equality (eq-*) rules. They only act on owl:sameAs, which
    the axioms trike emits can never produce (no functional or inverse-functional properties, keys or
    max-cardinality restrictions: `functional` is the gate's job); without them owlrl skips writing
    `x owl:sameAs x` for every resource and re-checking those each cycle (1.7x faster at 10k facts)."""
    if not _SEMANTICS:
        class TrikeOWLRL(owlrl.OWLRL_Semantics):
            def _equality(self, triple: Any, cycle_num: int) -> None:
                return None

        _SEMANTICS.append(TrikeOWLRL)
    return _SEMANTICS[0]


def _plan(db: Any) -> dict:
    model = _Model(db)
    derived = model.derive()
    missing = sorted((k for k in derived if k not in model.all_facts), key=_sort_key)
    obsolete = [k for k, a in model.all_facts.items() if a and a.get("inferred") and k not in derived]
    return {"model": model, "derived": derived, "missing": missing, "obsolete": obsolete}


def _sort_key(key: tuple) -> tuple:
    return (key[0], key[1], type(key[2]).__name__, str(key[2]))


def _fact(key: tuple, attrs: dict | None) -> dict:
    d = {"s": key[0], "p": key[1], "o": key[2]}
    if attrs:
        d.update(attrs)
    return d


def stale_inferences(db: Any) -> dict:
    """What re-running `infer(apply=True)` would change: `{"missing": [facts that follow but are not in
    the file], "obsolete": [facts tagged inferred: true that no longer follow]}`. The closure is computed
    from the asserted facts only, so an inferred fact never keeps itself alive."""
    plan = _plan(db)
    model = plan["model"]
    return {
        "missing": [_fact(k, {"inferred": True}) for k in plan["missing"]],
        "obsolete": [_fact(k, model.all_facts.get(k)) for k in plan["obsolete"]],
    }


_GLOB = re.compile(r"([*?\[])")


def _exact(value: Any) -> Any:
    """A name as a pattern that `remove` matches literally (glob characters escaped)."""
    return _GLOB.sub(r"[\1]", value) if isinstance(value, str) else value


def materialize(db: Any, apply: bool = False) -> dict:
    """`{"added": [facts], "removed": [facts]}`: the inferred facts missing from the file and the
    inferred facts that no longer follow. With `apply=True` both changes are written in one batch
    (all or nothing); a fact the ontology gate refuses aborts the batch with every refusal listed."""
    if not apply:
        st = stale_inferences(db)
        return {"added": st["missing"], "removed": st["obsolete"]}
    from .ontology import Ontology

    with db.batch():
        plan = _plan(db)
        model = plan["model"]
        added = [_fact(k, {"inferred": True}) for k in plan["missing"]]
        removed = [_fact(k, model.all_facts.get(k)) for k in plan["obsolete"]]
        if not added and not removed:
            return {"added": [], "removed": []}
        for k in plan["obsolete"]:
            tag = (model.all_facts.get(k) or {}).get("inferred", True)
            db.remove(_exact(k[0]), _exact(k[1]), _exact(k[2]), inferred=tag)
        if model.onto.enabled and any(k[1] == IS_A for k in plan["missing"]) and \
                IS_A not in model.onto.predicates:
            raw = copy.deepcopy(db._onto_raw)
            raw["predicates"][IS_A] = {"description": IS_A_DESCRIPTION}
            db.set_ontology(raw)
        onto = Ontology(db._onto_raw if isinstance(db._onto_raw, dict) else None)
        refused: list[str] = []
        for k in plan["missing"]:
            if onto.enabled and k[1] not in onto.predicates:
                refused.append(f"{k[0]} {k[1]} {k[2]}: {k[1]} is not a declared predicate")
                continue
            try:
                db.add(k[0], k[1], k[2], inferred=True)
            except OntologyError as exc:
                refused.append(str(exc))
        if refused:
            shown = "\n  ".join(refused[:10])
            more = f"\n  ... and {len(refused) - 10} more" if len(refused) > 10 else ""
            raise OntologyError(
                f"{len(refused)} inferred fact(s) are refused by the ontology gate, so the rules and the "
                f"gate disagree (nothing was written); fix the declarations or the facts:\n  {shown}{more}")
    return {"added": added, "removed": removed}


def infer(db: Any, apply: bool = False) -> list[dict]:
    """The facts that the OWL 2 RL rules add to the graph (each `{s, p, o, inferred: True}`), and only
    those: facts already in the file are not repeated. `apply=True` writes them to the file, tagged
    `inferred: true`, and removes inferred facts that no longer follow; running it again adds nothing."""
    return materialize(db, apply=apply)["added"]


def instances(db: Any, cls: str) -> list[str]:
    """Every node that belongs to `cls`: its `type` (or a declared subclass of it) or an `is_a` fact."""
    onto = db.ontology()
    classes = onto.get("classes") or {}
    subs: set[str] = {cls}
    changed = True
    while changed:
        changed = False
        for c, spec in classes.items():
            if c not in subs and set(_as_list((spec or {}).get("subclass_of"))) & subs:
                subs.add(c)
                changed = True
    out: dict[str, None] = {}
    for n, props in db.nodes().items():
        t = props.get("type")
        if isinstance(t, str) and t in subs or isinstance(t, list) and set(map(str, t)) & subs:
            out[n] = None
    for f in db.match(p=IS_A):
        if f["o"] in subs:
            out[f["s"]] = None
    return list(out)


__all__ = ["declare", "infer", "materialize", "stale_inferences", "instances", "IS_A"]
