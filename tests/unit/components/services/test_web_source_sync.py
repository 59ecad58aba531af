"""
Web sources synced through the real indexing pipeline and Qdrant Edge store, crawling a real HTTP site on
127.0.0.1: what a page becomes in the index, conditional re-crawls (the server counts the bodies it sent), pages
that change, disappear or become unreachable, bad pages that do not stop the crawl.
"""

import pytest
from support.indexing_support import make_pdf
from support.web_site import Page, WebSite

from components.core.document_identity import tenant_filter
from components.services.document_lifecycle import invalidate
from components.services.indexing_service import IndexingService
from components.services.source_config import parse_sources
from components.services.source_sync import SourceSyncer
from components.stores.sync_state import SyncState

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("data")
    return IndexingService.from_yaml(env={"SOURCEBOUND_DATA_DIR": str(data_dir)})


@pytest.fixture
def world(service, tmp_path):
    service.document_store.delete_all_documents()
    with WebSite() as site:
        sources = parse_sources(
            {"sources": [{"name": "docs-site", "type": "web", "start_urls": [site.url("/")],
                          "allowed_domains": [site.host], "max_depth": 3, "max_pages": 50, "tenant_id": "acme",
                          "tags": ["eng"], "requests_per_second": 200, "concurrency": 4}]}
        )  # fmt: skip
        state = SyncState(tmp_path / "sources.sqlite")
        syncer = SourceSyncer(
            sources, state, tmp_path / "mirrors", service.index_streams,
            lambda tenant, ids, reason: invalidate(service.document_store, tenant, ids, reason=reason),
        )  # fmt: skip
        yield site, syncer, state
        state.close()


def indexed(service) -> dict[str, dict]:
    """source_uri -> meta of the page's first chunk, for the tenant."""
    found = {}
    for chunk in service.document_store.filter_documents(tenant_filter("acme")):
        found.setdefault(chunk.meta["source_uri"], chunk.meta)
    return found


def texts(service, url: str) -> str:
    chunks = service.document_store.filter_documents(tenant_filter("acme"))
    return " ".join(chunk.content for chunk in chunks if chunk.meta["source_uri"] == url)


def site_pages(site: WebSite, tmp_path) -> None:
    pdf = make_pdf(tmp_path / "expenses.pdf", ["Meals abroad are reimbursed up to 60 euros a day."]).read_bytes()
    site.pages.update(
        {
            "/": Page.html("The engineering handbook home page.", title="Handbook",
                           links=["/vpn/", "/vpn?utm_source=mail", "/expenses.pdf", "/broken", "/oncall"]),
            "/vpn/": Page.html("Connect to the VPN with the hardware token before opening the wiki.",
                               title="VPN setup", links=["/"]),
            "/expenses.pdf": Page(body=pdf, content_type="application/pdf"),
            "/broken": Page(body=b"<html><p>\x00\x01\x02 binary garbage</p>", content_type="text/html"),
            "/oncall": Page.html("The on-call rotation changes every Monday at nine.", title="On-call"),
        }
    )  # fmt: skip


class TestWebSourceSync:
    def test_first_crawl_indexes_pages_with_their_urls_titles_and_validators(self, service, world, tmp_path):
        site, syncer, _ = world
        site_pages(site, tmp_path)
        report = syncer.sync("docs-site")
        assert report["type"] == "web" and report["mode"] == "crawl"
        assert sorted(report["indexed"]) == sorted(site.url(p) for p in ("/", "/vpn", "/expenses.pdf", "/oncall"))
        assert (
            list(report["rejected"]) == [site.url("/broken")] and "NUL bytes" in report["rejected"][site.url("/broken")]
        )
        assert report["chunks_written"] >= 4 and site.requests["/vpn/"] == 1
        docs = indexed(service)
        assert set(docs) == set(report["indexed"])
        vpn = docs[site.url("/vpn")]
        source = syncer.source("docs-site")
        assert vpn["document_id"] == source.document_id(site.url("/vpn"))
        assert (vpn["document_name"], vpn["source_type"], vpn["source_name"]) == ("VPN setup", "html", "docs-site")
        assert vpn["etag"] == site.pages["/vpn/"].etag and vpn["last_modified"].endswith("GMT")
        assert vpn["source_updated_at"] == "2023-11-14T22:13:20+00:00"
        assert (vpn["tenant_id"], vpn["tags"], vpn["scope"]) == ("acme", ["eng"], "tenant")
        pdf = docs[site.url("/expenses.pdf")]
        assert (pdf["source_type"], pdf["document_name"]) == ("pdf", "expenses.pdf")
        assert "60 euros" in texts(service, site.url("/expenses.pdf"))

    def test_recrawl_is_conditional_and_takes_changes(self, service, world, tmp_path):
        site, syncer, _ = world
        site_pages(site, tmp_path)
        syncer.sync("docs-site")
        site.reset_counts()
        report = syncer.sync("docs-site")
        assert sum(site.full.values()) == 1 and site.full["/broken"] == 1  # only the never-indexed page again
        assert report["not_modified"] == 4 and report["indexed"] == [] and report["removed"] == {}
        site.pages["/oncall"] = Page.html("The on-call rotation now changes every Tuesday at ten.", title="On-call")
        site.reset_counts()
        report = syncer.sync("docs-site")
        assert report["indexed"] == [site.url("/oncall")] and site.full["/oncall"] == 1
        assert "Tuesday" in texts(service, site.url("/oncall")) and "Monday" not in texts(service, site.url("/oncall"))
        site.reset_counts()
        report = syncer.sync("docs-site", full=True)  # unconditional: every body again, the detector skips them
        assert report["mode"] == "full" and site.full["/vpn/"] == 1 and report["indexed"] == []
        assert sorted(report["unchanged"]) == sorted(indexed(service))

    def test_pages_that_disappear_leave_the_index(self, service, world, tmp_path):
        site, syncer, state = world
        site_pages(site, tmp_path)
        syncer.sync("docs-site")
        del site.pages["/vpn/"]  # 404 now
        report = syncer.sync("docs-site")
        assert report["removed"] == {site.url("/vpn"): "HTTP 404: the page is gone"}
        assert site.url("/vpn") not in indexed(service)
        # No longer linked: kept after one crawl that misses it, removed after the second.
        site.pages["/"] = Page.html("The engineering handbook home page.", title="Handbook", links=["/expenses.pdf"])
        first = syncer.sync("docs-site")
        assert first["removed"] == {} and site.url("/oncall") in indexed(service)
        assert state.web_pages("docs-site")[site.url("/oncall")].missed == 1
        second = syncer.sync("docs-site")
        assert second["removed"] == {site.url("/oncall"): "not reached within the limits in 2 crawls in a row"}
        assert set(indexed(service)) == {site.url("/"), site.url("/expenses.pdf")}
        assert set(state.web_pages("docs-site")) == {site.url("/"), site.url("/expenses.pdf")}

    def test_pages_robots_txt_now_disallows_leave_and_failures_keep_pages(self, service, world, tmp_path):
        site, syncer, _ = world
        site_pages(site, tmp_path)
        syncer.sync("docs-site")
        site.pages["/robots.txt"] = Page(body=b"User-agent: *\nDisallow: /oncall\n", content_type="text/plain")
        site.pages["/vpn/"] = Page(status=503, body=b"maintenance")
        report = syncer.sync("docs-site")
        assert report["removed"] == {site.url("/oncall"): "disallowed by robots.txt"}
        assert report["skipped"][site.url("/vpn")] == "HTTP 503; the indexed page is kept"
        assert site.url("/vpn") in indexed(service) and site.url("/oncall") not in indexed(service)
