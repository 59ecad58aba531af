"""
Before / after over HTTP in one run: two servers (an earlier checkout and this one) on copies of the same corpus,
one client alternating between them request by request, so both see the same machine load.

Each server is ``python -m hayhooks_app serve`` started from its own checkout (``--before DIR``: any checkout of
this repository using this virtual environment, e.g. ``git worktree add /tmp/before main`` or ``git archive <rev> |
tar -x -C /tmp/before``) on its own copy of the cached corpus (``bench.corpus``; a Qdrant Edge shard belongs to one
process). The client (a separate process, ``bench.http_client.Connection``, one keep-alive connection per server)
sends every request to both servers, alternating which goes first, ``/search/run`` and ``/rag/run`` in turn, and
after each pair embeds the query with the bare query embedder (the floor). Then, optionally, throughput at 1 and 4
concurrent clients for each server, alternating servers, twice.

Reported per side: p50 / p95 / p99 of both endpoints, p95 over the floor's p50, the server's CPU ms per request
(psutil, all threads: what the load on the machine does not stretch), and after / before for each figure; the
paired per-request ratio (median of after_i / before_i over the same queries) is the most load-robust latency figure.

```bash
git archive <rev> | tar -x -C /tmp/before && ln -s $PWD/.venv /tmp/before/.venv
.venv/bin/python -m bench.ab_compare --before /tmp/before --size 10000 --requests 150
```
"""

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SIDES = ("before", "after")


def _copy_data_dir(source: Path, target: Path) -> Path:
    skip = shutil.ignore_patterns(".sourcebound.lock", "records.sqlite*", "tags.sqlite*")
    shutil.copytree(source, target, ignore=skip)
    return target


def _client(urls: dict[str, str], plan_path: Path, out_path: Path) -> None:
    from urllib.parse import urlsplit

    from bench.http_client import Connection
    from bench.service_bench import query_embedder

    plan = json.loads(plan_path.read_text(encoding="utf-8"))
    embedder = query_embedder(int(plan.get("threads", 1)))

    async def run() -> dict[str, Any]:
        connections = {}
        for side, url in urls.items():
            parts = urlsplit(url)
            connections[side] = Connection(parts.hostname, parts.port)
            await connections[side].open()
        latencies: dict[str, dict[str, list[float]]] = {side: {} for side in urls}
        failures: dict[str, int] = dict.fromkeys(urls, 0)
        embed_ms: list[float] = []
        for index, item in enumerate(plan["requests"]):
            body = json.dumps(item["body"]).encode()
            order = SIDES if index % 2 == 0 else SIDES[::-1]
            for side in order:
                started = time.perf_counter()
                status, _payload = await connections[side].post(item["path"], body)
                elapsed = (time.perf_counter() - started) * 1000.0
                if status != 200:
                    failures[side] += 1
                if index >= plan["warmup"]:
                    latencies[side].setdefault(item["path"], []).append(elapsed)
            started = time.perf_counter()
            embedder.run(text=item["body"]["query"])
            if index >= plan["warmup"]:
                embed_ms.append((time.perf_counter() - started) * 1000.0)
        for connection in connections.values():
            await connection.close()
        return {"latencies_ms": latencies, "embed_ms": embed_ms, "failures": failures}

    out_path.write_text(json.dumps(asyncio.run(run())), encoding="utf-8")


def _run_client(urls: dict[str, str], plan: dict[str, Any]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="sourcebound-ab-") as temp:
        plan_path, out_path = Path(temp) / "plan.json", Path(temp) / "out.json"
        plan_path.write_text(json.dumps(plan), encoding="utf-8")
        command = [sys.executable, "-m", "bench.ab_compare", "--client", json.dumps(urls), "--plan", str(plan_path),
                   "--out", str(out_path)]  # fmt: skip
        completed = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=3600)
        if completed.returncode != 0:
            raise RuntimeError(f"the A/B client failed:\n{completed.stderr[-3000:]}")
        return json.loads(out_path.read_text(encoding="utf-8"))


def _plan(requests: int, warmup: int, threads: int) -> dict[str, Any]:
    from bench.corpus import query_set
    from bench.service_bench import rag_body, search_body

    items = []
    for query in query_set(requests + warmup):
        items.append({"path": "/search/run", "body": search_body(query)})
        items.append({"path": "/rag/run", "body": rag_body(query)})
    return {"requests": items, "warmup": 2 * warmup, "threads": threads}


def _throughput(servers: dict[str, Any], bodies: list[dict[str, Any]], seconds: float, rounds: int) -> dict:
    """Requests/s at 1 and 4 clients per side, sides alternating, ``rounds`` times; the median per figure."""
    from bench.service_bench import run_client

    samples: dict[str, dict[str, list[float]]] = {side: {"1": [], "4": []} for side in servers}
    for round_index in range(rounds):
        for clients in (1, 4):
            order = SIDES if round_index % 2 == 0 else SIDES[::-1]
            for side in order:
                run = {"name": "t", "path": "/search/run", "bodies": bodies, "concurrency": clients,
                       "duration_s": seconds, "warmup": clients}  # fmt: skip
                samples[side][str(clients)].append(run_client(servers[side].url, [run])["t"]["requests_per_s"])
    figures = {}
    for side, values in samples.items():
        one, four = statistics.median(values["1"]), statistics.median(values["4"])
        figures[side] = {"rps_1": round(one, 1), "rps_4": round(four, 1), "ratio_4_over_1": round(four / one, 2),
                         "samples": values}  # fmt: skip
    return figures


