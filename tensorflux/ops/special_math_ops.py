"""Special functions: Igamma (and IgammaGradA, its derivative in a), Igammac, Betainc,
Zeta, Polygamma, Erfinv, Ndtri, BesselI0e, BesselI1e, BesselI0, BesselI1, with the TF1
wrappers (`tf.math.*`, `tf.math.special.*`), gradients where TensorFlow has them, and
compositions (`lbeta`, `erfcinv`).
Lgamma and Digamma are in unary_ops.py. Kernels: tensorflux/kernels/cpu/special_math_ops.py.
"""

from __future__ import annotations

import math

from tensorflux.framework import common_shapes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient, not_differentiable
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, reduction_ops
from tensorflux.ops.comparison_ops import equal, where_v2
from tensorflux.ops.math_ops import _binary, add, multiply, subtract, truediv
from tensorflux.ops.unary_ops import (
    _const_like,
    _unary,
    exp,
    lgamma,
    log,
    log1p,
    negative,
    sign,
    square,
)

__all__ = ["igamma", "igammac", "betainc", "zeta", "polygamma", "lbeta"]

_FLOAT = "{bfloat16, half, float, double}"

_binary("Igamma", _FLOAT)
_binary("Igammac", _FLOAT)
_binary("Zeta", "{float, double}")
_binary("Polygamma", "{float, double}")


def _ternary_shape(op):
    a, b, x = (t.shape for t in op.inputs)
    return [common_shapes.broadcast_shapes(common_shapes.broadcast_shapes(a, b), x)]


_binary("IgammaGradA", "{float, double}")
not_differentiable("IgammaGradA")

define_op("Betainc", inputs=["a: T", "b: T", "x: T"], outputs=["z: T"],
          attrs=["T: {float, double}"], shape_fn=_ternary_shape, broadcasts=True)


def igamma(a, x, name=None):
    """The regularized lower incomplete gamma function P(a, x) (`tf.math.igamma`)."""
    return apply_op("Igamma", x=a, y=x, name=name or "Igamma")


