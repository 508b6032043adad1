"""The search index of one graph: one sentence per fact and per described node, a BM25 index over their
terms, their sentence vectors, and the ranking (reciprocal rank fusion + the "nothing found" decision).

An index is immutable and tied to one `db.revision`; a new revision builds a new index that reuses the
terms and vectors of the previous one for every sentence that did not change.
"""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import text as T
from .embed import Embedder, VectorCache, text_key
from .lexical import BM25

# ---- ranking parameters (calibrated with benchmarks/search_quality.py --calibrate) ----------------------
RRF_K = 20  # reciprocal rank fusion: score = sum over signals of weight / (RRF_K + rank)
W_LEXICAL = 1.0
W_SEMANTIC = 1.0
CANDIDATES = 200  # how deep each signal's list goes into the fusion
# "Nothing found" when neither signal is convincing:
#  lexical: IDF-weighted share of the query's terms found in one of its best documents;
#  semantic: best cosine similarity, and how far it stands above the query's similarity to the rest.
MIN_COVERAGE = 0.5  # lexical alone is enough from here
MIN_COSINE = 0.5  # semantic alone is enough from here
MIN_COSINE_Z = 4.0  # ... and only if the best match stands out this many standard deviations
MIN_COVERAGE_WITH_SEMANTIC = 0.3  # lexical evidence supported by a moderate semantic match
MIN_COSINE_WITH_LEXICAL = 0.35


@dataclass
class Doc:
    kind: str  # "fact" | "node"
    sentence: str
    fact: dict[str, Any] | None = None
    name: str | None = None  # the node's name
    props: dict[str, Any] | None = None
    valid_from: str | None = None
    valid_to: str | None = None


@dataclass
class Features:
    coverage: float = 0.0
    cosine: float = 0.0
    cosine_z: float = 0.0
    lexical_hits: int = 0

    def as_dict(self) -> dict[str, float]:
        return {
            "coverage": round(self.coverage, 4),
            "cosine": round(self.cosine, 4),
            "cosine_z": round(self.cosine_z, 3),
            "lexical_hits": self.lexical_hits,
        }


@dataclass
class Ranking:
    order: list[int]  # doc indices, best first (fused)
    scores: dict[int, float]
    signals: dict[int, list[str]]
    features: Features
    relevant: bool
    lexical_order: list[int] = field(default_factory=list)
    semantic_order: list[int] = field(default_factory=list)


def iso(value: Any) -> str | None:
    """A date-like value as sortable ISO text (None stays None)."""
    if value is None or value == "":
        return None
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()
    return str(value).strip()


def is_relevant(f: Features, semantic: bool) -> bool:
    """The "nothing found" decision (False = abstain)."""
    if f.lexical_hits == 0 and not semantic:
        return False
    if f.coverage >= MIN_COVERAGE:
        return True
    if not semantic:
        return False
    if f.cosine >= MIN_COSINE and f.cosine_z >= MIN_COSINE_Z:
        return True
    return f.coverage >= MIN_COVERAGE_WITH_SEMANTIC and f.cosine >= MIN_COSINE_WITH_LEXICAL


