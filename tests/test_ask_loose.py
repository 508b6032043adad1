"""`ask` recognises a predicate named by one of its words, and does not answer a question about a
property the node does not have with the node's description."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from trike import TrikeDB

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "pipeline.yaml"


@pytest.fixture
def db(tmp_path, monkeypatch):
    monkeypatch.setenv("TRIKE_EMBED_MODEL", "none")
    p = tmp_path / "pipeline.yaml"
    shutil.copy(EXAMPLE, p)
    return TrikeDB(p)


def test_one_word_of_the_predicate_is_enough(db):
    r = db.ask("who owns MART_REVENUE?")
    assert r["answer"] is not None
    assert r["answer"]["facts"] == [{"s": "MART_REVENUE", "p": "OWNED_BY", "o": "revenue-analytics"}]


def test_the_date_in_the_question_picks_the_value(db):
    r = db.ask("retention of RAW_CRM_CONTACTS in 2025")
    assert [f["o"] for f in r["answer"]["facts"]] == [730]
    assert r["answer"]["sources"] == ["DPA v1"]


def test_a_missing_property_is_not_answered_with_the_description(db):
    r = db.ask("who is the CEO of MART_REVENUE")
    assert r["answer"] is None
