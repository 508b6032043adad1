"""The MCP tools import_source, history and ask, end to end on the real implementations."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from trike import TrikeDB

ROOT = Path(__file__).resolve().parent.parent
DEFECTS = ROOT / "examples" / "defects"

@pytest.fixture(autouse=True)
def _lexical_search(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIKE_EMBED_MODEL", "none")

def _call(server: Any, tool: str, args: dict) -> dict:
    from mcp import Client

    async def go() -> Any:
        async with Client(server) as client:
            return await client.call_tool(tool, args)

    res = anyio.run(go)
    assert not res.is_error, res.content[0].text
    return json.loads(res.content[0].text)

def test_import_preview_import_history_ask(tmp_path: Path) -> None:
    from trike.mcp_server import build_server

    folder = tmp_path / "kg"
    folder.mkdir()
    shutil.copy(DEFECTS / "graph.yaml", folder / "graph.yaml")
    shutil.copy(DEFECTS / "reports.jsonl", folder / "reports.jsonl")
    shutil.copy(DEFECTS / "mapping.yaml", folder / "mapping.yaml")
    db = TrikeDB(folder / "graph.yaml")
    server = build_server(db)
    preview = _call(server, "import_source", {"path": "reports.jsonl", "mapping": "mapping.yaml", "dry_run": True})
    assert preview["dry_run"] is True and preview["counts"]["update"] == 3 and len(db) == 0
    done = _call(server, "import_source", {"path": "reports.jsonl", "mapping": "mapping.yaml"})
    assert done["written"] is True and len(db) == 58
    hist = _call(server, "history", {"subject": "ProductA", "predicate": "baud_rate"})
    assert [r["o"] for r in hist["results"]] == [19200, 9600]
    ans = _call(server, "ask", {"question": "2024年5月時点のProductAの通信速度は?"})
    assert [f["o"] for f in ans["answer"]["facts"]] == [19200] and "DR-0001" in ans["sources"]
    none = _call(server, "ask", {"question": "ProductGの通信速度は?"})
    assert none["not_in_graph"] is True and none["context"] == ""
