"""Math ops: elementwise arithmetic with NumPy broadcasting, comparisons, reductions,
matrices. Each op's definition, TF1 wrapper and gradient sit together; kernels are in
tensorflux/kernels/cpu/math_ops.py.

Gradients of ops defined with `broadcasts=True` return gradients shaped like the op's
output; the gradient driver (ops/gradients.py) sums them back to each input's shape.

This module defines TF1's `range`, `abs`, `pow`, `round` and `complex`, so inside it the
Python builtins of those names are reached as `builtins.range` and so on.
"""

from __future__ import annotations

import builtins
import collections.abc

import numpy as np

from tensorflux.framework import common_shapes, dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient, not_differentiable
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor

# The TF1 public names of this module.
__all__ = [
    # elementwise binary
    "add", "subtract", "multiply", "div", "divide", "truediv", "realdiv", "floordiv",
    "floor_div", "floormod", "mod", "truncatediv", "truncatemod", "pow", "maximum",
    "minimum", "squared_difference", "div_no_nan", "atan2", "scalar_mul",
    # elementwise unary
    "negative", "abs", "sign", "square", "sqrt", "rsqrt", "exp", "expm1", "log", "log1p",
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh",
    "atanh", "tanh", "sigmoid", "reciprocal", "floor", "ceil", "round", "rint", "erf",
    "erfc", "lgamma", "digamma", "is_nan", "is_inf", "is_finite", "real", "imag", "conj",
    "complex", "angle",
    # sums, casts, comparisons, selection
    "add_n", "cast", "to_float", "to_double", "to_int32", "to_int64", "to_bfloat16",
    "to_complex64", "to_complex128", "equal", "not_equal", "less", "less_equal",
    "greater", "greater_equal", "logical_and", "logical_or", "logical_not", "logical_xor",
    "where", "where_v2",
    # reductions
    "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_all",
    "reduce_any", "reduce_logsumexp", "reduce_euclidean_norm", "count_nonzero", "argmax",
    "argmin",
    # matrices
    "matmul", "matrix_inverse", "matrix_determinant", "cholesky",
    # sequences and segments
    "range", "cumsum", "cumprod", "unsorted_segment_sum",
]

# Type sets, spelled as TensorFlow's registrations spell them.
_FLOAT = "{bfloat16, float16, float32, float64}"
_FLOAT_COMPLEX = "{bfloat16, float16, float32, float64, complex64, complex128}"
_SIGNED_COMPLEX = ("{bfloat16, float16, float32, float64, int8, int16, int32, int64, "
                   "complex64, complex128}")
_NUMERIC = ("{bfloat16, float16, float32, float64, uint8, int8, uint16, int16, int32, "
            "uint32, uint64, int64, complex64, complex128}")
_REAL = ("{bfloat16, float16, float32, float64, int8, uint8, int16, uint16, int32, "
         "uint32, int64, uint64}")
_INTEGER = "{int8, int16, int32, int64, uint8, uint16, uint32, uint64}"
_REDUCIBLE = "numbertype"
_ORDERED = ("{float32, float64, int32, uint8, int16, int8, int64, bfloat16, uint16, "
            "float16, uint32, uint64, qint8, quint8, qint32, qint16, quint16}")
_TIDX = "Tidx: {int32, int64} = DT_INT32"


def _conj(x):
    """conj(x) for complex tensors; x itself otherwise (as TF's gradients use it)."""
    return conj(x) if x.dtype.is_complex else x


def _array_ops():
    from tensorflux.ops import array_ops

    return array_ops


def _shape_str(dims) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"


def _merge_shapes(a: tensor_shape.TensorShape, b: tensor_shape.TensorShape):
    """a merged with b, or ValueError with TensorFlow's shape-inference message."""
    if a.ndims is None:
        return b
    if b.ndims is None:
        return a
    if a.ndims != b.ndims:
        raise ValueError(f"Shapes must be equal rank, but are {a.ndims} and {b.ndims}")
    out = []
    for i, (x, y) in enumerate(zip(a.as_list(), b.as_list(), strict=True)):
        if x is not None and y is not None and x != y:
            raise ValueError(f"Dimension {i} in both shapes must be equal, but are {x} and "
                             f"{y}. Shapes are {_shape_str(a.as_list())} and "
                             f"{_shape_str(b.as_list())}.")
        out.append(x if x is not None else y)
    return tensor_shape.TensorShape(out)


# ==========================================================================================
# Elementwise binary ops (NumPy broadcasting).


def _binary(op_type: str, types: str, out: str = "T", extra_attrs=(), inputs=("x", "y"),
            shape_fn=common_shapes.broadcast_binary, **flags) -> None:
    define_op(op_type, inputs=[f"{n}: T" for n in inputs], outputs=[f"z: {out}"],
              attrs=[f"T: {types}", *extra_attrs], shape_fn=shape_fn, broadcasts=True,
              **flags)


def _binary_wrapper(op_type: str, public: str, doc: str, default_name: str | None = None):
    """The TF1 wrapper of a binary op: `fn(x, y, name=None)`."""

    def wrapper(x, y, name=None):
        return apply_op(op_type, x=x, y=y, name=name or default_name or op_type)

    wrapper.__name__ = wrapper.__qualname__ = public
    wrapper.__doc__ = doc
    return wrapper


_binary("Add", ("{bfloat16, float16, float32, float64, uint8, int8, int16, int32, int64, "
                "complex64, complex128, string}"))
_binary("AddV2", _NUMERIC, is_commutative=True)


def add(x, y, name: str | None = None):
    """x + y elementwise, with broadcasting (`tf.add`); strings are concatenated.

    Args:
      x, y: tensors (or values convertible to them) of one dtype.
      name: the op name (default "Add").

    Returns:
      A Tensor of the dtype of x.

    Raises:
      TypeError: x and y have different dtypes.
      ValueError: their static shapes do not broadcast.
    """
    with graph_lib.name_scope(name, "Add", [x, y]) as name:
        x = convert_to_tensor(x, name="x")
        op_type = "Add" if x.dtype.base_dtype is dtypes.string else "AddV2"
        return apply_op(op_type, x=x, y=y, name=name)


@gradient("AddV2")
def _add_grad(op, grad):
    return [grad, grad]  # the gradient driver sums over broadcast dimensions


@gradient("Add")
def _add_v1_grad(op, grad):
    return [grad, grad]


_binary("Sub", _NUMERIC)
subtract = _binary_wrapper("Sub", "subtract", "x - y elementwise, with broadcasting "
                           "(`tf.subtract`).")


@gradient("Sub")
def _sub_grad(op, grad):
    return [grad, negative(grad)]


_binary("Mul", _NUMERIC, is_commutative=True)
multiply = _binary_wrapper("Mul", "multiply", "x * y elementwise, with broadcasting "
                           "(`tf.multiply`).")


@gradient("Mul")
def _mul_grad(op, grad):
    x, y = op.inputs
    return [multiply(grad, _conj(y)), multiply(_conj(x), grad)]


def _div_grad(op, grad):
    x, y = op.inputs
    cy = _conj(y)
    return [realdiv(grad, cy), multiply(grad, realdiv(realdiv(negative(_conj(x)), cy), cy))]


_binary("Div", _NUMERIC)
_binary("RealDiv", _NUMERIC)
gradient("Div")(_div_grad)
gradient("RealDiv")(_div_grad)
realdiv = _binary_wrapper("RealDiv", "realdiv", "x / y elementwise for real types "
                          "(`tf.realdiv`).")

# `tf.truediv`: integers are cast to a floating type first, as Python 3's `/` does.
_TRUEDIV_TABLE = {
    dtypes.uint8: dtypes.float32, dtypes.int8: dtypes.float32,
    dtypes.uint16: dtypes.float32, dtypes.int16: dtypes.float32,
    dtypes.uint32: dtypes.float64, dtypes.uint64: dtypes.float64,
    dtypes.int32: dtypes.float64, dtypes.int64: dtypes.float64,
    dtypes.bfloat16: None, dtypes.float16: None, dtypes.float32: None,
    dtypes.float64: None, dtypes.complex64: None, dtypes.complex128: None,
}


def _same_dtype_pair(x, y):
    """x and y as tensors of one dtype (y's Python values take x's dtype).

    Raises:
      TypeError: their dtypes differ.
    """
    x = convert_to_tensor(x, name="x")
    y = convert_to_tensor(y, preferred_dtype=x.dtype.base_dtype, name="y")
    if x.dtype.base_dtype != y.dtype.base_dtype:
        raise TypeError(f"`x` and `y` must have the same dtype, got tf.{x.dtype.base_dtype.name}"
                        f" != tf.{y.dtype.base_dtype.name}.")
    return x, y


def truediv(x, y, name: str | None = None):
    """x / y with Python 3 semantics (`tf.truediv`): integers become floating first
    (8- and 16-bit ones float32, others float64).

    Raises:
      TypeError: x and y have different dtypes, or a dtype that cannot be divided.
    """
    with graph_lib.name_scope(name, "truediv", [x, y]) as name:
        x, y = _same_dtype_pair(x, y)
        dt = x.dtype.base_dtype
        if dt not in _TRUEDIV_TABLE:
            allowed = ", ".join(f"tf.{d.name}" for d in _TRUEDIV_TABLE)
            raise TypeError(f"Invalid dtype tf.{dt.name} in __truediv__. Expected one of "
                            f"{{{allowed}}}.")
        target = _TRUEDIV_TABLE[dt]
        if target is not None:
            x, y = cast(x, target), cast(y, target)
        return apply_op("RealDiv", x=x, y=y, name=name)


divide = truediv


def div(x, y, name: str | None = None):
    """TF1's `tf.div`: RealDiv for floating and complex types, FloorDiv for integers."""
    with graph_lib.name_scope(name, "div", [x, y]) as name:
        x, y = _same_dtype_pair(x, y)
        dt = x.dtype.base_dtype
        op_type = "RealDiv" if dt.is_floating or dt.is_complex else "FloorDiv"
        return apply_op(op_type, x=x, y=y, name=name)


_binary("FloorDiv", _NUMERIC)
not_differentiable("FloorDiv")


def floordiv(x, y, name: str | None = None):
    """floor(x / y) elementwise (`tf.floordiv`): integer division rounding down."""
    with graph_lib.name_scope(name, "floordiv", [x, y]) as name:
        return apply_op("FloorDiv", x=x, y=y, name=name)


floor_div = _binary_wrapper("FloorDiv", "floor_div", "floor(x / y) elementwise.")

