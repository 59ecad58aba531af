"""
The evaluation report: ``report.json``, ``report.md`` (the table ``make eval`` prints),
per-question ``questions-<dataset>.jsonl`` and PNG charts, written to
``evaluation/reports/latest/`` by default.

Charts (matplotlib, Agg backend, no display needed):

* ``metrics_by_dataset.png`` - every 0-1 metric as bars, one bar per dataset, with the
  threshold drawn as a tick;
* ``confidence_distribution.png`` - ``confidence.overall`` of answerable vs unanswerable
  questions per dataset, with the routing threshold (CITE at or above) as a line;
* ``stage_latency.png`` - median wall time per query-pipeline component.

Usage:

```python
from evaluation.report import write_report, markdown_table

paths = write_report(summary, records_by_dataset)
print(markdown_table(summary))
```
"""

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from components.core.text_analysis import snippet
from evaluation.checker import check, load_thresholds, thresholds_for
from evaluation.records import QuestionRecord

REPORTS_DIR = Path(__file__).resolve().parent / "reports"
LATEST_DIR = REPORTS_DIR / "latest"

# Display order and labels; metrics not listed are appended in name order.
METRIC_LABELS: dict[str, str] = {
    "recall_at_5": "recall@5 (gold document in top 5)",
    "recall_at_5_without_glossary": "recall@5 without glossary expansion",
    "glossary_recall_gain": "recall@5 gained by glossary expansion",
    "citation_validity": "citation validity (cited ⊆ context)",
    "grounded_rate": "grounded rate (answerable)",
    "gold_span_rate": "answer contains a gold span",
    "cite_rate": "CITE rate (answerable)",
    "abstention_rate": "abstention rate (unanswerable)",
    "auroc": "AUROC of confidence (answerable vs not)",
    "determinism": "determinism (identical top-3 on re-run)",
    "forbidden_leakage": "forbidden-document leakage (questions)",
    "errors": "errors (questions)",
    "latency_p50_ms": "RAG latency p50 (ms)",
    "latency_p95_ms": "RAG latency p95 (ms)",
    "search_latency_p50_ms": "search latency p50 (ms)",
    "search_latency_p95_ms": "search latency p95 (ms)",
    "ragas_id_context_recall": "ragas IDBasedContextRecall",
    "ragas_id_context_precision": "ragas IDBasedContextPrecision",
    "ragas_context_recall": "ragas NonLLMContextRecall",
    "ragas_context_precision": "ragas NonLLMContextPrecisionWithReference",
    "ragas_string_similarity": "ragas NonLLMStringSimilarity",
    "ragas_faithfulness": "ragas Faithfulness (LLM judge)",
    "ragas_response_relevancy": "ragas ResponseRelevancy (LLM judge)",
}
COUNT_METRICS = {"forbidden_leakage", "errors"}


def ordered_metric_names(summary: Mapping[str, Any]) -> list[str]:
    present: set[str] = set()
    for result in summary.get("datasets", {}).values():
        present.update(result.get("metrics", {}))
    known = [name for name in METRIC_LABELS if name in present]
    return known + sorted(present - set(known))


def format_value(metric: str, result: Mapping[str, Any] | None) -> str:
    """A metric value for the table: rates to 3 decimals, milliseconds to 1, counts as integers."""
    if result is None:
        return "—"
    if result.get("status") != "ok" or result.get("value") is None:
        return "not run"
    value = float(result["value"])
    if metric in COUNT_METRICS:
        return str(int(value))
    if metric.endswith("_ms"):
        return f"{value:.1f}"
    return f"{value:.3f}"


def _bound_text(bound: Mapping[str, Any] | None) -> str:
    if not bound:
        return ""
    parts = []
    if "min" in bound:
        parts.append(f"≥ {bound['min']}")
    if "max" in bound:
        parts.append(f"≤ {bound['max']}")
    return " and ".join(parts)


