"""
The CI-sized evaluation through the real YAML pipelines: this is how CI enforces
``evaluation/thresholds.yml``. It indexes every built-in corpus through ``pipelines/indexing.yml``,
asks through ``pipelines/query.yml`` and ``pipelines/search.yml``, and fails on any violation.
"""

import json

import pytest

from evaluation.__main__ import BUILTIN_DATASETS, CI_MAX_UNANSWERABLE
from evaluation.checker import check, load_thresholds
from evaluation.report import markdown_table, write_report
from evaluation.runner import resolve_datasets, run_evaluation

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def ci_run(tmp_path_factory):
    datasets = resolve_datasets(list(BUILTIN_DATASETS), max_unanswerable=CI_MAX_UNANSWERABLE)
    summary, records = run_evaluation(datasets, repeat=True, mode="ci")
    out = tmp_path_factory.mktemp("evaluation-report")
    write_report(summary, records, out)
    return summary, records, out


@pytest.mark.timeout(900)
class TestCiEvaluation:
    def test_thresholds_hold(self, ci_run):
        summary, _, out = ci_run
        violations = check(summary, load_thresholds(), require_datasets=True)
        assert not violations, "\n".join(map(str, violations)) + "\n\n" + markdown_table(summary) + f"\nreport: {out}"

    def test_every_question_was_answered_through_the_served_pipeline(self, ci_run):
        summary, records, _ = ci_run
        assert summary["query_pipeline"] == "pipelines/query.yml" and summary["query_overrides"] == {}
        for name, dataset_records in records.items():
            assert all(record.error is None for record in dataset_records), name
            assert all(
                record.action in {"CITE", "ROUTE"} and record.confidence.get("overall") is not None
                for record in dataset_records
            )
            assert all(record.stage_ms for record in dataset_records)

    def test_tag_restricted_documents_never_reach_requesters_without_the_tag(self, ci_run):
        _, records, _ = ci_run
        forbidden = [record for record in records["sample-gold"] if record.forbidden_document_ids]
        assert len(forbidden) >= 3
        for record in forbidden:
            seen = {chunk.document_id for chunk in (*record.context, *record.retrieved)} | {
                source_id.rsplit(":", 1)[0] for source_id in record.citations
            }
            assert not seen & set(record.forbidden_document_ids), record.question_id

    def test_llm_metrics_are_reported_not_run_or_measured(self, ci_run):
        summary, _, out = ci_run
        for dataset in summary["datasets"].values():
            for name in ("ragas_faithfulness", "ragas_response_relevancy"):
                metric = dataset["metrics"][name]
                assert (metric["status"] == "ok" and metric["value"] is not None) or (
                    metric["status"] == "not_run" and metric["reason"]
                )
        assert json.loads((out / "report.json").read_text())["mode"] == "ci"
