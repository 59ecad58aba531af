"""
The crawler against real HTTP servers on 127.0.0.1 (``tests/support/web_site.py``): a site made in each test and a
second one on another port standing for a foreign host. What it fetches, what it refuses and why, and how politely.
"""

import time

import pytest
from support.web_site import Page, WebSite

from components.services.source_config import CrawlSettings
from components.services.web_crawler import WebCrawler
from components.stores.sync_state import WebPage

pytestmark = pytest.mark.integration


def settings(site: WebSite, *starts: str, **overrides) -> CrawlSettings:
    values = {"start_urls": tuple(site.url(path) for path in starts or ("/",)), "allowed_domains": (site.host,),
              "requests_per_second": 200.0, "concurrency": 4, "timeout_s": 1.0}  # fmt: skip
    values.update(overrides)
    return CrawlSettings(**values)


def crawl(site: WebSite, *starts: str, known=None, conditional=True, **overrides) -> dict[str, list]:
    """The events of one crawl by outcome: ``{outcome: [event, ...]}``."""
    events: dict[str, list] = {}
    for event in WebCrawler(settings(site, *starts, **overrides)).crawl(known or {}, conditional=conditional):
        events.setdefault(event.outcome, []).append(event)
    return events


def reasons(events, outcome: str) -> dict[str, str]:
    return {event.url: event.reason for event in events.get(outcome, [])}


@pytest.fixture
def sites():
    with WebSite() as foreign, WebSite() as site:
        foreign.pages["/"] = Page.html("A foreign page.", title="Foreign")
        yield site, foreign


