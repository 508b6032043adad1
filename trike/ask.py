"""`ask(question, budget_tokens)`: the fast path and the slow path of one call.

1. **Fast path.** The question names an entity (a node's name, title, label or alias, found in the text
   with separators and case ignored) and a predicate (its name, `label` or `aliases` in the ontology):
   the matching facts, valid at the date the question mentions ("2024年5月時点", "as of 2024-10-01",
   "in March 2024"; today otherwise), are the answer, with their sources. "When did ... change",
   "いつ変更", "previous ..." questions get the history of the value. A "what is X" question about a
   known node is answered by its description.
2. **Slow path.** Otherwise (and to back a direct answer) an evidence set: the facts and node texts that
   best match the question (BM25 over words and CJK bigrams, plus `db.search` when it is available),
   and their neighbourhood one or two hops from the named entities (facts in either direction, and the
   records a fact cites in its `prov`), ranked and cut to `budget_tokens`, each with its source.
3. **Nothing relevant.** When no entity is named and the best evidence covers too little of the
   question (or the question names an identifier the graph does not know), the result is
   `not_in_graph: true` with no context, so that a client can refuse instead of answering from memory.

Tokens are estimated (one per CJK character, one per four other characters), not counted by a model.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import threading
import time
import unicodedata
import weakref
from array import array
from dataclasses import dataclass, field
from typing import Any

from .graph import valid_at
from .temporal import history as _history
from .temporal import overlaps, window_text

__all__ = ["ask", "estimate_tokens", "parse_when", "terms"]

#: Evidence weaker than this share of the best item (besides the named entities) is left out.
RELATIVE_FLOOR = 0.3

# ---------------------------------------------------------------------------------------------- text
_CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f\uac00-\ud7af"
_CJK = re.compile(f"[{_CJK_CHARS}]")
_TOKEN = re.compile(f"[a-z0-9]+(?:[-_.][a-z0-9]+)*|[{_CJK_CHARS}]+")
_HIRAGANA = re.compile("[\u3040-\u309f]+")
_SEP = re.compile(r"[\s\-_./・'’\"“”()（）\[\]:：,，、]+")
_STOP = frozenset("""
a an the of to in on for is are was were be been being what which who whom whose when where why how does
do did done i should my me we our you your it its that this these those and or if then than with by at
from as can could would will there their they them has have had not no yes all any each about into tell
please give list show find get so such also just only much many more most some one s t""".split())
_QWORDS = frozenset("""とは ですか ますか でしょうか 教えて ください なに なん どの どれ どこ だれ 誰 何""".split())

_HISTORY = re.compile(r"いつ|変更|変わ|履歴|推移|変遷|経緯|以前の|前の|元の|当初|\bwhen\b|\bchang|\bhistory\b|"
                      r"\bprevious|\bused to\b|\boriginal|\bover time\b")
_REASON = re.compile(r"なぜ|何故|理由|原因|対策|対処|方法|手順|再発|防止|どうすれば|どうやって|\bwhy\b|\bhow (?:do|to|can|should|"
                     r"did|does|is|are)\b|\bcause|\breason|\bsteps?\b|\bfix|\bprevent|\bprocedure")
_DEFINE = re.compile(r"とは|\bwhat (?:is|are)\b|\bdescribe\b|\bexplain\b|\bwho is\b")
_IDENT = re.compile(r"(?<![A-Za-z0-9])(?:[A-Za-z]+[-_][A-Za-z0-9][-_A-Za-z0-9]*|[A-Z][a-z]+[A-Z][A-Za-z0-9]*|"
                    r"[A-Za-z]+\d+[A-Za-z0-9]*|[A-Z]{2,}\d*)(?![A-Za-z0-9])")


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _stem(w: str) -> str:
    if not w.isalpha():
        return w
    if len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif len(w) > 5 and w.endswith("ing"):
        w = w[:-3]
    elif len(w) > 4 and w.endswith("ed"):
        w = w[:-2]
    elif len(w) > 4 and w.endswith("es") and w[-3] in "sxz":
        w = w[:-2]
    elif len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    return w[:6]


def terms(text: str) -> list[str]:
    """Lexical terms: lower-case, lightly stemmed words without stop words; CJK text as bigrams of its
    kanji/katakana runs (hiragana, mostly particles and endings, is dropped); identifiers with digits
    also as one joined term (`DR-0012` -> dr, 0012, dr0012)."""
    out: list[str] = []
    for m in _TOKEN.finditer(_norm(str(text))):
        w = m.group()
        if w[0] < "\u3040":
            parts = re.split(r"[-_.]", w)
            if len(parts) > 1 and any(c.isdigit() for c in w):
                out.append("".join(parts))
            for part in parts:
                if not part or part in _STOP:
                    continue
                out.append(_stem(part))
                if not part.isalpha() and not part.isdigit():
                    groups = re.findall(r"[a-z]+|\d+", part)
                    if len(groups) == 2 and all(len(g) >= 3 for g in groups):
                        out.extend(_stem(g) if g.isalpha() else g for g in groups)
        else:
            for run in _HIRAGANA.split(w):
                if len(run) == 1:
                    out.append(run)
                else:
                    out.extend(run[i:i + 2] for i in range(len(run) - 1))
    return out


def estimate_tokens(text: str) -> int:
    """An estimate of the tokens of `text` for a typical LLM tokenizer: one per CJK character, one per
    four other characters."""
    if not text:
        return 0
    cjk = len(_CJK.findall(text))
    return cjk + (len(text) - cjk + 3) // 4


def _short(value: Any, limit: int = 160) -> str:
    if isinstance(value, (_dt.date, _dt.datetime)):
        text = value.isoformat()
    elif isinstance(value, float):
        text = f"{value:g}"
    elif isinstance(value, (list, tuple)):
        text = ", ".join(_short(v, limit) for v in value)
    elif isinstance(value, dict):
        text = "; ".join(f"{k}: {_short(v, limit)}" for k, v in value.items())
    else:
        text = str(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _prov_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


# ---------------------------------------------------------------------------------------------- dates
_MONTHS = {m: i for i, ms in enumerate(
    [("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"), ("may",), ("jun", "june"),
     ("jul", "july"), ("aug", "august"), ("sep", "sept", "september"), ("oct", "october"),
     ("nov", "november"), ("dec", "december")], 1) for m in ms}
_MONTH_RX = "|".join(sorted(_MONTHS, key=len, reverse=True))
_D_FULL = re.compile(r"(?<!\d)(\d{4})\s*[-/.年]\s*(\d{1,2})\s*[-/.月]\s*(\d{1,2})\s*日?(?!\d)")
_D_MONTH = re.compile(r"(?<!\d)(\d{4})\s*(?:[-/]|年)\s*(\d{1,2})(?:\s*月)?(?![\d/-])")
_D_EN_DAY = re.compile(rf"\b({_MONTH_RX})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b")
_D_EN_DAY2 = re.compile(rf"\b(\d{{1,2}})\s+({_MONTH_RX})\.?,?\s+(\d{{4}})\b")
_D_EN_MONTH = re.compile(rf"\b({_MONTH_RX})\.?,?\s+(?:of\s+)?(\d{{4}})\b")
_D_YEAR = re.compile(r"(?<!\d)(\d{4})\s*年(?!\s*\d)|\b(?:in|during|as of|since|until|before|after|by)\s+(\d{4})\b")
_BEFORE = re.compile(r"^\s*(?:より前|以前|まで|前)|\b(?:before|prior to|until)\s*$")


def _month_end(y: int, m: int) -> _dt.date:
    return _dt.date(y + (m == 12), 1 if m == 12 else m + 1, 1)


def parse_when(question: str) -> dict | None:
    """The time a question asks about: `{"start", "end", "text"}` (end exclusive), or None.
    A day is [d, d+1); a month or a year is the whole period; "before X" / "X以前" ends at X."""
    q = unicodedata.normalize("NFKC", question)
    low = q.lower()
    found: tuple[int, int, _dt.date, _dt.date] | None = None
    try:
        for rx, kind in ((_D_FULL, "ymd"), (_D_EN_DAY, "mdy"), (_D_EN_DAY2, "dmy"), (_D_MONTH, "ym"),
                         (_D_EN_MONTH, "my"), (_D_YEAR, "y")):
            m = rx.search(low)
            if not m:
                continue
            if kind == "ymd":
                start = _dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
                end = start + _dt.timedelta(days=1)
            elif kind == "mdy":
                start = _dt.date(int(m.group(3)), _MONTHS[m.group(1)], int(m.group(2)))
                end = start + _dt.timedelta(days=1)
            elif kind == "dmy":
                start = _dt.date(int(m.group(3)), _MONTHS[m.group(2)], int(m.group(1)))
                end = start + _dt.timedelta(days=1)
            elif kind == "ym":
                y, mo = int(m.group(1)), int(m.group(2))
                start, end = _dt.date(y, mo, 1), _month_end(y, mo)
            elif kind == "my":
                y, mo = int(m.group(2)), _MONTHS[m.group(1)]
                start, end = _dt.date(y, mo, 1), _month_end(y, mo)
            else:
                y = int(m.group(1) or m.group(2))
                if not 1900 <= y <= 2200:
                    continue
                start, end = _dt.date(y, 1, 1), _dt.date(y + 1, 1, 1)
            found = (m.start(), m.end(), start, end)
            break
    except ValueError:
        return None
    if found is None:
        return None
    a, b, start, end = found
    if _BEFORE.search(low[b:b + 6]) or _BEFORE.search(low[max(0, a - 12):a]):
        day = start - _dt.timedelta(days=1)
        start, end = day, start
    return {"start": start, "end": end, "text": q[a:b]}


# ---------------------------------------------------------------------------------------------- index
_ALIAS_KEYS = re.compile(r"^(title|label|labels|name|alias|aliases|aka|synonyms?)$", re.I)
_SKIP_HEAD = {"type", "sections", "path", "title"}


@dataclass(slots=True)
class _Doc:
    kind: str  # head | text | fact
    node: str | None
    field: str | None
    fact: int | None
    length: int = 0


@dataclass
class _Index:
    revision: Any
    nodes: dict[str, dict]
    facts: list[tuple[str, str, Any, dict]]
    onto: dict
    docs: list[_Doc] = field(default_factory=list)
    postings: dict[str, tuple[array, array]] = field(default_factory=dict)  # term -> (doc ids, counts)
    avgdl: float = 1.0
    out: dict[str, list[int]] = field(default_factory=dict)
    inc: dict[str, list[int]] = field(default_factory=dict)
    cites: dict[int, list[str]] = field(default_factory=dict)
    cited_by: dict[str, list[int]] = field(default_factory=dict)
    names: dict[str, set[str]] = field(default_factory=dict)
    name_max: int = 0
    preds: dict[str, set[tuple[str, str]]] = field(default_factory=dict)
    pred_max: int = 0
    node_docs: dict[str, list[int]] = field(default_factory=dict)
    fact_doc: dict[int, int] = field(default_factory=dict)
    words: set[str] = field(default_factory=set)  # every ASCII word and joined identifier, unstemmed

    def degree(self, name: str) -> int:
        return len(self.out.get(name, ())) + len(self.inc.get(name, ())) + len(self.cited_by.get(name, ()))

    @property
    def n_docs(self) -> int:
        return len(self.docs)

    def idf(self, term: str) -> float:
        plist = self.postings.get(term)
        n = len(plist[0]) if plist else 0
        return math.log(1 + (self.n_docs - n + 0.5) / (n + 0.5))

    def bm25(self, qterms: list[str], top: int = 300) -> dict[int, float]:
        k1, b = 1.2, 0.75
        scores: dict[int, float] = {}
        docs = self.docs
        avg = self.avgdl or 1.0
        for t in dict.fromkeys(qterms):
            plist = self.postings.get(t)
            if not plist:
                continue
            idf = self.idf(t)
            for d, tf in zip(*plist, strict=True):
                dl = docs[d].length
                scores[d] = scores.get(d, 0.0) + idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avg))
        if len(scores) > top:
            keep = sorted(scores.items(), key=lambda kv: -kv[1])[:top]
            return dict(keep)
        return scores


def _key(text: str) -> str:
    return _SEP.sub("", _norm(text))


def _aliases(props: dict) -> list[str]:
    out = []
    for k, v in (props or {}).items():
        if not _ALIAS_KEYS.match(str(k)):
            continue
        for x in v if isinstance(v, list) else [v]:
            if isinstance(x, str) and x.strip():
                out.append(x)
    return out


def _humanize(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", str(name)).replace("_", " ")


def _pred_words(p: str, spec: dict) -> str:
    words = [_humanize(p)]
    for k in ("label", "labels", "aliases", "alias"):
        v = spec.get(k)
        for x in v if isinstance(v, list) else [v]:
            if isinstance(x, str):
                words.append(x)
    return " ".join(words)


def _fact_text(idx: _Index, i: int) -> str:
    s, p, o, a = idx.facts[i]
    spec = idx.onto.get(p) or {}
    text = f"{s} {_pred_words(p, spec)} {_short(o, 200)}"
    sec = a.get("section") if a else None
    if sec:
        text += f" {_short(sec)}"
    for n in (s, o):
        if isinstance(n, str) and n in idx.nodes:
            al = _aliases(idx.nodes[n])
            if al:
                text += " " + " ".join(al[:2])
    return text


def _head_text(name: str, props: dict, limit: int = 400) -> str:
    props = props or {}
    text = name
    t = props.get("type")
    if t:
        text += f" ({_short(t, 40)})"
    title = props.get("title")
    if isinstance(title, str) and title.strip() and _key(title) != _key(name):
        text += f": {_short(title, 100)}"
    parts = []
    desc = props.get("description")
    if desc not in (None, ""):
        parts.append(_short(desc, 240))
    for k, v in props.items():
        if k in _SKIP_HEAD or k == "description" or v in (None, "", [], {}):
            continue
        if isinstance(v, str) and len(v) > 60:
            continue  # long text is a text item of its own
        if isinstance(v, dict):
            continue
        parts.append(f"{k}: {_short(v, 80)}")
    if parts:
        text += " — " + "; ".join(parts)
    return _short(text, limit)


def _node_texts(props: dict) -> list[tuple[str, str]]:
    """(field, text) of a node's long texts: string props over 60 characters and each section."""
    out = []
    for k, v in (props or {}).items():
        if k == "sections" and isinstance(v, dict):
            for heading, text in v.items():
                if isinstance(text, str) and text.strip():
                    out.append((f"sections.{heading}", f"{heading}: {text}"))
        elif isinstance(v, str) and len(v) > 60 and k not in ("title", "path"):
            if k == "description" and len(v) <= 240:
                continue  # shown whole in the node's head line
            out.append((k, v))
    return out


