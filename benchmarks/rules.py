"""`infer` (OWL 2 RL with owlrl) and `validate` (SHACL with pyshacl) on a generated data-platform graph.

    python benchmarks/rules.py [--facts 10000] [--runs 1] [--rule-share 1.0]

The graph: tables in short DERIVED_FROM chains (transitive), jobs that READ_FROM/WRITE_TO tables,
OWNED_BY teams (OWNS is its inverse), RELATED_TO pairs (symmetric), MAINTAINS (a subproperty of
RESPONSIBLE_FOR), a three-level class hierarchy and a friendly shape set with planted gaps.
`--rule-share` is the share of facts whose predicate takes part in some rule (the rest use predicates
no axiom mentions, which inference skips). Prints a Markdown table of wall-clock seconds (best of runs).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ONTOLOGY = """ontology:
  predicates:
    DERIVED_FROM: {description: table -> table it is computed from, domain: table, range: table, transitive: true}
    READS_FROM: {description: job -> table, domain: job, range: table}
    WRITES_TO: {description: job -> table, domain: job, range: table}
    OWNED_BY: {description: asset -> team, range: team, functional: true}
    OWNS: {description: team -> asset, inverse_of: OWNED_BY}
    RELATED_TO: {description: asset <-> asset, symmetric: true}
    MAINTAINS: {description: person -> asset, subproperty_of: RESPONSIBLE_FOR}
    RESPONSIBLE_FOR: {description: person -> asset}
    MENTIONS: {description: doc -> anything}
  classes:
    raw_table: {subclass_of: table}
    table: {subclass_of: asset}
    job: {subclass_of: asset}
"""

SHAPES = [
    {"every": "asset", "has": "OWNED_BY", "max": 1, "class": "team"},
    {"every": "job", "has": "schedule", "in": ["hourly", "daily"]},
    {"every": "table", "has": "rows", "min": 0, "datatype": "integer"},
]

TURTLE = """
t:JobShape a sh:NodeShape ; sh:targetClass t:job ;
  sh:property [ sh:path t:schedule ; sh:minCount 1 ; sh:in ( "hourly" "daily" ) ] .
t:AssetShape a sh:NodeShape ; sh:targetClass t:asset ;
  sh:property [ sh:path t:OWNED_BY ; sh:minCount 1 ; sh:maxCount 1 ; sh:class t:team ] .
"""


def make_graph(path: Path, n_facts: int, rule_share: float = 1.0) -> int:
    """Write the graph; returns the number of planted shape gaps."""
    nodes: list[str] = []
    triples: list[str] = []
    n_rule = int(n_facts * rule_share)
    gaps = 0
    teams = [f"team-{i}" for i in range(25)]
    for t in teams:
        nodes.append(f"  {t}: {{type: team}}")
    chain = 0
    while len(triples) < n_rule:
        # a chain of 4 tables (3 DERIVED_FROM), a job, an owner for each, one RELATED_TO, one MAINTAINS
        base = f"c{chain}"
        tabs = [f"{base}-t{k}" for k in range(4)]
        for k, tname in enumerate(tabs):
            ttype = "raw_table" if k == 0 else "table"
            nodes.append(f"  {tname}: {{type: {ttype}, rows: {chain * 10 + k}}}")
        job = f"{base}-job"
        if chain % 50 == 7:
            nodes.append(f"  {job}: {{type: job, schedule: weekly}}")  # gap: schedule not allowed
            gaps += 1
        else:
            nodes.append(f"  {job}: {{type: job, schedule: hourly}}")
        batch = [
            f"- {{s: {tabs[1]}, p: DERIVED_FROM, o: {tabs[0]}}}",
            f"- {{s: {tabs[2]}, p: DERIVED_FROM, o: {tabs[1]}}}",
            f"- {{s: {tabs[3]}, p: DERIVED_FROM, o: {tabs[2]}}}",
            f"- {{s: {job}, p: READS_FROM, o: {tabs[2]}}}",
            f"- {{s: {job}, p: WRITES_TO, o: {tabs[3]}}}",
            f"- {{s: {tabs[0]}, p: RELATED_TO, o: c{(chain + 1)}-t0}}",
            f"- {{s: person-{chain % 40}, p: MAINTAINS, o: {tabs[3]}}}",
        ]
        planted = 0
        for k, tname in enumerate(tabs + [job]):
            if chain % 50 == 13 and k == 0:
                planted = 1  # gap: no owner
                continue
            batch.append(f"- {{s: {tname}, p: OWNED_BY, o: {teams[(chain + k) % len(teams)]}}}")
        if len(triples) + len(batch) > n_rule:
            # no room for a whole chain: keep the last table's RELATED_TO pointing at a plain node
            nodes = nodes[:-5]
            gaps -= 1 if chain % 50 == 7 else 0
            break
        gaps += planted
        triples.extend(batch)
        chain += 1
    k = 0
    while len(triples) < n_facts:
        triples.append(f"- {{s: doc-{k}, p: MENTIONS, o: c{k % max(chain, 1)}-t1}}")
        k += 1
    text = ONTOLOGY + "nodes:\n" + "\n".join(nodes) + "\ntriples:\n" + "\n".join(triples) + "\n"
    path.write_text(text, encoding="utf-8")
    return gaps


def best(fn, runs: int) -> tuple[float, object]:
    times = []
    result = None
    for _ in range(runs):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--facts", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--rule-share", type=float, default=1.0)
    args = ap.parse_args()

    from trike import TrikeDB
    from trike.reasoning import stale_inferences

    rows: list[tuple[str, float, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.yaml"
        gaps = make_graph(path, args.facts, args.rule_share)
        t0 = time.perf_counter()
        db = TrikeDB(path)
        rows.append(("load graph", time.perf_counter() - t0, f"{len(db)} facts"))

        sec, res = best(lambda: db.infer(), args.runs)
        rows.append(("infer (dry run)", sec, f"{len(res)} facts follow"))

        def apply_once() -> list:
            shutil_db = TrikeDB(path)
            return shutil_db.infer(apply=True)

        sec, res = best(apply_once, 1)
        rows.append(("infer --apply", sec, f"{len(res)} facts written"))
        db.reload()
        sec, res = best(lambda: db.infer(apply=True), args.runs)
        rows.append(("infer --apply again (no-op)", sec, f"{len(res)} facts written"))
        sec, res = best(lambda: stale_inferences(db), args.runs)
        rows.append(("check --inferred-fresh", sec,
                     f"{len(res['missing'])} missing, {len(res['obsolete'])} obsolete"))
        sec, res = best(lambda: db.validate(SHAPES), args.runs)
        rows.append(("validate (friendly shapes)", sec, f"{len(res)} violations ({gaps} planted)"))
        sec, res = best(lambda: db.validate(TURTLE), args.runs)
        rows.append(("validate (Turtle shapes)", sec, f"{len(res)} violations"))
        total = len(db)

    print(f"graph: {args.facts} facts generated ({total} after inference), rule share {args.rule_share}, "
          f"best of {args.runs}")
    print("| step | seconds | result |")
    print("|---|---:|---|")
    for name, sec, note in rows:
        print(f"| {name} | {sec:.2f} | {note} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
