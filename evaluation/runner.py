"""
Runs evaluation datasets through the served YAML pipelines.

For each dataset the runner

1. indexes the corpus into a fresh temporary data dir through ``pipelines/indexing.yml``
   (``IndexingService``), and loads the dataset's tag-owner directory there;
2. asks every question through ``pipelines/query.yml`` (``QueryService``, the same YAML
   the server runs) and ``pipelines/search.yml`` (top-5 for recall), recording the answer,
   the context chunks, citations, confidence breakdown, action, route and the wall time
   per pipeline component (:class:`evaluation.stage_timer.StageTimer`);
3. for determinism, re-indexes the corpus into a second fresh data dir and repeats every
   search, recording the top-3;
4. computes the metrics (:func:`evaluation.metrics.compute_metrics`).

Usage:

```python
from evaluation.runner import resolve_datasets, run_evaluation

summary, records = run_evaluation(resolve_datasets(["sample-gold"]))
```
"""

import datetime as dt
import logging
import os
import platform
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.services.corpus_manifest import corpus_sources
from evaluation.datasets import (
    REPO_ROOT,
    EvalDataset,
    EvalQuestion,
    ci_subset,
    load_dataset,
    load_manpages,
    load_normans,
    load_sample_aliases,
    load_sample_gold,
)
from evaluation.metrics import RECALL_K, calibration, compute_metrics, contains_gold_span, judge_status, percentile
from evaluation.records import ContextChunk, QuestionRecord
from evaluation.stage_timer import StageTimer

logger = logging.getLogger(__name__)

INDEXING_PIPELINE = "indexing"
QUERY_PIPELINE = "query"
SEARCH_PIPELINE = "search"
DEFAULT_ROUTING_THRESHOLD = 60.0
# The per-language datasets (docs/contract.md, "Languages"): questions in Russian, German and Chinese.
LANGUAGE_DATASETS = tuple(
    Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "languages" / language / "questions.yml"
    for language in ("ru", "de", "zh")
)


class EvaluationError(RuntimeError):
    """The corpus could not be indexed, or the pipelines could not be loaded; the message says which."""


@dataclass
class DatasetRun:
    """One dataset's outcome: its records and how the corpus was indexed."""

    dataset: EvalDataset
    records: list[QuestionRecord]
    chunks: int = 0
    index_seconds: float = 0.0
    routing_threshold: float = DEFAULT_ROUTING_THRESHOLD
    stage_latency_p50_ms: dict[str, float] = field(default_factory=dict)


def resolve_datasets(
    names: Sequence[str], corpus: str | None = None, max_unanswerable: int | None = None
) -> list[EvalDataset]:
    """
    Turn ``--dataset`` values into datasets: a built-in name (``evaluation.__main__.BUILTIN_DATASETS``) or a file.

    :param max_unanswerable: CI-sized subsets: every answerable and forbidden question, plus this
        many other unanswerable ones (seeded sample).
    """
    datasets = []
    for name in names:
        if name == "normans":
            dataset = load_normans()
        elif name in {"sample-gold", "sample_gold"}:
            dataset = load_sample_gold()
        elif name == "manpages-dev":
            dataset = load_manpages()
        elif name in {"sample-aliases", "sample_aliases"}:
            dataset = load_sample_aliases()
        elif name == "languages":
            chosen = [load_dataset(path) for path in LANGUAGE_DATASETS]
            datasets += [ci_subset(one, max_unanswerable) if max_unanswerable is not None else one for one in chosen]
            continue
        else:
            dataset = load_dataset(name, corpus=corpus)
        datasets.append(ci_subset(dataset, max_unanswerable) if max_unanswerable is not None else dataset)
    return datasets


def pipeline_env(data_dir: Path) -> dict[str, str]:
    """The process environment (so RAG_* settings apply as when serving) with the data dir replaced."""
    return {**os.environ, "SOURCEBOUND_DATA_DIR": str(data_dir)}


