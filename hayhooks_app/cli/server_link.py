"""
The ``sourcebound`` CLI beside a running server (docs/operations.md, "The CLI beside a running server").

A serving process holds the data directory's shard, so a second process cannot open it. Instead:

- at start-up the server writes ``DATA_DIR/server.json`` (its URL, pid and a random local admin credential),
  readable and writable by its owner only (mode 0600), and removes it when it stops;
- a ``sourcebound`` command run with that data directory finds the file, and sends its arguments and working
  directory to ``POST /admin/cli`` with the credential; the server runs the same command function in-process on
  its own store, services and locks, and answers with the exit code and the text the command printed;
- with no server (no file, a dead pid, or a server that does not answer) the command runs offline as before.

Only the credential opens the route (compared in constant time): API keys, whatever their permissions, never
do, and without it the route answers 403 (docs/contract.md, "Identity and delegation"). Reading the credential
needs the data directory owner's file rights, the same rights that running the CLI offline on that directory
needs. The route is not in the OpenAPI schema.

Usage (what ``hayhooks_app.cli.main`` does):

```python
from hayhooks_app.cli.server_link import forward_to_server

code = forward_to_server(args, argv)   # None: no server holds the data directory, run offline
```
"""

import argparse
import contextlib
import contextvars
import hmac
import io
import json
import logging
import os
import secrets
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from components.services.data_backup import SERVER_FILE_NAME

logger = logging.getLogger(__name__)

ADMIN_HEADER = "X-Sourcebound-Admin"
# Commands that change the index run under the server's index write lock, like its HTTP routes.
MUTATING_COMMANDS = frozenset({"index", "invalidate", "taint", "verify", "delete", "allowlist"})
# Parsed arguments holding file paths: resolved against the caller's working directory, not the server's.
PATH_ARGUMENTS = ("paths", "path", "file", "keys_file", "directory", "to_qdrant", "records_to")

_serving: contextvars.ContextVar[Any] = contextvars.ContextVar("sourcebound_serving_container", default=None)
# sys.stdout/sys.stderr are process-wide: one forwarded command prints at a time.
_output_lock = threading.Lock()


def serving_container() -> Any:
    """The server's ``ServiceContainer`` while a forwarded command runs in it, else ``None``."""
    return _serving.get()


def _connect_host(host: str) -> str:
    if host in ("", "0.0.0.0", "::"):  # noqa: S104 - a wildcard bind is reached on loopback
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


class LocalAdmin:
    """
    The server file and credential of one serving process.

    :param data_dir: The data directory the server holds.
    :param host: The host it listens on (a wildcard address is reached on loopback).
    :param port: Its port.
    """

    def __init__(self, data_dir: Path, host: str, port: int):
        self.path = Path(data_dir) / SERVER_FILE_NAME
        self.url = f"http://{_connect_host(host)}:{port}"
        self.token = secrets.token_urlsafe(32)

    def publish(self) -> None:
        """Write the server file (mode 0600, replacing a stale one atomically)."""
        partial = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"url": self.url, "pid": os.getpid(), "token": self.token}, handle)
        os.chmod(partial, 0o600)
        os.replace(partial, self.path)

    def withdraw(self) -> None:
        """Remove the server file if it is still this server's."""
        with contextlib.suppress(OSError, ValueError):
            if json.loads(self.path.read_text(encoding="utf-8")).get("token") == self.token:
                self.path.unlink()

    def allows(self, presented: str | None) -> bool:
        return bool(presented) and hmac.compare_digest(presented.encode(), self.token.encode())


def discover(data_dir: Path) -> dict[str, Any] | None:
    """The running server's ``{"url", "pid", "token"}`` from ``DATA_DIR/server.json``, or ``None``."""
    path = Path(data_dir) / SERVER_FILE_NAME
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
        pid = int(info["pid"])
        str(info["url"]), str(info["token"])
    except FileNotFoundError:
        return None
    except PermissionError as error:
        raise PermissionError(
            f"A server holds {data_dir}, but {path} is not readable by this user: run the command as the user "
            "that runs the server."
        ) from error
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None  # left by a server that was killed
    except PermissionError:
        pass  # alive, another user's: the request decides
    return info


