"""`trike ui` without a browser: the generated file, its embedded hash, staleness and the CLI."""

from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path

import pytest

from trike import TrikeDB
from trike.cli import main
from trike.cli.cmd_ui import find_graph
from trike.ui import build_payload, page_hash, page_is_current, render, to_html
from trike.ui.html import _json_for_script
from trike.ui.sample import synthetic_yaml

GRAPH = """ontology:
  predicates:
    works_at: {description: employment, domain: Person, range: Org}
    nickname: {description: what friends say, range: xsd:string}
    age: {range: xsd:integer}
nodes:
  田中太郎: {type: Person}
  Acme: {type: Org, founded: 1999}
  "</script><script>alert(1)</script>": {type: Org}
triples:
- {s: 田中太郎, p: works_at, o: Acme, prov: hr.csv, valid_from: 2020-01-01, valid_to: 2024-03-31}
- {s: 田中太郎, p: nickname, o: タロー}
- {s: 田中太郎, p: age, o: 41}
- {s: 田中太郎, p: works_at, o: "</script><script>alert(1)</script>"}
"""


@pytest.fixture()
def graph(tmp_path: Path) -> Path:
    f = tmp_path / "team.yaml"
    f.write_text(GRAPH, encoding="utf-8")
    return f


def _script(html: str, ident: str) -> str:
    m = re.search(rf'<script type="[^"]+" id="{ident}"[^>]*>(.*?)</script>', html, re.S)
    assert m, ident
    return m.group(1)


def test_page_embeds_hash_and_data(graph: Path, tmp_path: Path):
    db = TrikeDB(graph)
    page = to_html(db, tmp_path / "out" / "index.html")
    assert page == tmp_path / "out" / "index.html" and page.exists()
    assert page_hash(page) == db.content_hash()
    assert page_is_current(db, page)
    html = page.read_text(encoding="utf-8")
    data = json.loads(_script(html, "trike-data"))
    assert data["hash"] == db.content_hash() and data["title"] == "team" and data["source"] == "team.yaml"
    names = data["names"]
    assert "田中太郎" in html  # Japanese stays readable in the file
    # literal objects are values, not nodes; node objects are indexes
    facts = {(names[f[0]], data["preds"][f[1]]): f for f in data["facts"]}
    assert facts[("田中太郎", "nickname")][2] == {"v": "タロー", "t": "string"}
    assert facts[("田中太郎", "age")][2] == {"v": 41, "t": "integer"}
    assert "タロー" not in names
    works = [f for f in data["facts"] if data["preds"][f[1]] == "works_at" and names[f[2]] == "Acme"][0]
    assert works[3] == {"prov": "hr.csv", "valid_from": "2020-01-01", "valid_to": "2024-03-31"}
    assert data["ontology"]["predicates"]["works_at"]["description"] == "employment"
    # the SPARQL store gets the same RDF projection as the server
    nt = gzip.decompress(base64.b64decode(_script(html, "trike-nt"))).decode("utf-8")
    assert nt == db.export("nt")
    wasm = gzip.decompress(base64.b64decode(_script(html, "trike-oxigraph-wasm")))
    assert wasm[:4] == b"\0asm"


def test_page_is_self_contained_and_safe(graph: Path):
    html = render(TrikeDB(graph))
    assert not re.search(r"<script[^>]+src=", html)
    assert not re.search(r"<link[^>]+stylesheet", html)
    assert not re.search(r"""(src|href)=["']https?:""", html)
    assert "connect-src 'none'" in html
    # a hostile node name cannot close the data script
    assert "</script><script>alert(1)</script>" not in html
    assert html.count("</script>") == html.count("<script")


def test_same_graph_same_bytes(graph: Path, tmp_path: Path):
    a = render(TrikeDB(graph))
    copy = tmp_path / "copy" / "team.yaml"
    copy.parent.mkdir()
    copy.write_text(GRAPH, encoding="utf-8")
    assert render(TrikeDB(copy)) == a


def test_stale_page_is_detected(graph: Path, tmp_path: Path):
    db = TrikeDB(graph)
    page = to_html(db, tmp_path / "page.html")
    assert main(["check", str(graph), "--html", str(page)]) == 0
    db.add("Acme", "age", 27)
    assert not page_is_current(db, page)
    assert main(["check", str(graph), "--html", str(page)]) == 1
    assert main(["ui", "generate", str(graph), "-o", str(page)]) == 0
    assert main(["check", str(graph), "--html", str(page)]) == 0
    assert page_hash(tmp_path / "missing.html") is None
    (tmp_path / "other.html").write_text("<html>not a trike page</html>")
    assert page_hash(tmp_path / "other.html") is None


def test_db_to_html(graph: Path, tmp_path: Path):
    db = TrikeDB(graph)
    out = db.to_html(tmp_path / "db.html")
    assert page_hash(out) == db.content_hash()


def test_cli_generate_and_default_output(graph: Path, tmp_path: Path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["ui", "generate", "team.yaml", "-o", "docs/index.html"]) == 0
    assert page_hash(tmp_path / "docs" / "index.html") == TrikeDB(graph).content_hash()
    assert "wrote" in capsys.readouterr().out
    # `trike ui` with no FILE picks the only graph of the folder; --no-open writes to .trike-cache/
    assert main(["ui", "--no-open"]) == 0
    assert (tmp_path / ".trike-cache" / "team.html").exists()
    assert main(["ui", "generate"]) == 2  # -o is required
    assert "-o OUT" in capsys.readouterr().err


def test_find_graph_prefers_workspace(tmp_path: Path):
    (tmp_path / "a.yaml").write_text("triples:\n- {s: a, p: b, o: c}\n")
    assert find_graph(tmp_path) == tmp_path / "a.yaml"
    (tmp_path / "notes.yaml").write_text("title: not a graph\n")
    assert find_graph(tmp_path) == tmp_path / "a.yaml"
    (tmp_path / "b.yaml").write_text("nodes:\n  x: {type: T}\n")
    with pytest.raises(FileNotFoundError, match="several graphs"):
        find_graph(tmp_path)
    (tmp_path / "workspace.yaml").write_text("graphs:\n- a.yaml\n- b.yaml\n")
    assert find_graph(tmp_path) == tmp_path / "workspace.yaml"
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="no graph"):
        find_graph(empty)


def test_payload_is_compact_at_10k(tmp_path: Path):
    f = tmp_path / "big.yaml"
    f.write_text(synthetic_yaml(10_000), encoding="utf-8")
    db = TrikeDB(f)
    data = build_payload(db)
    assert len(data["facts"]) == len(db.facts()) == 10_000
    size = len(_json_for_script(data).encode())
    assert size < 120 * len(data["facts"])  # bytes per fact, attributes included


def test_assets_are_pinned_and_licensed():
    assets = Path(__file__).resolve().parents[1] / "trike" / "ui" / "assets"
    versions = json.loads((assets / "versions.json").read_text())
    assert versions["direct"] == {"force-graph": "1.52.0", "oxigraph": "0.5.11"}
    licences = (assets / "LICENSES.md").read_text()
    for name, meta in versions["packages"].items():
        assert f"| {name} | {meta['version']} |" in licences
    import hashlib

    for name, digest in versions["sha256"].items():
        assert hashlib.sha256((assets / name).read_bytes()).hexdigest() == digest, name
