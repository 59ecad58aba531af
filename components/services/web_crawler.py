"""
A polite crawler for ``web`` sources (docs/sources.md, "Web sources"; docs/contract.md, "Sources").

From the source's start URLs it follows links breadth-first, within ``allowed_domains``, ``max_depth`` and
``max_pages``, and reports every URL it meets as one :class:`CrawlEvent`:

* ``page``: a 200 whose ``Content-Type`` the indexing pipeline converts (HTML, PDF, Office, CSV, Markdown, text),
  with its bytes (transcoded to UTF-8 when the server names another charset), ``ETag``, ``Last-Modified`` and, for
  HTML, its links;
* ``not_modified``: a 304 to a conditional request (``If-None-Match`` / ``If-Modified-Since`` from the last
  crawl); its links are the ones the last crawl recorded, so the crawl goes on past unchanged pages;
* ``refused``: a URL that is not (or no longer) a page of the source: another scheme (``file://``, ``ftp:``),
  a host outside ``allowed_domains``, a private address outside it, ``robots.txt`` disallows it, 404/410 and other
  4xx answers, a redirect out of the domains, a redirect loop, too many redirects, a redirect to another page
  (that page is crawled on its own), a type the pipeline does not read, a body over ``max_page_bytes``, a page
  asking ``noindex``. An indexed page that is refused leaves the index;
* ``failed``: a failure that may pass (a timeout, a connection error, 429 and 5xx answers): an indexed page stays;
* ``left_out``: deeper than ``max_depth`` or past ``max_pages``: not reached this time;
* ``done``: the last event, with the number of pages requested.

Every event carries its canonical URL (``components.core.url_canonicalizer``, A5): URLs are canonicalised before
they are queued, so the variants of one page are requested once. The request itself goes to the URL as written
(servers redirect ``/docs`` to ``/docs/``; relative links resolve against the real URL).

Politeness: one ``User-Agent`` naming the crawler; ``robots.txt`` per origin (RFC 9309: a 4xx means no rules, a
5xx or no answer means nothing may be fetched; an integer ``Crawl-delay`` slows the host further); per host at
most ``concurrency`` requests in flight and ``requests_per_second`` started; connect/read timeouts of
``timeout_s`` and a deadline of four times that for a whole page with its redirects, so a slow or endless page is
abandoned; bodies are streamed and abandoned past ``max_page_bytes``. Redirects are followed by hand (at most
:data:`MAX_REDIRECTS`), each target checked like a link. A host that is not itself an entry of
``allowed_domains`` (a subdomain of one) must not resolve to a private address.

The crawl runs on its own event loop in a thread; :meth:`WebCrawler.crawl` yields its events to the caller
(who indexes them) through a small queue, so fetching goes on while the caller indexes, and stops when the
caller stops reading.

Usage:

```python
from components.services.source_config import CrawlSettings
from components.services.web_crawler import WebCrawler

crawler = WebCrawler(CrawlSettings(start_urls=("https://docs.example.com/",), allowed_domains=("docs.example.com",)))
for event in crawler.crawl(known={}):
    print(event.outcome, event.url, event.reason)
```
"""

import asyncio
import logging
import queue
import socket
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from urllib.parse import urldefrag, urljoin, urlsplit
from urllib.robotparser import RobotFileParser

import httpx

from components.core.crawl_rules import (
    is_private_address,
    link_problem,
    read_page_links,
    robots_wishes,
    source_type_for_content,
)
from components.core.errors import SourceboundError
from components.core.url_canonicalizer import canonicalize_url, url_host, url_port
from components.services.source_config import CrawlSettings
from components.stores.sync_state import WebPage

logger = logging.getLogger(__name__)

MAX_REDIRECTS = 5
ROBOTS_MAX_BYTES = 512 * 1024
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
# Answers that may pass: the page is kept in the index and requested again next time.
TRANSIENT_STATUSES = frozenset({408, 425, 429})
# Text types the indexing pipeline reads as UTF-8: a page in another charset is transcoded first.
TEXT_TYPES = frozenset({"html", "csv", "md", "txt"})
_QUEUE_EVENTS = 16
# An unused body up to this size is read so its keep-alive connection is reused; a longer one closes it.
DRAIN_MAX_BYTES = 64 * 1024


class CrawlError(SourceboundError, RuntimeError):
    """The crawl itself broke (not a page of it); nothing after the pages already reported was seen."""


