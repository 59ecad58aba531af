"""
The serving process's heap (docs/operations.md, "Memory"): glibc's malloc keeps memory freed by start-up, and gives
each thread that allocates its own arena (up to 8 per core), which a server with a thread pool fills with
fragments. Both are process settings, so they live here, beside the server's start-up, not in a component.
Elsewhere than glibc both calls do nothing.

Python's cyclic garbage collector is a process setting too: a full collection walks every object the process
tracks, ~310,000 after start-up (modules, pipelines, Haystack, FastAPI, pydantic), and pauses the request it lands
in for a few hundred milliseconds on these cores. :func:`freeze_start_up_objects` moves them out of its reach.
"""

import ctypes
import gc
import logging

logger = logging.getLogger(__name__)

M_ARENA_MAX = -8  # mallopt parameter number (glibc malloc.h)


def _libc():
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:
        return None


def limit_malloc_arenas(arenas: int = 2) -> bool:
    """Cap malloc's arenas (as ``MALLOC_ARENA_MAX`` would) before the server starts its threads; True when set."""
    libc = _libc()
    if libc is None or not hasattr(libc, "mallopt"):
        return False
    return bool(libc.mallopt(M_ARENA_MAX, arenas))


def return_freed_memory() -> None:
    """Collect garbage and hand the heap's free pages back to the system (after start-up, which frees much)."""
    gc.collect()
    libc = _libc()
    if libc is not None and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)


def freeze_start_up_objects() -> int:
    """
    Exclude every object alive now from the cyclic collector's passes (``gc.freeze``): the served process's
    start-up objects live as long as it does, and a full collection no longer walks them. Objects are still freed
    when their last reference goes; only cycles among them would wait for :func:`gc.unfreeze`. Call once, when
    start-up is done and :func:`return_freed_memory` has collected its garbage (so none is frozen), in the serving
    process only (a test process builds many apps).

    :returns: How many objects were frozen.
    """
    gc.freeze()
    return gc.get_freeze_count()
