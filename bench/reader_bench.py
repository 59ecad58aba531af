"""
``/rag`` latency of the answer path before and after a change, as ratios to the query-embedding floor of the
same process (bench/README.md, "Reader"). Run from this checkout, naming an earlier checkout of the repository:

```bash
mkdir /tmp/before && git archive <earlier revision> | tar -x -C /tmp/before
.venv/bin/python -m bench.reader_bench --before /tmp/before --rounds 3
```

Each round runs one worker process per checkout, alternately (so drifting machine load hits both alike), with
this checkout's virtual environment and ``PYTHONPATH`` pointing at the checkout. A worker indexes the sample corpus
and the Normans paragraphs with that checkout's ``pipelines/indexing.yml`` into a fresh data dir, then asks the
same questions through its ``pipelines/query.yml`` in process (``QueryService.rag``: no HTTP, so the HTTP
machinery, tuned elsewhere, does not blur the reader's part), timing per question the whole request, the query
embedding alone (the floor) and each pipeline component (``evaluation.stage_timer``). The report gives per checkout
the p50/p95 of the request, the floor, their ratio, and the components of the answer path; the figure to compare
is after/before of the ratio, with the raw times beside it.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
# The components of the answer path: what the reader change touches.
READER_STAGES = ("neighbours", "sentences", "sentence_embedder", "answerer", "confidence")


def worker(questions: int) -> dict[str, Any]:
    """Index, ask, time (in the checkout this process imports from)."""
    from components.runtime.offline import configure_offline

    configure_offline()
    try:  # as served (hayhooks_app/__main__.py): Haystack's input copies on the fast path
        from components.services.pipeline_copy import install_fast_input_copy

        install_fast_input_copy()
    except ImportError:  # a checkout from before that fix
        pass
    from evaluation.runner import CorpusIndex, resolve_datasets
    from evaluation.stage_timer import StageTimer

    results: dict[str, list[float]] = {"rag_ms": [], "floor_ms": []}
    stages: dict[str, list[float]] = {}
    for dataset in resolve_datasets(["sample-gold", "normans"]):
        dataset.questions = dataset.questions[: questions // 2]
        with tempfile.TemporaryDirectory(prefix="sourcebound-reader-bench-") as tmp:
            with CorpusIndex(dataset, Path(tmp) / "data") as index:
                service = index.service
                embedder = service.rag_pipeline.get_component("embedder")
                for question in dataset.questions[:3]:  # warm-up
                    service.rag({"query": question.question, **question.requester.request_fields()})
                with StageTimer.installed() as timer:
                    for question in dataset.questions:
                        started = time.perf_counter()
                        embedder.run(text=question.question)
                        results["floor_ms"].append((time.perf_counter() - started) * 1000)
                        timer.reset()
                        started = time.perf_counter()
                        service.rag({"query": question.question, **question.requester.request_fields()})
                        results["rag_ms"].append((time.perf_counter() - started) * 1000)
                        for name, value in timer.stages.items():
                            stages.setdefault(name, []).append(value)
    return {"times": results, "stages": {name: statistics.mean(values) for name, values in stages.items()}}


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def run_worker(checkout: Path, questions: int) -> dict[str, Any]:
    env = {
        **os.environ,
        "PYTHONPATH": str(checkout),  # ahead of this checkout's editable install
        "SOURCEBOUND_TORCH_THREADS": "1",
        "SOURCEBOUND_SHARED_DIR": os.environ.get("SOURCEBOUND_SHARED_DIR", str(REPO.parent / "shared")),
    }
    # This file runs as a script, so an earlier checkout without it can still be measured.
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", "--questions", str(questions)]
    done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"worker in {checkout} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    rag = [value for run in runs for value in run["times"]["rag_ms"]]
    floor = [value for run in runs for value in run["times"]["floor_ms"]]
    stages = {name: statistics.mean(run["stages"].get(name, 0.0) for run in runs) for name in runs[0]["stages"]}
    return {
        "rag_p50": _percentile(rag, 50),
        "rag_p95": _percentile(rag, 95),
        "floor_p50": _percentile(floor, 50),
        "ratio_p50": _percentile(rag, 50) / _percentile(floor, 50),
        "ratio_p95": _percentile(rag, 95) / _percentile(floor, 50),
        "reader_ms": sum(stages.get(name, 0.0) for name in READER_STAGES),
        "stages": stages,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.reader_bench", description=__doc__.split("\n")[1])
    parser.add_argument("--before", type=Path, help="an earlier checkout of the repository")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--questions", type=int, default=80, help="questions per worker (half sample-gold, half Normans)"
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.questions)))
        return 0
    if args.before is None:
        parser.error("--before is required")
    checkouts = {"before": args.before.resolve(), "after": REPO}
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    load = os.getloadavg()[0]
    for number in range(args.rounds):
        order = ("before", "after") if number % 2 == 0 else ("after", "before")
        for name in order:
            runs[name].append(run_worker(checkouts[name], args.questions))
            print(f"round {number + 1}: {name} done", file=sys.stderr, flush=True)
    before, after = summarise(runs["before"]), summarise(runs["after"])
    print(f"load average {load:.1f} -> {os.getloadavg()[0]:.1f}; {args.rounds} rounds x {args.questions} questions")
    print("| figure | before | after | after / before |")
    print("|---|---|---|---|")
    for key, label in (
        ("rag_p50", "/rag in process p50 (ms)"),
        ("rag_p95", "/rag in process p95 (ms)"),
        ("floor_p50", "query embedding p50 (ms, the floor)"),
        ("ratio_p50", "/rag p50 / floor"),
        ("ratio_p95", "/rag p95 / floor"),
        ("reader_ms", f"answer path mean ms ({', '.join(READER_STAGES)})"),
    ):
        print(f"| {label} | {before[key]:.2f} | {after[key]:.2f} | {after[key] / before[key]:.2f} |")
    names = sorted(set(before["stages"]) | set(after["stages"]), key=lambda n: -after["stages"].get(n, 0.0))
    print("\n| component (mean ms) | before | after |\n|---|---|---|")
    for name in names:
        print(f"| {name} | {before['stages'].get(name, 0.0):.2f} | {after['stages'].get(name, 0.0):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
