"""
What text analysis in every language costs: import time and resident memory of the text modules, the one-time
cost of the lazily loaded parts (the language detector on the first non-ASCII text, the Chinese dictionary on the
first Chinese text), and the per-text cost of tokenising, splitting and BM25-preparing English, Russian, German and
Chinese chunks.

Each measurement runs in a fresh ``python`` process (so imports and first loads are really first; Haystack, NumPy
and tiktoken are imported before the clock starts, as every version needs them), with
``PYTHONPATH`` set to ``--root`` (default: this checkout), so ``--root`` of an older checkout gives the "before"
figures of the import step. Prints a Markdown table and writes ``bench/results/languages.json`` / ``languages.md``.

Usage:

```bash
.venv/bin/python -m bench.languages_bench                    # ~1 min on 2 cores
.venv/bin/python -m bench.languages_bench --before ../main   # also the import figures of another checkout
.venv/bin/python -m bench.languages_bench --server           # also the served process's RSS (+1 min)
```

With ``--server`` it also starts the real server (``python -m hayhooks_app serve``, the sample corpus indexed on
its first start), reads its resident memory when healthy, after an English ``/rag/run``, then after indexing the
language corpora (``/index/run``) and one ``/rag/run`` in Russian, German and Chinese each: the serving process's
figures against its 1.0 GB budget.
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
LANGUAGES = REPO / "tests" / "fixtures" / "languages"

# Runs in the child process: prints one JSON object of timings (ms) and resident-memory figures (MiB).
_PROBE = r"""
import json, sys, time
from pathlib import Path

def rss_mib():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 / 2**20

import haystack, numpy, tiktoken  # noqa: E401,F401  (shared by every version: not what is measured)
figures = {"rss_start_mib": rss_mib()}
started = time.perf_counter()
import components.core.text_analysis as text_analysis
import components.generators.sentence_reader  # noqa: F401
import components.scorers.hybrid_confidence_scorer  # noqa: F401
import components.filters.duplicate_chunk_filter  # noqa: F401
figures["import_ms"] = (time.perf_counter() - started) * 1000
figures["rss_after_import_mib"] = rss_mib()
if sys.argv[1] == "import-only":
    print(json.dumps(figures)); raise SystemExit
texts = json.loads(Path(sys.argv[2]).read_text(encoding="utf-8"))

def first_use(name, text):
    before, started = rss_mib(), time.perf_counter()
    text_analysis.content_words(text); text_analysis.split_sentences(text)
    figures[f"first_{name}_ms"] = (time.perf_counter() - started) * 1000
    figures[f"first_{name}_rss_mib"] = rss_mib() - before

first_use("en", texts["en"])
figures["lazy_loaded_after_english"] = sorted(m for m in ("lingua", "jieba", "stopwordsiso") if m in sys.modules)
first_use("ru", texts["ru"])
first_use("de", texts["de"])
first_use("zh", texts["zh"])
figures["rss_end_mib"] = rss_mib()

from components.document_stores.qdrant_edge.bm25 import build_bm25
bm25 = build_bm25()
for language, text in texts.items():
    # Steady state: the per-text cost once everything is loaded (a different text each round defeats caches).
    rounds, started = 200, time.perf_counter()
    for number in range(rounds):
        variant = f"{text} {number}"
        text_analysis.content_words(variant); text_analysis.split_sentences(variant); text_analysis.shingles(variant)
    figures[f"analyse_{language}_us_per_kchar"] = (time.perf_counter() - started) / rounds * 1e6 / len(text) * 1000
    started = time.perf_counter()
    for number in range(rounds):
        bm25.embed_document(f"{text} {number}")
    figures[f"bm25_{language}_us_per_kchar"] = (time.perf_counter() - started) / rounds * 1e6 / len(text) * 1000
print(json.dumps(figures))
"""


def sample_texts() -> dict[str, str]:
    """One chunk-sized text per language: the fixture corpora's documents (English: the sample corpus)."""
    english = (REPO / "examples" / "sample_corpus" / "acme" / "hr-handbook.md").read_text(encoding="utf-8")
    texts = {"en": english[:1500]}
    for language in ("ru", "de", "zh"):
        documents = sorted((LANGUAGES / language).glob("*.md"))
        texts[language] = "\n\n".join(path.read_text(encoding="utf-8") for path in documents)[:1500]
    return texts


def probe(root: Path, mode: str, texts_path: Path) -> dict[str, Any]:
    """Run the probe in a fresh interpreter with ``root`` first on the path."""
    env = {**os.environ, "PYTHONPATH": str(root), "HF_HUB_OFFLINE": "1", "HAYSTACK_TELEMETRY_ENABLED": "False"}
    output = subprocess.run(
        [sys.executable, "-c", _PROBE, mode, str(texts_path)],
        cwd=root,
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    ).stdout
    return json.loads(output.strip().splitlines()[-1])


