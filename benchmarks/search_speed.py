"""Search speed at scale: a generated graph of ~30k sentences (facts + described nodes, English and
Japanese), cold index build, warm reopen, query latency.

    python benchmarks/search_speed.py                 # 30k sentences, the distilled benchmark model
    python benchmarks/search_speed.py --n 5000        # smaller
    python benchmarks/search_speed.py --model none    # lexical only

cold build: the first search on a graph whose sentence vectors are not cached yet (model already loaded);
warm reopen: a new process opens the same file and builds its index, the vectors read from the disk
cache (the graph file's own loading and the model load are reported apart); query: p50 / p95 over mixed English / Japanese queries.
The model is the one search_quality.py distils (see there), loaded once per process (time reported).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

PREDICATES = {
    "OWNED_BY": "the team accountable for a job, table or dashboard",
    "MAINTAINED_BY": "the engineer who looks after it day to day",
    "READS_FROM": "the job takes its input from this table",
    "WRITES_TO": "the job stores its output in this table",
    "RUNS_ON": "the orchestrator or engine that executes the job",
    "SCHEDULE": "when the job runs",
    "DEPENDS_ON": "the job waits for this other job to finish first",
    "FEEDS": "the dashboard is built from this table",
    "HAS_COLUMN": "a column of the table",
    "RETENTION": "how long the data is kept",
    "ALERTS_TO": "where failure notifications are sent",
    "MONTHLY_COST": "what it costs per month",
}
DOMAINS = ("sales orders customers invoices payments shipments inventory products stores campaigns "
           "clicks sessions tickets refunds suppliers warehouses employees payroll budgets forecasts").split()
JA_DOMAINS = "売上 注文 顧客 請求 支払 出荷 在庫 商品 店舗 広告 会員 返品 仕入 倉庫 社員 給与 予算 予測".split()
VERBS = "load sync copy aggregate clean enrich export score dedupe validate".split()
ENGINES = ["airflow", "dbt", "spark", "kafka", "fivetran", "dagster"]
SCHEDULES = ["every hour", "every 15 minutes", "daily at 02:00", "every night", "weekly on Monday",
             "毎日 午前3時", "毎週月曜日", "平日 午後5時"]


def generate(n_sentences: int, seed: int = 1) -> tuple[dict, dict, list]:
    """Ontology, nodes and facts adding up to about `n_sentences` sentences."""
    rng = random.Random(seed)
    ontology = {"predicates": {p: {"description": d} for p, d in PREDICATES.items()}}
    nodes: dict[str, dict] = {}
    facts: list[tuple] = []
    n_teams, n_people = 40, 300
    teams = [f"team-{i:03d}" for i in range(n_teams)]
    people = [f"person-{i:04d}" for i in range(n_people)]
    for t in teams:
        nodes[t] = {"type": "Team", "label": f"{rng.choice(DOMAINS)} {rng.choice(DOMAINS)} team"}
    for p in people:
        nodes[p] = {"type": "Person", "role": rng.choice(["data engineer", "analyst", "manager", "scientist"])}
    tables, jobs = [], []
    i = 0
    while len(facts) + len(nodes) < n_sentences:
        i += 1
        if rng.random() < 0.3:
            name = f"{rng.choice(JA_DOMAINS)}{rng.choice(['テーブル', 'マスタ', '明細'])}{i}"
            props = {"type": "Table", "label_en": f"{rng.choice(DOMAINS)} table {i}",
                     "説明": f"{rng.choice(JA_DOMAINS)}と{rng.choice(JA_DOMAINS)}の日次データ"}
        else:
            name = f"{rng.choice(DOMAINS)}_{rng.choice(DOMAINS)}_{i}"
            props = {"type": "Table", "description": f"{rng.choice(DOMAINS)} by {rng.choice(DOMAINS)}"}
        nodes[name] = props
        tables.append(name)
        facts.append((name, "OWNED_BY", rng.choice(teams), None))
        facts.append((name, "RETENTION", f"{rng.randint(1, 36)} months", None))
        for _ in range(rng.randint(1, 4)):
            facts.append((name, "HAS_COLUMN", f"{rng.choice(DOMAINS)}_{rng.choice(['id', 'date', 'amount'])}",
                          None))
        if rng.random() < 0.2:
            facts.append((name, "FEEDS", f"dashboard-{rng.randint(1, 400)}", None))
        job = f"{rng.choice(VERBS)}-{rng.choice(DOMAINS)}-{i}"
        jobs.append(job)
        nodes[job] = {"type": "Job", "description": f"{rng.choice(VERBS)}s {rng.choice(DOMAINS)} into {name}"}
        facts.append((job, "WRITES_TO", name, {"prov": f"catalog scan {rng.randint(1, 99)}"}))
        if len(tables) > 1:
            facts.append((job, "READS_FROM", rng.choice(tables[:-1]), None))
        facts.append((job, "RUNS_ON", rng.choice(ENGINES), None))
        facts.append((job, "SCHEDULE", rng.choice(SCHEDULES), None))
        facts.append((job, "MAINTAINED_BY", rng.choice(people), None))
        if len(jobs) > 1 and rng.random() < 0.5:
            facts.append((job, "DEPENDS_ON", rng.choice(jobs[:-1]), None))
        if rng.random() < 0.3:
            facts.append((job, "ALERTS_TO", rng.choice(["#data-alerts", "pagerduty", "#analytics"]), None))
        if rng.random() < 0.2:
            facts.append((job, "MONTHLY_COST", f"{rng.randint(10, 5000)} USD", None))
    unique: dict[tuple, tuple] = {}
    for f in facts:
        unique.setdefault(f[:3], f)
    return ontology, nodes, list(unique.values())


def write_graph(path: Path, n: int) -> tuple[int, int]:
    from trike import yamlfile

    ontology, nodes, facts = generate(n)
    data = yamlfile.GraphData(ontology=ontology, nodes=nodes, triples=facts)
    path.write_text(yamlfile.dump(data), encoding="utf-8")
    return len(facts), len(nodes)


QUERIES = [
    "who maintains the sales orders sync", "which jobs run on spark", "tables with payroll data",
    "how long are invoices kept", "what feeds dashboard 12", "where do failure alerts go",
    "monthly cost of the inventory export", "customer refunds table owner", "jobs that depend on payments",
    "売上テーブルの所有者", "在庫データを取り込むジョブ", "毎日 午前3時に動くジョブ", "顧客マスタの列",
    "weather in Tokyo tomorrow", "campaign clicks by session", "who owns the warehouse shipments table",
]


def reopen_child(path: str, model: str) -> None:
    """Child process of the warm-reopen measurement: open the graph, build its index, print timings."""
    from trike import TrikeDB
    from trike.search import index_stats
    from trike.search.embed import get_embedder

    get_embedder(model)  # the model load is measured apart
    t = time.perf_counter()
    db = TrikeDB(path)
    t_open = time.perf_counter() - t
    t = time.perf_counter()
    stats = index_stats(db, model)
    t_index = time.perf_counter() - t
    print(json.dumps({"open": t_open, "index": t_index, "stats": stats}))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reopen", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, default=30_000, help="sentences (facts + described nodes)")
    ap.add_argument("--model", help="model2vec folder or hub id (default: the distilled benchmark model)")
    ap.add_argument("--queries", type=int, default=300)
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.reopen:
        reopen_child(args.reopen, args.model)
        return 0
    if args.model is None:
        from search_quality import ensure_bench_model

        args.model = str(ensure_bench_model())
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["TRIKE_CACHE_DIR"] = str(Path(tmp) / "cache")  # a cold vector cache
        from trike import TrikeDB
        from trike.search import _states, index_stats, search
        from trike.search.embed import get_embedder

        path = Path(tmp) / "big.yaml"
        nfacts, nnodes = write_graph(path, args.n)
        t = time.perf_counter()
        embedder, note = get_embedder(args.model)
        t_model = time.perf_counter() - t

        t = time.perf_counter()
        db = TrikeDB(path)
        t_open = time.perf_counter() - t
        t = time.perf_counter()
        stats = index_stats(db, args.model)
        t_cold = time.perf_counter() - t

        # warm reopen in a new process: nothing in memory, the vectors in the disk cache
        child = subprocess.run(
            [sys.executable, __file__, "--reopen", str(path), "--model", args.model],
            capture_output=True, text=True, check=True, env=dict(os.environ),
        )
        reopen = json.loads(child.stdout.strip().splitlines()[-1])
        t_open2, t_warm, stats2 = reopen["open"], reopen["index"], reopen["stats"]

        _states.clear()
        db2 = TrikeDB(path)
        index_stats(db2, args.model)

        rng = random.Random(3)
        times, cpu = [], []
        for i in range(args.queries):
            q = QUERIES[i % len(QUERIES)] if i < len(QUERIES) else rng.choice(QUERIES) + f" {rng.choice(DOMAINS)}"
            t, c = time.perf_counter(), time.process_time()
            search(db2, q, k=10, model=args.model)
            times.append(1000 * (time.perf_counter() - t))
            cpu.append(1000 * (time.process_time() - c))
        times.sort()
        cpu.sort()
        p50 = statistics.median(times)
        p95 = times[int(0.95 * (len(times) - 1))]

        db2.add("sales_orders_1", "OWNED_BY", "team-new-owner")
        t = time.perf_counter()
        stats3 = index_stats(db2, args.model)
        t_add = time.perf_counter() - t

    print(f"graph: {nfacts} facts + {nnodes} nodes -> {stats['documents']} sentences, "
          f"{stats['texts']} distinct texts embedded; model {args.model} "
          f"(semantic: {stats['semantic']}{'; ' + note if note else ''})")
    print(f"model load (once per process)      {t_model:8.3f} s")
    print(f"graph file open (TrikeDB)          {t_open:8.3f} s")
    print(f"cold index build                   {t_cold:8.3f} s  (encoded {stats['encoded']} texts; "
          f"sentences {stats['seconds_sentences']} s, lexical {stats['seconds_lexical']} s, "
          f"vectors {stats['seconds_vectors']} s)")
    print(f"warm reopen (index, new process)   {t_warm:8.3f} s  (encoded {stats2['encoded']}, "
          f"from disk {stats2['vectors_from_disk']}; graph file open {t_open2:.3f} s)")
    print(f"refresh after adding one fact      {t_add:8.3f} s  (encoded {stats3['encoded']})")
    print(f"query latency over {len(times)} queries  p50 {p50:6.2f} ms   p95 {p95:6.2f} ms   "
          f"(CPU time p50 {statistics.median(cpu):.2f} ms, p95 {cpu[int(0.95 * (len(cpu) - 1))]:.2f} ms)")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average during the run: {load:.2f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
