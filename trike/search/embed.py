"""Static embeddings with model2vec: which model, loading it once per process, encoding without zero
vectors, and the on-disk cache of sentence vectors (one SQLite file per model, keyed by the text).

model2vec and numpy are imported inside the functions, never at module import.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import sqlite3
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger("trike.search")

DEFAULT_MODEL = "minishlab/potion-multilingual-128M"
ENV_MODEL = "TRIKE_EMBED_MODEL"
ENV_CACHE = "TRIKE_CACHE_DIR"
# Names that switch the semantic signal off on purpose (no warning).
OFF = frozenset({"none", "off", "lexical", "0", "false"})

_lock = threading.Lock()
_models: dict[str, Embedder | BaseException] = {}
_warned: set[str] = set()


def model_name(model: str | os.PathLike[str] | None = None) -> str:
    """The model to use: the argument, else $TRIKE_EMBED_MODEL, else the default multilingual model."""
    if model is not None:
        return str(model)
    return os.environ.get(ENV_MODEL) or DEFAULT_MODEL


def cache_dir() -> Path:
    """Where trike keeps caches: $TRIKE_CACHE_DIR, else $XDG_CACHE_HOME/trike, else ~/.cache/trike."""
    env = os.environ.get(ENV_CACHE)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "trike"


def _looks_like_path(name: str) -> bool:
    return name.startswith(("/", ".", "~")) or "\\" in name or name.count("/") > 1


class Embedder:
    """A loaded model2vec model plus the identity used to key its cached vectors."""

    def __init__(self, name: str, model: Any, key: str) -> None:
        self.name = name
        self.model = model
        self.key = key
        self.dim = int(model.embedding.shape[1])
        self._baseline: tuple[float, float] | None = None
        self._unread_memo: dict[str, bool] = {}

    def similarity_baseline(self) -> tuple[float, float]:
        """Mean and standard deviation of the cosine between unrelated tokens of this model (a sample of
        its vocabulary): word similarities are judged in these units, so one cut-off suits every model."""
        if self._baseline is None:
            import numpy as np

            emb = np.asarray(self.model.embedding, dtype=np.float32)
            rng = np.random.default_rng(0)
            rows = rng.choice(len(emb), size=min(2000, len(emb)), replace=False)
            v = emb[rows]
            v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
            sims = (v @ v.T)[np.triu_indices(len(v), 1)]
            self._baseline = (float(sims.mean()), float(sims.std()) or 1.0) if sims.size else (0.0, 1.0)
        return self._baseline

    def _unread_runs(self, runs: list[str]) -> list[bool]:
        """For each run of space-less text: True when this model reads it only character by character
        (each token about one character, or no known token at all). Memoized per run."""
        memo = self._unread_memo
        todo = [r for r in dict.fromkeys(runs) if r not in memo]
        if todo:
            unk = getattr(self.model, "unk_token_id", None)
            if len(memo) > 200_000:
                memo.clear()
            for run, enc in zip(todo, self.model.tokenizer.encode_batch(todo, add_special_tokens=False), strict=True):
                known = sum(1 for i in enc.ids if i != unk)
                memo[run] = known == 0 or len(run) < 1.5 * len(enc.ids)
        return [memo[r] for r in runs]

    def unread_share(self, text: str) -> float:
        """The share of `text`'s letters, written without spaces (Japanese, Chinese, Thai...), that this
        model only reads character by character: a model whose vocabulary has no words of a script
        (an English model meeting Japanese) cannot say what such text means."""
        from .text import space_less_runs

        runs = space_less_runs(text)
        if not runs:
            return 0.0
        letters = sum(1 for ch in text if ch.isalnum())
        unread = sum(len(r) for r, bad in zip(runs, self._unread_runs(runs), strict=True) if bad)
        return min(1.0, unread / max(1, letters))

    def readable(self, text: str) -> str:
        """`text` without the runs this model only reads character by character (see `unread_share`):
        to such a model they are noise that pulls a sentence's vector away from what the rest says.
        Text the model reads is returned unchanged (a multilingual model keeps Japanese)."""
        from .text import drop_runs, space_less_runs

        runs = space_less_runs(text)
        if not runs:
            return text
        unread = self._unread_runs(runs)
        if not any(unread):
            return text
        kept = drop_runs(text, {r for r, b in zip(runs, unread, strict=True) if b}, every=all(unread))
        return kept if any(ch.isalnum() for ch in kept) else ""  # punctuation alone says nothing

    def encode_with_norms(self, texts: Sequence[str]) -> tuple[Any, Any]:
        """Unit vectors (float32, shape (n, dim)) and the length of each raw mean vector. A text with no
        known token gets the zero vector (and length 0). The raw length says how informative a single
        word is: static models weight frequent tokens down."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32), np.zeros(0, dtype=np.float32)
        vecs = np.asarray(
            self.model.encode(list(texts), show_progress_bar=False, use_multiprocessing=False),
            dtype=np.float32,
        )
        vecs = np.nan_to_num(vecs, copy=False)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        np.divide(vecs, norms, out=vecs, where=norms > 1e-12)
        vecs[(norms <= 1e-12).ravel()] = 0.0
        return vecs, norms.ravel()

    def encode(self, texts: Sequence[str]) -> Any:
        """Unit vectors (float32, shape (n, dim)); a text with no known token gets the zero vector."""
        return self.encode_with_norms(texts)[0]


