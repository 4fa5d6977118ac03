"""Neural-network ops: activations, softmax and cross entropy, BiasAdd, convolution, pooling,
L2Loss, LRN, InTopKV2.

Each op's definition, shape function, TF1 wrapper and gradient sit together; kernels are in
tensorflux/kernels/cpu/nn_ops.py, conv_ops.py and pooling_ops.py. The TF1 functions that
compose these ops with others (the cross-entropy wrappers, dropout, moments, ...) are in
tensorflux/ops/nn_impl.py. Gradients
are real backward ops where TensorFlow has them (ReluGrad, BiasAddGrad, Conv2DBackpropInput,
MaxPoolGrad, ...).
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import common_shapes, dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient, not_differentiable
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, constant_op, math_ops

# The TF1 public names of this module (tf.nn.*).
__all__ = [
    "relu", "relu6", "elu", "selu", "softplus", "leaky_relu", "softmax", "log_softmax",
    "bias_add", "conv2d", "conv2d_backprop_input", "conv2d_backprop_filter", "max_pool",
    "avg_pool", "conv2d_transpose", "l2_loss", "lrn", "local_response_normalization",
    "in_top_k",
]

_FLOATS = "T: {half, bfloat16, float, double}"
_RELU_TYPES = ("T: {float, double, int32, uint8, int16, int8, int64, bfloat16, uint16, half, "
               "uint32, uint64")
_BIAS_TYPES = ("T: {float, double, int32, uint8, int16, int8, complex64, int64, qint8, quint8, "
               "qint32, bfloat16, qint16, quint16, uint16, complex128, half, uint32, uint64}")

# ---- shape helpers (TF's shape-inference messages) ---------------------------------------


def _dims(t: Tensor, rank: int | None = None, at_least: int | None = None) -> list | None:
    """The static dims of `t` (None entries unknown), or None for unknown rank.

    Raises:
      ValueError: the rank is known and wrong.
    """
    shape = t.shape
    if shape.ndims is None:
        return None
    if rank is not None and shape.ndims != rank:
        raise ValueError(f"Shape must be rank {rank} but is rank {shape.ndims}")
    if at_least is not None and shape.ndims < at_least:
        raise ValueError(f"Shape must be at least rank {at_least} but is rank {shape.ndims}")
    return shape.as_list()


def _merge(a, b):
    """Two dimensions that must be equal (either may be unknown)."""
    if a is not None and b is not None and a != b:
        raise ValueError(f"Dimensions must be equal, but are {a} and {b}")
    return a if a is not None else b


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
    negative = math_ops.less(y, array_ops.zeros_like(y))
    d_y = math_ops.where(negative, grad * op.inputs[0], array_ops.zeros_like(y))
    return [apply_op("EluGrad", gradients=grad, outputs=y), d_y]


@gradient("SeluGrad")
def _selu_grad_grad(op, grad):
    y = op.inputs[1]
    negative = math_ops.less(y, array_ops.zeros_like(y))
    d_y = math_ops.where(negative, grad * op.inputs[0], array_ops.zeros_like(y))
    return [apply_op("SeluGrad", gradients=grad, outputs=y), d_y]


@gradient("SoftplusGrad")
def _softplus_grad_grad(op, grad):
    dy, x = op.inputs
    ddy = apply_op("SoftplusGrad", gradients=grad, features=x)
    d2x = grad * dy / (math_ops.exp(-x) + 2.0 + math_ops.exp(x))
    return [ddy, d2x]


# ---- Softmax, LogSoftmax -----------------------------------------------------------------


def _rank_at_least_1(op):
    _dims(op.inputs[0], at_least=1)
    return [op.inputs[0].shape]


define_op("Softmax", inputs=["logits: T"], outputs=["softmax: T"], attrs=[_FLOATS],
          shape_fn=_rank_at_least_1)
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
        from tensorflux.framework import errors

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
    return [(grad - math_ops.reduce_sum(grad * y, -1, keepdims=True)) * y]


@gradient("LogSoftmax")
def _log_softmax_grad(op, grad):
    p = math_ops.exp(op.outputs[0])
    return [grad - math_ops.reduce_sum(grad, -1, keepdims=True) * p]


# ---- cross entropy -----------------------------------------------------------------------


def _xent_shape(op):
    logits = _dims(op.inputs[0], rank=2)
    labels = op.inputs[1].shape
    if op.type == "SparseSoftmaxCrossEntropyWithLogits":
        labels = _dims(op.inputs[1], rank=1)
        batch = _merge(logits[0] if logits else None, labels[0] if labels else None)
        classes = logits[1] if logits else None
    else:
        labels = _dims(op.inputs[1], rank=2)
        logits = logits or [None, None]
        labels = labels or [None, None]
        batch, classes = _merge(logits[0], labels[0]), _merge(logits[1], labels[1])
    return [[batch], [batch, classes]]


define_op("SoftmaxCrossEntropyWithLogits", inputs=["features: T", "labels: T"],
          outputs=["loss: T", "backprop: T"], attrs=[_FLOATS], shape_fn=_xent_shape)
define_op("SparseSoftmaxCrossEntropyWithLogits", inputs=["features: T", "labels: Tlabels"],
          outputs=["loss: T", "backprop: T"],
          attrs=[_FLOATS, "Tlabels: {int32, int64} = DT_INT64"], shape_fn=_xent_shape)


def _is_zero(t) -> bool:
    """True for a missing gradient or one the gradient driver filled with zeros."""
    if t is None:
        return True
    if isinstance(t, Tensor):
        if t.op.type in ("ZerosLike", "Zeros"):
            return True
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
        grad = grad + (grad_grad - math_ops.reduce_sum(grad_grad * p, -1, keepdims=True)) * p
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
    value = _dims(op.inputs[0], at_least=2)
    bias = _dims(op.inputs[1], rank=1)
    if value is None:
        return [tensor_shape.unknown_shape()]
    axis = _bias_channel(op, value)
    value[axis] = _merge(value[axis], bias[0] if bias else None)
    return [value]


def _bias_add_grad_shape(op):
    dims = _dims(op.inputs[0], at_least=2)
    if dims is None:
        return [[None]]
    return [[dims[_bias_channel(op, dims)]]]


define_op("BiasAdd", inputs=["value: T", "bias: T"], outputs=["output: T"],
          attrs=[_BIAS_TYPES, "data_format: {'NHWC', 'NCHW'} = \"NHWC\""],
          shape_fn=_bias_add_shape)
define_op("BiasAddGrad", inputs=["out_backprop: T"], outputs=["output: T"],
          attrs=[_BIAS_TYPES, "data_format: {'NHWC', 'NCHW'} = \"NHWC\""],
          shape_fn=_bias_add_grad_shape)


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
          shape_fn=common_shapes.scalar)


def l2_loss(t, name: str | None = None):
    """sum(t ** 2) / 2 (`tf.nn.l2_loss`)."""
    return apply_op("L2Loss", t=t, name=name or "L2Loss")


@gradient("L2Loss")
def _l2_loss_grad(op, grad):
    return [op.inputs[0] * grad]


def _rank4(op):
    _dims(op.inputs[0], rank=4)
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
    (`tf.nn.lrn`): input / (bias + alpha * sum(input[..., d-r:d+r+1] ** 2)) ** beta."""
    return apply_op("LRN", input=input, depth_radius=int(depth_radius), bias=float(bias),
                    alpha=float(alpha), beta=float(beta), name=name or "LRN")


