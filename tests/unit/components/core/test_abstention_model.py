"""AbstentionModel: the reader's logistic decline model and its versioned file (docs/reader.md, "Decline rule")."""

import json
import math

import pytest

from components.core.abstention_model import MODEL_FORMAT, AbstentionModel, AbstentionModelError
from components.generators.sentence_reader import DEFAULT_ABSTENTION_MODEL, model_path


def _data(**changes) -> dict:
    data = {
        "format": MODEL_FORMAT,
        "version": "test-1",
        "features": ["similarity", "missing_exact"],
        "mean": [0.5, 0.1],
        "scale": [0.2, 0.25],
        "coefficients": [1.0, -2.0],
        "intercept": 0.25,
        "threshold": 0.4,
        "fitted": {"by": "a test"},
    }
    return {**data, **changes}


@pytest.mark.unit
class TestAbstentionModel:
    def test_probability_is_the_logistic_of_the_standardised_features(self):
        model = AbstentionModel.from_mapping(_data())
        z = 0.25 + 1.0 * (0.7 - 0.5) / 0.2 - 2.0 * (0.0 - 0.1) / 0.25
        assert model.logit({"similarity": 0.7, "missing_exact": 0.0}) == pytest.approx(z)
        assert model.probability({"similarity": 0.7, "missing_exact": 0.0}) == pytest.approx(1 / (1 + math.exp(-z)))
        # Monotone in each feature along its coefficient's sign; extreme inputs do not overflow.
        assert model.probability({"similarity": 0.9, "missing_exact": 0.0}) > model.probability(
            {"similarity": 0.7, "missing_exact": 0.0}
        )
        assert model.probability({"similarity": 0.7, "missing_exact": 1.0}) < 0.5
        assert model.probability({"similarity": -1e6, "missing_exact": 0.0}) == 0.0
        assert model.probability({"similarity": 1e6, "missing_exact": 0.0}) == 1.0

    def test_round_trips_through_its_file(self, tmp_path):
        path = tmp_path / "model.json"
        path.write_text(json.dumps(_data()), encoding="utf-8")
        model = AbstentionModel.load(path)
        assert model.version == "test-1" and model.threshold == 0.4 and model.info == {"fitted": {"by": "a test"}}
        assert AbstentionModel.from_mapping(model.to_mapping()) == model

    @pytest.mark.parametrize(
        "changes, message",
        [
            ({"format": "other/9"}, "format"),
            ({"coefficients": [1.0]}, "same length"),
            ({"scale": [0.2, 0.0]}, "scale must be positive"),
            ({"threshold": 1.0}, "threshold"),
            ({"intercept": float("nan")}, "finite"),
            ({"features": []}, "non-empty"),
        ],
    )
    def test_invalid_models_are_refused_with_the_reason(self, changes, message):
        with pytest.raises(AbstentionModelError, match=message):
            AbstentionModel.from_mapping(_data(**changes))

    def test_missing_key_and_file_name_the_fix(self, tmp_path):
        data = _data()
        del data["intercept"]
        with pytest.raises(AbstentionModelError, match="intercept"):
            AbstentionModel.from_mapping(data)
        with pytest.raises(AbstentionModelError, match="fit_abstention"):
            AbstentionModel.load(tmp_path / "absent.json")
        (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
        with pytest.raises(AbstentionModelError, match="not valid JSON"):
            AbstentionModel.load(tmp_path / "bad.json")

    def test_a_feature_the_reader_did_not_give_is_an_error(self):
        with pytest.raises(AbstentionModelError, match="missing_exact"):
            AbstentionModel.from_mapping(_data()).probability({"similarity": 0.5})

    def test_the_packaged_model_is_valid_and_documents_its_fit(self):
        model = AbstentionModel.load(model_path(DEFAULT_ABSTENTION_MODEL))
        assert 0 < model.threshold < 1 and len(model.features) >= 5
        assert model.info["fitted"]["by"] == "python -m evaluation.fit_abstention"
        # Every coefficient keeps the direction its evidence points (or is 0).
        directions = model.info["fitted"]["directions"]
        assert all(c * directions[f] >= 0 for f, c in zip(model.features, model.coefficients, strict=True))
        assert {"fit", "cv_grouped_5fold", "leave_one_dataset_out"} <= set(model.info["figures"]["normans"])
