"""URL canonicalisation (RAG Standard A5) and the domain allowlist (A4)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from components.core.url_canonicalizer import (
    DomainAllowlist,
    canonicalize_url,
    domain_allowed,
    is_http_url,
    is_tracking_parameter,
    parse_domain_list,
    url_host,
)

CANONICAL = "https://help.example.com/timesheets/submit?lang=en&page=2"


@pytest.mark.unit
class TestCanonicalizeUrl:
    @pytest.mark.parametrize(
        "variant",
        [
            CANONICAL,
            "HTTPS://Help.Example.COM/timesheets/submit?lang=en&page=2",
            "https://help.example.com:443/timesheets/submit?lang=en&page=2",
            "https://help.example.com/timesheets/submit/?lang=en&page=2",
            "https://help.example.com/timesheets/submit?page=2&lang=en",
            "https://help.example.com/timesheets/submit?lang=en&page=2#step-3",
            "https://help.example.com/timesheets/submit?utm_source=mail&utm_medium=x&lang=en&page=2",
            "https://help.example.com/timesheets/submit?lang=en&gclid=abc&fbclid=def&page=2&msclkid=1",
            "https://help.example.com./timesheets//submit?lang=en&page=2",
            "https://help.example.com/timesheets/./other/../submit?lang=en&page=2",
            "  https://help.example.com/timesheets/submit?lang=en&page=2  ",
            "https://help.example.com/%74imesheets/submit?lang=en&page=2",
        ],
    )
    def test_variants_collapse_to_one_url(self, variant):
        assert canonicalize_url(variant) == CANONICAL

    def test_root_keeps_one_slash(self):
        assert canonicalize_url("http://Example.com") == "http://example.com/"
        assert canonicalize_url("http://example.com/") == "http://example.com/"
        assert canonicalize_url("http://example.com/?utm_campaign=x#top") == "http://example.com/"

    def test_keeps_what_identifies_the_page(self):
        assert canonicalize_url("http://example.com:8080/a?id=7") == "http://example.com:8080/a?id=7"
        assert canonicalize_url("https://example.com/a%2Fb") == "https://example.com/a%2Fb"  # an encoded slash is data
        assert canonicalize_url("https://example.com/a?q=") == "https://example.com/a?q="

    def test_non_http_values_are_only_stripped(self):
        assert canonicalize_url(" file:///tmp/a.html ") == "file:///tmp/a.html"
        assert canonicalize_url("doc-42") == "doc-42"

    @given(
        host=st.from_regex(r"[a-z]{1,10}\.(com|org)", fullmatch=True),
        path=st.lists(st.from_regex(r"[a-z0-9]{1,6}", fullmatch=True), max_size=4),
        query=st.dictionaries(
            st.from_regex(r"[a-z]{1,5}", fullmatch=True), st.from_regex(r"[a-z0-9]{0,5}", fullmatch=True), max_size=3
        ),
        fragment=st.from_regex(r"[a-z]{0,5}", fullmatch=True),
        trailing=st.booleans(),
    )
    def test_idempotent_and_variant_free(self, host, path, query, fragment, trailing):
        base = f"https://{host}/{'/'.join(path)}{'/' if trailing else ''}"
        url = (
            base
            + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")
            + (f"#{fragment}" if fragment else "")
        )
        canonical = canonicalize_url(url)
        assert canonicalize_url(canonical) == canonical
        assert canonicalize_url(url.replace(host, host.upper(), 1)) == canonical
        assert "#" not in canonical
        assert canonicalize_url(url + ("&" if query else "?") + "utm_source=x") == canonical


@pytest.mark.unit
class TestDomains:
    def test_is_http_url(self):
        assert is_http_url("https://a.com/x")
        assert not is_http_url("file:///x")
        assert not is_http_url("https://")
        assert not is_http_url(None)

    def test_tracking_parameters(self):
        assert (
            is_tracking_parameter("utm_source")
            and is_tracking_parameter("UTM_Medium")
            and is_tracking_parameter("gclid")
        )
        assert not is_tracking_parameter("id")

    def test_host_and_list_parsing(self):
        assert url_host("https://Docs.Example.com./a") == "docs.example.com"
        assert parse_domain_list(" Example.com, .help.org ,, ") == ["example.com", "help.org"]
        assert parse_domain_list(None) == [] and parse_domain_list("") == []

    def test_allowlist_accepts_domain_and_subdomains_only(self):
        allowed = ["example.com"]
        assert domain_allowed("https://example.com/a", allowed)
        assert domain_allowed("https://help.example.com/a", allowed)
        assert not domain_allowed("https://badexample.com/a", allowed)
        assert not domain_allowed("https://example.com.evil.org/a", allowed)

    def test_empty_allowlist_and_local_sources_are_allowed(self):
        assert domain_allowed("https://anything.org", None)
        assert domain_allowed("file:///tmp/a.html", ["example.com"])


@pytest.mark.unit
class TestDomainAllowlist:
    def test_host_and_port_entries(self):
        allowlist = DomainAllowlist("docs.example.com, 127.0.0.1:8080, [::1]:9000")
        assert allowlist.domains == ("docs.example.com", "127.0.0.1:8080", "[::1]:9000")
        assert allowlist.allows("http://127.0.0.1:8080/a")
        assert not allowlist.allows("http://127.0.0.1:8081/a")  # another port is another site
        assert allowlist.allows("http://[::1]:9000/") and not allowlist.allows("http://[::1]:9001/")
        assert allowlist.allows("https://docs.example.com:8443/a")  # a plain host: any port
        assert allowlist.allows("https://v2.docs.example.com/a") and not allowlist.allows("https://example.com/")
        assert DomainAllowlist(["example.com:443"]).allows("https://example.com/x")  # the default port counts
        assert not DomainAllowlist(["example.com:443"]).allows("http://example.com/x")

    def test_lists_exactly(self):
        allowlist = DomainAllowlist(["example.com", "127.0.0.1:8080"])
        assert allowlist.lists_exactly("https://example.com/a")
        assert not allowlist.lists_exactly("https://docs.example.com/a")
        assert allowlist.lists_exactly("http://127.0.0.1:8080/") and not allowlist.lists_exactly("http://127.0.0.1/")

    def test_empty_allows_everything(self):
        assert not DomainAllowlist("") and DomainAllowlist(None).allows("https://anything.org/")
        assert domain_allowed("http://localhost:1/x", "localhost:1")
