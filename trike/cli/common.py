"""Helpers shared by the CLI command modules."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def fail(exc: BaseException | str, code: int = 2) -> int:
    print(f"trike: error: {exc}", file=sys.stderr)
    return code


def parse_attrs(pairs: list[str] | None) -> dict[str, Any]:
    """`-a key=value` pairs; values read like YAML scalars (2026-04-01 is a date, true a bool)."""
    from ..errors import TrikeError
    from ..values import parse_cli_value

    out: dict[str, Any] = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise TrikeError(f"bad attribute {pair!r}: use key=value")
        k, v = pair.split("=", 1)
        if not k:
            raise TrikeError(f"bad attribute {pair!r}: the key is empty")
        out[k] = parse_cli_value(v)
    return out


def print_json(value: Any) -> None:
    from ..values import jsonable

    print(json.dumps(jsonable(value), ensure_ascii=False, indent=2))


def open_db(path: str, *, must_exist: bool = True):
    from .. import TrikeDB
    from ..errors import TrikeError

    if path.startswith(("http://", "https://")):
        from ..workspace import open_any

        return open_any(path)  # a remote graph, read-only
    p = Path(path)
    if p.is_dir():
        from ..workspace import WORKSPACE_NAMES, open_workspace

        for name in WORKSPACE_NAMES:
            if (p / name).is_file():
                return open_workspace(p / name)
        raise TrikeError(f"{path}: is a directory, not a graph file (and has no workspace.yaml)")
    if must_exist and not p.exists():
        raise TrikeError(f"{path}: no such file (create one with `trike init {path}`)")
    if p.exists():
        from ..workspace import is_workspace

        if is_workspace(p):
            from ..workspace import open_workspace

            return open_workspace(p)  # read commands work on a workspace; writes say it is read-only
    return TrikeDB(p)


def read_arg_text(value: str) -> str:
    """QUERY arguments: `-` reads stdin, `@file.rq` reads a file, anything else is the text."""
    from ..errors import TrikeError

    if value == "-":
        return sys.stdin.read()
    if value.startswith("@"):
        try:
            return Path(value[1:]).read_text(encoding="utf-8")
        except OSError as exc:
            raise TrikeError(f"{value[1:]}: cannot read: {exc.strerror or exc}") from None
    return value


def add_json_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON")


def format_value(v: Any) -> str:
    from ..values import emit

    try:
        return emit(v)
    except TypeError:
        return repr(v)


def print_rows(rows: list[dict], as_json: bool) -> None:
    """Query results as an aligned table (or JSON)."""
    if as_json:
        print_json(rows)
        return
    if not rows:
        print("(no results)")
        return
    cols = list(rows[0])
    table = [[format_value(r.get(c)) if r.get(c) is not None else "" for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in table)) for i, c in enumerate(cols)]
    print("  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)).rstrip())
    for row in table:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())


def print_mapping(data: dict) -> None:
    """`key: value` lines; nested mappings one level indented (stats and the like)."""
    for k, v in data.items():
        if isinstance(v, dict):
            print(f"{k}:")
            for kk, vv in v.items():
                print(f"  {kk}: {format_value(vv) if isinstance(vv, (dict, list)) else vv}")
        else:
            print(f"{k}: {v}")


def format_fact(f: dict) -> str:
    extra = {k: v for k, v in f.items() if k not in ("s", "p", "o")}
    text = f"{f['s']}  {f['p']}  {format_value(f['o'])}"
    if extra:
        text += "  " + format_value(extra)
    return text
