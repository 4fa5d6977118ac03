"""CPU kernels of the quantization ops (contract in tensorflux/ops/quantization_ops.py).

The arithmetic is TensorFlow's CPU kernels' own, step for step in the same precision, so
that the integers (and the floats that come back) agree bit for bit:
- float steps are float32 (`_F`), except where TF computes a constant in double and stores
  it in a float (the scale factors below say which);
- "round" is half away from zero (std::round), unless HALF_TO_EVEN is asked for;
- a float becomes a quint8/qint8/quint16/qint16 by truncation after rounding, a qint32 by
  rounding to nearest (Eigen's QInt32 converts with lrint);
- the qint32 -> quint8 requantization is TF's fixed-point loop (16 fractional bits).

The integer matrix products (QuantizedMatMul, QuantizedConv2D) subtract the zero points
and multiply with BLAS in float32 when every partial sum is an integer below 2^24 (then
float32 arithmetic is exact whatever order BLAS sums in), and in float64 otherwise (exact
below 2^53, more than any eight-bit product of int32-addressable size reaches). NumPy has
no fast integer GEMM (np.matmul on int32 is a plain loop, ~15x slower than sgemm here), so
this is both the exact and the fastest way NumPy offers. With the C extension `_qkernels`
(`_qnative.py`) the quint8 products run as integer GEMMs (AVX-512 VNNI or AVX2 where the
CPU has them), and Requantize, QuantizedBiasAdd and QuantizedRelu as one-pass C loops; the
values are the same, and these NumPy paths remain for everything else.
"""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels import interrupt, intra_op
from tensorflux.kernels.cpu import _qnative
from tensorflux.kernels.cpu._nn_common import _checked, _invalid, _pad, _window
from tensorflux.kernels.cpu._qmath import (  # noqa: F401 - shared with the fused ops
    _EXACT_F32,
    _F,
    _FLT_MAX,
    _by_table,
    _cached,
    _carrier,
    _dequantize_min_first,
    _float_to_quantized,
    _float_to_quantized_unclamped,
    _ftz,
    _limits,
    _mode,
    _one_step,
    _product_range,
    _quantize_min_first,
    _quantized_to_float,
    _requantize,
    _requantize_32_to_8,
    _requantize_32_to_8_params,
    _round_away,
    _scalar,
    _to_int,
)
from tensorflux.kernels.cpu.array_ops import _shape_str
from tensorflux.kernels.cpu.conv_ops import _im2col_matmul
from tensorflux.kernels.cpu.pooling_ops import _avg_counts, _max_pool_nhwc, _PoolGeometry
from tensorflux.kernels.registry import kernel_factory

# ---- QuantizeV2 / Dequantize -------------------------------------------------------------


def _adjusted_range(lo, hi, ensure):
    """The range widened to contain 0 and to be at least `ensure` wide relative to it."""
    lo, hi = _F(lo), _F(hi)
    if hi < lo:
        raise _invalid("input_max_range must be larger than input_min_range.")
    min_range = min(_F(0.0), lo)
    epsilon = _F(max(_F(1.0), max(abs(lo), abs(hi))) * _F(ensure))
    return min_range, max(_F(0.0), max(hi, _F(min_range + epsilon)))


def _quantize_slice(x, lo, hi, dtype, mode, round_even, narrow, ensure):
    """One slice quantized (MIN_COMBINED or SCALED); returns (values, out_min, out_max)."""
    min_range, max_range = _adjusted_range(lo, hi, ensure)
    low, high = _limits(dtype)
    if mode == "MIN_COMBINED":
        scale = _F((float(high) - float(low)) / float(_F(max_range - min_range)))
        shifted = (np.clip(x, min_range, max_range) - min_range) * scale
        if low < 0:
            half = _F((float(high) - float(low) + 1) / 2.0)
            return _to_int(_round_away(shifted - half), dtype), min_range, max_range
        return _to_int(np.trunc(shifted + _F(0.5)), dtype), min_range, max_range
    min_out = low + (1 if narrow else 0)
    from_min = _F(min_out) / min_range if _F(min_out) * min_range > 0 else _FLT_MAX
    from_max = _F(high) / max_range if _F(high) * max_range > 0 else _FLT_MAX
    scale = _F(min(from_min, from_max))
    min_range, max_range = _ftz(_F(_F(min_out) / scale)), _ftz(_F(_F(high) / scale))
    scaled = np.clip(x, min_range, max_range) * scale
    rounded = np.rint(scaled) if round_even else _round_away(scaled)
    return _to_int(rounded, dtype), min_range, max_range


def _slices(x: np.ndarray, axis: int):
    """x as (pre, slices, post) so that [:, i, :] is slice i along `axis`."""
    pre = int(np.prod(x.shape[:axis], dtype=np.int64))
    return x.reshape(pre, x.shape[axis], -1)


