"""Intra-op parallelism: one big kernel split over the cores.

BLAS runs single-threaded in a tensorflux process (tensorflux/kernels/cpu/_blas.py says why).
A kernel with enough work cuts it into chunks (a few images of a batch, a block of matrix
rows, a slice of a flat array) and `parallel_for` runs them on the calling thread and on up
to `parts - 1` helper threads of a shared pool. NumPy and BLAS release the GIL, so chunks
run in parallel. (A helper needs the GIL to start each chunk, ~0.1 ms in a busy step: the
loops of the C extension, kernels/cpu/native.py, split over a pool of its own that never
takes it, with the same `workers(ctx)` count.)

Chunks are claimed dynamically, one at a time, by whichever thread is free; the caller
claims them too and waits only for chunks that a helper has claimed and not finished. So
when another process holds a core, the helper that lost its core simply claims fewer
chunks (or none, if it never gets to run), and the step slows by at most one chunk, not
by a static half of every kernel. Waiting is a blocking wait, never a spin (the C pool's
helpers spin up to 300 us between calls, but only while the machine has a core to spare:
kernels/cpu/_pool.h `helper_wait`).

The threading policy is decided here, in one place, for every thread tensorflux runs:
  - BLAS: one thread per call (kernels/cpu/_blas.py, through threadpoolctl), so that the
    products never spin-wait on cores other processes hold;
  - intra-op: `intra_op_threads(config)` threads per big kernel (the caller and helpers of
    this module's pool, or of the C extension's GIL-free pool, which takes the same count):
    ConfigProto.intra_op_parallelism_threads when > 0, else TF_NUM_INTRAOP_THREADS when set
    (TensorFlow reads that variable too), else the cores this process may run on (its CPU
    affinity, not the machine's core count); a session resolves them once, when created;
  - inter-op: `inter_op_threads(config)` threads per device for kernels that run beside
    each other (the dataflow executor hands expensive kernels to them when other nodes are
    ready too): ConfigProto.inter_op_parallelism_threads when > 0; when negative, none —
    every kernel runs on the caller's thread, as TensorFlow documents; else
    TF_NUM_INTEROP_THREADS when set, else the usable cores.
  - `intra_op_parallelism_threads == 1` also makes the CPU devices of a session run their
    partitions side by side rather than merged on one thread (runtime/exec_options.py).
Workers per kernel (`workers(ctx)`): `intra_op_threads` of the kernel's session's config,
also for the expensive kernels that inter-op threads run at the same time (an executor
brackets each with `kernel_started`/`kernel_finished`; `running()` counts them): a kernel's
plan (its chunks, and with them a product's bits) never depends on what runs beside it,
and the C pool serves several splits at once (kernels/cpu/_pool.h). Beside a competing
process the kernel shares the cores per runnable thread, so two products that each split
get more of them than two on one thread each (BENCHMARKS.md, "Two splits at once");
always 1 while BLAS is multi-threaded (someone set it so: BLAS already parallelizes the
products) or its thread count is unknown. Small work is never split: below `MIN_FLOPS`
(compute-bound kernels) or `MIN_ELEMENTS` (memory-bound ones) a thread hand-off (~20-50 us)
costs more than it saves.

Chunks are also where a long kernel stops early: `parallel_for` checks the step's deadline
and cancellation (kernels/interrupt.py) before each chunk it starts, on every thread, and a
stop raises the step's error like a failing chunk.

Every chunk writes a disjoint part of the output, or (`parallel_sum`) adds into the
accumulator of its group: a fixed run of consecutive chunks, added one after another in
chunk order, the groups then added in group order. Which thread runs which chunk, and when,
never changes a value: the chunks, the groups and every addition follow from the sizes and
`parts` alone, so a seeded program gives the same bits in every run (with another thread
count they may differ, as TensorFlow's do). Per-thread objects (`per_thread`) are scratch
buffers only, never partial sums (they would be added in the order the threads came).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

from tensorflux.kernels import interrupt
from tensorflux.kernels.cpu import _blas

MIN_FLOPS = 2e7  # below this a compute-bound kernel runs on the calling thread only
MIN_ELEMENTS = 1 << 18  # the same for memory-bound kernels (elements of the output)
CHUNK_ELEMENTS = 1 << 17  # chunk size of memory-bound kernels (512 KiB of float32)
_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()
_cores: int | None = None


def blas_threads() -> int:
    """Threads NumPy's BLAS uses per call (0 when unknown)."""
    return _blas.blas_threads()


