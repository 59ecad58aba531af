"""
A local test double of the Ollama HTTP API, and the fixture that picks a real
Ollama when one answers.

``OllamaDouble`` is a real HTTP server (threaded ``http.server`` on 127.0.0.1, a
free port) that speaks the parts of Ollama's API the service uses:

* ``GET /api/tags`` (the pulled models), ``GET /api/version``, ``GET /``;
* ``POST /api/chat``, streaming (NDJSON, Ollama's default) or not;
* ``POST /api/generate``, streaming or not;
* a chat or generate request for a model that is not pulled gets Ollama's 404
  ``model "x" not found, try pulling it first``.

Scriptable per test: ``reply`` (a string, or a function of the request payload),
``rating`` (the reply to the confidence prompt of docs/contract.md, "Prompts"), ``category`` (the
reply to the classifier prompt), ``delay`` (seconds before answering),
``models`` (what ``/api/tags`` lists) and ``go_down()`` (close the port: connection
refused). Every request is recorded in ``requests``.

Without a scripted ``reply`` it behaves like a grounded model: it answers with the
first sentence of the first context chunk of the system prompt followed by that
chunk's ``[SourceId: ...]``, or with the "I don't have enough
information ..." sentence (docs/contract.md, "Answers") when the prompt has no chunk.

The ``ollama_target`` fixture yields an :class:`OllamaTarget`: the real Ollama at
``OLLAMA_BASE_URL`` when it answers ``/api/tags`` within a second, else a started
double. Tests that script the double call ``target.require_double()`` (skipped on a
real server); assertions that only a real model can satisfy call
``target.require_real()`` (skipped on the double).
"""

import json
import os
import re
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

INSUFFICIENT = "I don't have enough information in the available documents to answer this question."
_CHUNK_RE = re.compile(r"\[SourceId:\s*([a-zA-Z0-9-]+:\d+)\]\n\[Document:[^\n]*\]\n[^\n]*\n---\n(.*?)\n---", re.DOTALL)


def grounded_reply(payload: dict[str, Any]) -> str:
    """What a well-behaved model answers: the first context sentence, cited."""
    system = "\n".join(m.get("content", "") for m in payload.get("messages", []) if m.get("role") == "system")
    match = _CHUNK_RE.search(system)
    if not match:
        return INSUFFICIENT
    source_id, text = match.group(1), " ".join(match.group(2).split())
    sentence = re.split(r"(?<=[.!?])\s+", text, maxsplit=1)[0]
    return f"{sentence} [SourceId: {source_id}]"


