"""The "nothing found" decision: a question about a node the graph knows, asking for a relation that node
does not have (though other nodes do), abstains; the same question once the fact exists does not."""

from __future__ import annotations

from pathlib import Path

import pytest

try:
    from search_fixtures import search_env, tiny_model  # noqa: F401
except ImportError:  # tests/ imported as a package
    from tests.search_fixtures import search_env, tiny_model  # noqa: F401

from trike import TrikeDB
from trike.search import index as I  # noqa: N812
from trike.search import search

ONTOLOGY = {
    "predicates": {
        "OWNED_BY": {"label": "owned by"},
        "PARKED_IN": {"label": "parked in"},
        "RUNS_ON": {"label": "runs on"},
    }
}


@pytest.fixture
def db(tmp_path: Path) -> TrikeDB:
    db = TrikeDB(tmp_path / "graph.yaml", ontology=ONTOLOGY)
    with db.batch():
        db.set_node("billing-db", type="Database", label="billing database")
        db.set_node("red-car", type="Vehicle", label="red car")
        db.add("billing-db", "OWNED_BY", "data-team")
        db.add("red-car", "PARKED_IN", "garage")
        db.add("nightly-etl", "RUNS_ON", "airflow")
    return db


def test_answerable_paraphrase_is_found(db: TrikeDB) -> None:
    r = search(db, "Who is the proprietor of the billing database?")
    assert r["nothing_found"] is False
    assert r["results"][0]["fact"] == {"s": "billing-db", "p": "OWNED_BY", "o": "data-team"}
    assert r["evidence"]["relation_gap"] == 0.0


def test_missing_relation_of_a_known_node_abstains(db: TrikeDB) -> None:
    r = search(db, "Who is the owner of the red car?")
    assert r["nothing_found"] is True and r["results"] == []
    assert r["evidence"]["relation_gap"] >= I.MAX_RELATION_GAP
    # the node's own relations still answer
    assert search(db, "Where is the automobile parked?")["nothing_found"] is False
    # once the fact exists, the same question is answered
    db.add("red-car", "OWNED_BY", "alice")
    r = search(db, "Who is the owner of the red car?")
    assert r["nothing_found"] is False
    assert {"s": "red-car", "p": "OWNED_BY", "o": "alice"} in [x.get("fact") for x in r["results"][:3]]


def test_relation_gap_is_zero_when_no_node_is_named(db: TrikeDB) -> None:
    r = search(db, "which vehicle is parked in a garage")
    assert r["evidence"]["relation_gap"] == 0.0 and r["nothing_found"] is False


def test_off_domain_question_abstains(db: TrikeDB) -> None:
    for q in ("weather forecast for tomorrow", "will it rain overnight"):
        assert search(db, q)["nothing_found"] is True, q


def test_relation_check_needs_a_model(db: TrikeDB) -> None:
    r = search(db, "Who is the owner of the red car?", model="none")
    assert r["semantic"] is False and r["evidence"]["relation_gap"] == 0.0
