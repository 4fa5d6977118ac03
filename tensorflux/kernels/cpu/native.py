"""The Python side of the optional C extension `_native` (tensorflux/kernels/cpu/_native.c).

Some CPU work is faster in a few lines of C than in NumPy called from Python:

  - big matrix products split over the cores: a Python helper thread needs the GIL to start
    its half, and in a training step that costs ~0.1 ms per product; the extension's helper
    threads never take the GIL (MatMul, kernels/cpu/matrix_ops.py);
  - fused optimizer updates: Adam is one pass over var, m, v and grad instead of twelve
    NumPy passes, Momentum one instead of four (ResourceApplyAdam, ResourceApplyMomentum,
    kernels/cpu/training_ops.py);
  - Relu and ReluGrad, which NumPy's ufuncs run at ~0.4 ns per float32 element
    (kernels/cpu/nn_ops.py);
  - MaxPool and MaxPoolGrad over H and W, one pass over each window instead of NumPy
    calls per window tap (kernels/cpu/pooling_ops.py);
  - im2col's copy of convolution patches, which NumPy does at a cost per contiguous run
    (kh*kw*C elements per window, 15 for a 5x5 layer on 3 channels; conv_ops.py);
  - a float32 GEMM of its own for convolution products with narrow filters (`ngemm`:
    AVX-512 tiles read from the operands where they lie; BLAS packs both for every call);
  - the dataflow executor's driver loop (runtime/executor.py): ready queue, pending and
    dead counts, kernel calls from C, pass-through kernels without a call; ~0.06 us a
    node instead of ~0.7 in Python (`dataflow_core`).

Every function here returns None (or False) when it cannot take the call: no extension (no C
compiler when tensorflux was installed, or `TENSORFLUX_NATIVE=0`), another dtype than
float32/float64, or a layout the C loop does not take. The kernel then runs its NumPy path,
which computes the same values: the updates and activations give identical bits (the C code
does the NumPy path's operations in the same order and type, without FMA contraction); a
split product equals NumPy's up to BLAS's blocking, as the Python-thread split does.

Long calls stop early: gemm and the pools poll the running step's deadline and a stop cell
set on its cancellation or its session's close (`interrupt.native_stop`), between chunks,
and raise the step's error when they stopped (kernels/interrupt.py).

Products call NumPy's own BLAS (its OpenBLAS `cblas_sgemm`/`cblas_dgemm`, looked up in the
library NumPy loaded), so they run the same kernels as `np.matmul`; with another BLAS (or a
multi-threaded one: `intra_op.workers` is then 1) products stay with NumPy.
"""

from __future__ import annotations

import contextlib
import ctypes
import os

import numpy as np
from numpy.lib.stride_tricks import as_strided

from tensorflux.kernels import buffers, interrupt, registry
from tensorflux.kernels.cpu import _blas

try:
    from tensorflux.kernels.cpu import _native as _mod
except ImportError:  # not built (no C compiler at install time)
    _mod = None
if os.environ.get("TENSORFLUX_NATIVE", "1").strip() == "0":
    _mod = None

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_LABELS = (np.dtype(np.int32), np.dtype(np.int64))
_gemm_ready: bool | None = None  # None: not looked up yet


def available() -> bool:
    """True when the extension is loaded (kernels may take its paths)."""
    return _mod is not None


def helpers_rest() -> None:
    """The pool's helpers stop spinning until the next task is posted: for a thread about
    to wait on another process (a parameter server's tensors or reply), whose cores the
    spins would take (`_pool.h` pool_rest)."""
    if _mod is not None:
        _mod.helpers_rest()


def _find_gemm() -> bool:
    """Hands NumPy's cblas_sgemm/cblas_dgemm to the extension; False if not found.

    The integer width comes from the symbol's suffix (`64_`: the ILP64 build NumPy's wheels
    ship) and must agree with the library's own build string when it has one: a product
    called with the wrong width would read garbage sizes."""
    for path in _blas._openblas_libraries():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        config = getattr(lib, "scipy_openblas_get_config64_", None) or \
            getattr(lib, "scipy_openblas_get_config", None) or \
            getattr(lib, "openblas_get_config", None)
        built = ""
        if config is not None:
            config.restype = ctypes.c_char_p
            built = (config() or b"").decode("ascii", "replace")
        for prefix in ("scipy_cblas_", "cblas_"):
            for suffix, ilp64 in (("64_", True), ("", False)):
                s = getattr(lib, f"{prefix}sgemm{suffix}", None)
                d = getattr(lib, f"{prefix}dgemm{suffix}", None)
                if s is None or d is None:
                    continue
                if built and ("USE64BITINT" in built) != ilp64:
                    continue
                address = ctypes.cast(s, ctypes.c_void_p).value
                _mod.set_blas(address, ctypes.cast(d, ctypes.c_void_p).value, ilp64)
                return _gemm_agrees()
    return False


def _gemm_agrees() -> bool:
    """A small product through the handed-over pointers equals NumPy's (else they are not
    used)."""
    rng = np.random.default_rng(0)
    for dtype in _FLOATS:
        a = rng.standard_normal((70, 9)).astype(dtype)
        b = rng.standard_normal((9, 130)).astype(dtype)
        out = np.empty((70, 130), dtype)
        _mod.gemm(a, b, out, False, False, 1)
        if not np.allclose(out, a @ b, rtol=1e-5, atol=1e-5):
            return False
    return True


def _row_major(x: np.ndarray):
    """(array, transposed) as BLAS takes an operand: row-major as stored, or a transposed
    view (an F-contiguous array) as its C-contiguous transpose with the flag set; (None,
    False) for other layouts."""
    if x.flags.c_contiguous:
        return x, False
    if x.flags.f_contiguous:
        return x.T, True
    return None, False


