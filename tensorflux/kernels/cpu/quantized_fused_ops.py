"""CPU kernels of the fused eight-bit ops (tensorflux/ops/quantized_fused_ops.py):
QuantizedConv2DWithBias[AndRelu]AndRequantize and QuantizedMatMulWithBias[AndRelu]And
Requantize, on the products of kernels/cpu/quantization_ops.py and the arithmetic of
_qmath.py.

By definition here, they compute exactly what these unfused steps give:
  acc, min_acc, max_acc = QuantizedConv2D / QuantizedMatMul (into qint32)
  acc += bias per output channel, wrapping in int32; a qint32 bias is taken as it is (it
      is in the accumulator's range), a float one as FloatToQuantized<qint32>(bias,
      min_acc, max_acc) (the nearest whole accumulator step);
  out = Requantize(acc, min_acc, max_acc, min_freezed_output, max_freezed_output, quint8)
  Relu: out = max(out, FloatToQuantized<quint8>(0, min_freezed_output, max_freezed_output))
and return (out, min_freezed_output, max_freezed_output). In C (`_qnative.conv2d_fused`,
`matmul_fused`) the last three steps run on each block of rows as soon as its product is
done, while it is in cache: the int32 product is never written out whole. (TF's own kernels
for these ops are oneDNN's, for a qint8 filter, with scales in float; these take any 8-bit
operands with their zero points, as QuantizedConv2D does, and out_type quint8.)
"""

from __future__ import annotations

import functools

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels import intra_op
from tensorflux.kernels.cpu import _qnative
from tensorflux.kernels.cpu._nn_common import _checked, _invalid
from tensorflux.kernels.cpu._qmath import (
    _F,
    _carrier,
    _float_to_quantized,
    _float_to_quantized_unclamped,
    _product_range,
    _requantize_32_to_8_params,
)
from tensorflux.kernels.cpu.quantization_ops import (
    _SHIFT_CACHE_BYTES,
    _conv_attrs,
    _conv_geometry,
    _conv_product,
    _matmul_operands,
    _matmul_product,
    _ranges,
)
from tensorflux.kernels.registry import kernel_factory


@functools.lru_cache(maxsize=64)
def _float_bias_in_acc(bias_bytes, lo, hi) -> np.ndarray:
    bias = np.frombuffer(bias_bytes, np.float32)
    out = np.array([_float_to_quantized(float(v), lo, hi, np.int32) for v in bias], np.int32)
    out.flags.writeable = False
    return out


def _fused_epilogue(bias, b_t, acc_range, out_lo, out_hi, relu):
    """(int32 bias, (scale, offset, lo, hi)): the steps after the product, as constants."""
    if bias.ndim != 1:
        raise _invalid(f"bias must be 1-dimensional, got {list(bias.shape)}")
    if np.dtype(b_t) == np.int32:
        bias_q = np.ascontiguousarray(bias, np.int32)
    elif bias.nbytes <= _SHIFT_CACHE_BYTES:
        bias_q = _float_bias_in_acc(np.ascontiguousarray(bias, _F).tobytes(), *acc_range)
    else:
        bias_q = _float_bias_in_acc.__wrapped__(np.ascontiguousarray(bias, _F).tobytes(),
                                                *acc_range)
    scale, offset = _requantize_32_to_8_params(*acc_range, out_lo, out_hi)
    floor = _float_to_quantized(0.0, out_lo, out_hi, np.uint8) if relu else 0
    return bias_q, (scale, offset, floor, 255)


def _fused_finish(acc, bias_q, epilogue):
    """The steps after the product in NumPy (the C path's values)."""
    scale, offset, floor, _ = epilogue
    with np.errstate(over="ignore"):
        acc = (acc.astype(np.int32, copy=False) + bias_q).astype(np.int32, copy=False)
    value = acc.astype(np.int64)
    value *= scale
    value >>= 32
    value += offset
    value >>= 16
    return np.clip(value, floor, 255, out=value).astype(np.uint8)


def _fused_types(node, in_attrs, out_attr):
    out_t = _carrier(node, out_attr)
    if np.dtype(out_t) != np.uint8:
        raise errors.UnimplementedError(None, None, f"{node.op} is implemented for "
                                        f"{out_attr}=quint8 only")
    return tuple(_carrier(node, a) for a in in_attrs) + (_carrier(node, "Tbias"),)


def _fused_conv2d(relu):
    def factory(node):
        x_t, w_t, b_t = _fused_types(node, ("Tinput", "Tfilter"), "out_type")
        strides, padding = _conv_attrs(node)

        def compute(ctx, x, w, bias, *ranges):
            ranges = _ranges(ranges, ("min_input", "max_input", "min_filter", "max_filter",
                                      "min_freezed_output", "max_freezed_output"))
            geometry = _conv_geometry(x, w, strides, padding)
            if bias.shape != (w.shape[3],):
                raise _invalid(f"bias must have {w.shape[3]} values, got {list(bias.shape)}")
            acc_range = _product_range(*ranges[:4], x_t, w_t, np.int32)
            bias_q, epi = _fused_epilogue(bias, b_t, acc_range, *ranges[4:], relu)
            (oh, pt, _), (ow, pl, _) = geometry
            out = _qnative.conv2d_fused(
                x, w, _float_to_quantized_unclamped(0.0, *ranges[:2], x_t),
                _float_to_quantized_unclamped(0.0, *ranges[2:4], w_t), strides[1:3],
                (pt, pl), (oh, ow), bias_q, epi, intra_op.workers(ctx))
            if out is None:
                acc = _conv_product(ctx, x, w, ranges[:4], (x_t, w_t, np.int32), strides,
                                    geometry)
                out = _fused_finish(acc, bias_q, epi)
            return out, ranges[4], ranges[5]

        return compute

    return _checked(factory)


kernel_factory("QuantizedConv2DWithBiasAndReluAndRequantize", expensive=True)(
    _fused_conv2d(True))
kernel_factory("QuantizedConv2DWithBiasAndRequantize", expensive=True)(_fused_conv2d(False))


def _fused_matmul(relu):
    def factory(node):
        a_t, b_t, bias_t = _fused_types(node, ("T1", "T2"), "Toutput")
        ta, tb = bool(node.attrs["transpose_a"]), bool(node.attrs["transpose_b"])

        def compute(ctx, a, b, bias, *ranges):
            a2, b2, *ab_range = _matmul_operands(a, b, ta, tb, ranges[:4])
            out_lo, out_hi = _ranges(ranges[4:], ("min_freezed_output", "max_freezed_output"))
            if bias.shape != (b2.shape[1],):
                raise _invalid(f"bias must have {b2.shape[1]} values, got {list(bias.shape)}")
            acc_range = _product_range(*ab_range, a_t, b_t, np.int32)
            bias_q, epi = _fused_epilogue(bias, bias_t, acc_range, out_lo, out_hi, relu)
            za = _float_to_quantized_unclamped(0.0, *ab_range[:2], a_t)
            zb = _float_to_quantized_unclamped(0.0, *ab_range[2:], b_t)
            out = _qnative.matmul_fused(a2, b2, za, zb, bias_q, epi, intra_op.workers(ctx))
            if out is None:
                acc = _matmul_product(ctx, a2, b2, *ab_range, a_t, b_t, np.int32)
                out = _fused_finish(acc, bias_q, epi)
            return out, out_lo, out_hi

        return compute

    return _checked(factory)


kernel_factory("QuantizedMatMulWithBiasAndReluAndRequantize", expensive=True)(
    _fused_matmul(True))
kernel_factory("QuantizedMatMulWithBiasAndRequantize", expensive=True)(_fused_matmul(False))
