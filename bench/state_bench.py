"""
``python -m bench.state_bench``: what the shared state database costs on the request path.

A private PostgreSQL cluster on loopback (Debian's binaries, started like the tests' fixture,
``tests/support/postgres.py``), and for reference the embedded SQLite files. Measured:

1. **Key check**: ``ApiKeyStore.lookup`` of a valid key (what every ``api_key``-mode request pays), with the key
   cache off (``SOURCEBOUND_KEY_CACHE_SECONDS=0``: one indexed read per request) and at its default (2 s), and
   the embedded keys file; p50 / p95 / p99 in milliseconds.
2. **Other request-path reads**: the glossary digest (every query of a tenant, for the expander's cache), a
   conversation's history (every RAG request with ``conversation_id``) and a tag-owner lookup (a routed answer).
3. **Query-log writer**: rows/s from ``RecordStore.log_query`` until flushed (the background writer's batched
   inserts of a backlog), the enqueue cost a request pays, and the key check measured while a producer logs a
   steady 5,000 rows/s (100x one process's request rate) next to the same check without it.

Prints a Markdown table and writes ``bench/results/state.json`` (bench/README.md, "State layer").

```bash
.venv/bin/python -m bench.state_bench [--lookups 3000] [--rows 50000]
```
"""

import argparse
import json
import platform
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"


def _percentiles(samples_s: list[float]) -> dict[str, float]:
    ordered = sorted(samples_s)

    def at(fraction: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] * 1000, 3)

    return {"p50_ms": at(0.50), "p95_ms": at(0.95), "p99_ms": at(0.99), "n": len(ordered)}


def _timed(action, count: int) -> dict[str, float]:
    for _ in range(min(50, count)):  # warm the pool and the caches
        action()
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    return _percentiles(samples)


def _request_path(url: str | None, root: Path, lookups: int) -> dict[str, dict[str, float]]:
    from components.core.requester import Identity
    from components.generators.conversation_summarizer import ExtractiveConversationSummarizer
    from components.services.conversation_service import ConversationService, ConversationSettings
    from components.stores import key_store
    from components.stores.glossary_store import GlossaryStore
    from components.stores.key_store import ApiKeyStore, SqlApiKeys
    from components.stores.tag_directory import TagDirectory

    keys_file = root / "api_keys.json"
    results = {}
    if url is not None:
        from components.stores.state import open_state

        keys = SqlApiKeys(open_state("keys", None, url))
        for n in range(1000):  # a realistic table, not one row
            keys.add(_record(f"sb_bench_{n}")[1])
        _, record = _record("sb_bench_probe")
        keys.add(record)
        results["key check, no cache"] = _timed(
            lambda store=ApiKeyStore(keys_file, database_url=url, cache_seconds=0): store.lookup("sb_bench_probe"),
            lookups,
        )
        results["key check, 2 s cache"] = _timed(
            lambda store=ApiKeyStore(keys_file, database_url=url, cache_seconds=2): store.lookup("sb_bench_probe"),
            lookups,
        )
    else:
        for n in range(1000):
            key_store.register_key(keys_file, tenant_id=f"t{n % 20}", tags=["hr"], key=f"sb_bench_{n}")
        key_store.register_key(keys_file, tenant_id="acme", tags=["hr"], key="sb_bench_probe")
        results["key check (keys file)"] = _timed(
            lambda store=ApiKeyStore(keys_file, database_url=""): store.lookup("sb_bench_probe"), lookups
        )
    glossary = GlossaryStore(root / "glossary.sqlite", database_url=url or "")
    glossary.load_csv("acme", "term,aliases\nPTO,paid time off|vacation days\nVPN,virtual private network\n")
    results["glossary digest"] = _timed(lambda: glossary.digest("acme"), lookups)
    identity = Identity(tenant_id="acme", user_tags=("hr",), user_id="u-alice")
    conversations = ConversationService(
        root / "conversations.sqlite",
        ConversationSettings(),
        ExtractiveConversationSummarizer(),
        database_url=url or "",
    )
    conversation = conversations.create(identity)["conversation_id"]
    for turn in range(3):
        conversations.record_turn(conversation, identity, f"question {turn}?", f"answer {turn}.")
    results["conversation history"] = _timed(lambda: conversations.history(conversation, identity), lookups)
    directory = TagDirectory(root / "tags.sqlite", database_url=url or "")
    directory.add_user("u-lead", "lead@acme.example")
    directory.set_tag_owner("acme", "hr", "u-lead")
    results["tag-owner lookup"] = _timed(lambda: directory.lookup("acme", "hr"), lookups)
    return results


def _record(key: str):
    from components.stores.key_store import ApiKeyRecord, hash_key

    record = ApiKeyRecord.from_dict({"sha256": hash_key(key), "tenant_id": "acme", "user_id": None, "tags": ["hr"]})
    return key, record


