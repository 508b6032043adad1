"""Sentences and tokens: how a fact or a node is written as one short sentence, and how text is cut
into lexical terms (words for spaced scripts, character n-grams for Japanese, Chinese, Thai, ...).

Pure Python, no third-party imports: this module is cheap to import.
"""

from __future__ import annotations

import datetime as _dt
import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

# Props whose values are other names of a node ("sales table" for 売上テーブル). They are shown next to
# the node's name in every sentence that mentions it, so a question using either name reaches its facts.
_ALIAS_KEY = re.compile(r"^(label|name|title|alias|aliases|aka|synonyms?|en|ja|english|japanese)([_@:-]\w+)?$", re.I)
# Fact attributes rendered after the triple, in this order (others follow in their own order).
_ATTR_ORDER = ("prov", "source", "confidence", "valid_from", "valid_to", "note")

MAX_VALUE_CHARS = 120
MAX_SENTENCE_CHARS = 600
MAX_DESCRIPTION_CHARS = 100


def value_text(value: Any, limit: int = MAX_VALUE_CHARS) -> str:
    """One value as short display text (dates as ISO, lists joined by commas, long text cut)."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, (_dt.date, _dt.datetime)):
        text = value.isoformat()
    elif isinstance(value, float):
        text = f"{value:g}"
    elif isinstance(value, (list, tuple, set)):
        text = ", ".join(value_text(v, limit) for v in value)
    elif isinstance(value, Mapping):
        text = ", ".join(f"{k}: {value_text(v, limit)}" for k, v in value.items())
    elif value is None:
        text = ""
    else:
        text = str(value)
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


_humanized: dict[str, str] = {}


def humanize(name: str) -> str:
    """`works_for` / `worksFor` / `works-for` -> `works for` (other text is left as it is)."""
    got = _humanized.get(name)
    if got is None:
        got = _humanize(name)
        if len(name) < 64 and len(_humanized) < 100_000:
            _humanized[name] = got
    return got


def _humanize(name: str) -> str:
    text = name.replace("_", " ")
    if re.fullmatch(r"[A-Za-z0-9 ]+", text):
        text = _CAMEL.sub(" ", text).replace("-", " ")
    return " ".join(text.split())


def aliases(props: Mapping[str, Any] | None) -> list[str]:
    """The other names of a node: the values of its label/name/alias-like props."""
    out: list[str] = []
    if not props:
        return out
    for key, value in props.items():
        if key == "type" or not _is_alias_key(key):
            continue
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if isinstance(v, str) and v.strip() and v not in out:
                out.append(" ".join(v.split()))
    return out


_alias_keys: dict[Any, bool] = {}


def _is_alias_key(key: Any) -> bool:
    got = _alias_keys.get(key)
    if got is None:
        got = bool(_ALIAS_KEY.match(str(key)))
        if len(_alias_keys) < 10_000:
            _alias_keys[key] = got
    return got


def node_label(name: str, props: Mapping[str, Any] | None) -> str:
    """A node's name, followed by its other names in parentheses."""
    other = [a for a in aliases(props) if a != name][:3]
    return f"{name} ({', '.join(other)})" if other else name


