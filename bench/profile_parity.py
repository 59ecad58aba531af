"""
Parity of the two engines: the embedded pipelines on Qdrant Edge and the Qdrant-server profile
(qdrant-haystack's store and retrievers) on qdrant-client's local engine, same corpus, same questions.

Two service containers are built in this process (``hayhooks_app.container.ServiceContainer``, the
layer below HTTP), each with its own data dir; both index the bundled sample corpus the way a first
start does (``hayhooks_app.bootstrap``). Then every question of ``evaluation/datasets/sample_gold.yml``
is asked of both, as its requester, in the three search modes (``k`` results) and through the
extractive RAG pipeline. Reported:

* ``vector`` / ``keyword``: questions whose top-k (SourceIds, in order) are identical, and whose top-k
  *documents* (as a set) are identical;
* ``hybrid``: the mean overlap of the top-k SourceIds (|A ∩ B| / k) and how many are identical: the
  two fusion implementations may break RRF ties differently;
* ``rag``: questions whose extractive answer text (and citations) is identical;
* mean latency per mode and engine (in process; the local engine scans by brute force);
* the differing questions, for inspection.

Usage:

```bash
.venv/bin/python -m bench.profile_parity            # the 60 sample questions, k = 5
.venv/bin/python -m bench.profile_parity --questions 10 --json bench/results/profile_parity.json
```
"""

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SERVER_PROFILE_DIR = REPO / "pipelines" / "profiles" / "server"
ENGINES = ("edge", "server-profile")
MODES = ("vector", "keyword", "hybrid")


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def engine_environment(engine: str, data_dir: Path) -> dict[str, str]:
    """The variables that select ``engine`` (the same as the test servers use)."""
    env = {
        "SOURCEBOUND_DATA_DIR": str(data_dir),
        "SOURCEBOUND_PIPELINES_DIR": str(REPO / "pipelines"),
        "SOURCEBOUND_BOOTSTRAP_CORPUS": "true",
    }
    if engine == "server-profile":
        env.update(
            SOURCEBOUND_PIPELINES_DIR=str(SERVER_PROFILE_DIR),
            SOURCEBOUND_QDRANT_LOCATION=str(data_dir / "qdrant-local"),
        )
    return env


def build_engine(engine: str, data_dir: Path) -> Any:
    """A built service container on ``engine`` with the sample corpus indexed."""
    from hayhooks_app.bootstrap import bootstrap
    from hayhooks_app.config import Settings
    from hayhooks_app.container import ServiceContainer

    with _environment(engine_environment(engine, data_dir)):
        container = ServiceContainer(Settings.from_env()).build()
        summary = bootstrap(container)
    if not summary["corpus"] or set(summary["corpus"]["documents"]) != {"indexed"}:
        raise RuntimeError(f"{engine}: the sample corpus did not index cleanly: {summary}")
    return container


def _close(container: Any) -> None:
    """Close every store of the container's pipelines (before their folders are removed) and its records."""
    from hayhooks_app.container import PIPELINE_KINDS

    for kind in PIPELINE_KINDS:
        for _name, component in container.pipeline(kind).walk():
            for attribute in ("document_store", "_document_store"):
                store = getattr(component, attribute, None)
                if store is not None and hasattr(store, "close"):
                    store.close()
    container.close()


def _ask(container: Any, question: Any, k: int) -> dict[str, Any]:
    from components.core.requester import Identity

    requester = question.requester
    identity = Identity(
        tenant_id=requester.tenant_id,
        user_tags=tuple(requester.user_tags),
        user_id=requester.user_id,
        project_id=requester.project_id,
    )
    answers: dict[str, Any] = {"latency_ms": {}}
    for mode in MODES:
        started = time.perf_counter()
        result = container.requests.search({"query": question.question, "k": k, "search_mode": mode}, identity)
        answers["latency_ms"][mode] = (time.perf_counter() - started) * 1000
        answers[mode] = [hit["source_id"] for hit in result["results"]]
    started = time.perf_counter()
    rag = container.requests.answer({"query": question.question}, identity)
    answers["latency_ms"]["rag"] = (time.perf_counter() - started) * 1000
    answers["rag"] = {"answer": rag["answer"], "citations": [c["source_id"] for c in rag["citations"]]}
    return answers


