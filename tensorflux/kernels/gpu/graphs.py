"""Whole steps as CUDA graphs: the mechanics (runtime/gpu_graphs.py decides when).

A GPU step launched kernel by kernel costs a Python kernel call and a CuPy launch per node
(~100 for an MLP training step, ~1,000 for GoogLeNet's), more than the GPU needs to run
them. Captured once into a CUDA graph (stream capture: the kernels are recorded, not run),
the step is one launch: the host only copies the step's feeds into fixed buffers and
launches.

What capture requires, and how each requirement is met here:
- Fixed addresses. Every allocation made while capturing is held by the graph (the
  allocator of the capturing thread keeps each block), so no later allocation reuses
  memory a replay writes. Feeds are copied from pinned host buffers into device buffers
  allocated before the capture; the copy is the graph's first node.
- No value read on the host. A kernel that needs a device value on the host (a
  validation, a data-dependent shape) synchronizes, which CuPy refuses while capturing: the
  capture fails and the step runs kernel by kernel, as always.
- Host constants stay valid. A host array moved to the device while capturing (a
  constant, a shape) is copied from a pinned buffer the graph holds (`to_device` calls
  `upload` here): the replay copies the same bytes again.
- Variables keep their buffers. While capturing, a read of a variable copies it (a device
  copy, a node of the graph) and an assignment writes into the stored buffer when shape and
  dtype agree, so that updates happen in place (`capturing()` tells the kernels); the
  runtime checks that each variable the step touched kept its buffer.

Without CuPy, on the simulated GPUs of CPU CI (`simulate(True)`), "capture" runs the
step and "replay" runs it again with the same feed buffers: the runtime's side (keys,
feed buffers, variable checks, fallbacks) is exercised, the CUDA calls are not.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from tensorflux.kernels.gpu import backend, cublas

_ENV = "TENSORFLUX_GPU_GRAPHS"
_simulate = False
_active: _Capture | None = None  # the capture in progress (one at a time per process)
_capture_lock = threading.Lock()


def enabled() -> bool:
    """Whether steps may be captured: real GPUs (or the simulation, when tests ask for
    it), unless TENSORFLUX_GPU_GRAPHS=0."""
    if os.environ.get(_ENV, "1").strip() == "0":
        return False
    b = backend.backend()
    return b.cupy is not None or (_simulate and b.fake)


def simulate(on: bool) -> None:
    """Tests: capture on the simulated GPUs too (see the module docstring)."""
    global _simulate
    _simulate = on


def capturing() -> bool:
    """True on the thread that is capturing a step (kernels then copy variable reads and
    assign in place)."""
    a = _active
    return a is not None and a.thread == threading.get_ident()


_keeping = threading.local()


def keeps_buffers() -> bool:
    """True while capturing on this thread, or running a capturable step the usual way
    (`keeping_buffers`): variable reads copy and updates write in place, so a variable keeps
    the buffer its captured graphs use (copy-on-write would give it a new one)."""
    return capturing() or getattr(_keeping, "on", False)


class keeping_buffers:
    """Context: `keeps_buffers()` on this thread."""

    def __enter__(self):
        self.before = getattr(_keeping, "on", False)
        _keeping.on = True

    def __exit__(self, *exc):
        _keeping.on = self.before


def note_var(var) -> None:
    """Records that the step being captured uses variable `var` (its buffer must not
    change between replays)."""
    a = _active
    if a is not None and a.thread == threading.get_ident():
        a.vars.setdefault(id(var), var)


def upload(value, dtype=None):
    """`backend.to_device` of a host value while capturing (None when not capturing on
    this thread): a device copy whose source bytes the graph keeps."""
    a = _active
    if a is None or a.thread != threading.get_ident():
        return None
    return a.upload(value, dtype)


class _Capture:
    """What one capture collects: the blocks it allocated, the pinned sources of its host
    uploads, the variables its kernels touched."""

    def __init__(self, mech):
        self.mech = mech
        self.thread = threading.get_ident()
        self.held: list = []
        self.vars: dict = {}

    def upload(self, value, dtype):
        h = np.array(value, dtype=dtype, order="C")  # (0-d stays 0-d)
        return self.mech.upload(self, h)


class Feed:
    """One input's fixed buffers: `host` (pinned when on a GPU) and `device`."""

    __slots__ = ("host", "device")

    def __init__(self, host, device):
        self.host, self.device = host, device


def _copy_in(feeds, values) -> None:
    for f, v in zip(feeds, values, strict=True):
        np.copyto(f.host, v)


