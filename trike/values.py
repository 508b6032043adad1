"""Typed values: how a Python value is written as a one-line YAML scalar and how a plain scalar is read.

The rules are YAML 1.1's, as PyYAML applies them, so a file that trike writes loads identically with
`yaml.safe_load` and with trike's own fast reader. Supported value types: str, int, float, bool, None,
`datetime.date`, `datetime.datetime`, and lists / mappings of those.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import ScalarNode

_IMPLICIT = yaml.resolver.Resolver.yaml_implicit_resolvers
_CONSTRUCTOR = SafeConstructor()
_STR_TAG = "tag:yaml.org,2002:str"

# A string may be written plain (unquoted) when it has none of YAML's indicators in it and does not
# read back as another type. Conservative on purpose: anything doubtful is quoted.
_PLAIN_OK = re.compile(r"[^\s\-?:,\[\]{}#&*!|>'\"%@`\\][^:,\[\]{}#'\"\\]*")

_resolve_cache: dict[str, Any] = {}
_plain_cache: dict[str, bool] = {}
_CACHE_MAX = 200_000


def implicit_tag(text: str) -> str | None:
    """The YAML 1.1 tag a plain scalar `text` resolves to, or None when it stays a string."""
    for tag, regexp in _IMPLICIT.get(text[:1] if text else "", ()):
        if regexp.match(text):
            return tag
    return None


# plain scalars starting with these letters can only be bools or nulls (at most 5 characters)
_WORD_FIRST = frozenset("yYnNtTfFoO")


def resolve_plain(text: str) -> Any:
    """The Python value of a plain (unquoted) scalar, exactly as PyYAML's safe loader would read it."""
    try:
        return _resolve_cache[text]
    except KeyError:
        pass
    if not text:
        return None
    first = text[0]
    if first not in _IMPLICIT or (first in _WORD_FIRST and len(text) > 5):
        return text
    tag = implicit_tag(text)
    if tag is None or tag.endswith((":merge", ":value")):
        value: Any = text
    else:
        node = ScalarNode(tag, text)
        value = _CONSTRUCTOR.construct_object(node, deep=True) if tag else text
    if len(_resolve_cache) < _CACHE_MAX:
        _resolve_cache[text] = value
    return value


def _plain_safe(text: str) -> bool:
    try:
        return _plain_cache[text]
    except KeyError:
        pass
    ok = (
        bool(text)
        and _PLAIN_OK.fullmatch(text) is not None
        and text[-1] != " "
        and "  " not in text
        and text.isprintable()
        and implicit_tag(text) is None
        and text not in ("<<", "=")
    )
    if len(_plain_cache) < _CACHE_MAX:
        _plain_cache[text] = ok
    return ok


def _escape_char(ch: str) -> str:
    code = ord(ch)
    if ch == "\n":
        return "\\n"
    if ch == "\t":
        return "\\t"
    if ch == "\r":
        return "\\r"
    if code <= 0xFF:
        return f"\\x{code:02X}"
    if code <= 0xFFFF:
        return f"\\u{code:04X}"
    return f"\\U{code:08X}"


def quote(text: str) -> str:
    """A double-quoted YAML scalar for `text` (always one line)."""
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == " " or ch.isprintable():
            out.append(ch)
        else:
            out.append(_escape_char(ch))
    return '"' + "".join(out) + '"'


def emit_str(text: str) -> str:
    return text if _plain_safe(text) else quote(text)


def emit_float(value: float) -> str:
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value)
    if "." not in text:
        # YAML 1.1 floats need a dot: 1e+16 -> 1.0e+16
        mantissa, _, exponent = text.partition("e")
        text = mantissa + ".0" + ("e" + exponent if exponent else "")
    return text


def emit(value: Any) -> str:
    """One-line (flow) YAML for a value."""
    if isinstance(value, str):
        return emit_str(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return emit_float(value)
    if isinstance(value, _dt.datetime):
        return value.isoformat()
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, dict):
        if not value:
            return "{}"
        return "{" + ", ".join(f"{emit_key(k)}: {emit(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(emit(v) for v in value) + "]"
    raise TypeError(f"cannot store a value of type {type(value).__name__}: {value!r}")


def emit_key(key: Any) -> str:
    if isinstance(key, str):
        return emit_str(key)
    return emit(key)


def to_date(value: Any) -> _dt.date | None:
    """A comparable date from a validity bound: date, datetime, or 'YYYY', 'YYYY-MM', 'YYYY-MM-DD'."""
    if value is None:
        return None
    if isinstance(value, _dt.datetime):
        return value.date()
    if isinstance(value, _dt.date):
        return value
    if isinstance(value, int) and 1000 <= value <= 9999:
        return _dt.date(value, 1, 1)
    if isinstance(value, str):
        text = value.strip()
        m = re.fullmatch(r"(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?(?:[T ].*)?", text)
        if m:
            try:
                return _dt.date(int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1))
            except ValueError:
                return None
    return None


def parse_cli_value(text: str) -> Any:
    """A value typed on the command line (`-a key=value`): read like a YAML plain scalar or flow value."""
    if text[:1] in "[{\"'":
        try:
            return yaml.load(text, Loader=yaml.CSafeLoader)
        except yaml.YAMLError:
            return text
    return resolve_plain(text)


def jsonable(value: Any) -> Any:
    """The value with dates as ISO strings (for JSON output)."""
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return str(value)
    return value
