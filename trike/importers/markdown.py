"""A folder of Markdown notes: each file a node, each relative link a fact, each section searchable text.

- The YAML front matter (`type`, `title`, `description`, `tags`, and any other keys) becomes the node's
  properties; `type` defaults to `document`, `title` to the first heading or the file name.
- The node's name is the file name without `.md` (the path without `.md` when two files share a name).
- The text is cut into sections by heading; `sections: {heading: text}` is stored on the node (links
  written as their text, each section cut to `max_section_chars`). Text before the first heading is
  filed under the title.
- Every relative link to another Markdown file of the folder (`[text](../runbooks/x.md#step-2)`, or
  `[[x]]`) becomes `<this> LINKS_TO <that>` with `section` (the heading it appears under; a list when
  it appears under several) and `prov` (this file's path).

Options (the mapping): `predicate` (default LINKS_TO), `type` (default node type), `max_section_chars`
(default 1500), `links: {front-matter key: PREDICATE}` (front matter values naming other notes become
facts too), `exclude: [glob, ...]`.
"""

from __future__ import annotations

import re
import urllib.parse
from pathlib import Path
from typing import Any

from ..errors import LoadError
from .graphs import read_text
from .plan import Plan

_OPTIONS = {"kind", "format", "predicate", "type", "max_section_chars", "links", "exclude", "description"}
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_LINK = re.compile(r"(!?)\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]*)>?(?:\s+[\"'(][^)]*[\"')])?\s*\)")
_REF_LINK = re.compile(r"(!?)\[([^\]]+)\]\[([^\]]*)\]")
_REF_DEF = re.compile(r"^\s{0,3}\[([^\]]+)\]:\s*<?(\S+?)>?(?:\s+[\"'(].*[\"')])?\s*$")
_WIKI = re.compile(r"\[\[([^\]|#]+)(?:#[^\]|]*)?(?:\|([^\]]+))?\]\]")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_EMPH = re.compile(r"(\*\*|__|`)")


def split_front_matter(text: str, where: str) -> tuple[dict, str, list[str]]:
    """(front matter, body, warnings). Front matter is a leading `---` ... `---` YAML block."""
    warnings: list[str] = []
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text, warnings
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            import yaml

            block = "\n".join(lines[1:i])
            try:
                data = yaml.safe_load(block) if block.strip() else {}
            except yaml.YAMLError as exc:
                warnings.append(f"{where}: front matter is not valid YAML ({exc}); ignored")
                data = {}
            if data is None:
                data = {}
            if not isinstance(data, dict):
                warnings.append(f"{where}: front matter is not a mapping; ignored")
                data = {}
            return data, "\n".join(lines[i + 1:]), warnings
    warnings.append(f"{where}: front matter starts with --- but never ends; read as text")
    return {}, text, warnings


def _plain(text: str) -> str:
    """Markdown inline text as plain text: links and images as their text, no emphasis marks."""
    text = _WIKI.sub(lambda m: m.group(2) or m.group(1), text)
    text = _LINK.sub(lambda m: m.group(2), text)
    text = _REF_LINK.sub(lambda m: m.group(2), text)
    return _EMPH.sub("", text)


def parse_sections(body: str) -> tuple[str | None, list[tuple[str, list[str]]], dict[str, str]]:
    """(first heading, [(heading or "", lines)], reference definitions)."""
    body = _COMMENT.sub("", body)
    sections: list[tuple[str, list[str]]] = [("", [])]
    refs: dict[str, str] = {}
    first = None
    fence = None
    for line in body.split("\n"):
        f = _FENCE.match(line)
        if fence is not None:
            if f and f.group(1) == fence:
                fence = None
            sections[-1][1].append(line)
            continue
        if f:
            fence = f.group(1)
            sections[-1][1].append(line)
            continue
        h = _HEADING.match(line)
        if h:
            title = " ".join(_plain(h.group(2)).split())
            if first is None:
                first = title
            sections.append((title, []))
            continue
        d = _REF_DEF.match(line)
        if d:
            refs[d.group(1).strip().lower()] = d.group(2)
            continue
        sections[-1][1].append(line)
    return first, sections, refs


def _section_text(lines: list[str], limit: int) -> str:
    paras = []
    for line in lines:
        line = _plain(line).rstrip()
        if line.strip():
            paras.append(" ".join(line.split()) if not line.lstrip().startswith(("- ", "* ", "+ ", "|"))
                         else line.strip())
    text = "\n".join(paras).strip()
    if len(text) > limit:
        text = text[: max(0, limit - 1)].rstrip() + "…"
    return text


def _storable(value: Any) -> Any:
    """Front matter values as values a graph can store (None dropped, other objects as text)."""
    import datetime as _dt

    if value is None:
        return None
    if isinstance(value, (str, int, float, bool, _dt.date)):
        return value
    if isinstance(value, (list, tuple)):
        items = [_storable(v) for v in value]
        return [v for v in items if v is not None]
    if isinstance(value, dict):
        return {str(k): v for k, v in ((k, _storable(v)) for k, v in value.items()) if v is not None}
    return str(value)


