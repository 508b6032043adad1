"""`trike ui`: write the graph as one self-contained HTML page (and open it).

    trike ui [FILE] [--no-open] [-o OUT]      write the page (default .trike-cache/NAME.html) and open it
    trike ui generate FILE -o OUT             only write it, e.g. docs/index.html for GitHub Pages

With no FILE the graph of the current folder is used: `workspace.yaml` when there is one, else the one
YAML graph file there.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

GRAPH_NAMES = ("workspace.yaml", "workspace.yml", "graph.yaml", "graph.yml", "trike.yaml", "trike.yml")
_GRAPH_KEYS = ("triples:", "nodes:", "ontology:", "graphs:", "workspace:")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "ui",
        usage="trike ui [FILE] [--no-open] [-o OUT] [--title TITLE]\n       trike ui generate [FILE] -o OUT [--title TITLE]",
        help="write the graph as one self-contained HTML page and open it",
        description="Write the graph as one HTML file (no server, works offline) and open it in the browser. "
                    "`trike ui generate FILE -o OUT` only writes it.",
        epilog="examples:\n  trike ui\n  trike ui graph.yaml --no-open\n  trike ui generate graph.yaml -o docs/index.html",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("args", nargs="*", metavar="[generate] FILE",
                   help="the graph (default: workspace.yaml or the graph file in the current folder)")
    p.add_argument("-o", "--output", help="where to write the page (required with `generate`)")
    p.add_argument("--no-open", action="store_true", help="write the page but do not open a browser")
    p.add_argument("--title", help="page title (default: the file name)")
    p.set_defaults(func=run_ui)


def find_graph(folder: str | os.PathLike = ".") -> Path:
    """The graph of a folder: `workspace.yaml` first, then a conventional name, then the only YAML file
    that looks like a graph. Raises FileNotFoundError with a helpful message otherwise."""
    d = Path(folder)
    for name in GRAPH_NAMES:
        if (d / name).is_file():
            return d / name
    candidates = []
    for f in sorted(list(d.glob("*.yaml")) + list(d.glob("*.yml"))):
        try:
            with open(f, encoding="utf-8") as fh:
                head = fh.read(65536)
        except (OSError, UnicodeDecodeError):
            continue
        if any(line.startswith(_GRAPH_KEYS) for line in head.splitlines()):
            candidates.append(f)
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise FileNotFoundError(f"no graph in {d.resolve()}: name a FILE (e.g. `trike ui graph.yaml`)")
    names = ", ".join(c.name for c in candidates)
    raise FileNotFoundError(f"several graphs in {d.resolve()} ({names}): name one, e.g. `trike ui {candidates[0].name}`")


def open_graph(path: Path):
    """A TrikeDB, or the read-only union for a workspace file."""
    text = ""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read(65536)
    except OSError:
        pass
    if path.name.startswith("workspace.") or any(line.startswith(("graphs:", "workspace:")) for line in text.splitlines()):
        try:
            from trike import workspace
        except ImportError:
            workspace = None
        opener = getattr(workspace, "open_workspace", None) or getattr(workspace, "Workspace", None)
        if opener is not None:
            return opener(path)
    from trike import TrikeDB

    return TrikeDB(path)


def run_ui(args: argparse.Namespace) -> int:
    words = list(args.args)
    generate = bool(words) and words[0] == "generate" and not (len(words) == 1 and Path("generate").exists())
    if generate:
        words = words[1:]
    if len(words) > 1:
        print(f"trike ui: one graph FILE at most (got {' '.join(words)})", file=sys.stderr)
        return 2
    if generate and not args.output:
        print("trike ui generate: give the page's path with -o OUT (e.g. -o docs/index.html)", file=sys.stderr)
        return 2
    try:
        graph = Path(words[0]) if words else find_graph(".")
    except FileNotFoundError as e:
        print(f"trike ui: {e}", file=sys.stderr)
        return 2
    if not graph.exists():
        print(f"trike ui: {graph}: no such file", file=sys.stderr)
        return 2
    from trike.ui import to_html

    db = open_graph(graph)
    out = Path(args.output) if args.output else graph.resolve().parent / ".trike-cache" / f"{graph.stem}.html"
    page = to_html(db, out, title=args.title)
    size = page.stat().st_size
    print(f"wrote {page} ({size / 1e6:.1f} MB, graph {db.content_hash()[:19]}…)")
    if not generate and not args.no_open:
        import webbrowser

        if not webbrowser.open(page.resolve().as_uri()):
            print(f"open it in a browser: {page.resolve().as_uri()}")
    return 0
