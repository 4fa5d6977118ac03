"""Comparisons (Equal, Less, ...), logical ops (LogicalAnd, LogicalOr, LogicalNot) and
selection (Select, SelectV2, Where). Each op's definition and TF1 wrapper sit together with
its gradient or `not_differentiable`; kernels are in tensorflux/kernels/cpu/comparison_ops.py.
tensorflux/ops/math_ops.py re-exports the TF1 names, as TensorFlow's math_ops has them.
"""

from __future__ import annotations

from tensorflux.framework import common_shapes, dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient, not_differentiable
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops
from tensorflux.ops.math_ops import (
    _binary,
    _binary_operator,
    _binary_wrapper,
    _merge_shapes,
    _shape_str,
    _zeros,
    defers_operators,
)

# The TF1 public names of this module.
__all__ = [
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
    "logical_or", "logical_not", "logical_xor", "where", "where_v2"
]


# ---- comparisons and logic ----------------------------------------------------------------


def _comparison_shape(op):
    try:
        return common_shapes.broadcast_binary(op)
    except ValueError:
        if op.attrs.get("incompatible_shape_error", True):
            raise
        return [tensor_shape.unknown_shape()]


for _op_type in ("Equal", "NotEqual"):
    _binary(_op_type, "type", out="bool",
            extra_attrs=["incompatible_shape_error: bool = true"],
            shape_fn=_comparison_shape, is_commutative=True, flops="binary")
equal = _binary_wrapper("Equal", "equal", "x == y elementwise, with broadcasting "
                        "(`tf.equal`).")
not_equal = _binary_wrapper("NotEqual", "not_equal", "x != y elementwise, with "
                            "broadcasting (`tf.not_equal`).")

_COMPARABLE = ("{float32, float64, int32, uint8, int16, int8, int64, bfloat16, uint16, "
               "float16, uint32, uint64}")
for _op_type in ("Less", "LessEqual", "Greater", "GreaterEqual"):
    _binary(_op_type, _COMPARABLE, out="bool", flops="binary")
less = _binary_wrapper("Less", "less", "x < y elementwise, with broadcasting (`tf.less`).")
less_equal = _binary_wrapper("LessEqual", "less_equal", "x <= y elementwise, with "
                             "broadcasting (`tf.less_equal`).")
greater = _binary_wrapper("Greater", "greater", "x > y elementwise, with broadcasting "
                          "(`tf.greater`).")
greater_equal = _binary_wrapper("GreaterEqual", "greater_equal", "x >= y elementwise, with "
                                "broadcasting (`tf.greater_equal`).")

for _op_type in ("LogicalAnd", "LogicalOr"):
    define_op(_op_type, inputs=["x: bool", "y: bool"], outputs=["z: bool"],
              shape_fn=common_shapes.broadcast_binary, broadcasts=True, is_commutative=True)
define_op("LogicalNot", inputs=["x: bool"], outputs=["y: bool"],
          shape_fn=common_shapes.unchanged)


def logical_and(x, y, name: str | None = None):
    """x AND y elementwise, with broadcasting (`tf.logical_and`)."""
    return apply_op("LogicalAnd", x=x, y=y, name=name or "LogicalAnd")


def logical_or(x, y, name: str | None = None):
    """x OR y elementwise, with broadcasting (`tf.logical_or`)."""
    return apply_op("LogicalOr", x=x, y=y, name=name or "LogicalOr")


def logical_not(x, name: str | None = None):
    """NOT x elementwise (`tf.logical_not`)."""
    return apply_op("LogicalNot", x=x, name=name or "LogicalNot")


def logical_xor(x, y, name: str = "LogicalXor"):
    """x XOR y elementwise, with broadcasting (`tf.logical_xor`): (x | y) & !(x & y)."""
    return logical_and(logical_or(x, y), logical_not(logical_and(x, y)), name=name)


not_differentiable("Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual",
                   "LogicalAnd", "LogicalOr", "LogicalNot")


# ---- Select, SelectV2, Where -------------------------------------------------------------


def _select_shape(op):
    cond, t, e = (x.shape for x in op.inputs)
    out = _merge_shapes(t, e)
    if cond.ndims is None or out.ndims is None or cond.ndims == 0:
        return [out]
    if cond.ndims == 1 and out.ndims > 1:
        c0, t0 = cond.as_list()[0], out.as_list()[0]
        if c0 is not None and t0 is not None and c0 != t0:
            raise ValueError(f"Dimension 0 in both shapes must be equal, but are {c0} and "
                             f"{t0}. Shapes are {_shape_str([c0])} and {_shape_str([t0])}.")
        return [tensor_shape.TensorShape([t0 if t0 is not None else c0] +
                                         out.as_list()[1:])]
    return [_merge_shapes(out, cond)]


