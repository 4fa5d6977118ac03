"""Math ops: elementwise binary arithmetic with NumPy broadcasting, bitwise ops, complex
numbers, AddN, casts, and the arithmetic Tensor operators. Each op's definition, TF1 wrapper
and gradient sit together; kernels are in tensorflux/kernels/cpu/math_ops.py. The other math
families have modules of their own, mirrored by name in tensorflux/kernels/cpu/: unary
functions (unary_ops.py), comparisons, logic and selection (comparison_ops.py), reductions
(reduction_ops.py), matrices (matrix_ops.py) and sequences (range, cumsum, segment sums:
sequence_ops.py). They import this module's helpers, so this one does not re-export them
(callers import the family they use) and its gradients make the unary and comparison ops
they need by type (`apply_op("Neg", ...)`), as TF's math_grad uses gen_math_ops.

Gradients of ops defined with `broadcasts=True` return gradients shaped like the op's
output; the gradient driver (autodiff/gradients.py) sums them back to each input's shape.

This module defines TF1's `range`, `abs`, `pow`, `round` and `complex`, so inside it the
Python builtins of those names are reached as `builtins.range` and so on.
"""

from __future__ import annotations

import collections.abc

import numpy as np

from tensorflux.framework import common_shapes, dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient, not_differentiable
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import (
    convert_to_tensor,
    convert_to_tensor_or_indexed_slices,
)
from tensorflux.ops import array_ops

# The TF1 public names of this module.
__all__ = [
    # elementwise binary
    "add", "subtract", "multiply", "div", "divide", "truediv", "realdiv", "floordiv",
    "floor_div", "floormod", "mod", "truncatediv", "truncatemod", "pow", "maximum",
    "minimum", "squared_difference", "div_no_nan", "atan2", "scalar_mul",
    # complex numbers
    "real", "imag", "conj", "complex", "angle",
    # sums and casts
    "add_n", "cast", "to_float", "to_double", "to_int32", "to_int64", "to_bfloat16",
    "to_complex64", "to_complex128",
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
                "complex64, complex128, string}"), flops="binary")
_binary("AddV2", _NUMERIC, is_commutative=True, flops="binary")


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


_binary("Sub", _NUMERIC, flops="binary")
subtract = _binary_wrapper("Sub", "subtract", "x - y elementwise, with broadcasting "
                           "(`tf.subtract`).")


@gradient("Sub")
def _sub_grad(op, grad):
    return [grad, apply_op("Neg", x=grad)]


_binary("Mul", _NUMERIC, is_commutative=True, flops="binary")
multiply = _binary_wrapper("Mul", "multiply", "x * y elementwise, with broadcasting "
                           "(`tf.multiply`).")


@gradient("Mul")
def _mul_grad(op, grad):
    x, y = op.inputs
    return [multiply(grad, _conj(y)), multiply(_conj(x), grad)]


def _div_grad(op, grad):
    x, y = op.inputs
    cy = _conj(y)
    neg_x = apply_op("Neg", x=_conj(x))
    return [realdiv(grad, cy), multiply(grad, realdiv(realdiv(neg_x, cy), cy))]


_binary("Div", _NUMERIC)
_binary("RealDiv", _NUMERIC, flops="binary")
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
    return [grad, multiply(grad, apply_op("Neg", x=floordiv(x, y)))]


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
    return [grad, multiply(grad, apply_op("Neg", x=truncatediv(x, y)))]


_binary("Pow", ("{bfloat16, float32, float16, float64, int8, int16, int32, int64, "
                "complex64, complex128}"), flops="binary")


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
        mask = apply_op("NotEqual", x=x, y=_zeros(x))
    else:
        mask = apply_op("Greater", x=x, y=_zeros(x))
    safe_x = apply_op("SelectV2", condition=mask, t=x, e=_ones(x))
    log_x = apply_op("SelectV2", condition=mask, t=apply_op("Log", x=safe_x), e=_zeros(x))
    gy = multiply(grad, multiply(z, log_x))
    return [gx, gy]


def _zeros(x):
    """A scalar 0 of x's dtype (broadcasts against x)."""
    return convert_to_tensor(np.zeros((), x.dtype.base_dtype.as_numpy_dtype), name="zero")


def _ones(x):
    """A scalar 1 of x's dtype (broadcasts against x)."""
    return convert_to_tensor(np.ones((), x.dtype.base_dtype.as_numpy_dtype), name="one")


_binary("Maximum", _REAL, flops="binary")
maximum = _binary_wrapper("Maximum", "maximum", "max(x, y) elementwise, with broadcasting "
                          "(`tf.maximum`); NaN propagates.")


def _min_or_max_grad(op, grad, select_x):
    x, y = op.inputs
    zeros = _zeros(grad)
    return [apply_op("SelectV2", condition=select_x, t=grad, e=zeros),
            apply_op("SelectV2", condition=select_x, t=zeros, e=grad)]


@gradient("Maximum")
def _maximum_grad(op, grad):
    return _min_or_max_grad(op, grad, apply_op("GreaterEqual", x=op.inputs[0], y=op.inputs[1]))


_binary("Minimum", _REAL, flops="binary")
minimum = _binary_wrapper("Minimum", "minimum", "min(x, y) elementwise, with broadcasting "
                          "(`tf.minimum`); NaN propagates.")


@gradient("Minimum")
def _minimum_grad(op, grad):
    return _min_or_max_grad(op, grad, apply_op("LessEqual", x=op.inputs[0], y=op.inputs[1]))


