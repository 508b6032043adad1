"""A synthetic, realistic-looking graph of a data platform (teams, people, jobs, tables, dashboards),
with Japanese and English names, an ontology, provenance, confidence and validity dates.

Used by the UI tests, `benchmarks/ui.py` and the screenshot in the README; deterministic for a seed.

>>> text = synthetic_yaml(1000)        # about 1,000 facts
"""

from __future__ import annotations

import random

ONTOLOGY = """ontology:
  predicates:
    MEMBER_OF: {description: A person belongs to a team, domain: Person, range: Team, functional: true}
    OWNED_BY: {description: The team accountable for an asset, range: Team, functional: true}
    READS: {description: A job reads a table, domain: Job, range: Table}
    WRITES: {description: A job writes a table, domain: Job, range: Table}
    RUNS_ON: {description: The system a job is scheduled on, domain: Job, range: System}
    FEEDS: {description: A table feeds a dashboard, domain: Table, range: Dashboard}
    MAINTAINS: {description: A person maintains an asset, domain: Person}
  classes:
    Team: {description: A group of people}
    Person: {description: Someone who works here}
    Job: {description: A scheduled data job}
    Table: {description: A table in the warehouse}
    Dashboard: {description: A report people read}
    System: {description: A platform jobs run on}
"""

_TEAMS = ["データ基盤", "growth", "finance", "営業企画", "platform", "ml-research", "sre", "marketing"]
_GIVEN = ["太郎", "花子", "健", "さくら", "Alice", "Bob", "Chen", "Dana", "Eve", "Farid", "Grace", "Hiro"]
_FAMILY = ["田中", "佐藤", "鈴木", "高橋", "Smith", "Garcia", "Müller", "Rossi", "Kim", "Nguyen"]
_SYSTEMS = ["airflow", "dbt-cloud", "spark-cluster", "cron-legacy", "kubernetes"]
_DOMAINS = ["crm", "orders", "billing", "events", "users", "inventory", "売上", "顧客", "payments", "web"]
_STAGES = ["raw", "stg", "int", "mart"]
_SOURCES = ["catalog-scan", "lineage-parser", "interview:2024-05", "hr.csv", "dbt-manifest"]


def _q(name: str) -> str:
    """A YAML flow scalar for a name (always quoted: names may contain any character)."""
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def synthetic_yaml(triples: int, seed: int = 7) -> str:
    """A graph file with about ``triples`` facts (at least ~30)."""
    rnd = random.Random(seed)
    scale = max(1, triples // 30)
    teams = [f"{t}" if i < len(_TEAMS) else f"{_TEAMS[i % len(_TEAMS)]}-{i // len(_TEAMS)}"
             for i, t in enumerate(_TEAMS * (1 + scale // 40))][: max(3, min(len(_TEAMS) + scale // 40, 400))]
    people = []
    for i in range(max(4, scale * 2)):
        base = rnd.choice(_FAMILY) + rnd.choice(_GIVEN)
        people.append(base if i < 40 else f"{base}{i}")
    people = list(dict.fromkeys(people))
    systems = _SYSTEMS[: max(2, min(len(_SYSTEMS), scale))]
    tables, jobs, dashboards = [], [], []
    for i in range(max(6, scale * 4)):
        d = _DOMAINS[i % len(_DOMAINS)]
        st = _STAGES[(i // len(_DOMAINS)) % len(_STAGES)]
        tables.append(f"{st}_{d}" + (f"_{i}" if i >= len(_DOMAINS) * len(_STAGES) else ""))
    for i in range(max(4, scale * 3)):
        jobs.append(f"{_DOMAINS[i % len(_DOMAINS)]}-sync-{i}")
    for i in range(max(2, scale)):
        dashboards.append(f"{_DOMAINS[i % len(_DOMAINS)]} dashboard {i}" if i >= 3 else f"{_DOMAINS[i]} KPI")

    lines = [ONTOLOGY, "nodes:\n"]
    for t in teams:
        lines.append(f"  {_q(t)}: {{type: Team}}\n")
    for p in people:
        lines.append(f"  {_q(p)}: {{type: Person, email: {_q(p.lower() + '@example.com')}}}\n")
    for s in systems:
        lines.append(f"  {_q(s)}: {{type: System}}\n")
    for t in tables:
        lines.append(f"  {_q(t)}: {{type: Table, rows: {rnd.randint(10, 10_000_000)}}}\n")
    for j in jobs:
        lines.append(f"  {_q(j)}: {{type: Job, schedule: {rnd.choice(['hourly', 'daily', 'weekly'])}}}\n")
    for d in dashboards:
        lines.append(f"  {_q(d)}: {{type: Dashboard}}\n")

    facts: dict[tuple[str, str, str], str] = {}

    def add(s: str, p: str, o: str, attrs: str = "") -> None:
        if (s, p, o) not in facts:
            facts[(s, p, o)] = attrs

    def prov() -> str:
        a = f", prov: {_q(rnd.choice(_SOURCES))}"
        if rnd.random() < 0.3:
            a += f", confidence: {rnd.choice([0.6, 0.75, 0.9, 0.95])}"
        return a

    for p in people:
        add(p, "MEMBER_OF", rnd.choice(teams), f", prov: hr.csv, valid_from: 20{rnd.randint(15, 24)}-0{rnd.randint(1, 9)}-01")
    for j in jobs:
        add(j, "OWNED_BY", rnd.choice(teams), prov())
        add(j, "RUNS_ON", rnd.choice(systems))
        for _ in range(rnd.randint(1, 3)):
            add(j, "READS", rnd.choice(tables), prov())
        add(j, "WRITES", rnd.choice(tables), prov())
    for t in tables:
        add(t, "OWNED_BY", rnd.choice(teams), prov())
        if rnd.random() < 0.5:
            add(t, "FEEDS", rnd.choice(dashboards), prov())
    for d in dashboards:
        add(d, "OWNED_BY", rnd.choice(teams))
    assets = jobs + tables + dashboards
    while len(facts) < triples:
        who = rnd.choice(people)
        what = rnd.choice(assets)
        if rnd.random() < 0.15:
            add(who, "MAINTAINS", what, f", valid_from: 2019-01-01, valid_to: 2022-12-31{prov()}")
        else:
            add(who, "MAINTAINS", what, prov())
        if len(facts) >= triples * 4:  # tiny requests: the fixed structure is already enough
            break
    lines.append("triples:\n")
    for (s, p, o), a in facts.items():
        lines.append(f"- {{s: {_q(s)}, p: {p}, o: {_q(o)}{a}}}\n")
    return "".join(lines)
