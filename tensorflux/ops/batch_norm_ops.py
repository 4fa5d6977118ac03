"""Fused batch normalization: FusedBatchNorm, FusedBatchNormV2, FusedBatchNormV3 and
their gradient ops (FusedBatchNormGrad, ...V2, ...V3), with the TF1 wrapper
`tf.nn.fused_batch_norm`. Kernels are in tensorflux/kernels/cpu/batch_norm_ops.py.

Contract (TF's CPU kernels):
- training (`is_training`): y = (x - m) / sqrt(v + epsilon) * scale + offset with m, v
  the batch mean and biased variance over every axis but the channel axis;
  `batch_mean`/`batch_variance` are m and the Bessel-corrected v * n / (n - 1), each
  blended as (1 - f) * input + f * batch when `exponential_avg_factor` f is not 1 (the
  `mean`/`variance` inputs are then the running values; with f = 1 they are unused and
  may be empty); `reserve_space_1`/`_2` are m and the biased v, for the gradient;
  V3's `reserve_space_3` is empty.
- inference: y uses the `mean` and `variance` inputs, which are also returned.
The gradient ops take y_backprop, x, scale and the reserve spaces (or, for an inference
node, the population mean and variance) and return x, scale and offset backprops and
empty reserve spaces; their own gradient (second derivatives) is built from ops, the batch
statistics recomputed from x as TF does.
"""

from __future__ import annotations

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework.common_shapes import checked_dims, merge_dim
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient, not_differentiable
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, constant_op, math_ops, reduction_ops, unary_ops

__all__ = ["fused_batch_norm"]

# The attrs go in TF's op-def order: types, epsilon, [exponential_avg_factor,] data_format,
# is_training (gen_nn_ops' positional arguments follow it).
_EPS, _TRAIN = "epsilon: float = 0.0001", "is_training: bool = true"
_FORMAT4 = "data_format: {'NHWC', 'NCHW'} = \"NHWC\""
_FORMAT45 = "data_format: {'NHWC', 'NCHW', 'NDHWC', 'NCDHW'} = \"NHWC\""
_AVG = "exponential_avg_factor: float = 1"


def _channel_dim(op, x):
    fmt = op.attrs["data_format"]
    rank = len(fmt)
    dims = checked_dims(x, rank=rank) or [None] * rank
    return dims, dims[1 if fmt[1] == "C" else rank - 1]


def _vector(t, c, what):
    dims = checked_dims(t, rank=1)
    if dims is not None and dims[0] is not None and c is not None and dims[0] != c:
        raise ValueError(f"Dimensions must be equal, but are {dims[0]} and {c}: {what} and "
                         "the channel dimension")
    return merge_dim(c, dims[0]) if dims is not None else c


def _fused_shape(op):
    dims, c = _channel_dim(op, op.inputs[0])
    c = _vector(op.inputs[1], c, "scale")
    c = _vector(op.inputs[2], c, "offset")
    if not op.attrs["is_training"] or op.attrs.get("exponential_avg_factor", 1.0) != 1.0:
        c = _vector(op.inputs[3], c, "mean")
        c = _vector(op.inputs[4], c, "variance")
    out = [dims] + [[c]] * 4
    return out + [tensor_shape.unknown_shape()] if len(op.outputs) == 6 else out


def _grad_shape(op):
    dims, c = _channel_dim(op, op.inputs[1])
    checked_dims(op.inputs[0], rank=len(dims))
    for i in (2, 3, 4):
        c = _vector(op.inputs[i], c, op.inputs[i].name)
    return [dims, [c], [c], [0], [0]]


_IN = ["x: T", "scale: U", "offset: U", "mean: U", "variance: U"]
_OUT = ["y: T", "batch_mean: U", "batch_variance: U", "reserve_space_1: U",
        "reserve_space_2: U"]
_GRAD_IN = ["y_backprop: T", "x: T", "scale: float", "reserve_space_1: U",
            "reserve_space_2: U"]
_GRAD_OUT = ["x_backprop: T", "scale_backprop: U", "offset_backprop: U",
             "reserve_space_3: U", "reserve_space_4: U"]


def _t_only(specs):
    return [s.replace(": U", ": T") for s in specs]


define_op("FusedBatchNorm", inputs=_t_only(_IN), outputs=_t_only(_OUT),
          attrs=["T: {float}", _EPS, _AVG, _FORMAT4, _TRAIN], shape_fn=_fused_shape)
define_op("FusedBatchNormV2", inputs=_IN, outputs=_OUT,
          attrs=["T: {half, bfloat16, float}", "U: {float}", _EPS, _AVG, _FORMAT4, _TRAIN],
          shape_fn=_fused_shape)
