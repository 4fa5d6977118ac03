"""Philox4x32-10 and the conversions TensorFlow's stateless random ops apply to its bits.

Philox (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011) maps a
128-bit counter and a 64-bit key to 128 random bits through ten rounds; everything here is
vectorized over whole arrays of counters with uint32/uint64 arithmetic. The distributions
(`uniform`, `normal`, `truncated_normal`, `uniform_int`, `uniform_full_int`) run in C when
the optional extension lib/_philox.c is built (the same bits, 20-100x faster for normals);
their NumPy versions (`_np_*`) are the reference it is tested against.

How TensorFlow's stateless ops spend the bits (these facts fix the values bit for bit):
- A seed pair (s0, s1) becomes a key and a counter by one Philox call with the fixed key
  (0x3ec8f720, 0x02461e29) on the counter (lo s0, hi s0, lo s1, hi s1): the output's first
  two words are the key, its last two the counter's high half; the low half is zero.
- Output element k of a fixed-sample distribution comes from Philox block
  `counter + k // per_block`, where a block (4 uint32) yields 4 float32/half/bfloat16/
  int32 values or 2 float64/int64 values (two words each, the first word high for doubles
  and the second high for 64-bit integers).
- Floats in [0, 1) put random mantissa bits under the exponent of 1.0 and subtract 1.
- Normals are Box-Muller pairs; truncated normals reject |x| >= 2, and each group of 4
  (float64: 2) outputs draws from its own run of blocks starting at counter + 256 * group
  (float64: 128 * group), consuming words in order.
"""

from __future__ import annotations

import math
import os

import numpy as np

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = np.uint32(0x9E3779B9), np.uint32(0xBB67AE85)
_MASK32 = np.uint64(0xFFFFFFFF)
_SHIFT32 = np.uint64(32)
_ROUNDS = 10
# Outputs of a variable-samples distribution (truncated normal) reserve this many words each.
RESERVED_SAMPLES_PER_OUTPUT = 256


def philox(counter: np.ndarray, key) -> np.ndarray:
    """Philox4x32-10 of counters `counter` (uint32, shape (4, n)) under `key` (two uint32,
    or two uint32 arrays of shape (n,)); returns the (4, n) uint32 outputs."""
    c0, c1, c2, c3 = (np.asarray(c, np.uint32) for c in counter)
    k0, k1 = (np.asarray(k, np.uint32) for k in key)
    with np.errstate(over="ignore"):
        for r in range(_ROUNDS):
            p0 = _M0 * c0.astype(np.uint64)
            p1 = _M1 * c2.astype(np.uint64)
            hi0, lo0 = (p0 >> _SHIFT32).astype(np.uint32), (p0 & _MASK32).astype(np.uint32)
            hi1, lo1 = (p1 >> _SHIFT32).astype(np.uint32), (p1 & _MASK32).astype(np.uint32)
            c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
            if r < _ROUNDS - 1:
                k0, k1 = k0 + _W0, k1 + _W1
    return np.stack([c0, c1, c2, c3])


def split64(x) -> tuple:
    """(low, high) uint32 halves of uint64 values."""
    x = np.asarray(x, np.uint64)
    return (x & _MASK32).astype(np.uint32), (x >> _SHIFT32).astype(np.uint32)


def join64(lo, hi) -> np.ndarray:
    """uint64 values from uint32 halves."""
    return np.asarray(lo, np.uint64) | (np.asarray(hi, np.uint64) << _SHIFT32)


def key_counter_from_seed(seed) -> tuple[np.ndarray, np.ndarray]:
    """TF's StatelessRandomGetKeyCounter: a seed of two int32/int64 values to the Philox
    key (uint64, shape [1]) and counter (uint64, shape [2])."""
    s = np.asarray(seed).astype(np.int64).view(np.uint64)
    lo0, hi0 = split64(s[0])
    lo1, hi1 = split64(s[1])
    mix = philox(np.array([[lo0], [hi0], [lo1], [hi1]], np.uint32),
                 (np.uint32(0x3EC8F720), np.uint32(0x02461E29)))[:, 0]
    key = join64(mix[0], mix[1]).reshape(1)
    counter = np.array([0, join64(mix[2], mix[3])], np.uint64)
    return key, counter


