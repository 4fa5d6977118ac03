"""Pausing Python's cyclic garbage collector while tensorflux builds large structures.

Building a step (pruning, optimizing, placing, partitioning and compiling a graph of
thousands of nodes) or importing a GraphDef allocates hundreds of thousands of objects that
all stay alive. Each 700 allocations start a young-generation collection, and every tenth of
those an older one, which walks every tracked object of the process — the user's graph
included. On the graph-optimizer benchmark (7,000 nodes) the collector took 35-60% of a
first run's CPU time, for nothing: none of those objects is garbage. `paused()` turns the
collector off for the body and back on afterwards (only if it was on: a program that runs
with `gc.disable()` keeps it off); nested and concurrent pauses keep it off until the last
one ends. Objects allocated meanwhile are collected normally later.
"""

from __future__ import annotations

import contextlib
import gc
import threading

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextlib.contextmanager
def paused():
    """The cyclic garbage collector is off while the body runs."""
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
                gc.enable()
