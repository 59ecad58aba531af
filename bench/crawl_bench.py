"""
Web sources benchmark: crawl and index a 500-page site, then re-crawl it unchanged.

A local site on 127.0.0.1 (stdlib ``ThreadingHTTPServer`` in this process's threads, answering ``If-None-Match``
with 304) of ``--pages`` HTML pages, each one chunk of text, linked as a tree from ``/`` (sections of 25 pages,
each page also linking two siblings and back home) within the crawl's depth of 3. The crawl runs in process
through ``components.services.web_source_sync`` over the real indexing pipeline (``pipelines/indexing.yml``, Qdrant
Edge in a temporary folder), as ``sourcebound sync`` runs it:

1. **fetch only**: the crawler alone over the whole site (no indexing): what fetching and parsing cost;
2. **first crawl**: crawl and index every page; pages per second;
3. **re-crawl, unchanged** (``--recrawls`` times): conditional requests, every page a 304 and nothing indexed;
   its time as a share of the first crawl's (target: under 10 %);
4. **unconditional re-crawl** (``--full``): every body again, the change detector skipping the unchanged pages
   (what a site without ``ETag``/``Last-Modified`` costs);
5. **the allowlist at answer time**: ``DomainAllowlistFilter`` over 15 retrieved chunks (the RAG pipeline's
   candidate count at the defaults) against the query embedding of one short question, both in this process.

The crawl's politeness is set for a local site (``requests_per_second`` 1000, ``concurrency`` 4); a real site
gets the defaults (5 per second, 2 at a time), which bound a first crawl of 500 pages at 100 s whatever the
machine.

```bash
python -m bench.crawl_bench                          # 500 pages, 3 re-crawls
python -m bench.crawl_bench --pages 200 --json bench/results/crawl.json
```
"""

import argparse
import hashlib
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench.report import latency_summary

TOPICS = ("deploys", "reviews", "on-call", "releases", "budgets", "hiring", "security", "backups", "docs", "testing")
SECTION = 25


def page_html(number: int, pages: int) -> bytes:
    """Page ``number``: a title, eight sentences (one chunk) and its links."""
    topic = TOPICS[number % len(TOPICS)]
    text = " ".join(
        f"Team {number % 37} handles {topic} case {number * 7 + line} with checklist item {line}." for line in range(8)
    )
    if number == 0:
        links = [f"/section/{start // SECTION}/" for start in range(1, pages, SECTION)]
    else:
        section = (number - 1) // SECTION
        siblings = [n for n in (number - 1, number + 1) if 1 <= n < pages and (n - 1) // SECTION == section]
        links = ["/", f"/section/{section}/", *(f"/docs/page-{n}.html" for n in siblings)]
    anchors = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    return (
        f"<html><head><title>Page {number}: {topic}</title></head><body><h1>Page {number}</h1>"
        f"<p>{text}</p><nav><ul>{anchors}</ul></nav></body></html>"
    ).encode()


def section_html(section: int, pages: int) -> bytes:
    first = section * SECTION + 1
    members = range(first, min(first + SECTION, pages))
    anchors = "".join(f'<li><a href="/docs/page-{n}.html">Page {n}</a></li>' for n in members)
    return (
        f"<html><head><title>Section {section}</title></head><body><h1>Section {section}</h1>"
        f"<p>Pages {first} to {members[-1]} of the handbook, about {TOPICS[section % len(TOPICS)]}.</p>"
        f"<ul>{anchors}</ul></body></html>"
    ).encode()


def build_site(pages: int) -> dict[str, bytes]:
    """``pages`` pages: the home page, ``/docs/page-N.html`` and the section indexes (counted among them)."""
    sections = (pages - 1 + SECTION - 1) // SECTION
    body_pages = pages - sections  # the sections are pages too
    site = {"/": page_html(0, body_pages)}
    site.update({f"/section/{s}/": section_html(s, body_pages) for s in range(sections)})
    site.update({f"/docs/page-{n}.html": page_html(n, body_pages) for n in range(1, body_pages)})
    return site


class Site:
    """The site's server; counts full responses and 304s."""

    def __init__(self, pages: dict[str, bytes]) -> None:
        self.pages = pages
        self.full = 0
        self.not_modified = 0
        self.lock = threading.Lock()
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                body = site.pages.get(self.path)
                if body is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
                if self.headers.get("If-None-Match") == etag:
                    with site.lock:
                        site.not_modified += 1
                    self.send_response(304)
                    self.send_header("ETag", etag)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                with site.lock:
                    site.full += 1
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("ETag", etag)
                self.send_header("Last-Modified", formatdate(1_700_000_000, usegmt=True))
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.server.server_address[1]}"

    def counts(self) -> tuple[int, int]:
        with self.lock:
            counts = (self.full, self.not_modified)
            self.full = self.not_modified = 0
        return counts


