"""Core commands: init, add, rm, node, match, query, sparql, update, get, related, stats, export, check."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .common import (
    add_json_flag,
    format_fact,
    format_value,
    open_db,
    parse_attrs,
    print_json,
    print_mapping,
    print_rows,
    read_arg_text,
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("init", help="create a new graph file")
    p.add_argument("file", nargs="?", default="graph.yaml")
    p.add_argument("--template", help="start from a starter ontology (see `trike init --list-templates`)")
    p.add_argument("--list-templates", action="store_true", help="list the starter ontologies")
    p.add_argument("--force", action="store_true", help="overwrite an existing file")
    p.set_defaults(func=cmd_init)

    p = sub.add_parser("add", help="add a fact: trike add FILE S P O [-a key=value ...]")
    p.add_argument("file")
    p.add_argument("s")
    p.add_argument("p")
    p.add_argument("o")
    p.add_argument("-a", "--attr", action="append", metavar="KEY=VALUE", help="edge attribute")
    p.add_argument("--literal", action="store_true",
                   help="read O as a typed value (9600 -> integer, 2024-09-02 -> date) instead of a name")
    add_json_flag(p)
    p.set_defaults(func=cmd_add)

    p = sub.add_parser("rm", help="remove matching facts")
    p.add_argument("file")
    p.add_argument("-s", help="subject (glob ok)")
    p.add_argument("-p", help="predicate (glob ok)")
    p.add_argument("-o", help="object (glob ok)")
    add_json_flag(p)
    p.set_defaults(func=cmd_rm)

    p = sub.add_parser("node", help="set node properties: trike node FILE NAME -a key=value")
    p.add_argument("file")
    p.add_argument("name")
    p.add_argument("-a", "--attr", action="append", metavar="KEY=VALUE",
                   help="property (key= with no value deletes it)")
    add_json_flag(p)
    p.set_defaults(func=cmd_node)

    p = sub.add_parser("match", help="facts matching s/p/o (exact or glob) and attributes")
    p.add_argument("file")
    p.add_argument("-s")
    p.add_argument("-p")
    p.add_argument("-o")
    p.add_argument("-a", "--attr", action="append", metavar="KEY=VALUE", help="attribute filter")
    p.add_argument("--as-of", help="only facts valid on this date (default today; 'all' for every fact)")
    p.add_argument("--limit", type=int)
    add_json_flag(p)
    p.set_defaults(func=cmd_match)

    p = sub.add_parser("query", help="conjunctive triple patterns: -w '?a P ?b' -w '?b Q ?c'")
    p.add_argument("file")
    p.add_argument("-w", "--where", action="append", required=True, metavar="PATTERN")
    p.add_argument("--as-of")
    p.add_argument("--limit", type=int)
    add_json_flag(p)
    p.set_defaults(func=cmd_query)

    p = sub.add_parser("sparql", help="run a SPARQL 1.1 query (QUERY, '-' for stdin, or @file.rq)")
    p.add_argument("file")
    p.add_argument("query")
    add_json_flag(p)
    p.set_defaults(func=cmd_sparql)

    p = sub.add_parser("update", help="run a SPARQL UPDATE through the ontology gate")
    p.add_argument("file")
    p.add_argument("update")
    add_json_flag(p)
    p.set_defaults(func=cmd_update)

    p = sub.add_parser("get", help="a node: properties, outgoing and incoming facts")
    p.add_argument("file")
    p.add_argument("name")
    add_json_flag(p)
    p.set_defaults(func=cmd_get)

    p = sub.add_parser("related", help="the neighbourhood of a node (1-3 hops)")
    p.add_argument("file")
    p.add_argument("name")
    p.add_argument("-d", "--depth", type=int, default=1)
    p.add_argument("--limit", type=int, default=200)
    add_json_flag(p)
    p.set_defaults(func=cmd_related)

    p = sub.add_parser("stats", help="counts of facts, nodes, predicates and types")
    p.add_argument("file")
    add_json_flag(p)
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("ontology", help="the declared predicates and classes")
    p.add_argument("file")
    add_json_flag(p)
    p.set_defaults(func=cmd_ontology)

    p = sub.add_parser("export", help="the RDF projection as Turtle, N-Triples or JSON-LD")
    p.add_argument("file")
    p.add_argument("--format", "-f", default="ttl", choices=["ttl", "nt", "jsonld"])
    p.add_argument("-o", "--output", help="write to this file instead of stdout")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("check", help="CI check: ontology violations, shapes, inference freshness, HTML freshness")
    p.add_argument("file")
    p.add_argument("--shapes", help="SHACL shapes (Turtle file or YAML with shapes:); default: the file's own")
    p.add_argument("--no-shapes", action="store_true", help="skip the shapes written in the file")
    p.add_argument("--inferred-fresh", action="store_true",
                   help="fail when re-running inference would change the file")
    p.add_argument("--html", metavar="PAGE", help="fail when this generated HTML page is stale")
    add_json_flag(p)
    p.set_defaults(func=cmd_check)


def cmd_init(args: argparse.Namespace) -> int:
    from ..errors import TrikeError
    from ..templates import list_templates, template_path

    if args.list_templates:
        for name, desc in list_templates().items():
            print(f"{name:24} {desc}")
        return 0
    path = Path(args.file)
    if path.exists() and not args.force:
        raise TrikeError(f"{path}: already exists (use --force to overwrite)")
    if args.template:
        text = template_path(args.template).read_text(encoding="utf-8")
        from ..yamlfile import dump, parse

        data = parse(text, str(args.template))
        from ..storage import LocalFileStorage

        LocalFileStorage(path).write_text(dump(data))
    else:
        from ..storage import LocalFileStorage

        LocalFileStorage(path).write_text("nodes: {}\ntriples: []\n")
    print(f"created {path}")
    return 0


def cmd_add(args: argparse.Namespace) -> int:
    from ..values import parse_cli_value

    db = open_db(args.file, must_exist=False)
    o: Any = parse_cli_value(args.o) if args.literal else args.o
    fact = db.add(args.s, args.p, o, **parse_attrs(args.attr))
    if args.json:
        print_json(fact)
    else:
        print(format_fact(fact))
    return 0


def cmd_rm(args: argparse.Namespace) -> int:
    db = open_db(args.file)
    n = db.remove(s=args.s, p=args.p, o=args.o)
    if args.json:
        print_json({"removed": n})
    else:
        print(f"removed {n} fact{'s' if n != 1 else ''}")
    return 0


def cmd_node(args: argparse.Namespace) -> int:
    db = open_db(args.file, must_exist=False)
    props = {}
    for pair in args.attr or []:
        if pair.endswith("=") and pair.count("=") == 1:
            props[pair[:-1]] = None
        else:
            props.update(parse_attrs([pair]))
    result = db.set_node(args.name, **props)
    if args.json:
        print_json({"name": args.name, "props": result})
    else:
        print(f"{args.name}  {format_value(result)}")
    return 0


def _print_facts(facts: list[dict], as_json: bool) -> None:
    if as_json:
        print_json(facts)
    else:
        for f in facts:
            print(format_fact(f))


def cmd_match(args: argparse.Namespace) -> int:
    db = open_db(args.file)
    facts = db.match(args.s, args.p, args.o, as_of=args.as_of, limit=args.limit, **parse_attrs(args.attr))
    _print_facts(facts, args.json)
    return 0


def cmd_query(args: argparse.Namespace) -> int:
    db = open_db(args.file)
    rows = db.query(args.where, as_of=args.as_of, limit=args.limit)
    print_rows(rows, args.json)
    return 0


def cmd_sparql(args: argparse.Namespace) -> int:
    db = open_db(args.file)
    result = db.sparql(read_arg_text(args.query))
    if isinstance(result, bool):
        print_json(result) if args.json else print("true" if result else "false")
    elif result and set(result[0]) == {"s", "p", "o"} and not args.json:
        _print_facts(result, False)
    else:
        print_rows(result, args.json)
    return 0


def cmd_update(args: argparse.Namespace) -> int:
    db = open_db(args.file)
    result = db.update(read_arg_text(args.update))
    if args.json:
        print_json(result)
    else:
        print(", ".join(f"{k}: {v}" for k, v in result.items()))
    return 0


def cmd_get(args: argparse.Namespace) -> int:
    db = open_db(args.file)
    node = db.get_node(args.name)
    if args.json:
        print_json(node)
        return 0
    print(node["name"])
    for k, v in node["props"].items():
        print(f"  {k}: {format_value(v)}")
    if node["out"]:
        print("out:")
        for f in node["out"]:
            print("  " + format_fact(f))
    if node["in"]:
        print("in:")
        for f in node["in"]:
            print("  " + format_fact(f))
    return 0


def cmd_related(args: argparse.Namespace) -> int:
    db = open_db(args.file)
    result = db.related(args.name, depth=args.depth, limit=args.limit)
    if args.json:
        print_json(result)
    else:
        _print_facts(result["facts"], False)
        if result["truncated"]:
            print(f"(cut at {args.limit} facts)")
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    db = open_db(args.file)
    stats = db.stats()
    if args.json:
        print_json(stats)
    else:
        print_mapping(stats)
    return 0


def cmd_ontology(args: argparse.Namespace) -> int:
    db = open_db(args.file)
    onto = db.ontology()
    if args.json:
        print_json(onto)
        return 0
    if not onto["enforced"]:
        print("(no ontology: every predicate is allowed)")
    for name, spec in onto["predicates"].items():
        print(f"{name}  {format_value(spec)}")
    for name, spec in onto["classes"].items():
        print(f"class {name}  {format_value(spec)}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    db = open_db(args.file)
    text = db.export(args.format)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """Each problem on a line as `FILE: problem`; exit 0 clean, 1 problems, 2 bad input."""
    import warnings

    from ..errors import TrikeError

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        db = open_db(args.file)
    problems: list[str] = [str(w.message) for w in caught]
    problems += db.check()
    shapes: Any = args.shapes
    if shapes or (not args.no_shapes and db.section("shapes")):
        try:
            for v in db.validate(shapes):
                problems.append(v.get("message") or str(v))
        except NotImplementedError as exc:
            raise TrikeError(f"shape validation is not available: {exc}") from None
    if args.inferred_fresh:
        from ..reasoning import stale_inferences

        stale = stale_inferences(db)
        for f in stale.get("missing", []):
            problems.append(f"inference is stale: re-run `trike infer --apply` (missing {format_fact(f)})")
        for f in stale.get("obsolete", []):
            problems.append(f"inference is stale: {format_fact(f)} is marked inferred but no longer follows")
    if args.html:
        from ..ui import page_hash

        page = Path(args.html)
        if not page.exists():
            problems.append(f"{page}: the HTML page does not exist (run `trike ui generate {args.file} -o {page}`)")
        else:
            embedded = page_hash(page)
            if embedded != db.content_hash():
                problems.append(f"{page} is stale: regenerate it with `trike ui generate {args.file} -o {page}`")
    if args.json:
        print_json({"file": args.file, "ok": not problems, "problems": problems})
    else:
        for line in problems:
            print(f"{args.file}: {line}")
        if not problems:
            print(f"{args.file}: ok", file=sys.stderr)
    return 1 if problems else 0
