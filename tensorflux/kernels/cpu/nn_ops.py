"""CPU kernels of the neural-network ops (tensorflux/ops/nn_ops.py).

Precision. half and bfloat16 inputs are computed in float32 and the result is cast back;
float64 stays float64; integer types stay what they are. No kernel writes into its inputs.

Convolution (Conv2D and its two backprops) with stride 1, large windows and many
channels goes through the frequency domain (kernels/cpu/_fft_conv.py: DFTs as matrix
products, one product over the channels per frequency) when its flop count says so
(`_by_fft`): the 5x5 layers of a small CNN cost ~2x less that way. Everything else is
im2col + BLAS. For each batch chunk the
patches of the padded input are copied, through a zero-copy `as_strided` view of shape
(n, out_h, out_w, kh, kw, C), into one reused buffer laid out as the rows of a matrix
(n*out_h*out_w, kh*kw*C); one matrix product with the filter (kh*kw*C, F) writes the
chunk's rows of the output. Chunks are sized so the patch buffer stays in cache
(`_CHUNK_BYTES`).
  - Conv2DBackpropFilter: the same patch matrix, transposed, times out_backprop, summed
    over chunks (one running sum per thread).
  - Conv2DBackpropInput, stride 1 and at least `_FLIP_MIN_CHANNELS` input channels: the
    forward conv (im2col as above) of out_backprop, padded so that the result has the
    input's size, with the filter flipped in space and transposed in channels. Otherwise
    out_backprop (m, F) times the filter transposed, per tap (F, C) or all at once
    (F, kh*kw*C); each filter tap's columns are then added into the strided slice of the
    padded input gradient that the tap read from ("col2im" by taps: kh*kw large adds).
With OpenBLAS at one thread per call (the process-wide policy: kernels/cpu/_blas.py) the
gemm runs at ~90 GF/s per core on these shapes (about 90% of what OpenBLAS reaches on
large square products) and the copies cost ~7% more.

Intra-op parallelism (kernels/intra_op.py). The convolution, pooling, big elementwise and
matrix kernels cut their work into chunks (batch chunks here) that the calling thread and
the intra-op pool claim dynamically, so the patch copies, adds and pooling passes run in
parallel as well as the products, a thread that loses its core to another process just
claims fewer chunks, and nothing spin-waits. With a multi-threaded BLAS (set by the user)
they run on the calling thread and BLAS parallelizes each product; chunks are then capped
in number (`_MAX_CHUNKS`): fewer, larger BLAS calls degrade far less when other processes
compete for the cores.
Every kernel works in NHWC; NCHW data is transposed in and out.

Pooling reads the padded input through one strided slice per window tap (i, j): the slice
holds that tap's element of every window, so a k x k pool is k*k elementwise ops on arrays
of the output's size, whatever the strides. MaxPool ignores NaN (TF compares with `>`);
MaxPoolGrad routes each window's gradient to the first maximum in row-major window order
(TF's CPU kernel, re-deriving the argmax from `orig_input`); AvgPool divides by the number
of window elements inside the unpadded input. Pools run in cache-sized batch chunks
(several passes over a chunk stay in cache), split over the intra-op threads when big.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from numpy.lib.stride_tricks import as_strided

from tensorflux.framework import errors
from tensorflux.kernels import intra_op
from tensorflux.kernels.cpu import _fft_conv
from tensorflux.kernels.cpu.math_ops import _ADD_KERNEL as _last_axis_add
from tensorflux.kernels.cpu.math_ops import _sum as _leading_sum
from tensorflux.kernels.registry import kernel, kernel_factory

_LOW_PRECISION = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))
_CHUNK_BYTES = 2 << 20  # patch-buffer size per batch chunk (stays in cache with the product)
# ... but at most this many chunks: every BLAS call hands work to BLAS's threads, and when
# other processes hold the cores each hand-off can cost a scheduler time slice.
_MAX_CHUNKS = 8
# Backprop-input as a flipped forward conv needs this many input channels: its product has
# one column per input channel, and narrower products run far below BLAS's peak (3 input
# channels: 2x slower than products-and-scatter).
_FLIP_MIN_CHANNELS = 16
_SELU_SCALE = 1.0507009873554804934193349852946
_SELU_ALPHA = 1.6732632423543772848170429916717


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


# ---- elementwise activations and their gradients -----------------------------------------


def _relu_into(out, x):
    np.maximum(x, np.zeros((), x.dtype), out=out)


def _relu_grad_into(out, g, x):
    np.multiply(g, np.greater(x, 0), out=out, dtype=g.dtype)


@kernel("Relu")
def _relu(ctx, x):
    return intra_op.split_elementwise(_relu_into, np.empty(x.shape, x.dtype), x,
                                      parts=intra_op.workers(ctx))


@kernel("ReluGrad")
def _relu_grad(ctx, g, x):
    if g.shape != x.shape:
        raise _invalid(f"gradients and features must have the same shape: "
                       f"{list(g.shape)} vs {list(x.shape)}")
    return intra_op.split_elementwise(_relu_grad_into, np.empty(g.shape, g.dtype), g, x,
                                      parts=intra_op.workers(ctx))


@kernel("Relu6")
def _relu6(ctx, x):
    return np.minimum(np.maximum(x, np.zeros((), x.dtype)), np.asarray(6, x.dtype))


@kernel("Relu6Grad")
def _relu6_grad(ctx, g, x):
    return g * ((x > 0) & (x < 6)).astype(g.dtype)


@kernel("Elu")
def _elu(ctx, x):
    xf = _widen(x)
    return _narrow(np.where(xf < 0, np.expm1(np.minimum(xf, 0)), xf), x.dtype)


@kernel("EluGrad")
def _elu_grad(ctx, g, y):
    gf, yf = _widen(g), _widen(y)
    return _narrow(np.where(yf < 0, gf * (yf + 1), gf), g.dtype)


@kernel("Selu")
def _selu(ctx, x):
    xf = _widen(x)
    neg = (_SELU_SCALE * _SELU_ALPHA) * np.expm1(np.minimum(xf, 0))
    return _narrow(np.where(xf < 0, neg, _SELU_SCALE * xf), x.dtype)


@kernel("SeluGrad")
def _selu_grad(ctx, g, y):
    gf, yf = _widen(g), _widen(y)
    out = np.where(yf < 0, gf * (yf + _SELU_SCALE * _SELU_ALPHA), gf * _SELU_SCALE)
    return _narrow(out, g.dtype)


@kernel("Softplus")
def _softplus(ctx, x):
    # TF's thresholds: above -threshold softplus(x) == x and below threshold it is exp(x),
    # both to the input type's machine epsilon.
    threshold = np.log(float(ml_dtypes.finfo(x.dtype).eps)) + 2.0
    xf = _widen(x)
    with np.errstate(over="ignore"):
        e = np.exp(xf)
        mid = np.log1p(e)
    out = np.where(xf > -threshold, xf, np.where(xf < threshold, e, mid))
    return _narrow(out, x.dtype)


@kernel("SoftplusGrad")
def _softplus_grad(ctx, g, x):
    gf, xf = _widen(g), _widen(x)
    with np.errstate(over="ignore"):
        return _narrow(gf / (np.exp(-xf) + 1), g.dtype)


@kernel_factory("LeakyRelu")
def _leaky_relu(node):
    alpha = node.attrs["alpha"]

    def compute(ctx, x):
        xf = _widen(x)
        return _narrow(np.where(xf > 0, xf, xf * alpha), x.dtype)

    return compute


@kernel_factory("LeakyReluGrad")
def _leaky_relu_grad(node):
    alpha = node.attrs["alpha"]

    def compute(ctx, g, x):
        gf = _widen(g)
        return _narrow(np.where(x > 0, gf, gf * alpha), g.dtype)

    return compute


# ---- softmax and cross entropy ---------------------------------------------------------


def _shifted_exp(x):
    """(x - max, exp(x - max), sum of exp) over the last axis, in compute precision."""
    xf = _widen(x)
    shifted = xf - np.max(xf, axis=-1, keepdims=True)
    e = np.exp(shifted)
    return shifted, e, np.sum(e, axis=-1, keepdims=True)


@kernel("Softmax")
def _softmax(ctx, x):
    if x.size == 0:
        return x.copy()
    _, e, s = _shifted_exp(x)
    e /= s
    return _narrow(e, x.dtype)


@kernel("LogSoftmax")
def _log_softmax(ctx, x):
    if x.size == 0:
        return x.copy()
    shifted, _, s = _shifted_exp(x)
    shifted -= np.log(s)
    return _narrow(shifted, x.dtype)


@kernel("SoftmaxCrossEntropyWithLogits")
def _softmax_xent(ctx, features, labels):
    if features.ndim != 2 or labels.ndim != 2:
        raise _invalid(f"logits and labels must be either 2-dimensional, or broadcasted to be "
                       f"2-dimensional: logits={features.shape} labels={labels.shape}")
    try:
        f, l = np.broadcast_arrays(features, labels)
    except ValueError:
        raise _invalid(f"logits and labels must be broadcastable: logits_size=["
                       f"{','.join(map(str, features.shape))}] labels_size=["
                       f"{','.join(map(str, labels.shape))}]") from None
    dtype = features.dtype
    if f.shape[1] == 0:
        return np.zeros(f.shape[0], dtype), np.zeros(f.shape, dtype)
    shifted, e, s = _shifted_exp(f)
    lf = _widen(l)
    loss = np.sum(lf * (np.log(s) - shifted), axis=1)
    backprop = e / s - lf
    return _narrow(loss, dtype), _narrow(backprop, dtype)


@kernel("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_softmax_xent(ctx, features, labels):
    if features.ndim != 2 or labels.ndim != 1 or labels.shape[0] != features.shape[0]:
        raise _invalid(f"logits and labels must have the same first dimension, got logits "
                       f"shape {list(features.shape)} and labels shape {list(labels.shape)}")
    batch, classes = features.shape
    bad = (labels < 0) | (labels >= classes)
    if bad.any():
        first = labels[int(np.argmax(bad))]
        values = " ".join(str(int(v)) for v in labels.reshape(-1))
        raise _invalid(f"Received a label value of {first} which is outside the valid range "
                       f"of [0, {classes}).  Label values: {values}")
    dtype = features.dtype
    if classes == 0:
        return np.zeros(batch, dtype), np.zeros(features.shape, dtype)
    shifted, e, s = _shifted_exp(features)
    rows = np.arange(batch)
    loss = np.log(s[:, 0]) - shifted[rows, labels]
    e /= s
    e[rows, labels] -= 1
    return _narrow(loss, dtype), _narrow(e, dtype)


# ---- BiasAdd, L2Loss, LRN, InTopK --------------------------------------------------------


def _channel_axis(data_format: str, ndim: int) -> int:
    return 1 if data_format.startswith("NC") and ndim >= 3 else ndim - 1


@kernel_factory("BiasAdd")
def _bias_add(node):
    data_format = node.attrs.get("data_format", "NHWC")

    def compute(ctx, value, bias):
        axis = _channel_axis(data_format, value.ndim)
        if bias.ndim != 1 or value.ndim < 2 or bias.shape[0] != value.shape[axis]:
            raise _invalid(f"Must provide as many biases as the last dimension of the input "
                           f"tensor: {list(bias.shape)} vs. {list(value.shape)}")
        if axis == value.ndim - 1 and value.dtype == bias.dtype:
            return _last_axis_add(ctx, value, bias)  # NHWC: x + bias, tiled and split
        b = bias.reshape((-1,) + (1,) * (value.ndim - 1 - axis))
        out = np.empty(value.shape, value.dtype)
        return intra_op.split_elementwise(lambda o, v: np.add(v, b, out=o, dtype=value.dtype),
                                          out, value, parts=intra_op.workers(ctx))

    return compute


@kernel_factory("BiasAddGrad")
def _bias_add_grad(node):
    data_format = node.attrs.get("data_format", "NHWC")

    def compute(ctx, g):
        axis = _channel_axis(data_format, g.ndim)
        axes = tuple(a for a in range(g.ndim) if a != axis)
        if axis == g.ndim - 1 and g.dtype in (np.float32, np.float64):
            return _leading_sum(g, axes, False)  # ones @ rows: one BLAS gemv
        if g.dtype.kind == "f" or g.dtype.kind == "c" or g.dtype in _LOW_PRECISION:
            return _narrow(np.sum(_widen(g), axis=axes), g.dtype)
        return np.sum(g, axis=axes, dtype=g.dtype)

    return compute


@kernel("L2Loss")
def _l2_loss(ctx, t):
    tf_ = _widen(t).reshape(-1)
    return _narrow(np.dot(tf_, tf_) * 0.5, t.dtype)[()]


def _depth_window_sum(a: np.ndarray, radius: int) -> np.ndarray:
    """sum of a[..., d - radius : d + radius + 1] for each d (zeros beyond the edges)."""
    depth = a.shape[-1]
    out = a.copy()
    for off in range(1, min(radius, depth - 1) + 1):
        out[..., off:] += a[..., :-off]
        out[..., :-off] += a[..., off:]
    return out


def _lrn_attrs(node):
    a = node.attrs
    return a["depth_radius"], a["bias"], a["alpha"], a["beta"]


@kernel_factory("LRN")
def _lrn(node):
    radius, bias, alpha, beta = _lrn_attrs(node)

    def compute(ctx, x):
        if x.ndim != 4:
            raise _invalid(f"input must be 4-dimensional, got {list(x.shape)}")
        xf = _widen(x)
        norm = bias + alpha * _depth_window_sum(xf * xf, radius)
        return _narrow(xf * norm ** -beta, x.dtype)

    return compute


@kernel_factory("LRNGrad")
def _lrn_grad(node):
    radius, bias, alpha, beta = _lrn_attrs(node)

    def compute(ctx, g, x, y):
        if not (g.ndim == x.ndim == y.ndim == 4) or not (g.shape == x.shape == y.shape):
            raise _invalid("input_grads, input_image, and out_image should have the same "
                           "shape")
        gf, xf, yf = _widen(g), _widen(x), _widen(y)
        norm = bias + alpha * _depth_window_sum(xf * xf, radius)
        # dx_j = g_j N_j^-beta - 2 alpha beta x_j sum_{i in window(j)} g_i y_i / N_i
        dx = gf * norm ** -beta
        dx -= (2 * alpha * beta) * xf * _depth_window_sum(gf * yf / norm, radius)
        return _narrow(dx, g.dtype)

    return compute


@kernel("InTopKV2")
def _in_top_k(ctx, predictions, targets, k):
    if predictions.ndim != 2:
        raise _invalid(f"predictions must be 2-dimensional, got {list(predictions.shape)}")
    if targets.ndim != 1 or targets.shape[0] != predictions.shape[0]:
        raise _invalid("First dimension of predictions " f"{predictions.shape[0]} must match "
                       f"length of targets {targets.shape[0] if targets.ndim else 0}")
    batch, classes = predictions.shape
    valid = (targets >= 0) & (targets < classes)
    target_pred = predictions[np.arange(batch), np.where(valid, targets, 0)]
    more = np.sum(predictions > target_pred[:, None], axis=1)
    finite = np.isfinite(predictions).all(axis=1) if classes else np.ones(batch, bool)
    return valid & finite & (more < int(k))


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


def _pad(x: np.ndarray, pads, value=0) -> np.ndarray:
    """`x` padded on axes 1.. by `pads` [(before, after), ...]; `x` itself when no padding."""
    if not any(b or a for b, a in pads):
        return x
    shape = (x.shape[0],) + tuple(n + b + a for n, (b, a) in zip(x.shape[1:], pads,
                                                                  strict=False))
    shape += x.shape[1 + len(pads):]
    out = np.full(shape, value, dtype=x.dtype)
    index = (slice(None),) + tuple(slice(b, b + n) for n, (b, _) in zip(x.shape[1:], pads,
                                                                          strict=False))
    out[index] = x
    return out


def _to_nhwc(x, data_format):
    return x.transpose(0, 2, 3, 1) if data_format == "NCHW" else x


def _from_nhwc(x, data_format):
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if data_format == "NCHW" else x


# ---- Conv2D ------------------------------------------------------------------------------


class _ConvGeometry:
    """Strides, dilations and padding of one Conv2D-family node, resolved per input size."""

    __slots__ = ("sh", "sw", "dh", "dw", "padding", "explicit", "data_format", "name")

    def __init__(self, node):
        a = node.attrs
        self.data_format = a.get("data_format", "NHWC")
        hw = (2, 3) if self.data_format == "NCHW" else (1, 2)
        strides, dilations = list(a["strides"]), list(a.get("dilations") or [1, 1, 1, 1])
        if len(strides) != 4 or len(dilations) != 4:
            raise _invalid("Sliding window strides and dilations must have 4 elements")
        other = [i for i in range(4) if i not in hw]
        self.name = node.op
        if any(strides[i] != 1 for i in other):
            raise errors.UnimplementedError(
                None, None, "Current implementation does not yet support strides in the "
                "batch and depth dimensions.")
        if any(dilations[i] != 1 for i in other):
            raise errors.UnimplementedError(
                None, None, "Current implementation does not yet support dilations in the "
                "batch and depth dimensions.")
        self.sh, self.sw = strides[hw[0]], strides[hw[1]]
        self.dh, self.dw = dilations[hw[0]], dilations[hw[1]]
        self.padding = a["padding"]
        self.explicit = _explicit_pairs(a, hw)

    def resolve(self, h, w, kh, kw):
        """((out_h, out_w), [(top, bottom), (left, right)])."""
        oh, pt, pb = _window(h, kh, self.sh, self.dh, self.padding, self.explicit[0])
        ow, pl, pr = _window(w, kw, self.sw, self.dw, self.padding, self.explicit[1])
        return (oh, ow), [(pt, pb), (pl, pr)]


def _patches(xp, kh, kw, oh, ow, strides, dilations):
    """Read-only view (N, oh, ow, kh, kw, C) of the windows of padded NHWC `xp`."""
    s0, s1, s2, s3 = xp.strides
    (sh, sw), (dh, dw) = strides, dilations
    return as_strided(xp, (xp.shape[0], oh, ow, kh, kw, xp.shape[3]),
                      (s0, s1 * sh, s2 * sw, s1 * dh, s2 * dw, s3), writeable=False)


def _chunk(n: int, rows_per_image: int, row_bytes: int) -> int:
    """Images per batch chunk: a cache-sized patch buffer, and with a multi-threaded BLAS
    at most _MAX_CHUNKS chunks."""
    by_cache = _CHUNK_BYTES // max(1, rows_per_image * row_bytes)
    few = -(-n // _MAX_CHUNKS) if intra_op.blas_threads() != 1 else 1
    return max(1, by_cache, few)


def _im2col_matmul(xp, w2, out, kh, kw, strides, dilations, parts):
    """out (N, oh, ow, F) = the windows of padded NHWC `xp` times `w2` (kh*kw*C, F): per
    batch chunk, the patches are copied into one reused buffer (rows of the patch matrix)
    and multiplied by `w2` straight into the chunk's rows of `out`."""
    n, oh, ow, f = out.shape
    k = w2.shape[0]
    patches = _patches(xp, kh, kw, oh, ow, strides, dilations)

    nb = _chunk(n, oh * ow, k * xp.itemsize)
    buffer, _ = intra_op.per_thread(
        lambda: np.empty((min(nb, n),) + patches.shape[1:], dtype=xp.dtype))

    def work(n0, n1):
        b = buffer()[:n1 - n0]
        np.copyto(b, patches[n0:n1])
        np.matmul(b.reshape(-1, k), w2, out=out[n0:n1].reshape(-1, f))

    intra_op.parallel_for(work, n, nb, _parts(parts, 2.0 * out.size * k))
    return out


