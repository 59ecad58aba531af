"""
``HybridConfidenceScorer``: the hybrid confidence of docs/contract.md, "Confidence and routing".

``overall = retrieval*30 + coverage*40 + llm/100*30``, truncated to an integer and
clamped to 0-100, where

* ``retrieval`` is the mean dense similarity of the context chunks used (0 with
  no context): the chunks the answer cites, or, for an answer citing none (a decline), every
  retrieved chunk, the neighbours read around a strong hit (``meta.neighbour_of``) left out. A filler chunk that
  filled the top-k without being used says nothing about how well the answer's evidence was found;
* ``coverage`` is the share of the answer's key phrases found in the context.
  Key phrases are content-word n-grams: the answer (SourceId markers stripped) is
  cut into runs of consecutive content words at stopwords and punctuation; a
  one-word run is a phrase, a longer run gives its adjacent pairs. A phrase is
  found when the context's runs contain it (see :mod:`components.core.text_analysis`).
  The "not enough information" answer asserts nothing, so its coverage is 0.
  When the answerer is a reader that reports its ``evidence`` (the embedded
  default, :class:`components.generators.sentence_reader.SentenceReader`), coverage is instead
  the reader's ``support``: its calibrated 0-1 score that the context answers the
  question, the same evidence it declined or answered on (docs/reader.md,
  "Confidence"). A declined answer keeps its (below-boundary) support, so declines
  are ranked too; it still routes, since it cites nothing;
* ``llm`` is the LLM's 0-100 support rating, when there is one.

Without an LLM rating (extractive backend, or an unparsable rating) the weights
renormalise over the signals that exist: ``overall = 100 * (0.3*r + 0.4*c) / 0.7``,
and ``llm_score`` is ``None``. The breakdown is always returned.
"""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from components.core.models import INSUFFICIENT_INFORMATION_ANSWER
from components.core.span_tags import tag_span
from components.core.text_analysis import (
    find_source_ids,
    key_phrases,
    phrase_index,
    source_id_of,
    strip_source_ids,
    words,
)
from components.retrievers.neighbour_chunk_retriever import NEIGHBOUR_FIELD


def coverage_score(answer: str, context: str) -> float:
    """Share (0-1) of the answer's key phrases found in the context; 0 when the answer has none."""
    phrases = key_phrases(answer)
    if not phrases:
        return 0.0
    index = phrase_index(strip_source_ids(context))
    return sum(1 for phrase in phrases if phrase in index) / len(phrases)


def retrieval_score(answer: str, documents: list[Document]) -> float:
    """
    Mean dense similarity (0-1) of the chunks the answer uses (docs/contract.md, "Confidence and routing"): those
    it cites, else every retrieved chunk. A neighbour read around a strong hit (small-to-big) counts only when
    cited: the question did not find it.
    """
    cited = set(find_source_ids(answer))
    used = [doc for doc in documents if source_id_of(doc) in cited]
    used = used or [doc for doc in documents if not (doc.meta or {}).get(NEIGHBOUR_FIELD)] or documents
    scores = [min(1.0, max(0.0, doc.score if doc.score is not None else 0.0)) for doc in used]
    return sum(scores) / len(scores) if scores else 0.0