class CorpusIndex:
    """
    A corpus indexed into a fresh data dir, with the query and search pipelines on it.

    :param dataset: The dataset whose corpus to index.
    :param data_dir: An empty folder for the store and the tag directory.
    :param query_overrides: Init parameters to change in the query pipeline, for experiments
        (``{"answerer": {"min_decision_score": 0.7}}``); the served YAML is evaluated without them.
    :param query_pipeline: The RAG pipeline: ``query`` (served default) or ``query_ollama``.
    """

    def __init__(
        self,
        dataset: EvalDataset,
        data_dir: Path,
        query_overrides: Mapping[str, Mapping[str, Any]] | None = None,
        query_pipeline: str = QUERY_PIPELINE,
    ) -> None:
        from components.services.indexing_service import IndexingService
        from components.services.pipeline_loader import load_pipeline
        from components.services.query_service import QueryService

        self.dataset = dataset
        self.data_dir = data_dir
        env = pipeline_env(data_dir)
        started = time.perf_counter()
        self.indexing = IndexingService(load_pipeline(INDEXING_PIPELINE, env=env))
        self.plain_search: QueryService | None = None
        try:
            self._index()
            self._load_directory()
            self._load_glossaries()
            self.index_seconds = time.perf_counter() - started
            self.service = QueryService(
                load_pipeline(query_pipeline, env=env, overrides=query_overrides),
                load_pipeline(SEARCH_PIPELINE, env=env),
            )
            self.service.warm_up()
            if dataset.glossaries:
                # The same search with the expander pointed at a glossary file that does not exist: no expansion.
                no_glossary = {"expander": {"glossary_path": str(data_dir / "no-glossary.sqlite")}}
                self.plain_search = QueryService(
                    self.service.rag_pipeline, load_pipeline(SEARCH_PIPELINE, env=env, overrides=no_glossary)
                )
            self.context_component = self._context_component()
        except BaseException:
            self.close()
            raise

    @property
    def document_store(self):
        return self.indexing.document_store

    def close(self) -> None:
        """Release every store the three pipelines hold, so the shard is flushed before its folder goes."""
        pipelines = [self.indexing.pipeline]
        service = getattr(self, "service", None)
        if service is not None:
            pipelines += [service.rag_pipeline, service.search_pipeline]
        if self.plain_search is not None:
            pipelines.append(self.plain_search.search_pipeline)
        for pipeline in pipelines:
            for _, instance in pipeline.walk():
                store = getattr(instance, "document_store", None)
                if callable(getattr(store, "close", None)):
                    store.close()

    def __enter__(self) -> "CorpusIndex":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _index(self) -> None:
        streams, texts = corpus_sources(self.dataset.documents)
        if streams:
            self._check(self.indexing.index_streams(streams))
        if texts:
            self._check(self.indexing.index_texts(texts))

    def _check(self, result: Mapping[str, Any]) -> None:
        failed = [entry for entry in result.get("documents", []) if entry.get("status") == "error"]
        if failed:
            raise EvaluationError(f"{self.dataset.name}: indexing failed: {failed}")

    def _load_directory(self) -> None:
        if self.dataset.directory is None:
            return
        from components.stores.tag_directory import TagDirectory

        TagDirectory(self.data_dir / "tags.sqlite").load_from_yaml(self.dataset.directory)

    def _load_glossaries(self) -> None:
        from components.stores.glossary_store import GLOSSARY_FILE, GlossaryStore

        store = GlossaryStore(self.data_dir / GLOSSARY_FILE)
        for tenant_id, path in sorted(self.dataset.glossaries.items()):
            store.load_csv(tenant_id, Path(path).read_text(encoding="utf-8"))

    @property
    def routing_threshold(self) -> float:
        """The query pipeline's CITE threshold (the tag router's ``confidence_threshold``)."""
        for _, instance in self.service.rag_pipeline.walk():
            threshold = getattr(instance, "confidence_threshold", None)
            if isinstance(threshold, int | float):
                return float(threshold)
        return DEFAULT_ROUTING_THRESHOLD

    def chunk_count(self) -> int:
        return self.document_store.count_documents()

    def reference_contexts(self, question: EvalQuestion) -> list[str]:
        """Texts of the gold documents' chunks that contain a gold span (all their chunks when none does)."""
        if not question.gold_document_ids:
            return []
        chunks = self.document_store.filter_documents(
            {"field": "meta.document_id", "operator": "in", "value": list(question.gold_document_ids)}
        )
        chunks.sort(key=lambda chunk: chunk.id)
        holding = [
            chunk.content
            for chunk in chunks
            if question.gold_answers and contains_gold_span(chunk.content or "", question.gold_answers)
        ]
        return holding or [chunk.content for chunk in chunks if chunk.content]

    def answer_question(self, question: EvalQuestion) -> tuple[dict[str, Any], list[ContextChunk]]:
        """
        Ask ``pipelines/query.yml``, returning the RAGResponse dict and the context chunks.

        The context is what the citation extractor checked citations against (the token
        budgeter's output in query.yml). ``QueryService.rag`` returns only the response, so the
        request goes through the service's own validation and input mapping (``_rag_data``) and
        the pipeline is run with that component's outputs kept as well.
        """
        from components.core.models import RAGResponse

        service = self.service
        data = service._rag_data({"query": question.question, **question.requester.request_fields()}, None)
        output_component, output_socket = service._rag_output
        context_component = self.context_component
        result = service.rag_pipeline.run(data, include_outputs_from={output_component, context_component})
        response = RAGResponse.model_validate(result[output_component][output_socket]).model_dump(mode="json")
        documents = result.get(context_component, {}).get("documents") or []
        context = [
            ContextChunk(
                source_id=document.id,
                document_id=str(document.meta.get("document_id", document.id.rsplit(":", 1)[0])),
                content=document.content or "",
                score=document.score,
            )
            for document in documents
        ]
        return response, context

    def _context_component(self) -> str:
        """
        The component whose ``documents`` output is the answer's context: the sender of the
        citation extractor's ``documents`` (citations are valid only against those chunks).
        """
        from components.extractors.citation_extractor import CitationExtractor

        pipeline = self.service.rag_pipeline
        for sender, receiver, data in pipeline.graph.edges(data=True):
            if (
                isinstance(pipeline.get_component(receiver), CitationExtractor)
                and data["to_socket"].name == "documents"
            ):
                return sender
        raise EvaluationError(
            "The query pipeline has no CitationExtractor fed with `documents`; the context cannot be recorded."
        )

    def search(self, question: EvalQuestion, k: int = RECALL_K, glossary: bool = True) -> list[ContextChunk]:
        """The search pipeline's top ``k``; ``glossary=False``: without query expansion (datasets with glossaries)."""
        service = self.service if glossary or self.plain_search is None else self.plain_search
        response = service.search({"query": question.question, "k": k, **question.requester.request_fields()})
        return [
            ContextChunk(
                source_id=result["source_id"],
                document_id=result["document_id"],
                content=result.get("snippet", ""),
                score=result.get("score"),
            )
            for result in response["results"]
        ]