def _log(records, n: int) -> None:
    records.log_query(
        endpoint="search", tenant_id=f"t{n % 20}", user_id=f"u{n % 500}", query=f"query number {n}",
        latency_ms=12.5, result_count=5, key_id="key-0123456789ab", search_mode="hybrid",
    )  # fmt: skip


def _writer(url: str | None, root: Path, rows: int, lookups: int, steady_rate: int = 5000) -> dict:
    from components.stores.key_store import ApiKeyStore
    from components.stores.record_store import RecordStore

    records = RecordStore(root / "records.sqlite", "hash", database_url=url or "", hash_key="b" * 64, queue_rows=rows)
    result: dict = {"rows": rows}
    if url is not None:
        # Requests beside a steady query log: the key check alone, then with a producer at `steady_rate` rows/s.
        store = ApiKeyStore(root / "api_keys.json", database_url=url, cache_seconds=0)
        result["key_check_idle"] = _timed(lambda: store.lookup("sb_bench_probe"), lookups)
        stop, produced = threading.Event(), [0]

        def produce() -> None:
            started = time.perf_counter()
            while not stop.is_set():
                due = int((time.perf_counter() - started) * steady_rate)
                while produced[0] < due:
                    _log(records, produced[0])
                    produced[0] += 1
                time.sleep(0.002)

        producer = threading.Thread(target=produce, daemon=True)
        producer.start()
        steady_started = time.perf_counter()
        result["key_check_while_logging"] = _timed(lambda: store.lookup("sb_bench_probe"), lookups)
        stop.set()
        producer.join()
        assert records.flush(120), "the writer fell behind"
        result["steady_rows_per_s"] = round(produced[0] / (time.perf_counter() - steady_started))
        result["steady_dropped"] = records.dropped_queries
    # Throughput: a backlog of `rows` queued as fast as possible, timed until written.
    enqueue = []
    dropped_before = records.dropped_queries
    started = time.perf_counter()
    for n in range(rows):
        before = time.perf_counter()
        _log(records, n)
        enqueue.append(time.perf_counter() - before)
    assert records.flush(600), "the writer did not finish"
    total_s = time.perf_counter() - started
    assert records.dropped_queries == dropped_before
    records.close()
    result.update(rows_per_s=round(rows / total_s), enqueue_p95_us=round(_percentiles(enqueue)["p95_ms"] * 1000, 1))
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.state_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--lookups", type=int, default=3000, help="timed reads per figure")
    parser.add_argument("--rows", type=int, default=50_000, help="query-log rows written")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(REPO / "tests"))
    from support.postgres import PostgresCluster

    report: dict = {"machine": platform.platform(), "python": platform.python_version(), "engines": {}}
    cluster = PostgresCluster().start()
    try:
        for engine in ("postgresql", "sqlite"):
            with tempfile.TemporaryDirectory(prefix=f"sb-state-bench-{engine}-") as folder:
                url = cluster.create_database() if engine == "postgresql" else None
                root = Path(folder)
                report["engines"][engine] = {
                    "reads": _request_path(url, root, args.lookups),
                    "writer": _writer(url, root, args.rows, args.lookups),
                }
    finally:
        cluster.stop()
        cluster.remove()

    lines = ["| engine | read | p50 ms | p95 ms | p99 ms |", "|---|---|---|---|---|"]
    for engine, figures in report["engines"].items():
        reads = dict(figures["reads"])
        writer = figures["writer"]
        if "key_check_while_logging" in writer:
            reads["key check, no cache, idle (same moment)"] = writer["key_check_idle"]
            reads[f"key check, no cache, while logging {writer['steady_rows_per_s']} rows/s"] = writer[
                "key_check_while_logging"
            ]
        for name, value in reads.items():
            lines.append(f"| {engine} | {name} | {value['p50_ms']} | {value['p95_ms']} | {value['p99_ms']} |")
    lines += ["", "| engine | backlog rows | rows/s (until written) | enqueue p95 µs |", "|---|---|---|---|"]
    for engine, figures in report["engines"].items():
        writer = figures["writer"]
        lines.append(f"| {engine} | {writer['rows']} | {writer['rows_per_s']} | {writer['enqueue_p95_us']} |")
    pg = report["engines"]["postgresql"]
    worst = max(value["p95_ms"] for value in pg["reads"].values())
    lines += [
        "",
        f"{'PASS' if worst <= 2.0 else 'MISS'} request-path state reads p95 <= 2 ms on PostgreSQL (worst {worst} ms)",
        f"{'PASS' if pg['writer']['rows_per_s'] >= 5000 else 'MISS'} query-log writer >= 5000 rows/s on PostgreSQL "
        f"({pg['writer']['rows_per_s']}; {pg['writer']['steady_dropped']} dropped at a steady "
        f"{pg['writer']['steady_rows_per_s']} rows/s)",
        f"load average at the end: {', '.join(f'{value:.2f}' for value in __import__('os').getloadavg())}",
    ]
    print("\n".join(lines))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "state.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