@dataclass
class CrawlEvent:
    """One URL the crawl met (see the module docstring for ``outcome``)."""

    outcome: str
    url: str
    depth: int = 0
    reason: str | None = None
    status: int | None = None
    source_type: str | None = None
    data: bytes = field(default=b"", repr=False)
    etag: str | None = None
    last_modified: str | None = None
    links: tuple[str, ...] = field(default=(), repr=False)
    fetched_url: str | None = None
    requested: int = 0


@dataclass
class _Item:
    url: str  # as found (absolute, no fragment)
    key: str  # canonical
    depth: int


class _Refused(Exception):
    """Why a page is not taken; ``key``: the page it is about, when a redirect moved the crawl to another URL."""

    def __init__(self, reason: str, status: int | None = None, transient: bool = False, key: str | None = None):
        super().__init__(reason)
        self.reason, self.status, self.transient, self.key = reason, status, transient, key


class _HostGate:
    """At most ``concurrency`` requests in flight to one host, started at least ``interval`` seconds apart."""

    def __init__(self, concurrency: int, interval: float) -> None:
        self.semaphore = asyncio.Semaphore(concurrency)
        self.interval = interval
        self.next_start = 0.0

    async def __aenter__(self) -> None:
        await self.semaphore.acquire()
        loop = asyncio.get_running_loop()
        now = loop.time()
        start = max(now, self.next_start)
        self.next_start = start + self.interval
        if start > now:
            await asyncio.sleep(start - now)

    async def __aexit__(self, *exc) -> None:
        self.semaphore.release()


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


async def _drain(response: httpx.Response) -> None:
    """Read a short body the crawl does not use (304, redirects, errors), so the connection is kept for the next."""
    length = response.headers.get("content-length", "")
    if length.isdigit() and int(length) <= DRAIN_MAX_BYTES:
        await response.aread()


def _charset(content_type: str) -> str | None:
    for parameter in content_type.split(";")[1:]:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset" and value.strip():
            return value.strip().strip("\"'").lower()
    return None


class WebCrawler:
    """
    Crawls one web source (see the module docstring).

    :param settings: The source's crawl settings.
    :param transport: An ``httpx`` transport to use instead of the network (tests of failure modes).
    """

    def __init__(self, settings: CrawlSettings, transport: httpx.AsyncBaseTransport | None = None) -> None:
        if not settings.start_urls or not settings.allowed_domains:
            raise ValueError("a crawl needs start_urls and allowed_domains")
        self.settings = settings
        self.transport = transport
        self.allowlist = settings.allowlist

    # ------------------------------------------------------------------ the caller's side

    def crawl(self, known: Mapping[str, WebPage], conditional: bool = True) -> Iterator[CrawlEvent]:
        """
        Crawl the source, yielding an event per URL met and a last ``done`` event.

        :param known: The pages the last crawl recorded, by canonical URL (their validators and links).
        :param conditional: Send ``If-None-Match`` / ``If-Modified-Since`` for known pages.
        :raises CrawlError: If the crawl itself broke.
        """
        events: queue.Queue = queue.Queue(maxsize=_QUEUE_EVENTS)
        stop = threading.Event()
        run = _CrawlRun(self, dict(known), conditional, events, stop)
        thread = threading.Thread(target=run.run_in_thread, name="web-crawl", daemon=True)
        thread.start()
        try:
            while True:
                event = events.get()
                if event is None:
                    break
                if isinstance(event, BaseException):
                    raise CrawlError(f"The crawl stopped: {type(event).__name__}: {event}") from event
                yield event
        finally:
            stop.set()
            while thread.is_alive():  # unblock a crawler waiting to hand over an event
                try:
                    events.get(timeout=0.05)
                except queue.Empty:
                    pass
            thread.join()


