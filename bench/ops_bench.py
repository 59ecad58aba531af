"""
Operations benchmark: online backup, restore and migration to the server profile's collection.

On a data directory of SIZE chunks (``bench.store_bench``'s deterministic 384-d chunks over 10 tenants, plus a
``records.sqlite`` of query-log rows and a keys file) it measures:

- backup: the wall time of ``create_backup`` while one thread keeps writing (batches of 10 chunks) and one keeps
  querying (filtered hybrid, top 10); the write pause the backup reports, the longest single write seen by the
  writer during the backup (the pause as a writer feels it) and the longest query during the backup, each next
  to the same figure over the 15 s before the backup under the same writer and reader (the store's periodic
  flush alone stalls the process for a moment: the engine keeps the interpreter lock while it flushes);
- restore: the wall time of ``restore_backup`` (verification of every checksum, copy, opening and counting the
  restored shard);
- migration: chunks/s of ``migrate_store`` into the profile's collection in qdrant-client's local mode, in memory
  (``:memory:``: our read and conversion path plus the local engine's insert) and, for ``--local-path-size``
  chunks, on a local folder (the local engine pickles each point into SQLite: far slower than a Qdrant server).
  With ``--qdrant-url`` it also migrates into a real Qdrant server.

Usage:
    .venv/bin/python -m bench.ops_bench [--size 10000] [--local-path-size 1000] [--qdrant-url http://localhost:6333]

Prints the figures (Markdown) and writes ``bench/results/ops.json``.
"""

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.store_bench import DIM, generate_batches, generate_queries
from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore
from components.services.data_backup import create_backup, restore_backup
from components.services.store_migration import migrate_store, target_store

RESULTS_DIR = Path(__file__).resolve().parent / "results"
# How long the writer and reader run before the backup starts (the baseline of the longest write and query).
BEFORE_S = 15.0
EMBEDDING = {"model": "sentence-transformers/all-MiniLM-L6-v2", "dimension": DIM, "similarity": "cosine"}


def _profile_definition() -> dict[str, Any]:
    from hayhooks_app.cli.common import store_definition

    return store_definition("profiles/server/indexing")


def build_data_dir(data_dir: Path, size: int) -> QdrantEdgeDocumentStore:
    data_dir.mkdir(parents=True)
    store = QdrantEdgeDocumentStore(path=str(data_dir / "qdrant"), embedding_dim=DIM)
    for batch in generate_batches(size):
        store.write_documents(batch)
    store.flush()
    records = sqlite3.connect(data_dir / "records.sqlite")
    records.execute("PRAGMA journal_mode=WAL")
    records.execute("CREATE TABLE query_log (id INTEGER PRIMARY KEY, created_at REAL, tenant_id TEXT, query TEXT)")
    records.executemany(
        "INSERT INTO query_log (created_at, tenant_id, query) VALUES (?, ?, ?)",
        [(time.time(), f"tenant-{index % 10}", f"query {index}") for index in range(size)],
    )
    records.commit()
    records.close()
    (data_dir / "api_keys.json").write_text(json.dumps({"keys": []}))
    return store


def _du(path: Path) -> int:
    return sum(entry.stat().st_blocks * 512 for entry in path.rglob("*") if entry.is_file())


def bench_backup(store: QdrantEdgeDocumentStore, data_dir: Path, target: Path) -> dict[str, Any]:
    queries = generate_queries(200)
    rng = np.random.default_rng(5)

    def query(index: int) -> float:
        spec = queries[index % len(queries)]
        started = time.perf_counter()
        store.hybrid_retrieval(spec["text"], spec["vector"], filters=spec["filters"], top_k=10)
        return time.perf_counter() - started

    baseline = [query(index) for index in range(60)]
    stop, during = threading.Event(), threading.Event()
    write_times: list[tuple[bool, float]] = []
    query_times: list[tuple[bool, float]] = []

    def writer() -> None:
        number = 0
        template = next(generate_batches(10, seed=99))
        while not stop.is_set():
            batch = [
                doc.__class__(
                    id=f"live-{number + offset}:0",
                    content=doc.content,
                    meta={**doc.meta, "document_id": f"live-{number + offset}"},
                    embedding=rng.standard_normal(DIM).tolist(),
                )
                for offset, doc in enumerate(template)
            ]
            started = time.perf_counter()
            store.write_documents(batch)
            write_times.append((during.is_set(), time.perf_counter() - started))
            number += len(batch)

    def reader() -> None:
        index = 0
        while not stop.is_set():
            flag = during.is_set()
            query_times.append((flag, query(index)))
            index += 1

    threads = [threading.Thread(target=writer), threading.Thread(target=reader)]
    for thread in threads:
        thread.start()
    time.sleep(BEFORE_S)  # the same writer and reader without a backup: the baseline
    during.set()
    started = time.perf_counter()
    manifest = create_backup(data_dir, target, store, embedding=EMBEDDING, sourcebound_version="bench")
    seconds = time.perf_counter() - started
    during.clear()
    time.sleep(0.5)
    stop.set()
    for thread in threads:
        thread.join()
    writes_during = [elapsed for flag, elapsed in write_times if flag]
    queries_during = [elapsed for flag, elapsed in query_times if flag]
    writes_before = [elapsed for flag, elapsed in write_times if not flag]
    queries_before = [elapsed for flag, elapsed in query_times if not flag]
    return {
        "seconds": round(seconds, 2),
        "write_pause_s": manifest["write_pause_s"],
        "longest_write_during_backup_s": round(max(writes_during, default=0.0), 3),
        "writes_during_backup": len(writes_during),
        "longest_query_during_backup_ms": round(1000 * max(queries_during, default=0.0), 1),
        "queries_during_backup": len(queries_during),
        "query_p50_before_ms": round(1000 * statistics.median(baseline), 2),
        "longest_write_without_backup_s": round(max(writes_before, default=0.0), 3),
        "longest_query_without_backup_ms": round(1000 * max(queries_before, default=0.0), 1),
        "chunks": manifest["counts"]["chunks"],
        "files": len(manifest["files"]),
        "backup_disk_mb": round(_du(target) / 1e6, 1),
        "data_dir_disk_mb": round(_du(data_dir) / 1e6, 1),
    }


