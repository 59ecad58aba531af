"""
Store benchmark: QdrantEdgeDocumentStore against qdrant-haystack's local mode.

For each size (default 10k and 100k chunks of 384-d random unit vectors, 10 tenants,
tags, scopes, and Zipf-distributed English-like text for BM25) it measures:

- write throughput of ``write_documents`` in batches of 1,000 (validation, BM25
  vectors and the engine update included);
- p50/p95 latency of filtered dense, BM25 and hybrid (RRF) queries, top 10, each
  filtered by the access rule as the query pipeline sends it (tenant AND shared
  tag AND scope, and tainted != True); "hybrid+emb" also returns every
  candidate's dense embedding, as the query pipeline asks.

The same 10k data then goes into qdrant-haystack's local mode
(``QdrantDocumentStore(path=...)``, sparse IDF on), queried through its
retrievers with the same Haystack filters (fewer queries: each takes hundreds of
milliseconds); the table gives the speed-up ratios. Timings are wall-clock
around the store call, BM25 query embedding included, plus the process CPU
time; the report records the load average, since other work on the machine
inflates wall-clock percentiles.

``optimize()`` is not run unless ``--optimize`` is given: the store never
optimises implicitly, and the figures show what a freshly written store does.
(``--optimize`` at 100k takes ~9 CPU-minutes for the HNSW build.)

Usage:
    .venv/bin/python -m bench.store_bench [--sizes 10000 100000] [--queries 300] [--local-queries 20] [--optimize]

Writes ``bench/results/store.json`` and ``bench/results/store.md``.
"""

import argparse
import gc
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Document

from bench.report import percentile
from components.core.access_rule import AccessRule
from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore
from components.embedders.bm25_embedders import Bm25DocumentEmbedder, Bm25TextEmbedder

RESULTS_DIR = Path(__file__).resolve().parent / "results"
DIM = 384
TENANTS = 10
TAGS = [f"tag-{index:02d}" for index in range(20)]
BATCH = 1000
TOP_K = 10
SEED = 20240607
TARGET_HYBRID_P95_MS = 2.0
TARGET_SPEEDUP = 50.0

# Prose-like text: the most frequent ranks are English function words (BM25 drops them as stop words), then a
# long tail of ~6,000 invented words, drawn with Zipf's law so that some terms are common and most are rare.
_FUNCTION_WORDS = """
the of and to in is that for it as was with be by on not he this are or his from at which but have an they you
were her she there one all we their can has more been would if will other its so about when some who them these
may time into only new could also any than first our two such like then well most made over after where many
""".split()
_SYLLABLES = (
    "ka lo mi ne ru sa ti vo be da fe gi ho ju ke la mo ni po qu re si tu va we xi yo ze an el in or um".split()
)