@kernel_factory("QuantizeV2", expensive=True)
@_checked
def _quantize_v2(node):
    a = node.attrs
    dtype, mode, axis = _carrier(node, "T"), _mode(node), int(a.get("axis", -1))
    round_mode = a.get("round_mode", "HALF_AWAY_FROM_ZERO")
    round_even = (round_mode.decode() if isinstance(round_mode, bytes) else round_mode) \
        == "HALF_TO_EVEN"
    if round_even and mode != "SCALED":
        raise _invalid(f"Round mode 'HALF_TO_EVEN' only supported for mode 'SCALED', b  ut "
                       f"mode is '{mode}'.")
    narrow, ensure = bool(a.get("narrow_range", False)), float(a["ensure_minimum_range"])

    def compute(ctx, x, lo, hi):
        x = np.asarray(x, _F)
        lo, hi = np.asarray(lo, _F), np.asarray(hi, _F)
        if axis >= 0:
            _check_axis_ranges(x, lo, hi, axis)
        if axis < 0 or x.shape[axis] == 1:
            if lo.size != 1 or hi.size != 1:
                raise _invalid("If axis is not specified, min_range must contain a single "
                               f"float element, but it contains {lo.size} elements")
            if mode == "MIN_FIRST":
                min_range, max_range = _adjusted_range(lo.reshape(-1)[0], hi.reshape(-1)[0],
                                                       ensure)
                return (_quantize_min_first(x, min_range, max_range, dtype,
                                            intra_op.workers(ctx)), min_range, max_range)
            q, mn, mx = _quantize_slice(x, lo.reshape(-1)[0], hi.reshape(-1)[0], dtype, mode,
                                        round_even, narrow, ensure)
            return q, _F(mn), _F(mx)
        return _quantize_per_axis(x, lo, hi, dtype, mode, round_even, narrow, ensure, axis)

    return compute


def _check_axis_ranges(x, lo, hi, axis):
    if x.ndim <= axis:
        raise _invalid("Axis is on a zero-based index, so its value must always be less than "
                       f"number of input's dims, but given axis value was {axis} and input's "
                       f"dims was {x.ndim}")
    n = x.shape[axis]
    if lo.shape != (n,) or hi.shape != (n,):
        raise _invalid("If axis is specified, min_range must be a 1-D tensor whose size "
                       "matches the axis dimension of the input and output tensors")


def _quantize_per_axis(x, lo, hi, dtype, mode, round_even, narrow, ensure, axis):
    n = x.shape[axis]
    if mode == "MIN_FIRST":
        raise errors.UnimplementedError(
            None, None, "MIN_FIRST mode is not implemented for Quantize with axis != -1.")
    xs = _slices(x, axis)
    out = np.empty(xs.shape, dtype)
    mins, maxs = np.empty(n, _F), np.empty(n, _F)
    for i in range(n):
        out[:, i, :], mins[i], maxs[i] = _quantize_slice(xs[:, i, :], lo[i], hi[i], dtype, mode,
                                                         round_even, narrow, ensure)
    return out.reshape(x.shape), mins, maxs


def _dequantize_slice(x, lo, hi, dtype, mode, narrow):
    return _by_table(x, lambda v: _dequantize_values(v, lo, hi, dtype, mode, narrow))


def _dequantize_values(x, lo, hi, dtype, mode, narrow):
    low, high = _limits(dtype)
    lo, hi = _F(lo), _F(hi)
    if mode == "MIN_COMBINED":
        half = _F(0.0) if low == 0 else _F(_F(_F(_F(high) - _F(low)) + _F(1.0)) / _F(2.0))
        scale = _F(_F(hi - lo) / _F(_F(high) - _F(low)))
        return (x.astype(_F) + half) * scale + lo
    if mode == "SCALED":
        min_out = low + (1 if narrow else 0)
        scale = _F(hi / _F(high)) if low == 0 else \
            max(_F(lo / _F(min_out)), _F(hi / _F(high)))
        if x.dtype == np.int32:  # TF's cast of qint32 to int goes through float (wraps at 2^31)
            return _to_int(x.astype(_F), np.int32).astype(_F) * _F(scale)
        return x.astype(_F) * _F(scale)
    return _dequantize_min_first(x, lo, hi, dtype)


@kernel_factory("Dequantize", expensive=True)
@_checked
def _dequantize(node):
    a = node.attrs
    dtype, mode, axis = _carrier(node, "T"), _mode(node), int(a.get("axis", -1))
    narrow = bool(a.get("narrow_range", False))
    out_dtype = a.get("dtype")
    bf16 = out_dtype is not None and out_dtype.numpy_dtype == np.dtype(ml_dtypes.bfloat16)
    if bf16 and mode != "MIN_COMBINED":
        raise _invalid("When output type is bfloat16, Mode string must be 'MIN_COMBINED', is "
                       f"'{mode}'")

    def compute(ctx, x, lo, hi):
        x, lo, hi = np.asarray(x), np.asarray(lo, _F), np.asarray(hi, _F)
        if axis >= x.ndim:
            raise _invalid(f"Axis must be less than input dimension({x.ndim}), got {axis}")
        n = 1 if axis < 0 else x.shape[axis]
        for t, what in ((lo, "input_min_tensor"), (hi, "input_max_tensor")):
            if t.size != n:
                raise _invalid(f"{what} must have as many elements as input on the "
                               f"dequantization axis ({axis}), got {t.size}, expected {n}")
        if n == 1 or axis < 0:
            out = _dequantize_slice(x, lo.reshape(-1)[0], hi.reshape(-1)[0], dtype, mode, narrow)
        else:
            if mode == "MIN_FIRST":
                raise errors.UnimplementedError(
                    None, None, "MIN_FIRST mode is not implemented for Dequantize with axis "
                    "!= -1.")
            xs = _slices(x, axis)
            out = np.empty(xs.shape, _F)
            for i in range(n):
                out[:, i, :] = _dequantize_slice(xs[:, i, :], lo[i], hi[i], dtype, mode, narrow)
            out = out.reshape(x.shape)
        return out.astype(ml_dtypes.bfloat16) if bf16 else out.astype(_F, copy=False)

    return compute


# ---- fake quantization (quantization-aware training) -------------------------------------


