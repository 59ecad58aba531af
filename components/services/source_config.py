"""
Sources declared in YAML (``SOURCEBOUND_SOURCES``): where documents come from and what access they get.

The file is env-substituted like the pipeline YAML (``${NAME}``, ``${NAME:-default}``), then checked
as a whole; every problem is named in one :class:`SourceConfigError`. Each source has a ``type``:
``git`` (a repository, ``components.services.source_sync``) or ``web`` (a site crawled from start URLs inside
its ``allowed_domains``, ``components.services.web_source_sync``); the loader refuses an unknown type, and a
field of the other type, by name.

The tenant, tags and scope of a source's documents come from this server-side file only
(docs/contract.md, "Sources"): nothing a webhook sends can change them.

```yaml
sources:
  - name: handbook
    type: git
    url: file:///srv/git/handbook.git      # or https://github.com/acme/handbook.git
    branch: main
    include: ['**/*.md', '**/*.yaml']
    exclude: ['drafts/**']
    tenant_id: acme
    tags: [eng]
    scope: tenant                          # tenant (default), user, project or public
    webhook_secret: ${HANDBOOK_WEBHOOK_SECRET}
    web_url: https://git.acme.example/eng/handbook   # optional: links for a self-hosted forge (GitHub-style)
  - name: docs-site
    type: web
    start_urls: [https://docs.acme.internal/]
    allowed_domains: [docs.acme.internal]  # host (and its subdomains) or host:port
    max_depth: 3                           # links followed from a start URL (default 3)
    max_pages: 500                         # pages requested per crawl (default 500)
    tenant_id: acme
    tags: [eng]
```

Usage:

```python
from components.services.source_config import load_sources

sources = load_sources("sources.yml")
sources["handbook"].matches("docs/guide.md")  # True
```
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from components.core.crawl_rules import link_problem
from components.core.document_identity import (
    DEFAULT_SCOPE,
    PUBLIC_ID_PREFIX,
    PUBLIC_SCOPE,
    access_meta_problems,
    derive_document_id,
    normalise_tags,
)
from components.core.errors import SourceboundError
from components.core.url_canonicalizer import DomainAllowlist, canonicalize_url, parse_domain_list, url_host
from components.services.pipeline_loader import PipelineConfigError, resolve_references

SOURCE_TYPES = ("git", "web")
DEFAULT_INCLUDE = ("**/*",)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_ACCESS_FIELDS = frozenset({"name", "type", "tenant_id", "tags", "scope", "user_id", "project_id"})
_GIT_FIELDS = frozenset({"url", "branch", "include", "exclude", "webhook_secret", "web_url"})
_WEB_FIELDS = frozenset(
    {
        "start_urls", "allowed_domains", "max_depth", "max_pages", "max_page_bytes", "requests_per_second",
        "concurrency", "timeout_s", "user_agent",
    }
)  # fmt: skip
_FIELDS = _ACCESS_FIELDS | _GIT_FIELDS | _WEB_FIELDS
DEFAULT_USER_AGENT = "sourcebound-crawler/1.0"


class SourceConfigError(SourceboundError, ValueError):
    """The sources file cannot be used; the message names every problem and the file."""


class SyncError(SourceboundError, RuntimeError):
    """A sync did not complete; what it recorded as indexed stays recorded, so the next sync repeats the rest."""


def glob_regex(pattern: str) -> re.Pattern:
    """
    A path glob as a regex over ``/``-separated repository paths: ``**`` spans folders (``**/`` also
    none), ``*`` and ``?`` stay within one folder.
    """
    out, index = [], 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
        elif pattern.startswith("**", index):
            out.append(".*")
            index += 2
        elif pattern[index] == "*":
            out.append("[^/]*")
            index += 1
        elif pattern[index] == "?":
            out.append("[^/]")
            index += 1
        else:
            out.append(re.escape(pattern[index]))
            index += 1
    return re.compile("^" + "".join(out) + "$")


@dataclass(frozen=True)
class CrawlSettings:
    """
    What a ``web`` source crawls and how politely (docs/sources.md, "Web sources").

    :param start_urls: Where the crawl starts (depth 0).
    :param allowed_domains: Hosts (and their subdomains) or ``host:port`` entries links and redirects may lead to.
    :param max_depth: Links followed from a start URL; deeper pages are not requested.
    :param max_pages: Pages requested per crawl (robots.txt not counted).
    :param max_page_bytes: A response body larger than this is abandoned while it streams.
    :param requests_per_second: Requests started per second and host (a ``Crawl-delay`` slows it further).
    :param concurrency: Requests in flight per host.
    :param timeout_s: Connect and read timeout; a whole page (all its redirects) gets four times this.
    :param user_agent: The ``User-Agent`` header; its first word is the name ``robots.txt`` rules address.
    """

    start_urls: tuple[str, ...]
    allowed_domains: tuple[str, ...]
    max_depth: int = 3
    max_pages: int = 500
    max_page_bytes: int = 10 * 1024 * 1024
    requests_per_second: float = 5.0
    concurrency: int = 2
    timeout_s: float = 10.0
    user_agent: str = DEFAULT_USER_AGENT

    @property
    def allowlist(self) -> DomainAllowlist:
        return DomainAllowlist(self.allowed_domains)

    @property
    def robots_name(self) -> str:
        """The product token ``robots.txt`` groups are matched against (``sourcebound-crawler``)."""
        return self.user_agent.split("/")[0].split()[0]


@dataclass(frozen=True)
class SourceConfig:
    """One declared source; see the module docstring for the fields."""

    name: str
    type: str
    url: str
    tenant_id: str
    tags: tuple[str, ...]
    branch: str = "main"
    include: tuple[str, ...] = DEFAULT_INCLUDE
    exclude: tuple[str, ...] = ()
    scope: str = DEFAULT_SCOPE
    user_id: str | None = None
    project_id: str | None = None
    webhook_secret: str | None = field(default=None, repr=False)
    web_url: str | None = None
    crawl: CrawlSettings | None = None

    def matches(self, path: str) -> bool:
        """Whether a repository path passes the include and exclude globs."""
        return any(glob_regex(glob).match(path) for glob in self.include) and not any(
            glob_regex(glob).match(path) for glob in self.exclude
        )

    def document_id(self, path: str) -> str:
        """
        The stable ``document_id`` of a file (its path) or a page (its canonical URL): derived from the source's
        name and that, so URL variants of one page are one document (A5).
        """
        document_id = derive_document_id(self.tenant_id, f"source:{self.name}:{path}")
        return PUBLIC_ID_PREFIX + document_id if self.scope == PUBLIC_SCOPE else document_id

    def access_meta(self) -> dict[str, Any]:
        """The access fields every document of this source gets."""
        meta: dict[str, Any] = {"tenant_id": self.tenant_id, "tags": list(self.tags), "scope": self.scope}
        if self.user_id:
            meta["user_id"] = self.user_id
        if self.project_id:
            meta["project_id"] = self.project_id
        return meta


def _string_list(value: Any, label: str, problems: list[str], default: tuple[str, ...]) -> tuple[str, ...]:
    if value is None:
        return default
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        problems.append(f"{label} must be a list of non-empty strings")
        return default
    return tuple(item.strip() for item in value)


def _number(raw: Mapping, key: str, default, kind: type, low, high, found: list[str]):
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else int):
        found.append(f"{key} must be a{'' if kind is float else 'n'} {'number' if kind is float else 'integer'}")
        return default
    if not low <= value <= high:
        found.append(f"{key} must be between {low} and {high}, got {value}")
        return default
    return kind(value)


def parse_crawl(raw: Mapping, found: list[str]) -> CrawlSettings | None:
    """The crawl fields of a ``web`` source, or ``None`` with their problems appended to ``found``."""
    domains = _string_list(raw.get("allowed_domains"), "allowed_domains", found, ())
    domains = tuple(parse_domain_list(domains))
    if not domains:
        found.append("allowed_domains is required: the hosts (or host:port) the crawl may follow links to")
    starts: list[str] = []
    for url in _string_list(raw.get("start_urls"), "start_urls", found, ()):
        problem = link_problem(url, DomainAllowlist(domains)) if domains else None
        if problem:
            found.append(f"start URL {url}: {problem}")
        else:
            starts.append(url)
    if not raw.get("start_urls"):
        found.append("start_urls is required: the http(s) pages the crawl starts from")
    agent = raw.get("user_agent", DEFAULT_USER_AGENT)
    if not isinstance(agent, str) or not agent.strip() or any(ord(char) < 32 for char in agent):
        found.append("user_agent must be a non-empty single-line string")
        agent = DEFAULT_USER_AGENT
    settings = CrawlSettings(
        start_urls=tuple(starts),
        allowed_domains=domains,
        max_depth=_number(raw, "max_depth", 3, int, 0, 100, found),
        max_pages=_number(raw, "max_pages", 500, int, 1, 1_000_000, found),
        max_page_bytes=_number(raw, "max_page_bytes", 10 * 1024 * 1024, int, 1024, 1024**3, found),
        requests_per_second=_number(raw, "requests_per_second", 5.0, float, 0.01, 10_000, found),
        concurrency=_number(raw, "concurrency", 2, int, 1, 64, found),
        timeout_s=_number(raw, "timeout_s", 10.0, float, 0.1, 600, found),
        user_agent=agent.strip(),
    )
    return settings


def parse_source(raw: Any, position: int, problems: list[str]) -> SourceConfig | None:
    """One entry of ``sources:`` as a :class:`SourceConfig`, or ``None`` with its problems appended."""
    if not isinstance(raw, Mapping):
        problems.append(f"source #{position + 1} must be a mapping with name, type, tenant_id and tags")
        return None
    label = f"source {raw.get('name')!r}" if raw.get("name") else f"source #{position + 1}"
    found: list[str] = []
    kind = raw.get("type", "git")
    if kind not in SOURCE_TYPES:
        found.append(f"type {kind!r} is not supported; use one of {', '.join(SOURCE_TYPES)}")
    own = _ACCESS_FIELDS | (_WEB_FIELDS if kind == "web" else _GIT_FIELDS)
    unknown = sorted(set(raw) - _FIELDS)
    if unknown:
        found.append(f"unknown fields {', '.join(unknown)} (known: {', '.join(sorted(own))})")
    foreign = sorted((set(raw) & _FIELDS) - own) if kind in SOURCE_TYPES else []
    if foreign:
        found.append(f"fields {', '.join(foreign)} do not apply to a {kind} source")
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        found.append("name must be 1-64 letters, digits, '.', '_' or '-' (it appears in webhook URLs)")
    found.extend(
        access_meta_problems({key: raw.get(key) for key in ("tenant_id", "tags", "scope", "user_id", "project_id")})
    )
    access = {
        "name": name, "type": kind, "tenant_id": raw.get("tenant_id"),
        "tags": tuple(normalise_tags(raw.get("tags")) or ()), "scope": raw.get("scope") or DEFAULT_SCOPE,
        "user_id": raw.get("user_id"), "project_id": raw.get("project_id"),
    }  # fmt: skip
    if kind == "web":
        crawl = parse_crawl(raw, found)
        if found:
            problems.extend(f"{label}: {problem}" for problem in found)
            return None
        first = canonicalize_url(crawl.start_urls[0])
        return SourceConfig(url=first, branch="", include=(), crawl=crawl, **access)
    url = raw.get("url")
    if not isinstance(url, str) or not url.strip():
        found.append("url is required (the clone URL)")
    branch = raw.get("branch", "main")
    if not isinstance(branch, str) or not branch.strip() or branch.startswith("-") or ".." in branch:
        found.append("branch must be a branch name")
    secret = raw.get("webhook_secret")
    if secret is not None and (not isinstance(secret, str) or not secret):
        found.append("webhook_secret must be a non-empty string (or left out: then the GitHub webhook is refused)")
    web_url = raw.get("web_url")
    if web_url is not None and (not isinstance(web_url, str) or not web_url.startswith(("http://", "https://"))):
        found.append("web_url must be an http(s) URL")
    include = _string_list(raw.get("include"), "include", found, DEFAULT_INCLUDE)
    exclude = _string_list(raw.get("exclude"), "exclude", found, ())
    if found:
        problems.extend(f"{label}: {problem}" for problem in found)
        return None
    return SourceConfig(
        url=url.strip(),
        branch=branch.strip(),
        include=include,
        exclude=exclude,
        webhook_secret=secret,
        web_url=web_url.rstrip("/") if web_url else None,
        **access,
    )


def parse_sources(data: Any, origin: str = "the sources file") -> dict[str, SourceConfig]:
    """
    Check a parsed sources document (``{"sources": [...]}``).

    :returns: The sources by name, in file order.
    :raises SourceConfigError: Naming every problem.
    """
    problems: list[str] = []
    if not isinstance(data, Mapping) or not isinstance(data.get("sources"), list):
        raise SourceConfigError(f"{origin} must hold a 'sources:' list")
    sources: dict[str, SourceConfig] = {}
    for position, raw in enumerate(data["sources"]):
        source = parse_source(raw, position, problems)
        if source is None:
            continue
        if source.name in sources:
            problems.append(f"source {source.name!r} is declared twice")
            continue
        sources[source.name] = source
    if problems:
        raise SourceConfigError(f"{origin} has problems:\n" + "\n".join(f"- {problem}" for problem in problems))
    return sources


def load_sources(path: str | Path, env: Mapping[str, str] | None = None) -> dict[str, SourceConfig]:
    """
    Read, env-substitute and check a sources YAML file.

    :param path: The file (``SOURCEBOUND_SOURCES``).
    :param env: Variables for ``${...}`` references; defaults to ``os.environ``.
    :raises SourceConfigError: If the file is missing, not YAML, references an unset variable or has bad entries.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise SourceConfigError(f"Cannot read the sources file {path} (SOURCEBOUND_SOURCES): {error}") from error
    try:
        data = yaml.safe_load(resolve_references(text, env))
    except PipelineConfigError as error:
        raise SourceConfigError(f"{path}: {str(error).replace('Pipeline YAML', 'The sources file')}") from error
    except yaml.YAMLError as error:
        raise SourceConfigError(f"{path} is not valid YAML: {error}") from error
    return parse_sources(data, str(path))


