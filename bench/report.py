"""
Figures to targets to text: percentiles, the issue-7 targets (PASS/MISS), and the Markdown
report ``bench/results/latest.md``.

Percentiles are nearest-rank (the value below which the given share of samples lies), so a
p99 of 300 samples is the 297th smallest.

Usage:

```python
from bench.report import latency_summary, evaluate_targets, markdown
latency_summary([12.0, 15.5, 30.1])   # {"p50_ms": 15.5, "p95_ms": 30.1, "p99_ms": 30.1, "mean_ms": ..., "n": 3}
```
"""

import math
import statistics
from typing import Any

# bench/README.md, "What each figure means" (Targets).
TARGETS = {
    "search_p95_ms_100k": ("/search/run p95 at 100k chunks", "<=", 20.0, "ms"),
    "http_over_bare": ("HTTP / bare overhead ratio (/search p50)", "<=", 1.2, "x"),
    "search_p95_over_floor": ("/search/run p95 / query-embedding p50 (the floor, same run)", "<=", 2.0, "x"),
    "rag_p95_over_floor": ("/rag/run p95 / query-embedding p50 (the floor, same run)", "<=", 3.0, "x"),
    "throughput_4_over_1": ("/search/run req/s at 4 clients / at 1 client", ">=", 1.7, "x"),
    "rag_p95_ms_100k": ("/rag/run (extractive) p95 at 100k chunks", "<=", 50.0, "ms"),
    "indexing_ratio": ("indexing pipeline / bare embedder", ">=", 0.9, "x"),
    "rss_mb_100k": ("server peak RSS at 100k chunks", "<=", 1536.0, "MB"),
    "filtered_speedup_10k": (
        "filtered search vs qdrant-haystack local mode at 10k (min of dense/BM25/hybrid p50 & p95)", ">=", 50.0, "x"
    ),
}  # fmt: skip


def percentile(ordered: list[float], share: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    if not ordered:
        return math.nan
    return ordered[min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))]


def latency_summary(samples_ms: list[float]) -> dict[str, Any]:
    ordered = sorted(samples_ms)
    if not ordered:
        return {"p50_ms": None, "p95_ms": None, "p99_ms": None, "mean_ms": None, "n": 0}
    return {
        "p50_ms": round(statistics.median(ordered), 3),
        "p95_ms": round(percentile(ordered, 0.95), 3),
        "p99_ms": round(percentile(ordered, 0.99), 3),
        "mean_ms": round(statistics.fmean(ordered), 3),
        "n": len(ordered),
    }


def _largest(report: dict[str, Any]) -> dict[str, Any] | None:
    service = report.get("service") or {}
    if not service:
        return None
    return service[max(service, key=int)]


