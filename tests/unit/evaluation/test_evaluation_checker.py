"""
The threshold checker: a deliberately bad result must fail, a good one pass, the file must hold the required
floors.
"""

import json

import pytest

from evaluation.checker import THRESHOLDS_PATH, ThresholdsError, Violation, check, load_thresholds, main, thresholds_for

pytestmark = pytest.mark.unit

REQUIRED = {
    "recall_at_5": ("min", 0.80),
    "citation_validity": ("min", 1.0),
    "determinism": ("min", 1.0),
    "forbidden_leakage": ("max", 0),
}


def ok(value: float) -> dict:
    return {"value": value, "status": "ok", "reason": "", "n": 10}


def good_metrics() -> dict:
    return {
        "recall_at_5": ok(0.95),
        "citation_validity": ok(1.0),
        "determinism": ok(1.0),
        "forbidden_leakage": ok(0),
        "errors": ok(0),
        "ragas_faithfulness": {
            "value": None,
            "status": "not_run",
            "reason": "no judge LLM: OLLAMA_BASE_URL is not set",
        },
    }


@pytest.fixture
def thresholds():
    return {
        "defaults": {
            "recall_at_5": {"min": 0.8},
            "citation_validity": {"min": 1.0},
            "determinism": {"min": 1.0},
            "forbidden_leakage": {"max": 0},
            "errors": {"max": 0},
            "ragas_faithfulness": {"min": 0.5, "when_run": True},
        },
        "datasets": {"normans": {"recall_at_5": {"min": 0.9}}},
    }


class TestChecker:
    def test_good_result_passes(self, thresholds):
        assert check({"datasets": {"normans": {"metrics": good_metrics()}}}, thresholds) == []

    def test_deliberately_bad_result_fails(self, thresholds):
        bad = good_metrics()
        bad["recall_at_5"] = ok(0.42)
        bad["citation_validity"] = ok(0.97)
        bad["forbidden_leakage"] = ok(2)
        violations = check({"datasets": {"sample-gold": {"metrics": bad}}}, thresholds)
        assert {violation.metric for violation in violations} == {
            "recall_at_5",
            "citation_validity",
            "forbidden_leakage",
        }
        assert "0.42 < min 0.8" in str(next(v for v in violations if v.metric == "recall_at_5"))
        assert "2 > max 0" in str(next(v for v in violations if v.metric == "forbidden_leakage"))

    def test_dataset_entry_tightens_default(self, thresholds):
        metrics = good_metrics()
        metrics["recall_at_5"] = ok(0.85)
        assert check({"datasets": {"other": {"metrics": metrics}}}, thresholds) == []
        assert [v.metric for v in check({"datasets": {"normans": {"metrics": metrics}}}, thresholds)] == ["recall_at_5"]
        assert thresholds_for(thresholds, "normans")["recall_at_5"] == {"min": 0.9}

    def test_thresholded_metric_that_did_not_run_fails(self, thresholds):
        metrics = good_metrics()
        metrics["determinism"] = {"value": None, "status": "not_run", "reason": "no repeat run"}
        del metrics["errors"]
        violations = check({"datasets": {"normans": {"metrics": metrics}}}, thresholds)
        assert {
            (v.metric, "did not run (no repeat run)" in v.message or "missing" in v.message) for v in violations
        } == {("determinism", True), ("errors", True)}

    def test_when_run_metric_is_checked_only_when_it_ran(self, thresholds):
        metrics = good_metrics()
        assert check({"datasets": {"normans": {"metrics": metrics}}}, thresholds) == []
        metrics["ragas_faithfulness"] = ok(0.2)
        assert [v.metric for v in check({"datasets": {"normans": {"metrics": metrics}}}, thresholds)] == [
            "ragas_faithfulness"
        ]

    def test_empty_summary_fails(self, thresholds):
        assert check({"datasets": {}}, thresholds) == [Violation("*", "*", "the summary holds no dataset results")]

    def test_required_datasets(self, thresholds):
        violations = check({"datasets": {"other": {"metrics": good_metrics()}}}, thresholds, require_datasets=True)
        assert violations == [Violation("normans", "*", "dataset was not evaluated")]

    def test_cli_exit_codes(self, tmp_path, capsys):
        bad = good_metrics()
        bad["recall_at_5"] = ok(0.1)
        report = tmp_path / "report.json"
        report.write_text(json.dumps({"datasets": {"normans": {"metrics": bad}}}))
        assert main([str(report)]) == 1
        assert "THRESHOLD VIOLATED  normans: recall_at_5" in capsys.readouterr().out
        report.write_text(json.dumps({"datasets": {"normans": {"metrics": good_metrics()}}}))
        assert main([str(report), "--thresholds", str(THRESHOLDS_PATH)]) in (0, 1)  # project floors may add metrics
        assert main([str(tmp_path / "missing.json")]) == 2


class TestThresholdsFile:
    def test_project_file_holds_the_required_floors(self):
        thresholds = load_thresholds()
        for dataset in ("normans", "sample-gold", "manpages-dev"):
            assert dataset in thresholds["datasets"]
            merged = thresholds_for(thresholds, dataset)
            for metric, (kind, floor) in REQUIRED.items():
                bound = merged[metric][kind]
                assert (bound >= floor) if kind == "min" else (bound <= floor), (dataset, metric, bound)

    def test_project_file_says_thresholds_only_go_up(self):
        assert "THRESHOLDS ONLY EVER GO UP" in THRESHOLDS_PATH.read_text(encoding="utf-8")

    def test_malformed_entry_is_rejected(self, tmp_path):
        path = tmp_path / "thresholds.yml"
        path.write_text("defaults:\n  recall_at_5: {at_least: 0.8}\n")
        with pytest.raises(ThresholdsError, match="recall_at_5 needs `min` and/or `max`"):
            load_thresholds(path)
        path.write_text("defaults:\n  recall_at_5: {min: high}\n")
        with pytest.raises(ThresholdsError, match="must be a number"):
            load_thresholds(path)
