"""HybridConfidenceScorer (specification test_calculate_coverage / test_calculate_confidence_hybrid)."""

import pytest
from haystack import Document

from components.core.models import INSUFFICIENT_INFORMATION_ANSWER
from components.scorers.hybrid_confidence_scorer import HybridConfidenceScorer, coverage_score

CONTEXT = (
    "[SourceId: hr:2]\n---\n"
    "Full-time employees receive 27 vacation days per year.\nCarry-over is capped at 5 days.\n---"
)


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

    def test_run_reader_evidence_is_the_coverage(self):
        scorer = HybridConfidenceScorer()
        answered = scorer.run(
            answer="Employees receive 27 vacation days. [SourceId: hr:2]",
            documents=_docs(0.6),
            context=CONTEXT,
            evidence={"support": 0.9, "answered": True},
        )["confidence"]
        # (0.6*30 + 0.9*40) / 70 * 100 = 77.14: the reader's support replaces the key-phrase coverage (1.0).
        assert answered == {"overall": 77, "retrieval_score": 0.6, "coverage_score": 0.9, "llm_score": None}
        declined = scorer.run(
            answer=INSUFFICIENT_INFORMATION_ANSWER,
            documents=_docs(0.6),
            context=CONTEXT,
            evidence={"support": 0.4, "answered": False},
        )["confidence"]
        # A decline keeps its (lower) support, so declines are ranked too, always below an answer on equal retrieval.
        assert declined["coverage_score"] == 0.4 and declined["overall"] == 48 < answered["overall"]
        with_llm = scorer.run(
            answer="x", documents=_docs(0.6), context=CONTEXT, llm_score=50, evidence={"support": 0.9}
        )
        assert with_llm["confidence"]["overall"] == 69  # 18 + 36 + 15: the 30/40/30 contract is unchanged

    def test_run_retrieval_counts_only_retrieved_chunks(self):
        # A neighbour read around a strong hit (small-to-big) was not found by the question: it does not lower
        # the retrieval part (docs/contract.md, "Confidence and routing").
        documents = _docs(0.6)
        neighbour = Document(id="hr:3", content="More leave rules.", score=0.1, meta={"neighbour_of": "hr:2"})
        with_neighbour = HybridConfidenceScorer().run(
            answer="x", documents=[*documents, neighbour], context=CONTEXT, evidence={"support": 0.9}
        )["confidence"]
        alone = HybridConfidenceScorer().run(
            answer="x", documents=documents, context=CONTEXT, evidence={"support": 0.9}
        )
        assert with_neighbour == alone["confidence"] and with_neighbour["retrieval_score"] == 0.6

    def test_run_retrieval_is_the_cited_chunks(self):
        # The chunks an answer cites are the ones it used; a weak chunk that only filled the top-k does not lower
        # the retrieval part, and a cited neighbour counts with its own similarity (docs/contract.md).
        strong = Document(id="hr:2", content="Full-time employees receive 27 vacation days per year.", score=0.8)
        filler = Document(id="it:7", content="Printers are on floor 2.", score=0.3)
        neighbour = Document(id="hr:3", content="Carry-over is capped.", score=0.5, meta={"neighbour_of": "hr:2"})
        scorer = HybridConfidenceScorer()
        documents = [strong, filler, neighbour]
        cites_strong = scorer.run(answer="27 days. [SourceId: hr:2]", documents=documents, context=CONTEXT)
        assert cites_strong["confidence"]["retrieval_score"] == 0.8
        cites_both = scorer.run(
            answer="27 days. [SourceId: hr:2] Capped. [SourceId: hr:3]", documents=documents, context=CONTEXT
        )
        assert cites_both["confidence"]["retrieval_score"] == pytest.approx(0.65)
        # A decline cites nothing: every retrieved chunk counts, the neighbour left out.
        declined = scorer.run(answer=INSUFFICIENT_INFORMATION_ANSWER, documents=documents, context=CONTEXT)
        assert declined["confidence"]["retrieval_score"] == pytest.approx(0.55)

    def test_run_evidence_without_context_or_support(self):
        scorer = HybridConfidenceScorer()
        out = scorer.run(answer=INSUFFICIENT_INFORMATION_ANSWER, documents=[], context="", evidence={"support": 0.7})
        assert out["confidence"]["coverage_score"] == 0.0 and out["confidence"]["overall"] == 0
        # Empty evidence (a backend without a reader) falls back to the key-phrase coverage.
        assert (
            scorer.run(
                answer="Employees receive 27 vacation days.", documents=_docs(0.6), context=CONTEXT, evidence={}
            )["confidence"]["coverage_score"]
            == 1.0
        )
        for bad in ({"support": 1.5}, {"support": "high"}, {"answered": True}):
            with pytest.raises(ValueError, match="evidence.support"):
                scorer.run(answer="x", documents=_docs(0.6), context=CONTEXT, evidence=bad)


@pytest.mark.unit
class TestCoverageInOtherLanguages:
    CASES = {
        "ru": (
            "Каждый сотрудник получает 28 календарных дней оплачиваемого отпуска в году. Неиспользованные дни можно "
            "перенести на следующий год, но не более 7 дней.",
            "Каждый сотрудник получает 28 календарных дней оплачиваемого отпуска в году. [SourceId: ru-hr:0]",
            "Столовая работает с 12:00 до 15:00, обед стоит 400 рублей. [SourceId: ru-hr:0]",
        ),
        "de": (
            "Die Kündigungsfrist beträgt für beide Seiten drei Monate zum Quartalsende. Während der Probezeit gilt "
            "eine verkürzte Frist von zwei Wochen.",
            "Die Kündigungsfrist beträgt für beide Seiten drei Monate zum Quartalsende. [SourceId: de-hb:0]",
            "Das Weihnachtsgeld wird im November mit dem Gehalt ausgezahlt. [SourceId: de-hb:0]",
        ),
        "zh": (
            "正式员工每年享有十五天带薪年假。未使用的年假最多可以顺延五天到下一年。",
            "正式员工每年享有十五天带薪年假。 [SourceId: zh-hb:0]",
            "公司年终奖在每年一月随工资发放。 [SourceId: zh-hb:0]",
        ),
    }

    @pytest.mark.parametrize("language", sorted(CASES))
    def test_correct_answer_high_unrelated_low(self, language):
        context, correct, unrelated = self.CASES[language]
        assert coverage_score(correct, context) >= 0.9
        assert coverage_score(unrelated, context) <= 0.25
