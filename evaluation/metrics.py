"""
Evaluation metrics: ragas' metrics that need no LLM, our own, and (only when a judge
LLM answers) ragas' LLM-judged ones.

Every metric is a :class:`MetricValue`. A metric that cannot be computed is
``status="not_run"`` with the reason, never a silent 0 or 1, and the checker treats a
thresholded metric that did not run as a violation unless the threshold says otherwise.

Ours (see ``evaluation/README.md`` for exact definitions):
``recall_at_5`` (with ``recall_at_5_without_glossary`` and ``glossary_recall_gain`` on datasets with
glossaries), ``citation_validity``, ``grounded_rate``, ``gold_span_rate``,
``abstention_rate``, ``cite_rate``, ``auroc``, ``determinism``,
``latency_p50_ms``/``latency_p95_ms`` (and the search pipeline's), ``forbidden_leakage``
and ``errors``.

Usage:

```python
from evaluation.metrics import compute_metrics

metrics = compute_metrics(records, dataset)          # dict name -> MetricValue
print(metrics["recall_at_5"].value)
```
"""

import asyncio
import importlib.util
import json
import logging
import math
import os
import re
import string
import urllib.error
import urllib.request
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import regex

from components.core.models import INSUFFICIENT_INFORMATION_ANSWER
from components.core.text_analysis import find_source_ids, strip_source_ids
from evaluation.datasets import EvalDataset, Requester
from evaluation.records import QuestionRecord

logger = logging.getLogger(__name__)

RECALL_K = 5
JUDGE_PROBE_TIMEOUT_S = 3.0


@dataclass
class MetricValue:
    """
    One metric's result.

    :param value: The figure, or ``None`` when the metric did not run.
    :param n: How many questions (or values) it was computed over.
    :param status: ``"ok"`` or ``"not_run"``.
    :param reason: Why it did not run (empty when it ran).
    :param family: ``"ours"``, ``"ragas"``, ``"ragas-llm"`` or ``"latency"``.
    """

    value: float | None
    n: int = 0
    status: str = "ok"
    reason: str = ""
    family: str = "ours"

    @classmethod
    def not_run(cls, reason: str, family: str = "ours") -> "MetricValue":
        return cls(value=None, n=0, status="not_run", reason=reason, family=family)

    @property
    def ran(self) -> bool:
        return self.status == "ok" and self.value is not None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _rate(hits: int, total: int, family: str = "ours", empty_reason: str = "no questions of this kind") -> MetricValue:
    if total == 0:
        return MetricValue.not_run(empty_reason, family)
    return MetricValue(value=hits / total, n=total, family=family)