def _nudge(lo, hi, num_bits, narrow):
    """(nudged_min, nudged_max, scale, inverse scale): the range moved so that 0 is a grid
    point. The inverse is computed from the range, not as 1 / scale (TF's choice)."""
    qmin, qmax = _F(1 if narrow else 0), _F((1 << num_bits) - 1)
    lo, hi = _F(lo), _F(hi)
    scale = _F(_F(hi - lo) / _F(qmax - qmin))
    inv = _F(_F(qmax - qmin) / _F(hi - lo))
    zero_from_min = _F(qmin - _F(lo / scale))
    if zero_from_min < qmin:
        zero = qmin
    elif zero_from_min > qmax:
        zero = qmax
    else:
        zero = _F(_round_away(zero_from_min))
    return _F(_F(qmin - zero) * scale), _F(_F(qmax - zero) * scale), scale, inv


# a fake quantization's time per output byte against a fill's (six NumPy passes): a large
# input is quantized in blocks that check the step (interrupt.elementwise)
_FAKE_QUANT_COST = 32


def _fake_quant(x, lo, hi, num_bits, narrow, divide=False):
    """x on the nudged grid: the steps from the nudged min, rounded half up, relative to the
    zero point. FakeQuantWithMinMaxVars divides by the scale where the Args and per-channel
    forms multiply by its inverse (as TF's kernels do; the two can differ at half steps)."""
    if lo == 0 and hi == 0:
        return np.zeros_like(x)
    nmin, nmax, scale, inv = _nudge(lo, hi, num_bits, narrow)
    quant_zero = _F(np.floor(_F(_F(-nmin * inv) + _F(0.5))))
    shifted = np.clip(x, nmin, nmax) - nmin
    steps = shifted / scale if divide else shifted * inv
    return np.floor(steps - quant_zero + _F(0.5)) * scale


def _fake_quant_grad(g, x, lo, hi, num_bits, narrow):
    """(backprop wrt input, mask below min, mask above max)."""
    if lo == 0 and hi == 0:
        return g.astype(_F), np.zeros(x.shape, bool), np.zeros(x.shape, bool)
    nmin, nmax, _, _ = _nudge(lo, hi, num_bits, narrow)
    inside = (x >= nmin) & (x <= nmax)
    return np.where(inside, g, _F(0.0)).astype(_F), x < nmin, x > nmax


def _packet_sum(v: np.ndarray) -> np.float32:
    """A float32 sum in the order of Eigen's vectorized full reduction (8-lane packets, four
    accumulators over blocks of 32, a scalar tail, then the lanes pairwise), so that the
    gradient sums round as TF's do."""
    v = np.ascontiguousarray(v, _F).reshape(-1)
    n, p = v.size, 8
    acc = np.zeros(p, _F)
    start = 0
    if n >= 4 * p:
        end = n // (4 * p) * (4 * p)
        blocks = v[:end].reshape(-1, 4, p)
        accs = np.zeros((4, p), _F)
        for block in blocks:
            accs += block
        acc = (accs[0] + accs[1]) + (accs[2] + accs[3])
        start = end
    for j in range(start, n - p + 1, p):
        acc = acc + v[j:j + p]
        start = j + p
    tail = _F(0.0)
    for j in range(start, n):
        tail = _F(tail + v[j])
    half = acc[:4] + acc[4:]
    return _F(tail + _F(_F(half[0] + half[2]) + _F(half[1] + half[3])))


def _fq_attrs(node):
    a = node.attrs
    num_bits, narrow = int(a.get("num_bits", 8)), bool(a.get("narrow_range", False))
    if not 2 <= num_bits <= 16:
        raise _invalid(f"num_bits must be between 2 and 16, inclusive. Received: {num_bits}")
    return num_bits, narrow


def _args_range(node):
    lo, hi = float(node.attrs.get("min", -6.0)), float(node.attrs.get("max", 6.0))
    if not lo < hi:
        raise _invalid(f"min has to be smaller than max, was: {lo} >= {hi}")
    return lo, hi


@kernel_factory("FakeQuantWithMinMaxArgs")
@_checked
def _fake_quant_args(node):
    (lo, hi), (bits, narrow) = _args_range(node), _fq_attrs(node)
    return lambda ctx, x: interrupt.elementwise(
        ctx, lambda v: _fake_quant(v, lo, hi, bits, narrow), np.asarray(x, _F), _F,
        _FAKE_QUANT_COST)


@kernel_factory("FakeQuantWithMinMaxArgsGradient")
@_checked
def _fake_quant_args_gradient(node):
    (lo, hi), (bits, narrow) = _args_range(node), _fq_attrs(node)

    def compute(ctx, g, x):
        if np.shape(g) != np.shape(x):
            raise _invalid("gradients and inputs must be the same size")
        return _fake_quant_grad(np.asarray(g, _F), np.asarray(x, _F), lo, hi, bits, narrow)[0]

    return compute


@kernel_factory("FakeQuantWithMinMaxVars")
@_checked
def _fake_quant_vars(node):
    bits, narrow = _fq_attrs(node)

    def compute(ctx, x, lo, hi):
        lo, hi = _scalar(lo, "min"), _scalar(hi, "max")
        return interrupt.elementwise(
            ctx, lambda v: _fake_quant(v, lo, hi, bits, narrow, divide=True),
            np.asarray(x, _F), _F, _FAKE_QUANT_COST)

    return compute


@kernel_factory("FakeQuantWithMinMaxVarsGradient")
@_checked
def _fake_quant_vars_gradient(node):
    bits, narrow = _fq_attrs(node)

    def compute(ctx, g, x, lo, hi):
        g, x = np.asarray(g, _F), np.asarray(x, _F)
        if g.shape != x.shape:
            raise _invalid("gradients and inputs must be the same size")
        dx, below, above = _fake_quant_grad(g, x, _scalar(lo, "min"), _scalar(hi, "max"),
                                            bits, narrow)
        return dx, _packet_sum(g * below), _packet_sum(g * above)

    return compute


