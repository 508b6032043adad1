"""Compiled knowledge (trike) vs chunk retrieval (TF-IDF) on Japanese defect reports.

    python benchmarks/compile_vs_rag.py                 # sizes 10, 20, 30, 3000
    python benchmarks/compile_vs_rag.py --sizes 30 300  # other sizes
    python benchmarks/compile_vs_rag.py --save          # also write benchmarks/data/docs_results_compile_vs_rag.json

Corpus: the 30 hand-written reports of examples/defects/reports.jsonl (six products; ProductA's
communication speed changes from 19200bps to 9600bps on 2024-09-02, ProductC's firmware goes
1.2 -> 1.3 -> 2.0; parts and settings repeat across reports). Sizes up to 30 take the first N
reports; larger sizes add generated reports (seeded; other models and parts of the same six
products, with overlapping vocabulary, so the answers of the 20 questions do not change).

Questions: benchmarks/data/docs_defect_questions.yaml. A question is asked at a size only when all of
its answer reports are in the corpus.

- trike: `import_source` with examples/defects/mapping.yaml, then `ask(question, budget_tokens=2000)`.
  Hit: the answer's report id appears in the returned context (as a report node or as a cited source).
- baseline: every report rendered as text, cut into chunks of at most 250 characters on line
  boundaries; TF-IDF over character 2-3-grams (scikit-learn); the top 5 chunks by cosine similarity.
  Hit: a returned chunk comes from the answer's report.
- exact (trike only): the direct answer's value equals the expected value (temporal, history, lookup).
- lookup: `db.match(s, p)` and `db.match(s, p, as_of=...)` by entity, microseconds per call.
Search runs lexically (TRIKE_EMBED_MODEL=none) unless --model is given, so runs are reproducible offline.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import timeit
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DEFECTS = ROOT / "examples" / "defects"
QUESTIONS = ROOT / "benchmarks" / "data" / "docs_defect_questions.yaml"
KINDS = ("lookup", "temporal", "history", "multi_report", "free_text")

# ------------------------------------------------------------------------------------------ generated reports
_PREFIX = {"ProductA": "PA", "ProductB": "TB", "ProductC": "MC", "ProductD": "PD", "ProductE": "SE", "ProductF": "DF"}
_PARTS = ["C", "R", "U", "Q", "F", "L", "CN"]
_CATEGORIES = {
    "power": (
        ["{model}の電源投入時に突入電流が大きく、上位のブレーカが落ちる。", "{model}の出力電圧が低温環境で不安定になる。",
         "{model}が高負荷時に突然停止する。", "{model}の電源ランプが点滅したまま起動しない。"],
        ["電源回路の{part}の定格が不足していた。", "{part}のはんだ付けにクラックがあった。",
         "{part}のロット不良で内部抵抗が大きかった。", "保護回路の{part}の閾値設定が低すぎた。"],
        ["{part}を定格の大きい品種に変更した。", "{part}を交換し、はんだ付け条件を見直した。",
         "保護回路の閾値を変更した。", "不良ロットの{part}を全数交換した。"],
        ["電源回路のディレーティング基準を見直す。", "受入検査の項目を追加する。", "設計レビューで定格を確認する。"],
    ),
    "communication": (
        ["{model}で上位機器との通信が断続的に途切れる。", "{model}の通信ポートが応答しなくなる。",
         "{model}で通信エラーのログが大量に記録される。", "{model}の無線接続が一定時間で切断される。"],
        ["通信ICの{part}周辺の配線パターンがノイズを拾っていた。", "コネクタ{part}の接触不良があった。",
         "通信処理のバッファがあふれていた。", "アンテナ整合回路の{part}の定数がずれていた。"],
        ["配線パターンを変更し、{part}の近くにフィルタを追加した。", "{part}をロック付きの品種に変更した。",
         "バッファサイズを拡張した。", "{part}の定数を調整した。"],
        ["ノイズ試験の条件を強化する。", "通信負荷試験を追加する。", "組立時の嵌合確認を徹底する。"],
    ),
    "sensor": (
        ["{model}の測定値が実際より高くずれる。", "{model}で測定値が時々ゼロになる。",
         "{model}の温度表示が周囲温度に追従しない。", "{model}の校正値が短期間でずれる。"],
        ["基準電圧の{part}の温度特性が悪かった。", "センサ配線の{part}が断線しかけていた。",
         "校正データの保存処理に誤りがあった。", "{part}の経年劣化で特性が変化していた。"],
        ["{part}を高精度品に変更し再校正した。", "{part}の配線を補強した。", "校正データの保存処理を修正した。",
         "{part}を交換した。"],
        ["校正手順を見直す。", "出荷前の精度検査を追加する。", "長期安定性試験を実施する。"],
    ),
    "display": (
        ["{model}の画面が起動時に乱れる。", "{model}の表示が暗くなる。", "{model}のタッチ位置がずれる。",
         "{model}の画面に縦線が表示される。"],
        ["表示ICの{part}の初期化タイミングがずれていた。", "バックライト回路の{part}が過熱していた。",
         "タッチパネルの補正値が初期化されていた。", "フレキシブルケーブルの{part}が断線していた。"],
        ["初期化処理の待ち時間を延長した。", "{part}に放熱対策を追加した。", "補正値の保存処理を修正した。",
         "{part}を交換し、ケーブルの固定方法を変更した。"],
        ["表示の起動試験を追加する。", "熱設計の確認を行う。", "組立手順書を改訂する。"],
    ),
    "environment": (
        ["屋外に設置した{model}で、雨天後に誤動作する。", "{model}の内部に結露が発生し、端子が腐食した。",
         "{model}が夏季の高温で停止する。", "寒冷地で{model}の起動に時間がかかる。"],
        ["筐体のシール材が劣化していた。", "通気設計が不十分で、{part}の周辺に水分がたまった。",
         "放熱設計が不足し、{part}が高温になっていた。", "低温で{part}の特性が変化していた。"],
        ["シール材を耐候性の高い品種に変更した。", "{part}に防湿コーティングを施した。", "放熱板を追加した。",
         "低温対応の{part}に変更した。"],
        ["環境試験の条件を見直す。", "設置ガイドに注意事項を追加する。", "耐候性試験を追加する。"],
    ),
    "mechanical": (
        ["{model}のモーターから異音がする。", "{model}の筐体のねじが緩む。", "{model}の冷却ファンが停止する。",
         "{model}の可動部が引っかかる。"],
        ["軸受の潤滑剤が不足していた。", "締結トルクが不足していた。", "ファン制御の{part}が故障していた。",
         "部品寸法のばらつきが大きかった。"],
        ["潤滑剤の量を見直した。", "締結トルクを変更した。", "{part}を交換した。", "部品の寸法公差を見直した。"],
        ["振動試験を追加する。", "組立時のトルク管理を徹底する。", "寿命試験を実施する。"],
    ),
}


def generated_reports(n: int, seed: int = 7) -> list[dict]:
    """`n` synthetic reports: the six products, other models (PA-301, ...) and parts (C100-CN999)."""
    rng = random.Random(seed)
    start = dt.date(2023, 1, 1)
    span = (dt.date(2025, 6, 30) - start).days
    out = []
    for i in range(n):
        product = rng.choice(sorted(_PREFIX))
        model = f"{_PREFIX[product]}-{301 + rng.randrange(40)}"
        part = f"{rng.choice(_PARTS)}{rng.randrange(100, 1000)}"
        symptoms, causes, actions, preventions = _CATEGORIES[rng.choice(sorted(_CATEGORIES))]
        k = rng.randrange(len(causes))
        out.append({
            "report_id": f"DR-{1001 + i:04d}",
            "date": (start + dt.timedelta(days=rng.randrange(span))).isoformat(),
            "product": product,
            "model": model,
            "description": rng.choice(symptoms).format(model=model, part=part),
            "cause": causes[k].format(model=model, part=part),
            "action": actions[k].format(model=model, part=part),
            "prevention": rng.choice(preventions),
        })
    return out


def corpus(size: int) -> list[dict]:
    real = [json.loads(line) for line in (DEFECTS / "reports.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()]
    if size <= len(real):
        return real[:size]
    return real + generated_reports(size - len(real))


# ------------------------------------------------------------------------------------------ the baseline
_LABELS = (("description", "内容"), ("cause", "原因"), ("action", "対策"), ("prevention", "再発防止"))


def report_text(r: dict) -> str:
    head = f"不具合報告 {r['report_id']} 日付: {r['date']} 製品: {r['product']} 型式: {r['model']}"
    return "\n".join([head] + [f"{label}: {r[k]}" for k, label in _LABELS if r.get(k)])


def chunks_of(text: str, size: int = 250) -> list[str]:
    out: list[str] = []
    cur = ""
    for line in text.split("\n"):
        while len(line) > size:
            if cur:
                out.append(cur)
                cur = ""
            out.append(line[:size])
            line = line[size:]
        if cur and len(cur) + 1 + len(line) > size:
            out.append(cur)
            cur = line
        else:
            cur = f"{cur}\n{line}" if cur else line
    if cur:
        out.append(cur)
    return out


class TfidfRAG:
    def __init__(self, reports: list[dict], k: int = 5):
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.k = k
        self.chunks: list[str] = []
        self.owner: list[str] = []
        for r in reports:
            for c in chunks_of(report_text(r)):
                self.chunks.append(c)
                self.owner.append(r["report_id"])
        self.vec = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 3), sublinear_tf=True)
        self.matrix = self.vec.fit_transform(self.chunks)

    def retrieve(self, question: str) -> list[int]:
        import numpy as np

        q = self.vec.transform([question])
        sims = (self.matrix @ q.T).toarray().ravel()
        k = min(self.k, len(sims))
        top = np.argpartition(-sims, k - 1)[:k]
        return [int(i) for i in top[np.argsort(-sims[top])]]


# ------------------------------------------------------------------------------------------ measuring
def load_questions() -> list[dict]:
    import yaml

    return yaml.safe_load(QUESTIONS.read_text(encoding="utf-8"))["questions"]


def hit(found: set[str], q: dict) -> bool:
    want = set(q["reports"])
    return bool(found & want) if q["need"] == "any" else want <= found


def exact(res: dict, q: dict) -> bool | None:
    """Does trike's direct answer give exactly the expected value(s)? None when the question has none."""
    ans = res.get("answer")
    if not any(k in q for k in ("value", "values", "change_date")):
        return None
    if not ans:
        return False
    ents = set(res.get("entities") or [])
    values = [f["o"] if f["s"] in ents else f["s"] for f in ans.get("facts") or []]
    if "value" in q:
        return values == [q["value"]]
    if "values" in q:
        return values == q["values"]
    return [str(c["date"]) for c in ans.get("changes") or []] == [q["change_date"]]


