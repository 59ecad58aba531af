"""
Service-level benchmark: the real server over real HTTP, against the bare parts, in the same run.

For one prebuilt corpus (``bench.corpus``) it:

1. starts ``python -m hayhooks_app serve --host 127.0.0.1 --port <free> --data-dir <corpus>``
   (the store already holds the index), times process start to the first healthy
   ``GET /health``, and samples the server's RSS with psutil every 0.1 s (peak = the larger of
   the samples' maximum and the kernel's ``VmHWM``);
2. runs the **paired client** (``bench.paired_client``, a separate process): every
   ``/search/run`` and ``/rag/run`` request over loopback HTTP alternates with the same request
   through the **bare parts** (``BareParts``: the search pipeline's query embedder, built from its
   YAML, with the server's embedder threads, then ONE filtered hybrid query on
   a copy of the store: ``QdrantEdgeDocumentStore.hybrid_retrieval`` with the access filter the
   pipelines build; ``k`` results for search, the RAG pipeline's ``3 * max_context_chunks + 5``
   candidates with embeddings for RAG). Alternating one by one makes HTTP / bare robust to the
   shared machine's drifting load;
3. runs the load client (``bench/http_client.py``, stdlib only) for ``/search/run`` throughput
   at 1, 4 and 16 concurrent keep-alive clients; then stops the server (SIGTERM; uvicorn shuts
   down gracefully and re-raises the signal, so the exit code is -15).

Usage (normally through ``python -m bench``):

```python
from bench.service_bench import ServiceSettings, run_size
figures = run_size(10_000, ServiceSettings())
```
"""

import gzip
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.corpus import ensure_corpus, query_set
from bench.report import latency_summary

REPO = Path(__file__).resolve().parent.parent
CLIENT = Path(__file__).resolve().parent / "http_client.py"
LOG_DIR = Path(__file__).resolve().parent / "results" / "cache" / "logs"
# As tests/support/api_server.py: a hermetic server (the tracing run sets its own OTEL_* variables).
_DROPPED_PREFIXES = ("SOURCEBOUND_", "RAG_", "HAYHOOKS_", "OLLAMA_", "OTEL_", "HAYSTACK_CONTENT_TRACING")
SEARCH_K = 5
RAG_CONTEXT_CHUNKS = 5
RAG_FETCH_TOP_K = 3 * RAG_CONTEXT_CHUNKS + 5  # query.yml: over_fetch_factor 3, tie_margin 5


@dataclass
class ServiceSettings:
    """What one service run does (the CLI of ``python -m bench`` fills it)."""

    search_requests: int = 300
    rag_requests: int = 200
    concurrency: tuple[int, ...] = (1, 4, 16)
    throughput_seconds: float = 8.0
    torch_threads: int = 1
    start_timeout_s: float = 300.0
    # Serve with Haystack's own pipeline input copies (components.services.pipeline_copy not installed):
    # the "before" of that fix.
    haystack_copy: bool = False
    extra_env: dict[str, str] = field(default_factory=dict)


def search_body(query: dict[str, Any]) -> dict[str, Any]:
    return {**query, "k": SEARCH_K, "search_mode": "hybrid"}


def rag_body(query: dict[str, Any]) -> dict[str, Any]:
    return {**query, "max_context_chunks": RAG_CONTEXT_CHUNKS}


