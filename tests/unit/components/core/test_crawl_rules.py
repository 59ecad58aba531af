"""The crawler's pure rules: which links it follows, what a page links to, which types it reads."""

import pytest

from components.core.crawl_rules import (
    http_date_iso,
    is_private_address,
    link_problem,
    read_page_links,
    robots_wishes,
    source_type_for_content,
)
from components.core.url_canonicalizer import DomainAllowlist

DOCS = DomainAllowlist(["docs.example.com", "127.0.0.1:8080", "wiki.internal"])


@pytest.mark.unit
class TestLinkProblem:
    def test_inside_the_domains(self):
        assert link_problem("https://docs.example.com/a", DOCS) is None
        assert link_problem("https://api.docs.example.com/a", DOCS) is None  # a subdomain
        assert link_problem("http://127.0.0.1:8080/x", DOCS) is None
        assert link_problem("http://wiki.internal/page", DOCS) is None

    @pytest.mark.parametrize(
        ("url", "expected"),
        [
            ("file:///etc/passwd", "scheme 'file' is not crawled"),
            ("ftp://docs.example.com/a", "scheme 'ftp' is not crawled"),
            ("mailto:team@docs.example.com", "scheme 'mailto' is not crawled"),
            ("javascript:alert(1)", "scheme 'javascript' is not crawled"),
            ("https://example.com/a", "example.com is outside allowed_domains"),
            ("https://docs.example.com.evil.org/", "outside allowed_domains"),
            ("http://127.0.0.1:9090/x", "127.0.0.1 is a private address outside allowed_domains"),
            ("http://10.0.0.7/admin", "10.0.0.7 is a private address outside allowed_domains"),
            ("http://169.254.169.254/latest/meta-data", "is a private address outside allowed_domains"),
            ("http://[::1]:8080/", "::1 is a private address outside allowed_domains"),
            ("http:///nohost", "has no host"),
        ],
    )
    def test_refused_with_a_reason(self, url, expected):
        assert expected in link_problem(url, DOCS)

    def test_private_addresses(self):
        for address in ("127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.1.1", "100.64.0.1", "::1",
                        "fc00::1", "fe80::1", "0.0.0.0", "::ffff:10.0.0.1", "224.0.0.1", "[::1]"):  # fmt: skip
            assert is_private_address(address), address
        for public in ("93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946", "docs.example.com"):
            assert not is_private_address(public), public


@pytest.mark.unit
class TestReadPageLinks:
    def test_links_are_absolute_without_fragments_or_repeats(self):
        html = """<html><head><title>T</title></head><body>
            <a href="/a#part">A</a> <a href="b/c">B</a> <a href="/a">again</a> <a href="#top">top</a>
            <a href="https://other.example.org/x?y=1">out</a> <area href="../d"> <a>no href</a>
            <a href="mailto:x@example.com">mail</a></body></html>"""
        page = read_page_links(html, "https://docs.example.com/guide/")
        assert page.links == [
            "https://docs.example.com/a",
            "https://docs.example.com/guide/b/c",
            "https://other.example.org/x?y=1",
            "https://docs.example.com/d",
            "mailto:x@example.com",
        ]
        assert not page.noindex and not page.nofollow

    def test_base_href_and_meta_robots(self):
        html = '<base href="https://docs.example.com/v2/"><meta name="robots" content="noindex, nofollow"><a href="x">'
        page = read_page_links(html, "https://docs.example.com/")
        assert page.links == ["https://docs.example.com/v2/x"]
        assert page.noindex and page.nofollow
        assert read_page_links('<meta name="ROBOTS" content="none">', "https://a/").nofollow

    def test_malformed_html_gives_what_can_be_read(self):
        html = '<html><body><p>Text <a href="/one">one<div><<<>>> <a href="/two" <a href="/three">x</p></b></i>'
        links = read_page_links(html, "http://127.0.0.1:8080/").links
        assert "http://127.0.0.1:8080/one" in links
        assert read_page_links('<a href="http://[bad">x</a><a href="/ok">', "http://h/").links == ["http://h/ok"]


@pytest.mark.unit
class TestTypesAndHeaders:
    def test_source_type_for_content(self):
        assert source_type_for_content("text/html; charset=ISO-8859-1") == "html"
        assert source_type_for_content("application/xhtml+xml") == "html"
        assert source_type_for_content("application/pdf") == "pdf"
        docx = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
        assert source_type_for_content(docx) == "docx"
        assert source_type_for_content("image/png") is None
        assert source_type_for_content("application/octet-stream") is None
        assert source_type_for_content(None) is None

    def test_http_dates(self):
        assert http_date_iso("Wed, 21 Oct 2015 07:28:00 GMT") == "2015-10-21T07:28:00+00:00"
        assert http_date_iso("not a date") is None and http_date_iso(None) is None

    def test_robots_header(self):
        assert robots_wishes("noindex") == (True, False)
        assert robots_wishes("NOFOLLOW, noarchive") == (False, True)
        assert robots_wishes(None) == (False, False)
