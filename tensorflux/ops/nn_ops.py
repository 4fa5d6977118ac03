"""Neural-network ops: activations, softmax and cross entropy, BiasAdd, convolution, pooling,
L2Loss, LRN, InTopKV2, ApproxTopK.

Each op's definition, shape function, TF1 wrapper and gradient sit together; kernels are in
tensorflux/kernels/cpu/nn_ops.py. Convolutions and pools are in conv_ops.py and
pooling_ops.py (kernels in kernels/cpu/conv_ops.py and pooling_ops.py). The TF1 functions that
compose these ops with others (the cross-entropy wrappers, dropout, moments, ...) are in
tensorflux/nn/nn_impl.py. Gradients
are real backward ops where TensorFlow has them (ReluGrad, BiasAddGrad, Conv2DBackpropInput,
MaxPoolGrad, ...).
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import common_shapes, dtypes, errors, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.common_shapes import checked_dims, merge_dim
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient, not_differentiable
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, comparison_ops, math_ops, reduction_ops, unary_ops
from tensorflux.ops.gather_ops import scatter_top_k_grad

# The TF1 public names of this module (tf.nn.*).
__all__ = [
    "relu", "relu6", "elu", "selu", "softplus", "leaky_relu", "softmax", "log_softmax",
    "bias_add", "l2_loss", "lrn", "local_response_normalization", "in_top_k",
]

_FLOATS = "T: {half, bfloat16, float, double}"
_RELU_TYPES = ("T: {float, double, int32, uint8, int16, int8, int64, bfloat16, uint16, half, "
               "uint32, uint64")
_BIAS_TYPES = ("T: {float, double, int32, uint8, int16, int8, complex64, int64, qint8, quint8, "
               "qint32, bfloat16, qint16, quint16, uint16, complex128, half, uint32, uint64}")

# ---- shape helpers (TF's shape-inference messages) ---------------------------------------


def _merge_inputs(op):
    """Output 0 has the merged shape of all inputs (the *Grad activation ops)."""
    return common_shapes.merge_all_inputs(op)


def _unknown_rank_shape(rank):
    return tensor_shape.unknown_shape(rank=rank)


# ---- elementwise activations -------------------------------------------------------------


def _activation(op_type, types, grad_type, grad_uses="features", extra_attrs=()):
    """Defines `op_type` (features -> activations) and its backward op `grad_type`
    (gradients, features|outputs -> backprops), both elementwise."""
    attrs = list(extra_attrs) + [types]
    define_op(op_type, inputs=["features: T"], outputs=["activations: T"], attrs=attrs,
              shape_fn=common_shapes.unchanged)
    define_op(grad_type, inputs=["gradients: T", f"{grad_uses}: T"], outputs=["backprops: T"],
              attrs=attrs, shape_fn=_merge_inputs)


_activation("Relu", _RELU_TYPES + ", qint8}", "ReluGrad")
_activation("Relu6", _RELU_TYPES + "}", "Relu6Grad")
_activation("Elu", _FLOATS, "EluGrad", grad_uses="outputs")
_activation("Selu", _FLOATS, "SeluGrad", grad_uses="outputs")
_activation("Softplus", _FLOATS, "SoftplusGrad")
_activation("LeakyRelu", _FLOATS + " = DT_FLOAT", "LeakyReluGrad",
            extra_attrs=["alpha: float = 0.2"])


def relu(features, name: str | None = None):
    """max(features, 0) (`tf.nn.relu`)."""
    return apply_op("Relu", features=features, name=name or "Relu")


def relu6(features, name: str | None = None):
    """min(max(features, 0), 6) (`tf.nn.relu6`)."""
    return apply_op("Relu6", features=features, name=name or "Relu6")


def elu(features, name: str | None = None):
    """exp(features) - 1 where features < 0, else features (`tf.nn.elu`)."""
    return apply_op("Elu", features=features, name=name or "Elu")


def selu(features, name: str | None = None):
    """Scaled exponential linear unit (`tf.nn.selu`)."""
    return apply_op("Selu", features=features, name=name or "Selu")


def softplus(features, name: str | None = None):
    """log(exp(features) + 1) (`tf.nn.softplus`)."""
    return apply_op("Softplus", features=features, name=name or "Softplus")


def leaky_relu(features, alpha=0.2, name: str | None = None):
    """features where features > 0, else alpha * features (`tf.nn.leaky_relu`).

    Integer features are cast to float32 first, as in TensorFlow.
    """
    with graph_lib.name_scope(name, "LeakyRelu", [features]) as scope:
        features = convert_to_tensor(features, name="features")
        if features.dtype.is_integer:
            features = math_ops.cast(features, dtypes.float32)
        if isinstance(alpha, np.ndarray):
            alpha = alpha.item()
        return apply_op("LeakyRelu", features=features, alpha=float(alpha), name=scope)


@gradient("Relu")
def _relu_grad(op, grad):
    return [apply_op("ReluGrad", gradients=grad, features=op.outputs[0])]


@gradient("Relu6")
def _relu6_grad(op, grad):
    return [apply_op("Relu6Grad", gradients=grad, features=op.outputs[0])]


@gradient("Elu")
def _elu_grad(op, grad):
    return [apply_op("EluGrad", gradients=grad, outputs=op.outputs[0])]


@gradient("Selu")
def _selu_grad(op, grad):
    return [apply_op("SeluGrad", gradients=grad, outputs=op.outputs[0])]


@gradient("Softplus")
def _softplus_grad(op, grad):
    return [apply_op("SoftplusGrad", gradients=grad, features=op.inputs[0])]


@gradient("LeakyRelu")
def _leaky_relu_grad(op, grad):
    return [apply_op("LeakyReluGrad", gradients=grad, features=op.inputs[0],
                     alpha=op.attrs["alpha"])]


# Second order: the backward ops are linear in `gradients` with the same mask, so their
# gradient w.r.t. `gradients` is the backward op again; w.r.t. the features it is zero almost
# everywhere (None), except for the smooth Elu, Selu and Softplus.
@gradient("ReluGrad")
def _relu_grad_grad(op, grad):
    return [apply_op("ReluGrad", gradients=grad, features=op.inputs[1]), None]


@gradient("Relu6Grad")
def _relu6_grad_grad(op, grad):
    return [apply_op("Relu6Grad", gradients=grad, features=op.inputs[1]), None]


@gradient("LeakyReluGrad")
def _leaky_relu_grad_grad(op, grad):
    return [apply_op("LeakyReluGrad", gradients=grad, features=op.inputs[1],
                     alpha=op.attrs["alpha"]), None]


@gradient("EluGrad")
def _elu_grad_grad(op, grad):
    y = op.inputs[1]
    negative = comparison_ops.less(y, array_ops.zeros_like(y))
    d_y = comparison_ops.where(negative, grad * op.inputs[0], array_ops.zeros_like(y))
    return [apply_op("EluGrad", gradients=grad, outputs=y), d_y]


@gradient("SeluGrad")
def _selu_grad_grad(op, grad):
    y = op.inputs[1]
    negative = comparison_ops.less(y, array_ops.zeros_like(y))
    d_y = comparison_ops.where(negative, grad * op.inputs[0], array_ops.zeros_like(y))
    return [apply_op("SeluGrad", gradients=grad, outputs=y), d_y]


@gradient("SoftplusGrad")
def _softplus_grad_grad(op, grad):
    dy, x = op.inputs
    ddy = apply_op("SoftplusGrad", gradients=grad, features=x)
    d2x = grad * dy / (unary_ops.exp(-x) + 2.0 + unary_ops.exp(x))
    return [ddy, d2x]


# ---- Softmax, LogSoftmax -----------------------------------------------------------------


def _rank_at_least_1(op):
    checked_dims(op.inputs[0], at_least=1)
    return [op.inputs[0].shape]


define_op("Softmax", inputs=["logits: T"], outputs=["softmax: T"], attrs=[_FLOATS],
          shape_fn=_rank_at_least_1, flops="unary:5")
define_op("LogSoftmax", inputs=["logits: T"], outputs=["logsoftmax: T"], attrs=[_FLOATS],
          shape_fn=_rank_at_least_1)


def _along_axis(op_type, logits, axis, name):
    """`op_type` (which works on the last axis) applied along `axis`: the axis is swapped
    with the last one before and after, as TensorFlow's `_wrap_2d_function` does."""
    logits = convert_to_tensor(logits)
    ndims = logits.shape.ndims
    if axis == -1 or (ndims is not None and axis == ndims - 1):
        return apply_op(op_type, logits=logits, name=name or op_type)
    if ndims is None:
        raise ValueError(f"{op_type} along axis {axis} needs a tensor of known rank")
    if not -ndims <= axis < ndims:
        raise errors.InvalidArgumentError(
            None, None, f"`dim` must be in the range [{-ndims}, {ndims}) where {ndims} is the "
            f"number of dimensions in the input. Received: dim={axis}")
    axis %= ndims
    perm = list(range(ndims))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    out = apply_op(op_type, logits=array_ops.transpose(logits, perm))
    out = array_ops.transpose(out, perm, name=name)
    out.set_shape(logits.shape)
    return out