class _Cuda:
    """CUDA graphs through CuPy, on a stream of their own."""

    def __init__(self):
        self.cp = backend.backend().cupy
        self.stream = self.cp.cuda.Stream(non_blocking=True)
        self._before = self.cp.cuda.Event(disable_timing=True)
        self._done = None
        if cublas.available():
            cublas.prepare(self.stream)  # products while capturing (kernels/gpu/cublas.py)

    def _h2d(self, dst, src: np.ndarray) -> None:
        # The runtime's call itself: CuPy's copies refuse a capturing stream.
        if src.nbytes:
            self.cp.cuda.runtime.memcpyAsync(dst.data.ptr, src.ctypes.data, src.nbytes,
                                             1, self.stream.ptr)  # 1: host to device

    def feeds(self, values) -> list[Feed]:
        import cupyx  # noqa: PLC0415 - present with CuPy
        with self.stream:
            return [Feed(cupyx.empty_pinned(v.shape, v.dtype), self.cp.empty(v.shape, v.dtype))
                    for v in values]

    def fill(self, feeds, values) -> None:
        if self._done is not None:
            self._done.synchronize()  # the last replay has read the pinned buffers
        _copy_in(feeds, values)

    def enqueue_feeds(self, feeds) -> None:
        for f in feeds:
            self._h2d(f.device, f.host)

    def upload(self, cap: _Capture, h: np.ndarray):
        import cupyx  # noqa: PLC0415 - present with CuPy
        cp = self.cp
        src = cupyx.empty_pinned(h.shape, h.dtype)
        src[...] = h
        cap.held.append(src)
        d = cp.empty(h.shape, h.dtype)
        self._h2d(d, src)
        return d

    def capture(self, cap: _Capture, body):
        """Runs `body()` with the stream capturing; (graph, body's result, ran=False)."""
        cp = self.cp
        pool = cp.get_default_memory_pool()

        def alloc(size):
            block = pool.malloc(size)
            cap.held.append(block)
            return block

        with self.stream, cp.cuda.using_allocator(alloc):
            self.stream.begin_capture()
            try:
                result = body()
            except BaseException:
                try:
                    self.stream.end_capture()
                except Exception:  # noqa: BLE001 - the body's error is the one to report
                    pass
                raise
            graph = self.stream.end_capture()
        return graph, result, False

    def replay(self, graph, values):
        """One launch of `graph`; the step's values are the captured ones, rewritten."""
        self.run_on_stream(lambda: graph.launch(stream=self.stream))
        return values

    def to_host(self, v):
        if backend.is_device_array(v):
            return v.get(stream=self.stream)
        return np.array(v, copy=True) if isinstance(v, np.ndarray) else v

    def run_on_stream(self, fn):
        """`fn()` with this stream current (a replay, or a warm-up run: per-stream library
        state), ordered after the caller's stream's earlier work and before its later
        work."""
        caller = self.cp.cuda.get_current_stream()
        self._before.record(caller)
        self.stream.wait_event(self._before)
        with self.stream:
            result = fn()
        self._done = self.stream.record()
        caller.wait_event(self._done)
        return result

    def synchronize(self) -> None:
        self.stream.synchronize()

    @staticmethod
    def snapshot(resources) -> dict:
        """What `restore` needs to undo a failed capture: the variables' arrays (their
        contents are untouched: captured kernels do not run)."""
        return {id(r): (r, r.value, None) for r in resources}

    @staticmethod
    def restore(snap) -> None:
        for r, value, _ in snap.values():
            r.value = value


class _Simulated:
    """The simulated GPUs' stand-in (see the module docstring)."""

    @staticmethod
    def feeds(values) -> list[Feed]:
        return [Feed(np.empty_like(v), backend.to_device(np.zeros_like(v))) for v in values]

    @staticmethod
    def fill(feeds, values) -> None:
        _copy_in(feeds, values)

    def enqueue_feeds(self, feeds) -> None:
        for f in feeds:
            f.device[...] = backend.to_device(f.host)

    def upload(self, cap: _Capture, h: np.ndarray):
        return backend.xp().array(h)

    def capture(self, cap: _Capture, body):
        return body, body(), True

    def replay(self, graph, values):
        return graph()

    def to_host(self, v):
        return backend.to_host(v) if backend.is_device_array(v) else (
            np.array(v, copy=True) if isinstance(v, np.ndarray) else v)

    def run_on_stream(self, fn):
        return fn()

    def synchronize(self) -> None:
        pass

    @staticmethod
    def snapshot(resources) -> dict:
        # Simulated kernels run while "capturing": keep the contents too.
        return {id(r): (r, r.value, None if r.value is None else np.array(r.value))
                for r in resources}

    @staticmethod
    def restore(snap) -> None:
        for r, value, contents in snap.values():
            r.value = value
            if contents is not None:
                value[...] = backend.to_device(contents)


_mechanics = None


def mechanics():
    """The capture mechanics of this process's GPU (CUDA or simulated; one stream and
    cuBLAS handle for every captured step)."""
    global _mechanics
    with _capture_lock:
        if _mechanics is None or (backend.backend().cupy is None) != isinstance(
                _mechanics, _Simulated):
            _mechanics = _Cuda() if backend.backend().cupy is not None else _Simulated()
        return _mechanics


class active_capture:
    """Context: `cap` is the process's capture in progress on this thread (kernels see
    `capturing()`)."""

    def __init__(self, cap: _Capture):
        self.cap = cap

    def __enter__(self):
        global _active
        _capture_lock.acquire()
        _active = self.cap
        backend.capture_upload = upload
        return self.cap

    def __exit__(self, *exc):
        global _active
        _active = None
        backend.capture_upload = None
        _capture_lock.release()


def new_capture(mech) -> _Capture:
    return _Capture(mech)
