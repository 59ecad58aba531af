"""
One open Qdrant Edge shard per folder per process, shared by every store object on it.

Qdrant Edge lets only one ``EdgeShard`` hold a folder (its write-ahead log is
locked), even within one process. ``acquire_shard`` therefore keeps a registry
keyed by the resolved path: the first store object opens (or creates) the
shard, later ones on the same path share it, and the last ``release_shard``
flushes and closes it. An ``atexit`` hook flushes and closes what is left.

Before the engine touches a folder, the process takes an exclusive ``flock`` on
``<folder>/.sourcebound.lock`` and keeps it while the shard is open. This matters:
Qdrant Edge 0.9 only detects a second holder when it reaches the write-ahead log,
after it has opened the segments, and that failed open corrupts the holder's
sparse-vector storage ("Tracker journal ... is shorter than expected" on the
next flush). With the lock a second process fails before opening anything.

Each shared shard carries a writer-preferring readers-writer lock. Reads take
it shared; every mutation takes it exclusive, so a multi-step write (check for
duplicates then upsert, count then delete, or ``replace_documents``'s upsert
then delete) is never seen half done. ``ReadWriteLock.writes_paused`` holds
writers back while readers go on (an online backup copies the flushed folder
meanwhile).
"""

import atexit
import fcntl
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qdrant_edge import EdgeConfig, EdgeShard, UpdateOperation

from components.document_stores.qdrant_edge.errors import QdrantEdgeStoreError, ShardLockedError, StoreConfigError

logger = logging.getLogger(__name__)

# Like Qdrant server's flush interval: the WAL already makes each update durable, and flushing the
# segments (~5 ms) at most this often bounds WAL replay time after a crash.
FLUSH_INTERVAL_S = 5.0
LOCK_FILE_NAME = ".sourcebound.lock"


class ReadWriteLock:
    """A readers-writer lock that lets a waiting writer in before new readers (no writer starvation)."""

    def __init__(self) -> None:
        self._condition = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0
        self._paused = False
        self._swap_waiting = False

    @contextmanager
    def read(self) -> Iterator[None]:
        """Hold the lock shared for the block."""
        with self._condition:
            # Writers held back by a pause do not hold readers back (queries go on during a backup).
            while self._writer or self._swap_waiting or (self._writers_waiting and not self._paused):
                self._condition.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._condition:
                self._readers -= 1
                if self._readers == 0:
                    self._condition.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        """Hold the lock exclusively for the block."""
        with self._condition:
            self._writers_waiting += 1
            try:
                while self._writer or self._readers or self._paused:
                    self._condition.wait()
            finally:
                self._writers_waiting -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._condition:
                self._writer = False
                self._condition.notify_all()

    @contextmanager
    def writes_paused(self) -> Iterator[None]:
        """
        Keep writers out for the block (one at a time, after the running write ends); readers are not held back.
        Not re-entrant, and a thread must not write inside its own pause.
        """
        with self._condition:
            while self._paused:
                self._condition.wait()
            self._paused = True
            while self._writer:
                self._condition.wait()
        try:
            yield
        finally:
            with self._condition:
                self._paused = False
                self._condition.notify_all()

    @contextmanager
    def exclusive_in_pause(self) -> Iterator[None]:
        """
        Inside this thread's own ``writes_paused`` block: hold readers out too, for a short step that replaces
        what they read (a compacted shard swapped in). New readers wait from the call on, so it is not starved.
        """
        with self._condition:
            if not self._paused:
                raise RuntimeError("exclusive_in_pause needs the writes_paused block of the same thread")
            self._swap_waiting = True
            while self._readers:
                self._condition.wait()
            self._writer = True
        try:
            yield
        finally:
            with self._condition:
                self._writer = False
                self._swap_waiting = False
                self._condition.notify_all()


@dataclass
class SharedShard:
    """An open shard, its lock, and what every store object on it must agree on."""

    path: str
    shard: EdgeShard
    settings: dict[str, Any]
    lock_fd: int
    lock: ReadWriteLock = field(default_factory=ReadWriteLock)
    optimize_lock: threading.Lock = field(default_factory=threading.Lock)
    refcount: int = 0
    last_flush: float = field(default_factory=time.monotonic)
    # Deleted points the files still hold (``compaction.read_pending``), ``None`` when there are none.
    pending: dict[str, Any] | None = None

    def flush_if_due(self) -> None:
        """Flush the segments when the last flush is older than ``FLUSH_INTERVAL_S`` (call under the write lock)."""
        if time.monotonic() - self.last_flush >= FLUSH_INTERVAL_S:
            self.flush()

    def flush(self) -> None:
        """Flush all pending changes to the segment files."""
        self.shard.flush()
        self.last_flush = time.monotonic()


_registry: dict[str, SharedShard] = {}
_registry_lock = threading.RLock()  # re-entrant: a store's __del__ may release while this thread holds it


def resolve_path(path: str | os.PathLike) -> str:
    """The registry key of a shard folder: its absolute, symlink-free path."""
    return os.path.realpath(os.path.abspath(os.fspath(path)))


def _is_locked_error(error: Exception) -> bool:
    text = str(error)
    return "WouldBlock" in text or "Resource temporarily unavailable" in text