class _CrawlRun:
    """One crawl, on its own event loop."""

    def __init__(self, crawler: WebCrawler, known: dict[str, WebPage], conditional: bool, events, stop) -> None:
        self.crawler = crawler
        self.settings = crawler.settings
        self.allowlist = crawler.allowlist
        self.known = known
        self.conditional = conditional
        self.events: queue.Queue = events
        self.stop: threading.Event = stop
        self.seen: set[str] = set()
        self.deep: set[str] = set()
        self.requested = 0
        self.gates: dict[str, _HostGate] = {}
        self.robots: dict[str, RobotFileParser] = {}
        self.robots_locks: dict[str, asyncio.Lock] = {}
        self.robots_trouble: dict[str, str] = {}
        self.addresses: dict[str, str | None] = {}

    def run_in_thread(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as error:  # handed to the caller, who raises it as a CrawlError
            self._put(error)
        self._put(None)

    def _put(self, event) -> None:
        while not self.stop.is_set():
            try:
                self.events.put(event, timeout=0.05)
                return
            except queue.Full:
                continue

    async def _emit(self, event: CrawlEvent) -> None:
        while not self.stop.is_set():
            try:
                self.events.put_nowait(event)
                return
            except queue.Full:
                await asyncio.sleep(0.005)

    # ------------------------------------------------------------------ the crawl

    async def _main(self) -> None:
        settings = self.settings
        hosts = {url_host(url) for url in settings.start_urls} | set(settings.allowed_domains)
        workers = max(1, min(32, settings.concurrency * len(hosts)))
        timeout = httpx.Timeout(settings.timeout_s)
        limits = httpx.Limits(max_connections=workers, max_keepalive_connections=workers)
        async with httpx.AsyncClient(
            timeout=timeout, limits=limits, follow_redirects=False, transport=self.crawler.transport,
            headers={"User-Agent": settings.user_agent, "Accept-Encoding": "gzip, deflate"},
        ) as client:  # fmt: skip
            self.client = client
            frontier: asyncio.Queue[_Item] = asyncio.Queue()
            self.frontier = frontier
            for url in settings.start_urls:
                await self._enqueue(urldefrag(url).url, 0)
            tasks = [asyncio.create_task(self._work()) for _ in range(workers)]
            joined = asyncio.create_task(frontier.join())
            # A worker ends only by an error of the crawler itself; otherwise the frontier empties.
            await asyncio.wait([joined, *tasks], return_when=asyncio.FIRST_COMPLETED)
            broken = [task.exception() for task in tasks if task.done() and not task.cancelled()]
            for task in [joined, *tasks]:
                task.cancel()
            await asyncio.gather(joined, *tasks, return_exceptions=True)
            if any(broken):
                raise next(error for error in broken if error)
        await self._emit(CrawlEvent("done", "", requested=self.requested, reason=f"{self.requested} page(s) requested"))

    async def _work(self) -> None:
        while True:
            item = await self.frontier.get()
            try:
                if not self.stop.is_set():
                    await self._visit(item)
            except Exception as error:  # one page's defect (a URL httpx cannot send, ...) never ends the crawl
                logger.warning("Crawling %s failed: %s: %s", item.url, type(error).__name__, error)
                await self._emit(CrawlEvent("refused", item.key, item.depth, reason=f"{type(error).__name__}: {error}"))
            finally:
                self.frontier.task_done()

    async def _enqueue(self, url: str, depth: int) -> None:
        key = canonicalize_url(url)
        if key in self.seen:
            return
        problem = link_problem(url, self.allowlist)
        if problem is not None:
            self.seen.add(key)
            await self._emit(CrawlEvent("refused", key, depth, reason=problem))
            return
        if depth > self.settings.max_depth:
            if key not in self.deep:  # reported once; a shorter path found later still queues it
                self.deep.add(key)
                await self._emit(
                    CrawlEvent("left_out", key, depth, reason=f"deeper than max_depth ({self.settings.max_depth})")
                )
            return
        self.seen.add(key)
        self.frontier.put_nowait(_Item(url, key, depth))

    async def _visit(self, item: _Item) -> None:
        settings = self.settings
        try:
            await self._check_allowed(item.url)
        except _Refused as refused:
            outcome = "failed" if refused.transient else "refused"
            await self._emit(CrawlEvent(outcome, item.key, item.depth, reason=refused.reason))
            return
        if self.requested >= settings.max_pages:
            await self._emit(
                CrawlEvent("left_out", item.key, item.depth, reason=f"past max_pages ({settings.max_pages})")
            )
            return
        self.requested += 1
        deadline = settings.timeout_s * 4
        key = item.key  # the page asked for; a redirect to another page moves item.key on
        try:
            async with asyncio.timeout(deadline):
                await self._fetch(item, deadline)
        except TimeoutError:
            reason = f"no complete answer within {deadline:g} s (timed out)"
            await self._emit(CrawlEvent("failed", item.key, item.depth, reason=reason))
        except _Refused as refused:
            outcome = "failed" if refused.transient else "refused"
            await self._emit(
                CrawlEvent(outcome, refused.key or key, item.depth, reason=refused.reason, status=refused.status)
            )

    async def _fetch(self, item: _Item, deadline: float) -> None:
        url, key = item.url, item.key
        chain = [url]
        for _hop in range(MAX_REDIRECTS + 1):
            if len(chain) > 1:
                await self._check_allowed(url, key)
            headers = {}
            page = self.known.get(key)
            if self.conditional and page is not None:
                if page.etag:
                    headers["If-None-Match"] = page.etag
                if page.last_modified:
                    headers["If-Modified-Since"] = page.last_modified
            try:
                async with self._gate(url), self.client.stream("GET", url, headers=headers) as response:
                    status = response.status_code
                    if status != 200:
                        await _drain(response)
                    if status in REDIRECT_STATUSES:
                        target = self._redirect_target(response, url, key, chain)
                        target_key = canonicalize_url(target)
                        if target_key != key:
                            # The old address is no page of its own; the page it names is crawled under its URL.
                            if target_key in self.seen:
                                raise _Refused(f"redirects to {target_key}, crawled on its own", status)
                            self.seen.add(target_key)
                            await self._emit(
                                CrawlEvent("refused", key, item.depth, reason=f"redirects to {target_key}",
                                           status=status)
                            )  # fmt: skip
                            item.key = key = target_key
                        chain.append(target)
                        url = target
                        continue
                    await self._answer(response, item.depth, url, key)
                    return
            except httpx.TimeoutException as error:
                reason = f"timed out: no answer within {self.settings.timeout_s:g} s ({type(error).__name__})"
                raise _Refused(reason, transient=True, key=key) from None
            except httpx.TransportError as error:
                raise _Refused(f"{type(error).__name__}: {error or 'no answer'}", transient=True, key=key) from None
            except (httpx.HTTPError, httpx.InvalidURL) as error:  # a body that does not decode, a URL httpx refuses
                raise _Refused(f"{type(error).__name__}: {error}", key=key) from None
        raise _Refused(f"more than {MAX_REDIRECTS} redirects", key=key)

    def _redirect_target(self, response: httpx.Response, url: str, key: str, chain: list[str]) -> str:
        location = response.headers.get("location", "").strip()
        if not location:
            raise _Refused(f"HTTP {response.status_code} redirect without a Location header", response.status_code)
        try:
            target = urldefrag(urljoin(url, location)).url
        except ValueError as error:
            raise _Refused(f"redirects to an invalid URL ({error})", response.status_code) from None
        problem = link_problem(target, self.allowlist)
        if problem is not None:
            raise _Refused(f"redirects to {target}: {problem}; not followed", response.status_code, key=key)
        if target in chain:
            raise _Refused(f"redirect loop ({' -> '.join([*chain, target])})", response.status_code, key=key)
        return target

    async def _answer(self, response: httpx.Response, depth: int, url: str, key: str) -> None:
        status = response.status_code
        if status == 304:
            links = self.known[key].links if key in self.known else ()
            await self._emit(CrawlEvent("not_modified", key, depth, status=304, links=links, fetched_url=url))
            await self._follow(links, depth)
            return
        if status in (404, 410):
            raise _Refused(f"HTTP {status}: the page is gone", status, key=key)
        if status in TRANSIENT_STATUSES or status >= 500:
            raise _Refused(f"HTTP {status}", status, transient=True, key=key)
        if status != 200:
            raise _Refused(f"HTTP {status}", status, key=key)
        content_type = response.headers.get("content-type", "")
        source_type = source_type_for_content(content_type)
        if source_type is None:
            raise _Refused(
                f"Content-Type {content_type.split(';')[0].strip() or 'missing'} is not a type the indexer reads",
                200,
                key=key,
            )
        data = await self._body(response, key)
        charset = _charset(content_type)
        if source_type in TEXT_TYPES and charset and charset not in ("utf-8", "utf8"):
            try:
                data = data.decode(charset).encode("utf-8")
            except (LookupError, UnicodeDecodeError) as error:
                raise _Refused(f"the body is not {charset} text ({error})", 200, key=key) from None
        noindex, nofollow = robots_wishes(response.headers.get("x-robots-tag"))
        links: tuple[str, ...] = ()
        if source_type == "html":
            found = read_page_links(data.decode("utf-8", errors="replace"), url)
            noindex, nofollow = noindex or found.noindex, nofollow or found.nofollow
            links = () if nofollow else tuple(found.links)
        if noindex:
            await self._emit(CrawlEvent("refused", key, depth, reason="the page asks not to be indexed (noindex)"))
        else:
            await self._emit(
                CrawlEvent(
                    "page", key, depth, status=200, source_type=source_type, data=data,
                    etag=response.headers.get("etag"), last_modified=response.headers.get("last-modified"),
                    links=links, fetched_url=url,
                )
            )  # fmt: skip
        await self._follow(links, depth)

    async def _body(self, response: httpx.Response, key: str) -> bytes:
        limit = self.settings.max_page_bytes
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise _Refused(f"{declared} bytes is over max_page_bytes ({limit}); not downloaded", 200, key=key)
        chunks, size = [], 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > limit:
                raise _Refused(f"the body passed max_page_bytes ({limit}); abandoned", 200, key=key)
            chunks.append(chunk)
        return b"".join(chunks)

    async def _follow(self, links, depth: int) -> None:
        for link in links:
            await self._enqueue(link, depth + 1)

    # ------------------------------------------------------------------ politeness and safety

    def _gate(self, url: str) -> _HostGate:
        host = f"{url_host(url)}:{url_port(url)}"
        gate = self.gates.get(host)
        if gate is None:
            gate = self.gates[host] = _HostGate(self.settings.concurrency, 1.0 / self.settings.requests_per_second)
        return gate

    async def _check_allowed(self, url: str, key: str | None = None) -> None:
        """Raise :class:`_Refused` when ``robots.txt`` disallows ``url`` or its host resolves to a private address."""
        await self._check_address(url, key)
        rules = await self._robots(url)
        if not rules.can_fetch(self.settings.robots_name, url):
            reason = self.robots_trouble.get(_origin(url))
            if reason is not None:  # RFC 9309: an unreachable robots.txt means nothing may be fetched, this time
                raise _Refused(reason, transient=True, key=key)
            raise _Refused("disallowed by robots.txt", key=key)

    async def _check_address(self, url: str, key: str | None) -> None:
        host = url_host(url) or ""
        if self.allowlist.lists_exactly(url) or is_private_address(host):
            return  # listed itself (an intranet host is allowed by naming it), or an IP literal link_problem checked
        if host not in self.addresses:
            try:
                infos = await asyncio.get_running_loop().getaddrinfo(host, url_port(url), type=socket.SOCK_STREAM)
            except (OSError, UnicodeError) as error:
                raise _Refused(f"cannot resolve {host}: {error}", transient=True, key=key) from None
            private = [info[4][0] for info in infos if is_private_address(str(info[4][0]))]
            self.addresses[host] = private[0] if private else None
        if self.addresses[host] is not None:
            raise _Refused(
                f"{host} resolves to the private address {self.addresses[host]}; only a host named in "
                "allowed_domains itself may",
                key=key,
            )

    async def _robots(self, url: str) -> RobotFileParser:
        origin = _origin(url)
        lock = self.robots_locks.setdefault(origin, asyncio.Lock())
        async with lock:
            if origin not in self.robots:
                self.robots[origin] = await self._fetch_robots(origin)
                delay = self.robots[origin].crawl_delay(self.settings.robots_name)
                if delay:
                    gate = self._gate(origin + "/")
                    gate.interval = max(gate.interval, float(delay))
        return self.robots[origin]

    async def _fetch_robots(self, origin: str) -> RobotFileParser:
        rules = RobotFileParser(origin + "/robots.txt")
        url = origin + "/robots.txt"
        try:
            for _hop in range(MAX_REDIRECTS + 1):
                async with self._gate(url), self.client.stream("GET", url) as response:
                    status = response.status_code
                    if status in REDIRECT_STATUSES and response.headers.get("location"):
                        url = urljoin(url, response.headers["location"])
                        if link_problem(url, self.allowlist) is None:
                            continue
                        status = 404  # a robots.txt elsewhere is not this site's: no rules
                    if status == 200:
                        body, size = [], 0
                        async for chunk in response.aiter_bytes():
                            size += len(chunk)
                            if size > ROBOTS_MAX_BYTES:
                                break  # RFC 9309: parse at least the first 500 KiB
                            body.append(chunk)
                        rules.parse(b"".join(body).decode("utf-8", errors="replace").splitlines())
                    elif 400 <= status < 500:
                        rules.allow_all = True
                    else:
                        rules.disallow_all = True
                        self.robots_trouble[origin] = f"robots.txt answered HTTP {status}: nothing there is crawled now"
                    break
            else:
                rules.allow_all = True
        except (httpx.TransportError, TimeoutError) as error:
            rules.disallow_all = True
            self.robots_trouble[origin] = f"robots.txt did not answer ({type(error).__name__}): nothing crawled now"
        if origin in self.robots_trouble:
            logger.warning("%s of %s", self.robots_trouble[origin], origin)
        return rules
