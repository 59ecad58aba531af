"""
Profile the server path below HTTP, in process: where a ``/search/run`` or ``/rag/run`` spends its CPU.

pyinstrument samples one thread and the server runs each request in a worker thread, so this
is done in process instead: the same ``PipelineWrapper`` classes the server deploys
(``hayhooks_app/pipelines/{search,rag}/pipeline_wrapper.py``) are set up on the shared
``ServiceContainer`` over a cached corpus, and their ``run_api`` (request validation, identity,
the YAML pipeline, records and metrics) is called in the main thread. Per kind it measures:

* **copy A/B**: every request twice, once with Haystack's own input copies and once with
  ``components.services.pipeline_copy``'s fast path (the order alternates per request, so drifting
  machine load hits both alike): wall p50 and mean CPU time of the thread (torch runs on it with
  one thread), i.e. the before/after of that fix;
* **breakdown**: mean CPU ms per request of each pipeline component, of the input copies and of
  the records (as the server runs: fast copies on);
* **profile**: pyinstrument's call tree, written to ``profile-<kind>-<size>.txt``.

```bash
.venv/bin/python -m bench.profile_service --size 100000
```
"""

import argparse
import functools
import importlib.util
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.corpus import ensure_corpus, query_set
from bench.report import latency_summary
from bench.service_bench import _reset_run_state, rag_body, search_body

REPO = Path(__file__).resolve().parent.parent
WRAPPERS = REPO / "hayhooks_app" / "pipelines"


def _wrapper(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_wrapper_{name}", WRAPPERS / name / "pipeline_wrapper.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    wrapper = module.PipelineWrapper()
    wrapper.setup()
    return wrapper


def _timed_call(wrapper, body: dict[str, Any]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.thread_time()
    wrapper.run_api(**body)
    return (time.perf_counter() - wall) * 1000.0, (time.thread_time() - cpu) * 1000.0


def copy_ab(wrapper, bodies: list[dict[str, Any]]) -> dict[str, Any]:
    """Each request with Haystack's copies and with the fast copies, alternating the order."""
    from components.services.pipeline_copy import install_fast_input_copy, uninstall_fast_input_copy

    samples: dict[str, list[tuple[float, float]]] = {"haystack_copy": [], "fast_copy": []}
    for index, body in enumerate(bodies):
        for variant in ("haystack_copy", "fast_copy") if index % 2 == 0 else ("fast_copy", "haystack_copy"):
            if variant == "fast_copy":
                install_fast_input_copy()
            else:
                uninstall_fast_input_copy()
            samples[variant].append(_timed_call(wrapper, body))
    install_fast_input_copy()
    result = {
        variant: {
            "wall_p50_ms": round(statistics.median(wall for wall, _ in values), 2),
            "cpu_mean_ms": round(statistics.fmean(cpu for _, cpu in values), 2),
        }  # fmt: skip
        for variant, values in samples.items()
    }
    result["cpu_saved_pct"] = round(
        100.0 * (1 - result["fast_copy"]["cpu_mean_ms"] / result["haystack_copy"]["cpu_mean_ms"]), 1
    )
    return result


def breakdown(container, kind: str, wrapper, bodies: list[dict[str, Any]]) -> dict[str, float]:
    """Mean CPU ms per request of every component's ``run``, of the input copies and of the query log."""
    from haystack.core.pipeline import base, pipeline

    totals: dict[str, float] = defaultdict(float)
    restore: list[tuple[Any, str, Any]] = []

    def timed(name: str, function):
        @functools.wraps(function)
        def run(*args, **kwargs):
            started = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                totals[name] += time.thread_time() - started

        return run

    def wrap(owner, attribute: str, name: str) -> None:
        original = getattr(owner, attribute)
        restore.append((owner, attribute, original))
        setattr(owner, attribute, timed(name, original))

    for name, instance in container.pipeline(kind).walk():
        wrap(instance, "run", f"component {name}")
    wrap(pipeline, "_deepcopy_with_exceptions", "input copies (per component)")
    wrap(base, "_deepcopy_with_exceptions", "input copies (pipeline inputs)")
    wrap(container.records, "log_query", "query log (SQLite)")
    try:
        started = time.thread_time()
        for body in bodies:
            wrapper.run_api(**body)
        total = time.thread_time() - started
    finally:
        for owner, attribute, original in reversed(restore):
            if attribute == "run":
                delattr(owner, attribute)  # back to the class's method
            else:
                setattr(owner, attribute, original)
    figures = {"total": round(total / len(bodies) * 1000.0, 2)}
    for name, seconds in sorted(totals.items(), key=lambda item: -item[1]):
        figures[name] = round(seconds / len(bodies) * 1000.0, 2)
    figures["other (validation, identity, pipeline engine, metrics)"] = round(
        figures["total"] - sum(value for key, value in figures.items() if key != "total"), 2
    )
    return figures


def profile_size(size: int, output: Path, torch_threads: int = 1, requests: int = 100) -> dict[str, Any]:
    """Copy A/B, CPU breakdown and pyinstrument profile of the search and RAG wrappers on the ``size`` corpus."""
    from pyinstrument import Profiler

    data_dir, _manifest = ensure_corpus(size)
    _reset_run_state(data_dir)
    os.environ["SOURCEBOUND_DATA_DIR"] = str(data_dir)
    os.environ["SOURCEBOUND_EMBEDDER_THREADS"] = str(torch_threads)  # as the server runs
    from components.services.pipeline_copy import install_fast_input_copy
    from hayhooks_app.config import Settings
    from hayhooks_app.container import configure

    install_fast_input_copy()  # as the server runs
    container = configure(Settings.from_env()).build()
    queries = query_set(requests)
    figures: dict[str, Any] = {}
    try:
        for kind, make_body in (("search", search_body), ("rag", rag_body)):
            wrapper = _wrapper(kind)
            bodies = [make_body(query) for query in queries]
            for body in bodies[:10]:
                wrapper.run_api(**body)
            samples = [_timed_call(wrapper, body)[0] for body in bodies]
            ab = copy_ab(wrapper, bodies)
            cpu = breakdown(container, kind, wrapper, bodies)
            profiler = Profiler(interval=0.0005)
            profiler.start()
            for body in bodies:
                wrapper.run_api(**body)
            profiler.stop()
            report = output / f"profile-{kind}-{size}.txt"
            report.write_text(profiler.output_text(unicode=False, color=False, show_all=False), encoding="utf-8")
            figures[kind] = {
                **latency_summary(samples), "requests": len(bodies), "copy_ab": ab, "cpu_breakdown_ms": cpu,
                "report": str(report.relative_to(REPO)) if report.is_relative_to(REPO) else str(report),
            }  # fmt: skip
    finally:
        container.close()
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.profile_service", description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--torch-threads", type=int, default=1)
    parser.add_argument("--output", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args(argv)
    args.output.mkdir(parents=True, exist_ok=True)
    print(json.dumps(profile_size(args.size, args.output, args.torch_threads, args.requests), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
