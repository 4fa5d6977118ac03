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
import threading

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



# ---- donated inputs: an output written into an input that nothing else holds -------------
#
# Buffer forwarding, as TensorFlow's `forward_input_or_allocate_output`: an elementwise
# kernel may write its result into one of its inputs when that input's value dies at the
# kernel. Only the executor knows that, so it decides, at a point where it holds the value
# in exactly one place (the generated step's local variable, the dataflow executor's list
# of the node's inputs) and is about to drop it: `donatable` checks that nothing else
# holds it (no other consumer's slot, a variable, a constant, a feed, a fetch, a queue, a
# TensorArray, a cached spectrum, a view), and the kernel, registered with
# `reuses_inputs=(positions...)`, gets `donated=(positions...)` and writes into one of them
# if it has the output's shape and dtype (`donated_output`). A value held by anyone else is
# never donated, so no user-visible array can change.

# Smaller inputs are not donated: the check would cost more than the allocation saves.
DONATE_MIN_BYTES = 64 << 10


def donatable(arr) -> bool:
    """True if `arr`, held by the caller in exactly one place (called as `donatable(v)` or
    `donatable(values[k])`), is held by nothing else and may be donated: a writeable
    ndarray of at least DONATE_MIN_BYTES owning its data or viewing an array only it
    holds."""
    if type(arr) is not np.ndarray or arr.nbytes < DONATE_MIN_BYTES or \
            not arr.flags.writeable or arr.dtype.hasobject:
        return False
    # The caller's one reference, our parameter, getrefcount's argument.
    if _getrefcount(arr) > 3:
        return False
    base = arr.base
    # `base` is held by our local name, by `arr`, and by getrefcount's argument.
    return base is None or (type(base) is np.ndarray and _getrefcount(base) <= 3)


def donations(values: list, positions: tuple) -> tuple:
    """The positions among `positions` whose value in `values` is `donatable`: for a caller
    whose only references to the node's inputs are the slots of the list `values`."""
    return tuple(k for k in positions if donatable(values[k]))


def donated_output(inputs: tuple, donated: tuple, shape: tuple, dtype):
    """The first input at a `donated` position that can hold an output of `shape` and
    `dtype` (C-contiguous, so the output has the layout of a fresh array), or None."""
    for k in donated:
        a = inputs[k]
        if a.shape == shape and a.dtype == dtype and a.flags.c_contiguous:
            return a
    return None


# ---- where a variable's storage lives: a hint from the transport ------------------------
#
# A task that pushes a variable to another task on the same host may keep the variable's
# storage in the shared segment it pushes through, so each push lends it instead of
# copying it (distributed/shm.py `storage_for`, registered here when a segment is made).
# An optimizer's update, about to write the storage, asks `relocate_storage` first.

storage_relocator = None  # fn(arr) -> an array for the variable to keep instead, or None


def relocate_storage(vars_) -> None:
    """Gives each variable of `vars_` (objects with `.value`) the storage the transport
    wants it to keep (see above), if any; the caller then takes the arrays to write as
    usual (copy-on-write)."""
    relocate = storage_relocator
    if relocate is None:
        return
    for v in vars_:
        moved = relocate(v.value)
        if moved is not None:
            v.value = moved


# ---- where an output goes: a hint from the executor -------------------------------------
#
# A kernel whose output the executor knows goes straight to another task through a shared
# segment (its only consumer is a pushed _Send; distributed/shm.py) may allocate that
# output in the segment, so the push sends a descriptor instead of copying the tensor.
# The executor sets the allocator for one kernel call (`with_output_allocator`); a kernel
# that honours it allocates its (one, C-contiguous) output with `empty_output`. Kernels
# that do not simply allocate as before: the hint is only a hint.

_hint = threading.local()


def with_output_allocator(alloc, compute, ctx, *args):
    """`compute(ctx, *args)` with `alloc(shape, dtype) -> ndarray | None` offered for its
    output (taken at most once, on this thread)."""
    _hint.alloc = alloc
    try:
        return compute(ctx, *args)
    finally:
        _hint.alloc = None


def output_offered() -> bool:
    """Whether the executor offers an allocator for this call's output."""
    return getattr(_hint, "alloc", None) is not None


def empty_output(shape: tuple, dtype) -> np.ndarray:
    """An uninitialized C-contiguous array for a kernel's output: from the allocator the
    executor offered for this call, if any and it has room, else `np.empty`."""
    alloc = getattr(_hint, "alloc", None)
    if alloc is not None:
        _hint.alloc = None
        out = alloc(shape, np.dtype(dtype))
        if out is not None:
            return out
    return np.empty(shape, dtype)