def _cut(text: str, limit: int = MAX_SENTENCE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def predicate_label(p: str, pred: Mapping[str, Any] | None) -> str:
    """The predicate's `label`, else its name as words (`OWNED_BY` -> `owned by`)."""
    label = (pred or {}).get("label")
    if isinstance(label, str) and label.strip():
        return label.strip()
    words = humanize(str(p))
    return words.lower() if words.isupper() else words


def fact_parts(
    fact: Mapping[str, Any],
    nodes: Mapping[str, Mapping[str, Any]],
    predicates: Mapping[str, Mapping[str, Any]],
) -> tuple[str, str, str, str]:
    """The four parts of a fact's sentence: subject, predicate (with its description), object, attributes."""
    return Renderer(nodes, predicates, {}).fact_parts(fact)


class Renderer:
    """`fact_parts` / `node_parts` for one graph, remembering each node's label and predicate's phrase."""

    def __init__(
        self,
        nodes: Mapping[str, Mapping[str, Any]],
        predicates: Mapping[str, Mapping[str, Any]],
        classes: Mapping[str, Mapping[str, Any]],
    ) -> None:
        self.nodes = nodes
        self.predicates = predicates
        self.classes = classes
        self._labels: dict[str, str] = {}
        self._verbs: dict[str, str] = {}

    def label(self, name: str) -> str:
        got = self._labels.get(name)
        if got is None:
            got = self._labels[name] = node_label(value_text(name, 300), self.nodes.get(name))
        return got

    def fact_parts(self, fact: Mapping[str, Any]) -> tuple[str, str, str, str]:
        p = fact["p"]
        verb = self._verbs.get(p)
        if verb is None:
            pred = self.predicates.get(p) or {}
            verb = predicate_label(str(p), pred)
            desc = pred.get("description")
            if isinstance(desc, str) and desc.strip():
                verb += f" [{value_text(desc, MAX_DESCRIPTION_CHARS)}]"
            self._verbs[p] = verb
        o = fact["o"]
        obj = self.label(o) if isinstance(o, str) else value_text(o, 300)
        if len(fact) == 3:
            return self.label(str(fact["s"])), verb, obj, ""
        return self.label(str(fact["s"])), verb, obj, attributes_text(fact)

    def node_parts(self, name: str, props: Mapping[str, Any]) -> tuple[str, str, str]:
        return node_parts(name, props, self.classes)


def attributes_text(fact: Mapping[str, Any]) -> str:
    """`prov: ...; confidence: ...; from ...; until ...` (the attributes of a fact, in a fixed order)."""
    attrs = [k for k in _ATTR_ORDER if k in fact] + [
        k for k in fact if k not in ("s", "p", "o") and k not in _ATTR_ORDER
    ]
    parts = []
    for key in attrs:
        value = fact[key]
        if value is None or value == "":
            continue
        if key == "valid_from":
            parts.append(f"from {value_text(value)}")
        elif key == "valid_to":
            parts.append(f"until {value_text(value)}")
        else:
            parts.append(f"{humanize(str(key))}: {value_text(value)}")
    return "; ".join(parts)


def fact_sentence(
    fact: Mapping[str, Any],
    nodes: Mapping[str, Mapping[str, Any]],
    predicates: Mapping[str, Mapping[str, Any]],
) -> str:
    """`S (alias) <predicate> [description] O (alias); prov: ...; from ...; until ...`."""
    return sentence_of_parts(fact_parts(fact, nodes, predicates))


def sentence_of_parts(parts: tuple[str, str, str, str]) -> str:
    subject, verb, obj, attrs = parts
    text = f"{subject} {verb} {obj}"
    if attrs:
        text += "; " + attrs
    return _cut(text)


def node_parts(name: str, props: Mapping[str, Any], classes: Mapping[str, Mapping[str, Any]]) -> tuple[str, str, str]:
    """The three parts of a node's sentence: its name with aliases, its type(s), its other properties."""
    label = node_label(name, props)
    typ = props.get("type")
    type_text = ""
    if typ:
        types = typ if isinstance(typ, (list, tuple)) else [typ]
        names = []
        for t in types:
            cls = classes.get(str(t)) or {}
            clabel = cls.get("label") if isinstance(cls.get("label"), str) else None
            names.append(clabel or humanize(str(t)))
        type_text = ", ".join(names)
    alias_set = set(aliases(props))
    parts = []
    for key, value in props.items():
        if key == "type" or value is None or value == "":
            continue
        if isinstance(value, str) and value in alias_set and _is_alias_key(key):
            continue  # already shown next to the name
        parts.append(f"{humanize(str(key))}: {value_text(value)}")
    return label, type_text, "; ".join(parts)


def node_sentence(name: str, props: Mapping[str, Any], classes: Mapping[str, Mapping[str, Any]]) -> str:
    """`Name (alias): Type. key: value; key: value`."""
    return node_sentence_of_parts(node_parts(name, props, classes))


def node_sentence_of_parts(parts: tuple[str, str, str]) -> str:
    label, type_text, rest = parts
    text = label
    if type_text:
        text += ": " + type_text + "."
    if rest:
        text += " " + rest
    return _cut(text)


def embed_text(sentence: str) -> str:
    """The text given to the embedding model: identifiers split into words."""
    return " ".join(humanize(w) if "_" in w or _CAMEL.search(w) else w for w in sentence.split(" "))


# ---------------------------------------------------------------------------------------------------------
# Lexical terms

_STOP_EN = frozenset(
    """a an and are as at be been being but by can could did do does doing for from had has have how i if in
    into is it its me my of on or our so than that the their them then there these they this those to too
    us was we were what when where which while who whom whose why will with would you your about any all
    also each other some such only own same very just should may might must shall tell show give find list
    please know""".split()
)
# Japanese particles, copulas and question words. Hiragana inside a run with kanji/katakana is dropped
# anyway (particles, okurigana); these are the same words written alone or in kanji.
_STOP_JA = frozenset("の は が を に で と も へ や か から まで より です ます 何 誰 どこ いつ どれ どの なに だれ 教え".split())

_WORD_RUN = re.compile(r"[^\W_]+", re.UNICODE)


def _script(ch: str) -> str:
    """'w' for spaced scripts (and digits), else the no-space script class of `ch`."""
    o = ord(ch)
    if o < 0x3000:
        if 0x0E00 <= o <= 0x0EFF or 0x1000 <= o <= 0x109F or 0x1780 <= o <= 0x17FF:
            return "sea"  # Thai, Lao, Myanmar, Khmer: written without spaces
        if 0x1100 <= o <= 0x11FF:
            return "hangul"
        return "w"
    if 0x3040 <= o <= 0x309F:
        return "hira"
    if 0x30A0 <= o <= 0x30FF or 0x31F0 <= o <= 0x31FF or 0xFF66 <= o <= 0xFF9F:
        return "kata"
    if 0x4E00 <= o <= 0x9FFF or 0x3400 <= o <= 0x4DBF or 0xF900 <= o <= 0xFAFF or o == 0x3005:
        return "han"
    if 0xAC00 <= o <= 0xD7AF or 0x3130 <= o <= 0x318F:
        return "hangul"
    if 0xFF10 <= o <= 0xFF5A:
        return "w"
    return "han" if 0x20000 <= o <= 0x2FFFF else "w"


def space_less_runs(text: str) -> list[str]:
    """The runs of `text` written in scripts without spaces (Japanese, Chinese, Thai, ...)."""
    out: list[str] = []
    if text.isascii():
        return out
    for m in _WORD_RUN.finditer(unicodedata.normalize("NFKC", text)):
        cur = ""
        for ch in m.group():
            if _script(ch) != "w":
                cur += ch
            elif cur:
                out.append(cur)
                cur = ""
        if cur:
            out.append(cur)
    return out


# the letters `_script` puts in a script written without spaces
_SPACE_LESS = re.compile(
    "[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u1100-\u11ff\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f"
    "\u4e00-\u9fff\u3400-\u4dbf\uf900-\ufaff\u3005\uac00-\ud7af\u3130-\u318f\U00020000-\U0002ffff]+"
)


def drop_runs(text: str, runs: set[str], every: bool = False) -> str:
    """`text` (NFKC) with each of the given space-less runs (as `space_less_runs` cuts them) replaced by a
    space, or with every such run when `every`; spaces are then collapsed."""
    text = unicodedata.normalize("NFKC", text)
    if every:
        return " ".join(_SPACE_LESS.sub(" ", text).split())
    out: list[str] = []
    pos = 0
    for m in _WORD_RUN.finditer(text):
        word = m.group()
        start = m.start()
        i = 0
        while i < len(word):
            if _script(word[i]) == "w":
                i += 1
                continue
            j = i
            while j < len(word) and _script(word[j]) != "w":
                j += 1
            if word[i:j] in runs:
                out.append(text[pos : start + i])
                out.append(" ")
                pos = start + j
            i = j
    out.append(text[pos:])
    return " ".join("".join(out).split())


def is_word(surface: str) -> bool:
    """True for a word of a spaced script (not a character n-gram of Japanese, Chinese, Thai...)."""
    return bool(surface) and _script(surface[0]) == "w"


def stem(word: str) -> str:
    """A light English stemmer: plural and verb endings (`pipelines`->`pipelin`, `loaded`->`load`)."""
    if len(word) <= 3 or not word.isascii() or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if word.endswith("ing") and len(word) > 5:
        word = word[:-3]
    elif word.endswith("ed") and len(word) > 4:
        word = word[:-2]
    if len(word) > 4 and word[-1] == word[-2] and word[-1] not in "lsz":
        word = word[:-1]  # stopp(ed) -> stop
    if word.endswith("e") and len(word) > 4:
        word = word[:-1]
    return word


def _ngrams(run: str, out: list[tuple[str, str]]) -> None:
    if len(run) == 1:
        out.append((run, run))
    else:
        out.extend((run[i : i + 2], run[i : i + 2]) for i in range(len(run) - 1))


_word_memo: dict[str, list[tuple[str, str]]] = {}


def _word_terms(word: str, out: list[tuple[str, str]]) -> None:
    got = _word_memo.get(word)
    if got is None:
        got = []
        _word_terms_uncached(word, got)
        if len(_word_memo) > 500_000:
            _word_memo.clear()
        _word_memo[word] = got
    out.extend(got)


def _word_terms_uncached(word: str, out: list[tuple[str, str]]) -> None:
    parts = _CAMEL.sub(" ", word).split() if not word.islower() else [word]
    for part in parts:
        low = part.lower()
        if low not in _STOP_EN:
            out.append((stem(low), low))
    if len(parts) > 1:  # the compound too: `customerOrders` -> customer, order, customerorders
        out.append((word.lower(), " ".join(parts).lower()))


_ASCII_RUN = re.compile(r"[A-Za-z0-9]+")


def units(text: str) -> list[tuple[str, str]]:
    """Lexical terms of `text` with the surface text each comes from (see `terms`)."""
    out: list[tuple[str, str]] = []
    if text.isascii():  # fast path (ASCII is already NFKC)
        for run in _ASCII_RUN.findall(text):
            got = _word_memo.get(run)
            if got is None:
                _word_terms(run, out)
            else:
                out.extend(got)
        return out
    text = unicodedata.normalize("NFKC", text)
    for m in _WORD_RUN.finditer(text):
        run = m.group()
        if run.isascii():
            _word_terms(run, out)
            continue
        # split the run where the script changes
        pieces: list[tuple[str, str]] = []
        start = 0
        cur = _script(run[0])
        for i in range(1, len(run)):
            sc = _script(run[i])
            if sc != cur:
                pieces.append((cur, run[start:i]))
                start, cur = i, sc
        pieces.append((cur, run[start:]))
        mixed = len(pieces) > 1
        for script, piece in pieces:
            if script == "w":
                _word_terms(piece, out)
            elif script == "hira" and mixed:
                continue  # particles and okurigana next to kanji/katakana
            elif piece in _STOP_JA:
                continue
            else:
                _ngrams(piece.lower(), out)
    return out


def terms(text: str) -> list[str]:
    """Lexical terms of `text`: stemmed lower-case words without stop words; runs of Japanese (or other
    space-less) text cut at script changes into character bigrams (single characters stay unigrams)."""
    return [t for t, _ in units(text)]


def unique(items: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for x in items:
        seen.setdefault(x, None)
    return list(seen)
