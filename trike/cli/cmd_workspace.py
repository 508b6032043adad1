"""`trike ws FILE COMMAND ...`: read a workspace (the union of several graphs) from the command line.

    trike ws workspace.yaml graphs                         the member graphs and their state
    trike ws workspace.yaml stats | ontology | check | hash
    trike ws workspace.yaml match -p OWNED_BY [-g billing]
    trike ws workspace.yaml query -w '?job INGESTS_TO ?t' -w '?t OWNED_BY ?team'
    trike ws workspace.yaml sparql 'SELECT ?g ?s WHERE { GRAPH ?g { ?s t:OWNED_BY ?o } }'
    trike ws workspace.yaml get NAME | related NAME | history NAME | search WORDS
    trike ws workspace.yaml export -f trig

Every command takes --json. Facts print with their graph first: `billing  RAW_INVOICES  OWNED_BY  billing-team`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .common import (
    add_json_flag,
    format_fact,
    format_value,
    parse_attrs,
    print_json,
    print_mapping,
    print_rows,
    read_arg_text,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    ws = subparsers.add_parser(
        "ws",
        help="read a workspace (several graphs as one, read-only): trike ws FILE COMMAND",
        description="Read a workspace file (`graphs:` naming several graph files or URLs) as one graph. "
                    "Every fact carries the name of the graph it came from. Workspaces are read-only: "
                    "write to the member graph files.",
        epilog="examples:\n"
               "  trike ws workspace.yaml graphs\n"
               "  trike ws workspace.yaml match -p OWNED_BY -g billing\n"
               "  trike ws workspace.yaml query -w '?src FEEDS ?t' -w '?t OWNED_BY ?team'\n"
               "  trike ws workspace.yaml sparql 'SELECT ?g ?s WHERE { GRAPH ?g { ?s t:OWNED_BY ?o } }'\n"
               "  trike ws workspace.yaml check",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ws.add_argument("file", help="the workspace file (or a folder with a workspace.yaml)")
    sub = ws.add_subparsers(dest="ws_command", metavar="COMMAND")
    ws.set_defaults(func=_missing_command, ws_parser=ws)

    p = sub.add_parser("graphs", help="the member graphs: name, source, facts, state")
    add_json_flag(p)
    p.set_defaults(func=cmd_graphs)

    p = sub.add_parser("stats", help="counts over the union and per graph")
    add_json_flag(p)
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("match", help="facts matching s/p/o (exact or glob), attributes and graph")
    p.add_argument("-s")
    p.add_argument("-p")
    p.add_argument("-o")
    p.add_argument("-a", "--attr", action="append", metavar="KEY=VALUE", help="attribute filter")
    _graph_flag(p)
    p.add_argument("--as-of", help="only facts valid on this date (default today; 'all' for every fact)")
    p.add_argument("--limit", type=int)
    add_json_flag(p)
    p.set_defaults(func=cmd_match)

    p = sub.add_parser("query", help="conjunctive triple patterns over the union: -w '?a P ?b' -w '?b Q ?c'")
    p.add_argument("-w", "--where", action="append", required=True, metavar="PATTERN")
    _graph_flag(p)
    p.add_argument("--as-of")
    p.add_argument("--limit", type=int)
    add_json_flag(p)
    p.set_defaults(func=cmd_query)

    p = sub.add_parser("sparql", help="SPARQL over the union; each graph is also GRAPH g:NAME")
    p.add_argument("query", help="the query, '-' for stdin, or @file.rq")
    add_json_flag(p)
    p.set_defaults(func=cmd_sparql)

    p = sub.add_parser("get", help="a node across graphs: properties, outgoing and incoming facts")
    p.add_argument("name")
    add_json_flag(p)
    p.set_defaults(func=cmd_get)

    p = sub.add_parser("related", help="the neighbourhood of a node across graphs (1-3 hops)")
    p.add_argument("name")
    p.add_argument("-d", "--depth", type=int, default=1)
    p.add_argument("--limit", type=int, default=200)
    add_json_flag(p)
    p.set_defaults(func=cmd_related)

    p = sub.add_parser("history", help="a subject's values over time, from every graph")
    p.add_argument("subject")
    p.add_argument("-p", "--predicate")
    add_json_flag(p)
    p.set_defaults(func=cmd_history)

    p = sub.add_parser("search", help="free-text search over the union")
    p.add_argument("query")
    p.add_argument("-k", type=int, default=10)
    p.add_argument("--model", help="model2vec model name or folder ('none' for words only)")
    add_json_flag(p)
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("ontology", help="the members' ontologies merged (and which graph declares what)")
    add_json_flag(p)
    p.set_defaults(func=cmd_ontology)

    p = sub.add_parser("check", help="problems: member checks, ontology clashes, disagreements between graphs")
    add_json_flag(p)
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("export", help="the union as RDF (ttl, nt, jsonld) or with graphs kept apart (nq, trig)")
    p.add_argument("--format", "-f", default="ttl", choices=["ttl", "nt", "jsonld", "nq", "trig"])
    p.add_argument("-o", "--output", help="write to this file instead of stdout")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("hash", help="the content hash of the union (changes when any member changes)")
    add_json_flag(p)
    p.set_defaults(func=cmd_hash)


def _graph_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("-g", "--graph", action="append", metavar="NAME",
                   help="only this member graph (repeatable; glob ok)")


def _missing_command(args: argparse.Namespace) -> int:
    args.ws_parser.print_help(sys.stderr)
    return 2


def _open(args: argparse.Namespace):
    from ..errors import TrikeError
    from ..workspace import open_workspace

    p = Path(args.file)
    if p.is_dir():
        found = [p / n for n in ("workspace.yaml", "workspace.yml") if (p / n).is_file()]
        if not found:
            raise TrikeError(f"{args.file}: a folder without a workspace.yaml")
        p = found[0]
    if not p.exists():
        raise TrikeError(f"{args.file}: no such file")
    return open_workspace(p)


def _fact_line(f: dict) -> str:
    rest = {k: v for k, v in f.items() if k != "graph"}
    return f"{f.get('graph', '')}  {format_fact(rest)}"


def _print_facts(facts: list[dict], as_json: bool) -> None:
    if as_json:
        print_json(facts)
        return
    for f in facts:
        print(_fact_line(f))


def cmd_graphs(args: argparse.Namespace) -> int:
    ws = _open(args)
    graphs = ws.graphs()
    if args.json:
        print_json({"workspace": ws.name, "graphs": graphs})
        return 0
    width = max(len(g["name"]) for g in graphs)
    for g in graphs:
        state = f"{g['facts']} facts" if g["ok"] else f"UNAVAILABLE: {g.get('error')}"
        if g.get("stale"):
            state += f" (old copy from {g.get('fetched_at')}: {g.get('error')})"
        print(f"{g['name']:<{width}}  {g['kind']:<4}  {g['source']}  {state}")
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    stats = _open(args).stats()
    if args.json:
        print_json(stats)
    else:
        print_mapping(stats)
    return 0


def cmd_match(args: argparse.Namespace) -> int:
    facts = _open(args).match(args.s, args.p, args.o, as_of=args.as_of, limit=args.limit, graph=args.graph,
                              **parse_attrs(args.attr))
    _print_facts(facts, args.json)
    return 0


def cmd_query(args: argparse.Namespace) -> int:
    rows = _open(args).query(args.where, as_of=args.as_of, limit=args.limit, graph=args.graph)
    print_rows(rows, args.json)
    return 0


def cmd_sparql(args: argparse.Namespace) -> int:
    result = _open(args).sparql(read_arg_text(args.query))
    if isinstance(result, bool):
        print_json(result) if args.json else print("true" if result else "false")
    elif result and set(result[0]) == {"s", "p", "o"} and not args.json:
        for f in result:
            print(format_fact(f))
    else:
        print_rows(result, args.json)
    return 0


def cmd_get(args: argparse.Namespace) -> int:
    node = _open(args).get_node(args.name)
    if args.json:
        print_json(node)
        return 0
    print(f"{node['name']}  (in {', '.join(node['graphs'])})")
    for k, v in node["props"].items():
        print(f"  {k}: {format_value(v)}")
    for title in ("out", "in"):
        if node[title]:
            print(f"{title}:")
            for f in node[title]:
                print("  " + _fact_line(f))
    return 0


def cmd_related(args: argparse.Namespace) -> int:
    result = _open(args).related(args.name, depth=args.depth, limit=args.limit)
    if args.json:
        print_json(result)
        return 0
    _print_facts(result["facts"], False)
    if result["truncated"]:
        print(f"(cut at {args.limit} facts)")
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    from ..temporal import window_text

    rows = _open(args).history(args.subject, args.predicate)
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        print("(no facts)")
    for r in rows:
        when = window_text(r.get("valid_from"), r.get("valid_to")) or "always"
        mark = "*" if r.get("current") else " "
        src = f"  ({format_value(r['prov'])})" if r.get("prov") is not None else ""
        print(f"{mark} {r.get('graph', '')}  {r['p']}  {format_value(r['o'])}  [{when}]{src}")
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    from ..errors import TrikeError

    if args.k < 1:
        raise TrikeError("-k must be at least 1")
    result = _open(args).search(read_arg_text(args.query), k=args.k, model=args.model)
    if args.json:
        print_json(result)
        return 0
    if result["nothing_found"]:
        print(result.get("note") or "nothing found")
        return 0
    for n, hit in enumerate(result["results"], 1):
        what: Any
        if hit["kind"] == "fact":
            what = _fact_line(hit["fact"])
        else:
            what = f"{hit['node']['name']}  {format_value(hit['node']['props'])}"
        print(f"{n:>2}. [{hit['kind']}] {what}")
    return 0


def cmd_ontology(args: argparse.Namespace) -> int:
    onto = _open(args).ontology()
    if args.json:
        print_json(onto)
        return 0
    if not onto["enforced"]:
        print("(no ontology in any graph: every predicate is allowed)")
    where = onto.get("declared_in", {})
    for name, spec in onto["predicates"].items():
        print(f"{name}  {format_value(spec)}  [{', '.join(where.get('predicates', {}).get(name, []))}]")
    for name, spec in onto["classes"].items():
        print(f"class {name}  {format_value(spec)}  [{', '.join(where.get('classes', {}).get(name, []))}]")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # check() reports load warnings, missing and stale members itself
        ws = _open(args)
        problems = ws.check()
    if args.json:
        print_json({"file": args.file, "ok": not problems, "problems": problems})
    else:
        for line in problems:
            print(f"{args.file}: {line}")
        if not problems:
            print(f"{args.file}: ok", file=sys.stderr)
    return 1 if problems else 0


def cmd_export(args: argparse.Namespace) -> int:
    text = _open(args).export(args.format)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


def cmd_hash(args: argparse.Namespace) -> int:
    ws = _open(args)
    h = ws.content_hash()
    if args.json:
        print_json({"workspace": ws.name, "content_hash": h})
    else:
        print(h)
    return 0
