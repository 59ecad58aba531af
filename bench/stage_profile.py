"""
Where a ``/search/run`` and a ``/rag/run`` spend their time, stage by stage, in the process that serves them.

The profile process runs ``python -m hayhooks_app serve`` itself (``hayhooks_app.__main__.main``, in its main
thread: the same app, uvicorn settings, logging and wrappers as served) with probes patched onto the stage
boundaries, and a client in a separate process (``bench.http_client.Connection``: one keep-alive connection,
sequential) sends ``/search/run`` and ``/rag/run`` requests alternately, each followed by the bare query
embedding of the same text (the floor: ``BareParts``' embedder, the search pipeline's own, one thread).

Each probe switches the current stage of its thread and charges the thread's CPU time (``time.thread_time_ns``:
what the stage itself computed, not what other jobs on the machine took from it) and wall time since the last
switch to the stage it leaves. Stages, in request order:

* event-loop thread: ``uvicorn: socket, HTTP parse, write`` (between one request's app exit and the next's entry),
  ``ASGI middleware, routing`` (everything in the app not named below), ``strict JSON check`` (the request guard's
  ``_check_json``), ``FastAPI body parse``, ``FastAPI request model``, ``Hayhooks handler`` (the endpoint's own
  work: dump, trace tags, log lines), ``worker thread hop`` (the loop waits for the worker; wall only),
  ``FastAPI response model + JSON``, ``uvicorn write`` (the response's ``send``);
* worker thread: ``wrapper: request model``, ``identity``, ``request service``, ``query service: request``,
  ``pipeline scheduler`` (Haystack's ``Pipeline.run`` outside the components and copies), ``input copies``, one
  stage per component (``component <name>``), ``query service: response``, ``query log``.

The table gives each stage's mean CPU ms per request and share of the server's CPU per request, and its wall p50.
Probes cost ~1 µs each (~40 per request). ``python -m bench`` runs this as its ``stages`` phase; on its own:

```bash
.venv/bin/python -m bench.stage_profile --size 10000 --requests 150
```
"""

import argparse
import asyncio
import functools
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
LOOP_WAIT = "worker thread hop"
UVICORN = "uvicorn: socket, HTTP parse, write"
ASGI = "ASGI middleware, routing"
FORWARD = "ONNX Runtime forward pass (releases the GIL)"


class StageClock:
    """Per-thread current stage; each switch charges the thread's CPU and wall time since the last one."""

    def __init__(self) -> None:
        self._local = threading.local()
        self.cpu_ns: dict[str, int] = defaultdict(int)
        self.wall_ns: dict[str, int] = defaultdict(int)
        self._lock = threading.Lock()

    def switch(self, stage: str | None) -> str | None:
        cpu, wall = time.thread_time_ns(), time.perf_counter_ns()
        local = self._local
        previous = getattr(local, "stage", None)
        if previous is not None:
            with self._lock:
                self.cpu_ns[previous] += cpu - local.cpu
                self.wall_ns[previous] += wall - local.wall
        local.stage, local.cpu, local.wall = stage, cpu, wall
        return previous

    def take(self) -> dict[str, tuple[int, int]]:
        """The totals since the last take, ``{stage: (cpu_ns, wall_ns)}``, and reset."""
        with self._lock:
            taken = {stage: (self.cpu_ns[stage], self.wall_ns.get(stage, 0)) for stage in self.cpu_ns}
            self.cpu_ns.clear()
            self.wall_ns.clear()
        return taken


CLOCK = StageClock()
RECORDS: list[dict[str, Any]] = []


def staged(function, stage: str, after: str | None = None):
    """``function`` run as ``stage``; afterwards the thread is in ``after`` (default: the stage it was in)."""

    @functools.wraps(function)
    def run(*args, **kwargs):
        previous = CLOCK.switch(stage)
        try:
            return function(*args, **kwargs)
        finally:
            CLOCK.switch(after or previous)

    return run


def staged_async(function, stage: str, after: str | None = None):
    @functools.wraps(function)
    async def run(*args, **kwargs):
        previous = CLOCK.switch(stage)
        try:
            return await function(*args, **kwargs)
        finally:
            CLOCK.switch(after or previous)

    return run


def _patch(owner: Any, attribute: str, wrapper) -> None:
    setattr(owner, attribute, wrapper(getattr(owner, attribute)))