def _build(db: Any, revision: Any) -> _Index:
    nodes = db.nodes()
    facts = []
    for f in db.facts(as_of="all"):
        attrs = {k: v for k, v in f.items() if k not in ("s", "p", "o")}
        facts.append((f["s"], f["p"], f["o"], attrs))
    try:
        onto = (db.ontology() or {}).get("predicates") or {}
    except Exception:  # a graph without an ontology
        onto = {}
    idx = _Index(revision, nodes, facts, onto)
    postings: dict[str, tuple[array, array]] = {}
    total = 0

    words = idx.words

    def add_doc(doc: _Doc, text: str) -> int:
        nonlocal total
        for m in re.finditer(r"[a-z0-9]+(?:[-_.][a-z0-9]+)*", _norm(text)):
            w = m.group()
            words.add(w)
            if not w.isalnum():
                words.add(re.sub(r"[-_.]", "", w))
                words.update(re.split(r"[-_.]", w))
        counts: dict[str, int] = {}
        for t in terms(text):
            counts[t] = counts.get(t, 0) + 1
        d = len(idx.docs)
        doc.length = sum(counts.values()) or 1
        total += doc.length
        idx.docs.append(doc)
        for t, c in counts.items():
            plist = postings.get(t)
            if plist is None:
                plist = postings[t] = (array("i"), array("i"))
            plist[0].append(d)
            plist[1].append(c)
        return d

    by_path: dict[str, str] = {}
    for name, props in nodes.items():
        props = props or {}
        path = props.get("path")
        if isinstance(path, str):
            by_path[path] = name
        head = _head_text(name, props, 600) + " " + " ".join(_aliases(props))
        idx.node_docs.setdefault(name, []).append(add_doc(_Doc("head", name, None, None), head))
        for fld, text in _node_texts(props):
            idx.node_docs[name].append(add_doc(_Doc("text", name, fld, None), text))
        for key in {_key(name), *(_key(a) for a in _aliases(props))}:
            if len(key) >= 2:
                idx.names.setdefault(key, set()).add(name)
    for i, (s, _p, o, a) in enumerate(facts):
        idx.out.setdefault(s, []).append(i)
        if isinstance(o, str):
            idx.inc.setdefault(o, []).append(i)
        cited = []
        for pv in _prov_list(a.get("prov") if a else None):
            if isinstance(pv, str):
                target = pv if pv in nodes else by_path.get(pv)
                if target is not None and target not in cited:
                    cited.append(target)
                    idx.cited_by.setdefault(target, []).append(i)
        if cited:
            idx.cites[i] = cited
        idx.fact_doc[i] = add_doc(_Doc("fact", None, None, i), _fact_text(idx, i))
    idx.postings = postings
    idx.avgdl = total / max(1, len(idx.docs))
    idx.name_max = min(64, max((len(k) for k in idx.names), default=0))
    preds = set(idx.onto) | {p for _s, p, _o, _a in facts}
    for p in preds:
        spec = idx.onto.get(p) or {}
        keys = {_key(p), _key(_humanize(p))}
        for k in ("label", "labels", "aliases", "alias"):
            v = spec.get(k)
            for x in v if isinstance(v, list) else [v]:
                if isinstance(x, str):
                    keys.add(_key(x))
        for k in keys:
            if len(k) >= 2 and (len(k) >= 3 or _CJK.search(k)):
                idx.preds.setdefault(k, set()).add(("pred", p))
    prop_keys = {k for props in nodes.values() for k in (props or {}) if k not in ("type", "title", "sections",
                                                                                    "path", "name")}
    for k in prop_keys:
        kk = _key(_humanize(k))
        if len(kk) >= 3:
            idx.preds.setdefault(kk, set()).add(("prop", k))
    idx.pred_max = min(64, max((len(k) for k in idx.preds), default=0))
    return idx