def _axis_arg(axis, dim):
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'.")
    axis = dim if axis is None else axis
    return -1 if axis is None else axis


def softmax(logits, axis=None, name: str | None = None, dim=None):
    """exp(logits) / reduce_sum(exp(logits), axis) (`tf.nn.softmax`; `dim` is TF1's name
    for `axis`)."""
    return _along_axis("Softmax", logits, _axis_arg(axis, dim), name)


def log_softmax(logits, axis=None, name: str | None = None, dim=None):
    """logits - log(reduce_sum(exp(logits), axis)) (`tf.nn.log_softmax`)."""
    return _along_axis("LogSoftmax", logits, _axis_arg(axis, dim), name)


@gradient("Softmax")
def _softmax_grad(op, grad):
    y = op.outputs[0]
    return [(grad - reduction_ops.reduce_sum(grad * y, -1, keepdims=True)) * y]


@gradient("LogSoftmax")
def _log_softmax_grad(op, grad):
    p = unary_ops.exp(op.outputs[0])
    return [grad - reduction_ops.reduce_sum(grad, -1, keepdims=True) * p]


# ---- cross entropy -----------------------------------------------------------------------


def _xent_shape(op):
    logits = checked_dims(op.inputs[0], rank=2)
    labels = op.inputs[1].shape
    if op.type == "SparseSoftmaxCrossEntropyWithLogits":
        labels = checked_dims(op.inputs[1], rank=1)
        batch = merge_dim(logits[0] if logits else None, labels[0] if labels else None)
        classes = logits[1] if logits else None
    else:
        labels = checked_dims(op.inputs[1], rank=2)
        logits = logits or [None, None]
        labels = labels or [None, None]
        if None not in logits + labels and all(
                a == b or 1 in (a, b) for a, b in zip(logits, labels, strict=True)):
            # Both known and broadcastable (TF's kernel broadcasts, e.g. labels [1, K]).
            batch, classes = (max(a, b) if 0 not in (a, b) else 0
                              for a, b in zip(logits, labels, strict=True))
        else:
            batch, classes = merge_dim(logits[0], labels[0]), merge_dim(logits[1], labels[1])
    return [[batch], [batch, classes]]