def _documents(source_ids: list[str]) -> set[str]:
    return {source_id.rsplit(":", 1)[0] for source_id in source_ids}


def compare(questions: list[Any], edge: list[dict], profile: list[dict], k: int) -> dict[str, Any]:
    """The parity figures of two engines' answers to the same questions (see the module doc)."""
    total = len(questions)
    report: dict[str, Any] = {"questions": total, "k": k, "differences": []}
    for mode in ("vector", "keyword"):
        same = sum(a[mode] == b[mode] for a, b in zip(edge, profile, strict=True))
        same_documents = sum(_documents(a[mode]) == _documents(b[mode]) for a, b in zip(edge, profile, strict=True))
        report[mode] = {"identical_top_k": same, "identical_documents": same_documents}
    overlaps = [len(set(a["hybrid"]) & set(b["hybrid"])) / k for a, b in zip(edge, profile, strict=True)]
    report["hybrid"] = {
        "mean_overlap": round(statistics.fmean(overlaps), 3) if overlaps else None,
        "min_overlap": min(overlaps) if overlaps else None,
        "identical_top_k": sum(a["hybrid"] == b["hybrid"] for a, b in zip(edge, profile, strict=True)),
        "identical_documents": sum(
            _documents(a["hybrid"]) == _documents(b["hybrid"]) for a, b in zip(edge, profile, strict=True)
        ),
    }
    report["rag"] = {"identical_answers": sum(a["rag"] == b["rag"] for a, b in zip(edge, profile, strict=True))}
    report["latency_ms"] = {
        engine: {
            kind: round(statistics.fmean(answer["latency_ms"][kind] for answer in answers), 1)
            for kind in (*MODES, "rag")
        }
        for engine, answers in (("edge", edge), ("server-profile", profile))
    }
    for question, a, b in zip(questions, edge, profile, strict=True):
        differing = [kind for kind in (*MODES, "rag") if a[kind] != b[kind]]
        if differing:
            report["differences"].append(
                {"id": question.id, "differs": differing, **{kind: [a[kind], b[kind]] for kind in differing}}
            )
    return report


def run_parity(questions: int | None = None, k: int = 5, workdir: Path | None = None) -> dict[str, Any]:
    """Build both engines on the sample corpus and compare them on the sample-gold questions."""
    from evaluation.datasets import load_sample_gold

    selected = load_sample_gold().questions[:questions] if questions else load_sample_gold().questions
    with tempfile.TemporaryDirectory(prefix="sb-parity-", dir=workdir) as scratch:
        containers = {engine: build_engine(engine, Path(scratch) / engine) for engine in ENGINES}
        answers = {engine: [_ask(containers[engine], q, k) for q in selected] for engine in ENGINES}
        for container in containers.values():
            _close(container)
    return compare(selected, answers["edge"], answers["server-profile"], k)


def markdown(report: dict[str, Any]) -> str:
    """The figures as the table in bench/README.md."""
    total, k = report["questions"], report["k"]
    latency = report["latency_ms"]
    rows = [
        f"| {mode} | {report[mode]['identical_top_k']}/{total} | {report[mode]['identical_documents']}/{total} | "
        f"{latency['edge'][mode]} | {latency['server-profile'][mode]} |"
        for mode in MODES
    ]
    return "\n".join(
        [
            f"{total} questions, top-{k}; hybrid mean overlap {report['hybrid']['mean_overlap']} "
            f"(min {report['hybrid']['min_overlap']}); extractive answers identical "
            f"{report['rag']['identical_answers']}/{total}",
            "",
            "| mode | identical top-k (SourceIds, in order) | identical top-k documents | Edge ms | profile ms |",
            "|---|---|---|---|---|",
            *rows,
            f"| rag (extractive) | {report['rag']['identical_answers']}/{total} answers | | "
            f"{latency['edge']['rag']} | {latency['server-profile']['rag']} |",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=None, help="only the first N questions (default: all)")
    parser.add_argument("--k", type=int, default=5, help="results per search (default 5)")
    parser.add_argument("--json", type=Path, default=None, help="also write the report (with differences) here")
    args = parser.parse_args(argv)
    report = run_parity(args.questions, args.k)
    print(markdown(report))
    for difference in report["differences"]:
        print(json.dumps(difference, ensure_ascii=False))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    from components.runtime.offline import configure_offline

    configure_offline()
    raise SystemExit(main())