def compare(before: Path, size: int, requests: int, warmup: int, threads: int, throughput_s: float) -> dict:
    """Serve both checkouts on copies of the ``size`` corpus and measure them alternately (see the module doc)."""
    from bench.corpus import ensure_corpus, query_set
    from bench.report import latency_summary
    from bench.service_bench import LOG_DIR, BenchServer, search_body

    data_dir, _manifest = ensure_corpus(size)
    load_start = round(__import__("os").getloadavg()[0], 2)
    with tempfile.TemporaryDirectory(prefix="sourcebound-ab-data-") as temp:
        servers = {}
        try:
            for side, checkout in (("before", before), ("after", REPO)):
                copy = _copy_data_dir(data_dir, Path(temp) / side)
                server = BenchServer(copy, LOG_DIR / f"ab-{side}-{size}.log", threads, cwd=checkout)
                servers[side] = server.start(300)
            for server in servers.values():  # the warm-up after start would count against the side started last
                server.wait_until_idle()
            cpu_start = {side: server.cpu_s() for side, server in servers.items()}
            result = _run_client(
                {side: server.url for side, server in servers.items()}, _plan(requests, warmup, threads)
            )
            answered = 2 * (requests + warmup)
            cpu_ms = {side: (servers[side].cpu_s() - cpu_start[side]) * 1000 / answered for side in servers}
            throughput = (
                _throughput(servers, [search_body(q) for q in query_set(200)], throughput_s, 2) if throughput_s else {}
            )
        finally:
            for server in servers.values():
                server.stop()
    floor = latency_summary(result["embed_ms"])
    figures: dict[str, Any] = {"size": size, "requests": requests, "floor_embed": floor, "load_start": load_start,
                               "load_end": round(__import__("os").getloadavg()[0], 2), "failures": result["failures"],
                               "server_cpu_ms_per_request": {side: round(v, 2) for side, v in cpu_ms.items()},
                               "throughput": throughput, "paths": {}}  # fmt: skip
    for path in ("/search/run", "/rag/run"):
        sides = {side: result["latencies_ms"][side][path] for side in SIDES}
        summary = {side: latency_summary(values) for side, values in sides.items()}
        paired = statistics.median(a / b for a, b in zip(sides["after"], sides["before"], strict=True))
        figures["paths"][path] = {
            **{side: {**summary[side], "p95_over_floor": round(summary[side]["p95_ms"] / floor["p50_ms"], 2)}
               for side in SIDES},
            "after_over_before": {stat: round(summary["after"][stat] / summary["before"][stat], 3)
                                  for stat in ("p50_ms", "p95_ms", "p99_ms")},
            "paired_median_ratio": round(paired, 3),
        }  # fmt: skip
    return figures


def markdown(figures: dict[str, Any]) -> str:
    cpu = figures["server_cpu_ms_per_request"]
    lines = [
        f"A/B at {figures['size']:,} chunks, {figures['requests']} requests per endpoint per side, alternating; "
        f"load average {figures['load_start']} -> {figures['load_end']}; floor (bare query embedding) p50 "
        f"{figures['floor_embed']['p50_ms']} ms; failures {figures['failures']}.",
        "",
        "| figure | before | after | after / before |",
        "|---|---:|---:|---:|",
        f"| server CPU ms per request (both endpoints) | {cpu['before']} | {cpu['after']} | "
        f"{round(cpu['after'] / cpu['before'], 3)} |",
    ]
    for path, table in figures["paths"].items():
        for stat in ("p50_ms", "p95_ms", "p99_ms"):
            lines.append(f"| `{path}` {stat[:3]} ms | {table['before'][stat]} | {table['after'][stat]} | "
                         f"{table['after_over_before'][stat]} |")  # fmt: skip
        lines.append(f"| `{path}` p95 / floor | {table['before']['p95_over_floor']} | "
                     f"{table['after']['p95_over_floor']} | |")  # fmt: skip
        lines.append(f"| `{path}` paired per-request ratio (median) | | | {table['paired_median_ratio']} |")
    for side_name, key in (
        ("req/s at 1 client", "rps_1"),
        ("req/s at 4 clients", "rps_4"),
        ("4 / 1", "ratio_4_over_1"),
    ):
        if figures["throughput"]:
            before, after = figures["throughput"]["before"][key], figures["throughput"]["after"][key]
            lines.append(f"| `/search/run` {side_name} | {before} | {after} | {round(after / before, 3)} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ab_compare", description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="the earlier checkout (uses this virtual environment)")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=150, help="timed requests per endpoint per side")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1, help="embedder threads (server and floor)")
    parser.add_argument("--throughput-seconds", type=float, default=0.0, help="per throughput run; 0: none")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--client", help=argparse.SUPPRESS)
    parser.add_argument("--plan", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.client:
        _client(json.loads(args.client), args.plan, args.out)
        return 0
    if args.before is None:
        parser.error("--before is required")
    figures = compare(args.before.resolve(), args.size, args.requests, args.warmup, args.threads,
                      args.throughput_seconds)  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    print(markdown(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