_cache: weakref.WeakKeyDictionary[Any, _Index] = weakref.WeakKeyDictionary()
_cache_lock = threading.Lock()


def _index(db: Any) -> _Index:
    try:
        len(db)  # picks up changes made to the file by others (one stat)
    except TypeError:
        pass
    rev = getattr(db, "revision", None)
    with _cache_lock:
        try:
            got = _cache.get(db)
        except TypeError:
            got = None
    if got is not None and got.revision == rev and rev is not None:
        return got
    idx = _build(db, rev)
    with _cache_lock:
        try:
            _cache[db] = idx
        except TypeError:
            pass
    return idx


# ---------------------------------------------------------------------------------------------- linking
def _normalized_with_positions(question: str) -> tuple[str, list[int]]:
    chars: list[str] = []
    pos: list[int] = []
    for i, ch in enumerate(question):
        n = _norm(ch)
        if not n or _SEP.fullmatch(n):
            continue
        for c in n:
            chars.append(c)
            pos.append(i)
    return "".join(chars), pos


def _is_alnum_ascii(ch: str) -> bool:
    return ch.isascii() and ch.isalnum()


def _scan(question: str, table: dict[str, set], maxlen: int) -> list[tuple[int, int, str, set]]:
    """Longest non-overlapping keys of `table` found in the question: (start, end, key, values) with
    positions in the original question. ASCII keys must not touch other ASCII letters or digits."""
    if not table or maxlen <= 0:
        return []
    q, pos = _normalized_with_positions(question)
    found = []
    i = 0
    n = len(q)
    while i < n:
        hit = None
        for L in range(min(maxlen, n - i), 1, -1):
            k = q[i:i + L]
            vals = table.get(k)
            if vals is None:
                continue
            a, b = pos[i], pos[i + L - 1] + 1
            if _is_alnum_ascii(k[0]) and a > 0 and _is_alnum_ascii(question[a - 1]):
                continue
            if _is_alnum_ascii(k[-1]) and b < len(question) and _is_alnum_ascii(question[b]):
                continue
            hit = (a, b, k, vals, L)
            break
        if hit:
            found.append(hit[:4])
            i += hit[4]
        else:
            i += 1
    return found