local_response_normalization = lrn
not_differentiable("LRNGrad")  # TF registers no second-order LRN gradient either


@gradient("LRN")
def _lrn_grad(op, grad):
    a = op.attrs
    return [apply_op("LRNGrad", input_grads=grad, input_image=op.inputs[0],
                     output_image=op.outputs[0], depth_radius=a["depth_radius"],
                     bias=a["bias"], alpha=a["alpha"], beta=a["beta"])]


def _in_top_k_shape(op):
    predictions = _dims(op.inputs[0], rank=2)
    targets = _dims(op.inputs[1], rank=1)
    _dims(op.inputs[2], rank=0)
    batch = _merge(predictions[0] if predictions else None, targets[0] if targets else None)
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


# ---- window geometry (convolutions and pools) --------------------------------------------


def _padding_pairs(op) -> list[tuple[int, int]]:
    """(before, after) explicit padding per dimension, in data_format order."""
    pads = list(op.attrs.get("explicit_paddings") or [])
    if op.attrs["padding"] == "EXPLICIT":
        if len(pads) != 8:
            raise ValueError(f"explicit_paddings attribute must contain 8 values, but got: "
                             f"{len(pads)}")
        return [(pads[2 * i], pads[2 * i + 1]) for i in range(4)]
    if pads:
        raise ValueError("explicit_paddings attribute must be empty if the padding attribute "
                         "is not EXPLICIT")
    return [(0, 0)] * 4