define_op("SoftmaxCrossEntropyWithLogits", inputs=["features: T", "labels: T"],
          outputs=["loss: T", "backprop: T"], attrs=[_FLOATS], shape_fn=_xent_shape)
define_op("SparseSoftmaxCrossEntropyWithLogits", inputs=["features: T", "labels: Tlabels"],
          outputs=["loss: T", "backprop: T"],
          attrs=[_FLOATS, "Tlabels: {int32, int64} = DT_INT64"], shape_fn=_xent_shape)


def _is_zero(t) -> bool:
    """True for a missing gradient or one the gradient driver filled with zeros
    (`zeros_like` of a tensor of known shape is a Fill of a constant 0: TF's driver marks
    such tensors `_is_zeros_tensor` and its xent gradient skips them the same way)."""
    if t is None:
        return True
    if isinstance(t, Tensor):
        if t.op.type in ("ZerosLike", "Zeros"):
            return True
        if t.op.type == "Fill":
            fill = common_shapes.constant_value(t.op.inputs[1])
            return fill is not None and not np.any(fill)
        value = common_shapes.constant_value(t)
        return value is not None and not np.any(value)
    return False


def _xent_logits_grad(op, grad_loss, grad_grad):
    """Gradient of either cross-entropy op w.r.t. its logits: grad_loss times the op's own
    backprop output, plus (when the backprop output itself receives a gradient) the softmax
    Jacobian applied to that gradient."""
    grad = array_ops.expand_dims(grad_loss, -1) * op.outputs[1]
    if not _is_zero(grad_grad):
        p = apply_op("Softmax", logits=op.inputs[0])
        grad = grad + (grad_grad - reduction_ops.reduce_sum(grad_grad * p, -1, keepdims=True)) * p
    return grad


