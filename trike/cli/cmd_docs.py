"""Commands for knowledge compiled from documents: history, import, ask."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .common import add_json_flag, format_value, open_db, print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("history", help="a subject's values over time, with validity and sources")
    p.add_argument("file")
    p.add_argument("subject")
    p.add_argument("-p", "--predicate", help="only this predicate")
    add_json_flag(p)
    p.set_defaults(func=cmd_history)

    p = sub.add_parser(
        "import",
        help="import CSV/TSV facts, a YAML/JSON graph, records with a mapping, or a Markdown folder",
        description="Import a source into the graph through the ontology gate, all or nothing. "
                    "SOURCE: a folder of Markdown notes (or one .md), a CSV/TSV with s,p,o columns, a "
                    "YAML/JSON graph, or records (JSON Lines/CSV/JSON) with --mapping. Exit 1 when a "
                    "fact is rejected or conflicts (nothing is written).",
    )
    p.add_argument("file", help="the graph file (created when missing)")
    p.add_argument("source")
    p.add_argument("--mapping", "-m", help="YAML mapping: how records become facts (see docs/documents.md)")
    p.add_argument("--dry-run", "-n", action="store_true", help="show the verdict of every fact, write nothing")
    p.add_argument("--show", choices=["changes", "all", "none"], default="changes",
                   help="which facts to list (default: all but new and unchanged ones)")
    add_json_flag(p)
    p.set_defaults(func=cmd_import)

    p = sub.add_parser("ask", help="answer a question from the graph, or give a cited evidence set")
    p.add_argument("file")
    p.add_argument("question")
    p.add_argument("--budget", type=int, default=2000, help="context size in tokens (default 2000)")
    add_json_flag(p)
    p.set_defaults(func=cmd_ask)


def _window(row: dict) -> str:
    from ..temporal import window_text

    return window_text(row.get("valid_from"), row.get("valid_to")) or "always"


def cmd_history(args: argparse.Namespace) -> int:
    db = open_db(args.file)
    rows = db.history(args.subject, args.predicate)
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        print(f"{args.subject}: no facts" + (f" with {args.predicate}" if args.predicate else ""))
        return 0
    for r in rows:
        prov = r.get("prov")
        src = ", ".join(map(str, prov)) if isinstance(prov, list) else (str(prov) if prov is not None else "")
        line = f"{r['s']}  {r['p']}  {format_value(r['o'])}  [{_window(r)}]"
        if r.get("current"):
            line += "  (current)"
        if src:
            line += f"  sources: {src}"
        if r.get("confidence") is not None:
            line += f"  confidence: {r['confidence']}"
        print(line)
    return 0


def _fact_text(f: dict) -> str:
    return f"{f.get('s')}  {f.get('p')}  {format_value(f.get('o'))}"


def _print_report(rep: dict, show: str) -> None:
    c = rep["counts"]
    nc = rep["node_counts"]
    head = "dry run" if rep["dry_run"] else ("imported" if rep["written"] else "nothing to write")
    extra = ""
    if "records" in rep:
        extra = f", {rep['records']} records"
    elif "files" in rep:
        extra = f", {rep['files']} files"
    print(f"{head}: {rep['source']} ({rep['kind']}{extra})")
    print(f"facts: {c['new']} new, {c['same']} same, {c['update']} update, {c['rejected']} rejected, "
          f"{c['conflict']} conflict")
    print(f"nodes: {nc['new']} new, {nc['same']} same, {nc['update']} update, {nc['rejected']} rejected")
    if show != "none":
        for f in rep["facts"]:
            v = f["verdict"]
            if show == "changes" and (v == "new" or (v == "same" and not f.get("adds_source"))):
                continue
            line = f"  {v:9} {_fact_text(f)}"
            if f.get("adds_source"):
                line += f"  (+ source {format_value((f.get('attrs') or {}).get('prov'))})"
            if f.get("closes"):
                closed = "; ".join(f"{format_value(x['o'])} until {x['valid_to']}" for x in f["closes"])
                line += f"  (closes {closed})"
            if f.get("reason"):
                line += f"\n            {f['reason']}"
            if f.get("where") and v in ("rejected", "conflict"):
                line += f"\n            at {f['where']}"
            print(line)
        for n in rep["nodes"]:
            if n["verdict"] == "rejected":
                print(f"  rejected  node {n['name']}\n            {n.get('reason')}")
    for w in rep.get("warnings") or []:
        print(f"warning: {w}", file=sys.stderr)


def cmd_import(args: argparse.Namespace) -> int:
    from ..importers import ImportRefused

    db = open_db(args.file, must_exist=False)
    try:
        rep = db.import_source(args.source, mapping=args.mapping, dry_run=args.dry_run)
    except ImportRefused as exc:
        if args.json:
            print_json({**exc.report, "error": str(exc)})
        else:
            _print_report(exc.report, "changes" if args.show == "changes" else args.show)
            print(f"trike: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print_json(rep)
    else:
        _print_report(rep, args.show)
    return 0 if rep.get("ok", True) else 1


def cmd_ask(args: argparse.Namespace) -> int:
    db = open_db(args.file)
    res: dict[str, Any] = db.ask(args.question, budget_tokens=args.budget)
    if args.json:
        print_json(res)
        return 1 if res.get("not_in_graph") else 0
    if res.get("not_in_graph"):
        print("not in the graph: nothing relevant to this question was found")
        return 1
    ans = res.get("answer")
    if ans:
        print(f"answer: {ans['text']}")
        print()
    print("evidence:" if not ans else "based on:")
    for line in (res.get("context") or "").split("\n"):
        if line and not line.startswith("Answer: "):
            print(f"  {line}")
    if res.get("sources"):
        print(f"sources: {', '.join(str(s) for s in res['sources'][:20])}"
              + (" …" if len(res["sources"]) > 20 else ""))
    print(f"(~{res.get('tokens')} tokens)")
    return 0
