"""
What a crawler may fetch and what a page links to, as pure functions (docs/contract.md, "Sources").

* :func:`link_problem`: why a link is not followed (another scheme, a host outside ``allowed_domains``, a private
  address outside it), or ``None``;
* :func:`is_private_address`: loopback, private, link-local, reserved and other non-public addresses;
* :func:`read_page_links`: the links of an HTML page (``<a href>``, ``<area href>``, resolved against ``<base>``
  and the page's URL, fragments dropped) and its ``<meta name="robots">`` wishes (``noindex``, ``nofollow``);
* :func:`source_type_for_content`: the converter route of a response by its ``Content-Type`` (HTML, PDF, Word,
  PowerPoint, Excel, CSV, Markdown, plain text), ``None`` for anything else;
* :func:`http_date_iso`: an HTTP date (``Last-Modified``) as ISO 8601 UTC.

Usage:

```python
from components.core.crawl_rules import link_problem, read_page_links
from components.core.url_canonicalizer import DomainAllowlist

page = read_page_links('<a href="/guide">Guide</a>', "https://docs.example.com/")
page.links                                   # ['https://docs.example.com/guide']
link_problem("file:///etc/passwd", DomainAllowlist(["docs.example.com"]))  # "scheme 'file' is not crawled ..."
```
"""

import ipaddress
from dataclasses import dataclass, field
from datetime import UTC
from email.utils import parsedate_to_datetime
from html.parser import HTMLParser
from urllib.parse import urldefrag, urljoin, urlsplit

from components.core.url_canonicalizer import DomainAllowlist, url_host

# Content types the indexing pipeline converts (components/converters), by MIME type.
SOURCE_TYPE_BY_CONTENT_TYPE = {
    "text/html": "html",
    "application/xhtml+xml": "html",
    "application/pdf": "pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "text/csv": "csv",
    "text/markdown": "md",
    "text/plain": "txt",
}
CRAWLED_SCHEMES = ("http", "https")


def is_private_address(address: str) -> bool:
    """
    Whether an IP address is not a public one: loopback, private (RFC 1918, ULA), link-local, shared (CGNAT),
    multicast, reserved or unspecified. Anything that is not an IP address is ``False``.
    """
    try:
        ip = ipaddress.ip_address(address.strip("[]"))
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return not ip.is_global or ip.is_multicast


def link_problem(url: str, allowed: DomainAllowlist) -> str | None:
    """
    Why the crawler does not follow ``url``, or ``None`` when it may (the page may still be refused by
    ``robots.txt``, by the depth and page limits, or because its host resolves to a private address).

    :param url: An absolute URL.
    :param allowed: The source's ``allowed_domains`` (never empty for a web source).
    """
    try:
        parts = urlsplit(url)
    except ValueError as error:
        return f"not a valid URL ({error})"
    scheme = parts.scheme.lower()
    if scheme not in CRAWLED_SCHEMES:
        return f"scheme {scheme or 'none'!r} is not crawled (only http and https)"
    host = url_host(url)
    if host is None:
        return "the URL has no host"
    if not allowed.allows(url):
        if is_private_address(host):
            return f"{host} is a private address outside allowed_domains"
        return f"{host} is outside allowed_domains"
    return None


@dataclass
class PageLinks:
    """What :func:`read_page_links` finds in a page."""

    links: list[str] = field(default_factory=list)
    noindex: bool = False
    nofollow: bool = False


class _LinkParser(HTMLParser):
    def __init__(self, base_url: str) -> None:
        super().__init__(convert_charrefs=True)
        self.base_url = base_url
        self.page = PageLinks()
        self._hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name.lower(): (value or "") for name, value in attrs}
        if tag == "base" and attributes.get("href") and not self._hrefs:
            self.base_url = urljoin(self.base_url, attributes["href"].strip())
        elif tag in ("a", "area") and attributes.get("href"):
            self._hrefs.append(attributes["href"].strip())
        elif tag == "meta" and attributes.get("name", "").lower() in ("robots", "sourcebound-crawler"):
            wishes = {word.strip() for word in attributes.get("content", "").lower().split(",")}
            self.page.noindex |= bool(wishes & {"noindex", "none"})
            self.page.nofollow |= bool(wishes & {"nofollow", "none"})

    def close(self) -> None:
        super().close()
        seen: set[str] = set()
        for href in self._hrefs:
            try:
                absolute = urldefrag(urljoin(self.base_url, href)).url
            except ValueError:
                continue  # a malformed href (an unclosed IPv6 bracket, say) is no link
            if absolute and absolute not in seen and not href.startswith("#"):
                seen.add(absolute)
                self.page.links.append(absolute)


def read_page_links(html: str, base_url: str) -> PageLinks:
    """
    The links of an HTML page, absolute and without fragments, in page order without repeats, and the page's
    ``<meta name="robots">`` wishes. Malformed HTML gives what the lenient parser can read.

    :param html: The page's text.
    :param base_url: The URL it was fetched from (after redirects).
    """
    parser = _LinkParser(base_url)
    try:
        parser.feed(html)
        parser.close()
    except Exception:  # html.parser is lenient; a defect it does raise on leaves the links found so far
        pass
    return parser.page


def robots_wishes(header: str | None) -> tuple[bool, bool]:
    """``(noindex, nofollow)`` from an ``X-Robots-Tag`` header (without a user-agent prefix)."""
    words = {word.strip() for word in (header or "").lower().split(",")}
    return bool(words & {"noindex", "none"}), bool(words & {"nofollow", "none"})


def source_type_for_content(content_type: str | None) -> str | None:
    """The converter route of a ``Content-Type`` (``text/html; charset=utf-8`` -> ``html``), or ``None``."""
    if not content_type:
        return None
    return SOURCE_TYPE_BY_CONTENT_TYPE.get(content_type.split(";")[0].strip().lower())


def http_date_iso(value: str | None) -> str | None:
    """An HTTP date (``Wed, 21 Oct 2015 07:28:00 GMT``) as ISO 8601 UTC, or ``None`` when absent or unreadable."""
    if not value:
        return None
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat()