_binary("FloorMod", ("{int8, int16, int32, int64, uint8, uint16, uint32, uint64, bfloat16, "
                     "float16, float32, float64}"))
floormod = _binary_wrapper("FloorMod", "floormod", "x - floor(x / y) * y elementwise: the "
                           "remainder takes the sign of y (`tf.floormod`, `tf.mod`).")
mod = floormod


@gradient("FloorMod")
def _floor_mod_grad(op, grad):
    x, y = op.inputs
    return [grad, multiply(grad, negative(floordiv(x, y)))]


_binary("TruncateDiv", _NUMERIC)
truncatediv = _binary_wrapper("TruncateDiv", "truncatediv", "x / y rounded toward zero "
                              "(`tf.truncatediv`).")
not_differentiable("TruncateDiv")

_binary("TruncateMod", "{int32, int64, bfloat16, float16, float32, float64}")
truncatemod = _binary_wrapper("TruncateMod", "truncatemod", "The remainder of x / y rounded "
                              "toward zero; it takes the sign of x (`tf.truncatemod`).")


@gradient("TruncateMod")
def _truncate_mod_grad(op, grad):
    x, y = op.inputs
    return [grad, multiply(grad, negative(truncatediv(x, y)))]


_binary("Pow", ("{bfloat16, float32, float16, float64, int8, int16, int32, int64, "
                "complex64, complex128}"))


def pow(x, y, name: str | None = None):  # noqa: A001 - TF1's name
    """x ** y elementwise (`tf.pow`); integers to negative integer powers are an error."""
    with graph_lib.name_scope(name, "Pow", [x]) as name:
        return apply_op("Pow", x=x, y=y, name=name)


@gradient("Pow")
def _pow_grad(op, grad):
    x, y = op.inputs
    z = op.outputs[0]
    x, y, z = _conj(x), _conj(y), _conj(z)
    gx = multiply(grad, multiply(y, pow(x, subtract(y, _ones(y)))))
    if x.dtype.is_complex:
        mask = not_equal(x, _zeros(x))
    else:
        mask = greater(x, _zeros(x))
    safe_x = where_v2(mask, x, _ones(x))
    log_x = where_v2(mask, log(safe_x), _zeros(x))
    gy = multiply(grad, multiply(z, log_x))
    return [gx, gy]


def _zeros(x):
    """A scalar 0 of x's dtype (broadcasts against x)."""
    return convert_to_tensor(np.zeros((), x.dtype.base_dtype.as_numpy_dtype), name="zero")


def _ones(x):
    """A scalar 1 of x's dtype (broadcasts against x)."""
    return convert_to_tensor(np.ones((), x.dtype.base_dtype.as_numpy_dtype), name="one")


_binary("Maximum", _REAL)
maximum = _binary_wrapper("Maximum", "maximum", "max(x, y) elementwise, with broadcasting "
                          "(`tf.maximum`); NaN propagates.")


def _min_or_max_grad(op, grad, select_x):
    x, y = op.inputs
    zeros = _zeros(grad)
    return [where_v2(select_x, grad, zeros), where_v2(select_x, zeros, grad)]


@gradient("Maximum")
def _maximum_grad(op, grad):
    return _min_or_max_grad(op, grad, greater_equal(op.inputs[0], op.inputs[1]))


_binary("Minimum", _REAL)
minimum = _binary_wrapper("Minimum", "minimum", "min(x, y) elementwise, with broadcasting "
                          "(`tf.minimum`); NaN propagates.")


@gradient("Minimum")
def _minimum_grad(op, grad):
    return _min_or_max_grad(op, grad, less_equal(op.inputs[0], op.inputs[1]))


_binary("SquaredDifference", ("{bfloat16, float16, float32, float64, int32, int64, "
                              "complex64, complex128}"), is_commutative=True)
squared_difference = _binary_wrapper("SquaredDifference", "squared_difference",
                                     "(x - y) * conj(x - y) elementwise "
                                     "(`tf.squared_difference`).")


@gradient("SquaredDifference")
def _squared_difference_grad(op, grad):
    x, y = op.inputs
    two = convert_to_tensor(np.asarray(2, grad.dtype.base_dtype.as_numpy_dtype), name="two")
    gx = multiply(multiply(two, grad), subtract(x, y))
    return [_conj(gx), negative(_conj(gx))]


_binary("DivNoNan", "{float16, float32, bfloat16, float64, complex64, complex128}")


def div_no_nan(x, y, name: str | None = None):
    """x / y, or 0 where y is 0 (`tf.div_no_nan`)."""
    with graph_lib.name_scope(name, "div_no_nan", [x, y]) as name:
        x, y = _same_dtype_pair(x, y)
        return apply_op("DivNoNan", x=x, y=y, name=name)


@gradient("DivNoNan")
def _div_no_nan_grad(op, grad):
    x, y = op.inputs
    cy = _conj(y)
    return [div_no_nan(grad, cy),
            multiply(grad, div_no_nan(div_no_nan(negative(_conj(x)), cy), cy))]


_binary("Xlogy", "{float16, bfloat16, float32, float64, complex64, complex128}")
_binary("Xdivy", "{float16, bfloat16, float32, float64, complex64, complex128}")


@gradient("Xlogy")
def _xlogy_grad(op, grad):
    x, y = op.inputs
    not_zero_x = cast(not_equal(x, _zeros(x)), x.dtype)
    return [multiply(grad, apply_op("Xlogy", x=not_zero_x, y=y)),
            multiply(grad, apply_op("Xdivy", x=x, y=y))]


@gradient("Xdivy")
def _xdivy_grad(op, grad):
    x, y = op.inputs
    not_zero_x = cast(not_equal(x, _zeros(x)), x.dtype)
    return [multiply(grad, apply_op("Xdivy", x=not_zero_x, y=y)),
            multiply(grad, apply_op("Xdivy", x=negative(x), y=square(y)))]


_binary("Atan2", _FLOAT, inputs=("y", "x"))


def atan2(y, x, name: str | None = None):
    """The angle of the point (x, y), elementwise, in [-pi, pi] (`tf.atan2`)."""
    return apply_op("Atan2", y=y, x=x, name=name or "Atan2")


@gradient("Atan2")
def _atan2_grad(op, grad):
    y, x = op.inputs
    grad_inv = realdiv(grad, add(square(x), square(y)))
    return [multiply(x, grad_inv), multiply(negative(y), grad_inv)]


def scalar_mul(scalar, x, name: str | None = None):
    """scalar * x (`tf.scalar_mul`).

    Raises:
      ValueError: `scalar` is not a 0-D value.
    """
    base = x.dtype.base_dtype if isinstance(x, Tensor) else None
    scalar = convert_to_tensor(scalar, dtype=base, name="scalar")
    if scalar.shape.ndims != 0:
        raise ValueError(f"The input scalar must be a 0-D value. Received shape "
                         f"{tuple(scalar.shape.as_list()) if scalar.shape.ndims else None}.")
    if hasattr(x, "_is_indexed_slices"):
        return x._map_values(lambda v: multiply(scalar, v, name))
    with graph_lib.name_scope(name, "scalar_mul", [scalar, x]) as name:
        return multiply(scalar, x, name)


# ---- bitwise ops (for the `&`, `|`, `^`, `~` operators on integer tensors) ---------------

_binary("BitwiseAnd", _INTEGER, is_commutative=True)
_binary("BitwiseOr", _INTEGER, is_commutative=True)
_binary("BitwiseXor", _INTEGER, is_commutative=True)
define_op("Invert", inputs=["x: T"], outputs=["y: T"], attrs=[f"T: {_INTEGER}"],
          shape_fn=common_shapes.unchanged)
not_differentiable("BitwiseAnd")
not_differentiable("BitwiseOr")
not_differentiable("BitwiseXor")
not_differentiable("Invert")


# ==========================================================================================
# Elementwise unary ops.


def _unary(op_type: str, types: str, public: str, doc: str, out: str = "T"):
    """Defines `op_type` (x: T -> y: out) and returns its TF1 wrapper `fn(x, name=None)`.

    Like TensorFlow's, the wrapper maps an IndexedSlices through its values.
    """
    define_op(op_type, inputs=["x: T"], outputs=[f"y: {out}"], attrs=[f"T: {types}"],
              shape_fn=common_shapes.unchanged)

    def wrapper(x, name=None):
        if hasattr(x, "_is_indexed_slices"):
            return x._map_values(lambda v: wrapper(v, name))
        return apply_op(op_type, x=x, name=name or op_type)

    wrapper.__name__ = wrapper.__qualname__ = public
    wrapper.__doc__ = doc
    return wrapper


negative = _unary("Neg", _SIGNED_COMPLEX, "negative", "-x elementwise (`tf.negative`).")


@gradient("Neg")
def _neg_grad(op, grad):
    return [negative(grad)]


_abs = _unary("Abs", "{bfloat16, float16, float32, float64, int8, int16, int32, int64}",
              "abs", "|x| elementwise.")
define_op("ComplexAbs", inputs=["x: T"], outputs=["y: Tout"],
          attrs=["T: {complex64, complex128} = DT_COMPLEX64",
                 "Tout: {float32, float64} = DT_FLOAT"], shape_fn=common_shapes.unchanged)


def abs(x, name: str | None = None):  # noqa: A001 - TF1's name
    """|x| elementwise (`tf.abs`); for complex x the magnitude, of the real dtype."""
    if hasattr(x, "_is_indexed_slices"):
        return x._map_values(lambda v: abs(v, name))
    with graph_lib.name_scope(name, "Abs", [x]) as name:
        x = convert_to_tensor(x, name="x")
        if x.dtype.is_complex:
            return apply_op("ComplexAbs", x=x, Tout=x.dtype.real_dtype, name=name)
        return _abs(x, name=name)


@gradient("Abs")
def _abs_grad(op, grad):
    return [multiply(grad, sign(op.inputs[0]))]


@gradient("ComplexAbs")
def _complex_abs_grad(op, grad):
    x, y = op.inputs[0], op.outputs[0]
    zeros = _zeros(grad)
    return [div_no_nan(multiply(complex(grad, zeros), x), complex(y, zeros))]


sign = _unary("Sign", _SIGNED_COMPLEX, "sign", "-1, 0 or 1 by the sign of x elementwise "
              "(x / |x| for complex x) (`tf.sign`).")


@gradient("Sign")
def _sign_grad(op, grad):
    return [_array_ops().zeros_like(op.inputs[0])]


square = _unary("Square", ("{bfloat16, float16, float32, float64, int8, int16, int32, int64, "
                           "uint8, uint16, uint32, uint64, complex64, complex128}"),
                "square", "x * x elementwise (`tf.square`).")