# ---------------------------------------------------------------------------------------------- answering
def _fact_public(idx: _Index, i: int) -> dict:
    s, p, o, a = idx.facts[i]
    d = {"s": s, "p": p, "o": o}
    d.update(a or {})
    return d


def _fact_line(idx: _Index, i: int) -> str:
    s, p, o, a = idx.facts[i]
    spec = idx.onto.get(p) or {}
    label = spec.get("label") if isinstance(spec.get("label"), str) else None
    text = f"{s} {p}{f' ({label})' if label else ''} {_short(o, 200)}"
    extras = []
    a = a or {}
    w = window_text(a.get("valid_from"), a.get("valid_to"))
    if w:
        extras.append(w)
    if a.get("section"):
        extras.append(f"section: {_short(a['section'], 80)}")
    prov = _prov_list(a.get("prov"))
    if prov:
        shown = ", ".join(_short(x, 60) for x in prov[:6])
        more = f" +{len(prov) - 6} more" if len(prov) > 6 else ""
        extras.append(f"sources: {shown}{more}")
    if a.get("confidence") is not None:
        extras.append(f"confidence {_short(a['confidence'])}")
    for k, v in a.items():
        if k not in ("valid_from", "valid_to", "section", "prov", "confidence") and v not in (None, ""):
            extras.append(f"{k}: {_short(v, 60)}")
    if extras:
        text += " [" + "; ".join(extras) + "]"
    return text


