"""
A private PostgreSQL cluster for the state-layer tests, and the fixtures that hand out databases.

``PostgresCluster`` runs Debian's PostgreSQL binaries (``make provision-postgresql`` installs them) on a
free loopback port with its data, socket and log in its own folder, so it never touches a system server.
PostgreSQL refuses to run as root: when the tests run as root, ``initdb`` and ``pg_ctl`` run as the
``postgres`` user on a folder it owns. Authentication is ``trust`` on loopback, the superuser is ``sb``.

Usage:

```python
def test_something(postgres_url):           # a fresh, empty database for this test
    engine = sqlalchemy.create_engine(postgres_url)
```
"""

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

USER = "sb"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def postgres_bin_dir() -> Path:
    """The newest installed ``/usr/lib/postgresql/<version>/bin``."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda path: int(path.split("/")[4]))
    if not found:
        raise RuntimeError("PostgreSQL is not installed: run `make provision-postgresql` (apt-get install postgresql).")
    return Path(found[-1]).parent


class PostgresCluster:
    """
    One private cluster.

    :param base_dir: An empty folder for its data, socket and log (``chown``-ed to ``postgres`` under root).
    """

    def __init__(self, base_dir: Path | None = None) -> None:
        self.base_dir = Path(base_dir or tempfile.mkdtemp(prefix="sb-pg-"))
        self.port = _free_port()
        self.bin_dir = postgres_bin_dir()
        self._as_postgres = os.geteuid() == 0

    def _run(self, *argv: str) -> None:
        command = [str(self.bin_dir / argv[0]), *argv[1:]]
        if self._as_postgres:
            command = ["su", "postgres", "-s", "/bin/sh", "-c", " ".join(f"'{part}'" for part in command)]
        subprocess.run(command, check=True, capture_output=True, timeout=60)

    def start(self) -> "PostgresCluster":
        if self._as_postgres:
            shutil.chown(self.base_dir, "postgres", "postgres")
        data = self.base_dir / "data"
        if not data.exists():
            self._run("initdb", "-D", str(data), "-A", "trust", "-U", USER, "--no-sync")
        options = f"-p {self.port} -k {self.base_dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
        self._run("pg_ctl", "-D", str(data), "-w", "-l", str(self.base_dir / "log"), "-o", options, "start")
        return self

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.base_dir / "data"), "-m", "fast", "-w", "stop")

    def url(self, database: str = "postgres") -> str:
        """The SQLAlchemy URL (psycopg 3 driver) of a database of this cluster."""
        return f"postgresql+psycopg://{USER}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str | None = None) -> str:
        """Create an empty database; returns its SQLAlchemy URL."""
        import psycopg

        name = name or f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(f"host=127.0.0.1 port={self.port} user={USER} dbname=postgres", autocommit=True) as db:
            db.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def remove(self) -> None:
        shutil.rmtree(self.base_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_cluster():
    """One private cluster for the whole run (starts in about a second)."""
    cluster = PostgresCluster().start()
    try:
        yield cluster
    finally:
        cluster.stop()
        cluster.remove()


@pytest.fixture
def postgres_url(postgres_cluster):
    """A fresh, empty database for one test (the state layer's pooled connections to it closed afterwards)."""
    from components.stores.state.database import dispose_shared

    yield postgres_cluster.create_database()
    dispose_shared()