@gradient("Square")
def _square_grad(op, grad):
    x = op.inputs[0]
    two = convert_to_tensor(np.asarray(2, x.dtype.base_dtype.as_numpy_dtype), name="two")
    return [multiply(grad, multiply(two, _conj(x)))]


def _grad_op(op_type: str, public: str, doc: str):
    """Defines a backward op `op_type(y, dy) -> z` and returns its wrapper."""
    define_op(op_type, inputs=["y: T", "dy: T"], outputs=["z: T"],
              attrs=[f"T: {_FLOAT_COMPLEX}"], shape_fn=_grad_op_shape)

    def wrapper(y, dy, name=None):
        return apply_op(op_type, y=y, dy=dy, name=name or op_type)

    wrapper.__name__ = wrapper.__qualname__ = public
    wrapper.__doc__ = doc
    return wrapper


def _grad_op_shape(op):
    return [_merge_shapes(op.inputs[0].shape, op.inputs[1].shape)]


sqrt = _unary("Sqrt", _FLOAT_COMPLEX, "sqrt", "The square root of x elementwise (`tf.sqrt`).")
sqrt_grad = _grad_op("SqrtGrad", "sqrt_grad", "dy * 0.5 / y, for y = sqrt(x).")


@gradient("Sqrt")
def _sqrt_grad(op, grad):
    return [sqrt_grad(op.outputs[0], grad)]


@gradient("SqrtGrad")
def _sqrt_grad_grad(op, grad):
    a = op.inputs[0]
    y = op.outputs[0]  # y = 0.5 * b / conj(a)
    ga = realdiv(grad, a)
    return [multiply(negative(_conj(ga)), y), multiply(_const_like(0.5, ga), ga)]


def _const_like(value, x, name="c"):
    return convert_to_tensor(np.asarray(value, x.dtype.base_dtype.as_numpy_dtype), name=name)


rsqrt = _unary("Rsqrt", _FLOAT_COMPLEX, "rsqrt", "1 / sqrt(x) elementwise (`tf.rsqrt`).")
rsqrt_grad = _grad_op("RsqrtGrad", "rsqrt_grad", "dy * -0.5 * y^3, for y = rsqrt(x).")


@gradient("Rsqrt")
def _rsqrt_grad(op, grad):
    return [rsqrt_grad(op.outputs[0], grad)]


@gradient("RsqrtGrad")
def _rsqrt_grad_grad(op, grad):
    a, b = op.inputs
    ca, cg = _conj(a), _conj(grad)
    grad_a = multiply(multiply(multiply(_const_like(-1.5, a), cg), b), square(ca))
    return [grad_a, rsqrt_grad(ca, grad)]


exp = _unary("Exp", _FLOAT_COMPLEX, "exp", "e^x elementwise (`tf.exp`).")


@gradient("Exp")
def _exp_grad(op, grad):
    return [multiply(grad, _conj(op.outputs[0]))]


expm1 = _unary("Expm1", _FLOAT_COMPLEX, "expm1", "e^x - 1 elementwise (`tf.expm1`).")


@gradient("Expm1")
def _expm1_grad(op, grad):
    return [multiply(grad, exp(_conj(op.inputs[0])))]


log = _unary("Log", _FLOAT_COMPLEX, "log", "The natural logarithm of x elementwise "
             "(`tf.log`).")


@gradient("Log")
def _log_grad(op, grad):
    return [multiply(grad, reciprocal(_conj(op.inputs[0])))]


log1p = _unary("Log1p", _FLOAT_COMPLEX, "log1p", "log(1 + x) elementwise (`tf.log1p`).")


@gradient("Log1p")
def _log1p_grad(op, grad):
    x = _conj(op.inputs[0])
    return [multiply(grad, reciprocal(add(_ones(x), x)))]


sin = _unary("Sin", _FLOAT_COMPLEX, "sin", "sin(x) elementwise (`tf.sin`).")
cos = _unary("Cos", _FLOAT_COMPLEX, "cos", "cos(x) elementwise (`tf.cos`).")
tan = _unary("Tan", _FLOAT_COMPLEX, "tan", "tan(x) elementwise (`tf.tan`).")


@gradient("Sin")
def _sin_grad(op, grad):
    return [multiply(grad, cos(_conj(op.inputs[0])))]


@gradient("Cos")
def _cos_grad(op, grad):
    return [negative(multiply(grad, sin(_conj(op.inputs[0]))))]


@gradient("Tan")
def _tan_grad(op, grad):
    return [multiply(grad, square(reciprocal(cos(_conj(op.inputs[0])))))]


asin = _unary("Asin", _FLOAT_COMPLEX, "asin", "arcsin(x) elementwise (`tf.asin`).")
acos = _unary("Acos", _FLOAT_COMPLEX, "acos", "arccos(x) elementwise (`tf.acos`).")
atan = _unary("Atan", _FLOAT_COMPLEX, "atan", "arctan(x) elementwise (`tf.atan`).")


@gradient("Asin")
def _asin_grad(op, grad):
    x = _conj(op.inputs[0])
    return [multiply(grad, rsqrt(subtract(_ones(x), square(x))))]


@gradient("Acos")
def _acos_grad(op, grad):
    x = _conj(op.inputs[0])
    return [negative(multiply(grad, rsqrt(subtract(_ones(x), square(x)))))]


@gradient("Atan")
def _atan_grad(op, grad):
    x = _conj(op.inputs[0])
    return [multiply(grad, reciprocal(add(_ones(x), square(x))))]


sinh = _unary("Sinh", _FLOAT_COMPLEX, "sinh", "sinh(x) elementwise (`tf.sinh`).")
cosh = _unary("Cosh", _FLOAT_COMPLEX, "cosh", "cosh(x) elementwise (`tf.cosh`).")
asinh = _unary("Asinh", _FLOAT_COMPLEX, "asinh", "asinh(x) elementwise (`tf.asinh`).")
acosh = _unary("Acosh", _FLOAT_COMPLEX, "acosh", "acosh(x) elementwise (`tf.acosh`).")
atanh = _unary("Atanh", _FLOAT_COMPLEX, "atanh", "atanh(x) elementwise (`tf.atanh`).")


@gradient("Sinh")
def _sinh_grad(op, grad):
    return [multiply(grad, cosh(_conj(op.inputs[0])))]


@gradient("Cosh")
def _cosh_grad(op, grad):
    return [multiply(grad, sinh(_conj(op.inputs[0])))]


@gradient("Asinh")
def _asinh_grad(op, grad):
    return [realdiv(grad, cosh(_conj(op.outputs[0])))]


@gradient("Acosh")
def _acosh_grad(op, grad):
    return [realdiv(grad, sinh(_conj(op.outputs[0])))]


@gradient("Atanh")
def _atanh_grad(op, grad):
    x = _conj(op.inputs[0])
    return [multiply(grad, reciprocal(subtract(_ones(x), square(x))))]


tanh = _unary("Tanh", _FLOAT_COMPLEX, "tanh", "tanh(x) elementwise (`tf.tanh`).")
tanh_grad = _grad_op("TanhGrad", "tanh_grad", "dy * (1 - y^2), for y = tanh(x).")


@gradient("Tanh")
def _tanh_grad(op, grad):
    return [tanh_grad(_conj(op.outputs[0]), grad)]


@gradient("TanhGrad")
def _tanh_grad_grad(op, grad):
    a, b = _conj(op.inputs[0]), _conj(op.inputs[1])
    return [multiply(multiply(multiply(grad, _const_like(-2.0, a)), b), a),
            tanh_grad(a, grad)]


sigmoid = _unary("Sigmoid", _FLOAT_COMPLEX, "sigmoid", "1 / (1 + e^-x) elementwise "
                 "(`tf.sigmoid`).")
sigmoid_grad = _grad_op("SigmoidGrad", "sigmoid_grad", "dy * y * (1 - y), for y = "
                        "sigmoid(x).")


@gradient("Sigmoid")
def _sigmoid_grad(op, grad):
    return [sigmoid_grad(_conj(op.outputs[0]), grad)]


@gradient("SigmoidGrad")
def _sigmoid_grad_grad(op, grad):
    a, b = _conj(op.inputs[0]), _conj(op.inputs[1])
    gb = multiply(grad, b)
    return [subtract(gb, multiply(multiply(_const_like(2.0, a), gb), a)),
            sigmoid_grad(a, grad)]


reciprocal = _unary("Reciprocal", _SIGNED_COMPLEX, "reciprocal", "1 / x elementwise "
                    "(`tf.reciprocal`).")
define_op("Inv", inputs=["x: T"], outputs=["y: T"], attrs=[f"T: {_SIGNED_COMPLEX}"],
          shape_fn=common_shapes.unchanged)
reciprocal_grad = _grad_op("ReciprocalGrad", "reciprocal_grad", "-dy * y^2, for y = 1 / x.")
define_op("InvGrad", inputs=["y: T", "dy: T"], outputs=["z: T"],
          attrs=[f"T: {_FLOAT_COMPLEX}"], shape_fn=_grad_op_shape)


@gradient("Reciprocal")
def _reciprocal_grad(op, grad):
    return [reciprocal_grad(op.outputs[0], grad)]


@gradient("Inv")
def _inv_grad(op, grad):
    return [reciprocal_grad(op.outputs[0], grad)]


def _reciprocal_grad_grad(op, grad):
    a, b = op.inputs
    ca, cg = _conj(a), _conj(grad)
    return [multiply(multiply(multiply(cg, _const_like(-2.0, a)), b), ca),
            reciprocal_grad(ca, grad)]


gradient("ReciprocalGrad")(_reciprocal_grad_grad)
gradient("InvGrad")(_reciprocal_grad_grad)

floor = _unary("Floor", _FLOAT, "floor", "The largest integer not greater than x, "
               "elementwise (`tf.floor`).")
ceil = _unary("Ceil", _FLOAT, "ceil", "The smallest integer not less than x, elementwise "
              "(`tf.ceil`).")
_round = _unary("Round", _SIGNED_COMPLEX, "round", "x rounded half to even.")
rint = _unary("Rint", _FLOAT, "rint", "x rounded half to even (`tf.rint`).")


@gradient("Floor")
def _floor_grad(op, grad):
    return [None]


@gradient("Ceil")
def _ceil_grad(op, grad):
    return [None]


@gradient("Round")
def _round_grad(op, grad):
    return [None]


@gradient("Rint")
def _rint_grad(op, grad):
    return [None]