def median_probe(root: Path, mode: str, texts_path: Path, runs: int) -> dict[str, Any]:
    """The per-figure median of ``runs`` probes (import times move with the machine's load)."""
    results = [probe(root, mode, texts_path) for _ in range(runs)]
    merged: dict[str, Any] = {}
    for key, value in results[0].items():
        values = [result[key] for result in results]
        merged[key] = sorted(values)[len(values) // 2] if isinstance(value, int | float) else value
    return merged


def serve_figures() -> dict[str, Any]:
    """The served process's RSS (MiB) at each step of an English, then multilingual, session (see the module doc)."""
    import tempfile

    import httpx
    import yaml

    from bench.service_bench import BenchServer

    staff = {"tenant_id": "polyglot", "user_tags": ["all-staff"]}
    manifest = yaml.safe_load((LANGUAGES / "manifest.yml").read_text(encoding="utf-8"))
    documents = [
        {
            "content": (LANGUAGES / entry["path"]).read_text(encoding="utf-8"),
            "document_id": entry["document_id"],
            "tenant_id": entry["tenant_id"],
            "tags": entry["tags"],
        }
        for entry in manifest["documents"]
    ]
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="sourcebound-languages-bench-") as tmp:
        server = BenchServer(Path(tmp) / "data", Path(tmp) / "server.log").start(timeout_s=600)
        try:
            mib = lambda: round(server.rss_now() / 2**20, 1)  # noqa: E731
            figures["served_healthy_mib"] = mib()
            with httpx.Client(base_url=server.url, timeout=300) as client:

                def ask(query: str, identity: dict[str, Any]) -> None:
                    response = client.post("/rag/run", json={"query": query, **identity})
                    response.raise_for_status()

                ask("How many days of paid annual leave do employees get?", {"tenant_id": "acme", "user_tags": ["hr"]})
                figures["served_after_english_mib"] = mib()
                client.post("/index/run", json={"documents": documents}).raise_for_status()
                figures["served_after_indexing_languages_mib"] = mib()
                for language, query in (
                    ("ru", "Сколько дней оплачиваемого отпуска получает сотрудник в год?"),
                    ("de", "Wie lange ist die Kündigungsfrist?"),
                    ("zh", "正式员工每年有多少天带薪年假？"),
                ):
                    ask(query, staff)
                    figures[f"served_after_{language}_mib"] = mib()
            figures["served_peak_mib"] = round(server.peak_rss() / 2**20, 1)
        finally:
            server.stop()
    return figures


def markdown(after: dict[str, Any], before: dict[str, Any] | None) -> str:
    lines = ["| figure | value |", "|---|---|"]
    if before:
        lines += [
            f"| import of the text modules, before (ms) | {before['import_ms']:.0f} |",
            f"| RSS added by that import, before (MiB) | "
            f"{before['rss_after_import_mib'] - before['rss_start_mib']:.1f} |",
        ]
    lines += [
        f"| import of the text modules (ms) | {after['import_ms']:.0f} |",
        f"| RSS added by that import (MiB) | {after['rss_after_import_mib'] - after['rss_start_mib']:.1f} |",
        f"| lazy parts loaded after English text | {', '.join(after['lazy_loaded_after_english']) or 'none'} |",
    ]
    for language in ("en", "ru", "de", "zh"):
        lines.append(
            f"| first {language} text: time (ms) / RSS added (MiB) | "
            f"{after[f'first_{language}_ms']:.0f} / {after[f'first_{language}_rss_mib']:.1f} |"
        )
    lines.append(f"| RSS added by all lazy parts (MiB) | {after['rss_end_mib'] - after['rss_after_import_mib']:.1f} |")
    for language in ("en", "ru", "de", "zh"):
        lines.append(
            f"| {language}: words + sentences + shingles / BM25 vector (µs per 1000 chars) | "
            f"{after[f'analyse_{language}_us_per_kchar']:.0f} / {after[f'bm25_{language}_us_per_kchar']:.0f} |"
        )
    labels = {
        "served_healthy_mib": "served process: healthy, sample corpus indexed (MiB)",
        "served_after_english_mib": "served process: after an English /rag/run (MiB)",
        "served_after_indexing_languages_mib": "served process: after indexing the ru/de/zh corpus (MiB)",
        "served_after_ru_mib": "served process: after a Russian /rag/run (MiB)",
        "served_after_de_mib": "served process: after a German /rag/run (MiB)",
        "served_after_zh_mib": "served process: after a Chinese /rag/run (MiB)",
        "served_peak_mib": "served process: peak RSS (MiB; budget 1024)",
    }
    lines += [f"| {label} | {after[key]:.1f} |" for key, label in labels.items() if key in after]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.languages_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="another checkout: also measure its import figures")
    parser.add_argument("--runs", type=int, default=3, help="fresh processes per measurement (median)")
    parser.add_argument("--server", action="store_true", help="also measure the served process's RSS")
    args = parser.parse_args(argv)
    RESULTS.mkdir(parents=True, exist_ok=True)
    texts_path = RESULTS / "languages_texts.json"
    texts_path.write_text(json.dumps(sample_texts(), ensure_ascii=False), encoding="utf-8")
    try:
        after = median_probe(REPO, "full", texts_path, args.runs)
        before = median_probe(args.before.resolve(), "import-only", texts_path, args.runs) if args.before else None
    finally:
        texts_path.unlink(missing_ok=True)
    if args.server:
        after.update(serve_figures())
    table = markdown(after, before)
    (RESULTS / "languages.json").write_text(json.dumps({"after": after, "before": before}, indent=2) + "\n")
    (RESULTS / "languages.md").write_text(table + "\n", encoding="utf-8")
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
