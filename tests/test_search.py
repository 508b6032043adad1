"""search / find: ranking, "nothing found", validity, filters, the vector cache, model loading, CLI."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

try:
    from search_fixtures import search_env, tiny_model  # noqa: F401
except ImportError:  # tests/ imported as a package
    from tests.search_fixtures import search_env, tiny_model  # noqa: F401

from trike import TrikeDB
from trike.search import find, forget_models, index_stats, search
from trike.search import text as T
from trike.search.lexical import BM25

ONTOLOGY = {
    "predicates": {
        "OWNED_BY": {"description": "the team accountable for an asset (所有者)"},
        "RUNS_ON": {"description": "the engine that executes the job"},
        "LOADS_INTO": {"description": "the table a job writes to"},
        "WORKS_FOR": {"description": "a person is employed by a team"},
        "PARKED_IN": {"description": "where a car is kept"},
        "LOCATED_IN": {},
    }
}


def make_db(path: Path) -> TrikeDB:
    db = TrikeDB(path, ontology=ONTOLOGY)
    with db.batch():
        db.set_node("billing-db", type="Database", label="billing database", tags=["finance", "pii"])
        db.set_node("売上テーブル", type="Table", label_en="sales table")
        db.set_node("data-team", type="Team", label="Data Platform team")
        db.set_node("alice", type="Person", role="manager")
        db.add("billing-db", "OWNED_BY", "data-team", prov="wiki page 12")
        db.add("nightly-etl", "RUNS_ON", "airflow")
        db.add("nightly-etl", "LOADS_INTO", "売上テーブル")
        db.add("売上テーブル", "OWNED_BY", "data-team")
        db.add("alice", "WORKS_FOR", "data-team", valid_from=dt.date(2020, 1, 1), valid_to=dt.date(2023, 1, 1))
        db.add("bob", "WORKS_FOR", "data-team", valid_from=dt.date(2023, 1, 1))
        db.add("red car", "PARKED_IN", "garage berlin")
        db.add("data-team", "LOCATED_IN", "tokyo office")
    return db


@pytest.fixture
def db(tmp_path: Path) -> TrikeDB:
    return make_db(tmp_path / "graph.yaml")


def sentences(result: dict) -> list[str]:
    return [r["sentence"] for r in result["results"]]


def fact_keys(result: dict) -> list[tuple]:
    return [(r["fact"]["s"], r["fact"]["p"], r["fact"]["o"]) for r in result["results"] if r["kind"] == "fact"]


# ---------------------------------------------------------------------------------------------- text


def test_terms_words_stems_and_japanese_ngrams() -> None:
    assert T.terms("Which pipelines loaded customerOrders?") == [
        "pipelin", "load", "customer", "order", "customerorders"
    ]
    # Japanese: cut where the script changes, particles dropped, bigrams within each piece
    assert T.terms("売上テーブルの所有者") == ["売上", "テー", "ーブ", "ブル", "所有", "有者"]
    assert T.terms("Ｆｕｌｌ ﾃｽﾄ") == ["full", "テス", "スト"]  # NFKC first
    assert T.terms("the of and") == []


def test_fact_sentence_has_aliases_description_and_attributes() -> None:
    nodes = {"売上テーブル": {"type": "Table", "label_en": "sales table"}}
    preds = {"OWNED_BY": {"description": "the team accountable"}}
    fact = {"s": "売上テーブル", "p": "OWNED_BY", "o": "data-team", "prov": "wiki", "confidence": 0.9,
            "valid_from": dt.date(2024, 1, 1)}
    text = T.fact_sentence(fact, nodes, preds)
    assert text == ("売上テーブル (sales table) owned by [the team accountable] data-team; prov: wiki; "
                    "confidence: 0.9; from 2024-01-01")
    node = T.node_sentence("alice", {"type": "Person", "role": "manager", "tags": ["a", "b"]}, {})
    assert node == "alice: Person. role: manager; tags: a, b"


def test_bm25_ranks_the_matching_document_first() -> None:
    bm = BM25([["red", "car"], ["blue", "car"], ["red", "red", "bike"], []])
    scores = bm.scores(["red", "car"])
    assert int(scores.argmax()) == 0
    assert scores[3] == 0.0
    assert bm.idf("unknown") > bm.idf("car") > 0
    assert BM25([]).scores(["x"]).shape == (0,)


# ---------------------------------------------------------------------------------------------- search


def test_search_result_shape_and_lexical_hit(db: TrikeDB) -> None:
    r = search(db, "who owns the billing database", k=3)
    assert set(r) >= {"query", "results", "nothing_found", "semantic", "note"}
    assert r["nothing_found"] is False and r["semantic"] is True
    top = r["results"][0]
    assert set(top) == {"kind", "fact", "score", "signals", "sentence"}
    assert (top["fact"]["s"], top["fact"]["p"], top["fact"]["o"]) == ("billing-db", "OWNED_BY", "data-team")
    assert top["fact"]["prov"] == "wiki page 12"
    assert "lexical" in top["signals"]
    assert 0 < top["score"] <= 1.0
    scores = [x["score"] for x in r["results"]]
    assert scores == sorted(scores, reverse=True)


def test_japanese_query_reaches_japanese_fact_without_a_model(db: TrikeDB) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "none" switches the model off on purpose: no warning
        r = search(db, "売上テーブルの所有者は？", model="none")
    assert r["semantic"] is False and "lexical" in r["note"]
    assert fact_keys(r)[0] == ("売上テーブル", "OWNED_BY", "data-team")


def test_english_alias_of_a_japanese_node_finds_its_facts(db: TrikeDB) -> None:
    r = search(db, "who owns the sales table", k=3)
    assert ("売上テーブル", "OWNED_BY", "data-team") in fact_keys(r)


def test_semantic_signal_finds_a_synonym(db: TrikeDB) -> None:
    r = search(db, "where is the automobile kept", k=3)
    assert r["nothing_found"] is False
    first = r["results"][0]
    assert first["fact"]["s"] == "red car"
    assert "semantic" in first["signals"] and "lexical" in first["signals"]  # "kept": description
    r = search(db, "automobile", k=3)
    first = r["results"][0]
    assert first["fact"]["s"] == "red car" and first["signals"] == ["semantic"]
    lexical_only = search(db, "automobile", k=3, model="none")
    assert lexical_only["nothing_found"] is True


def test_nothing_found_for_an_unrelated_question(db: TrikeDB) -> None:
    for q in ("weather forecast for tomorrow", "rain", "zzzz qqqq"):
        r = search(db, q)
        assert r["nothing_found"] is True, q
        assert r["results"] == []
        assert r["note"].startswith("nothing found")
    assert search(db, "")["nothing_found"] is True
    assert search(db, "   ", k=5)["results"] == []


def test_k_limits_results(db: TrikeDB) -> None:
    assert len(search(db, "data team", k=2)["results"]) == 2
    assert search(db, "data team", k=0)["results"] == []


def test_as_of_keeps_facts_valid_that_day(db: TrikeDB) -> None:
    everyone = fact_keys(search(db, "who works for the data team", k=10))
    assert ("alice", "WORKS_FOR", "data-team") in everyone and ("bob", "WORKS_FOR", "data-team") in everyone
    in_2021 = fact_keys(search(db, "who works for the data team", k=10, as_of="2021-06-01"))
    assert ("alice", "WORKS_FOR", "data-team") in in_2021 and ("bob", "WORKS_FOR", "data-team") not in in_2021
    in_2024 = fact_keys(search(db, "who works for the data team", k=10, as_of=dt.date(2024, 1, 1)))
    assert ("bob", "WORKS_FOR", "data-team") in in_2024 and ("alice", "WORKS_FOR", "data-team") not in in_2024
    with pytest.raises(ValueError):
        search(db, "x", as_of="yesterday")


def test_index_refreshes_after_a_change_and_after_another_writer(db: TrikeDB, tmp_path: Path) -> None:
    assert search(db, "invoice ticket")["nothing_found"] is True
    db.add("support-desk", "OWNED_BY", "invoice ticket team")
    assert fact_keys(search(db, "invoice ticket"))[0][0] == "support-desk"
    other = TrikeDB(tmp_path / "graph.yaml")
    other.add("fleet manager", "WORKS_FOR", "data-team")
    assert fact_keys(search(db, "fleet manager"))[0][0] == "fleet manager"


def test_facade_delegates(db: TrikeDB) -> None:
    assert db.search("billing database", k=1)["results"][0]["fact"]["s"] == "billing-db"
    assert db.find("billing database", k=1)["results"][0]["name"] == "billing-db"


# ---------------------------------------------------------------------------------------------- find


def test_find_returns_nodes_with_props_and_outgoing_facts(db: TrikeDB) -> None:
    r = find(db, "billing database owner", k=3)
    first = r["results"][0]
    assert first["name"] == "billing-db"
    assert first["props"]["type"] == "Database"
    assert [(f["p"], f["o"]) for f in first["out"]] == [("OWNED_BY", "data-team")]
    assert first["matched"] and first["signals"]


def test_find_where_dict_callable_and_lists(db: TrikeDB) -> None:
    r = find(db, "who owns the billing database", where={"type": "Team"})
    assert [n["name"] for n in r["results"]] == ["data-team"]  # reached as the object of the fact
    r = find(db, "billing", where={"tags": "pii"})
    assert [n["name"] for n in r["results"]] == ["billing-db"]
    r = find(db, "billing", where=lambda n: n["props"].get("type") == "Database")
    assert [n["name"] for n in r["results"]] == ["billing-db"]
    r = find(db, "billing database", where={"type": "Person"})
    assert r["results"] == [] and r["nothing_found"] is True
    with pytest.raises(TypeError):
        find(db, "x", where=["type"])  # type: ignore[arg-type]


def test_find_empty_question_lists_matching_nodes(db: TrikeDB) -> None:
    r = find(db, "", where={"type": "Person"})
    assert [n["name"] for n in r["results"]] == ["alice"]
    assert r["results"][0]["out"][0]["p"] == "WORKS_FOR"
    assert find(db, "")["nothing_found"] is True


def test_find_as_of_filters_outgoing_facts(db: TrikeDB) -> None:
    r = find(db, "", where={"name": "alice"}, as_of="2024-01-01")
    assert r["results"][0]["out"] == []
    r = find(db, "", where={"name": "alice"}, as_of="2021-01-01")
    assert len(r["results"][0]["out"]) == 1


def test_find_nothing_found(db: TrikeDB) -> None:
    r = find(db, "weather forecast")
    assert r["nothing_found"] is True and r["results"] == []


def test_where_values_from_the_command_line_match_typed_props(tmp_path: Path) -> None:
    from trike.search.index import prop_matches

    assert prop_matches(True, "true") and prop_matches(dt.date(2024, 1, 2), "2024-01-02")
    assert prop_matches(3, "3") and prop_matches(["a", "b"], "b") and not prop_matches(1, True)
    assert not prop_matches(None, "None") and not prop_matches("x", "y")


# ---------------------------------------------------------------------------------------------- cache, model


def test_vectors_cached_on_disk_and_one_new_fact_embeds_one_text(db: TrikeDB, tmp_path: Path,
                                                                  search_env: Path) -> None:
    first = index_stats(db)
    assert first["semantic"] is True and first["encoded"] > 0 and first["vectors_from_disk"] == 0
    assert list((search_env / "vectors").glob("*.sqlite"))
    db.add("nightly-etl", "OWNED_BY", "billing team")  # new object text only
    after_add = index_stats(db)
    assert after_add["encoded"] == 1
    # a new process: nothing in memory, everything from disk
    reopened = TrikeDB(tmp_path / "graph.yaml")
    again = index_stats(reopened)
    assert again["encoded"] == 0 and again["vectors_from_disk"] == again["texts"]


def test_model_is_loaded_once_per_process(db: TrikeDB, tiny_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import model2vec

    forget_models()
    calls = []
    original = model2vec.StaticModel.from_pretrained.__func__

    def counting(cls, *args, **kwargs):
        calls.append((args, kwargs))
        return original(cls, *args, **kwargs)

    monkeypatch.setattr(model2vec.StaticModel, "from_pretrained", classmethod(counting))
    search(db, "billing")
    search(db, "car")
    search(TrikeDB(db.path), "car")
    assert len(calls) == 1
    assert calls[0][1]["force_download"] is False
    assert Path(calls[0][0][0]) == tiny_model


def test_missing_model_falls_back_to_lexical_and_warns_once(db: TrikeDB, tmp_path: Path) -> None:
    forget_models()
    missing = str(tmp_path / "no-such-model")
    with pytest.warns(RuntimeWarning, match="lexical ranking only"):
        r = search(db, "billing database", model=missing)
    assert r["semantic"] is False and "unavailable" in r["note"]
    assert r["results"][0]["signals"] == ["lexical"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = search(db, "billing database", model=missing)
    assert again["results"] == r["results"]


def test_model2vec_not_installed_falls_back(db: TrikeDB, monkeypatch: pytest.MonkeyPatch) -> None:
    forget_models()
    monkeypatch.setitem(sys.modules, "model2vec", None)
    with pytest.warns(RuntimeWarning):
        r = search(db, "billing database")
    assert r["semantic"] is False and r["results"]
    forget_models()


def test_texts_unknown_to_the_model_are_zero_vectors(db: TrikeDB, tiny_model: Path) -> None:
    import numpy as np

    from trike.search.embed import get_embedder

    emb, note = get_embedder(str(tiny_model))
    assert note is None and emb is not None
    vecs = emb.encode(["xyzzy plugh", "", "car"])
    assert np.all(vecs[0] == 0) and np.all(vecs[1] == 0)
    assert abs(float(np.linalg.norm(vecs[2])) - 1.0) < 1e-5
    db.add("xyzzy", "LOCATED_IN", "plugh")  # a fact whose words the model does not know
    r = search(db, "xyzzy")  # and a query the model cannot encode: lexical still answers
    assert fact_keys(r)[0] == ("xyzzy", "LOCATED_IN", "plugh")
    assert all(np.isfinite(x["score"]) for x in r["results"])


def test_text_the_model_cannot_read_weighs_the_semantic_signal_down(tiny_model: Path) -> None:
    from trike.search.embed import get_embedder

    emb, _ = get_embedder(str(tiny_model))
    assert emb is not None
    assert emb.unread_share("car owner") == 0.0
    assert emb.unread_share("売上テーブル") == 1.0  # no Japanese word in the tiny model
    assert emb.unread_share("car 売上") == pytest.approx(0.4)


def test_importing_search_does_not_import_model2vec() -> None:
    code = "import sys, trike, trike.search, trike.cli; print('model2vec' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------------------------------------- CLI


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    from trike.cli import main

    code = main(list(argv))
    return code, capsys.readouterr().out


def test_cli_search_and_find(db: TrikeDB, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(db.path)
    code, out = run_cli(capsys, "search", path, "who owns the billing database", "-k", "2")
    assert code == 0 and "billing-db  OWNED_BY  data-team" in out and out.count("[fact]") + out.count("[node]") == 2
    code, out = run_cli(capsys, "search", path, "billing", "--json", "-k", "1", "--model", "none")
    data = json.loads(out)
    assert data["semantic"] is False and data["results"][0]["kind"] in ("fact", "node")
    code, out = run_cli(capsys, "search", path, "weather forecast")
    assert code == 0 and out.startswith("nothing found")
    code, out = run_cli(capsys, "find", path, "owner of billing", "-w", "type=Team", "--json")
    assert [n["name"] for n in json.loads(out)["results"]] == ["data-team"]
    code, out = run_cli(capsys, "find", path, "", "-w", "type=Person")
    assert "alice" in out and "WORKS_FOR" in out
    code, out = run_cli(capsys, "search", path, "who works for the data team", "--as-of", "2021-01-01", "--json")
    assert {r["fact"]["s"] for r in json.loads(out)["results"] if r["kind"] == "fact"} & {"alice", "bob"} == {"alice"}


def test_cli_rejects_bad_filters(db: TrikeDB, capsys: pytest.CaptureFixture[str]) -> None:
    from trike.cli import main

    assert main(["find", str(db.path), "x", "-w", "novalue"]) == 2
    assert main(["search", str(db.path), "x", "-k", "0"]) == 2
    assert main(["search", str(db.path), "x", "--as-of", "yesterday"]) == 2
    assert "error" in capsys.readouterr().err


def test_drop_runs_removes_only_the_given_space_less_runs() -> None:
    text = "POS売上日次取込 (POS daily sales load) schedule 毎日 午前3時"
    assert T.space_less_runs(text) == ["売上日次取込", "毎日", "午前", "時"]
    assert T.drop_runs(text, {"売上日次取込", "毎日"}) == "POS (POS daily sales load) schedule 午前3時"
    assert T.drop_runs("ascii only", {"x"}) == "ascii only"


def test_text_the_model_cannot_read_is_not_given_to_it(tiny_model: Path) -> None:
    from trike.search.embed import get_embedder

    emb, _ = get_embedder(str(tiny_model))
    assert emb is not None
    assert emb.readable("car owner") == "car owner"
    assert emb.readable("売上テーブル (sales table)") == "(sales table)"
    assert emb.readable("売上テーブルの所有者は？") == ""  # nothing left but punctuation


def test_unreadable_parts_do_not_drown_the_readable_ones(db: TrikeDB) -> None:
    from trike.search import _index

    idx, semantic, _ = _index(db, None)
    assert semantic
    # a Japanese-only question gives the tiny English model nothing to read: lexical ranking only
    r = idx.rank("売上テーブル")
    assert r.semantic_order == [] and r.order
    assert idx.docs[r.order[0]].sentence.startswith("売上テーブル")
    # the English alias of a Japanese node is what the model embeds: a synonym of it reaches the node's
    # facts through the semantic signal alone ("revenue" shares no word with "sales table")
    r = idx.rank("revenue")
    top = [idx.docs[i] for i in r.semantic_order[:3]]
    assert any("売上テーブル" in d.sentence for d in top)
    # the Japanese part of a document has no vector of its own: the node's vector is its English alias's
    j = idx.node_doc["売上テーブル"]
    assert "売上テーブル" not in idx.row_by_text and "(sales table)" in idx.row_by_text
    assert j is not None


def test_drop_runs_every_run_matches_dropping_each() -> None:
    for text in ["POS売上日次取込 (POS daily) 毎日 午前3時", "Ｆｕｌｌ ﾃｽﾄ です", "data 데이터", "a b 々"]:
        runs = set(T.space_less_runs(text))
        assert T.drop_runs(text, runs, every=True) == T.drop_runs(text, runs)
    # Thai vowel marks are no word characters for `re`: only `every` drops them with their letters
    assert T.drop_runs("ข้อมูล data", set(), every=True) == "data"
