"""Philox4x32-10 and the conversions TensorFlow's stateless random ops apply to its bits.

Philox (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011) maps a
128-bit counter and a 64-bit key to 128 random bits through ten rounds; everything here is
vectorized over whole arrays of counters with uint32/uint64 arithmetic.

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


def _via_long_double(wide_fn, libm_fn, *args) -> np.ndarray:
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
        out[near] = [_safe(libm_fn, *vals) for vals in zip(*(a[near].tolist() for a in args),
                                                           strict=True)]
    return out.reshape(shape)


def _safe(fn, *args) -> float:
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


def log_double(x) -> np.ndarray:
    """glibc's log for float64 x > 0."""
    return _via_long_double(np.log, math.log, x)


def log1p_double(x) -> np.ndarray:
    """glibc's log1p for float64 x > -1: its error reaches a full ulp, so every value comes
    from the C library (through the math module)."""
    return _libm_each(lambda v: _safe(math.log1p, v), x)


def pow_double(x, y) -> np.ndarray:
    """glibc's pow for float64 x >= 0."""
    return _via_long_double(np.power, math.pow, x, y)


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


def uniform(key, counter, n: int, dtype) -> np.ndarray:
    """n floats in [0, 1) of `dtype` (float16, bfloat16, float32, float64)."""
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


def uniform_full_int(key, counter, n: int, dtype) -> np.ndarray:
    """n integers over the whole range of `dtype` (int32, int64, uint32, uint64)."""
    dtype = np.dtype(dtype)
    if dtype.itemsize == 8:
        w = words(key, counter, 2 * n)
        return join64(w[0::2], w[1::2]).view(dtype)
    return words(key, counter, n).view(dtype)


def uniform_int(key, counter, n: int, minval, maxval, dtype) -> np.ndarray:
    """n integers in [minval, maxval) by TF's modulo scheme; requires minval < maxval."""
    dtype = np.dtype(dtype)
    bits = uniform_full_int(key, counter, n, np.uint64 if dtype.itemsize == 8 else np.uint32)
    udtype = bits.dtype
    lo = np.asarray(minval, dtype).astype(udtype)
    span = (np.asarray(maxval, dtype).astype(udtype) - lo).astype(udtype)
    with np.errstate(over="ignore"):
        return (lo + bits % span).astype(udtype).view(dtype)