@component
class HybridConfidenceScorer:
    """
    Usage:
    ```python
    scorer = HybridConfidenceScorer()
    scorer.run(answer=answer, documents=context_chunks, context=context, llm_score=85)["confidence"]
    # {"overall": 81, "retrieval_score": 0.62, "coverage_score": 0.9, "llm_score": 85}
    ```
    """

    # run() changes none of its inputs and keeps none of them: the planned pipeline passes them without a defensive
    # copy (docs/contract.md, "Pipeline runs").
    reads_inputs_only = True

    def __init__(
        self,
        retrieval_weight: float = 30.0,
        coverage_weight: float = 40.0,
        llm_weight: float = 30.0,
        insufficient_answer: str = INSUFFICIENT_INFORMATION_ANSWER,
    ) -> None:
        """
        :param retrieval_weight: Weight of the retrieval signal.
        :param coverage_weight: Weight of the coverage signal.
        :param llm_weight: Weight of the LLM rating.
        :param insufficient_answer: The refusal sentence; an answer that is only this has coverage 0.
        """
        weights = {"retrieval_weight": retrieval_weight, "coverage_weight": coverage_weight, "llm_weight": llm_weight}
        for name, value in weights.items():
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be a non-negative number, got {value!r}.")
        if retrieval_weight + coverage_weight <= 0:
            raise ValueError(
                "retrieval_weight + coverage_weight must be positive (they are the signals that always exist)."
            )
        self.retrieval_weight = float(retrieval_weight)
        self.coverage_weight = float(coverage_weight)
        self.llm_weight = float(llm_weight)
        self.insufficient_answer = insufficient_answer

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component."""
        return default_to_dict(
            self,
            retrieval_weight=self.retrieval_weight,
            coverage_weight=self.coverage_weight,
            llm_weight=self.llm_weight,
            insufficient_answer=self.insufficient_answer,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "HybridConfidenceScorer":
        """Deserialize the component."""
        return default_from_dict(cls, data)

    def is_insufficient(self, answer: str) -> bool:
        """Whether the answer is only the refusal sentence."""
        return words(strip_source_ids(answer)) == words(self.insufficient_answer)

    def combine(self, retrieval: float, coverage: float, llm_score: int | None) -> int:
        """The overall score from the three signals, renormalised when ``llm_score`` is ``None``."""
        total = self.retrieval_weight * retrieval + self.coverage_weight * coverage
        weight = self.retrieval_weight + self.coverage_weight
        if llm_score is not None:
            total += self.llm_weight * llm_score / 100.0
            weight += self.llm_weight
        # round() first so float noise (64.9999999) does not truncate a whole point away.
        overall = int(round(100.0 * total / weight, 6)) if weight else 0
        return min(100, max(0, overall))

    @staticmethod
    def evidence_support(evidence: dict[str, Any] | None) -> float | None:
        """The reader's 0-1 ``support`` from its evidence, or ``None`` when there is no usable evidence."""
        if not evidence:
            return None
        support = evidence.get("support")
        if not isinstance(support, (int, float)) or isinstance(support, bool) or not 0.0 <= support <= 1.0:
            raise ValueError(f"evidence.support must be a number within 0-1, got {support!r}.")
        return float(support)

    @component.output_types(confidence=dict[str, Any])
    def run(
        self,
        answer: str,
        documents: list[Document],
        context: str,
        llm_score: int | None = None,
        evidence: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """
        :param answer: The answer text.
        :param documents: The context chunks used (``score`` = dense similarity).
        :param context: The rendered context the answer was generated from.
        :param llm_score: The LLM's 0-100 support rating, or ``None``.
        :param evidence: A reader's evidence (``support`` 0-1); when given, it is the coverage part.
        :returns: ``confidence``: ``{overall, retrieval_score, coverage_score, llm_score}``.
        """
        retrieval = retrieval_score(answer, documents)
        support = self.evidence_support(evidence)
        if support is not None:
            coverage = support if documents else 0.0
        else:
            coverage = 0.0 if self.is_insufficient(answer) else coverage_score(answer, context)
        if llm_score is not None and not (isinstance(llm_score, int) and 0 <= llm_score <= 100):
            raise ValueError(f"llm_score must be an integer 0-100 or None, got {llm_score!r}.")
        overall = self.combine(retrieval, coverage, llm_score)
        tag_span(
            {
                "sourcebound.confidence": overall,
                "sourcebound.confidence.retrieval": round(retrieval, 6),
                "sourcebound.confidence.coverage": round(coverage, 6),
                "sourcebound.confidence.llm": llm_score,
            }
        )
        return {
            "confidence": {
                "overall": overall,
                "retrieval_score": round(retrieval, 6),
                "coverage_score": round(coverage, 6),
                "llm_score": llm_score,
            }
        }
