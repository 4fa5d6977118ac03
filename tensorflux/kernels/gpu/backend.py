"""The array module of GPU devices, and the moves between host and device memory.

Two backends:
- CuPy, when it is installed and finds a GPU: device arrays are `cupy.ndarray`, kernels run
  on the GPU through CuPy (cuBLAS for matrix products, CuPy's elementwise and reduction
  kernels, fused `ElementwiseKernel`s for optimizer updates).
- Simulated GPUs, when `TENSORFLUX_FAKE_GPUS=N` is set and no real GPU is used: N devices
  whose arrays are `FakeDeviceArray`s, NumPy arrays that refuse, as CuPy's do, to be mixed
  with host arrays in one operation. CPU-only machines (CI) so run every GPU kernel, the
  placement onto GPUs and the host<->device transfers, and a kernel that forgets to move an
  input to the device fails there as it would on a GPU.

Kernels see the backend through `xp()` (the array module: `cupy`, or the simulation's
NumPy-backed namespace), `to_device`, `to_host` and `is_device_array`. Values on a GPU
device may also be host (NumPy) arrays: small int32 shape tensors and constants stay in host
memory, as TensorFlow keeps them (`HostMemory` arguments); a kernel moves what it computes
on to the device with `to_device`.
"""

from __future__ import annotations

import os

import numpy as np

from tensorflux.kernels import determinism

_FAKE_ENV = "TENSORFLUX_FAKE_GPUS"


