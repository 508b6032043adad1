"""Render a graph as one self-contained HTML page (see docs/ui.md).

The page inlines everything: the graph as JSON (for the views), the RDF projection as gzip-compressed
N-Triples (for the in-page SPARQL engine), Oxigraph's WebAssembly module (gzip + base64, instantiated
from bytes so it works from ``file://``), force-graph, and the page's own CSS and JavaScript. Nothing is
fetched at run time, and the page's Content-Security-Policy forbids any connection.

The content hash of the graph is written in ``<meta name="trike-content-hash">`` near the top of the file;
``page_hash`` reads it back so that ``trike check --html PAGE`` can tell whether the page is stale.
"""

from __future__ import annotations

import base64
import datetime as _dt
import functools
import gzip
import html
import json
import os
import re
from importlib import resources
from pathlib import Path
from typing import Any

FORMAT = 1
MAX_VIEW = 3000  # nodes drawn at most at once; bigger graphs show their best connected nodes first
_HASH_RE = re.compile(rb'<meta name="trike-content-hash" content="([^"]*)"')
_PART_RE = re.compile(r"<!--@([A-Z]+)-->")
_SCRIPT_END = re.compile(r"</(script)", re.IGNORECASE)
_SPO = frozenset(("s", "p", "o"))


@functools.cache
def _asset(name: str) -> str:
    return resources.files("trike.ui").joinpath("assets", name).read_text(encoding="utf-8")


@functools.cache
def _asset_b64(name: str) -> str:
    return base64.b64encode(resources.files("trike.ui").joinpath("assets", name).read_bytes()).decode("ascii")


@functools.lru_cache(maxsize=1)
def third_party() -> str:
    """One line naming the bundled libraries with their versions and licences."""
    v = json.loads(_asset("versions.json"))
    pk = v["packages"]
    fg, ox = pk["force-graph"], pk["oxigraph"]
    return (f"force-graph {fg['version']} ({fg['license']}, with d3 and friends), "
            f"Oxigraph {ox['version']} ({ox['license']}); see trike/ui/assets/LICENSES.md")


def _version() -> str:
    try:
        from trike import __version__

        return f"trike {__version__}"
    except Exception:  # a page can be written by a partial checkout too
        return "trike"


def _plain(v: Any) -> Any:
    """JSON-ready copy of a value: dates as ISO text, tuples and sets as lists."""
    if isinstance(v, (_dt.date, _dt.datetime)):
        return v.isoformat()
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set, frozenset)):
        return [_plain(x) for x in v]
    if isinstance(v, float) and v != v:
        return "NaN"
    if isinstance(v, float) and v in (float("inf"), float("-inf")):
        return "INF" if v > 0 else "-INF"
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    return str(v)


def _kind(v: Any) -> str:
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "double"
    if isinstance(v, _dt.datetime):
        return "dateTime"
    if isinstance(v, _dt.date):
        return "date"
    if isinstance(v, str):
        return "string"
    return "json"


def _literal_predicates(ontology: dict) -> set[str]:
    """Predicates whose range is only datatypes: their string objects are text, not node names."""
    try:
        from trike.ontology import is_datatype
    except ImportError:  # pragma: no cover - the core is always there in a release
        return set()
    out = set()
    for name, spec in (ontology.get("predicates") or {}).items():
        if not isinstance(spec, dict):
            continue
        r = spec.get("range")
        ranges = r if isinstance(r, (list, tuple)) else ([r] if r else [])
        if ranges and all(isinstance(x, str) and is_datatype(x) for x in ranges):
            out.add(name)
    return out