def cores() -> int:
    """The cores this process may run on."""
    global _cores
    if _cores is None:
        _cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
            (os.cpu_count() or 1)
    return _cores


def _env_threads(name: str) -> int:
    """A positive thread count from the environment variable `name`, else 0."""
    try:
        n = int(os.environ.get(name, "0"))
    except ValueError:
        return 0
    return max(n, 0)


def requested_intra_op_threads(config=None) -> int:
    """The intra-op thread count `config` (a ConfigProto or None) or TF_NUM_INTRAOP_THREADS
    asks for; 0 when neither does."""
    n = getattr(config, "intra_op_parallelism_threads", 0) if config is not None else 0
    return n if n > 0 else _env_threads("TF_NUM_INTRAOP_THREADS")


def intra_op_threads(config=None) -> int:
    """Threads one big kernel may use in a session with `config` (a ConfigProto or None)."""
    return requested_intra_op_threads(config) or cores()


def inter_op_threads(config=None) -> int:
    """Threads of a device's inter-op pool in a session with `config`; 0: none (every
    kernel runs on the caller's thread)."""
    n = getattr(config, "inter_op_parallelism_threads", 0) if config is not None else 0
    if n > 0:
        return n
    if n < 0:
        return 0
    return _env_threads("TF_NUM_INTEROP_THREADS") or cores()


_running = 0  # expensive kernels that executors run side by side now
_running_lock = threading.Lock()


def kernel_started() -> None:
    """An executor is starting an expensive kernel that may run beside others (counted
    from when it is handed to an inter-op thread, so that the kernels of a pair see each
    other however their threads start): while n such kernels run, each splits over 1/n of
    the intra-op threads. Each call is matched by one `kernel_finished()`."""
    global _running
    with _running_lock:
        _running += 1


def kernel_finished() -> None:
    """The kernel counted by `kernel_started` has ended."""
    global _running
    with _running_lock:
        _running -= 1


def workers(ctx=None) -> int:
    """How many threads a big kernel running in `ctx` (a KernelContext, or None) may use:
    the configured intra-op threads, whatever else runs beside it (so that its plan, and
    with it its bits, do not depend on the moment). A session fixes its count when it is
    created (its `_intra_op_threads`; TensorFlow reads TF_NUM_INTRAOP_THREADS as it makes a
    session's devices), so a kernel call reads no environment variable; kernels outside a
    session read it. A step works its count out once, at its first call, and keeps it in
    its context (`KernelContext.workers`): a change of NumPy's BLAS threads takes effect
    at the next step."""
    n = getattr(ctx, "workers", 0)
    if n:
        return n
    if blas_threads() != 1:
        n = 1
    else:
        session = getattr(ctx, "session", None)
        n = getattr(session, "_intra_op_threads", 0)
        n = n if n > 0 else intra_op_threads(getattr(session, "_config", None))
    if ctx is not None:
        try:
            ctx.workers = n
        except AttributeError:  # not a KernelContext
            pass
    return n


def running() -> int:
    """The expensive kernels that executors run side by side now (`kernel_started`)."""
    return _running


def _get_pool() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        with _lock:
            if _pool is None:
                # Threads start lazily and idle ones are reused, so the pool grows only to
                # the widest split actually requested.
                _pool = ThreadPoolExecutor(max_workers=64, thread_name_prefix="tfx-intra-op")
    return _pool


def _forget_pool_in_child() -> None:
    """A forked child has none of the pool's threads: it starts a pool of its own. (Even
    with the stale one nothing would hang: the caller runs every chunk no helper claims.)"""
    global _pool, _lock, _running, _running_lock
    _pool, _lock = None, threading.Lock()
    _running, _running_lock = 0, threading.Lock()  # no kernel of the parent runs here


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


