"""The evaluation report (JSON, Markdown, PNG charts), the stage timer and the CLI's argument handling."""

import json

import pytest
from haystack import Pipeline, component

from evaluation.__main__ import parse_overrides
from evaluation.datasets import load_sample_gold
from evaluation.metrics import compute_metrics
from evaluation.records import ContextChunk, QuestionRecord
from evaluation.report import baseline_summary, format_value, markdown_table, write_report
from evaluation.runner import resolve_datasets
from evaluation.stage_timer import StageTimer

pytestmark = pytest.mark.unit

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def run():
    """A synthetic run over the gold set: every answerable question answered from its gold document."""
    dataset = load_sample_gold()
    records = []
    for number, question in enumerate(dataset.questions):
        if question.answerable:
            chunk = ContextChunk(f"{question.gold_document_ids[0]}:0", question.gold_document_ids[0], "text", 0.6)
            answer, action, confidence, context = (
                f"{question.gold_answers[0]} [SourceId: {chunk.source_id}]",
                "CITE",
                70 + number % 30,
                [chunk],
            )
        else:
            answer, action, confidence, context = (
                "I don't have enough information in the available documents to answer this question.",
                "ROUTE",
                10 + number % 40,
                [],
            )
        records.append(
            QuestionRecord(
                question_id=question.id,
                question=question.question,
                answerable=question.answerable,
                category=question.category,
                requester=question.requester.request_fields(),
                gold_document_ids=list(question.gold_document_ids),
                gold_answers=list(question.gold_answers),
                reference_answer=question.reference_answer,
                forbidden_document_ids=list(question.forbidden_document_ids),
                answer=answer,
                action=action,
                confidence={"overall": confidence, "retrieval_score": 0.5, "coverage_score": 1.0, "llm_score": None},
                grounded=action == "CITE",
                context=context,
                citations=[chunk.source_id for chunk in context],
                latency_ms=12.0,
                stage_ms={"retriever": 3.0, "answerer": 1.0},
                top3_repeat=[chunk.source_id for chunk in context],
            )
        )
    metrics = compute_metrics(records, dataset, judge=(False, "no judge LLM: OLLAMA_BASE_URL is not set"))
    summary = {
        "mode": "ci",
        "routing_threshold": 60,
        "judge": {"available": False, "reason": "no judge LLM: OLLAMA_BASE_URL is not set"},
        "datasets": {
            dataset.name: {
                "documents": 17,
                "chunks": 100,
                "questions": len(records),
                "answerable": 42,
                "unanswerable": 18,
                "granularity": dataset.granularity,
                "index_seconds": 1.0,
                "stage_latency_p50_ms": {"retriever": 3.0, "answerer": 1.0},
                "metrics": {name: value.to_dict() for name, value in metrics.items()},
            }
        },
    }
    return summary, {dataset.name: records}


