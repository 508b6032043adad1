"""BM25 over lexical terms (words and character n-grams), stored as a compressed sparse index in numpy
arrays so a query touches only the postings of its own terms."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

K1 = 1.2
B = 0.75


class BM25:
    """An immutable BM25 index. `BM25(docs)` from lists of terms, or `BM25.from_arrays(...)`."""

    def __init__(self, docs: Sequence[Sequence[str]] = ()) -> None:
        import numpy as np

        vocab: dict[str, int] = {}
        term_of: list[int] = []
        doc_of: list[int] = []
        for d, toks in enumerate(docs):
            term_of.extend(vocab.setdefault(t, len(vocab)) for t in toks)
            doc_of.extend([d] * len(toks))
        self._build(vocab, np.asarray(term_of, dtype=np.int64), np.asarray(doc_of, dtype=np.int64), len(docs))

    @classmethod
    def from_arrays(cls, vocab: dict[str, int], term_of: Any, doc_of: Any, n_docs: int) -> BM25:
        """One entry per term occurrence: `term_of[j]` (an id of `vocab`) occurs in document `doc_of[j]`."""
        self = cls.__new__(cls)
        self._build(vocab, term_of, doc_of, n_docs)
        return self

    def _build(self, vocab: dict[str, int], term_of: Any, doc_of: Any, n_docs: int) -> None:
        import numpy as np

        self.n = n_docs
        self.vocab = vocab
        nv = len(vocab)
        lengths = np.bincount(doc_of, minlength=n_docs).astype(np.float32) if n_docs else np.zeros(0, np.float32)
        if not len(term_of):
            self.indptr = np.zeros(nv + 1, dtype=np.int64)
            self.docs = np.zeros(0, dtype=np.int32)
            self.weights = np.zeros(0, dtype=np.float32)
            self.df = np.zeros(nv, dtype=np.int64)
            return
        # one posting per (term, document) with its term frequency, sorted by term
        key = term_of.astype(np.int64) * n_docs + doc_of
        uniq, tf = np.unique(key, return_counts=True)
        t_of = uniq // n_docs
        d_of = (uniq % n_docs).astype(np.int32)
        self.df = np.bincount(t_of, minlength=nv)
        self.indptr = np.zeros(nv + 1, dtype=np.int64)
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

    def scores(self, query_terms: Sequence[str]) -> Any:
        """BM25 score of every document (a float32 array, zero where no term matches)."""
        import numpy as np

        out = np.zeros(self.n, dtype=np.float32)
        counts: dict[str, int] = {}
        for t in query_terms:
            counts[t] = counts.get(t, 0) + 1
        for t, c in counts.items():
            i = self.vocab.get(t)
            if i is None:
                continue
            a, b = int(self.indptr[i]), int(self.indptr[i + 1])
            out[self.docs[a:b]] += np.float32(self.idf(t) * c) * self.weights[a:b]
        return out