def build_payload(db: Any, *, title: str | None = None, max_view: int = MAX_VIEW) -> dict:
    """The graph data the page needs, compact: node names once, facts as index arrays.

    ``facts[k] = [s, p, o]`` or ``[s, p, o, attrs]``, where ``s`` indexes ``names``, ``p`` indexes
    ``preds`` and ``o`` is a name index, or ``{"v": value, "t": xsd type}`` for a literal.
    Values are the graph's own (dates included): the page serialises them with ``_json_for_script``.
    """
    nodes = db.nodes()
    facts = db.facts()
    ontology = _plain(db.ontology() or {})
    literal_preds = _literal_predicates(ontology)

    literal_only: set[str] = set()
    used: set[str] = set()
    for f in facts:
        used.add(f["s"])
        o = f["o"]
        if isinstance(o, str):
            if f["p"] in literal_preds:
                literal_only.add(o)
            else:
                used.add(o)
    # a string that is only ever the text value of a literal predicate is not a node of the picture
    names = [n for n in nodes if not (n in literal_only and n not in used and not nodes[n])]
    listed = set(names)
    for n in sorted(used - listed):  # a facade listing fewer nodes than its facts use: still complete
        nodes.setdefault(n, {})
        names.append(n)
    index = {n: i for i, n in enumerate(names)}
    preds: list[str] = []
    pindex: dict[str, int] = {}
    rows: list[list] = []
    for f in facts:
        p = f["p"]
        if p not in pindex:
            pindex[p] = len(preds)
            preds.append(p)
        o = f["o"]
        if isinstance(o, str) and p not in literal_preds and o in index:
            oenc: Any = index[o]
        else:
            oenc = {"v": o, "t": _kind(o)}
        row = [index[f["s"]], pindex[p], oenc]
        if len(f) > 3:
            row.append({k: v for k, v in f.items() if k not in _SPO})
        rows.append(row)
    props = {str(i): nodes[n] for i, n in enumerate(names) if nodes.get(n)}
    path = getattr(db, "path", None)
    source = Path(path).name if path else None
    if title is None:
        title = Path(path).stem if path else "graph"
    return {
        "format": FORMAT,
        "title": title,
        "source": source,
        "hash": db.content_hash(),
        "generator": _version(),
        "third_party": third_party(),
        "max_view": max_view,
        "names": names,
        "props": props,
        "preds": preds,
        "facts": rows,
        "ontology": {k: ontology.get(k) or {} for k in ("predicates", "classes")},
    }


def _default(v: Any) -> Any:
    if isinstance(v, (_dt.date, _dt.datetime)):
        return v.isoformat()
    if isinstance(v, (set, frozenset)):
        return sorted(v, key=str)
    return str(v)


def _json_for_script(data: Any) -> str:
    try:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_default)
    except (ValueError, TypeError):  # NaN or infinity, or keys JSON cannot hold
        text = json.dumps(_plain(data), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    # inside <script> nothing may look like a closing tag or a comment opener
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _js(text: str) -> str:
    return _SCRIPT_END.sub(r"<\\/\1", text)


def render(db: Any, *, title: str | None = None, max_view: int = MAX_VIEW) -> str:
    """The page as a string."""
    payload = build_payload(db, title=title, max_view=max_view)
    nt = db.export("nt")
    nt_b64 = base64.b64encode(gzip.compress(nt.encode("utf-8"), compresslevel=6, mtime=0)).decode("ascii")
    parts = {
        "GENERATOR": html.escape(payload["generator"]),
        "HASH": html.escape(payload["hash"]),
        "TITLE": html.escape(payload["title"]),
        "CSS": _asset("app.css"),
        "DATA": _json_for_script(payload),
        "NT": nt_b64,
        "WASM": _asset_b64("oxigraph_bg.wasm.gz"),
        "FORCEGRAPH": _js(_asset("force-graph.min.js")),
        "OXIGRAPH": _js(_asset("oxigraph.js")),
        "APP": _js(_asset("app.js")),
    }
    template = _asset("page.html")
    return _PART_RE.sub(lambda m: parts[m.group(1)], template)


def to_html(db: Any, path: str | os.PathLike, *, title: str | None = None, max_view: int = MAX_VIEW) -> Path:
    """Write the graph of ``db`` as one self-contained HTML file at ``path``; returns the path."""
    out = Path(path)
    text = render(db, title=title, max_view=max_view)
    if out.parent and not out.parent.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(text, encoding="utf-8", newline="\n")
    os.replace(tmp, out)
    return out


def page_hash(html_path: str | os.PathLike) -> str | None:
    """The ``content_hash()`` embedded in a page written by ``to_html``; None when the file is missing or
    is not such a page."""
    try:
        with open(html_path, "rb") as fh:
            head = fh.read(16384)
    except OSError:
        return None
    m = _HASH_RE.search(head)
    return html.unescape(m.group(1).decode("utf-8")) if m else None


def page_is_current(db: Any, html_path: str | os.PathLike) -> bool:
    """True when the page at ``html_path`` was generated from the graph as it is now."""
    return page_hash(html_path) == db.content_hash()
