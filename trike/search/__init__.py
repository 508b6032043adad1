"""Search and find: reach a fact or a node without knowing its name.

`search(db, query)` ranks one sentence per fact and per described node with a hybrid of BM25 (words, and
character n-grams for Japanese and other space-less text) and static embeddings (model2vec), fused by
reciprocal rank fusion, and answers "nothing found" when nothing in the graph is relevant.
`find(db, question, where=...)` widens with the same ranking, keeps the nodes whose properties match
`where`, and returns each node with its properties and outgoing facts.

Importing this package is cheap: numpy and model2vec are imported on the first search.
"""

from __future__ import annotations

import datetime as _dt
import threading
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from .embed import DEFAULT_MODEL, ENV_CACHE, ENV_MODEL, cache_dir, forget_models, get_embedder, model_name

__all__ = [
    "DEFAULT_MODEL",
    "ENV_CACHE",
    "ENV_MODEL",
    "cache_dir",
    "find",
    "forget_models",
    "index_stats",
    "model_name",
    "search",
]

NOTHING_FOUND = "nothing found: no fact or node in the graph is relevant to this question"

_states: weakref.WeakKeyDictionary[Any, _State] = weakref.WeakKeyDictionary()
_states_fallback: dict[int, _State] = {}
_states_lock = threading.Lock()


class _State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.indexes: dict[str | None, Any] = {}  # model key -> SearchIndex


def _state(db: Any) -> _State:
    with _states_lock:
        try:
            st = _states.get(db)
            if st is None:
                st = _states[db] = _State()
        except TypeError:  # not weak-referenceable / not hashable
            st = _states_fallback.setdefault(id(db), _State())
        return st


def _revision(db: Any) -> Any:
    try:
        len(db)  # a TrikeDB picks up changes made to its file by others (one stat) when asked its size
    except TypeError:
        pass
    return getattr(db, "revision", None)


def _index(db: Any, model: Any) -> tuple[Any, bool, str | None]:
    """The current index of `db` for `model` (built or refreshed when the graph's revision changed)."""
    from .index import SearchIndex

    embedder, note = get_embedder(model)
    key = embedder.key if embedder is not None else None
    st = _state(db)
    with st.lock:
        rev = _revision(db)
        idx = st.indexes.get(key)
        if idx is None or rev is None or idx.revision != rev:
            previous = idx
            if previous is None and st.indexes:
                previous = next(iter(st.indexes.values()))  # reuse terms built for another model
            idx = SearchIndex(db, rev, embedder, previous)
            st.indexes[key] = idx
    return idx, embedder is not None, note


def index_stats(db: Any, model: Any = None) -> dict[str, Any]:
    """How the current index was built: documents, sentences encoded, vectors read from disk, seconds."""
    idx, semantic, note = _index(db, model)
    return {**idx.stats, "semantic": semantic, "note": note}


def _as_of(as_of: Any) -> str | None:
    """None / "all": every fact; a date (or YYYY-MM-DD text): the facts valid that day."""
    from ..errors import QueryError

    if as_of is None or (isinstance(as_of, str) and as_of.strip().lower() in ("all", "any", "*", "")):
        return None
    if isinstance(as_of, (_dt.date, _dt.datetime)):
        return as_of.isoformat()
    text = str(as_of).strip()
    try:
        _dt.date.fromisoformat(text[:10])
    except ValueError:
        raise QueryError(f"as_of must be a date like 2024-05-01 or 'all', not {as_of!r}") from None
    return text


def _note(model_note: str | None, found: bool) -> str | None:
    parts = [p for p in (None if found else NOTHING_FOUND, model_note) if p]
    return "; ".join(parts) or None


def _result(idx: Any, ranking: Any, i: int) -> dict[str, Any]:
    d = idx.docs[i]
    item: dict[str, Any] = {"kind": d.kind}
    if d.kind == "fact":
        item["fact"] = dict(d.fact)
    else:
        item["node"] = {"name": d.name, "props": dict(d.props or {})}
    item["score"] = round(float(ranking.scores[i]), 4)
    item["signals"] = list(ranking.signals[i])
    item["sentence"] = d.sentence
    return item


def search(
    db: Any, query: str, k: int = 10, as_of: Any = None, model: str | None = None
) -> dict[str, Any]:
    """The `k` facts and nodes most relevant to `query` (any language), best first.

    Returns `{"query", "results": [{"kind": "fact"|"node", "fact"|"node", "score", "signals",
    "sentence"}], "nothing_found", "semantic", "note", "evidence"}`. `nothing_found` is true (and
    `results` empty) when nothing in the graph is relevant. `semantic` is false when no embedding model
    could be loaded; the ranking is then lexical only and `note` says why. `as_of` (a date) keeps only
    facts valid then. `model`: a model2vec model name or folder (default: $TRIKE_EMBED_MODEL, else
    minishlab/potion-multilingual-128M; "none" for lexical only).
    """
    from .index import CANDIDATES

    query = "" if query is None else str(query)
    when = _as_of(as_of)
    idx, semantic, model_note = _index(db, model)
    out: dict[str, Any] = {"query": query, "k": k, "as_of": when}
    results: list[dict[str, Any]] = []
    evidence = None
    if query.strip() and k > 0:
        ranking = idx.rank(query, when, depth=max(CANDIDATES, k))
        evidence = ranking.features.as_dict()
        if ranking.relevant:
            results = [_result(idx, ranking, i) for i in ranking.order[:k]]
    out.update(
        results=results,
        nothing_found=not results,
        semantic=semantic,
        note=_note(model_note, bool(results)),
        evidence=evidence,
    )
    return out