def round(x, name: str | None = None):  # noqa: A001 - TF1's name
    """x rounded half to even, elementwise (`tf.round`); integers are returned as they are."""
    x = convert_to_tensor(x, name="x")
    if x.dtype.is_integer:
        return x
    return _round(x, name=name)


erf = _unary("Erf", _FLOAT, "erf", "The Gauss error function of x elementwise (`tf.erf`).")
erfc = _unary("Erfc", _FLOAT, "erfc", "1 - erf(x) elementwise (`tf.erfc`).")


@gradient("Erf")
def _erf_grad(op, grad):
    x = op.inputs[0]
    two_over_root_pi = _const_like(2.0 / np.sqrt(np.pi), x)
    return [multiply(grad, multiply(two_over_root_pi, exp(negative(square(x)))))]


@gradient("Erfc")
def _erfc_grad(op, grad):
    x = op.inputs[0]
    minus_two_over_root_pi = _const_like(-2.0 / np.sqrt(np.pi), x)
    return [multiply(grad, multiply(minus_two_over_root_pi, exp(negative(square(x)))))]


lgamma = _unary("Lgamma", _FLOAT, "lgamma", "log(|Gamma(x)|) elementwise (`tf.lgamma`).")
digamma = _unary("Digamma", _FLOAT, "digamma", "The derivative of lgamma, elementwise "
                 "(`tf.digamma`).")


@gradient("Lgamma")
def _lgamma_grad(op, grad):
    return [multiply(grad, digamma(op.inputs[0]))]


not_differentiable("Digamma")  # its gradient needs Polygamma, which is not implemented

is_nan = _unary("IsNan", _FLOAT, "is_nan", "Which elements of x are NaN (`tf.is_nan`).",
                out="bool")
is_inf = _unary("IsInf", _FLOAT, "is_inf", "Which elements of x are +-inf (`tf.is_inf`).",
                out="bool")
is_finite = _unary("IsFinite", _FLOAT, "is_finite", "Which elements of x are finite "
                   "(`tf.is_finite`).", out="bool")
not_differentiable("IsNan", "IsInf", "IsFinite")

# ---- complex numbers ---------------------------------------------------------------------

for _op_type in ("Real", "Imag", "Angle"):
    define_op(_op_type, inputs=["input: T"], outputs=["output: Tout"],
              attrs=["T: {complex64, complex128} = DT_COMPLEX64",
                     "Tout: {float32, float64} = DT_FLOAT"], shape_fn=common_shapes.unchanged)
define_op("Conj", inputs=["input: T"], outputs=["output: T"],
          attrs=["T: {complex64, complex128, variant} = DT_COMPLEX64"],
          shape_fn=common_shapes.unchanged)
define_op("Complex", inputs=["real: T", "imag: T"], outputs=["out: Tout"],
          attrs=["T: {float32, float64} = DT_FLOAT",
                 "Tout: {complex64, complex128} = DT_COMPLEX64"],
          shape_fn=common_shapes.broadcast_binary, broadcasts=True)

_COMPLEX_OF = {dtypes.float32: dtypes.complex64, dtypes.float64: dtypes.complex128}


def real(input, name: str | None = None):  # noqa: A002 - TF1's argument name
    """The real part of a complex tensor (`tf.real`); a real tensor is returned as is."""
    with graph_lib.name_scope(name, "Real", [input]) as name:
        input = convert_to_tensor(input, name="input")  # noqa: A001
        if input.dtype.is_complex:
            return apply_op("Real", input=input, Tout=input.dtype.real_dtype, name=name)
        return input


def imag(input, name: str | None = None):  # noqa: A002
    """The imaginary part of a complex tensor (`tf.imag`); zeros for a real one."""
    with graph_lib.name_scope(name, "Imag", [input]) as name:
        input = convert_to_tensor(input, name="input")  # noqa: A001
        if input.dtype.is_complex:
            return apply_op("Imag", input=input, Tout=input.dtype.real_dtype, name=name)
        return _array_ops().zeros_like(input)


def angle(input, name: str | None = None):  # noqa: A002
    """The argument of each complex element (`tf.angle`); 0 or pi for real ones."""
    with graph_lib.name_scope(name, "Angle", [input]) as name:
        input = convert_to_tensor(input, name="input")  # noqa: A001
        if input.dtype.is_complex:
            return apply_op("Angle", input=input, Tout=input.dtype.real_dtype, name=name)
        return atan2(_array_ops().zeros_like(input), input, name=name)


def conj(x, name: str | None = None):
    """The complex conjugate (`tf.conj`); real tensors are returned as they are.

    Raises:
      TypeError: x is neither numeric nor variant.
    """
    if isinstance(x, Tensor) and (x.dtype.is_complex or x.dtype.base_dtype is dtypes.variant):
        return apply_op("Conj", input=x, name=name or "Conj")
    with graph_lib.name_scope(name, "Conj", [x]) as name:
        x = convert_to_tensor(x, name="x")
        if x.dtype.is_complex or x.dtype.base_dtype is dtypes.variant:
            return apply_op("Conj", input=x, name=name)
        if x.dtype.is_floating or x.dtype.is_integer:
            return x
        raise TypeError(f"Expected numeric or variant tensor, got dtype {x.dtype!r}")


def complex(real, imag, name: str | None = None):  # noqa: A001 - TF1's name
    """real + imag * 1j elementwise (`tf.complex`): complex64 from float32, complex128 from
    float64.

    Raises:
      TypeError: real and imag have different dtypes, or not float32/float64.
    """
    real = convert_to_tensor(real, name="real")
    imag = convert_to_tensor(imag, name="imag")
    if real.dtype.base_dtype != imag.dtype.base_dtype:
        raise TypeError(f"real and imag should have the same dtype, got {real.dtype.name} "
                        f"and {imag.dtype.name}")
    if real.dtype.base_dtype not in _COMPLEX_OF:
        raise TypeError(f"Types of real and imag don't match: {real.dtype.name} "
                        f"{imag.dtype.name}")
    return apply_op("Complex", real=real, imag=imag,
                    Tout=_COMPLEX_OF[real.dtype.base_dtype], name=name or "Complex")


@gradient("Real")
def _real_grad(op, grad):
    return [complex(grad, _zeros(grad))]


@gradient("Imag")
def _imag_grad(op, grad):
    return [complex(_zeros(grad), grad)]


@gradient("Angle")
def _angle_grad(op, grad):
    x = op.inputs[0]
    z = reciprocal(complex(imag(x), real(x)))
    return [negative(multiply(complex(grad, _zeros(grad)), z))]


@gradient("Conj")
def _conj_grad(op, grad):
    return [conj(grad)]


@gradient("Complex")
def _complex_grad(op, grad):
    return [real(grad), imag(grad)]


# ==========================================================================================
# AddN and Cast.

define_op("AddN", inputs=["inputs: N * T"], outputs=["sum: T"],
          attrs=["N: int >= 1",
                 "T: {float32, float64, int32, uint8, int16, int8, complex64, int64, qint8, "
                 "quint8, qint32, bfloat16, qint16, quint16, uint16, complex128, float16, "
                 "uint32, uint64, variant}"],
          shape_fn=lambda op: [_merge_all(op.inputs)], is_commutative=True)


def _merge_all(tensors):
    shape = tensor_shape.unknown_shape()
    for t in tensors:
        shape = _merge_shapes(shape, t.shape)
    return shape


def add_n(inputs, name: str | None = None):
    """The elementwise sum of a list of tensors of one dtype and shape (`tf.add_n`).

    Args:
      inputs: a list of Tensors (or IndexedSlices, made dense).
      name: the op name (default "AddN").

    Returns:
      A Tensor; for a single input, that input itself (or its identity, when named).

    Raises:
      ValueError: `inputs` is not a non-empty list, or the static shapes differ.
      TypeError: the dtypes differ.
    """
    from tensorflux.framework.tensor_conversion import convert_to_tensor_or_indexed_slices

    if not inputs or not isinstance(inputs, collections.abc.Iterable) or \
            isinstance(inputs, Tensor):
        raise ValueError("Inputs must be an iterable of at least one Tensor/IndexedSlices "
                         "with the same dtype and shape.")
    inputs = [convert_to_tensor_or_indexed_slices(x) for x in inputs]
    inputs = [convert_to_tensor(x) if hasattr(x, "_is_indexed_slices") else x for x in inputs]
    if len(inputs) == 1:
        return _array_ops().identity(inputs[0], name=name) if name else inputs[0]
    return apply_op("AddN", inputs=inputs, name=name or "AddN")


@gradient("AddN")
def _add_n_grad(op, grad):
    return [grad] * len(op.inputs)


define_op("Cast", inputs=["x: SrcT"], outputs=["y: DstT"],
          attrs=["SrcT: type", "DstT: type", "Truncate: bool = false"],
          shape_fn=common_shapes.unchanged)

_DIFFERENTIABLE_CAST = frozenset({dtypes.float16, dtypes.float32, dtypes.float64,
                                  dtypes.bfloat16, dtypes.complex64, dtypes.complex128})


def cast(x, dtype, name: str | None = None):
    """x converted to `dtype` elementwise (`tf.cast`).

    Floating values become integers by truncation toward zero; complex values lose their
    imaginary part when cast to a real type. Casting a tensor to its own dtype returns it.

    Raises:
      TypeError: `dtype` is not a DType (or convertible to one).
    """
    base = dtypes.as_dtype(dtype).base_dtype
    if isinstance(x, Tensor) and x.dtype.base_dtype == base:
        return x
    with graph_lib.name_scope(name, "Cast", [x]) as name:
        if hasattr(x, "_is_indexed_slices"):
            return x._map_values(lambda v: cast(v, base))
        x = convert_to_tensor(x, name="x")
        if x.dtype.base_dtype != base:
            x = apply_op("Cast", x=x, DstT=base, name=name)
        return x


@gradient("Cast")
def _cast_grad(op, grad):
    src = op.inputs[0].dtype.base_dtype
    if src in _DIFFERENTIABLE_CAST and grad.dtype.base_dtype in _DIFFERENTIABLE_CAST:
        return [cast(grad, src)]
    return [None]


def _to(dtype, public: str, default_name: str):
    def wrapper(x, name=default_name):
        return cast(x, dtype, name=name)

    wrapper.__name__ = wrapper.__qualname__ = public
    wrapper.__doc__ = f"cast(x, tf.{dtype.name}) (`tf.{public}`, deprecated in TF1.x)."
    return wrapper


