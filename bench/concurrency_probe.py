"""
What serializes the request path: each part of a ``/search`` run on one thread, then on two at once
(docs/operations.md, "Scale on paper").

A part that releases the interpreter (ONNX Runtime's forward pass) does ~2x the work per second on two
threads of a 2-core machine; a part that keeps it (a binding without ``allow_threads``) does the same or less.
Parts: the query embedding, the engine's filtered dense query (raw ``shard.query``, with payload, as the
retrievers ask), and the store's ``embedding_retrieval`` (the engine query plus our conversion to Documents).

Usage: ``python -m bench.concurrency_probe [--size 100000] [--calls 400]`` (the cached bench corpus of that size;
``python -m bench`` builds it). Prints one line per part and writes ``results/concurrency.json``.
"""

import argparse
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bench.corpus import ensure_corpus

RESULTS = Path(__file__).parent / "results"


def calls_per_second(call: Callable[[int], None], threads: int, calls: int) -> float:
    """``calls`` calls of ``call(i)`` split over ``threads`` threads; the rate over the whole wall time."""
    share = calls // threads

    def work(worker: int) -> None:
        for index in range(worker * share, (worker + 1) * share):
            call(index)

    pool = [threading.Thread(target=work, args=(worker,)) for worker in range(threads)]
    started = time.perf_counter()
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return share * threads / (time.perf_counter() - started)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000, help="bench corpus size (chunks)")
    parser.add_argument("--calls", type=int, default=400, help="calls per measurement")
    args = parser.parse_args(argv)

    from qdrant_edge import Query, QueryRequest

    from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore
    from components.document_stores.qdrant_edge.document_store import DENSE_VECTOR_NAME
    from components.document_stores.qdrant_edge.filters import convert_filters
    from components.embedders.onnx_embedding import load_encoder

    data_dir, _manifest = ensure_corpus(args.size)
    store = QdrantEdgeDocumentStore(path=str(data_dir / "qdrant"), embedding_dim=384)
    shard = store._shard_state().shard
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(args.calls, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    tenant = {"field": "meta.tenant_id", "operator": "==", "value": "tenant-03"}
    requests = [
        QueryRequest(
            limit=20,
            query=Query.Nearest(vector.tolist(), using=DENSE_VECTOR_NAME),
            filter=convert_filters(tenant),
            with_payload=True,
            with_vector=False,
        )
        for vector in vectors
    ]
    encoder = load_encoder("packaged:all-MiniLM-L6-v2", 1)
    questions = [f"How many vacation days may team leads carry over into year {index}?" for index in range(args.calls)]
    parts: dict[str, Callable[[int], None]] = {
        "query embedding (ONNX Runtime, 1 intra-op thread)": lambda i: encoder.encode([questions[i]], batch_size=1),
        "engine dense query (qdrant-edge shard.query)": lambda i: shard.query(requests[i]),
        "store embedding_retrieval (engine + Documents)": lambda i: store.embedding_retrieval(
            vectors[i].tolist(), filters=tenant, top_k=20
        ),
    }
    # Two threads can only show parallel work on two idle cores: the load average says how idle they were.
    figures = {"size": args.size, "calls": args.calls, "load_average_1m": round(os.getloadavg()[0], 2), "parts": {}}
    print(f"load average {figures['load_average_1m']} on {os.cpu_count()} CPUs", flush=True)
    try:
        for name, call in parts.items():
            calls_per_second(call, 1, max(20, args.calls // 10))  # warm-up
            one = calls_per_second(call, 1, args.calls)
            two = calls_per_second(call, 2, args.calls)
            figures["parts"][name] = {"one_thread_per_s": round(one, 1), "two_threads_per_s": round(two, 1)}
            ratio = two / one
            verdict = "in parallel" if ratio >= 1.6 else "serialized" if ratio <= 1.15 else "partly in parallel"
            print(f"{name}: {one:.0f}/s on one thread, {two:.0f}/s on two: x{ratio:.2f}, {verdict}", flush=True)
    finally:
        store.close()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "concurrency.json").write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