# ----------------------------------------------------------------------------- text helpers

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_CJK = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}"
_CJK_RE = regex.compile(rf"[{_CJK}]")
_PUNCTUATION = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """
    SQuAD's official answer normalisation: lower-case, drop punctuation, drop the
    articles a/an/the, collapse whitespace (``normalize_answer`` of the SQuAD v2.0
    evaluation script).
    """
    text = text.lower()
    text = "".join(character for character in text if character not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def contains_gold_span(answer: str, gold_answers: Iterable[str]) -> bool:
    """
    Whether the answer contains any gold span, both normalised as in SQuAD, matched on
    whole words (so "10" does not match inside "100"). SourceId markers are removed first.
    """
    normalized = f" {normalize_answer(strip_source_ids(answer))} "
    for span in gold_answers:
        target = normalize_answer(span)
        if target and f" {target} " in normalized:
            return True
        # Scripts written without spaces (Chinese, Japanese): a CJK character is a word boundary of its own.
        if target and _CJK_RE.search(target):
            pattern = (
                rf"(?:(?<=\s)|(?<=[{_CJK}])|(?=[{_CJK}])){regex.escape(target)}(?:(?=\s)|(?=[{_CJK}])|(?<=[{_CJK}]))"
            )
            if regex.search(pattern, normalized):
                return True
    return False


_INSUFFICIENT = normalize_answer(INSUFFICIENT_INFORMATION_ANSWER)


def is_abstention(record: QuestionRecord) -> bool:
    """The response routes to a human or says the documents do not hold enough information."""
    return record.action == "ROUTE" or _INSUFFICIENT in normalize_answer(record.answer)


def invalid_citations(record: QuestionRecord) -> list[str]:
    """
    SourceIds cited but not in the answer's context: from the response's ``citations``
    and from ``[SourceId: ...]`` markers in the answer text.
    """
    in_context = {chunk.source_id for chunk in record.context}
    cited = list(dict.fromkeys([*record.citations, *find_source_ids(record.answer)]))
    return [source_id for source_id in cited if source_id not in in_context]


def leaked_documents(record: QuestionRecord, dataset: EvalDataset) -> list[str]:
    """
    Documents the requester must not see that reached their context, citations or search
    results: any document the access rule hides from them (tenant, tags, scope), anything
    listed in ``forbidden_document_ids``, and any document the corpus does not know.
    """
    requester = Requester(
        tenant_id=record.requester.get("tenant_id", ""),
        user_tags=tuple(record.requester.get("user_tags", ())),
        user_id=record.requester.get("user_id"),
        project_id=record.requester.get("project_id"),
    )
    seen = [chunk.document_id for chunk in (*record.context, *record.retrieved)]
    seen += [source_id.rsplit(":", 1)[0] for source_id in record.citations]
    leaked = []
    for document_id in dict.fromkeys(seen):
        document = dataset.document(document_id)
        if (
            document is None
            or document_id in record.forbidden_document_ids
            or not requester.can_see(document.access_meta)
        ):
            leaked.append(document_id)
    return leaked


# ----------------------------------------------------------------------------- statistics


def auroc(scores: Sequence[float], labels: Sequence[bool]) -> float | None:
    """
    Area under the ROC curve: the probability that a random positive scores higher than
    a random negative, ties counting one half (the Mann-Whitney U statistic over
    ``n_pos * n_neg``). Exact and O(n log n) via average ranks.

    :returns: ``None`` when either class is empty.
    """
    if len(scores) != len(labels):
        raise ValueError(f"scores and labels differ in length: {len(scores)} != {len(labels)}")
    positives = sum(1 for label in labels if label)
    negatives = len(labels) - positives
    if positives == 0 or negatives == 0:
        return None
    order = sorted(range(len(scores)), key=lambda index: scores[index])
    ranks = [0.0] * len(scores)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and scores[order[end + 1]] == scores[order[start]]:
            end += 1
        average_rank = (start + end) / 2 + 1  # 1-based average rank of the tie group
        for position in range(start, end + 1):
            ranks[order[position]] = average_rank
        start = end + 1
    positive_rank_sum = sum(rank for rank, label in zip(ranks, labels, strict=True) if label)
    u_statistic = positive_rank_sum - positives * (positives + 1) / 2
    return u_statistic / (positives * negatives)


CALIBRATION_BINS = ((0, 20), (20, 40), (40, 60), (60, 80), (80, 101))


def answered_correctly(record: QuestionRecord) -> bool:
    """An answerable question answered with CITE and a gold span in the answer."""
    return bool(
        record.answerable and record.action == "CITE" and contains_gold_span(record.answer, record.gold_answers)
    )


def calibration(records: Sequence[QuestionRecord]) -> list[dict[str, Any]]:
    """
    ``confidence.overall`` in bins of 20 points against what happened: per bin the questions in it, the share that
    the documents answer (``answerable``) and the share answered correctly (CITE with a gold span). A calibrated
    confidence has both shares rise from bin to bin.
    """
    rows = []
    scored = [record for record in records if not record.error and record.overall_confidence is not None]
    for low, high in CALIBRATION_BINS:
        members = [record for record in scored if low <= float(record.overall_confidence) < high]
        rows.append(
            {
                "bin": f"{low}-{min(high, 100)}",
                "questions": len(members),
                "answerable": round(sum(r.answerable for r in members) / len(members), 3) if members else None,
                "answered_correctly": round(sum(answered_correctly(r) for r in members) / len(members), 3)
                if members
                else None,
            }
        )
    return rows


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100) with linear interpolation (numpy's default); ``None`` if empty."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    lower, upper = math.floor(position), math.ceil(position)
    return ordered[lower] + (ordered[upper] - ordered[lower]) * (position - lower)


# ----------------------------------------------------------------------------- our metrics


def our_metrics(records: Sequence[QuestionRecord], dataset: EvalDataset, k: int = RECALL_K) -> dict[str, MetricValue]:
    """Our retrieval, grounding, abstention, calibration, determinism, latency and access metrics."""
    answerable = [record for record in records if record.answerable]
    unanswerable = [record for record in records if not record.answerable]
    metrics: dict[str, MetricValue] = {}

    recall_hits = sum(
        1
        for record in answerable
        if set(record.gold_document_ids) & {chunk.document_id for chunk in (record.retrieved or record.context)[:k]}
    )
    metrics[f"recall_at_{k}"] = _rate(recall_hits, len(answerable))
    # Datasets with glossaries: the same search without query expansion, and what expansion gained.
    plain = [record for record in answerable if record.retrieved_without_glossary is not None]
    if plain:

        def hit(record: QuestionRecord, chunks: list) -> bool:
            return bool(set(record.gold_document_ids) & {chunk.document_id for chunk in chunks[:k]})

        with_hits = sum(1 for record in plain if hit(record, record.retrieved or record.context))
        plain_hits = sum(1 for record in plain if hit(record, record.retrieved_without_glossary))
        metrics[f"recall_at_{k}_without_glossary"] = _rate(plain_hits, len(plain))
        metrics["glossary_recall_gain"] = MetricValue(
            value=round((with_hits - plain_hits) / len(plain), 6), n=len(plain)
        )

    with_citations = [record for record in records if record.citations or find_source_ids(record.answer)]
    valid = sum(1 for record in with_citations if not invalid_citations(record))
    metrics["citation_validity"] = _rate(valid, len(with_citations), empty_reason="no response cited anything")

    metrics["grounded_rate"] = _rate(sum(1 for record in answerable if record.grounded), len(answerable))
    with_spans = [record for record in answerable if record.gold_answers]
    metrics["gold_span_rate"] = _rate(
        sum(1 for record in with_spans if contains_gold_span(record.answer, record.gold_answers)),
        len(with_spans),
        empty_reason="no answerable question has gold_answers",
    )
    metrics["cite_rate"] = _rate(sum(1 for record in answerable if record.action == "CITE"), len(answerable))
    metrics["abstention_rate"] = _rate(sum(1 for record in unanswerable if is_abstention(record)), len(unanswerable))

    scored = [record for record in records if record.overall_confidence is not None and not record.error]
    area = auroc([record.overall_confidence for record in scored], [record.answerable for record in scored])
    metrics["auroc"] = (
        MetricValue(value=area, n=len(scored))
        if area is not None
        else MetricValue.not_run("needs answerable and unanswerable questions with a confidence")
    )

    repeated = [record for record in records if record.top3_repeat is not None]
    metrics["determinism"] = _rate(
        sum(1 for record in repeated if record.top3 == record.top3_repeat),
        len(repeated),
        empty_reason="no determinism re-run (it runs unless --no-repeat is given)",
    )

    timed = [record.latency_ms for record in records if not record.error]
    searched = [
        record.search_latency_ms for record in records if record.search_latency_ms is not None and not record.error
    ]
    for name, values in (("latency", timed), ("search_latency", searched)):
        for q in (50, 95):
            value = percentile(values, q)
            metrics[f"{name}_p{q}_ms"] = (
                MetricValue(value=value, n=len(values), family="latency")
                if value is not None
                else MetricValue.not_run("nothing was timed", "latency")
            )

    metrics["forbidden_leakage"] = MetricValue(
        value=float(sum(1 for record in records if leaked_documents(record, dataset))), n=len(records)
    )
    metrics["errors"] = MetricValue(value=float(sum(1 for record in records if record.error)), n=len(records))
    return metrics


# ----------------------------------------------------------------------------- ragas, no LLM

_RAPIDFUZZ_REASON = (
    "needs rapidfuzz (ragas' string distance), which is not installed: add `rapidfuzz` to requirements.in"
)


def _ragas_scores(metric: Any, samples: list[Any]) -> float:
    """Mean of a ragas single-turn metric over samples (scored one by one, so a failure names its sample)."""
    values = [float(metric.single_turn_score(sample)) for sample in samples]
    return sum(values) / len(values)


def ragas_metrics(records: Sequence[QuestionRecord]) -> dict[str, MetricValue]:
    """
    ragas' metrics that need no LLM, over answerable questions:

    * ``IDBasedContextRecall`` / ``IDBasedContextPrecision``: context document ids vs gold document ids;
    * ``NonLLMContextRecall`` / ``NonLLMContextPrecisionWithReference``: context texts vs the gold chunks' texts;
    * ``NonLLMStringSimilarity``: the answer (SourceId markers removed) vs the reference answer.
    """
    from evaluation.ragas_compat import RagasUnavailableError, import_ragas

    names = [
        "ragas_id_context_recall",
        "ragas_id_context_precision",
        "ragas_context_recall",
        "ragas_context_precision",
        "ragas_string_similarity",
    ]
    try:
        import_ragas()
        from ragas import SingleTurnSample

        with warnings.catch_warnings():
            # The issue names these classic metrics; ragas 0.4 flags their import path as deprecated.
            warnings.simplefilter("ignore", DeprecationWarning)
            from ragas.metrics import IDBasedContextPrecision, IDBasedContextRecall
    except RagasUnavailableError as error:
        return {name: MetricValue.not_run(str(error), "ragas") for name in names}

    answerable = [record for record in records if record.answerable and not record.error]
    results: dict[str, MetricValue] = {}
    if not answerable:
        return {name: MetricValue.not_run("no answerable questions", "ragas") for name in names}

    id_samples = [
        SingleTurnSample(
            retrieved_context_ids=list(dict.fromkeys(chunk.document_id for chunk in record.context)),
            reference_context_ids=list(record.gold_document_ids),
        )
        for record in answerable
    ]
    # ragas divides by the retrieved count: an empty context scores precision 0 for us, not an error.
    non_empty = [sample for sample in id_samples if sample.retrieved_context_ids]
    results["ragas_id_context_recall"] = MetricValue(
        _ragas_scores(IDBasedContextRecall(), id_samples), len(id_samples), family="ragas"
    )
    precision = (
        _ragas_scores(IDBasedContextPrecision(), non_empty) * len(non_empty) / len(id_samples) if non_empty else 0.0
    )
    results["ragas_id_context_precision"] = MetricValue(precision, len(id_samples), family="ragas")

    if importlib.util.find_spec("rapidfuzz") is None:
        for name in names[2:]:
            results[name] = MetricValue.not_run(_RAPIDFUZZ_REASON, "ragas")
        return results

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from ragas.metrics import NonLLMContextPrecisionWithReference, NonLLMContextRecall, NonLLMStringSimilarity

    with_reference = [record for record in answerable if record.reference_contexts and record.context]
    if with_reference:
        text_samples = [
            SingleTurnSample(
                retrieved_contexts=[chunk.content for chunk in record.context],
                reference_contexts=list(record.reference_contexts),
            )
            for record in with_reference
        ]
        results["ragas_context_recall"] = MetricValue(
            _ragas_scores(NonLLMContextRecall(), text_samples), len(text_samples), family="ragas"
        )
        results["ragas_context_precision"] = MetricValue(
            _ragas_scores(NonLLMContextPrecisionWithReference(), text_samples), len(text_samples), family="ragas"
        )
    else:
        for name in ("ragas_context_recall", "ragas_context_precision"):
            results[name] = MetricValue.not_run(
                "no answerable question has both context and reference contexts", "ragas"
            )
    with_answer = [record for record in answerable if record.reference_answer]
    if with_answer:
        samples = [
            SingleTurnSample(response=strip_source_ids(record.answer), reference=record.reference_answer)
            for record in with_answer
        ]
        results["ragas_string_similarity"] = MetricValue(
            _ragas_scores(NonLLMStringSimilarity(), samples), len(samples), family="ragas"
        )
    else:
        results["ragas_string_similarity"] = MetricValue.not_run("no reference answers", "ragas")
    return results


# ----------------------------------------------------------------------------- ragas, LLM-judged

LLM_METRIC_NAMES = ("ragas_faithfulness", "ragas_response_relevancy")


def judge_status(
    base_url: str | None = None, model: str | None = None, timeout: float = JUDGE_PROBE_TIMEOUT_S
) -> tuple[bool, str]:
    """
    Whether a judge LLM is available: ``OLLAMA_BASE_URL`` is set, ``/api/tags`` answers,
    and the judge model (``RAGAS_JUDGE_MODEL``, else ``CHAT_MODEL``, else llama3.2) is pulled.

    :returns: ``(available, reason)``; the reason says why not, or which judge is used.
    """
    base_url = base_url if base_url is not None else os.environ.get("OLLAMA_BASE_URL", "")
    model = model or os.environ.get("RAGAS_JUDGE_MODEL") or os.environ.get("CHAT_MODEL") or "llama3.2"
    if not base_url:
        return False, "no judge LLM: OLLAMA_BASE_URL is not set"
    try:
        with urllib.request.urlopen(f"{base_url.rstrip('/')}/api/tags", timeout=timeout) as response:
            names = {entry.get("name") for entry in json.load(response).get("models", [])}
    except (urllib.error.URLError, OSError, ValueError) as error:
        return False, f"no judge LLM: Ollama at {base_url} did not answer ({error})"
    if model not in names and f"{model}:latest" not in names:
        return False, f"no judge LLM: model {model!r} is not pulled in Ollama at {base_url} (run `ollama pull {model}`)"
    return True, f"judge: {model} via Ollama at {base_url}"


def llm_judged_metrics(
    records: Sequence[QuestionRecord],
    status: tuple[bool, str] | None = None,
    judge_factory: Callable[[], tuple[Any, Any]] | None = None,
) -> dict[str, MetricValue]:
    """
    ragas ``Faithfulness`` and ``ResponseRelevancy`` (``AnswerRelevancy`` in ragas'
    collections API) over answerable questions that were answered with CITE, judged by
    Ollama through its OpenAI-compatible endpoint. Without a judge both are ``not_run``.

    :param status: A precomputed :func:`judge_status` result.
    :param judge_factory: Builds ``(llm, embeddings)`` for ragas (tests inject their own).
    """
    available, reason = status if status is not None else judge_status()
    if not available:
        return {name: MetricValue.not_run(reason, "ragas-llm") for name in LLM_METRIC_NAMES}
    cited = [
        record
        for record in records
        if record.answerable and record.action == "CITE" and record.context and not record.error
    ]
    if not cited:
        return {
            name: MetricValue.not_run("no answerable question was answered with CITE", "ragas-llm")
            for name in LLM_METRIC_NAMES
        }
    try:
        llm, embeddings = (judge_factory or _ollama_judge)()
        from ragas.metrics.collections import AnswerRelevancy, Faithfulness

        faithfulness = Faithfulness(llm=llm)
        relevancy = AnswerRelevancy(llm=llm, embeddings=embeddings)

        async def score_all() -> tuple[list[float], list[float]]:
            faithful, relevant = [], []
            for record in cited:
                response = strip_source_ids(record.answer)
                contexts = [chunk.content for chunk in record.context]
                faithful.append(
                    float(
                        (
                            await faithfulness.ascore(
                                user_input=record.question, response=response, retrieved_contexts=contexts
                            )
                        ).value
                    )
                )
                relevant.append(float((await relevancy.ascore(user_input=record.question, response=response)).value))
            return faithful, relevant

        faithful, relevant = asyncio.run(score_all())
    except Exception as error:  # a judge failure must be visible, not counted
        logger.warning("LLM-judged ragas metrics failed: %s", error)
        return {name: MetricValue.not_run(f"judge failed: {error}", "ragas-llm") for name in LLM_METRIC_NAMES}
    return {
        "ragas_faithfulness": MetricValue(
            sum(faithful) / len(faithful), len(faithful), family="ragas-llm", reason=reason
        ),
        "ragas_response_relevancy": MetricValue(
            sum(relevant) / len(relevant), len(relevant), family="ragas-llm", reason=reason
        ),
    }


def _ollama_judge() -> tuple[Any, Any]:
    """ragas' LLM (Ollama's OpenAI-compatible API) and embeddings (the packaged all-MiniLM-L6-v2)."""
    from evaluation.ragas_compat import import_ragas

    import_ragas()
    from openai import AsyncOpenAI
    from ragas.embeddings.huggingface_provider import HuggingFaceEmbeddings
    from ragas.llms import llm_factory

    from components.runtime.offline import embedding_model_path

    base_url = os.environ["OLLAMA_BASE_URL"].rstrip("/")
    model = os.environ.get("RAGAS_JUDGE_MODEL") or os.environ.get("CHAT_MODEL") or "llama3.2"
    client = AsyncOpenAI(base_url=f"{base_url}/v1", api_key="ollama")
    llm = llm_factory(model, provider="openai", client=client, temperature=0.0)
    embeddings = HuggingFaceEmbeddings(model=embedding_model_path(), local_files_only=True)
    return llm, embeddings


# ----------------------------------------------------------------------------- all together


def compute_metrics(
    records: Sequence[QuestionRecord],
    dataset: EvalDataset,
    judge: tuple[bool, str] | None = None,
    with_ragas: bool = True,
) -> dict[str, MetricValue]:
    """
    Every metric for one dataset's records.

    :param judge: A :func:`judge_status` result; computed when ``None``.
    :param with_ragas: Compute the ragas metrics (off only in unit tests of our own metrics).
    """
    metrics = our_metrics(records, dataset)
    if with_ragas:
        metrics.update(ragas_metrics(records))
        metrics.update(llm_judged_metrics(records, status=judge))
    return metrics
