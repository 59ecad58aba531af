"""
URL canonicalisation and the domain allowlist (RAG Standard axioms A4 and A5), as pure functions.

Variants of one page's URL must collapse to one ``source_uri`` and therefore one
derived ``document_id``, or the same page is indexed twice and answers cite
duplicates. :func:`canonicalize_url` makes these equal:

* scheme and host in lower case, a trailing dot and the default port (80/443) dropped;
* no userinfo (``user:password@``): a credential is not part of a page's identity and must never be shown
  (docs/contract.md, "Sources");
* no fragment (``#section``);
* no tracking parameters (``utm_*``, ``gclid``, ``fbclid``, ...); the remaining
  query parameters sorted, so their order does not matter;
* one form of trailing slash: none, except for the root path ``/``;
* dot segments (``/a/../b``) and repeated slashes resolved, percent-escapes of
  unreserved characters decoded and the rest in upper case.

Only ``http``/``https`` URLs are rewritten; anything else (``file://`` URIs,
plain identifiers) is returned stripped of surrounding whitespace, so the
function is safe to call on every ``source_uri``. It is idempotent.

Usage:

```python
from components.core.url_canonicalizer import canonicalize_url, domain_allowed

canonicalize_url("HTTPS://Help.Example.COM:443/a/b/?utm_source=x&b=2&a=1#top")
# 'https://help.example.com/a/b?a=1&b=2'
domain_allowed("https://docs.example.com/x", ["example.com"])  # True: a subdomain
```
"""

import posixpath
import re
from collections.abc import Iterable
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

# Query parameters that identify a campaign or a click, never the page.
TRACKING_PARAMETERS = frozenset(
    {
        "gclid",
        "gclsrc",
        "dclid",
        "gbraid",
        "wbraid",
        "fbclid",
        "msclkid",
        "yclid",
        "twclid",
        "ttclid",
        "li_fat_id",
        "igshid",
        "mc_cid",
        "mc_eid",
        "_ga",
        "_gl",
        "_hsenc",
        "_hsmi",
        "__hssc",
        "__hstc",
        "__hsfp",
        "hsctatracking",
        "mkt_tok",
        "vero_id",
        "vero_conv",
        "oly_anon_id",
        "oly_enc_id",
        "rb_clickid",
        "s_cid",
        "wickedid",
        "spm",
    }
)
TRACKING_PREFIXES = ("utm_", "pk_", "mtm_", "hsa_")

_DEFAULT_PORTS = {"http": 80, "https": 443}
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_PERCENT_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")


def is_http_url(value: str | None) -> bool:
    """Whether ``value`` is an absolute ``http``/``https`` URL with a host."""
    if not value or not isinstance(value, str):
        return False
    try:
        parts = urlsplit(value.strip())
    except ValueError:
        return False
    return parts.scheme.lower() in _DEFAULT_PORTS and bool(parts.hostname)


def is_tracking_parameter(name: str) -> bool:
    """Whether a query parameter name is a known tracking parameter (case-insensitive)."""
    lowered = name.lower()
    return lowered in TRACKING_PARAMETERS or lowered.startswith(TRACKING_PREFIXES)


def _normalise_escapes(text: str) -> str:
    # Decode escapes of unreserved characters (%7E -> ~) and upper-case the rest (%2f -> %2F);
    # never decode reserved ones such as %2F, which would change the meaning of the path.
    def fix(match: re.Match) -> str:
        char = chr(int(match.group(1), 16))
        return char if char in _UNRESERVED else "%" + match.group(1).upper()

    return _PERCENT_ESCAPE.sub(fix, text)


def _normalise_path(path: str) -> str:
    path = _normalise_escapes(path)
    # Quote what must be quoted (spaces, non-ASCII) and keep existing escapes as they are.
    path = quote(path, safe="/%:@!$&'()*+,;=-._~")
    path = re.sub(r"/{2,}", "/", path)
    if not path or path == "/":
        return "/"
    normalised = posixpath.normpath(path)
    if not normalised.startswith("/"):
        normalised = "/" + normalised
    # normpath keeps a leading "//"; collapse it so "/./" and "//" variants agree.
    normalised = re.sub(r"^/{2,}", "/", normalised)
    return normalised if normalised == "/" else normalised.rstrip("/")