def _in_window(a: dict | None, when: dict | None, today: _dt.date) -> bool:
    if when is None:
        return valid_at(a, today)
    return overlaps(a, when["start"], when["end"])


def _source_of(props: dict, name: str, idx: _Index | None = None) -> str | None:
    """Where a node's text comes from: its `prov`/`source`/`path` property; the node itself when facts
    cite it as their source (a report); None otherwise."""
    for k in ("prov", "source", "path"):
        v = (props or {}).get(k)
        if isinstance(v, str) and v:
            return v
    if idx is None or name in idx.cited_by:
        return name
    return None


@dataclass
class _Item:
    kind: str
    score: float
    text: str
    node: str | None = None
    field: str | None = None
    fact: int | None = None
    source: Any = None
    tokens: int = 0


def _direct(db: Any, idx: _Index, ents: list[str], preds: list[tuple[str, str]], when: dict | None,
            history_intent: bool, today: _dt.date) -> dict | None:
    facts: list[int] = []
    pairs: list[tuple[str, str, str]] = []
    for e in ents:
        for kind, p in preds:
            if kind != "pred":
                continue
            outs = [i for i in idx.out.get(e, ()) if idx.facts[i][1] == p]
            if outs:
                pairs.append((e, p, "out"))
                facts.extend(outs)
                continue
            ins = [i for i in idx.inc.get(e, ()) if idx.facts[i][1] == p]
            if ins:
                pairs.append((e, p, "in"))
                facts.extend(ins)
    if not pairs:
        for e in ents:
            for kind, k in preds:
                if kind == "prop" and k in (idx.nodes.get(e) or {}):
                    v = idx.nodes[e][k]
                    src = _source_of(idx.nodes[e], e)
                    return {"kind": "property", "text": f"{e} {k}: {_short(v, 600)}", "node": e, "property": k,
                            "value": v, "facts": [], "sources": [src], "confidence": 1.0}
        return None
    if history_intent and when is None:
        lines, out_facts, changes, sources = [], [], [], []
        for e, p, direction in pairs:
            if direction != "out":
                continue
            rows = _history(db, e, p)
            prev = None
            parts = []
            for r in rows:
                prov = _prov_list(r.get("prov"))
                w = window_text(r.get("valid_from"), r.get("valid_to")) or "always"
                parts.append(f"{_short(r['o'])} ({w}{'; ' + ', '.join(map(str, prov[:4])) if prov else ''})")
                if prev is not None and r.get("valid_from") is not None:
                    changes.append({"s": e, "p": p, "date": r["valid_from"], "from": prev["o"], "to": r["o"],
                                    "sources": prov[:3]})
                prev = r
                out_facts.append({k: v for k, v in r.items() if v is not None})
                sources.extend(x for x in prov if x not in sources)
            lines.append(f"{e} {p}: " + " → ".join(parts))
        if out_facts:
            return {"kind": "history", "text": "; ".join(lines), "facts": out_facts, "changes": changes,
                    "sources": sources, "confidence": _conf(out_facts)}
    chosen = [i for i in dict.fromkeys(facts) if _in_window(idx.facts[i][3], when, today)]
    if not chosen:
        return None
    out_facts = [_fact_public(idx, i) for i in chosen]
    if _conf(out_facts) < 0.5:
        return None
    by_pair: dict[tuple[str, str], list[str]] = {}
    for i in chosen:
        s, p, o, a = idx.facts[i]
        w = window_text((a or {}).get("valid_from"), (a or {}).get("valid_to"))
        by_pair.setdefault((s, p), []).append(f"{_short(o)}{f' ({w})' if w else ''}")
    text = "; ".join(f"{s} {p} = {', '.join(v)}" for (s, p), v in by_pair.items())
    sources: list[Any] = []
    for f in out_facts:
        sources.extend(x for x in _prov_list(f.get("prov")) if x not in sources)
    if sources:
        text += f" (sources: {', '.join(map(str, sources[:6]))}{' …' if len(sources) > 6 else ''})"
    return {"kind": "value", "text": text, "facts": out_facts, "sources": sources, "confidence": _conf(out_facts)}


def _conf(facts: list[dict]) -> float:
    vals = []
    for f in facts:
        try:
            vals.append(float(f.get("confidence", 1.0)))
        except (TypeError, ValueError):
            vals.append(1.0)
    return round(min(vals), 4) if vals else 0.0


def _search_widen(db: Any, question: str, when: dict | None) -> dict | None:
    """`db.search` results when search is available (None when it is not, or fails)."""
    try:
        import importlib.util

        if importlib.util.find_spec("trike.search") is None:
            return None
        kw: dict[str, Any] = {}
        if when is not None:
            kw["as_of"] = when["start"].isoformat()
        return db.search(question, k=10, **kw)
    except Exception:  # search is optional: ask works lexically without it
        return None


def _loose_preds(idx: _Index, ents: list[str], masked: str) -> list[tuple[str, str]]:
    """Predicates named by one of their words ("who owns X" -> OWNED_BY, "retention of X" ->
    retention_days), among the facts of the named entities only: word stems (3+ letters) that are
    prefixes of each other match."""
    qs = {t for t in terms(masked) if t.isascii() and t.isalpha() and len(t) >= 3}
    if not qs:
        return []
    out: list[tuple[str, str]] = []
    for e in ents[:3]:
        for i in idx.out.get(e, []):
            p = idx.facts[i][1]
            if ("pred", p) in out:
                continue
            words = {_stem(w) for w in re.split(r"[\s_\-]+", _humanize(p).casefold())
                     if len(w) >= 3 and w.isascii() and w.isalpha() and w not in _STOP}
            if any(q.startswith(w) or w.startswith(q) for w in words for q in qs):
                out.append(("pred", p))
    return out