def _per_channel(x, lo, hi):
    lo, hi = np.asarray(lo, _F), np.asarray(hi, _F)
    if x.ndim < 1:
        raise _invalid("inputs must be at least rank 1")
    d = x.shape[-1]
    if lo.shape != (d,) or hi.shape != (d,):
        raise _invalid(f"min and max must have shape [{d}], got {list(lo.shape)} and "
                       f"{list(hi.shape)}")
    return lo, hi


@kernel_factory("FakeQuantWithMinMaxVarsPerChannel")
@_checked
def _fake_quant_per_channel(node):
    bits, narrow = _fq_attrs(node)

    def compute(ctx, x, lo, hi):
        x = np.asarray(x, _F)
        lo, hi = _per_channel(x, lo, hi)
        out = np.empty_like(x)
        for i in range(x.shape[-1]):
            out[..., i] = _fake_quant(x[..., i], lo[i], hi[i], bits, narrow)
        return out

    return compute


@kernel_factory("FakeQuantWithMinMaxVarsPerChannelGradient")
@_checked
def _fake_quant_per_channel_gradient(node):
    bits, narrow = _fq_attrs(node)

    def compute(ctx, g, x, lo, hi):
        g, x = np.asarray(g, _F), np.asarray(x, _F)
        if g.shape != x.shape:
            raise _invalid("gradients and inputs must be the same size")
        lo, hi = _per_channel(x, lo, hi)
        d = x.shape[-1]
        dx, dmin, dmax = np.empty_like(x), np.empty(d, _F), np.empty(d, _F)
        for i in range(d):
            gi = g[..., i]
            dx[..., i], below, above = _fake_quant_grad(gi, x[..., i], lo[i], hi[i], bits,
                                                        narrow)
            dmin[i], dmax[i] = _packet_sum(gi * below), _packet_sum(gi * above)
        return dx, dmin, dmax

    return compute


# ---- eight-bit compute: products, bias, activations, requantization ----------------------


def _carrier_for(bound: int):
    """The float type in which a product whose partial sums stay below `bound` is exact."""
    return np.float32 if bound < _EXACT_F32 else np.float64


def _ranges(inputs, names):
    return [_scalar(t, n) for t, n in zip(inputs, names, strict=True)]


def _check_range(lo, hi, what):
    if not hi > lo:
        raise _invalid(f"max_{what} must be larger than min_{what}.")


def _zero_point(x, lo, hi, dtype):
    """x's zero point and the largest magnitude x minus it reaches (from x's own extremes,
    so that the float32 carrier is chosen whenever the data allow it)."""
    zero = _float_to_quantized_unclamped(0.0, lo, hi, dtype)
    low, high = (int(x.min()), int(x.max())) if x.size else _limits(dtype)
    return zero, max(abs(low - zero), abs(high - zero))


def _centered(x, zero, carrier):
    """x minus its zero point, whole values in the float carrier of the product."""
    return _by_table(x, lambda v: (v.astype(np.int64) - zero).astype(carrier))


def _native_matmul(ctx, a, b, a_range, b_range, c_t):
    """The product in C (`_qnative.matmul`) for quint8 operands into qint32, or None."""
    if np.dtype(c_t) != np.int32:
        return None
    za = _float_to_quantized_unclamped(0.0, *a_range)
    zb = _float_to_quantized_unclamped(0.0, *b_range)
    return _qnative.matmul(a, b, za, zb, intra_op.workers(ctx))


def _matmul_operands(a, b, ta, tb, ranges):
    """QuantizedMatMul's checks: (a, b as multiplied, min_a, max_a, min_b, max_b)."""
    min_a, max_a, min_b, max_b = _ranges(ranges, ("min_a", "max_a", "min_b", "max_b"))
    _check_range(min_a, max_a, "a")
    _check_range(min_b, max_b, "b")
    if a.ndim != 2 or b.ndim != 2:
        raise _invalid("In[0] is not a matrix" if a.ndim != 2 else "In[1] is not a matrix")
    a2, b2 = (a.T if ta else a), (b.T if tb else b)
    if a2.shape[1] != b2.shape[0]:
        raise _invalid(f"Matrix size-incompatible: In[0]: {list(a.shape)}, In[1]: "
                       f"{list(b.shape)}")
    return a2, b2, min_a, max_a, min_b, max_b


def _matmul_product(ctx, a2, b2, min_a, max_a, min_b, max_b, a_t, b_t, c_t):
    out = _native_matmul(ctx, a2, b2, (min_a, max_a, a_t), (min_b, max_b, b_t), c_t)
    if out is None:
        (za, ma), (zb, mb) = _zero_point(a2, min_a, max_a, a_t), _zero_point(
            b2, min_b, max_b, b_t)
        carrier = _carrier_for(a2.shape[1] * ma * mb)
        out = np.matmul(_centered(a2, za, carrier), _centered(b2, zb, carrier))
        out = out.astype(np.int32).astype(c_t, copy=False)  # whole values within int32
    return out


@kernel_factory("QuantizedMatMul", expensive=True)
@_checked
def _quantized_matmul(node):
    a_t, b_t, c_t = _carrier(node, "T1"), _carrier(node, "T2"), _carrier(node, "Toutput")
    ta, tb = bool(node.attrs["transpose_a"]), bool(node.attrs["transpose_b"])

    def compute(ctx, a, b, *ranges):
        a2, b2, min_a, max_a, min_b, max_b = _matmul_operands(a, b, ta, tb, ranges)
        out = _matmul_product(ctx, a2, b2, min_a, max_a, min_b, max_b, a_t, b_t, c_t)
        return (out,) + _product_range(min_a, max_a, min_b, max_b, a_t, b_t, c_t)

    return compute


