"""`ask`: direct answers, evidence sets within a token budget, and not_in_graph (trike/ask.py)."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest

from trike import TrikeDB
from trike.ask import estimate_tokens, parse_when, terms

ROOT = Path(__file__).resolve().parent.parent
DEFECTS = ROOT / "examples" / "defects"
KB = ROOT / "examples" / "kb"
D = dt.date


@pytest.fixture(autouse=True)
def _lexical_search(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIKE_EMBED_MODEL", "none")  # no model download in tests


@pytest.fixture(scope="module")
def defects(tmp_path_factory: pytest.TempPathFactory) -> TrikeDB:
    path = tmp_path_factory.mktemp("defects") / "defects.yaml"
    shutil.copy(DEFECTS / "graph.yaml", path)
    db = TrikeDB(path)
    db.import_source(DEFECTS / "reports.jsonl", mapping=DEFECTS / "mapping.yaml")
    return db


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> TrikeDB:
    db = TrikeDB(tmp_path_factory.mktemp("kb") / "kb.yaml")
    db.import_source(KB)
    return db


def _values(res: dict) -> list:
    return [f["o"] for f in res["answer"]["facts"]]


def test_parse_when() -> None:
    assert parse_when("2024年5月時点のProductAの通信速度は?") == {
        "start": D(2024, 5, 1), "end": D(2024, 6, 1), "text": "2024年5月"}
    assert parse_when("as of 2024-10-01, what was it?")["start"] == D(2024, 10, 1)
    w = parse_when("2024年3月1日時点")
    assert (w["start"], w["end"]) == (D(2024, 3, 1), D(2024, 3, 2))
    assert parse_when("in March 2024")["end"] == D(2024, 4, 1)
    assert parse_when("before 2024-09-02")["start"] == D(2024, 9, 1)
    assert parse_when("19200bpsのまま?") is None
    assert parse_when("ProductAの通信速度は?") is None


def test_terms_and_tokens() -> None:
    assert "結露" in terms("SE-1で結露が原因") and "se1" in terms("SE-1で結露が原因")
    assert "が原" not in terms("結露が原因")  # hiragana is not indexed
    assert terms("Dependencies") == terms("dependency")
    assert estimate_tokens("") == 0 and estimate_tokens("通信速度") == 4 and estimate_tokens("abcdefgh") == 2


def test_fast_path_current_value_with_sources(defects: TrikeDB) -> None:
    res = defects.ask("ProductAの通信速度は?")
    assert res["not_in_graph"] is False
    ans = res["answer"]
    assert ans["kind"] == "value" and _values(res) == [9600]
    assert ans["sources"][:3] == ["DR-0016", "DR-0017", "DR-0021"]
    assert res["entities"] == ["ProductA"] and res["predicates"] == ["baud_rate"]
    assert "DR-0016" in res["context"] and res["tokens"] <= 2000
    assert res["evidence"][0]["kind"] == "fact" and res["evidence"][0]["o"] == 9600


@pytest.mark.parametrize(("question", "value"), [
    ("2024年5月時点のProductAの通信速度は?", 19200),
    ("2024-10-01時点でProductAの通信速度はいくつ?", 9600),
    ("What was the baud rate of ProductA as of 2024-03-01?", 19200),
    ("2024年8月時点のProductCのファームウェアのバージョンは?", "1.3"),
    ("2024年3月1日時点でのProductCのファームウェアは?", "1.2"),
])
def test_temporal_questions_are_exact(defects: TrikeDB, question: str, value: object) -> None:
    res = defects.ask(question)
    assert _values(res) == [value]


def test_period_with_a_change_lists_both_values(defects: TrikeDB) -> None:
    res = defects.ask("2024年9月時点のProductAの通信速度は?")
    assert _values(res) == [19200, 9600]
    assert "2024-01-12..2024-09-02" in res["answer"]["text"] and "from 2024-09-02" in res["answer"]["text"]


def test_history_question(defects: TrikeDB) -> None:
    res = defects.ask("ProductAの通信速度はいつ変更された?")
    ans = res["answer"]
    assert ans["kind"] == "history"
    assert [(c["from"], c["to"], c["date"]) for c in ans["changes"]] == [(19200, 9600, D(2024, 9, 2))]
    assert ans["changes"][0]["sources"][0] == "DR-0016"


def test_inverse_and_multi_source_answer(defects: TrikeDB) -> None:
    res = defects.ask("PD-48はどの製品の型式?")
    assert [f["s"] for f in res["answer"]["facts"]] == ["ProductD"]
    res = defects.ask("部品C12が関係した不具合報告はどれ?")
    assert {f["s"] for f in res["answer"]["facts"]} == {"ProductA", "ProductB"}
    assert {"DR-0003", "DR-0012", "DR-0017"} <= set(res["sources"])


def test_evidence_set_for_open_questions(defects: TrikeDB) -> None:
    res = defects.ask("SE-1で結露が原因となった不具合の対策は?")
    assert res["answer"] is None and res["not_in_graph"] is False
    assert "DR-0007" in res["context"] and "DR-0023" in res["context"]
    assert "DR-0029" not in res["context"]  # condensation too, but another product
    assert all("source" in e for e in res["evidence"])
    res = defects.ask("パリティエラーが発生した報告の対策は?")  # no entity named: found by its words
    assert res["evidence"][0]["node"] == "DR-0021"


def test_reason_question_keeps_values_in_evidence(defects: TrikeDB) -> None:
    res = defects.ask("ProductAの通信速度が変更された理由は?")
    assert res["answer"] is None
    assert "9600" in res["context"] and "DR-0016" in res["context"]


def test_budget_cuts_the_context(kb: TrikeDB) -> None:
    q = "Which runbook should I follow when the checkout service p99 latency alert fires?"
    big = kb.ask(q, budget_tokens=4000)
    small = kb.ask(q, budget_tokens=120)
    assert small["tokens"] <= 120 < big["tokens"]
    assert small["evidence"] and small["evidence"][0]["text"] == big["evidence"][0]["text"]


def test_multi_hop_kb(kb: TrikeDB) -> None:
    res = kb.ask("Which runbook should I follow when the checkout service p99 latency alert fires?")
    nodes = {e.get("node") for e in res["evidence"]}
    assert {"checkout-service", "checkout-latency-p99", "high-latency"} <= nodes
    res = kb.ask("What is the on-call Slack channel of the team that owns the auth service?")
    assert "#platform-oncall" in res["context"]
    res = kb.ask("Which services are affected if the auth service goes down?")
    for svc in ("checkout-service", "payment-service", "notification-service"):
        assert f"{svc} LINKS_TO auth-service" in res["context"]


@pytest.mark.parametrize("question", [
    "What is the p99 latency SLO of the recommendation-service?",
    "How do I rotate the Kafka TLS certificates?",
    "What was the total revenue in the last quarter?",
    "What is the GPU memory limit of the ml-training cluster?",
])
def test_not_in_graph(kb: TrikeDB, question: str) -> None:
    res = kb.ask(question)
    assert res["not_in_graph"] is True
    assert res["context"] == "" and res["evidence"] == [] and res["answer"] is None


def test_not_in_graph_for_unknown_entity(defects: TrikeDB) -> None:
    assert defects.ask("ProductGの通信速度は?")["not_in_graph"] is True
    assert defects.ask("売上高の推移を教えて")["not_in_graph"] is True
    assert defects.ask("")["not_in_graph"] is True


def test_definition_question_answers_with_node(kb: TrikeDB) -> None:
    res = kb.ask("What is the Checkout Service?")
    assert res["answer"]["kind"] == "node" and res["answer"]["node"] == "checkout-service"
    assert "shopping cart" in res["answer"]["text"]


def test_index_follows_writes(tmp_path: Path) -> None:
    db = TrikeDB(tmp_path / "g.yaml", ontology={"predicates": {"OWNED_BY": {"functional": True, "label": "owner"}}})
    db.add("orders_db", "OWNED_BY", "data-team")
    assert [f["o"] for f in db.ask("Who is the owner of orders_db?")["answer"]["facts"]] == ["data-team"]
    db.remove("orders_db", "OWNED_BY")
    db.add("orders_db", "OWNED_BY", "web-team")
    assert [f["o"] for f in db.ask("Who is the owner of orders_db?")["answer"]["facts"]] == ["web-team"]
