"""Shared fixtures. Tests never touch the network; caches go to a temporary folder."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    cache = tmp_path_factory.getbasetemp() / "trike-cache"
    monkeypatch.setenv("TRIKE_CACHE_DIR", str(cache))
    yield


PIPELINE = """\
ontology:
  predicates:
    PROVIDES: "SaaS vendor -> ingestion job"
    INGESTS_TO: {description: "job -> table", domain: job, range: table}
    OWNED_BY: {description: "asset -> team", functional: true}
    MIGRATED_TO: "old table -> new table"
    担当: "担当者"
nodes:
  crm-sync-job: {type: job, schedule: hourly}
  RAW_CRM_CONTACTS: {type: table, schema: ACME_RAW, pii: true}
triples:
- {s: salesflow-crm, p: PROVIDES, o: crm-sync-job}
- {s: crm-sync-job, p: INGESTS_TO, o: RAW_CRM_CONTACTS, schedule: hourly}
- {s: LEGACY_DUMP, p: MIGRATED_TO, o: RAW_CRM_CONTACTS, deprecated: true, since: 2026-04, prov: 'memo #1284'}
"""


@pytest.fixture
def pipeline_file(tmp_path) -> Path:
    p = tmp_path / "graph.yaml"
    p.write_text(PIPELINE, encoding="utf-8")
    return p
