"""
Replay the embedded reader on recorded inputs, so a change of its evidence or of its decline model is measured in
seconds rather than by re-indexing every corpus (docs/reader.md, "How the model was fitted").

```bash
.venv/bin/python -m evaluation.reader_replay --record                    # index the dev sets once, keep inputs
.venv/bin/python -m evaluation.reader_replay                             # figures of the current reader
.venv/bin/python -m evaluation.reader_replay --threshold 0.45 --ci       # another threshold, CI-sized subsets
```

``--record`` asks every question of the dev datasets through ``pipelines/query.yml`` and keeps what the reader
read: the retrieval query, the query embedding, the embedded context sentences and the context chunks. A replay
runs the reader, the citation extractor, the confidence scorer and the router's rule on them, exactly as the
pipeline does after the budgeter, so its gold span, CITE, grounded, declines and AUROC figures are those of
``python -m evaluation`` as long as retrieval is unchanged (a change there needs a new recording). The recording
is a local cache (``evaluation/reports/tmp/``, not versioned): it holds embeddings of the corpora.
"""

import argparse
import pickle
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from evaluation.datasets import REPO_ROOT, EvalDataset
from evaluation.metrics import auroc, contains_gold_span, normalize_answer

# The datasets the abstention model is fitted on (evaluation.fit_abstention).
DEV_DATASETS = ("normans", "manpages-dev", "sample-gold", "evaluation/datasets/dev_questions.yml", "languages")
RECORDING_PATH = REPO_ROOT / "evaluation" / "reports" / "tmp" / "reader_inputs.pkl"
# The evaluation's CI-sized runs sample this many unanswerable questions (evaluation.__main__, --ci).
CI_MAX_UNANSWERABLE = 30
_KEPT = ("classifier", "embedder", "sentence_embedder", "budgeter", "prompt_builder", "answerer", "assembler")


def record(datasets: Sequence[EvalDataset], ci_ids: Mapping[str, set[str]]) -> list[dict[str, Any]]:
    """Every question's reader inputs and the served pipeline's own response (see the module doc)."""
    from evaluation.runner import CorpusIndex

    rows = []
    for dataset in datasets:
        with tempfile.TemporaryDirectory(prefix="sourcebound-replay-") as tmp:
            with CorpusIndex(dataset, Path(tmp) / "data") as index:
                service = index.service
                for question in dataset.questions:
                    data = service._rag_data({"query": question.question, **question.requester.request_fields()}, None)
                    result = service.rag_pipeline.run(data, include_outputs_from=set(_KEPT))
                    response = result["assembler"]["response"]
                    response = response if isinstance(response, dict) else response.model_dump(mode="json")
                    rows.append(
                        {
                            "dataset": dataset.name,
                            "id": question.id,
                            "question": question.question,
                            "group": f"{dataset.name}/{question.passage}",
                            "answerable": question.answerable,
                            "gold_answers": list(question.gold_answers),
                            "ci": question.id in ci_ids.get(dataset.name, set()),
                            "query": result["classifier"]["retrieval_query"],
                            "query_embedding": result["embedder"]["embedding"],
                            "sentences": result.get("sentence_embedder", {}).get("documents") or [],
                            "documents": result.get("budgeter", {}).get("documents") or [],
                            "context": result.get("prompt_builder", {}).get("context") or "",
                            "served": {
                                "draft": result["answerer"]["answer"],
                                "answer": response["answer"],
                                "action": response["action"],
                                "grounded": response["grounded"],
                                "overall": response["confidence"]["overall"],
                            },
                        }
                    )
        print(f"[{dataset.name}] {len(dataset.questions)} questions recorded", file=sys.stderr, flush=True)
    return rows


def load(path: Path = RECORDING_PATH) -> list[dict[str, Any]]:
    """A recording written by ``--record``."""
    with path.open("rb") as handle:
        return pickle.load(handle)  # noqa: S301 - a local cache this tool wrote