def markdown_table(summary: Mapping[str, Any], thresholds: Mapping[str, Any] | None = None) -> str:
    """
    The report as Markdown: a dataset table, the metric table (✓/✗ against thresholds),
    the metrics that did not run and why, and the violations.
    """
    thresholds = load_thresholds() if thresholds is None else thresholds
    datasets = summary.get("datasets", {})
    names = sorted(datasets)
    violations = check(summary, thresholds)
    failed = {(violation.dataset, violation.metric) for violation in violations}
    lines = [f"# sourcebound evaluation ({summary.get('mode', 'full')})", ""]
    if summary.get("generated_at"):
        lines += [
            f"Generated {summary['generated_at']}; "
            f"query pipeline `{summary.get('query_pipeline', 'pipelines/query.yml')}`.",
            "",
        ]
    if summary.get("query_overrides"):
        lines += [
            f"**Experiment, not the served configuration**: query-pipeline overrides {summary['query_overrides']}.",
            "",
        ]

    lines += [
        "| dataset | documents | chunks | questions | answerable | unanswerable | corpus granularity | index s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in names:
        info = datasets[name]
        lines.append(
            f"| {name} | {info.get('documents', '')} | {info.get('chunks', '')} | {info.get('questions', '')} "
            f"| {info.get('answerable', '')} "
            f"| {info.get('unanswerable', '')} | {info.get('granularity', '')} | {info.get('index_seconds', 0):.1f} |"
        )
    lines.append("")

    header = "| metric | " + " | ".join(names) + " |"
    lines += [header, "|---|" + "---|" * len(names)]
    for metric in ordered_metric_names(summary):
        cells = []
        for name in names:
            result = datasets[name].get("metrics", {}).get(metric)
            cell = format_value(metric, result)
            bound = thresholds_for(thresholds, name).get(metric)
            if bound and (name, metric) in failed:
                cell += f" ✗ ({_bound_text(bound)})"
            elif bound and cell != "not run":
                cell += f" ✓ ({_bound_text(bound)})"
            cells.append(cell)
        lines.append(f"| {METRIC_LABELS.get(metric, metric)} | " + " | ".join(cells) + " |")
    lines.append("")

    lines += language_table(summary)
    lines += calibration_table(summary)
    lines += baseline_table(summary)
    lines += real_model_lane_table(summary)

    not_run = []
    for name in names:
        for metric, result in datasets[name].get("metrics", {}).items():
            if result.get("status") != "ok":
                not_run.append(f"- {name} / {METRIC_LABELS.get(metric, metric)}: not run: {result.get('reason')}")
    if not_run:
        lines += ["## Not run (never counted)", "", *not_run, ""]
    judge = summary.get("judge")
    if judge:
        lines += [f"LLM judge: {'available' if judge.get('available') else 'not available'}: {judge.get('reason')}", ""]
    if violations:
        lines += ["## Threshold violations", "", *[f"- {violation}" for violation in violations], ""]
    else:
        lines += ["All thresholds in `evaluation/thresholds.yml` hold.", ""]
    return "\n".join(lines)


# The per-language table's columns (docs/contract.md, "Languages").
LANGUAGE_COLUMNS = (
    ("recall_at_5", "recall@5"),
    ("gold_span_rate", "gold span"),
    ("cite_rate", "CITE (answerable)"),
    ("abstention_rate", "declines (unanswerable)"),
)


def language_table(summary: Mapping[str, Any]) -> list[str]:
    """
    One row per dataset whose questions are in a named language (a dataset file's ``language:``): recall@5,
    answers holding a gold span, CITE on answerable questions and declines on unanswerable ones. Empty when no
    dataset names a language.
    """
    datasets = summary.get("datasets", {})
    rows = sorted((info["language"], name) for name, info in datasets.items() if info.get("language"))
    if not rows:
        return []
    lines = [
        "## Languages",
        "",
        "| language | dataset | answerable / unanswerable | "
        + " | ".join(label for _, label in LANGUAGE_COLUMNS)
        + " |",
        "|---|---|---|" + "---|" * len(LANGUAGE_COLUMNS),
    ]
    for language, name in rows:
        info = datasets[name]
        cells = [format_value(metric, info.get("metrics", {}).get(metric)) for metric, _ in LANGUAGE_COLUMNS]
        lines.append(
            f"| {language} | {name} | {info.get('answerable', '')} / {info.get('unanswerable', '')} | "
            + " | ".join(cells)
            + " |"
        )
    return [*lines, ""]


def calibration_table(summary: Mapping[str, Any]) -> list[str]:
    """
    Markdown lines: per dataset, ``confidence.overall`` in bins of 20 against the share of the bin's questions
    answered correctly (CITE with a gold span) and the share the documents answer (evaluation.metrics.calibration).
    """
    datasets = summary.get("datasets", {})
    names = [name for name in sorted(datasets) if datasets[name].get("calibration")]
    if not names:
        return []
    bins = [row["bin"] for row in datasets[names[0]]["calibration"]]
    lines = [
        "## Calibration",
        "",
        "`confidence.overall` in bins: each cell is *answered correctly* (CITE with a gold span) / *answerable*, "
        "as shares of the bin's questions, and the number of questions in the bin. Both shares should rise from "
        "left to right; the routing threshold is 60.",
        "",
        "| dataset | " + " | ".join(bins) + " |",
        "|---|" + "---|" * len(bins),
    ]
    for name in names:
        cells = []
        for row in datasets[name]["calibration"]:
            if not row["questions"]:
                cells.append("—")
            else:
                cells.append(f"{row['answered_correctly']:.2f} / {row['answerable']:.2f} (n={row['questions']})")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines + [""]


def real_model_lane_table(summary: Mapping[str, Any]) -> list[str]:
    """Markdown lines for the real-model lane (evaluation.real_model_lane), when the run had one."""
    lane = summary.get("real_model_lane")
    if not lane:
        return []
    lines = ["## Real-model lane", ""]
    if lane.get("status") != "ok":
        return lines + [f"Not run: {lane.get('reason')}", ""]
    lines += [
        f"`{lane['pipeline']}` answering with {lane['model']} through an Ollama-API test server "
        f"({lane['dataset']}, {lane['questions']} questions, {lane['seconds']} s). The model is far too small to "
        "answer well; the lane shows the pipeline's checks (sentence verification, citations, routing) on real "
        "model output.",
        "",
        "| figure | value |",
        "|---|---|",
    ]
    for label, value in lane["figures"].items():
        lines.append(f"| {label} | {value} |")
    return lines + [""]


def baseline_summary(report: Mapping[str, Any], source: str) -> dict[str, Any]:
    """
    The part of an earlier ``report.json`` a before -> after comparison needs: where it came from and
    each dataset's metric values (metrics that did not run are left out).
    """
    datasets = {}
    for name, info in (report.get("datasets") or {}).items():
        datasets[name] = {
            metric: result["value"]
            for metric, result in (info.get("metrics") or {}).items()
            if result.get("status") == "ok" and result.get("value") is not None
        }
    return {
        "source": source,
        "git_revision": report.get("git_revision"),
        "generated_at": report.get("generated_at"),
        "mode": report.get("mode"),
        "datasets": datasets,
    }


def baseline_table(summary: Mapping[str, Any]) -> list[str]:
    """Markdown lines comparing this run with ``summary["baseline"]`` (before -> after), or none without one."""
    baseline = summary.get("baseline")
    if not baseline:
        return []
    datasets = summary.get("datasets", {})
    names = [name for name in sorted(datasets) if name in baseline.get("datasets", {})]
    if not names:
        return []
    origin = f"`{baseline.get('source')}`" + (
        f", revision {baseline['git_revision']}" if baseline.get("git_revision") else ""
    )
    origin += f", {baseline.get('mode')} run of {baseline.get('generated_at')}" if baseline.get("generated_at") else ""
    lines = [
        "## Before → after",
        "",
        f"Before: {origin}.",
        "",
        "| metric | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for metric in ordered_metric_names(summary):
        if metric.endswith("_ms"):
            continue  # latency depends on the machine's load at the time; the benchmarks compare it
        cells = []
        for name in names:
            before = baseline["datasets"][name].get(metric)
            after = datasets[name].get("metrics", {}).get(metric)
            before_text = format_value(metric, {"value": before, "status": "ok"}) if before is not None else "—"
            cells.append(f"{before_text} → {format_value(metric, after)}")
        lines.append(f"| {METRIC_LABELS.get(metric, metric)} | " + " | ".join(cells) + " |")
    return lines + [""]


# ----------------------------------------------------------------------------- charts


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_metrics(summary: Mapping[str, Any], path: Path, thresholds: Mapping[str, Any] | None = None) -> Path:
    """Bars of every 0-1 metric per dataset; a not-run metric gets no bar and an "n/a" label."""
    thresholds = load_thresholds() if thresholds is None else thresholds
    plt = _pyplot()
    datasets = summary.get("datasets", {})
    names = sorted(datasets)
    metrics = [name for name in ordered_metric_names(summary) if name not in COUNT_METRICS and not name.endswith("_ms")]
    width = 0.8 / max(1, len(names))
    figure, axes = plt.subplots(figsize=(max(8, 0.9 * len(metrics) + 2), 5))
    for offset, name in enumerate(names):
        bound_for = thresholds_for(thresholds, name)
        for index, metric in enumerate(metrics):
            x = index + (offset - (len(names) - 1) / 2) * width
            result = datasets[name].get("metrics", {}).get(metric) or {}
            if result.get("status") == "ok" and result.get("value") is not None:
                axes.bar(x, result["value"], width, color=f"C{offset}", label=name if index == 0 else None)
            else:
                axes.text(x, 0.02, "n/a", ha="center", va="bottom", rotation=90, fontsize=7)
            bound = bound_for.get(metric, {})
            if "min" in bound:
                axes.hlines(bound["min"], x - width / 2, x + width / 2, colors="black", linewidth=1.5)
    axes.set_xticks(range(len(metrics)))
    axes.set_xticklabels([METRIC_LABELS.get(metric, metric) for metric in metrics], rotation=35, ha="right", fontsize=8)
    axes.set_ylim(0, 1.05)
    axes.set_ylabel("score")
    axes.set_title("Evaluation metrics per dataset (black tick: minimum threshold)")
    axes.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def plot_confidence(
    records_by_dataset: Mapping[str, Sequence[QuestionRecord]], path: Path, routing_threshold: float
) -> Path:
    """Histograms of ``confidence.overall`` for answerable vs unanswerable, per dataset, with the routing threshold."""
    plt = _pyplot()
    names = sorted(records_by_dataset)
    figure, axes_list = plt.subplots(1, max(1, len(names)), figsize=(6 * max(1, len(names)), 4), squeeze=False)
    bins = list(range(0, 105, 5))
    for axes, name in zip(axes_list[0], names, strict=False):
        records = [record for record in records_by_dataset[name] if record.overall_confidence is not None]
        answerable = [record.overall_confidence for record in records if record.answerable]
        unanswerable = [record.overall_confidence for record in records if not record.answerable]
        axes.hist(answerable, bins=bins, alpha=0.6, label=f"answerable (n={len(answerable)})", color="C2")
        axes.hist(unanswerable, bins=bins, alpha=0.6, label=f"unanswerable (n={len(unanswerable)})", color="C3")
        axes.axvline(
            routing_threshold,
            color="black",
            linestyle="--",
            label=f"routing threshold ({routing_threshold:g}): CITE at or above",
        )
        axes.set_title(name)
        axes.set_xlabel("confidence.overall")
        axes.set_ylabel("questions")
        axes.legend(fontsize=7)
    figure.suptitle("Confidence: answerable vs unanswerable")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def plot_stage_latency(summary: Mapping[str, Any], path: Path) -> Path:
    """Median milliseconds per query-pipeline component, per dataset."""
    plt = _pyplot()
    datasets = summary.get("datasets", {})
    names = sorted(datasets)
    stages = sorted({stage for name in names for stage in datasets[name].get("stage_latency_p50_ms", {})})
    figure, axes = plt.subplots(figsize=(8, max(3, 0.35 * len(stages) * max(1, len(names)) + 1)))
    height = 0.8 / max(1, len(names))
    for offset, name in enumerate(names):
        values = [datasets[name].get("stage_latency_p50_ms", {}).get(stage, 0.0) for stage in stages]
        axes.barh(
            [index + offset * height for index in range(len(stages))], values, height, label=name, color=f"C{offset}"
        )
    axes.set_yticks([index + height * (len(names) - 1) / 2 for index in range(len(stages))])
    axes.set_yticklabels(stages, fontsize=8)
    axes.set_xlabel("median ms per question")
    axes.set_title("Query pipeline: time per component")
    if names:
        axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def _compact(record: QuestionRecord) -> dict[str, Any]:
    """
    A record for the report folder: chunk texts cut to citation snippets, gold chunk texts left out
    (the report stays small enough to commit).
    """
    data = record.to_dict()
    for key in ("context", "retrieved"):
        for chunk in data[key]:
            chunk["content"] = snippet(chunk["content"])
    data.pop("reference_contexts", None)
    return data


def write_report(
    summary: Mapping[str, Any],
    records_by_dataset: Mapping[str, Sequence[QuestionRecord]],
    out_dir: str | Path = LATEST_DIR,
    thresholds: Mapping[str, Any] | None = None,
) -> dict[str, Path]:
    """
    Write report.json, report.md, questions-<dataset>.jsonl (chunk texts as 200-character
    snippets) and the charts.

    :returns: Paths by kind (``json``, ``markdown``, ``metrics_png``, ``confidence_png``, ``latency_png``,
        ``questions:<name>``).
    """
    thresholds = load_thresholds() if thresholds is None else thresholds
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    paths["json"] = out / "report.json"
    paths["json"].write_text(json.dumps(summary, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    paths["markdown"] = out / "report.md"
    paths["markdown"].write_text(markdown_table(summary, thresholds), encoding="utf-8")
    for name, records in records_by_dataset.items():
        path = out / f"questions-{name}.jsonl"
        path.write_text(
            "".join(json.dumps(_compact(record), sort_keys=True, default=str) + "\n" for record in records),
            encoding="utf-8",
        )
        paths[f"questions:{name}"] = path
    paths["metrics_png"] = plot_metrics(summary, out / "metrics_by_dataset.png", thresholds)
    routing_threshold = float(summary.get("routing_threshold", 60))
    paths["confidence_png"] = plot_confidence(
        records_by_dataset, out / "confidence_distribution.png", routing_threshold
    )
    paths["latency_png"] = plot_stage_latency(summary, out / "stage_latency.png")
    return paths