to_float = _to(dtypes.float32, "to_float", "ToFloat")
to_double = _to(dtypes.float64, "to_double", "ToDouble")
to_int32 = _to(dtypes.int32, "to_int32", "ToInt32")
to_int64 = _to(dtypes.int64, "to_int64", "ToInt64")
to_bfloat16 = _to(dtypes.bfloat16, "to_bfloat16", "ToBFloat16")
to_complex64 = _to(dtypes.complex64, "to_complex64", "ToComplex64")
to_complex128 = _to(dtypes.complex128, "to_complex128", "ToComplex128")


# ==========================================================================================
# Comparisons and logic.


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
            shape_fn=_comparison_shape, is_commutative=True)
equal = _binary_wrapper("Equal", "equal", "x == y elementwise, with broadcasting "
                        "(`tf.equal`).")
not_equal = _binary_wrapper("NotEqual", "not_equal", "x != y elementwise, with "
                            "broadcasting (`tf.not_equal`).")

_COMPARABLE = ("{float32, float64, int32, uint8, int16, int8, int64, bfloat16, uint16, "
               "float16, uint32, uint64}")
for _op_type in ("Less", "LessEqual", "Greater", "GreaterEqual"):
    _binary(_op_type, _COMPARABLE, out="bool")
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
    zeros = _array_ops().zeros_like(op.inputs[1])
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


# ==========================================================================================
# Reductions.


def _reduction_shape(op):
    x, axes_t = op.inputs[0], op.inputs[1]
    keep_dims = op.attrs["keep_dims"]
    rank = x.shape.ndims
    if axes_t.shape.ndims is not None and axes_t.shape.ndims > 1:
        raise ValueError(f"Shape must be at most rank 1 but is rank {axes_t.shape.ndims}")
    axes = _known_axes(axes_t, rank)
    if axes is None:
        if rank is not None and keep_dims:
            return [tensor_shape.unknown_shape(rank=rank)]
        if rank is not None and axes_t.shape.num_elements() == 0:
            return [x.shape]
        return [tensor_shape.unknown_shape()]
    if rank is None:
        return [tensor_shape.unknown_shape()]
    dims = x.shape.as_list()
    if keep_dims:
        return [tensor_shape.TensorShape([1 if i in axes else d for i, d in enumerate(dims)])]
    return [tensor_shape.TensorShape([d for i, d in enumerate(dims) if i not in axes])]


def _known_axes(axes_t, rank):
    """Constant axes normalized to [0, rank) (ValueError if out of range), or None."""
    axes = common_shapes.known_axes(None, axes_t, rank)
    if axes is not None and rank is not None:
        value = np.reshape(common_shapes.constant_value(axes_t), -1)
        for a in value:
            if not -rank <= int(a) < builtins.max(rank, 1):
                raise ValueError(f"Invalid reduction dimension {int(a)} for input with "
                                 f"{rank} dimensions.")
    return axes


def _reduction(op_type: str, input_type: str = "T", types: str = _REDUCIBLE) -> None:
    attrs = ["keep_dims: bool = false", _TIDX]
    if input_type == "T":
        attrs.insert(1, f"T: {types}")
    define_op(op_type, inputs=[f"input: {input_type}", "reduction_indices: Tidx"],
              outputs=[f"output: {input_type}"], attrs=attrs, shape_fn=_reduction_shape)


def _deprecated_lookup(new_name, new_value, old_name, old_value):
    if new_value is not None and old_value is not None:
        raise ValueError(f"Cannot specify both '{new_name}' and '{old_name}'")
    return new_value if new_value is not None else old_value


def _reduction_dims(x: Tensor, axis):
    """The axes to reduce: `axis`, or every axis of x when it is None."""
    if axis is not None:
        return axis
    rank = x.shape.ndims
    if rank is not None:
        return convert_to_tensor(np.arange(rank, dtype=np.int32), name="Const")
    return range(0, _array_ops().rank(x), 1)


def _reduce(op_type: str, input_tensor, axis, keepdims, name, reduction_indices,
            keep_dims, default_name: str):
    keepdims = _deprecated_lookup("keepdims", keepdims, "keep_dims", keep_dims)
    axis = _deprecated_lookup("axis", axis, "reduction_indices", reduction_indices)
    keepdims = False if keepdims is None else builtins.bool(keepdims)
    x = convert_to_tensor(input_tensor, name="input_tensor")
    out = apply_op(op_type, input=x, reduction_indices=_reduction_dims(x, axis),
                   keep_dims=keepdims, name=name or default_name)
    if axis is None and not keepdims:
        out.set_shape([])
    return out


def _reduction_wrapper(op_type: str, public: str, doc: str):
    def wrapper(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
                keep_dims=None):
        return _reduce(op_type, input_tensor, axis, keepdims, name, reduction_indices,
                       keep_dims, op_type)

    wrapper.__name__ = wrapper.__qualname__ = public
    wrapper.__doc__ = doc + """

    Args:
      input_tensor: the tensor to reduce.
      axis: the dimensions to reduce: None (all), an int, a list, or an int tensor;
        negative values count from the end. `reduction_indices` is its TF1 alias.
      keepdims: keep reduced dimensions with length 1 (`keep_dims` is its TF1 alias).
      name: the op name.

    Raises:
      ValueError: an axis out of range, or both spellings of one argument.
    """
    return wrapper


_reduction("Sum")
reduce_sum = _reduction_wrapper("Sum", "reduce_sum", "The sum of elements across axes "
                                "(`tf.reduce_sum`).")
_reduction("Mean")
reduce_mean = _reduction_wrapper("Mean", "reduce_mean", "The mean of elements across axes "
                                 "(`tf.reduce_mean`); integer means truncate toward zero.")
_reduction("Prod")
reduce_prod = _reduction_wrapper("Prod", "reduce_prod", "The product of elements across "
                                 "axes (`tf.reduce_prod`).")
_reduction("Max", types=_ORDERED)
reduce_max = _reduction_wrapper("Max", "reduce_max", "The maximum of elements across axes "
                                "(`tf.reduce_max`); -inf (or the type's lowest value) when "
                                "empty.")
_reduction("Min", types=_ORDERED)
reduce_min = _reduction_wrapper("Min", "reduce_min", "The minimum of elements across axes "
                                "(`tf.reduce_min`); inf (or the type's highest value) when "
                                "empty.")
_reduction("All", input_type="bool")
reduce_all = _reduction_wrapper("All", "reduce_all", "Logical AND across axes "
                                "(`tf.reduce_all`).")
_reduction("Any", input_type="bool")
reduce_any = _reduction_wrapper("Any", "reduce_any", "Logical OR across axes "
                                "(`tf.reduce_any`).")
_reduction("EuclideanNorm")
reduce_euclidean_norm = _reduction_wrapper("EuclideanNorm", "reduce_euclidean_norm",
                                           "sqrt(sum(|x|^2)) across axes "
                                           "(`tf.math.reduce_euclidean_norm`).")
not_differentiable("All", "Any")


def _kept_dims_shape(x: Tensor, axes: Tensor):
    """The shape of a keep_dims reduction of x over `axes`: a list of ints when it is known
    at graph-construction time, else an int32 Tensor."""
    rank = x.shape.ndims
    known = _known_axes(axes, rank) if rank is not None else None
    if known is not None and x.shape.is_fully_defined():
        return [1 if i in known else d for i, d in enumerate(x.shape.as_list())]
    input_shape = _array_ops().shape(x)
    n = _array_ops().size(input_shape)
    axes = floormod(add(cast(axes, dtypes.int32), n), n)
    positions = _array_ops().reshape(range(0, n), [-1, 1])
    reduced = reduce_any(equal(positions, _array_ops().reshape(axes, [1, -1])), axis=1)
    return where_v2(reduced, np.int32(1), input_shape)


def _broadcast_back(op, grad):
    """grad of a reduction's output, reshaped with kept dims and broadcast to the input's
    shape."""
    x = op.inputs[0]
    array_ops = _array_ops()
    if not op.attrs["keep_dims"]:
        grad = array_ops.reshape(grad, _kept_dims_shape(x, op.inputs[1]))
    target = x.shape.as_list() if x.shape.is_fully_defined() else array_ops.shape(x)
    if isinstance(target, list) and grad.shape.as_list() == target:
        return grad
    return array_ops.broadcast_to(grad, target)


@gradient("Sum")
def _sum_grad(op, grad):
    return [_broadcast_back(op, grad), None]


def _num_reduced(op):
    """The number of input elements per output element, as a scalar of the input's dtype."""
    x, y = op.inputs[0], op.outputs[0]
    if x.shape.is_fully_defined() and y.shape.is_fully_defined():
        n = int(np.prod(x.shape.as_list(), dtype=np.int64)) // builtins.max(
            int(np.prod(y.shape.as_list(), dtype=np.int64)), 1)
        return _const_like(n, x, name="factor")
    array_ops = _array_ops()
    factor = floordiv(reduce_prod(array_ops.shape(x)),
                      maximum(reduce_prod(array_ops.shape(y)), np.int32(1)))
    return cast(factor, x.dtype.base_dtype)


@gradient("Mean")
def _mean_grad(op, grad):
    return [realdiv(_broadcast_back(op, grad), _num_reduced(op)), None]


def _min_or_max_reduction_grad(op, grad):
    x = op.inputs[0]
    array_ops = _array_ops()
    y = op.outputs[0]
    if not op.attrs["keep_dims"]:
        kept = _kept_dims_shape(x, op.inputs[1])
        y = array_ops.reshape(y, kept)
        grad = array_ops.reshape(grad, kept)
    indicators = cast(equal(y, x), grad.dtype)
    num_selected = reduce_sum(indicators, op.inputs[1], keepdims=True)
    return [multiply(realdiv(indicators, num_selected), grad), None]


gradient("Max")(_min_or_max_reduction_grad)
gradient("Min")(_min_or_max_reduction_grad)


