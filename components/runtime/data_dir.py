"""
The data directory is private to the user who runs the service (docs/operations.md, "Running the service").

It holds query text, conversations, hashed keys and every tenant's documents, so nobody else on the machine may
read it: folders are ``0700`` and files ``0600``. :func:`private_umask` makes every file this process creates
later private too, whoever creates it (SQLite and its ``-wal``/``-shm`` files, the Qdrant Edge engine, ``git``
for the source mirrors): they all honour the process umask. :func:`tighten_data_dir` takes group and other
permissions off what an earlier version (or a copy) left.

Usage:

```python
from components.runtime.data_dir import secure_data_dir

secure_data_dir("data")   # umask 077, then every existing entry tightened; returns how many changed
```
"""

import logging
import os
import stat
from pathlib import Path

logger = logging.getLogger(__name__)

PRIVATE_UMASK = 0o077


def private_umask() -> int:
    """Set the process umask to ``077`` (new files ``0600``, new folders ``0700``); returns the previous one."""
    return os.umask(PRIVATE_UMASK)


def _chmod_no_follow(entry: str, mode: int) -> None:
    # Through a descriptor opened without following a symlink: an entry swapped for a link meanwhile is not
    # followed out of the folder (Linux has no lchmod).
    try:
        fd = os.open(entry, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return  # gone, swapped for a link, or unreadable even to its owner: left alone
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def tighten_data_dir(path: str | os.PathLike) -> int:
    """
    Take group and other permissions off the folder and everything under it (symlinks are not followed, and
    not changed). Creates the folder (``0700``) when missing.

    :returns: How many entries changed.
    """
    root = Path(path)
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    changed = 0
    for folder, directories, names in os.walk(root):
        for name in [".", *directories, *names]:
            entry = os.path.join(folder, name) if name != "." else folder
            try:
                info = os.lstat(entry)
            except FileNotFoundError:
                continue  # removed meanwhile (a server's files come and go)
            if stat.S_ISLNK(info.st_mode) or not info.st_mode & 0o077:
                continue
            _chmod_no_follow(entry, stat.S_IMODE(info.st_mode) & ~0o077)
            changed += 1
    if changed:
        logger.warning("Made %d entries of the data directory %s private to its owner (0700/0600).", changed, root)
    return changed


def secure_data_dir(path: str | os.PathLike) -> int:
    """:func:`private_umask`, then :func:`tighten_data_dir`; returns how many entries changed."""
    private_umask()
    return tighten_data_dir(path)