def ask(db: Any, question: str, budget_tokens: int = 2000) -> dict:
    """Answer `question` from the graph: a direct answer with its sources when one fact (or node)
    answers it, plus an evidence set cut to `budget_tokens`; `not_in_graph` when nothing relevant is in
    the graph.

    Returns `{"question", "answer": None | {"kind", "text", "facts", "sources", "confidence", ...},
    "evidence": [{"kind": "fact"|"node"|"text", "text", "score", "source", ...}], "context": str,
    "sources": [...], "tokens", "budget_tokens", "not_in_graph": bool, "as_of", "entities",
    "predicates", "seconds"}`."""
    started = time.perf_counter()
    question = "" if question is None else str(question)
    try:
        budget = max(50, int(budget_tokens))
    except (TypeError, ValueError):
        budget = 2000
    idx = _index(db)
    today = _dt.date.today()
    when = parse_when(question)
    qn = _norm(question)
    history_intent = bool(_HISTORY.search(qn))
    reason_intent = bool(_REASON.search(qn))

    ent_hits = _scan(question, idx.names, idx.name_max)
    ents: list[str] = []
    spans: list[tuple[int, int]] = []
    for a, b, _k, vals in ent_hits:
        spans.append((a, b))
        for v in sorted(vals):
            if v not in ents:
                ents.append(v)
    masked = "".join(" " if any(a <= i < b for a, b in spans) else ch for i, ch in enumerate(question))
    pred_hits = _scan(masked, idx.preds, idx.pred_max)
    preds: list[tuple[str, str]] = []
    for _a, _b, _k, vals in pred_hits:
        for v in sorted(vals):
            if v not in preds:
                preds.append(v)

    if ents and not preds:
        preds = _loose_preds(idx, ents, masked)

    qterms = terms(question)
    content = [t for t in dict.fromkeys(terms(masked)) if t not in _QWORDS]
    if when is not None:
        date_terms = set(terms(when["text"]))
        content = [t for t in content if t not in date_terms]

    # ---- fast path
    answer = None
    pinned_answer = None
    if ents and preds:
        found = _direct(db, idx, ents, preds, when, history_intent, today)
        if reason_intent:
            pinned_answer = found  # "why did X's P change?": the values lead the evidence, not the answer
        else:
            answer = found
    if answer is None and ents and not preds and not reason_intent and _DEFINE.search(qn) and not content:
        e = ents[0]
        props = idx.nodes.get(e) or {}
        if props.get("description") or props.get("title"):
            answer = {"kind": "node", "text": _head_text(e, props), "node": e, "facts": [],
                      "sources": [_source_of(props, e)], "confidence": 1.0}

    if answer is not None:
        return _fast_result(idx, question, answer, ents, preds, when, budget, started)

    # ---- lexical relevance
    lex = idx.bm25(qterms)
    top = max(lex.values(), default=0.0)
    rel: dict[int, float] = {d: s / top for d, s in lex.items()} if top > 0 else {}
    node_lex: dict[str, float] = {}
    fact_lex: dict[int, float] = {}
    for d, r in rel.items():
        doc = idx.docs[d]
        if doc.kind == "fact":
            fact_lex[doc.fact] = max(fact_lex.get(doc.fact, 0.0), r)
            s, _p, o, _a = idx.facts[doc.fact]
            for n in (s, o):
                if isinstance(n, str) and n in idx.nodes:
                    node_lex[n] = max(node_lex.get(n, 0.0), 0.6 * r)
        elif doc.node is not None:
            node_lex[doc.node] = max(node_lex.get(doc.node, 0.0), r)

    # support: how much of the question (weighted by rarity) the best evidence covers
    support = _support(idx, content, rel)
    searched = _search_widen(db, question, when)
    search_found = bool(searched and not searched.get("nothing_found") and searched.get("results"))
    unknown_ids = [m.group() for m in _IDENT.finditer(question)
                   if not any(a <= m.start() < b for a, b in spans) and _key(m.group()) not in idx.names]
    unknown_ids = [u for u in unknown_ids if not _is_known_word(idx, u)]

    not_in_graph = False
    if not ents:
        if unknown_ids or not content or support < 0.5 and not (search_found and support >= 0.3):
            not_in_graph = True
    if not_in_graph:
        return {
            "question": question, "answer": None, "evidence": [], "context": "", "sources": [],
            "tokens": 0, "budget_tokens": budget, "not_in_graph": True,
            "as_of": _when_out(when), "entities": [], "predicates": [p for _k, p in preds],
            "unknown": unknown_ids, "support": round(support, 3),
            "seconds": round(time.perf_counter() - started, 4),
        }

    # ---- graph relevance: proximity to the named entities (or to the best lexical seeds), 1-2 hops
    # prox(n): 1 for an origin, times (0.6 + 0.4 * the link's own relevance) / hub size per hop.
    search_bonus: dict[str, float] = {}
    if search_found:
        for rank, res in enumerate(searched.get("results") or []):
            names = []
            if res.get("kind") == "node":
                names = [(res.get("node") or {}).get("name")]
            elif res.get("fact"):
                f = res["fact"]
                names = [f.get("s"), f.get("o")]
            for n in names:
                if isinstance(n, str) and n in idx.nodes:
                    search_bonus[n] = max(search_bonus.get(n, 0.0), 0.3 / (1 + rank))
    pinned: set[int] = set()
    for f in (pinned_answer or {}).get("facts") or []:
        i = _find_fact(idx, f)
        if i is not None:
            pinned.add(i)
    if ents:
        origins = {n: 1.0 for n in ents}
    else:
        seeds = sorted(((n, r + search_bonus.get(n, 0.0)) for n, r in node_lex.items()), key=lambda kv: -kv[1])
        origins = {n: min(1.0, r) for n, r in seeds[:5] if r >= 0.45}
    window_ok = (lambda a: True) if history_intent else (lambda a: _in_window(a, when, today))
    prox: dict[str, float] = dict(origins)
    via: dict[int, float] = {}  # fact -> proximity of the link it makes
    frontier = list(origins.items())
    for _hop in (1, 2):
        nxt: dict[str, float] = {}
        for n, p_n in frontier:
            cand: list[tuple[str, int]] = []
            for i in idx.out.get(n, ()):
                o = idx.facts[i][2]
                if isinstance(o, str):
                    cand.append((o, i))
                cand.extend((c, i) for c in idx.cites.get(i, ()))
            for i in idx.inc.get(n, ()):
                cand.append((idx.facts[i][0], i))
                cand.extend((c, i) for c in idx.cites.get(i, ()))
            for i in idx.cited_by.get(n, ()):
                cand.append((idx.facts[i][0], i))
            cand = [(m, i) for m, i in cand if m != n and m in idx.nodes and window_ok(idx.facts[i][3])]
            hub = 1.0 + math.log(len(cand) / 8) if len(cand) > 8 else 1.0
            if len(cand) > 40:
                good = [(m, i) for m, i in cand if node_lex.get(m, 0) > 0 or fact_lex.get(i, 0) > 0 or i in pinned]
                good.sort(key=lambda mi: -(node_lex.get(mi[0], 0) + fact_lex.get(mi[1], 0)))
                cand = good[:40]
            for m, i in cand:
                p_m = p_n * (0.6 + 0.4 * fact_lex.get(i, 0.0)) / hub
                via[i] = max(via.get(i, 0.0), min(p_n, p_m + 0.5 * node_lex.get(m, 0.0)))
                if p_m > prox.get(m, 0.0) + 1e-9:
                    prox[m] = p_m
                    if node_lex.get(m, 0.0) > 0 or m in search_bonus or p_n >= 1.0:
                        nxt[m] = p_m
        frontier = list(nxt.items())
    score: dict[str, float] = {}
    for n in set(prox) | set(node_lex) | set(search_bonus):
        lexr = node_lex.get(n, 0.0) + search_bonus.get(n, 0.0)
        if n in ents:
            score[n] = 2.0 + lexr
        elif n in prox:
            score[n] = lexr * (0.5 + 0.5 * prox[n]) + 0.35 * prox[n]
        else:
            score[n] = lexr * (0.4 if ents else 1.0)

    # ---- items: node heads, their relevant texts, and the facts linking the chosen nodes
    floor = 0.3
    items: list[_Item] = []
    for i in pinned:
        items.append(_Item("fact", 10.0, _fact_line(idx, i), fact=i, source=_prov_list(idx.facts[i][3].get("prov"))))
    ranked = sorted(score.items(), key=lambda kv: -kv[1])
    selected = {n for n, s_n in ranked if s_n >= floor}
    for n, s_n in ranked:
        if s_n < floor:
            break
        props = idx.nodes.get(n) or {}
        is_ent = n in ents
        items.append(_Item("node", s_n + (3.0 if is_ent else 0.0), _head_text(n, props), node=n,
                           source=_source_of(props, n, idx)))
        chunks = []
        for d in idx.node_docs.get(n, ())[1:]:
            r = rel.get(d, 0.0)
            if r >= 0.15 or (is_ent and len(ents) <= 2):
                chunks.append((r, idx.docs[d]))
        chunks.sort(key=lambda rd: -rd[0])
        for r, doc in chunks[: (12 if is_ent else 3)]:
            text = _node_field_text(props, doc.field)
            if not text:
                continue
            base = s_n if not is_ent else 1.0 + r
            items.append(_Item("text", base * (0.5 + r), f"{n} › {doc.field.removeprefix('sections.')}: "
                               f"{_short(text, 900)}", node=n, field=doc.field, source=_source_of(props, n, idx)))
    for i in set(via) | set(fact_lex):
        if i in pinned or not window_ok(idx.facts[i][3]):
            continue
        s, _p, o, a = idx.facts[i]
        ends = [x for x in (s, o) if isinstance(x, str) and x in selected]
        both = len(ends) == 2 or (len(ends) == 1 and not (isinstance(o, str) and o in idx.nodes))
        f_score = max(fact_lex.get(i, 0.0), via.get(i, 0.0) if both else 0.0)
        if f_score < floor or not ends:
            continue
        end_score = min(score.get(x, 0.0) for x in ends)
        items.append(_Item("fact", 0.9 * min(f_score + 0.5 * end_score, max(end_score, f_score)), _fact_line(idx, i),
                           fact=i, source=_prov_list((a or {}).get("prov"))))
    items.sort(key=lambda it: -it.score)
    # "as the question needs": drop the tail that is much weaker than the best evidence beyond the entities
    others = [it.score for it in items if it.score < 10.0 and not (it.kind == "node" and it.node in ents)]
    if others:
        cut = max(floor, RELATIVE_FLOOR * others[0])
        items = [it for it in items if it.score >= cut or it.score >= 10.0 or (it.kind == "node" and it.node in ents)]

    chosen: list[_Item] = []
    used = 0
    seen_text: set[str] = set()
    for it in items:
        if it.text in seen_text:
            continue
        it.tokens = estimate_tokens(it.text) + 1
        if used + it.tokens > budget:
            continue
        chosen.append(it)
        seen_text.add(it.text)
        used += it.tokens
    context = "\n".join(it.text for it in chosen)
    evidence, sources = _evidence_entries(idx, chosen, [])
    return {
        "question": question,
        "answer": None,
        "evidence": evidence,
        "context": context,
        "sources": sources,
        "tokens": estimate_tokens(context),
        "budget_tokens": budget,
        "not_in_graph": False,
        "as_of": _when_out(when),
        "entities": ents,
        "predicates": [p for _k, p in preds],
        "unknown": unknown_ids,
        "support": round(support, 3),
        "seconds": round(time.perf_counter() - started, 4),
    }


