"""Grayscale morphology: Dilation2D and its two gradients, with the TF1 wrappers
`tf.nn.dilation2d` and `tf.nn.erosion2d` (an erosion is the dilation of the negated input
by the reflected kernel, as TensorFlow builds it). Kernels: kernels/cpu/morphology_ops.py.
"""

from __future__ import annotations

from tensorflux.framework import graph as graph_lib
from tensorflux.framework.common_shapes import checked_dims
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient
from tensorflux.ops import joining_ops, unary_ops
from tensorflux.ops.conv_ops import _out_dim

__all__ = ["dilation2d", "erosion2d"]

_ATTRS = ["T: {float, double, int32, uint8, int16, int8, int64, bfloat16, uint16, half, "
          "uint32, uint64}", "strides: list(int) >= 4", "rates: list(int) >= 4",
          "padding: {'SAME', 'VALID'}"]


def _dilation_shape(op):
    x = checked_dims(op.inputs[0], rank=4) or [None] * 4
    f = checked_dims(op.inputs[1], rank=3) or [None] * 3
    s, r = op.attrs["strides"], op.attrs["rates"]
    pad = op.attrs["padding"]
    out = [x[0]]
    for axis in (1, 2):
        k = f[axis - 1]
        eff = None if k is None else (k - 1) * r[axis] + 1
        out.append(_out_dim(x[axis], eff, s[axis], 1, pad, (0, 0)) if eff is not None
                   else None)
    out.append(x[3] if x[3] is not None else f[2])
    return [out]


define_op("Dilation2D", inputs=["input: T", "filter: T"], outputs=["output: T"],
          attrs=_ATTRS, shape_fn=_dilation_shape)
define_op("Dilation2DBackpropInput", inputs=["input: T", "filter: T", "out_backprop: T"],
          outputs=["in_backprop: T"], attrs=_ATTRS, shape_fn=lambda op: [op.inputs[0].shape])
define_op("Dilation2DBackpropFilter", inputs=["input: T", "filter: T", "out_backprop: T"],
          outputs=["filter_backprop: T"], attrs=_ATTRS,
          shape_fn=lambda op: [op.inputs[1].shape])


def _four(values, name):
    values = list(values)
    if len(values) != 4 or values[0] != 1 or values[3] != 1:
        raise ValueError(f"{name} must be [1, h, w, 1], got {values}")
    return values


def dilation2d(input, filter=None, strides=None, rates=None, padding=None,  # noqa: A002
               name=None, filters=None, dilations=None):
    """Grayscale dilation of NHWC `input` by the [h, w, channels] structuring function
    `filter` (`tf.nn.dilation2d`): the max over the window of input + filter."""
    filter = filters if filter is None else filter  # noqa: A001
    rates = dilations if rates is None else rates
    return apply_op("Dilation2D", input=input, filter=filter,
                    strides=_four(strides, "strides"), rates=_four(rates, "rates"),
                    padding=padding, name=name or "Dilation2D")


def erosion2d(value, kernel, strides, rates, padding, name=None):
    """Grayscale erosion (`tf.nn.erosion2d`): -dilation2d(-value, kernel reflected in its
    two spatial axes)."""
    with graph_lib.name_scope(name, "erosion2d", [value, kernel]) as scope:
        reflected = joining_ops.reverse(kernel, [0, 1])
        return unary_ops.negative(dilation2d(unary_ops.negative(value), reflected, strides,
                                            rates, padding), name=scope)


def _attrs_of(op):
    return {k: op.attrs[k] for k in ("strides", "rates", "padding")}


@gradient("Dilation2D")
def _dilation2d_grad(op, grad):
    x, f = op.inputs
    return [apply_op("Dilation2DBackpropInput", input=x, filter=f, out_backprop=grad,
                     **_attrs_of(op)),
            apply_op("Dilation2DBackpropFilter", input=x, filter=f, out_backprop=grad,
                     **_attrs_of(op))]


@gradient("Dilation2DBackpropInput")
def _dilation2d_backprop_input_grad(op, grad):
    raise LookupError("No gradient defined for Dilation2DBackpropInput")


@gradient("Dilation2DBackpropFilter")
def _dilation2d_backprop_filter_grad(op, grad):
    raise LookupError("No gradient defined for Dilation2DBackpropFilter")
