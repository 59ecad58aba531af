"""
The reader's abstention model: a small logistic regression over the evidence features the reader computes
(docs/reader.md, "Decline rule"). Its coefficients live in a versioned JSON file, fitted by
``python -m evaluation.fit_abstention`` with cross-validation; the file names its features, their
standardisation, the coefficients and the decision threshold, so a change of model is a change of file.

Usage:
```python
model = AbstentionModel.load("components/generators/sentence_reader_abstention.json")
p = model.probability({"similarity": 0.71, "lexical": 0.8, ...})   # P(the context answers the question)
answered = p >= model.threshold
```
"""

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.core.errors import SourceboundError

MODEL_FORMAT = "sourcebound-abstention/1"


class AbstentionModelError(SourceboundError, ValueError):
    """The abstention model file is missing, unreadable or inconsistent; the message says what to fix."""


@dataclass(frozen=True)
class AbstentionModel:
    """
    ``probability(x) = 1 / (1 + exp(-(intercept + Σ coefficient_i × (x_i - mean_i) / scale_i)))``.

    :param features: Feature names, in the order of the other lists.
    :param mean: Each feature's mean on the fitting data (standardisation).
    :param scale: Each feature's standard deviation there (> 0).
    :param coefficients: One weight per standardised feature.
    :param intercept: The bias term.
    :param threshold: Answer when the probability is at least this (0-1).
    :param version: The model's version string, reported in the reader's evidence.
    :param info: Everything else the file says (how it was fitted, its cross-validated figures).
    """

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coefficients: tuple[float, ...]
    intercept: float
    threshold: float
    version: str
    info: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        size = len(self.features)
        if not size or any(len(values) != size for values in (self.mean, self.scale, self.coefficients)):
            raise AbstentionModelError(
                "features, mean, scale and coefficients must be non-empty lists of the same length."
            )
        if any(not isinstance(value, int | float) or not math.isfinite(value) for value in self._numbers()):
            raise AbstentionModelError("mean, scale, coefficients, intercept and threshold must be finite numbers.")
        if any(value <= 0 for value in self.scale):
            raise AbstentionModelError("every scale must be positive.")
        if not 0.0 < self.threshold < 1.0:
            raise AbstentionModelError(f"threshold must be within (0, 1), got {self.threshold!r}.")

    def _numbers(self) -> list[Any]:
        return [*self.mean, *self.scale, *self.coefficients, self.intercept, self.threshold]

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], where: str = "abstention model") -> "AbstentionModel":
        """Build the model from the file's parsed JSON; raises :class:`AbstentionModelError` naming the problem."""
        if data.get("format") != MODEL_FORMAT:
            raise AbstentionModelError(f"{where}: `format` must be {MODEL_FORMAT!r}, got {data.get('format')!r}.")
        try:
            return cls(
                features=tuple(str(name) for name in data["features"]),
                mean=tuple(float(value) for value in data["mean"]),
                scale=tuple(float(value) for value in data["scale"]),
                coefficients=tuple(float(value) for value in data["coefficients"]),
                intercept=float(data["intercept"]),
                threshold=float(data["threshold"]),
                version=str(data["version"]),
                info={key: value for key, value in data.items() if key not in _MODEL_KEYS},
            )
        except KeyError as error:
            raise AbstentionModelError(f"{where}: missing key {error.args[0]!r}.") from error
        except (TypeError, ValueError) as error:  # AbstentionModelError from the checks is a ValueError too
            raise AbstentionModelError(f"{where}: {error}") from error

    @classmethod
    def load(cls, path: str | Path) -> "AbstentionModel":
        """Read a model file; raises :class:`AbstentionModelError` when it is missing or invalid."""
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as error:
            raise AbstentionModelError(
                f"Cannot read the abstention model {path}: {error.strerror or error}. Point the reader's "
                "`abstention_model` at a file written by `python -m evaluation.fit_abstention`."
            ) from error
        except json.JSONDecodeError as error:
            raise AbstentionModelError(f"The abstention model {path} is not valid JSON: {error}.") from error
        if not isinstance(data, dict):
            raise AbstentionModelError(f"The abstention model {path} must hold a JSON object.")
        return cls.from_mapping(data, where=str(path))

    def to_mapping(self) -> dict[str, Any]:
        """The file's JSON object (what :meth:`from_mapping` reads)."""
        return {
            "format": MODEL_FORMAT,
            "version": self.version,
            "features": list(self.features),
            "mean": list(self.mean),
            "scale": list(self.scale),
            "coefficients": list(self.coefficients),
            "intercept": self.intercept,
            "threshold": self.threshold,
            **self.info,
        }

    def logit(self, features: Mapping[str, float]) -> float:
        """The linear score; raises :class:`AbstentionModelError` when a feature the model names is missing."""
        missing = [name for name in self.features if name not in features]
        if missing:
            raise AbstentionModelError(f"The abstention model needs features the reader did not give: {missing}.")
        return self.intercept + sum(
            weight * (float(features[name]) - mean) / scale
            for name, mean, scale, weight in zip(self.features, self.mean, self.scale, self.coefficients, strict=True)
        )

    def probability(self, features: Mapping[str, float]) -> float:
        """P(the context answers the question), 0-1."""
        z = self.logit(features)
        # Numerically safe on both sides.
        if z >= 0:
            return 1.0 / (1.0 + math.exp(-z))
        e = math.exp(z)
        return e / (1.0 + e)


_MODEL_KEYS = frozenset({"format", "version", "features", "mean", "scale", "coefficients", "intercept", "threshold"})
