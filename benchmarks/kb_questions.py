"""`ask` vs plain top-3 chunk retrieval on a Markdown knowledge base.

    python benchmarks/kb_questions.py
    python benchmarks/kb_questions.py --budgets 2000 500 --verbose

Corpus: examples/kb (20 interlinked notes: 6 services, 6 metrics, 6 runbooks, 2 teams), imported with
`import_source` (each note a node, each link a LINKS_TO fact with its section). Questions:
benchmarks/data/docs_kb_questions.yaml (single facts, multi-hop, unanswerable), each listing the notes
the answer needs.

- ask: `db.ask(question, budget_tokens=B)`. A note is in the context when one of its texts (its head
  line or a section) is, or a fact it states (LINKS_TO facts carry the note's path in `prov`).
- baseline: each note's raw text (front matter included) cut into chunks of at most 500 characters on
  paragraph boundaries; TF-IDF over words (scikit-learn); the top 3 chunks by cosine similarity. It never
  abstains.

Reported per question kind: the share of questions whose needed notes are all in the context, the mean
context size in tokens (trike's estimate: one token per four characters of English), and for the
unanswerable questions how many `ask` flagged `not_in_graph` (and how many answerable ones it wrongly
flagged). Search runs lexically (TRIKE_EMBED_MODEL=none) unless --model is given.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
KB = ROOT / "examples" / "kb"
QUESTIONS = ROOT / "benchmarks" / "data" / "docs_kb_questions.yaml"
KINDS = ("single", "multi_hop", "unanswerable")


def chunk_notes(folder: Path, size: int = 500) -> list[tuple[str, str]]:
    """(note, chunk) pairs: paragraphs packed into chunks of at most `size` characters."""
    out = []
    for f in sorted(folder.rglob("*.md")):
        paras = [p.strip() for p in f.read_text(encoding="utf-8").split("\n\n") if p.strip()]
        cur = ""
        for p in paras:
            if cur and len(cur) + 2 + len(p) > size:
                out.append((f.stem, cur))
                cur = p
            else:
                cur = f"{cur}\n\n{p}" if cur else p
        if cur:
            out.append((f.stem, cur))
    return out


class TopK:
    def __init__(self, chunks: list[tuple[str, str]], k: int = 3):
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.k = k
        self.notes = [n for n, _c in chunks]
        self.texts = [c for _n, c in chunks]
        self.vec = TfidfVectorizer(sublinear_tf=True)
        self.matrix = self.vec.fit_transform(self.texts)

    def retrieve(self, q: str) -> list[int]:
        sims = (self.matrix @ self.vec.transform([q]).T).toarray().ravel()
        return sorted(range(len(sims)), key=lambda i: -sims[i])[: self.k]


def notes_in(res: dict, path_to_note: dict[str, str]) -> set[str]:
    found: set[str] = set()
    for e in res["evidence"]:
        if e["kind"] in ("node", "text") and e.get("node"):
            found.add(e["node"])
        prov = e.get("prov")
        for p in prov if isinstance(prov, list) else [prov]:
            if p in path_to_note:
                found.add(path_to_note[p])
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--budgets", type=int, nargs="+", default=[2000, 500])
    ap.add_argument("--model", help="embedding model for db.search (default: none, lexical only)")
    ap.add_argument("--verbose", "-v", action="store_true", help="one line per question")
    ap.add_argument("--save", action="store_true", help="write benchmarks/data/docs_results_kb_questions.json")
    args = ap.parse_args(argv)
    os.environ["TRIKE_EMBED_MODEL"] = args.model or "none"
    import yaml

    from trike import TrikeDB
    from trike.ask import estimate_tokens

    questions = yaml.safe_load(QUESTIONS.read_text(encoding="utf-8"))["questions"]
    with tempfile.TemporaryDirectory() as tmp:
        db = TrikeDB(Path(tmp) / "kb.yaml")
        t0 = time.perf_counter()
        rep = db.import_source(KB)
        t_import = time.perf_counter() - t0
        path_to_note = {p["path"]: n for n, p in db.nodes().items() if p.get("path")}
        TopK(chunk_notes(KB)[:5])  # import scikit-learn before timing
        t0 = time.perf_counter()
        base = TopK(chunk_notes(KB))
        t_base = time.perf_counter() - t0
        db.ask("warm up the index")
        rows = []
        for q in questions:
            need = set(q["needs"])
            row = {"id": q["id"], "kind": q["kind"]}
            for b in args.budgets:
                t0 = time.perf_counter()
                res = db.ask(q["q"], budget_tokens=b)
                row[f"ms_{b}"] = (time.perf_counter() - t0) * 1000
                got = notes_in(res, path_to_note)
                row[f"covered_{b}"] = bool(need) and need <= got
                row[f"tokens_{b}"] = res["tokens"]
                row[f"nig_{b}"] = res["not_in_graph"]
                row[f"missing_{b}"] = sorted(need - got)
            top = base.retrieve(q["q"])
            got = {base.notes[i] for i in top}
            row["covered_base"] = bool(need) and need <= got
            row["tokens_base"] = estimate_tokens("\n\n".join(base.texts[i] for i in top))
            row["missing_base"] = sorted(need - got)
            rows.append(row)
    n_chunks = len(base.texts)
    print(f"knowledge base: {rep.get('files')} notes, "
          f"{rep['counts']['new']} facts, imported in {t_import * 1000:.0f} ms; baseline: {n_chunks} chunks, "
          f"built in {t_base * 1000:.0f} ms\n")
    head = "| kind | questions | " + " | ".join(f"ask({b}) covered | ask({b}) tokens" for b in args.budgets)
    head += " | top-3 covered | top-3 tokens |"
    print(head)
    print("|---|---:|" + "---:|---:|" * len(args.budgets) + "---:|---:|")
    for kind in KINDS:
        rs = [r for r in rows if r["kind"] == kind]
        if not rs:
            continue
        cells = []
        for b in args.budgets:
            if kind == "unanswerable":
                cells.append("-")
            else:
                cells.append(f"{sum(r[f'covered_{b}'] for r in rs)}/{len(rs)}")
            cells.append(f"{statistics.mean(r[f'tokens_{b}'] for r in rs):.0f}")
        base_cov = "-" if kind == "unanswerable" else f"{sum(r['covered_base'] for r in rs)}/{len(rs)}"
        print(f"| {kind} | {len(rs)} | " + " | ".join(cells)
              + f" | {base_cov} | {statistics.mean(r['tokens_base'] for r in rs):.0f} |")
    print()
    for b in args.budgets:
        un = [r for r in rows if r["kind"] == "unanswerable"]
        ans = [r for r in rows if r["kind"] != "unanswerable"]
        flagged = sum(r[f"nig_{b}"] for r in un)
        wrong = sum(r[f"nig_{b}"] for r in ans)
        ms = sorted(r[f"ms_{b}"] for r in rows)
        print(f"ask({b}): not_in_graph on {flagged}/{len(un)} unanswerable questions, wrongly on {wrong}/{len(ans)} "
              f"answerable ones; latency median {statistics.median(ms):.1f} ms, max {ms[-1]:.1f} ms")
    print("top-3 chunks: never abstains (0/4 flagged)")
    if args.verbose:
        print()
        for r in rows:
            b = args.budgets[0]
            if r["kind"] == "unanswerable":
                verdict = "not_in_graph" if r[f"nig_{b}"] else "MISS (answered)"
                print(f"{r['id']} {r['kind']:12} ask: {verdict}  top-3: {r['tokens_base']} tokens of chunks")
                continue
            print(f"{r['id']} {r['kind']:12} ask: {'ok ' if r[f'covered_{b}'] else 'MISS'} "
                  f"{r[f'tokens_{b}']:5} tok missing={r[f'missing_{b}']}  top-3: "
                  f"{'ok ' if r['covered_base'] else 'MISS'} missing={r['missing_base']}")
    if args.save:
        out = ROOT / "benchmarks" / "data" / "docs_results_kb_questions.json"
        out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
        print(f"\nwrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
