"""
The paired client: HTTP requests to the server and the same requests through the bare parts,
alternating one by one in ONE separate process, so both see the same machine load.

The HTTP side is ``bench.http_client.Connection`` (keep-alive, loopback). The bare side is
``bench.service_bench.BareParts`` (query embedder + one filtered Qdrant Edge query) on a copy of
the server's store folder (a Qdrant Edge shard belongs to one process, and the server holds
the original). The order alternates per request (HTTP first, then bare first), so neither side
always runs on a warmer cache. Sequential: the two sides never compete with each other.

```bash
python -m bench.paired_client --url http://127.0.0.1:8000 --store-copy /tmp/x/qdrant --plan plan.json --out out.json
```

``plan.json``: ``{"torch_threads": 1, "pairs": [{"name", "path", "bare": "search" | "rag_retrieval",
"bodies": [...], "requests": 300, "warmup": 10}]}``. Output per pair: the HTTP run (as
``bench.http_client``), ``bare_ms`` and ``embed_ms`` (the bare query embedding alone, after each pair: the
floor the target ratios divide by); plus ``embed_ms`` and ``retrieve_ms`` (the bare search's two halves,
measured separately over the same queries after the pairs).
"""

import argparse
import asyncio
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench.http_client import Connection, _facts
from bench.service_bench import BareParts


async def run_pair(connection: Connection, bare: BareParts, spec: dict[str, Any]) -> dict[str, Any]:
    bodies = spec["bodies"]
    encoded = [json.dumps(body).encode() for body in bodies]
    kind = spec["bare"]
    count, warmup = int(spec["requests"]), int(spec.get("warmup", 0))
    for index in range(warmup):
        await connection.post(spec["path"], encoded[index % len(bodies)])
        bare.run(kind, bodies[index % len(bodies)])
    http_ms, bare_ms, server_ms, results, embed_ms = [], [], [], [], []
    statuses: Counter = Counter()
    actions: Counter = Counter()
    errors: list[str] = []
    for index in range(count):
        body = bodies[index % len(bodies)]
        for side in ("http", "bare") if index % 2 == 0 else ("bare", "http"):
            started = time.perf_counter()
            if side == "bare":
                bare.run(kind, body)
                bare_ms.append((time.perf_counter() - started) * 1000.0)
                continue
            status, payload = await connection.post(spec["path"], encoded[index % len(bodies)])
            http_ms.append((time.perf_counter() - started) * 1000.0)
            statuses[status] += 1
            if status != 200:
                if len(errors) < 5:
                    errors.append(f"{status}: {payload[:300].decode('utf-8', 'replace')}")
                continue
            facts = _facts(payload)
            results.append(facts.get("results", 0))
            if facts.get("server_ms") is not None:
                server_ms.append(float(facts["server_ms"]))
            if "action" in facts:
                actions[facts["action"]] += 1
        # The floor, interleaved: the bare query embedding alone (the part no search can avoid).
        started = time.perf_counter()
        bare.embedder.run(text=body["query"])
        embed_ms.append((time.perf_counter() - started) * 1000.0)
    return {
        "name": spec["name"],
        "path": spec["path"],
        "concurrency": 1,
        "completed": len(http_ms),
        "requests_per_s": None,
        "latencies_ms": [round(value, 3) for value in http_ms],
        "bare_ms": [round(value, 3) for value in bare_ms],
        "embed_ms": [round(value, 3) for value in embed_ms],
        "server_ms": [round(value, 3) for value in server_ms],
        "statuses": {str(status): number for status, number in statuses.items()},
        "mean_results": round(sum(results) / len(results), 2) if results else None,
        "actions": dict(actions),
        "errors": errors,
    }


async def main_async(url: str, store_copy: str, plan: dict[str, Any]) -> dict[str, Any]:
    bare = BareParts(int(plan.get("torch_threads", 1)), store_copy)
    parts = urlsplit(url)
    connection = Connection(parts.hostname, parts.port)
    await connection.open()
    try:
        pairs = [await run_pair(connection, bare, spec) for spec in plan["pairs"]]
    finally:
        await connection.close()
    queries = plan["pairs"][0]["bodies"][: int(plan.get("split_requests", 100))]
    split = bare.split_timings(queries)
    bare.close()
    return {"pairs": pairs, **split}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.paired_client", description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--store-copy", required=True, help="a copy of the server's store folder (<data dir>/qdrant)")
    parser.add_argument("--plan", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    plan = json.loads(Path(args.plan).read_text(encoding="utf-8"))
    result = asyncio.run(main_async(args.url, args.store_copy, plan))
    Path(args.out).write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