def _new_record(question: EvalQuestion) -> QuestionRecord:
    return QuestionRecord(
        question_id=question.id,
        question=question.question,
        answerable=question.answerable,
        category=question.category,
        requester=question.requester.request_fields(),
        gold_document_ids=list(question.gold_document_ids),
        gold_answers=list(question.gold_answers),
        reference_answer=question.reference_answer,
        forbidden_document_ids=list(question.forbidden_document_ids),
    )


def ask(index: CorpusIndex, question: EvalQuestion, timer: StageTimer) -> QuestionRecord:
    """One question through query.yml and search.yml; an exception is recorded, not raised."""
    record = _new_record(question)
    try:
        timer.reset()
        started = time.perf_counter()
        response, context = index.answer_question(question)
        record.latency_ms = (time.perf_counter() - started) * 1000
        record.stage_ms = {name: round(value, 3) for name, value in timer.stages.items()}
        record.answer = response["answer"]
        record.action = response["action"]
        record.route_to = response.get("route_to")
        record.confidence = dict(response["confidence"])
        record.grounded = bool(response["grounded"])
        record.citations = [citation["source_id"] for citation in response["citations"]]
        record.removed_sentences = response.get("removed_sentences")
        record.context = context
        started = time.perf_counter()
        record.retrieved = index.search(question)
        record.search_latency_ms = (time.perf_counter() - started) * 1000
        if index.plain_search is not None:
            record.retrieved_without_glossary = index.search(question, glossary=False)
        record.reference_contexts = index.reference_contexts(question) if question.answerable else []
    except Exception as error:  # one failing question must not hide the others' figures
        logger.exception("question %s failed", question.id)
        record.error = f"{type(error).__name__}: {error}"
    return record


