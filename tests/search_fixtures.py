"""Fixtures for the search tests: a tiny model2vec model built here (no download), a private cache dir.

Import the fixtures into a test module (`from search_fixtures import search_env, tiny_model  # noqa: F401`)
so pytest finds them. `search_env` points TRIKE_EMBED_MODEL at the tiny model and TRIKE_CACHE_DIR at a
temporary folder for every test, and forbids Hugging Face hub access.
"""

from __future__ import annotations

from pathlib import Path

import pytest

# Words that mean the same thing share one direction in the tiny model, so the semantic signal can find
# a fact through a synonym that shares no word with it.
SYNONYMS = [
    ["car", "automobile", "vehicle"],
    ["owner", "proprietor", "owned", "owns"],
    ["pipeline", "etl", "workflow"],
    ["revenue", "sales", "turnover"],
    ["warehouse", "storehouse", "depot"],
    ["nightly", "overnight", "midnight"],
    ["weather", "forecast", "rain"],  # nothing in the test graphs is about this
]
OTHER_WORDS = (
    "alice bob carol team data platform billing database table job runs on airflow loads into reads from "
    "orders customers report dashboard berlin tokyo office works for the a of is in by who which what "
    "where when how does do prov source confidence from until type person system red blue parked garage "
    "fleet manager account invoice ticket support store product price stock"
).split()
COMMON = {"the", "a", "of", "is", "in", "by", "who", "which", "what", "where", "when", "how", "does", "do"}
DIM = 32


def build_tiny_model(folder: Path) -> Path:
    """A word-level tokenizer (from `tokenizers`) plus hand-made vectors, saved in model2vec's layout."""
    import numpy as np
    from model2vec import StaticModel
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    words: list[str] = ["[UNK]", "[PAD]"]
    for group in SYNONYMS:
        words.extend(w for w in group if w not in words)
    words.extend(w for w in OTHER_WORDS if w not in words)
    vocab = {w: i for i, w in enumerate(words)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    rng = np.random.default_rng(7)
    vecs = rng.normal(size=(len(words), DIM)).astype(np.float32)
    for group in SYNONYMS:
        base = rng.normal(size=DIM).astype(np.float32)
        for w in group:
            vecs[vocab[w]] = base + 0.05 * rng.normal(size=DIM).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    for w in COMMON:
        vecs[vocab[w]] *= 0.2  # frequent words weigh little, as in real static models
    vecs[vocab["[UNK]"]] = 0.0
    vecs[vocab["[PAD]"]] = 0.0
    model = StaticModel(vectors=vecs, tokenizer=tok, config={"normalize": True}, normalize=True,
                        base_model_name="trike-tests-tiny")
    model.save_pretrained(str(folder))
    return folder


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny-model2vec") / "model")


@pytest.fixture(autouse=True)
def search_env(monkeypatch: pytest.MonkeyPatch, tiny_model: Path, tmp_path: Path) -> Path:
    """Every search test: the tiny model by default, a fresh vector cache, no hub access."""
    cache = tmp_path / "trike-cache"
    monkeypatch.setenv("TRIKE_EMBED_MODEL", str(tiny_model))
    monkeypatch.setenv("TRIKE_CACHE_DIR", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return cache
