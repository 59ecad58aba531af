"""
Reading a file named relative to a folder, without a window between checking the name and opening it.

Checking a path (resolved, inside the folder, a regular file, small enough) and then opening it by name lets a
symbolic link swapped in between lead the open anywhere. :func:`read_file_beneath` instead opens every component
of the path relative to the folder's descriptor with ``O_NOFOLLOW`` (a link anywhere in the path is refused, never
followed), then checks what it opened (``fstat``: a regular file, within the size limit) and reads that same
descriptor, at most the limit.

Usage:

```python
from components.runtime.files_beneath import read_file_beneath

data = read_file_beneath(Path("/srv/shared"), "guides/parking.md", max_bytes=50 * 2**20)
```
"""

import errno
import os
import stat
from pathlib import Path, PurePosixPath


class UnsafeFileError(ValueError):
    """The name cannot be read safely beneath the folder; the message says why (no path outside it is named)."""


_READ_STEP = 1 << 20


def _parts(relative: str) -> tuple[str, ...]:
    if not isinstance(relative, str) or not relative or "\0" in relative:
        raise UnsafeFileError("not a relative file name")
    path = PurePosixPath(relative)
    if path.is_absolute():
        raise UnsafeFileError("an absolute path (only names under the folder are read)")
    if any(part == ".." for part in path.parts):
        raise UnsafeFileError("'..' leads outside the folder")
    parts = tuple(part for part in path.parts if part != ".")
    if not parts:
        raise UnsafeFileError("not a file name")
    return parts


def read_file_beneath(root: str | os.PathLike, relative: str, max_bytes: int) -> bytes:
    """
    The bytes of the regular file ``relative`` under ``root``.

    :param root: The folder (itself opened as configured: it may be a link an operator set up).
    :param relative: A relative path; no component may be ``..`` or a symbolic link.
    :param max_bytes: The largest file read.
    :returns: The file's bytes.
    :raises UnsafeFileError: For an absolute path, ``..``, a symbolic link anywhere in the path, a missing file,
        something other than a regular file, or a file over ``max_bytes``.
    """
    parts = _parts(relative)
    descriptors: list[int] = []
    try:
        try:
            current = os.open(Path(root), os.O_RDONLY | os.O_DIRECTORY)
            descriptors.append(current)
            for part in parts[:-1]:
                current = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=current)
                descriptors.append(current)
            # O_NONBLOCK: a FIFO put there must not hang the reader; it is refused below as not a regular file.
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY, dir_fd=current)
            descriptors.append(fd)
        except OSError as error:
            if error.errno in (errno.ELOOP, errno.ENOTDIR):
                raise UnsafeFileError("a symbolic link (or not a folder) in the path: links are not followed") from None
            if error.errno == errno.ENOENT:
                raise UnsafeFileError("no such file") from None
            raise UnsafeFileError(f"cannot be opened ({os.strerror(error.errno or 0)})") from None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeFileError("not a regular file")
        if info.st_size > max_bytes:
            raise UnsafeFileError(f"over the size limit of {max_bytes} bytes")
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, min(_READ_STEP, max_bytes + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > max_bytes:  # it grew after the check
                raise UnsafeFileError(f"over the size limit of {max_bytes} bytes")
        return b"".join(chunks)
    finally:
        for descriptor in reversed(descriptors):
            os.close(descriptor)