def run_dataset(
    dataset: EvalDataset,
    repeat: bool = True,
    work_dir: Path | None = None,
    progress: Callable[[str], None] | None = None,
    query_overrides: Mapping[str, Mapping[str, Any]] | None = None,
    query_pipeline: str = QUERY_PIPELINE,
) -> DatasetRun:
    """
    Index, ask and (with ``repeat``) re-index and re-search one dataset.

    :param work_dir: Parent of the temporary data dirs (a new temporary folder by default).
    :param query_overrides: See :class:`CorpusIndex`.
    :param query_pipeline: See :class:`CorpusIndex`.
    """
    say = progress or (lambda line: None)
    with tempfile.TemporaryDirectory(prefix=f"sourcebound-eval-{dataset.name}-", dir=work_dir) as tmp:
        say(f"[{dataset.name}] indexing {len(dataset.documents)} documents ...")
        with CorpusIndex(dataset, Path(tmp) / "run1", query_overrides, query_pipeline) as index:
            chunks = index.chunk_count()
            say(
                f"[{dataset.name}] {chunks} chunks in {index.index_seconds:.1f} s; "
                f"asking {len(dataset.questions)} questions ..."
            )
            records = []
            with StageTimer.installed() as timer:
                for number, question in enumerate(dataset.questions, start=1):
                    records.append(ask(index, question, timer))
                    if number % 50 == 0:
                        say(f"[{dataset.name}] {number}/{len(dataset.questions)}")
            run = DatasetRun(
                dataset=dataset,
                records=records,
                chunks=chunks,
                index_seconds=index.index_seconds,
                routing_threshold=index.routing_threshold,
            )
        if repeat:
            say(f"[{dataset.name}] determinism: re-indexing into a fresh store and repeating the searches ...")
            with CorpusIndex(dataset, Path(tmp) / "run2") as second:
                for record, question in zip(records, dataset.questions, strict=True):
                    if record.error:
                        continue
                    try:
                        record.top3_repeat = [chunk.source_id for chunk in second.search(question)[:3]]
                    except Exception as error:
                        record.error = f"repeat: {type(error).__name__}: {error}"
    stages = sorted({stage for record in records for stage in record.stage_ms})
    run.stage_latency_p50_ms = {
        stage: round(
            percentile([record.stage_ms.get(stage, 0.0) for record in records if not record.error], 50) or 0.0, 3
        )
        for stage in stages
    }
    return run


def _git_revision() -> str | None:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
            timeout=5,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def run_evaluation(
    datasets: Sequence[EvalDataset],
    repeat: bool = True,
    mode: str = "full",
    progress: Callable[[str], None] | None = None,
    query_overrides: Mapping[str, Mapping[str, Any]] | None = None,
    query_pipeline: str = QUERY_PIPELINE,
) -> tuple[dict[str, Any], dict[str, list[QuestionRecord]]]:
    """
    Evaluate datasets; return the summary (what report.json holds) and the records per dataset.

    :param query_overrides: Experiment with query-pipeline parameters (recorded in the summary).
    :param query_pipeline: ``query`` (the served default) or another RAG pipeline such as ``query_ollama``.
    """
    import torch

    from components.runtime.offline import set_torch_threads

    # As when serving: one torch thread (SOURCEBOUND_TORCH_THREADS overrides). Under CPU
    # contention two threads make single-query embedding many times slower. Restored after.
    previous_threads = torch.get_num_threads()
    torch_threads = set_torch_threads()
    judge = judge_status()
    summary: dict[str, Any] = {
        "generated_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "mode": mode,
        "git_revision": _git_revision(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch_threads,
        "query_pipeline": f"pipelines/{query_pipeline}.yml",
        "search_pipeline": f"pipelines/{SEARCH_PIPELINE}.yml",
        "indexing_pipeline": f"pipelines/{INDEXING_PIPELINE}.yml",
        "judge": {"available": judge[0], "reason": judge[1]},
        "query_overrides": {name: dict(params) for name, params in (query_overrides or {}).items()},
        "datasets": {},
    }
    records_by_dataset: dict[str, list[QuestionRecord]] = {}
    try:
        runs = [
            run_dataset(
                dataset,
                repeat=repeat,
                progress=progress,
                query_overrides=query_overrides,
                query_pipeline=query_pipeline,
            )
            for dataset in datasets
        ]
    finally:
        set_torch_threads(previous_threads)
    for dataset, run in zip(datasets, runs, strict=True):
        metrics = compute_metrics(run.records, dataset, judge=judge)
        summary["routing_threshold"] = run.routing_threshold
        summary["datasets"][dataset.name] = {
            "description": dataset.description,
            "granularity": dataset.granularity,
            "language": dataset.language,
            "documents": len(dataset.documents),
            "chunks": run.chunks,
            "questions": len(dataset.questions),
            "answerable": len(dataset.answerable),
            "unanswerable": len(dataset.unanswerable),
            "index_seconds": round(run.index_seconds, 2),
            "routing_threshold": run.routing_threshold,
            "stage_latency_p50_ms": run.stage_latency_p50_ms,
            "metrics": {name: value.to_dict() for name, value in metrics.items()},
            "calibration": calibration(run.records),
        }
        records_by_dataset[dataset.name] = run.records
    return summary, records_by_dataset