def bench_restore(backup: Path, target: Path, store: QdrantEdgeDocumentStore) -> dict[str, Any]:
    started = time.perf_counter()
    result = restore_backup(backup, target, embedding=EMBEDDING, store_definition=store.to_dict())
    return {"seconds": round(time.perf_counter() - started, 2), "chunks": result["counts"]["chunks"]}


def bench_migration(store: QdrantEdgeDocumentStore, location: str, limit_note: str = "") -> dict[str, Any]:
    target = target_store(_profile_definition(), location, collection="bench_ops")
    try:
        report = migrate_store(store, target, batch_size=256)
    finally:
        target.close()
    return {
        "location": location if "://" in location or location == ":memory:" else "local folder",
        "chunks": report["copied"],
        "seconds": report["seconds"],
        "chunks_per_s": report["chunks_per_s"],
        "note": limit_note,
    }


def bench_conversion(store: QdrantEdgeDocumentStore) -> dict[str, Any]:
    """Our side of a migration alone: read every point with its vectors and build the profile's points."""
    from components.services.store_migration import _record_point

    started = time.perf_counter()
    count = 0
    for records, _offset in store.scroll_points(batch_size=256):
        count += len([_record_point(record) for record in records])
    seconds = time.perf_counter() - started
    return {"chunks": count, "seconds": round(seconds, 2), "chunks_per_s": round(count / seconds, 1)}


def markdown(report: dict[str, Any]) -> str:
    backup, restore = report["backup"], report["restore"]
    lines = [
        f"### Operations at {report['size']:,} chunks",
        "",
        "| figure | value |",
        "|---|---|",
        f"| backup wall time (writer and reader running) | {backup['seconds']} s |",
        f"| write pause reported by the backup | {backup['write_pause_s']} s |",
        f"| longest single write during the backup (same load, no backup) | "
        f"{backup['longest_write_during_backup_s']} s ({backup['longest_write_without_backup_s']} s) |",
        f"| longest query during the backup (same load, no backup; idle p50 {backup['query_p50_before_ms']} ms) | "
        f"{backup['longest_query_during_backup_ms']} ms ({backup['longest_query_without_backup_ms']} ms); "
        f"{backup['queries_during_backup']} queries |",
        f"| backup size on disk (data dir) | {backup['backup_disk_mb']} MB ({backup['data_dir_disk_mb']} MB) |",
        f"| restore wall time (verify, copy, open and count) | {restore['seconds']} s |",
    ]
    conversion = report["conversion"]
    lines.append(
        f"| migration, read and convert only ({conversion['chunks']:,} chunks, no target) | "
        f"{conversion['chunks_per_s']:,.0f} chunks/s |"
    )
    for row in report["migration"]:
        lines.append(
            f"| migration into {row['location']} ({row['chunks']:,} chunks{row['note']}) | "
            f"{row['chunks_per_s']:,.0f} chunks/s |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10_000, help="chunks in the data directory (default 10,000)")
    parser.add_argument("--local-path-size", type=int, default=1000, help="chunks migrated into a local folder")
    parser.add_argument("--qdrant-url", help="also migrate into this Qdrant server")
    parser.add_argument("--workdir", help="scratch folder (default: a temporary one)")
    args = parser.parse_args(argv)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="sourcebound-ops-"))
    try:
        started = time.perf_counter()
        store = build_data_dir(workdir / "data", args.size)
        build_s = time.perf_counter() - started
        backup = bench_backup(store, workdir / "data", workdir / "backup")
        restore = bench_restore(workdir / "backup", workdir / "restored", store)
        conversion = bench_conversion(store)
        migration = [bench_migration(store, ":memory:")]
        small_dir = workdir / "small"
        small = QdrantEdgeDocumentStore(path=str(small_dir / "qdrant"), embedding_dim=DIM)
        try:
            for batch in generate_batches(args.local_path_size):
                small.write_documents(batch)
            migration.append(bench_migration(small, str(workdir / "qdrant-local"), ", pure-Python local mode"))
        finally:
            small.close()
        if args.qdrant_url:
            migration.append(bench_migration(store, args.qdrant_url))
        store.close()
        report = {
            "size": args.size,
            "build_seconds": round(build_s, 1),
            "cpus": os.cpu_count(),
            "load_average": list(os.getloadavg()),
            "backup": backup,
            "restore": restore,
            "conversion": conversion,
            "migration": migration,
        }
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "ops.json").write_text(json.dumps(report, indent=2))
    print(markdown(report))
    return report


if __name__ == "__main__":
    main()
