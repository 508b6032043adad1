"""The file format: one YAML file is one graph.

```yaml
ontology:            # optional; with `predicates:` it switches the gate on
  predicates:
    OWNED_BY: {description: asset -> team, functional: true}
nodes:
  crm-sync-job: {type: job, schedule: hourly}
triples:             # always last, so that adding a fact appends one line
- {s: crm-sync-job, p: OWNED_BY, o: data-team}
```

`dump()` writes the canonical form: sections in the order ontology, nodes, any other top-level keys,
triples; one flow-style line per node and per triple. `parse()` reads canonical lines with a fast
line reader and anything else (block style, comments, anchors, other key order) with PyYAML's C loader,
section by section, so error messages can name the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from .errors import LoadError
from .values import emit, emit_key, resolve_plain

__all__ = ["GraphData", "dump", "emit", "emit_key", "parse", "parse_tail", "triple_line"]

Fact = tuple[str, str, Any, dict | None]

# -------------------------------------------------------------------------------------------- dump


def triple_line(s: str, p: str, o: Any, attrs: dict | None) -> str:
    line = f"- {{s: {emit_key(s)}, p: {emit_key(p)}, o: {emit(o)}"
    if attrs:
        line += "".join(f", {emit_key(k)}: {emit(v)}" for k, v in attrs.items())
    return line + "}\n"


def _emit_section(out: list[str], key: str, value: Any) -> None:
    k = emit_key(key)
    if isinstance(value, dict) and value:
        out.append(f"{k}:\n")
        for name, item in value.items():
            if isinstance(item, dict) and item and key == "ontology":
                out.append(f"  {emit_key(name)}:\n")
                out.extend(f"    {emit_key(n2)}: {emit(v2)}\n" for n2, v2 in item.items())
            else:
                out.append(f"  {emit_key(name)}: {emit(item)}\n")
    elif isinstance(value, list) and value:
        out.append(f"{k}:\n")
        out.extend(f"- {emit(item)}\n" for item in value)
    else:
        out.append(f"{k}: {emit(value)}\n")


@dataclass
class GraphData:
    ontology: dict | None = None
    nodes: dict[str, dict] = field(default_factory=dict)
    triples: list[Fact] = field(default_factory=list)
    extras: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    appendable: bool = False  # `triples:` is the last section, in canonical lines, text ends with \n
    size: int = 0


def dump(data: GraphData) -> str:
    out: list[str] = []
    if data.ontology is not None:
        _emit_section(out, "ontology", data.ontology)
    _emit_section(out, "nodes", data.nodes)
    for key, value in data.extras.items():
        _emit_section(out, key, value)
    if data.triples:
        out.append("triples:\n")
        out.extend(triple_line(s, p, o, a) for s, p, o, a in data.triples)
    else:
        out.append("triples: []\n")
    return "".join(out)


# ------------------------------------------------------------------------------------------- parse

_KEY = r"(?:[^\s\-?:,\[\]{}#&*!|>'\"%@`\\][^:,\[\]{}#'\"\\]*?|'(?:[^']|'')*')"
_VAL = r"(?:'(?:[^']|'')*'|\"(?:[^\"\\]|\\.)*\"|[^\s\-?:,\[\]{}#&*!|>'\"%@`\\][^:,\[\]{}#'\"\\]*?|-?[0-9.][^:,\[\]{}#'\"\\]*?|)"
_ENTRY = re.compile(rf"({_KEY}): ({_VAL})(?:, |$)")
_BODY = re.compile(rf"(?:{_KEY}: {_VAL})(?:, {_KEY}: {_VAL})*")
_TRIPLE_LINE = re.compile(r"- \{(.*)\}")
_NODE_LINE = re.compile(rf"  ({_KEY}): \{{(.*)\}}")
_TOP_KEY = re.compile(r"([^\s#\-\[{'\"?:][^:#]*|'(?:[^']|'')*'|\"(?:[^\"\\]|\\.)*\"):(?:\s+(.*))?$")

_ESCAPES = {
    "0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v", "f": "\f",
    "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\", "N": "\x85", "_": "\xa0",
    "L": "\u2028", "P": "\u2029",
}
_DQ_ESC = re.compile(r"\\(x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)")


def _dq_unescape(body: str) -> str:
    def repl(m: re.Match) -> str:
        esc = m.group(1)
        if esc[0] in "xuU" and len(esc) > 1:
            return chr(int(esc[1:], 16))
        try:
            return _ESCAPES[esc]
        except KeyError:
            raise ValueError(f"unknown escape \\{esc}") from None

    return _DQ_ESC.sub(repl, body)


def _scalar(tok: str) -> Any:
    if not tok:
        return None
    c = tok[0]
    if c == "'":
        return tok[1:-1].replace("''", "'")
    if c == '"':
        body = tok[1:-1]
        return _dq_unescape(body) if "\\" in body else body
    return resolve_plain(tok)


_name_cache: dict[str, str] = {}


def _name_value(tok: str) -> str:
    """A subject/predicate token as a name (YAML may read `123` as an int: names are strings)."""
    v = resolve_plain(tok)
    name = v if isinstance(v, str) else tok if v is None else str(v)
    if len(_name_cache) < 500_000:
        _name_cache[tok] = name
    return name


class _NotCanonical(Exception):
    pass


_BAD_FIRST = frozenset("&*!|>%@`\\?-")


def _fast_mapping(body: str) -> dict:
    """The entries of a one-line flow mapping body (`k: v, k: v`), or _NotCanonical."""
    out: dict = {}
    if ("'" not in body and '"' not in body and "[" not in body and "]" not in body
            and "{" not in body and "}" not in body):
        # only plain scalars: split on the separators
        for entry in body.split(", "):
            k, sep, v = entry.partition(": ")
            if (not sep or not k or ":" in v or "#" in v or ":" in k or "#" in k
                    or k[0] in _BAD_FIRST or k[0] == " " or k[-1] == " "):
                raise _NotCanonical
            if v:
                c = v[0]
                if (c in _BAD_FIRST and not (c == "-" and len(v) > 1 and v[1] != " ")) or c == " " or v[-1] == " ":
                    raise _NotCanonical
            key = resolve_plain(k)
            if key in out:
                raise _NotCanonical
            out[key] = resolve_plain(v) if v else None
        return out
    found = _ENTRY.findall(body)
    if sum(len(k) + len(v) + 4 for k, v in found) - 2 != len(body):
        raise _NotCanonical
    for k, v in found:
        if v and v[-1] in " \t" or k[-1] in " \t":
            raise _NotCanonical
        key = _scalar(k)
        if key in out:
            raise _NotCanonical
        out[key] = _scalar(v)
    return out


def _yaml_load(text: str, path: str | None, line_offset: int) -> Any:
    _check_aliases(text, path, line_offset)
    try:
        return yaml.load(text, Loader=yaml.CSafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 + line_offset if mark is not None else None
        problem = exc.problem or str(exc)
        if exc.context:
            problem = f"{exc.context}: {problem}"
        raise LoadError(f"malformed YAML: {problem}", path, line) from None
    except yaml.YAMLError as exc:
        raise LoadError(f"malformed YAML: {exc}", path) from None


MAX_ALIAS_EXPANSION = 100_000


def _check_aliases(text: str, path: str | None, line_offset: int) -> None:
    """Refuse YAML whose aliases would expand beyond a bound (a 'billion laughs' bomb)."""
    if "*" not in text or "&" not in text:
        return
    sizes: dict[str, int] = {}
    stack: list[list] = []  # [anchor, size]
    total = 0
    try:
        for event in yaml.parse(text, Loader=yaml.CSafeLoader):
            if isinstance(event, yaml.AliasEvent):
                n = sizes.get(event.anchor, 1)
                total += n
                if stack:
                    stack[-1][1] += n
                if total > MAX_ALIAS_EXPANSION:
                    line = event.start_mark.line + 1 + line_offset
                    raise LoadError(
                        f"YAML aliases expand to more than {MAX_ALIAS_EXPANSION} nodes (alias bomb refused)",
                        path, line,
                    )
            elif isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                stack.append([event.anchor, 1])
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                anchor, size = stack.pop()
                if anchor:
                    sizes[anchor] = size
                if stack:
                    stack[-1][1] += size
            elif isinstance(event, yaml.ScalarEvent):
                total += 1
                if event.anchor:
                    sizes[event.anchor] = 1
                if stack:
                    stack[-1][1] += 1
    except yaml.YAMLError:
        return  # the real load reports the syntax error with its line


def _as_name(value: Any, what: str, path: str | None, line: int | None) -> str:
    if isinstance(value, str):
        if not value:
            raise LoadError(f"{what} is empty", path, line)
        return value
    if value is None or isinstance(value, (dict, list)):
        raise LoadError(f"{what} must be a name, got {value!r}", path, line)
    return str(value)


def make_fact(item: Any, path: str | None, line: int | None) -> Fact:
    """Validate one triple mapping from a file or an importer."""
    if not isinstance(item, dict):
        raise LoadError(f"a triple must be a mapping with s, p, o; got {item!r}", path, line)
    missing = [k for k in ("s", "p", "o") if k not in item]
    if missing:
        raise LoadError(f"triple {item!r} is missing {', '.join(missing)}", path, line)
    s = _as_name(item["s"], "s", path, line)
    p = _as_name(item["p"], "p", path, line)
    o = item["o"]
    if o is None or isinstance(o, (dict, list)):
        raise LoadError(f"o must be a name or a scalar value, got {o!r}", path, line)
    attrs = {str(k): v for k, v in item.items() if k not in ("s", "p", "o")}
    return (s, p, o, attrs or None)


def _split_sections(lines: list[str]) -> list[tuple[str, int, int, str]] | None:
    """Top-level sections as (key, first line index, end index, rest of the key line); None if odd."""
    sections: list[tuple[str, int, int, str]] = []
    current: tuple[str, int, str] | None = None
    for i, line in enumerate(lines):
        if not line or line[0] in " \t#-\r" or line.startswith("- "):
            if line.startswith(("---", "...")):
                return None
            if current is None and line.strip() and not line.lstrip().startswith("#"):
                return None  # content before the first top-level key
            continue
        m = _TOP_KEY.match(line.rstrip("\r"))
        if not m:
            return None
        key = m.group(1)
        if key[0] in "'\"":
            key = _scalar(key)
        if current is not None:
            sections.append((current[0], current[1], i, current[2]))
        current = (key, i, m.group(2) or "")
    if current is not None:
        sections.append((current[0], current[1], len(lines), current[2]))
    return sections


_PLAIN_NAME = r"[^\s\-?:,\[\]{}#&*!|>'\"%@`\\][^:,\[\]{}#'\"\\]*?"
# the common case, matched in one go: `- {s: NAME, p: NAME, o: NAME}` with plain names
_SIMPLE = re.compile(rf"- \{{s: ({_PLAIN_NAME}), p: ({_PLAIN_NAME}), o: ({_PLAIN_NAME}|-?[0-9.][^:,\[\]{{}}#'\"\\]*?)(, .*)?\}}")


_SIMPLE_ML = re.compile("^" + _SIMPLE.pattern + "$", re.M)


def _bulk_triples(lines: list[str], start: int, end: int) -> list | None:
    """All triple lines at once (one regex pass over the section), or None when any line is unusual."""
    if end - start <= 1:
        return None
    found = _SIMPLE_ML.findall("\n".join(lines[start + 1:end]))
    if len(found) != end - start - 1:
        return None
    return _bulk_convert(found)


def _bulk_convert(found: list) -> list | None:
    out = []
    append = out.append
    cache = _name_cache
    reserved = {"s", "p", "o"}
    try:
        for s, p, o, rest in found:
            if s[-1] == " " or p[-1] == " " or o[-1] == " ":
                return None
            sv = cache.get(s)
            if sv is None:
                sv = _name_value(s)
            pv = cache.get(p)
            if pv is None:
                pv = _name_value(p)
            ov = resolve_plain(o)
            if ov is None:
                return None
            if rest:
                attrs = _fast_mapping(rest[2:])
                if reserved & attrs.keys():
                    return None
                append((sv, pv, ov, attrs))
            else:
                append((sv, pv, ov, None))
    except (_NotCanonical, ValueError):
        return None
    return out


def _parse_triples_section(lines: list[str], start: int, end: int, path: str | None,
                           data: GraphData) -> bool:
    """Read the triples lines; True when every line was canonical."""
    bulk = _bulk_triples(lines, start, end)
    if bulk is not None:
        data.triples.extend(bulk)
        return True
    canonical = True
    triples = data.triples
    append = triples.append
    simple = _SIMPLE.fullmatch
    cache = _name_cache
    for i in range(start + 1, end):
        line = lines[i]
        m = simple(line)
        if m is not None:
            s, p, o, rest = m.groups()
            if s[-1] != " " and p[-1] != " " and o[-1] != " ":
                attrs = None
                if rest is not None:
                    try:
                        attrs = _fast_mapping(rest[2:])
                    except (_NotCanonical, ValueError):
                        attrs = False
                    if attrs is not False and not ({"s", "p", "o"} & attrs.keys()):
                        pass
                    else:
                        attrs = False
                if attrs is not False:
                    sv = cache.get(s)
                    if sv is None:
                        sv = _name_value(s)
                    pv = cache.get(p)
                    if pv is None:
                        pv = _name_value(p)
                    ov = resolve_plain(o)
                    if ov is not None:
                        append((sv, pv, ov, attrs or None))
                        continue
        if not line or line.startswith("#"):
            canonical = False
            continue
        m = _TRIPLE_LINE.fullmatch(line)
        item = None
        if m:
            try:
                item = _fast_mapping(m.group(1))
            except (_NotCanonical, ValueError):
                item = None
        if item is None:
            if not line.startswith("- ") or (i + 1 < end and lines[i + 1][:1] in " \t"):
                raise _NotCanonical  # block style or multi-line items: read the section whole
            canonical = False
            loaded = _yaml_load(line, path, i)
            if not isinstance(loaded, list) or len(loaded) != 1:
                raise LoadError("a triple must be one list item `- {s: ..., p: ..., o: ...}`", path, i + 1)
            item = loaded[0]
        triples.append(make_fact(item, path, i + 1))
    return canonical


def _parse_nodes_section(lines: list[str], start: int, end: int, path: str | None,
                         data: GraphData) -> None:
    nodes = data.nodes
    for i in range(start + 1, end):
        line = lines[i]
        m = _NODE_LINE.fullmatch(line)
        if not m:
            raise _NotCanonical
        name = _scalar(m.group(1))
        try:
            props = _fast_mapping(m.group(2)) if m.group(2) else {}
        except (_NotCanonical, ValueError):
            loaded = _yaml_load(line.strip(), path, i)
            props = next(iter(loaded.values())) if isinstance(loaded, dict) else None
            if not isinstance(props, dict):
                raise _NotCanonical from None
        if name in nodes:
            raise LoadError(f"node {name!r} is listed twice", path, i + 1)
        nodes[_as_name(name, "node name", path, i + 1)] = props


def _absorb(data: GraphData, key: str, value: Any, path: str | None, line: int | None) -> None:
    """Put one top-level section, loaded by PyYAML, into `data`."""
    if key == "ontology":
        if value is not None and not isinstance(value, dict):
            raise LoadError("ontology must be a mapping", path, line)
        data.ontology = value
    elif key == "nodes":
        if value is None:
            return
        if not isinstance(value, dict):
            raise LoadError("nodes must be a mapping of name -> properties", path, line)
        for name, props in value.items():
            if props is None:
                props = {}
            if not isinstance(props, dict):
                raise LoadError(f"node {name!r} must be a mapping of properties, got {props!r}", path, line)
            data.nodes[_as_name(name, "node name", path, line)] = {str(k): v for k, v in props.items()}
    elif key == "triples":
        if value is None:
            return
        if not isinstance(value, list):
            raise LoadError("triples must be a list of {s, p, o, ...} mappings", path, line)
        for item in value:
            data.triples.append(make_fact(item, path, line))
    else:
        data.extras[str(key)] = value


_TOP_LINE = re.compile(r"^[^\s#\-][^\n]*$", re.M)


def _fast_parse(text: str, path: str | None) -> GraphData | None:
    """The canonical layout without splitting the whole text into lines: top-level keys found by one
    regex pass, the (last) triples section read in one pass over the text. None when the file is
    anything else; the general reader then handles it (and names lines in its errors)."""
    if not text.endswith("\n") or "\n---" in text or text.startswith("---") or "&" in text:
        return None
    tops = [(m.start(), m.group()) for m in _TOP_LINE.finditer(text)]
    if not tops or tops[0][0] != 0 or tops[-1][1] != "triples:":
        return None
    data = GraphData(size=len(text))
    body = tops[-1][0] + len("triples:\n")
    end = len(text)
    # in chunks, so that the regex's temporary strings stay small however big the file is
    triples: list = []
    pos = body
    while pos < end:
        stop = text.find("\n", min(pos + 4_000_000, end - 1)) + 1 or end
        found = _SIMPLE_ML.findall(text, pos, stop)
        if len(found) != text.count("\n", pos, stop):
            return None
        part = _bulk_convert(found)
        if part is None:
            return None
        triples.extend(part)
        pos = stop
    for (start, line), nxt in zip(tops[:-1], tops[1:], strict=True):
        chunk = text[start:nxt[0]]
        m = _TOP_KEY.match(line)
        if not m:
            return None
        key = m.group(1)
        rest = (m.group(2) or "").strip()
        if key[0] in "'\"" or key in ("triples",):
            return None
        if key == "nodes" and not rest:
            sec = chunk.split("\n")
            if sec and sec[-1] == "":
                sec.pop()
            try:
                _parse_nodes_section(sec, 0, len(sec), path, data)
            except (_NotCanonical, LoadError):
                return None
            continue
        try:
            loaded = yaml.load(chunk, Loader=yaml.CSafeLoader)
        except yaml.YAMLError:
            return None
        if not isinstance(loaded, dict) or len(loaded) != 1 or key in data.extras:
            return None
        try:
            _absorb(data, key, loaded[key], path, None)
        except (LoadError, KeyError):
            return None
    data.triples = triples
    data.appendable = True
    return data


def parse(text: str, path: str | None = None) -> GraphData:
    """Parse a graph file. Raises LoadError naming the file, line and problem."""
    data = GraphData(size=len(text))
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        return data
    fast = _fast_parse(text, path)
    if fast is not None:
        return fast
    lines = text.split("\n")
    ends_clean = text.endswith("\n")
    if ends_clean:
        lines.pop()
    sections = _split_sections(lines)
    if sections is not None and not ends_clean and sections and sections[-1][0] == "triples":
        # an interrupted append leaves a partial last line: detect it, report it, keep the rest
        last = lines[-1]
        if last.strip() and not _line_is_complete_triple(last):
            data.warnings.append(
                f"{path or '<text>'}:{len(lines)}: dropped an incomplete last line (an interrupted write?): "
                f"{last[:200]!r}"
            )
            lines.pop()
            ends_clean = True
            sections[-1] = (sections[-1][0], sections[-1][1], len(lines), sections[-1][3])
    if sections is None or ("&" in text and _ANCHOR.search(text)):
        _parse_whole(text, path, data)
        return data
    seen: set[str] = set()
    for key, start, end, rest in sections:
        if key in seen:
            raise LoadError(f"top-level key {key!r} appears twice", path, start + 1)
        seen.add(key)
        rest_clean = rest.split(" #")[0].strip()
        try:
            if key == "triples" and not rest_clean:
                canonical = _parse_triples_section(lines, start, end, path, data)
                data.appendable = canonical and ends_clean and key == sections[-1][0]
                continue
            if key == "nodes" and not rest_clean:
                _parse_nodes_section(lines, start, end, path, data)
                continue
        except _NotCanonical:
            if key == "triples":
                del data.triples[:]
            else:
                data.nodes.clear()
        chunk = "\n".join(lines[start:end]) + "\n"
        loaded = _yaml_load(chunk, path, start)
        if not isinstance(loaded, dict) or len(loaded) != 1:
            raise LoadError("the top level of a graph file must be a mapping (ontology, nodes, triples)",
                            path, start + 1)
        ((k, value),) = loaded.items()
        _absorb(data, key, value, path, start + 1)
    return data


_ANCHOR = re.compile(r"(?:^|[\s\[{,])&[^\s,\[\]{}]+[\s,\[\]{}]", re.M)


def _line_is_complete_triple(line: str) -> bool:
    m = _TRIPLE_LINE.fullmatch(line)
    if m:
        try:
            item = _fast_mapping(m.group(1))
            return all(k in item for k in ("s", "p", "o"))
        except (_NotCanonical, ValueError):
            pass
    try:
        loaded = yaml.load(line, Loader=yaml.CSafeLoader)
    except yaml.YAMLError:
        return False
    return isinstance(loaded, list) and len(loaded) == 1 and isinstance(loaded[0], dict) and all(
        k in loaded[0] for k in ("s", "p", "o"))


def _parse_whole(text: str, path: str | None, data: GraphData) -> None:
    loaded = _yaml_load(text, path, 0)
    if loaded is None:
        return
    if not isinstance(loaded, dict):
        raise LoadError("the top level of a graph file must be a mapping (ontology, nodes, triples)", path, 1)
    for key, value in loaded.items():
        _absorb(data, str(key), value, path, None)


def parse_tail(text: str, path: str | None = None) -> list[Fact] | None:
    """Facts from appended canonical triple lines, or None when the text is anything else."""
    if not text.endswith("\n"):
        return None
    out: list[Fact] = []
    for line in text[:-1].split("\n"):
        m = _TRIPLE_LINE.fullmatch(line)
        if not m:
            return None
        try:
            item = _fast_mapping(m.group(1))
            out.append(make_fact(item, path, None))
        except (_NotCanonical, ValueError, LoadError):
            return None
    return out
