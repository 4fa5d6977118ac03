"""Volumetric windows: Conv3D and its backprops (Conv3DBackpropInputV2,
Conv3DBackpropFilterV2), MaxPool3D and AvgPool3D with their gradient ops, and the TF1
wrappers `tf.nn.conv3d`, `conv3d_transpose`, `conv3d_backprop_filter_v2`, `max_pool3d`,
`avg_pool3d`. Data is NDHWC or NCDHW; filters are [kd, kh, kw, in, out]. Kernels are in
tensorflux/kernels/cpu/conv3d_ops.py.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import graph as graph_lib
from tensorflux.framework.common_shapes import checked_dims, constant_value_as_shape
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops.conv_ops import _out_dim, _shape_of, int32_values

__all__ = ["conv3d", "conv3d_transpose", "conv3d_backprop_filter_v2", "max_pool3d",
           "avg_pool3d"]

_FORMAT5 = "data_format: {'NDHWC', 'NCDHW'} = \"NDHWC\""
_CONV3D_ATTRS = ["T: {half, bfloat16, float, double}", "strides: list(int) >= 5",
                 "padding: {'SAME', 'VALID'}", _FORMAT5,
                 "dilations: list(int) = [1, 1, 1, 1, 1]"]
_POOL3D_ATTRS = ["ksize: list(int) >= 5", "strides: list(int) >= 5",
                 "padding: {'SAME', 'VALID'}", _FORMAT5]


def _five(op, attr):
    values = list(op.attrs[attr])
    if len(values) != 5:
        raise ValueError(f"{op.type} requires the {attr} attribute to contain 5 values, but "
                         f"got: {len(values)}")
    return int32_values(attr, values)


def _spatial_axes(data_format):
    return (2, 3, 4) if data_format == "NCDHW" else (1, 2, 3)


def _conv3d_output(op, x, w):
    strides, dilations = _five(op, "strides"), _five(op, "dilations")
    fmt = op.attrs["data_format"]
    x, w = x or [None] * 5, w or [None] * 5
    c_axis = 1 if fmt == "NCDHW" else 4
    if x[c_axis] is not None and w[3] is not None and x[c_axis] != w[3]:
        raise ValueError(f"Depth of input ({x[c_axis]}) does not match the input depth of "
                         f"the filter ({w[3]})")
    out = list(x)
    out[c_axis] = w[4]
    for i, axis in enumerate(_spatial_axes(fmt)):
        out[axis] = _out_dim(x[axis], w[i], strides[axis], dilations[axis],
                             op.attrs["padding"], (0, 0))
    return out


def _sizes5(t):
    shape = constant_value_as_shape(t)
    if shape.ndims is None:
        return [None] * 5
    if shape.ndims != 5:
        raise ValueError(f"Shape must be rank 5 but is rank {shape.ndims}")
    return shape.as_list()


def _checked_sizes(op, operand, sizes):
    """The shape a backprop op's `sizes` input names, after checking its 5-D operands."""
    checked_dims(operand, rank=5)
    checked_dims(op.inputs[2], rank=5)
    return [_sizes5(sizes)]


def _pool3d_output(op, x):
    ksize, strides = _five(op, "ksize"), _five(op, "strides")
    x = x or [None] * 5
    return [_out_dim(x[i], ksize[i], strides[i], 1, op.attrs["padding"], (0, 0))
            for i in range(5)]


define_op("Conv3D", inputs=["input: T", "filter: T"], outputs=["output: T"],
          attrs=_CONV3D_ATTRS, shape_fn=lambda op: [_conv3d_output(
              op, checked_dims(op.inputs[0], rank=5), checked_dims(op.inputs[1], rank=5))])
define_op("Conv3DBackpropInputV2",
          inputs=["input_sizes: Tshape", "filter: T", "out_backprop: T"],
          outputs=["output: T"], attrs=_CONV3D_ATTRS + ["Tshape: {int32, int64} = DT_INT32"],
          shape_fn=lambda op: _checked_sizes(op, op.inputs[1], op.inputs[0]))
define_op("Conv3DBackpropFilterV2",
          inputs=["input: T", "filter_sizes: int32", "out_backprop: T"],
          outputs=["output: T"], attrs=_CONV3D_ATTRS,
          shape_fn=lambda op: _checked_sizes(op, op.inputs[0], op.inputs[1]))