def _out_dim(size, k, stride, dilation, padding, pair):
    """One output dimension of a windowed op (None when unknown)."""
    if size is None or k is None:
        return None
    if stride <= 0:
        raise ValueError(f"Stride must be > 0, but got {stride}")
    eff = (k - 1) * dilation + 1
    if padding == "SAME":
        return (size + stride - 1) // stride
    padded = size + pair[0] + pair[1] if padding == "EXPLICIT" else size
    if padded < eff:
        raise ValueError(f"Negative dimension size caused by subtracting {eff} from {padded}")
    return (padded - eff) // stride + 1


def _four(op, attr, what):
    values = list(op.attrs[attr])
    if len(values) != 4:
        raise ValueError(f"{op.type} requires the {what} attribute to contain 4 values, but "
                         f"got: {len(values)}")
    for v in values:  # the kernels take them as int32, as TF's do
        if not -2**31 <= v < 2**31:
            raise ValueError(f"Attr {attr} has value {v} out of range for an int32")
    return values


def _get_sequence(value, channel_index, name):
    """TF's `_get_sequence` for 2 spatial dims: an int or a list of 1, 2 or 4 values."""
    if value is None:
        return [1, 1, 1, 1]
    if isinstance(value, (int, np.integer)):
        value = [int(value)]
    value = [int(v) for v in value]
    if len(value) == 4:
        return value
    if len(value) == 1:
        value = value * 2
    elif len(value) != 2:
        raise ValueError(f"{name} should be of length 1, 2 or 4. Received: {name}={value} of "
                         f"length {len(value)}")
    return [1, 1] + value if channel_index == 1 else [1] + value + [1]


def _convert_padding(padding):
    """("SAME"|"VALID"|"EXPLICIT", explicit_paddings) from a string or a list of 4 pairs."""
    if padding == "EXPLICIT":
        raise ValueError("'EXPLICIT' is not a valid value for `padding`. To use explicit "
                         "padding, `padding` must be a list.")
    if isinstance(padding, (list, tuple)):
        flat = []
        for i, pair in enumerate(padding):
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                raise ValueError("When `padding` is a list, each element of `padding` must be "
                                 f"a list/tuple of size 2. Received: padding={padding} with "
                                 f"element at index {i}")
            flat.extend(int(p) for p in pair)
        if len(padding) != 4:
            raise ValueError(f"When padding is a list, it must be of size 4. Received: "
                             f"padding={padding} of size {len(padding)}")
        return "EXPLICIT", flat
    return padding, []


def _channel_index(data_format):
    return 1 if data_format and data_format.startswith("NC") else 3


# ---- Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter -----------------------------------

_CONV_ATTRS = ["T: {half, bfloat16, float, double, int32}", "strides: list(int)",
               "use_cudnn_on_gpu: bool = true", "padding: {'SAME', 'VALID', 'EXPLICIT'}",
               "explicit_paddings: list(int) = []",
               "data_format: {'NHWC', 'NCHW'} = \"NHWC\"",
               "dilations: list(int) = [1, 1, 1, 1]"]


