"""Who else holds an array? Copy-on-write for tensors, the way TensorFlow's buffers work.

Tensors are immutable once produced, but a variable's storage may be updated in place by
assign and apply kernels. To keep every tensor a snapshot, an in-place update happens only
when nobody else holds the stored array (no read of it still alive in a step, no fetch result
the user kept, no queue element); otherwise the kernel copies first. The same test decides
whether a fetched array must be copied before the user gets it, so writing into a fetched
array never changes a variable or a constant.

CPython's reference count answers "who else holds it" exactly. Inside `exclusively_owned`,
the count is the caller's known holders plus two (our parameter and getrefcount's own
argument); tests/kernels/test_buffers.py pins this down for the interpreter in use.
"""

from __future__ import annotations

import sys

import numpy as np

_getrefcount = sys.getrefcount


def exclusively_owned(arr, holders: int = 1) -> bool:
    """True if nothing but the caller's `holders` references keeps `arr` (or its base) alive.

    Args:
      arr: the array the caller wants to write into or hand out.
      holders: the references the caller knows of: 1 when called as
        `exclusively_owned(var.value)` (the variable's slot), 2 if it also holds the array in
        a local variable, and so on.
    """
    if _getrefcount(arr) > holders + 2:
        return False
    base = getattr(arr, "base", None)
    if base is None:
        return True
    # `base` is held by our local name, by `arr`, and by getrefcount's argument.
    return isinstance(base, np.ndarray) and _getrefcount(base) <= 3


# ---- fresh arrays: storage a variable may take without a copy --------------------------

_FRESH_KEY = "buffers.fresh"


def mark_fresh(ctx, arr) -> None:
    """Records that kernel output `arr` was allocated by its kernel in this step (no user
    code and no earlier step has seen it), so that an assign in the same step may make it
    a variable's storage instead of copying it (`take_fresh`). Restore kernels mark the
    tensors they read: a restored checkpoint is then copied once, from the file."""
    container = getattr(ctx, "step_container", None)
    if container is None or type(arr) is not np.ndarray or arr.dtype == object:
        return
    base = arr.base
    if base is not None and getattr(base, "nbytes", None) != arr.nbytes:
        return  # a slice of a larger buffer: kept as storage, it would keep all of it alive
    container.setdefault(_FRESH_KEY, {})[id(arr)] = arr


def take_fresh(ctx, arr) -> bool:
    """True, once, if `arr` was marked by `mark_fresh` in this step. Sharing it further is
    safe under copy-on-write: other holders (a fetch, a queue) keep the variable from
    being updated in place, and fetched arrays that anything else holds are copied."""
    fresh = getattr(ctx, "step_container", {}).get(_FRESH_KEY)
    return fresh is not None and fresh.pop(id(arr), None) is arr

