"""
A small website on 127.0.0.1 for the crawler's tests: a real HTTP server (stdlib ``ThreadingHTTPServer``) whose
pages a test defines, answering conditional requests from each page's ``ETag`` and ``Last-Modified``, and
counting what it sent (``requests``, ``full`` responses with a body, ``not_modified`` answers) per path.

A page is a :class:`Page`: a body and type, or a status with headers (redirects), or a behaviour: ``delay_s``
(answers late), ``endless`` (a body that never ends, one chunk every few milliseconds), ``drip_s`` (sends its
body a byte at a time). ``/robots.txt`` is a page like any other (absent: 404).

Usage:

```python
with WebSite({"/": Page.html("<a href='/a'>A</a>", title="Home"), "/a": Page.html("Text")}) as site:
    site.url("/")                      # 'http://127.0.0.1:PORT/'
    site.full["/a"]                    # bodies sent for /a
```
"""

import hashlib
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Page:
    """One path of the site."""

    body: bytes = b""
    content_type: str = "text/html; charset=utf-8"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    validators: bool = True  # send ETag and Last-Modified, answer 304 to a matching conditional request
    delay_s: float = 0.0
    endless: bool = False
    drip_s: float = 0.0
    modified: float = 1_700_000_000.0

    @classmethod
    def html(cls, text: str, title: str | None = None, links: list[str] = (), **kwargs) -> "Page":
        """An HTML page with a title, a paragraph of ``text`` and links."""
        anchors = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
        head = f"<title>{title}</title>" if title else ""
        body = f"<html><head>{head}</head><body><h1>{title or ''}</h1><p>{text}</p><ul>{anchors}</ul></body></html>"
        return cls(body=body.encode("utf-8"), **kwargs)

    @classmethod
    def redirect(cls, location: str, status: int = 301) -> "Page":
        return cls(status=status, headers={"Location": location}, validators=False)

    @property
    def etag(self) -> str:
        return '"' + hashlib.sha256(self.body).hexdigest()[:16] + '"'


class WebSite:
    """The server (see the module docstring); a context manager that starts and stops it."""

    def __init__(self, pages: dict[str, Page] | None = None) -> None:
        self.pages: dict[str, Page] = dict(pages or {})
        self.requests: Counter = Counter()
        self.full: Counter = Counter()
        self.not_modified: Counter = Counter()
        self.user_agents: set[str] = set()
        self.started: list[float] = []  # when each page request arrived (robots.txt not counted)
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                site.answer(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def host(self) -> str:
        """The allowlist entry of this site: ``127.0.0.1:PORT``."""
        return f"127.0.0.1:{self.server.server_address[1]}"

    def url(self, path: str) -> str:
        return self.origin + path

    def __enter__(self) -> "WebSite":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()

    def reset_counts(self) -> None:
        with self.lock:
            self.requests.clear()
            self.full.clear()
            self.not_modified.clear()
            self.started.clear()
            self.max_in_flight = 0

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        path = handler.path
        with self.lock:
            self.requests[path] += 1
            self.user_agents.add(handler.headers.get("User-Agent", ""))
            if path != "/robots.txt":
                self.started.append(time.monotonic())
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            self._answer(handler, path)
        finally:
            with self.lock:
                self.in_flight -= 1

    def _answer(self, handler: BaseHTTPRequestHandler, path: str) -> None:
        page = self.pages.get(path)
        if page is None:
            self._send(handler, 404, {"Content-Type": "text/plain"}, b"not found")
            return
        if page.delay_s:
            self.stopping.wait(page.delay_s)
        headers = {"Content-Type": page.content_type, **page.headers}
        if page.status == 200 and page.validators:
            headers["ETag"] = page.etag
            headers["Last-Modified"] = formatdate(page.modified, usegmt=True)
            if handler.headers.get("If-None-Match") == page.etag:
                with self.lock:
                    self.not_modified[path] += 1
                self._send(handler, 304, {"ETag": page.etag}, b"")
                return
        if page.endless or page.drip_s:
            self._stream(handler, page, headers)
            return
        if page.status == 200:
            with self.lock:
                self.full[path] += 1
        self._send(handler, page.status, headers, page.body)

    def _send(self, handler, status: int, headers: dict[str, str], body: bytes) -> None:
        try:
            handler.send_response(status)
            for name, value in headers.items():
                handler.send_header(name, value)
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
        except OSError:
            pass  # the crawler hung up

    def _stream(self, handler, page: Page, headers: dict[str, str]) -> None:
        """A body with no length: endless chunks, or the page's body a byte at a time."""
        try:
            handler.send_response(200)
            for name, value in headers.items():
                handler.send_header(name, value)
            handler.send_header("Connection", "close")
            handler.end_headers()
            handler.close_connection = True
            if page.endless:
                chunk = b"<p>" + b"more text " * 800 + b"</p>\n"
                while not self.stopping.is_set():
                    handler.wfile.write(chunk)
                    time.sleep(0.002)
            else:
                for byte in page.body:
                    if self.stopping.is_set():
                        return
                    handler.wfile.write(bytes([byte]))
                    handler.wfile.flush()
                    time.sleep(page.drip_s)
        except OSError:
            pass  # the crawler hung up, as it should
