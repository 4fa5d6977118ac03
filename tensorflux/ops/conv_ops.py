"""Convolutions: Conv2D and its backprop ops (Conv2DBackpropInput, Conv2DBackpropFilter, and
their V2 forms that take the input and filter tensors rather than their shapes), the TF1
wrappers (`tf.nn.conv2d`, `conv2d_transpose`, ...), and the window geometry that pools
share (pooling_ops.py). Each op's definition, shape function, TF1 wrapper and gradient sit
together; kernels are in tensorflux/kernels/cpu/conv_ops.py. tensorflux/ops/nn_ops.py
re-exports the TF1 names, as TensorFlow's nn_ops has them.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import common_shapes, dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.common_shapes import checked_dims, merge_dim
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import (
    define_op,
    gradient,
    no_gradient,
    not_differentiable,
)
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, constant_op

# The TF1 public names of this module (tf.nn.*).
__all__ = ["conv2d", "conv2d_backprop_input", "conv2d_backprop_filter", "conv2d_transpose"]

_FLOATS = "T: {half, bfloat16, float, double}"


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
    if dilation < 1:
        raise ValueError(f"Dilation rate must be >= 1, but got {dilation}")
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
    return int32_values(attr, values)


def int32_values(attr: str, values: list) -> list:
    """`values` of a list(int) attr that the kernels take as int32 (as TF's do); a value out
    of that range is a ValueError at graph construction (and at GraphDef import)."""
    for v in values:
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
    return [_conv_output(op, checked_dims(op.inputs[0], rank=4),
                         checked_dims(op.inputs[1], rank=4))]


def _sizes_shape(t):
    """A 4-element sizes input (input_sizes, filter_sizes, orig_input_shape) as dims."""
    shape = common_shapes.constant_value_as_shape(t)
    if shape.ndims is None:
        return [None] * 4
    if shape.ndims != 4:
        raise ValueError(f"Shape must be rank 4 but is rank {shape.ndims}")
    return shape.as_list()


def _conv2d_backprop_input_shape(op):
    checked_dims(op.inputs[1], rank=4)
    dy = checked_dims(op.inputs[2], rank=4) or [None] * 4
    sizes = _sizes_shape(op.inputs[0])
    sizes[0] = merge_dim(sizes[0], dy[0])
    return [sizes]


def _conv2d_backprop_filter_shape(op):
    checked_dims(op.inputs[0], rank=4)
    checked_dims(op.inputs[2], rank=4)
    return [_sizes_shape(op.inputs[1])]


define_op("Conv2D", inputs=["input: T", "filter: T"], outputs=["output: T"],
          attrs=_CONV_ATTRS, shape_fn=_conv2d_shape, flops="conv2d")
define_op("Conv2DBackpropInput", inputs=["input_sizes: int32", "filter: T", "out_backprop: T"],
          outputs=["output: T"], attrs=_CONV_ATTRS, shape_fn=_conv2d_backprop_input_shape,
          flops="conv2d")
define_op("Conv2DBackpropFilter", inputs=["input: T", "filter_sizes: int32", "out_backprop: T"],
          outputs=["output: T"], attrs=["T: {half, bfloat16, float, double}"] + _CONV_ATTRS[1:],
          shape_fn=_conv2d_backprop_filter_shape, flops="conv2d")
# The V2 backprops take the input (filter) itself where V1 takes its shape; TensorFlow has
# no CPU kernel and no gradient for them, and its shape functions check only that operand.
define_op("Conv2DBackpropInputV2", inputs=["input: T", "filter: T", "out_backprop: T"],
          outputs=["output: T"], attrs=_CONV_ATTRS,
          shape_fn=lambda op: [common_shapes.with_rank(checked_dims(op.inputs[0]), 4)],
          flops="conv2d")
define_op("Conv2DBackpropFilterV2", inputs=["input: T", "filter: T", "out_backprop: T"],
          outputs=["output: T"], attrs=["T: {half, bfloat16, float, double}"] + _CONV_ATTRS[1:],
          shape_fn=lambda op: [common_shapes.with_rank(checked_dims(op.inputs[1]), 4)],
          flops="conv2d")
# Conv2D -> BiasAdd [-> Relu] as one node, made only by the graph optimizer's rewrite of a
# step graph (runtime/graph_optimizer.py `fuse_conv_bias_relu`, as TF's grappler remapper
# makes its _FusedConv2D, with TF's signature); the graph it appears in is already
# differentiated, so it has no gradient.
define_op("_FusedConv2D", inputs=["input: T", "filter: T", "args: num_args * T"],
          outputs=["output: T"],
          attrs=["T: {half, bfloat16, float, double}", "num_args: int >= 0"] + _CONV_ATTRS[1:]
          + ["fused_ops: list(string) = []", "epsilon: float = 0.0001",
             "leakyrelu_alpha: float = 0.2"],
          shape_fn=_conv2d_shape, flops="conv2d")
not_differentiable("_FusedConv2D")


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


def conv2d_backprop_input_v2(input, filter, out_backprop, strides, padding,  # noqa: A002
                             use_cudnn_on_gpu=True, explicit_paddings=(), data_format="NHWC",
                             dilations=(1, 1, 1, 1), name=None):
    """The gradient of conv2d w.r.t. its input, shaped as `input` (`tf.conv2d_backprop_input_v2`,
    the raw op: the attributes as Conv2D's, `padding` a string).

    Args:
      input: a tensor of the forward input's shape (only its shape is read).
      filter: the forward filter, [kh, kw, in_channels, out_channels].
      out_backprop: the gradient of the forward output.
      strides, padding, explicit_paddings, data_format, dilations: as Conv2D's attributes.
      use_cudnn_on_gpu: accepted; no effect on CPU.
      name: a name for the operation.

    Returns:
      A tensor of input's shape and dtype.
    """
    return apply_op("Conv2DBackpropInputV2", input=input, filter=filter,
                    out_backprop=out_backprop, strides=list(strides), padding=padding,
                    use_cudnn_on_gpu=use_cudnn_on_gpu, explicit_paddings=list(explicit_paddings),
                    data_format=data_format, dilations=list(dilations),
                    name=name or "Conv2DBackpropInputV2")


def conv2d_backprop_filter_v2(input, filter, out_backprop, strides, padding,  # noqa: A002
                              use_cudnn_on_gpu=True, explicit_paddings=(), data_format="NHWC",
                              dilations=(1, 1, 1, 1), name=None):
    """The gradient of conv2d w.r.t. its filter, shaped as `filter`
    (`tf.conv2d_backprop_filter_v2`, the raw op; only filter's shape is read).

    Returns:
      A tensor of filter's shape and dtype.
    """
    return apply_op("Conv2DBackpropFilterV2", input=input, filter=filter,
                    out_backprop=out_backprop, strides=list(strides), padding=padding,
                    use_cudnn_on_gpu=use_cudnn_on_gpu, explicit_paddings=list(explicit_paddings),
                    data_format=data_format, dilations=list(dilations),
                    name=name or "Conv2DBackpropFilterV2")


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


# as TensorFlow: tf.gradients through them is a LookupError
no_gradient("Conv2DBackpropInputV2", "Conv2DBackpropFilterV2")
