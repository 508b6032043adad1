"""`trike ui` in a real browser: Debian's Chromium (never a downloaded one), driven by Playwright, on pages
opened from file://. The page's own Content-Security-Policy stays on, so anything that would reach the
network or evaluate strings shows up as a console error."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from trike import TrikeDB
from trike.ui import to_html
from trike.ui.sample import synthetic_yaml

CHROMIUM = os.environ.get("TRIKE_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]

GRAPH = """ontology:
  predicates:
    works_at: {description: A person is employed by an organisation, domain: Person, range: Organization}
    located_in: {description: Where an organisation has its office, range: City}
    knows: {description: Two people know each other}
    age: {description: Age in years, range: xsd:integer}
  classes:
    Person: {description: A human being}
    Organization: {description: A company or an institution}
    City: {}
nodes:
  田中太郎: {type: Person, email: tanaka@example.jp}
  Alice: {type: Person, note: "likes <b>bold</b> & </script> tags"}
  Bob: {type: Person}
  Acme: {type: Organization, founded: 1999}
  東京: {type: City, 読み: とうきょう}
  Berlin: {type: City}
triples:
- {s: 田中太郎, p: works_at, o: Acme, prov: hr.csv, valid_from: 2020-01-01}
- {s: Alice, p: works_at, o: Acme, confidence: 0.9}
- {s: Bob, p: works_at, o: Acme, valid_from: 2010-01-01, valid_to: 2015-06-30}
- {s: Acme, p: located_in, o: 東京}
- {s: Alice, p: knows, o: Bob}
- {s: Alice, p: knows, o: 田中太郎}
- {s: Alice, p: age, o: 34}
"""


def search(page, text: str) -> None:
    """Type a query and wait for its results (not the list shown before the debounce fired)."""
    page.fill("#search", text)
    wait_js(page, f"document.getElementById('results').dataset.query === {json.dumps(text)}", 10)


def wait_js(page, expr: str, timeout: float = 30.0):
    """Poll a JS expression (page.wait_for_function evaluates strings, which the page's CSP forbids)."""
    end = time.monotonic() + timeout
    while True:
        value = page.evaluate(expr)
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout}s waiting for {expr}")
        time.sleep(0.05)