# ------------------------------------------------------------------ the server process


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class BenchServer:
    """``python -m hayhooks_app serve`` on a free loopback port, with start-up time and RSS sampling."""

    def __init__(self, data_dir: Path, log_path: Path, torch_threads: int = 1, extra_env: dict[str, str] | None = None,
                 haystack_copy: bool = False, cwd: Path = REPO):  # fmt: skip
        self.haystack_copy = haystack_copy
        self.cwd = cwd  # the checkout whose code serves (bench.ab_compare serves an earlier one beside this one)
        self.data_dir = data_dir
        self.log_path = log_path
        self.torch_threads = torch_threads
        self.extra_env = dict(extra_env or {})
        self.port = free_port()
        self.process: subprocess.Popen | None = None
        self.startup_s: float | None = None
        self.rss_samples: list[tuple[float, int]] = []
        self._sampling = threading.Event()
        self._sampler: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _environment(self) -> dict[str, str]:
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(_DROPPED_PREFIXES) and key != "CHAT_MODEL"
        }
        env.update(
            SOURCEBOUND_TORCH_THREADS=str(self.torch_threads),
            SOURCEBOUND_EMBEDDER_THREADS=str(self.torch_threads),
            PYTHONUNBUFFERED="1",
            **self.extra_env,
        )
        return env

    def start(self, timeout_s: float) -> "BenchServer":
        import psutil

        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        arguments = ["serve", "--host", "127.0.0.1", "--port", str(self.port), "--data-dir", str(self.data_dir)]
        command = [sys.executable, "-m", "hayhooks_app", *arguments]
        if self.haystack_copy:  # the same entry point with the input-copy fix switched off
            command = [
                sys.executable,
                "-c",
                "import sys, components.services.pipeline_copy as copy; copy.install_fast_input_copy = "
                f"lambda: False; from hayhooks_app.__main__ import main; sys.exit(main({arguments!r}))",
            ]
        with open(self.log_path, "wb") as log:
            started = time.monotonic()
            self.process = subprocess.Popen(
                command, cwd=self.cwd, env=self._environment(), stdout=log, stderr=subprocess.STDOUT
            )
        self._psutil = psutil.Process(self.process.pid)
        self._sampling.set()
        self._sampler = threading.Thread(target=self._sample, name="rss-sampler", daemon=True)
        self._sampler.start()
        while time.monotonic() - started < timeout_s:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"The server exited with {self.process.returncode}; log: {self.log_path}\n{self.log_tail()}"
                )
            health = self.health()
            if health is not None and health.get("status") == "healthy":
                self.startup_s = time.monotonic() - started
                return self
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(
            f"The server was not healthy within {timeout_s:.0f} s; log: {self.log_path}\n{self.log_tail()}"
        )

    def health(self) -> dict[str, Any] | None:
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=2) as response:  # noqa: S310 - loopback
                return json.loads(response.read())
        except (OSError, ValueError):
            return None

    def _sample(self) -> None:
        while self._sampling.is_set():
            try:
                self.rss_samples.append((time.monotonic(), self._psutil.memory_info().rss))
            except Exception:  # the process is gone
                return
            time.sleep(0.1)

    def rss_now(self) -> int:
        return self._psutil.memory_info().rss

    def cpu_s(self) -> float:
        """CPU seconds the server process has used (user + system, all threads): robust to the machine's load."""
        times = self._psutil.cpu_times()
        return times.user + times.system

    def wait_until_idle(self, timeout_s: float = 60.0, idle_cpu_s: float = 0.05) -> None:
        """
        Wait until the server spends no CPU on its own: it warms up for a few seconds after it reports healthy
        (~2-3 s of CPU at 100k chunks), which would otherwise count in the first CPU figure read after start.
        """
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            before = self.cpu_s()
            time.sleep(1.0)
            if self.cpu_s() - before < idle_cpu_s:
                return

    def peak_rss(self) -> int:
        """Peak resident memory: the kernel's high-water mark where it exists, else the sampled maximum."""
        sampled = max((rss for _at, rss in self.rss_samples), default=0)
        try:
            for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return max(sampled, int(line.split()[1]) * 1024)
        except OSError:
            pass
        return sampled

    def stop(self) -> int | None:
        self._sampling.clear()
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        return self.process.returncode

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