def _instrument_container(container: Any) -> None:
    """Probes on the worker-thread stages: wrapper, identity, services, pipeline, components, copies, query log."""
    from haystack.core.pipeline import pipeline as haystack_pipeline

    from hayhooks_app import wrapper_support

    _patch(wrapper_support.ServiceWrapper, "identify", lambda f: staged(f, "identity", "request service"))
    requests = container.requests
    for name in ("search", "answer"):
        _patch(requests, name, lambda f: staged(f, "request service"))
    queries = container.queries
    for name in ("search", "rag"):
        _patch(queries, name, lambda f: staged(f, "query service: request", "request service"))
    _patch(container.records, "log_query", lambda f: staged(f, "query log"))
    for kind in ("search", "rag"):
        pipeline = container.pipeline(kind)
        _patch(pipeline, "run", lambda f: staged(f, "pipeline scheduler", "query service: response"))
        for name, instance in pipeline.walk():
            _patch(instance, "run", lambda f, name=name: staged(f, f"component {name}"))
    _patch(haystack_pipeline, "_deepcopy_with_exceptions", lambda f: staged(f, "input copies"))
    from components.embedders.onnx_embedding import _ENCODERS

    def forward(function):
        @functools.wraps(function)
        def run(*args, **kwargs):
            caller = CLOCK.switch(None)
            CLOCK.switch(f"{FORWARD} in {caller}")
            try:
                return function(*args, **kwargs)
            finally:
                CLOCK.switch(caller)

        return run

    for encoder in _ENCODERS.values():  # the forward pass, inside the embedder components' stages
        _patch(encoder.session, "run", forward)


def _instrument_modules() -> None:
    """Probes on the event-loop stages (module functions the app looks up at call time)."""
    from fastapi import routing
    from hayhooks.server.utils import deploy_utils
    from starlette.requests import Request

    from hayhooks_app import middleware

    _patch(middleware, "_check_json", lambda f: staged(f, "strict JSON check"))
    _patch(Request, "json", lambda f: staged_async(f, "FastAPI body parse"))
    _patch(routing, "solve_dependencies", lambda f: staged_async(f, "FastAPI request model", "Hayhooks handler"))
    _patch(routing, "serialize_response", lambda f: staged_async(f, "FastAPI response model + JSON", ASGI))

    def hop(function):
        @functools.wraps(function)
        async def run(*args, **kwargs):
            CLOCK.switch(LOOP_WAIT)
            try:
                return await function(*args, **kwargs)
            finally:
                CLOCK.switch("Hayhooks handler")

        return run

    _patch(deploy_utils, "_execute_pipeline_run", hop)


def _instrument_wrappers(app: Any) -> None:
    registry = app.state.pipeline_registry
    for kind in ("search", "rag"):
        wrapper = registry.get(kind)
        run_api = type(wrapper).run_api

        @functools.wraps(run_api)
        def run(*args, _run_api=run_api, _wrapper=wrapper, **kwargs):
            CLOCK.switch("wrapper: request model")
            try:
                return _run_api(_wrapper, *args, **kwargs)
            finally:
                CLOCK.switch(None)

        wrapper.run_api = run


THREAD_CPU_START: dict[int, tuple[str, int]] = {}