@gradient("Prod")
def _prod_grad(op, grad):
    """Products of all other elements, without dividing (zeros are fine): the reduced axes
    are moved to the front and flattened, and exclusive cumulative products from both ends
    are multiplied (TensorFlow's algorithm)."""
    x, axes = op.inputs
    array_ops = _array_ops()
    grad = _broadcast_back(op, grad)
    rank = x.shape.ndims
    known = _known_axes(axes, rank) if rank is not None else None
    if known is not None:
        reduced = sorted(set(known))
        other = [i for i in builtins.range(rank) if i not in reduced]
        perm = reduced + other
        inverse = [perm.index(i) for i in builtins.range(rank)]
        input_shape = array_ops.shape(x)
        reduced_num = reduce_prod(array_ops.gather(input_shape, reduced)) if reduced else 1
        other_num = reduce_prod(array_ops.gather(input_shape, other)) if other else 1
    else:
        input_shape = array_ops.shape(x)
        n = array_ops.size(input_shape)
        ax = floormod(add(cast(array_ops.reshape(axes, [-1]), dtypes.int32), n), n)
        mask = reduce_any(equal(array_ops.reshape(range(0, n), [-1, 1]),
                                array_ops.reshape(ax, [1, -1])), axis=1)
        reduced = cast(array_ops.reshape(where(mask), [-1]), dtypes.int32)
        other = cast(array_ops.reshape(where(logical_not(mask)), [-1]), dtypes.int32)
        perm = array_ops.concat([reduced, other], 0)
        inverse = unsorted_segment_sum(range(0, n), perm, n)
        reduced_num = reduce_prod(array_ops.gather(input_shape, reduced))
        other_num = reduce_prod(array_ops.gather(input_shape, other))
    permuted = array_ops.transpose(x, perm)
    permuted_shape = array_ops.shape(permuted)
    reshaped = array_ops.reshape(permuted, array_ops.stack([reduced_num, other_num]))
    left = cumprod(reshaped, axis=0, exclusive=True)
    right = cumprod(reshaped, axis=0, exclusive=True, reverse=True)
    y = array_ops.reshape(multiply(_conj(left), _conj(right)), permuted_shape)
    out = multiply(grad, array_ops.transpose(y, inverse))
    return [array_ops.reshape(out, input_shape), None]


@gradient("EuclideanNorm")
def _euclidean_norm_grad(op, grad):
    x, output = op.inputs[0], op.outputs[0]
    if not op.attrs["keep_dims"]:
        kept = _kept_dims_shape(x, op.inputs[1])
        output = _array_ops().reshape(output, kept)
        grad = _array_ops().reshape(grad, kept)
    return [realdiv(x, realdiv(output, grad)), None]


def reduce_logsumexp(input_tensor, axis=None, keepdims=None, name=None,
                     reduction_indices=None, keep_dims=None):
    """log(sum(exp(x))) across axes, computed stably (`tf.reduce_logsumexp`).

    Args:
      input_tensor: the tensor to reduce.
      axis: the dimensions to reduce (None: all); `reduction_indices` is its alias.
      keepdims: keep reduced dimensions with length 1 (`keep_dims` is its alias).
      name: the name scope (default "ReduceLogSumExp").
    """
    keepdims = _deprecated_lookup("keepdims", keepdims, "keep_dims", keep_dims)
    axis = _deprecated_lookup("axis", axis, "reduction_indices", reduction_indices)
    keepdims = builtins.bool(keepdims)
    array_ops = _array_ops()
    with graph_lib.name_scope(name, "ReduceLogSumExp", [input_tensor]) as name:
        x = convert_to_tensor(input_tensor, name="input_tensor")
        raw_max = reduce_max(x, axis, keepdims=True)
        my_max = array_ops.stop_gradient(where_v2(is_finite(raw_max), raw_max, _zeros(x)))
        result = log(reduce_sum(exp(subtract(x, my_max)), axis, keepdims=keepdims))
        if not keepdims:
            my_max = array_ops.reshape(my_max, array_ops.shape(result))
        result = add(result, my_max, name=name)
        if axis is None and not keepdims:
            result.set_shape([])
        return result


def count_nonzero(input_tensor=None, axis=None, keepdims=None, dtype=dtypes.int64,
                  name=None, reduction_indices=None, keep_dims=None, input=None):  # noqa: A002
    """The number of non-zero elements across axes (`tf.count_nonzero`), as `dtype`."""
    input_tensor = _deprecated_lookup("input", input, "input_tensor", input_tensor)
    keepdims = _deprecated_lookup("keepdims", keepdims, "keep_dims", keep_dims)
    axis = _deprecated_lookup("axis", axis, "reduction_indices", reduction_indices)
    with graph_lib.name_scope(name, "count_nonzero", [input_tensor]):
        x = convert_to_tensor(input_tensor, name="input")
        nonzero = cast(not_equal(x, _zeros(x)), dtypes.int64)
        return cast(reduce_sum(nonzero, axis, keepdims=builtins.bool(keepdims)), dtype)


# ---- ArgMax, ArgMin ----------------------------------------------------------------------


def _arg_reduce_shape(op):
    x, dim_t = op.inputs
    rank = x.shape.ndims
    value = common_shapes.constant_value(dim_t)
    if value is None or rank is None:
        return [tensor_shape.unknown_shape(rank=rank - 1) if rank else
                tensor_shape.unknown_shape()]
    d = int(np.reshape(value, -1)[0])
    if not -rank <= d < rank:
        raise ValueError(f"Expected dimension in the range [{-rank}, {rank}), but got {d}")
    d %= rank
    dims = x.shape.as_list()
    return [tensor_shape.TensorShape(dims[:d] + dims[d + 1:])]


_ARG_TYPES = ("{float32, float64, int32, uint8, int16, int8, int64, bfloat16, uint16, "
              "float16, uint32, uint64, qint8, quint8, qint32, qint16, quint16, bool}")
define_op("ArgMax", inputs=["input: T", "dimension: Tidx"], outputs=["output: output_type"],
          attrs=[f"T: {_ARG_TYPES}", "Tidx: {int16, int32, int64} = DT_INT32",
                 "output_type: {int16, uint16, int32, int64} = DT_INT64"],
          shape_fn=_arg_reduce_shape)
define_op("ArgMin", inputs=["input: T", "dimension: Tidx"], outputs=["output: output_type"],
          attrs=[f"T: {_ARG_TYPES}", _TIDX, "output_type: {int32, int64} = DT_INT64"],
          shape_fn=_arg_reduce_shape)
not_differentiable("ArgMax", "ArgMin")


def _arg_reduce(op_type, input, axis, name, dimension, output_type):  # noqa: A002
    axis = _deprecated_lookup("axis", axis, "dimension", dimension)
    if axis is None:
        axis = 0
    return apply_op(op_type, input=input, dimension=axis,
                    output_type=dtypes.as_dtype(output_type), name=name or op_type)


def argmax(input, axis=None, name=None, dimension=None, output_type=dtypes.int64):  # noqa: A002
    """The index of the largest value along `axis` (default 0) (`tf.argmax`).

    Raises:
      ValueError: both `axis` and its TF1 alias `dimension` are given.
    """
    return _arg_reduce("ArgMax", input, axis, name, dimension, output_type)


def argmin(input, axis=None, name=None, dimension=None, output_type=dtypes.int64):  # noqa: A002
    """The index of the smallest value along `axis` (default 0) (`tf.argmin`).

    Raises:
      ValueError: both `axis` and its TF1 alias `dimension` are given.
    """
    return _arg_reduce("ArgMin", input, axis, name, dimension, output_type)


# ==========================================================================================
# Matrices.


def _matmul_shape(op):
    a, b = (t.shape for t in op.inputs)
    for s in (a, b):
        if s.ndims is not None and s.ndims != 2:
            raise ValueError(f"Shape must be rank 2 but is rank {s.ndims}")
    if a.ndims is None or b.ndims is None:
        return [tensor_shape.unknown_shape(rank=2)]
    da, db = a.as_list(), b.as_list()
    if op.attrs["transpose_a"]:
        da = da[::-1]
    if op.attrs["transpose_b"]:
        db = db[::-1]
    _check_inner(da[1], db[0])
    return [tensor_shape.TensorShape([da[0], db[1]])]


def _check_inner(k1, k2):
    if k1 is not None and k2 is not None and k1 != k2:
        raise ValueError(f"Dimensions must be equal, but are {k1} and {k2}")


define_op("MatMul", inputs=["a: T", "b: T"], outputs=["product: T"],
          attrs=["transpose_a: bool = false", "transpose_b: bool = false",
                 "T: {bfloat16, float16, float32, float64, int32, int64, uint8, uint16, "
                 "uint32, uint64, complex64, complex128}",
                 "grad_a: bool = false", "grad_b: bool = false"],
          shape_fn=_matmul_shape)


def _batch_matmul_shape(op, broadcast: bool):
    x, y = (t.shape for t in op.inputs)
    for s in (x, y):
        if s.ndims is not None and s.ndims < 2:
            raise ValueError(f"Shape must be at least rank 2 but is rank {s.ndims}")
    if x.ndims is None or y.ndims is None:
        return [tensor_shape.unknown_shape()]
    dx, dy = x.as_list(), y.as_list()
    m, kx = (dx[-1], dx[-2]) if op.attrs["adj_x"] else (dx[-2], dx[-1])
    ky, n = (dy[-1], dy[-2]) if op.attrs["adj_y"] else (dy[-2], dy[-1])
    _check_inner(kx, ky)
    if broadcast:
        batch = common_shapes.broadcast_shapes(tensor_shape.TensorShape(dx[:-2]),
                                               tensor_shape.TensorShape(dy[:-2]))
    else:
        batch = _merge_shapes(tensor_shape.TensorShape(dx[:-2]),
                              tensor_shape.TensorShape(dy[:-2]))
    return [batch.concatenate([m, n])]


_BMM_ATTRS = ["adj_x: bool = false", "adj_y: bool = false", "grad_x: bool = false",
              "grad_y: bool = false"]
define_op("BatchMatMul", inputs=["x: T", "y: T"], outputs=["output: T"],
          attrs=["T: {bfloat16, float16, float32, float64, int32, int64, complex64, "
                 "complex128}", *_BMM_ATTRS],
          shape_fn=lambda op: _batch_matmul_shape(op, broadcast=False))
