"""
The real API server as a subprocess, for the HTTP integration tests (``tests/test_api_*.py``).

``ApiServer`` runs ``python -m hayhooks_app serve`` (what ``make serve`` runs) on a free
loopback port with its own data dir, waits until ``GET /health`` answers, and stops it with
SIGTERM (SIGKILL after a grace period). The environment is hermetic: inherited
``SOURCEBOUND_*``, ``RAG_*``, ``HAYHOOKS_*``, ``OLLAMA_*``, ``OTEL_*`` (tracing), ``CHAT_MODEL`` and
``HAYSTACK_CONTENT_TRACING_ENABLED`` variables are dropped
and only the test's own are set. The server log is kept in the data dir and its tail is shown
when the server fails to start.

Usage:

```python
with ApiServer(tmp_path / "data", env={"SOURCEBOUND_AUTH_MODE": "api_key"}) as server:
    server.client.post("/search/run", json={...})
```
"""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[2]
_DROPPED_PREFIXES = ("SOURCEBOUND_", "RAG_", "HAYHOOKS_", "OLLAMA_", "OTEL_", "HAYSTACK_CONTENT_TRACING")
START_TIMEOUT_S = float(os.environ.get("SOURCEBOUND_TEST_SERVER_START_TIMEOUT", "240"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ApiServer:
    """
    :param data_dir: ``SOURCEBOUND_DATA_DIR`` of the server (created).
    :param env: Extra environment (``SOURCEBOUND_AUTH_MODE``, ``OLLAMA_BASE_URL``, ...).
    """

    def __init__(self, data_dir: Path, env: dict[str, str] | None = None):
        self.data_dir = Path(data_dir)
        self.extra_env = dict(env or {})
        self.port: int | None = None
        self.process: subprocess.Popen | None = None
        self.client: httpx.Client | None = None
        self.log_path = self.data_dir / "server.log"
        self.startup_seconds: float | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def environment(self) -> dict[str, str]:
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(_DROPPED_PREFIXES) and key != "CHAT_MODEL"
        }
        env.update(
            HAYHOOKS_HOST="127.0.0.1",
            HAYHOOKS_PORT=str(self.port),
            SOURCEBOUND_DATA_DIR=str(self.data_dir),
            SOURCEBOUND_TORCH_THREADS="1",
            PYTHONUNBUFFERED="1",
        )
        if os.environ.get("SOURCEBOUND_BACKUP_KEY_FILE"):  # the tests' backup key (tests/conftest.py)
            env["SOURCEBOUND_BACKUP_KEY_FILE"] = os.environ["SOURCEBOUND_BACKUP_KEY_FILE"]
        env.update(self.extra_env)
        return env

    def start(self) -> "ApiServer":
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        started = time.monotonic()
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "hayhooks_app", "serve"],
                cwd=REPO,
                env=self.environment(),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.client = httpx.Client(base_url=self.url, timeout=60)
        while time.monotonic() - started < START_TIMEOUT_S:
            if self.process.poll() is not None:
                raise RuntimeError(f"The API server exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                if self.client.get("/health", timeout=2).status_code in (200, 503):
                    self.startup_seconds = time.monotonic() - started
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"The API server did not answer /health within {START_TIMEOUT_S:.0f} s:\n{self.log_tail()}")

    def stop(self) -> int | None:
        if self.client is not None:
            self.client.close()
            self.client = None
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        code, self.process = self.process.returncode, None
        return code

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def __enter__(self) -> "ApiServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def settled_query_log(data_dir: Path, quiet_s: float = 0.3, timeout_s: float = 10.0) -> None:
    """
    Wait until the server's background writer has written the query log (``records.sqlite`` unchanged for
    ``quiet_s``): the query log is written off the request path (components/stores/record_store.py).
    """
    import sqlite3

    deadline, last, since = time.monotonic() + timeout_s, None, time.monotonic()
    while time.monotonic() < deadline:
        with sqlite3.connect(Path(data_dir) / "records.sqlite") as connection:
            state = connection.execute("SELECT count(*), max(id) FROM query_log").fetchone()
        if state != last:
            last, since = state, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return
        time.sleep(0.05)
    raise AssertionError(f"the query log of {data_dir} kept changing for {timeout_s}s")


def error_of(response: httpx.Response, status: int, error_type: str | None = None) -> str:
    """Assert an error response's status and shape; return its message."""
    assert response.status_code == status, f"expected {status}, got {response.status_code}: {response.text[:500]}"
    body = response.json()
    assert set(body) == {"error", "message"}, body
    if error_type is not None:
        assert body["error"] == error_type, body
    return body["message"]


def post(http: httpx.Client, path: str, body: dict, status: int = 200) -> Any:
    """POST ``body``; assert the status; a 200's ``result``, or the error body otherwise."""
    response = http.post(path, json=body)
    assert response.status_code == status, response.text[:1000]
    return response.json()["result"] if status == 200 else response.json()