def _fast_result(idx: _Index, question: str, answer: dict, ents: list[str], preds: list[tuple[str, str]],
                 when: dict | None, budget: int, started: float) -> dict:
    """The fast path's result: the answer, the facts it rests on, and the nodes of its first sources."""
    items: list[_Item] = []
    for f in answer.get("facts") or []:
        i = _find_fact(idx, f)
        if i is not None:
            items.append(_Item("fact", 10.0, _fact_line(idx, i), fact=i,
                               source=_prov_list((idx.facts[i][3] or {}).get("prov"))))
    shown = list(dict.fromkeys([*(answer.get("sources") or [])]))
    node_names = [n for n in ents if n in idx.nodes]
    for src in shown[:8]:
        if isinstance(src, str):
            target = src if src in idx.nodes else next(
                (n for n, p in idx.nodes.items() if (p or {}).get("path") == src), None) if "/" in src else None
            if target is not None and target not in node_names:
                node_names.append(target)
    for rank, n in enumerate(node_names):
        props = idx.nodes.get(n) or {}
        items.append(_Item("node", 5.0 - 0.01 * rank, _head_text(n, props), node=n, source=_source_of(props, n, idx)))
    header = f"Answer: {answer['text']}"
    used = estimate_tokens(header) + 1
    chosen = []
    for it in items:
        it.tokens = estimate_tokens(it.text) + 1
        if used + it.tokens > budget:
            continue
        chosen.append(it)
        used += it.tokens
    evidence, sources = _evidence_entries(idx, chosen, list(answer.get("sources") or []))
    context = "\n".join([header] + [it.text for it in chosen])
    return {
        "question": question, "answer": answer, "evidence": evidence, "context": context, "sources": sources,
        "tokens": estimate_tokens(context), "budget_tokens": budget, "not_in_graph": False,
        "as_of": _when_out(when), "entities": ents, "predicates": [p for _k, p in preds], "unknown": [],
        "support": None, "seconds": round(time.perf_counter() - started, 4),
    }