def _conv_attrs(node):
    strides, dilations = list(node.attrs["strides"]), list(node.attrs["dilations"])
    if len(strides) != 4 or strides[0] != 1 or strides[3] != 1:
        raise _invalid("Current implementation does not yet support strides in the batch "
                       "and depth dimensions.")
    if any(d != 1 for d in dilations):
        raise errors.UnimplementedError(None, None,
                                        "Current implementation only supports dilated rate "
                                        "as 1 for all dimensions.")
    return strides, node.attrs["padding"]


def _conv_geometry(x, w, strides, padding):
    """QuantizedConv2D's checks: ((oh, pt, pb), (ow, pl, pr))."""
    if x.ndim != 4 or w.ndim != 4:
        raise _invalid(f"input and filter must be 4-dimensional: {list(x.shape)} "
                       f"{list(w.shape)}")
    if x.shape[3] != w.shape[2]:
        raise _invalid(f"input and filter must have the same depth: {x.shape[3]} vs "
                       f"{w.shape[2]}")
    return (_window(x.shape[1], w.shape[0], strides[1], 1, padding),
            _window(x.shape[2], w.shape[1], strides[2], 1, padding))


def _conv_product(ctx, x, w, ranges, types, strides, geometry):
    """QuantizedConv2D's product (out_type's carrier) of checked operands."""
    min_x, max_x, min_w, max_w = ranges
    x_t, w_t, o_t = types
    kh, kw, c, f = w.shape
    (oh, pt, pb), (ow, pl, pr) = geometry
    if np.dtype(o_t) == np.int32:
        out = _qnative.conv2d(
            x, w, _float_to_quantized_unclamped(0.0, min_x, max_x, x_t),
            _float_to_quantized_unclamped(0.0, min_w, max_w, w_t), strides[1:3],
            (pt, pl), (oh, ow), intra_op.workers(ctx))
        if out is not None:
            return out
    (zx, mx), (zw, mw) = _zero_point(x, min_x, max_x, x_t), _zero_point(w, min_w, max_w,
                                                                        w_t)
    carrier = _carrier_for(kh * kw * c * mx * mw)
    xf, wf = _centered(x, zx, carrier), _centered(w, zw, carrier)
    out = np.empty((x.shape[0], oh, ow, f), carrier)
    if out.size:
        # Padding is 0 after the zero point is subtracted: real zero, as TF pads.
        _im2col_matmul(_pad(xf, [(pt, pb), (pl, pr)]), wf.reshape(-1, f), out, kh, kw,
                       (strides[1], strides[2]), (1, 1), intra_op.workers(ctx))
    return out.astype(np.int32).astype(o_t, copy=False)  # whole values within int32


@kernel_factory("QuantizedConv2D", expensive=True)
@_checked
def _quantized_conv2d(node):
    types = (_carrier(node, "Tinput"), _carrier(node, "Tfilter"), _carrier(node, "out_type"))
    strides, padding = _conv_attrs(node)

    def compute(ctx, x, w, *ranges):
        ranges = _ranges(ranges, ("min_input", "max_input", "min_filter", "max_filter"))
        geometry = _conv_geometry(x, w, strides, padding)
        out = _conv_product(ctx, x, w, ranges, types, strides, geometry)
        return (out,) + _product_range(*ranges, *types)

    return compute


@_cached
def _bias_add_table(x_dtype, min_x, max_x, b_t, lo, hi, o_t) -> np.ndarray:
    """QuantizedBiasAdd's int32 value of each of the 256 8-bit inputs (read-only)."""
    v = np.arange(256, dtype=np.uint8).view(x_dtype)
    table = _quantize_min_first(_dequantize_min_first(v, min_x, max_x, b_t), lo, hi, o_t)
    table.flags.writeable = False
    return table


_SHIFT_CACHE_BYTES = 1 << 14  # biases up to this size are cached (64 of them at most)


@functools.lru_cache(maxsize=64)
def _bias_add_shift(bias_bytes, bias_dtype, min_b, max_b, x_t, lo, hi, o_t) -> np.ndarray:
    """QuantizedBiasAdd's bias in the output's range plus its zero point, wrapping as the
    NumPy path adds them (read-only; cached by the bias's bytes: it is usually a constant)."""
    bias = np.frombuffer(bias_bytes, bias_dtype)
    bs = _quantize_min_first(_dequantize_min_first(bias, min_b, max_b, x_t), lo, hi, o_t)
    with np.errstate(over="ignore"):
        shift = bs + np.asarray(_float_to_quantized(0.0, lo, hi, o_t), o_t)
    shift.flags.writeable = False
    return shift


