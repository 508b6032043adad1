"""`trike mcp` checked by the MCP Inspector CLI (the reference client from the MCP project, in Node).

The Inspector is installed from the npm registry by `.ci/run` (`npm install --no-save
@modelcontextprotocol/inspector` at the repo root). Locally the test is skipped, saying so, when it is
not installed; under CI (CI=true) a missing Inspector is a failure.

The server is described the way a client config does it (`{"mcpServers": {"kg": {"command", "args"}}}`,
the shape the README shows for Claude Desktop, Cursor, ...), passed with `--config/--server`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent

GRAPH = """\
ontology:
  predicates:
    OWNED_BY: {description: "asset -> team that owns it", domain: table, range: team, functional: true}
    DEPENDS_ON: {description: "asset -> asset it reads from"}
nodes:
  orders_db: {type: table}
  data-team: {type: team}
triples:
- {s: orders_db, p: OWNED_BY, o: data-team}
- {s: report, p: DEPENDS_ON, o: orders_db}
"""


def inspector() -> list[str]:
    env = os.environ.get("MCP_INSPECTOR")
    if env:
        return [env]
    for candidate in (ROOT / "node_modules" / ".bin" / "mcp-inspector", shutil.which("mcp-inspector")):
        if candidate and Path(candidate).exists():
            return [str(candidate)]
    reason = ("MCP Inspector not installed: run `npm install --no-save @modelcontextprotocol/inspector` at "
              "the repo root (or set MCP_INSPECTOR to its mcp-inspector binary)")
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture()
def config(tmp_path: Path) -> Path:
    graph = tmp_path / "graph.yaml"
    graph.write_text(GRAPH, encoding="utf-8")
    launcher = tmp_path / "trike_cli.py"
    launcher.write_text("import sys\nfrom trike.cli import main\nsys.exit(main())\n", encoding="utf-8")
    env = {"PYTHONPATH": str(ROOT), "TRIKE_EMBED_MODEL": "none", "TRIKE_CACHE_DIR": str(tmp_path / "cache")}
    servers = {
        "kg": {"command": sys.executable, "args": [str(launcher), "mcp", str(graph)], "env": env},
        "kg-ro": {"command": sys.executable, "args": [str(launcher), "mcp", str(graph), "--read-only"],
                  "env": env},
    }
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


def run_inspector(config: Path, server: str, *args: str) -> Any:
    cmd = [*inspector(), "--cli", "--config", str(config), "--server", server, *args]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL,
                         cwd=config.parent)
    assert res.returncode == 0, f"{cmd}\nstdout: {res.stdout}\nstderr: {res.stderr}"
    return json.loads(res.stdout)


def test_inspector_tools_list(config: Path) -> None:
    out = run_inspector(config, "kg", "--method", "tools/list")
    tools = {t["name"]: t for t in out["tools"]}
    assert set(tools) == {"sparql", "match", "search", "find", "get_node", "related", "ontology", "stats",
                          "history", "ask", "add_triple", "set_node", "remove_triples", "import_source"}
    for name, tool in tools.items():
        assert tool["inputSchema"]["type"] == "object", name
        assert "outputSchema" in tool, name
        assert "Example" in tool["description"], name
    assert tools["sparql"]["inputSchema"]["required"] == ["query"]
    assert tools["related"]["inputSchema"]["properties"]["depth"]["default"] == 1
    assert tools["add_triple"]["annotations"]["readOnlyHint"] is False
    assert tools["match"]["annotations"]["readOnlyHint"] is True

    ro = run_inspector(config, "kg-ro", "--method", "tools/list")
    assert {t["name"] for t in ro["tools"]} == {"sparql", "match", "search", "find", "get_node", "related",
                                                "ontology", "stats", "history", "ask"}


def test_inspector_tools_call(config: Path) -> None:
    out = run_inspector(config, "kg", "--method", "tools/call", "--tool-name", "sparql",
                        "--tool-arg", "query=SELECT ?s WHERE { ?s t:DEPENDS_ON t:orders_db }")
    assert out["isError"] is False
    assert out["structuredContent"]["rows"] == [{"s": "report"}]

    out = run_inspector(config, "kg", "--method", "tools/call", "--tool-name", "add_triple",
                        "--tool-arg", "s=report", "--tool-arg", "p=FEEDS", "--tool-arg", "o=x")
    assert out["isError"] is True
    assert "Allowed predicates: OWNED_BY, DEPENDS_ON" in out["content"][0]["text"]
    assert (config.parent / "graph.yaml").read_text(encoding="utf-8") == GRAPH