class CliRequest(BaseModel):
    argv: list[str] = Field(max_length=10_000)
    cwd: str


def forward_to_server(args: argparse.Namespace, argv: list[str]) -> int | None:
    """
    Run a parsed command through the server holding its data directory, printing what it printed.

    :returns: The command's exit code, or ``None`` when no server holds the data directory (run it offline).
    """
    import httpx

    if serving_container() is not None:
        return None
    data_dir = Path(getattr(args, "data_dir", None) or os.environ.get("SOURCEBOUND_DATA_DIR") or "./data")
    try:
        info = discover(data_dir.resolve())
    except PermissionError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if info is None:
        return None
    try:
        response = httpx.post(
            f"{info['url']}/admin/cli",
            json={"argv": list(argv), "cwd": os.getcwd()},
            headers={ADMIN_HEADER: info["token"]},
            timeout=httpx.Timeout(10.0, read=None),
        )
    except httpx.TransportError:
        return None  # a server file whose server does not answer: the offline path (and its shard lock) decides
    try:
        body = response.json() if response.status_code == 200 else None
    except ValueError:
        body = None
    if not isinstance(body, dict) or not {"code", "stdout", "stderr"} <= set(body):
        # Not the server that wrote the file (its port reused, or a stale file): the offline path decides.
        return None
    sys.stdout.write(body["stdout"])
    sys.stderr.write(body["stderr"])
    return int(body["code"])


def _resolve_paths(args: argparse.Namespace, cwd: str) -> None:
    for name in PATH_ARGUMENTS:
        value = getattr(args, name, None)
        if isinstance(value, str) and "://" not in value and value != ":memory:":
            setattr(args, name, os.path.join(cwd, value))
        elif isinstance(value, list):
            setattr(args, name, [os.path.join(cwd, item) if isinstance(item, str) else item for item in value])


def execute(container: Any, build_parser: Callable[[], argparse.ArgumentParser], argv: list[str], cwd: str) -> dict:
    """
    Run one ``sourcebound`` command inside the server, on its container.

    :param build_parser: ``hayhooks_app.cli.build_parser`` (passed in: the CLI imports this module).
    :returns: ``{"code", "stdout", "stderr"}``.
    """
    stdout, stderr = io.StringIO(), io.StringIO()
    with _output_lock, contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        token = _serving.set(container)
        try:
            try:
                args = build_parser().parse_args(argv)
            except SystemExit as stop:  # argparse printed the usage error
                return {"code": int(stop.code or 0), "stdout": stdout.getvalue(), "stderr": stderr.getvalue()}
            if getattr(args, "local_only", False):
                print(f"error: `{args.command}` cannot run while a server holds the data directory.", file=sys.stderr)
                code = 1
            else:
                _resolve_paths(args, cwd)
                lock = container.write_lock if args.command in MUTATING_COMMANDS else contextlib.nullcontext()
                with lock:
                    code = args.func(args)
        except Exception as error:
            logger.exception("A forwarded CLI command failed.")
            print(f"error: {type(error).__name__}: {error}", file=sys.stderr)
            code = 1
        finally:
            _serving.reset(token)
    return {"code": code, "stdout": stdout.getvalue(), "stderr": stderr.getvalue()}


def admin_router(container: Any, admin: LocalAdmin, build_parser: Callable[[], argparse.ArgumentParser]) -> APIRouter:
    """
    ``POST /admin/cli``: a CLI command forwarded by the server's owner (the local admin credential only).

    :param build_parser: ``hayhooks_app.cli.build_parser``.
    """
    router = APIRouter()

    @router.post("/admin/cli", include_in_schema=False)
    async def run_cli(request: Request, body: CliRequest) -> JSONResponse:
        if not admin.allows(request.headers.get(ADMIN_HEADER)):
            return JSONResponse(
                {
                    "error": {
                        "type": "forbidden",
                        "message": "This route takes only the local admin credential of DATA_DIR/server.json.",
                    }
                },
                status_code=403,
            )
        return JSONResponse(await run_in_threadpool(execute, container, build_parser, body.argv, body.cwd))

    return router
