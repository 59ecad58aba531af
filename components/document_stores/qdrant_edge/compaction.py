"""
Compaction: rewrite a shard from its live points so that no file of its folder keeps a deleted point.

Qdrant Edge deletes a point by marking it: its payload stays in the segment's pages and its upsert stays in the
write-ahead log until an optimisation happens to vacuum that segment, and the log is cut only when its files roll
over. Erasure must not wait for that (docs/contract.md, "Deletion"), and the engine has no call that purges in
place, so :func:`compact_shard` builds a new shard from the surviving points in a hidden sibling folder
(``.<name>.compacting``) and swaps the two folders with one atomic ``renameat2(RENAME_EXCHANGE)``:

* while the copy is built, writers wait and queries go on (``ReadWriteLock.writes_paused``); only the swap itself
  (close, exchange, and loading the new shard: about a second at 10k chunks, a few at 100k) holds queries back;
* a crash at any point leaves a whole shard at the path, the old or the new one; the sibling (a half-built copy,
  or the old shard after the swap) is removed the next time the shard is opened, under its lock;
* the new folder's lock file is taken before the swap, so the path is never without a held lock: another process
  still fails with ``ShardLockedError``.

Deletions that are not erasures (invalidation, re-indexing) are recorded in ``deleted_points.json`` in the folder
(how many points, since when) so that a policy above can compact later (docs/contract.md, "Deletion"); an
erasure marks its record ``erase`` before it deletes, so a process that dies before the compaction finishes it
when the shard is next opened.

Usage (the store calls it; see ``QdrantEdgeDocumentStore.purge_deleted``):

```python
with shared.optimize_lock, shared.lock.writes_paused():
    report = compact_shard(shared, config, PAYLOAD_INDEXES)   # {"points": 9866, "seconds": 1.2, ...}
```
"""

import ctypes
import errno
import json
import logging
import os
import shutil
import time
from pathlib import Path
from typing import Any

from qdrant_edge import CountRequest, EdgeConfig, EdgeShard, Point, ScrollRequest, UpdateOperation

from components.document_stores.qdrant_edge.errors import QdrantEdgeStoreError
from components.document_stores.qdrant_edge.shard import (
    SharedShard,
    create_payload_indexes,
    lock_folder,
    open_engine,
    unlock_folder,
)

logger = logging.getLogger(__name__)

PENDING_FILE = "deleted_points.json"
# Our own files in a shard folder that a compacted copy must carry (the engine's own are rebuilt).
CARRIED_FILES = ("point_id_scheme",)
COPY_PAGE = 512
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def staging_path(folder: str | os.PathLike) -> Path:
    """The hidden sibling a compaction builds in (and the old shard goes to after the swap)."""
    folder = Path(folder)
    return folder.with_name(f".{folder.name}.compacting")


def folder_bytes(folder: str | os.PathLike) -> int:
    """Disk blocks the folder's files take, in bytes (memory-mapped files are sparse: their size overstates)."""
    total = 0
    for root, _directories, names in os.walk(folder):
        for name in names:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except FileNotFoundError:
                continue
    return total


# ------------------------------------------------------------------ pending deletions