define_op("BatchMatMulV2", inputs=["x: T", "y: T"], outputs=["output: T"],
          attrs=["T: {bfloat16, float16, float32, float64, int16, int32, int64, uint8, "
                 "uint16, uint32, uint64, complex64, complex128}", *_BMM_ATTRS],
          shape_fn=lambda op: _batch_matmul_shape(op, broadcast=True), broadcasts=True)


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           a_is_sparse=False, b_is_sparse=False, name=None):
    """The matrix product of a and b (`tf.matmul`), batched over leading dimensions.

    Rank-2 operands give a MatMul; higher ranks a BatchMatMulV2, whose batch dimensions
    broadcast. `adjoint_*` transposes and conjugates; the sparsity hints are ignored.

    Raises:
      ValueError: both transpose and adjoint of one operand, or inner dimensions that
        differ.
      TypeError: a and b have different dtypes.
    """
    with graph_lib.name_scope(name, "MatMul", [a, b]) as name:
        if transpose_a and adjoint_a:
            raise ValueError("Only one of transpose_a and adjoint_a can be True.")
        if transpose_b and adjoint_b:
            raise ValueError("Only one of transpose_b and adjoint_b can be True.")
        a = convert_to_tensor(a, name="a")
        b = convert_to_tensor(b, preferred_dtype=a.dtype.base_dtype, name="b")
        ra, rb = a.shape.ndims, b.shape.ndims
        if (ra is None or ra > 2) or (rb is None or rb > 2):
            if transpose_a:
                a, adjoint_a = conj(a), True
            if transpose_b:
                b, adjoint_b = conj(b), True
            return apply_op("BatchMatMulV2", x=a, y=b, adj_x=adjoint_a, adj_y=adjoint_b,
                            name=name)
        if adjoint_a:
            a, transpose_a = conj(a), True
        if adjoint_b:
            b, transpose_b = conj(b), True
        return apply_op("MatMul", a=a, b=b, transpose_a=transpose_a,
                        transpose_b=transpose_b, name=name)


@gradient("MatMul")
def _matmul_grad(op, grad):
    t_a, t_b = op.attrs["transpose_a"], op.attrs["transpose_b"]
    a, b = _conj(op.inputs[0]), _conj(op.inputs[1])

    def mm(x, y, ta=False, tb=False):
        return apply_op("MatMul", a=x, b=y, transpose_a=ta, transpose_b=tb)

    if not t_a and not t_b:
        return [mm(grad, b, tb=True), mm(a, grad, ta=True)]
    if not t_a and t_b:
        return [mm(grad, b), mm(grad, a, ta=True)]
    if t_a and not t_b:
        return [mm(b, grad, tb=True), mm(a, grad)]
    return [mm(b, grad, ta=True, tb=True), mm(grad, a, ta=True, tb=True)]


def _batch_matmul_grad(op, grad):
    """Gradients shaped like the broadcast batch; for BatchMatMulV2 the driver sums them
    over the batch dimensions each operand was broadcast along."""
    x, y = op.inputs
    adj_x, adj_y = op.attrs["adj_x"], op.attrs["adj_y"]

    def bmm(p, q, ap=False, aq=False):
        return apply_op("BatchMatMulV2", x=p, y=q, adj_x=ap, adj_y=aq)

    if not adj_x and not adj_y:
        return [bmm(grad, y, aq=True), bmm(x, grad, ap=True)]
    if not adj_x and adj_y:
        return [bmm(grad, y), bmm(grad, x, ap=True)]
    if adj_x and not adj_y:
        return [bmm(y, grad, aq=True), bmm(x, grad)]
    return [bmm(y, grad, ap=True, aq=True), bmm(grad, x, ap=True, aq=True)]


gradient("BatchMatMul")(_batch_matmul_grad)
gradient("BatchMatMulV2")(_batch_matmul_grad)


def _square_matrix_shape(op):
    s = op.inputs[0].shape
    if s.ndims is None:
        return [s]
    if s.ndims < 2:
        raise ValueError(f"Shape must be at least rank 2 but is rank {s.ndims}")
    dims = s.as_list()
    _check_inner(dims[-2], dims[-1])
    n = dims[-1] if dims[-1] is not None else dims[-2]
    return [tensor_shape.TensorShape(dims[:-2] + [n, n])]


define_op("MatrixInverse", inputs=["input: T"], outputs=["output: T"],
          attrs=["adjoint: bool = false",
                 "T: {float64, float32, float16, complex64, complex128}"],
          shape_fn=_square_matrix_shape)


def matrix_inverse(input, adjoint=False, name=None):  # noqa: A002
    """The inverse of each square matrix in the last two dimensions (`tf.matrix_inverse`);
    with `adjoint`, the inverse of its adjoint.

    A singular matrix is an InvalidArgumentError at run time ("Input is not invertible.").
    """
    return apply_op("MatrixInverse", input=input, adjoint=adjoint,
                    name=name or "MatrixInverse")


@gradient("MatrixInverse")
def _matrix_inverse_grad(op, grad):
    ainv = op.outputs[0]
    adj = op.attrs["adjoint"]
    inner = matmul(grad, ainv, adjoint_a=adj, adjoint_b=not adj)
    return [negative(matmul(ainv, inner, adjoint_a=not adj))]


def _determinant_shape(op):
    s = _square_matrix_shape(op)[0]
    return [s if s.ndims is None else tensor_shape.TensorShape(s.as_list()[:-2])]


define_op("MatrixDeterminant", inputs=["input: T"], outputs=["output: T"],
          attrs=["T: {float16, float32, float64, complex64, complex128}"],
          shape_fn=_determinant_shape)


def matrix_determinant(input, name=None):  # noqa: A002
    """The determinant of each square matrix in the last two dimensions
    (`tf.matrix_determinant`)."""
    return apply_op("MatrixDeterminant", input=input, name=name or "MatrixDeterminant")


@gradient("MatrixDeterminant")
def _matrix_determinant_grad(op, grad):
    a, c = op.inputs[0], op.outputs[0]
    array_ops = _array_ops()
    a_adj_inv = matrix_inverse(a, adjoint=True)
    multipliers = array_ops.reshape(multiply(grad, c),
                                    array_ops.concat([array_ops.shape(c), [1, 1]], 0))
    return [multiply(multipliers, a_adj_inv)]


define_op("Cholesky", inputs=["input: T"], outputs=["output: T"],
          attrs=["T: {float64, float32, float16, complex64, complex128}"],
          shape_fn=_square_matrix_shape)


def cholesky(input, name=None):  # noqa: A002
    """The lower-triangular L with L L^H = input, for each matrix (`tf.cholesky`).

    Only the lower triangle of the input is read. A matrix that is not positive definite
    is an InvalidArgumentError at run time.
    """
    return apply_op("Cholesky", input=input, name=name or "Cholesky")


@gradient("Cholesky")
def _cholesky_grad(op, grad):
    """Murray's formula (TensorFlow's): with L the output,
    grad_A = 0.5 * (S + S^H), S = L^-H Phi(L^H grad) L^-1, where Phi keeps the lower
    triangle and halves the diagonal."""
    l = op.outputs[0]
    array_ops = _array_ops()
    l_inverse = matrix_inverse(l)
    middle = matmul(l, grad, adjoint_a=True)
    n = array_ops.shape(l)[-1] if l.shape.ndims is None or l.shape.as_list()[-1] is None \
        else l.shape.as_list()[-1]
    if isinstance(n, int):
        mask = np.tril(np.ones((n, n)), -1) + 0.5 * np.eye(n)
        mask = _const_like(mask, l, name="phi")
    else:
        idx = range(0, n)
        rows = array_ops.reshape(idx, [-1, 1])
        cols = array_ops.reshape(idx, [1, -1])
        mask = add(cast(greater(rows, cols), l.dtype),
                   multiply(_const_like(0.5, l), cast(equal(rows, cols), l.dtype)))
    middle = multiply(middle, mask)
    grad_a = matmul(matmul(l_inverse, middle, adjoint_a=True), l_inverse)
    grad_a = add(grad_a, _adjoint(grad_a))
    return [multiply(grad_a, _const_like(0.5, l))]


def _adjoint(x):
    """The conjugate transpose of the last two dimensions."""
    array_ops = _array_ops()
    rank = x.shape.ndims
    if rank is not None:
        perm = list(builtins.range(rank - 2)) + [rank - 1, rank - 2]
    else:
        r = array_ops.rank(x)
        perm = array_ops.concat([range(0, subtract(r, 2)), array_ops.stack(
            [subtract(r, 1), subtract(r, 2)])], 0)
    return _conj(array_ops.transpose(x, perm))


# ==========================================================================================
# Range, cumulative sums and products, segment sums, broadcast gradient arguments.

_RANGE_TYPES = ("{bfloat16, float16, float32, float64, int8, int16, int32, int64, uint16, "
                "uint32, uint64}")


