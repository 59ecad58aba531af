"""
A small real filesystem for full-disk tests: a tmpfs of a given size, mounted as root (or with passwordless sudo).

```python
with small_filesystem(tmp_path / "disk", "8m") as disk:
    ...   # ENOSPC once about 8 MB are written under disk
```
"""

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path


def _privileged(command: list[str]) -> list[str]:
    if os.geteuid() == 0:
        return command
    sudo = shutil.which("sudo")
    if sudo and subprocess.run([sudo, "-n", "true"], capture_output=True).returncode == 0:
        return [sudo, "-n", *command]
    raise RuntimeError(
        "The full-disk tests mount a small tmpfs: run them as root or with passwordless sudo "
        '(docs/testing.md, "Full-disk tests").'
    )


@contextlib.contextmanager
def small_filesystem(mount_point: Path, size: str) -> Iterator[Path]:
    """Mount a tmpfs of ``size`` (e.g. ``"8m"``) at ``mount_point`` for the block, owned by the current user."""
    mount_point.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        _privileged(["mount", "-t", "tmpfs", "-o", f"size={size},uid={os.getuid()},gid={os.getgid()}", "tmpfs",
                     str(mount_point)]),
        check=True,
    )  # fmt: skip
    try:
        yield mount_point
    finally:
        subprocess.run(_privileged(["umount", "-l", str(mount_point)]), check=False)


def fill(disk: Path, leave_bytes: int) -> Path:
    """Write a filler file so that about ``leave_bytes`` stay free on ``disk``; returns the filler's path."""
    filler = disk / "filler.bin"
    stats = os.statvfs(disk)
    free = stats.f_bavail * stats.f_frsize
    with open(filler, "wb") as handle:
        remaining = max(0, free - leave_bytes)
        block = b"\0" * (1 << 20)
        while remaining > 0:
            handle.write(block[: min(len(block), remaining)])
            remaining -= min(len(block), remaining)
    return filler
