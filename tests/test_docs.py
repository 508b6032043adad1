"""Time, provenance and importers (trike/temporal.py, trike/importers/)."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest

from trike import ConflictError, TrikeDB
from trike.errors import LoadError, NotFoundError
from trike.importers import ImportRefused, MappingError

ROOT = Path(__file__).resolve().parent.parent
DEFECTS = ROOT / "examples" / "defects"
KB = ROOT / "examples" / "kb"
D = dt.date

ONTO = {
    "predicates": {
        "baud_rate": {"range": "integer", "functional": True, "label": "通信速度"},
        "OWNED_BY": {"domain": "asset", "range": "team", "functional": True},
        "LINKS_TO": "a link between notes",
        "related_part": {"domain": "product", "range": "part"},
        "ABOUT": {"domain": "report", "range": "product"},
        "note": "free text",
    },
}


@pytest.fixture(autouse=True)
def _lexical_search(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIKE_EMBED_MODEL", "none")  # no model download in tests


@pytest.fixture
def defects(tmp_path: Path) -> TrikeDB:
    path = tmp_path / "defects.yaml"
    shutil.copy(DEFECTS / "graph.yaml", path)
    db = TrikeDB(path)
    rep = db.import_source(DEFECTS / "reports.jsonl", mapping=DEFECTS / "mapping.yaml")
    assert rep["written"] and rep["ok"]
    return db


# ------------------------------------------------------------------------------------------ history
def test_history_in_time_order_with_sources(tmp_path: Path) -> None:
    db = TrikeDB(tmp_path / "g.yaml", ontology=ONTO)
    db.add("ProductA", "baud_rate", 19200, valid_from=D(2024, 1, 12), prov="DR-1", confidence=0.8)
    db.add("ProductA", "baud_rate", 9600, valid_from=D(2024, 9, 2), prov="DR-2")
    db.add("ProductA", "note", "always valid")
    rows = db.history("ProductA")
    assert [r["o"] for r in rows] == ["always valid", 19200, 9600]  # no valid_from first
    first = rows[1]
    assert first["valid_from"] == D(2024, 1, 12) and first["valid_to"] == D(2024, 9, 2)
    assert first["prov"] == "DR-1" and first["confidence"] == 0.8 and first["current"] is False
    assert rows[2]["current"] is True and rows[2]["valid_to"] is None and rows[2]["confidence"] is None
    assert set(rows[0]) >= {"s", "p", "o", "valid_from", "valid_to", "prov", "confidence", "current"}
    assert [r["o"] for r in db.history("ProductA", "baud_rate")] == [19200, 9600]


def test_history_string_dates_and_unknown_subject(tmp_path: Path) -> None:
    db = TrikeDB(tmp_path / "g.yaml")
    db.add("x", "state", "b", valid_from="2024-06")
    db.add("x", "state", "a", valid_from="2024-01-15", valid_to="2024-06")
    assert [(r["o"], r["valid_from"]) for r in db.history("x")] == [("a", D(2024, 1, 15)), ("b", D(2024, 6, 1))]
    with pytest.raises(NotFoundError):
        db.history("nope")
    db.set_node("lonely", type="thing")
    assert db.history("lonely") == []


# ------------------------------------------------------------------------------------------ records
def test_records_compile_history_prov_and_confidence(defects: TrikeDB) -> None:
    hist = defects.history("ProductA", "baud_rate")
    assert [(r["o"], r["valid_from"], r["valid_to"]) for r in hist] == [
        (19200, D(2024, 1, 12), D(2024, 9, 2)), (9600, D(2024, 9, 2), None)]
    assert hist[0]["prov"] == ["DR-0001", "DR-0006", "DR-0010"]
    assert hist[0]["confidence"] == pytest.approx(1 - 0.1 ** 3)  # noisy-or of three 0.9 statements
    assert hist[1]["prov"][0] == "DR-0016"  # the report that made the change comes first
    fw = defects.history("ProductC", "firmware_version")
    assert [r["o"] for r in fw] == ["1.2", "1.3", "2.0"]
    # as_of: the value valid then; today's by default
    assert [f["o"] for f in defects.match("ProductA", "baud_rate", as_of="2024-05-01")] == [19200]
    assert [f["o"] for f in defects.match("ProductA", "baud_rate")] == [9600]
    # a fact repeated across reports keeps its earliest date and lists every report
    c12 = defects.match("ProductA", "related_part", "C12")[0]
    assert c12["prov"] == ["DR-0003", "DR-0017"] and c12["valid_from"] == D(2024, 2, 8)


def test_records_nodes_keep_free_text(defects: TrikeDB) -> None:
    node = defects.get_node("DR-0016")
    props = node["props"]
    assert props["type"] == "defect_report" and props["date"] == D(2024, 9, 2)
    assert "9600bps" in props["action"] and props["model"] == "PA-200"
    assert {(f["p"], f["o"]) for f in node["out"]} == {("ABOUT", "ProductA")}
    assert defects.get_node("C12")["props"]["type"] == "part"
    assert defects.check() == []


def test_reimport_is_idempotent(defects: TrikeDB) -> None:
    before = defects.content_hash()
    rep = defects.import_source(DEFECTS / "reports.jsonl", mapping=DEFECTS / "mapping.yaml")
    assert rep["counts"]["new"] == rep["counts"]["update"] == 0
    assert rep["written"] is False
    assert defects.content_hash() == before


def test_dry_run_verdicts_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    shutil.copy(DEFECTS / "graph.yaml", path)
    db = TrikeDB(path)
    text = path.read_text(encoding="utf-8")
    rep = db.import_source(DEFECTS / "reports.jsonl", mapping=DEFECTS / "mapping.yaml", dry_run=True)
    assert rep["dry_run"] is True and rep["written"] is False and rep["ok"] is True
    assert path.read_text(encoding="utf-8") == text and len(db) == 0
    assert rep["records"] == 30
    by_key = {}
    for f in rep["facts"]:
        by_key.setdefault((f["s"], f["p"], f["o"]), []).append(f)
    change = by_key[("ProductA", "baud_rate", 9600)][0]
    assert change["verdict"] == "update"
    assert change["closes"][0]["o"] == 19200 and change["closes"][0]["valid_to"] == D(2024, 9, 2)
    repeat = by_key[("ProductA", "baud_rate", 19200)][1]
    assert repeat["verdict"] == "same" and repeat["adds_source"] is True
    assert by_key[("DR-0001", "ABOUT", "ProductA")][0]["verdict"] == "new"
    c = rep["counts"]
    assert c["rejected"] == c["conflict"] == 0 and c["new"] > 0 and c["update"] == 3
    # the real import then does exactly what the dry run said
    real = db.import_source(DEFECTS / "reports.jsonl", mapping=DEFECTS / "mapping.yaml")
    assert real["counts"] == c


def _records(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


MAPPING = {
    "record": {"id": "id", "type": "report", "properties": ["text"]},
    "entity": {"field": "product", "type": "product", "link": "ABOUT"},
    "date": "date",
    "extract": [{"from": ["text"], "pattern": r"(\d+)bps", "predicate": "baud_rate", "datatype": "integer",
                 "pick": "last"}],
}


def test_rejected_and_conflict_verdicts_and_all_or_nothing(tmp_path: Path) -> None:
    db = TrikeDB(tmp_path / "g.yaml", ontology=ONTO)
    db.set_node("ProductA", type="product")
    before = (tmp_path / "g.yaml").read_text(encoding="utf-8")
    src = _records(tmp_path / "r.jsonl", [
        {"id": "R1", "date": "2024-01-10", "product": "ProductA", "text": "runs at 19200bps"},
        {"id": "R2", "date": "2024-01-10", "product": "ProductA", "text": "runs at 9600bps"},  # same day
        {"id": "R3", "date": "2024-02-01", "product": "ProductA", "text": "ok", "extra": 1},
    ])
    mapping = {**MAPPING, "fields": {"extra": {"predicate": "UNKNOWN_P"}}}
    rep = db.import_source(src, mapping=mapping, dry_run=True)
    verdicts = {(f["s"], f["p"], f["o"]): f for f in rep["facts"]}
    assert verdicts[("ProductA", "baud_rate", 9600)]["verdict"] == "conflict"
    assert "functional" in verdicts[("ProductA", "baud_rate", 9600)]["reason"]
    assert verdicts[("ProductA", "UNKNOWN_P", 1)]["verdict"] == "rejected"
    assert "not declared" in verdicts[("ProductA", "UNKNOWN_P", 1)]["reason"]
    assert rep["ok"] is False
    with pytest.raises(ImportRefused) as err:
        db.import_source(src, mapping=mapping)
    assert err.value.report["counts"]["conflict"] == 1 and "nothing was written" in str(err.value)
    assert (tmp_path / "g.yaml").read_text(encoding="utf-8") == before
    assert db.match(as_of="all") == []


def test_records_out_of_order_are_sorted_by_date(tmp_path: Path) -> None:
    db = TrikeDB(tmp_path / "g.yaml", ontology=ONTO)
    src = _records(tmp_path / "r.jsonl", [
        {"id": "R2", "date": "2024-09-02", "product": "P", "text": "from 19200bps to 9600bps"},
        {"id": "R1", "date": "2024-01-12", "product": "P", "text": "19200bps"},
        {"id": "R3", "date": "2024-10-01", "product": "P", "text": "9600bps"},
    ])
    db.import_source(src, mapping=MAPPING)
    assert [(r["o"], r["prov"]) for r in db.history("P", "baud_rate")] == [
        (19200, "R1"), (9600, ["R2", "R3"])]
    # a later report restating the old value after the change is a conflict, not a silent rewrite
    src2 = _records(tmp_path / "r2.jsonl", [{"id": "R4", "date": "2024-11-01", "product": "P", "text": "19200bps"}])
    rep = db.import_source(src2, mapping=MAPPING, dry_run=True)
    bad = [f for f in rep["facts"] if f["verdict"] == "conflict"]
    assert len(bad) == 1 and "validity window" in bad[0]["reason"]
    # an older report restating a known value moves its start earlier and closes nothing wrongly
    src3 = _records(tmp_path / "r3.jsonl", [{"id": "R0", "date": "2023-12-01", "product": "P", "text": "19200bps"}])
    rep = db.import_source(src3, mapping=MAPPING)
    assert rep["ok"]
    first = db.history("P", "baud_rate")[0]
    assert first["valid_from"] == D(2023, 12, 1) and first["valid_to"] == D(2024, 9, 2)
    assert first["prov"] == ["R1", "R0"]


def test_records_from_csv(tmp_path: Path) -> None:
    db = TrikeDB(tmp_path / "g.yaml")
    src = tmp_path / "r.csv"
    src.write_text("id,date,product,text\nR1,2024-03-01,P,needs 38400bps\nR2,,Q,no speed\n", encoding="utf-8")
    rep = db.import_source(src, mapping=MAPPING)
    assert rep["kind"] == "records" and rep["records"] == 2
    assert db.match("P", "baud_rate")[0]["o"] == 38400
    assert db.get_node("R2")["props"]["text"] == "no speed"
    assert "valid_from" not in db.match("R2", "ABOUT")[0]


def test_mapping_errors(tmp_path: Path) -> None:
    db = TrikeDB(tmp_path / "g.yaml")
    src = _records(tmp_path / "r.jsonl", [{"id": "R1"}])
    with pytest.raises(MappingError, match="record"):
        db.import_source(src, mapping={"entity": "product"})
    with pytest.raises(MappingError, match="bad regular expression"):
        db.import_source(src, mapping={"record": "id", "extract": [
            {"from": ["x"], "pattern": "(", "predicate": "p", "subject": "record"}]})
    with pytest.raises(MappingError, match="unknown mapping key"):
        db.import_source(src, mapping={"record": "id", "colour": "red"})


# ------------------------------------------------------------------------------------------ triples and graphs
def test_csv_triples_with_attributes(tmp_path: Path) -> None:
    db = TrikeDB(tmp_path / "g.yaml", ontology=ONTO)
    src = tmp_path / "facts.csv"
    src.write_text(
        "s,p,o,prov,confidence,valid_from\n"
        "ProductA,baud_rate,19200,manual-v1,0.9,2024-01-12\n"
        "ProductA,baud_rate,9600,manual-v2,,2024-09-02\n"
        "ProductA,related_part,C12,,,\n", encoding="utf-8")
    rep = db.import_source(src)
    assert rep["kind"] == "triples" and rep["counts"] == {
        "new": 2, "same": 0, "update": 1, "rejected": 0, "conflict": 0}
    hist = db.history("ProductA", "baud_rate")
    assert [(r["o"], r["valid_to"]) for r in hist] == [(19200, D(2024, 9, 2)), (9600, None)]
    assert hist[0]["confidence"] == 0.9 and hist[0]["prov"] == "manual-v1"


def test_tsv_and_missing_columns(tmp_path: Path) -> None:
    db = TrikeDB(tmp_path / "g.yaml")
    tsv = tmp_path / "f.tsv"
    tsv.write_text("subject\tpredicate\tobject\na\tKNOWS\tb\n", encoding="utf-8")
    db.import_source(tsv)
    assert db.match("a", "KNOWS", "b")
    bad = tmp_path / "x.csv"
    bad.write_text("name,colour\na,red\n", encoding="utf-8")
    with pytest.raises(LoadError, match="s, p, o"):
        db.import_source(bad)


def test_json_and_yaml_graphs(tmp_path: Path) -> None:
    db = TrikeDB(tmp_path / "g.yaml")
    js = tmp_path / "g.json"
    js.write_text(json.dumps({
        "nodes": [{"name": "orders_db", "type": "table"}],
        "edges": [{"s": "orders_db", "p": "OWNED_BY", "o": "data-team", "valid_from": "2024-05-01"},
                  ["orders_db", "FEEDS", "dashboard"]],
    }), encoding="utf-8")
    rep = db.import_source(js)
    assert rep["kind"] == "graph" and rep["counts"]["new"] == 2
    assert db.match("orders_db", "OWNED_BY")[0]["valid_from"] == D(2024, 5, 1)
    other = TrikeDB(tmp_path / "other.yaml")
    other.set_node("orders_db", description="all orders")
    other.add("orders_db", "FEEDS", "dashboard")
    other.add("orders_db", "FEEDS", "finance", prov="wiki")
    rep = db.import_source(tmp_path / "other.yaml")
    verdicts = sorted(f["verdict"] for f in rep["facts"])
    assert verdicts == ["new", "same"]
    assert db.get_node("orders_db")["props"] == {"type": "table", "description": "all orders"}


def test_gate_rejects_wrong_types_in_dry_run(tmp_path: Path) -> None:
    db = TrikeDB(tmp_path / "g.yaml", ontology=ONTO)
    db.set_node("alice", type="person")
    src = tmp_path / "f.csv"
    src.write_text("s,p,o\norders_db,OWNED_BY,alice\n", encoding="utf-8")
    rep = db.import_source(src, dry_run=True)
    (f,) = rep["facts"]
    assert f["verdict"] == "rejected" and "not a team" in f["reason"]
    with pytest.raises(ImportRefused):
        db.import_source(src)


def test_functional_conflict_from_a_file(tmp_path: Path) -> None:
    db = TrikeDB(tmp_path / "g.yaml", ontology=ONTO)
    db.add("orders_db", "OWNED_BY", "data-team")
    src = tmp_path / "f.csv"
    src.write_text("s,p,o\norders_db,OWNED_BY,web-team\n", encoding="utf-8")
    rep = db.import_source(src, dry_run=True)
    assert rep["facts"][0]["verdict"] == "conflict"
    with pytest.raises(ConflictError):  # the gate says the same outside the importer
        db.add("orders_db", "OWNED_BY", "web-team")


# ------------------------------------------------------------------------------------------ markdown
def test_markdown_folder(tmp_path: Path) -> None:
    db = TrikeDB(tmp_path / "kb.yaml")
    rep = db.import_source(KB)
    assert rep["kind"] == "markdown" and rep["files"] == 20 and rep["warnings"] == []
    assert rep["node_counts"]["new"] == 20
    node = db.get_node("checkout-service")
    props = node["props"]
    assert props["type"] == "service" and props["title"] == "Checkout Service"
    assert props["tags"] == ["commerce", "tier-1", "python"] and props["path"] == "services/checkout-service.md"
    assert "Logs are kept for 30 days" in props["sections"]["Operations"]
    assert "[" not in props["sections"]["Dependencies"]  # links written as their text
    links = {(f["o"], f["section"]) for f in node["out"] if f["p"] == "LINKS_TO"}
    assert ("payment-service", "Dependencies") in links and ("team-commerce", "Owner") in links
    assert ("checkout-latency-p99", "Metrics") in links
    f = db.match("checkout-service", "LINKS_TO", "payment-service")[0]
    assert f["prov"] == "services/checkout-service.md"
    again = db.import_source(KB, dry_run=True)
    assert again["counts"]["new"] == 0 and again["node_counts"]["same"] == 20


def test_markdown_details(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    (notes / "a").mkdir(parents=True)
    (notes / "b").mkdir()
    (notes / "a" / "x.md").write_text(
        "---\ntitle: X one\ntype: idea\nowner: y\nupdated: 2024-05-01\n---\nIntro text.\n\n## Links\n"
        "See [y](../b/y.md#part), [twice](../b/y.md), [[Z note]], [web](https://example.com), "
        "[gone](missing.md) and ![img](pic.png).\n\n```\n## not a heading\n```\n", encoding="utf-8")
    (notes / "b" / "y.md").write_text("# Y\n\n## Uses\n\nBack to [x](../a/x.md).\n", encoding="utf-8")
    (notes / "b" / "z.md").write_text("---\ntitle: Z note\n---\nbody\n", encoding="utf-8")
    db = TrikeDB(tmp_path / "g.yaml")
    rep = db.import_source(notes, mapping={"links": {"owner": "OWNED_BY"}})
    assert any("broken link to missing.md" in w for w in rep["warnings"])
    x = db.get_node("x")
    assert x["props"]["updated"] == D(2024, 5, 1) and "owner" not in x["props"]
    assert set(x["props"]["sections"]) == {"X one", "Links"}
    assert "## not a heading" in x["props"]["sections"]["Links"]
    assert {(f["p"], f["o"]) for f in x["out"]} == {("LINKS_TO", "y"), ("LINKS_TO", "z"), ("OWNED_BY", "y")}
    assert db.get_node("y")["props"]["title"] == "Y"
    assert db.match("y", "LINKS_TO", "x")[0]["section"] == "Uses"


def test_markdown_needs_declared_predicate(tmp_path: Path) -> None:
    db = TrikeDB(tmp_path / "g.yaml", ontology={"predicates": {"MENTIONS": "x"}})
    rep = db.import_source(KB, dry_run=True)
    assert rep["counts"]["new"] == 0 and rep["counts"]["rejected"] > 0
    assert "LINKS_TO" in next(f["reason"] for f in rep["facts"] if f["verdict"] == "rejected")
    rep = db.import_source(KB, mapping={"predicate": "MENTIONS"})
    assert rep["ok"] and db.count(p="MENTIONS") > 0


def test_unknown_source(tmp_path: Path) -> None:
    db = TrikeDB(tmp_path / "g.yaml")
    with pytest.raises(LoadError, match="no such file"):
        db.import_source(tmp_path / "nope.csv")
    other = tmp_path / "data.bin"
    other.write_bytes(b"\x00\x01")
    with pytest.raises(LoadError, match="unknown kind"):
        db.import_source(other)