define_op("FusedBatchNormV3", inputs=_IN, outputs=_OUT + ["reserve_space_3: U"],
          attrs=["T: {half, bfloat16, float}", "U: {bfloat16, float}", _EPS, _AVG, _FORMAT45,
                 _TRAIN], shape_fn=_fused_shape)
define_op("FusedBatchNormGrad", inputs=
          ["y_backprop: T", "x: T", "scale: T", "reserve_space_1: T", "reserve_space_2: T"],
          outputs=_t_only(_GRAD_OUT), attrs=["T: {float}", _EPS, _FORMAT4, _TRAIN],
          shape_fn=_grad_shape)
define_op("FusedBatchNormGradV2", inputs=_GRAD_IN, outputs=_GRAD_OUT,
          attrs=["T: {half, bfloat16, float}", "U: {float}", _EPS, _FORMAT4, _TRAIN],
          shape_fn=_grad_shape)
define_op("FusedBatchNormGradV3", inputs=_GRAD_IN + ["reserve_space_3: U"],
          outputs=_GRAD_OUT[:3] + ["reserve_space_4: U", "reserve_space_5: U"],
          attrs=["T: {half, bfloat16, float}", "U: {float}", _EPS, _FORMAT45, _TRAIN],
          shape_fn=_grad_shape)

# A batch norm with its ReLU, and the gradient with the ReLU's gradient folded into its
# y_backprop, as nodes of one (made only by the graph optimizer's rewrite of a step graph,
# runtime/graph_optimizer.py `fuse_batch_norm_relu`, as TF's grappler remapper makes its
# _FusedBatchNormEx and _FusedBatchNormGradEx, with TF's signatures; the graph is already
# differentiated, so they have no gradient). Only activation_mode "Relu" and no side input
# are made. _FusedBatchNormEx's y is relu(FusedBatchNormV3's y); _FusedBatchNormGradEx's
# y_backprop is the ReLU's incoming gradient and `y` the ReLU's output: its backprops are
# FusedBatchNormGradV3's of ReluGrad(y_backprop, y).
_ACTIVATION = "activation_mode: string = \"Identity\""
define_op("_FusedBatchNormEx", inputs=_IN + ["side_input: num_side_inputs * T"],
          outputs=_OUT + ["reserve_space_3: U"],
          attrs=["T: {half, bfloat16, float}", "U: {float}", _EPS, _AVG, _FORMAT4,
                 "num_side_inputs: int >= 0 = 0", _ACTIVATION, _TRAIN],
          shape_fn=_fused_shape)
define_op("_FusedBatchNormGradEx",
          inputs=_GRAD_IN + ["reserve_space_3: U", "offset: float", "y: T",
                             "side_input: num_side_inputs * T"],
          outputs=_GRAD_OUT[:3] + ["reserve_space_4: U", "reserve_space_5: U",
                                   "side_input_backprop: num_side_inputs * T"],
          attrs=["T: {half, bfloat16, float}", "U: {float}", _EPS, _FORMAT4,
                 "num_side_inputs: int >= 0 = 0", _ACTIVATION, _TRAIN],
          shape_fn=_grad_shape)
not_differentiable("_FusedBatchNormEx", "_FusedBatchNormGradEx")


def fused_batch_norm(x, scale, offset, mean=None, variance=None, epsilon=0.001,
                     data_format="NHWC", is_training=True, name=None,
                     exponential_avg_factor=1.0):
    """Batch normalization in one op (`tf.nn.fused_batch_norm`): see the module docstring.

    Args:
      x: a 4-D (NHWC/NCHW) or 5-D (NDHWC/NCDHW) tensor.
      scale, offset: 1-D tensors, one entry per channel.
      mean, variance: the population statistics (inference), or the running ones blended
        with the batch's when `exponential_avg_factor` is not 1; None otherwise.
      epsilon: added to the variance (at least 1.001e-5, as TF sets for cuDNN).
      data_format: where the channel axis is.
      is_training: batch statistics (True) or the given ones (False).

    Returns:
      (y, batch_mean, batch_variance): see the module docstring.

    Raises:
      ValueError: `mean`/`variance` missing where needed, shapes that disagree.
    """
    if (not is_training or exponential_avg_factor != 1.0) and (mean is None or
                                                               variance is None):
        raise ValueError("Both `mean` and `variance` must be a 1D tensor when is_training is "
                         "False or exponential_avg_factor != 1.0. Received: "
                         f"mean {mean!r} and variance {variance!r}")
    x = convert_to_tensor(x, name="input")
    scale = convert_to_tensor(scale, name="scale")
    offset = convert_to_tensor(offset, name="offset")
    mean = constant_op.constant([]) if mean is None else mean
    variance = constant_op.constant([]) if variance is None else variance
    epsilon = max(float(epsilon), 1.001e-5)
    outs = apply_op("FusedBatchNormV3", x=x, scale=scale, offset=offset, mean=mean,
                    variance=variance, epsilon=epsilon, data_format=data_format,
                    is_training=is_training, exponential_avg_factor=exponential_avg_factor,
                    name=name or "FusedBatchNormV3")
    return outs[0], outs[1], outs[2]