@kernel_factory("QuantizedBiasAdd", expensive=True)
@_checked
def _quantized_bias_add(node):
    x_t, b_t, o_t = _carrier(node, "T1"), _carrier(node, "T2"), _carrier(node, "out_type")

    def compute(ctx, x, bias, *ranges):
        min_x, max_x, min_b, max_b = _ranges(
            ranges, ("min_input", "max_input", "min_bias", "max_bias"))
        if x.ndim < 2:
            raise _invalid(f"Input tensor must be at least 2D: {list(x.shape)}")
        if bias.ndim != 1 or bias.shape[0] != x.shape[-1]:
            raise _invalid("Must provide as many biases as the last dimension of the input "
                           f"tensor: {list(bias.shape)} vs. {list(x.shape)}")
        # Both operands re-expressed in one symmetric range with 2^17 of headroom, then
        # added; the zero point of that range (0 for a symmetric range) is added back.
        top = _F(max(max_x, -min_x, max_b, -min_b) * _F(1 << 17))
        lo, hi = _F(-top), top
        zero = _float_to_quantized(0.0, lo, hi, o_t)
        # (TF dequantizes each operand with the other's type: the same for the usual
        # quint8 + quint8.)
        def requantized(v):
            return _quantize_min_first(_dequantize_min_first(v, min_x, max_x, b_t), lo, hi, o_t)

        if x.dtype.itemsize == 1 and np.dtype(o_t) == np.int32:
            key = (min_b, max_b, x_t, lo, hi, o_t)
            shift = _bias_add_shift(bias.tobytes(), bias.dtype, *key) \
                if bias.nbytes <= _SHIFT_CACHE_BYTES else _bias_add_shift.__wrapped__(
                    bias.tobytes(), bias.dtype, *key)
            table = _bias_add_table(x.dtype, min_x, max_x, b_t, lo, hi, o_t)
            out = _qnative.bias_add(x, table, shift, intra_op.workers(ctx))
            if out is not None:
                return out, lo, hi
        bs = _quantize_min_first(_dequantize_min_first(bias, min_b, max_b, x_t), lo, hi, o_t)
        xs = _by_table(x, requantized)
        with np.errstate(over="ignore"):
            xs += bs + np.asarray(zero, o_t)
        return xs.astype(o_t, copy=False), lo, hi

    return compute


def _relu_kernel(six):
    def factory(node):
        t = _carrier(node, "Tinput")
        if _carrier(node, "out_type") != t:
            raise errors.NotFoundError(None, None, "No registered kernel for this out_type")

        def compute(ctx, x, lo, hi):
            lo, hi = _scalar(lo, "min_features"), _scalar(hi, "max_features")
            floor_q = _float_to_quantized(0.0, lo, hi, t)
            cap_q = _float_to_quantized(6.0, lo, hi, t) if six else 255
            out = _qnative.clamp_u8(x, floor_q, cap_q, intra_op.workers(ctx))
            if out is not None:
                return out, lo, hi
            out = np.maximum(x, np.asarray(floor_q, t))
            if six:
                out = np.minimum(out, np.asarray(_float_to_quantized(6.0, lo, hi, t), t))
            return out.astype(t, copy=False), lo, hi

        return compute

    return factory


kernel_factory("QuantizedRelu")(_checked(_relu_kernel(False)))
kernel_factory("QuantizedRelu6")(_checked(_relu_kernel(True)))


@kernel_factory("QuantizedMaxPool", expensive=True)
@_checked
def _quantized_max_pool(node):
    geom = _PoolGeometry(node)

    def compute(ctx, x, lo, hi):
        if x.ndim != 4:
            raise _invalid(f"input must be 4-dimensional, got {list(x.shape)}")
        out = _max_pool_nhwc(x, geom, intra_op.workers(ctx))[0]
        return out, _scalar(lo, "min_input"), _scalar(hi, "max_input")

    return compute


def _used_range(x, lo, hi, dtype):
    """The float values of x's smallest and largest integer. TF's qint32 min/max reduction
    goes through float32, so the extremes are rounded to float32 before they are converted
    (INT32_MAX becomes 2^31)."""
    low, high = _limits(dtype)
    ends = np.array([x.min(), x.max()] if x.size else [high, low])
    if np.dtype(dtype) == np.int32:
        ends = ends.astype(_F).astype(np.float64)
    return (_quantized_to_float(int(ends[0]), lo, hi, dtype),
            _quantized_to_float(int(ends[1]), lo, hi, dtype))


@kernel_factory("RequantizationRange", expensive=True)
@_checked
def _requantization_range(node):
    t = _carrier(node, "Tinput")

    def compute(ctx, x, lo, hi):
        used_min, used_max = _used_range(x, _scalar(lo, "input_min"),
                                         _scalar(hi, "input_max"), t)
        return _F(min(_F(0.0), used_min)), _F(used_max)

    return compute


@kernel_factory("Requantize", expensive=True)
@_checked
def _requantize_kernel(node):
    t_in, t_out = _carrier(node, "Tinput"), _carrier(node, "out_type")

    def compute(ctx, x, lo, hi, out_lo, out_hi):
        lo, hi = _scalar(lo, "input_min"), _scalar(hi, "input_max")
        out_lo, out_hi = _scalar(out_lo, "requested_output_min"), _scalar(
            out_hi, "requested_output_max")
        if not out_lo <= 0:
            raise _invalid(f"requested_output_min must be <= 0, but got {out_lo}")
        if not out_hi >= 0:
            raise _invalid(f"requested_output_max must be <= 0, but got {out_hi}")
        out = _requantize(x, t_in, lo, hi, out_lo, out_hi, t_out, intra_op.workers(ctx)) \
            if x.size else np.zeros(x.shape, t_out)
        return out, out_lo, out_hi

    return compute


@kernel_factory("QuantizeDownAndShrinkRange", expensive=True)
@_checked
def _quantize_down_and_shrink_range(node):
    t_in, t_out = _carrier(node, "Tinput"), _carrier(node, "out_type")

    def compute(ctx, x, lo, hi):
        lo, hi = _scalar(lo, "input_min"), _scalar(hi, "input_max")
        used_min, used_max = _used_range(x, lo, hi, t_in)
        used_min = min(_F(0.0), used_min)
        out = _requantize(x, t_in, lo, hi, used_min, used_max, t_out,
                          intra_op.workers(ctx)) if x.size else np.zeros(x.shape, t_out)
        return out, _F(used_min), _F(used_max)

    return compute