def canonicalize_url(url: str) -> str:
    """
    Return the canonical form of ``url`` (see the module docstring for the rules).

    :param url: Any source URI. Non-HTTP values are only stripped of surrounding whitespace.
    :returns: The canonical URL.
    """
    stripped = url.strip()
    if not is_http_url(stripped):
        return stripped
    parts = urlsplit(stripped)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower().rstrip(".")
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    # The userinfo is dropped: a credential is no part of the page's identity and never shown (contract, Sources).
    netloc = host if port in (None, _DEFAULT_PORTS[scheme]) else f"{host}:{port}"

    query_pairs = [
        (name, value)
        for name, value in parse_qsl(parts.query, keep_blank_values=True)
        if not is_tracking_parameter(name)
    ]
    query = urlencode(sorted(query_pairs), quote_via=quote, safe="-._~")
    return urlunsplit((scheme, netloc, _normalise_path(parts.path), query, ""))


def url_host(url: str) -> str | None:
    """The lower-case host of an HTTP(S) URL, or ``None`` for anything else."""
    if not is_http_url(url):
        return None
    return (urlsplit(url.strip()).hostname or "").lower().rstrip(".") or None


def url_port(url: str) -> int | None:
    """The port an HTTP(S) URL is reached on (the scheme's default when none is given), or ``None``."""
    if not is_http_url(url):
        return None
    parts = urlsplit(url.strip())
    try:
        port = parts.port
    except ValueError:
        return None
    return port if port is not None else _DEFAULT_PORTS[parts.scheme.lower()]


def parse_domain_list(domains: str | Iterable[str] | None) -> list[str]:
    """
    Normalise an allowlist given as a comma-separated string (``RAG_ALLOWLIST_DOMAINS``) or a list.

    :returns: Lower-case domains (``host`` or ``host:port``) without surrounding dots or whitespace; empty when
        no allowlist is set.
    """
    if domains is None:
        return []
    items = domains.split(",") if isinstance(domains, str) else list(domains)
    return [item.strip().lower().strip(".") for item in items if item and item.strip().strip(".")]


def split_domain_entry(entry: str) -> tuple[str, int | None]:
    """
    An allowlist entry as ``(host, port)``: ``docs.example.com`` -> ``("docs.example.com", None)``,
    ``127.0.0.1:8080`` -> ``("127.0.0.1", 8080)``, ``[::1]:8080`` -> ``("::1", 8080)``.
    """
    entry = entry.strip().lower()
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
        return host, int(port) if port.isdigit() else None
    host, separator, port = entry.rpartition(":")
    if separator and port.isdigit() and ":" not in host:
        return host.rstrip("."), int(port)
    return entry.rstrip("."), None


class DomainAllowlist:
    """
    An allowlist parsed once (entries as :func:`split_domain_entry` gives them), for checking many URLs.

    An entry ``host:port`` allows only that host on that port (a local test site, a service on a non-default
    port); a plain ``host`` allows it and its subdomains on any port. An empty allowlist allows everything;
    values that are not HTTP(S) URLs (local files, plain identifiers) have no domain and are always allowed.

    :param domains: A list or a comma-separated string (``RAG_ALLOWLIST_DOMAINS``).
    """

    def __init__(self, domains: str | Iterable[str] | None) -> None:
        self.domains = tuple(parse_domain_list(domains))
        self.entries = tuple(split_domain_entry(entry) for entry in self.domains)

    def __bool__(self) -> bool:
        return bool(self.entries)

    def allows(self, url: str) -> bool:
        """Whether ``url`` is allowed (see the class docstring)."""
        if not self.entries:
            return True
        host = url_host(url)
        if host is None:
            return True
        port = None
        for domain, entry_port in self.entries:
            if entry_port is not None:
                port = url_port(url) if port is None else port
                if host == domain and port == entry_port:
                    return True
            elif host == domain or host.endswith("." + domain):
                return True
        return False

    def lists_exactly(self, url: str) -> bool:
        """Whether ``url``'s host itself is an entry (with its port, for a ``host:port`` entry), not a subdomain."""
        host, port = url_host(url), url_port(url)
        return any(host == domain and entry_port in (None, port) for domain, entry_port in self.entries)


def domain_allowed(url: str, allowed_domains: Iterable[str] | None) -> bool:
    """Whether an HTTP(S) URL's host is an allowed domain or a subdomain of one (see :class:`DomainAllowlist`)."""
    return DomainAllowlist(allowed_domains).allows(url)