def gemm(a: np.ndarray, b: np.ndarray, parts: int, into: np.ndarray | None = None):
    """a @ b (2-D float32/float64 of one dtype) split over `parts` threads, or None.

    With `into` (a C-contiguous, writeable array of the product's shape and dtype that
    nothing else reads: the caller's own), adds the product into it in place (BLAS's
    beta = 1) and returns it; None (`into` untouched) where it does not take the call."""
    global _gemm_ready
    if _mod is None or a.dtype not in _FLOATS or b.dtype != a.dtype:
        return None
    if _gemm_ready is None:
        _gemm_ready = _find_gemm()
    if not _gemm_ready or 0 in a.shape or 0 in b.shape:
        return None
    # _row_major and _stop_for written out: a product's Python runs right after the
    # previous big kernel, where every frame is slow
    operands = []
    for x in (a, b):
        if x.flags.c_contiguous:
            operands.append((x, False))
        elif x.flags.f_contiguous:
            operands.append((x.T, True))
        else:
            return None
    (a, ta), (b, tb) = operands
    m = a.shape[1] if ta else a.shape[0]
    n = b.shape[0] if tb else b.shape[1]
    if into is None:
        out = buffers.empty_output((m, n), a.dtype)  # in a push's segment when offered
    elif into.shape != (m, n) or into.dtype != a.dtype or not into.flags.c_contiguous or \
            not into.flags.writeable:
        return None
    else:
        out = into
    k = a.shape[0] if ta else a.shape[1]
    extra = () if into is None else (True,)  # accumulate (an older build lacks it)
    try:
        if 2.0 * m * n * k > interrupt.CHUNK_FLOPS:
            with interrupt.native_stop() as (cell, deadline):
                done = _mod.gemm(a, b, out, ta, tb, parts, cell, deadline, *extra)
        elif extra:
            done = _mod.gemm(a, b, out, ta, tb, parts, None, 0.0, *extra)
        else:
            done = _mod.gemm(a, b, out, ta, tb, parts)
    except TypeError:  # an extension built before `accumulate`: nothing was written
        if into is None:
            raise
        return None
    if not done:
        interrupt.raise_stopped()
    return out


SKINNY_MAX = 16  # the batch rows the skinny products take (_native.c THIN_ROWS)


def skinny(a: np.ndarray, b: np.ndarray, parts: int):
    """a @ b for the products of a fully connected layer at a small batch (m, k or the
    other operand's rows at most SKINNY_MAX), where BLAS's packing and beta pass cost
    more than the arithmetic; a new array, or None when it does not take the call:
      - a = x.T, a (k, m) transposed view, b (k, n) contiguous, k <= SKINNY_MAX:
        the weight gradient x^T dy (`outer_sum` in _native.c);
      - a (m, k) contiguous, m <= SKINNY_MAX, b = w.T a transposed view of w (n, k):
        the input gradient dy w^T (`thin_nt`).
    Summation orders: _native.c's comment (not BLAS's: values differ from np.matmul by
    rounding)."""
    if _mod is None or a.dtype not in _FLOATS or b.dtype != a.dtype or a.ndim != 2 or \
            b.ndim != 2 or 0 in a.shape or 0 in b.shape or a.shape[1] != b.shape[0]:
        return None
    if a.shape[1] <= SKINNY_MAX and a.T.flags.c_contiguous and b.flags.c_contiguous:
        out = buffers.empty_output((a.shape[0], b.shape[1]), a.dtype)
        _mod.skinny(out, a.T, b, False, parts)
    elif a.shape[0] <= SKINNY_MAX and a.flags.c_contiguous and b.T.flags.c_contiguous:
        out = buffers.empty_output((a.shape[0], b.shape[1]), a.dtype)
        _mod.skinny(out, a, b.T, True, parts)
    else:
        return None
    return out


THIN_NN_ROWS = 16  # the rows thin_nn takes (_thin_gemm.h THIN_NN_ROWS)


def thin_nn(a: np.ndarray, b: np.ndarray, parts: int):
    """a @ b for float32 a (m, k), m <= THIN_NN_ROWS (rows contiguous at any row stride),
    and C-contiguous b (k, n): the forward product of a fully connected layer at a small
    batch, b read once where it lies (no packing), its columns split over `parts` threads
    (`_thin_gemm.h`). A new array, or None when it does not take the call (no AVX-512F,
    other dtypes or layouts). One FMA chain over k in order per output: rounding differs
    from BLAS's, the bits do not depend on `parts`."""
    if _mod is None or not hasattr(_mod, "thin_nn") or type(a) is not np.ndarray or \
            type(b) is not np.ndarray or a.dtype != _F32 or b.dtype != _F32 or \
            a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0] or \
            not 0 < a.shape[0] <= THIN_NN_ROWS or not b.flags.c_contiguous or \
            not (a.flags.c_contiguous or (a.strides[1] == 4 and a.strides[0] % 4 == 0
                                          and a.strides[0] >= 4 * a.shape[1])):
        return None
    out = buffers.empty_output((a.shape[0], b.shape[1]), _F32)
    with _stop_for(2.0 * out.size * a.shape[1]) as (cell, deadline):
        done = _mod.thin_nn(a, b, out, max(1, parts), cell, deadline)
    if done is None:
        return None
    if not done:
        interrupt.raise_stopped()
    return out