def normal(key, counter, n: int, dtype) -> np.ndarray:
    """n standard normals of `dtype`; half and bfloat16 round the float32 values."""
    kind = _kind(dtype)
    if kind == "float64":
        w = words(key, counter, 4 * (-(-n // 2))).reshape(-1, 4).T
        d0, d1 = box_muller_double(*w)
        return np.stack([d0, d1], axis=1).reshape(-1)[:n]
    w = words(key, counter, 2 * (-(-n // 2))).reshape(-1, 2).T
    f0, f1 = box_muller_float(*w)
    out = np.stack([f0, f1], axis=1).reshape(-1)[:n]
    return out if kind == "float32" else out.astype(dtype)


def truncated_normal(key, counter, n: int, dtype) -> np.ndarray:
    """n standard normals of `dtype` restricted to (-2, 2) by rejection, TF's way: output
    group g (4 values; 2 for float64) takes the first accepted candidates from the blocks
    at counter + g * skip, + 1, ... in order."""
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


# Poisson (TF's PoissonFunctor, computed in double): output o (rate-major: o = rate_index *
# num_samples + sample_index) draws from the blocks at counter + 256 * o, + 1, ...; each block
# gives two doubles, used second first. Rates below 10 multiply uniforms until the product
# falls to exp(-rate) (Knuth); larger rates use Hormann's transformed rejection, one block
# per attempt.


def _libm_each(fn, values) -> np.ndarray:
    """fn (a math-module function, i.e. the C library's) of each distinct value."""
    values = np.asarray(values, np.float64)
    uniq, inverse = np.unique(values, return_inverse=True)
    return np.array([fn(v) for v in uniq.tolist()], np.float64)[inverse].reshape(values.shape)


def poisson(key, counter, rates, num_samples: int, highest: float) -> np.ndarray:
    """Samples of shape (num_samples, rates.size) as float64 (integral values); `highest` is
    the output type's largest value (Hormann draws above it are redrawn)."""
    rates = np.asarray(rates, np.float64).reshape(-1)
    num_rate = rates.size
    out = np.zeros(num_rate * num_samples)
    rate = np.repeat(rates, num_samples)  # per output, rate-major
    base = np.arange(rate.size, dtype=np.uint64) * np.uint64(RESERVED_SAMPLES_PER_OUTPUT)
    with np.errstate(all="ignore"):
        _poisson_knuth(key, counter, rate, base, out)
        _poisson_hormann(key, counter, rate, base, out, highest)
    return out.reshape(num_rate, num_samples).T


def _uniform_pair(key, counter, offsets):
    w = blocks(key, counter, offsets.size, offsets).T
    return uint64_to_double(w[2], w[3]), uint64_to_double(w[0], w[1])


def _poisson_knuth(key, counter, rate, base, out):
    active = np.flatnonzero(rate < 10)
    limit = _libm_each(lambda v: _safe(math.exp, -v), rate[active])
    prod = np.ones(active.size)
    x = np.zeros(active.size)
    j = 0
    while active.size:
        pending = np.ones(active.size, bool)
        for u in _uniform_pair(key, counter, base[active] + np.uint64(j)):
            prod = np.where(pending, prod * u, prod)
            hit = pending & (prod <= limit)
            out[active[hit]] = x[hit]
            pending &= ~hit
            x = np.where(pending, x + 1, x)
        active, prod, x, limit = active[pending], prod[pending], x[pending], limit[pending]
        j += 1


def _poisson_hormann(key, counter, rate, base, out, highest):
    active = np.flatnonzero(rate >= 10)
    r = rate[active]
    log_rate = _libm_each(lambda v: _safe(math.log, v), r)
    b = 0.931 + 2.53 * np.sqrt(r)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    j = 0
    while active.size:
        u, v = _uniform_pair(key, counter, base[active] + np.uint64(j))
        u = u - 0.5
        us = 0.5 - np.abs(u)
        k = np.floor((2 * a / us + b) * u + r + 0.43)
        ok = ~(k > highest)
        quick = ok & (us >= 0.07) & (v <= 0.9277 - 3.6224 / (b - 2))
        slow = ok & ~quick & ~((k < 0) | ((us < 0.013) & (v > us)))
        take = quick.copy()
        if slow.any():
            arg = v[slow] * inv_alpha[slow] / (a[slow] / (us[slow] * us[slow]) + b[slow])
            s = log_double(arg)
            t = -r[slow] + k[slow] * log_rate[slow] - _libm_each(
                lambda q: _safe(math.lgamma, q), k[slow] + 1)
            take[np.flatnonzero(slow)[s <= t]] = True
        out[active[take]] = k[take]
        keep = ~take
        active, r, log_rate, a, b, inv_alpha = (arr[keep] for arr in (
            active, r, log_rate, a, b, inv_alpha))
        j += 1


# Gamma (TF's stateless gamma, in double): output o (alpha-major) draws from the blocks at
# counter + 256 * o, + 1, ... through two buffers on one stream: normals (a block gives two
# Box-Muller doubles) and uniforms (two doubles), each handing out its second value first and
# refilled from the next block when empty. alpha == 1 is -log1p(-u) for the second uniform
# of the first block; otherwise Marsaglia-Tsang (d = alpha - 1/3, or alpha + 2/3 with a final
# factor u^(1/alpha) for alpha < 1).


class _Buffers:
    """Per-output normal and uniform buffers over per-output block streams."""

    def __init__(self, key, counter, base):
        self.key, self.counter, self.base = key, counter, base
        self.next_block = np.zeros(base.size, np.uint64)
        self.vals = {"n": np.zeros((base.size, 2)), "u": np.zeros((base.size, 2))}
        self.left = {"n": np.zeros(base.size, np.int64), "u": np.zeros(base.size, np.int64)}

    def take(self, kind: str, rows: np.ndarray) -> np.ndarray:
        empty = rows[self.left[kind][rows] == 0]
        if empty.size:
            w = blocks(self.key, self.counter, empty.size,
                       self.base[empty] + self.next_block[empty]).T
            if kind == "n":
                pair = box_muller_double(*w)
            else:
                pair = (uint64_to_double(w[0], w[1]), uint64_to_double(w[2], w[3]))
            self.vals[kind][empty] = np.stack(pair, axis=1)
            self.left[kind][empty] = 2
            self.next_block[empty] += np.uint64(1)
        self.left[kind][rows] -= 1
        return self.vals[kind][rows, self.left[kind][rows]]


def gamma(key, counter, alphas, num_samples: int) -> np.ndarray:
    """Gamma(alpha, 1) samples of shape (num_samples, alphas.size) in float64."""
    alphas = np.asarray(alphas, np.float64).reshape(-1)
    alpha = np.repeat(alphas, num_samples)
    out = np.zeros(alpha.size)
    base = np.arange(alpha.size, dtype=np.uint64) * np.uint64(RESERVED_SAMPLES_PER_OUTPUT)
    with np.errstate(all="ignore"):
        one = np.flatnonzero(alpha == 1.0)
        if one.size:
            w = blocks(key, counter, one.size, base[one]).T
            out[one] = -log1p_double(-uint64_to_double(w[2], w[3]))
        _marsaglia_tsang(_Buffers(key, counter, base), alpha, out)
    return out.reshape(alphas.size, num_samples).T


def _marsaglia_tsang(buffers, alpha, out):
    rows = np.flatnonzero(alpha != 1.0)
    a = alpha[rows]
    less = a < 1
    d = a + np.where(less, 2.0 / 3, -1.0 / 3)
    c = 1.0 / 3 / np.sqrt(d)
    while rows.size:
        x = buffers.take("n", rows)
        v = 1 + c * x
        pos = np.flatnonzero(v > 0)
        done = np.zeros(rows.size, bool)
        if pos.size:
            v3 = v[pos] * v[pos] * v[pos]
            u = buffers.take("u", rows[pos])
            xp = x[pos]
            accept = u < 1 - 0.0331 * (xp * xp) * (xp * xp)
            hard = np.flatnonzero(~accept)
            if hard.size:
                lhs = log_double(u[hard])
                rhs = 0.5 * xp[hard] * xp[hard] + d[pos][hard] * (
                    1 - v3[hard] + log_double(v3[hard]))
                accept[hard] = lhs < rhs
            acc = pos[accept]
            res = d[acc] * v3[accept]
            small = np.flatnonzero(less[acc])
            if small.size:
                b = buffers.take("u", rows[acc[small]])
                res[small] = res[small] * pow_double(b, 1 / a[acc[small]])
            out[rows[acc]] = res
            done[acc] = True
        rows, a, less, d, c = (arr[~done] for arr in (rows, a, less, d, c))


# Binomial (TF's RandomBinomialFunctor): output o (batch-major) with count*p < 10 sums
# geometric variables (inversion) from the blocks at counter + 42 * o; otherwise Hormann's
# BTRS rejection, one block (u second value, v first) per attempt from counter + 256 * o.
# Probabilities above 1/2 sample count - X(1 - p). Comparisons run in the parameters' dtype.

_STIRLING_TAIL = np.array([
    0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
    0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
    0.00925546218271273, 0.00833056343336287])


def _stirling_tail(k):
    kp1sq = (k + 1) * (k + 1)
    far = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
    return np.where(k <= 9, _STIRLING_TAIL[np.clip(k, 0, 9).astype(np.int64)], far)


def binomial(key, counter, counts, probs, samples_per_batch: int) -> np.ndarray:
    """Samples of shape (samples_per_batch, counts.size) as float64; `counts` and `probs`
    are the broadcast parameters (flat, of one floating dtype)."""
    counts, probs = np.asarray(counts).reshape(-1), np.asarray(probs).reshape(-1)
    t = probs.dtype.type
    count = np.repeat(counts, samples_per_batch)
    prob = np.repeat(probs, samples_per_batch)
    dcount = count.astype(np.float64)
    out = np.full(count.size, np.nan)
    o = np.arange(count.size, dtype=np.uint64)
    with np.errstate(all="ignore"):
        zero = (dcount <= 0) | (prob <= t(0))
        full = ~zero & (prob >= t(1))
        low = ~zero & ~full & (prob <= t(0.5))
        high = ~zero & ~full & (prob > t(0.5))
        out[zero] = 0.0
        out[full] = dcount[full]
        q = (t(1) - prob).astype(prob.dtype)
        for side, p_t in ((low, prob), (high, q)):
            btrs_rows = np.flatnonzero(side & ((count * p_t).astype(prob.dtype) >= t(10)))
            inv_rows = np.flatnonzero(side & ~((count * p_t).astype(prob.dtype) >= t(10)))
            x = np.zeros(count.size)
            x[inv_rows] = _binomial_inversion(key, counter, dcount[inv_rows],
                                              p_t[inv_rows].astype(np.float64),
                                              o[inv_rows] * np.uint64(42))
            x[btrs_rows] = _btrs(key, counter, dcount[btrs_rows],
                                 p_t[btrs_rows].astype(np.float64),
                                 o[btrs_rows] * np.uint64(RESERVED_SAMPLES_PER_OUTPUT))
            rows = np.concatenate([inv_rows, btrs_rows])
            out[rows] = x[rows] if side is low else dcount[rows] - x[rows]
    return out.reshape(counts.size, samples_per_batch).T


def _binomial_inversion(key, counter, count, p, base):
    result = np.zeros(count.size)
    rows = np.arange(count.size)
    log1p_q = _libm_each(lambda v: _safe(math.log1p, v), -p)
    geom_sum = np.zeros(count.size)
    num = np.zeros(count.size)
    j = 0
    while rows.size:
        pending = np.ones(rows.size, bool)
        for u in _uniform_pair(key, counter, base[rows] + np.uint64(j)):
            geom = np.ceil(log_double(u) / log1p_q[rows])
            geom_sum[rows] = np.where(pending, geom_sum[rows] + geom, geom_sum[rows])
            stop = pending & (geom_sum[rows] > count[rows])
            result[rows[stop]] = num[rows[stop]]
            pending &= ~stop
            num[rows[pending]] += 1
        rows = rows[pending]
        j += 1
    return result


def _btrs(key, counter, count, p, base):
    result = np.zeros(count.size)
    rows = np.arange(count.size)
    stddev = np.sqrt(count * p * (1 - p))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = count * p + 0.5
    v_r = 0.92 - 4.2 / b
    r = p / (1 - p)
    alpha = (2.83 + 5.1 / b) * stddev
    m = np.floor((count + 1) * p)
    head = (m + 0.5) * log_double((m + 1) / (r * (count - m + 1)))
    j = 0
    while rows.size:
        u, v = _uniform_pair(key, counter, base[rows] + np.uint64(j))
        u = u - 0.5
        us = 0.5 - np.abs(u)
        k = np.floor((2 * a[rows] / us + b[rows]) * u + c[rows])
        take = (us >= 0.07) & (v <= v_r[rows])
        slow = np.flatnonzero(~take & ~((k < 0) | (k > count[rows])))
        if slow.size:
            i = rows[slow]
            ks, n = k[slow], count[i]
            lhs = log_double(v[slow] * alpha[i] / (a[i] / (us[slow] * us[slow]) + b[i]))
            bound = (head[i] + (n + 1) * log_double((n - m[i] + 1) / (n - ks + 1))
                     + (ks + 0.5) * log_double(r[i] * (n - ks + 1) / (ks + 1)))
            bound = ((bound + _stirling_tail(m[i])) + _stirling_tail(n - m[i])
                     - _stirling_tail(ks)) - _stirling_tail(n - ks)
            take[slow[lhs <= bound]] = True
        result[rows[take]] = k[take]
        rows = rows[~take]
        j += 1
    return result