class _Loop:
    """The shared state of one `parallel_for`: the next chunk to claim, how many claimed
    chunks are still running, and the first error (which stops further claims)."""

    __slots__ = ("fn", "n", "grain", "count", "next", "running", "error", "cv", "step")

    def __init__(self, fn, n: int, grain: int, step):
        self.fn, self.n, self.grain, self.step = fn, n, grain, step
        self.count = -(-n // grain)
        self.next = 0
        self.running = 0
        self.error: BaseException | None = None
        self.cv = threading.Condition(threading.Lock())

    def work(self) -> None:
        """Claims and runs chunks until none is left or one has failed (on a helper, with
        the caller's step as the thread's current one: kernels/interrupt.py)."""
        with interrupt.scope(self.step):
            self._work()

    def _work(self) -> None:
        cv = self.cv
        while True:
            with cv:
                if self.error is not None or self.next >= self.count:
                    return
                i = self.next
                self.next += 1
                self.running += 1
            lo = i * self.grain
            try:
                interrupt.check(self.step)
                self.fn(lo, min(self.n, lo + self.grain))
            except BaseException as e:  # noqa: BLE001 - re-raised by the caller
                with cv:
                    if self.error is None:
                        self.error = e
            with cv:
                self.running -= 1
                if self.running == 0:
                    cv.notify_all()

    def close(self) -> None:
        """Ends the loop for helpers that have not claimed a chunk yet and drops `fn`.

        A helper whose thread has not run yet (busy, asleep, or without a core) still holds
        `self.work` in the pool's queue, and one that has just finished its last chunk holds
        it until its thread runs again. Neither may keep `fn`, and the arrays it captured (a
        kernel's inputs, outputs and spectra), alive after the kernel returned: such late
        frees raised a step's peak of live memory at random steps, and with the heap keeping
        its peak pages (kernels/cpu/_blas.py) the resident set crept up step after step
        (BENCHMARKS.md, "Steady steps"). After `wait` no claimed chunk runs any more."""
        with self.cv:
            self.next = self.count
        self.fn = None

    def wait(self) -> None:
        """After the caller's own `work`: returns when no claimed chunk is running any more
        (every chunk is then done, unless one failed); raises the first error."""
        with self.cv:
            while self.running:
                self.cv.wait()
        if self.error is not None:
            raise self.error


def parallel_for(fn, n: int, grain: int, parts: int) -> None:
    """Runs `fn(lo, hi)` over [0, n) in chunks of `grain` (the last may be shorter), on this
    thread and up to `parts - 1` pool threads, chunks claimed dynamically. Before each chunk
    the running step's deadline and cancellation are checked (`interrupt.check`)."""
    grain = max(1, grain)
    step = interrupt.current()
    if parts <= 1 or n <= grain:
        for lo in range(0, n, grain):
            if step is not None:
                interrupt.check(step)
            fn(lo, min(n, lo + grain))
        return
    loop = _Loop(fn, n, grain, step)
    pool = _get_pool()
    for _ in range(min(parts, loop.count) - 1):
        pool.submit(loop.work)
    try:
        loop.work()
        loop.wait()
    finally:
        loop.close()


# Accumulators of a split `parallel_sum` per thread: more than one, so that a thread that
# finished its groups' chunks finds another group to take chunks from ...
GROUPS_PER_PART = 2
# ... unless they would take more than this: then one per thread (a big filter gradient's,
# 36 x 512 x 512 float32 for a Winograd layer, is 38 MB).
SUM_BYTES = 64 << 20


def sum_groups(count: int, parts: int, nbytes: int = 0) -> int:
    """The accumulators (groups of consecutive chunks) of a `parallel_sum` of `count`
    chunks over `parts` threads, each of `nbytes`: one without a split, else
    GROUPS_PER_PART per thread (no more than SUM_BYTES beyond one per thread), at most one
    per chunk. A function of the plan only, never of the moment."""
    if parts <= 1 or count <= 1:
        return 1
    groups = GROUPS_PER_PART * parts
    if groups * nbytes > SUM_BYTES:
        groups = max(parts, SUM_BYTES // max(1, nbytes))
    return min(count, groups)


class _GroupLoop(_Loop):
    """The shared state of one split `parallel_sum`. The chunks are cut into `groups` runs
    of consecutive chunks, each with an accumulator of its own that its chunks add into one
    after another, in chunk order: a group is worked by one thread at a time (`busy`). A
    free thread takes the next chunk of the free group with the most chunks left (the
    lowest group on a tie), so the groups drain evenly and a thread that lost its core
    holds the others back by about one chunk, as in `parallel_for`. `running` counts the
    threads inside; a thread leaves when no free group has a chunk left (the threads that
    hold the others finish them), so when none is inside every chunk is done, unless one
    failed."""

    __slots__ = ("bounds", "taken", "busy", "accs", "make")

    def __init__(self, fn, n: int, grain: int, step, groups: int, make, first):
        super().__init__(fn, n, grain, step)
        self.bounds = [g * self.count // groups for g in range(groups + 1)]
        self.taken = self.bounds[:-1]  # each group's next chunk
        self.busy = [False] * groups
        self.accs: list = [first] + [None] * (groups - 1)
        self.make = make

    def _claim(self, held: int | None):
        """(cv held) Releases group `held` (None: none) and takes the next chunk:
        (group, chunk), or None when no free group has one left or a chunk failed."""
        if held is not None:
            self.busy[held] = False
        if self.error is not None:
            return None
        best, most = -1, 0
        for g, busy in enumerate(self.busy):
            left = self.bounds[g + 1] - self.taken[g]
            if left > most and not busy:
                best, most = g, left
        if best < 0:
            return None
        self.busy[best] = True
        self.taken[best] += 1
        return best, self.taken[best] - 1

    def _work(self) -> None:
        cv = self.cv
        with cv:
            got = self._claim(None)
            if got is None:
                return
            self.running += 1
        while True:
            g, i = got
            lo = i * self.grain
            try:
                interrupt.check(self.step)
                acc = self.accs[g]
                if acc is None:
                    acc = self.accs[g] = self.make()
                self.fn(lo, min(self.n, lo + self.grain), acc)
            except BaseException as e:  # noqa: BLE001 - re-raised by the caller
                with cv:
                    if self.error is None:
                        self.error = e
            with cv:
                got = self._claim(g)
                if got is None:
                    self.running -= 1
                    if self.running == 0:
                        cv.notify_all()
                    return

    def close(self) -> None:
        """As `_Loop.close`: no chunk is taken any more, `fn` and `make` are dropped."""
        with self.cv:
            self.taken = self.bounds[1:]
        self.fn = self.make = None


def parallel_sum(fn, n: int, grain: int, parts: int, make):
    """The sum of what `fn(lo, hi, acc)` adds into `acc` over [0, n) in chunks of `grain`,
    on this thread and up to `parts - 1` pool threads, in a fixed order: the chunks are cut
    into `sum_groups(count, parts, nbytes)` groups of consecutive chunks, each group's
    chunks add into the group's accumulator (an array of `nbytes` that `make()` returns,
    zeros) in chunk order, and the accumulators are added in group order (`add_in_order`).
    The result depends on `n`, `grain`, `parts` and the accumulator's size only, never on
    which thread ran which chunk (`_GroupLoop`). The step is checked before each chunk, as
    in `parallel_for`. Returns the first group's accumulator holding the total (`make()`
    when n is 0)."""
    grain = max(1, grain)
    count = -(-n // grain) if n > 0 else 0
    first = make()
    if count == 0:
        return first
    groups = sum_groups(count, parts, first.nbytes)
    if groups == 1:
        acc = first
        step = interrupt.current()
        for lo in range(0, n, grain):
            if step is not None:
                interrupt.check(step)
            fn(lo, min(n, lo + grain), acc)
        return acc
    loop = _GroupLoop(fn, n, grain, interrupt.current(), groups, make, first)
    pool = _get_pool()
    for _ in range(min(parts, groups) - 1):
        pool.submit(loop.work)
    try:
        loop.work()
        loop.wait()
        accs = loop.accs
    finally:
        loop.close()
    return add_in_order(accs, parts)


def add_in_order(arrays: list, parts: int = 1):
    """arrays[0] += arrays[1], then arrays[2], ... (every element summed in list order),
    over blocks of elements on the intra-op threads when big; returns arrays[0]."""
    total = arrays[0]
    rest = arrays[1:]
    if not rest:
        return total
    if total.size < MIN_ELEMENTS or parts <= 1 or \
            not all(a.flags.c_contiguous and a.shape == total.shape for a in arrays):
        for a in rest:
            total += a
        return total
    flat = total.reshape(-1)
    others = [a.reshape(-1) for a in rest]

    def add(lo, hi):
        t = flat[lo:hi]
        for a in others:
            t += a[lo:hi]

    parallel_rows(add, flat.size, flat.size, parts)
    return total


def grain_for(n: int, parts: int, work: float, min_work: float = MIN_FLOPS,
              chunks_per_part: int = 4) -> int:
    """A chunk size for `n` items of total `work`: all of them when `work` is below
    `min_work` (no split), else about `chunks_per_part` chunks per thread (small enough that
    a thread losing its core costs little, large enough to amortize a chunk's overhead).
    Never more than about `interrupt.CHUNK_FLOPS` of work per chunk, so that a long kernel
    polls its step between chunks (`bounded_grain`)."""
    if parts <= 1 or work < min_work:
        return bounded_grain(max(1, n), n, work)
    return bounded_grain(max(1, -(-n // (parts * chunks_per_part))), n, work)


def bounded_grain(grain: int, n: int, work: float, floor: int = 1) -> int:
    """`grain` items of `n` (of total `work`), cut so that one chunk does at most about
    `interrupt.CHUNK_FLOPS` (but never below `floor` items)."""
    if n <= 0 or work <= interrupt.CHUNK_FLOPS:
        return max(1, grain)
    cap = int(n * interrupt.CHUNK_FLOPS // work)
    return max(1, floor, min(grain, cap))


def per_thread(make):
    """(get, values): `get()` returns the calling thread's own object (made by `make()` on
    its first call), `values()` all of them; for scratch buffers inside `parallel_for`
    (never for partial sums: which thread ran which chunks changes from run to run, so
    their sums would too; `parallel_sum` adds in a fixed order)."""
    made: dict[int, object] = {}

    def get():
        key = threading.get_ident()
        obj = made.get(key)
        if obj is None:
            obj = made[key] = make()
        return obj

    return get, lambda: list(made.values())


def row_grain(rows: int, size: int) -> int:
    """Rows per chunk of a memory-bound kernel over `size` elements in `rows` rows (of a
    leading axis): about CHUNK_ELEMENTS (cache-sized: a kernel of several passes keeps its
    temporaries in cache, split or not); all of them below MIN_ELEMENTS."""
    if size < MIN_ELEMENTS:
        return max(1, rows)
    return max(1, rows * CHUNK_ELEMENTS // max(1, size))


def parallel_rows(fn, rows: int, size: int, parts: int) -> None:
    """`parallel_for` for a memory-bound kernel over `size` elements in `rows` rows, in
    chunks of `row_grain` rows (one call below MIN_ELEMENTS)."""
    if size < MIN_ELEMENTS:
        fn(0, rows)
        return
    parallel_for(fn, rows, row_grain(rows, size), parts)


def split_elementwise(fn, out, *arrays, parts: int):
    """Runs `fn(out[lo:hi], *(a[lo:hi] ...))` over chunks of the leading axis (in parallel
    when big and `parts` > 1); returns `out`. Arrays must share `out`'s leading axis."""
    if out.ndim == 0 or parts <= 1 or out.size < MIN_ELEMENTS:
        fn(out, *arrays)
        return out

    def work(lo, hi):
        fn(out[lo:hi], *(a[lo:hi] for a in arrays))

    parallel_rows(work, out.shape[0], out.size, parts)
    return out
