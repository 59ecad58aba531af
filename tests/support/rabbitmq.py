"""
A private RabbitMQ node for the event consumer tests, and the session fixture that runs one.

``RabbitMQNode`` starts Debian's ``rabbitmq-server`` (``make provision-rabbitmq`` installs it) as the
current user on free loopback ports, with every path (mnesia, logs, plugins, pid, feature flags, the
Erlang cookie through ``HOME``) in its own folder, so it never touches a system broker. The real
server script is run directly (``/usr/lib/rabbitmq/bin/rabbitmq-server``): the ``/usr/sbin`` wrapper
would switch to the ``rabbitmq`` user, which cannot own a test's folder. ``stop()`` asks
``rabbitmqctl stop`` and ``kill()`` SIGKILLs it; ``start()`` again brings the same node back with its
durable queues and persistent messages (the broker-restart test).

Usage:

```python
def test_something(rabbitmq):               # session-scoped: one node for the whole run
    with pika.BlockingConnection(pika.URLParameters(rabbitmq.url)) as connection:
        ...
```
"""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pika
import pytest

SERVER_CANDIDATES = ("/usr/lib/rabbitmq/bin/rabbitmq-server", shutil.which("rabbitmq-server") or "")
START_TIMEOUT_S = float(os.environ.get("SOURCEBOUND_TEST_RABBITMQ_START_TIMEOUT", "90"))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _server_script() -> Path:
    for candidate in SERVER_CANDIDATES:
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    raise RuntimeError("rabbitmq-server is not installed: run `make provision-rabbitmq` (apt-get install it).")


class RabbitMQNode:
    """
    One private broker node.

    :param base_dir: Folder for its data, logs and cookie (created).
    :param name: Node name prefix (the node is ``<name>@localhost``).
    """

    def __init__(self, base_dir: Path, name: str = "sbtest"):
        self.base_dir = Path(base_dir)
        self.port = _free_port()
        self.dist_port = _free_port()
        self.node = f"{name}{self.port}@localhost"
        self.script = _server_script()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        """The AMQP URL (the default guest user may connect over loopback)."""
        return f"amqp://guest:guest@127.0.0.1:{self.port}/%2F"

    def environment(self) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if not key.startswith(("RABBITMQ_", "ERL_"))}
        env.update(
            HOME=str(self.base_dir),
            RABBITMQ_NODENAME=self.node,
            RABBITMQ_NODE_PORT=str(self.port),
            RABBITMQ_DIST_PORT=str(self.dist_port),
            RABBITMQ_NODE_IP_ADDRESS="127.0.0.1",
            RABBITMQ_MNESIA_BASE=str(self.base_dir / "mnesia"),
            RABBITMQ_LOG_BASE=str(self.base_dir / "log"),
            RABBITMQ_ENABLED_PLUGINS_FILE=str(self.base_dir / "enabled_plugins"),
            RABBITMQ_PID_FILE=str(self.base_dir / "rabbitmq.pid"),
            RABBITMQ_FEATURE_FLAGS_FILE=str(self.base_dir / "feature_flags"),
            RABBITMQ_CONFIG_FILE=str(self.base_dir / "rabbitmq"),
        )
        return env

    def start(self) -> "RabbitMQNode":
        self.base_dir.mkdir(parents=True, exist_ok=True)
        (self.base_dir / "enabled_plugins").write_text("[].\n")
        log = open(self.base_dir / "server.out", "ab")  # noqa: SIM115 - kept open for the process's life
        self.process = subprocess.Popen(
            [str(self.script)], env=self.environment(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"rabbitmq-server exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                pika.BlockingConnection(pika.URLParameters(self.url + "?connection_attempts=1")).close()
                return self
            except pika.exceptions.AMQPError:
                time.sleep(0.3)
        self.kill()
        raise RuntimeError(f"rabbitmq-server did not accept connections within {START_TIMEOUT_S:.0f} s")

    def stop(self) -> None:
        """Stop the node cleanly (its durable queues and persistent messages stay in its folder)."""
        if self.process is None:
            return
        if self.process.poll() is None:
            subprocess.run(
                [str(self.script.with_name("rabbitmqctl")), "-n", self.node, "stop"],
                env=self.environment(),
                capture_output=True,
                timeout=60,
                check=False,
            )
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
        self._wait_port_free()
        self.process = None

    def kill(self) -> None:
        """SIGKILL the node's process group (the server script and its Erlang VM)."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
            self._wait_port_free()
        self.process = None

    def _wait_port_free(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) != 0:
                    return
            time.sleep(0.2)

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join((self.base_dir / "server.out").read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


@pytest.fixture(scope="session")
def rabbitmq():
    """A private RabbitMQ node for the whole test session, stopped at its end."""
    base = Path(tempfile.mkdtemp(prefix="sourcebound-rabbitmq-"))
    node = RabbitMQNode(base).start()
    try:
        yield node
    finally:
        node.stop()
        shutil.rmtree(base, ignore_errors=True)