_binary("SquaredDifference", ("{bfloat16, float16, float32, float64, int32, int64, "
                              "complex64, complex128}"), is_commutative=True,
        flops="binary:2")
squared_difference = _binary_wrapper("SquaredDifference", "squared_difference",
                                     "(x - y) * conj(x - y) elementwise "
                                     "(`tf.squared_difference`).")


@gradient("SquaredDifference")
def _squared_difference_grad(op, grad):
    x, y = op.inputs
    two = convert_to_tensor(np.asarray(2, grad.dtype.base_dtype.as_numpy_dtype), name="two")
    gx = multiply(multiply(two, grad), subtract(x, y))
    return [_conj(gx), apply_op("Neg", x=_conj(gx))]


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
            multiply(grad, div_no_nan(div_no_nan(apply_op("Neg", x=_conj(x)), cy), cy))]


_binary("Xlogy", "{float16, bfloat16, float32, float64, complex64, complex128}")
_binary("Xdivy", "{float16, bfloat16, float32, float64, complex64, complex128}")


@gradient("Xlogy")
def _xlogy_grad(op, grad):
    x, y = op.inputs
    not_zero_x = cast(apply_op("NotEqual", x=x, y=_zeros(x)), x.dtype)
    return [multiply(grad, apply_op("Xlogy", x=not_zero_x, y=y)),
            multiply(grad, apply_op("Xdivy", x=x, y=y))]


@gradient("Xdivy")
def _xdivy_grad(op, grad):
    x, y = op.inputs
    not_zero_x = cast(apply_op("NotEqual", x=x, y=_zeros(x)), x.dtype)
    return [multiply(grad, apply_op("Xdivy", x=not_zero_x, y=y)),
            multiply(grad, apply_op("Xdivy", x=apply_op("Neg", x=x), y=apply_op("Square", x=y)))]


_binary("Atan2", _FLOAT, inputs=("y", "x"))


def atan2(y, x, name: str | None = None):
    """The angle of the point (x, y), elementwise, in [-pi, pi] (`tf.atan2`)."""
    return apply_op("Atan2", y=y, x=x, name=name or "Atan2")


@gradient("Atan2")
def _atan2_grad(op, grad):
    y, x = op.inputs
    grad_inv = realdiv(grad, add(apply_op("Square", x=x), apply_op("Square", x=y)))
    return [multiply(x, grad_inv), multiply(apply_op("Neg", x=y), grad_inv)]


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
        return array_ops.zeros_like(input)


def angle(input, name: str | None = None):  # noqa: A002
    """The argument of each complex element (`tf.angle`); 0 or pi for real ones."""
    with graph_lib.name_scope(name, "Angle", [input]) as name:
        input = convert_to_tensor(input, name="input")  # noqa: A001
        if input.dtype.is_complex:
            return apply_op("Angle", input=input, Tout=input.dtype.real_dtype, name=name)
        return atan2(array_ops.zeros_like(input), input, name=name)


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
    z = apply_op("Reciprocal", x=complex(imag(x), real(x)))
    return [apply_op("Neg", x=multiply(complex(grad, _zeros(grad)), z))]


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
          shape_fn=lambda op: [_merge_all(op.inputs)], is_commutative=True, flops="add_n")


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
    if not inputs or not isinstance(inputs, collections.abc.Iterable) or \
            isinstance(inputs, Tensor):
        raise ValueError("Inputs must be an iterable of at least one Tensor/IndexedSlices "
                         "with the same dtype and shape.")
    inputs = [convert_to_tensor_or_indexed_slices(x) for x in inputs]
    inputs = [convert_to_tensor(x) if hasattr(x, "_is_indexed_slices") else x for x in inputs]
    if len(inputs) == 1:
        return array_ops.identity(inputs[0], name=name) if name else inputs[0]
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


@common_shapes.constant_evaluator("Cast")
def _cast_value(op):
    values = _const_inputs(op)
    dst = op.attrs["DstT"]
    if values is None or dst is dtypes.string or op.attrs["SrcT"] is dtypes.string:
        return None
    return np.asarray(values[0]).astype(dst.as_numpy_dtype)


# ==========================================================================================
# Tensor operators, named as TensorFlow names them (`a + b` is an AddV2 named "add", its
# converted operand "add/y").


def defers_operators(other) -> bool:
    """Whether a Tensor operator leaves `other` to its own reflected operator (composite
    tensors such as RaggedTensor set `_overrides_tensor_operators`)."""
    return getattr(other, "_overrides_tensor_operators", False)


def _binary_operator(fn, scope: str, reverse: bool = False):
    """`self <op> other` (or `other <op> self` when reversed): the other operand converts
    to this tensor's dtype first, inside the op's name scope."""

    def operator(self, other):
        if defers_operators(other):
            return NotImplemented
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


for _name, _fn, _scope in (
        ("add", _add_dispatch, "add"), ("sub", subtract, "sub"), ("mul", multiply, "mul"),
        ("truediv", truediv, "truediv"), ("floordiv", floordiv, "floordiv"),
        ("mod", floormod, "mod"), ("pow", pow, "pow")):
    Tensor._override_operator(f"__{_name}__", _binary_operator(_fn, _scope))
    Tensor._override_operator(f"__r{_name}__", _binary_operator(_fn, _scope, reverse=True))

# (`-x` and `abs(x)` are set in unary_ops.py; `&`, `|`, `^`, `~` and the comparisons in
# comparison_ops.py, beside the ops they make.)