class OllamaDouble:
    """
    Usage:
    ```python
    with OllamaDouble(models=["llama3.2:latest"]) as ollama:
        ollama.reply = "Employees get 27 days. [SourceId: acme-hr-handbook:2]"
        ollama.delay = 0.0
        answerer = OllamaAnswerer(url=ollama.url)
    ```
    """

    def __init__(
        self,
        models: list[str] | tuple[str, ...] = ("llama3.2:latest", "qwen3:8b"),
        reply: str | Callable[[dict[str, Any]], str] | None = None,
        rating: str = "90",
        category: str = "FACTUAL",
        delay: float = 0.0,
    ) -> None:
        self.models = list(models)
        self.reply = reply
        self.rating = rating
        self.category = category
        self.delay = delay
        self.requests: list[dict[str, Any]] = []
        self._connections: set[socket.socket] = set()  # open client connections, closed by go_down()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._port: int | None = None

    # ------------------------------------------------------------------ lifecycle

    @property
    def url(self) -> str:
        if self._port is None:
            raise RuntimeError("The Ollama double is not started.")
        return f"http://127.0.0.1:{self._port}"

    def start(self) -> "OllamaDouble":
        double = self

        class Handler(_Handler):
            owner = double

        # Port 0 picks a free port; a restart after go_down() reuses the same one.
        self._server = ThreadingHTTPServer(("127.0.0.1", self._port or 0), Handler)
        self._server.daemon_threads = True
        self._port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name="ollama-double", daemon=True
        )
        self._thread.start()
        return self

    def go_down(self) -> None:
        """Stop listening and drop open keep-alive connections: every request now gets 'connection refused'."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        for connection in list(self._connections):
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def stop(self) -> None:
        self.go_down()

    def __enter__(self) -> "OllamaDouble":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ------------------------------------------------------------------ behaviour

    def is_pulled(self, model: str) -> bool:
        return model in self.models or f"{model}:latest" in self.models

    def text_for(self, payload: dict[str, Any]) -> str:
        prompt = payload.get("prompt") or "\n".join(m.get("content", "") for m in payload.get("messages", []))
        if "Rate the support level" in prompt:
            return self.rating
        if "Classify this query" in prompt:
            return self.category
        if callable(self.reply):
            return self.reply(payload)
        if self.reply is not None:
            return self.reply
        return grounded_reply(payload)

    def chat_requests(self, kind: str = "answer") -> list[dict[str, Any]]:
        """Recorded /api/chat payloads of one kind: ``answer``, ``rating`` or ``classify``."""

        def kind_of(payload: dict[str, Any]) -> str:
            text = "\n".join(m.get("content", "") for m in payload.get("messages", []))
            return (
                "rating"
                if "Rate the support level" in text
                else "classify"
                if "Classify this query" in text
                else "answer"
            )

        return [r["json"] for r in self.requests if r["path"] == "/api/chat" and kind_of(r["json"]) == kind]


class _Handler(BaseHTTPRequestHandler):
    owner: OllamaDouble
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes; without TCP_NODELAY, Nagle + delayed ACK add ~40 ms.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.owner._connections.add(self.connection)

    def finish(self) -> None:
        self.owner._connections.discard(self.connection)
        try:
            super().finish()
        except OSError:  # go_down() shut the connection
            pass

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def _send_json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self.owner.requests.append({"method": "GET", "path": self.path, "json": None})
        if self.path == "/api/tags":
            models = [
                {
                    "name": name,
                    "model": name,
                    "modified_at": "2026-01-28T00:00:00Z",
                    "size": 2019393189,
                    "digest": "0" * 64,
                    "details": {
                        "format": "gguf",
                        "family": "llama",
                        "parameter_size": "3.2B",
                        "quantization_level": "Q4_K_M",
                    },
                }
                for name in self.owner.models
            ]
            self._send_json(200, {"models": models})
        elif self.path == "/api/version":
            self._send_json(200, {"version": "0.12.0-double"})
        elif self.path == "/":
            body = b"Ollama is running"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self._send_json(404, {"error": "not found"})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            payload = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            self._send_json(400, {"error": "invalid JSON"})
            return
        self.owner.requests.append({"method": "POST", "path": self.path, "json": payload})
        if self.path not in ("/api/chat", "/api/generate"):
            self._send_json(404, {"error": "not found"})
            return
        model = payload.get("model", "")
        if not self.owner.is_pulled(model):
            self._send_json(404, {"error": f'model "{model}" not found, try pulling it first'})
            return
        if self.owner.delay:
            time.sleep(self.owner.delay)
        text = self.owner.text_for(payload)
        created = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        stats = {
            "total_duration": 1_000_000,
            "load_duration": 1000,
            "prompt_eval_count": 10,
            "prompt_eval_duration": 1000,
            "eval_count": max(1, len(text.split())),
            "eval_duration": 1000,
        }
        is_chat = self.path == "/api/chat"

        def body(piece: str, done: bool) -> dict[str, Any]:
            base: dict[str, Any] = {"model": model, "created_at": created, "done": done}
            if is_chat:
                base["message"] = {"role": "assistant", "content": piece}
            else:
                base["response"] = piece
            if done:
                base.update(done_reason="stop", **stats)
            return base

        if payload.get("stream", True) is False:
            self._send_json(200, body(text, True))
            return
        # Streaming: one NDJSON object per word, then the closing `done` object (chunked transfer).
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        pieces = re.findall(r"\S+\s*", text) or [""]
        for piece in pieces:
            self._chunk(json.dumps(body(piece, False)) + "\n")
        self._chunk(json.dumps(body("", True)) + "\n")
        self.wfile.write(b"0\r\n\r\n")

    def _chunk(self, text: str) -> None:
        data = text.encode()
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")


# ---------------------------------------------------------------------- real-or-double fixture


def ollama_server_env(base_url: str, **overrides: str) -> dict[str, str]:
    """Environment of an API server on the Ollama backend (query_ollama.yml, llama3.2, no sample corpus)."""
    return {
        "SOURCEBOUND_RAG_PIPELINE": "query_ollama",
        "SOURCEBOUND_BOOTSTRAP_CORPUS": "false",
        "OLLAMA_BASE_URL": base_url,
        "CHAT_MODEL": "llama3.2",
        **overrides,
    }


def real_ollama_url() -> str | None:
    """``OLLAMA_BASE_URL`` when a real Ollama answers ``/api/tags`` there within a second."""
    url = os.environ.get("OLLAMA_BASE_URL")
    if not url:
        return None
    try:
        response = httpx.get(f"{url.rstrip('/')}/api/tags", timeout=1.0)
        response.raise_for_status()
        response.json()
    except (httpx.HTTPError, ValueError):
        return None
    return url.rstrip("/")


@dataclass
class OllamaTarget:
    """Where the Ollama tests talk to: a real server or the double."""

    url: str
    model: str
    double: OllamaDouble | None

    @property
    def is_real(self) -> bool:
        return self.double is None

    def require_double(self) -> OllamaDouble:
        """The double, or skip: scripted replies, delays and outages need it."""
        if self.double is None:
            pytest.skip("scripted Ollama behaviour needs the test double (a real Ollama answers here)")
        return self.double

    def require_real(self) -> None:
        """Skip unless a real Ollama answers (assertions only a real model can satisfy)."""
        if self.double is not None:
            pytest.skip("needs a real Ollama at OLLAMA_BASE_URL")


def _real_model(url: str) -> str:
    names = [m.get("name") for m in httpx.get(f"{url}/api/tags", timeout=2.0).json().get("models", [])]
    preferred = os.environ.get("CHAT_MODEL", "llama3.2")
    for candidate in (preferred, "llama3.2", "qwen3:8b", "deepseek-r1:32b"):
        if candidate in names or f"{candidate}:latest" in names:
            return candidate
    pytest.skip(f"the real Ollama at {url} has none of the allowlisted models pulled ({names})")


@pytest.fixture(scope="module")
def ollama():
    """One Ollama double per test module, serving llama3.2 (the servers of a module are pointed at it)."""
    with OllamaDouble(models=["llama3.2:latest"]) as double:
        yield double


@pytest.fixture
def ollama_target():
    """A real Ollama when ``OLLAMA_BASE_URL`` answers, else a started :class:`OllamaDouble`."""
    url = real_ollama_url()
    if url is not None:
        yield OllamaTarget(url=url, model=_real_model(url), double=None)
        return
    with OllamaDouble() as double:
        yield OllamaTarget(url=double.url, model="llama3.2", double=double)
