"""
The agents' routes: what enrichment costs next to an answer, and what MCP adds over REST.

Starts the real server (``python -m hayhooks_app serve``, the bundled sample corpus indexed on its
first start) and sends, one by one and alternating within each round so that the machine's load
hits every variant alike: ``POST /enrich/run``, the MCP tool ``enrich_message`` (one Streamable
HTTP session, as an agent keeps it), ``POST /rag/run`` and the MCP tool ``ask_with_citations``,
each with the same questions. Prints a Markdown table (median, p90, ratio to REST enrich) and
writes ``bench/results/agents.json`` / ``agents.md``.

Usage:

```bash
.venv/bin/python -m bench.agents_bench               # 40 rounds (~1 min on 2 cores, start-up included)
.venv/bin/python -m bench.agents_bench --rounds 100
```
"""

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.service_bench import BenchServer

RESULTS = Path(__file__).resolve().parent / "results"
IDENTITY = {"tenant_id": "acme", "user_tags": ["hr", "all-staff", "finance"]}
QUESTIONS = (
    "How many days of paid annual leave do full-time employees get?",
    "What is the daily meal per diem when travelling for business within the Netherlands?",
    "How do I submit an expense claim and which receipts are needed?",
    "Who is on call when a security incident happens at night?",
    "When is a company laptop replaced?",
)
VARIANTS = ("REST /enrich/run", "MCP enrich_message", "REST /rag/run", "MCP ask_with_citations")


async def _measure(url: str, rounds: int) -> dict[str, list[float]]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    timings: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
    async with httpx.AsyncClient(base_url=url, timeout=60) as rest:
        async with streamable_http_client(f"{url}/mcp") as (read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()

                async def call(variant: str, question: str) -> None:
                    if variant.startswith("REST"):
                        path = variant.split()[1]
                        field = "message" if path == "/enrich/run" else "query"
                        response = await rest.post(path, json={field: question, **IDENTITY})
                        if response.status_code != 200:
                            raise RuntimeError(f"{variant}: {response.status_code} {response.text[:300]}")
                        return
                    tool = variant.split()[1]
                    field = "message" if tool == "enrich_message" else "query"
                    result = await session.call_tool(tool, {field: question, **IDENTITY})
                    if result.isError:
                        raise RuntimeError(f"{variant}: {result.content}")

                for question in QUESTIONS:  # warm-up: first-call costs stay out of the figures
                    for variant in VARIANTS:
                        await call(variant, question)
                for index in range(rounds):
                    question = QUESTIONS[index % len(QUESTIONS)]
                    # Rotate the order so no variant always runs first (or right after another).
                    order = VARIANTS[index % len(VARIANTS) :] + VARIANTS[: index % len(VARIANTS)]
                    for variant in order:
                        started = time.perf_counter()
                        await call(variant, question)
                        timings[variant].append((time.perf_counter() - started) * 1000)
    return timings


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def report(timings: dict[str, list[float]], load: tuple[float, float]) -> tuple[dict[str, Any], str]:
    """The figures as JSON and as a Markdown table."""
    base = statistics.median(timings[VARIANTS[0]])
    figures = {
        variant: {
            "n": len(values),
            "median_ms": round(statistics.median(values), 2),
            "p90_ms": round(_percentile(values, 0.9), 2),
            "median_vs_rest_enrich": round(statistics.median(values) / base, 2),
        }
        for variant, values in timings.items()
    }
    lines = [
        "| request | n | median ms | p90 ms | median / REST enrich |",
        "|---|---|---|---|---|",
        *(
            f"| {variant} | {row['n']} | {row['median_ms']:.1f} | {row['p90_ms']:.1f} "
            f"| {row['median_vs_rest_enrich']:.2f} |"
            for variant, row in figures.items()
        ),
        "",
        f"Load average (1 min) at start / end: {load[0]:.2f} / {load[1]:.2f}.",
    ]
    return {"figures": figures, "load_average": list(load)}, "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=40, help="Measured rounds (each sends every variant once).")
    parser.add_argument("--startup-timeout", type=float, default=300.0)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="sourcebound-agents-bench-") as folder:
        server = BenchServer(Path(folder) / "data", Path(folder) / "server.log")
        server.start(args.startup_timeout)
        try:
            load_start = os.getloadavg()[0]
            timings = asyncio.run(_measure(server.url, args.rounds))
            load_end = os.getloadavg()[0]
        finally:
            server.stop()
    data, table = report(timings, (load_start, load_end))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "agents.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    (RESULTS / "agents.md").write_text(table + "\n", encoding="utf-8")
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