CRAWL_SOURCE_NAME = "crawl"


def crawl_source(env: Mapping[str, str], start_urls: list[str] | None = None) -> SourceConfig:
    """
    The web source ``make crawl`` crawls: ``RAG_CRAWL_START_URLS`` (comma-separated) inside ``RAG_ALLOWLIST_DOMAINS``
    (empty: the start URLs' own hosts), at most ``RAG_MAX_PAGES`` pages (500) and ``RAG_CRAWL_MAX_DEPTH`` links deep
    (3), into tenant ``RAG_CRAWL_TENANT_ID`` (``default``) with tags ``RAG_CRAWL_TAGS`` (``web``); named
    :data:`CRAWL_SOURCE_NAME`. Checked like an entry of the sources file.

    :param env: The environment (``os.environ``).
    :param start_urls: Start URLs given on the command line instead of ``RAG_CRAWL_START_URLS``.
    :raises SourceConfigError: Naming the variable to fix.
    """
    starts = start_urls or [url.strip() for url in env.get("RAG_CRAWL_START_URLS", "").split(",") if url.strip()]
    if not starts:
        raise SourceConfigError("Nothing to crawl: set RAG_CRAWL_START_URLS (comma-separated URLs) or pass URLs.")
    domains = parse_domain_list(env.get("RAG_ALLOWLIST_DOMAINS", ""))
    if not domains:
        domains = sorted({_host_entry(url) for url in starts if _host_entry(url)})
    raw = {"name": CRAWL_SOURCE_NAME, "type": "web", "start_urls": starts, "allowed_domains": domains}
    problems: list[str] = []
    for key, variable, default in (("max_pages", "RAG_MAX_PAGES", "500"), ("max_depth", "RAG_CRAWL_MAX_DEPTH", "3")):
        value = env.get(variable, "").strip() or default
        if not value.isdigit():
            problems.append(f"{variable} must be a whole number, got {value!r}")
        else:
            raw[key] = int(value)
    raw["tenant_id"] = env.get("RAG_CRAWL_TENANT_ID", "").strip() or "default"
    raw["tags"] = [tag.strip() for tag in (env.get("RAG_CRAWL_TAGS", "").strip() or "web").split(",") if tag.strip()]
    source = None if problems else parse_source(raw, 0, problems)
    if source is None:
        raise SourceConfigError(
            "The crawl settings (RAG_CRAWL_START_URLS, RAG_ALLOWLIST_DOMAINS, RAG_MAX_PAGES, RAG_CRAWL_MAX_DEPTH, "
            "RAG_CRAWL_TENANT_ID, RAG_CRAWL_TAGS) have problems:\n" + "\n".join(f"- {problem}" for problem in problems)
        )
    return source


def _host_entry(url: str) -> str | None:
    """An allowlist entry for a URL's own host: ``host`` on the default port, else ``host:port``."""
    canonical = canonicalize_url(url)
    if url_host(canonical) is None:
        return None
    return canonical.split("//", 1)[1].split("/", 1)[0].rsplit("@", 1)[-1]