def read_pending(folder: str | os.PathLike) -> dict[str, Any] | None:
    """The folder's record of deleted points not yet purged (``points``, ``since``, ``erase``), or ``None``."""
    try:
        data = json.loads((Path(folder) / PENDING_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        # A damaged record must not hide deletions: treat it as an erasure to finish.
        return {"points": 0, "since": 0.0, "erase": True}
    if not isinstance(data, dict):
        return {"points": 0, "since": 0.0, "erase": True}
    return data


def note_deleted(shared: SharedShard, points: int, erase: bool = False) -> None:
    """
    Record ``points`` deleted points that the files still hold (call under the write lock, before deleting when
    ``erase``: the record must be on disk before the deletion so that a crash cannot leave an unrecorded erasure).
    """
    if points <= 0 and not erase:
        return
    pending = dict(shared.pending or {"points": 0, "since": time.time(), "erase": False})
    pending["points"] = int(pending.get("points", 0)) + max(points, 0)
    pending["erase"] = bool(pending.get("erase")) or erase
    path = Path(shared.path) / PENDING_FILE
    temporary = path.with_name(PENDING_FILE + ".tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(pending, handle)
        handle.flush()
        if erase:
            os.fsync(handle.fileno())
    os.replace(temporary, path)
    shared.pending = pending


# ------------------------------------------------------------------ the swap


def exchange_folders(first: Path, second: Path) -> None:
    """Swap two folders atomically (Linux ``renameat2(RENAME_EXCHANGE)``)."""
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        raise QdrantEdgeStoreError(
            "Compacting the Qdrant Edge shard needs renameat2(RENAME_EXCHANGE) (Linux with glibc 2.28 or newer)."
        )
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE) != 0:
        code = ctypes.get_errno()
        raise QdrantEdgeStoreError(
            f"Cannot swap {first} and {second} atomically: {os.strerror(code)} "
            f"(errno {errno.errorcode.get(code, code)}); "
            "the data directory's file system must support renameat2(RENAME_EXCHANGE) (ext4, xfs, btrfs, tmpfs do)."
        )


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sync_tree(root: Path) -> None:
    for folder, _directories, names in os.walk(root):
        for name in names:
            _fsync_path(Path(folder) / name)
        _fsync_path(Path(folder))


def remove_staging(folder: str | os.PathLike) -> bool:
    """
    Remove a compaction's leftover sibling (call holding the shard's lock): a half-built copy, or the old shard a
    crash left after the swap. Returns whether there was one.
    """
    staging = staging_path(folder)
    if not staging.exists():
        return False
    shutil.rmtree(staging)
    _fsync_path(staging.parent)
    logger.warning("Removed %s, left by a compaction that did not finish; the shard at %s is whole.", staging, folder)
    return True


def _copy_points(source: EdgeShard, target: EdgeShard) -> int:
    copied = 0
    offset = None
    while True:
        page, offset = source.scroll(ScrollRequest(offset=offset, limit=COPY_PAGE, with_payload=True, with_vector=True))
        if page:
            points = [Point(id=record.id, vector=record.vector, payload=record.payload) for record in page]
            target.update(UpdateOperation.upsert_points(points))
            copied += len(page)
        if offset is None:
            return copied


def compact_shard(shared: SharedShard, config: EdgeConfig, payload_indexes: dict[str, Any]) -> dict[str, Any]:
    """
    Rebuild the shard from its live points and swap the copy in (call inside ``shared.optimize_lock`` and this
    thread's ``shared.lock.writes_paused()``; queries go on until the swap).

    :returns: ``points`` copied, ``bytes_before`` and ``bytes_after`` (disk blocks of the folder) and ``seconds``.
    :raises QdrantEdgeStoreError: If the copy does not hold every live point, or the swap fails; the old shard
        then stays in place, whole and open.
    """
    started = time.perf_counter()
    folder = Path(shared.path)
    staging = staging_path(folder)
    remove_staging(folder)
    shared.flush()
    before = folder_bytes(folder)
    live = shared.shard.count(CountRequest(exact=True))
    staging_lock = lock_folder(str(staging))
    try:
        copy = EdgeShard.create(str(staging), config)
        try:
            create_payload_indexes(copy, payload_indexes)
            copied = _copy_points(shared.shard, copy)
            copy.flush()
            counted = copy.count(CountRequest(exact=True))
        finally:
            copy.close()
        if copied != live or counted != live:
            raise QdrantEdgeStoreError(
                f"Compacting {folder} copied {copied} points ({counted} counted) of {live}; "
                "the shard was left as it was."
            )
        for name in CARRIED_FILES:
            if (folder / name).is_file():
                shutil.copy2(folder / name, staging / name)
        _sync_tree(staging)
    except BaseException:
        unlock_folder(staging_lock)
        shutil.rmtree(staging, ignore_errors=True)
        raise
    copied_at = time.perf_counter()
    with shared.lock.exclusive_in_pause():
        swap_started = time.perf_counter()
        shared.shard.close()
        try:
            exchange_folders(staging, folder)
        except BaseException:
            shared.shard = open_engine(str(folder), config)
            unlock_folder(staging_lock)
            shutil.rmtree(staging, ignore_errors=True)
            raise
        _fsync_path(folder.parent)
        try:
            shared.shard = open_engine(str(folder), config)
        except BaseException:
            # The copy does not open: swap the old shard back rather than serve nothing.
            exchange_folders(staging, folder)
            shared.shard = open_engine(str(folder), config)
            unlock_folder(staging_lock)
            shutil.rmtree(staging, ignore_errors=True)
            raise
        old_lock, shared.lock_fd = shared.lock_fd, staging_lock
        shared.pending = None
        shared.last_flush = time.monotonic()
        swap_s = time.perf_counter() - swap_started
    unlock_folder(old_lock)
    shutil.rmtree(staging)  # the old shard: the only files that held the deleted points
    _fsync_path(folder.parent)
    report = {
        "points": live,
        "bytes_before": before,
        "bytes_after": folder_bytes(folder),
        "seconds": round(time.perf_counter() - started, 3),
        "copy_s": round(copied_at - started, 3),
        # Queries wait for this part only: closing the old shard, the exchange, loading the new one.
        "swap_s": round(swap_s, 3),
    }
    logger.info("Compacted the Qdrant Edge shard at %s: %s", folder, report)
    return report