class Replayer:
    """
    The pipeline's steps after the budgeter, on recorded inputs: the reader, the citation extractor, the
    confidence scorer and the router's rule (``TagRouter.decide``).

    :param reader_overrides: ``SentenceReader`` init parameters to change (``decision_threshold``,
        ``abstention_model``, ...); the rest are those of ``pipelines/query.yml``.
    """

    def __init__(self, reader_overrides: Mapping[str, Any] | None = None) -> None:
        from components.builders.answer_assembler import decline_text
        from components.extractors.citation_extractor import CitationExtractor
        from components.generators.sentence_reader import SentenceReader
        from components.routers.tag_router import TagRouter
        from components.scorers.hybrid_confidence_scorer import HybridConfidenceScorer

        parameters = {**served_parameters("answerer"), **(reader_overrides or {})}
        self.reader = SentenceReader(**parameters)
        self.citations = CitationExtractor(**served_parameters("citations"))
        self.confidence = HybridConfidenceScorer(**served_parameters("confidence"))
        self.threshold = float(served_parameters("router").get("confidence_threshold", 60))
        self._decide = TagRouter.decide
        self._decline_text = decline_text

    def answer(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """One question's answer, evidence, action, grounded flag and overall confidence."""
        documents = row["documents"]
        sentences = with_chunk_language(row["sentences"], documents)
        out = self.reader.run(query=row["query"], sentences=sentences, query_embedding=row["query_embedding"])
        cited = self.citations.run(answer=out["answer"], documents=documents)
        confidence = self.confidence.run(
            answer=out["answer"], documents=documents, context=row["context"], evidence=out["evidence"]
        )["confidence"]
        reason = self._decide(_Rule(self.threshold), confidence, documents, cited["citations"])
        return {
            # A routed response's answer is the decline text, which names the documents found (AnswerAssembler).
            "answer": out["answer"] if reason is None else self._decline_text({}, documents),
            "draft": out["answer"],
            "evidence": out["evidence"],
            "action": "CITE" if reason is None else "ROUTE",
            "grounded": reason is None and bool(cited["all_sentences_cited"]),
            "overall": confidence["overall"],
        }


def with_chunk_language(sentences: Sequence[Any], documents: Sequence[Any]) -> list[Any]:
    """
    ``sentences`` with their chunk's ``language`` in ``meta``, as ``ContextSentenceSplitter`` records it: a recording
    made before the splitter kept it still replays as the pipeline runs now.
    """
    from haystack import Document

    from components.core.text_analysis import source_id_of

    languages = {source_id_of(document): (document.meta or {}).get("language") for document in documents}
    out = []
    for sentence in sentences:
        meta = dict(sentence.meta or {})
        language = languages.get(meta.get("source_id"))
        if language and "language" not in meta:
            meta["language"] = language
        out.append(Document(id=sentence.id, content=sentence.content, meta=meta, embedding=sentence.embedding))
    return out


class _Rule:
    """What ``TagRouter.decide`` reads of its component: the confidence threshold."""

    def __init__(self, confidence_threshold: float) -> None:
        self.confidence_threshold = confidence_threshold


def served_parameters(name: str) -> dict[str, Any]:
    """A component's init parameters in ``pipelines/query.yml``, ``${NAME:-default}`` resolved to the default."""
    import re

    import yaml

    text = (REPO_ROOT / "pipelines" / "query.yml").read_text(encoding="utf-8")
    text = re.sub(r"\$\{[A-Z0-9_]+:-([^}]*)\}", r"\1", text)
    return dict(yaml.safe_load(text)["components"][name].get("init_parameters") or {})


def figures(rows: Iterable[Mapping[str, Any]], answers: Iterable[Mapping[str, Any]]) -> dict[str, float | None]:
    """The evaluation's reader figures (evaluation.metrics.our_metrics) of replayed answers."""
    pairs = list(zip(rows, answers, strict=True))
    answerable = [(row, out) for row, out in pairs if row["answerable"]]
    unanswerable = [(row, out) for row, out in pairs if not row["answerable"]]
    insufficient = normalize_answer("I don't have enough information in the available documents")

    def rate(hits: int, total: int) -> float | None:
        return round(hits / total, 3) if total else None

    area = auroc([out["overall"] for _, out in pairs], [row["answerable"] for row, _ in pairs])
    gold = sum(contains_gold_span(o["answer"], r["gold_answers"]) for r, o in answerable)
    return {
        "gold_span": rate(gold, len(answerable)),
        "cite": rate(sum(o["action"] == "CITE" for _, o in answerable), len(answerable)),
        "grounded": rate(sum(o["grounded"] for _, o in answerable), len(answerable)),
        "declines": rate(
            sum(o["action"] == "ROUTE" or insufficient in normalize_answer(o["answer"]) for _, o in unanswerable),
            len(unanswerable),
        ),
        "auroc": None if area is None else round(area, 3),
    }


def report(rows: Sequence[Mapping[str, Any]], answers: Sequence[Mapping[str, Any]], ci: bool) -> dict[str, Any]:
    """Per dataset: the figures of the full set, or of the CI-sized subset."""
    by_dataset: dict[str, list[int]] = {}
    for index, row in enumerate(rows):
        if not ci or row["ci"]:
            by_dataset.setdefault(row["dataset"], []).append(index)
    return {name: figures([rows[i] for i in idx], [answers[i] for i in idx]) for name, idx in by_dataset.items()}


def print_report(result: Mapping[str, Mapping[str, float | None]]) -> None:
    keys = ("gold_span", "cite", "grounded", "declines", "auroc")
    print("| dataset | " + " | ".join(keys) + " |")
    print("|---" * (len(keys) + 1) + "|")
    for name in sorted(result):
        cells = ["—" if result[name][k] is None else f"{result[name][k]:.3f}" for k in keys]
        print(f"| {name} | " + " | ".join(cells) + " |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evaluation.reader_replay", description=__doc__.split("\n")[1])
    parser.add_argument("--record", action="store_true", help="index the dev datasets and record the reader inputs")
    parser.add_argument("--dataset", action="append", help="datasets to record (default: the fit's dev datasets)")
    parser.add_argument("--recording", type=Path, default=RECORDING_PATH, help="the recording file")
    parser.add_argument("--threshold", type=float, help="the reader's decision_threshold")
    parser.add_argument("--model", help="the reader's abstention_model file")
    parser.add_argument("--ci", action="store_true", help="figures of the CI-sized subsets")
    args = parser.parse_args(argv)

    from components.runtime.offline import configure_offline

    configure_offline()
    if args.record:
        from evaluation.runner import resolve_datasets

        names = args.dataset or list(DEV_DATASETS)
        ci_ids = {
            dataset.name: {question.id for question in dataset.questions}
            for dataset in resolve_datasets(names, max_unanswerable=CI_MAX_UNANSWERABLE)
        }
        rows = record(resolve_datasets(names), ci_ids)
        args.recording.parent.mkdir(parents=True, exist_ok=True)
        with args.recording.open("wb") as handle:
            pickle.dump(rows, handle)
        print(f"wrote {args.recording} ({len(rows)} questions)")
    rows = load(args.recording)
    overrides: dict[str, Any] = {}
    if args.threshold is not None:
        overrides["decision_threshold"] = args.threshold
    if args.model:
        overrides["abstention_model"] = args.model
    replayer = Replayer(overrides)
    answers = [replayer.answer(row) for row in rows]
    same = sum(
        answer["action"] == row["served"]["action"] and answer["draft"] == row["served"]["draft"]
        for row, answer in zip(rows, answers, strict=True)
    )
    print(f"{same}/{len(rows)} replayed answers and actions equal the recorded pipeline's (same reader: all)")
    print_report(report(rows, answers, args.ci))
    return 0


if __name__ == "__main__":
    sys.exit(main())
