"""
Web sources end to end: two real websites on 127.0.0.1 (the second on another port is another host), the real
server, real ``sourcebound`` processes. ``sourcebound sync`` crawls through the running server and without one;
``sourcebound crawl`` (``make crawl``) crawls ``RAG_CRAWL_START_URLS``; a tightened ``RAG_ALLOWLIST_DOMAINS`` keeps
the other host out of search results, citations and enrichment context at once (A4), and ``sourcebound allowlist``
reports and removes what it excludes.
"""

import os
import subprocess
import sys

import pytest
import yaml
from support.web_site import Page, WebSite

from tests.support.api_server import REPO, ApiServer

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ACME = {"tenant_id": "acme", "user_tags": ["eng"]}
MEALS = "How much is the meal allowance abroad per day?"


def cli(data_dir, *args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {key: value for key, value in os.environ.items() if not key.startswith(("SOURCEBOUND_", "RAG_"))}
    clean.update(PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    clean.update(SOURCEBOUND_DATA_DIR=str(data_dir), SOURCEBOUND_BOOTSTRAP_CORPUS="false", **env)
    return subprocess.run(
        [sys.executable, "-m", "hayhooks_app.cli", *args], cwd=REPO, env=clean, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip


def urls_of(server: ApiServer, query: str) -> dict[str, set[str]]:
    """The URLs search, the answer's citations and the enrichment context give for ``query``."""
    client = server.client
    search = client.post("/search/run", json={"query": query, "k": 10, **ACME})
    rag = client.post("/rag/run", json={"query": query, **ACME})
    enrich = client.post("/enrich/run", json={"message": query, **ACME})
    for response in (search, rag, enrich):
        assert response.status_code == 200, response.text
    return {
        "search": {hit["url"] for hit in search.json()["result"]["results"]},
        "citations": {citation["url"] for citation in rag.json()["result"]["citations"]},
        "enrich": {source["url"] for source in enrich.json()["result"]["sources"]},
    }


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("web")
    with WebSite() as docs, WebSite() as partner:
        docs.pages.update(
            {
                "/": Page.html("The engineering handbook. Travel rules are on the travel page.", title="Handbook",
                               links=["/travel", partner.url("/")]),
                "/travel": Page.html("Book trains for trips under four hours. Meals abroad follow the travel "
                                     "policy of the company.", title="Travel"),
            }
        )  # fmt: skip
        partner.pages.update(
            {
                "/": Page.html("Partner portal.", title="Partner", links=["/meals"]),
                "/meals": Page.html("The meal allowance abroad is 60 euros per day.", title="Meal allowance"),
            }
        )
        sources = root / "sources.yml"
        entries = [
            {"name": "docs-site", "type": "web", "start_urls": [docs.url("/")], "allowed_domains": [docs.host],
             "tenant_id": "acme", "tags": ["eng"], "requests_per_second": 100},
            {"name": "partner-site", "type": "web", "start_urls": [partner.url("/")],
             "allowed_domains": [partner.host], "tenant_id": "acme", "tags": ["eng"], "requests_per_second": 100},
        ]  # fmt: skip
        sources.write_text(yaml.safe_dump({"sources": entries}), encoding="utf-8")
        yield {"root": root, "docs": docs, "partner": partner, "sources": str(sources)}


class TestWebSources:
    def test_crawl_sync_and_the_allowlist_at_answer_time(self, world):
        docs, partner, data_dir = world["docs"], world["partner"], world["root"] / "data"
        env = {"SOURCEBOUND_BOOTSTRAP_CORPUS": "false", "SOURCEBOUND_SOURCES": world["sources"],
               "SOURCEBOUND_RECONCILE_INTERVAL": "0"}  # fmt: skip
        # Without a server: sync crawls and indexes the docs site; the partner link is another host.
        offline = cli(data_dir, "sync", "docs-site", SOURCEBOUND_SOURCES=world["sources"])
        assert offline.returncode == 0, offline.stderr
        assert "docs-site: crawl of 2 page(s): 2 indexed" in offline.stdout
        assert f"skipped {partner.url('/')}: 127.0.0.1 is a private address outside allowed_domains" in offline.stdout
        assert partner.requests == {}

        with ApiServer(data_dir, env=env) as server:
            # Beside the running server the command runs in it, as one of its jobs.
            online = cli(data_dir, "sync", "partner-site", "--json", SOURCEBOUND_SOURCES=world["sources"])
            assert online.returncode == 0, online.stderr
            report = yaml.safe_load(online.stdout)["partner-site"]
            assert sorted(report["indexed"]) == [partner.url("/"), partner.url("/meals")]
            again = cli(data_dir, "sync", "docs-site", "--json", SOURCEBOUND_SOURCES=world["sources"])
            assert yaml.safe_load(again.stdout)["docs-site"]["not_modified"] == 2
            found = urls_of(server, MEALS)
            assert partner.url("/meals") in found["search"] | found["citations"]

        # The allowlist tightened to the docs site: the partner's pages are indexed but never returned or cited.
        with ApiServer(data_dir, env={**env, "RAG_ALLOWLIST_DOMAINS": docs.host}) as server:
            found = urls_of(server, MEALS)
            assert found["search"] and all(url.startswith(docs.origin) for url in set().union(*found.values()))
            report = cli(data_dir, "allowlist", "--json")
            assert report.returncode == 1, report.stderr  # excluded documents remain
            listed = yaml.safe_load(report.stdout)
            assert {entry["source_uri"] for entry in listed["documents"]} == {partner.url("/"), partner.url("/meals")}
            assert listed["allowed_domains"] == [docs.host] and listed["hosts"] == {"127.0.0.1": 2}
            removed = cli(data_dir, "allowlist", "--remove")
            assert removed.returncode == 0 and "removed 2 document(s)" in removed.stdout, removed.stderr
            assert cli(data_dir, "allowlist").returncode == 0

        # make crawl: RAG_CRAWL_START_URLS into the default tenant; the allowlist removed the partner's pages for good.
        crawled = cli(data_dir, "crawl", RAG_CRAWL_START_URLS=partner.url("/"), RAG_CRAWL_TENANT_ID="globex")
        assert crawled.returncode == 0, crawled.stderr
        assert "crawl: crawl of 2 page(s): 2 indexed" in crawled.stdout
        with ApiServer(data_dir, env=env) as server:
            assert partner.url("/meals") not in urls_of(server, MEALS)["search"]  # acme's copy is gone
            globex = server.client.post("/search/run", json={"query": MEALS, "tenant_id": "globex",
                                                              "user_tags": ["web"]})  # fmt: skip
            assert partner.url("/meals") in {hit["url"] for hit in globex.json()["result"]["results"]}