def run_client(url: str, runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Run the load client (a separate process) with these runs; returns the runs by name."""
    with tempfile.TemporaryDirectory(prefix="sourcebound-bench-client-") as temp:
        plan, out = Path(temp) / "plan.json", Path(temp) / "out.json"
        plan.write_text(json.dumps({"runs": runs}), encoding="utf-8")
        completed = subprocess.run([sys.executable, str(CLIENT), "--url", url, "--plan", str(plan), "--out", str(out)],
                                   capture_output=True, text=True, timeout=1800)  # fmt: skip
        if completed.returncode != 0:
            raise RuntimeError(f"The load client failed:\n{completed.stderr[-3000:]}")
        return {run["name"]: run for run in json.loads(out.read_text(encoding="utf-8"))["runs"]}


def _client_figures(run: dict[str, Any]) -> dict[str, Any]:
    ok = run["statuses"].get("200", 0)
    figures = {**latency_summary(run["latencies_ms"]), "requests_per_s": run["requests_per_s"], "ok": ok,
               "errors": run["completed"] - ok, "mean_results": run["mean_results"]}  # fmt: skip
    if run.get("server_ms"):
        # The search service's own time (QueryService: the pipeline and response model), measured in the server.
        figures["in_server_search_p50_ms"] = latency_summary(run["server_ms"])["p50_ms"]
    if run["actions"]:
        figures["actions"] = run["actions"]
    if run["errors"]:
        figures["error_samples"] = run["errors"]
    return figures


# ------------------------------------------------------------------ the bare parts, in process


def embedder_declaration(pipeline: dict[str, Any], name: str = "embedder") -> tuple[type, dict[str, Any]]:
    """The class and the YAML declaration of a pipeline dict's embedder."""
    import importlib

    data = pipeline["components"][name]
    module, _, cls = data["type"].rpartition(".")
    return getattr(importlib.import_module(module), cls), data


def embedder_backend() -> dict[str, Any]:
    """What embeds queries and documents: the classes the YAML names and the runtime under them."""
    from importlib import metadata

    from components.services.pipeline_loader import load_pipeline_dict

    query = load_pipeline_dict("search")["components"]["embedder"]["type"].rpartition(".")[2]
    documents = load_pipeline_dict("indexing")["components"]["embedder"]["type"].rpartition(".")[2]
    runtime = "onnxruntime" if query.startswith("Onnx") else "torch"
    try:
        version = metadata.version(runtime)
    except metadata.PackageNotFoundError:
        version = "missing"
    return {"query": query, "documents": documents, "runtime": f"{runtime} {version}", "dtype": "float32"}


def query_embedder(threads: int) -> Any:
    """The search pipeline's own query embedder (pipelines/search.yml: class, model, ...), built from its YAML, warm."""
    from haystack.core.serialization import component_from_dict

    from components.services.pipeline_loader import load_pipeline_dict

    embedder_type, data = embedder_declaration(load_pipeline_dict("search"))
    data = {**data, "init_parameters": {**data.get("init_parameters", {}), "threads": threads}}
    embedder = component_from_dict(embedder_type, data, "embedder")
    embedder.warm_up()
    return embedder


class BareParts:
    """
    The query embedder and the store, in process: what a request needs without the service around it.

    :param torch_threads: embedder threads (the server's, so both embed alike; the name predates ONNX Runtime).
    :param store_path: The store folder (a copy of the server's ``<data dir>/qdrant``).
    """

    def __init__(self, torch_threads: int, store_path: str):
        from components.builders.access_filter_builder import AccessFilterBuilder
        from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore

        self.torch_threads = torch_threads
        self.embedder = query_embedder(torch_threads)
        self.embedder_type = type(self.embedder)
        self.filter_builder = AccessFilterBuilder()  # the filter the pipelines build (default options)
        self.store = QdrantEdgeDocumentStore(path=store_path, embedding_dim=384)

    def filters(self, body: dict[str, Any]) -> dict[str, Any]:
        """The access filter of a request, as the pipelines' ``AccessFilterBuilder`` makes it."""
        return self.filter_builder.run(
            tenant_id=body["tenant_id"],
            user_tags=body["user_tags"],
            user_id=body.get("user_id"),
            project_id=body.get("project_id"),
        )["filters"]

    def run(self, kind: str, body: dict[str, Any]) -> int:
        """
        ``search``: embed + one filtered hybrid query for ``k`` results; ``rag_retrieval``: embed + the RAG
        pipeline's retrieval (``3 * max_context_chunks + 5`` candidates with embeddings). Returns the result count.
        """
        filters = self.filters(body)
        embedding = self.embedder.run(text=body["query"])["embedding"]
        if kind == "search":
            return len(self.store.hybrid_retrieval(body["query"], embedding, filters=filters, top_k=SEARCH_K))
        return len(self.store.hybrid_retrieval(body["query"], embedding, filters=filters, top_k=RAG_FETCH_TOP_K,
                                               return_embedding=True))  # fmt: skip

    def split_timings(self, bodies: list[dict[str, Any]]) -> dict[str, list[float]]:
        """The bare search's two halves over the same queries: ``embed_ms`` and ``retrieve_ms``."""
        embed_ms, retrieve_ms = [], []
        for body in bodies:
            filters = self.filters(body)
            started = time.perf_counter()
            embedding = self.embedder.run(text=body["query"])["embedding"]
            middle = time.perf_counter()
            self.store.hybrid_retrieval(body["query"], embedding, filters=filters, top_k=SEARCH_K)
            embed_ms.append((middle - started) * 1000.0)
            retrieve_ms.append((time.perf_counter() - middle) * 1000.0)
        return {"embed_ms": embed_ms, "retrieve_ms": retrieve_ms}

    def close(self) -> None:
        self.store.close()


# ------------------------------------------------------------------ one corpus size


def _reset_run_state(data_dir: Path) -> None:
    """Drop what a previous server run left in the cached data dir (records, tag directory), so runs start alike."""
    for name in ("records.sqlite", "records.sqlite-wal", "records.sqlite-shm", "records.sqlite.key", "tags.sqlite",
                 "tags.sqlite-wal", "tags.sqlite-shm"):  # fmt: skip
        (data_dir / name).unlink(missing_ok=True)


def run_paired(url: str, store_copy: Path, plan: dict[str, Any]) -> dict[str, Any]:
    """Run ``bench.paired_client`` (a separate process) with this plan."""
    with tempfile.TemporaryDirectory(prefix="sourcebound-bench-paired-") as temp:
        plan_path, out = Path(temp) / "plan.json", Path(temp) / "out.json"
        plan_path.write_text(json.dumps(plan), encoding="utf-8")
        command = [sys.executable, "-m", "bench.paired_client", "--url", url, "--store-copy", str(store_copy),
                   "--plan", str(plan_path), "--out", str(out)]  # fmt: skip
        completed = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=1800)
        if completed.returncode != 0:
            raise RuntimeError(f"The paired client failed:\n{completed.stderr[-3000:]}")
        return json.loads(out.read_text(encoding="utf-8"))


