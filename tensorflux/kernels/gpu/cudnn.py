"""2-D convolutions through cuDNN's C API (ctypes), for the GPU kernels of Conv2D and its
gradients: the library PyTorch and TensorFlow use, found where the CUDA Python packages put
it (`nvidia/cudnn/lib/libcudnn.so.9`) or on the loader path. CuPy 14 has no cuDNN module.

NHWC data (TensorFlow's layout) and KRSC filters (TF's HWIO filter transposed); symmetric
padding (TF's asymmetric SAME padding is applied to the input first); algorithms chosen by
cuDNN's own benchmark (`cudnnFind...`) once per shape and cached, as TF's autotuning and
PyTorch's `cudnn.benchmark` do. The fastest one measured may differ from run to run, and
some algorithms add with atomics: with TF_CUDNN_DETERMINISTIC or TF_DETERMINISTIC_OPS set,
the choice is the deterministic algorithm of lowest number that ran (`_choose`), as
TensorFlow picks the first deterministic one that works rather than the fastest.
Math: TensorFloat-32 allowed unless TENSORFLUX_GPU_TF32=0.

`available()` is False when the library or a symbol is missing, or a call failed once (the
caller's GEMM path then serves; the reason is logged once).
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading

import numpy as np

from tensorflux.kernels import determinism
from tensorflux.kernels.gpu import backend

_log = logging.getLogger("tensorflux")

_NHWC, _CROSS_CORRELATION = 1, 1
_DTYPES = {np.dtype(np.float32): 0, np.dtype(np.float64): 1, np.dtype(np.float16): 2}
_DEFAULT_MATH, _FMA_MATH = 0, 3


class _Perf(ctypes.Structure):
    # cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t (the same layout for the three)
    _fields_ = [("algo", ctypes.c_int), ("status", ctypes.c_int), ("time", ctypes.c_float),
                ("memory", ctypes.c_size_t), ("determinism", ctypes.c_int),
                ("mathType", ctypes.c_int), ("reserved", ctypes.c_int * 3)]


class _Lib:
    def __init__(self):
        self.lib = None
        self.error = None
        self._local = threading.local()
        self._lock = threading.Lock()
        self.algos: dict = {}
        try:
            self.lib = self._load()
            for name in ("cudnnCreate", "cudnnSetStream", "cudnnConvolutionForward",
                         "cudnnConvolutionBackwardData", "cudnnConvolutionBackwardFilter",
                         "cudnnFindConvolutionForwardAlgorithm",
                         "cudnnFindConvolutionBackwardDataAlgorithm",
                         "cudnnFindConvolutionBackwardFilterAlgorithm"):
                getattr(self.lib, name)
        except (OSError, AttributeError) as e:
            self.lib, self.error = None, f"{type(e).__name__}: {e}"

    @staticmethod
    def _load():
        return backend.load_library("libcudnn", ("cudnn",), ("libcudnn.so.9", "libcudnn.so"))

    def check(self, status: int, what: str) -> None:
        if status != 0:
            raise RuntimeError(f"{what} failed with cuDNN status {status}")

    def handle(self):
        h = getattr(self._local, "handle", None)
        if h is None:
            h = ctypes.c_void_p()
            self.check(self.lib.cudnnCreate(ctypes.byref(h)), "cudnnCreate")
            self._local.handle = h
        stream = backend.xp().cuda.get_current_stream().ptr
        self.check(self.lib.cudnnSetStream(h, ctypes.c_void_p(stream)), "cudnnSetStream")
        return h

    def tensor(self, dtype, n, h, w, c):
        d = ctypes.c_void_p()
        self.check(self.lib.cudnnCreateTensorDescriptor(ctypes.byref(d)), "tensor desc")
        self.check(self.lib.cudnnSetTensor4dDescriptor(d, _NHWC, _DTYPES[dtype], n, c, h, w),
                   "cudnnSetTensor4dDescriptor")
        return d

    def filter(self, dtype, k, r, s, c):
        d = ctypes.c_void_p()
        self.check(self.lib.cudnnCreateFilterDescriptor(ctypes.byref(d)), "filter desc")
        self.check(self.lib.cudnnSetFilter4dDescriptor(d, _DTYPES[dtype], _NHWC, k, c, r, s),
                   "cudnnSetFilter4dDescriptor")
        return d

    def conv(self, dtype, pad, stride, dilation):
        d = ctypes.c_void_p()
        self.check(self.lib.cudnnCreateConvolutionDescriptor(ctypes.byref(d)), "conv desc")
        compute = 1 if dtype == np.float64 else 0  # float accumulation for half and float
        self.check(self.lib.cudnnSetConvolution2dDescriptor(
            d, pad[0], pad[1], stride[0], stride[1], dilation[0], dilation[1],
            _CROSS_CORRELATION, compute), "cudnnSetConvolution2dDescriptor")
        tf32 = os.environ.get("TENSORFLUX_GPU_TF32", "1").strip() != "0"
        self.check(self.lib.cudnnSetConvolutionMathType(
            d, _DEFAULT_MATH if tf32 or dtype != np.float32 else _FMA_MATH),
            "cudnnSetConvolutionMathType")
        return d


_state: dict = {"lib": None, "tried": False}
_init_lock = threading.Lock()


def _get() -> _Lib | None:
    """The loaded library (None without CuPy, without cuDNN, or after a failed call)."""
    if not _state["tried"]:
        with _init_lock:
            if not _state["tried"]:
                if backend.backend().cupy is not None:
                    lib = _Lib()
                    if lib.lib is None:
                        _log.warning("cuDNN unavailable, convolutions use GEMMs: %s",
                                     lib.error)
                    else:
                        _state["lib"] = lib
                _state["tried"] = True
    return _state["lib"]


def available() -> bool:
    return _get() is not None


def _disable(e: Exception) -> None:
    _log.warning("cuDNN call failed, convolutions use GEMMs from now on: %s", e)
    _state["lib"] = None


class _Descs:
    """The descriptors and chosen algorithm of one convolution geometry."""

    def __init__(self, lib, dtype, x_shape, w_shape, y_shape, pad, stride, dilation):
        n, h, w, c = x_shape
        k, r, s, _ = w_shape
        self.x = lib.tensor(dtype, n, h, w, c)
        self.y = lib.tensor(dtype, *y_shape)
        self.w = lib.filter(dtype, k, r, s, c)
        self.conv = lib.conv(dtype, pad, stride, dilation)
        self.algo: dict[str, tuple[int, int]] = {}
        scalar = ctypes.c_double if dtype == np.float64 else ctypes.c_float
        self.one, self.zero = scalar(1.0), scalar(0.0)


def _descs(lib, key, *args) -> _Descs:
    d = lib.algos.get(key)
    if d is None:
        with lib._lock:
            d = lib.algos.get(key)
            if d is None:
                d = lib.algos[key] = _Descs(lib, *args)
    return d


def _find(lib, d: _Descs, kind: str, handle, *descs) -> tuple[int, int]:
    """(algorithm, workspace bytes) of `kind` ("fwd", "data", "filter"), benchmarked once."""
    got = d.algo.get(kind)
    if got is None:
        perf = (_Perf * 8)()
        count = ctypes.c_int()
        fn = {"fwd": lib.lib.cudnnFindConvolutionForwardAlgorithm,
              "data": lib.lib.cudnnFindConvolutionBackwardDataAlgorithm,
              "filter": lib.lib.cudnnFindConvolutionBackwardFilterAlgorithm}[kind]
        lib.check(fn(handle, *descs, 8, ctypes.byref(count), perf), f"find {kind}")
        got = _choose(perf[:count.value], determinism.cudnn_determinism_required())
        if got is None:
            raise RuntimeError(f"cuDNN found no {kind} algorithm")
        d.algo[kind] = got
    return got


_DETERMINISTIC = 1  # cudnnDeterminism_t: CUDNN_DETERMINISTIC


def _choose(perfs, deterministic: bool) -> tuple[int, int] | None:
    """(algorithm, workspace bytes) from cudnnFind's results (fastest first): the fastest
    that ran, or with `deterministic` the deterministic one of lowest algorithm number (a
    choice that no timing changes); None when there is none."""
    ok = [p for p in perfs if p.status == 0]
    if deterministic:
        ok = sorted((p for p in ok if p.determinism == _DETERMINISTIC), key=lambda p: p.algo)
    return (ok[0].algo, int(ok[0].memory)) if ok else None


def _workspace(nbytes: int):
    xp = backend.xp()
    buf = xp.empty(max(nbytes, 1), dtype=np.uint8)
    return buf, ctypes.c_void_p(buf.data.ptr), ctypes.c_size_t(nbytes)


def _ptr(a):
    return ctypes.c_void_p(a.data.ptr)


def _key(kind, x_shape, w_shape, y_shape, pad, stride, dilation, dtype):
    return (x_shape, w_shape, y_shape, pad, stride, dilation, dtype.str)


def forward(x, w_krsc, y_shape, pad, stride, dilation):
    """y = conv(x, w) for NHWC `x` (contiguous, padded symmetrically by `pad` in cuDNN) and
    KRSC `w_krsc`; None when cuDNN is unavailable or fails."""
    lib = _get()
    if lib is None or x.dtype not in _DTYPES:
        return None
    try:
        xp = backend.xp()
        y = xp.empty(y_shape, dtype=x.dtype)
        d = _descs(lib, _key("c", x.shape, w_krsc.shape, y_shape, pad, stride, dilation,
                             x.dtype), x.dtype, x.shape, w_krsc.shape, y_shape, pad, stride,
                   dilation)
        h = lib.handle()
        algo, ws = _find(lib, d, "fwd", h, d.x, d.w, d.conv, d.y)
        buf, wsp, wsn = _workspace(ws)
        lib.check(lib.lib.cudnnConvolutionForward(
            h, ctypes.byref(d.one), d.x, _ptr(x), d.w, _ptr(w_krsc), d.conv, algo, wsp, wsn,
            ctypes.byref(d.zero), d.y, _ptr(y)), "cudnnConvolutionForward")
        del buf
        return y
    except Exception as e:  # noqa: BLE001 - the GEMM path serves
        _disable(e)
        return None


def backward_data(w_krsc, dy, x_shape, pad, stride, dilation):
    """dx (NHWC, `x_shape`) of the convolution; None when cuDNN is unavailable or fails."""
    lib = _get()
    if lib is None or dy.dtype not in _DTYPES:
        return None
    try:
        xp = backend.xp()
        dx = xp.empty(x_shape, dtype=dy.dtype)
        d = _descs(lib, _key("c", x_shape, w_krsc.shape, dy.shape, pad, stride, dilation,
                             dy.dtype), dy.dtype, x_shape, w_krsc.shape, dy.shape, pad,
                   stride, dilation)
        h = lib.handle()
        algo, ws = _find(lib, d, "data", h, d.w, d.y, d.conv, d.x)
        buf, wsp, wsn = _workspace(ws)
        lib.check(lib.lib.cudnnConvolutionBackwardData(
            h, ctypes.byref(d.one), d.w, _ptr(w_krsc), d.y, _ptr(dy), d.conv, algo, wsp, wsn,
            ctypes.byref(d.zero), d.x, _ptr(dx)), "cudnnConvolutionBackwardData")
        del buf
        return dx
    except Exception as e:  # noqa: BLE001
        _disable(e)
        return None


def backward_filter(x, dy, w_shape, pad, stride, dilation):
    """dw (KRSC, `w_shape`) of the convolution; None when cuDNN is unavailable or fails."""
    lib = _get()
    if lib is None or x.dtype not in _DTYPES:
        return None
    try:
        xp = backend.xp()
        dw = xp.empty(w_shape, dtype=x.dtype)
        d = _descs(lib, _key("c", x.shape, w_shape, dy.shape, pad, stride, dilation,
                             x.dtype), x.dtype, x.shape, w_shape, dy.shape, pad, stride,
                   dilation)
        h = lib.handle()
        algo, ws = _find(lib, d, "filter", h, d.x, d.y, d.conv, d.w)
        buf, wsp, wsn = _workspace(ws)
        lib.check(lib.lib.cudnnConvolutionBackwardFilter(
            h, ctypes.byref(d.one), d.x, _ptr(x), d.y, _ptr(dy), d.conv, algo, wsp, wsn,
            ctypes.byref(d.zero), d.w, _ptr(dw)), "cudnnConvolutionBackwardFilter")
        del buf
        return dw
    except Exception as e:  # noqa: BLE001
        _disable(e)
        return None
