"""Pausing Python's cyclic garbage collector while a large catalog is loaded or its index reopened.

Loading 100,000 profiles creates millions of small objects that all live on; each time enough of them pile
up the collector walks every tracked object again, which took about 2 of the 5 seconds of loading a
100,000-tool catalog (`python -m bench.latency`, catalog load). None of these steps makes reference cycles
worth collecting on the way, and reference counting still frees everything else at once, so the collector
is paused for their duration and resumes afterwards, with what they created moved to the oldest generation
(walked only by the next full collection, as lasting objects are anyway). Pauses nest and may overlap across
threads: the collector runs again when the last one ends, and only if it was running when the first began.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused_gc"]

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def paused_gc() -> Iterator[None]:
    """Run the body with the cyclic garbage collector off (see the module docstring)."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                _to_oldest()
                gc.enable()


def _to_oldest() -> None:
    """Move every tracked object to the oldest generation without walking them (two list splices): what
    the pause created would otherwise all sit in the young generations, and the next young collection (in
    the first search) would walk millions of objects once more. Skipped when the application froze objects
    itself (``gc.freeze``): ``gc.unfreeze`` would hand its frozen objects back to the collector."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()
