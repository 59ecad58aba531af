"""The serving process's heap settings (docs/operations.md, "Memory")."""

import platform
import subprocess
import sys
import textwrap

import pytest

GLIBC = platform.libc_ver()[0] == "glibc"


def _resident_kib() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


@pytest.mark.unit
@pytest.mark.skipif(not GLIBC, reason="glibc's malloc only (the Debian machines and the image)")
class TestMemory:
    def test_limit_malloc_arenas_is_accepted(self):
        # A fresh process: the setting belongs before any thread allocates.
        code = "from hayhooks_app.memory import limit_malloc_arenas; print(limit_malloc_arenas())"
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert result.stdout.strip() == "True"

    def test_return_freed_memory_gives_freed_heap_back(self):
        # Objects over 512 bytes come from malloc's heap (smaller ones from Python's own arenas, larger from mmap).
        code = textwrap.dedent(
            """
            from hayhooks_app.memory import return_freed_memory
            from tests.unit.hayhooks_app.test_memory import _resident_kib
            import gc
            gc.disable()
            blocks = [bytes(1000) + str(i).encode() for i in range(150_000)]
            keep = blocks[-1]  # the newest object pins the top of the heap: plain free() cannot shrink it
            del blocks
            before = _resident_kib()
            return_freed_memory()
            print(before - _resident_kib())
            """
        )
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert int(result.stdout.strip()) > 50_000, "malloc_trim returned less than 50 MB of ~150 MB freed"

    def test_freeze_start_up_objects_keeps_them_from_the_collector(self):
        # A fresh process: freezing is process-wide. The frozen objects are not walked by later collections; what
        # is made afterwards is, and an object dropped by its last reference is still freed.
        code = textwrap.dedent(
            """
            import gc, weakref
            from hayhooks_app.memory import freeze_start_up_objects

            class Node:
                pass

            kept = [Node() for _ in range(1000)]
            frozen = freeze_start_up_objects()
            late = Node()
            tracked = {id(o) for o in gc.get_objects()}
            probe = Node()
            dropped = weakref.ref(probe)
            del probe
            print(frozen >= 1000, id(kept[0]) not in tracked, id(late) in tracked, dropped() is None)
            """
        )
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert result.stdout.split() == ["True", "True", "True", "True"]