def _range_size(start, limit, delta) -> int:
    """The number of elements of Range(start, limit, delta); ValueError as TF words it."""
    if delta == 0:
        raise ValueError(f"Requires delta != 0: {delta}")
    if delta > 0 and start > limit:
        raise ValueError(f"Requires start <= limit when delta > 0: {start}/{limit}")
    if delta < 0 and start < limit:
        raise ValueError(f"Requires start >= limit when delta < 0: {start}/{limit}")
    if isinstance(start, (int, np.integer)) and isinstance(delta, (int, np.integer)) and \
            isinstance(limit, (int, np.integer)):
        return int((builtins.abs(int(limit) - int(start)) + builtins.abs(int(delta)) - 1)
                   // builtins.abs(int(delta)))
    return int(np.ceil(builtins.abs((float(limit) - float(start)) / float(delta))))


def _range_shape(op):
    values = [common_shapes.constant_value(t) for t in op.inputs]
    for t in op.inputs:
        if t.shape.ndims is not None and t.shape.ndims != 0:
            raise ValueError(f"Shape must be rank 0 but is rank {t.shape.ndims}")
    if any(v is None for v in values):
        return [tensor_shape.TensorShape([None])]
    return [tensor_shape.TensorShape([_range_size(*(np.asarray(v).item() for v in values))])]


define_op("Range", inputs=["start: Tidx", "limit: Tidx", "delta: Tidx"],
          outputs=["output: Tidx"], attrs=[f"Tidx: {_RANGE_TYPES} = DT_INT32"],
          shape_fn=_range_shape)
not_differentiable("Range")

_RANGE_HIERARCHY = (dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64)


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001 - TF1's name
    """The sequence start, start + delta, ... up to but excluding limit (`tf.range`).

    `tf.range(n)` counts from 0. Without `dtype`, the widest type of the arguments wins in
    the order int32 < int64 < float32 < float64 (Python ints are int32, floats float32).

    Raises:
      ValueError: delta is 0, or it points away from limit (when the values are constant).
    """
    if limit is None:
        start, limit = 0, start
    with graph_lib.name_scope(name, "Range", [start, limit, delta]) as name:
        args = []
        for value, arg_name in ((start, "start"), (limit, "limit"), (delta, "delta")):
            if not isinstance(value, Tensor):
                value = convert_to_tensor(value, dtype=dtype, name=arg_name)
            args.append(value)
        if dtype is None:
            for t in args:
                if t.dtype.base_dtype not in _RANGE_HIERARCHY:
                    raise TypeError(f"Unsupported dtype {t.dtype.name} for tf.range")
            dtype = builtins.max((t.dtype.base_dtype for t in args),
                                 key=_RANGE_HIERARCHY.index)
        args = [cast(t, dtype) for t in args]
        return apply_op("Range", start=args[0], limit=args[1], delta=args[2], name=name)


def _cumulative(op_type: str) -> None:
    define_op(op_type, inputs=["x: T", "axis: Tidx"], outputs=["out: T"],
              attrs=["exclusive: bool = false", "reverse: bool = false", f"T: {_REDUCIBLE}",
                     _TIDX], shape_fn=common_shapes.unchanged)


_cumulative("Cumsum")
_cumulative("Cumprod")


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """Cumulative sum along `axis` (`tf.cumsum`).

    With `exclusive`, element i sums the elements before i (the first is 0); with
    `reverse`, the sums run from the end.
    """
    with graph_lib.name_scope(name, "Cumsum", [x]) as name:
        x = convert_to_tensor(x, name="x")
        return apply_op("Cumsum", x=x, axis=axis, exclusive=exclusive, reverse=reverse,
                        name=name)


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    """Cumulative product along `axis` (`tf.cumprod`); see `cumsum` for the flags."""
    with graph_lib.name_scope(name, "Cumprod", [x]) as name:
        x = convert_to_tensor(x, name="x")
        return apply_op("Cumprod", x=x, axis=axis, exclusive=exclusive, reverse=reverse,
                        name=name)


@gradient("Cumsum")
def _cumsum_grad(op, grad):
    return [cumsum(grad, op.inputs[1], exclusive=op.attrs["exclusive"],
                   reverse=not op.attrs["reverse"]), None]


@gradient("Cumprod")
def _cumprod_grad(op, grad):
    x, axis = op.inputs
    exclusive, reverse = op.attrs["exclusive"], op.attrs["reverse"]
    prod = cumprod(x, axis, exclusive=exclusive, reverse=reverse)
    out = cumsum(multiply(prod, grad), axis, exclusive=exclusive, reverse=not reverse)
    return [div_no_nan(out, x), None]


def _unsorted_segment_shape(op):
    data, ids, num = (t.shape for t in op.inputs)
    if num.ndims is not None and num.ndims != 0:
        raise ValueError(f"Shape must be rank 0 but is rank {num.ndims}")
    value = common_shapes.constant_value(op.inputs[2])
    n = None if value is None else int(np.asarray(value).item())
    if data.ndims is None or ids.ndims is None:
        return [tensor_shape.unknown_shape()]
    if ids.ndims > data.ndims:
        raise ValueError(f"Shape must be at least rank {ids.ndims} but is rank {data.ndims}")
    _merge_shapes(tensor_shape.TensorShape(data.as_list()[:ids.ndims]), ids)
    return [tensor_shape.TensorShape([n] + data.as_list()[ids.ndims:])]


define_op("UnsortedSegmentSum",
          inputs=["data: T", "segment_ids: Tindices", "num_segments: Tnumsegments"],
          outputs=["output: T"],
          attrs=[f"T: {_REDUCIBLE}", "Tindices: {int16, int32, int64}",
                 "Tnumsegments: {int32, int64} = DT_INT32"],
          shape_fn=_unsorted_segment_shape)


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    """Sums of the slices of `data` with equal `segment_ids` (`tf.unsorted_segment_sum`).

    output[i] = sum of data[j...] over j with segment_ids[j...] == i; segment_ids' shape is
    a prefix of data's; negative ids are dropped; ids >= num_segments are an error.
    """
    return apply_op("UnsortedSegmentSum", data=data, segment_ids=segment_ids,
                    num_segments=num_segments, name=name or "UnsortedSegmentSum")


@gradient("UnsortedSegmentSum")
def _unsorted_segment_sum_grad(op, grad):
    """grad gathered at the segment ids; rows of negative ids get zeros."""
    array_ops = _array_ops()
    ids = op.inputs[1]
    clipped = maximum(ids, _zeros(ids))
    gathered = array_ops.gather(grad, clipped)
    is_positive = greater_equal(ids, _zeros(ids))
    extra = None
    if gathered.shape.ndims is not None and ids.shape.ndims is not None:
        extra = gathered.shape.ndims - ids.shape.ndims
    if extra is None:
        extra = subtract(array_ops.rank(gathered), array_ops.rank(ids))
        ones = array_ops.fill(array_ops.reshape(extra, [1]), 1)
    else:
        ones = np.ones([extra], np.int32)
    mask = array_ops.reshape(is_positive, array_ops.concat([array_ops.shape(ids), ones], 0))
    return [where_v2(mask, gathered, _zeros(gathered)), None, None]


def _broadcast_gradient_args_shape(op):
    for t in op.inputs:
        if t.shape.ndims is not None and t.shape.ndims != 1:
            raise ValueError(f"Shape must be rank 1 but is rank {t.shape.ndims}")
    return [tensor_shape.TensorShape([None]), tensor_shape.TensorShape([None])]


define_op("BroadcastGradientArgs", inputs=["s0: T", "s1: T"], outputs=["r0: T", "r1: T"],
          attrs=["T: {int32, int64} = DT_INT32"], shape_fn=_broadcast_gradient_args_shape)
not_differentiable("BroadcastGradientArgs")


def broadcast_gradient_args(s0, s1, name=None):
    """The axes to sum the gradient of a broadcasting op over, for inputs of shapes s0 and
    s1: (r0, r1), int vectors. An input's axes are those (of the broadcast output) where it
    has, or is padded with, size 1; none at all when s0 == s1."""
    return apply_op("BroadcastGradientArgs", s0=s0, s1=s1,
                    name=name or "BroadcastGradientArgs")


# ==========================================================================================
# Constant evaluation for shape inference: values computable at graph-construction time
# (shapes computed with arithmetic, ranges, casts, sums and products of static shapes).

_CONSTANT_BINARY = {
    "AddV2": np.add, "Add": np.add, "Sub": np.subtract, "Mul": np.multiply,
    "Maximum": np.maximum, "Minimum": np.minimum,
}


def _const_inputs(op):
    values = [common_shapes.constant_value(t) for t in op.inputs]
    return None if any(v is None for v in values) else values


@common_shapes.constant_evaluator(*_CONSTANT_BINARY, "FloorDiv", "FloorMod")
def _binary_value(op):
    values = _const_inputs(op)
    if values is None:
        return None
    x, y = (np.asarray(v) for v in values)
    dt = op.outputs[0].dtype.as_numpy_dtype
    if op.type in ("FloorDiv", "FloorMod"):
        if np.issubdtype(x.dtype, np.integer) and not np.all(y):
            return None  # an error at run time, not a value
        fn = np.floor_divide if op.type == "FloorDiv" else np.remainder
        return np.asarray(fn(x, y), dtype=dt)
    return np.asarray(_CONSTANT_BINARY[op.type](x, y), dtype=dt)


@common_shapes.constant_evaluator("Neg")
def _neg_value(op):
    values = _const_inputs(op)
    return None if values is None else np.negative(np.asarray(values[0]))


@common_shapes.constant_evaluator("Cast")
def _cast_value(op):
    values = _const_inputs(op)
    dst = op.attrs["DstT"]
    if values is None or dst is dtypes.string or op.attrs["SrcT"] is dtypes.string:
        return None
    return np.asarray(values[0]).astype(dst.as_numpy_dtype)


@common_shapes.constant_evaluator("Range")
def _range_value(op):
    values = _const_inputs(op)
    if values is None:
        return None
    start, limit, delta = (np.asarray(v).item() for v in values)
    size = _range_size(start, limit, delta)
    dt = op.attrs["Tidx"].as_numpy_dtype
    return (np.asarray(start, dt) + np.arange(size) * np.asarray(delta, dt)).astype(dt)


_CONSTANT_REDUCTIONS = {"Sum": np.sum, "Prod": np.prod, "Max": np.max, "Min": np.min}


@common_shapes.constant_evaluator(*_CONSTANT_REDUCTIONS)
def _reduction_value(op):
    values = _const_inputs(op)
    if values is None:
        return None
    x = np.asarray(values[0])
    axes = tuple(int(a) % builtins.max(x.ndim, 1) for a in np.reshape(values[1], -1))
    if len(set(axes)) != len(axes) or (op.type in ("Max", "Min") and x.size == 0):
        return None
    fn = _CONSTANT_REDUCTIONS[op.type]
    return np.asarray(fn(x, axis=axes, keepdims=op.attrs["keep_dims"]), dtype=x.dtype)


# ==========================================================================================
# Tensor operators, named as TensorFlow names them (`a + b` is an AddV2 named "add", its
# converted operand "add/y").


def _binary_operator(fn, scope: str, reverse: bool = False):
    """`self <op> other` (or `other <op> self` when reversed): the other operand converts
    to this tensor's dtype first, inside the op's name scope."""

    def operator(self, other):
        with graph_lib.name_scope(None, scope, [self, other]) as name:
            if not isinstance(other, Tensor):  # a tensor of another dtype: the op's TypeError
                other = convert_to_tensor(other, dtype=self.dtype.base_dtype,
                                          name="x" if reverse else "y")
            return fn(other, self, name=name) if reverse else fn(self, other, name=name)

    operator.__name__ = f"__{'r' if reverse else ''}{scope}__"
    return operator


def _add_dispatch(x, y, name=None):
    op_type = "Add" if x.dtype.base_dtype is dtypes.string else "AddV2"
    return apply_op(op_type, x=x, y=y, name=name)


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


for _name, _fn, _scope in (
        ("add", _add_dispatch, "add"), ("sub", subtract, "sub"), ("mul", multiply, "mul"),
        ("truediv", truediv, "truediv"), ("floordiv", floordiv, "floordiv"),
        ("mod", floormod, "mod"), ("pow", pow, "pow"), ("matmul", matmul, "matmul"),
        ("and", _and, "and"), ("or", _or, "or"), ("xor", _xor, "xor")):
    Tensor._override_operator(f"__{_name}__", _binary_operator(_fn, _scope))
    Tensor._override_operator(f"__r{_name}__", _binary_operator(_fn, _scope, reverse=True))

Tensor._override_operator("__neg__", lambda self: negative(self))
Tensor._override_operator("__abs__", lambda self: abs(self))
Tensor._override_operator("__invert__", lambda self: _invert(self))
Tensor._override_operator("__lt__", lambda self, other: less(self, other))
Tensor._override_operator("__le__", lambda self, other: less_equal(self, other))
Tensor._override_operator("__gt__", lambda self, other: greater(self, other))
Tensor._override_operator("__ge__", lambda self, other: greater_equal(self, other))