def plan_markdown(plan: Plan, path: Path, mapping: dict | None = None) -> None:
    opts = dict(mapping or {})
    extra = set(opts) - _OPTIONS
    if extra:
        raise LoadError(f"unknown Markdown option(s) {', '.join(sorted(extra))}; known: "
                        f"{', '.join(sorted(_OPTIONS))}", str(path))
    predicate = str(opts.get("predicate") or "LINKS_TO")
    default_type = opts.get("type", "document")
    limit = int(opts.get("max_section_chars") or 1500)
    link_keys = opts.get("links") or {}
    if not isinstance(link_keys, dict):
        raise LoadError("`links` must map front matter keys to predicates", str(path))
    exclude = [str(g) for g in (opts.get("exclude") or [])]

    root = path if path.is_dir() else path.parent
    root_res = root.resolve()
    if path.is_dir():
        files = [p for p in sorted(path.rglob("*.md"))
                 if not any(part.startswith(".") for part in p.relative_to(path).parts)
                 and not any(p.relative_to(path).match(g) for g in exclude)]
    else:
        files = [path]
    if not files:
        plan.warnings.append(f"no Markdown files in {path}")
    rel = {f.resolve(): f.resolve().relative_to(root_res).as_posix() for f in files}
    stems: dict[str, int] = {}
    for f in files:
        stems[f.stem] = stems.get(f.stem, 0) + 1
    names = {f.resolve(): (f.stem if stems[f.stem] == 1 else rel[f.resolve()][: -len(f.suffix)])
             for f in files}
    plan.info["files"] = len(files)

    by_key: dict[str, str] = {}  # lower-case stem / title / name -> node (for [[wiki links]] and front matter)
    parsed = []
    for f in files:
        res = f.resolve()
        where = rel[res]
        fm, body, warns = split_front_matter(read_text(f), where)
        plan.warnings.extend(warns)
        first, sections, refs = parse_sections(body)
        title = fm.get("title") if isinstance(fm.get("title"), str) else (first or f.stem)
        name = names[res]
        by_key.setdefault(f.stem.lower(), name)
        by_key.setdefault(str(title).lower(), name)
        by_key.setdefault(name.lower(), name)
        parsed.append((f, res, where, fm, sections, refs, title, name))

    links: list[tuple[str, str, str, dict]] = []
    for f, _res, where, fm, sections, refs, title, name in parsed:
        props: dict[str, Any] = {}
        for k, v in fm.items():
            if str(k) in link_keys:
                continue
            v = _storable(v)
            if v is not None and v != "" and v != [] and v != {}:
                props[str(k)] = v
        props.setdefault("type", default_type)
        props.setdefault("title", title)
        props["path"] = where
        texts: dict[str, str] = {}
        seen_links: dict[str, dict] = {}
        order: list[str] = []
        for heading, lines in sections:
            key = heading or str(title)
            text = _section_text(lines, limit)
            if text:
                base, n = key, 2
                while key in texts:
                    key = f"{base} ({n})"
                    n += 1
                texts[key] = text
            for target in _links_in("\n".join(lines), refs):
                to = _resolve(target, f, root_res, rel, names, by_key)
                if to is None:
                    if _looks_local_md(target):
                        plan.warnings.append(f"{where}: broken link to {target}")
                    continue
                if to == name:
                    continue
                entry = seen_links.get(to)
                if entry is None:
                    entry = seen_links[to] = {"sections": []}
                    order.append(to)
                if heading and heading not in entry["sections"]:
                    entry["sections"].append(heading)
        if texts:
            props["sections"] = texts
        plan.node(name, props, where=where)
        for to in order:
            secs = seen_links[to]["sections"]
            attrs: dict[str, Any] = {"prov": where}
            if secs:
                attrs["section"] = secs[0] if len(secs) == 1 else secs
            links.append((name, predicate, to, attrs))
        for key, pred in link_keys.items():
            value = fm.get(key)
            for item in value if isinstance(value, list) else [value]:
                if item in (None, ""):
                    continue
                target = str(item)
                to = _resolve(target, f, root_res, rel, names, by_key) if _looks_local_md(target) else None
                to = to or by_key.get(target.lower()) or target
                links.append((name, str(pred), to, {"prov": where, "via": str(key)}))
    for s, p, o, attrs in links:
        plan.fact(s, p, o, attrs, where=attrs["prov"])


def _links_in(text: str, refs: dict[str, str]) -> list[str]:
    out = []
    for m in _LINK.finditer(text):
        if m.group(1) != "!":
            out.append(m.group(3))
    for m in _REF_LINK.finditer(text):
        if m.group(1) != "!":
            ref = (m.group(3) or m.group(2)).strip().lower()
            if ref in refs:
                out.append(refs[ref])
    for m in _WIKI.finditer(text):
        out.append("[[" + m.group(1).strip())
    return out


def _looks_local_md(target: str) -> bool:
    t = target.split("#")[0].split("?")[0]
    return not _SCHEME.match(target) and t.lower().endswith((".md", ".markdown"))


def _resolve(target: str, src: Path, root: Path, rel: dict, names: dict, by_key: dict) -> str | None:
    if target.startswith("[["):
        return by_key.get(target[2:].strip().lower())
    if not target or target.startswith("#") or _SCHEME.match(target) or target.startswith("//"):
        return None
    t = urllib.parse.unquote(target.split("#")[0].split("?")[0])
    if not t:
        return None
    base = root if t.startswith("/") else src.resolve().parent
    cand = (base / t.lstrip("/")).resolve()
    options = [cand]
    if cand.suffix == "":
        options += [cand.with_suffix(".md"), cand / "README.md", cand / "index.md"]
    for c in options:
        if c in names:
            return names[c]
    return None
