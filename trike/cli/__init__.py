"""The `trike` command line. Each command calls one public `TrikeDB` method.

Commands live in one module per concern (`cmd_core`, `cmd_search`, `cmd_rules`, ...), each with a
`register(subparsers)` function. Exit codes: 0 ok, 1 a check found problems, 2 bad usage or input.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys

COMMAND_MODULES = (
    "cmd_core", "cmd_search", "cmd_rules", "cmd_docs", "cmd_mcp", "cmd_serve", "cmd_ui", "cmd_workspace",
)


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="trike",
        description="A knowledge graph in one YAML file, guarded by an ontology, served to AI agents.",
    )
    parser.add_argument("--version", action="version", version=f"trike {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        if importlib.util.find_spec(f"{__name__}.{name}") is None:
            continue
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from ..errors import TrikeError
    from .common import fail

    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except TrikeError as exc:
        return fail(exc)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
