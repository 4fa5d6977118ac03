"""Process-wide settings the CPU kernels depend on: BLAS threads and the malloc arena.

Both are applied once, by `tensorflux/kernels/cpu/__init__.py` after every kernel module is
imported (that is, at `import tensorflux`, once NumPy's and SciPy's BLAS libraries are
loaded), and both can be turned off with environment variables.

BLAS threading policy
---------------------
NumPy's OpenBLAS runs single-threaded in a tensorflux process; a kernel with enough work
splits it itself, over tensorflux's own intra-op thread pool (tensorflux/kernels/intra_op.py:
one contiguous batch or row range per thread, the first on the calling thread), or, for
MatMul when the C extension is built, over its GIL-free pool (kernels/cpu/native.py), which
calls this same OpenBLAS once per block.

Why: OpenBLAS's threads spin-wait for work between and inside calls. On a machine whose
cores are shared with other processes (the reference machine: 2 cores, shared), a spinning
thread that has lost its core stalls every product it takes part in, and measured steps got
2-4x slower under a competing load (CNN step 129 ms single-threaded vs 428-624 ms with
OpenBLAS's two threads, MLP 9.3 ms vs 15-24 ms, both with one other busy process). Our own
pool blocks instead of spinning, so a loaded machine costs only the cores that the other
processes actually take. Splitting outside BLAS also parallelizes the work around the
products (im2col copies, col2im adds, pooling, elementwise kernels, optimizer updates),
which OpenBLAS's threads never touch. On an idle machine the split matches OpenBLAS's own
threading on big products (2 x single-thread sgemm) and beats it on the small ones.

The cost: NumPy code of the user's own in the same process also runs its BLAS calls on one
thread. `TENSORFLUX_BLAS_THREADS=N` (N >= 1) sets another BLAS thread count at import, and
`TENSORFLUX_BLAS_THREADS=0` leaves BLAS as it was; kernels split only while BLAS is
single-threaded (`blas_threads() == 1`), so a multi-threaded BLAS is never oversubscribed.
The intra-op thread count is ConfigProto.intra_op_parallelism_threads (0: one per usable
core).

malloc policy
-------------
glibc serves blocks above M_MMAP_THRESHOLD (128 KiB at first, adapting up to 32 MiB) with a
fresh mmap, and gives freed heap tops back to the OS above M_TRIM_THRESHOLD. A training step
frees and reallocates the same multi-megabyte activations every step; with the defaults
each of them comes back as new zero pages, about 2,000 page faults per CNN step (~10 ms).
Setting both thresholds keeps those blocks in the arena from one step to the next. Blocks
above 32 MiB are still mmapped, and up to `_TRIM_BYTES` of free heap top stays mapped.
`TENSORFLUX_MALLOC_TUNING=0` leaves malloc alone.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

_MMAP_THRESHOLD_BYTES = 32 << 20
_TRIM_BYTES = 256 << 20
_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameter numbers
_M_MMAP_THRESHOLD = -3

# OpenBLAS's thread-count entry points under the names the NumPy and SciPy wheels
# (scipy-openblas, 64-bit and 32-bit integer builds) and distributions export them.
_SUFFIXES = ("64_", "")
_PREFIXES = ("scipy_openblas_", "openblas_")
_get_fns: list = []
_set_fns: list = []
_found = False


def _openblas_libraries() -> list[str]:
    """Paths of the OpenBLAS libraries mapped into this process, NumPy's first."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower()}
    except OSError:
        return []
    libs = [p for p in paths if p.endswith(".so") or ".so." in p]
    return sorted(libs, key=lambda p: ("numpy" not in p, p))


def _find() -> None:
    """Looks up `get/set_num_threads` in every loaded OpenBLAS (NumPy's first)."""
    global _found
    import numpy  # noqa: F401 - loads NumPy's BLAS, so that it is in the process's maps

    _get_fns.clear()
    _set_fns.clear()
    for path in _openblas_libraries():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in _PREFIXES:
            for suffix in _SUFFIXES:
                get = getattr(lib, f"{prefix}get_num_threads{suffix}", None)
                put = getattr(lib, f"{prefix}set_num_threads{suffix}", None)
                if get is not None and put is not None:
                    get.restype = ctypes.c_int
                    put.argtypes = [ctypes.c_int]
                    put.restype = None
                    _get_fns.append(get)
                    _set_fns.append(put)
                    break
            else:
                continue
            break
    _found = True


def blas_threads() -> int:
    """Threads NumPy's BLAS uses per call (0 when it cannot be told: not OpenBLAS). Cheap
    (one C call): the intra-op split checks it per kernel."""
    if not _found:
        _find()
    return _get_fns[0]() if _get_fns else 0


def set_blas_threads(n: int) -> bool:
    """Sets the thread count of every loaded OpenBLAS; False if there is none."""
    if not _found:
        _find()
    for put in _set_fns:
        put(int(n))
    return bool(_set_fns)


def _tune_malloc() -> None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to tune
        return
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_BYTES)
    mallopt(_M_TRIM_THRESHOLD, _TRIM_BYTES)


def _env_int(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


def apply_process_policy() -> None:
    """Applies the BLAS and malloc policies above to the BLAS libraries loaded now
    (idempotent)."""
    _find()
    threads = _env_int("TENSORFLUX_BLAS_THREADS", 1)
    if threads > 0:
        set_blas_threads(threads)
    if _env_int("TENSORFLUX_MALLOC_TUNING", 1):
        _tune_malloc()
