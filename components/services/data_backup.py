"""
Online backup, verification and restore of a sourcebound data directory (docs/operations.md, "Backup and restore").

A backup is a directory: the files of the data directory at one point in time, ``manifest.json``
(format version, sourcebound version, embedding and sparse model, chunk and document counts per tenant,
size, mode and SHA-256 of every file) and ``manifest.hmac``, the manifest's HMAC-SHA256 under the backup key, a key
kept outside the data directory and the backup (``components.services.backup_key``): a restore refuses a backup
whose manifest was rewritten, so no file can be changed or added unnoticed. How each file is taken:

- the Qdrant Edge shard folder: copied while writers run, then, while the store holds writers back
  (``writes_paused``; queries go on) and after a flush, compared block by block and brought up to date, so the
  copy loads as the shard did at that moment and writers wait only for what changed;
- every ``*.sqlite`` file: SQLite's online backup API (a consistent copy while others read and write it);
- every other file (keys, secrets, state of later features): copied as bytes.

New state in the data directory is covered without code changes. With a shared state database
(``SOURCEBOUND_DATABASE_URL``, docs/operations.md "Replicas") keys, tags, records, conversations, glossaries and
sync state live in that database, not in the data directory: back it up with ``pg_dump`` beside this backup
(a warning says so; restore both together). A backup is written under a hidden
temporary name beside PATH and renamed to PATH last, so a backup killed half way never looks complete, and
restore accepts only a directory whose manifest and checksums all match.

Usage:

```python
from components.services.data_backup import create_backup, restore_backup

manifest = create_backup(data_dir, "/backups/2026-11-24", store, embedding={"model": "...", "dimension": 384})
restore_backup("/backups/2026-11-24", new_data_dir, embedding={"model": "...", "dimension": 384})
```
"""

import contextlib
import errno
import hashlib
import json
import logging
import os
import secrets
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from components.core.errors import SourceboundError
from components.document_stores.qdrant_edge.shard import LOCK_FILE_NAME, folder_holder
from components.services.backup_key import (
    BackupKey,
    BackupKeyError,
    check_manifest_code,
    load_key,
    manifest_code,
)
from components.stores.state import database_url

FORMAT = "sourcebound-backup"
# 2: the manifest is authenticated (manifest.hmac). A version 1 backup restores only when asked explicitly.
FORMAT_VERSION = 2
MANIFEST_NAME = "manifest.json"
CODE_NAME = "manifest.hmac"
# The file a running server writes into its data directory (its address and a local admin credential).
SERVER_FILE_NAME = "server.json"
# Never part of a backup: SQLite's side files (the backup API folds them in), lock and server files.
_SKIPPED_SUFFIXES = ("-wal", "-shm", "-journal")
_SKIPPED_NAMES = frozenset({LOCK_FILE_NAME, SERVER_FILE_NAME})
_CHUNK = 1 << 20

logger = logging.getLogger(__name__)


class BackupError(SourceboundError):
    """A backup or restore cannot be done as asked; the message names the file or the difference."""


def _skipped(path: Path) -> bool:
    return path.name in _SKIPPED_NAMES or path.name.endswith(_SKIPPED_SUFFIXES)


def _files(root: Path, exclude: Path | None = None) -> Iterator[Path]:
    """Regular files under ``root`` (sorted, symlinks not followed), outside ``exclude``."""
    for folder, directories, names in os.walk(root):
        here = Path(folder)
        if exclude is not None:
            directories[:] = [name for name in directories if here / name != exclude]
        directories.sort()
        for name in sorted(names):
            path = here / name
            if path.is_file() and not path.is_symlink() and not _skipped(path):
                yield path


def sha256_file(path: Path) -> str:
    """The SHA-256 hex digest of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _data_ranges(fd: int, size: int) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of the regions of a file that hold data (the engine preallocates sparse files)."""
    position = 0
    while position < size:
        try:
            start = os.lseek(fd, position, os.SEEK_DATA)
        except OSError as error:
            if error.errno == errno.ENXIO:  # only a hole is left
                return
            if error.errno in (errno.EINVAL, errno.EOPNOTSUPP):  # no hole support: one range
                yield position, size
                return
            raise
        end = os.lseek(fd, start, os.SEEK_HOLE)
        yield start, end
        position = end


