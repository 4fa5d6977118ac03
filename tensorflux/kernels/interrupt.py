"""Stopping a long kernel: its step's deadline, cancellation and session close, polled.

A step ends early when its `RunOptions.timeout_in_ms` passes, when it is cancelled (another
partition failed, a blocked step is aborted) or when its Session is closed. Blocking kernels
(queues, Recv) wait on those events; computing kernels cannot be stopped from outside (a
thread cannot be killed, and the C loops run without the GIL), so long ones look for
themselves at chunk boundaries:

  - Every expensive kernel (`kernel(..., expensive=True)`, the convolutions, products and
    pools) runs inside `scope(ctx)`, which the registry adds once for all of them: it makes
    `ctx` the calling thread's *current* step.
  - `check()` raises the step's error when it should stop: DeadlineExceededError past the
    deadline, CancelledError when cancelled or its session is closed. `intra_op.parallel_for`
    calls it before every chunk (on the caller's and the helpers' threads: the loop captures
    the step when it starts), the pools' NumPy paths before every window tap, so a kernel
    stops within one chunk; chunks are sized to take milliseconds (`CHUNK_FLOPS`).
  - The C extension's loops (kernels/cpu/_native.c) cannot call Python: `native_stop()`
    gives them a one-int stop cell and the deadline (time.monotonic()'s clock, which is the
    C library's CLOCK_MONOTONIC); the cell is set by a callback on the step's cancellation
    and on the session's close while the call runs. A C loop that stopped returns False and
    `raise_stopped()` raises the step's error.

  - NumPy kernels whose one call over a large input would run for seconds (TopKV2 and
    sorts, Unique/UniqueWithCounts, Cumsum/Cumprod, the segment reductions, ScatterNd,
    Gather, RandomShuffle's gather, BlockLSTM's input products, SobolSample) cut it into
    blocks with `spans`, which checks the step between them; the blocks give the values of
    one call (independent rows, an unbuffered ufunc.at applied in order, a running sum
    carried over, sorted blocks merged stably, a sequence continued). Sequential loops
    check as they go (BlockLSTM once per time step, TridiagonalSolve every 256 rows).
  - One LAPACK call on a large matrix cannot be cut: it runs as `abandonable`, on a helper
    thread that the step's thread waits for while polling the step; a step that must stop
    raises at once and the call finishes on its own (as TensorFlow's timeout leaves a
    running Eigen kernel), its time cubic in a matrix the resource guard bounded.

  - Kernels that write a large output from a small input (Fill, Tile, the pads, ConcatV2,
    Pack, BroadcastTo, OneHot, Range, LinSpace, SparseToDense, MatrixDiag, a splat Const,
    the random ops, stateful and stateless) write it in C-order blocks above
    BLOCKED_BYTES (`regions`, `copyto`, `full`, `flat_spans`), checking the step between
    blocks; `cost` scales both sizes for kernels that compute each value for tens of
    nanoseconds (Philox draws, rejection samplers). The blocks give the values of one call
    (random streams continue across blocks; a stateless draw starts each block at the
    counter of its first value). Small outputs take the one NumPy call as before.
  - Elementwise kernels that spend tens of nanoseconds a value (SciPy's special
    functions: Igamma, Zeta, Betainc, Lgamma, Digamma, Erf...) compute a large output in
    the same blocks (kernels/cpu/_math_common._heavy).
  - Python loops over elements (string kernels, Unicode, DecodeCSV, ParseExample, set
    operations, crosses, non-max suppression) check the step every EACH_EVERY items
    (`each`; `ticker` for nested loops such as a tensor printed element by element).

Not interrupted, on purpose:
  - py_func / numpy_function / EagerPyFunc run user Python to its end on the step's thread
    (as TensorFlow does: its timeout and Session.close wait for a py_func too), then the
    kernel checks the step, so the step ends with DeadlineExceededError or
    CancelledError, not a value (kernels/cpu/script_ops.py).
  - In-place variable updates (Assign*, Scatter*, ResourceScatter*, the Apply* optimizer
    kernels) run whole: half an applied update would corrupt the variable.

Kernels that only stream over their inputs and outputs once (elementwise ops, reductions,
copies) are bounded instead: their time is linear in bytes some earlier kernel already
allocated, and the resource guard bounds those (framework/resource_guard.py).
scripts/interrupt_sweep.py runs a huge case of every kernel family under a 100 ms deadline.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import threading
import time

import numpy as np

from tensorflux.framework import errors

# Work of one chunk of a compute-bound kernel that polls between chunks: a few milliseconds
# to a few tens of milliseconds of one core.
CHUNK_FLOPS = 2e8

_local = threading.local()


def current():
    """The KernelContext of the expensive kernel running on this thread, or None."""
    return getattr(_local, "ctx", None)


@contextlib.contextmanager
def scope(ctx):
    """Makes `ctx` this thread's current step while a kernel runs."""
    prev = getattr(_local, "ctx", None)
    _local.ctx = ctx
    try:
        yield
    finally:
        _local.ctx = prev


