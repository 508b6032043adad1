"""Scale benchmark: file size, load-to-first-answer, memory, unbatched add, SPARQL and query() timings,
against bare pyoxigraph loaded from the same N-Triples (the floor).

    python benchmarks/scale.py                 # 1k, 10k, 100k, 1M
    python benchmarks/scale.py --sizes 1000 10000

Each measurement of trike runs in a fresh process so that load time and peak memory are honest.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

Q1 = "SELECT ?t WHERE { t:job42 t:WRITES ?t }"
Q2 = "SELECT ?t2 WHERE { t:job42 t:WRITES ?t . ?t t:FEEDS ?t2 }"


def generate(n: int, path: Path) -> None:
    """A data-platform-like graph: jobs write tables, tables feed tables, owners, ~30% with attributes."""
    from trike.yamlfile import GraphData, dump

    rnd = random.Random(n)
    n_nodes = max(50, n // 5)
    nodes = {}
    for i in range(n_nodes // 2):
        nodes[f"job{i}"] = {"type": "job", "schedule": rnd.choice(["hourly", "daily", "weekly"]), "retries": i % 5}
    for i in range(n_nodes // 2):
        nodes[f"table{i}"] = {"type": "table", "schema": f"S{i % 40}", "pii": i % 7 == 0}
    triples = []
    seen = set()
    preds = ["WRITES", "FEEDS", "OWNED_BY", "READS"]
    while len(triples) < n:
        p = rnd.choice(preds)
        if p == "WRITES" or p == "READS":
            s, o = f"job{rnd.randrange(n_nodes // 2)}", f"table{rnd.randrange(n_nodes // 2)}"
        elif p == "FEEDS":
            s, o = f"table{rnd.randrange(n_nodes // 2)}", f"table{rnd.randrange(n_nodes // 2)}"
        else:
            s, o = f"table{rnd.randrange(n_nodes // 2)}", f"team{rnd.randrange(60)}"
        if (s, p, o) in seen:
            continue
        seen.add((s, p, o))
        attrs = None
        if rnd.random() < 0.3:
            attrs = {"since": f"2026-{rnd.randrange(1, 13):02d}", "prov": f"memo #{rnd.randrange(5000)}"}
        triples.append((s, p, o, attrs))
    triples.append(("job42", "WRITES", "table1", None))
    triples.append(("table1", "FEEDS", "table2", None))
    path.write_text(dump(GraphData(nodes=nodes, triples=triples)), encoding="utf-8")


CHILD = textwrap.dedent(
    """
    import json, resource, sys, time
    t0 = time.perf_counter()
    from trike import TrikeDB
    db = TrikeDB(sys.argv[1])
    db.sparql("SELECT ?t WHERE { t:job42 t:WRITES ?t } LIMIT 1")
    load = time.perf_counter() - t0
    def timeit(fn, n):
        fn()
        t = time.perf_counter()
        for _ in range(n):
            fn()
        return (time.perf_counter() - t) / n
    q1 = timeit(lambda: db.sparql(%(q1)r), 50)
    q2 = timeit(lambda: db.sparql(%(q2)r), 50)
    qp = timeit(lambda: db.query(["job42 WRITES ?t", "?t FEEDS ?t2"]), 50)
    adds = []
    for i in range(50):
        t = time.perf_counter()
        db.add(f"benchjob{i}", "WRITES", f"table{i}", since="2026-11")
        adds.append(time.perf_counter() - t)
    adds.sort()
    after = timeit(lambda: db.sparql(%(q1)r), 20)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"load": load, "q1": q1, "q2": q2, "query": qp, "add_p50": adds[25],
                      "add_max": adds[-1], "q1_after_add": after, "rss": rss}))
    """
) % {"q1": Q1, "q2": Q2}

FLOOR = textwrap.dedent(
    """
    import json, resource, sys, time
    import pyoxigraph as ox
    t0 = time.perf_counter()
    data = open(sys.argv[1], "rb").read()
    store = ox.Store()
    store.bulk_load(data, ox.RdfFormat.N_TRIPLES)
    P = {"t": "urn:trike:"}
    list(store.query("SELECT ?t WHERE { t:job42 t:WRITES ?t } LIMIT 1", prefixes=P))
    load = time.perf_counter() - t0
    def timeit(q, n):
        list(store.query(q, prefixes=P))
        t = time.perf_counter()
        for _ in range(n):
            [ {v: s[v] for v in ("t", "t2") if v in q} for s in store.query(q, prefixes=P)]
        return (time.perf_counter() - t) / n
    print(json.dumps({"load": load, "q1": timeit(%(q1)r, 50), "q2": timeit(%(q2)r, 50),
                      "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
    """
) % {"q1": Q1, "q2": Q2}


def run(code: str, arg: str, **env: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code, arg], capture_output=True, text=True,
                         cwd=str(HERE.parent), env={**os.environ, "PYTHONPATH": str(HERE.parent), **env})
    if out.returncode:
        raise SystemExit(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="*", default=[1_000, 10_000, 100_000, 1_000_000])
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            path = Path(tmp) / f"g{n}.yaml"
            generate(n, path)
            size = path.stat().st_size
            nt = Path(tmp) / f"g{n}.nt"
            from trike import TrikeDB

            os.environ["TRIKE_CACHE_DIR"] = tmp  # the parent's open fills the parse cache
            nt.write_text(TrikeDB(path).export("nt"), encoding="utf-8")
            r = run(CHILD, str(path), TRIKE_PARSE_CACHE="0")    # cold: the file is parsed
            w = run(CHILD, str(path), TRIKE_CACHE_DIR=tmp)        # warm parse cache (filled above)
            f = run(FLOOR, str(nt))
            r["load_cached"] = w["load"]
            rows.append((n, size, r, f))
    hdr = ("triples", "file MB", "load→1st answer s", "same, parse cache warm s", "oxigraph load s", "peak MB", "B/triple", "ox peak MB",
           "add p50 ms", "add max ms", "1-hop ms", "ox 1-hop ms", "2-hop ms", "ox 2-hop ms", "query() ms")
    print("| " + " | ".join(hdr) + " |")
    print("|" + "---|" * len(hdr))
    for n, size, r, f in rows:
        print("| " + " | ".join([
            f"{n:,}", f"{size / 1e6:.1f}", f"{r['load']:.2f}", f"{r['load_cached']:.2f}", f"{f['load']:.2f}", f"{r['rss'] / 1e6:.0f}",
            f"{r['rss'] / n:.0f}", f"{f['rss'] / 1e6:.0f}", f"{r['add_p50'] * 1e3:.2f}", f"{r['add_max'] * 1e3:.2f}",
            f"{r['q1'] * 1e3:.3f}", f"{f['q1'] * 1e3:.3f}", f"{r['q2'] * 1e3:.3f}", f"{f['q2'] * 1e3:.3f}",
            f"{r['query'] * 1e3:.3f}",
        ]) + " |")


def unbatched_adds(n: int = 28_000) -> None:
    """Adding n facts one by one without batch(): each is one appended, fsync'd line."""
    import time

    from trike import TrikeDB

    with tempfile.TemporaryDirectory() as tmp:
        db = TrikeDB(Path(tmp) / "g.yaml")
        t = time.perf_counter()
        for i in range(n):
            db.add(f"job{i % 500}", "WRITES", f"table{i}", since="2026-11")
        dt = time.perf_counter() - t
        print(f"\n{n:,} unbatched add() calls: {dt:.1f} s ({dt / n * 1e3:.2f} ms each, fsync on every add)")


if __name__ == "__main__":
    main()
    unbatched_adds()