def lock_folder(path: str) -> int:
    """Create the folder and hold its lock file exclusively; raise ``ShardLockedError`` if another process has it."""
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise StoreConfigError(f"Qdrant Edge store path {path} is a file; point `path` at a folder.")
    target.mkdir(parents=True, exist_ok=True)
    fd = os.open(target / LOCK_FILE_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = os.read(fd, 32).decode(errors="replace").strip()
        os.close(fd)
        raise ShardLockedError(path, holder_pid=holder or None) from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def folder_holder(path: str | os.PathLike) -> str | None:
    """
    Who holds a shard folder's lock: ``None`` when no process does (checked by taking and releasing it), else the
    holder's pid as it wrote it (``""`` when unknown). The folder is not created.
    """
    lock_path = Path(path) / LOCK_FILE_NAME
    if not lock_path.exists():
        return None
    if resolve_path(path) in _registry:
        return str(os.getpid())
    fd = os.open(lock_path, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return os.read(fd, 32).decode(errors="replace").strip()
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def unlock_folder(fd: int) -> None:
    os.close(fd)  # closing the descriptor releases the flock


def open_engine(path: str, config: EdgeConfig) -> EdgeShard:
    target = Path(path)
    existing = (target / "edge_config.json").exists() or (target / "segments").is_dir()
    try:
        return EdgeShard.load(path, config) if existing else EdgeShard.create(path, config)
    except Exception as error:  # the engine raises bare Exception
        if _is_locked_error(error):
            raise ShardLockedError(path) from error
        if "incompatible" in str(error).lower():
            raise StoreConfigError(
                f"The Qdrant Edge shard at {path} was created with other vector settings: {error}. Use the "
                "embedding_dim and similarity it was built with, or re-index into a new path."
            ) from error
        raise QdrantEdgeStoreError(f"Cannot open the Qdrant Edge shard at {path}: {error}") from error


def create_payload_indexes(shard: EdgeShard, payload_indexes: dict[str, Any]) -> None:
    # Idempotent: creating an index that exists is a no-op for the engine.
    for field_name, schema in payload_indexes.items():
        shard.update(UpdateOperation.create_field_index(field_name, schema))


def acquire_shard(
    path: str | os.PathLike,
    config: EdgeConfig,
    settings: dict[str, Any],
    payload_indexes: dict[str, Any],
    on_open: Callable[[SharedShard], None] | None = None,
) -> SharedShard:
    """
    Open the shard at ``path`` or share the one this process already has open.

    :param path: The shard folder (created when missing).
    :param config: The engine configuration used to create it, or to check it on load.
    :param settings: Settings every store object on the path must agree on (dimension, similarity, BM25).
    :param payload_indexes: Payload field -> index schema; created when missing (idempotent).
    :param on_open: Called once when this call opens the shard (not when it shares an open one), holding its lock;
        an exception closes the shard again and propagates.
    :returns: The shared shard, its reference count increased.
    :raises ShardLockedError: If another process holds the shard.
    :raises StoreConfigError: If the settings differ from those of the open shard or the shard on disk.
    """
    resolved = resolve_path(path)
    with _registry_lock:
        shared = _registry.get(resolved)
        if shared is None:
            lock_fd = lock_folder(resolved)
            try:
                shard = open_engine(resolved, config)
                try:
                    create_payload_indexes(shard, payload_indexes)
                except Exception:
                    shard.close()
                    raise
            except Exception:
                unlock_folder(lock_fd)
                raise
            shared = SharedShard(path=resolved, shard=shard, settings=dict(settings), lock_fd=lock_fd)
            if on_open is not None:
                try:
                    on_open(shared)
                except BaseException:
                    shared.shard.close()
                    unlock_folder(shared.lock_fd)
                    raise
            _registry[resolved] = shared
        elif shared.settings != settings:
            raise StoreConfigError(
                f"The Qdrant Edge shard at {resolved} is already open in this process with settings "
                f"{shared.settings}; this store asks for {settings}. Use the same settings for every store on one path."
            )
        shared.refcount += 1
        return shared


def recreate_shard(shared: SharedShard, config: EdgeConfig, payload_indexes: dict[str, Any]) -> None:
    """Replace the shard's files with an empty shard of the same configuration (call under the write lock)."""
    shared.shard.close()
    for entry in Path(shared.path).iterdir():
        if entry.name == LOCK_FILE_NAME:
            continue  # still held: the folder stays ours throughout
        if entry.is_dir():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    shared.shard = open_engine(shared.path, config)
    create_payload_indexes(shared.shard, payload_indexes)
    shared.flush()
    shared.pending = None  # its record went with the files


def release_shard(shared: SharedShard) -> None:
    """Drop one reference; the last one flushes and closes the shard."""
    with _registry_lock:
        shared.refcount -= 1
        if shared.refcount > 0 or _registry.get(shared.path) is not shared:
            return
        del _registry[shared.path]
        with shared.lock.write():
            try:
                shared.shard.flush()
            finally:
                shared.shard.close()
                unlock_folder(shared.lock_fd)


def open_paths() -> list[str]:
    """The shard folders this process has open (for diagnostics and tests)."""
    with _registry_lock:
        return sorted(_registry)


@atexit.register
def _close_all() -> None:
    with _registry_lock:
        for shared in list(_registry.values()):
            try:
                shared.shard.flush()
                shared.shard.close()
                unlock_folder(shared.lock_fd)
            except Exception as error:  # pragma: no cover - best effort at interpreter exit
                logger.warning("Could not close the Qdrant Edge shard at %s: %s", shared.path, error)
        _registry.clear()
