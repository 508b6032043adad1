"""Search commands: `trike search FILE QUERY` and `trike find FILE QUESTION [-w key=value ...]`."""

from __future__ import annotations

import argparse
from typing import Any

from .common import add_json_flag, format_fact, format_value, open_db, print_json, read_arg_text


def _common(p: argparse.ArgumentParser, default_k: int = 10) -> None:
    p.add_argument("-k", type=int, default=default_k, help=f"how many results (default {default_k})")
    p.add_argument("--model", help="model2vec model name or folder (default: $TRIKE_EMBED_MODEL, else "
                                   "minishlab/potion-multilingual-128M; 'none' for words only)")
    p.add_argument("--as-of", help="only facts valid on this date (YYYY-MM-DD; default: every fact)")
    add_json_flag(p)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "search",
        help="free-text search over facts and nodes, in any language (words + meaning)",
        description="Rank every fact and node of the graph against QUERY (BM25 over words and character "
                    "n-grams, fused with static embeddings). Prints 'nothing found' when nothing is relevant.",
    )
    p.add_argument("file")
    p.add_argument("query", help="the question or words ('-' reads stdin)")
    _common(p)
    p.set_defaults(func=cmd_search)

    p = sub.add_parser(
        "find",
        help="nodes matching a question, filtered by properties: trike find FILE QUESTION -w type=Table",
        description="Search, then keep the nodes whose properties equal every -w key=value; prints each "
                    "node with its properties and outgoing facts. An empty QUESTION lists the nodes "
                    "matching -w.",
    )
    p.add_argument("file")
    p.add_argument("question", help="the question or words ('-' reads stdin; '' with -w lists matches)")
    p.add_argument("-w", "--where", action="append", metavar="KEY=VALUE",
                   help="exact property filter, repeatable (all must match)")
    _common(p)
    p.set_defaults(func=cmd_find)


def parse_where(pairs: list[str] | None) -> dict[str, Any] | None:
    from ..errors import TrikeError

    if not pairs:
        return None
    where: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise TrikeError(f"bad filter {pair!r}: use key=value")
        where[key] = value
    return where


def _check_k(k: int) -> None:
    from ..errors import TrikeError

    if k < 1:
        raise TrikeError("-k must be at least 1")


def cmd_search(args: argparse.Namespace) -> int:
    _check_k(args.k)
    db = open_db(args.file)
    result = db.search(read_arg_text(args.query), k=args.k, as_of=args.as_of, model=args.model)
    if args.json:
        print_json(result)
        return 0
    if result.get("note") and not result["nothing_found"]:
        print(f"({result['note']})")
    if result["nothing_found"]:
        print(result.get("note") or "nothing found")
        return 0
    for n, hit in enumerate(result["results"], 1):
        if hit["kind"] == "fact":
            what = format_fact(hit["fact"])
        else:
            node = hit["node"]
            what = f"{node['name']}  {format_value(node['props'])}"
        print(f"{n:>2}. [{hit['kind']}] {what}")
        print(f"    {hit['score']:.3f} {'+'.join(hit['signals'])}: {hit['sentence']}")
    return 0


def cmd_find(args: argparse.Namespace) -> int:
    _check_k(args.k)
    db = open_db(args.file)
    result = db.find(read_arg_text(args.question), where=parse_where(args.where), k=args.k,
                     as_of=args.as_of, model=args.model)
    if args.json:
        print_json(result)
        return 0
    if result.get("note") and not result["nothing_found"]:
        print(f"({result['note']})")
    if result["nothing_found"]:
        print(result.get("note") or "nothing found")
        return 0
    for n, node in enumerate(result["results"], 1):
        score = "" if node["score"] is None else f"  ({node['score']:.3f} {'+'.join(node['signals'])})"
        print(f"{n:>2}. {node['name']}  {format_value(node['props'])}{score}")
        for f in node["out"]:
            print(f"      {format_fact(f)}")
    return 0
