"""
``make bench`` = ``.venv/bin/python -m bench``: every figure of bench/README.md in one run.

Phases (each can be skipped; see ``--help``):

1. **corpus**: the deterministic 10 tenant corpus at each size, built once and cached under
   ``bench/results/cache/`` (``bench.corpus``);
2. **service**: per size, the real server over HTTP against the bare parts (alternating, in a
   separate client process), throughput at 1/4/16 clients, start-up time and RSS
   (``bench.service_bench``);
3. **store**: ``bench/store_bench.py`` (Qdrant Edge at each size vs qdrant-haystack local mode at 10k),
   in a subprocess; writes ``store.json``/``store.md`` beside the report;
4. **indexing**: ``bench/indexing_bench.py`` (pipelines/indexing.yml vs the bare embedder), in a subprocess;
5. **stages**: ``bench/stage_profile.py`` at the largest size, in a subprocess: the share of each stage of a
   ``/search/run`` and a ``/rag/run`` (HTTP, validation, identity, each component, serialisation);
6. **profile** (``--profile``): pyinstrument over the in-process wrapper path at the largest size
   (``bench.profile_service``).

Writes ``bench/results/latest.json`` and ``bench/results/latest.md`` and prints the Markdown,
with PASS/MISS per target. Development runs: ``python -m bench --sizes 2000 --skip-store``.
"""

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from bench.report import evaluate_targets, markdown

RESULTS_DIR = Path(__file__).resolve().parent / "results"
REPO = Path(__file__).resolve().parent.parent


