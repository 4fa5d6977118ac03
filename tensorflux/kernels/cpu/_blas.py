"""Process-wide settings the CPU kernels depend on: BLAS threads and the malloc arena.

Both are applied once, by `tensorflux/kernels/cpu/__init__.py` after every kernel module is
imported (that is, at `import tensorflux`, once NumPy's and SciPy's BLAS libraries are
loaded), and both can be turned off with environment variables.

BLAS threading policy
---------------------
NumPy's BLAS runs single-threaded in a tensorflux process (OpenBLAS in NumPy's wheels; MKL,
BLIS or FlexiBLAS elsewhere: the thread count is read and set through threadpoolctl, which
knows all of them, for every BLAS library loaded, SciPy's too); a kernel with enough work
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
How many threads a kernel splits over, and how many inter-op threads a device has, is
decided in one place: kernels/intra_op.py (`intra_op_threads`, `inter_op_threads`).

BLAS kernel family
------------------
OpenBLAS (NumPy's wheels build it for every x86 core type and pick one at load time) takes
its AVX-512 kernels ("SkylakeX") on AMD Zen 4 (cpu family 25 with AVX-512), whose AVX-512
units are 256 bits wide underneath. There its AVX2 kernels ("Haswell") are faster: a 1024^3
sgemm took 20.0-21.4 ms of CPU against 21.5-23.0 (TensorFlow's oneDNN: 20.1-20.3), and the
products of the MLP, the LSTM LM and an im2col convolution from 2% more to 15% less
(BENCHMARKS.md, "MatMul chains and the BLAS kernel"). So on that CPU model, when the user
has not chosen a core type (OPENBLAS_CORETYPE) and OpenBLAS chose SkylakeX,
`apply_process_policy` has OpenBLAS choose again with the core type "Haswell", through the
two functions OpenBLAS's dynamic dispatch is made of (`gotoblas_dynamic_quit`,
`gotoblas_dynamic_init`, which reads OPENBLAS_CORETYPE): at import, before any kernel runs,
only where the library exports both and no other Python thread runs (between the two calls
OpenBLAS has no kernels; else nothing changes). A small product checked against the old
kernel's must agree, or the old kernel comes back. `TENSORFLUX_BLAS_CORETYPE=0` leaves the
kernel as OpenBLAS chose it; another value names the core type to take on that CPU instead
of "Haswell". threadpoolctl's `architecture` (`blas_info()`, the benchmarks' header) tells
which ran.

malloc policy
-------------
glibc serves blocks above M_MMAP_THRESHOLD (128 KiB at first, adapting up to 32 MiB) with a
fresh mmap, gives freed heap tops back to the OS above M_TRIM_THRESHOLD, and gives each
thread an arena of its own, whose heaps are at most 64 MiB (larger blocks there are
mmapped whatever the settings). A training step frees and reallocates the same
multi-megabyte activations every step; with the defaults each of them comes back as new
zero pages (NumPy asks for huge pages on large arrays, so the kernel zeroes 2 MiB at a
time): in the Table 1 convnets at batch 8 the kernel's page clearing was a third of the
process's CPU time (AlexNet: 90-400 ms of system time per ~650 ms step). So: no mmapped
blocks (M_MMAP_MAX 0), one arena for every thread (M_ARENA_MAX 1: the kernels' allocations
are few and large, so the shared lock costs nothing measurable), and a trim threshold of
`_TRIM_BYTES`: the heap keeps the pages of its peak from one step to the next (AlexNet's
step then takes 0-400 page faults instead of ~2,500, and 15-70 ms of system time), as a
caching allocator would. Memory that a process no longer needs is returned by
`release_free_memory()` (malloc_trim), which Session.close calls.
`TENSORFLUX_MALLOC_TUNING=0` leaves malloc alone.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from time import monotonic as _monotonic

_MMAP_THRESHOLD_BYTES = 32 << 20
_TRIM_BYTES = (1 << 31) - 1  # mallopt takes an int: 2 GiB
_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameter numbers
_M_MMAP_THRESHOLD = -3
_M_MMAP_MAX = -4
_M_ARENA_MAX = -8
_libc = None  # glibc, once _tune_malloc found it

_REFRESH_S = 1.0  # how long a BLAS thread count read through threadpoolctl is trusted
_controllers: list | None = None  # threadpoolctl's controllers of the BLAS libraries, NumPy's first
_count = 0  # the thread count read last
_until = -1.0  # ... trusted until this time.monotonic()


def _blas_controllers() -> list:
    """threadpoolctl's controllers of every BLAS library loaded now (OpenBLAS, MKL, BLIS,
    FlexiBLAS), NumPy's first."""
    global _controllers
    if _controllers is None:
        import numpy  # noqa: F401 - loads NumPy's BLAS, so that threadpoolctl finds it
        from threadpoolctl import ThreadpoolController

        found = ThreadpoolController().select(user_api="blas").lib_controllers
        _controllers = sorted(found, key=lambda c: ("numpy" not in (c.filepath or ""),
                                                    c.filepath or ""))
    return _controllers


def _openblas_libraries() -> list[str]:
    """Paths of the OpenBLAS libraries loaded in this process, NumPy's first (the C
    extension takes its cblas_sgemm from there: kernels/cpu/native.py)."""
    return [c.filepath for c in _blas_controllers() if c.internal_api == "openblas"]