def _model_key(name: str, folder: Path | None) -> str:
    """Model identity for the vector cache: the hub id, or a local folder's path and file stamps."""
    h = hashlib.blake2b(digest_size=8)
    if folder is not None:
        h.update(str(folder.resolve()).encode())
        for p in sorted(folder.rglob("*")):
            if p.is_file() and p.suffix in (".json", ".safetensors"):
                st = p.stat()
                h.update(f"{p.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    else:
        h.update(name.encode())
    slug = re.sub(r"[^A-Za-z0-9.-]+", "_", name.strip("/"))[-60:]
    return f"{slug}-{h.hexdigest()}"


def _load(name: str) -> Embedder:
    expanded = Path(name).expanduser()
    if expanded.exists():
        folder: Path | None = expanded
    elif _looks_like_path(name):
        raise FileNotFoundError(f"no model folder at {name}")
    else:
        folder = None
    from model2vec import StaticModel  # lazy: heavy

    source = str(folder) if folder is not None else name
    # force_download=False: a model already in the hub cache loads without asking the network
    quiet = logging.getLogger("model2vec.model")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # "normalization does not match config": we normalize ourselves
    try:
        model = StaticModel.from_pretrained(source, force_download=False, normalize=False)
    finally:
        quiet.setLevel(level)
    return Embedder(name, model, _model_key(name, folder))


def get_embedder(model: str | os.PathLike[str] | None = None) -> tuple[Embedder | None, str | None]:
    """The loaded model (loaded once per process), or None with the reason when there is none."""
    name = model_name(model)
    if name.strip().lower() in OFF:
        return None, "semantic search is off (model: none); lexical ranking only"
    with _lock:
        got = _models.get(name)
        if got is None:
            try:
                got = _load(name)
            except Exception as exc:  # not installed, offline, bad folder: lexical search still works
                got = exc
            _models[name] = got
    if isinstance(got, BaseException):
        reason = f"embedding model {name!r} unavailable ({type(got).__name__}: {got}); lexical ranking only"
        if name not in _warned:
            _warned.add(name)
            log.warning("trike search: %s", reason)
            warnings.warn(f"trike search: {reason}", RuntimeWarning, stacklevel=3)
        return None, reason
    return got, None


def forget_models() -> None:
    """Drop loaded models and failure memory (tests; a process that installed a model meanwhile)."""
    with _lock:
        _models.clear()
        _warned.clear()


# ---------------------------------------------------------------------------------------------------------
# On-disk vector cache


def text_key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


class VectorCache:
    """Sentence vectors of one model on disk. Failures (read-only disk, locked file) only cost speed."""

    def __init__(self, model_key: str, dim: int) -> None:
        self.dim = dim
        self.path = cache_dir() / "vectors" / f"{model_key}.sqlite"
        self._conn: sqlite3.Connection | None = None
        self._broken = False

    def _connect(self) -> sqlite3.Connection | None:
        if self._conn is not None or self._broken:
            return self._conn
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(self.path), timeout=10, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("CREATE TABLE IF NOT EXISTS vec (k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID")
            self._conn = conn
        except (sqlite3.Error, OSError) as exc:
            log.info("trike search: vector cache unavailable at %s: %s", self.path, exc)
            self._broken = True
        return self._conn

    def get_many(self, keys: Sequence[bytes]) -> dict[bytes, Any]:
        import numpy as np

        conn = self._connect()
        out: dict[bytes, Any] = {}
        if conn is None or not keys:
            return out
        want = 4 * self.dim
        try:
            for i in range(0, len(keys), 900):
                chunk = keys[i : i + 900]
                q = f"SELECT k, v FROM vec WHERE k IN ({','.join('?' * len(chunk))})"
                for k, v in conn.execute(q, chunk):
                    if len(v) == want:
                        out[bytes(k)] = np.frombuffer(v, dtype=np.float32)
        except sqlite3.Error as exc:
            log.info("trike search: vector cache read failed: %s", exc)
        return out

    def put_many(self, items: Sequence[tuple[bytes, Any]]) -> None:
        import numpy as np

        conn = self._connect()
        if conn is None or not items:
            return
        try:
            with conn:
                conn.executemany(
                    "INSERT OR REPLACE INTO vec (k, v) VALUES (?, ?)",
                    [(k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in items],
                )
        except sqlite3.Error as exc:
            log.info("trike search: vector cache write failed: %s", exc)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