class SearchIndex:
    def __init__(
        self,
        db: Any,
        revision: Any,
        embedder: Embedder | None,
        previous: SearchIndex | None = None,
    ) -> None:
        import numpy as np

        t0 = time.perf_counter()
        self.revision = revision
        self.embedder = embedder
        self.model_key = embedder.key if embedder is not None else None
        self.stats: dict[str, Any] = {}
        ont = db.ontology() or {}
        predicates = ont.get("predicates") or {}
        classes = ont.get("classes") or {}
        nodes: dict[str, dict[str, Any]] = db.nodes()
        try:
            facts = db.facts(as_of="all")
        except TypeError:
            facts = db.facts()
        self.nodes = nodes
        docs: list[Doc] = []
        for f in facts:
            docs.append(
                Doc(
                    "fact",
                    T.fact_sentence(f, nodes, predicates),
                    fact=f,
                    valid_from=iso(f.get("valid_from")),
                    valid_to=iso(f.get("valid_to")),
                )
            )
        for name, props in nodes.items():
            if props:
                docs.append(Doc("node", T.node_sentence(name, props, classes), name=name, props=props))
        self.docs = docs
        self.has_validity = any(d.valid_from or d.valid_to for d in docs)
        self._by_subject: dict[str, list[dict[str, Any]]] | None = None
        t1 = time.perf_counter()

        # lexical terms, reused from the previous index for unchanged sentences
        old_terms = previous.terms_by_sentence if previous is not None else {}
        self.terms_by_sentence: dict[str, list[str]] = {}
        doc_terms: list[list[str]] = []
        for d in docs:
            ts = self.terms_by_sentence.get(d.sentence)
            if ts is None:
                ts = old_terms.get(d.sentence)
                if ts is None:
                    ts = T.terms(d.sentence)
                self.terms_by_sentence[d.sentence] = ts
            doc_terms.append(ts)
        self.doc_terms = doc_terms
        self.bm25 = BM25(doc_terms)
        t2 = time.perf_counter()

        # sentence vectors: previous index, then the disk cache, then the model
        self.vectors = None
        encoded = from_disk = reused = 0
        if embedder is not None:
            texts = [T.embed_text(d.sentence) for d in docs]
            vecs = np.zeros((len(docs), embedder.dim), dtype=np.float32)
            prev_rows: dict[str, int] = {}
            if previous is not None and previous.model_key == self.model_key and previous.vectors is not None:
                prev_rows = previous.row_by_text
            missing: dict[str, list[int]] = {}
            for i, t in enumerate(texts):
                r = prev_rows.get(t)
                if r is not None:
                    vecs[i] = previous.vectors[r]  # type: ignore[union-attr]
                    reused += 1
                else:
                    missing.setdefault(t, []).append(i)
            if missing:
                cache = VectorCache(embedder.key, embedder.dim)
                keys = {t: text_key(t) for t in missing}
                found = cache.get_many(list(keys.values()))
                todo: list[str] = []
                for t, rows in missing.items():
                    v = found.get(keys[t])
                    if v is None:
                        todo.append(t)
                    else:
                        vecs[rows] = v
                        from_disk += len(rows)
                if todo:
                    new = embedder.encode(todo)
                    for t, v in zip(todo, new, strict=True):
                        vecs[missing[t]] = v
                    encoded = len(todo)
                    cache.put_many([(keys[t], v) for t, v in zip(todo, new, strict=True)])
                cache.close()
            self.vectors = vecs
            self.row_by_text = {t: i for i, t in enumerate(texts)}
        else:
            self.row_by_text = {}
        t3 = time.perf_counter()
        self.stats = {
            "documents": len(docs),
            "encoded": encoded,
            "vectors_from_disk": from_disk,
            "vectors_reused": reused,
            "seconds_sentences": round(t1 - t0, 4),
            "seconds_lexical": round(t2 - t1, 4),
            "seconds_vectors": round(t3 - t2, 4),
        }
        self._valid_cache: dict[str | None, Any] = {}

    # ----------------------------------------------------------------------------------------------------
    def valid_mask(self, as_of: str | None) -> Any:
        """Boolean array: which documents are valid at `as_of` (None: all)."""
        import numpy as np

        if as_of is None or not self.has_validity:
            return None
        got = self._valid_cache.get(as_of)
        if got is None:
            got = np.fromiter(
                (
                    (d.valid_from is None or d.valid_from <= as_of) and (d.valid_to is None or as_of < d.valid_to)
                    for d in self.docs
                ),
                dtype=bool,
                count=len(self.docs),
            )
            if len(self._valid_cache) > 16:
                self._valid_cache.clear()
            self._valid_cache[as_of] = got
        return got

    def by_subject(self) -> dict[str, list[dict[str, Any]]]:
        if self._by_subject is None:
            out: dict[str, list[dict[str, Any]]] = {}
            for d in self.docs:
                if d.fact is not None:
                    out.setdefault(str(d.fact["s"]), []).append(d.fact)
            self._by_subject = out
        return self._by_subject

    def is_entity(self, name: Any) -> bool:
        return isinstance(name, str) and (bool(self.nodes.get(name)) or name in self.by_subject())

    # ----------------------------------------------------------------------------------------------------
    def rank(self, query: str, as_of: str | None = None, depth: int = CANDIDATES) -> Ranking:
        import numpy as np

        n = len(self.docs)
        mask = self.valid_mask(as_of)
        feats = Features()
        qterms = T.terms(query)
        lex_order: list[int] = []
        if qterms and n:
            lex = self.bm25.scores(qterms)
            if mask is not None:
                lex = np.where(mask, lex, 0.0)
            hits = np.flatnonzero(lex > 0)
            feats.lexical_hits = int(hits.size)
            if hits.size:
                top = hits[np.argsort(-lex[hits], kind="stable")[:depth]]
                lex_order = top.tolist()
                feats.coverage = max(self.bm25.coverage(qterms, self.doc_terms[i]) for i in lex_order[:5])
        sem_order: list[int] = []
        semantic = self.embedder is not None and self.vectors is not None
        if semantic and n and query.strip():
            qv = self.embedder.encode([T.embed_text(query)])[0]  # type: ignore[union-attr]
            if float(np.abs(qv).sum()) > 0:
                cos = self.vectors @ qv  # type: ignore[operator]
                if mask is not None:
                    cos = np.where(mask, cos, -1.0)
                kk = min(depth, n)
                part = np.argpartition(-cos, kk - 1)[:kk] if kk < n else np.arange(n)
                part = part[np.argsort(-cos[part], kind="stable")]
                part = part[cos[part] > 0]
                sem_order = part.tolist()
                if sem_order:
                    best = float(cos[sem_order[0]])
                    pool = cos if mask is None else cos[mask]
                    mean, std = float(pool.mean()), float(pool.std())
                    feats.cosine = best
                    feats.cosine_z = (best - mean) / std if std > 1e-9 else 0.0
        scores: dict[int, float] = {}
        signals: dict[int, list[str]] = {}
        top_possible = (W_LEXICAL if lex_order else 0.0) + (W_SEMANTIC if sem_order else 0.0)
        norm = (RRF_K + 1) / top_possible if top_possible else 1.0
        for name, weight, order in (("lexical", W_LEXICAL, lex_order), ("semantic", W_SEMANTIC, sem_order)):
            for r, i in enumerate(order):
                scores[i] = scores.get(i, 0.0) + weight / (RRF_K + r + 1) * norm
                signals.setdefault(i, []).append(name)
        order = sorted(scores, key=lambda i: (-scores[i], i))
        relevant = bool(order) and is_relevant(feats, semantic)
        return Ranking(order, scores, signals, feats, relevant, lex_order, sem_order)


def prop_matches(actual: Any, expected: Any) -> bool:
    """Exact property match; a string `expected` (from the command line) also matches the value's text,
    and an element of a list-valued property matches."""
    if actual == expected and type(actual) is type(expected):
        return True
    if isinstance(actual, (list, tuple, set)):
        return any(prop_matches(a, expected) for a in actual)
    if isinstance(expected, str) and not isinstance(actual, str) and actual is not None:
        return T.value_text(actual, 10_000) == expected
    if isinstance(actual, bool) or isinstance(expected, bool):
        return False
    return actual == expected


def where_matches(where: Mapping[str, Any], name: str, props: Mapping[str, Any]) -> bool:
    for key, expected in where.items():
        if key == "name":
            if name != expected:
                return False
            continue
        if key not in props or not prop_matches(props[key], expected):
            return False
    return True
