"""Rule commands: declare (OWL axioms in the ontology), infer (OWL 2 RL), validate (SHACL)."""

from __future__ import annotations

import argparse
import sys

from .common import add_json_flag, format_fact, format_value, open_db, print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "declare",
        help="declare rule properties: trike declare FILE NAME transitive | symmetric | functional | "
             "inverse_of:P | subproperty_of:P | domain:T | range:T | subclass_of:C | has_value:P=V",
        description="Declare a predicate's rule properties (transitive, symmetric, functional, inverse_of:P, "
                    "subproperty_of:P, domain:TYPE, range:TYPE) or a class's axioms (subclass_of:CLASS, "
                    "has_value:PREDICATE=VALUE); description:TEXT for either; -KEY removes a key. "
                    "Written to the file's ontology section.")
    p.add_argument("file")
    p.add_argument("name", help="predicate or class name")
    p.add_argument("properties", nargs="*", metavar="PROPERTY")
    add_json_flag(p)
    p.set_defaults(func=cmd_declare)

    p = sub.add_parser("infer", help="the facts OWL 2 RL rules add (--apply writes them, tagged inferred: true)")
    p.add_argument("file")
    p.add_argument("--apply", action="store_true",
                   help="write the inferred facts to the file and remove inferred facts that no longer follow")
    add_json_flag(p)
    p.set_defaults(func=cmd_infer)

    p = sub.add_parser("validate", help="check SHACL shapes; one line per violation, exit 1 when any")
    p.add_argument("file")
    p.add_argument("shapes", nargs="?",
                   help="Turtle file, or YAML with shapes: (default: the shapes: section of FILE)")
    add_json_flag(p)
    p.set_defaults(func=cmd_validate)


def cmd_declare(args: argparse.Namespace) -> int:
    db = open_db(args.file, must_exist=False)
    result = db.declare(args.name, *args.properties)
    if args.json:
        print_json(result)
        return 0
    kind = "class " if result["kind"] == "class" else ""
    print(f"{kind}{result['name']}  {format_value(result['spec'])}")
    if result["also_declared"]:
        print(f"also declared: {', '.join(result['also_declared'])}", file=sys.stderr)
    return 0


def cmd_infer(args: argparse.Namespace) -> int:
    from ..reasoning import materialize

    db = open_db(args.file)
    result = materialize(db, apply=args.apply)
    if args.json:
        print_json({"applied": args.apply, **result})
        return 0
    for f in result["added"]:
        print("+ " + format_fact(f))
    for f in result["removed"]:
        print("- " + format_fact(f))
    n_add, n_rm = len(result["added"]), len(result["removed"])
    if not n_add and not n_rm:
        print(f"{args.file}: inferred facts are up to date", file=sys.stderr)
    elif args.apply:
        print(f"{args.file}: wrote {n_add} inferred fact(s), removed {n_rm} that no longer follow",
              file=sys.stderr)
    else:
        print(f"{n_add} fact(s) follow, {n_rm} inferred fact(s) no longer follow; "
              f"`trike infer {args.file} --apply` writes this", file=sys.stderr)
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    db = open_db(args.file)
    results = db.validate(args.shapes)
    if args.json:
        print_json(results)
    else:
        for r in results:
            print(f"{args.file}: {r['message']}")
        if not results:
            print(f"{args.file}: ok", file=sys.stderr)
    return 1 if results else 0