def interruptible(factory):
    """Wraps a kernel factory so that its computes run inside `scope(ctx)` (the registry
    does this for every synchronous expensive kernel)."""

    def make(node):
        compute = factory(node)
        run = scoped_then(compute)
        run.scoped = compute  # a wrapper may take scoped_then(compute, its own `after`)
        return run

    make.__wrapped__ = factory
    return make


def scoped_then(compute, after=None):
    """`compute(ctx, ...)` run inside `scope(ctx)`, then `after(out)` when given, in one
    frame (`interruptible`'s run; with `after`, the memory counting of an expensive
    kernel's outputs, which would otherwise be a frame of its own around it)."""

    def run(ctx, *inputs, **donated):  # `donated`: kernels/buffers.py
        prev = getattr(_local, "ctx", None)
        _local.ctx = ctx
        try:
            out = compute(ctx, *inputs, **donated)
        finally:
            _local.ctx = prev
        if after is not None:
            after(out)
        return out

    run.__wrapped__ = compute
    return run


def polled(items, every: int = 8):
    """Yields `items`, checking the current step (`check`) before every `every`-th one: for
    kernels that loop in Python over window taps or blocks."""
    step = current()
    if step is None:
        yield from items
        return
    for i, item in enumerate(items):
        if i % every == every - 1:
            check(step)
        yield item


def _session_of(ctx):
    return getattr(ctx, "session", None)


def stop_reason(ctx=None) -> errors.OpError | None:
    """The error a kernel of step `ctx` (default: the current one) should stop with, or
    None to go on."""
    if ctx is None:
        ctx = current()
        if ctx is None:
            return None
    deadline = getattr(ctx, "deadline", None)
    if deadline is not None and time.monotonic() > deadline:
        return errors.DeadlineExceededError(
            None, None, "Timed out: the step's deadline (RunOptions.timeout_in_ms) passed "
            "while the kernel ran")
    cm = getattr(ctx, "cancellation", None)
    if cm is not None and cm.is_cancelled:
        return errors.CancelledError(None, None, "The step was cancelled while the kernel "
                                     "ran")
    if getattr(_session_of(ctx), "_closed", False):
        return errors.CancelledError(None, None, "The Session was closed while the kernel "
                                     "ran")
    return None


def check(ctx=None) -> None:
    """Raises the error the kernel of step `ctx` (default: the current one) should stop
    with, if any."""
    err = stop_reason(ctx)
    if err is not None:
        raise err


def raise_stopped(ctx=None) -> None:
    """After a C loop reported that it stopped early: raises why (always raises)."""
    err = stop_reason(ctx)
    raise err if err is not None else errors.CancelledError(
        None, None, "The kernel was stopped before it finished")


@contextlib.contextmanager
def native_stop(ctx=None):
    """(cell, deadline) for a C loop of step `ctx` (default: the current one): `cell` an
    int32 array of one element that becomes nonzero when the step is cancelled or its
    session closed (None outside a step), `deadline` the step's time.monotonic() bound or
    0.0."""
    if ctx is None:
        ctx = current()
    if ctx is None:
        yield None, 0.0
        return
    cell = np.zeros(1, np.int32)

    def stop():
        cell[0] = 1

    undo = []
    for cm in (getattr(ctx, "cancellation", None),
               getattr(_session_of(ctx), "_closing", None)):
        if cm is None:
            continue
        token = cm.get_token()
        if cm.register(token, stop):
            undo.append((cm, token))
        else:
            stop()
    if getattr(_session_of(ctx), "_closed", False):
        stop()
    deadline = getattr(ctx, "deadline", None)
    try:
        yield cell, (0.0 if deadline is None else float(deadline))
    finally:
        for cm, token in undo:
            cm.deregister(token)


# Items per block of `spans` (elements of the items, summed): a block of a streaming NumPy
# kernel (an unbuffered ufunc.at, a sort of rows, a running sum) takes milliseconds.
SPAN_ELEMENTS = 1 << 21