define_op("Select", inputs=["condition: bool", "t: T", "e: T"], outputs=["output: T"],
          attrs=["T: type"], shape_fn=_select_shape)


@gradient("Select")
def _select_grad(op, grad):
    c = op.inputs[0]
    zeros = array_ops.zeros_like(op.inputs[1])
    return [None, apply_op("Select", condition=c, t=grad, e=zeros),
            apply_op("Select", condition=c, t=zeros, e=grad)]


def _select_v2_shape(op):
    c, t, e = (x.shape for x in op.inputs)
    return [common_shapes.broadcast_shapes(common_shapes.broadcast_shapes(t, e), c)]


define_op("SelectV2", inputs=["condition: bool", "t: T", "e: T"], outputs=["output: T"],
          attrs=["T: type"], shape_fn=_select_v2_shape, broadcasts=True)


@gradient("SelectV2")
def _select_v2_grad(op, grad):
    c = op.inputs[0]
    zeros = _zeros(grad)
    return [None, where_v2(c, grad, zeros), where_v2(c, zeros, grad)]


def _where_shape(op):
    rank = op.inputs[0].shape.ndims
    return [tensor_shape.TensorShape([None, rank]) if rank is not None
            else tensor_shape.TensorShape([None, None])]


define_op("Where", inputs=["input: T"], outputs=["index: int64"],
          attrs=["T: {float32, float64, int32, uint8, int16, int8, complex64, int64, qint8, "
                 "quint8, qint32, bfloat16, qint16, quint16, uint16, complex128, float16, "
                 "uint32, uint64, bool} = DT_BOOL"], shape_fn=_where_shape)
not_differentiable("Where")


def where(condition, x=None, y=None, name: str | None = None):
    """TF1's `tf.where`.

    With x and y: elements of x where `condition` is true, of y elsewhere (Select). x and y
    have one shape; `condition` has that shape too, or is a vector matching their first
    dimension (whole rows are picked), or is a scalar.
    Without them: the coordinates of the true (non-zero) elements of `condition`, an int64
    tensor of shape [num_true, rank(condition)] (Where).

    Raises:
      ValueError: only one of x and y is given, or the shapes do not fit.
    """
    if x is None and y is None:
        with graph_lib.name_scope(name, "Where", [condition]) as name:
            condition = convert_to_tensor(condition, preferred_dtype=dtypes.bool,
                                          name="condition")
            return apply_op("Where", input=condition, name=name)
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    return apply_op("Select", condition=condition, t=x, e=y, name=name or "Select")


select = where  # the pre-1.0 name, still used by library code


def where_v2(condition, x=None, y=None, name: str | None = None):
    """`tf.where_v2`: like `where`, but condition, x and y broadcast together (SelectV2)."""
    if x is None and y is None:
        return where(condition, name=name)
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    return apply_op("SelectV2", condition=condition, t=x, e=y, name=name or "SelectV2")


# ---- Tensor operators (TF names the ops as below: `a < b` is a Less named "Less") --------


def _and(x, y, name=None):
    if x.dtype.base_dtype is dtypes.bool:
        return logical_and(x, y, name=name)
    return apply_op("BitwiseAnd", x=x, y=y, name=name)


def _or(x, y, name=None):
    if x.dtype.base_dtype is dtypes.bool:
        return logical_or(x, y, name=name)
    return apply_op("BitwiseOr", x=x, y=y, name=name)


def _xor(x, y, name=None):
    if x.dtype.base_dtype is dtypes.bool:
        return logical_xor(x, y, name=name)
    return apply_op("BitwiseXor", x=x, y=y, name=name)


def _invert(x, name=None):
    if x.dtype.base_dtype is dtypes.bool:
        return logical_not(x, name=name)
    return apply_op("Invert", x=x, name=name or "Invert")


for _name, _fn in (("and", _and), ("or", _or), ("xor", _xor)):
    Tensor._override_operator(f"__{_name}__", _binary_operator(_fn, _name))
    Tensor._override_operator(f"__r{_name}__", _binary_operator(_fn, _name, reverse=True))
Tensor._override_operator("__invert__", lambda self: _invert(self))
for _name, _fn in (("lt", less), ("le", less_equal), ("gt", greater),
                   ("ge", greater_equal)):
    Tensor._override_operator(
        f"__{_name}__", lambda self, other, _fn=_fn: NotImplemented
        if defers_operators(other) else _fn(self, other))