define_op("MaxPool3D", inputs=["input: T"], outputs=["output: T"],
          attrs=_POOL3D_ATTRS + ["T: {half, bfloat16, float}"],
          shape_fn=lambda op: [_pool3d_output(op, checked_dims(op.inputs[0], rank=5))])
define_op("MaxPool3DGrad", inputs=["orig_input: TInput", "orig_output: TInput", "grad: T"],
          outputs=["output: T"], attrs=_POOL3D_ATTRS + [
              "T: {half, bfloat16, float} = DT_FLOAT",
              "TInput: {half, bfloat16, float} = DT_FLOAT"],
          shape_fn=lambda op: [op.inputs[0].shape])
define_op("MaxPool3DGradGrad", inputs=["orig_input: T", "orig_output: T", "grad: T"],
          outputs=["output: T"], attrs=_POOL3D_ATTRS + ["T: {half, bfloat16, float}"],
          shape_fn=lambda op: [op.inputs[1].shape])
define_op("AvgPool3D", inputs=["input: T"], outputs=["output: T"],
          attrs=_POOL3D_ATTRS + ["T: {half, bfloat16, float, double}"],
          shape_fn=lambda op: [_pool3d_output(op, checked_dims(op.inputs[0], rank=5))])
define_op("AvgPool3DGrad", inputs=["orig_input_shape: int32", "grad: T"],
          outputs=["output: T"], attrs=_POOL3D_ATTRS + ["T: {half, bfloat16, float, double}"],
          shape_fn=lambda op: [_sizes5(op.inputs[0])])


def _sequence5(value, data_format, name):
    """An int or a list of 1, 3 or 5 ints as the 5 entries of a window attribute."""
    if value is None:
        return [1] * 5
    value = [int(value)] if isinstance(value, (int, np.integer)) else [int(v) for v in value]
    if len(value) == 5:
        return value
    if len(value) == 1:
        value = value * 3
    elif len(value) != 3:
        raise ValueError(f"{name} should be of length 1, 3 or 5. Received: {name}={value} of "
                         f"length {len(value)}")
    return [1, 1] + value if data_format == "NCDHW" else [1] + value + [1]


def _conv3d_attrs(strides, padding, data_format, dilations):
    data_format = data_format or "NDHWC"
    return dict(strides=_sequence5(strides, data_format, "strides"), padding=padding,
                data_format=data_format,
                dilations=_sequence5(dilations, data_format, "dilations"))


def conv3d(input, filter=None, strides=None, padding=None, data_format="NDHWC",  # noqa: A002
           dilations=(1, 1, 1, 1, 1), name=None, filters=None):
    """3-D convolution of a 5-D `input` with a filter [kd, kh, kw, in, out]
    (`tf.nn.conv3d`).

    Raises:
      ValueError: strides of the wrong length, channels that do not match the filter.
    """
    filter = filters if filter is None else filter  # noqa: A001
    return apply_op("Conv3D", input=input, filter=filter, name=name or "Conv3D",
                    **_conv3d_attrs(strides, padding, data_format, dilations))


def conv3d_backprop_filter_v2(input, filter_sizes, out_backprop, strides, padding,  # noqa: A002
                              data_format="NDHWC", dilations=(1, 1, 1, 1, 1), name=None):
    """The gradient of conv3d w.r.t. its filter (`tf.nn.conv3d_backprop_filter_v2`)."""
    return apply_op("Conv3DBackpropFilterV2", input=input, filter_sizes=filter_sizes,
                    out_backprop=out_backprop, name=name or "Conv3DBackpropFilterV2",
                    **_conv3d_attrs(strides, padding, data_format, dilations))


def conv3d_transpose(value=None, filter=None, output_shape=None, strides=None,  # noqa: A002
                     padding="SAME", data_format="NDHWC", name=None, input=None,
                     filters=None, dilations=None):
    """The transpose of conv3d, i.e. its input gradient (`tf.nn.conv3d_transpose`): `filter`
    is [kd, kh, kw, output_channels, in_channels].

    Raises:
      ValueError: `value`'s channels do not match the filter's last dimension.
    """
    value = input if value is None else value
    filter = filters if filter is None else filter  # noqa: A001
    with graph_lib.name_scope(name, "conv3d_transpose", [value, filter, output_shape]) as scope:
        value = convert_to_tensor(value, name="value")
        filter = convert_to_tensor(filter, name="filter")  # noqa: A001
        axis = 1 if data_format == "NCDHW" else 4
        vc = value.shape.as_list()[axis] if value.shape.ndims == 5 else None
        fc = filter.shape.as_list()[4] if filter.shape.ndims == 5 else None
        if vc is not None and fc is not None and vc != fc:
            raise ValueError(f"Input channels of `value` ({vc}) must match the last dimension "
                             f"of `filter` ({fc}).")
        return apply_op("Conv3DBackpropInputV2", input_sizes=output_shape, filter=filter,
                        out_backprop=value, name=scope,
                        **_conv3d_attrs(strides, padding, data_format, dilations))