def evaluate_targets(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each target with its measured value and PASS / MISS (or N/A when that part did not run)."""
    values: dict[str, tuple[float | None, str]] = {}
    service = report.get("service") or {}
    at_100k = service.get("100000")
    largest = _largest(report)
    if at_100k:
        values["search_p95_ms_100k"] = (at_100k["http"]["search"]["p95_ms"], "at 100k")
        values["rag_p95_ms_100k"] = (at_100k["http"]["rag"]["p95_ms"], "at 100k")
        values["rss_mb_100k"] = (at_100k["rss_mb"]["peak"], "at 100k")
    elif largest:  # development runs with other sizes: report against the largest size measured
        size = f"at {largest['size']:,}, the largest size run"
        values["search_p95_ms_100k"] = (largest["http"]["search"]["p95_ms"], size)
        values["rag_p95_ms_100k"] = (largest["http"]["rag"]["p95_ms"], size)
        values["rss_mb_100k"] = (largest["rss_mb"]["peak"], size)
    if largest:
        where = f"at {largest['size']:,}"
        ratios = largest["ratios"]
        values["http_over_bare"] = (ratios["search_http_over_bare_p50"], where)
        for key, name in (
            ("search_p95_over_floor", "search_p95_over_embed_p50"),
            ("rag_p95_over_floor", "rag_p95_over_embed_p50"),
            ("throughput_4_over_1", "throughput_4_over_1"),
        ):
            values[key] = (ratios.get(name), where)  # fmt: skip
    indexing = report.get("indexing")
    if indexing and "ratio" in indexing:
        # The embedder's share of each pipeline run is immune to the load drifting between alternating runs;
        # the end-to-end chunks/s ratio is shown beside it.
        if "in_run_ratio" in indexing:
            values["indexing_ratio"] = (indexing["in_run_ratio"], "embedder share within the pipeline runs")
        else:
            values["indexing_ratio"] = (indexing["ratio"], "alternating rounds")
    store = report.get("store") or {}
    speedup = (store.get("summary") or {}).get("speedup_vs_qdrant_local")
    if speedup:
        values["filtered_speedup_10k"] = (speedup["min"], f"at {speedup['size']:,}")
    targets = {}
    for key, (label, operator, target, unit) in TARGETS.items():
        value, measured_at = values.get(key, (None, ""))
        if value is None:
            verdict = "N/A"
        else:
            verdict = "PASS" if (value <= target if operator == "<=" else value >= target) else "MISS"
        targets[key] = {"label": label, "operator": operator, "target": target, "unit": unit, "value": value,
                        "measured_at": measured_at, "verdict": verdict}  # fmt: skip
    return targets


def _ms(value: Any) -> str:
    return "-" if value is None else f"{value:.1f}"


def _triple(figures: dict[str, Any] | None, p99: bool = True) -> str:
    if not figures:
        return "-"
    text = f"{_ms(figures['p50_ms'])} / {_ms(figures['p95_ms'])}"
    return text + (f" / {_ms(figures['p99_ms'])}" if p99 else "")


def markdown(report: dict[str, Any]) -> str:
    machine = report["machine"]
    lines = [
        "# sourcebound benchmark",
        "",
        f"`{report['command']}` at {report['started']}, {report['seconds']:.0f} s in all. {machine['cpus']} CPUs, "
        f"load average at start {machine['load_average_start']}, at end {machine.get('load_average_end')} "
        "(the machine is shared: same-run ratios are the robust figures). Latencies in ms.",
        "",
    ]
    embedder = report.get("embedder")
    if embedder:
        lines += [
            f"Embedder backend: {embedder['runtime']}, {embedder['dtype']}; queries {embedder['query']}, documents "
            f"{embedder['documents']}; {embedder.get('threads', 1)} thread(s) per forward pass (docs/embeddings.md).",
            "",
        ]
    service = report.get("service") or {}
    if service:
        lines += [
            "## Service over HTTP (server started by the harness, client in a separate process, loopback)",
            "",
            "| chunks | /search p50 / p95 / p99 | in-server search p50 | bare search p50 / p95 | HTTP / bare (p50) "
            "| /rag p50 / p95 / p99 | bare RAG retrieval p50 | embed only p50 | retrieve only p50 | req/s at "
            + " / ".join(f"{c}" for c in next(iter(service.values()))["throughput"])
            + " clients | start-up s | RSS idle / peak MB |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for size in sorted(service, key=int):
            figures = service[size]
            throughput = " / ".join(f"{figures['throughput'][c]['requests_per_s']:.1f}" for c in figures["throughput"])
            lines.append(
                f"| {int(size):,} | {_triple(figures['http']['search'])} "
                f"| {_ms(figures['http']['search'].get('in_server_search_p50_ms'))} "
                f"| {_triple(figures['bare']['search'], False)} "
                f"| {figures['ratios']['search_http_over_bare_p50']:.2f} | {_triple(figures['http']['rag'])} "
                f"| {_ms(figures['bare']['rag_retrieval']['p50_ms'])} | {_ms(figures['bare']['embed']['p50_ms'])} "
                f"| {_ms(figures['bare']['retrieve']['p50_ms'])} | {throughput} | {figures['startup_s']:.1f} "
                f"| {figures['rss_mb']['idle']:.0f} / {figures['rss_mb']['peak']:.0f} |"
            )
        lines.append("")
        lines.append(
            "Ratios to the floor (the bare query embedding's p50, interleaved with the requests): "
            + "; ".join(
                f"{int(size):,} chunks: /search p95 {figures['ratios'].get('search_p95_over_embed_p50')}x, "
                f"/rag p95 {figures['ratios'].get('rag_p95_over_embed_p50')}x of "
                f"{_ms(figures['bare']['embed']['p50_ms'])} ms; req/s 4 clients / 1 client "
                f"{figures['ratios'].get('throughput_4_over_1')}"
                for size, figures in sorted(service.items(), key=lambda item: int(item[0]))
            )
            + "."
        )
        lines.append("Latency under load (/search, p50 / p95 ms): " + "; ".join(
            f"{int(size):,} chunks: " + ", ".join(
                f"{c} clients {_triple(figures['throughput'][c], False)}" for c in figures["throughput"])
            for size, figures in sorted(service.items(), key=lambda item: int(item[0]))) + ".")  # fmt: skip
        actions = {size: figures["http"]["rag"].get("actions") for size, figures in service.items()}
        lines.append(
            "Responses: /search mean results "
            + ", ".join(
                f"{service[s]['http']['search']['mean_results']} at {int(s):,}" for s in sorted(service, key=int)
            )
            + "; /rag actions "
            + ", ".join(f"{actions[s]} at {int(s):,}" for s in sorted(service, key=int))
            + "; errors "
            + str(sum(f["http"]["search"]["errors"] + f["http"]["rag"]["errors"] for f in service.values()))
            + "."
        )
        fidelity = next(iter(service.values()))["corpus"]["fidelity"]
        lines.append(
            f"Corpus: composed from {next(iter(service.values()))['corpus']['distinct_sentences']:,} really embedded "
            f"sentences; composed vs real chunk embedding cosine mean {fidelity['mean_cosine']}, min "
            f"{fidelity['min_cosine']} over {fidelity['chunks']} sampled chunks (see bench/README.md)."
        )
        lines.append("")
    tracing = report.get("tracing") or {}
    if tracing:
        lines += ["## Tracing on vs off (`--tracing compare`: the same run served twice, OTLP export to a local sink)",
                  "", "| chunks | figure | off | on | on / off |", "|---:|---|---:|---:|---:|"]  # fmt: skip
        for size in sorted(tracing, key=int):
            for name, figure in tracing[size]["overhead"].items():
                lines.append(f"| {int(size):,} | {name} | {figure['off']} | {figure['on']} | {figure['on_over_off']} |")
            exported = tracing[size]["exported"]
            lines.append(f"| {int(size):,} | spans exported (tracing on) | | {exported['spans']} | |")
        lines.append("")
    store = report.get("store")
    if store:
        lines += ["## Store level (bench/store_bench.py)", "",
                  "| store | chunks | write docs/s | dense p50 / p95 | BM25 p50 / p95 | hybrid p50 / p95 |",
                  "|---|---:|---:|---:|---:|---:|"]  # fmt: skip
        for name, part in (
            ("Qdrant Edge", store.get("edge") or {}),
            ("qdrant-haystack local", store.get("qdrant_local") or {}),
        ):
            for size in sorted(part, key=int):
                queries = part[size]["queries"]
                cells = " | ".join(
                    f"{queries[kind]['p50_ms']:.3f} / {queries[kind]['p95_ms']:.3f}"
                    for kind in ("dense", "bm25", "hybrid")
                )
                lines.append(f"| {name} | {int(size):,} | {part[size]['write']['docs_per_s']:,.0f} | {cells} |")
        speedup = (store.get("summary") or {}).get("speedup_vs_qdrant_local")
        if speedup:
            lines.append("")
            lines.append(
                "Speed-up over qdrant-haystack local mode (p50 / p95): "
                + ", ".join(f"{kind} {ratio['p50']}x / {ratio['p95']}x" for kind, ratio in speedup["ratios"].items())
                + "."
            )
        lines.append("")
    indexing = report.get("indexing")
    if indexing:
        lines += ["## Indexing (bench/indexing_bench.py)", ""]
        if "ratio" in indexing:
            lines.append(
                f"{indexing['chunks']} chunks ({indexing['mean_chunk_tokens']} tokens on average), embedder "
                f"{indexing.get('embedder', 'SentenceTransformersDocumentEmbedder')}, "
                f"threads {indexing['torch_threads']} x {indexing.get('concurrent_batches', 1)} concurrent batches: "
                f"pipelines/indexing.yml {indexing['pipeline_chunks_per_s']} chunks/s, "
                f"bare embedder {indexing['bare_embedder_chunks_per_s']} chunks/s, ratio {indexing['ratio']} "
                f"(median of alternating rounds); the embedder's share of the pipeline's own runs: "
                f"{indexing.get('in_run_ratio', '-')}; CPU ms per chunk (all threads; robust on a shared machine): "
                f"pipeline {indexing.get('pipeline_cpu_ms_per_chunk', '-')}, "
                f"bare {indexing.get('bare_embedder_cpu_ms_per_chunk', '-')}."
            )
            stages = indexing.get("stage_ms_per_chunk") or {}
            if stages:
                lines.append(
                    "Pipeline ms per chunk by stage: "
                    + ", ".join(f"{name} {value}" for name, value in stages.items())
                    + "."
                )
        else:
            lines.append(f"Not measured: {indexing.get('error', 'skipped')}")
        lines.append("")
    stages = report.get("stages")
    if stages:
        lines += ["## Where a request's time goes (bench/stage_profile.py)", "", stage_markdown(stages)]
    lines += ["## Targets", "", "| target | measured | verdict |", "|---|---:|---|"]
    for target in report["targets"].values():
        value = "-" if target["value"] is None else f"{target['value']:g} {target['unit']}"
        where = f" ({target['measured_at']})" if target["measured_at"] else ""
        lines.append(
            f"| {target['label']} {target['operator']} {target['target']:g} {target['unit']} "
            f"| {value}{where} | {target['verdict']} |"
        )
    errors = report.get("errors") or {}
    if errors:
        lines += ["", "## Failed phases", ""]
        for name, error in errors.items():
            lines.append(f"- {name}: " + " ".join(error.strip().splitlines()[-3:]))
    profile = report.get("profile")
    if profile:
        lines += ["", "## Profile (in process, the wrapper path below HTTP; bench/profile_service.py)", ""]
        for kind, figures in profile.items():
            ab = figures["copy_ab"]
            lines.append(
                f"- {kind}: in-process p50 {_ms(figures['p50_ms'])} ms. Input copies A/B (same requests, alternating): "
                f"Haystack's copy {ab['haystack_copy']['cpu_mean_ms']} ms CPU / "
                f"{ab['haystack_copy']['wall_p50_ms']} ms p50, "
                f"fast copy {ab['fast_copy']['cpu_mean_ms']} ms CPU / {ab['fast_copy']['wall_p50_ms']} ms p50 "
                f"({ab['cpu_saved_pct']} % CPU saved). Call tree: {figures['report']}"
            )
            parts = [
                f"{name} {value}"
                for name, value in figures["cpu_breakdown_ms"].items()
                if name != "total" and value >= 0.05
            ]
            lines.append(
                f"  CPU ms per request ({figures['cpu_breakdown_ms']['total']} in all): " + ", ".join(parts) + "."
            )
    return "\n".join(lines) + "\n"


def stage_markdown(figures: dict[str, Any]) -> str:
    """The stage profile's tables (``bench/stage_profile.py``) as Markdown."""
    lines = [
        f"Stage profile at {figures['size']:,} chunks ({figures['requests']} requests per endpoint, alternating, "
        f"one client; load average {figures['load_start']} -> {figures['load_end']}). Floor: the bare query "
        f"embedding, p50 {figures['tables']['floor_embed']['p50_ms']} ms, interleaved with the requests.",
        "",
    ]
    threads = figures.get("thread_cpu_ms") or {}
    if threads:
        lines += [
            "CPU ms by thread over the timed requests (the process's busiest): "
            + ", ".join(f"{name} {ms}" for name, ms in list(threads.items())[:6])
            + ".",
            "",
        ]
    for path in ("/search/run", "/rag/run"):
        table = figures["tables"].get(path)
        if not table:
            continue
        client = table["client"]
        lines += [
            f"`{path}`: client p50 / p95 {client['p50_ms']} / {client['p95_ms']} ms = {table['p50_over_floor']}x / "
            f"{table['p95_over_floor']}x the floor; server CPU {table['server_cpu_ms']} ms per request = "
            f"{table['cpu_over_embedder_cpu']}x the embedder's CPU; server wall p50 {table['server_wall_p50_ms']} ms; "
            f"{table['gil_held_cpu_ms']} ms of the CPU holds the interpreter, so concurrent clients on 2 cores can get "
            f"at most {table['concurrency_bound']}x one client's throughput.",
            "",
            "| stage | CPU ms / request | share of server CPU | wall p50 ms |",
            "|---|---:|---:|---:|",
        ]
        for row in table["stages"]:
            wall = "-" if row["wall_p50_ms"] is None else f"{row['wall_p50_ms']:.3f}"
            share = "-" if row["share_pct"] is None else f"{row['share_pct']:.1f} %"
            lines.append(f"| {row['stage']} | {row['cpu_ms']:.3f} | {share} | {wall} |")
        lines.append("")
    return "\n".join(lines)