def build_trike(reports: list[dict], workdir: Path):
    from trike import TrikeDB

    src = workdir / "reports.jsonl"
    src.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in reports), encoding="utf-8")
    graph = workdir / "graph.yaml"
    shutil.copy(DEFECTS / "graph.yaml", graph)
    db = TrikeDB(graph)
    rep = db.import_source(src, mapping=DEFECTS / "mapping.yaml")
    if not rep["ok"]:
        raise SystemExit(f"import failed: {rep['counts']}")
    return db, rep


def memory_of(fn) -> tuple[object, int]:
    """The object `fn` builds and the memory it keeps (tracemalloc, after a collection)."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    obj = fn()
    gc.collect()
    kept = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return obj, kept


def run_size(size: int, questions: list[dict], workroot: Path) -> dict:
    from trike.ask import estimate_tokens

    reports = corpus(size)
    ids = {r["report_id"] for r in reports}
    qs = [q for q in questions if set(q["reports"]) <= ids]
    work = workroot / f"n{size}"
    work.mkdir()

    # ---- trike: build (import) + index warm-up, timed; memory in a separate run
    t0 = time.perf_counter()
    db, rep = build_trike(reports, work)
    t_import = time.perf_counter() - t0
    t0 = time.perf_counter()
    db.ask("ProductAの通信速度は?")  # builds ask's index
    db.ask("通信が途切れる不具合の対策は?")  # and search's (the slow path widens with db.search)
    t_index = time.perf_counter() - t0
    (mem_dir := workroot / f"mem{size}").mkdir()
    gc.collect()
    tracemalloc.start()
    m0 = tracemalloc.get_traced_memory()[0]
    mdb, _ = build_trike(reports, mem_dir)
    gc.collect()
    m1 = tracemalloc.get_traced_memory()[0]
    mdb.ask("ProductAの通信速度は?")
    gc.collect()
    m2 = tracemalloc.get_traced_memory()[0]
    mdb.ask("通信が途切れる不具合の対策は?")
    gc.collect()
    m3 = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    trike_mem = {"graph": m1 - m0, "ask_index": m2 - m1, "search_index": m3 - m2}
    del mdb

    # ---- baseline
    t0 = time.perf_counter()
    rag = TfidfRAG(reports)
    t_rag = time.perf_counter() - t0
    _obj, rag_mem = memory_of(lambda: TfidfRAG(reports))
    del _obj

    rows = []
    for q in qs:
        t0 = time.perf_counter()
        res = db.ask(q["q"], budget_tokens=2000)
        t_ask = time.perf_counter() - t0
        found = {i for i in ids if i in res["context"]} if res["context"] else set()
        t0 = time.perf_counter()
        top = rag.retrieve(q["q"])
        t_rag_q = time.perf_counter() - t0
        rag_found = {rag.owner[i] for i in top}
        rag_ctx = "\n".join(rag.chunks[i] for i in top)
        rows.append({
            "id": q["id"], "kind": q["kind"], "trike_hit": hit(found, q), "rag_hit": hit(rag_found, q),
            "exact": exact(res, q), "direct": res["answer"] is not None,
            "trike_ms": t_ask * 1000, "rag_ms": t_rag_q * 1000,
            "trike_tokens": res["tokens"], "rag_tokens": estimate_tokens(rag_ctx),
        })

    n_lookup = 2000
    t_match = timeit.timeit(lambda: db.match("ProductA", "baud_rate"), number=n_lookup) / n_lookup
    t_asof = timeit.timeit(lambda: db.match("ProductA", "baud_rate", as_of="2024-05-01"), number=n_lookup) / n_lookup
    t_hist = timeit.timeit(lambda: db.history("ProductA", "baud_rate"), number=200) / 200
    size_bytes = (work / "graph.yaml").stat().st_size
    return {
        "size": size, "questions": len(qs), "facts": len(db), "file_bytes": size_bytes,
        "chunks": len(rag.chunks), "import_s": t_import, "index_s": t_index, "rag_build_s": t_rag,
        "trike_mem": trike_mem, "rag_mem": rag_mem,
        "match_us": t_match * 1e6, "match_asof_us": t_asof * 1e6, "history_us": t_hist * 1e6,
        "rows": rows, "import_counts": rep["counts"],
    }


def _mib(parts: dict) -> str:
    total = sum(parts.values())
    return f"{total / 2**20:.1f} MiB = " + " + ".join(f"{v / 2**20:.1f}" for v in parts.values())


def _pct(rows: list[dict], key: str) -> str:
    if not rows:
        return "-"
    good = sum(1 for r in rows if r[key])
    return f"{good}/{len(rows)}"


def print_report(results: list[dict]) -> None:
    print("\n## Build, memory, latency\n")
    print("| reports | facts | graph file | trike import | ask+search index build | trike memory: graph + ask index "
          "+ search index | TF-IDF chunks | TF-IDF build | TF-IDF memory | ask median | ask p95 | TF-IDF query median |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        ask_ms = sorted(x["trike_ms"] for x in r["rows"]) or [0.0]
        rag_ms = sorted(x["rag_ms"] for x in r["rows"]) or [0.0]
        p95 = ask_ms[min(len(ask_ms) - 1, int(0.95 * len(ask_ms)))]
        print(f"| {r['size']} | {r['facts']} | {r['file_bytes'] / 1024:.0f} KiB | {r['import_s']:.2f} s "
              f"| {r['index_s']:.2f} s | {_mib(r['trike_mem'])} | {r['chunks']} | {r['rag_build_s']:.2f} s "
              f"| {r['rag_mem'] / 2**20:.1f} MiB | {statistics.median(ask_ms):.1f} ms | {p95:.1f} ms "
              f"| {statistics.median(rag_ms):.2f} ms |")
    print("\n## Lookup by entity (db.match, db.history)\n")
    print("| reports | match(s, p) | match(s, p, as_of) | history(s, p) |")
    print("|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['size']} | {r['match_us']:.1f} µs | {r['match_asof_us']:.1f} µs | {r['history_us']:.1f} µs |")
    print("\n## Hit rate (answer's report in the returned context) by question kind: trike / TF-IDF top-5\n")
    print("| reports | questions | " + " | ".join(KINDS) + " | all | exact answers (trike) | direct answers "
          "| context tokens trike / TF-IDF |")
    print("|---:|---:|" + "---|" * (len(KINDS) + 4))
    for r in results:
        cells = []
        for k in KINDS:
            rows = [x for x in r["rows"] if x["kind"] == k]
            cells.append(f"{_pct(rows, 'trike_hit')} / {_pct(rows, 'rag_hit')}" if rows else "-")
        ex = [x for x in r["rows"] if x["exact"] is not None]
        tt = statistics.mean(x["trike_tokens"] for x in r["rows"]) if r["rows"] else 0
        rt = statistics.mean(x["rag_tokens"] for x in r["rows"]) if r["rows"] else 0
        print(f"| {r['size']} | {r['questions']} | " + " | ".join(cells)
              + f" | {_pct(r['rows'], 'trike_hit')} / {_pct(r['rows'], 'rag_hit')} | {_pct(ex, 'exact')} "
              f"| {_pct(r['rows'], 'direct')} | {tt:.0f} / {rt:.0f} |")
    misses = [(r["size"], x["id"]) for r in results for x in r["rows"] if not x["trike_hit"]]
    rag_misses = [(r["size"], x["id"]) for r in results for x in r["rows"] if not x["rag_hit"]]
    print(f"\ntrike misses: {misses or 'none'}\nTF-IDF misses: {rag_misses or 'none'}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 20, 30, 3000])
    ap.add_argument("--model", help="embedding model for db.search (default: none, lexical only)")
    ap.add_argument("--save", action="store_true", help="write benchmarks/data/docs_results_compile_vs_rag.json")
    args = ap.parse_args(argv)
    os.environ["TRIKE_EMBED_MODEL"] = args.model or "none"
    questions = load_questions()
    TfidfRAG(corpus(3))  # import scikit-learn before timing anything
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            t0 = time.perf_counter()
            results.append(run_size(size, questions, Path(tmp)))
            print(f"size {size}: done in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    print_report(results)
    if args.save:
        out = ROOT / "benchmarks" / "data" / "docs_results_compile_vs_rag.json"
        out.write_text(json.dumps(results, ensure_ascii=False, indent=1, default=str) + "\n", encoding="utf-8")
        print(f"\nwrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
