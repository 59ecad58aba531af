"""Unit tests of the evaluation metrics: normalisation, spans, AUROC, citations, leakage, ragas."""

import random

import pytest
from sklearn.metrics import roc_auc_score

from components.core.models import INSUFFICIENT_INFORMATION_ANSWER
from evaluation.datasets import load_sample_gold
from evaluation.metrics import (
    MetricValue,
    auroc,
    contains_gold_span,
    invalid_citations,
    is_abstention,
    judge_status,
    leaked_documents,
    llm_judged_metrics,
    normalize_answer,
    our_metrics,
    percentile,
    ragas_metrics,
)
from evaluation.records import ContextChunk, QuestionRecord

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def gold():
    return load_sample_gold()


def record(**fields) -> QuestionRecord:
    defaults = {
        "question_id": "q",
        "question": "What?",
        "answerable": True,
        "requester": {"tenant_id": "acme", "user_tags": ["all-staff"]},
    }
    return QuestionRecord(**{**defaults, **fields})


def chunk(source_id: str, content: str = "text", score: float = 0.5) -> ContextChunk:
    return ContextChunk(source_id=source_id, document_id=source_id.rsplit(":", 1)[0], content=content, score=score)


class TestNormalizeAnswer:
    def test_squad_normalisation(self):
        assert normalize_answer("The  Normans, in FRANCE!") == "normans in france"

    def test_removes_articles_only_as_words(self):
        assert normalize_answer("an anthem a theatre") == "anthem theatre"

    def test_punctuation_inside_numbers(self):
        assert normalize_answer("EUR 1,500.") == "eur 1500"


class TestContainsGoldSpan:
    def test_span_found_after_normalisation(self):
        assert contains_gold_span(
            "They lived in the 10th and 11th centuries. [SourceId: normans-p00:0]", ["10th and 11th centuries"]
        )

    def test_any_of_several_spans(self):
        assert contains_gold_span("It is France.", ["Normandy", "france"])

    def test_whole_words_only(self):
        assert not contains_gold_span("The limit is 100 euros.", ["10"])

    def test_source_id_markers_do_not_match(self):
        assert not contains_gold_span("No. [SourceId: normans-p12:0]", ["12"])

    def test_empty_span_never_matches(self):
        assert not contains_gold_span("anything", ["", "the"])

    def test_scripts_without_spaces(self):
        # A CJK character is a word boundary of its own; Latin and digits inside still match whole.
        assert contains_gold_span("正式员工每年享有十五天带薪年假。 [SourceId: zh:0]", ["十五天带薪年假"])
        assert contains_gold_span("上海办公室位于南京西路 1266 号二十八楼", ["南京西路 1266 号"])
        assert contains_gold_span("应拨打热线 400-820-1234 报告", ["400-820-1234"])
        assert not contains_gold_span("应拨打热线 1400-820-1234 报告", ["400-820-1234"])
        assert contains_gold_span("Каждый получает 28 календарных дней.", ["28 календарных дней"])


class TestAuroc:
    def test_perfect_separation(self):
        assert auroc([90, 80, 10, 5], [True, True, False, False]) == 1.0

    def test_inverted(self):
        assert auroc([10, 5, 90, 80], [True, True, False, False]) == 0.0

    def test_ties_count_half(self):
        assert auroc([50, 50], [True, False]) == 0.5

    def test_one_class_gives_none(self):
        assert auroc([1, 2, 3], [True, True, True]) is None

    def test_matches_scikit_learn(self):
        generator = random.Random(7)
        labels = [generator.random() < 0.4 for _ in range(300)]
        scores = [generator.randint(0, 20) + (5 if label else 0) for label in labels]  # many ties
        assert auroc(scores, labels) == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)

    def test_length_mismatch_raises(self):
        with pytest.raises(ValueError, match="differ in length"):
            auroc([1, 2], [True])


class TestPercentile:
    def test_linear_interpolation(self):
        assert percentile([1, 2, 3, 4], 50) == 2.5
        assert percentile([10], 95) == 10

    def test_empty(self):
        assert percentile([], 50) is None