def _vocabulary(size: int = 6000) -> list[str]:
    words, seen = list(_FUNCTION_WORDS), set(_FUNCTION_WORDS)
    rng = np.random.default_rng(SEED)
    while len(words) < size:
        word = "".join(rng.choice(_SYLLABLES, size=rng.integers(2, 5)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


_VOCABULARY = _vocabulary()


def _zipf_weights(size: int, exponent: float = 1.07) -> np.ndarray:
    weights = 1.0 / np.arange(1, size + 1) ** exponent
    return weights / weights.sum()


def _texts(rng: np.random.Generator, count: int, weights: np.ndarray) -> list[str]:
    lengths = rng.integers(80, 220, size=count)
    words = rng.choice(len(_VOCABULARY), size=int(lengths.sum()), p=weights)
    texts, start = [], 0
    for length in lengths:
        texts.append(" ".join(_VOCABULARY[index] for index in words[start : start + length]))
        start += length
    return texts


def generate_batches(total: int, seed: int = SEED) -> Iterator[list[Document]]:
    """Deterministic chunks in batches of ``BATCH``: same seed, same data (for both stores)."""
    rng = np.random.default_rng(seed)
    weights = _zipf_weights(len(_VOCABULARY))
    for start in range(0, total, BATCH):
        count = min(BATCH, total - start)
        vectors = rng.standard_normal((count, DIM), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)  # unit length, as all-MiniLM-L6-v2 emits
        texts = _texts(rng, count, weights)
        tag_counts = rng.integers(1, 4, size=count)
        scopes = rng.choice(["tenant", "user", "project"], size=count, p=[0.7, 0.15, 0.15])
        tainted = rng.random(count) < 0.02
        batch = []
        for offset in range(count):
            number = start + offset
            document_id = f"doc-{number // 8}"
            meta = {
                "tenant_id": f"tenant-{number % TENANTS}",
                "tags": sorted(rng.choice(TAGS, size=tag_counts[offset], replace=False).tolist()),
                "scope": str(scopes[offset]),
                "user_id": f"user-{number % 50}",
                "project_id": f"project-{number % 20}",
                "document_id": document_id,
                "chunk_index": number % 8,
                "source_type": "md",
                "verified": True,
                "tainted": bool(tainted[offset]),
            }
            chunk_id = f"{document_id}:{number % 8}"
            batch.append(Document(id=chunk_id, content=texts[offset], meta=meta, embedding=vectors[offset].tolist()))
        yield batch


def generate_queries(count: int, seed: int = SEED + 1) -> list[dict[str, Any]]:
    """Queries: a random vector, 2-5 words of text, and the access filter of a random user."""
    rng = np.random.default_rng(seed)
    # Query terms: frequent-to-rare content words (not the function words BM25 drops).
    content_words = _VOCABULARY[len(_FUNCTION_WORDS) : 3000]
    queries = []
    for _ in range(count):
        tenant = f"tenant-{rng.integers(TENANTS)}"
        user, project = f"user-{rng.integers(50)}", f"project-{rng.integers(20)}"
        user_tags = sorted(rng.choice(TAGS, size=3, replace=False).tolist())
        words = rng.choice(content_words, size=rng.integers(2, 6), replace=False).tolist()
        queries.append(
            {
                "vector": rng.standard_normal(DIM, dtype=np.float32).tolist(),
                "text": " ".join(words),
                "filters": access_filter(tenant, user_tags, user, project),
            }
        )
    return queries


def access_filter(tenant: str, tags: list[str], user: str, project: str) -> dict[str, Any]:
    """The filter the query pipeline sends: the access rule as ``components.core.access_rule`` builds it (tainted excluded)."""
    return AccessRule(tenant_id=tenant, user_tags=tuple(tags), user_id=user, project_id=project).to_filters()


def time_queries(
    run: Callable[[dict[str, Any]], list[Document]], queries: list[dict[str, Any]], warmup: int = 5
) -> dict:
    """
    Latency percentiles of ``run`` over the queries: wall clock, and CPU time of the whole process (all engine
    threads), which stays meaningful when other work competes for the cores.
    """
    for query in queries[:warmup]:
        run(query)
    wall, cpu, hits = [], [], 0
    for query in queries:
        started, started_cpu = time.perf_counter(), time.process_time()
        documents = run(query)
        cpu.append((time.process_time() - started_cpu) * 1000)
        wall.append((time.perf_counter() - started) * 1000)
        hits += len(documents)
    wall.sort()
    cpu.sort()
    return {
        "p50_ms": round(statistics.median(wall), 4),
        "p95_ms": round(percentile(wall, 0.95), 4),
        "cpu_p50_ms": round(statistics.median(cpu), 4),
        "cpu_p95_ms": round(percentile(cpu, 0.95), 4),
        "n": len(wall),
        "mean_hits": round(hits / len(queries), 2),
    }


def write_all(write: Callable[[list[Document]], Any], total: int) -> dict[str, float]:
    written, seconds = 0, 0.0
    for batch in generate_batches(total):
        started = time.perf_counter()
        write(batch)
        seconds += time.perf_counter() - started
        written += len(batch)
    return {"documents": written, "seconds": round(seconds, 3), "docs_per_s": round(written / seconds, 1)}


def bench_edge(size: int, queries: list[dict[str, Any]], workdir: Path, optimize: bool) -> dict[str, Any]:
    store = QdrantEdgeDocumentStore(path=str(workdir / f"edge-{size}"), embedding_dim=DIM)
    try:
        result: dict[str, Any] = {"write": write_all(store.write_documents, size)}
        result["queries"] = _edge_queries(store, queries)
        if optimize:
            started = time.perf_counter()
            store.optimize()
            result["optimize_s"] = round(time.perf_counter() - started, 1)
            result["queries_optimized"] = _edge_queries(store, queries)
        result["info"] = {key: value for key, value in store.info().items() if key != "path"}
        return result
    finally:
        store.close()


def _edge_queries(store: QdrantEdgeDocumentStore, queries: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "dense": time_queries(
            lambda q: store.embedding_retrieval(q["vector"], filters=q["filters"], top_k=TOP_K), queries
        ),
        "bm25": time_queries(lambda q: store.bm25_retrieval(q["text"], filters=q["filters"], top_k=TOP_K), queries),
        "hybrid": time_queries(
            lambda q: store.hybrid_retrieval(q["text"], q["vector"], filters=q["filters"], top_k=TOP_K), queries
        ),
        "hybrid+emb": time_queries(
            lambda q: store.hybrid_retrieval(
                q["text"], q["vector"], filters=q["filters"], top_k=TOP_K, return_embedding=True
            ),
            queries,
        ),
    }


def bench_qdrant_local(size: int, queries: list[dict[str, Any]], workdir: Path) -> dict[str, Any]:
    from haystack_integrations.components.retrievers.qdrant import (
        QdrantEmbeddingRetriever,
        QdrantHybridRetriever,
        QdrantSparseEmbeddingRetriever,
    )
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

    store = QdrantDocumentStore(
        path=str(workdir / f"qdrant-local-{size}"),
        embedding_dim=DIM,
        use_sparse_embeddings=True,
        sparse_idf=True,
        recreate_index=True,
        progress_bar=False,
        write_batch_size=BATCH,
    )
    try:
        sparse_documents = Bm25DocumentEmbedder()
        text_embedder = Bm25TextEmbedder()
        result: dict[str, Any] = {
            "write": write_all(lambda batch: store.write_documents(sparse_documents.run(batch)["documents"]), size)
        }
        dense = QdrantEmbeddingRetriever(document_store=store, top_k=TOP_K)
        sparse = QdrantSparseEmbeddingRetriever(document_store=store, top_k=TOP_K)
        hybrid = QdrantHybridRetriever(document_store=store, top_k=TOP_K)

        def bm25(query):
            embedding = text_embedder.run(query["text"])["sparse_embedding"]
            return sparse.run(query_sparse_embedding=embedding, filters=query["filters"])["documents"]

        def fused(query):
            embedding = text_embedder.run(query["text"])["sparse_embedding"]
            return hybrid.run(
                query_embedding=query["vector"], query_sparse_embedding=embedding, filters=query["filters"]
            )["documents"]

        result["queries"] = {
            "dense": time_queries(
                lambda q: dense.run(query_embedding=q["vector"], filters=q["filters"])["documents"], queries, 1
            ),
            "bm25": time_queries(bm25, queries, 1),
            "hybrid": time_queries(fused, queries, 1),
        }
        return result
    finally:
        store.close()


def _load_average() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def _versions() -> dict[str, str]:
    versions = {}
    for package in ("qdrant-edge-py", "qdrant-haystack", "qdrant-client", "haystack-ai"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "missing"
    return versions


def summarise(report: dict[str, Any]) -> dict[str, Any]:
    sizes = sorted(int(size) for size in report["edge"])
    largest = str(sizes[-1])
    summary: dict[str, Any] = {}
    hybrid_p95 = report["edge"][largest]["queries"]["hybrid"]["p95_ms"]
    summary["hybrid_p95_ms_at_largest"] = {
        "size": int(largest),
        "value": hybrid_p95,
        "cpu": report["edge"][largest]["queries"]["hybrid"]["cpu_p95_ms"],
        "target": TARGET_HYBRID_P95_MS,
        "met": hybrid_p95 <= TARGET_HYBRID_P95_MS,
    }
    local = report.get("qdrant_local")
    if local:
        size = next(iter(local))
        edge_queries, local_queries = report["edge"][size]["queries"], local[size]["queries"]
        ratios = {
            kind: {
                "p50": round(local_queries[kind]["p50_ms"] / edge_queries[kind]["p50_ms"], 1),
                "p95": round(local_queries[kind]["p95_ms"] / edge_queries[kind]["p95_ms"], 1),
            }
            for kind in ("dense", "bm25", "hybrid")
        }
        minimum = min(min(ratio.values()) for ratio in ratios.values())
        summary["speedup_vs_qdrant_local"] = {
            "size": int(size),
            "ratios": ratios,
            "min": minimum,
            "target": TARGET_SPEEDUP,
            "met": minimum >= TARGET_SPEEDUP,
        }
        summary["write_speedup_vs_qdrant_local"] = round(
            report["edge"][size]["write"]["docs_per_s"] / local[size]["write"]["docs_per_s"], 1
        )
    return summary


def markdown(report: dict[str, Any]) -> str:
    machine = report["machine"]
    lines = [
        "# Store benchmark",
        "",
        f"{machine['cpus']} CPUs (load average {machine['load_average_start']} at the start, "
        f"{machine['load_average_end']} at the end), Python {machine['python']}, "
        + ", ".join(f"{name} {version}" for name, version in machine["versions"].items())
        + f". {report['config']['queries']} queries per kind (qdrant-haystack local: {report['config']['local_queries']}), "
        f"top {TOP_K}, {DIM}-d vectors, {TENANTS} tenants; every query carries the access rule (tenant, tags, scope) "
        f"and `tainted != True`. Run at {report['started']}, {report['seconds']:.0f} s in all.",
        "",
        "Cells: wall-clock p50 / p95 in ms, then the process CPU time p95 (all engine threads), which other load on "
        "the machine inflates far less than wall time.",
        "",
        "| store | chunks | write docs/s | dense | BM25 | hybrid | hybrid + embeddings |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]

    def row(name: str, size: str, result: dict[str, Any], queries_key: str = "queries") -> str:
        cells = []
        for kind in ("dense", "bm25", "hybrid", "hybrid+emb"):
            figures = result[queries_key].get(kind)
            cells.append(
                f"{figures['p50_ms']:.3f} / {figures['p95_ms']:.3f} (cpu {figures['cpu_p95_ms']:.3f})"
                if figures
                else "-"
            )
        return f"| {name} | {int(size):,} | {result['write']['docs_per_s']:,.0f} | " + " | ".join(cells) + " |"

    for size, result in report["edge"].items():
        lines.append(row("Qdrant Edge", size, result))
        if "queries_optimized" in result:
            lines.append(
                row(f"Qdrant Edge, after optimize() ({result['optimize_s']} s)", size, result, "queries_optimized")
            )
    for size, result in (report.get("qdrant_local") or {}).items():
        lines.append(row("qdrant-haystack local", size, result))
    summary = report["summary"]
    lines += ["", "## Targets", ""]
    hybrid = summary["hybrid_p95_ms_at_largest"]
    lines.append(
        f"- filtered hybrid p95 at {hybrid['size']:,} chunks: {hybrid['value']:.3f} ms wall, {hybrid['cpu']:.3f} ms CPU "
        f"(target <= {hybrid['target']} ms): {'met' if hybrid['met'] else 'NOT met'} on wall time"
    )
    speedup = summary.get("speedup_vs_qdrant_local")
    if speedup:
        ratios = ", ".join(f"{kind} {ratio['p50']}x / {ratio['p95']}x" for kind, ratio in speedup["ratios"].items())
        lines.append(
            f"- speed-up over qdrant-haystack local mode at {speedup['size']:,} chunks (p50 / p95): {ratios}; "
            f"minimum {speedup['min']}x (target >= {speedup['target']:.0f}x): {'met' if speedup['met'] else 'NOT met'}"
        )
        lines.append(f"- write throughput: {summary['write_speedup_vs_qdrant_local']}x qdrant-haystack local mode")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000], help="store sizes in chunks")
    parser.add_argument("--queries", type=int, default=300, help="queries per kind for the Edge store")
    parser.add_argument(
        "--local-queries",
        type=int,
        default=20,
        help="queries per kind for qdrant-haystack local mode (~1.5 s per triple at 10k); 0 skips it",
    )
    parser.add_argument("--local-size", type=int, default=10_000, help="chunks for qdrant-haystack local mode")
    parser.add_argument("--optimize", action="store_true", help="also measure after optimize() (minutes at 100k)")
    parser.add_argument("--output", type=Path, default=RESULTS_DIR, help="folder for store.json and store.md")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    queries = generate_queries(args.queries)
    report: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "versions": _versions(),
            "load_average_start": _load_average(),
        },
        "config": {
            "sizes": args.sizes,
            "queries": args.queries,
            "local_queries": args.local_queries,
            "local_size": args.local_size,
            "top_k": TOP_K,
            "dim": DIM,
            "tenants": TENANTS,
            "batch": BATCH,
            "optimize": args.optimize,
        },
        "edge": {},
    }
    workdir = Path(tempfile.mkdtemp(prefix="sourcebound-store-bench-"))
    try:
        for size in args.sizes:
            print(f"Qdrant Edge, {size:,} chunks ...", file=sys.stderr, flush=True)
            report["edge"][str(size)] = bench_edge(size, queries, workdir, args.optimize)
            gc.collect()
        if args.local_queries:
            if str(args.local_size) not in report["edge"]:
                report["edge"][str(args.local_size)] = bench_edge(args.local_size, queries, workdir, False)
            print(f"qdrant-haystack local mode, {args.local_size:,} chunks ...", file=sys.stderr, flush=True)
            report["qdrant_local"] = {
                str(args.local_size): bench_qdrant_local(args.local_size, queries[: args.local_queries], workdir)
            }
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report["seconds"] = round(time.perf_counter() - started, 1)
    report["machine"]["load_average_end"] = _load_average()
    report["summary"] = summarise(report)

    args.output.mkdir(parents=True, exist_ok=True)
    (args.output / "store.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    text = markdown(report)
    (args.output / "store.md").write_text(text, encoding="utf-8")
    print(text)
    return report


if __name__ == "__main__":
    main()