class TestReport:
    def test_writes_json_markdown_questions_and_charts(self, run, tmp_path):
        summary, records = run
        paths = write_report(summary, records, tmp_path)
        assert (
            json.loads(paths["json"].read_text())["datasets"]["sample-gold"]["metrics"]["recall_at_5"]["value"] == 1.0
        )
        lines = paths["questions:sample-gold"].read_text().splitlines()
        assert len(lines) == 60 and json.loads(lines[0])["question_id"] == "acme-leave-days"
        for kind in ("metrics_png", "confidence_png", "latency_png"):
            assert paths[kind].read_bytes().startswith(PNG_SIGNATURE) and paths[kind].stat().st_size > 5000
        assert paths["markdown"].read_text() == markdown_table(summary)

    def test_markdown_marks_thresholds_and_lists_what_did_not_run(self, run):
        summary, _ = run
        table = markdown_table(summary, {"defaults": {"recall_at_5": {"min": 0.8}}, "datasets": {}})
        assert "| recall@5 (gold document in top 5) | 1.000 ✓ (≥ 0.8) |" in table
        assert "ragas Faithfulness (LLM judge): not run: no judge LLM: OLLAMA_BASE_URL is not set" in table
        assert "All thresholds in `evaluation/thresholds.yml` hold." in table

    def test_calibration_and_real_model_lane_sections(self, run):
        from evaluation.metrics import calibration

        summary, records = run
        name = next(iter(summary["datasets"]))
        with_sections = {
            **summary,
            "datasets": {name: {**summary["datasets"][name], "calibration": calibration(records[name])}},
            "real_model_lane": {"status": "not run", "reason": "cyllama is not installed: run `make provision-llm`"},
        }
        table = markdown_table(with_sections, {"defaults": {}, "datasets": {}})
        assert "## Calibration" in table and "| dataset | 0-20 | 20-40 | 40-60 | 60-80 | 80-100 |" in table
        # The synthetic run answers every answerable question correctly at 70-99 and declines the rest at 10-49.
        row = next(line for line in table.splitlines() if line.startswith(f"| {name} |") and "n=" in line)
        assert "| 1.00 / 1.00 (n=" in row and "0.00 / 0.00 (n=" in row
        assert "## Real-model lane" in table and "Not run: cyllama is not installed" in table

    def test_language_table_for_datasets_that_name_a_language(self, run):
        summary, _ = run
        assert "## Languages" not in markdown_table(summary)  # the English sets name no language
        multilingual = json.loads(json.dumps(summary))
        for language in ("zh", "de"):
            multilingual["datasets"][f"lang-{language}"] = {
                **json.loads(json.dumps(summary["datasets"]["sample-gold"])),
                "language": language,
                "answerable": 8,
                "unanswerable": 3,
            }
        multilingual["datasets"]["lang-zh"]["metrics"]["abstention_rate"]["value"] = 2 / 3
        table = markdown_table(multilingual, {"defaults": {}, "datasets": {}})
        header = (
            "| language | dataset | answerable / unanswerable | recall@5 | gold span | CITE (answerable) | declines"
        )
        assert "## Languages" in table and header in table
        assert "| de | lang-de | 8 / 3 | 1.000 | 1.000 | 1.000 | 1.000 |" in table
        assert "| zh | lang-zh | 8 / 3 | 1.000 | 1.000 | 1.000 | 0.667 |" in table
        assert table.index("| de | lang-de") < table.index("| zh | lang-zh")

    def test_languages_builtin_resolves_the_three_language_datasets(self):
        datasets = resolve_datasets(["languages"])
        assert [(dataset.name, dataset.language) for dataset in datasets] == [
            ("lang-ru", "ru"),
            ("lang-de", "de"),
            ("lang-zh", "zh"),
        ]
        for dataset in datasets:
            assert len(dataset.documents) == 9 and len(dataset.answerable) >= 8 and len(dataset.unanswerable) >= 3
            assert all(dataset.document(doc_id) for q in dataset.answerable for doc_id in q.gold_document_ids)
        assert [len(dataset.unanswerable) for dataset in resolve_datasets(["languages"], max_unanswerable=1)] == [1] * 3

    def test_markdown_shows_violations(self, run):
        summary, _ = run
        bad = json.loads(json.dumps(summary))
        bad["datasets"]["sample-gold"]["metrics"]["forbidden_leakage"]["value"] = 3
        table = markdown_table(bad, {"defaults": {"forbidden_leakage": {"max": 0}}, "datasets": {}})
        assert "| forbidden-document leakage (questions) | 3 ✗ (≤ 0) |" in table
        assert "- sample-gold: forbidden_leakage: 3 > max 0" in table

    def test_markdown_before_after_with_a_baseline(self, run):
        summary, _ = run
        before = json.loads(json.dumps(summary))
        before["datasets"]["sample-gold"]["metrics"]["gold_span_rate"]["value"] = 0.5
        before["datasets"]["sample-gold"]["metrics"]["ragas_faithfulness"] = {"status": "not_run", "value": None}
        before["git_revision"] = "abc1234"
        compared = {**summary, "baseline": baseline_summary(before, "old/report.json")}
        table = markdown_table(compared, {"defaults": {}, "datasets": {}})
        assert "## Before → after" in table and "Before: `old/report.json`, revision abc1234." in table
        assert "| answer contains a gold span | 0.500 → 1.000 |" in table
        assert "| ragas Faithfulness (LLM judge) | — → not run |" in table
        assert "latency" not in table.split("## Before → after")[1].split("##")[0]
        assert "## Before → after" not in markdown_table(summary, {"defaults": {}, "datasets": {}})

    def test_format_value(self):
        assert format_value("latency_p50_ms", {"value": 12.345, "status": "ok"}) == "12.3"
        assert format_value("errors", {"value": 2.0, "status": "ok"}) == "2"
        assert format_value("auroc", {"value": None, "status": "not_run"}) == "not run"
        assert format_value("auroc", None) == "—"


class TestStageTimer:
    def test_records_milliseconds_per_component_and_restores_tracer(self):
        from haystack import tracing

        @component
        class AddOne:
            @component.output_types(value=int)
            def run(self, value: int):
                return {"value": value + 1}

        pipeline = Pipeline()
        pipeline.add_component("first", AddOne())
        pipeline.add_component("second", AddOne())
        pipeline.connect("first.value", "second.value")
        previous = tracing.tracer.actual_tracer
        with StageTimer.installed() as timer:
            assert pipeline.run({"first": {"value": 1}})["second"]["value"] == 3
            assert set(timer.stages) == {"first", "second"} and all(value >= 0 for value in timer.stages.values())
            timer.reset()
            assert timer.stages == {}
        assert tracing.tracer.actual_tracer is previous


class TestCommandLine:
    def test_parse_overrides(self):
        assert parse_overrides(["answerer.min_query_coverage=0.3", "answerer.max_sentences=1"]) == {
            "answerer": {"min_query_coverage": 0.3, "max_sentences": 1}
        }
        with pytest.raises(SystemExit):
            parse_overrides(["answerer=1"])

    def test_ci_sized_datasets(self):
        normans, gold = resolve_datasets(["normans", "sample-gold"], max_unanswerable=30)
        assert (len(normans.answerable), len(normans.unanswerable)) == (96, 30)
        # forbidden questions are always kept; 30 > the 11 others, so the gold set stays whole
        assert len(gold.questions) == 60