class TestWebCrawler:
    def test_follows_links_inside_the_domains_once_per_canonical_url(self, sites):
        site, foreign = sites
        site.pages.update(
            {
                "/": Page.html(
                    "Home.",
                    title="Home",
                    links=["/guide/", "/guide?utm_source=news", "/guide/#setup", "/GUIDE/../guide", foreign.url("/")],
                ),  # fmt: skip
                "/guide/": Page.html("The guide.", title="Guide", links=["/", "/ref"]),
                "/ref": Page(body=b"%PDF-1.4 not parsed here", content_type="application/pdf"),
            }
        )
        events = crawl(site)
        pages = {event.url: event for event in events["page"]}
        assert set(pages) == {site.url("/"), site.url("/guide"), site.url("/ref")}
        assert pages[site.url("/guide")].fetched_url == site.url("/guide/")  # asked as linked, keyed canonically
        assert pages[site.url("/ref")].source_type == "pdf" and pages[site.url("/")].source_type == "html"
        assert pages[site.url("/")].etag and pages[site.url("/")].last_modified
        assert site.requests["/guide/"] == 1 and "/guide?utm_source=news" not in site.requests
        assert foreign.requests == {}  # a link to another host is never requested
        assert reasons(events, "refused")[foreign.url("/")] == "127.0.0.1 is a private address outside allowed_domains"
        assert events["done"][0].requested == 3
        assert site.user_agents == {"sourcebound-crawler/1.0"}

    def test_depth_and_page_limits(self, sites):
        site, _ = sites
        site.pages.update({f"/{n}": Page.html(f"Page {n}.", links=[f"/{n + 1}"]) for n in range(6)})
        events = crawl(site, "/0", max_depth=2)
        assert [event.url for event in events["page"]] == [site.url(f"/{n}") for n in range(3)]
        assert reasons(events, "left_out") == {site.url("/3"): "deeper than max_depth (2)"}
        site.pages.update({"/wide": Page.html("Index.", links=[f"/{n}" for n in range(6)])})
        events = crawl(site, "/wide", max_pages=3)
        assert len(events["page"]) == 3 and events["done"][0].requested == 3
        assert set(reasons(events, "left_out").values()) == {"past max_pages (3)"}

    def test_robots_txt_is_honoured(self, sites):
        site, _ = sites
        site.pages.update(
            {
                "/robots.txt": Page(
                    body=b"User-agent: *\nDisallow: /private/\n\nUser-agent: sourcebound-crawler\n"
                    b"Disallow: /private/\nDisallow: /drafts\n",
                    content_type="text/plain",
                ),
                "/": Page.html("Home.", links=["/private/pay", "/drafts/x", "/public"]),
                "/public": Page.html("Public."),
                "/private/pay": Page.html("Salaries."),
                "/drafts/x": Page.html("Draft."),
            }
        )
        events = crawl(site)
        assert {event.url for event in events["page"]} == {site.url("/"), site.url("/public")}
        refused = reasons(events, "refused")
        assert refused[site.url("/private/pay")] == refused[site.url("/drafts/x")] == "disallowed by robots.txt"
        assert "/private/pay" not in site.requests and "/drafts/x" not in site.requests
        assert site.requests["/robots.txt"] == 1  # once per crawl and origin

    def test_robots_txt_answering_5xx_stops_the_crawl_there_and_4xx_allows_all(self, sites):
        site, _ = sites
        site.pages.update({"/": Page.html("Home."), "/robots.txt": Page(status=503, body=b"down")})
        events = crawl(site)
        assert "page" not in events and site.requests["/"] == 0
        assert "robots.txt answered HTTP 503" in reasons(events, "failed")[site.url("/")]
        site.pages["/robots.txt"] = Page(status=403, body=b"no")
        assert [event.url for event in crawl(site)["page"]] == [site.url("/")]

    def test_redirects_are_followed_only_inside_the_domains(self, sites):
        site, foreign = sites
        site.pages.update(
            {
                "/": Page.html("Home.", links=["/old", "/away", "/loop-a", "/hops0", "/to-file", "/to-known"]),
                "/old": Page.redirect("/new"),
                "/new": Page.html("The new page."),
                "/away": Page.redirect(foreign.url("/"), status=302),
                "/loop-a": Page.redirect("/loop-b"),
                "/loop-b": Page.redirect("/loop-a"),
                **{f"/hops{n}": Page.redirect(f"/hops{n + 1}") for n in range(8)},
                "/to-file": Page.redirect("file:///etc/passwd"),
                "/to-known": Page.redirect("/"),
            }
        )
        events = crawl(site)
        assert {event.url for event in events["page"]} == {site.url("/"), site.url("/new")}
        refused = reasons(events, "refused")
        assert refused[site.url("/old")] == f"redirects to {site.url('/new')}"
        assert refused[site.url("/away")].startswith(f"redirects to {foreign.url('/')}: ")
        assert foreign.requests == {}  # the redirect to another host is not followed
        assert any(reason.startswith("redirect loop (") for reason in refused.values())
        assert any(reason == "more than 5 redirects" for reason in refused.values())
        assert "scheme 'file' is not crawled" in refused[site.url("/to-file")]
        assert refused[site.url("/to-known")] == f"redirects to {site.url('/')}, crawled on its own"

    def test_bad_pages_are_skipped_with_reasons_and_the_crawl_goes_on(self, sites):
        site, _ = sites
        links = ["/endless", "/slow", "/drip", "/image", "/huge", "/file", "/private", "/gzip", "/ok"]
        site.pages.update(
            {
                "/": Page.html("Home.", links=[*links, "file:///etc/passwd", "http://10.0.0.1/admin"]),
                "/endless": Page(endless=True),
                "/slow": Page.html("Late.", delay_s=3),
                "/drip": Page.html("x" * 400, drip_s=0.02),
                "/image": Page(body=b"\x89PNG\r\n\x1a\n", content_type="image/png"),
                "/huge": Page.html("y" * 300_000),
                "/gzip": Page(body=b"this is not gzip", headers={"Content-Encoding": "gzip"}),
                "/ok": Page.html("Fine."),
            }
        )
        started = time.monotonic()
        events = crawl(site, max_page_bytes=100_000, timeout_s=0.5)
        assert time.monotonic() - started < 10
        assert {event.url for event in events["page"]} == {site.url("/"), site.url("/ok")}
        refused, failed = reasons(events, "refused"), reasons(events, "failed")
        assert refused[site.url("/endless")] == "the body passed max_page_bytes (100000); abandoned"
        assert refused[site.url("/huge")].endswith("is over max_page_bytes (100000); not downloaded")
        assert refused[site.url("/image")] == "Content-Type image/png is not a type the indexer reads"
        assert refused[site.url("/file")] == "HTTP 404: the page is gone"
        assert refused[site.url("/gzip")].startswith("DecodingError: ")
        assert refused["file:///etc/passwd"] == "scheme 'file' is not crawled (only http and https)"
        assert refused["http://10.0.0.1/admin"] == "10.0.0.1 is a private address outside allowed_domains"
        assert failed[site.url("/slow")].startswith("timed out: no answer within 0.5 s")
        assert failed[site.url("/drip")] == "no complete answer within 2 s (timed out)"

    def test_noindex_nofollow_and_charsets(self, sites):
        site, _ = sites
        site.pages.update(
            {
                "/": Page.html("Home.", links=["/hidden", "/quiet", "/latin"]),
                "/hidden": Page(body=b'<meta name="robots" content="noindex"><p>Hidden.</p><a href="/behind">b</a>'),
                "/behind": Page.html("Reached through a noindex page."),
                "/quiet": Page(body=b'<meta name="robots" content="nofollow"><p>Quiet.</p><a href="/never">n</a>'),
                "/latin": Page(
                    body="<p>Caf\u00e9 cr\u00e8me.</p>".encode("latin-1"), content_type="text/html; charset=ISO-8859-1"
                ),  # fmt: skip
            }
        )
        events = crawl(site)
        pages = {event.url: event for event in events["page"]}
        assert set(pages) == {site.url(path) for path in ("/", "/behind", "/quiet", "/latin")}
        assert reasons(events, "refused")[site.url("/hidden")] == "the page asks not to be indexed (noindex)"
        assert "/never" not in site.requests
        assert pages[site.url("/latin")].data.decode("utf-8") == "<p>Caf\u00e9 cr\u00e8me.</p>"

    def test_per_host_concurrency_and_rate(self, sites):
        site, _ = sites
        site.pages.update({"/": Page.html("Hub.", links=[f"/p{n}" for n in range(12)])})
        site.pages.update({f"/p{n}": Page.html(f"Page {n}.", delay_s=0.1) for n in range(12)})
        crawl(site, concurrency=2, requests_per_second=1000)
        assert site.max_in_flight <= 2
        site.reset_counts()
        crawl(site, concurrency=8, requests_per_second=20)
        # 20 per second: 13 requests 50 ms apart span 0.6 s (arrival jitter allowed); unlimited they take ~0.1 s.
        assert len(site.started) == 13 and site.started[-1] - site.started[0] >= 0.54

    def test_conditional_recrawl_follows_the_recorded_links_of_unchanged_pages(self, sites):
        site, _ = sites
        site.pages.update({"/": Page.html("Home.", links=["/a"]), "/a": Page.html("A.", links=["/b"]),
                           "/b": Page.html("B.")})  # fmt: skip
        first = crawl(site)
        known = {e.url: WebPage(e.url, "doc", e.etag, e.last_modified, e.links) for e in first["page"]}
        site.reset_counts()
        second = crawl(site, known=known)
        assert {event.url for event in second["not_modified"]} == set(known)
        assert sum(site.full.values()) == 0 and sum(site.not_modified.values()) == 3
        site.reset_counts()
        third = crawl(site, known=known, conditional=False)
        assert len(third["page"]) == 3 and sum(site.full.values()) == 3

    def test_a_subdomain_resolving_to_a_private_address_is_refused(self, monkeypatch):
        import asyncio
        import socket

        async def fake_getaddrinfo(self, host, port, **kwargs):
            address = {"intranet.docs.example.test": "10.0.0.5"}[host]
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

        monkeypatch.setattr(asyncio.base_events.BaseEventLoop, "getaddrinfo", fake_getaddrinfo)
        crawler = WebCrawler(
            CrawlSettings(start_urls=("http://intranet.docs.example.test/",), allowed_domains=("docs.example.test",))
        )
        events = list(crawler.crawl({}))
        assert [(event.outcome, event.reason) for event in events[:-1]] == [
            ("refused", "intranet.docs.example.test resolves to the private address 10.0.0.5; only a host named in "
                        "allowed_domains itself may"),
        ]  # fmt: skip
        assert events[-1].outcome == "done" and events[-1].requested == 0
