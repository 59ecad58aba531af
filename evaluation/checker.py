"""
Checks an evaluation summary against ``evaluation/thresholds.yml``.

:func:`check` returns the list of violations (empty = pass). Run as a program it reads a
report JSON and exits non-zero when anything is violated, which is how CI fails:

```bash
.venv/bin/python -m evaluation.checker evaluation/reports/latest/report.json
```

A summary is ``{"datasets": {name: {"metrics": {metric: {"value", "status", "reason", ...}}}}}``
(what :mod:`evaluation.report` writes).
"""

import argparse
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

THRESHOLDS_PATH = Path(__file__).resolve().parent / "thresholds.yml"
_BOUNDS = ("min", "max")


class ThresholdsError(ValueError):
    """The thresholds file is malformed; the message names the entry."""


@dataclass(frozen=True)
class Violation:
    """One metric of one dataset outside its threshold (or missing)."""

    dataset: str
    metric: str
    message: str

    def __str__(self) -> str:
        return f"{self.dataset}: {self.metric}: {self.message}"


def load_thresholds(path: str | Path = THRESHOLDS_PATH) -> dict[str, Any]:
    """
    Read and validate a thresholds file.

    :raises ThresholdsError: If a metric entry has no ``min``/``max`` or a non-numeric bound.
    """
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as error:
        raise ThresholdsError(f"Cannot read thresholds {path}: {error}") from error
    sections = [("defaults", data.get("defaults") or {})]
    sections += [(f"datasets.{name}", spec or {}) for name, spec in (data.get("datasets") or {}).items()]
    for where, metrics in sections:
        if not isinstance(metrics, Mapping):
            raise ThresholdsError(f"{path}: {where} must map metric names to bounds.")
        for metric, bound in metrics.items():
            if not isinstance(bound, Mapping) or not any(key in bound for key in _BOUNDS):
                raise ThresholdsError(f"{path}: {where}.{metric} needs `min` and/or `max`.")
            for key in _BOUNDS:
                if key in bound and not isinstance(bound[key], int | float):
                    raise ThresholdsError(f"{path}: {where}.{metric}.{key} must be a number.")
    return {
        "defaults": dict(data.get("defaults") or {}),
        "datasets": {name: dict(spec or {}) for name, spec in (data.get("datasets") or {}).items()},
    }


def thresholds_for(thresholds: Mapping[str, Any], dataset: str) -> dict[str, dict[str, Any]]:
    """The defaults, overlaid by the dataset's own entries (a dataset entry replaces the default for that metric)."""
    merged = {metric: dict(bound) for metric, bound in thresholds.get("defaults", {}).items()}
    merged.update({metric: dict(bound) for metric, bound in thresholds.get("datasets", {}).get(dataset, {}).items()})
    return merged


def check(
    summary: Mapping[str, Any], thresholds: Mapping[str, Any] | None = None, require_datasets: bool = False
) -> list[Violation]:
    """
    Compare every dataset's metrics with its thresholds.

    :param summary: ``{"datasets": {name: {"metrics": {...}}}}``.
    :param thresholds: As from :func:`load_thresholds`; the project's file when ``None``.
    :param require_datasets: Also report datasets named in the thresholds but absent from the summary.
    :returns: The violations, in a stable order.
    """
    thresholds = load_thresholds() if thresholds is None else thresholds
    datasets = summary.get("datasets") or {}
    violations: list[Violation] = []
    if not datasets:
        violations.append(Violation("*", "*", "the summary holds no dataset results"))
    if require_datasets:
        for name in thresholds.get("datasets", {}):
            if name not in datasets:
                violations.append(Violation(name, "*", "dataset was not evaluated"))
    for name in sorted(datasets):
        metrics = datasets[name].get("metrics") or {}
        for metric, bound in sorted(thresholds_for(thresholds, name).items()):
            result = metrics.get(metric)
            value = None if result is None else result.get("value")
            if result is None or result.get("status", "ok") != "ok" or value is None:
                if bound.get("when_run"):
                    continue
                reason = (
                    "missing from the results"
                    if result is None
                    else f"did not run ({result.get('reason') or 'no reason given'})"
                )
                violations.append(Violation(name, metric, reason))
                continue
            if "min" in bound and value < bound["min"]:
                violations.append(Violation(name, metric, f"{value:.4g} < min {bound['min']}"))
            if "max" in bound and value > bound["max"]:
                violations.append(Violation(name, metric, f"{value:.4g} > max {bound['max']}"))
    return violations


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m evaluation.checker", description="Check an evaluation report against the thresholds."
    )
    parser.add_argument(
        "report", nargs="?", default=str(Path(__file__).resolve().parent / "reports" / "latest" / "report.json")
    )
    parser.add_argument("--thresholds", default=str(THRESHOLDS_PATH))
    args = parser.parse_args(argv)
    try:
        summary = json.loads(Path(args.report).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        print(f"cannot read report {args.report}: {error}", file=sys.stderr)
        return 2
    violations = check(summary, load_thresholds(args.thresholds))
    for violation in violations:
        print(f"THRESHOLD VIOLATED  {violation}")
    print(f"{len(violations)} threshold violation(s)" if violations else "all thresholds hold")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