class TestCitationValidity:
    def test_cited_ids_in_context_are_valid(self):
        valid = record(answer="A [SourceId: doc-a:0].", context=[chunk("doc-a:0")], citations=["doc-a:0"])
        assert invalid_citations(valid) == []

    def test_citation_outside_context_is_invalid(self):
        invalid = record(answer="A.", context=[chunk("doc-a:0")], citations=["doc-b:3"])
        assert invalid_citations(invalid) == ["doc-b:3"]

    def test_marker_in_answer_text_is_checked_too(self):
        invalid = record(answer="A [SourceId: doc-a:1].", context=[chunk("doc-a:0")], citations=["doc-a:0"])
        assert invalid_citations(invalid) == ["doc-a:1"]

    def test_metric_is_share_of_citing_responses_without_invalid_ids(self, gold):
        records = [
            record(
                question_id="1",
                answer="x [SourceId: acme-hr-handbook:0]",
                context=[chunk("acme-hr-handbook:0")],
                citations=["acme-hr-handbook:0"],
            ),
            record(
                question_id="2",
                answer="y [SourceId: acme-hr-handbook:9]",
                context=[chunk("acme-hr-handbook:0")],
                citations=[],
            ),
            record(question_id="3", answer=INSUFFICIENT_INFORMATION_ANSWER, action="ROUTE"),
        ]
        metric = our_metrics(records, gold)["citation_validity"]
        assert (metric.value, metric.n) == (0.5, 2)


class TestAbstention:
    def test_route_or_insufficient_answer(self):
        assert is_abstention(record(action="ROUTE", answer="Something"))
        assert is_abstention(record(action="CITE", answer=INSUFFICIENT_INFORMATION_ANSWER))
        assert not is_abstention(record(action="CITE", answer="27 days [SourceId: a:0]"))


class TestLeakage:
    def test_visible_documents_do_not_leak(self, gold):
        ok = record(context=[chunk("acme-hr-handbook:0")], citations=["acme-hr-handbook:0"])
        assert leaked_documents(ok, gold) == []

    def test_other_tenant_leaks(self, gold):
        leak = record(context=[chunk("globex-employee-handbook:0")])
        assert leaked_documents(leak, gold) == ["globex-employee-handbook"]

    def test_missing_tag_leaks(self, gold):
        leak = record(retrieved=[chunk("acme-fy2025-budget:0")])
        assert leaked_documents(leak, gold) == ["acme-fy2025-budget"]

    def test_user_and_project_scope(self, gold):
        stranger = record(
            requester={"tenant_id": "acme", "user_tags": ["all-staff", "engineering"], "user_id": "u-other"},
            context=[chunk("acme-onboarding-priya:0"), chunk("acme-atlas-design:0")],
        )
        assert leaked_documents(stranger, gold) == ["acme-onboarding-priya", "acme-atlas-design"]
        priya = record(
            requester={"tenant_id": "acme", "user_tags": ["all-staff"], "user_id": "u-acme-priya"},
            context=[chunk("acme-onboarding-priya:0")],
        )
        assert leaked_documents(priya, gold) == []

    def test_cited_forbidden_document_leaks(self, gold):
        leak = record(citations=["acme-hr-handbook:1"], forbidden_document_ids=["acme-hr-handbook"])
        assert leaked_documents(leak, gold) == ["acme-hr-handbook"]

    def test_unknown_document_counts_as_leak(self, gold):
        assert leaked_documents(record(context=[chunk("nowhere:0")]), gold) == ["nowhere"]

    def test_metric_counts_questions(self, gold):
        records = [
            record(question_id="1", context=[chunk("globex-oncall-guide:0"), chunk("globex-oncall-guide:1")]),
            record(question_id="2"),
        ]
        assert our_metrics(records, gold)["forbidden_leakage"].value == 1


class TestGlossaryRecall:
    def test_recall_with_and_without_the_glossary(self, gold):
        def asked(question_id, with_glossary, without_glossary):
            return record(
                question_id=question_id,
                gold_document_ids=["acme-travel-policy"],
                retrieved=[chunk(source) for source in with_glossary],
                retrieved_without_glossary=[chunk(source) for source in without_glossary],
            )

        records = [
            asked("navan", ["acme-travel-policy:0"], ["acme-remote-work:0"] * 5 + ["acme-travel-policy:0"]),
            asked("hris", ["acme-hr-handbook:0", "acme-travel-policy:1"], ["acme-travel-policy:1"]),
            asked("okta", ["acme-hr-handbook:0"], ["acme-hr-handbook:0"]),
            record(question_id="dogs", answerable=False, retrieved_without_glossary=[]),
        ]
        metrics = our_metrics(records, gold)
        assert metrics["recall_at_5"].value == pytest.approx(2 / 3)
        assert metrics["recall_at_5_without_glossary"].value == pytest.approx(1 / 3)
        assert metrics["glossary_recall_gain"].value == pytest.approx(1 / 3, abs=1e-6)
        assert metrics["glossary_recall_gain"].n == 3

    def test_absent_without_a_glossary(self, gold):
        metrics = our_metrics([record(gold_document_ids=["acme-hr-handbook"])], gold)
        assert "glossary_recall_gain" not in metrics and "recall_at_5_without_glossary" not in metrics

    def test_records_round_trip(self):
        original = record(retrieved_without_glossary=[chunk("acme-hr-handbook:0")])
        assert QuestionRecord.from_dict(original.to_dict()) == original