def _pool3d(op_type, default, value, ksize, strides, padding, data_format, name):
    data_format = data_format or "NDHWC"
    with graph_lib.name_scope(name, default, [value]) as scope:
        return apply_op(op_type, input=value, ksize=_sequence5(ksize, data_format, "ksize"),
                        strides=_sequence5(strides, data_format, "strides"), padding=padding,
                        data_format=data_format, name=scope)


def max_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):  # noqa: A002
    """Max over each 3-D window of a 5-D tensor (`tf.nn.max_pool3d`)."""
    return _pool3d("MaxPool3D", "MaxPool3D", input, ksize, strides, padding, data_format, name)


def avg_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):  # noqa: A002
    """Mean over each 3-D window of a 5-D tensor, counting only elements inside the input
    (`tf.nn.avg_pool3d`)."""
    return _pool3d("AvgPool3D", "AvgPool3D", input, ksize, strides, padding, data_format, name)


def _attrs_of(op, keys):
    return {k: op.attrs[k] for k in keys}


_CONV_KEYS = ("strides", "padding", "data_format", "dilations")
_POOL_KEYS = ("ksize", "strides", "padding", "data_format")


@gradient("Conv3D")
def _conv3d_grad(op, grad):
    x, w = op.inputs
    attrs = _attrs_of(op, _CONV_KEYS)
    return [apply_op("Conv3DBackpropInputV2", input_sizes=_shape_of(x), filter=w,
                     out_backprop=grad, **attrs),
            apply_op("Conv3DBackpropFilterV2", input=x, filter_sizes=_shape_of(w),
                     out_backprop=grad, **attrs)]


@gradient("Conv3DBackpropInputV2")
def _conv3d_backprop_input_grad(op, grad):
    _, w, dy = op.inputs
    attrs = _attrs_of(op, _CONV_KEYS)
    return [None,
            apply_op("Conv3DBackpropFilterV2", input=grad, filter_sizes=_shape_of(w),
                     out_backprop=dy, **attrs),
            apply_op("Conv3D", input=grad, filter=w, **attrs)]


@gradient("Conv3DBackpropFilterV2")
def _conv3d_backprop_filter_grad(op, grad):
    x, _, dy = op.inputs
    attrs = _attrs_of(op, _CONV_KEYS)
    return [apply_op("Conv3DBackpropInputV2", input_sizes=_shape_of(x), filter=grad,
                     out_backprop=dy, **attrs),
            None,
            apply_op("Conv3D", input=x, filter=grad, **attrs)]


@gradient("MaxPool3D")
def _max_pool3d_grad(op, grad):
    return [apply_op("MaxPool3DGrad", orig_input=op.inputs[0], orig_output=op.outputs[0],
                     grad=grad, **_attrs_of(op, _POOL_KEYS))]


@gradient("AvgPool3D")
def _avg_pool3d_grad(op, grad):
    return [apply_op("AvgPool3DGrad", orig_input_shape=_shape_of(op.inputs[0]), grad=grad,
                     **_attrs_of(op, _POOL_KEYS))]


@gradient("AvgPool3DGrad")
def _avg_pool3d_grad_grad(op, grad):
    return [None, apply_op("AvgPool3D", input=grad, **_attrs_of(op, _POOL_KEYS))]


@gradient("MaxPool3DGrad")
def _max_pool3d_grad_grad(op, grad):
    return [None, None,
            apply_op("MaxPool3DGradGrad", orig_input=op.inputs[0], orig_output=op.inputs[1],
                     grad=grad, **_attrs_of(op, _POOL_KEYS))]


@gradient("MaxPool3DGradGrad")
def _max_pool3d_grad_grad_grad(op, grad):
    return [None, None,
            apply_op("MaxPool3DGrad", orig_input=op.inputs[0], orig_output=op.inputs[1],
                     grad=grad, **_attrs_of(op, _POOL_KEYS))]