def _find_fact(idx: _Index, f: dict) -> int | None:
    for i in idx.out.get(f.get("s"), ()):
        _s, p, o, _a = idx.facts[i]
        if p == f.get("p") and o == f.get("o") and type(o) is type(f.get("o")):
            return i
    return None


def _evidence_entries(idx: _Index, chosen: list[_Item], sources: list[Any]) -> tuple[list[dict], list[Any]]:
    evidence = []
    for it in chosen:
        entry: dict[str, Any] = {"kind": it.kind, "score": round(it.score, 4), "text": it.text}
        if it.fact is not None:
            entry.update(_fact_public(idx, it.fact))
        else:
            entry["node"] = it.node
            if it.field:
                entry["field"] = it.field
        entry["source"] = it.source
        for x in it.source if isinstance(it.source, list) else [it.source]:
            if x is not None and x not in sources:
                sources.append(x)
        evidence.append(entry)
    return evidence, sources


def _node_field_text(props: dict, fld: str | None) -> str:
    if not fld:
        return ""
    if fld.startswith("sections."):
        sec = props.get("sections") or {}
        v = sec.get(fld[len("sections."):]) if isinstance(sec, dict) else None
    else:
        v = props.get(fld)
    return v if isinstance(v, str) else ""


def _is_known_word(idx: _Index, word: str) -> bool:
    """An identifier-looking word that the graph's text uses (e.g. 'p99', 'TLS'), though no node has it
    as its name."""
    return _key(word) in idx.words


def _support(idx: _Index, content: list[str], rel: dict[int, float]) -> float:
    """The largest share (weighted by idf; unknown terms weigh most) of the question's content terms
    that one document of the best twenty contains."""
    if not content:
        return 0.0
    n = max(1, idx.n_docs)
    weights = {t: (idx.idf(t) if t in idx.postings else math.log(1 + (n + 0.5) / 0.5)) for t in content}
    total = sum(weights.values()) or 1.0
    best = 0.0
    top_docs = sorted(rel.items(), key=lambda kv: -kv[1])[:20]
    if not top_docs:
        return 0.0
    wanted = set(content)
    doc_terms: dict[int, set[str]] = {d: set() for d, _r in top_docs}
    for t in wanted:
        plist = idx.postings.get(t)
        for d in plist[0] if plist else ():
            if d in doc_terms:
                doc_terms[d].add(t)
    # a node's head and texts count together
    by_node: dict[Any, set[str]] = {}
    for d, ts in doc_terms.items():
        doc = idx.docs[d]
        key = doc.node if doc.node is not None else ("fact", doc.fact)
        by_node.setdefault(key, set()).update(ts)
    for ts in by_node.values():
        best = max(best, sum(weights[t] for t in ts) / total)
    return best


def _when_out(when: dict | None) -> Any:
    if when is None:
        return None
    if when["end"] - when["start"] == _dt.timedelta(days=1):
        return when["start"].isoformat()
    return {"from": when["start"].isoformat(), "to": when["end"].isoformat()}