@pytest.fixture(scope="module")
def browser():
    if not (shutil.which(CHROMIUM) or Path(CHROMIUM).exists()):
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium); "
                    "these tests never download a browser")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def small_page(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("ui")
    (d / "people.yaml").write_text(GRAPH, encoding="utf-8")
    return to_html(TrikeDB(d / "people.yaml"), d / "people.html")


class Opened:
    def __init__(self, page):
        self.page = page
        self.console: list[tuple[str, str]] = []
        self.requests: list[str] = []
        page.on("console", lambda m: self.console.append((m.type, m.text)))
        page.on("pageerror", lambda e: self.console.append(("pageerror", str(e))))
        page.on("request", lambda r: self.requests.append(r.url))

    def problems(self) -> list[tuple[str, str]]:
        return [(t, m) for t, m in self.console if t in ("error", "warning", "pageerror")]


def open_page(browser, path: Path, width: int = 1280, height: int = 800, fragment: str = "") -> Opened:
    page = browser.new_page(viewport={"width": width, "height": height})
    opened = Opened(page)
    page.goto(path.resolve().as_uri() + fragment)
    wait_js(page, "window.trikeUI && window.trikeUI.ready")
    return opened


def test_loads_offline_without_errors_or_requests(browser, small_page):
    o = open_page(browser, small_page)
    page = o.page
    wait_js(page, "trikeUI.layoutStops > 0", 60)
    assert page.title() == "people · trike"
    assert "6 nodes" in page.text_content("#stats")
    assert sorted(page.evaluate("trikeUI.viewNames()")) == sorted(["田中太郎", "Alice", "Bob", "Acme", "東京", "Berlin"])
    # the SPARQL engine starts from inlined bytes as well
    assert page.evaluate("trikeUI.ensureSparql()") > 20
    assert o.problems() == []
    assert o.requests == [small_page.resolve().as_uri()], o.requests
    page.close()


def test_search_japanese_shows_the_node(browser, small_page):
    o = open_page(browser, small_page)
    page = o.page
    search(page, "田中")
    first = page.eval_on_selector("#results button", "b => b.dataset.node")
    assert first == "田中太郎"  # the name match ranks above nodes whose facts mention it
    assert "田中太郎" in page.evaluate("trikeUI.highlighted()")
    # katakana finds hiragana (the 読み property of 東京), and full-width Latin finds ASCII
    search(page, "トウキョウ")
    # the snippet shows the original text, not the folded form the search compares
    assert page.text_content('#results button[data-node="東京"] .snip') == "読み: とうきょう"
    search(page, "ＡＣＭＥ")
    assert page.eval_on_selector("#results button", "b => b.dataset.node") == "Acme"
    # facts are searched too: a property value and an attribute value
    search(page, "hr.csv")
    found = page.eval_on_selector_all("#results button", "bs => bs.map(b => b.dataset.node)")
    assert sorted(found) == ["Acme", "田中太郎"]  # the fact with that provenance links both
    search(page, "no such thing")
    assert "Nothing found" in page.text_content("#results-info")
    # keyboard only: / focuses search, Enter opens the best match
    page.click("#title")
    page.keyboard.press("/")
    page.keyboard.press("Control+A")
    page.keyboard.type("東京")
    page.keyboard.press("Enter")
    wait_js(page, "trikeUI.selected() === '東京'", 5)
    assert page.text_content("#detail-name") == "東京"
    assert o.problems() == []
    page.close()


def test_clicking_a_node_opens_its_facts(browser, small_page):
    o = open_page(browser, small_page)
    page = o.page
    wait_js(page, "trikeUI.layoutStops > 0", 60)
    time.sleep(0.6)  # the fit-to-screen transition
    pos = page.evaluate("trikeUI.screenPosition('Acme')")
    page.mouse.move(pos["x"] + 1, pos["y"] + 1)
    time.sleep(0.2)
    page.mouse.click(pos["x"], pos["y"])
    wait_js(page, "trikeUI.selected() === 'Acme'", 5)
    detail = page.text_content("#detail")
    assert page.text_content("#detail-name") == "Acme"
    assert "founded" in detail and "1999" in detail
    # incoming facts with their attributes, provenance, validity and the predicate's description
    assert "← works_at (3)" in detail
    assert "A person is employed by an organisation" in detail
    assert "prov: hr.csv" in detail
    assert "valid 2020-01-01 → …" in detail
    assert "valid 2010-01-01 → 2015-06-30" in detail and "ended" in detail
    assert "confidence 0.9" in detail
    assert "located_in →" in detail and "東京" in detail
    # navigate through the panel: the object is a button
    page.click('#detail button[data-node="東京"]')
    wait_js(page, "trikeUI.selected() === '東京'", 5)
    assert "#node=" in page.url
    # literals show as values, HTML in values is text
    page.evaluate("trikeUI.select('Alice')")
    detail = page.text_content("#detail")
    assert "age →" in detail and "34" in detail
    assert "likes <b>bold</b> & </script> tags" in detail
    assert o.problems() == []
    page.close()


def test_deep_link_selects_a_node(browser, small_page):
    o = open_page(browser, small_page, fragment="#node=%E7%94%B0%E4%B8%AD%E5%A4%AA%E9%83%8E")
    wait_js(o.page, "trikeUI.selected() === '田中太郎'", 5)
    assert "works_at →" in o.page.text_content("#detail")
    o.page.close()


def test_type_and_predicate_filters_and_hops(browser, small_page):
    o = open_page(browser, small_page)
    page = o.page
    page.select_option("#type-filter", "Person")
    assert sorted(page.evaluate("trikeUI.viewNames()")) == ["Alice", "Bob", "田中太郎"]
    page.select_option("#type-filter", "")
    page.select_option("#pred-filter", label="located_in (1)")
    assert sorted(page.evaluate("trikeUI.viewNames()")) == ["Acme", "東京"]
    page.select_option("#pred-filter", "")
    assert len(page.evaluate("trikeUI.viewNames()")) == 6
    page.evaluate("trikeUI.select('東京')")
    page.select_option("#hops", "1")
    assert sorted(page.evaluate("trikeUI.viewNames()")) == ["Acme", "東京"]
    page.select_option("#hops", "2")
    assert sorted(page.evaluate("trikeUI.viewNames()")) == ["Acme", "Alice", "Bob", "東京", "田中太郎"]
    assert o.problems() == []
    page.close()


def test_sparql_select_and_ask(browser, small_page):
    o = open_page(browser, small_page)
    page = o.page
    page.click("#tab-sparql")
    page.fill("#sparql", "PREFIX t: <urn:trike:>\nSELECT ?who WHERE { ?who t:works_at t:Acme } ORDER BY ?who")
    page.click("#sparql-run")
    page.wait_for_selector("#sparql-result table", timeout=20000)
    rows = page.eval_on_selector_all("#sparql-result tbody tr", "rs => rs.map(r => r.textContent)")
    assert rows == ["Alice", "Bob", "田中太郎"]
    assert "3 rows" in page.text_content("#sparql-status")
    assert sorted(page.evaluate("trikeUI.highlighted()")) == ["Alice", "Bob", "田中太郎"]
    # edge attributes are queryable through the reification
    res = page.evaluate("""trikeUI.sparql(`PREFIX t: <urn:trike:> PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>
        SELECT ?prov WHERE { ?st rdf:subject t:田中太郎 ; t:prov ?prov }`)""")
    assert res == {"vars": ["prov"], "rows": 1}
    assert "hr.csv" in page.text_content("#sparql-result")
    page.fill("#sparql", "PREFIX t: <urn:trike:> ASK { t:Alice t:knows t:Bob }")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#sparql-result .ask", timeout=5000)
    assert page.text_content("#sparql-result") == "true"
    # a broken query reports its error in the page, not in the console
    page.fill("#sparql", "SELEC nothing")
    page.click("#sparql-run")
    page.wait_for_selector("#sparql-result .error", timeout=5000)
    # clicking a result node opens it
    page.fill("#sparql", "PREFIX t: <urn:trike:> SELECT ?c WHERE { t:Acme t:located_in ?c }")
    page.click("#sparql-run")
    page.click('#sparql-result button[data-node="東京"]')
    wait_js(page, "trikeUI.selected() === '東京'", 5)
    assert o.problems() == []
    page.close()


def test_themes_and_phone_width(browser, small_page):
    o = open_page(browser, small_page, width=390, height=844)
    page = o.page
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    box = page.locator("#graph").bounding_box()
    assert box["width"] >= 360 and box["height"] >= 300
    for sel in ("#search", "#type-filter", "#pred-filter", "#hops", "#tab-sparql"):
        b = page.locator(sel).bounding_box()
        assert b["x"] >= 0 and b["x"] + b["width"] <= 391, sel
    before = page.evaluate("getComputedStyle(document.body).backgroundColor")
    page.click("#theme")
    after = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert before != after
    page.click("#theme")
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == before
    # every control is reachable with the keyboard
    seen = set()
    for _ in range(25):
        page.keyboard.press("Tab")
        seen.add(page.evaluate("document.activeElement.id"))
    assert {"search", "type-filter", "pred-filter", "hops", "fit", "theme", "tab-node"} <= seen
    assert o.problems() == []
    page.close()


def test_2000_nodes_render_within_budget(browser, tmp_path):
    (tmp_path / "big.yaml").write_text(synthetic_yaml(6000), encoding="utf-8")
    db = TrikeDB(tmp_path / "big.yaml")
    assert len(db.nodes()) >= 2000
    page_path = to_html(db, tmp_path / "big.html")
    t0 = time.monotonic()
    o = open_page(browser, page_path)
    ready = time.monotonic() - t0
    page = o.page
    assert len(page.evaluate("trikeUI.viewNames()")) == len(db.nodes())
    assert ready < 10, f"interactive after {ready:.1f}s"
    wait_js(page, "trikeUI.layoutStops > 0", 90)
    settled = time.monotonic() - t0
    assert settled < 90
    # something was drawn: the canvas is not blank
    painted = page.evaluate("""(() => { const c = document.querySelector('#graph canvas');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0; for (let k = 0; k < d.length; k += 4 * 97) if (d[k] !== d[0] || d[k+1] !== d[1]) n++; return n; })()""")
    assert painted > 100
    search(page, "田中")
    assert page.locator("#results button").count() > 0
    assert o.problems() == []
    print(f"2,000+ nodes: interactive in {ready:.2f}s, layout settled in {settled:.1f}s")
    page.close()


def test_empty_graph_and_awkward_names(browser, tmp_path):
    empty = tmp_path / "empty.yaml"
    empty.write_text("triples: []\n", encoding="utf-8")
    o = open_page(browser, to_html(TrikeDB(empty), tmp_path / "empty.html"))
    assert o.page.evaluate("trikeUI.viewNames()") == []
    assert "This graph is empty" in o.page.text_content("#results-info")
    assert o.page.evaluate("trikeUI.ensureSparql()") == 0
    assert o.problems() == []
    o.page.close()

    db = TrikeDB(tmp_path / "odd.yaml")
    db.set_node("a b#c?d", type=["Thing", "Other"])
    db.add("a b#c?d", "links to", "100% <done>")
    db.add("100% <done>", "links to", "ｶﾀｶﾅ")
    o = open_page(browser, to_html(db, tmp_path / "odd.html"))
    page = o.page
    res = page.evaluate("""trikeUI.sparql('SELECT ?x ?y WHERE { ?x <urn:trike:links%20to> ?y }')""")
    assert res == {"vars": ["x", "y"], "rows": 2}
    assert sorted(page.evaluate("trikeUI.highlighted()")) == sorted(["a b#c?d", "100% <done>", "ｶﾀｶﾅ"])
    page.click('#sparql-result button[data-node="a b#c?d"]')
    wait_js(page, "trikeUI.selected() === 'a b#c?d'", 5)
    assert "Other" in page.text_content("#detail")
    page.select_option("#type-filter", "Other")
    assert page.evaluate("trikeUI.viewNames()") == ["a b#c?d"]
    search(page, "カタカナ")  # half-width katakana in the graph, full-width in the query
    assert page.eval_on_selector("#results button", "b => b.dataset.node") == "ｶﾀｶﾅ"
    page.evaluate("trikeUI.sparql('INSERT DATA { <urn:a> <urn:b> <urn:c> }')")
    assert "read-only" in page.text_content("#sparql-result")
    assert o.problems() == []
    page.close()