def _log(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def _versions() -> dict[str, str]:
    versions = {}
    for package in (
        "haystack-ai",
        "hayhooks",
        "qdrant-edge-py",
        "qdrant-haystack",
        "sentence-transformers",
        "torch",
        "onnxruntime",
    ):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "missing"
    return versions


def _load() -> float | None:
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None


def run_store(sizes: list[int], queries: int, local_queries: int, output: Path) -> dict[str, Any]:
    command = [sys.executable, "-m", "bench.store_bench", "--sizes", *map(str, sizes), "--queries", str(queries),
               "--local-queries", str(local_queries), "--output", str(output)]  # fmt: skip
    _log("store: " + shlex.join(command[1:]))
    completed = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    if completed.returncode != 0:
        return {"error": f"store_bench exited with {completed.returncode}: {completed.stderr[-2000:]}"}
    return json.loads((output / "store.json").read_text(encoding="utf-8"))


def run_indexing(documents: int, rounds: int, threads: int | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="sourcebound-bench-indexing-") as temp:
        output = Path(temp) / "indexing.json"
        command = [sys.executable, "-m", "bench.indexing_bench", "--documents", str(documents), "--rounds", str(rounds),
                   "--output", str(output)]  # fmt: skip
        if threads:
            command += ["--threads", str(threads)]
        _log("indexing: " + shlex.join(command[1:]))
        completed = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
        if completed.returncode != 0 or not output.exists():
            return {"error": f"indexing_bench exited with {completed.returncode}: {completed.stderr[-2000:]}"}
        return json.loads(output.read_text(encoding="utf-8"))


def run_stages(size: int, requests: int, output: Path) -> dict[str, Any]:
    """The stage profile (``bench.stage_profile``) at ``size``, in its own process (it serves in process)."""
    command = [sys.executable, "-m", "bench.stage_profile", "--size", str(size), "--requests", str(requests),
               "--json", str(output / "stages.json")]  # fmt: skip
    _log("stages: " + shlex.join(command[1:]))
    completed = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    if completed.returncode != 0:
        return {"error": f"stage_profile exited with {completed.returncode}: {completed.stderr[-2000:]}"}
    return json.loads((output / "stages.json").read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000], help="corpus sizes in chunks")
    parser.add_argument(
        "--search-requests",
        type=int,
        default=300,
        help="sequential /search/run requests per size, each paired with the bare search",
    )
    parser.add_argument(
        "--rag-requests",
        type=int,
        default=200,
        help="sequential /rag/run requests per size, each paired with the bare RAG retrieval",
    )
    parser.add_argument(
        "--concurrency", type=int, nargs="+", default=[1, 4, 16], help="clients for the throughput runs"
    )
    parser.add_argument("--throughput-seconds", type=float, default=8.0, help="seconds per throughput run")
    parser.add_argument(
        "--torch-threads",
        type=int,
        default=1,
        help="embedder threads of the server and the bare parts (SOURCEBOUND_EMBEDDER_THREADS)",
    )
    parser.add_argument("--store-queries", type=int, default=200, help="store bench: queries per kind")
    parser.add_argument(
        "--local-queries", type=int, default=20, help="store bench: queries per kind for qdrant-haystack local"
    )
    parser.add_argument("--indexing-documents", type=int, default=24, help="indexing bench: files in its corpus")
    parser.add_argument("--indexing-rounds", type=int, default=3, help="indexing bench: alternating rounds")
    parser.add_argument("--skip-service", action="store_true")
    parser.add_argument("--skip-store", action="store_true")
    parser.add_argument("--skip-indexing", action="store_true")
    parser.add_argument("--skip-stages", action="store_true", help="skip the stage profile")
    parser.add_argument(
        "--stage-requests", type=int, default=150, help="stage profile: timed requests per endpoint (largest size)"
    )
    parser.add_argument(
        "--haystack-copy",
        action="store_true",
        help="serve with Haystack's own pipeline input copies (before the components.services.pipeline_copy fix)",
    )
    parser.add_argument(
        "--tracing",
        choices=["off", "on", "compare"],
        default="off",
        help="serve with OpenTelemetry tracing off (default), on (exporting to a local OTLP sink), or compare: "
        "each size served twice, off then on, with the overhead reported",
    )
    parser.add_argument(
        "--profile", action="store_true", help="also profile the in-process wrapper path (pyinstrument)"
    )
    parser.add_argument("--rebuild-corpus", action="store_true", help="rebuild the cached corpora")
    parser.add_argument("--output", type=Path, default=RESULTS_DIR, help="folder for latest.json / latest.md")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    report: dict[str, Any] = {
        "command": shlex.join(["python", "-m", "bench", *(sys.argv[1:] if argv is None else argv)]),
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "load_average_start": _load(),
            "versions": _versions(),
        },  # fmt: skip
        "config": {key: (str(value) if isinstance(value, Path) else value) for key, value in vars(args).items()},
        "phase_seconds": {},
    }
    args.output.mkdir(parents=True, exist_ok=True)
    from bench.service_bench import embedder_backend

    report["embedder"] = {**embedder_backend(), "threads": args.torch_threads}
    _log("embedder: " + ", ".join(f"{key} {value}" for key, value in report["embedder"].items()))

    def phase(name: str, call):
        phase_started = time.perf_counter()
        try:
            return call()
        finally:
            report["phase_seconds"][name] = round(time.perf_counter() - phase_started, 1)
            _log(f"{name} done in {report['phase_seconds'][name]:.0f} s (total {time.perf_counter() - started:.0f} s)")

    if not args.skip_service:
        from bench.corpus import ensure_corpus
        from bench.service_bench import OtlpSink, ServiceSettings, run_size, run_tracing_comparison

        for size in args.sizes:
            phase(f"corpus {size}", lambda size=size: ensure_corpus(size, rebuild=args.rebuild_corpus))
        settings = ServiceSettings(
            search_requests=args.search_requests, rag_requests=args.rag_requests,
            concurrency=tuple(args.concurrency), throughput_seconds=args.throughput_seconds,
            torch_threads=args.torch_threads, haystack_copy=args.haystack_copy,
        )  # fmt: skip
        report["service"] = {}

        def serve_size(size: int) -> dict[str, Any]:
            if args.tracing == "on":
                with OtlpSink() as sink:
                    settings.extra_env = {"OTEL_EXPORTER_OTLP_ENDPOINT": sink.url}
                    return run_size(size, settings, log=_log)
            if args.tracing == "compare":
                compared = run_tracing_comparison(size, settings, log=_log)
                report.setdefault("tracing", {})[str(size)] = {
                    key: compared[key] for key in ("exported", "overhead", "on")
                }
                return compared["off"]
            return run_size(size, settings, log=_log)

        for size in args.sizes:
            _log(f"service, {size:,} chunks")
            try:
                report["service"][str(size)] = phase(f"service {size}", lambda size=size: serve_size(size))
            except Exception as error:  # report it and go on with the other phases
                _log(f"service at {size:,} chunks failed: {error}")
                report.setdefault("errors", {})[f"service {size}"] = str(error)[-3000:]
    if not args.skip_store:
        report["store"] = phase(
            "store", lambda: run_store(args.sizes, args.store_queries, args.local_queries, args.output)
        )
    if not args.skip_indexing:
        report["indexing"] = phase(
            "indexing", lambda: run_indexing(args.indexing_documents, args.indexing_rounds, None)
        )
    if not args.skip_stages:
        report["stages"] = phase("stages", lambda: run_stages(max(args.sizes), args.stage_requests, args.output))
    for name in ("store", "indexing", "stages"):
        if "error" in (report.get(name) or {}):
            report.setdefault("errors", {})[name] = report.pop(name)["error"]
    if args.profile and not args.skip_service:
        from bench.profile_service import profile_size

        largest = max(args.sizes)
        try:
            report["profile"] = phase("profile", lambda: profile_size(largest, args.output, args.torch_threads))
        except Exception as error:
            report.setdefault("errors", {})["profile"] = str(error)[-3000:]

    report["machine"]["load_average_end"] = _load()
    report["seconds"] = round(time.perf_counter() - started, 1)
    report["targets"] = evaluate_targets(report)
    (args.output / "latest.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    text = markdown(report)
    (args.output / "latest.md").write_text(text, encoding="utf-8")
    print(text)
    for target in report["targets"].values():
        print(
            f"{target['verdict']:4}  {target['label']}: {target['value']} {target['unit']} "
            f"(target {target['operator']} {target['target']:g})"
        )
    for name, error in (report.get("errors") or {}).items():
        print(f"FAILED {name}: {error.strip().splitlines()[0] if error.strip() else error}", file=sys.stderr)
    return 1 if report.get("errors") else 0


if __name__ == "__main__":
    sys.exit(main())
