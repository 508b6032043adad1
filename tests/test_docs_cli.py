"""CLI: trike history / import / ask (trike/cli/cmd_docs.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from trike.cli import main

ROOT = Path(__file__).resolve().parent.parent
DEFECTS = ROOT / "examples" / "defects"
KB = ROOT / "examples" / "kb"


@pytest.fixture(autouse=True)
def _lexical_search(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIKE_EMBED_MODEL", "none")


@pytest.fixture
def graph(tmp_path: Path) -> Path:
    path = tmp_path / "defects.yaml"
    shutil.copy(DEFECTS / "graph.yaml", path)
    return path


def _import(graph: Path, *extra: str) -> int:
    return main(["import", str(graph), str(DEFECTS / "reports.jsonl"), "--mapping", str(DEFECTS / "mapping.yaml"),
                 *extra])


def test_import_dry_run_then_real(graph: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = graph.read_text(encoding="utf-8")
    assert _import(graph, "--dry-run") == 0
    out = capsys.readouterr().out
    assert out.startswith("dry run:") and "3 update" in out
    assert "update    ProductA  baud_rate  9600  (closes 19200 until 2024-09-02)" in out
    assert graph.read_text(encoding="utf-8") == before
    assert _import(graph, "--json") == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["written"] is True and rep["counts"]["new"] == 55


def test_import_refused_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    graph = tmp_path / "g.yaml"
    graph.write_text("ontology:\n  predicates:\n    KNOWS: x\nnodes: {}\ntriples: []\n", encoding="utf-8")
    src = tmp_path / "f.csv"
    src.write_text("s,p,o\na,KNOWS,b\na,LIKES,c\n", encoding="utf-8")
    assert main(["import", str(graph), str(src), "--dry-run"]) == 1
    out = capsys.readouterr().out
    assert "rejected  a  LIKES  c" in out and "unknown predicate 'LIKES'" in out
    assert main(["import", str(graph), str(src)]) == 1
    assert "nothing was written" in capsys.readouterr().err
    assert "KNOWS" not in graph.read_text(encoding="utf-8").split("triples:")[1]


def test_history_and_ask(graph: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _import(graph, "--show", "none") == 0
    capsys.readouterr()
    assert main(["history", str(graph), "ProductA", "-p", "baud_rate"]) == 0
    lines = capsys.readouterr().out.strip().split("\n")
    assert lines[0].startswith("ProductA  baud_rate  19200  [2024-01-12..2024-09-02]")
    assert "(current)" in lines[1] and "DR-0016" in lines[1]
    assert main(["history", str(graph), "ProductA", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["valid_from"] == "2024-01-12" and {"current", "prov"} <= set(rows[0])
    assert main(["ask", str(graph), "2024年5月時点のProductAの通信速度は?"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("answer: ProductA baud_rate = 19200") and "sources: DR-0001" in out
    assert main(["ask", str(graph), "ProductGの通信速度は?"]) == 1
    assert "not in the graph" in capsys.readouterr().out
    assert main(["ask", str(graph), "SE-1で結露が原因となった不具合の対策は?", "--budget", "300", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["answer"] is None and res["tokens"] <= 300 and res["evidence"]


def test_import_markdown_creates_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    graph = tmp_path / "kb.yaml"
    assert main(["import", str(graph), str(KB)]) == 0
    assert "imported:" in capsys.readouterr().out and graph.exists()
    assert main(["history", str(graph), "nobody"]) == 2
    assert "no node named 'nobody'" in capsys.readouterr().err