# ---- QuantizeAndDequantizeV2 / V4 (simulated quantization in float) ----------------------


def _in_precision(dtype):
    """`f(x)` rounding a float32 result to `dtype` (Eigen's half and bfloat16 round after
    every operation; float and double compute in their own precision)."""
    if np.dtype(dtype) in (np.dtype(np.float32), np.dtype(np.float64)):
        return lambda v: np.asarray(v, dtype)
    return lambda v: np.asarray(np.asarray(v, np.float32), dtype)


def _qdq_scale(lo, hi, signed, bits, narrow, cast):
    """(min_range, max_range, scale, inverse_scale): the scale that keeps 0 on the grid
    without leaving [min_quantized, max_quantized] (TF's ComputeQuantizationRange)."""
    qmin = (-(1 << (bits - 1)) + (1 if narrow else 0)) if signed else 0
    qmax = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1
    big = np.finfo(np.asarray(lo).dtype).max
    from_min = cast(cast(qmin) / lo) if cast(qmin) * lo > 0 else cast(big)
    from_max = cast(cast(qmax) / hi) if cast(qmax) * hi > 0 else cast(big)
    if from_min < from_max:
        inverse = cast(lo / cast(qmin))
        return lo, cast(cast(qmax) * inverse), from_min, inverse
    inverse = cast(hi / cast(qmax))
    return cast(cast(qmin) * inverse), hi, from_max, inverse


def _qdq_slice(x, lo, hi, attrs, cast):
    signed, bits, narrow, given, half_up = attrs
    lo, hi, scale, inverse = _qdq_scale(cast(lo), cast(hi), signed, bits, narrow, cast)
    if given:
        x = np.clip(x, lo, hi)
    scaled = cast(x * scale)
    rounded = cast(np.floor(cast(scaled + cast(0.5)))) if half_up else np.rint(scaled)
    return cast(rounded * inverse)


def _qdq_axis(node, x):
    axis = int(node.attrs.get("axis", -1))
    if axis < -1:
        raise _invalid(f"Axis must be at least -1. Found {axis}")
    if axis != -1 and axis >= x.ndim:
        raise _invalid(f"Shape must be at least rank {axis + 1} but is rank {x.ndim}")
    return axis


def _qdq_ranges(x, lo, hi, axis, what="input"):
    n = 1 if axis == -1 else x.shape[axis]
    lo, hi = np.asarray(lo).reshape(-1), np.asarray(hi).reshape(-1)
    if lo.size != n or hi.size != n:
        raise _invalid(f"{what}_min and {what}_max must have {n} element(s), got "
                       f"{lo.size} and {hi.size}")
    return lo, hi


_QDQ_TYPES = {"T": ["float32", "float64"]}  # TF's CPU kernels: no half or bfloat16


@kernel_factory("QuantizeAndDequantizeV2", "QuantizeAndDequantizeV4", expensive=True,
                type_constraints=_QDQ_TYPES)
@_checked
def _quantize_and_dequantize(node):
    a = node.attrs
    signed, bits = bool(a.get("signed_input", True)), int(a.get("num_bits", 8))
    if not 0 < bits < (62 if signed else 63):
        raise _invalid(f"num_bits is out of range: {bits} with signed_input_ {signed}")
    given = bool(a.get("range_given", False))
    round_mode = a.get("round_mode", "HALF_TO_EVEN")
    half_up = (round_mode.decode() if isinstance(round_mode, bytes) else round_mode) == \
        "HALF_UP"
    attrs = (signed, bits, bool(a.get("narrow_range", False)), given, half_up)

    def compute(ctx, x, lo, hi):
        axis = _qdq_axis(node, x)
        cast = _in_precision(x.dtype)
        if given:
            if axis != -1 and np.ndim(lo) != 0:
                # TF 2.21's CPU kernel refuses per-slice ranges here (checked against it).
                raise _invalid("input_min must be a scalar.")
            lo, hi = _qdq_ranges(x, lo, hi, axis)
            if axis == -1 and lo[0] > hi[0]:
                raise _invalid(f"Invalid range: input_min {lo[0]} > input_max {hi[0]}")
        if axis == -1:
            if not given:
                lo, hi = (x.min(), x.max()) if x.size else (0.0, 0.0)
            return _qdq_slice(x, np.asarray(lo).reshape(-1)[0], np.asarray(hi).reshape(-1)[0],
                              attrs, cast).astype(x.dtype, copy=False)
        xs = _slices(x, axis)
        out = np.empty_like(xs)
        for i in range(xs.shape[1]):
            chip = xs[:, i, :]
            lo_i, hi_i = (lo[i], hi[i]) if given else (chip.min(), chip.max())
            out[:, i, :] = _qdq_slice(chip, lo_i, hi_i, attrs, cast)
        return out.reshape(x.shape)

    return compute


@kernel_factory("QuantizeAndDequantizeV4Grad", expensive=True, type_constraints=_QDQ_TYPES)
@_checked
def _quantize_and_dequantize_v4_grad(node):
    def compute(ctx, g, x, lo, hi):
        if g.shape != x.shape:
            raise _invalid(f"gradient and input must be the same size: {list(g.shape)} vs "
                           f"{list(x.shape)}")
        axis = _qdq_axis(node, x)
        lo_v, hi_v = _qdq_ranges(x, lo, hi, axis)
        if axis == -1:
            inside = (x >= lo_v[0]) & (x <= hi_v[0])
        else:
            shape = [1] * x.ndim
            shape[axis] = -1
            inside = (x >= lo_v.reshape(shape)) & (x <= hi_v.reshape(shape))
        zero = np.zeros((), x.dtype)
        return (np.where(inside, g, zero).astype(x.dtype), np.zeros_like(np.asarray(lo)),
                np.zeros_like(np.asarray(hi)))

    return compute


