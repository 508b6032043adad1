"""Throughput and latency of `trike serve` on loopback.

    python benchmarks/serve.py                   # 100k-triple graph, 16 concurrent clients, no auth
    python benchmarks/serve.py --auth oauth      # the same behind JWT verification (test IdP on loopback)
    python benchmarks/serve.py --quick           # 10k triples, fewer requests (a smoke run)

Scenarios: `GET /nodes/{name}` and a 1-hop `POST /sparql` (JSON body), plus the SPARQL 1.1 Protocol form
(`GET /sparql?query=`) for comparison. The server runs in a subprocess (`trike serve --port 0`); the
client is a minimal asyncio HTTP/1.1 keep-alive client (one connection per concurrent client), so the
client costs little CPU next to the server on a small machine. Every response must be 200. Output: a
Markdown table of requests/s and p50/p99 latency.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import quote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

ONTOLOGY = {"predicates": {"knows": {"description": "person -> person"},
                           "works_at": {"description": "person -> org"},
                           "age": {"range": "integer", "functional": True}}}


def build_graph(path: Path, triples: int) -> Path:
    """people p-0..p-N, each with 3 `knows`, 1 `works_at` and 1 `age`: `triples` facts in all."""
    from trike import TrikeDB

    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.yaml")
    tmp.unlink(missing_ok=True)
    rng = random.Random(7)
    people = triples // 5
    t0 = time.perf_counter()
    db = TrikeDB(tmp, ontology=ONTOLOGY)
    with db.batch():
        for i in range(people):
            for k in rng.sample(range(people), 3):
                db.add(f"p-{i}", "knows", f"p-{k if k != i else (k + 1) % people}")
            db.add(f"p-{i}", "works_at", f"org-{i % 500}")
            db.add(f"p-{i}", "age", 20 + i % 50)
    count = len(db)
    tmp.rename(path)
    tmp.with_name("." + tmp.name + ".lock").unlink(missing_ok=True)
    print(f"built {path.name}: {count} facts in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return path


class Request:
    def __init__(self, method: str, target: str, host: str, body: bytes = b"", headers: dict | None = None):
        lines = [f"{method} {target} HTTP/1.1", f"Host: {host}", "Connection: keep-alive"]
        for k, v in (headers or {}).items():
            lines.append(f"{k}: {v}")
        if body:
            lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
        self.data = ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def _client(host: str, port: int, make, count: int, latencies: list[float], errors: list[str]) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        for _ in range(count):
            req = make()
            t0 = time.perf_counter()
            writer.write(req.data)
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head[9:12])
            length = 0
            for line in head.split(b"\r\n")[1:]:
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            body = await reader.readexactly(length) if length else b""
            latencies.append(time.perf_counter() - t0)
            if status != 200:
                errors.append(f"{status} {body[:200]!r}")
    finally:
        writer.close()


async def _run(url: str, make, clients: int, total: int) -> tuple[float, list[float], list[str]]:
    parts = urlsplit(url)
    latencies: list[float] = []
    errors: list[str] = []
    per = max(1, total // clients)
    t0 = time.perf_counter()
    await asyncio.gather(*(_client(parts.hostname, parts.port, make, per, latencies, errors)
                           for _ in range(clients)))
    return time.perf_counter() - t0, latencies, errors


def measure(url: str, make, clients: int, total: int) -> dict:
    asyncio.run(_run(url, make, clients, max(clients, total // 10)))  # warm-up
    elapsed, lat, errors = asyncio.run(_run(url, make, clients, total))
    if errors:
        raise SystemExit(f"{len(errors)} failed requests, e.g. {errors[0]}")
    lat.sort()
    return {"requests": len(lat), "rps": len(lat) / elapsed, "p50": statistics.median(lat) * 1000,
            "p99": lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--triples", type=int, default=100_000)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--requests", type=int, default=6000, help="requests per scenario")
    ap.add_argument("--auth", choices=["none", "token", "oauth"], default="none")
    ap.add_argument("--quick", action="store_true", help="10k triples, 1000 requests per scenario")
    args = ap.parse_args()
    if args.quick:
        args.triples, args.requests = 10_000, 1000

    from idp import ServeProcess, TestIdP

    graph = build_graph(ROOT / "benchmarks" / ".cache" / f"serve-{args.triples}.yaml", args.triples)
    people = args.triples // 5
    headers: dict[str, str] = {}
    serve_args: list[str] = []
    idp = None
    if args.auth == "token":
        serve_args = ["--token", "bench-token"]
        headers = {"Authorization": "Bearer bench-token"}
    elif args.auth == "oauth":
        idp = TestIdP().start()
        public = "https://kg.example.test"
        serve_args = ["--oauth-issuer", idp.issuer, "--public-url", public]
        headers = {"Authorization": "Bearer " + idp.mint(public, exp=int(time.time()) + 3600)}
    rng = random.Random(1)
    try:
        with ServeProcess(graph, *serve_args) as srv:
            host = urlsplit(srv.url).netloc

            def node() -> Request:
                return Request("GET", f"/nodes/p-{rng.randrange(people)}", host, headers=headers)

            def sparql_json() -> Request:
                q = f"SELECT ?o WHERE {{ t:p-{rng.randrange(people)} t:knows ?o }}"
                return Request("POST", "/sparql", host, json.dumps({"query": q}).encode(), headers)

            def sparql_protocol() -> Request:
                q = f"SELECT ?o WHERE {{ t:p-{rng.randrange(people)} t:knows ?o }}"
                return Request("GET", "/sparql?query=" + quote(q), host,
                               headers={**headers, "Accept": "application/sparql-results+json"})

            t0 = time.perf_counter()
            asyncio.run(_run(srv.url, sparql_json, 1, 1))  # builds the SPARQL projection
            print(f"first SPARQL query (builds the Oxigraph projection): {time.perf_counter() - t0:.2f} s",
                  file=sys.stderr)
            rows = [("GET /nodes/{name}", measure(srv.url, node, args.clients, args.requests)),
                    ("POST /sparql (1-hop, JSON body)", measure(srv.url, sparql_json, args.clients, args.requests)),
                    ("GET /sparql?query= (1-hop, protocol)",
                     measure(srv.url, sparql_protocol, args.clients, args.requests))]
    finally:
        if idp is not None:
            idp.stop()
    print(f"\n{args.triples:,} triples, {args.clients} concurrent clients, auth={args.auth}, loopback\n")
    print("| endpoint | requests | req/s | p50 ms | p99 ms |")
    print("|---|---:|---:|---:|---:|")
    for name, r in rows:
        print(f"| {name} | {r['requests']} | {r['rps']:.0f} | {r['p50']:.1f} | {r['p99']:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
