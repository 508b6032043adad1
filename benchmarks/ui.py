"""Size and speed of `trike ui` pages.

    python benchmarks/ui.py                        # 1k, 10k, 100k triples; time to interactive at 1k, 10k
    python benchmarks/ui.py --sizes 1000 --tti 1000 --repeat 1      # quick
    python benchmarks/ui.py --screenshot docs/screenshot.png        # the README picture (no benchmark)

For each size: a synthetic data-platform graph (trike.ui.sample) is written as YAML, loaded with TrikeDB
and rendered with `to_html`. Reported: the page's size, the time to load the YAML, the time to generate
the page (median of --repeat runs, each on a freshly loaded TrikeDB so nothing is cached), and for the
--tti sizes the time to interactive in Debian's Chromium (headless, from file://): navigation start to the
page's ready flag (data parsed, indexes built, first frame drawn), the time until the force layout
settles, and the time to start the in-page SPARQL engine (WebAssembly + loading the N-Triples).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from trike import TrikeDB  # noqa: E402
from trike.ui import to_html  # noqa: E402
from trike.ui.sample import synthetic_yaml  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]


def _poll(page, expr: str, timeout: float) -> None:
    end = time.monotonic() + timeout
    while not page.evaluate(expr):
        if time.monotonic() > end:
            raise TimeoutError(expr)
        time.sleep(0.02)


def measure_generation(folder: Path, triples: int, repeat: int) -> dict:
    src = folder / f"g{triples}.yaml"
    src.write_text(synthetic_yaml(triples), encoding="utf-8")
    loads, gens = [], []
    out = folder / f"g{triples}.html"
    for _ in range(repeat):
        t = time.perf_counter()
        db = TrikeDB(src)
        loads.append(time.perf_counter() - t)
        t = time.perf_counter()
        to_html(db, out)
        gens.append(time.perf_counter() - t)
    return {"triples": len(db.facts()), "nodes": len(db.nodes()), "bytes": out.stat().st_size,
            "yaml_bytes": src.stat().st_size, "load_s": statistics.median(loads),
            "generate_s": statistics.median(gens), "page": out}


def measure_tti(pages: list[tuple[int, Path]], repeat: int) -> dict[int, dict]:
    from playwright.sync_api import sync_playwright

    out: dict[int, dict] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for triples, page_path in pages:
            ready, settle, sparql = [], [], []
            for _ in range(repeat):
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                t = time.monotonic()
                page.goto(page_path.resolve().as_uri())
                _poll(page, "window.trikeUI && window.trikeUI.ready", 120)
                ready.append(page.evaluate("trikeUI.readyMs") / 1000)
                _poll(page, "trikeUI.layoutStops > 0", 300)
                settle.append(time.monotonic() - t)
                t = time.monotonic()
                page.evaluate("trikeUI.ensureSparql()")
                sparql.append(time.monotonic() - t)
                page.close()
            out[triples] = {"tti_s": statistics.median(ready), "settle_s": statistics.median(settle),
                            "sparql_s": statistics.median(sparql)}
        browser.close()
    return out


def screenshot(graph: Path, out: Path) -> None:
    """The README picture: the example graph, a search, a selected node with its facts.
    Japanese glyphs need a CJK font (Debian: fonts-noto-cjk)."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="trike-ui-shot-") as tmp:
        page_path = to_html(TrikeDB(graph), Path(tmp) / "page.html", title="Data platform (example)")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 860})
            page.goto(page_path.resolve().as_uri())
            _poll(page, "window.trikeUI && window.trikeUI.ready", 60)
            _poll(page, "trikeUI.layoutStops > 0", 120)
            page.fill("#search", "orders")
            page.wait_for_selector('#results button[data-node="stg_orders"]')
            page.click('#results button[data-node="stg_orders"]')
            page.wait_for_timeout(800)
            page.click("#fit")
            page.wait_for_timeout(900)
            page.screenshot(path=str(out))
            browser.close()
    print(f"wrote {out}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000", help="triple counts for size and generation time")
    ap.add_argument("--tti", default="1000,10000", help="triple counts for time to interactive in Chromium")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--screenshot", metavar="PNG", help="only write the README screenshot to PNG")
    ap.add_argument("--example", default=str(Path(__file__).resolve().parents[1] / "examples" / "ui_demo.yaml"),
                    help="the graph of the screenshot")
    args = ap.parse_args(argv)
    if args.screenshot:
        screenshot(Path(args.example), Path(args.screenshot))
        return 0
    sizes = [int(x) for x in args.sizes.split(",") if x]
    tti_sizes = [int(x) for x in args.tti.split(",") if x]
    with tempfile.TemporaryDirectory(prefix="trike-ui-bench-") as tmp:
        folder = Path(tmp)
        rows = {n: measure_generation(folder, n, args.repeat) for n in sorted(set(sizes) | set(tti_sizes))}
        tti = measure_tti([(n, rows[n]["page"]) for n in tti_sizes], args.repeat) if tti_sizes else {}
    print(f"trike ui benchmark (median of {args.repeat}; synthetic graph from trike.ui.sample)\n")
    print("| triples | nodes | YAML | page | load YAML | generate page | interactive (Chromium) "
          "| layout settled | SPARQL engine ready |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in sorted(rows):
        if n not in sizes and n not in tti:
            continue
        r = rows[n]
        t = tti.get(n)
        cells = [f"{r['triples']:,}", f"{r['nodes']:,}", f"{r['yaml_bytes'] / 1e6:.1f} MB", f"{r['bytes'] / 1e6:.1f} MB",
                 f"{r['load_s']:.2f} s", f"{r['generate_s']:.2f} s",
                 f"{t['tti_s']:.2f} s" if t else "–", f"{t['settle_s']:.1f} s" if t else "–",
                 f"{t['sparql_s']:.2f} s" if t else "–"]
        print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
