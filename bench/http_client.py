"""
The benchmark's load client: a separate process that sends JSON POSTs to the server over loopback.

Standard library only (asyncio streams, HTTP/1.1 keep-alive, one connection per concurrent
client), so the client costs the shared 2 cores as little as possible and starts in ~50 ms.
It is run as a script, not imported by the server side:

```bash
python bench/http_client.py --url http://127.0.0.1:8000 --plan plan.json --out result.json
```

``plan.json``: ``{"runs": [{"name", "path", "bodies": [...], "concurrency": 1, "requests": 200,
"warmup": 10}, {"name", ..., "concurrency": 16, "duration_s": 8}]}``. A run either sends
``requests`` requests (latency runs) or as many as it can for ``duration_s`` seconds
(throughput runs); bodies are used in order, round-robin. Per run the output has every
latency in ms (time from writing the request to reading the whole response), status counts,
wall time, requests per second and a few response facts (mean result count, RAG actions, and the
search service's own time inside the server, ``metadata.latency_ms``, as ``server_ms``).
"""

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections import Counter
from urllib.parse import urlsplit


class Connection:
    """One keep-alive HTTP/1.1 connection."""

    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        if self.writer is None:
            await self.open()
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: keep-alive\r\n\r\n"
        ).encode("ascii")
        self.writer.write(head + body)
        await self.writer.drain()
        status_line = await self.reader.readline()
        if not status_line:
            raise ConnectionError("the server closed the connection")
        status = int(status_line.split()[1])
        length, chunked, close = None, False, False
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            name, value = name.strip().lower(), value.strip().lower()
            if name == "content-length":
                length = int(value)
            elif name == "transfer-encoding" and "chunked" in value:
                chunked = True
            elif name == "connection" and value == "close":
                close = True
        if chunked:
            parts = []
            while True:
                size = int((await self.reader.readline()).split(b";")[0], 16)
                if size == 0:
                    await self.reader.readline()
                    break
                parts.append(await self.reader.readexactly(size))
                await self.reader.readline()
            payload = b"".join(parts)
        elif length is not None:
            payload = await self.reader.readexactly(length)
        else:
            payload = await self.reader.read()
            close = True
        if close:
            await self.close()
        return status, payload

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            try:
                await self.writer.wait_closed()
            except OSError:
                pass
        self.reader = self.writer = None


def _facts(payload: bytes) -> dict:
    """What a response says about its work: result count (search) or action and context chunks (RAG)."""
    try:
        result = json.loads(payload).get("result") or {}
    except (ValueError, AttributeError):
        return {}
    if "results" in result:
        # metadata.latency_ms: the search service's own wall time, inside the server.
        return {"results": len(result["results"]), "server_ms": (result.get("metadata") or {}).get("latency_ms")}
    if "action" in result:
        return {"action": result["action"], "results": result.get("context_chunks_used") or 0}
    return {}


async def run_one(host: str, port: int, spec: dict) -> dict:
    bodies = [json.dumps(body).encode() for body in spec["bodies"]]
    concurrency = int(spec.get("concurrency", 1))
    total = spec.get("requests")
    duration = spec.get("duration_s")
    path = spec["path"]
    connections = [Connection(host, port) for _ in range(concurrency)]
    for connection in connections:
        await connection.open()
    for index in range(int(spec.get("warmup", 0))):  # warm-up: not timed
        await connections[index % concurrency].post(path, bodies[index % len(bodies)])

    latencies: list[float] = []
    statuses: Counter = Counter()
    actions: Counter = Counter()
    results: list[int] = []
    server_ms: list[float] = []
    errors: list[str] = []
    counter = {"next": 0}
    started = time.perf_counter()
    deadline = started + float(duration) if duration else None

    async def client(connection: Connection) -> None:
        while True:
            number = counter["next"]
            if total is not None and number >= total:
                return
            if deadline is not None and time.perf_counter() >= deadline:
                return
            counter["next"] = number + 1
            body = bodies[number % len(bodies)]
            sent = time.perf_counter()
            status, payload = await connection.post(path, body)
            latencies.append((time.perf_counter() - sent) * 1000.0)
            statuses[status] += 1
            if status == 200:
                facts = _facts(payload)
                if "results" in facts:
                    results.append(facts["results"])
                if facts.get("server_ms") is not None:
                    server_ms.append(float(facts["server_ms"]))
                if "action" in facts:
                    actions[facts["action"]] += 1
            elif len(errors) < 5:
                errors.append(f"{status}: {payload[:300].decode('utf-8', 'replace')}")

    await asyncio.gather(*(client(connection) for connection in connections))
    wall = time.perf_counter() - started
    for connection in connections:
        await connection.close()
    return {
        "name": spec["name"],
        "path": path,
        "concurrency": concurrency,
        "completed": len(latencies),
        "wall_s": round(wall, 3),
        "requests_per_s": round(len(latencies) / wall, 2) if wall else None,
        "latencies_ms": [round(value, 3) for value in latencies],
        "statuses": {str(status): count for status, count in statuses.items()},
        "mean_results": round(statistics.fmean(results), 2) if results else None,
        "server_ms": [round(value, 3) for value in server_ms],
        "actions": dict(actions),
        "errors": errors,
    }


async def main_async(url: str, plan: dict) -> dict:
    parts = urlsplit(url)
    runs = []
    for spec in plan["runs"]:
        runs.append(await run_one(parts.hostname, parts.port, spec))
    return {"runs": runs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="sourcebound benchmark load client (stdlib only).")
    parser.add_argument("--url", required=True, help="server base URL, e.g. http://127.0.0.1:8000")
    parser.add_argument("--plan", required=True, help="JSON plan file (see the module docstring)")
    parser.add_argument("--out", required=True, help="JSON result file")
    args = parser.parse_args(argv)
    with open(args.plan, encoding="utf-8") as file:
        plan = json.load(file)
    result = asyncio.run(main_async(args.url, plan))
    with open(args.out, "w", encoding="utf-8") as file:
        json.dump(result, file)
    return 0


if __name__ == "__main__":
    sys.exit(main())