_GRAD_OF = {"FusedBatchNorm": "FusedBatchNormGrad", "FusedBatchNormV2": "FusedBatchNormGradV2",
            "FusedBatchNormV3": "FusedBatchNormGradV3"}


def _fused_batch_norm_grad(op, grad_y, *unused):
    """x, scale and offset backprops; a training node's gradient treats the batch
    statistics as functions of x (the reserve spaces carry them), an inference node's the
    population statistics as constants."""
    del unused
    training = op.attrs["is_training"]
    stats = (op.outputs[3], op.outputs[4]) if training else (op.inputs[3], op.inputs[4])
    args = dict(y_backprop=grad_y, x=op.inputs[0], scale=op.inputs[1],
                reserve_space_1=stats[0], reserve_space_2=stats[1],
                epsilon=op.attrs["epsilon"], data_format=op.attrs["data_format"],
                is_training=training)
    if op.type == "FusedBatchNormV3":
        args["reserve_space_3"] = op.outputs[5]
    dx, dscale, doffset = apply_op(_GRAD_OF[op.type], **args)[:3]
    return [dx, dscale, doffset, None, None]


for _op in _GRAD_OF:
    gradient(_op)(_fused_batch_norm_grad)


def _stats_axes(op, x):
    fmt = op.attrs["data_format"].decode() if isinstance(op.attrs["data_format"], bytes) \
        else op.attrs["data_format"]
    rank = len(fmt)
    channel = 1 if fmt[1] == "C" else rank - 1
    shape = [1] * rank
    shape[channel] = -1
    return [i for i in range(rank) if i != channel], shape


def _fused_batch_norm_grad_grad(op, g_dx, g_dscale, g_doffset, *unused):
    """Second derivatives: the vector-Jacobian product of the gradient op (dx, dscale,
    doffset as functions of y_backprop, x and scale; a training node's batch statistics
    recomputed from x, as TF does) with the incoming (g_dx, g_dscale, g_doffset).

    With per channel a = 1/sqrt(var + eps), xo = x - mean, dyo = dy - mean(dy), N the
    count: dx = s a (dyo - a^2 mean(dy xo) xo), dscale = a sum(dy xo), doffset = sum(dy).
    """
    del unused
    dy, x, scale = op.inputs[0], op.inputs[1], op.inputs[2]
    axes, bshape = _stats_axes(op, x)
    f32 = dtypes.float32
    dy32, x32 = math_ops.cast(dy, f32), math_ops.cast(x, f32)
    gx = math_ops.cast(g_dx, f32) if g_dx is not None else array_ops.zeros_like(x32)
    gs = array_ops.reshape(g_dscale, bshape) if g_dscale is not None else 0.0
    go = array_ops.reshape(g_doffset, bshape) if g_doffset is not None else 0.0
    s = array_ops.reshape(scale, bshape)
    eps = op.attrs["epsilon"]

    def total(t):
        return reduction_ops.reduce_sum(t, axes, keepdims=True)

    def mean(t):
        return reduction_ops.reduce_mean(t, axes, keepdims=True)

    if op.attrs["is_training"]:
        n = math_ops.cast(array_ops.size(x32), f32) / math_ops.cast(array_ops.size(scale), f32)
        xo = x32 - mean(x32)
        a = unary_ops.rsqrt(mean(xo * xo) + eps)
        dyo, gxo = dy32 - mean(dy32), gx - mean(gx)
        s1, q = total(dy32 * xo), total(gx * xo)
        a3 = a * a * a
        d_dy = go + gs * a * xo + s * a * gxo - s * a3 * q * xo / n
        d_scale = total(gx * a * (dyo - a * a * (s1 / n) * xo))
        d_a = s * total(gx * dyo) - 3.0 * s * a * a * (s1 / n) * q + gs * s1
        d_x = (-d_a * a3 * xo / n + (gs * a - s * a3 * q / n) * dyo - s * a3 * s1 / n * gxo)
    else:
        a = array_ops.reshape(unary_ops.rsqrt(op.inputs[4] + eps), bshape)
        centered = x32 - array_ops.reshape(op.inputs[3], bshape)
        d_dy = gx * s * a + gs * centered * a + go
        d_scale = total(gx * dy32 * a)
        d_x = gs * dy32 * a
    d_scale = array_ops.reshape(d_scale, [-1])
    nones = [None] * (len(op.inputs) - 3)
    return [math_ops.cast(d_dy, dy.dtype), math_ops.cast(d_x, x.dtype),
            math_ops.cast(d_scale, scale.dtype)] + nones


for _op in _GRAD_OF.values():
    gradient(_op)(_fused_batch_norm_grad_grad)
