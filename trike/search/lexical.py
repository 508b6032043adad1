"""BM25 over lexical terms (words and character n-grams), stored as a compressed sparse column index
in numpy arrays so a query touches only the postings of its own terms."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

K1 = 1.2
B = 0.75


class BM25:
    """An immutable BM25 index over documents given as lists of terms."""

    def __init__(self, docs: Sequence[Sequence[str]]) -> None:
        import numpy as np

        self.n = len(docs)
        vocab: dict[str, int] = {}
        term_ids: list[int] = []
        doc_ids: list[int] = []
        lengths = np.zeros(self.n, dtype=np.float32)
        setdefault = vocab.setdefault
        for d, toks in enumerate(docs):
            lengths[d] = len(toks)
            for t in toks:
                term_ids.append(setdefault(t, len(vocab)))
            doc_ids.extend([d] * len(toks))
        self.vocab = vocab
        if not term_ids:
            self.indptr = np.zeros(len(vocab) + 1, dtype=np.int64)
            self.docs = np.zeros(0, dtype=np.int32)
            self.weights = np.zeros(0, dtype=np.float32)
            self.df = np.zeros(len(vocab), dtype=np.int32)
            return
        # one posting per (term, doc) with its term frequency
        key = np.asarray(term_ids, dtype=np.int64) * max(self.n, 1) + np.asarray(doc_ids, dtype=np.int64)
        uniq, tf = np.unique(key, return_counts=True)
        t_of = uniq // max(self.n, 1)
        d_of = (uniq % max(self.n, 1)).astype(np.int32)
        self.df = np.bincount(t_of, minlength=len(vocab)).astype(np.int32)
        self.indptr = np.zeros(len(vocab) + 1, dtype=np.int64)
        np.cumsum(self.df, out=self.indptr[1:])
        avgdl = float(lengths.mean()) or 1.0
        norm = K1 * (1.0 - B + B * lengths[d_of] / avgdl)
        tf = tf.astype(np.float32)
        self.docs = d_of
        self.weights = (tf * (K1 + 1.0) / (tf + norm)).astype(np.float32)

    def idf(self, term: str) -> float:
        """Robertson-Sparck Jones IDF (never negative); an unknown term gets the highest value."""
        i = self.vocab.get(term)
        df = int(self.df[i]) if i is not None else 0
        return math.log(1.0 + (self.n - df + 0.5) / (df + 0.5))

    def postings(self, term: str) -> tuple[Any, Any] | None:
        i = self.vocab.get(term)
        if i is None:
            return None
        a, b = int(self.indptr[i]), int(self.indptr[i + 1])
        return self.docs[a:b], self.weights[a:b]

    def scores(self, query_terms: Sequence[str]) -> Any:
        """BM25 score of every document (a float32 array, zero where no term matches)."""
        import numpy as np

        out = np.zeros(self.n, dtype=np.float32)
        counts: dict[str, int] = {}
        for t in query_terms:
            counts[t] = counts.get(t, 0) + 1
        for t, c in counts.items():
            post = self.postings(t)
            if post is None:
                continue
            docs, w = post
            out[docs] += np.float32(self.idf(t) * c) * w
        return out

    def coverage(self, query_terms: Sequence[str], doc_terms: Sequence[str]) -> float:
        """IDF-weighted share of the distinct query terms that occur in one document (0..1)."""
        q = set(query_terms)
        if not q:
            return 0.0
        present = set(doc_terms)
        total = sum(self.idf(t) for t in q)
        hit = sum(self.idf(t) for t in q if t in present)
        return hit / total if total > 0 else 0.0