class TestOurMetrics:
    def test_figures_on_a_small_run(self, gold):
        records = [
            record(
                question_id="a1",
                gold_document_ids=["acme-hr-handbook"],
                gold_answers=["27 days"],
                action="CITE",
                grounded=True,
                answer="27 days [SourceId: acme-hr-handbook:0]",
                context=[chunk("acme-hr-handbook:0")],
                citations=["acme-hr-handbook:0"],
                confidence={"overall": 80},
                latency_ms=10.0,
                top3_repeat=["acme-hr-handbook:0"],
            ),
            record(
                question_id="a2",
                gold_document_ids=["acme-expense-policy"],
                gold_answers=["30 days"],
                action="ROUTE",
                answer="Unrelated.",
                context=[chunk("acme-hr-handbook:1")],
                confidence={"overall": 40},
                latency_ms=30.0,
                top3_repeat=["x:0"],
            ),
            record(
                question_id="u1",
                answerable=False,
                action="ROUTE",
                answer=INSUFFICIENT_INFORMATION_ANSWER,
                confidence={"overall": 20},
                latency_ms=20.0,
                top3_repeat=[],
            ),
        ]
        metrics = our_metrics(records, gold)
        assert metrics["recall_at_5"].value == 0.5
        assert metrics["gold_span_rate"].value == 0.5
        assert metrics["cite_rate"].value == 0.5
        assert metrics["grounded_rate"].value == 0.5
        assert metrics["abstention_rate"].value == 1.0
        assert metrics["auroc"].value == 1.0
        assert metrics["determinism"].value == pytest.approx(2 / 3)
        assert metrics["latency_p50_ms"].value == 20.0
        assert metrics["search_latency_p50_ms"].status == "not_run"

    def test_recall_uses_search_results_when_present(self, gold):
        hit = record(
            gold_document_ids=["acme-it-equipment"],
            context=[chunk("acme-hr-handbook:0")],
            retrieved=[chunk(f"acme-hr-handbook:{index}") for index in range(4)] + [chunk("acme-it-equipment:2")],
        )
        miss = record(
            question_id="m",
            gold_document_ids=["acme-it-equipment"],
            retrieved=[chunk(f"acme-hr-handbook:{index}") for index in range(5)] + [chunk("acme-it-equipment:2")],
        )
        assert our_metrics([hit], gold)["recall_at_5"].value == 1.0
        assert our_metrics([miss], gold)["recall_at_5"].value == 0.0

    def test_metrics_without_data_are_not_run_never_zero(self, gold):
        metrics = our_metrics([record(answerable=False, action="ROUTE")], gold)
        for name in ("recall_at_5", "gold_span_rate", "cite_rate", "auroc", "determinism", "citation_validity"):
            assert metrics[name].status == "not_run" and metrics[name].value is None and metrics[name].reason

    def test_errors_are_counted(self, gold):
        assert our_metrics([record(error="boom")], gold)["errors"].value == 1


class TestRagasMetrics:
    def test_id_based_context_metrics(self):
        records = [
            record(question_id="1", gold_document_ids=["d1"], context=[chunk("d1:0"), chunk("d1:1"), chunk("d2:0")]),
            record(question_id="2", gold_document_ids=["d3"], context=[chunk("d4:0")]),
            record(question_id="3", answerable=False, context=[chunk("d5:0")]),
        ]
        metrics = ragas_metrics(records)
        assert metrics["ragas_id_context_recall"].value == pytest.approx(0.5)
        # document ids are deduplicated: d1, d2 -> 1/2; d4 -> 0
        assert metrics["ragas_id_context_precision"].value == pytest.approx(0.25)
        assert metrics["ragas_id_context_recall"].family == "ragas"

    def test_text_metrics_run_or_say_why(self):
        metrics = ragas_metrics(
            [
                record(
                    gold_document_ids=["d1"],
                    context=[chunk("d1:0", "a b c")],
                    reference_contexts=["a b c"],
                    reference_answer="a",
                )
            ]
        )
        for name in ("ragas_context_recall", "ragas_context_precision", "ragas_string_similarity"):
            assert metrics[name].ran or (metrics[name].status == "not_run" and "rapidfuzz" in metrics[name].reason)