def allowlist_cost(rounds: int = 2000) -> dict[str, Any]:
    """The answer-time allowlist over 15 chunks against one query embedding, in this process."""
    from haystack import Document
    from haystack.core.serialization import component_from_dict

    from bench.service_bench import embedder_declaration
    from components.filters.domain_allowlist_filter import DomainAllowlistFilter
    from components.services.pipeline_loader import load_pipeline_dict

    hosts = ("docs.acme.internal", "wiki.acme.internal", "old.example.org")
    chunks = [
        Document(content=f"chunk {n}", meta={"source_uri": f"https://{hosts[n % 3]}/page-{n}", "document_id": str(n)})
        for n in range(15)
    ]
    allowlist = DomainAllowlistFilter("docs.acme.internal,wiki.acme.internal")
    embedder_type, data = embedder_declaration(load_pipeline_dict("search"))
    data = {**data, "init_parameters": {**data.get("init_parameters", {}), "threads": 1}}
    embedder = component_from_dict(embedder_type, data, "embedder")
    embedder.warm_up()
    embed_ms, filter_ms = [], []
    for round_number in range(rounds):
        if round_number % 20 == 0:
            started = time.perf_counter()
            embedder.run(text=f"how are {TOPICS[round_number % 10]} handled by team {round_number}?")
            embed_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        kept = allowlist.run(documents=chunks)["documents"]
        filter_ms.append((time.perf_counter() - started) * 1000)
    assert len(kept) == 10
    embed, flt = statistics.median(embed_ms), statistics.median(filter_ms)
    return {
        "filter_15_chunks": latency_summary(filter_ms),
        "query_embedding": latency_summary(embed_ms),
        "filter_over_embedding_p50": round(flt / embed, 5),
    }


