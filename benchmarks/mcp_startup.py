"""Start-up of `trike mcp` to a ready `tools/list`, and to the first answered tool call, on a generated
10k-triple graph.

    python benchmarks/mcp_startup.py [--triples 10000] [--runs 5]

Speaks JSON-RPC over the server's stdin/stdout directly (no client library in the measuring process),
with the legacy handshake the usual clients use: initialize, notifications/initialized, tools/list,
then tools/call stats (which waits for the graph to be loaded).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def make_graph(path: Path, n_triples: int) -> None:
    """A graph with an ontology, typed nodes and `n_triples` facts (some with attributes)."""
    lines = [
        "ontology:",
        "  predicates:",
        "    DEPENDS_ON: {description: 'asset -> asset it reads from', domain: asset, range: asset}",
        "    OWNED_BY: {description: 'asset -> team', domain: asset, range: team, functional: true}",
        "    rows: {description: row count, range: integer, functional: true}",
        "nodes:",
    ]
    n_assets = max(10, n_triples // 4)
    for t in range(20):
        lines.append(f"  team-{t}: {{type: team}}")
    for a in range(n_assets):
        lines.append(f"  asset-{a}: {{type: asset, description: generated asset number {a}}}")
    lines.append("triples:")
    i = 0
    a = 0
    while i < n_triples:
        lines.append(f"- {{s: asset-{a}, p: OWNED_BY, o: team-{a % 20}, source: generator}}")
        i += 1
        if i < n_triples:
            lines.append(f"- {{s: asset-{a}, p: rows, o: {a * 7}}}")
            i += 1
        for k in (1, 2):
            if i < n_triples:
                lines.append(f"- {{s: asset-{a}, p: DEPENDS_ON, o: asset-{(a * 31 + k) % n_assets}}}")
                i += 1
        a = (a + 1) % n_assets
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def server_command(graph: Path) -> list[str]:
    return [sys.executable, "-c", "import sys; from trike.cli import main; sys.exit(main())", "mcp", str(graph)]


def measure(graph: Path) -> dict[str, float]:
    t0 = time.perf_counter()
    proc = subprocess.Popen(server_command(graph), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, bufsize=1)
    assert proc.stdin is not None and proc.stdout is not None

    def send(msg: dict) -> None:
        proc.stdin.write(json.dumps(msg) + "\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]

    def reply(want_id: int) -> dict:
        while True:
            line = proc.stdout.readline()  # type: ignore[union-attr]
            if not line:
                raise RuntimeError("server closed stdout")
            msg = json.loads(line)
            if msg.get("id") == want_id:
                return msg

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "bench", "version": "0"}}})
        reply(1)
        t_init = time.perf_counter()
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        tools = reply(2)["result"]["tools"]
        t_list = time.perf_counter()
        send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "stats", "arguments": {}}})
        stats = reply(3)["result"]
        t_call = time.perf_counter()
        assert not stats.get("isError"), stats
        facts = stats["structuredContent"]["facts"]
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    return {"initialize": t_init - t0, "tools_list": t_list - t0, "first_call": t_call - t0,
            "tools": len(tools), "facts": facts}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--triples", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        graph = Path(tmp) / "graph.yaml"
        make_graph(graph, args.triples)
        measure(graph)  # warm the OS file cache and .pyc files
        runs = [measure(graph) for _ in range(args.runs)]
    for key in ("initialize", "tools_list", "first_call"):
        values = [r[key] for r in runs]
        print(f"{key:>11}: median {statistics.median(values):.3f} s  "
              f"(min {min(values):.3f}, max {max(values):.3f}, {len(values)} runs)")
    print(f"{runs[0]['tools']} tools, {runs[0]['facts']} facts, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