class FakeDeviceArray(np.ndarray):
    """A NumPy array standing for device memory (see the module docstring).

    Operations among FakeDeviceArrays, Python scalars and NumPy scalars give
    FakeDeviceArrays (reductions give 0-d arrays, as CuPy's do); an operation that mixes in
    a host `np.ndarray` raises TypeError, as CuPy does."""

    __array_priority__ = 100.0

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        _reject_host(inputs, ufunc.__name__)
        args = [_unwrap(a) for a in inputs]
        if out is not None:
            _reject_host(out, ufunc.__name__)
            kwargs["out"] = tuple(_unwrap(o) for o in out)
        result = getattr(ufunc, method)(*args, **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _wrap(result)

    def __array_function__(self, func, types, args, kwargs):
        _reject_host_nested(args, func.__name__)
        _reject_host_nested(tuple(kwargs.values()), func.__name__)
        return _wrap(func(*_unwrap_nested(args), **_unwrap_nested(kwargs)))

    def get(self, stream=None) -> np.ndarray:
        """A host copy (cupy.ndarray.get)."""
        return np.array(self.view(np.ndarray))


def _unwrap(a):
    return a.view(np.ndarray) if isinstance(a, FakeDeviceArray) else a


def _unwrap_nested(a):
    if isinstance(a, FakeDeviceArray):
        return a.view(np.ndarray)
    if isinstance(a, (list, tuple)):
        return type(a)(_unwrap_nested(x) for x in a)
    if isinstance(a, dict):
        return {k: _unwrap_nested(v) for k, v in a.items()}
    return a


def _wrap(result):
    if isinstance(result, np.ndarray):
        return result.view(FakeDeviceArray)
    if isinstance(result, np.generic):
        return np.asarray(result).view(FakeDeviceArray)
    if isinstance(result, (list, tuple)) and result and \
            all(isinstance(r, np.ndarray) for r in result):
        return type(result)(r.view(FakeDeviceArray) for r in result)
    return result


def _reject_host(values, what) -> None:
    for v in values:
        if type(v) is np.ndarray:
            raise TypeError(f"Unsupported type {type(v)} in {what}: a host array mixed with "
                            "device arrays (move it with to_device first)")


def _reject_host_nested(values, what) -> None:
    for v in values:
        if isinstance(v, (list, tuple)):
            _reject_host_nested(v, what)
        else:
            _reject_host((v,), what)


class _FakeCupy:
    """The simulation's array module: NumPy's names, giving FakeDeviceArrays."""

    ndarray = FakeDeviceArray

    def __init__(self):
        self._cache = {}

    @staticmethod
    def asarray(a, dtype=None):
        if isinstance(a, FakeDeviceArray) and (dtype is None or a.dtype == dtype):
            return a
        return np.array(_unwrap(a), dtype=dtype).view(FakeDeviceArray)

    @staticmethod
    def array(a, dtype=None, copy=True):
        return np.array(_unwrap(a), dtype=dtype, copy=copy).view(FakeDeviceArray)

    @staticmethod
    def asnumpy(a):
        return a.get() if isinstance(a, FakeDeviceArray) else np.asarray(a)

    @staticmethod
    def get_array_module(*arrays):
        return _FAKE

    def __getattr__(self, name):
        fn = self._cache.get(name)
        if fn is None:
            attr = getattr(np, name)
            if isinstance(attr, type) or not callable(attr):
                fn = attr
            else:
                def fn(*args, _f=attr, **kwargs):
                    _reject_host_nested(args, name)
                    return _wrap(_f(*args, **kwargs))
            self._cache[name] = fn
        return fn


_FAKE = _FakeCupy()


class _Backend:
    """Which backend this process uses, found once."""

    def __init__(self):
        self.cupy = None
        self.count = 0
        self.fake = False
        # TensorFlow runs float32 matrix products and convolutions in TensorFloat-32 on
        # GPUs that have it (tf.config.experimental.enable_tensor_float_32_execution,
        # default on); CuPy reads CUPY_TF32 when imported. TENSORFLUX_GPU_TF32=0: full
        # float32.
        if os.environ.get("TENSORFLUX_GPU_TF32", "1").strip() != "0":
            os.environ.setdefault("CUPY_TF32", "1")
        try:
            import cupy  # noqa: PLC0415 - optional dependency

            n = int(cupy.cuda.runtime.getDeviceCount())
            if n > 0:
                self.cupy, self.count = cupy, n
        except Exception:  # noqa: BLE001 - no CuPy, no driver or no GPU: no real GPUs
            self.cupy = None
        if self.cupy is None:
            fake = os.environ.get(_FAKE_ENV, "").strip()
            if fake:
                try:
                    self.count = max(0, int(fake))
                except ValueError:
                    raise ValueError(f"{_FAKE_ENV} must be a number of devices, got "
                                     f"{fake!r}") from None
                self.fake = self.count > 0
        self.xp = self.cupy if self.cupy is not None else _FAKE
        self.array_type = (self.cupy.ndarray if self.cupy is not None else FakeDeviceArray)
        if self.cupy is not None:
            self.oom_errors = (self.cupy.cuda.memory.OutOfMemoryError,)
        else:
            self.oom_errors = (MemoryError,)


_backend: _Backend | None = None


def backend() -> _Backend:
    global _backend
    if _backend is None:
        _backend = _Backend()
    return _backend


def gpu_count() -> int:
    """How many GPUs this process can use (real ones through CuPy, else simulated ones)."""
    return backend().count


def xp():
    """The array module of GPU kernels: `cupy`, or the simulation's namespace."""
    return backend().xp


def is_device_array(value) -> bool:
    b = backend()
    return b.count > 0 and isinstance(value, b.array_type)


# While a step is captured into a CUDA graph (kernels/gpu/graphs.py), the host values moved
# to the device go through the capture, whose graph keeps their bytes.
capture_upload = None


def to_device(value, dtype=None):
    """`value` in device memory (returned as is when it is there already)."""
    if capture_upload is not None and not isinstance(value, backend().array_type):
        moved = capture_upload(value, dtype)
        if moved is not None:
            return moved
    return backend().xp.asarray(value, dtype=dtype)


def to_host(value):
    """`value` in host memory: a device array is copied back, a copy in flight
    (`to_host_async`) waited for, anything else returned."""
    if is_device_array(value):
        return value.get()
    if type(value) is PendingHost:
        return value.wait()
    return value


class PendingHost:
    """A device-to-host copy in flight (`to_host_async`): `wait()` gives the host array."""

    __slots__ = ("array", "event")

    def __init__(self, array, event):
        self.array, self.event = array, event

    def wait(self) -> np.ndarray:
        if self.event is not None:
            self.event.synchronize()
            self.event = None
        return self.array


def to_host_async(value):
    """A device array's copy to the host, queued on the current stream into pinned memory
    (the thread goes on queueing kernels; the receiver waits, `to_host`); anything else as
    it is."""
    if not is_device_array(value):
        return value
    b = backend()
    if b.cupy is None:
        return PendingHost(value.get(), None)
    import cupyx  # noqa: PLC0415 - present with CuPy

    out = cupyx.empty_pinned(value.shape, value.dtype)
    stream = b.cupy.cuda.get_current_stream()
    try:
        value.get(stream=stream, out=out, blocking=False)
    except TypeError:  # a CuPy without non-blocking copies
        return value.get()
    return PendingHost(out, stream.record())


def on_device(*values) -> tuple:
    """Each array of `values` in device memory (scalars and None as they are)."""
    return tuple(v if v is None or isinstance(v, (int, float, bool)) else to_device(v)
                 for v in values)


def load_library(stem: str, subdirs: tuple[str, ...], sonames: tuple[str, ...]):
    """The CUDA library `stem` (e.g. "libcudnn") through ctypes: the first that loads of
    the files the CUDA Python wheels put under the site packages (`nvidia/<subdir>/lib`),
    then `sonames` on the loader's path. OSError naming the last failure otherwise."""
    import ctypes  # noqa: PLC0415 - only for the GPU libraries
    import glob  # noqa: PLC0415
    import site  # noqa: PLC0415

    names = []
    for root in site.getsitepackages() + [site.getusersitepackages()]:
        for sub in subdirs:
            names += sorted(glob.glob(os.path.join(root, "nvidia", sub, "lib",
                                                   stem + ".so*")))
    last = None
    for name in names + list(sonames):
        try:
            return ctypes.CDLL(name)
        except OSError as e:
            last = e
    raise OSError(f"{stem} not found ({last})")


def scatter_add(target, indices, updates) -> None:
    """target[indices] += updates, adding repeated indices (np.add.at semantics). CuPy adds
    them atomically, in the order the GPU's threads come; with TF_DETERMINISTIC_OPS,
    `scatter_add_in_order`."""
    b = backend()
    if determinism.op_determinism_required():
        scatter_add_in_order(target, indices, updates)
    elif b.cupy is not None:
        import cupyx  # noqa: PLC0415 - present with CuPy

        cupyx.scatter_add(target, indices, updates)
    else:
        np.add.at(_unwrap(target), _unwrap(indices), _unwrap(updates))


def scatter_add_in_order(target, indices, updates) -> None:
    """target[indices] += updates (1-D `indices` into target's rows; `updates` one row per
    index) without atomics: round k adds the k-th occurrence of every index (no index twice
    in a round), so each row gets its updates one at a time in the order of `indices`, as
    np.add.at adds them (the same bits)."""
    rows = target.shape[0]
    flat = np.asarray(to_host(indices)).reshape(-1).astype(np.int64)
    if flat.size == 0:
        return
    flat = np.where(flat < 0, flat + rows, flat)  # -1 and rows-1 are one row
    order = np.argsort(flat, kind="stable")
    starts = np.r_[0, np.flatnonzero(np.diff(flat[order])) + 1]
    counts = np.diff(np.r_[starts, flat.size])
    rank = np.empty(flat.size, np.int64)
    rank[order] = np.arange(flat.size) - np.repeat(starts, counts)
    by_round = np.argsort(rank, kind="stable")  # positions, round by round
    bounds = np.r_[0, np.cumsum(np.bincount(rank))]
    values = updates.reshape((flat.size,) + tuple(target.shape[1:]))
    for r in range(bounds.size - 1):
        pick = by_round[bounds[r]:bounds[r + 1]]
        idx = to_device(flat[pick])
        target[idx] += values[to_device(pick)]


def synchronize() -> None:
    """Waits for every kernel queued on the current device, on any stream (a no-op when
    simulated)."""
    b = backend()
    if b.cupy is not None:
        b.cupy.cuda.Device().synchronize()


def synchronize_stream() -> None:
    """Waits for the kernels queued on the current stream (a traced kernel's end)."""
    b = backend()
    if b.cupy is not None:
        b.cupy.cuda.get_current_stream().synchronize()


def compute_stream():
    """A stream for one GPU device's partitions (None when simulated): a blocking stream,
    so that work on the legacy default stream (fetches, other libraries) stays ordered
    with it both ways."""
    b = backend()
    return None if b.cupy is None else b.cupy.cuda.Stream(non_blocking=False)


def as_strided(x, shape, strides):
    """A view of `x` with `shape` and byte `strides` (read it only)."""
    b = backend()
    if b.cupy is not None:
        return b.cupy.lib.stride_tricks.as_strided(x, shape=shape, strides=strides)
    return np.lib.stride_tricks.as_strided(x, shape=shape, strides=strides, subok=True,
                                           writeable=False)


def simulate_gpus(count: int) -> int:
    """Tests: use `count` simulated GPUs from now on (0: none), unless CuPy drives real ones
    (then nothing changes). Returns the number of GPUs in use afterwards."""
    global _backend
    b = backend()
    if b.cupy is not None:
        return b.count
    previous = os.environ.get(_FAKE_ENV)
    os.environ[_FAKE_ENV] = str(count)
    try:
        _backend = _Backend()
    finally:
        if previous is None:
            del os.environ[_FAKE_ENV]
        else:
            os.environ[_FAKE_ENV] = previous
    return _backend.count