def stem_conv(xp: np.ndarray, w: np.ndarray, out: np.ndarray, strides, parts: int):
    """`out` (N, oh, ow, F) = the VALID convolution of padded NHWC `xp` (N, Hp, Wp, C) with
    `w` (kh, kw, C, F) at `strides`, float32, all C-contiguous, read straight from `xp`
    without a patch matrix (`_stem_conv.h`; a net's first layer), output rows split over
    `parts` threads. Returns `out`, or None when it does not take the call (no AVX-512F,
    other dtypes or layouts). One FMA chain per output over the window in (row, column,
    channel) order: the bits do not depend on `parts`."""
    if _mod is None or not hasattr(_mod, "stem_conv") or any(
            type(a) is not np.ndarray or a.dtype != _F32 or a.ndim != 4 or
            not a.flags.c_contiguous for a in (xp, w, out)) or not out.flags.writeable:
        return None
    with _stop_for(2.0 * out.size * w.shape[0] * w.shape[1] * w.shape[2]) as (cell, deadline):
        done = _mod.stem_conv(xp, w, out, int(strides[0]), int(strides[1]), max(1, parts),
                              cell, deadline)
    if done is None:
        return None
    if not done:
        interrupt.raise_stopped()
    return out


def var_reader(found, slow):
    """ReadVariableOp's kernel: `_native.VarReader(found, slow)` (the variable the FoundVars
    `found` holds for the handle, read under its lock without a Python frame; `slow`, the
    Python kernel, in every other case), or `slow` itself without the extension."""
    reader = getattr(_mod, "VarReader", None) if _mod is not None else None
    return slow if reader is None else reader(found, slow)


def own_many(vars_: list):
    """state_ops.own_value of each variable (their locks held by the caller) in one C call
    (`_native.c` own_many): a list of the arrays an update may write; the index of the
    first variable whose value is None (the ones before it taken); None without the
    extension."""
    if _mod is None:
        return None
    return _mod.own_many(vars_, np.ndarray)


def _flat_ok(*arrays) -> bool:
    """Whether `arrays` are ndarrays of one float dtype and one shape, C-contiguous. (A
    loop, not all() over a generator: these checks run right after big kernels, where
    every Python frame is slow.)"""
    first = arrays[0]
    if type(first) is not np.ndarray or first.dtype not in _FLOATS:
        return False
    dtype, shape = first.dtype, first.shape
    for x in arrays:
        if type(x) is not np.ndarray or x.dtype != dtype or x.shape != shape or \
                not x.flags.c_contiguous:
            return False
    return True


def adam(var, m, v, grad, lr_t, beta1, beta2, epsilon, use_nesterov: bool,
         parts: int) -> bool:
    """Adam's update of var, m, v in place (hyperparameters already in var's dtype; lr_t the
    bias-corrected rate); False when the arrays do not qualify."""
    if _mod is None or not _flat_ok(var, m, v, grad) or not var.flags.writeable or \
            not m.flags.writeable or not v.flags.writeable:
        return False
    _mod.adam(var, m, v, grad, float(lr_t), float(beta1), float(beta2), float(epsilon),
              bool(use_nesterov), parts)
    return True


# updates_many's rules: name -> (the C function's rule number, scalars per item)
UPDATE_RULES = {"adam": (0, 6), "momentum": (1, 2), "gradient_descent": (2, 1)}


def updates_many(rule: str, items: list, use_nesterov: bool, parts: int) -> bool:
    """Several updates of one rule (`UPDATE_RULES`) in place, in one pass over the pool,
    each as the single-variable function computes it: items of (var, m, v, grad,
    beta1_power, beta2_power, lr, beta1, beta2, epsilon) for "adam" (the bias-corrected
    rate computed in var's type), (var, accum, grad, lr, momentum) for "momentum", (var,
    delta, alpha) for "gradient_descent". False (nothing done) when an item's arrays do not
    qualify: one shape, one float dtype, C-contiguous, the updated ones writable (the C
    function checks all but the shapes before it writes anything)."""
    if _mod is None or not hasattr(_mod, "updates_many") or not items:
        return False
    number, scalars = UPDATE_RULES[rule]
    arrays = len(items[0]) - scalars
    for item in items:
        shape = item[0].shape
        for a in item[1:arrays]:
            if a.shape != shape:
                return False
    try:
        _mod.updates_many(number, items, bool(use_nesterov), parts)
    except (ValueError, BufferError):
        return False
    return True


def momentum(var, accum, grad, lr, momentum_, use_nesterov: bool, parts: int) -> bool:
    """Momentum's update of var and accum in place (lr and momentum_ in var's dtype); False
    when the arrays do not qualify."""
    if _mod is None or not _flat_ok(var, accum, grad) or not var.flags.writeable or \
            not accum.flags.writeable:
        return False
    _mod.momentum(var, accum, grad, float(lr), float(momentum_), bool(use_nesterov), parts)
    return True


def relu(x: np.ndarray, parts: int, out: np.ndarray | None = None):
    """max(x, 0) in `out` (a new array if None; it may be `x`), or None."""
    if _mod is None or not _flat_ok(x) or (out is not None and not _flat_ok(x, out)):
        return None
    out = np.empty(x.shape, x.dtype) if out is None else out
    _mod.relu(out, x, parts)
    return out


def select(c: np.ndarray, t: np.ndarray, e: np.ndarray, parts: int):
    """np.where(c, t, e) in one branch-free pass (the same bits), or None: for a bool `c`,
    `t` and `e` of one dtype of 1, 2, 4 or 8 bytes (numbers or bools), each of `c`'s shape
    or one element of no more axes, all C-contiguous."""
    if _mod is None or type(c) is not np.ndarray or type(t) is not np.ndarray or \
            type(e) is not np.ndarray or c.dtype != np.bool_ or t.dtype != e.dtype or \
            t.dtype.kind not in "biufc" or t.itemsize not in (1, 2, 4, 8) or \
            not (c.flags.c_contiguous and t.flags.c_contiguous and e.flags.c_contiguous):
        return None
    shape = c.shape
    for x in (t, e):
        if x.shape != shape and (x.size != 1 or x.ndim > c.ndim):
            return None
    out = np.empty(shape, t.dtype)
    _mod.select(out, c, t, e, parts)
    return out