def igammac(a, x, name=None):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)
    (`tf.math.igammac`)."""
    return apply_op("Igammac", x=a, y=x, name=name or "Igammac")


def betainc(a, b, x, name=None):
    """The regularized incomplete beta function I_x(a, b) (`tf.math.betainc`)."""
    return apply_op("Betainc", a=a, b=b, x=x, name=name or "Betainc")


def zeta(x, q, name=None):
    """The Hurwitz zeta function sum_n (n + q)^-x (`tf.math.zeta`)."""
    return apply_op("Zeta", x=x, y=q, name=name or "Zeta")


def polygamma(a, x, name=None):
    """The a-th derivative of digamma at x (`tf.math.polygamma`); a is a non-negative
    integer (stored in a float)."""
    return apply_op("Polygamma", x=a, y=x, name=name or "Polygamma")


@gradient("Igamma")
def _igamma_grad(op, grad):
    """d/dx P(a, x) = exp(-x) x^(a-1) / Gamma(a); d/da P(a, x) is IgammaGradA."""
    a, x = op.inputs
    density = exp(subtract(subtract(multiply(subtract(a, _const_like(1, a)), log(x)), x),
                           lgamma(a)))
    return [multiply(grad, apply_op("IgammaGradA", x=a, y=x)), multiply(grad, density)]


@gradient("Igammac")
def _igammac_grad(op, grad):
    ga, gx = _igamma_grad(op, grad)
    return [negative(ga), negative(gx)]


@gradient("Betainc")
def _betainc_grad(op, grad):
    """Only x has a gradient (as in TensorFlow): x^(a-1) (1-x)^(b-1) / B(a, b)."""
    a, b, x = op.inputs
    one = _const_like(1, x)
    log_density = add(multiply(subtract(a, one), log(x)),
                      multiply(subtract(b, one), log1p(negative(x))))
    log_beta = subtract(add(lgamma(a), lgamma(b)), lgamma(add(a, b)))
    return [None, None, multiply(grad, exp(subtract(log_density, log_beta)))]


@gradient("Zeta")
def _zeta_grad(op, grad):
    """d/dq zeta(x, q) = -x zeta(x + 1, q); x has none (as in TensorFlow)."""
    x, q = op.inputs
    return [None, multiply(grad, negative(multiply(x, zeta(add(x, _const_like(1, x)), q))))]


@gradient("Polygamma")
def _polygamma_grad(op, grad):
    n, x = op.inputs
    return [None, multiply(grad, polygamma(add(n, _const_like(1, n)), x))]


erfinv = _unary("Erfinv", _FLOAT, "erfinv", "The inverse of erf elementwise "
                "(`tf.math.erfinv`).")
ndtri = _unary("Ndtri", _FLOAT, "ndtri", "The inverse of the standard normal CDF "
               "elementwise (`tf.math.ndtri`).")
bessel_i0e = _unary("BesselI0e", _FLOAT, "bessel_i0e", "exp(-|x|) I0(x) elementwise "
                    "(`tf.math.bessel_i0e`).")
bessel_i1e = _unary("BesselI1e", _FLOAT, "bessel_i1e", "exp(-|x|) I1(x) elementwise "
                    "(`tf.math.bessel_i1e`).")
bessel_i0 = _unary("BesselI0", _FLOAT, "bessel_i0", "The modified Bessel function I0 "
                   "elementwise (`tf.math.bessel_i0`).")
bessel_i1 = _unary("BesselI1", _FLOAT, "bessel_i1", "The modified Bessel function I1 "
                   "elementwise (`tf.math.bessel_i1`).")


@gradient("Erfinv")
def _erfinv_grad(op, grad):
    y = op.outputs[0]
    return [multiply(grad, multiply(_const_like(math.sqrt(math.pi) / 2, y), exp(square(y))))]


@gradient("Ndtri")
def _ndtri_grad(op, grad):
    y = op.outputs[0]
    return [multiply(grad, multiply(_const_like(math.sqrt(2 * math.pi), y),
                                    exp(multiply(_const_like(0.5, y), square(y)))))]


@gradient("BesselI0e")
def _bessel_i0e_grad(op, grad):
    x, y = op.inputs[0], op.outputs[0]
    return [multiply(grad, subtract(bessel_i1e(x), multiply(sign(x), y)))]


def _i1_over_x_term(x, y):
    """y / x, with its limit 0.5 at x == 0 (I1(x) ~ x / 2)."""
    zero = equal(x, array_ops.zeros_like(x))
    safe_x = where_v2(zero, array_ops.ones_like(x), x)
    return zero, truediv(y, safe_x)


@gradient("BesselI1e")
def _bessel_i1e_grad(op, grad):
    x, y = op.inputs[0], op.outputs[0]
    zero, y_over_x = _i1_over_x_term(x, y)
    d = subtract(bessel_i0e(x), add(multiply(sign(x), y), y_over_x))
    return [multiply(grad, where_v2(zero, _const_like(0.5, x), d))]


@gradient("BesselI0")
def _bessel_i0_grad(op, grad):
    return [multiply(grad, bessel_i1(op.inputs[0]))]


@gradient("BesselI1")
def _bessel_i1_grad(op, grad):
    x, y = op.inputs[0], op.outputs[0]
    zero, y_over_x = _i1_over_x_term(x, y)
    d = subtract(bessel_i0(x), y_over_x)
    return [multiply(grad, where_v2(zero, _const_like(0.5, x), d))]


def erfcinv(x, name=None):
    """The inverse of erfc: -ndtri(x / 2) / sqrt(2) (`tf.math.erfcinv`)."""
    with graph_lib.name_scope(name, "erfcinv", [x]):
        x = convert_to_tensor(x, name="x")
        return multiply(negative(ndtri(multiply(x, _const_like(0.5, x)))),
                        _const_like(1 / math.sqrt(2), x))


def lbeta(x, name=None):
    """log|B(x)| = sum(lgamma(x)) - lgamma(sum(x)) over the last dimension
    (`tf.math.lbeta`)."""
    with graph_lib.name_scope(name, "lbeta", [x]):
        x = convert_to_tensor(x, name="x")
        return subtract(reduction_ops.reduce_sum(lgamma(x), -1),
                        lgamma(reduction_ops.reduce_sum(x, -1)))


