"""The search index of one graph: one sentence per fact and per described node, a BM25 index over their
terms, their vectors, and the ranking (reciprocal rank fusion + the "nothing found" decision).

A sentence is made of parts (a fact's subject, predicate, object and attributes; a node's name, type and
properties). Parts repeat across sentences, so terms and vectors are computed once per distinct part
text: a fact's vector is the weighted sum of its parts' unit vectors.

An index is immutable and tied to one `db.revision`; a new revision builds a new index that reuses the
terms and vectors of the previous one for every part that did not change.
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
RRF_K = 10  # reciprocal rank fusion: score = sum over signals of weight / (RRF_K + rank)
W_LEXICAL = 1.0
W_SEMANTIC = 1.0
READ_CHECK = True  # the semantic list counts less for text the model reads only letter by letter
# ... and such text is left out of what the model is given (of a document's parts and of the question):
# to the model it is noise that pulls the vector away from what the rest of the text says
READ_STRIP = True
CANDIDATES = 200  # how deep each signal's list goes into the fusion
# A node whose own sentence matches well lifts its facts (the question may describe the node and ask
# about one of its relations); a lifted fact does not pass the node itself.
PROPAGATE = 0.7  # share of the node's fused score
PROPAGATE_NODES = 10  # ... from this many best-matching nodes
# Weights of a document's parts in its vector.
W_SUBJECT = W_PREDICATE = W_OBJECT = 1.0
W_ATTRS = 0.5
W_TYPE = 0.5
# "Nothing found" is decided from how well the best documents cover the question's own terms:
#  coverage: IDF-weighted share of the question's terms found in one of the best documents (with the
#    sentence of its subject node);
#  soft coverage: the same, but a word absent from the document counts by its nearest word there (cosine
#    of static word vectors), and words are weighted by how informative the model finds them.
EVIDENCE_DOCS = 10  # how many of the best fused documents are examined
# a word's best cosine counts 0 at SOFT_LOW and 1 at SOFT_HIGH standard deviations above the model's
# cosine between unrelated tokens (linear in between)
SOFT_LOW, SOFT_HIGH = 2.5, 4.5
MIN_COVERAGE = 0.15  # lexical only: abstain below this coverage
MIN_SOFT_COVERAGE = 0.48  # with a model: abstain below this soft coverage ...
MIN_COVERAGE_WITH_MODEL = 1.0  # ... unless the exact coverage reaches this
# Relation check (with a model): when the question names a node (ENTITY_MATCH: the IDF-weighted share of
# one of the node's names present in the question), the rest of the question must ask for a relation or
# property that node has. The gap is how much better (in standard deviations of the model's similarity
# between unrelated tokens) the best predicate or property key of the whole graph fits the rest of the
# question than the best one of the node's own facts (either direction) and properties; abstain at or above
# MAX_RELATION_GAP ("Who is the vendor of Airflow?" when Airflow has no VENDOR fact but others do).
ENTITY_MATCH = 0.6
MAX_RELATION_GAP = 4.0

FACT_WEIGHTS = (W_SUBJECT, W_PREDICATE, W_OBJECT, W_ATTRS)


@dataclass
class Doc:
    kind: str  # "fact" | "node"
    sentence: str
    parts: tuple[str, ...]  # fact: subject, predicate, object, attributes; node: name, type, props
    fact: dict[str, Any] | None = None
    name: str | None = None  # the node's name
    props: dict[str, Any] | None = None
    valid_from: str | None = None
    valid_to: str | None = None


@dataclass
class Features:
    coverage: float = 0.0
    soft_coverage: float = 0.0
    cosine: float = 0.0
    lexical_hits: int = 0
    cosine_z: float = 0.0  # how far the best cosine stands above the others (standard deviations)
    relation_gap: float = 0.0  # see MAX_RELATION_GAP (0 when the question names no node)

    def as_dict(self) -> dict[str, float]:
        return {
            "coverage": round(self.coverage, 4),
            "soft_coverage": round(self.soft_coverage, 4),
            "cosine": round(self.cosine, 4),
            "lexical_hits": self.lexical_hits,
            "cosine_z": round(self.cosine_z, 4),
            "relation_gap": round(self.relation_gap, 4),
        }


class Signals:
    """Which signals found each document: `signals[i]` -> ["lexical", "semantic"]."""

    def __init__(self, lexical: set[int], semantic: set[int], lifted_by: dict[int, int]) -> None:
        self.lexical = lexical
        self.semantic = semantic
        self.lifted_by = lifted_by

    def __getitem__(self, i: int) -> list[str]:
        out = [n for n, found in (("lexical", self.lexical), ("semantic", self.semantic)) if i in found]
        if not out and i in self.lifted_by:
            return self[self.lifted_by[i]]
        return out


@dataclass
class Ranking:
    order: list[int]  # doc indices, best first (fused)
    scores: Any  # fused score of every document (array)
    signals: Signals
    features: Features
    relevant: bool
    lexical_order: list[int] = field(default_factory=list)
    semantic_order: list[int] = field(default_factory=list)


_blas: Any = None


def _one_blas_thread() -> Any:
    """A context in which BLAS uses one thread: a query's matrix-vector product is small, and spreading
    it over threads costs far more than it saves on a busy machine (10x slower measured on 2 cores)."""
    global _blas
    if _blas is None:
        try:
            from threadpoolctl import ThreadpoolController

            _blas = ThreadpoolController()
        except Exception:  # not installed: BLAS keeps its own setting
            _blas = False
    if _blas is False:
        import contextlib

        return contextlib.nullcontext()
    return _blas.limit(limits=1, user_api="blas")


def iso(value: Any) -> str | None:
    """A date-like value as sortable ISO text (None stays None)."""
    if value is None or value == "":
        return None
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()
    return str(value).strip()


def is_relevant(f: Features, semantic: bool) -> bool:
    """The "nothing found" decision (False = abstain)."""
    if not semantic:
        return f.lexical_hits > 0 and f.coverage >= MIN_COVERAGE
    covered = f.soft_coverage >= MIN_SOFT_COVERAGE or f.coverage >= MIN_COVERAGE_WITH_MODEL
    return covered and f.relation_gap < MAX_RELATION_GAP


class TextCache:
    """Per distinct part text: its lexical units and the text given to the model. Shared by the indexes
    of one graph, so a new revision only tokenizes the parts it has not seen."""

    def __init__(self) -> None:
        self.units: dict[str, list[tuple[str, str]]] = {}
        self.embed: dict[str, str] = {}

    def units_of(self, text: str) -> list[tuple[str, str]]:
        got = self.units.get(text)
        if got is None:
            got = self.units[text] = T.units(text)
        return got

    def embed_of(self, text: str) -> str:
        got = self.embed.get(text)
        if got is None:
            got = self.embed[text] = T.embed_text(text)
        return got

    def prune(self, keep: Mapping[str, Any]) -> None:
        if len(self.units) > 2 * len(keep) + 10_000:
            self.units = {t: u for t, u in self.units.items() if t in keep}
            self.embed = {t: e for t, e in self.embed.items() if t in keep}


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
        ont = db.ontology() or {}
        nodes: dict[str, dict[str, Any]] = db.nodes()
        try:
            facts = db.facts(as_of="all")
        except TypeError:
            facts = db.facts()
        self.nodes = nodes
        render = T.Renderer(nodes, ont.get("predicates") or {}, ont.get("classes") or {})
        docs: list[Doc] = []
        has_validity = False
        for f in facts:
            parts = render.fact_parts(f)
            vf, vt = f.get("valid_from"), f.get("valid_to")
            if vf is not None or vt is not None:
                has_validity = True
                vf, vt = iso(vf), iso(vt)
            docs.append(Doc("fact", T.sentence_of_parts(parts), parts, fact=f, valid_from=vf, valid_to=vt))
        self.node_doc: dict[str, int] = {}
        for name, props in nodes.items():
            if props:
                parts = render.node_parts(name, props)
                self.node_doc[name] = len(docs)
                docs.append(Doc("node", T.node_sentence_of_parts(parts), parts, name=name, props=props))
        self.docs = docs
        self.has_validity = has_validity
        n = len(docs)
        self.is_node = np.zeros(n, dtype=bool)
        self.is_node[list(self.node_doc.values())] = True
        self._by_subject: dict[str, list[dict[str, Any]]] | None = None
        self._subject_docs: dict[str, list[int]] | None = None
        self._words: dict[str, tuple[Any, float]] = {}
        self._names: tuple[dict[str, list[list[str]]], dict[str, set[str]]] | None = None
        self._relations: tuple[Any, dict[str, Any]] | None = None
        self._valid_cache: dict[str | None, Any] = {}

        # distinct part texts; slot k of document i is text part_ids[i, k] (-1: none)
        text_ids: dict[str, int] = {}
        width = 4
        part_ids = np.full((n, width), -1, dtype=np.int64)
        rows: list[list[int]] = [[-1] * width for _ in range(n)]
        for i, d in enumerate(docs):
            row = rows[i]
            for k, t in enumerate(d.parts):
                if t:
                    row[k] = text_ids.setdefault(t, len(text_ids))
        if n:
            part_ids[:] = rows
        self.part_ids = part_ids
        self.text_ids = text_ids
        t1 = time.perf_counter()

        # lexical: term ids per distinct text, expanded to documents without a Python loop per document
        self.cache = previous.cache if previous is not None else TextCache()
        cache = self.cache
        vocab: dict[str, int] = {}
        flat: list[int] = []
        lengths = np.zeros(len(text_ids) + 1, dtype=np.int64)
        for t, tid in text_ids.items():
            ids = [vocab.setdefault(term, len(vocab)) for term, _ in cache.units_of(t)]
            flat.extend(ids)
            lengths[tid] = len(ids)
        cache.prune(text_ids)
        text_terms = np.asarray(flat, dtype=np.int64)
        text_start = np.zeros(len(text_ids) + 1, dtype=np.int64)
        np.cumsum(lengths[:-1], out=text_start[1:])
        slot_doc, slot_k = np.nonzero(part_ids >= 0)
        slot_text = part_ids[slot_doc, slot_k]
        slot_len = lengths[slot_text]
        total = int(slot_len.sum())
        doc_of = np.repeat(slot_doc, slot_len)
        offsets = np.arange(total) - np.repeat(np.cumsum(slot_len) - slot_len, slot_len)
        term_of = text_terms[np.repeat(text_start[slot_text], slot_len) + offsets] if total else text_terms
        self.bm25 = BM25.from_arrays(vocab, term_of, doc_of, n)
        t2 = time.perf_counter()

        # vectors: one per distinct text given to the model: from the previous index, the disk cache or
        # the model; a document's vector is the weighted sum of its parts' unit vectors
        self.vectors = None  # (dim, documents) unit vectors, when there are fewer documents than texts
        self.text_vectors = None  # (dim, texts + 1) unit vectors of the distinct texts; last column zero
        self.part_rows = None  # (documents, 4): the text column of each part (the zero column if none)
        self.part_weights = None  # (documents, 4): each part's weight over its document vector's length
        self.row_by_text: dict[str, int] = {}
        encoded = from_disk = reused = 0
        if embedder is not None and n:
            embed_rows: dict[str, int] = {}
            text_row = np.zeros(len(text_ids) + 1, dtype=np.int64)
            readable: dict[str, str] = {}  # text given to the model -> what of it the model can read
            for t, tid in text_ids.items():
                e = cache.embed_of(t)
                r = readable.get(e)
                if r is None:
                    r = readable[e] = embedder.readable(e) if READ_STRIP else e
                # a part the model cannot read at all (Japanese for an English model) has no vector
                text_row[tid] = embed_rows.setdefault(r, len(embed_rows)) if r.strip() else -1
            tv = np.zeros((len(embed_rows) + 1, embedder.dim), dtype=np.float32)  # last row: zeros
            prev_rows: dict[str, int] = {}
            if previous is not None and previous.model_key == self.model_key and previous.text_vectors is not None:
                prev_rows = previous.row_by_text
            missing: list[str] = []
            now, before = [], []
            for e, row in embed_rows.items():
                r = prev_rows.get(e)
                if r is not None:
                    now.append(row)
                    before.append(r)
                else:
                    missing.append(e)
            if now:
                tv[now] = previous.text_vectors[:, before].T  # type: ignore[union-attr]
                reused = len(now)
            if missing:
                store = VectorCache(embedder.key, embedder.dim)
                keys = {e: text_key(e) for e in missing}
                found = store.get_many(list(keys.values()))
                todo: list[str] = []
                for e in missing:
                    v = found.get(keys[e])
                    if v is None:
                        todo.append(e)
                    else:
                        tv[embed_rows[e]] = v
                        from_disk += 1
                if todo:
                    new = embedder.encode(todo)
                    tv[[embed_rows[e] for e in todo]] = new
                    encoded = len(todo)
                    store.put_many([(keys[e], v) for e, v in zip(todo, new, strict=True)])
                store.close()
            text_row[text_row < 0] = len(embed_rows)  # the zero row
            text_row[-1] = len(embed_rows)  # part id -1 -> the zero row
            rows = text_row[part_ids]
            weights = np.where(self.is_node[:, None], [[1.0, W_TYPE, 1.0, 0.0]], [FACT_WEIGHTS]).astype(np.float32)
            vecs = np.zeros((n, embedder.dim), dtype=np.float32)
            for k in range(width):
                vecs += weights[:, k, None] * tv[rows[:, k]]
            norms = np.linalg.norm(vecs, axis=1)
            scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 1e-12)
            # cosine(query, document) = sum of weight * cosine(query, part) / |document vector|: with fewer
            # distinct texts than documents (the usual case: subjects and predicates repeat) only the texts
            # are compared with the query. Matrices are stored (dim, rows): `query @ matrix` is one
            # row-major pass, several times faster than `matrix @ query` with some BLAS builds.
            self.part_rows = rows.astype(np.int32)
            self.part_weights = (weights * scale[:, None]).astype(np.float32)
            self.text_vectors = np.ascontiguousarray(tv.T)
            if len(tv) > n:
                self.vectors = np.ascontiguousarray((vecs * scale[:, None]).T)
            self.row_by_text = embed_rows
        t3 = time.perf_counter()
        self.stats: dict[str, Any] = {
            "documents": n,
            "texts": len(self.row_by_text),
            "encoded": encoded,
            "vectors_from_disk": from_disk,
            "vectors_reused": reused,
            "seconds_sentences": round(t1 - t0, 4),
            "seconds_lexical": round(t2 - t1, 4),
            "seconds_vectors": round(t3 - t2, 4),
        }

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

    def subject_docs(self) -> dict[str, list[int]]:
        if self._subject_docs is None:
            out: dict[str, list[int]] = {}
            for i, d in enumerate(self.docs):
                if d.fact is not None:
                    out.setdefault(str(d.fact["s"]), []).append(i)
            self._subject_docs = out
        return self._subject_docs

    def is_entity(self, name: Any) -> bool:
        return isinstance(name, str) and (bool(self.nodes.get(name)) or name in self.by_subject())

    # ----------------------------------------------------------------------------------------------------
    def rank(self, query: str, as_of: str | None = None, depth: int = CANDIDATES) -> Ranking:
        import numpy as np

        n = len(self.docs)
        mask = self.valid_mask(as_of)
        feats = Features()
        qterms = T.terms(query)
        lex_top = np.zeros(0, dtype=np.int64)
        if qterms and n:
            lex = self.bm25.scores(qterms)
            if mask is not None:
                lex[~mask] = 0.0
            hits = np.flatnonzero(lex > 0)
            feats.lexical_hits = int(hits.size)
            if hits.size > depth:
                hits = hits[np.argpartition(-lex[hits], depth - 1)[:depth]]
            lex_top = hits[np.lexsort((hits, -lex[hits]))]
        sem_top = np.zeros(0, dtype=np.int64)
        semantic = self.embedder is not None and self.text_vectors is not None
        if semantic and n and query.strip():
            qtext = T.embed_text(query)
            if READ_STRIP:
                qtext = self.embedder.readable(qtext)  # type: ignore[union-attr]
            qv = self.embedder.encode([qtext])[0] if qtext.strip() else None  # type: ignore[union-attr]
            if qv is not None and float(np.abs(qv).sum()) > 0:
                with _one_blas_thread():
                    if self.vectors is not None:
                        cos = qv @ self.vectors
                    else:
                        tcos = qv @ self.text_vectors  # type: ignore[operator]
                        cos = np.einsum("ij,ij->i", tcos[self.part_rows], self.part_weights)
                if mask is not None:
                    cos[~mask] = -1.0
                kk = min(depth, n)
                top = np.argpartition(-cos, kk - 1)[:kk] if kk < n else np.arange(n)
                top = top[np.lexsort((top, -cos[top]))]
                sem_top = top[cos[top] > 0]
                if sem_top.size:
                    feats.cosine = float(cos[sem_top[0]])
                    valid = cos if mask is None else cos[mask]
                    sd = float(valid.std()) if valid.size > 1 else 0.0
                    feats.cosine_z = (feats.cosine - float(valid.mean())) / sd if sd > 1e-9 else 0.0
        # reciprocal rank fusion, scaled so that a document first in every list is near 1; the semantic
        # list counts less for a question the model partly cannot read (see Embedder.unread_share)
        w_sem = W_SEMANTIC
        if sem_top.size and READ_CHECK:
            w_sem *= 1.0 - self.embedder.unread_share(query)  # type: ignore[union-attr]
        fused = np.zeros(n, dtype=np.float64)
        top_possible = (W_LEXICAL if lex_top.size else 0.0) + (w_sem if sem_top.size else 0.0)
        norm = (RRF_K + 1) / top_possible if top_possible else 1.0
        for weight, top in ((W_LEXICAL, lex_top), (w_sem, sem_top)):
            if top.size:
                fused[top] += weight * norm / (RRF_K + 1.0 + np.arange(top.size))
        candidates = np.union1d(lex_top, sem_top)
        lifted_by: dict[int, int] = {}
        if PROPAGATE and candidates.size:
            cand_nodes = candidates[self.is_node[candidates]]
            if cand_nodes.size:
                best = cand_nodes[np.argsort(-fused[cand_nodes], kind="stable")[:PROPAGATE_NODES]]
                node_score = {int(i): float(fused[i]) for i in best}
                subject_docs = self.subject_docs()
                extra: list[int] = []
                for i, score in node_score.items():
                    targets = subject_docs.get(self.docs[i].name or "")
                    if not targets:
                        continue
                    tg = np.asarray(targets, dtype=np.int64)
                    own = fused[tg]
                    fused[tg] = np.maximum(own, np.minimum(own + PROPAGATE * score, score))
                    for j in targets:
                        lifted_by.setdefault(j, i)
                    extra.extend(targets)
                if extra:
                    if mask is not None:
                        extra = [j for j in extra if mask[j]]
                    candidates = np.union1d(candidates, np.asarray(extra, dtype=np.int64))
        order = candidates[np.lexsort((candidates, -fused[candidates]))].tolist() if candidates.size else []
        signals = Signals(set(lex_top.tolist()), set(sem_top.tolist()), lifted_by)
        if order:
            self._evidence(query, order[:EVIDENCE_DOCS], feats)
            if semantic:
                feats.relation_gap = self._relation_gap(query)
        relevant = bool(order) and is_relevant(feats, semantic)
        return Ranking(order, fused, signals, feats, relevant, lex_top.tolist(), sem_top.tolist())

    # ----------------------------------------------------------------------------------------------------
    def _word_vectors(self, surfaces: list[str]) -> tuple[Any, Any]:
        """Unit vectors and informativeness (raw vector length) of single words, cached per index."""
        import numpy as np

        cache = self._words
        todo = [w for w in dict.fromkeys(surfaces) if w not in cache]
        if todo:
            vecs, norms = self.embedder.encode_with_norms(todo)  # type: ignore[union-attr]
            if len(cache) > 200_000:
                cache.clear()
            for w, v, nrm in zip(todo, vecs, norms, strict=True):
                cache[w] = (v, float(nrm))
        return (
            np.stack([cache[w][0] for w in surfaces]),
            np.array([cache[w][1] for w in surfaces], dtype=np.float32),
        )

    def _context(self, i: int) -> tuple[set[str], list[str]]:
        """A document's terms (with those of its subject node's sentence), and the surface words of what it
        says about its subject (a fact's predicate, object and attributes; a node's type and properties).

        A question word counts as covered when the document (or its subject) has it, or when what the
        document says has a near word: the subject's own names and description match only exactly, so a
        near word there ("Apache" for "vendor") does not pass for the relation asked."""
        d = self.docs[i]
        parts = list(d.parts)
        said = parts[1:]
        if d.fact is not None:
            j = self.node_doc.get(str(d.fact["s"]))
            if j is not None:
                parts.extend(self.docs[j].parts)
        terms = {t for p in parts if p for t, _ in self.cache.units_of(p)}
        # near matches are looked for among words only: a character n-gram of Japanese text is no word
        words = [w for p in said if p for _, w in self.cache.units_of(p) if T.is_word(w)]
        return terms, list(dict.fromkeys(words))

    # ----------------------------------------------------------------------------------------------------
    def _name_index(self) -> tuple[dict[str, list[list[str]]], dict[str, set[str]]]:
        """The terms of each node's names (its name and its label-like props), and the nodes of each term."""
        if self._names is None:
            names: dict[str, list[list[str]]] = {}
            by_term: dict[str, set[str]] = {}
            for name in set(self.nodes) | set(self.by_subject()):
                if not self.is_entity(name):
                    continue
                lists = []
                for text in [str(name), *T.aliases(self.nodes.get(name))]:
                    got = list(dict.fromkeys(t for t, _ in self.cache.units_of(text)))
                    if got:
                        lists.append(got)
                        for t in got:
                            by_term.setdefault(t, set()).add(name)
                names[name] = lists
            self._names = (names, by_term)
        return self._names

    def _relation_index(self) -> tuple[Any, dict[str, Any]]:
        """Unit vectors (rows) of every predicate phrase and property key of the graph, and for each node
        the rows of the relations it has (its facts in either direction, its properties)."""
        if self._relations is None:
            import numpy as np

            texts: dict[str, int] = {}
            around: dict[str, set[int]] = {}
            for d in self.docs:
                if d.fact is not None:
                    k = texts.setdefault(d.parts[1], len(texts))
                    around.setdefault(str(d.fact["s"]), set()).add(k)
                    if isinstance(d.fact["o"], str):
                        around.setdefault(d.fact["o"], set()).add(k)
                else:
                    for key in d.props or {}:
                        if key != "type" and not T._is_alias_key(key):
                            k = texts.setdefault(T.humanize(str(key)), len(texts))
                            around.setdefault(d.name or "", set()).add(k)
            emb = self.embedder
            vecs = emb.encode([emb.readable(T.embed_text(t)) for t in texts])  # type: ignore[union-attr]
            self._relations = (vecs, {n: np.fromiter(v, dtype=np.int64) for n, v in around.items()})
        return self._relations

    def _relation_gap(self, query: str) -> float:
        """See MAX_RELATION_GAP: for each node the question names, how much better the graph's best
        relation fits the rest of the question than the node's own best; the smallest over those nodes."""
        import numpy as np

        qunits: dict[str, str] = {}
        for t, w in T.units(query):
            qunits.setdefault(t, w)
        names, by_term = self._name_index()
        candidates: set[str] = set()
        for t in qunits:
            candidates |= by_term.get(t, set())
        if not candidates:
            return 0.0
        vecs, around = self._relation_index()
        _, sigma = self.embedder.similarity_baseline()  # type: ignore[union-attr]
        gaps: list[float] = []
        for name in candidates:
            mine = around.get(name)
            if mine is None or not mine.size:
                continue
            share, matched = 0.0, set()
            for terms in names[name]:
                idf = np.array([self.bm25.idf(t) for t in terms])
                hit = np.array([t in qunits for t in terms])
                s = float((idf * hit).sum() / idf.sum()) if idf.sum() > 0 else 0.0
                if s > share:
                    share, matched = s, {t for t in terms if t in qunits}
            if share < ENTITY_MATCH:
                continue
            rest = [w for t, w in qunits.items() if t not in matched]
            text = self.embedder.readable(T.embed_text(" ".join(rest))) if rest else ""  # type: ignore[union-attr]
            qv = self.embedder.encode([text])[0] if text.strip() else None  # type: ignore[union-attr]
            if qv is None or not float(np.abs(qv).sum()):
                return 0.0  # the question only names the node: anything about it answers
            sims = vecs @ qv
            gaps.append((float(sims.max()) - float(sims[mine].max())) / sigma)
            if gaps[-1] <= 0.0:
                break
        return max(0.0, min(gaps)) if gaps else 0.0

    def _evidence(self, query: str, top: list[int], feats: Features) -> None:
        """Fill `coverage` and `soft_coverage`: how well one of the `top` documents covers the query."""
        import numpy as np

        qunits: dict[str, str] = {}
        for t, w in T.units(query):
            qunits.setdefault(t, w)
        if not qunits:
            return
        qterms = list(qunits)
        idf = np.array([self.bm25.idf(t) for t in qterms], dtype=np.float32)
        semantic = self.embedder is not None
        if semantic:
            qvec, qnorm = self._word_vectors([qunits[t] for t in qterms])
            known = qnorm > 0
            weight = np.where(known, qnorm, float(qnorm[known].mean()) if known.any() else 1.0)
            # only words get near matches; a character n-gram of Japanese text must match exactly
            wordlike = np.array([T.is_word(qunits[t]) for t in qterms], dtype=bool)
            mu, sigma = self.embedder.similarity_baseline()  # type: ignore[union-attr]
            lo, hi = mu + SOFT_LOW * sigma, mu + SOFT_HIGH * sigma
        best_cov = best_soft = 0.0
        for i in top:
            terms, surfaces = self._context(i)
            exact = np.array([t in terms for t in qterms], dtype=bool)
            best_cov = max(best_cov, float((idf * exact).sum() / idf.sum()) if idf.sum() > 0 else 0.0)
            if semantic:
                match = exact.astype(np.float32)
                if not exact.all() and surfaces:
                    dvec, _ = self._word_vectors(surfaces)
                    sims = (qvec @ dvec.T).max(axis=1)
                    soft = np.clip((sims - lo) / (hi - lo), 0.0, 1.0) * wordlike
                    match = np.maximum(match, soft)
                best_soft = max(best_soft, float((weight * match).sum() / weight.sum()))
        feats.coverage = best_cov
        feats.soft_coverage = best_soft


def prop_matches(actual: Any, expected: Any) -> bool:
    """Exact property match. Values of different types match when they read the same (`"2024-05-01"`
    and a date, `"true"` and True: the command line gives text); an element of a list-valued property
    matches."""
    if isinstance(actual, (list, tuple, set)) and not isinstance(expected, (list, tuple, set)):
        return any(prop_matches(a, expected) for a in actual)
    if actual == expected and isinstance(actual, bool) == isinstance(expected, bool):
        return True
    if actual is None or expected is None:
        return False
    return T.value_text(actual, 10_000) == T.value_text(expected, 10_000)


def where_matches(where: Mapping[str, Any], name: str, props: Mapping[str, Any]) -> bool:
    for key, expected in where.items():
        if key == "name":
            if name != expected:
                return False
            continue
        if key not in props or not prop_matches(props[key], expected):
            return False
    return True