def _conv_output(op, x, w):
    """Output dims of a Conv2D of input dims `x` and filter dims `w` (lists or None)."""
    strides = _four(op, "strides", "stride")
    dilations = _four(op, "dilations", "dilation")
    nchw = op.attrs["data_format"] == "NCHW"
    x, w = x or [None] * 4, w or [None] * 4
    c_axis, (h_axis, w_axis) = (1, (2, 3)) if nchw else (3, (1, 2))
    c, ci, co = x[c_axis], w[2], w[3]
    if c is not None and ci is not None:
        if ci == 0 or c % ci:
            raise ValueError(f"Depth of input ({c}) is not a multiple of input depth of "
                             f"filter ({ci})")
        if co is not None and co % (c // ci):
            raise ValueError(f"Depth of output ({co}) is not a multiple of the number of "
                             f"groups ({c // ci})")
    pairs, padding = _padding_pairs(op), op.attrs["padding"]
    oh = _out_dim(x[h_axis], w[0], strides[h_axis], dilations[h_axis], padding, pairs[h_axis])
    ow = _out_dim(x[w_axis], w[1], strides[w_axis], dilations[w_axis], padding, pairs[w_axis])
    return [x[0], co, oh, ow] if nchw else [x[0], oh, ow, co]


def _conv2d_shape(op):
    return [_conv_output(op, _dims(op.inputs[0], rank=4), _dims(op.inputs[1], rank=4))]


def _sizes_shape(t):
    """A 4-element sizes input (input_sizes, filter_sizes, orig_input_shape) as dims."""
    shape = common_shapes.constant_value_as_shape(t)
    if shape.ndims is None:
        return [None] * 4
    if shape.ndims != 4:
        raise ValueError(f"Shape must be rank 4 but is rank {shape.ndims}")
    return shape.as_list()


def _conv2d_backprop_input_shape(op):
    _dims(op.inputs[1], rank=4)
    dy = _dims(op.inputs[2], rank=4) or [None] * 4
    sizes = _sizes_shape(op.inputs[0])
    sizes[0] = _merge(sizes[0], dy[0])
    return [sizes]


def _conv2d_backprop_filter_shape(op):
    _dims(op.inputs[0], rank=4)
    _dims(op.inputs[2], rank=4)
    return [_sizes_shape(op.inputs[1])]


define_op("Conv2D", inputs=["input: T", "filter: T"], outputs=["output: T"],
          attrs=_CONV_ATTRS, shape_fn=_conv2d_shape)
define_op("Conv2DBackpropInput", inputs=["input_sizes: int32", "filter: T", "out_backprop: T"],
          outputs=["output: T"], attrs=_CONV_ATTRS, shape_fn=_conv2d_backprop_input_shape)
define_op("Conv2DBackpropFilter", inputs=["input: T", "filter_sizes: int32", "out_backprop: T"],
          outputs=["output: T"], attrs=["T: {half, bfloat16, float, double}"] + _CONV_ATTRS[1:],
          shape_fn=_conv2d_backprop_filter_shape)


def _conv_call_attrs(strides, padding, data_format, dilations, use_cudnn_on_gpu):
    if data_format is None:
        data_format = "NHWC"
    channel = _channel_index(data_format)
    padding, explicit = _convert_padding(padding)
    return dict(strides=_get_sequence(strides, channel, "strides"), padding=padding,
                explicit_paddings=explicit, data_format=data_format,
                dilations=_get_sequence(dilations, channel, "dilations"),
                use_cudnn_on_gpu=bool(use_cudnn_on_gpu))


def conv2d(input, filter=None, strides=None, padding=None, use_cudnn_on_gpu=True,  # noqa: A002
           data_format="NHWC", dilations=(1, 1, 1, 1), name=None, filters=None):
    """2-D convolution of a 4-D `input` with a filter [kh, kw, in_channels, out_channels]
    (`tf.nn.conv2d`, TF1 signature).

    Args:
      input: [batch, height, width, channels] ("NHWC") or [batch, channels, height, width].
      filter: the filter; `filters` is an alias.
      strides: an int or a list of 1, 2 or 4 ints.
      padding: "SAME", "VALID", or a list of 4 [before, after] pairs (explicit padding).
      use_cudnn_on_gpu: accepted and recorded; no effect on CPU.
      data_format: "NHWC" or "NCHW".
      dilations: an int or a list of 1, 2 or 4 ints.
      name: the op name.

    Raises:
      ValueError: a bad padding string (an attribute error), shapes that do not agree
        (input depth not a multiple of the filter's), or strides of the wrong length.
    """
    if filter is not None and filters is not None:
        raise ValueError("Cannot specify both 'filter' and 'filters'.")
    filter = filters if filter is None else filter  # noqa: A001
    attrs = _conv_call_attrs(strides, padding, data_format, dilations, use_cudnn_on_gpu)
    return apply_op("Conv2D", input=input, filter=filter, name=name or "Conv2D", **attrs)


def conv2d_backprop_input(input_sizes, filter=None, out_backprop=None, strides=None,  # noqa: A002
                          padding=None, use_cudnn_on_gpu=True, data_format="NHWC",
                          dilations=(1, 1, 1, 1), name=None, filters=None):
    """The gradient of conv2d w.r.t. its input (`tf.nn.conv2d_backprop_input`)."""
    filter = filters if filter is None else filter  # noqa: A001
    attrs = _conv_call_attrs(strides, padding, data_format, dilations, use_cudnn_on_gpu)
    return apply_op("Conv2DBackpropInput", input_sizes=input_sizes, filter=filter,
                    out_backprop=out_backprop, name=name or "Conv2DBackpropInput", **attrs)


def conv2d_backprop_filter(input, filter_sizes, out_backprop, strides, padding,  # noqa: A002
                           use_cudnn_on_gpu=True, data_format="NHWC", dilations=(1, 1, 1, 1),
                           name=None):
    """The gradient of conv2d w.r.t. its filter (`tf.nn.conv2d_backprop_filter`)."""
    attrs = _conv_call_attrs(strides, padding, data_format, dilations, use_cudnn_on_gpu)
    return apply_op("Conv2DBackpropFilter", input=input, filter_sizes=filter_sizes,
                    out_backprop=out_backprop, name=name or "Conv2DBackpropFilter", **attrs)


def conv2d_transpose(value=None, filter=None, output_shape=None, strides=None,  # noqa: A002
                     padding="SAME", data_format="NHWC", name=None, input=None, filters=None,
                     dilations=None):
    """The transpose of conv2d, i.e. its input gradient (`tf.nn.conv2d_transpose`).

    Raises:
      ValueError: the filter's output channels do not match `value`'s channels.
    """
    value = input if value is None else value
    filter = filters if filter is None else filter  # noqa: A001
    with graph_lib.name_scope(name, "conv2d_transpose", [value, filter, output_shape]) as scope:
        value = convert_to_tensor(value, name="value")
        filter = convert_to_tensor(filter, name="filter")  # noqa: A001
        channel = _channel_index(data_format)
        vc, fc = value.shape.as_list()[channel] if value.shape.ndims == 4 else None, \
            filter.shape.as_list()[3] if filter.shape.ndims == 4 else None
        if vc is not None and fc is not None and vc != fc:
            raise ValueError(f"Input channels of `value` ({vc}) must match the output "
                             f"channels of `filter` ({fc}).")
        attrs = _conv_call_attrs(strides, padding, data_format, dilations, True)
        return apply_op("Conv2DBackpropInput", input_sizes=output_shape, filter=filter,
                        out_backprop=value, name=scope, **attrs)


def _conv_attrs_of(op):
    a = op.attrs
    return {k: a[k] for k in ("strides", "padding", "explicit_paddings", "data_format",
                              "dilations", "use_cudnn_on_gpu")}


def _shape_of(t: Tensor):
    """The int32 shape of `t`: a constant when static, else a Shape op."""
    if t.shape.is_fully_defined():
        return constant_op.constant(t.shape.as_list(), dtype=dtypes.int32)
    return array_ops.shape(t)


@gradient("Conv2D")
def _conv2d_grad(op, grad):
    attrs = _conv_attrs_of(op)
    x, w = op.inputs
    return [apply_op("Conv2DBackpropInput", input_sizes=_shape_of(x), filter=w,
                     out_backprop=grad, **attrs),
            apply_op("Conv2DBackpropFilter", input=x, filter_sizes=_shape_of(w),
                     out_backprop=grad, **attrs)]


@gradient("Conv2DBackpropInput")
def _conv2d_backprop_input_grad(op, grad):
    attrs = _conv_attrs_of(op)
    _, w, dy = op.inputs
    return [None,
            apply_op("Conv2DBackpropFilter", input=grad, filter_sizes=_shape_of(w),
                     out_backprop=dy, **attrs),
            apply_op("Conv2D", input=grad, filter=w, **attrs)]


@gradient("Conv2DBackpropFilter")
def _conv2d_backprop_filter_grad(op, grad):
    attrs = _conv_attrs_of(op)
    x, _, dy = op.inputs
    return [apply_op("Conv2DBackpropInput", input_sizes=_shape_of(x), filter=grad,
                     out_backprop=dy, **attrs),
            None,
            apply_op("Conv2D", input=x, filter=grad, **attrs)]


# ---- MaxPool, AvgPool and their gradients ------------------------------------------------


def _pool_output(op, x):
    ksize = _four(op, "ksize", "ksize")
    strides = _four(op, "strides", "stride")
    x = x or [None] * 4
    padding = op.attrs["padding"]
    pairs = _padding_pairs(op) if "explicit_paddings" in op.attrs else [(0, 0)] * 4
    return [_out_dim(x[i], ksize[i], strides[i], 1, padding, pairs[i]) for i in range(4)]


def _pool_shape(op):
    return [_pool_output(op, _dims(op.inputs[0], rank=4))]


def _max_pool_grad_shape(op):
    x = _dims(op.inputs[0], rank=4)
    _dims(op.inputs[1], rank=4)
    _dims(op.inputs[2], rank=4)
    return [op.inputs[0].shape if x is not None else [None] * 4]


def _max_pool_grad_grad_shape(op):
    _dims(op.inputs[0], rank=4)
    return [op.inputs[1].shape.merge_with(_unknown_rank_shape(4))]


def _avg_pool_grad_shape(op):
    _dims(op.inputs[1], rank=4)
    return [_sizes_shape(op.inputs[0])]


_POOL_WINDOW = ["ksize: list(int) >= 4", "strides: list(int) >= 4"]
_MAX_POOL_TYPES = ("T: {half, bfloat16, float, double, int32, int64, uint8, int16, int8, "
                   "uint16, qint8} = DT_FLOAT")
_MAX_POOL_GRAD_TYPES = ("T: {float, double, int32, uint8, int16, int8, int64, bfloat16, "
                        "uint16, half, uint32, uint64} = DT_FLOAT")
_EXPLICIT_POOL = ["padding: {'SAME', 'VALID', 'EXPLICIT'}", "explicit_paddings: list(int) = []"]
_FORMAT = ["data_format: {'NHWC', 'NCHW'} = \"NHWC\""]
define_op("MaxPool", inputs=["input: T"], outputs=["output: T"],
          attrs=[_MAX_POOL_TYPES] + _POOL_WINDOW + _EXPLICIT_POOL + _FORMAT,
          shape_fn=_pool_shape)
define_op("MaxPoolGrad", inputs=["orig_input: T", "orig_output: T", "grad: T"],
          outputs=["output: T"], attrs=_POOL_WINDOW + _EXPLICIT_POOL + _FORMAT +
          [_MAX_POOL_GRAD_TYPES], shape_fn=_max_pool_grad_shape)
define_op("MaxPoolGradGrad", inputs=["orig_input: T", "orig_output: T", "grad: T"],
          outputs=["output: T"], attrs=_POOL_WINDOW + ["padding: {'SAME', 'VALID'}"] + _FORMAT
          + [_MAX_POOL_GRAD_TYPES.replace(" = DT_FLOAT", "")],
          shape_fn=_max_pool_grad_grad_shape)
define_op("AvgPool", inputs=["value: T"], outputs=["output: T"],
          attrs=_POOL_WINDOW + ["padding: {'SAME', 'VALID'}"] + _FORMAT + [_FLOATS],
          shape_fn=_pool_shape)
define_op("AvgPoolGrad", inputs=["orig_input_shape: int32", "grad: T"], outputs=["output: T"],
          attrs=_POOL_WINDOW + ["padding: {'SAME', 'VALID'}"] + _FORMAT + [_FLOATS],
          shape_fn=_avg_pool_grad_shape)


def _pool_args(ksize, strides, data_format):
    if data_format is None:
        data_format = "NHWC"
    channel = _channel_index(data_format)
    return (_get_sequence(ksize, channel, "ksize"), _get_sequence(strides, channel, "strides"),
            data_format)


def max_pool(value, ksize, strides, padding, data_format="NHWC", name=None,
             input=None):  # noqa: A002
    """Max over each window of a 4-D tensor (`tf.nn.max_pool`).

    Args:
      value: [batch, height, width, channels] ("NHWC") or "NCHW"; `input` is an alias.
      ksize, strides: an int or a list of 1, 2 or 4 ints.
      padding: "SAME", "VALID", or a list of 4 [before, after] pairs.
      data_format: "NHWC" or "NCHW".
      name: the op name.

    Raises:
      ValueError: a zero window, a bad padding, or a window larger than a VALID input.
    """
    value = input if value is None else value
    with graph_lib.name_scope(name, "MaxPool", [value]) as scope:
        ksize, strides, data_format = _pool_args(ksize, strides, data_format)
        padding, explicit = _convert_padding(padding)
        if any(k == 0 for k in ksize):
            raise ValueError(f"`ksize` cannot be zero. Received: ksize={ksize}")
        return apply_op("MaxPool", input=value, ksize=ksize, strides=strides, padding=padding,
                        explicit_paddings=explicit, data_format=data_format, name=scope)


def avg_pool(value, ksize, strides, padding, data_format="NHWC", name=None,
             input=None):  # noqa: A002
    """Mean over each window of a 4-D tensor, counting only elements inside the input
    (`tf.nn.avg_pool`). Arguments as `max_pool`; padding "SAME" or "VALID"."""
    value = input if value is None else value
    with graph_lib.name_scope(name, "AvgPool", [value]) as scope:
        ksize, strides, data_format = _pool_args(ksize, strides, data_format)
        return apply_op("AvgPool", value=value, ksize=ksize, strides=strides, padding=padding,
                        data_format=data_format, name=scope)


def _pool_attrs_of(op, explicit=True):
    keys = ("ksize", "strides", "padding", "data_format") + (
        ("explicit_paddings",) if explicit and "explicit_paddings" in op.attrs else ())
    return {k: op.attrs[k] for k in keys}


@gradient("MaxPool")
def _max_pool_grad(op, grad):
    return [apply_op("MaxPoolGrad", orig_input=op.inputs[0], orig_output=op.outputs[0],
                     grad=grad, **_pool_attrs_of(op))]


@gradient("MaxPoolGrad")
def _max_pool_grad_grad(op, grad):
    if op.attrs["padding"] == "EXPLICIT":
        raise LookupError("No gradient defined for MaxPoolGrad with explicit padding")
    return [None, None,
            apply_op("MaxPoolGradGrad", orig_input=op.inputs[0], orig_output=op.inputs[1],
                     grad=grad, **_pool_attrs_of(op, explicit=False))]


@gradient("MaxPoolGradGrad")
def _max_pool_grad_grad_grad(op, grad):
    return [None, None,
            apply_op("MaxPoolGrad", orig_input=op.inputs[0], orig_output=op.inputs[1],
                     grad=grad, **_pool_attrs_of(op))]


@gradient("AvgPool")
def _avg_pool_grad(op, grad):
    return [apply_op("AvgPoolGrad", orig_input_shape=_shape_of(op.inputs[0]), grad=grad,
                     **_pool_attrs_of(op))]


@gradient("AvgPoolGrad")
def _avg_pool_grad_grad(op, grad):
    return [None, apply_op("AvgPool", value=grad, **_pool_attrs_of(op))]
