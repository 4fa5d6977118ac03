"""TensorFlow's eight-bit arithmetic (quantization_utils.h), step for step in its precision:
the range conversions, MIN_FIRST quantize/dequantize and the fixed-point requantization that
the kernels of kernels/cpu/quantization_ops.py and quantized_fused_ops.py share (see the
former's docstring for the conventions)."""

from __future__ import annotations

import functools
import math

import numpy as np

from tensorflux.kernels.cpu import _qnative
from tensorflux.kernels.cpu._nn_common import _invalid

_F = np.float32
_FLT_MAX = np.finfo(np.float32).max
_EXACT_F32 = 1 << 24  # integers below this are exact in float32, sums included


# The scalar helpers below are pure functions of (value, range, type) and run on every
# call of a kernel whose ranges are constants; they are cached (their results are integers,
# or floats that do not depend on the sign of a zero range end).
_cached = functools.lru_cache(maxsize=4096)


@_cached
def _limits(dtype) -> tuple[int, int]:
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def _carrier(node, attr) -> np.dtype:
    return node.attrs[attr].numpy_dtype


def _mode(node) -> str:
    mode = node.attrs.get("mode", "MIN_COMBINED")
    return mode.decode() if isinstance(mode, bytes) else mode


def _round_away(x: np.ndarray) -> np.ndarray:
    """Round half away from zero, exactly (std::round), in x's precision."""
    t = np.trunc(x)
    return t + np.where(np.abs(x - t) >= 0.5, np.sign(x), 0).astype(x.dtype)


def _to_int(values: np.ndarray, dtype) -> np.ndarray:
    """Whole-valued floats to the carrier: int32 wraps as C's conversion does on x86."""
    with np.errstate(invalid="ignore", over="ignore"):
        if np.dtype(dtype) == np.int32:
            return values.astype(np.int64).astype(np.int32) \
                if np.all(np.abs(values) < 2.0 ** 62) else values.astype(np.int32)
        return values.astype(dtype)


def _ftz(v: np.float32) -> np.float32:
    """TF runs kernels with denormals flushed to zero."""
    return _F(0.0) if abs(v) < np.finfo(np.float32).tiny else v


def _by_table(x: np.ndarray, fn) -> np.ndarray:
    """fn(x) for an elementwise `fn`: through a 256-entry table when x is 8-bit (the same
    arithmetic on every possible value once, then a gather)."""
    if x.dtype.itemsize != 1 or x.size <= 256:
        return fn(x)
    return fn(np.arange(256, dtype=np.uint8).view(x.dtype))[x.view(np.uint8)]


def _scalar(t, what) -> float:
    a = np.asarray(t)
    if a.size != 1:
        raise _invalid(f"{what} must be a scalar, but got shape {list(a.shape)}")
    return _F(a.reshape(-1)[0])


# ---- TF's range conversions (quantization_utils.h) ---------------------------------------


@_cached
def _float_to_quantized_unclamped(value: float, lo: float, hi: float, dtype) -> int:
    """The integer (unclamped) that stands for `value` in [lo, hi], in double precision."""
    lowest = _limits(dtype)[0]
    if lo == hi:
        return lowest
    steps = float(1 << (8 * np.dtype(dtype).itemsize))
    scale = steps / (float(_F(hi) - _F(lo)) * (steps / (steps - 1.0)))
    return (int(_round_away(np.float64(float(value) * scale)))
            - int(_round_away(np.float64(float(lo) * scale))) + lowest)


@_cached
def _float_to_quantized(value: float, lo: float, hi: float, dtype) -> int:
    q = _float_to_quantized_unclamped(value, lo, hi, dtype)
    low, high = _limits(dtype)
    return min(max(q, low), high)


def _quantized_to_float(q: int, lo: float, hi: float, dtype) -> float:
    """The float that integer `q` stands for in [lo, hi] (TF's QuantizedToFloat)."""
    if lo == hi:
        return _F(lo)
    steps = float(1 << (8 * np.dtype(dtype).itemsize))
    full = float(_F(hi) - _F(lo)) * (steps / (steps - 1.0))
    step = full / steps
    step32 = _F(step)
    lo_rounded = float(_F(_round_away(_F(_F(lo) / step32)) * step32))
    return _F(lo_rounded + (float(q) - _limits(dtype)[0]) * step)


def _one_step(lo, hi, dtype) -> np.float32:
    low, high = _limits(dtype)
    return _F(_F(hi) - _F(lo)) / _F(high - low)


