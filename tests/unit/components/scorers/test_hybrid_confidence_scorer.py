"""HybridConfidenceScorer (specification test_calculate_coverage / test_calculate_confidence_hybrid)."""

import pytest
from haystack import Document

from components.core.models import INSUFFICIENT_INFORMATION_ANSWER
from components.scorers.hybrid_confidence_scorer import HybridConfidenceScorer, coverage_score

CONTEXT = "[SourceId: hr:2]\n---\nFull-time employees receive 27 vacation days per year.\nCarry-over is capped at 5 days.\n---"


def _docs(*scores: float) -> list[Document]:
    return [Document(id=f"d:{i}", content="x", score=score) for i, score in enumerate(scores)]


@pytest.mark.unit
class TestHybridConfidenceScorer:
    def test_init(self):
        scorer = HybridConfidenceScorer()
        assert (scorer.retrieval_weight, scorer.coverage_weight, scorer.llm_weight) == (30, 40, 30)
        with pytest.raises(ValueError):
            HybridConfidenceScorer(retrieval_weight=-1)

    def test_to_dict(self):
        params = HybridConfidenceScorer().to_dict()["init_parameters"]
        assert params["retrieval_weight"] == 30 and params["insufficient_answer"] == INSUFFICIENT_INFORMATION_ANSWER

    def test_from_dict(self):
        assert HybridConfidenceScorer.from_dict(HybridConfidenceScorer(llm_weight=20).to_dict()).llm_weight == 20

    def test_calculate_coverage(self):
        # "Employees receive 30 sick days" -> employee receive, receive 30, 30 sick, sick day: 1 of 4 in the context.
        assert coverage_score("Employees receive 27 vacation days. [SourceId: hr:2]", CONTEXT) == 1.0
        assert coverage_score("Employees receive 30 sick days.", CONTEXT) == pytest.approx(1 / 4)
        assert coverage_score("Unicorns dance.", CONTEXT) == 0.0
        assert coverage_score("", CONTEXT) == 0.0

    def test_calculate_confidence_hybrid(self):
        out = HybridConfidenceScorer().run(
            answer="Employees receive 27 vacation days. [SourceId: hr:2]",
            documents=_docs(0.9, 0.7),
            context=CONTEXT,
            llm_score=70,
        )["confidence"]
        # 0.8*30 + 1.0*40 + 0.70*30 = 24 + 40 + 21 = 85
        assert out == {"overall": 85, "retrieval_score": 0.8, "coverage_score": 1.0, "llm_score": 70}

    def test_weights_renormalise_without_llm(self):
        out = HybridConfidenceScorer().run(
            answer="Employees receive 27 vacation days.", documents=_docs(0.6), context=CONTEXT
        )
        # (0.6*30 + 1.0*40) / 70 * 100 = 82.86
        assert out["confidence"] == {"overall": 82, "retrieval_score": 0.6, "coverage_score": 1.0, "llm_score": None}

    def test_clamped_and_truncated(self):
        scorer = HybridConfidenceScorer()
        assert scorer.combine(1.0, 1.0, 100) == 100
        assert scorer.combine(0.0, 0.0, 0) == 0
        assert scorer.combine(0.5, 0.5, 50) == 50
        assert scorer.combine(0.3333, 0.0, None) == 14  # 9.999/70 -> 14.28

    def test_refusal_and_no_context(self):
        out = HybridConfidenceScorer().run(answer=INSUFFICIENT_INFORMATION_ANSWER, documents=[], context="")[
            "confidence"
        ]
        assert out == {"overall": 0, "retrieval_score": 0.0, "coverage_score": 0.0, "llm_score": None}

    def test_rejects_bad_llm_score(self):
        with pytest.raises(ValueError):
            HybridConfidenceScorer().run(answer="a", documents=[], context="", llm_score=150)