def spans(n: int, item_elements: int, ctx=None, elements: int | None = None):
    """Yields (lo, hi) blocks covering [0, n) in order, each of about `elements` (default
    `SPAN_ELEMENTS`) elements for items of `item_elements` elements each, checking step
    `ctx` (default: the current one) before every block but the first: for NumPy kernels
    whose one call over all items would run for seconds, cut into calls that give the
    same values (rows that are independent, or an unbuffered ufunc.at applied in order)."""
    per = max(1, (SPAN_ELEMENTS if elements is None else elements) // max(1, item_elements))
    if ctx is None:
        ctx = current()
    for lo in range(0, n, per):
        if lo and ctx is not None:
            check(ctx)
        yield lo, min(n, lo + per)


def abandonable(fn, *args, work: float | None = None, ctx=None, **kwargs):
    """`fn(*args, **kwargs)`: one long call that cannot be cut (a LAPACK factorization of
    one large matrix, which releases the GIL), run so that its step still ends on time.
    Inside a step (`ctx`, default the current one) and above `CHUNK_FLOPS` of `work` (when
    given), the call runs on a helper thread while this one polls the step every few
    milliseconds; when the step must stop, its error is raised at once and the call is
    left to finish on its own, its result dropped (what TensorFlow's own timeout does to
    a kernel that is still computing). Its time is bounded: cubic in a matrix that some
    kernel already allocated under the resource guard. The helper is not a daemon thread:
    a process that ends meanwhile waits for the call (a daemon's LAPACK call went on
    while the process tore down, and OpenBLAS's exit freed the buffers it was writing:
    a segfault at exit in about one run of four of the interrupt sweep's SVD case)."""
    if ctx is None:
        ctx = current()
    if ctx is None or (work is not None and work <= CHUNK_FLOPS):
        return fn(*args, **kwargs)
    check(ctx)
    outcome: list = []
    done = threading.Event()

    def call():
        try:
            outcome.append((True, fn(*args, **kwargs)))
        except BaseException as e:  # noqa: BLE001 - re-raised on the step's thread
            outcome.append((False, e))
        finally:
            done.set()

    threading.Thread(target=call, name="tfx-abandonable", daemon=False).start()
    while not done.wait(ABANDON_POLL_S):
        check(ctx)
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


ABANDON_POLL_S = 0.005  # how often a step waiting on an `abandonable` call polls itself


# ---- kernels that write a large output from a small input --------------------------------
#
# Fill, Tile, Pad, BroadcastTo, OneHot, Range, the random ops...: one NumPy call writing
# gigabytes runs for seconds (page faults included) and cannot be stopped. Above
# BLOCKED_BYTES of output they preallocate it and write it in C-order blocks of about
# BLOCK_BYTES, checking the step between blocks; below, their one call runs as before (the
# only cost is a comparison of the size).

BLOCKED_BYTES = 1 << 25  # 32 MiB: tens of milliseconds to write, page faults included
BLOCK_BYTES = 1 << 23  # 8 MiB: a few milliseconds


def blocked(nbytes: int, cost: float = 1) -> bool:
    """Whether an output of `nbytes` is written in blocks; `cost` is the kernel's time per
    byte relative to a fill (a generator computing each value takes tens of times
    longer)."""
    return nbytes * cost > BLOCKED_BYTES


def regions(shape, itemsize: int, ctx=None, cost: float = 1):
    """Yields index tuples addressing blocks of an array of `shape` (elements of
    `itemsize` bytes): each block is contiguous in C order, the blocks come in that order
    and cover the array, each holds at most about BLOCK_BYTES / `cost` (see `blocked`);
    the step `ctx` (default: the current one) is checked before every block but the
    first. An array `blocked` says no to is one block, `()`."""
    shape = tuple(int(d) for d in shape)
    total = itemsize
    for d in shape:
        total *= d
    if not blocked(total, cost):
        yield ()
        return
    if ctx is None:
        ctx = current()
    inner, axis = max(1, int(itemsize * cost)), len(shape) - 1
    while axis > 0 and inner * shape[axis] <= BLOCK_BYTES:
        inner *= shape[axis]  # whole trailing axes fit in a block
        axis -= 1
    per = max(1, BLOCK_BYTES // inner)  # indices of `axis` per block
    first = True
    for outer in np.ndindex(*shape[:axis]):
        for lo in range(0, shape[axis], per):
            if not first and ctx is not None:
                check(ctx)
            first = False
            yield outer + (slice(lo, min(shape[axis], lo + per)),)


def copyto(ctx, dst: np.ndarray, src, casting: str = "unsafe") -> np.ndarray:
    """`np.copyto(dst, src, casting)` (`src` broadcast to `dst`), in blocks checking step
    `ctx` between them when `dst` is large; returns `dst`."""
    if not blocked(dst.nbytes):
        if casting == "unsafe":
            dst[...] = src  # an assignment casts unsafely: the cheaper call
        else:
            np.copyto(dst, src, casting=casting)
        return dst
    if not isinstance(src, np.ndarray):  # (bytes kept whole: no NUL-stripping "S" array)
        src = np.array(src, dtype=dst.dtype if dst.dtype == object else None)
    src = np.broadcast_to(src, dst.shape)
    for idx in regions(dst.shape, dst.itemsize, ctx):
        np.copyto(dst[idx], src[idx], casting=casting)
    return dst


def full(ctx, shape, value, dtype=None) -> np.ndarray:
    """`np.full(shape, value, dtype)`, written in blocks checking step `ctx` when large."""
    dtype = np.asarray(value).dtype if dtype is None else np.dtype(dtype)
    if not blocked(math.prod(shape) * dtype.itemsize):
        return np.full(shape, value, dtype)
    return copyto(ctx, np.empty(shape, dtype), value)


def flat_spans(ctx, n: int, itemsize: int, align: int = 1, cost: float = 1):
    """(lo, hi) blocks of [0, n) elements of `itemsize` bytes: one block when `blocked`
    says no, else blocks of about BLOCK_BYTES / `cost` whose starts are multiples of
    `align`, checking step `ctx` between them (for outputs computed flat, like a random
    stream or a range)."""
    if not blocked(n * itemsize, cost):
        yield 0, n
        return
    per = max(align, int(BLOCK_BYTES / cost) // max(1, itemsize) // align * align)
    yield from spans(n, 1, ctx, elements=per)


def elementwise(ctx, fn, x: np.ndarray, dtype, cost: float) -> np.ndarray:
    """`fn(x)` as an array of `dtype` for an elementwise NumPy `fn` that costs `cost` times
    a fill per output byte: over a large `x`, in `flat_spans` blocks with step `ctx`
    checked between them (each element computed by itself: the values of one call)."""
    dtype = np.dtype(dtype)
    if not blocked(x.size * dtype.itemsize, cost):
        return fn(x).astype(dtype, copy=False)
    flat, out = x.reshape(-1), np.empty(x.size, dtype)
    for lo, hi in flat_spans(ctx, x.size, dtype.itemsize, cost=cost):
        out[lo:hi] = fn(flat[lo:hi])
    return out.reshape(x.shape)


# ---- Python loops over elements (strings, records) ---------------------------------------

# Items of a per-element Python loop between two checks of the step: a few milliseconds at
# about a microsecond an item.
EACH_EVERY = 2048


def each(ctx, items, every: int | None = None, count: int | None = None):
    """`items`, checking step `ctx` (default: the current one) after every `every`
    (default EACH_EVERY) of them: for kernels that loop in Python over the elements of a
    tensor (string kernels, record parsers). Outside a step, or for at most `every` items
    (`count`, else their len() when they have one), `items` itself."""
    every = EACH_EVERY if every is None else every
    if count is None and hasattr(items, "__len__"):
        count = len(items)
    if count is not None and count <= every:
        return items
    if ctx is None:
        ctx = current()
        if ctx is None:
            return items
    return _each(ctx, items, every)


def _each(ctx, items, every: int):
    it = iter(items)
    while True:
        chunk = list(itertools.islice(it, every))
        if not chunk:
            return
        yield from chunk
        if len(chunk) < every:
            return
        check(ctx)


def no_tick() -> None:
    """A ticker that never checks (see `ticker`)."""


def ticker(ctx, every: int | None = None):
    """A function to call once per item of a nested Python loop (a tensor printed element
    by element): every `every` (default EACH_EVERY) calls it checks step `ctx` (default:
    the current one). Outside a step, a function that does nothing."""
    if ctx is None:
        ctx = current()
        if ctx is None:
            return no_tick
    every = EACH_EVERY if every is None else every
    count = [0]

    def tick() -> None:
        count[0] += 1
        if count[0] >= every:
            count[0] = 0
            check(ctx)

    return tick
