"""TensorFlow's rejection samplers on the Philox stream (poisson, gamma, binomial,
parameterized truncated normal), vectorized over outputs: each output's loop becomes a
masked array loop over attempts. The arithmetic follows TensorFlow's kernels operation by
operation, with the C library's transcendental functions from tensorflux/lib/philox.py.
"""

from __future__ import annotations

import math

import numpy as np

from tensorflux.lib import philox
from tensorflux.lib.philox import (
    RESERVED_SAMPLES_PER_OUTPUT,
    blocks,
    box_muller_double,
    libm_call,
    libm_each,
    log1p_double,
    log_double,
    pow_double,
    uint64_to_double,
)

# Poisson (TF's PoissonFunctor, computed in double): output o (rate-major: o = rate_index *
# num_samples + sample_index) draws from the blocks at counter + 256 * o, + 1, ...; each block
# gives two doubles, used second first. Rates below 10 multiply uniforms until the product
# falls to exp(-rate) (Knuth); larger rates use Hormann's transformed rejection, one block
# per attempt.


def _outputs(params, num_samples: int, span):
    """(the parameter of each output, the outputs' indices o as uint64) of outputs
    [lo, hi) = `span` (default: all) in parameter-major order."""
    if span is None:
        return np.repeat(params, num_samples), np.arange(params.size * num_samples,
                                                         dtype=np.uint64)
    o = np.arange(span[0], span[1], dtype=np.int64)
    return params[o // max(num_samples, 1)], o.astype(np.uint64)


def _shaped(out, num_params: int, num_samples: int, span):
    return out if span is not None else out.reshape(num_params, num_samples).T


# The samplers below give, for span=None, samples of shape (num_samples, num_params); for
# span=(lo, hi), the flat outputs lo..hi-1 of the parameter-major order (o = parameter *
# num_samples + sample): each output draws from blocks of its own, so a span's values are
# those of the whole.


def poisson(key, counter, rates, num_samples: int, highest: float,
            span=None) -> np.ndarray:
    """Samples of shape (num_samples, rates.size) as float64 (integral values); `highest` is
    the output type's largest value (Hormann draws above it are redrawn)."""
    rates = np.asarray(rates, np.float64).reshape(-1)
    rate, o = _outputs(rates, num_samples, span)  # per output, rate-major
    out = np.zeros(rate.size)
    base = o * np.uint64(RESERVED_SAMPLES_PER_OUTPUT)
    with np.errstate(all="ignore"):
        _poisson_knuth(key, counter, rate, base, out)
        _poisson_hormann(key, counter, rate, base, out, highest)
    return _shaped(out, rates.size, num_samples, span)


def _uniform_pair(key, counter, offsets):
    w = blocks(key, counter, offsets.size, offsets).T
    return uint64_to_double(w[2], w[3]), uint64_to_double(w[0], w[1])


def _poisson_knuth(key, counter, rate, base, out):
    active = np.flatnonzero(rate < 10)
    limit = libm_each(lambda v: libm_call(math.exp, -v), rate[active])
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
    log_rate = libm_each(lambda v: libm_call(math.log, v), r)
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
            t = -r[slow] + k[slow] * log_rate[slow] - libm_each(
                lambda q: libm_call(math.lgamma, q), k[slow] + 1)
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


def gamma(key, counter, alphas, num_samples: int, span=None) -> np.ndarray:
    """Gamma(alpha, 1) samples of shape (num_samples, alphas.size) in float64."""
    alphas = np.asarray(alphas, np.float64).reshape(-1)
    alpha, o = _outputs(alphas, num_samples, span)
    out = np.zeros(alpha.size)
    base = o * np.uint64(RESERVED_SAMPLES_PER_OUTPUT)
    with np.errstate(all="ignore"):
        one = np.flatnonzero(alpha == 1.0)
        if one.size:
            w = blocks(key, counter, one.size, base[one]).T
            out[one] = -log1p_double(-uint64_to_double(w[2], w[3]))
        _marsaglia_tsang(_Buffers(key, counter, base), alpha, out)
    return _shaped(out, alphas.size, num_samples, span)


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


def binomial(key, counter, counts, probs, samples_per_batch: int,
             span=None) -> np.ndarray:
    """Samples of shape (samples_per_batch, counts.size) as float64; `counts` and `probs`
    are the broadcast parameters (flat, of one floating dtype)."""
    counts, probs = np.asarray(counts).reshape(-1), np.asarray(probs).reshape(-1)
    t = probs.dtype.type
    count, o = _outputs(counts, samples_per_batch, span)
    prob, _ = _outputs(probs, samples_per_batch, span)
    dcount = count.astype(np.float64)
    out = np.full(count.size, np.nan)
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
    return _shaped(out, counts.size, samples_per_batch, span)


def _binomial_inversion(key, counter, count, p, base):
    result = np.zeros(count.size)
    rows = np.arange(count.size)
    log1p_q = libm_each(lambda v: libm_call(math.log1p, v), -p)
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


# Parameterized truncated normal (TF's TruncatedNormalFunctorV2, run as one shard): one
# Philox stream shared by all outputs in order, batch after batch (batch = one broadcast
# parameter set; output [sample, batch]). Per batch one of three samplers, in the dtype T:
# normal rejection (a block of normals), uniform rejection (a block of uniforms z and a block
# of uniforms u per round), or exponential rejection (pairs of uniforms within a block). A
# batch that completes mid-block drops the rest of that block.

_RANDN_INSIDE = 1.3


def _uniform_values(w, dtype):
    if dtype == np.float64:
        return np.stack([uint64_to_double(w[:, 0], w[:, 1]),
                         uint64_to_double(w[:, 2], w[:, 3])], axis=1)
    if dtype == np.float16:
        return philox.uint16_to_half(w)
    return philox.uint32_to_float(w)


def _normal_values(w, dtype):
    if dtype == np.float64:
        return np.stack(box_muller_double(w[:, 0], w[:, 1], w[:, 2], w[:, 3]), axis=1)
    a0, a1 = philox.box_muller_float(w[:, 0], w[:, 1])
    b0, b1 = philox.box_muller_float(w[:, 2], w[:, 3])
    return np.stack([a0, a1, b0, b1], axis=1).astype(dtype)


def _exp_t(x, dtype):
    if dtype == np.float64:
        return philox.via_long_double(np.exp, math.exp, x)
    # float and half go through expf; float64-then-round stands in for it (they differ only
    # in rare rounding cases, which can flip an acceptance test at a tie).
    return np.exp(np.asarray(x, np.float64)).astype(np.float32).astype(dtype)


def _log_t(x, dtype):
    if dtype == np.float64:
        return log_double(x)
    x32 = np.asarray(x, np.float32)
    positive = x32 > 0
    out = np.full(x32.shape, -np.inf, np.float32)
    out[positive] = philox.logf(x32[positive])
    return out.astype(dtype)


class _Stream:
    """Sequential Philox blocks from (key, counter)."""

    def __init__(self, key, counter):
        self.key, self.counter, self.position = key, counter, 0

    def peek(self, count: int) -> np.ndarray:
        offsets = np.arange(self.position, self.position + count, dtype=np.uint64)
        return blocks(self.key, self.counter, count, offsets)


# Rounds of blocks drawn at once by `_collect` (the values do not depend on it: rounds are
# consumed in order and a batch drops only the rest of its last round).
MAX_ROUNDS = 1 << 16


def _collect(stream, need, blocks_per_round, values_fn, units_per_round, poll=None):
    """Accepted values from rounds of `blocks_per_round` blocks until `need` are found;
    values_fn(w) gives (values, accepted) arrays of shape (rounds, per_round); `poll()`
    runs between draws (it may raise to stop)."""
    found = []
    while need > 0:
        if poll is not None and found:
            poll()
        rounds = min(max(4, 2 * need // units_per_round + 4), MAX_ROUNDS)
        w = stream.peek(rounds * blocks_per_round)
        values, accepted = values_fn(w.reshape(rounds, blocks_per_round, 4))
        flat_ok = accepted.reshape(-1)
        count = np.cumsum(flat_ok)
        if count[-1] >= need:
            last = int(np.searchsorted(count, need))  # index of the need-th acceptance
            found.append(values.reshape(-1)[:last + 1][flat_ok[:last + 1]])
            stream.position += (last // accepted.shape[1] + 1) * blocks_per_round
            need = 0
        else:
            found.append(values.reshape(-1)[flat_ok])
            stream.position += rounds * blocks_per_round
            need -= int(count[-1])
    return np.concatenate(found)


def _batch_samples(stream, need, mean, stddev, minval, maxval, dtype, poll=None):
    t = dtype.type
    if (np.isinf(minval) and minval < 0) or maxval < mean:
        minval, maxval, stddev = maxval, minval, -stddev
    norm_min = (minval - mean) / stddev
    norm_max = (maxval - mean) / stddev
    sqrt_factor = np.sqrt(norm_min * norm_min + t(4))
    cutoff = t(2) * _exp_t(t(0.5) + (norm_min * (norm_min - sqrt_factor)) / t(4), dtype) \
        / (norm_min + sqrt_factor)
    diff = norm_max - norm_min
    per_block = 2 if dtype == np.float64 else 4
    if ((norm_min < -t(_RANDN_INSIDE)) and (norm_max >= t(0))) or \
            ((norm_max > t(_RANDN_INSIDE)) and (norm_min <= t(0))):
        def randn(w):
            v = _normal_values(w[:, 0], dtype)
            return v, (v >= norm_min) & (v <= norm_max)
        z = _collect(stream, need, 1, randn, per_block, poll)
    elif diff < cutoff:
        plus = t(0) if norm_min < t(0) else norm_min * norm_min

        def uniform(w):
            z = (_uniform_values(w[:, 0], dtype) * diff + norm_min).astype(dtype)
            g = ((plus - z * z) / t(2)).astype(dtype)
            return z, _uniform_values(w[:, 1], dtype) <= _exp_t(g, dtype)
        z = _collect(stream, need, 2, uniform, per_block, poll)
    else:
        alpha = (norm_min + np.sqrt(norm_min * norm_min + t(4))) / t(2)

        def exponential(w):
            r = _uniform_values(w[:, 0], dtype)
            z = ((-_log_t(r[:, 0::2], dtype)) / alpha + norm_min).astype(dtype)
            x = (alpha - z) if norm_min < alpha else np.full(z.shape, norm_min - alpha, dtype)
            g = _exp_t(((-x) * x / t(2)).astype(dtype), dtype)
            return z, (r[:, 1::2] <= g) & (z < norm_max)
        z = _collect(stream, need, 1, exponential, per_block // 2, poll)
    return (z * stddev + mean).astype(dtype)


def parameterized_truncated_normal(key, counter, means, stddevs, minvals, maxvals,
                                   samples_per_batch: int, poll=None) -> np.ndarray:
    """Samples of shape (samples_per_batch, num_batches) in the parameters' dtype; the four
    parameter arrays are broadcast and flat. Raises ValueError on invalid parameters.
    `poll()` runs between batches and draws (it may raise to stop)."""
    params = [np.asarray(p).reshape(-1) for p in (means, stddevs, minvals, maxvals)]
    dtype = params[0].dtype
    out = np.zeros((samples_per_batch, params[0].size), dtype)
    stream = _Stream(key, counter)
    with np.errstate(all="ignore"):
        for b, (mean, stddev, lo, hi) in enumerate(zip(*params, strict=True)):
            if not (stddev > 0 and lo < hi and (np.isfinite(lo) or np.isfinite(hi))):
                raise ValueError("Invalid parameters")
            if poll is not None and b:
                poll()
            out[:, b] = _batch_samples(stream, samples_per_batch, mean, stddev, lo, hi,
                                       dtype, poll)
    return out