# ---- QuantizedAvgPool, QuantizedReluX ------------------------------------------------------


@kernel_factory("QuantizedAvgPool", expensive=True)
@_checked
def _quantized_avg_pool(node):
    geom = _PoolGeometry(node)
    t = _carrier(node, "T")
    if node.attrs["ksize"][3] != 1:
        raise errors.UnimplementedError(None, None, "Non-spatial pooling is not yet supported. "
                                        f"Depth window is {node.attrs['ksize'][3]}")

    def compute(ctx, x, lo, hi):
        if x.ndim != 4:
            raise _invalid("tensor_in must be 4-dimensional")
        lo, hi = _scalar(lo, "min_input"), _scalar(hi, "max_input")
        out_shape, pads, ks = geom.resolve(x.shape)
        if 0 in out_shape:
            return np.zeros(out_shape, t), lo, hi
        xp = _pad(x.astype(np.int64), pads)
        acc = np.zeros(out_shape, np.int64)
        for index in geom.taps(out_shape, ks):
            acc += xp[index]
        counts = _avg_counts(geom, ks, x.shape, out_shape, pads)
        # The window mean rounded half to even, as TensorFlow's kernel computes it.
        mean = np.rint(acc / counts)
        low, high = _limits(t)
        return np.clip(mean, low, high).astype(t), lo, hi

    return compute


@kernel_factory("QuantizedReluX")
@_checked
def _quantized_relu_x(node):
    t = _carrier(node, "Tinput")
    if _carrier(node, "out_type") != t:
        raise errors.NotFoundError(None, None, "No registered kernel for this out_type")

    def compute(ctx, x, max_value, lo, hi):
        cap = _scalar(max_value, "max_value")
        lo, hi = _scalar(lo, "min_features"), _scalar(hi, "max_features")
        floor_q = np.asarray(_float_to_quantized(0.0, lo, hi, t), t)
        cap_q = np.asarray(_float_to_quantized(cap, lo, hi, t), t)
        return np.minimum(np.maximum(x, floor_q), cap_q).astype(t, copy=False), lo, hi

    return compute


# ---- QuantizedConcat ------------------------------------------------------------------------


def _concat_range(ranges, signed: bool):
    """TF's output range: the lowest min capped at 0 and the highest max, as std::min and
    std::max fold them from FLT_MAX and -FLT_MAX (a NaN end is passed over); for the signed
    types the larger magnitude on both sides."""
    low, high = _FLT_MAX, -_FLT_MAX
    for lo, hi in ranges:
        low = lo if lo < low else low
        high = hi if high < hi else high
    low = low if low < 0 else _F(0.0)
    if signed:
        largest = max(abs(low), abs(high))
        return _F(-largest), _F(largest)
    return _F(low), _F(high)


def _check_concat_shapes(values, axis: int):
    first = values[0]
    if not 0 <= axis < first.ndim:
        raise _invalid(f"ConcatOp : Expected concatenating dimensions in the range [0, "
                       f"{first.ndim}), but got {axis}")
    for i, v in enumerate(values[1:], 1):
        if v.ndim != first.ndim:
            raise _invalid(f"ConcatOp : Ranks of all input tensors should match: shape[0] = "
                           f"{_shape_str(first.shape)} vs. shape[{i}] = {_shape_str(v.shape)}")
        if any(v.shape[j] != first.shape[j] for j in range(first.ndim) if j != axis):
            raise _invalid(f"ConcatOp : Dimensions of inputs should match: shape[0] = "
                           f"{_shape_str(first.shape)} vs. shape[{i}] = {_shape_str(v.shape)}")


@kernel_factory("QuantizedConcat", type_constraints={"T": ["quint8", "qint8", "quint16",
                                                           "qint16", "qint32"]})
def _quantized_concat(node):
    n = node.attrs["N"]
    dtype = _carrier(node, "T")
    signed = _limits(dtype)[0] < 0

    def compute(ctx, concat_dim, *args):
        values, mins, maxes = args[:n], args[n:2 * n], args[2 * n:]
        if np.ndim(concat_dim) != 0:
            raise _invalid(f"Concat dim tensor should be a scalar integer, but got shape "
                           f"{_shape_str(np.shape(concat_dim))}")
        for what, ends in (("input_mins", mins), ("input_maxes", maxes)):
            for i, e in enumerate(ends):
                if np.size(e) != 1:
                    raise _invalid(f"{what} each tensor's num elements must be 1, given num "
                                   f"elements {np.size(e)} in index {i}")
        ranges = [(_F(np.reshape(lo, -1)[0]), _F(np.reshape(hi, -1)[0]))
                  for lo, hi in zip(mins, maxes, strict=True)]
        axis = int(concat_dim)
        _check_concat_shapes(values, axis)
        out_lo, out_hi = _concat_range(ranges, signed)
        parts = [v if (lo, hi) == (out_lo, out_hi) else
                 _by_table(v, lambda x, lo=lo, hi=hi: _quantize_min_first(
                     _dequantize_min_first(x, lo, hi, dtype), out_lo, out_hi, dtype))
                 for v, (lo, hi) in zip(values, ranges, strict=True)]
        return np.concatenate(parts, axis=axis), out_lo, out_hi

    return compute