def _copy_store(data_dir: Path, target: Path) -> Path:
    """A private copy of the store folder for the bare side (without the folder lock)."""
    copy = target / "qdrant"
    shutil.copytree(data_dir / "qdrant", copy, ignore=shutil.ignore_patterns(".sourcebound.lock"))
    return copy


def _throughput_ratio(throughput: dict[str, Any], many: str, one: str) -> float | None:
    if many not in throughput or one not in throughput or not throughput[one]["requests_per_s"]:
        return None
    return round(throughput[many]["requests_per_s"] / throughput[one]["requests_per_s"], 2)


def run_size(size: int, settings: ServiceSettings, log=print) -> dict[str, Any]:
    """Every service-level figure for one corpus size (see the module docstring)."""
    data_dir, manifest = ensure_corpus(size)
    _reset_run_state(data_dir)
    queries = query_set(max(settings.search_requests, settings.rag_requests))
    search_bodies = [search_body(q) for q in queries[: settings.search_requests]]
    rag_bodies = [rag_body(q) for q in queries[: settings.rag_requests]]

    with tempfile.TemporaryDirectory(prefix="sourcebound-bench-bare-") as temp:
        store_copy = _copy_store(data_dir, Path(temp))
        log("  starting the server ...")
        server = BenchServer(data_dir, LOG_DIR / f"server-{size}.log", settings.torch_threads, settings.extra_env,
                             settings.haystack_copy)  # fmt: skip
        try:
            server.start(settings.start_timeout_s)
            health = server.health() or {}
            idle_rss = server.rss_now()
            log(f"  healthy after {server.startup_s:.1f} s, {health.get('store', {}).get('points')} points; "
                "HTTP and bare, alternating ...")  # fmt: skip
            server.wait_until_idle()
            cpu_before = server.cpu_s()
            paired = run_paired(server.url, store_copy, {
                "torch_threads": settings.torch_threads,
                "pairs": [
                    {"name": "search", "path": "/search/run", "bare": "search", "bodies": search_bodies,
                     "requests": settings.search_requests, "warmup": 10},
                    {"name": "rag", "path": "/rag/run", "bare": "rag_retrieval", "bodies": rag_bodies,
                     "requests": settings.rag_requests, "warmup": 5},
                ],
            })  # fmt: skip
            # Every request the server answered in the paired phase, warm-ups included (10 search, 5 RAG).
            paired_requests = settings.search_requests + settings.rag_requests + 15
            server_cpu_ms = round((server.cpu_s() - cpu_before) * 1000 / paired_requests, 2)
            log("  throughput ...")
            runs = [
                {"name": f"search_c{clients}", "path": "/search/run", "bodies": search_bodies, "concurrency": clients,
                 "duration_s": settings.throughput_seconds, "warmup": clients}
                for clients in settings.concurrency
            ]  # fmt: skip
            throughput_runs = run_client(server.url, runs)
            loaded_rss = server.rss_now()
            peak_rss = server.peak_rss()
        finally:
            code = server.stop()
    log(f"  server stopped (exit {code})")

    pairs = {pair["name"]: pair for pair in paired["pairs"]}
    search, rag = _client_figures(pairs["search"]), _client_figures(pairs["rag"])
    bare = {
        "search": latency_summary(pairs["search"]["bare_ms"]),
        "rag_retrieval": latency_summary(pairs["rag"]["bare_ms"]),
        # The floor: the bare query embedding, interleaved with every paired request of both endpoints.
        "embed": latency_summary(pairs["search"]["embed_ms"] + pairs["rag"]["embed_ms"]),
        "embed_separately": latency_summary(paired["embed_ms"]),
        "retrieve": latency_summary(paired["retrieve_ms"]),
    }
    throughput = {
        str(clients): _client_figures(throughput_runs[f"search_c{clients}"]) for clients in settings.concurrency
    }
    return {
        "size": size,
        "tracing": "OTEL_EXPORTER_OTLP_ENDPOINT" in settings.extra_env,
        "corpus": manifest,
        "startup_s": round(server.startup_s, 2),
        "rss_mb": {
            "idle": round(idle_rss / 2**20, 1),
            "after_load": round(loaded_rss / 2**20, 1),
            "peak": round(peak_rss / 2**20, 1),
        },  # fmt: skip
        "health_store": {key: value for key, value in (health.get("store") or {}).items() if key != "path"},
        "http": {"search": search, "rag": rag},
        "bare": bare,
        "ratios": {
            "search_http_over_bare_p50": round(search["p50_ms"] / bare["search"]["p50_ms"], 2),
            "search_http_over_bare_p95": round(search["p95_ms"] / bare["search"]["p95_ms"], 2),
            "rag_http_over_bare_retrieval_p50": round(rag["p50_ms"] / bare["rag_retrieval"]["p50_ms"], 2),
            # Ratios to the floor measured in the same run (bench/README.md, "Targets").
            "search_p95_over_embed_p50": round(search["p95_ms"] / bare["embed"]["p50_ms"], 2),
            "rag_p95_over_embed_p50": round(rag["p95_ms"] / bare["embed"]["p50_ms"], 2),
            "throughput_4_over_1": _throughput_ratio(throughput, "4", "1"),
        },
        "throughput": throughput,
        "server_cpu_ms_per_request": server_cpu_ms,
        "server_log": str(server.log_path),
        "server_exit_code": code,
        "torch_threads": settings.torch_threads,
        "fast_input_copy": not settings.haystack_copy,
    }