@gradient("SoftmaxCrossEntropyWithLogits")
def _softmax_xent_grad(op, grad_loss, grad_grad=None):
    log_p = apply_op("LogSoftmax", logits=op.inputs[0])
    return [_xent_logits_grad(op, grad_loss, grad_grad),
            array_ops.expand_dims(grad_loss, -1) * -log_p]


@gradient("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_softmax_xent_grad(op, grad_loss, grad_grad=None):
    return [_xent_logits_grad(op, grad_loss, grad_grad), None]


# ---- BiasAdd, BiasAddGrad ----------------------------------------------------------------


def _bias_channel(op, dims):
    if op.attrs["data_format"] == "NCHW":
        if dims is not None and len(dims) < 3:
            raise ValueError(f"Shape must be at least rank 3 but is rank {len(dims)}")
        return 1
    return -1


def _bias_add_shape(op):
    value = checked_dims(op.inputs[0], at_least=2)
    bias = checked_dims(op.inputs[1], rank=1)
    if value is None:
        return [tensor_shape.unknown_shape()]
    axis = _bias_channel(op, value)
    value[axis] = merge_dim(value[axis], bias[0] if bias else None)
    return [value]


def _bias_add_grad_shape(op):
    dims = checked_dims(op.inputs[0], at_least=2)
    if dims is None:
        return [[None]]
    return [[dims[_bias_channel(op, dims)]]]


define_op("BiasAdd", inputs=["value: T", "bias: T"], outputs=["output: T"],
          attrs=[_BIAS_TYPES, "data_format: {'NHWC', 'NCHW'} = \"NHWC\""],
          shape_fn=_bias_add_shape, flops="unary")
define_op("BiasAddGrad", inputs=["out_backprop: T"], outputs=["output: T"],
          attrs=[_BIAS_TYPES, "data_format: {'NHWC', 'NCHW'} = \"NHWC\""],
          shape_fn=_bias_add_grad_shape, flops="reduce")


def bias_add(value, bias, data_format=None, name: str | None = None):
    """`value` plus the 1-D `bias` along its channel dimension (`tf.nn.bias_add`).

    Args:
      value: a tensor of rank >= 2 (>= 3 for "NC..." formats).
      bias: a 1-D tensor of the channel size and the dtype of `value`.
      data_format: None or "N...C" (channel last) or "NC..." (channel second).

    Raises:
      ValueError: a `data_format` of another form, or shapes that do not agree.
    """
    with graph_lib.name_scope(name, "BiasAdd", [value, bias]) as scope:
        if data_format is not None:
            if data_format.startswith("NC"):
                data_format = "NCHW"
            elif data_format.startswith("N") and data_format.endswith("C"):
                data_format = "NHWC"
            else:
                raise ValueError("`data_format` must be of the form `N...C` or `NC...`. "
                                 f"Received: data_format={data_format}")
        value = convert_to_tensor(value, name="input")
        bias = convert_to_tensor(bias, dtype=value.dtype, name="bias")
        return apply_op("BiasAdd", value=value, bias=bias, data_format=data_format, name=scope)


@gradient("BiasAdd")
def _bias_add_grad(op, grad):
    return [grad, apply_op("BiasAddGrad", out_backprop=grad,
                           data_format=op.attrs["data_format"])]


@gradient("BiasAddGrad")
def _bias_add_grad_grad(op, grad):
    # BiasAddGrad sums over all but the channel axis; its gradient broadcasts back.
    zeros = array_ops.zeros_like(op.inputs[0])
    return [apply_op("BiasAdd", value=zeros, bias=grad, data_format=op.attrs["data_format"])]


# ---- L2Loss, LRN, InTopKV2 ---------------------------------------------------------------

define_op("L2Loss", inputs=["t: T"], outputs=["output: T"], attrs=[_FLOATS],
          shape_fn=common_shapes.scalar, flops="l2_loss")


def l2_loss(t, name: str | None = None):
    """sum(t ** 2) / 2 (`tf.nn.l2_loss`)."""
    return apply_op("L2Loss", t=t, name=name or "L2Loss")


@gradient("L2Loss")
def _l2_loss_grad(op, grad):
    return [op.inputs[0] * grad]


def _rank4(op):
    checked_dims(op.inputs[0], rank=4)
    return [op.inputs[0].shape.merge_with(_unknown_rank_shape(4))]


_LRN_ATTRS = ["depth_radius: int = 5", "bias: float = 1.0", "alpha: float = 1.0",
              "beta: float = 0.5", "T: {half, bfloat16, float} = DT_FLOAT"]
define_op("LRN", inputs=["input: T"], outputs=["output: T"], attrs=_LRN_ATTRS, shape_fn=_rank4)
define_op("LRNGrad", inputs=["input_grads: T", "input_image: T", "output_image: T"],
          outputs=["output: T"], attrs=_LRN_ATTRS,
          shape_fn=lambda op: [common_shapes.merge_all_inputs(op)[0].merge_with(
              _unknown_rank_shape(4))])


def lrn(input, depth_radius=5, bias=1.0, alpha=1.0, beta=0.5,  # noqa: A002
        name: str | None = None):
    """Local response normalization across the last (depth) dimension of a 4-D tensor
    (`tf.nn.lrn`): input / (bias + alpha * sum(input[..., d-r:d+r+1] ** 2)) ** beta.
    An argument passed as None takes its default, as in TF's generated wrappers."""
    given = {"depth_radius": (depth_radius, int), "bias": (bias, float),
             "alpha": (alpha, float), "beta": (beta, float)}
    attrs = {k: cast(v) for k, (v, cast) in given.items() if v is not None}
    return apply_op("LRN", input=input, name=name or "LRN", **attrs)


local_response_normalization = lrn
not_differentiable("LRNGrad")  # TF registers no second-order LRN gradient either


@gradient("LRN")
def _lrn_grad(op, grad):
    a = op.attrs
    return [apply_op("LRNGrad", input_grads=grad, input_image=op.inputs[0],
                     output_image=op.outputs[0], depth_radius=a["depth_radius"],
                     bias=a["bias"], alpha=a["alpha"], beta=a["beta"])]


def _in_top_k_shape(op):
    predictions = checked_dims(op.inputs[0], rank=2)
    targets = checked_dims(op.inputs[1], rank=1)
    checked_dims(op.inputs[2], rank=0)
    batch = merge_dim(predictions[0] if predictions else None, targets[0] if targets else None)
    return [[batch]]


define_op("InTopKV2", inputs=["predictions: float", "targets: T", "k: T"],
          outputs=["precision: bool"], attrs=["T: {int32, int64} = DT_INT32"],
          shape_fn=_in_top_k_shape)
not_differentiable("InTopKV2")


def in_top_k(predictions, targets, k, name: str | None = None):
    """Whether each target's prediction is finite and among the top `k` of its row, ties
    included (`tf.nn.in_top_k`). Out-of-range targets give False."""
    with graph_lib.name_scope(name, "in_top_k"):
        return apply_op("InTopKV2", predictions=predictions, targets=targets, k=k)


# ---- ApproxTopK --------------------------------------------------------------------------
#
# TensorFlow's CPU kernel is its exact TopK (the approximation is a TPU algorithm), and so is
# ours: the k largest (is_max_k) or smallest values along reduction_dimension, in order,
# equal values by index. TensorFlow registers that kernel only for the last dimension and
# is_max_k; tensorflux computes the others exactly too. The static shape follows TF's shape
# function, which for aggregate_to_topk=False is the size XLA's partial reduction would
# have (the kernel, as TensorFlow's, still returns k values).

_TPU_LANE_TILING = 128     # the reduction window of rank >= 2 operands
_TPU_CHUNK_TILING = 1024   # the reduction window of rank-1 operands


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _approx_reduction_size(n, rank, k, recall_target, input_size_override):
    """The reduction dimension's size after the approximate (unaggregated) reduction: a
    whole number of windows, few enough that k values survive with recall_target."""
    tiling = _TPU_CHUNK_TILING if rank == 1 else _TPU_LANE_TILING
    if n <= tiling or recall_target == 1.0:
        return n
    if k == 1:
        return tiling
    logical = input_size_override if input_size_override >= 0 else n
    # Windows m with recall ~ exp((1 - k) / m), no fewer than one tile, no more than n;
    # as an unsigned 64-bit count (k = 0 makes it negative, which wraps, as in XLA on x86).
    windows = int((1.0 - k) / np.log(np.float64(recall_target))) % (1 << 64)
    windows = min(max(windows, tiling), n)
    quotient = logical // windows
    log2_reduction = quotient.bit_length() - 1 if quotient else 0
    if log2_reduction == 0:
        return n
    tiles = n // tiling
    log2_reduction = min(log2_reduction, (tiles - 1).bit_length() if tiles else 0)
    return _ceil_div(_ceil_div(n, tiling), 1 << log2_reduction) * tiling


def _approx_top_k_shape(op):
    dims = checked_dims(op.inputs[0], at_least=1)
    rank = -1 if dims is None else len(dims)
    axis, k = op.attrs["reduction_dimension"], op.attrs["k"]
    if not -rank <= axis <= rank - 1:
        raise ValueError(f"Invalid reduction dimension: {axis}. Must be within the range of "
                         f"[{-rank}, {rank - 1}]")
    axis %= rank
    n = dims[axis]
    if n is None or n < k:
        raise ValueError(f"input must have last dimension >= k = {k} but was "
                         f"{-1 if n is None else n}")
    recall = np.float32(op.attrs["recall_target"])
    if not 0 < recall <= 1:
        raise ValueError(f"Invalid recall target: {recall:g}. Valid value range in : "
                         "[0, 1.0].")
    size = k if op.attrs["aggregate_to_topk"] else _approx_reduction_size(
        n, rank, k, recall, op.attrs["reduction_input_size_override"])
    out = dims[:axis] + [size] + dims[axis + 1:]
    return [out, out]


define_op("ApproxTopK", inputs=["input: T"], outputs=["values: T", "indices: int32"],
          attrs=["k: int >= 0", "reduction_dimension: int = -1", "recall_target: float = 0.95",
                 "is_max_k: bool = true", "reduction_input_size_override: int = -1",
                 "aggregate_to_topk: bool = true", "T: {half, bfloat16, float}"],
          shape_fn=_approx_top_k_shape)


def approx_top_k(input, k, reduction_dimension=-1, recall_target=0.95,  # noqa: A002
                 is_max_k=True, reduction_input_size_override=-1, aggregate_to_topk=True,
                 name=None):
    """The k largest (or smallest) values of `input` along `reduction_dimension` and their
    indices (`tf.approx_top_k`); on CPU exact, as TensorFlow's.

    Args:
      input: a half, bfloat16 or float tensor of rank >= 1.
      k: how many values, at most the reduction dimension's size.
      reduction_dimension: the dimension to search, negative from the end.
      recall_target: the TPU approximation's recall, in (0, 1].
      is_max_k: the largest values when true, else the smallest.
      reduction_input_size_override: the TPU approximation's logical input size (-1: none).
      aggregate_to_topk: whether the TPU result is reduced to k values (the static shape
        says the unreduced size when false).
      name: a name for the operation.

    Returns:
      (values, indices): values of input's dtype and their int32 indices, largest (or
      smallest) first; equal values in index order.
    """
    return apply_op("ApproxTopK", input=input, k=k, reduction_dimension=reduction_dimension,
                    recall_target=recall_target, is_max_k=is_max_k,
                    reduction_input_size_override=reduction_input_size_override,
                    aggregate_to_topk=aggregate_to_topk, name=name or "ApproxTopK")


@gradient("ApproxTopK")
def _approx_top_k_grad(op, grad, _):
    """The values' gradient scattered to the positions the indices name."""
    x, idx = op.inputs[0], op.outputs[1]
    rank = x.shape.ndims
    axis = op.attrs["reduction_dimension"] % rank
    if axis == rank - 1:
        return [scatter_top_k_grad(x, idx, grad)]
    perm = [d for d in range(rank) if d != axis] + [axis]
    back = [perm.index(d) for d in range(rank)]
    dense = scatter_top_k_grad(array_ops.transpose(x, perm), array_ops.transpose(idx, perm),
                               array_ops.transpose(grad, perm))
    return [array_ops.transpose(dense, back)]
