"""What the neural-network kernels share (nn_ops.py, conv_ops.py, pooling_ops.py): the
precision rule (half and bfloat16 are computed in float32 and cast back, float64 stays
float64, integer types stay what they are), typed errors for bad attributes, and the window
geometry of convolutions and pools as TF computes it. Every windowed kernel works in NHWC;
NCHW data is transposed in and out.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels.cpu import native

_LOW_PRECISION = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))


def _widen(x: np.ndarray) -> np.ndarray:
    """`x` in the precision its kernel computes in (float32 for half and bfloat16)."""
    return x.astype(np.float32) if x.dtype in _LOW_PRECISION else x


def _narrow(y, dtype: np.dtype) -> np.ndarray:
    """`y` cast to the output dtype (no copy when it already is)."""
    y = np.asarray(y)
    return y if y.dtype == dtype else y.astype(dtype)


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _checked(make):
    """A kernel factory whose attribute errors surface when the node runs, where the runtime
    names the node, rather than when the step is built."""

    def factory(node):
        try:
            return make(node)
        except errors.OpError as e:
            error = e

            def fail(ctx, *inputs):
                raise error

            return fail

    return factory



# ---- window geometry shared by convolutions and pools ------------------------------------


def _window(size: int, k: int, stride: int, dilation: int, padding: str,
            explicit=(0, 0)) -> tuple[int, int, int]:
    """(output size, padding before, padding after) along one dimension, as TF computes
    them (GetWindowedOutputSizeVerbose)."""
    if stride <= 0:
        raise _invalid(f"Stride must be > 0, but got {stride}")
    if dilation <= 0:
        raise _invalid(f"Dilation rate must be >= 1, but got {dilation}")
    eff = (k - 1) * dilation + 1
    if padding == "VALID":
        num = size - eff + stride
        out, before, after = (num // stride if num >= 0 else -((-num) // stride)), 0, 0
    elif padding == "SAME":
        out = (size + stride - 1) // stride
        need = max(0, (out - 1) * stride + eff - size)
        before, after = need // 2, need - need // 2
    else:
        before, after = explicit
        out = (size + before + after - eff) // stride + 1
    if out < 0:
        raise _invalid(f"Computed output size would be negative: {out} [input_size: {size}, "
                       f"effective_filter_size: {eff}, stride: {stride}]")
    return out, before, after


def _explicit_pairs(attrs, spatial_axes):
    pads = attrs.get("explicit_paddings") or []
    if attrs.get("padding") != "EXPLICIT":
        return [(0, 0)] * len(spatial_axes)
    return [(pads[2 * a], pads[2 * a + 1]) for a in spatial_axes]


# Below this many bytes `_pad` fills the whole output, then copies `x` in: one fill and
# one copy cost less than the border's slices (a served model's batch-of-one conv).
_FILL_BYTES = 1 << 16


def _pad(x: np.ndarray, pads, value=0) -> np.ndarray:
    """`x` padded on axes 1.. by `pads` [(before, after), ...]; `x` itself when no padding."""
    if len(pads) == 2 and x.ndim >= 3:  # (the common case, spelled out: ~2 us less)
        (pt, pb), (pl, pr) = pads
        if not (pt or pb or pl or pr):
            return x
        _, h, w = x.shape[:3]
        shape = (x.shape[0], h + pt + pb, w + pl + pr) + x.shape[3:]
        index = (slice(None), slice(pt, pt + h), slice(pl, pl + w))
    else:
        if not any(b or a for b, a in pads):
            return x
        shape = (x.shape[0],) + tuple(n + b + a for n, (b, a) in zip(x.shape[1:], pads,
                                                                      strict=False))
        shape += x.shape[1 + len(pads):]
        index = (slice(None),) + tuple(slice(b, b + n) for n, (b, _) in
                                       zip(x.shape[1:], pads, strict=False))
    if x.nbytes <= _FILL_BYTES:
        out = np.zeros(shape, x.dtype) if value == 0 else np.full(shape, value, x.dtype)
        out[index] = x
        return out
    out = np.empty(shape, dtype=x.dtype)
    out[index] = x
    # only the border is filled (a fill of the whole array first cost as much as the copy)
    for axis, (b, a) in zip(range(1, out.ndim), pads, strict=False):
        lead = (slice(None),) * axis
        if b:
            out[lead + (slice(0, b),)] = value
        if a:
            out[lead + (slice(out.shape[axis] - a, None),)] = value
    return out


# Arrays of at least this many elements are transposed by native.swap_last2 (a tiled copy)
# rather than NumPy's strided copy, which is several times slower when the channels are few
# (a (64, 16, 32, 32) float32 batch: 0.7 ms).
SWAP_MIN_ELEMENTS = 4096


def _swapped(x, shape):
    """`x` seen as `shape` (3-D) with its last two axes swapped by the tiled native copy,
    or None (small, not C-contiguous, or no C extension)."""
    if x.size < SWAP_MIN_ELEMENTS or not isinstance(x, np.ndarray) or not x.flags.c_contiguous:
        return None
    return native.swap_last2(x.reshape(shape))


def _to_nhwc(x, data_format):
    """NHWC data of `x`: `x` itself, or (NCHW) a transposed copy, or a transposed view."""
    if data_format != "NCHW":
        return x
    n, c, h, w = x.shape
    out = _swapped(x, (n, c, h * w))
    return x.transpose(0, 2, 3, 1) if out is None else out.reshape(n, h, w, c)


def _from_nhwc(x, data_format):
    """`x` (NHWC) in `data_format`, C-contiguous when NCHW."""
    if data_format != "NCHW":
        return x
    n, h, w, c = x.shape
    out = _swapped(x, (n, h * w, c))
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if out is None \
        else out.reshape(n, c, h, w)


def _sizes(sizes, what):
    sizes = [int(s) for s in np.reshape(sizes, -1)]
    if len(sizes) != 4:
        raise _invalid(f"{what} must specify 4 dimensions, got {len(sizes)}")
    return sizes