def relu_grad(g: np.ndarray, x: np.ndarray, parts: int, out: np.ndarray | None = None):
    """g * (x > 0) in `out` (a new array if None; it may be `g` or `x`), or None. `g` and
    `x` may also be views whose last axis is contiguous and whose other axes fold into one
    row stride (a channel slice of a concatenation's gradient: `_rows`)."""
    if _mod is None:
        return None
    if _flat_ok(g, x) and (out is None or _flat_ok(g, out)):
        out = np.empty(g.shape, g.dtype) if out is None else out
        _mod.relu_grad(out, g, x, parts)
        return out
    if (type(g) is not np.ndarray or type(x) is not np.ndarray or g.dtype != x.dtype or
            g.dtype not in _FLOATS or g.shape != x.shape or g.ndim == 0 or
            not hasattr(_mod, "relu_grad_rows") or
            (out is not None and not (_flat_ok(out) and out.shape == g.shape and
                                      out.dtype == g.dtype))):
        return None
    g2, x2 = _rows(g), _rows(x)
    if g2 is None or x2 is None:
        return None
    out = np.empty(g.shape, g.dtype) if out is None else out
    _mod.relu_grad_rows(out.reshape(g2.shape), g2, x2, parts)
    return out


def _rows(a: np.ndarray):
    """`a` as a 2-D view (rows, last axis) with a contiguous last axis and one row stride
    (no copy), or None when its axes do not fold so."""
    cols = a.shape[-1]
    if a.size == 0 or (cols > 1 and a.strides[-1] != a.itemsize):
        return None
    axes = [(n, st) for n, st in zip(a.shape[:-1], a.strides[:-1], strict=True) if n != 1]
    row = axes[-1][1] if axes else cols * a.itemsize
    for i in range(len(axes) - 1):  # each outer axis steps over whole inner ones
        if axes[i][1] != axes[i + 1][1] * axes[i + 1][0]:
            return None
    if row < cols * a.itemsize or row % a.itemsize:
        return None
    return as_strided(a, (a.size // cols, cols), (row, a.itemsize), writeable=False)


_MAX_POOL_CHANNELS = 4096  # the C loops keep one window's maxima on the stack


_NO_STOP = contextlib.nullcontext((None, 0.0))


def _stop_for(work: float):
    """`interrupt.native_stop()` for a call of `work` operations; a short call (under
    interrupt.CHUNK_FLOPS) is not polled (registering the stop cell costs ~5 us)."""
    return interrupt.native_stop() if work > interrupt.CHUNK_FLOPS else _NO_STOP


def _pool_work(out_shape, k) -> float:
    work = float(k[0] * k[1])  # Python floats: np.prod costs microseconds on tiny pools
    for d in out_shape:
        work *= d
    return work


def _pool_ok(x, k, s, pads) -> bool:
    return (_mod is not None and type(x) is np.ndarray and x.ndim == 4 and
            x.dtype in _FLOATS and x.flags.c_contiguous and k[2] == 1 and s[2] == 1 and
            tuple(pads[2]) == (0, 0) and x.shape[3] <= _MAX_POOL_CHANNELS)


def max_pool(x, out_shape, k, s, pads, parts: int):
    """MaxPool of NHWC `x` over H and W (window `k`, strides `s`, `pads` [(before, after)]
    for H, W, C as `_PoolGeometry.resolve` gives them), or None."""
    if not _pool_ok(x, k, s, pads):
        return None
    out = np.empty(out_shape, x.dtype)
    with _stop_for(_pool_work(out_shape, k)) as (cell, deadline):
        done = _mod.max_pool(x, out, k[0], k[1], s[0], s[1], pads[0][0], pads[1][0], parts,
                             cell, deadline)
    if not done:
        interrupt.raise_stopped()
    return out


def max_pool_grad(x, g, k, s, pads, tiles: bool, parts: int):
    """MaxPoolGrad of NHWC `x` (the input's shape, routed as pooling_ops' NumPy path does;
    `tiles`: windows equal to the strides, so every element takes at most one window's
    gradient), or None."""
    if not _pool_ok(x, k, s, pads) or type(g) is not np.ndarray or g.dtype != x.dtype or \
            not g.flags.c_contiguous or g.ndim != 4:
        return None
    out = np.empty(x.shape, x.dtype)
    with _stop_for(2 * _pool_work(g.shape, k)) as (cell, deadline):
        done = _mod.max_pool_grad(x, g, out, np.empty(g.shape, np.int32), k[0], k[1], s[0],
                                  s[1], pads[0][0], pads[1][0], bool(tiles), parts, cell,
                                  deadline)
    if not done:
        interrupt.raise_stopped()
    return out


def im2col(xp: np.ndarray, out: np.ndarray, n0: int, strides, dilations) -> bool:
    """Copies the convolution patches of images n0.. of padded NHWC `xp` into `out`
    (N', oh, ow, kh, kw, C), as `np.copyto(out, _patches(xp, ...)[n0:n0 + N'])` does; False
    when the arrays do not qualify."""
    if _mod is None or type(xp) is not np.ndarray or xp.dtype not in _FLOATS or \
            out.dtype != xp.dtype or not xp.flags.c_contiguous or not out.flags.c_contiguous:
        return False
    kh, kw = out.shape[3], out.shape[4]
    _mod.im2col(xp, out, n0, kh, kw, strides[0], strides[1], dilations[0], dilations[1])
    return True


def col2im(cols: np.ndarray, img: np.ndarray, taps, out_hw, strides, dilations,
           tap_stride: int, pixel_stride: int, tap_offset: int = 0, gather: bool = False,
           length: int | None = None) -> bool:
    """The adds between tap products `cols` (flat; tap t's value for output pixel p starts
    at t * `tap_stride` + p * `pixel_stride`, `length` of them contiguous: the image's
    channels by default) and a batch chunk of an NHWC image `img` (N', Hp, Wp, P), for
    every tap (i, j) in order, then every pixel: the image's slice
    `img[:, i*dh:..:sh, j*dw:..:sw, t*tap_offset:t*tap_offset + length]` += the tap's
    values (scatter), or, with `gather`, the tap's values += that slice. In place; the
    same adds in the same order as NumPy's strided slices. False when the arrays do not
    qualify (the caller adds with NumPy)."""
    if _mod is None or not hasattr(_mod, "col2im") or type(cols) is not np.ndarray or \
            type(img) is not np.ndarray or img.dtype not in _FLOATS or \
            cols.dtype != img.dtype or not cols.flags.c_contiguous or \
            not img.flags.c_contiguous or not (cols if gather else img).flags.writeable:
        return False
    _mod.col2im(cols, img, out_hw[0], out_hw[1], taps[0], taps[1], strides[0], strides[1],
                dilations[0], dilations[1], tap_stride, pixel_stride, tap_offset,
                img.shape[3] if length is None else length, gather)
    return True


# ---- convnets block (issue 20 part 3): GradientDescent, channel-last batch norm ----------


def gradient_descent(var, delta, alpha, parts: int) -> bool:
    """GradientDescent's `var -= alpha * delta` in place, in one pass (alpha in var's dtype;
    the same two roundings as NumPy's); False when the arrays do not qualify."""
    if _mod is None or not _flat_ok(var, delta) or not var.flags.writeable:
        return False
    _mod.gradient_descent(var, delta, float(alpha), parts)
    return True


def indices_in_range(indices, limit: int) -> bool:
    """True when `indices` (a C-contiguous int32 or int64 ndarray) are all in [0, limit),
    checked in one C pass; False when they are not, or when the C loop does not take
    them (the caller checks them itself)."""
    if _mod is None or type(indices) is not np.ndarray or indices.dtype not in _LABELS or \
            not indices.flags.c_contiguous:
        return False
    return _mod.in_range(indices, limit)


def accidental_hits(true_flat: np.ndarray, sampled: np.ndarray, num_true: int):
    """ComputeAccidentalHits' (row of each hit, last position of its candidate) for int64
    true classes (flat, `num_true` a row) and int64 candidates, in one C pass: (int32
    rows, int64 positions), or None when the C loop does not take the arrays."""
    if _mod is None or not hasattr(_mod, "accidental_hits") or num_true < 1 or \
            type(true_flat) is not np.ndarray or type(sampled) is not np.ndarray or \
            true_flat.dtype != np.int64 or sampled.dtype != np.int64:
        return None
    true_flat, sampled = np.ascontiguousarray(true_flat), np.ascontiguousarray(sampled)
    rows = np.empty(true_flat.size, np.int32)
    ids = np.empty(true_flat.size, np.int64)
    found = _mod.accidental_hits(true_flat, sampled, num_true, rows, ids)
    return rows[:found].copy(), ids[:found].copy()


def scatter_rows(target, indices, updates, subtract: bool) -> bool:
    """`target[indices[k]] += updates[k]` (or -=) for each k in order, in place, row by row
    (a ResourceScatterAdd/Sub of rows; duplicates add up one at a time, as ufunc.at does);
    False when the arrays do not qualify. `indices` are in range (the caller checked)."""
    if _mod is None or type(target) is not np.ndarray or type(updates) is not np.ndarray:
        return False
    if target.dtype not in _FLOATS or updates.dtype != target.dtype or target.ndim < 2 or \
            not (target.flags.c_contiguous and target.flags.writeable and
                 updates.flags.c_contiguous) or \
            updates.size != indices.size * (target.size // max(1, target.shape[0])):
        return False
    _mod.scatter_rows(target, np.ascontiguousarray(indices.reshape(-1), np.int64), updates,
                      subtract)
    return True


def _bn_ok(*arrays) -> bool:
    first = arrays[0]
    return first.dtype in _FLOATS and all(
        type(a) is np.ndarray and a.dtype == first.dtype and a.flags.c_contiguous
        for a in arrays)


def bn_chunk_rows(channels: int) -> int:
    """Rows per chunk of the batch-norm loops (`_native.c` BN_ROWS)."""
    return 4 if channels >= 16384 else max(4, 65536 // channels)


def bn_sums(kind: int, x2, y2, v, parts: int, r2=None):
    """Per-channel sums over the rows of (rows, C) `x2`, in float64 (2, C), or None when
    the arrays do not qualify: kind 0, of d = x2 - v and of d * d; kind 1, of `y2` (dy) and
    of (x2 - v) * y2; kind 2, kind 1's with y2 * (r2 > 0) (ReluGrad's product, `r2` the
    fused ReLU's output) for y2. Summed per chunk of rows (float32 blocks of 32 rows into
    float64), then over chunks in order: the same value on any number of threads."""
    extra = () if r2 is None else (r2,)
    if _mod is None or x2.ndim != 2 or x2.shape[0] == 0 or not _bn_ok(x2, y2, v, *extra) \
            or y2.shape != x2.shape or v.shape != (x2.shape[1],) or (kind == 2) != bool(extra) \
            or any(a.shape != x2.shape for a in extra):
        return None
    rows, c = x2.shape
    partial = np.empty((-(-rows // bn_chunk_rows(c)), 2, c), np.float64)
    _mod.bn_sums(kind, x2, y2, v, partial, c, parts, *extra)
    return np.add.reduce(partial, axis=0)


def bn_rows(kind: int, x2, y2, out, m, k1, k2, k3, parts: int, r2=None) -> bool:
    """One elementwise pass of a channel-last batch norm into `out` (rows, C), in the
    NumPy row passes' operations and order (identical bits): kind 0 ((x2 - m) * k1) + k2;
    kind 1 ((y2 * k1) - ((x2 - m) * k2)) - k3; kind 2 y2 * k1. With a ReLU fused in (the
    relu and relu_grad kernels' operations): kind 3 is kind 0's value t, then
    t < 0 ? 0 : t; kinds 4 and 5 are kinds 1 and 2 with y2 * (r2 > 0) for y2 (`r2` the
    ReLU's output); kind 6 is kind 3 with `r2` (a side input) added before the ReLU.
    False when the arrays do not qualify."""
    extra = () if r2 is None else (r2,)
    if _mod is None or x2.ndim != 2 or not _bn_ok(x2, y2, out, m, k1, k2, k3, *extra) or \
            y2.shape != x2.shape or out.shape != x2.shape or not out.flags.writeable or \
            any(a.shape != (x2.shape[1],) for a in (m, k1, k2, k3)) or x2.shape[1] == 0 or \
            (kind >= 4) != bool(extra) or any(a.shape != x2.shape for a in extra):
        return False
    _mod.bn_rows(kind, x2, y2, out, m, k1, k2, k3, x2.shape[1], parts, *extra)
    return True


def _cf_ok(x, matrices, vectors) -> bool:
    return (_mod is not None and x.ndim >= 3 and x.size > 0 and _bn_ok(x, *matrices, *vectors)
            and all(a.shape == x.shape for a in matrices)
            and all(a.shape == (x.shape[1],) for a in vectors))


def bn_cf_sums(kind: int, x, y, v, parts: int, r=None):
    """`bn_sums` of channel-first data (N, C, spatial...): per-channel float64 (2, C) sums,
    or None when the arrays do not qualify. Each row (one image's one channel) is summed in
    T over 16 interleaved lanes, into float64 per chunk of rows, then over chunks in order:
    the same value on any number of threads (not the channel-last sums' order)."""
    extra = () if r is None else (r,)
    if (kind == 2) != bool(extra) or not _cf_ok(x, (y, *extra), (v,)):
        return None
    plane = x.size // (x.shape[0] * x.shape[1])
    chunk = 1 if plane >= 65536 else 65536 // plane
    partial = np.empty((-(-(x.shape[0] * x.shape[1]) // chunk), 2, x.shape[1]), np.float64)
    _mod.bn_sums(kind, x, y, v, partial, x.shape[1], parts, r, plane)
    return np.add.reduce(partial, axis=0)


def bn_cf_rows(kind: int, x, y, out, m, k1, k2, k3, parts: int, r=None) -> bool:
    """`bn_rows` of channel-first data (N, C, spatial...), the same kinds and operations per
    element (so the same bits given the same per-channel vectors); False when the arrays
    do not qualify."""
    extra = () if r is None else (r,)
    if (kind >= 4) != bool(extra) or not out.flags.writeable or \
            not _cf_ok(x, (y, out, *extra), (m, k1, k2, k3)):
        return False
    plane = x.size // (x.shape[0] * x.shape[1])
    _mod.bn_rows(kind, x, y, out, m, k1, k2, k3, x.shape[1], parts, r, plane)
    return True


def _inner_contiguous(a: np.ndarray) -> bool:
    return a.ndim > 0 and (a.shape[-1] <= 1 or a.strides[-1] == a.itemsize)


def wino_transform(kind: int, src: np.ndarray, dst: np.ndarray, origin=None) -> bool:
    """One of Winograd's tile transforms (kernels/cpu/_winograd.py, F(2x2, 3x3): kind 0
    `_input_transform`, 1 `_output_transform`, 2 `_gradient_transform`; _winograd5.py,
    F(2x2, 5x5): 3 input, 4 output; _winograd4.py, F(4x4, 3x3): 5 input, 6 output, 7
    gradient) from `src` into
    `dst` in one pass, the NumPy function's operations in the same order (identical
    bits); either may be a strided view whose channel axis is contiguous. With `origin`
    (oy, ox), kinds 3 and 5 read unpadded `src` as if padded: tile (i, j)'s window starts
    at row oy + step i, column ox + step j, and pixels outside `src` are zeros. False
    when the arrays do not qualify."""
    if _mod is None or type(src) is not np.ndarray or type(dst) is not np.ndarray or \
            src.dtype not in _FLOATS or dst.dtype != src.dtype or \
            not dst.flags.writeable or not _inner_contiguous(src) or \
            not _inner_contiguous(dst) or src.shape[-1] != dst.shape[-1] or \
            src.shape[-1] == 0:
        return False
    if origin is None:
        _mod.wino_transform(kind, src, dst)
    else:
        _mod.wino_transform(kind, src, dst, (int(origin[0]), int(origin[1])))
    return True


def bias_relu(out: np.ndarray, bias: np.ndarray, relu: bool) -> bool:
    """`out += bias`, then max(out, 0) when `relu`, in place over the last axis of
    C-contiguous `out` in one pass (NumPy's values: the sum rounded, NaN and -0.0 kept as
    np.maximum keeps them); False when the arrays do not qualify."""
    if _mod is None or type(out) is not np.ndarray or type(bias) is not np.ndarray or \
            out.dtype not in _FLOATS or bias.dtype != out.dtype or bias.ndim != 1 or \
            out.ndim < 1 or out.shape[-1] != bias.shape[0] or bias.shape[0] == 0 or \
            not out.flags.c_contiguous or not out.flags.writeable or \
            not bias.flags.c_contiguous:
        return False
    _mod.bias_relu(out, bias, bool(relu))
    return True


def elementwise(out: np.ndarray, inputs: tuple, program: bytes, parts: int = 1) -> bool:
    """Runs a _FusedElementwise program (kernels/cpu/fused_elementwise_ops.py) over the
    float32 `inputs` (C-contiguous, each of `out`'s shape or of rank 0) into `out` in one
    pass, split over `parts` pool threads when large; False when the extension is missing
    or an array does not qualify (nothing written). `program` is the int32 triples (op, a,
    b) _native.c's `elementwise` reads."""
    fn = getattr(_mod, "elementwise", None)
    return fn is not None and fn(out, inputs, program, parts)


def elementwise_fn():
    """_native.c's `elementwise` itself (`elementwise` without its Python frame: a fused
    kernel's call costs about as much as one NumPy call), or `elementwise` when the
    extension lacks it."""
    return getattr(_mod, "elementwise", None) or elementwise


def resize_nearest(images: np.ndarray, iy: np.ndarray, ix: np.ndarray, parts: int):
    """ResizeNearestNeighbor of C-contiguous NHWC `images` (any type) by the int64 source
    indices `iy` and `ix` (image_ops.py's _nearest_index) in one pass, a new array, or None
    without the extension or for an input that is not such an array."""
    if _mod is None or not hasattr(_mod, "resize_nearest") or \
            type(images) is not np.ndarray or images.ndim != 4 or \
            not images.flags.c_contiguous or images.dtype.hasobject:
        return None
    out = np.empty((images.shape[0], iy.size, ix.size, images.shape[3]), images.dtype)
    _mod.resize_nearest(out, images, np.ascontiguousarray(iy, np.int64),
                        np.ascontiguousarray(ix, np.int64), parts)
    return out


def resize_nearest_grad(grads: np.ndarray, ky: int, kx: int, parts: int):
    """ResizeNearestNeighborGrad of an integer upsampling by ky x kx of C-contiguous
    float32 NHWC `grads` (each output pixel its block's sum, in _resize_nearest.py's _sum_into
    order), a new array, or None without the extension or for other inputs."""
    if _mod is None or not hasattr(_mod, "resize_nearest_grad") or \
            type(grads) is not np.ndarray or grads.dtype != np.float32 or grads.ndim != 4 \
            or not grads.flags.c_contiguous or grads.shape[1] % ky or grads.shape[2] % kx:
        return None
    n, h, w, c = grads.shape
    out = np.empty((n, h // ky, w // kx, c), np.float32)
    _mod.resize_nearest_grad(out, grads, ky, kx, parts)
    return out


def swap_last2(x: np.ndarray, parts: int = 1):
    """A new C-contiguous array (..., S, R) from C-contiguous `x` (..., R, S), the last two
    axes swapped (elements copied as they are, 2, 4 or 8 bytes each), or None when `x` does
    not qualify. Tiled, so both sides stay in cache (NCHW <-> NHWC of the conv kernels)."""
    if _mod is None or type(x) is not np.ndarray or x.ndim < 2 or \
            x.dtype.itemsize not in (2, 4, 8) or x.dtype.hasobject or not x.flags.c_contiguous:
        return None
    r, s = x.shape[-2:]
    out = np.empty(x.shape[:-2] + (s, r), x.dtype)
    _mod.swap_last2(x, out, x.size // max(r * s, 1) if r * s else 0, r, s, parts)
    return out


# ---- end convnets block -------------------------------------------------------------------


# Logits up to this many elements take `sparse_xent`'s one pass; bigger ones NumPy's
# vectorized exp (faster per element than the C library's once the dozen calls' overhead
# no longer counts: float32 128x10 11 us against 44, 64x100 39 against 44, 32x1000 232
# against 115).
XENT_MAX_ELEMENTS = 4096


def sparse_xent(features: np.ndarray, labels: np.ndarray):
    """SparseSoftmaxCrossEntropyWithLogits of (batch, classes) float32/float64 `features`
    and int32/int64 `labels` in one pass (_native.c `sparse_xent`): (loss, backprop, -1),
    or (None, None, row) when the label of `row` is outside [0, classes); None when the
    arrays do not qualify (other types, layouts, an empty or big input)."""
    if _mod is None or type(features) is not np.ndarray or type(labels) is not np.ndarray or \
            features.dtype not in _FLOATS or labels.dtype not in _LABELS or \
            features.ndim != 2 or labels.ndim != 1 or labels.shape[0] != features.shape[0] or \
            not 0 < features.size <= XENT_MAX_ELEMENTS or \
            not features.flags.c_contiguous or not labels.flags.c_contiguous:
        return None
    loss = np.empty(features.shape[0], features.dtype)
    backprop = np.empty(features.shape, features.dtype)
    bad = _mod.sparse_xent(features, labels, loss, backprop)
    return (loss, backprop, -1) if bad < 0 else (None, None, bad)


# ---- ngemm block (issue 20, helper convs3) ------------------------------------------------

_F32 = np.dtype(np.float32)


# Which tiles ngemm has on this CPU (1 AVX-512F, 2 AVX2 + FMA, 0 none: ngemm declines).
_NGEMM_ISA = _mod.ngemm_isa() if _mod is not None and hasattr(_mod, "ngemm_isa") else 0


def ngemm_favours(m: int, n: int, k: int, transpose_a: bool = False) -> bool:
    """Whether `ngemm` beats NumPy's OpenBLAS on a float32 product of these sizes (out m x
    n, inner k), from CPU times on this project's Zen 4 cores, one thread (ngemm /
    OpenBLAS Haswell kernel, GFLOP/s): 25088x64 @ 64x64 100-109 / 59, 25088x256 @ 256x64
    88-90 / 70-72, 25088x64 @ 64x256 83-85 / 68-75, 6272x512 @ 512x128 102 / 87,
    6272x128 @ 128x512 95 / 87, the stem's 100352x147 @ 147x64 78-83 / 63; behind from
    n = 256 over k = 512 (90 / 95) and at 392 rows with n >= 512 (70-90 / 91-97). Filter
    gradients (a^T b over a long k): 256x25088 @ 25088x64 83 / 72, 147x100352 @ 100352x64
    69-86 / 59-68, 64x6272 @ 6272x64 (Winograd's) 104-111 / 70-96, 1024x1568 @ 1568x256
    99 / 93; behind with n >= 512 and at 512x6272 @ 6272x128 (77 / 91).
    Not for small products (m < 24), where a tile is mostly tails.

    With AVX2 tiles only (`_mod.ngemm_isa()` 2; Zen 3 here, OpenBLAS's Haswell kernel,
    GFLOP/s of one thread under load 5-9, so +-10%): ahead on short inner sizes, 65536x75 @
    75x32 (the CNN's first conv) 68-74 / 54-59, 25088x64 @ 64x64 79-89 / 43-65, 25088x64 @
    64x256 53-82 / 44-60; behind from k = 128 with n >= 128 (6272x128 @ 128x512 48-59 /
    64-78), on every a^T b (45-60 / 57-72), and on the Winograd paths' per-position
    products of a few hundred rows (a 56x56 64->64 3x3 conv: 19-23 against 18-19 ms)."""
    if m < 24 or n == 0 or k == 0:
        return False
    if _NGEMM_ISA == 2:
        return not transpose_a and k <= 96 and n <= 256 and m >= 2048
    if transpose_a:
        return (n <= 128 and m <= 256) or (n <= 256 and m >= 1024)
    return n <= 128 or (n <= 256 and k <= 256) or (n <= 512 and k <= 128)


def ngemm(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None,
          accumulate: bool = False, parts: int = 1):
    """`out = a @ b` (or `out += a @ b` when `accumulate`) for float32 `a` (m, k) (rows
    contiguous at any row stride, or a transposed view of such a (k, m) array), `b` (k, n)
    C-contiguous and `out` (m, n) C-contiguous, through `_native.c`'s own GEMM (no packing;
    the "ngemm block" there), split over `parts` threads. Returns `out` (a new array when
    None), or None when it does not take the call (neither AVX-512F nor AVX2 + FMA, other
    dtypes or layouts):
    the caller then multiplies with NumPy. Rounding differs from BLAS's as one BLAS
    blocking does from another; the result does not depend on `parts`."""
    if _mod is None or not hasattr(_mod, "ngemm") or type(a) is not np.ndarray or \
            type(b) is not np.ndarray or a.dtype != _F32 or b.dtype != _F32 or \
            a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0] or \
            not b.flags.c_contiguous:
        return None
    if a.flags.c_contiguous or (a.strides[1] == 4 and a.strides[0] % 4 == 0
                                and a.strides[0] >= 4 * a.shape[1]):
        base, ta = a, False
    elif a.T.flags.c_contiguous or (a.strides[0] == 4 and a.strides[1] % 4 == 0
                                    and a.strides[1] >= 4 * a.shape[0]):
        base, ta = a.T, True
    else:
        return None
    shape = (a.shape[0], b.shape[1])
    if out is None:
        if accumulate:
            return None
        out = np.empty(shape, _F32)
    elif type(out) is not np.ndarray or out.dtype != _F32 or out.shape != shape or \
            not out.flags.c_contiguous or not out.flags.writeable:
        return None
    with _stop_for(2.0 * shape[0] * shape[1] * a.shape[1]) as (cell, deadline):
        done = _mod.ngemm(base, b, out, ta, bool(accumulate), max(1, parts), cell, deadline)
    if done is None:
        return None
    if not done:
        interrupt.raise_stopped()
    return out




def _batch_rows(a: np.ndarray) -> bool:
    """Whether `ngemm_batch` reads (P, m, k) `a`: rows contiguous at a row stride of at
    least k, or (a transposed view) columns contiguous at a stride of at least m."""
    if a.shape[2] <= 1 or a.strides[2] == 4:
        return a.strides[1] % 4 == 0 and a.strides[1] >= 4 * a.shape[2]
    return ((a.shape[1] <= 1 or a.strides[1] == 4) and a.strides[2] % 4 == 0
            and a.strides[2] >= 4 * a.shape[1])


def ngemm_batch(a: np.ndarray, b: np.ndarray, out: np.ndarray,
                accumulate: bool = False) -> bool:
    """`out[p] = a[p] @ b[p]` (or += when `accumulate`) for every p on this thread, through
    `_native.c`'s own GEMM in one call (the same bits as `ngemm` per p): float32 `a` (P, m,
    k) with contiguous rows (or each a[p] the transposed view of such a (k, m) array), `b`
    (P, k, n) C-contiguous and `out` (P, m, n) whose every out[p] is C-contiguous (the
    positions at any stride). False when it does not take the arrays, or any is empty (the
    caller multiplies per p)."""
    if _mod is None or not hasattr(_mod, "ngemm_batch") or type(a) is not np.ndarray or \
            type(b) is not np.ndarray or type(out) is not np.ndarray or a.dtype != _F32 or \
            b.dtype != _F32 or out.dtype != _F32 or a.ndim != 3 or out.ndim != 3 or \
            not b.flags.c_contiguous or not out[:1].flags.c_contiguous or \
            out.strides[0] % 4 or out.strides[0] < 4 * out.shape[1] * out.shape[2] or \
            not out.flags.writeable or a.strides[0] % 4 or not _batch_rows(a) or \
            b.shape != (a.shape[0], a.shape[2], out.shape[2]) or \
            out.shape[:2] != a.shape[:2] or 0 in a.shape:
        return False
    return bool(_mod.ngemm_batch(a, b, out, bool(accumulate)))


def dataflow_core(items: list, specs: list):
    """The C driver loop of a dataflow executor (runtime/executor.py; `_native.c`'s
    DataflowCore) over `items`, given one spec per item: (mode, local id, number of outputs,
    first output slot, input slots, consumer indices, the output index each consumer's edge
    carries (-1: a control edge), kernel, flags (1: a Merge, 2: an Exit with that one
    input)); the modes are `_native.c`'s DF_* (0: the Python loop runs the node). None
    without the extension."""
    if _mod is None or not hasattr(_mod, "DataflowCore"):
        return None
    return _mod.DataflowCore(items, specs, registry.DEAD)