def blas_info() -> dict:
    """NumPy's BLAS as threadpoolctl reports it (`internal_api`, `version`, `architecture`
    — the kernel family OpenBLAS runs on this CPU, e.g. "Haswell", "SkylakeX" —,
    `num_threads`, `filepath`); {} when NumPy has no BLAS threadpoolctl knows."""
    controllers = _blas_controllers()
    if not controllers:
        return {}
    info = controllers[0].info()
    if info.get("internal_api") == "openblas":  # threadpoolctl caches what it read first
        info["architecture"] = _corename(controllers[0]) or info.get("architecture")
    return info


def _corename(controller) -> str | None:
    """The kernel family an OpenBLAS runs now (its `openblas_get_corename`)."""
    for name in ("openblas_get_corename", "scipy_openblas_get_corename64_",
                 "scipy_openblas_get_corename", "openblas_get_corename64_"):
        fn = getattr(controller.dynlib, name, None)
        if fn is not None:
            fn.restype = ctypes.c_char_p
            return (fn() or b"").decode("ascii", "replace") or None
    return None


def blas_threads() -> int:
    """Threads NumPy's BLAS uses per call (0 when it cannot be told). Cheap: the intra-op
    split checks it per kernel, so the count read through threadpoolctl (~2 us) is reused
    for up to a second, and `set_blas_threads` updates it at once."""
    global _count, _until
    now = _monotonic()
    if now > _until:
        controllers = _blas_controllers()
        _count = (controllers[0].get_num_threads() or 0) if controllers else 0
        _until = now + _REFRESH_S
    return _count


def set_blas_threads(n: int) -> bool:
    """Sets the thread count of every loaded BLAS library; False if there is none."""
    global _until
    controllers = _blas_controllers()
    for c in controllers:
        c.set_num_threads(int(n))
    _until = -1.0
    return bool(controllers)


_PREFERRED_CORES = {("AuthenticAMD", "25", True): "Haswell"}  # (vendor, family, AVX-512)


def _cpu_model() -> tuple[str, str, bool] | None:
    """(vendor id, cpu family, AVX-512 present) of this machine's first CPU, from
    /proc/cpuinfo (None elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            text = f.read(1 << 16)
    except OSError:
        return None
    fields = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    return (fields.get("vendor_id", ""), fields.get("cpu family", ""),
            "avx512f" in fields.get("flags", "").split())


def _reference_products() -> list:
    """Small products (float32 and float64) to check a kernel change with."""
    import numpy as np

    rng = np.random.default_rng(0)
    out = []
    for dtype in (np.float32, np.float64):
        a = rng.standard_normal((67, 45)).astype(dtype)
        b = rng.standard_normal((45, 131)).astype(dtype)
        out.append((a, b, a @ b))
    return out


def _switch_core(lib, core: str | None) -> None:
    """Has OpenBLAS `lib` pick its kernels again, with OPENBLAS_CORETYPE=`core` (None: its
    own detection)."""
    saved = os.environ.pop("OPENBLAS_CORETYPE", None)
    try:
        if core is not None:
            os.environ["OPENBLAS_CORETYPE"] = core
        lib.gotoblas_dynamic_quit()
        lib.gotoblas_dynamic_init()
    finally:
        os.environ.pop("OPENBLAS_CORETYPE", None)
        if saved is not None:
            os.environ["OPENBLAS_CORETYPE"] = saved


def _prefer_core_type() -> None:
    """The kernel family choice above, for every loaded OpenBLAS that chose SkylakeX."""
    import numpy as np

    setting = os.environ.get("TENSORFLUX_BLAS_CORETYPE", "").strip()
    if setting == "0" or "OPENBLAS_CORETYPE" in os.environ:
        return
    if threading.active_count() > 1:
        # Between the two calls OpenBLAS has no kernel table: a product running on another
        # thread then would crash. Imported with other threads running, keep the kernels.
        return
    core = setting or _PREFERRED_CORES.get(_cpu_model())
    if not core:
        return
    for c in _blas_controllers():
        if c.internal_api != "openblas" or _corename(c) != "SkylakeX":
            continue
        try:
            lib = ctypes.CDLL(c.filepath)
            lib.gotoblas_dynamic_quit, lib.gotoblas_dynamic_init  # noqa: B018 - both or none
        except (OSError, AttributeError):
            continue
        checks = _reference_products() if c is _blas_controllers()[0] else []
        _switch_core(lib, core)
        if not all(np.allclose(a @ b, ref, rtol=1e-5, atol=1e-5) for a, b, ref in checks):
            _switch_core(lib, None)


def _tune_malloc() -> None:
    global _libc
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to tune
        return
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_BYTES)
    mallopt(_M_TRIM_THRESHOLD, _TRIM_BYTES)
    mallopt(_M_MMAP_MAX, 0)
    mallopt(_M_ARENA_MAX, 1)
    _libc = libc


def release_free_memory() -> None:
    """Gives the heap's free pages back to the OS (glibc's malloc_trim), when the malloc
    policy is applied; the heap otherwise keeps its peak (see the module docstring)."""
    if _libc is not None:
        _libc.malloc_trim(0)


def _env_int(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


def apply_process_policy() -> None:
    """Applies the BLAS and malloc policies above to the BLAS libraries loaded now
    (idempotent)."""
    global _controllers
    _controllers = None  # look again: a library may have been loaded since
    threads = _env_int("TENSORFLUX_BLAS_THREADS", 1)
    if threads > 0:
        set_blas_threads(threads)
    _prefer_core_type()
    if _env_int("TENSORFLUX_MALLOC_TUNING", 1):
        _tune_malloc()
