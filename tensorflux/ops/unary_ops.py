"""Elementwise unary math ops: negation, absolute value, powers and roots, exponentials and
logarithms, trigonometric and hyperbolic functions, sigmoid, reciprocals, rounding, the error
and gamma functions, and the IsNan/IsInf/IsFinite tests, with the backward ops some of their
gradients use (SqrtGrad, TanhGrad, ...). Each op's definition, TF1 wrapper and gradient sit
together; kernels are in tensorflux/kernels/cpu/unary_ops.py. tensorflux/ops/math_ops.py
re-exports the TF1 names, as TensorFlow's math_ops has them.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import common_shapes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient, not_differentiable
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops
from tensorflux.ops.math_ops import (
    _FLOAT,
    _FLOAT_COMPLEX,
    _SIGNED_COMPLEX,
    _conj,
    _const_inputs,
    _merge_shapes,
    _ones,
    _zeros,
    add,
    complex,
    div_no_nan,
    multiply,
    realdiv,
    subtract,
)

# The TF1 public names of this module.
__all__ = [
    "negative", "abs", "sign", "square", "sqrt", "rsqrt", "exp", "expm1", "log", "log1p", "sin",
    "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "tanh",
    "sigmoid", "reciprocal", "floor", "ceil", "round", "rint", "erf", "erfc", "lgamma",
    "digamma", "is_nan", "is_inf", "is_finite"
]


def _unary(op_type: str, types: str, public: str, doc: str, out: str = "T",
           flops: str | None = None):
    """Defines `op_type` (x: T -> y: out) and returns its TF1 wrapper `fn(x, name=None)`.

    Like TensorFlow's, the wrapper maps an IndexedSlices through its values. `flops` is
    the op's FLOP formula (framework/flops.py), for the ops TensorFlow's profiler counts.
    """
    define_op(op_type, inputs=["x: T"], outputs=[f"y: {out}"], attrs=[f"T: {types}"],
              shape_fn=common_shapes.unchanged, flops=flops)

    def wrapper(x, name=None):
        if hasattr(x, "_is_indexed_slices"):
            return x._map_values(lambda v: wrapper(v, name))
        return apply_op(op_type, x=x, name=name or op_type)

    wrapper.__name__ = wrapper.__qualname__ = public
    wrapper.__doc__ = doc
    return wrapper


negative = _unary("Neg", _SIGNED_COMPLEX, "negative", "-x elementwise (`tf.negative`).",
                  flops="unary")


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
    return [array_ops.zeros_like(op.inputs[0])]


square = _unary("Square", ("{bfloat16, float16, float32, float64, int8, int16, int32, int64, "
                           "uint8, uint16, uint32, uint64, complex64, complex128}"),
                "square", "x * x elementwise (`tf.square`).", flops="unary")


@gradient("Square")
def _square_grad(op, grad):
    x = op.inputs[0]
    two = convert_to_tensor(np.asarray(2, x.dtype.base_dtype.as_numpy_dtype), name="two")
    return [multiply(grad, multiply(two, _conj(x)))]


def _grad_op(op_type: str, public: str, doc: str, flops: str | None = None):
    """Defines a backward op `op_type(y, dy) -> z` and returns its wrapper."""
    define_op(op_type, inputs=["y: T", "dy: T"], outputs=["z: T"],
              attrs=[f"T: {_FLOAT_COMPLEX}"], shape_fn=_grad_op_shape, flops=flops)

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


rsqrt = _unary("Rsqrt", _FLOAT_COMPLEX, "rsqrt", "1 / sqrt(x) elementwise (`tf.rsqrt`).",
               flops="unary:2")
rsqrt_grad = _grad_op("RsqrtGrad", "rsqrt_grad", "dy * -0.5 * y^3, for y = rsqrt(x).",
                      flops="binary:4")


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
             "(`tf.log`).", flops="unary")


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
                    "(`tf.reciprocal`).", flops="unary")
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


@gradient("Digamma")
def _digamma_grad(op, grad):
    """d/dx digamma(x) = polygamma(1, x) (the Polygamma op of special_math_ops.py)."""
    x = op.inputs[0]
    return [multiply(grad, apply_op("Polygamma", x=_const_like(1, x), y=x))]


is_nan = _unary("IsNan", _FLOAT, "is_nan", "Which elements of x are NaN (`tf.is_nan`).",
                out="bool")
is_inf = _unary("IsInf", _FLOAT, "is_inf", "Which elements of x are +-inf (`tf.is_inf`).",
                out="bool")
is_finite = _unary("IsFinite", _FLOAT, "is_finite", "Which elements of x are finite "
                   "(`tf.is_finite`).", out="bool")
not_differentiable("IsNan", "IsInf", "IsFinite")


# Constant evaluation for shape inference.


@common_shapes.constant_evaluator("Neg")
def _neg_value(op):
    values = _const_inputs(op)
    return None if values is None else np.negative(np.asarray(values[0]))


Tensor._override_operator("__neg__", lambda self: negative(self))
Tensor._override_operator("__abs__", lambda self: abs(self))
