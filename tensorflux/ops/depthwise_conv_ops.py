"""Depthwise convolution: DepthwiseConv2dNative and its backprops
(DepthwiseConv2dNativeBackpropInput, DepthwiseConv2dNativeBackpropFilter), with the TF1
wrapper `tf.nn.depthwise_conv2d_native`. Each input channel c is convolved with its own
filters [kh, kw, c, :] (channel multiplier M), output channel c * M + m. Kernels are in
tensorflux/kernels/cpu/depthwise_conv_ops.py; the compositions `tf.nn.depthwise_conv2d`
and `tf.nn.separable_conv2d` are in tensorflux/nn/conv_impl.py.
"""

from __future__ import annotations

from tensorflux.framework.common_shapes import checked_dims
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient
from tensorflux.ops.conv_ops import (
    _conv_call_attrs,
    _four,
    _out_dim,
    _padding_pairs,
    _shape_of,
    _sizes_shape,
)

__all__ = ["depthwise_conv2d_native", "depthwise_conv2d_native_backprop_input",
           "depthwise_conv2d_native_backprop_filter"]

_ATTRS = ["T: {half, bfloat16, float, double}", "strides: list(int)",
          "padding: {'SAME', 'VALID', 'EXPLICIT'}", "explicit_paddings: list(int) = []",
          "data_format: {'NHWC', 'NCHW'} = \"NHWC\"", "dilations: list(int) = [1, 1, 1, 1]"]


def _depthwise_shape(op):
    x = checked_dims(op.inputs[0], rank=4) or [None] * 4
    w = checked_dims(op.inputs[1], rank=4) or [None] * 4
    strides, dilations = _four(op, "strides", "stride"), _four(op, "dilations", "dilation")
    nchw = op.attrs["data_format"] == "NCHW"
    c_axis, (h_axis, w_axis) = (1, (2, 3)) if nchw else (3, (1, 2))
    if x[c_axis] is not None and w[2] is not None and x[c_axis] != w[2]:
        raise ValueError(f"Dimensions must be equal, but are {x[c_axis]} and {w[2]}: the input "
                         "depth and the filter's in_channels")
    c = x[c_axis] if x[c_axis] is not None else w[2]
    out_c = c * w[3] if c is not None and w[3] is not None else None
    pairs, padding = _padding_pairs(op), op.attrs["padding"]
    oh = _out_dim(x[h_axis], w[0], strides[h_axis], dilations[h_axis], padding, pairs[h_axis])
    ow = _out_dim(x[w_axis], w[1], strides[w_axis], dilations[w_axis], padding, pairs[w_axis])
    return [[x[0], out_c, oh, ow] if nchw else [x[0], oh, ow, out_c]]


def _backprop_shape(sizes_index):
    def shape_fn(op):
        for i in range(3):
            if i != sizes_index:
                checked_dims(op.inputs[i], rank=4)
        return [_sizes_shape(op.inputs[sizes_index])]
    return shape_fn


define_op("DepthwiseConv2dNative", inputs=["input: T", "filter: T"], outputs=["output: T"],
          attrs=_ATTRS, shape_fn=_depthwise_shape)
define_op("DepthwiseConv2dNativeBackpropInput",
          inputs=["input_sizes: int32", "filter: T", "out_backprop: T"], outputs=["output: T"],
          attrs=_ATTRS, shape_fn=_backprop_shape(0))
define_op("DepthwiseConv2dNativeBackpropFilter",
          inputs=["input: T", "filter_sizes: int32", "out_backprop: T"], outputs=["output: T"],
          attrs=_ATTRS, shape_fn=_backprop_shape(1))


def _attrs(strides, padding, data_format, dilations):
    attrs = _conv_call_attrs(strides, padding, data_format, dilations or (1, 1, 1, 1), True)
    del attrs["use_cudnn_on_gpu"]
    return attrs


def depthwise_conv2d_native(input, filter, strides, padding, data_format="NHWC",  # noqa: A002
                            dilations=(1, 1, 1, 1), name=None):
    """Per-channel 2-D convolution (`tf.nn.depthwise_conv2d_native`): `filter` is
    [kh, kw, in_channels, channel_multiplier]; the output has in * multiplier channels.

    Raises:
      ValueError: the input depth differs from the filter's in_channels.
    """
    return apply_op("DepthwiseConv2dNative", input=input, filter=filter,
                    name=name or "DepthwiseConv2dNative",
                    **_attrs(strides, padding, data_format, dilations))


def depthwise_conv2d_native_backprop_input(input_sizes, filter, out_backprop, strides,  # noqa: A002
                                           padding, data_format="NHWC",
                                           dilations=(1, 1, 1, 1), name=None):
    """The gradient of depthwise_conv2d_native w.r.t. its input."""
    return apply_op("DepthwiseConv2dNativeBackpropInput", input_sizes=input_sizes,
                    filter=filter, out_backprop=out_backprop,
                    name=name or "DepthwiseConv2dNativeBackpropInput",
                    **_attrs(strides, padding, data_format, dilations))


def depthwise_conv2d_native_backprop_filter(input, filter_sizes, out_backprop, strides,  # noqa: A002
                                            padding, data_format="NHWC",
                                            dilations=(1, 1, 1, 1), name=None):
    """The gradient of depthwise_conv2d_native w.r.t. its filter."""
    return apply_op("DepthwiseConv2dNativeBackpropFilter", input=input,
                    filter_sizes=filter_sizes, out_backprop=out_backprop,
                    name=name or "DepthwiseConv2dNativeBackpropFilter",
                    **_attrs(strides, padding, data_format, dilations))


def _attrs_of(op):
    return {k: op.attrs[k] for k in ("strides", "padding", "explicit_paddings", "data_format",
                                     "dilations")}


@gradient("DepthwiseConv2dNative")
def _depthwise_grad(op, grad):
    x, w = op.inputs
    return [apply_op("DepthwiseConv2dNativeBackpropInput", input_sizes=_shape_of(x), filter=w,
                     out_backprop=grad, **_attrs_of(op)),
            apply_op("DepthwiseConv2dNativeBackpropFilter", input=x,
                     filter_sizes=_shape_of(w), out_backprop=grad, **_attrs_of(op))]


@gradient("DepthwiseConv2dNativeBackpropInput")
def _depthwise_backprop_input_grad(op, grad):
    _, w, dy = op.inputs
    return [None,
            apply_op("DepthwiseConv2dNativeBackpropFilter", input=grad,
                     filter_sizes=_shape_of(w), out_backprop=dy, **_attrs_of(op)),
            apply_op("DepthwiseConv2dNative", input=grad, filter=w, **_attrs_of(op))]


@gradient("DepthwiseConv2dNativeBackpropFilter")
def _depthwise_backprop_filter_grad(op, grad):
    x, _, dy = op.inputs
    return [apply_op("DepthwiseConv2dNativeBackpropInput", input_sizes=_shape_of(x),
                     filter=grad, out_backprop=dy, **_attrs_of(op)),
            None,
            apply_op("DepthwiseConv2dNative", input=x, filter=grad, **_attrs_of(op))]