class TestLlmJudged:
    def test_not_run_without_ollama(self, monkeypatch):
        monkeypatch.delenv("OLLAMA_BASE_URL", raising=False)
        available, reason = judge_status()
        assert not available and "OLLAMA_BASE_URL is not set" in reason
        metrics = llm_judged_metrics([record(action="CITE", context=[chunk("d:0")])])
        assert all(value.status == "not_run" and value.value is None for value in metrics.values())
        assert set(metrics) == {"ragas_faithfulness", "ragas_response_relevancy"}

    def test_not_run_when_ollama_does_not_answer(self):
        available, reason = judge_status("http://127.0.0.1:9", timeout=0.5)
        assert not available and "did not answer" in reason

    @pytest.mark.slow  # imports ragas' collections API (~10 s on a busy 2-core machine)
    def test_scores_with_a_judge(self):
        """The real ragas Faithfulness / AnswerRelevancy code, with a scripted judge standing in for Ollama."""
        from evaluation.ragas_compat import import_ragas

        import_ragas()
        from ragas.embeddings.base import BaseRagasEmbedding
        from ragas.llms.base import InstructorBaseRagasLLM

        class ScriptedJudge(InstructorBaseRagasLLM):
            """Every statement is supported; every generated question is the asked one."""

            def generate(self, prompt, response_model):
                if response_model.__name__ == "AnswerRelevanceOutput":
                    return response_model(question="How many days of leave?", noncommittal=0)
                if response_model.__name__ == "StatementGeneratorOutput":
                    return response_model(statements=["Employees get 27 days."])
                return response_model(
                    statements=[{"statement": "Employees get 27 days.", "reason": "in context", "verdict": 1}]
                )

            async def agenerate(self, prompt, response_model):
                return self.generate(prompt, response_model)

        class ConstantEmbeddings(BaseRagasEmbedding):
            def embed_text(self, text, **kwargs):
                return [1.0, 0.0, 0.0]

            async def aembed_text(self, text, **kwargs):
                return self.embed_text(text)

        records = [
            record(
                question="How many days of leave?",
                action="CITE",
                answer="Employees get 27 days. [SourceId: d:0]",
                context=[chunk("d:0", "Employees get 27 days.")],
            )
        ]
        metrics = llm_judged_metrics(
            records, status=(True, "judge: scripted"), judge_factory=lambda: (ScriptedJudge(), ConstantEmbeddings())
        )
        assert metrics["ragas_faithfulness"].value == pytest.approx(1.0) and metrics["ragas_faithfulness"].n == 1
        assert metrics["ragas_response_relevancy"].value == pytest.approx(1.0)
        assert metrics["ragas_faithfulness"].family == "ragas-llm"

    def test_judge_failure_is_reported_not_counted(self):
        def broken_judge():
            raise RuntimeError("judge exploded")

        metrics = llm_judged_metrics(
            [record(action="CITE", context=[chunk("d:0")])], status=(True, "judge: test"), judge_factory=broken_judge
        )
        assert all(value.status == "not_run" and "judge exploded" in value.reason for value in metrics.values())


class TestMetricValue:
    def test_not_run_has_no_value(self):
        value = MetricValue.not_run("why")
        assert not value.ran and value.to_dict()["reason"] == "why"


@pytest.mark.unit
def test_calibration_bins_confidence_against_outcomes():
    from evaluation.metrics import calibration

    records = [
        record(answerable=True, action="CITE", answer="27 days", gold_answers=["27 days"], confidence={"overall": 85}),
        record(answerable=True, action="CITE", answer="wrong", gold_answers=["27 days"], confidence={"overall": 81}),
        record(answerable=False, action="ROUTE", answer=INSUFFICIENT_INFORMATION_ANSWER, confidence={"overall": 10}),
        record(answerable=True, action="ROUTE", answer=INSUFFICIENT_INFORMATION_ANSWER, confidence={"overall": 45}),
        record(answerable=True, error="boom", confidence={"overall": 90}),
        record(answerable=True, action="CITE", answer="27 days", gold_answers=["27 days"], confidence={"overall": 100}),
    ]
    bins = {row["bin"]: row for row in calibration(records)}
    assert list(bins) == ["0-20", "20-40", "40-60", "60-80", "80-100"]
    assert bins["80-100"] == {"bin": "80-100", "questions": 3, "answerable": 1.0, "answered_correctly": 0.667}
    assert bins["0-20"]["answerable"] == 0.0 and bins["0-20"]["answered_correctly"] == 0.0
    assert bins["40-60"]["answered_correctly"] == 0.0 and bins["20-40"]["questions"] == 0
    assert bins["20-40"]["answerable"] is None