Where = Mapping[str, Any] | Callable[[dict[str, Any]], bool] | None


def _where_fn(where: Where) -> Callable[[str, Mapping[str, Any]], bool]:
    from .index import where_matches

    if where is None:
        return lambda name, props: True
    if callable(where):
        fn = where
        return lambda name, props: bool(fn({"name": name, "props": dict(props)}))
    if isinstance(where, Mapping):
        w = dict(where)
        return lambda name, props: where_matches(w, name, props)
    raise TypeError("where must be a dict of property: value, or a function of {'name', 'props'}")


def _valid(fact: Mapping[str, Any], when: str | None) -> bool:
    from .index import iso

    if when is None:
        return True
    vf, vt = iso(fact.get("valid_from")), iso(fact.get("valid_to"))
    return (vf is None or vf <= when) and (vt is None or when < vt)


OBJECT_SHARE = 0.5  # a node reached as the object of a matching fact counts half as much as its subject


def _rank_nodes(idx: Any, ranking: Any, keep: Callable[[str, Mapping[str, Any]], bool],
                node_entry: Callable[[str], dict[str, Any]], k: int) -> list[dict[str, Any]]:
    """Nodes met in the ranked documents (a node's own sentence, a fact's subject, a fact's object when
    it is a node), scored by their best document, filtered by `keep`, best first."""
    found: dict[str, dict[str, Any]] = {}
    rejected: set[str] = set()
    for i in ranking.order:
        d = idx.docs[i]
        score = float(ranking.scores[i])
        if d.kind == "node":
            names = [(d.name, score)]
        else:
            names = [(str(d.fact["s"]), score)]
            if idx.is_entity(d.fact["o"]):
                names.append((d.fact["o"], score * OBJECT_SHARE))
        for name, sc in names:
            if name in rejected:
                continue
            entry = found.get(name)
            if entry is None:
                if not keep(name, idx.nodes.get(name) or {}):
                    rejected.add(name)
                    continue
                entry = found[name] = {"score": sc, "signals": [], "matched": []}
            entry["score"] = max(entry["score"], sc)
            if len(entry["matched"]) < 3 and d.sentence not in entry["matched"]:
                entry["matched"].append(d.sentence)
            for sig in ranking.signals[i]:
                if sig not in entry["signals"]:
                    entry["signals"].append(sig)
    best = sorted(found.items(), key=lambda kv: -kv[1]["score"])[:k]
    return [
        {**node_entry(name), "score": round(e["score"], 4), "signals": e["signals"], "matched": e["matched"]}
        for name, e in best
    ]


def find(
    db: Any,
    question: str,
    where: Where = None,
    k: int = 10,
    as_of: Any = None,
    model: str | None = None,
) -> dict[str, Any]:
    """The `k` nodes most relevant to `question` whose properties match `where`, each with its name,
    properties and outgoing facts.

    `where` is a dict of exact property values (`{"type": "Table"}`; a list-valued property matches
    when it contains the value), or a function taking `{"name", "props"}` and returning a bool. With an
    empty question, every node matching `where` is listed (in graph order, up to `k`). Returns
    `{"question", "where", "results": [{"name", "props", "out", "score", "signals", "matched"}],
    "nothing_found", "semantic", "note"}`.
    """
    from .index import CANDIDATES

    question = "" if question is None else str(question)
    when = _as_of(as_of)
    keep = _where_fn(where)
    idx, semantic, model_note = _index(db, model)
    subjects = idx.by_subject()
    shown_where = None if where is None else ("<function>" if callable(where) else dict(where))
    results: list[dict[str, Any]] = []
    evidence = None

    def node_entry(name: str) -> dict[str, Any]:
        return {
            "name": name,
            "props": dict(idx.nodes.get(name) or {}),
            "out": [dict(f) for f in subjects.get(name, ()) if _valid(f, when)],
        }

    if k > 0 and not question.strip():
        if where is not None:
            for name, props in idx.nodes.items():
                if idx.is_entity(name) and keep(name, props or {}):
                    results.append({**node_entry(name), "score": None, "signals": [], "matched": []})
                    if len(results) >= k:
                        break
    elif k > 0:
        ranking = idx.rank(question, when, depth=max(CANDIDATES, 20 * k))
        evidence = ranking.features.as_dict()
        if ranking.relevant:
            results = _rank_nodes(idx, ranking, keep, node_entry, k)
    return {
        "question": question,
        "where": shown_where,
        "k": k,
        "as_of": when,
        "results": results,
        "nothing_found": not results,
        "semantic": semantic,
        "note": _note(model_note, bool(results)),
        "evidence": evidence,
    }
