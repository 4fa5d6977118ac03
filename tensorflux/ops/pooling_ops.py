"""Pooling: MaxPool, AvgPool and their gradient ops (MaxPoolGrad, MaxPoolGradGrad,
AvgPoolGrad), with the TF1 wrappers `tf.nn.max_pool` and `tf.nn.avg_pool`. Each op's
definition, shape function, TF1 wrapper and gradient sit together; kernels are in
tensorflux/kernels/cpu/pooling_ops.py. tensorflux/ops/nn_ops.py re-exports the TF1 names.
"""

from __future__ import annotations

from tensorflux.framework import graph as graph_lib
from tensorflux.framework import tensor_shape
from tensorflux.framework.common_shapes import checked_dims
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient
from tensorflux.ops.conv_ops import (
    _FLOATS,
    _channel_index,
    _convert_padding,
    _four,
    _get_sequence,
    _out_dim,
    _padding_pairs,
    _shape_of,
    _sizes_shape,
)

# The TF1 public names of this module (tf.nn.*).
__all__ = ["max_pool", "avg_pool"]


# ---- MaxPool, AvgPool and their gradients ------------------------------------------------


def _pool_output(op, x):
    ksize = _four(op, "ksize", "ksize")
    strides = _four(op, "strides", "stride")
    x = x or [None] * 4
    padding = op.attrs["padding"]
    pairs = _padding_pairs(op) if "explicit_paddings" in op.attrs else [(0, 0)] * 4
    return [_out_dim(x[i], ksize[i], strides[i], 1, padding, pairs[i]) for i in range(4)]


def _pool_shape(op):
    return [_pool_output(op, checked_dims(op.inputs[0], rank=4))]


def _max_pool_grad_shape(op):
    x = checked_dims(op.inputs[0], rank=4)
    checked_dims(op.inputs[1], rank=4)
    checked_dims(op.inputs[2], rank=4)
    return [op.inputs[0].shape if x is not None else [None] * 4]


def _max_pool_grad_grad_shape(op):
    checked_dims(op.inputs[0], rank=4)
    return [op.inputs[1].shape.merge_with(tensor_shape.unknown_shape(rank=4))]


def _avg_pool_grad_shape(op):
    checked_dims(op.inputs[1], rank=4)
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
          shape_fn=_pool_shape, flops="pool")
define_op("MaxPoolGrad", inputs=["orig_input: T", "orig_output: T", "grad: T"],
          outputs=["output: T"], attrs=_POOL_WINDOW + _EXPLICIT_POOL + _FORMAT +
          [_MAX_POOL_GRAD_TYPES], shape_fn=_max_pool_grad_shape, flops="pool")
define_op("MaxPoolGradGrad", inputs=["orig_input: T", "orig_output: T", "grad: T"],
          outputs=["output: T"], attrs=_POOL_WINDOW + ["padding: {'SAME', 'VALID'}"] + _FORMAT
          + [_MAX_POOL_GRAD_TYPES.replace(" = DT_FLOAT", "")],
          shape_fn=_max_pool_grad_grad_shape)
define_op("AvgPool", inputs=["value: T"], outputs=["output: T"],
          attrs=_POOL_WINDOW + ["padding: {'SAME', 'VALID'}"] + _FORMAT + [_FLOATS],
          shape_fn=_pool_shape, flops="pool")
define_op("AvgPoolGrad", inputs=["orig_input_shape: int32", "grad: T"], outputs=["output: T"],
          attrs=_POOL_WINDOW + ["padding: {'SAME', 'VALID'}"] + _FORMAT + [_FLOATS],
          shape_fn=_avg_pool_grad_shape, flops="pool")


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


# ---- MaxPoolWithArgmax -------------------------------------------------------------------

_ARGMAX_ATTRS = _POOL_WINDOW + ["Targmax: {int32, int64} = DT_INT64",
                                "padding: {'SAME', 'VALID'}",
                                "include_batch_in_index: bool = false"]
_REAL = ("T: {float, double, int32, uint8, int16, int8, int64, bfloat16, uint16, half, "
         "uint32, uint64}")


def _with_argmax_shape(op):
    out = _pool_output(op, checked_dims(op.inputs[0], rank=4))
    return [out, out]


define_op("MaxPoolWithArgmax", inputs=["input: T"],
          outputs=["output: T", "argmax: Targmax"],
          attrs=["ksize: list(int) >= 4", "strides: list(int) >= 4",
                 "Targmax: {int32, int64} = DT_INT64", "padding: {'SAME', 'VALID'}",
                 "include_batch_in_index: bool = false", _REAL],
          shape_fn=_with_argmax_shape, flops="pool")
define_op("MaxPoolGradWithArgmax", inputs=["input: T", "grad: T", "argmax: Targmax"],
          outputs=["output: T"], attrs=_ARGMAX_ATTRS + [_REAL],
          shape_fn=lambda op: [op.inputs[0].shape], flops="pool")
define_op("MaxPoolGradGradWithArgmax", inputs=["input: T", "grad: T", "argmax: Targmax"],
          outputs=["output: T"], attrs=_ARGMAX_ATTRS + [_REAL],
          shape_fn=lambda op: [op.inputs[2].shape], flops="pool")


def max_pool_with_argmax(input, ksize, strides, padding, data_format="NHWC",  # noqa: A002
                         Targmax=None, name=None, output_dtype=None,  # noqa: N803 - TF1 name
                         include_batch_in_index=False):
    """(max of each window, flattened index of that max) (`tf.nn.max_pool_with_argmax`).

    The index of input element [b, y, x, c] is ((y * width + x) * channels + c), plus
    b * height * width * channels with `include_batch_in_index`; among equal maxima the
    first in the window (row-major) wins, as TensorFlow's.

    Raises:
      ValueError: data_format other than NHWC, or both Targmax and output_dtype given.
    """
    if data_format != "NHWC":
        raise ValueError("Data formats other than 'NHWC' are not yet supported")
    if Targmax is not None and output_dtype is not None and Targmax != output_dtype:
        raise ValueError("Cannot specify both Targmax and output_dtype")
    targmax = Targmax if Targmax is not None else (output_dtype or "int64")
    ksize, strides, _ = _pool_args(ksize, strides, data_format)
    return apply_op("MaxPoolWithArgmax", input=input, ksize=ksize, strides=strides,
                    padding=padding, Targmax=targmax,
                    include_batch_in_index=include_batch_in_index,
                    name=name or "MaxPoolWithArgmax")


def _argmax_attrs_of(op):
    return {k: op.attrs[k] for k in ("ksize", "strides", "padding", "include_batch_in_index")}


@gradient("MaxPoolWithArgmax")
def _max_pool_with_argmax_grad(op, grad, unused_argmax_grad):
    return [apply_op("MaxPoolGradWithArgmax", input=op.inputs[0], grad=grad,
                     argmax=op.outputs[1], **_argmax_attrs_of(op))]


@gradient("MaxPoolGradWithArgmax")
def _max_pool_grad_with_argmax_grad(op, grad):
    return [None, apply_op("MaxPoolGradGradWithArgmax", input=op.inputs[0], grad=grad,
                           argmax=op.inputs[2], **_argmax_attrs_of(op)), None]


@gradient("MaxPoolGradGradWithArgmax")
def _max_pool_grad_grad_with_argmax_grad(op, grad):
    return [None, apply_op("MaxPoolGradWithArgmax", input=op.inputs[0], grad=grad,
                           argmax=op.inputs[2], **_argmax_attrs_of(op)), None]


__all__ += ["max_pool_with_argmax"]
