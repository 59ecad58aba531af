"""
``python -m evaluation`` (``make eval``): run the evaluation, write the report, print the
table, and exit non-zero when a threshold is missed.

Usage:

```bash
.venv/bin/python -m evaluation                   # every built-in dataset, every question
.venv/bin/python -m evaluation --ci              # CI-sized: all answerable, 30 sampled unanswerable
.venv/bin/python -m evaluation --dataset my.jsonl --corpus corpus.yml --out /tmp/report
```
"""

import argparse
import logging
import sys
import time
from pathlib import Path

CI_MAX_UNANSWERABLE = 30
BUILTIN_DATASETS = ("normans", "sample-gold", "manpages-dev", "sample-aliases", "languages")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m evaluation",
        description="Evaluate retrieval, grounding and access control through the served YAML pipelines.",
    )
    parser.add_argument(
        "--dataset",
        action="append",
        help=(
            "normans, sample-gold, manpages-dev, sample-aliases, languages (ru, de, zh), or a dataset file (.yml, "
            ".jsonl, SQuAD .json); repeatable (default: every built-in)"
        ),
    )
    parser.add_argument("--corpus", help="corpus file for a JSONL questions dataset")
    parser.add_argument(
        "--ci",
        action="store_true",
        help=(
            "CI-sized run: all answerable and forbidden questions, "
            f"{CI_MAX_UNANSWERABLE} sampled unanswerable per dataset"
        ),
    )
    parser.add_argument(
        "--max-unanswerable",
        type=int,
        help="sample this many unanswerable questions per dataset (forbidden ones are always kept)",
    )
    parser.add_argument(
        "--no-repeat",
        action="store_true",
        help="skip the determinism re-run (determinism then reports 'not run' and fails its threshold)",
    )
    parser.add_argument("--out", default=None, help="report folder (default: evaluation/reports/latest)")
    parser.add_argument("--thresholds", default=None, help="thresholds file (default: evaluation/thresholds.yml)")
    parser.add_argument("--no-check", action="store_true", help="exit 0 even when thresholds are missed")
    parser.add_argument(
        "--query-pipeline", default="query", help="RAG pipeline to evaluate: query (served default) or query_ollama"
    )
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="COMPONENT.PARAM=VALUE",
        help=(
            "experiment: change a query-pipeline init parameter (YAML value), "
            "e.g. answerer.min_decision_score=0.7; the report says so"
        ),
    )
    parser.add_argument(
        "--baseline",
        default=None,
        metavar="REPORT_JSON",
        help="an earlier report.json: report.md then shows before -> after for every metric",
    )
    parser.add_argument(
        "--real-model-lane",
        action="store_true",
        help="also run the Ollama pipeline with a real small model (SmolLM2 on cyllama; make provision-llm)",
    )
    parser.add_argument("--verbose", "-v", action="store_true")
    return parser.parse_args(argv)


def parse_overrides(values: list[str]) -> dict[str, dict[str, object]]:
    """``["answerer.max_sentences=1"]`` -> ``{"answerer": {"max_sentences": 1}}`` (values parsed as YAML)."""
    import yaml

    overrides: dict[str, dict[str, object]] = {}
    for value in values:
        target, separator, raw = value.partition("=")
        component, dot, parameter = target.partition(".")
        if not separator or not dot or not component or not parameter:
            raise SystemExit(f"--override needs COMPONENT.PARAM=VALUE, got {value!r}")
        overrides.setdefault(component, {})[parameter] = yaml.safe_load(raw)
    return overrides


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )

    from evaluation.checker import THRESHOLDS_PATH, check, load_thresholds
    from evaluation.report import LATEST_DIR, markdown_table, write_report
    from evaluation.runner import resolve_datasets, run_evaluation

    thresholds = load_thresholds(args.thresholds or THRESHOLDS_PATH)
    baseline = None
    if args.baseline:
        import json

        from evaluation.report import baseline_summary

        try:
            baseline = baseline_summary(json.loads(Path(args.baseline).read_text(encoding="utf-8")), args.baseline)
        except (OSError, ValueError) as error:
            raise SystemExit(
                f"--baseline {args.baseline}: not a readable report.json ({error}); "
                "pass one written by `python -m evaluation`."
            ) from error
    max_unanswerable = (
        args.max_unanswerable if args.max_unanswerable is not None else (CI_MAX_UNANSWERABLE if args.ci else None)
    )
    datasets = resolve_datasets(
        args.dataset or list(BUILTIN_DATASETS), corpus=args.corpus, max_unanswerable=max_unanswerable
    )
    started = time.perf_counter()
    summary, records = run_evaluation(
        datasets,
        repeat=not args.no_repeat,
        mode="ci" if args.ci else "full",
        progress=lambda line: print(line, file=sys.stderr),
        query_overrides=parse_overrides(args.override),
        query_pipeline=args.query_pipeline,
    )
    if args.real_model_lane:
        from evaluation.real_model_lane import run_real_model_lane

        summary["real_model_lane"] = run_real_model_lane(progress=lambda line: print(line, file=sys.stderr))
    summary["wall_seconds"] = round(time.perf_counter() - started, 1)
    if baseline is not None:
        summary["baseline"] = baseline
    paths = write_report(summary, records, Path(args.out) if args.out else LATEST_DIR, thresholds)
    print(markdown_table(summary, thresholds))
    print(f"report: {paths['markdown'].parent} ({summary['wall_seconds']} s)")
    violations = check(summary, thresholds)
    return 1 if violations and not args.no_check else 0


if __name__ == "__main__":
    sys.exit(main())
