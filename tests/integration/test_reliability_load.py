"""
A bounded load test over loopback (docs/testing.md, "Reliability and security tests"): ~50
concurrent asyncio clients (httpx) for ~60 s against one server, mixing search (all modes), RAG,
chat completions and indexing.

It shows: zero 5xx and zero transport errors; no request slower than ``REQUEST_TIMEOUT_S``
(the clients' own timeout: a slower request fails the test); every acknowledged write
(``200`` with status ``indexed``) is queryable afterwards (each writer's tenant is listed in
full by one search, and a sample is found by keyword search for its canary); the p50/p95/p99
latencies, written to ``load_report.json`` in the test's tmp dir and printed.

``SOURCEBOUND_LOAD_SECONDS`` and ``SOURCEBOUND_LOAD_CLIENTS`` change the duration and the
number of clients (defaults 60 and 50).
"""

import asyncio
import json
import os
import random
import time
from collections import Counter, defaultdict

import httpx
import pytest
from support.api_server import ApiServer
from support.reliability_support import TestDocument, new_canary, percentile

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DURATION_S = float(os.environ.get("SOURCEBOUND_LOAD_SECONDS", "60"))
CLIENTS = int(os.environ.get("SOURCEBOUND_LOAD_CLIENTS", "50"))
WRITERS = max(1, CLIENTS // 10)
REQUEST_TIMEOUT_S = 30.0  # the stated bound: no request may take longer
MAX_WRITES_PER_WRITER = 90  # so one k=100 search lists a writer's whole tenant
READER = {"tenant_id": "load", "user_tags": ["ops", "hr"]}
FACTS = [
    "The loading dock opens at 06:00 on weekdays.", "Employees get 27 vacation days per year.",
    "Expense claims need itemised receipts.", "Laptops are replaced every three years.",
    "Visitors must wear an orange badge.", "Salary bands are reviewed every April.",
    "Security incidents are reported within one hour.", "Parental leave lasts sixteen weeks.",
    "The cafeteria serves lunch from 11:30 to 14:00.", "Bicycles are stored in the basement.",
]  # fmt: skip
QUESTIONS = [
    "When does the loading dock open?", "How many vacation days do employees get?", "What do expense claims need?",
    "How often are laptops replaced?", "What colour is the visitor badge?", "When is lunch served?",
]  # fmt: skip


def _base_corpus() -> list[TestDocument]:
    rng = random.Random(3)
    documents = []
    for number in range(30):
        canary = new_canary(rng)
        fact = FACTS[number % len(FACTS)]
        text = f"Reference {canary}. {fact} " + " ".join(
            f"Note {i} of policy {number} is on page {i + number}." for i in range(number % 4 * 10)
        )
        documents.append(TestDocument(f"load-{number}", "load", ["ops" if number % 2 else "hr"], text, canary))
    return documents


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with ApiServer(tmp_path_factory.mktemp("load") / "data", env={"SOURCEBOUND_BOOTSTRAP_CORPUS": "false"}) as running:
        response = running.client.post("/index/run", json={"documents": [d.body() for d in _base_corpus()]})
        assert response.status_code == 200, response.text
        yield running


class LoadRun:
    def __init__(self, url: str, seed: int = 5) -> None:
        self.url = url
        self.rng = random.Random(seed)
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self.statuses: Counter = Counter()
        self.failures: list[str] = []
        self.acknowledged: dict[str, list[TestDocument]] = defaultdict(list)

    def record(
        self, kind: str, started: float, response: httpx.Response | None, error: BaseException | None = None
    ) -> None:
        elapsed = time.monotonic() - started
        self.latencies[kind].append(elapsed)
        if error is not None:
            self.statuses[f"{kind} {type(error).__name__}"] += 1
            self.failures.append(f"{kind}: {type(error).__name__} after {elapsed:.1f} s: {error}")
            return
        self.statuses[f"{kind} {response.status_code}"] += 1
        if response.status_code != 200:
            self.failures.append(f"{kind}: {response.status_code} {response.text[:200]}")

    async def reader(self, client: httpx.AsyncClient, number: int, deadline: float) -> None:
        rng = random.Random(number)
        while time.monotonic() < deadline:
            kind = rng.choices(["search", "rag", "chat"], weights=[6, 3, 1])[0]
            question = rng.choice(QUESTIONS)
            if kind == "search":
                path, body = (
                    "/search/run",
                    {
                        "query": question,
                        **READER,
                        "k": rng.randint(1, 20),
                        "search_mode": rng.choice(["vector", "keyword", "hybrid"]),
                    },
                )
            elif kind == "rag":
                path, body = "/rag/run", {"query": question, **READER}
            else:
                path, body = (
                    "/v1/chat/completions",
                    {
                        "model": "rag",
                        "messages": [{"role": "user", "content": question}],
                        **READER,
                        "stream": rng.random() < 0.5,
                    },
                )
            started = time.monotonic()
            try:
                response = await client.post(path, json=body)
            except httpx.HTTPError as error:
                self.record(kind, started, None, error)
                continue
            self.record(kind, started, response)

    async def writer(self, client: httpx.AsyncClient, number: int, deadline: float) -> None:
        rng = random.Random(1000 + number)
        tenant = f"writer-{number}"
        sequence = 0
        while time.monotonic() < deadline and len(self.acknowledged[tenant]) < MAX_WRITES_PER_WRITER:
            batch = []
            for _ in range(rng.choice([1, 1, 2])):
                canary = new_canary(rng)
                batch.append(
                    TestDocument(
                        f"{tenant}-{sequence}",
                        tenant,
                        ["ops"],
                        f"Reference {canary}. {rng.choice(FACTS)} Entry {sequence} of {tenant}.",
                        canary,
                    )
                )
                sequence += 1
            started = time.monotonic()
            try:
                response = await client.post("/index/run", json={"documents": [d.body() for d in batch]})
            except httpx.HTTPError as error:
                self.record("index", started, None, error)
                continue
            self.record("index", started, response)
            if response.status_code == 200:
                statuses = {entry["document_id"]: entry["status"] for entry in response.json()["result"]["documents"]}
                self.acknowledged[tenant].extend(d for d in batch if statuses.get(d.document_id) == "indexed")
            await asyncio.sleep(rng.uniform(0.0, 0.5))

    async def run(self, duration: float, clients: int, writers: int) -> float:
        limits = httpx.Limits(max_connections=clients + 10, max_keepalive_connections=clients + 10)
        async with httpx.AsyncClient(base_url=self.url, timeout=REQUEST_TIMEOUT_S, limits=limits) as client:
            started = time.monotonic()
            deadline = started + duration
            tasks = [self.writer(client, number, deadline) for number in range(writers)]
            tasks += [self.reader(client, number, deadline) for number in range(clients - writers)]
            await asyncio.gather(*tasks)
            return time.monotonic() - started

    def report(self, elapsed: float) -> dict:
        every = [value for values in self.latencies.values() for value in values]

        def summary(values: list[float]) -> dict:
            return {
                "requests": len(values),
                "p50_s": round(percentile(values, 50), 3),
                "p95_s": round(percentile(values, 95), 3),
                "p99_s": round(percentile(values, 99), 3),
                "max_s": round(max(values, default=0.0), 3),
            }

        return {
            "duration_s": round(elapsed, 1),
            "clients": CLIENTS,
            "writers": WRITERS,
            "request_timeout_s": REQUEST_TIMEOUT_S,
            "throughput_rps": round(len(every) / elapsed, 1) if elapsed else 0.0,
            "overall": summary(every),
            "by_kind": {kind: summary(values) for kind, values in sorted(self.latencies.items())},
            "statuses": dict(sorted(self.statuses.items())),
            "errors": len(self.failures),
            "server_errors_5xx": sum(count for key, count in self.statuses.items() if key.split()[-1].startswith("5")),
            "acknowledged_writes": sum(len(documents) for documents in self.acknowledged.values()),
        }


def test_load_mixed_traffic(server, tmp_path):
    import psutil

    process = psutil.Process(server.process.pid)
    rss_before = process.memory_info().rss
    load = LoadRun(server.url)
    elapsed = asyncio.run(load.run(DURATION_S, CLIENTS, WRITERS))
    report = load.report(elapsed)
    report["server_rss_mib"] = {"before": round(rss_before / 2**20), "after": round(process.memory_info().rss / 2**20)}

    # Every acknowledged write is queryable: one search lists a writer's whole tenant, and a sample is
    # found by keyword search for its canary.
    missing = []
    for tenant, documents in load.acknowledged.items():
        body = {
            "query": "Reference entry",
            "tenant_id": tenant,
            "user_tags": ["ops"],
            "k": 100,
            "search_mode": "vector",
        }
        listed = server.client.post("/search/run", json=body).json()["result"]["results"]
        found = {hit["document_id"] for hit in listed}
        missing += [d.document_id for d in documents if d.document_id not in found]
        for document in random.Random(tenant).sample(documents, min(3, len(documents))):
            body = {
                "query": document.canary,
                "tenant_id": tenant,
                "user_tags": ["ops"],
                "k": 5,
                "search_mode": "keyword",
            }
            hits = server.client.post("/search/run", json=body).json()["result"]["results"]
            if document.document_id not in {hit["document_id"] for hit in hits}:
                missing.append(f"{document.document_id} (keyword)")
    report["missing_writes"] = len(missing)
    (tmp_path / "load_report.json").write_text(json.dumps(report, indent=2))
    print(f"\nload report ({tmp_path / 'load_report.json'}):\n{json.dumps(report, indent=2)}")

    assert not load.failures, "\n".join(load.failures[:20])
    assert report["server_errors_5xx"] == 0
    assert report["overall"]["max_s"] < REQUEST_TIMEOUT_S
    assert not missing, missing[:20]
    assert report["acknowledged_writes"] > 0 and report["overall"]["requests"] > CLIENTS
    assert server.client.get("/health").json()["status"] == "healthy"
