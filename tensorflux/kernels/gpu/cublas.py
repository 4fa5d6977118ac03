"""Matrix products through cuBLAS's C API (ctypes) for steps being captured into CUDA
graphs: CuPy refuses to call cuBLAS while a stream captures (its handle would pick up the
capturing stream), though cuBLAS itself can be captured when its workspace is given to it.
This module owns one handle per stream it is asked for, with a workspace allocated up
front (`prepare`, outside any capture), and TensorFloat-32 math unless
TENSORFLUX_GPU_TF32=0, as CuPy's products here.

`available()` is False when the library or a symbol is missing (a capture that needs a
product then fails, and the step runs kernel by kernel).
"""

from __future__ import annotations

import ctypes
import os

import numpy as np

from tensorflux.kernels.gpu import backend

_OP_N, _OP_T = 0, 1
_TF32_MATH, _DEFAULT_MATH = 3, 0
WORKSPACE_BYTES = 32 << 20  # what NVIDIA advises for Hopper


class _Lib:
    def __init__(self):
        self.lib = None
        self.error = None
        self.handles: dict = {}
        try:
            self.lib = self._load()
            for name in ("cublasCreate_v2", "cublasSetStream_v2", "cublasSetMathMode",
                         "cublasSetWorkspace_v2", "cublasSgemm_v2", "cublasDgemm_v2"):
                getattr(self.lib, name)
        except (OSError, AttributeError) as e:
            self.lib, self.error = None, f"{type(e).__name__}: {e}"

    @staticmethod
    def _load():
        # (the CUDA 13 wheels keep libcublas under nvidia/cu13, older ones nvidia/cublas)
        return backend.load_library("libcublas", ("cu13", "cu12", "cublas"),
                                    ("libcublas.so.13", "libcublas.so.12", "libcublas.so"))

    def check(self, status: int, what: str) -> None:
        if status != 0:
            raise RuntimeError(f"{what} failed with cuBLAS status {status}")


_lib: _Lib | None = None


def _get() -> _Lib:
    global _lib
    if _lib is None:
        _lib = _Lib()
    return _lib


def available() -> bool:
    return backend.backend().cupy is not None and _get().lib is not None


def prepare(stream) -> None:
    """Creates the handle of `stream` (a cupy Stream) with its workspace; call it before
    capturing on that stream."""
    lib = _get()
    if lib.lib is None:
        raise RuntimeError(f"cuBLAS unavailable: {lib.error}")
    if stream.ptr in lib.handles:
        return
    h = ctypes.c_void_p()
    lib.check(lib.lib.cublasCreate_v2(ctypes.byref(h)), "cublasCreate")
    lib.check(lib.lib.cublasSetStream_v2(h, ctypes.c_void_p(stream.ptr)), "cublasSetStream")
    tf32 = os.environ.get("TENSORFLUX_GPU_TF32", "1").strip() != "0"
    lib.check(lib.lib.cublasSetMathMode(h, _TF32_MATH if tf32 else _DEFAULT_MATH),
              "cublasSetMathMode")
    workspace = backend.xp().empty(WORKSPACE_BYTES, dtype=np.uint8)
    lib.check(lib.lib.cublasSetWorkspace_v2(h, ctypes.c_void_p(workspace.data.ptr),
                                            ctypes.c_size_t(WORKSPACE_BYTES)),
              "cublasSetWorkspace")
    lib.handles[stream.ptr] = (h, workspace)


def matmul(a, b, transpose_a: bool, transpose_b: bool):
    """op(a) @ op(b) of two 2-D float32/float64 device arrays, on the current stream
    (`prepare`d)."""
    xp = backend.xp()
    lib = _get()
    stream = xp.cuda.get_current_stream().ptr
    entry = lib.handles.get(stream)
    if entry is None or a.dtype != b.dtype or a.dtype not in (np.float32, np.float64):
        raise RuntimeError("no cuBLAS handle for this stream or dtype")
    a, b = xp.ascontiguousarray(a), xp.ascontiguousarray(b)
    m, k = (a.shape[1], a.shape[0]) if transpose_a else a.shape
    kb, n = (b.shape[1], b.shape[0]) if transpose_b else b.shape
    if k != kb:
        raise ValueError(f"Matrix size-incompatible: In[0]: {list(a.shape)}, In[1]: "
                         f"{list(b.shape)}")
    if m == 0 or n == 0 or k == 0:
        return xp.zeros((m, n), dtype=a.dtype)
    c = xp.empty((m, n), dtype=a.dtype)
    # Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: B first.
    scalar = ctypes.c_float if a.dtype == np.float32 else ctypes.c_double
    gemm = lib.lib.cublasSgemm_v2 if a.dtype == np.float32 else lib.lib.cublasDgemm_v2
    one, zero = scalar(1.0), scalar(0.0)
    lib.check(gemm(entry[0], _OP_T if transpose_b else _OP_N, _OP_T if transpose_a else _OP_N,
                   n, m, k, ctypes.byref(one), ctypes.c_void_p(b.data.ptr), b.shape[1],
                   ctypes.c_void_p(a.data.ptr), a.shape[1], ctypes.byref(zero),
                   ctypes.c_void_p(c.data.ptr), n), "cublas gemm")
    return c
