"""`trike mcp FILE [--read-only] [--allow-dir DIR ...]`: serve a graph to agents over MCP (stdio)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "mcp",
        help="serve the graph to AI agents over MCP (stdio)",
        description=(
            "Run an MCP server over stdio for the graph FILE (the client starts it; see docs/mcp.md). "
            "Tools: sparql, match, search, find, get_node, related, ontology, stats, history, ask, and "
            "unless --read-only add_triple, set_node, remove_triples, import_source. Writes are checked "
            "by the ontology and saved to FILE at once."
        ),
    )
    p.add_argument("file", metavar="FILE", help="the graph's YAML file (created on the first write)")
    p.add_argument("--read-only", action="store_true", help="expose only the read tools")
    p.add_argument(
        "--allow-dir", action="append", default=[], metavar="DIR",
        help="a folder import_source may read besides the graph's own (repeatable)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    path = Path(args.file).expanduser()
    if path.is_dir():
        print(f"trike mcp: {path} is a folder; give the graph's YAML file", file=sys.stderr)
        return 2
    if not path.parent.is_dir():
        print(f"trike mcp: folder {path.parent} does not exist", file=sys.stderr)
        return 2
    for d in args.allow_dir:
        if not Path(d).expanduser().is_dir():
            print(f"trike mcp: --allow-dir {d}: not a folder", file=sys.stderr)
            return 2
    from ..mcp_server import run_stdio

    try:
        run_stdio(path, read_only=args.read_only, allow_dirs=args.allow_dir)
    except KeyboardInterrupt:
        return 130
    return 0
