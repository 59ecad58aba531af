"""
Compaction benchmark: what erasing a tenant costs in the Qdrant Edge store (docs/contract.md, "Deletion").

For each size (default 10k and 100k chunks: the store benchmark's deterministic 384-d chunks and Zipf text,
10 tenants) it builds a shard, then measures, in one run:

- the floor: writing the same chunks into a fresh shard (``write_documents`` in batches of 1,000);
- invalidating one document (8 chunks) as the service does (delete, no compaction): its latency, as a ratio to
  the median filtered hybrid query on the idle store;
- a tenant erasure (``delete_by_filter(..., purge=True)``: delete a tenth of the chunks, rebuild the shard from
  the rest, swap it in): its wall time, as a ratio to the floor, and the folder's size before and after;
- queries during the compaction (a reader thread running a filtered hybrid query every 10 ms): how many were
  answered and their p50/p95 against the idle p50, and the longest query (the swap holds queries back).

Usage:
    .venv/bin/python -m bench.compaction_bench [--sizes 10000 100000] [--queries 200]

Writes ``bench/results/compaction.json``.
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.report import latency_summary
from bench.store_bench import DIM, generate_batches, generate_queries
from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore
from components.document_stores.qdrant_edge.compaction import folder_bytes

RESULTS_DIR = Path(__file__).resolve().parent / "results"
# The reader's pause between queries (~100 queries/s): steady traffic, not a loop that keeps the interpreter lock.
READER_PAUSE_S = 0.01


def _build(path: Path, size: int) -> tuple[QdrantEdgeDocumentStore, float]:
    store = QdrantEdgeDocumentStore(path=str(path), embedding_dim=DIM)
    started = time.perf_counter()
    for batch in generate_batches(size):
        store.write_documents(batch)
    store.flush()
    return store, time.perf_counter() - started


def _hybrid(store: QdrantEdgeDocumentStore, query: dict[str, Any]) -> list:
    return store.hybrid_retrieval(query["text"], query["vector"], filters=query["filters"], top_k=10)


def _timed(store: QdrantEdgeDocumentStore, queries: list[dict[str, Any]]) -> list[float]:
    samples = []
    for query in queries:
        started = time.perf_counter()
        _hybrid(store, query)
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def bench_size(size: int, queries: list[dict[str, Any]], workdir: Path) -> dict[str, Any]:
    # The floor: the same chunks written into a fresh shard (what a rebuild cannot beat by much).
    floor_store, floor_s = _build(workdir / f"floor-{size}", size)
    floor_store.close()
    shutil.rmtree(workdir / f"floor-{size}")

    store, _ = _build(workdir / f"shard-{size}", size)
    try:
        for query in queries[:5]:
            _hybrid(store, query)
        idle = latency_summary(_timed(store, queries))

        invalidate_ms = []
        for number in range(20):
            document = {"field": "meta.document_id", "operator": "==", "value": f"doc-{number * 37}"}
            started = time.perf_counter()
            store.delete_by_filter(document)  # 8 chunks, without compaction: what an invalidation does
            invalidate_ms.append((time.perf_counter() - started) * 1000)
        invalidation = latency_summary(invalidate_ms)

        during: list[float] = []
        stop = threading.Event()

        def reader() -> None:
            index = 0
            while not stop.wait(READER_PAUSE_S):
                started = time.perf_counter()
                _hybrid(store, queries[index % len(queries)])
                during.append((time.perf_counter() - started) * 1000)
                index += 1

        thread = threading.Thread(target=reader, daemon=True)
        before_bytes = folder_bytes(store.path)
        thread.start()
        started = time.perf_counter()
        tenant_0 = {"field": "meta.tenant_id", "operator": "==", "value": "tenant-0"}
        erased = store.delete_by_filter(tenant_0)
        compaction = store.purge_deleted()  # what delete_by_filter(..., purge=True) runs, with its report
        erase_s = time.perf_counter() - started
        stop.set()
        thread.join()
        after_bytes = folder_bytes(store.path)
        survivors = store.count_documents()
        after_idle = latency_summary(_timed(store, queries))
    finally:
        store.close()
        shutil.rmtree(workdir / f"shard-{size}", ignore_errors=True)
    during_summary = latency_summary(during)
    return {
        "size": size,
        "floor_write_s": round(floor_s, 2),
        "idle_hybrid": idle,
        "invalidate_one_document": invalidation,
        "invalidate_p50_over_query_p50": round(invalidation["p50_ms"] / idle["p50_ms"], 2),
        "erased_chunks": erased,
        "surviving_chunks": survivors,
        "erase_with_compaction_s": round(erase_s, 2),
        "erase_over_floor": round(erase_s / floor_s, 2),
        "chunks_per_s": round(survivors / erase_s),
        "copy_s": compaction["copy_s"],
        "swap_s": compaction["swap_s"],
        "bytes_before": before_bytes,
        "bytes_after": after_bytes,
        "queries_during": during_summary,
        "queries_during_max_ms": round(max(during), 1) if during else None,
        "during_p50_over_idle_p50": round(during_summary["p50_ms"] / idle["p50_ms"], 2) if during else None,
        "hybrid_after_compaction": after_idle,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--output", type=Path, default=RESULTS_DIR / "compaction.json")
    args = parser.parse_args(argv)
    queries = generate_queries(args.queries)
    load_before = os.getloadavg()
    started = time.strftime("%Y-%m-%d %H:%M")
    results = []
    with tempfile.TemporaryDirectory(prefix="sb-compaction-") as scratch:
        for size in args.sizes:
            result = bench_size(size, queries, Path(scratch))
            results.append(result)
            print(
                f"{size:>7} chunks: erase {result['erased_chunks']} + compaction {result['erase_with_compaction_s']} s "
                f"= {result['erase_over_floor']}x the floor ({result['floor_write_s']} s to write them all; "
                f"{result['chunks_per_s']} chunks/s; copy {result['copy_s']} s, swap {result['swap_s']} s); "
                "invalidate one document p50 "
                f"{result['invalidate_one_document']['p50_ms']} ms = {result['invalidate_p50_over_query_p50']}x a "
                f"hybrid query (p50 {result['idle_hybrid']['p50_ms']} ms); during compaction "
                f"{result['queries_during']['n']} queries, p50 {result['queries_during']['p50_ms']} ms "
                f"({result['during_p50_over_idle_p50']}x idle), max {result['queries_during_max_ms']} ms; "
                f"{result['bytes_before'] / 1e6:.0f} -> {result['bytes_after'] / 1e6:.0f} MB",
                flush=True,
            )
    report = {
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "load_average_before": [round(value, 2) for value in load_before],
        "load_average_after": [round(value, 2) for value in os.getloadavg()],
        "started": started,
        "results": results,
        "median_erase_over_floor": statistics.median(result["erase_over_floor"] for result in results),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