def blocks(key, counter, n_blocks: int, offsets=None) -> np.ndarray:
    """The Philox outputs at counter + offsets (default 0..n_blocks-1) as (n, 4) uint32.

    `key` is a uint64 (its low word first), `counter` two uint64 (low half first): the
    layout of StatelessRandomGetKeyCounter's outputs.
    """
    key = np.asarray(key, np.uint64).reshape(-1)
    counter = np.asarray(counter, np.uint64).reshape(-1)
    k = np.arange(n_blocks, dtype=np.uint64) if offsets is None else offsets
    with np.errstate(over="ignore"):
        lo = counter[0] + k
        hi = counter[1] + (lo < k).astype(np.uint64)
    c0, c1 = split64(lo)
    c2, c3 = split64(hi)
    return philox((c0, c1, c2, c3), split64(key[0])).T


def words(key, counter, count: int) -> np.ndarray:
    """The first `count` uint32 words of the Philox stream at (key, counter)."""
    return blocks(key, counter, -(-count // 4)).reshape(-1)[:count]


# glibc's float32 logf and sincosf (the ARM optimized-routines algorithms that TensorFlow's
# BoxMullerFloat reaches on Linux; they are not correctly rounded, so float64-then-round would
# differ in about 1% of normals). Evaluated in double as glibc does, with its x86-64 FMA
# contractions emulated exactly.

def _split(a):
    c = a * 134217729.0  # 2**27 + 1: Dekker's split into two 26-bit halves
    hi = c - (c - a)
    return hi, a - hi


def fma(a, b, c):
    """round(a * b + c) via error-free transformations (exact product, two-sum)."""
    a, b, c = (np.asarray(v, np.float64) for v in (a, b, c))
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c
    bb = s - p
    t = (p - (s - bb)) + (c - bb)
    return s + (t + e)


def _hex(*values) -> np.ndarray:
    return np.array([float.fromhex(v) for v in values])


# logf: x = 2^k z, z near table point c_i (16 subintervals), log x = log1p(z/c - 1) + log c
# + k ln2 with a degree-4 polynomial for log1p.
_LOGF_INVC = _hex(
    "0x1.661ec79f8f3bep+0", "0x1.571ed4aaf883dp+0", "0x1.49539f0f010bp+0",
    "0x1.3c995b0b80385p+0", "0x1.30d190c8864a5p+0", "0x1.25e227b0b8eap+0",
    "0x1.1bb4a4a1a343fp+0", "0x1.12358f08ae5bap+0", "0x1.0953f419900a7p+0", "0x1p+0",
    "0x1.e608cfd9a47acp-1", "0x1.ca4b31f026aap-1", "0x1.b2036576afce6p-1",
    "0x1.9c2d163a1aa2dp-1", "0x1.886e6037841edp-1", "0x1.767dcf5534862p-1")
_LOGF_LOGC = _hex(
    "-0x1.57bf7808caadep-2", "-0x1.2bef0a7c06ddbp-2", "-0x1.01eae7f513a67p-2",
    "-0x1.b31d8a68224e9p-3", "-0x1.6574f0ac07758p-3", "-0x1.1aa2bc79c81p-3",
    "-0x1.a4e76ce8c0e5ep-4", "-0x1.1973c5a611cccp-4", "-0x1.252f438e10c1ep-5", "0x0p+0",
    "0x1.aa5aa5df25984p-5", "0x1.c5e53aa362eb4p-4", "0x1.526e57720db08p-3",
    "0x1.bc2860d22477p-3", "0x1.1058bc8a07ee1p-2", "0x1.4043057b6ee09p-2")
_LN2 = float.fromhex("0x1.62e42fefa39efp-1")
_LOGF_A = _hex("-0x1.00ea348b88334p-2", "0x1.5575b0be00b6ap-2", "-0x1.ffffef20a4123p-2")


def logf(x) -> np.ndarray:
    """glibc's logf for positive normal float32 x."""
    ix = np.asarray(x, np.float32).view(np.uint32)
    tmp = ix - np.uint32(0x3F330000)
    i = (tmp >> np.uint32(19)) % np.uint32(16)
    k = (tmp.view(np.int32) >> 23).astype(np.float64)
    z = (ix - (tmp & np.uint32(0xFF800000))).view(np.float32).astype(np.float64)
    r = fma(z, _LOGF_INVC[i], -1.0)
    y0 = fma(k, _LN2, _LOGF_LOGC[i])
    r2 = r * r
    y = fma(_LOGF_A[1], r, _LOGF_A[2])
    y = fma(_LOGF_A[0], r2, y)
    return fma(y, r2, y0 + r).astype(np.float32)


# sincosf: reduce by the nearest multiple n of pi/2 (hpi_inv carries a 2^24 scale), then
# polynomials for cos (c0..c4) and sin (s1..s3) of the remainder, swapped for odd n and
# negated by quadrant.
_COS = _hex("0x1p0", "-0x1.ffffffd0c621cp-2", "0x1.55553e1068f19p-5",
            "-0x1.6c087e89a359dp-10", "0x1.99343027bf8c3p-16")
_SIN = _hex("-0x1.555545995a603p-3", "0x1.1107605230bc4p-7", "-0x1.994eb3774cf24p-13")
_HPI_INV = float.fromhex("0x1.45F306DC9C883p+23")
_HPI = float.fromhex("0x1.921FB54442D18p0")


def _top12(x):
    return (np.asarray(x, np.float32).view(np.uint32) >> np.uint32(20)) & np.uint32(0x7FF)


def sincosf(y) -> tuple[np.ndarray, np.ndarray]:
    """glibc's sincosf for float32 0 <= y < 120."""
    y = np.asarray(y, np.float32)
    x = y.astype(np.float64)
    top = _top12(y)
    small = top < _top12(np.float32(float.fromhex("0x1.921FB54442D18p-1")))
    tiny = top < _top12(np.float32(2.0**-12))
    n = ((x * _HPI_INV).astype(np.int32) + np.int32(0x800000)) >> 24
    n = np.where(small, 0, n)
    xr = np.where(small, x, fma(-n.astype(np.float64), _HPI, x))
    xs = xr * np.array([1.0, -1.0, -1.0, 1.0])[n & 3]
    cos_c = _COS[:, None] * np.where((n & 2) != 0, -1.0, 1.0)
    x2 = xr * xr
    x4 = x2 * x2
    x3 = x2 * xs
    c2 = fma(x2, cos_c[4], cos_c[3])
    s1 = fma(x2, _SIN[2], _SIN[1])
    c1 = fma(x2, cos_c[1], cos_c[0])
    s = fma(x3, _SIN[0], xs)
    c = fma(x4, cos_c[2], c1)
    sv = fma(x3 * x2, s1, s).astype(np.float32)
    cv = fma(x4 * x2, c2, c).astype(np.float32)
    odd = (n & 1) != 0
    sin_y = np.where(tiny, y, np.where(odd, cv, sv))
    cos_y = np.where(tiny, np.float32(1.0), np.where(odd, sv, cv))
    return sin_y, cos_y


def via_long_double(wide_fn, libm_fn, *args) -> np.ndarray:
    """glibc's double `libm_fn` of arrays `args`: the correctly rounded value from long
    double (`wide_fn`), except near a rounding midpoint (glibc's error reaches about 0.52
    ulp), where libm itself answers through the math module."""
    args = [np.asarray(a, np.float64) for a in args]
    shape = np.broadcast_shapes(*(a.shape for a in args))
    args = [np.broadcast_to(a, shape).reshape(-1) for a in args]
    if np.finfo(np.longdouble).nmant <= 52:
        near = np.ones(args[0].shape, bool)
        out = np.empty(args[0].shape)
    else:
        with np.errstate(all="ignore"):
            wide = wide_fn(*(a.astype(np.longdouble) for a in args))
        out = wide.astype(np.float64)
        ulp = np.spacing(np.abs(out)).astype(np.longdouble)
        near = ~(np.abs(wide - out) <= 0.45 * ulp)  # also NaN and inf results
    if near.any():
        out[near] = [libm_call(libm_fn, *vals) for vals in zip(*(a[near].tolist() for a in args),
                                                           strict=True)]
    return out.reshape(shape)


def libm_call(fn, *args) -> float:
    """fn(*args) from the math module, with IEEE results where it raises instead."""
    try:
        return fn(*args)
    except OverflowError:
        return math.inf
    except (ValueError, ZeroDivisionError):
        name = fn.__name__
        if name in ("log", "log1p"):
            at_zero = args[0] + (1.0 if name == "log1p" else 0.0) == 0
            return -math.inf if at_zero else math.nan
        return math.inf if name in ("lgamma", "pow") else math.nan


def libm_each(fn, values) -> np.ndarray:
    """fn (a math-module function, i.e. the C library's) of each distinct value."""
    values = np.asarray(values, np.float64)
    uniq, inverse = np.unique(values, return_inverse=True)
    return np.array([fn(v) for v in uniq.tolist()], np.float64)[inverse].reshape(values.shape)


_LIBM_FLOAT: dict = {}


def _libm_float_function(name: str, arity: int):
    """The C library's float function `name` through ctypes, or None without a C library."""
    key = (name, arity)
    if key not in _LIBM_FLOAT:
        import ctypes
        import ctypes.util

        path = ctypes.util.find_library("m")
        fn = getattr(ctypes.CDLL(path), name) if path else None
        if fn is not None:
            fn.restype = ctypes.c_float
            fn.argtypes = [ctypes.c_float] * arity
        _LIBM_FLOAT[key] = fn
    return _LIBM_FLOAT[key]


_LIBM_KINDS = {"log1pf": 0, "expm1f": 1, "powf": 2}


def libm_float(name: str, *args) -> np.ndarray:
    """The C library's float32 function `name` ("log1pf", "expm1f" or "powf") of float32
    arguments: the values TensorFlow's kernels get when they call it. Through the C
    extension, else ctypes (each distinct argument once), else the float64 function rounded
    to float32 when no C math library can be loaded."""
    args = [np.asarray(a, np.float32) for a in args]
    if len(args) == 1:
        shape, flat = args[0].shape, [np.ascontiguousarray(args[0]).reshape(-1)]
    else:
        shape = np.broadcast_shapes(*(a.shape for a in args))
        flat = [np.ascontiguousarray(np.broadcast_to(a, shape).reshape(-1)) for a in args]
    if _native is not None:
        out = np.empty(flat[0].size, np.float32)
        _native.libm_float(_LIBM_KINDS[name], flat[0], flat[-1], out)
        return out.reshape(shape)
    uniq, inverse = np.unique(np.stack(flat, axis=1), axis=0, return_inverse=True)
    fn = _libm_float_function(name, len(args))
    if fn is None:
        wide = getattr(np, name[:-1].replace("pow", "power"))
        out = wide(*(uniq.astype(np.float64).T)).astype(np.float32)
    else:
        out = np.array([fn(*row) for row in uniq.tolist()], np.float32)
    return out[inverse.reshape(-1)].reshape(shape)


_LIBM_DOUBLE = {"log": (0, math.log), "exp": (1, math.exp)}


def libm_double(name: str, x) -> np.ndarray:
    """The C library's double function `name` ("log" or "exp") of each value of x: through
    the C extension in one loop, else the math module one value at a time (the same C
    library; IEEE results where it raises)."""
    x = np.ascontiguousarray(x, np.float64)
    kind, fn = _LIBM_DOUBLE[name]
    if _native is not None:
        out = np.empty(x.shape, np.float64)
        _native.libm_double(kind, x.reshape(-1), out.reshape(-1))
        return out
    return np.array([libm_call(fn, v) for v in x.reshape(-1).tolist()],
                    np.float64).reshape(x.shape)


def log_uniform(words: WordStream, n: int, span: int, log_range: float,
                unique: bool) -> tuple[np.ndarray, int] | None:
    """TF's LogUniformSampler in C: n values (with `unique`, the first n distinct ones in
    the order the tries find them) and the tries made, their words consumed from `words`;
    None without the C extension or when 4n + 16 tries did not find n distinct values
    (nothing consumed: the caller draws in NumPy)."""
    if _native is None:
        return None
    w = np.ascontiguousarray(words.ahead(2 * (4 * n + 16 if unique else n)))
    out = np.empty(n, np.int64)
    tries = _native.log_uniform(w, out, span, log_range, unique)
    if tries < 0:
        return None
    words.take(2 * tries)
    return out, tries


def log_uniform_at(key, counter, n: int, span: int, log_range: float,
                   unique: bool) -> tuple[np.ndarray, int] | None:
    """`log_uniform` over the words of the stream at (key, counter) (a reservation's
    start), made in C as the tries need them: the same values and tries, without a buffer
    of words; None where `log_uniform` gives None."""
    if _native is None:
        return None
    k = np.asarray(key, np.uint64).reshape(-1)
    c = np.asarray(counter, np.uint64).reshape(-1)
    out = np.empty(n, np.int64)
    tries = _native.log_uniform_at(int(k[0]), int(c[0]), int(c[1]), out, span, log_range,
                                   unique, 4 * n + 16 if unique else n)
    return None if tries < 0 else (out, tries)


def log_uniform_counts(values: np.ndarray, log_range: float, num_sampled: int,
                       num_tries: int) -> np.ndarray | None:
    """The expected counts of int64 `values` under TF's LogUniformSampler, in C: the
    probability log((v + 2) / (v + 1)) / log_range in double rounded to float, then
    p * num_sampled (float) or -expm1f(num_tries * log1pf(-p)) when tries were repeated;
    float32 of values' shape. None without the C extension."""
    if _native is None:
        return None
    flat = np.ascontiguousarray(values, np.int64).reshape(-1)
    out = np.empty(flat.size, np.float32)
    _native.log_uniform_counts(flat, out, log_range, num_sampled, num_tries)
    return out.reshape(np.shape(values))


def log_double(x) -> np.ndarray:
    """glibc's log for float64 x > 0."""
    return via_long_double(np.log, math.log, x)


def log1p_double(x) -> np.ndarray:
    """glibc's log1p for float64 x > -1: its error reaches a full ulp, so every value comes
    from the C library (through the math module)."""
    return libm_each(lambda v: libm_call(math.log1p, v), x)


def pow_double(x, y) -> np.ndarray:
    """glibc's pow for float64 x >= 0."""
    return via_long_double(np.power, math.pow, x, y)


# Bits to floats in [0, 1).


def uint32_to_float(x) -> np.ndarray:
    bits = (np.asarray(x, np.uint32) & np.uint32(0x7FFFFF)) | np.uint32(0x3F800000)
    return bits.view(np.float32) - np.float32(1.0)


def uint64_to_double(x0, x1) -> np.ndarray:
    """x0 gives the mantissa's upper 20 bits, x1 its lower 32."""
    man = join64(x1, np.asarray(x0, np.uint32) & np.uint32(0xFFFFF))
    return (man | np.uint64(1023 << 52)).view(np.float64) - 1.0


def uint16_to_half(x) -> np.ndarray:
    bits = (np.asarray(x, np.uint32) & np.uint32(0x3FF)).astype(np.uint16) | np.uint16(15 << 10)
    return bits.view(np.float16) - np.float16(1.0)


def uint16_to_bfloat16(x) -> np.ndarray:
    import ml_dtypes

    bits = (np.asarray(x, np.uint32) & np.uint32(0x7F)).astype(np.uint16) | np.uint16(127 << 7)
    return (bits.view(ml_dtypes.bfloat16).astype(np.float32) - 1.0).astype(ml_dtypes.bfloat16)


def box_muller_float(x0, x1) -> tuple[np.ndarray, np.ndarray]:
    """Two float32 standard normals per pair of words, as TF's BoxMullerFloat computes
    them: u1 clamped at 1e-7, the angle 2*pi*u in double rounded to float, then glibc's
    logf and sincosf and a correctly rounded sqrtf."""
    u1 = np.maximum(uint32_to_float(x0), np.float32(1.0e-7))
    v1 = (2.0 * np.pi * uint32_to_float(x1).astype(np.float64)).astype(np.float32)
    u2 = np.sqrt(np.float32(-2.0) * logf(u1))
    sin_v, cos_v = sincosf(v1)
    return sin_v * u2, cos_v * u2


def box_muller_double(x0, x1, x2, x3) -> tuple[np.ndarray, np.ndarray]:
    """Two float64 standard normals per four words (TF's BoxMullerDouble)."""
    u1 = np.maximum(uint64_to_double(x0, x1), 1.0e-7)
    v1 = 2.0 * np.pi * uint64_to_double(x2, x3)
    u2 = np.sqrt(-2.0 * log_double(u1))
    return np.sin(v1) * u2, np.cos(v1) * u2


# Distributions: n values from the stream at (key, counter), in TF's order.


def _kind(dtype) -> str:
    return np.dtype(dtype).name


def _np_uniform(key, counter, n: int, dtype) -> np.ndarray:
    """The NumPy reference of `uniform` (below)."""
    kind = _kind(dtype)
    if kind == "float64":
        w = words(key, counter, 2 * n)
        return uint64_to_double(w[0::2], w[1::2])
    w = words(key, counter, n)
    if kind == "float32":
        return uint32_to_float(w)
    if kind == "float16":
        return uint16_to_half(w)
    if kind == "bfloat16":
        return uint16_to_bfloat16(w)
    raise TypeError(f"uniform floats of {kind} are not supported")


def _np_uniform_full_int(key, counter, n: int, dtype) -> np.ndarray:
    """The NumPy reference of `uniform_full_int` (below)."""
    dtype = np.dtype(dtype)
    if dtype.itemsize == 8:
        w = words(key, counter, 2 * n)
        return join64(w[0::2], w[1::2]).view(dtype)
    return words(key, counter, n).view(dtype)


def _np_uniform_int(key, counter, n: int, minval, maxval, dtype) -> np.ndarray:
    """The NumPy reference of `uniform_int` (below)."""
    dtype = np.dtype(dtype)
    bits = _np_uniform_full_int(key, counter, n, np.uint64 if dtype.itemsize == 8 else np.uint32)
    udtype = bits.dtype
    lo = np.asarray(minval, dtype).astype(udtype)
    span = (np.asarray(maxval, dtype).astype(udtype) - lo).astype(udtype)
    with np.errstate(over="ignore"):
        return (lo + bits % span).astype(udtype).view(dtype)


def _np_normal(key, counter, n: int, dtype) -> np.ndarray:
    """The NumPy reference of `normal` (below)."""
    kind = _kind(dtype)
    if kind == "float64":
        w = words(key, counter, 4 * (-(-n // 2))).reshape(-1, 4).T
        d0, d1 = box_muller_double(*w)
        return np.stack([d0, d1], axis=1).reshape(-1)[:n]
    w = words(key, counter, 2 * (-(-n // 2))).reshape(-1, 2).T
    f0, f1 = box_muller_float(*w)
    out = np.stack([f0, f1], axis=1).reshape(-1)[:n]
    return out if kind == "float32" else out.astype(dtype)


def _np_truncated_normal(key, counter, n: int, dtype) -> np.ndarray:
    """The NumPy reference of `truncated_normal` (below)."""
    kind = _kind(dtype)
    per_group = 2 if kind == "float64" else 4
    skip = per_group * RESERVED_SAMPLES_PER_OUTPUT // 4
    groups = -(-n // per_group)
    out = np.zeros((groups, per_group), np.float64 if kind == "float64" else np.float32)
    count = np.zeros(groups, np.int64)
    base = np.arange(groups, dtype=np.uint64) * np.uint64(skip)
    need = np.arange(groups)
    for j in range(skip):
        if need.size == 0:
            break
        w = blocks(key, counter, need.size, base[need] + np.uint64(j)).T
        if kind == "float64":
            cand = np.stack(box_muller_double(*w), axis=1)
        else:
            a0, a1 = box_muller_float(w[0], w[1])
            b0, b1 = box_muller_float(w[2], w[3])
            cand = np.stack([a0, a1, b0, b1], axis=1)
        for p in range(cand.shape[1]):
            take = (np.abs(cand[:, p]) < 2.0) & (count[need] < per_group)
            rows = need[take]
            out[rows, count[rows]] = cand[take, p]
            count[rows] += 1
        need = need[count[need] < per_group]
    out = out.reshape(-1)[:n]
    return out if kind in ("float32", "float64") else out.astype(dtype)


# The same distributions in C (tensorflux/lib/_philox.c, optional): equal bit for bit to the
# NumPy functions above, which stay the reference (tests/lib/test_philox_native.py) and the
# path without the extension or with TENSORFLUX_NATIVE=0.

try:
    from tensorflux.lib import _philox as _native
except ImportError:  # not built (no C compiler at install time)
    _native = None
if os.environ.get("TENSORFLUX_NATIVE", "1").strip() == "0":
    _native = None

_WORDS, _UNIFORM_F32, _UNIFORM_F64, _UNIFORM_LOW = 0, 1, 2, 3
_NORMAL_F32, _NORMAL_F64, _TRUNC_F32, _TRUNC_F64, _INT32, _INT64 = 4, 5, 6, 7, 8, 9
_LOW_BITS = {"float16": 10, "bfloat16": 7}


def native_available() -> bool:
    """True when the C extension is loaded."""
    return _native is not None


def _fill(kind: int, key, counter, n: int, dtype, lo: int = 0, span: int = 0) -> np.ndarray:
    out = np.empty(n, dtype)
    k = int(np.asarray(key, np.uint64).reshape(-1)[0])
    c = np.asarray(counter, np.uint64).reshape(-1)
    _native.fill(kind, k, int(c[0]), int(c[1]), out, lo, span)
    return out


def uniform(key, counter, n: int, dtype) -> np.ndarray:
    """n floats in [0, 1) of `dtype` (float16, bfloat16, float32, float64)."""
    kind = _kind(dtype)
    if _native is None or kind not in ("float32", "float64", "float16", "bfloat16"):
        return _np_uniform(key, counter, n, dtype)
    if kind in _LOW_BITS:  # m / 2^bits is exact in float32 and in the narrow type
        return _fill(_UNIFORM_LOW, key, counter, n, np.float32, _LOW_BITS[kind]).astype(dtype)
    return _fill(_UNIFORM_F32 if kind == "float32" else _UNIFORM_F64, key, counter, n, dtype)


def uniform_full_int(key, counter, n: int, dtype) -> np.ndarray:
    """n integers over the whole range of `dtype` (int32, int64, uint32, uint64)."""
    dtype = np.dtype(dtype)
    if _native is None:
        return _np_uniform_full_int(key, counter, n, dtype)
    words_per = 2 if dtype.itemsize == 8 else 1
    return _fill(_WORDS, key, counter, n * words_per, np.uint32).view(dtype)


def uniform_int(key, counter, n: int, minval, maxval, dtype) -> np.ndarray:
    """n integers in [minval, maxval) by TF's modulo scheme; requires minval < maxval."""
    dtype = np.dtype(dtype)
    if n == 0:  # no values: any range will do (TF checks it only for a non-empty output)
        return np.empty(0, dtype)
    if _native is None or dtype.itemsize not in (4, 8):
        return _np_uniform_int(key, counter, n, minval, maxval, dtype)
    udtype = np.uint64 if dtype.itemsize == 8 else np.uint32
    lo = np.asarray(minval, dtype).astype(udtype)
    with np.errstate(over="ignore"):
        span = (np.asarray(maxval, dtype).astype(udtype) - lo).astype(udtype)
    kind = _INT64 if dtype.itemsize == 8 else _INT32
    return _fill(kind, key, counter, n, udtype, int(lo), int(span)).view(dtype)


def _normals(kinds: tuple[int, int], reference, key, counter, n: int, dtype) -> np.ndarray:
    """A normal distribution in C: float64 or float32 (half and bfloat16 round the float32
    values); `reference` without the extension."""
    if _native is None:
        return reference(key, counter, n, dtype)
    if _kind(dtype) == "float64":
        return _fill(kinds[1], key, counter, n, np.float64)
    out = _fill(kinds[0], key, counter, n, np.float32)
    return out if _kind(dtype) == "float32" else out.astype(dtype)


def normal(key, counter, n: int, dtype) -> np.ndarray:
    """n standard normals of `dtype`; half and bfloat16 round the float32 values."""
    return _normals((_NORMAL_F32, _NORMAL_F64), _np_normal, key, counter, n, dtype)


def truncated_normal(key, counter, n: int, dtype) -> np.ndarray:
    """n standard normals of `dtype` restricted to (-2, 2) by rejection, TF's way: output
    group g (4 values; 2 for float64) takes the first accepted candidates from the blocks
    at counter + g * skip, + 1, ... in order."""
    return _normals((_TRUNC_F32, _TRUNC_F64), _np_truncated_normal, key, counter, n, dtype)


SHUFFLE_SWAPS = 1 << 21  # swaps of one piece of a long pass (tens of ms of cache misses)


def shuffle_permutation(key, counter, n: int, between=None) -> np.ndarray:
    """The row order TF's RandomShuffle gives n rows (n < 2**31): a Fisher-Yates pass from
    the front, row i swapped with row i + w % (n - i), w the stream's next 32-bit word.
    With `between`, a long pass runs in pieces of SHUFFLE_SWAPS swaps, `between()` called
    before every piece but the first (it may raise to stop); the order is that of one
    pass."""
    if _native is not None:
        out = np.empty(n, np.int64)
        k = int(np.asarray(key, np.uint64).reshape(-1)[0])
        c = np.asarray(counter, np.uint64).reshape(-1)
        if between is None or n <= SHUFFLE_SWAPS:
            _native.permutation(k, int(c[0]), int(c[1]), out)
            return out
        for start in range(0, n - 1, SHUFFLE_SWAPS):
            if start:
                between()
            _native.permutation(k, int(c[0]), int(c[1]), out, start,
                                min(n - 1, start + SHUFFLE_SWAPS))
        return out
    w = words(key, counter, max(n - 1, 0)).astype(np.int64)
    perm = np.arange(n, dtype=np.int64)
    for i in range(n - 1):  # the NumPy reference: one swap at a time
        j = i + int(w[i]) % (n - i)
        perm[i], perm[j] = perm[j], perm[i]
    return perm


def _np_alias_table(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The NumPy reference of `alias_table` (below)."""
    n = weights.size
    total = float(np.cumsum(weights.astype(np.float64))[-1]) if n else 0.0
    with np.errstate(invalid="ignore", divide="ignore"):
        pr = ((weights * np.float32(n)).astype(np.float64) / total).tolist()
    alt = [-1] * n
    low = [i for i in range(n) if pr[i] < 1.0]
    high = [i for i in range(n) if not pr[i] < 1.0]  # NaN (all weights 0) too, as in TF
    while high and low:
        small, large = low.pop(), high.pop()
        alt[small] = large
        pr[large] -= 1.0 - pr[small]
        (low if pr[large] < 1.0 else high).append(large)
    prob = np.array(pr, np.float32)
    for i in high + low:  # rounding leftovers: certain, and their own alias
        prob[i] = 1.0
        alt[i] = i
    return prob, np.array(alt, np.int64)


def alias_table(weights) -> tuple[np.ndarray, np.ndarray]:
    """Walker's alias table of float32 `weights` as TF's DistributionSampler builds it:
    bucket i keeps class i with probability prob[i] (float32), else gives alt[i]. Small and
    large buckets are paired from the ends of two stacks, as TF pairs them, so the table
    (and so every sample drawn through it) is TF's. In C when the extension is built."""
    weights = np.ascontiguousarray(weights, np.float32).reshape(-1)
    if _native is None:
        return _np_alias_table(weights)
    prob = np.empty(weights.size, np.float32)
    alt = np.empty(weights.size, np.int64)
    _native.alias_table(weights, prob, alt)
    return prob, alt


def rejected_below(span: int, wide: bool = False) -> int:
    """TF's ExactUniformInt: tries below this (of 32 bits, 64 when `wide`) are rejected
    when drawing uniformly from [0, span); 0 for a power of two (its bits are masked)."""
    if span & (span - 1) == 0:
        return 0
    return ((1 << 64) - 1 if wide else (1 << 32) - 1) % span + 1


class WordStream:
    """TF's SimplePhilox over a reservation: the 32-bit words of the stream at (key,
    counter) in order, generated as they are needed, and the draws TF makes from them."""

    __slots__ = ("key", "counter", "buf", "pos")

    def __init__(self, key, counter):
        self.key = np.asarray(key, np.uint64).reshape(-1)
        c = np.asarray(counter, np.uint64).reshape(-1)
        self.counter = int(c[0]) | int(c[1]) << 64
        self.buf = np.empty(0, np.uint32)
        self.pos = 0

    def ahead(self, n: int) -> np.ndarray:
        """The next n words, not consumed. (The whole blocks of words already consumed are
        dropped when more are made: `counter` is the block of buf[0].)"""
        have = self.buf.size
        if self.pos + n > have:
            drop = self.pos - self.pos % 4
            if drop:
                self.buf = self.buf[drop:]
                self.pos -= drop
                self.counter = (self.counter + drop // 4) & ((1 << 128) - 1)
                have -= drop
            count = -(-max(self.pos + n - have, have, 64) // 4)
            c = (self.counter + have // 4) & ((1 << 128) - 1)
            more = uniform_full_int(self.key, np.array([c & 0xFFFFFFFFFFFFFFFF, c >> 64],
                                                       np.uint64), 4 * count, np.uint32)
            self.buf = np.concatenate([self.buf, more])
        return self.buf[self.pos:self.pos + n]

    def take(self, n: int) -> np.ndarray:
        out = self.ahead(n)
        self.pos += n
        return out

    def rand_float(self) -> np.float32:
        """A float in [0, 1) from one word (RandFloat)."""
        return uint32_to_float(self.take(1))[0]

    def rand_double(self) -> float:
        """A double in [0, 1) from two words (RandDouble)."""
        w = self.take(2)
        return float(uint64_to_double(w[0], w[1]))

    def uniform(self, n: int, span: int, wide: bool = False) -> np.ndarray:
        """n integers uniform in [0, span) as int64, TF's ExactUniformInt: tries of one
        word (two words, low first, when `wide`: Uniform64) below (2^bits - 1) mod span + 1
        are rejected and the next try read."""
        per_try = 2 if wide else 1
        power_of_two = span & (span - 1) == 0
        rem = rejected_below(span, wide)
        out = []
        while n > 0:
            w = self.ahead(per_try * n)
            raw = join64(w[0::2], w[1::2]) if wide else w.astype(np.uint64)
            ok = np.flatnonzero(raw >= np.uint64(rem))[:n] if rem else np.arange(n)
            out.append(raw[ok])
            self.take(per_try * (int(ok[-1]) + 1 if ok.size == n else raw.size))
            n -= ok.size
        raw = np.concatenate(out) if len(out) != 1 else out[0]
        if power_of_two:
            return (raw & np.uint64(span - 1)).astype(np.int64)
        return (raw % np.uint64(span)).astype(np.int64)


def single_words(seed: int, seed2: int):
    """The 32-bit words of TF's PhiloxRandom(seed, seed2) one at a time, as its
    SingleSampleAdapter hands them out (a generator; drawn 1,024 at a time)."""
    key = np.array([seed & 0xFFFFFFFFFFFFFFFF], np.uint64)
    block = 0
    while True:
        counter = np.array([block, seed2 & 0xFFFFFFFFFFFFFFFF], np.uint64)
        yield from uniform_full_int(key, counter, 1024, np.uint32).tolist()
        block += 256