def _parts(parts: int, flops: float) -> int:
    """Threads for a kernel of `flops` work: 1 when too small to be worth a split."""
    return parts if flops >= intra_op.MIN_FLOPS else 1


def _by_fft(g: _ConvGeometry, n, hw, c, f, khw, out_hw, pads, *operands) -> bool:
    """Whether a convolution of these shapes goes through the frequency domain
    (kernels/cpu/_fft_conv.py): stride 1, fewer flops than im2col by its count, and
    finite operands. A transform spreads a NaN or an infinity over the whole image, where
    the direct convolution keeps it to the windows that read it (as TF does), so data with
    any goes the direct way (one sum of each operand tells)."""
    return (g.sh == g.sw == 1
            and _fft_conv.worthwhile(np.result_type(*operands), n, hw, c, f, khw,
                                     (g.dh, g.dw), out_hw, (pads[0][0], pads[1][0]))
            and all(np.isfinite(np.add.reduce(a, axis=None)) for a in operands))


def _conv_forward(x, w, g: _ConvGeometry, parts: int, ctx=None):
    """NHWC conv of compute-precision `x` (N, H, W, C) with `w` (kh, kw, C, F)."""
    n, h, wd, c = x.shape
    kh, kw, _, f = w.shape
    (oh, ow), pads = g.resolve(h, wd, kh, kw)
    k = kh * kw * c
    out = np.empty((n, oh, ow, f), dtype=np.result_type(x, w))
    if out.size == 0:
        return np.zeros(out.shape, out.dtype)
    if _by_fft(g, n, (h, wd), c, f, (kh, kw), (oh, ow), pads, x, w):
        return _fft_conv.conv_forward(x, w, (pads[0][0], pads[1][0]), (oh, ow),
                                      (g.dh, g.dw), parts, ctx)
    if kh == kw == 1 and g.sh == g.sw == 1 and not any(p for pr in pads for p in pr):
        x2, w2, o2 = x.reshape(-1, c), w.reshape(c, f), out.reshape(-1, f)
        parts = _parts(parts, 2.0 * out.size * c)
        intra_op.parallel_for(lambda lo, hi: np.matmul(x2[lo:hi], w2, out=o2[lo:hi]),
                              x2.shape[0], -(-x2.shape[0] // (4 * parts)), parts)
        return out
    return _im2col_matmul(_pad(x, pads), w.reshape(k, f), out, kh, kw, (g.sh, g.sw),
                          (g.dh, g.dw), parts)


def _conv_backprop_filter(x, dy, kh, kw, g: _ConvGeometry, parts: int, ctx=None):
    """d(loss)/d(filter) (kh, kw, C, F) from NHWC input `x` and out_backprop `dy`: per
    batch chunk, the patch matrix transposed times the chunk's out_backprop rows, summed
    over chunks (and over the ranges of the intra-op split)."""
    n, h, wd, c = x.shape
    f = dy.shape[3]
    (oh, ow), pads = g.resolve(h, wd, kh, kw)
    if dy.shape[1:3] != (oh, ow):
        raise _invalid(f"{g.name}: Size of out_backprop doesn't match computed: actual = "
                       f"{dy.shape[1:3]}, computed = {(oh, ow)}")
    k = kh * kw * c
    dtype = np.result_type(x, dy)
    if n * oh * ow == 0:
        return np.zeros((kh, kw, c, f), dtype)
    if _by_fft(g, n, (h, wd), c, f, (kh, kw), (oh, ow), pads, x, dy):
        return _fft_conv.conv_backprop_filter(x, dy, (kh, kw), (pads[0][0], pads[1][0]),
                                              (g.dh, g.dw), parts, ctx)
    patches = _patches(_pad(x, pads), kh, kw, oh, ow, (g.sh, g.sw), (g.dh, g.dw))

    nb = _chunk(n, oh * ow, k * x.itemsize)
    # Per thread: a patch buffer, the thread's running sum and a product buffer.
    state, states = intra_op.per_thread(
        lambda: (np.empty((min(nb, n), oh, ow, kh, kw, c), dtype=x.dtype),
                 np.zeros((k, f), dtype), np.empty((k, f), dtype)))

    def work(n0, n1):
        buf, acc, part = state()
        b = buf[:n1 - n0]
        np.copyto(b, patches[n0:n1])
        np.matmul(b.reshape(-1, k).T, dy[n0:n1].reshape(-1, f), out=part)
        acc += part

    intra_op.parallel_for(work, n, nb, _parts(parts, 2.0 * n * oh * ow * k * f))
    sums = [acc for _, acc, _ in states()]
    total = sums[0]
    for p in sums[1:]:
        total += p
    return total.reshape(kh, kw, c, f)


def _flipped_pads(h, kh, dh, oh, before):
    """(before, after) padding of out_backprop along one axis that turns a stride-1
    backprop-input into a VALID forward conv with the flipped filter, or None when the
    forward padding exceeds the window (out_backprop would need cropping)."""
    extent = (kh - 1) * dh
    pads = (extent - before, h + before - oh)
    return pads if min(pads) >= 0 else None


def _conv_backprop_input(shape, w, dy, g: _ConvGeometry, parts: int, ctx=None):
    """d(loss)/d(input) of NHWC `shape` from filter `w` and out_backprop `dy`.

    Stride 1 with enough input channels: a forward conv (im2col) of the padded
    out_backprop with the filter flipped in space and transposed in channels (one large
    product per chunk, no scatter). Otherwise `_col2im_backprop_input`."""
    n, h, wd, c = shape
    kh, kw, _, f = w.shape
    (oh, ow), pads = g.resolve(h, wd, kh, kw)
    if dy.shape[1:3] != (oh, ow) or dy.shape[0] != n:
        raise _invalid(f"{g.name}: Size of out_backprop doesn't match computed: actual = "
                       f"{dy.shape[1:3]}, computed = {(oh, ow)}")
    dtype = np.result_type(w, dy)
    if dy.size == 0 or n * h * wd * c == 0:
        return np.zeros((n, h, wd, c), dtype)
    if _by_fft(g, n, (h, wd), c, f, (kh, kw), (oh, ow), pads, w, dy):
        return _fft_conv.conv_backprop_input(shape, w, dy, (pads[0][0], pads[1][0]),
                                             (g.dh, g.dw), parts, ctx)
    if g.sh == g.sw == 1 and c >= _FLIP_MIN_CHANNELS:
        ph = _flipped_pads(h, kh, g.dh, oh, pads[0][0])
        pw = _flipped_pads(wd, kw, g.dw, ow, pads[1][0])
        if ph is not None and pw is not None:
            wf = np.ascontiguousarray(w[::-1, ::-1].transpose(0, 1, 3, 2)).reshape(-1, c)
            out = np.empty((n, h, wd, c), dtype)
            return _im2col_matmul(_pad(dy, [ph, pw]), wf, out, kh, kw, (1, 1),
                                  (g.dh, g.dw), parts)
    return _col2im_backprop_input(shape, w, dy, g, pads, (oh, ow), parts)


def _col2im_backprop_input(shape, w, dy, g: _ConvGeometry, pads, out_hw, parts: int):
    """Backprop-input by products and scatter: per chunk, out_backprop (m, F) times the
    filter transposed gives every tap's contribution, and each tap's columns are added into
    the strided slice of the padded input gradient that the tap read from."""
    n, h, wd, c = shape
    kh, kw, _, f = w.shape
    oh, ow = out_hw
    dtype = np.result_type(w, dy)
    (pt, pb), (pl, pr) = pads
    dxp = np.zeros((n, h + pt + pb, wd + pl + pr, c), dtype)
    k = kh * kw * c
    hspan, wspan = (oh - 1) * g.sh + 1, (ow - 1) * g.sw + 1
    # Single-threaded BLAS: one small product per tap (contiguous columns to add);
    # multi-threaded BLAS: one product per chunk (few BLAS calls, strided columns).
    by_tap = intra_op.blas_threads() == 1
    wt = np.ascontiguousarray(w.reshape(kh * kw, c, f).transpose(0, 2, 1) if by_tap
                              else w.reshape(k, f).T)

    nb = _chunk(n, oh * ow, k * dy.itemsize)
    rows = min(nb, n) * oh * ow
    buffer, _ = intra_op.per_thread(
        lambda: np.empty((kh * kw, rows, c) if by_tap else (rows, k), dtype))

    def work(n0, n1):
        m = (n1 - n0) * oh * ow
        d2 = dy[n0:n1].reshape(-1, f)
        if by_tap:
            b = buffer()[:, :m]
            np.matmul(d2[None], wt, out=b)
        else:
            b = buffer()[:m]
            np.matmul(d2, wt, out=b)
            b = b.reshape(n1 - n0, oh, ow, kh * kw, c)
        sub = dxp[n0:n1]
        for i in range(kh):
            for j in range(kw):
                tap = b[i * kw + j] if by_tap else b[:, :, :, i * kw + j]
                sub[:, i * g.dh:i * g.dh + hspan:g.sh, j * g.dw:j * g.dw + wspan:g.sw] \
                    += tap.reshape(n1 - n0, oh, ow, c)

    intra_op.parallel_for(work, n, nb, _parts(parts, 2.0 * dy.size * k))
    if pt or pb or pl or pr:
        return np.ascontiguousarray(dxp[:, pt:pt + h, pl:pl + wd])
    return dxp


def _groups(c_in: int, filter_depth: int) -> int:
    if filter_depth <= 0 or c_in % filter_depth:
        raise _invalid(f"input depth must be evenly divisible by filter depth: {c_in} vs "
                       f"{filter_depth}")
    return c_in // filter_depth


def _grouped(fn, groups, xs_axes, *arrays):
    """Applies `fn` per channel group: arrays[i] is split along xs_axes[i] (None: shared)."""
    if groups == 1:
        return fn(*arrays)
    outs = []
    for gi in range(groups):
        parts = []
        for a, axis in zip(arrays, xs_axes, strict=True):
            if axis is None:
                parts.append(a)
            else:
                size = a.shape[axis] // groups
                parts.append(np.take(a, range(gi * size, (gi + 1) * size), axis=axis))
        outs.append(fn(*parts))
    return np.concatenate(outs, axis=-1)


@kernel_factory("Conv2D", expensive=True)
@_checked
def _conv2d(node):
    geom = _ConvGeometry(node)

    def compute(ctx, x, w):
        if x.ndim != 4 or w.ndim != 4:
            raise _invalid("input and filter must be 4-dimensional")
        xh = _to_nhwc(x, geom.data_format)
        groups = _groups(xh.shape[3], w.shape[2])
        if w.shape[3] % groups:
            raise _invalid(f"filter out depth {w.shape[3]} is not a multiple of the number of "
                           f"groups {groups}")
        parts = intra_op.workers(ctx)
        out = _grouped(lambda a, b: _conv_forward(a, b, geom, parts, ctx), groups, (3, 3),
                       _widen(xh), _widen(w))
        return _from_nhwc(_narrow(out, x.dtype), geom.data_format)

    return compute


def _sizes(sizes, what):
    sizes = [int(s) for s in np.reshape(sizes, -1)]
    if len(sizes) != 4:
        raise _invalid(f"{what} must specify 4 dimensions, got {len(sizes)}")
    return sizes


@kernel_factory("Conv2DBackpropInput", expensive=True)
@_checked
def _conv2d_backprop_input(node):
    geom = _ConvGeometry(node)

    def compute(ctx, input_sizes, w, dy):
        sizes = _sizes(input_sizes, "input_sizes")
        if geom.data_format == "NCHW":
            sizes = [sizes[0], sizes[2], sizes[3], sizes[1]]
        dyh = _to_nhwc(dy, geom.data_format)
        groups = _groups(sizes[3], w.shape[2])
        shape = sizes[:3] + [sizes[3] // groups]
        parts = intra_op.workers(ctx)
        out = _grouped(lambda ww, d: _conv_backprop_input(shape, ww, d, geom, parts, ctx), groups,
                       (3, 3), _widen(w), _widen(dyh))
        return _from_nhwc(_narrow(out, dy.dtype), geom.data_format)

    return compute


@kernel_factory("Conv2DBackpropFilter", expensive=True)
@_checked
def _conv2d_backprop_filter(node):
    geom = _ConvGeometry(node)

    def compute(ctx, x, filter_sizes, dy):
        kh, kw, ci, co = _sizes(filter_sizes, "filter_sizes")
        xh, dyh = _to_nhwc(x, geom.data_format), _to_nhwc(dy, geom.data_format)
        groups = _groups(xh.shape[3], ci)
        if dyh.shape[3] != co:
            raise _invalid(f"Computed out_backprop depth {dyh.shape[3]} does not match "
                           f"filter_sizes {co}")
        parts = intra_op.workers(ctx)
        out = _grouped(lambda a, d: _conv_backprop_filter(a, d, kh, kw, geom, parts, ctx), groups,
                       (3, 3), _widen(xh), _widen(dyh))
        return _narrow(out, dy.dtype)

    return compute


# ---- pooling -----------------------------------------------------------------------------


class _PoolGeometry:
    """ksize/strides/padding of a pooling node over the H, W and C axes of NHWC data."""

    __slots__ = ("k", "s", "padding", "explicit", "data_format")

    def __init__(self, node):
        a = node.attrs
        self.data_format = a.get("data_format", "NHWC")
        order = (0, 2, 3, 1) if self.data_format == "NCHW" else (0, 1, 2, 3)
        ksize, strides = list(a["ksize"]), list(a["strides"])
        if len(ksize) != 4 or len(strides) != 4:
            raise _invalid("Sliding window ksize and strides fields must specify 4 dimensions")
        if ksize[order[0]] != 1 or strides[order[0]] != 1:
            raise errors.UnimplementedError(
                None, None, "Pooling is not yet supported on the batch dimension.")
        self.k = [ksize[i] for i in order[1:]]
        self.s = [strides[i] for i in order[1:]]
        self.padding = a["padding"]
        self.explicit = _explicit_pairs(a, order[1:]) + [(0, 0)]

    def resolve(self, shape):
        """(output shape, [(before, after)] for H, W, C) of an NHWC input `shape`."""
        outs, pads = [shape[0]], []
        for axis in range(3):
            o, b, a = _window(shape[axis + 1], self.k[axis], self.s[axis], 1, self.padding,
                              self.explicit[axis])
            outs.append(o)
            pads.append((b, a))
        return tuple(outs), pads

    def taps(self, out_shape):
        """Per window tap: the index of its strided slice into the padded input."""
        spans = [(o - 1) * s + 1 for o, s in zip(out_shape[1:], self.s, strict=True)]
        for i in range(self.k[0]):
            for j in range(self.k[1]):
                for d in range(self.k[2]):
                    yield (slice(None), slice(i, i + spans[0], self.s[0]),
                           slice(j, j + spans[1], self.s[1]), slice(d, d + spans[2], self.s[2]))


def _lowest(dtype):
    return -np.inf if dtype.kind == "f" or dtype in _LOW_PRECISION else np.iinfo(dtype).min


def _window_max(xp, geom: _PoolGeometry, out):
    """Writes into `out` the max (NaN ignored) of each window of padded `xp`."""
    reduce = np.fmax if xp.dtype.kind == "f" else np.maximum
    for t, index in enumerate(geom.taps(out.shape)):
        if t == 0:
            np.copyto(out, xp[index])
        else:
            reduce(out, xp[index], out=out)


def _max_pool_nhwc(x, geom: _PoolGeometry, parts: int = 1):
    """(max of each window, paddings, output shape) of NHWC `x`, batch-parallel when big."""
    out_shape, pads = geom.resolve(x.shape)
    out = np.empty(out_shape, x.dtype)
    if 0 in out_shape:
        return out, pads, out_shape
    xp = _pad(x, pads, _lowest(x.dtype))

    def work(lo, hi):
        _window_max(xp[lo:hi], geom, out[lo:hi])

    intra_op.parallel_rows(work, x.shape[0], x.size, parts)
    return out, pads, out_shape


@kernel_factory("MaxPool", expensive=True)
@_checked
def _max_pool(node):
    geom = _PoolGeometry(node)

    def compute(ctx, x):
        if x.ndim != 4:
            raise _invalid(f"input must be 4-dimensional, got {list(x.shape)}")
        xf = _widen(_to_nhwc(x, geom.data_format))
        out, _, _ = _max_pool_nhwc(xf, geom, intra_op.workers(ctx))
        return _from_nhwc(_narrow(out, x.dtype), geom.data_format)

    return compute


@kernel_factory("MaxPoolGrad", expensive=True)
@_checked
def _max_pool_grad(node):
    geom = _PoolGeometry(node)

    def compute(ctx, orig_input, orig_output, grad):
        # TF re-derives each window's argmax from orig_input; orig_output is not trusted.
        x = _widen(_to_nhwc(orig_input, geom.data_format))
        g = _widen(_to_nhwc(grad, geom.data_format))
        out_shape, pads = geom.resolve(x.shape)
        if g.shape != out_shape:
            raise _invalid(f"Expected grad shape to be {list(out_shape)}, but got "
                           f"{list(g.shape)}")
        xp = _pad(x, pads, _lowest(x.dtype))
        tiles = all(k == s for k, s in zip(geom.k, geom.s, strict=True))
        covered = tiles and all(o * k == n for o, k, n in
                                zip(out_shape[1:], geom.k, xp.shape[1:], strict=True))
        parts = intra_op.workers(ctx)
        if covered and g.size:
            dxp = _tiled_max_pool_grad(xp, g, geom.k, parts)
        else:
            dxp = np.zeros(xp.shape, g.dtype)
            if g.size:
                def work(lo, hi):
                    _route_to_first_max(xp[lo:hi], g[lo:hi], geom, dxp[lo:hi], tiles)

                intra_op.parallel_rows(work, x.shape[0], x.size, parts)
        crop = (slice(None),) + tuple(slice(b, b + n) for (b, _), n in
                                      zip(pads, x.shape[1:], strict=True))
        dx = np.ascontiguousarray(dxp[crop]) if any(b or a for b, a in pads) else dxp
        return _from_nhwc(_narrow(dx, grad.dtype), geom.data_format)

    return compute


def _first_max_index(taps, m, idx, gt, step):
    """Writes into `idx` the number of each window's first maximum among `taps` (arrays
    of the windows' elements, in TF's row-major window order), as TF's CPU argmax scan
    picks it: the first tap, replaced by a later one only when strictly greater, so a
    later NaN never takes the gradient and a NaN first tap keeps it. `m`, `gt` and `step`
    (of idx's dtype) are scratch arrays of the windows' shape. No masked (`where=`)
    assignments: NumPy runs those element by element."""
    first = None
    for t, tap in enumerate(taps):
        if t == 0:
            first = tap
            np.copyto(m, tap)
            idx.fill(0)
            continue
        np.greater(tap, m, out=gt)
        np.fmax(m, tap, out=m)  # == where(gt, tap, m) while m is not NaN
        # idx = where(gt, t, idx) as max(idx, t * gt): taps come in increasing order.
        np.multiply(gt, step.dtype.type(t), out=step)
        np.maximum(idx, step, out=idx)
    if m.dtype.kind == "f" and idx.size:
        np.equal(first, first, out=gt)  # a NaN first tap keeps the gradient
        np.multiply(idx, gt, out=idx)


def _index_dtype(count: int):
    return np.uint8 if count <= 256 else np.int32


def _bits(a: np.ndarray) -> np.ndarray:
    """`a` viewed as unsigned integers: `bits * mask` routes a value or writes exact zeros,
    where `a * mask` would turn an unrouted inf or NaN gradient into NaN."""
    return a.view(f"u{a.dtype.itemsize}")


def _tiled_max_pool_grad(xp, g, k, parts: int):
    """MaxPoolGrad for windows that tile padded `xp` exactly (ksize == strides, no partial
    windows). Per batch chunk, the input is copied once into tap-major order (one
    contiguous row per window tap), so the argmax scan and the routing of `g` run on
    contiguous arrays (NHWC taps are strided slices whose contiguous runs are only the
    channels long, and NumPy pays per run); the routed taps are copied back in one pass."""
    n, hp, wp, cp = xp.shape
    kh, kw, kc = k
    _, oh, ow, oc = g.shape
    count = kh * kw * kc
    dxp = np.empty(xp.shape, g.dtype)
    rows = max(1, min(n, intra_op.CHUNK_ELEMENTS // max(1, hp * wp * cp)))
    index_dtype = _index_dtype(count)

    def make():
        size = rows * oh * ow * oc
        return (np.empty((count, size), xp.dtype), np.empty((count, size), g.dtype),
                np.empty(size, xp.dtype), np.empty(size, index_dtype),
                np.empty(size, index_dtype), np.empty(size, bool))

    state, _ = intra_op.per_thread(make)

    def tap_major(a, lo, hi):
        """(kh, kw, kc, rows, oh, ow, oc) view of NHWC rows lo:hi of padded-shaped `a`."""
        return a[lo:hi].reshape(hi - lo, oh, kh, ow, kw, oc, kc).transpose(2, 4, 6, 0, 1, 3, 5)

    def work(lo, hi):
        xbuf, dbuf, m, idx, step, hit = state()
        size = (hi - lo) * oh * ow * oc
        taps, routed = xbuf[:, :size], _bits(dbuf[:, :size])
        np.copyto(taps.reshape(kh, kw, kc, hi - lo, oh, ow, oc), tap_major(xp, lo, hi))
        m, idx, step, hit = m[:size], idx[:size], step[:size], hit[:size]
        _first_max_index(taps, m, idx, hit, step)
        gbits = _bits(g[lo:hi].reshape(-1))
        for t in range(count):
            np.equal(idx, t, out=hit)
            np.multiply(gbits, hit, out=routed[t])
        np.copyto(tap_major(dxp, lo, hi), dbuf[:, :size].reshape(kh, kw, kc, hi - lo, oh,
                                                                   ow, oc))

    if xp.size < intra_op.MIN_ELEMENTS:
        parts = 1
    intra_op.parallel_for(work, n, rows, parts)
    return dxp


def _route_to_first_max(xp, g, geom: _PoolGeometry, dxp, tiles: bool):
    """Adds to zeroed `dxp` (padded-input-shaped) each window's `g` at the window's first
    maximum (`_first_max_index`). Windows that tile the input without overlap write their
    taps directly; overlapping ones accumulate."""
    taps = list(geom.taps(g.shape))
    index_dtype = _index_dtype(len(taps))
    m = np.empty(g.shape, xp.dtype)
    idx, step = np.empty(g.shape, index_dtype), np.empty(g.shape, index_dtype)
    hit = np.empty(g.shape, bool)
    _first_max_index([xp[index] for index in taps], m, idx, hit, step)
    gbits, routed = _bits(g), np.empty(g.shape, g.dtype)
    for t, index in enumerate(taps):
        np.equal(idx, t, out=hit)
        np.multiply(gbits, hit, out=_bits(routed))
        if tiles:
            dxp[index] = routed
        else:
            dxp[index] += routed


def _avg_counts(geom: _PoolGeometry, in_shape, out_shape, pads):
    """Number of unpadded input elements in each window, broadcastable to out_shape."""
    counts = []
    for axis in range(3):
        o, s, k = out_shape[axis + 1], geom.s[axis], geom.k[axis]
        start = np.arange(o) * s - pads[axis][0]
        c = np.minimum(start + k, in_shape[axis + 1]) - np.maximum(start, 0)
        counts.append(c)
    return counts[0][:, None, None] * counts[1][None, :, None] * counts[2][None, None, :]


@kernel_factory("AvgPool", expensive=True)
@_checked
def _avg_pool(node):
    geom = _PoolGeometry(node)

    def compute(ctx, x):
        if x.ndim != 4:
            raise _invalid(f"input must be 4-dimensional, got {list(x.shape)}")
        xf = _widen(_to_nhwc(x, geom.data_format))
        out_shape, pads = geom.resolve(xf.shape)
        if 0 in out_shape:
            return _from_nhwc(np.zeros(out_shape, x.dtype), geom.data_format)
        xp = _pad(xf, pads)
        acc = None
        for index in geom.taps(out_shape):
            acc = xp[index].copy() if acc is None else np.add(acc, xp[index], out=acc)
        acc /= _avg_counts(geom, xf.shape, out_shape, pads).astype(acc.dtype)
        return _from_nhwc(_narrow(acc, x.dtype), geom.data_format)

    return compute


@kernel_factory("AvgPoolGrad", expensive=True)
@_checked
def _avg_pool_grad(node):
    geom = _PoolGeometry(node)

    def compute(ctx, orig_input_shape, grad):
        shape = _sizes(orig_input_shape, "orig_input_shape")
        if geom.data_format == "NCHW":
            shape = [shape[0], shape[2], shape[3], shape[1]]
        g = _widen(_to_nhwc(grad, geom.data_format))
        out_shape, pads = geom.resolve(shape)
        if g.shape != out_shape:
            raise _invalid(f"Expected grad shape to be {list(out_shape)}, but got "
                           f"{list(g.shape)}")
        padded = [shape[0]] + [n + b + a for n, (b, a) in zip(shape[1:], pads, strict=True)]
        dxp = np.zeros(padded, g.dtype)
        share = g / _avg_counts(geom, shape, out_shape, pads).astype(g.dtype)
        for index in geom.taps(out_shape):
            dxp[index] += share
        crop = (slice(None),) + tuple(slice(b, b + n) for (b, _), n in
                                      zip(pads, shape[1:], strict=True))
        dx = np.ascontiguousarray(dxp[crop]) if any(b or a for b, a in pads) else dxp
        return _from_nhwc(_narrow(dx, grad.dtype), geom.data_format)

    return compute


@kernel_factory("MaxPoolGradGrad", expensive=True)
@_checked
def _max_pool_grad_grad(node):
    geom = _PoolGeometry(node)

    def compute(ctx, orig_input, orig_output, grad):
        x = _widen(_to_nhwc(orig_input, geom.data_format))
        g = _widen(_to_nhwc(grad, geom.data_format))
        if g.shape != x.shape:
            raise _invalid(f"grad must have the shape of orig_input {list(x.shape)}, got "
                           f"{list(g.shape)}")
        m, pads, out_shape = _max_pool_nhwc(x, geom)
        xp = _pad(x, pads, _lowest(x.dtype))
        gp = _pad(g, pads)
        out = np.zeros(out_shape, g.dtype)
        taken = np.zeros(out_shape, bool)
        for index in geom.taps(out_shape):
            hit = xp[index] == m
            hit &= ~taken
            taken |= hit
            np.add(out, gp[index], out=out, where=hit)
        return _from_nhwc(_narrow(out, grad.dtype), geom.data_format)

    return compute