class OtlpSink:
    """
    A local OTLP/HTTP endpoint (threaded ``http.server`` on 127.0.0.1, a free port) that accepts
    ``POST /v1/traces`` exports, gzip or not, as the SDK's OTLP/HTTP exporter sends them, and counts
    the exports and their spans (for the tracing-on run: the server exports as it would to a
    collector, over loopback). Subclasses override :meth:`handle` to keep what they need
    (``tests/support/otlp_receiver.py`` decodes every span).
    """

    def __init__(self):
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
            ExportTraceServiceResponse,
        )

        sink = self
        self.exports = 0
        self.spans = 0
        self._lock = threading.Lock()
        reply = ExportTraceServiceResponse().SerializeToString()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                if self.path != "/v1/traces":
                    self.send_response(404)
                    self.end_headers()
                    return
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                sink.handle(ExportTraceServiceRequest.FromString(body))
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def handle(self, request: Any) -> None:
        """Count one export (an ``ExportTraceServiceRequest``) and its spans."""
        spans = sum(len(scope.spans) for resource in request.resource_spans for scope in resource.scope_spans)
        with self._lock:
            self.exports += 1
            self.spans += spans

    @property
    def url(self) -> str:
        """The base URL, as ``OTEL_EXPORTER_OTLP_ENDPOINT`` takes it (the exporter adds ``/v1/traces``)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()


def _overhead(off: dict[str, Any], on: dict[str, Any]) -> dict[str, Any]:
    """Tracing on over off: raw latency and throughput ratios, and the drift-robust ratio of HTTP/bare ratios."""

    def ratio(a: float | None, b: float | None) -> float | None:
        return round(a / b, 3) if a and b else None

    figures: dict[str, Any] = {}
    for kind in ("search", "rag"):
        for stat in ("p50_ms", "p95_ms"):
            a, b = off["http"][kind][stat], on["http"][kind][stat]
            figures[f"{kind}_{stat}"] = {"off": a, "on": b, "on_over_off": ratio(b, a)}
    for name in ("search_http_over_bare_p50", "rag_http_over_bare_retrieval_p50"):
        figures[name] = {"off": off["ratios"][name], "on": on["ratios"][name],
                         "on_over_off": ratio(on["ratios"][name], off["ratios"][name])}  # fmt: skip
    figures["server_cpu_ms_per_request"] = {
        "off": off.get("server_cpu_ms_per_request"),
        "on": on.get("server_cpu_ms_per_request"),
        "on_over_off": ratio(on.get("server_cpu_ms_per_request"), off.get("server_cpu_ms_per_request")),
    }
    for clients in off["throughput"]:
        a, b = off["throughput"][clients]["requests_per_s"], on["throughput"][clients]["requests_per_s"]
        figures[f"search_rps_c{clients}"] = {"off": a, "on": b, "on_over_off": ratio(b, a)}
    return figures


def run_tracing_comparison(size: int, settings: ServiceSettings, log=print) -> dict[str, Any]:
    """
    The service bench twice on one corpus: tracing off (no ``OTEL_*`` endpoint, as served by default), then on
    (``OTEL_EXPORTER_OTLP_ENDPOINT`` at a local OTLP sink, every request sampled). Returns both runs' figures and
    ``overhead`` (on / off). The runs are sequential (one server holds the store at a time), so the HTTP/bare ratios,
    measured alternately within each run, are the figures robust to the shared machine's load drift.
    """
    log("  tracing off ...")
    off = run_size(size, settings, log=log)
    with OtlpSink() as sink:
        traced = ServiceSettings(**{**vars(settings), "extra_env": {
            **settings.extra_env, "OTEL_EXPORTER_OTLP_ENDPOINT": sink.url, "OTEL_SERVICE_NAME": "sourcebound-bench",
            "OTEL_TRACES_SAMPLER": "always_on"}})  # fmt: skip
        log(f"  tracing on, exporting to {sink.url} ...")
        on = run_size(size, traced, log=log)
        exported = {"exports": sink.exports, "spans": sink.spans}
    return {"off": off, "on": on, "exported": exported, "overhead": _overhead(off, on)}