@_cached
def _product_range(min_a, max_a, min_b, max_b, ta, tb, tc):
    """The range of a product's qint32 accumulator: one step of each input, multiplied,
    times the output type's extremes (QuantizationRangeForMultiplication)."""
    step = _F(_one_step(min_a, max_a, ta) * _one_step(min_b, max_b, tb))
    low, high = _limits(tc)
    return _F(step * _F(low)), _F(step * _F(high))


def _dequantize_min_first(x: np.ndarray, lo, hi, dtype) -> np.ndarray:
    """DEQUANTIZE_WITH_EIGEN: float32 throughout, the low end rounded to a whole step."""
    steps = float(1 << (8 * np.dtype(dtype).itemsize))
    scale = _F(float(_F(hi) - _F(lo)) / (steps - 1.0))
    lo_rounded = _F(lo) if lo == hi else _F(_round_away(_F(_F(lo) / scale)) * scale)
    base = _F(lo_rounded - _F(_F(_limits(dtype)[0]) * scale))
    return base + x.astype(_F) * scale


def _quantize_min_first(x: np.ndarray, lo, hi, dtype, parts: int = 1) -> np.ndarray:
    """QUANTIZE_WITH_EIGEN: scale, round, shift by the rounded low end, clamp, in float32."""
    steps = float(1 << (8 * np.dtype(dtype).itemsize))
    width = _F(_F(hi) - _F(lo))
    scale = _F(0.0) if hi == lo else _F((steps - 1.0) / float(width))
    lo_scaled = _round_away(_F(_F(lo) * scale))
    low, high = _limits(dtype)
    lower, upper = max(_F(low), _F(-2.147483648e9)), min(_F(high), _F(2.14748352e9))
    if np.dtype(dtype) == np.uint8 and x.dtype == _F and x.size > 256:
        fast = _qnative.quantize_u8(x, scale, _F(lo_scaled - _F(low)), lower, upper, parts)
        if fast is not None:
            return fast
    q = _round_away(x.astype(_F) * scale) - _F(lo_scaled - _F(low))
    return np.clip(q, lower, upper).astype(np.int32).astype(dtype)


def _lround(x: float) -> int:
    """C's lround: the nearest integer, halves away from zero."""
    return int(math.floor(abs(x) + 0.5)) * (1 if x >= 0 else -1)


@_cached
def _requantize_32_to_8_params(min_in, max_in, min_out, max_out) -> tuple[int, int]:
    """(scale, offset): the fixed-point constants of `_requantize_32_to_8` (16 fractional
    bits; offset = in_offset - out_offset + one half)."""
    in_range, out_range = _F(_F(max_in) - _F(min_in)), _F(_F(max_out) - _F(min_out))
    recip = _F(0.0) if out_range == 0 else _F(255.0 / float(out_range))
    rezero = _F(float(_F(_F(min_in) + _F(max_in))) / 2.0)
    one = 1 << 16
    scale_fp = 0 if out_range == 0 else int(255.0 * one * float(in_range) / float(out_range))
    in_offset = int(_F(_F(rezero * recip) * _F(one)))
    # TF rounds the output offset to nearest (std::lround: halves away from zero)
    out_offset = 0 if out_range == 0 else _lround(one * (float(min_out) * 255.0) /
                                                  float(out_range))
    return scale_fp, in_offset - out_offset + (one >> 1)


def _requantize_32_to_8(x: np.ndarray, min_in, max_in, min_out, max_out,
                        parts: int = 1) -> np.ndarray:
    """TF's fixed-point qint32 -> quint8 requantization (16 fractional bits, int64)."""
    scale_fp, offset = _requantize_32_to_8_params(min_in, max_in, min_out, max_out)
    fast = _qnative.requantize_32_to_8(x, scale_fp, offset, parts)
    if fast is not None:
        return fast
    value = x.astype(np.int64)
    value *= scale_fp
    value >>= 32
    value += offset
    value >>= 16
    return np.clip(value, 0, 255, out=value).astype(np.uint8)


def _requantize(x: np.ndarray, in_type, min_in, max_in, min_out, max_out, out_type,
                parts: int = 1):
    if np.dtype(in_type) == np.int32 and np.dtype(out_type) == np.uint8:
        return _requantize_32_to_8(x, min_in, max_in, min_out, max_out, parts)
    return _by_table(x, lambda v: _quantize_min_first(
        _dequantize_min_first(v, min_in, max_in, in_type), min_out, max_out, out_type))