def _thread_cpu() -> dict[int, tuple[str, int]]:
    """``{native thread id: (name, CPU ns)}`` of this process's threads (Linux ``/proc``; names from ``threading``)."""
    names = {thread.native_id: thread.name for thread in threading.enumerate()}
    ticks = os.sysconf("SC_CLK_TCK")
    figures = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            comm = (task / "comm").read_text().strip()
        except OSError:
            continue
        tid = int(task.name)
        figures[tid] = (f"{names.get(tid, comm)} ({tid})", (int(fields[11]) + int(fields[12])) * 10**9 // ticks)
    return figures


class ProfiledApp:
    """The outermost ASGI app: opens and closes each request's record, times the response ``send``."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.state = app.state  # as the FastAPI app (the server reads nothing else from it)
        self._ready = False

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["path"] not in ("/search/run", "/rag/run"):
            await self.app(scope, receive, send)
            return
        if not self._ready:
            _instrument_container(self.app.state.sourcebound)
            _instrument_wrappers(self.app)
            CLOCK.switch(None)
            CLOCK.take()
            self._process_cpu = time.process_time_ns()
            THREAD_CPU_START.update(_thread_cpu())
            self._ready = True

        async def timed_send(message) -> None:
            previous = CLOCK.switch("uvicorn write")
            try:
                await send(message)
            finally:
                CLOCK.switch(previous)

        CLOCK.switch(ASGI)
        wall = time.perf_counter_ns()
        try:
            await self.app(scope, receive, timed_send)
        finally:
            CLOCK.switch(UVICORN)  # from here to the next request's entry
            process_cpu = time.process_time_ns()
            RECORDS.append({
                "path": scope["path"], "server_wall_ns": time.perf_counter_ns() - wall, "stages": CLOCK.take(),
                "process_cpu_ns": process_cpu - self._process_cpu,
            })  # fmt: skip
            self._process_cpu = process_cpu


def _client(url: str, plan_path: Path, out_path: Path) -> None:
    """The client process: requests alternate search / rag, each followed by the bare embedding of its query."""
    from urllib.parse import urlsplit

    from bench.http_client import Connection
    from bench.service_bench import query_embedder

    plan = json.loads(plan_path.read_text(encoding="utf-8"))
    embedder = query_embedder(int(plan.get("threads", 1)))

    async def run() -> dict[str, Any]:
        parts = urlsplit(url)
        connection = Connection(parts.hostname, parts.port)
        await connection.open()
        latencies: dict[str, list[float]] = defaultdict(list)
        statuses: dict[str, int] = defaultdict(int)
        embed_ms: list[float] = []
        order: list[str] = []
        for index, item in enumerate(plan["requests"]):
            body = json.dumps(item["body"]).encode()
            started = time.perf_counter()
            status, _payload = await connection.post(item["path"], body)
            elapsed = (time.perf_counter() - started) * 1000.0
            order.append(item["path"])
            statuses[f"{item['path']} {status}"] += 1
            if index >= plan["warmup"]:
                latencies[item["path"]].append(elapsed)
            started = time.perf_counter()
            embedder.run(text=item["body"]["query"])
            if index >= plan["warmup"]:
                embed_ms.append((time.perf_counter() - started) * 1000.0)
        await connection.close()
        return {"latencies_ms": latencies, "embed_ms": embed_ms, "statuses": statuses, "order": order}

    out_path.write_text(json.dumps(asyncio.run(run())), encoding="utf-8")


def _summary(values: list[float]) -> dict[str, float]:
    from bench.report import latency_summary

    return latency_summary(values)


def _tables(records: list[dict[str, Any]], client: dict[str, Any], warmup: int) -> dict[str, Any]:
    records = records[warmup:]
    embed = _summary(client["embed_ms"])
    tables: dict[str, Any] = {"floor_embed": embed}
    for path in ("/search/run", "/rag/run"):
        mine = [record for record in records if record["path"] == path]
        if not mine:
            continue
        stages: dict[str, dict[str, list[float]]] = defaultdict(lambda: {"cpu": [], "wall": []})
        for record in mine:
            for stage in {stage for r in mine for stage in r["stages"]}:
                cpu, wall = record["stages"].get(stage, (0, 0))
                stages[stage]["cpu"].append(cpu / 1e6)
                stages[stage]["wall"].append(wall / 1e6)
        total_cpu = statistics.fmean(sum(cpu for cpu, _ in record["stages"].values()) / 1e6 for record in mine)
        rows = []
        for stage, values in stages.items():
            cpu = statistics.fmean(values["cpu"])
            rows.append({
                "stage": stage, "cpu_ms": round(cpu, 3), "share_pct": round(100.0 * cpu / total_cpu, 1),
                "wall_p50_ms": None if stage == UVICORN else round(statistics.median(values["wall"]), 3),
            })  # fmt: skip
        # All the process's threads over the same spans, less the stages: the query-log writer, thread pools.
        other = statistics.fmean(
            (record["process_cpu_ns"] - sum(cpu for cpu, _ in record["stages"].values())) / 1e6 for record in mine
        )
        rows.append({"stage": "other threads (Qdrant's search threads, query-log writer)", "cpu_ms": round(other, 3),
                     "share_pct": None, "wall_p50_ms": None})  # fmt: skip
        rows.sort(key=lambda row: -row["cpu_ms"])
        latency = _summary(client["latencies_ms"][path])
        embedder = next((row for row in rows if row["stage"] == "component embedder"), None)
        forward = sum(row["cpu_ms"] for row in rows if row["stage"].startswith(FORWARD))
        query_forward = sum(row["cpu_ms"] for row in rows if row["stage"] == f"{FORWARD} in component embedder")
        # What concurrency can gain: only the forward pass runs while another request holds the interpreter (the
        # engine's search threads work while their caller holds it), so N clients on 2 cores get at most
        # min(2, CPU / interpreter-held CPU) times one client's throughput.
        held = total_cpu - forward
        tables[path] = {
            "requests": len(mine),
            "server_cpu_ms": round(total_cpu, 3),
            "server_wall_p50_ms": round(statistics.median(record["server_wall_ns"] / 1e6 for record in mine), 3),
            "client": latency,
            "p95_over_floor": round(latency["p95_ms"] / embed["p50_ms"], 2) if embed["p50_ms"] else None,
            "p50_over_floor": round(latency["p50_ms"] / embed["p50_ms"], 2) if embed["p50_ms"] else None,
            "cpu_over_embedder_cpu": round(total_cpu / (embedder["cpu_ms"] + query_forward), 2) if embedder else None,
            "gil_held_cpu_ms": round(held, 3),
            "concurrency_bound": round(min(2.0, total_cpu / held), 2) if held > 0 else None,
            "stages": rows,
        }
    return tables


def _plan(requests: int, warmup: int) -> dict[str, Any]:
    from bench.corpus import query_set
    from bench.service_bench import rag_body, search_body

    queries = query_set(requests + warmup)
    items = []
    for index, query in enumerate(queries):
        items.append({"path": "/search/run", "body": search_body(query)})
        items.append({"path": "/rag/run", "body": rag_body(query)})
        if index % 2:  # alternate which endpoint goes first
            items[-2], items[-1] = items[-1], items[-2]
    return {"requests": items, "warmup": 2 * warmup, "threads": int(os.environ.get("SOURCEBOUND_EMBEDDER_THREADS", 1))}


def profile(size: int, requests: int, warmup: int = 10) -> dict[str, Any]:
    """Serve the ``size`` corpus in this process, run the client, return the figures (call once per process)."""
    from bench.corpus import ensure_corpus
    from bench.service_bench import _reset_run_state, free_port

    data_dir, _manifest = ensure_corpus(size)
    _reset_run_state(data_dir)
    port = free_port()
    os.environ.setdefault("SOURCEBOUND_EMBEDDER_THREADS", "1")
    load_start = round(os.getloadavg()[0], 2)
    client_result: dict[str, Any] = {}
    failure: list[BaseException] = []
    thread_cpu_end: dict[int, tuple[str, int]] = {}

    def drive() -> None:
        import urllib.request

        try:
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:  # noqa: S310
                        if json.loads(response.read()).get("status") == "healthy":
                            break
                except (OSError, ValueError):
                    time.sleep(0.2)
            with tempfile.TemporaryDirectory(prefix="sourcebound-stages-") as temp:
                plan_path, out_path = Path(temp) / "plan.json", Path(temp) / "out.json"
                plan_path.write_text(json.dumps(_plan(requests, warmup)), encoding="utf-8")
                completed = subprocess.run(
                    [sys.executable, "-m", "bench.stage_profile", "--client", f"http://127.0.0.1:{port}",
                     "--plan", str(plan_path), "--out", str(out_path)],
                    cwd=REPO, capture_output=True, text=True, timeout=3600,
                )  # fmt: skip
                if completed.returncode != 0:
                    raise RuntimeError(f"the stage client failed:\n{completed.stderr[-3000:]}")
                client_result.update(json.loads(out_path.read_text(encoding="utf-8")))
            thread_cpu_end.update(_thread_cpu())  # before shutdown ends the worker threads
        except BaseException as error:  # reported by the main thread
            failure.append(error)
        finally:
            os.kill(os.getpid(), signal.SIGINT)  # uvicorn shuts down gracefully

    _instrument_modules()
    from hayhooks_app import app as app_module

    create_application = app_module.create_application
    app_module.create_application = lambda settings=None: ProfiledApp(create_application(settings))
    threading.Thread(target=drive, name="stage-driver", daemon=True).start()
    from hayhooks_app.__main__ import main as serve_main

    serve_main(["serve", "--host", "127.0.0.1", "--port", str(port), "--data-dir", str(data_dir)])
    if failure:
        raise failure[0]
    threads = {
        name: round((cpu - THREAD_CPU_START.get(tid, (name, 0))[1]) / 1e6, 1)
        for tid, (name, cpu) in thread_cpu_end.items()
    }
    return {
        "thread_cpu_ms": dict(sorted(threads.items(), key=lambda item: -item[1])),
        "size": size,
        "requests": requests,
        "load_start": load_start,
        "load_end": round(os.getloadavg()[0], 2),
        "tables": _tables(RECORDS, client_result, 2 * warmup),
        "statuses": client_result.get("statuses"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.stage_profile", description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000, help="corpus size in chunks")
    parser.add_argument("--requests", type=int, default=150, help="timed requests per endpoint")
    parser.add_argument("--warmup", type=int, default=10, help="untimed requests per endpoint first")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--client", help=argparse.SUPPRESS)
    parser.add_argument("--plan", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.client:
        _client(args.client, args.plan, args.out)
        return 0
    figures = profile(args.size, args.requests, args.warmup)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    from bench.report import stage_markdown

    print(stage_markdown(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
