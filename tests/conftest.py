"""Shared fixtures. The test run is an entry point: it goes offline before anything loads a model."""

import os
import socket
import tempfile
from pathlib import Path

import pytest

from components.runtime.offline import configure_offline

configure_offline()

# Backups are authenticated with a key outside the data dir (docs/operations.md, "Backup and restore"): the tests'
# own, never the machine user's ~/.config one. Servers the tests start get the same file (support.api_server).
os.environ.setdefault(
    "SOURCEBOUND_BACKUP_KEY_FILE", str(Path(tempfile.mkdtemp(prefix="sb-test-backup-key-")) / "backup.key")
)

# Fixtures shared across folders: the Ollama double (or a real Ollama), the module-scoped Edge store, API keys.
pytest_plugins = [
    "support.ollama_double",
    "support.indexing_support",
    "support.rabbitmq",
    "support.postgres",
    "support.api_keys",
]


@pytest.fixture
def no_network(monkeypatch):
    """Fail any attempt to open a non-loopback network connection during the test."""
    real_connect = socket.socket.connect

    def guarded_connect(sock, address):
        host = address[0] if isinstance(address, tuple) else address
        if isinstance(host, str) and (
            host.startswith("127.") or host in {"localhost", "::1"} or sock.family == socket.AF_UNIX
        ):
            return real_connect(sock, address)
        raise OSError(f"network access attempted during an offline test: {address!r}")

    def guarded_getaddrinfo(host, *args, **kwargs):
        if host in {"localhost", "127.0.0.1", "::1", None}:
            return real_getaddrinfo(host, *args, **kwargs)
        raise OSError(f"DNS lookup attempted during an offline test: {host!r}")

    real_getaddrinfo = socket.getaddrinfo
    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket, "getaddrinfo", guarded_getaddrinfo)
    yield