def _copy_range(reader: Any, writer: Any, start: int, end: int) -> None:
    """Copy ``[start, end)`` in the kernel where it can (one call, no copy through Python), else in blocks."""
    position = start
    if hasattr(os, "copy_file_range"):
        try:
            while position < end:
                copied = os.copy_file_range(reader.fileno(), writer.fileno(), end - position, position, position)
                if copied == 0:
                    return
                position += copied
            return
        except OSError as error:
            if error.errno not in (errno.EXDEV, errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
                raise
    reader.seek(position)
    writer.seek(position)
    while position < end:
        block = reader.read(min(_CHUNK, end - position))
        if not block:
            return
        writer.write(block)
        position += len(block)


def _copy_file(source: Path, target: Path) -> None:
    """Copy a file's bytes, keeping its holes (a preallocated 32 MB page with 100 KB in it copies 100 KB)."""
    # Not synced here: the copy is made while writers wait; ``_sync_tree`` syncs the whole backup afterwards.
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(source, "rb") as reader, open(target, "wb") as writer:
        size = os.fstat(reader.fileno()).st_size
        for start, end in _data_ranges(reader.fileno(), size):
            _copy_range(reader, writer, start, end)
        writer.truncate(size)
    os.chmod(target, source.stat().st_mode & 0o777)


_COMPARE_BLOCK = 1 << 20


def _precopy(shard: Path, data_dir: Path, partial: Path) -> set[Path]:
    """
    Copy the shard's files while writers run; returns the files copied. The copy may be torn (the engine writes
    through memory maps, which do not always move a file's mtime): ``_copy_changed`` compares every byte.
    """
    copied = set()
    for path in _files(shard):
        try:
            _copy_file(path, partial / path.relative_to(data_dir))
        except FileNotFoundError:  # the engine replaced it meanwhile: the pause copies what is there then
            continue
        copied.add(path)
    return copied


def _merged(ranges: list[tuple[int, int]], limit: int) -> Iterator[tuple[int, int]]:
    """The union of ``ranges``, cut at ``limit``, in order."""
    current: tuple[int, int] | None = None
    for start, end in sorted(ranges):
        end = min(end, limit)
        if start >= end:
            continue
        if current is not None and start <= current[1]:
            current = (current[0], max(current[1], end))
            continue
        if current is not None:
            yield current
        current = (start, end)
    if current is not None:
        yield current


def _update_copy(source: Path, target: Path) -> None:
    """Make ``target`` (an earlier copy of ``source``) equal to it, writing only the blocks that differ."""
    with open(source, "rb") as reader, open(target, "r+b") as writer:
        size = os.fstat(reader.fileno()).st_size
        # Where either file holds data: the rest reads as zeros in both.
        ranges = [*_data_ranges(reader.fileno(), size)]
        copied_size = os.fstat(writer.fileno()).st_size
        ranges += _data_ranges(writer.fileno(), copied_size)
        if copied_size != size:
            writer.truncate(size)
        for start, end in _merged(ranges, size):
            for offset in range(start, end, _COMPARE_BLOCK):
                length = min(_COMPARE_BLOCK, end - offset)
                current = os.pread(reader.fileno(), length, offset)
                if current != os.pread(writer.fileno(), length, offset):
                    os.pwrite(writer.fileno(), current, offset)
    os.chmod(target, source.stat().st_mode & 0o777)


def _copy_changed(shard: Path, data_dir: Path, partial: Path, precopied: set[Path] | None) -> None:
    """
    Inside the pause: make the copy equal to the flushed shard. Pre-copied files are compared block by block and
    only differing blocks rewritten (the bulk, sealed segments, is read, not written); new files are copied; files
    gone are removed.
    """
    precopied = precopied or set()
    present = set()
    for path in _files(shard):
        present.add(path)
        target = partial / path.relative_to(data_dir)
        if path in precopied and target.exists():
            _update_copy(path, target)
        else:
            _copy_file(path, target)
    for path in precopied - present:
        (partial / path.relative_to(data_dir)).unlink(missing_ok=True)


def _sync_tree(root: Path) -> None:
    """fsync every file and folder under ``root``, deepest first."""
    for folder, _directories, names in os.walk(root, topdown=False):
        for name in names:
            fd = os.open(Path(folder) / name, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_dir(Path(folder))


def _backup_sqlite(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    reader = sqlite3.connect(str(source), timeout=30)
    try:
        writer = sqlite3.connect(str(target))
        try:
            reader.backup(writer)
            # A self-contained file: no WAL beside it in the backup.
            writer.execute("PRAGMA journal_mode=DELETE")
        finally:
            writer.close()
    finally:
        reader.close()
    os.chmod(target, source.stat().st_mode & 0o777)


def _describe_os_error(error: OSError, action: str) -> str:
    if error.errno == errno.ENOSPC:
        return f"No space left on the device while {action} ({error.filename or 'a file'})."
    return f"{action[0].upper()}{action[1:]} failed: {error}"


def create_backup(
    data_dir: str | os.PathLike,
    target: str | os.PathLike,
    store: Any,
    *,
    embedding: dict[str, Any],
    sparse: dict[str, Any] | None = None,
    sourcebound_version: str = "unknown",
    hold: Callable[[], AbstractContextManager] | None = None,
    key: BackupKey | None = None,
) -> dict[str, Any]:
    """
    Write a backup of ``data_dir`` to the new directory ``target``.

    :param data_dir: The data directory (holds the store's shard folder, the SQLite files, keys, ...).
    :param target: The backup directory to create; its parent must exist and it must not.
    :param store: The open ``QdrantEdgeDocumentStore`` of the data directory (its ``writes_paused`` gives the
        point in time; the copy is opened with its settings and counted with ``tenant_counts``).
    :param embedding: ``{"model", "dimension", ...}`` of the index, recorded and checked on restore.
    :param sparse: The sparse (BM25) model description, recorded.
    :param sourcebound_version: Recorded in the manifest.
    :param hold: Optional context manager factory held together with the store's pause, for writers above the
        store (the server's index lock), so no request is half written into the copy.
    :param key: The backup key; ``None`` loads it (``backup_key.load_key``), creating the key file on first use.
    :returns: The manifest, with ``write_pause_s`` (how long writers were held back), ``seconds`` (total) and
        ``key_id`` (the key that authenticates it).
    :raises BackupError: If ``target`` exists, a file cannot be read, the disk is full, or the key file is missing
        and cannot be created or lies inside the data directory; nothing is left at ``target`` and the data
        directory is untouched.
    """
    started = time.perf_counter()
    data_dir = Path(data_dir).resolve()
    target = Path(target).absolute()
    try:
        key = key if key is not None else load_key(create=True, data_dir=data_dir)
    except BackupKeyError as error:
        raise BackupError(str(error)) from error
    if target.exists() or target.is_symlink():
        raise BackupError(f"{target} already exists; a backup is written to a new path.")
    if database_url() is not None:
        logger.warning(
            "The state database (SOURCEBOUND_DATABASE_URL) is not in this backup of %s: back it up with pg_dump "
            "at the same time (docs/operations.md, 'Replicas').",
            data_dir,
        )
    if not target.parent.is_dir():
        raise BackupError(f"The folder {target.parent} does not exist; create it first.")
    if target == data_dir or data_dir in target.parents:
        raise BackupError(f"{target} is inside the data directory {data_dir}; write the backup elsewhere.")
    partial = target.parent / f".{target.name}.partial-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        partial.mkdir(mode=0o700)
        # Most of the shard is copied while writers run; the pause then copies only what changed since.
        expected_shard = Path(getattr(store, "path", data_dir / "qdrant")).resolve()
        precopy = _precopy(expected_shard, data_dir, partial) if data_dir in expected_shard.parents else None
        with hold() if hold is not None else nullcontext(), store.writes_paused() as shard_path:
            paused = time.perf_counter()
            shard = Path(shard_path)
            if data_dir not in shard.parents:
                raise BackupError(f"The store's shard {shard} is outside the data directory {data_dir}.")
            _copy_changed(shard, data_dir, partial, precopy if shard == expected_shard else None)
            for path in _files(data_dir, exclude=shard):
                copy = _backup_sqlite if path.suffix == ".sqlite" else _copy_file
                copy(path, partial / path.relative_to(data_dir))
            write_pause_s = time.perf_counter() - paused
        # Counted on the copy, after writers resumed: this also proves the copied shard loads.
        tenants = count_in_subprocess(store.to_dict(), partial / shard.relative_to(data_dir))
        _sync_tree(partial)
        files = {
            path.relative_to(partial).as_posix(): {
                "sha256": sha256_file(path),
                "size": path.stat().st_size,
                "mode": path.stat().st_mode & 0o777,
            }
            for path in _files(partial)
        }
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "sourcebound_version": sourcebound_version,
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "embedding": embedding,
            "sparse": sparse or {},
            "store": {"path": shard.relative_to(data_dir).as_posix()},
            "counts": {
                "chunks": sum(row["chunks"] for row in tenants.values()),
                "documents": sum(row["documents"] for row in tenants.values()),
                "tenants": tenants,
            },
            "write_pause_s": round(write_pause_s, 4),
            "files": files,
        }
        manifest_bytes = json.dumps(manifest, indent=2, sort_keys=True).encode("utf-8")
        for name, content in (
            (MANIFEST_NAME, manifest_bytes),
            (CODE_NAME, json.dumps(manifest_code(key, manifest_bytes), indent=2).encode("utf-8")),
        ):
            with open(partial / name, "wb") as handle:
                handle.write(content)
                handle.flush()
                os.fsync(handle.fileno())
        _fsync_dir(partial)
        # Last step: the complete backup appears under its name at once.
        if target.exists():
            raise BackupError(f"{target} appeared while the backup was written; the backup was not kept.")
        os.rename(partial, target)
        _fsync_dir(target.parent)
    except OSError as error:
        shutil.rmtree(partial, ignore_errors=True)
        raise BackupError(
            _describe_os_error(error, f"writing the backup to {target}") + " Nothing was kept."
        ) from error
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    manifest["seconds"] = round(time.perf_counter() - started, 3)
    manifest["path"] = str(target)
    manifest["key_id"] = key.key_id
    return manifest


def copy_state(data_dir: str | os.PathLike, target: str | os.PathLike, shard: str | os.PathLike) -> list[str]:
    """
    Copy everything of a data directory but its shard folder (SQLite files through the backup API) into
    ``target``, which must be absent or empty: the records, keys and tag owners a server started on ``target``
    needs when its vectors live elsewhere (a Qdrant server).

    :returns: The copied paths, relative to the data directory.
    :raises BackupError: If ``target`` is not empty.
    """
    data_dir, target, shard = Path(data_dir).resolve(), Path(target).absolute(), Path(shard).resolve()
    if target.exists() and any(target.iterdir()):
        raise BackupError(f"{target} is not empty; copy the records into a new or empty directory.")
    target.mkdir(parents=True, exist_ok=True)
    copied = []
    for path in _files(data_dir, exclude=shard):
        relative = path.relative_to(data_dir)
        (_backup_sqlite if path.suffix == ".sqlite" else _copy_file)(path, target / relative)
        copied.append(relative.as_posix())
    _sync_tree(target)
    return copied


def store_opener(definition: dict[str, Any]) -> Callable[[Path], Any]:
    """
    A function opening a shard folder with the settings of a store definition (``{"type", "init_parameters"}``,
    as ``to_dict`` gives and pipeline YAML holds), the path replaced.
    """
    from haystack.utils.type_serialization import thread_safe_import

    module_name, _, class_name = definition["type"].rpartition(".")
    store_class = getattr(thread_safe_import(module_name), class_name)

    def open_at(path: Path) -> Any:
        return store_class.from_dict(
            {**definition, "init_parameters": {**definition["init_parameters"], "path": str(path)}}
        )

    return open_at


def count_store(open_at: Callable[[Path], Any], shard_path: Path) -> dict[str, dict[str, int]]:
    """Open a shard folder, count it per tenant (``tenant_counts``) and close it."""
    copy = open_at(shard_path)
    try:
        return copy.tenant_counts()
    finally:
        copy.close()


_COUNT_SCRIPT = (
    "import json, sys\n"
    "from components.services.data_backup import count_store, store_opener\n"
    "print(json.dumps(count_store(store_opener(json.loads(sys.argv[1])), sys.argv[2])))\n"
)


def count_in_subprocess(definition: dict[str, Any], shard_path: Path) -> dict[str, dict[str, int]]:
    """
    ``count_store`` in a child process. Opening a shard runs in the engine without releasing the interpreter
    lock; in a serving process that would stall every query for as long (hundreds of ms at 10k chunks).

    :raises BackupError: If the copy cannot be opened or counted (the child's error is in the message).
    """
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    result = subprocess.run(
        [sys.executable, "-c", _COUNT_SCRIPT, json.dumps(definition), str(shard_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=3600,
        check=False,
    )
    if result.returncode != 0:
        raise BackupError(f"The copied shard at {shard_path} does not open: {result.stderr.strip()[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def read_manifest(backup: str | os.PathLike) -> dict[str, Any]:
    """
    The manifest of a backup, checked for shape and format version (not yet the files: see ``verify_backup``).

    :raises BackupError: If the directory or its manifest is missing, damaged or of a newer format.
    """
    backup = Path(backup)
    if not backup.is_dir():
        raise BackupError(f"{backup} is not a backup directory.")
    path = backup / MANIFEST_NAME
    if not path.is_file():
        raise BackupError(
            f"{backup} has no {MANIFEST_NAME}: it is not a complete backup (a backup killed half way has none)."
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BackupError(f"{path} is damaged: {error}") from error
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BackupError(f"{path} is not a sourcebound backup manifest.")
    version = manifest.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise BackupError(
            f"{backup} has backup format version {version!r}; this sourcebound reads up to {FORMAT_VERSION}. "
            "Restore it with the sourcebound version that wrote it "
            f"({manifest.get('sourcebound_version', 'unknown')}) or newer."
        )
    files = manifest.get("files")
    if not isinstance(files, dict) or not all(isinstance(entry, dict) for entry in files.values()):
        raise BackupError(f"{path} is damaged: no file list.")
    return manifest


def _inside(root: Path, relative: str) -> Path:
    path = (root / relative).resolve()
    if root.resolve() not in path.parents:
        raise BackupError(f"The manifest names {relative!r}, outside the backup; refusing it.")
    return path


def authenticate_backup(
    backup: str | os.PathLike, key: BackupKey | None = None, allow_unauthenticated: bool = False
) -> None:
    """
    Check ``manifest.hmac`` against the manifest's bytes under the backup key (the key is never in the backup).

    :param key: The backup key; ``None`` loads it (``backup_key.load_key``; never created here).
    :param allow_unauthenticated: Accept a format 1 backup (made before backups were authenticated) without one.
    :raises BackupError: No key, another key, a changed manifest, or a missing code.
    """
    backup = Path(backup)
    manifest = read_manifest(backup)
    code_path = backup / CODE_NAME
    if not code_path.is_file():
        if manifest["format_version"] < 2 and allow_unauthenticated:
            logger.warning("Restoring %s without authenticating it (a format 1 backup, as asked).", backup)
            return
        if manifest["format_version"] < 2:
            raise BackupError(
                f"{backup} was made before backups were authenticated (format 1, no {CODE_NAME}): nothing proves it "
                "was not changed since. Restore it only if you trust where it was kept: pass --unauthenticated."
            )
        raise BackupError(f"{backup} has no {CODE_NAME}: its manifest cannot be authenticated; refusing it.")
    try:
        key = key if key is not None else load_key(create=False)
        code = json.loads(code_path.read_text(encoding="utf-8"))
        check_manifest_code(key, (backup / MANIFEST_NAME).read_bytes(), code)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BackupError(f"{code_path} is damaged ({error}); the backup cannot be authenticated.") from error
    except BackupKeyError as error:
        raise BackupError(str(error)) from error


def verify_backup(
    backup: str | os.PathLike, key: BackupKey | None = None, allow_unauthenticated: bool = False
) -> dict[str, Any]:
    """
    Check a backup completely: its manifest is authenticated by the backup key (:func:`authenticate_backup`), every
    file listed is there with its size and SHA-256, and no file is there that the manifest does not list.

    :param key: The backup key; ``None`` loads it.
    :param allow_unauthenticated: Accept a format 1 backup without an authentication code.
    :returns: The manifest.
    :raises BackupError: Naming the problem: no key or another key, a changed manifest, or the first missing,
        truncated, altered or unexpected file.
    """
    backup = Path(backup)
    authenticate_backup(backup, key, allow_unauthenticated)
    manifest = read_manifest(backup)
    for relative, entry in sorted(manifest["files"].items()):
        path = _inside(backup, relative)
        if not path.is_file():
            raise BackupError(f"The backup is damaged: {relative} is missing.")
        size = path.stat().st_size
        if size != entry.get("size"):
            raise BackupError(
                f"The backup is damaged: {relative} has {size} bytes, the manifest says {entry.get('size')} "
                "(truncated or altered)."
            )
        if sha256_file(path) != entry.get("sha256"):
            raise BackupError(f"The backup is damaged: {relative} does not match its SHA-256 checksum.")
    listed = set(manifest["files"]) | {MANIFEST_NAME, CODE_NAME}
    for path in _files(backup):
        relative = path.relative_to(backup).as_posix()
        if relative not in listed:
            raise BackupError(f"The backup holds {relative}, which its manifest does not list; refusing it.")
    return manifest


def check_compatible(manifest: dict[str, Any], embedding: dict[str, Any]) -> None:
    """
    Refuse a backup whose embedding model or dimension differs from the current configuration.

    :param embedding: ``{"model", "dimension"}`` the data directory will be served with.
    :raises BackupError: Naming each difference.
    """
    recorded = manifest.get("embedding") or {}
    differences = [
        f"{key} {recorded.get(key)!r} in the backup, {embedding.get(key)!r} configured"
        for key in ("model", "dimension")
        if recorded.get(key) != embedding.get(key)
    ]
    if differences:
        raise BackupError(
            "The backup was made with another embedding configuration: "
            + "; ".join(differences)
            + ". Restore it with the indexing pipeline it was made with (its vectors cannot be mixed with others)."
        )


def data_dir_holder(data_dir: Path, store_path: str) -> str | None:
    """A description of the process holding the data directory's shard, or ``None`` when none does."""
    shard = data_dir / store_path
    if not shard.is_dir():
        return None
    holder = folder_holder(shard)
    if holder is None:
        return None
    return f"process {holder}" if holder else "another process"


def restore_backup(
    backup: str | os.PathLike,
    data_dir: str | os.PathLike,
    *,
    embedding: dict[str, Any],
    replace: bool = False,
    store_definition: dict[str, Any] | None = None,
    key: BackupKey | None = None,
    allow_unauthenticated: bool = False,
) -> dict[str, Any]:
    """
    Restore a verified backup into ``data_dir``.

    Everything is checked before anything is written: the manifest's authentication code under the backup key,
    every checksum, the embedding model and dimension. The files are copied to a temporary directory beside
    ``data_dir``, checked again (and, with ``store_definition``, opened and counted against the manifest), then
    renamed into place. With ``replace`` the
    existing data directory is renamed aside first and deleted only once the restored one is in place.

    :param backup: The backup directory.
    :param data_dir: The data directory to restore into: absent or empty, or any with ``replace``.
    :param embedding: ``{"model", "dimension"}`` of the current configuration.
    :param replace: Restore over an existing data directory (its server must be stopped).
    :param store_definition: The data directory's store (``{"type", "init_parameters"}`` from the indexing
        pipeline): the restored shard is opened with its settings and counted against the manifest before it is
        moved in.
    :param key: The backup key; ``None`` loads it (``SOURCEBOUND_BACKUP_KEY`` or its file).
    :param allow_unauthenticated: Restore a format 1 backup, which has no authentication code.
    :returns: ``{"path", "backup", "counts", "files", "replaced"}``.
    :raises BackupError: On any refusal; ``data_dir`` is then as it was.
    """
    backup = Path(backup).absolute()
    data_dir = Path(data_dir).absolute()
    # Where the target stands is checked first (cheap, and the fix an operator needs first); then the backup.
    store_path = str((read_manifest(backup).get("store") or {}).get("path") or "qdrant")
    if data_dir.exists() and not data_dir.is_dir():
        raise BackupError(f"{data_dir} is a file; restore into a directory.")
    existing = data_dir.exists() and any(data_dir.iterdir())
    if existing:
        holder = data_dir_holder(data_dir, store_path)
        if holder is not None:
            raise BackupError(
                f"A server ({holder}) holds {data_dir}; stop it before restoring into its data directory."
            )
        if not replace:
            raise BackupError(
                f"{data_dir} is not empty; restore into an empty or new directory, or pass --replace to replace it "
                "(the current one is kept aside until the restore has succeeded)."
            )
    manifest = verify_backup(backup, key, allow_unauthenticated)
    check_compatible(manifest, embedding)
    store_path = str((manifest.get("store") or {}).get("path") or "qdrant")  # as authenticated
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = data_dir.parent / f".{data_dir.name}.restoring-{os.getpid()}-{secrets.token_hex(4)}"
    aside: Path | None = None
    try:
        staging.mkdir(mode=0o700)
        for relative, entry in sorted(manifest["files"].items()):
            source = _inside(backup, relative)
            target = staging / relative
            _copy_file(source, target)
            # Private whatever the manifest says (docs/operations.md, "Running the service").
            os.chmod(target, int(entry.get("mode", 0o600)) & 0o700)
            if sha256_file(target) != entry["sha256"]:
                raise BackupError(f"{relative} changed while it was restored; nothing was restored.")
        if store_definition is not None:
            counts = count_store(store_opener(store_definition), staging / store_path)
            if counts != manifest["counts"]["tenants"]:
                raise BackupError(
                    f"The restored index holds {counts}, the manifest says {manifest['counts']['tenants']}; "
                    "nothing was restored."
                )
        _sync_tree(staging)
        if existing:
            aside = data_dir.parent / f".{data_dir.name}.before-restore-{os.getpid()}-{secrets.token_hex(4)}"
            os.rename(data_dir, aside)
        elif data_dir.exists():
            data_dir.rmdir()
        os.rename(staging, data_dir)
        _fsync_dir(data_dir.parent)
    except OSError as error:
        shutil.rmtree(staging, ignore_errors=True)
        if aside is not None and not data_dir.exists():
            os.rename(aside, data_dir)
        raise BackupError(_describe_os_error(error, f"restoring into {data_dir}") + " Nothing was restored.") from error
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        if aside is not None and not data_dir.exists():
            os.rename(aside, data_dir)
        raise
    if aside is not None:
        with contextlib.suppress(OSError):
            shutil.rmtree(aside)
    return {
        "path": str(data_dir),
        "backup": str(backup),
        "created_at": manifest.get("created_at"),
        "counts": manifest["counts"],
        "files": len(manifest["files"]),
        "replaced": existing,
    }