def run(pages: int, recrawls: int, full: bool) -> dict[str, Any]:
    from components.runtime.offline import configure_offline

    configure_offline()
    from components.services.document_lifecycle import invalidate
    from components.services.indexing_service import IndexingService
    from components.services.source_config import parse_sources
    from components.services.web_crawler import WebCrawler
    from components.services.web_source_sync import WebSourceSync
    from components.stores.sync_state import SyncState

    site = Site(build_site(pages))
    with tempfile.TemporaryDirectory(prefix="crawl-bench-") as folder:
        service = IndexingService.from_yaml(env={"SOURCEBOUND_DATA_DIR": folder})
        service.warm_up()
        source = parse_sources(
            {"sources": [{"name": "bench-site", "type": "web", "start_urls": [f"http://{site.host}/"],
                          "allowed_domains": [site.host], "max_depth": 3, "max_pages": pages, "tenant_id": "acme",
                          "tags": ["eng"], "requests_per_second": 1000, "concurrency": 4}]}
        )["bench-site"]  # fmt: skip
        state = SyncState(Path(folder) / "sources.sqlite")
        web = WebSourceSync(
            state, service.index_streams,
            lambda tenant, ids, reason: invalidate(service.document_store, tenant, ids, reason=reason),
        )  # fmt: skip
        figures: dict[str, Any] = {"pages": pages}

        started = time.perf_counter()
        fetched = sum(1 for event in WebCrawler(source.crawl).crawl({}) if event.outcome == "page")
        figures["fetch_only_s"] = round(time.perf_counter() - started, 3)
        figures["fetch_only_pages_per_s"] = round(fetched / figures["fetch_only_s"], 1)
        site.counts()

        cpu = time.process_time()
        first = web.sync(source)
        first_cpu = time.process_time() - cpu
        full_bodies, _ = site.counts()
        figures["first_crawl"] = {
            "seconds": round(first["latency_ms"] / 1000, 3),
            "pages_indexed": len(first["indexed"]),
            "chunks": first["chunks_written"],
            "pages_per_s": round(len(first["indexed"]) / (first["latency_ms"] / 1000), 1),
            "full_responses": full_bodies,
            "skipped": len(first["skipped"]) + first["skipped_more"],
            "cpu_seconds": round(first_cpu, 3),
        }
        again = []
        for _ in range(recrawls):
            cpu = time.process_time()
            report = web.sync(source)
            cpu = time.process_time() - cpu
            bodies, not_modified = site.counts()
            assert report["indexed"] == [] and bodies == 0, (report, bodies)
            again.append({"seconds": report["latency_ms"] / 1000, "not_modified": not_modified, "cpu": cpu})
        seconds = statistics.median(entry["seconds"] for entry in again)
        cpu_seconds = statistics.median(entry["cpu"] for entry in again)
        figures["recrawl_unchanged"] = {
            "seconds_p50": round(seconds, 3),
            "cpu_seconds_p50": round(cpu_seconds, 3),
            "cpu_share_of_first_crawl": round(cpu_seconds / first_cpu, 4),
            "runs": len(again),
            "not_modified": again[-1]["not_modified"],
            "share_of_first_crawl": round(seconds / figures["first_crawl"]["seconds"], 4),
            "target": "< 0.10",
            "result": "PASS" if seconds / figures["first_crawl"]["seconds"] < 0.10 else "MISS",
        }
        if full:
            report = web.sync(source, full=True)
            bodies, _ = site.counts()
            figures["recrawl_unconditional"] = {
                "seconds": round(report["latency_ms"] / 1000, 3),
                "full_responses": bodies,
                "indexed": len(report["indexed"]),
                "share_of_first_crawl": round(report["latency_ms"] / first["latency_ms"], 4),
            }
        state.close()
        service.close()
    site.server.shutdown()
    figures["allowlist_at_answer_time"] = allowlist_cost()
    return figures


def markdown(figures: dict[str, Any]) -> str:
    first, again = figures["first_crawl"], figures["recrawl_unchanged"]
    cost = figures["allowlist_at_answer_time"]
    rows = [
        "| figure | value | target |",
        "|---|---:|---|",
        f"| fetch only (crawler, no indexing), {figures['pages']} pages | {figures['fetch_only_s']:.2f} s "
        f"({figures['fetch_only_pages_per_s']:.0f} pages/s) | |",
        f"| first crawl: crawl and index {first['pages_indexed']} pages ({first['chunks']} chunks) | "
        f"{first['seconds']:.1f} s, **{first['pages_per_s']:.1f} pages/s** (CPU {first['cpu_seconds']:.1f} s) | |",
        f"| re-crawl of the unchanged site (p50 of {again['runs']}; {again['not_modified']} answers 304) | "
        f"{again['seconds_p50']:.2f} s = **{again['share_of_first_crawl']:.1%}** of the first (CPU "
        f"{again['cpu_seconds_p50']:.2f} s = {again['cpu_share_of_first_crawl']:.1%}) | < 10 %: {again['result']} |",
    ]
    if "recrawl_unconditional" in figures:
        full = figures["recrawl_unconditional"]
        rows.append(
            f"| re-crawl without validators (every body again, {full['indexed']} re-indexed) | {full['seconds']:.2f} s"
            f" = {full['share_of_first_crawl']:.1%} of the first | |"
        )
    rows.append(
        f"| answer-time allowlist over 15 chunks, p50 | {cost['filter_15_chunks']['p50_ms'] * 1000:.1f} µs = "
        f"{cost['filter_over_embedding_p50']:.2%} of one query embedding "
        f"({cost['query_embedding']['p50_ms']:.2f} ms) | |"
    )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=500)
    parser.add_argument("--recrawls", type=int, default=3)
    parser.add_argument("--no-full", action="store_true", help="skip the unconditional re-crawl")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    figures = run(args.pages, args.recrawls, not args.no_full)
    figures["load_average"] = [round(value, 2) for value in os.getloadavg()]
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    print(markdown(figures))
    return 0 if figures["recrawl_unchanged"]["result"] == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
