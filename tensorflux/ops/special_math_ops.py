"""Special functions: Igamma (and IgammaGradA, its derivative in a), Igammac, Betainc,
Zeta, Polygamma, Erfinv, Ndtri, BesselI0e, BesselI1e, BesselI0, BesselI1, and
`tf.math.special`'s BesselJ0/J1/Y0/Y1/K0/K0e/K1/K1e, Dawsn, Expint, FresnelCos/Sin, Spence,
with the TF1 wrappers (`tf.math.*`, `tf.math.special.*`), gradients where TensorFlow has them, and
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
    cos,
    exp,
    lgamma,
    log,
    log1p,
    negative,
    sign,
    sin,
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


# ---- tf.math.special: Bessel J, Y, K; Dawson, Ei, Fresnel, Spence ----------------------------

bessel_j0 = _unary("BesselJ0", _FLOAT, "bessel_j0", "The Bessel function J0 elementwise "
                   "(`tf.math.special.bessel_j0`).")
bessel_j1 = _unary("BesselJ1", _FLOAT, "bessel_j1", "The Bessel function J1 elementwise "
                   "(`tf.math.special.bessel_j1`).")
bessel_y0 = _unary("BesselY0", _FLOAT, "bessel_y0", "The Bessel function Y0 elementwise "
                   "(`tf.math.special.bessel_y0`).")
bessel_y1 = _unary("BesselY1", _FLOAT, "bessel_y1", "The Bessel function Y1 elementwise "
                   "(`tf.math.special.bessel_y1`).")
bessel_k0 = _unary("BesselK0", _FLOAT, "bessel_k0", "The modified Bessel function K0 "
                   "elementwise (`tf.math.special.bessel_k0`).")
bessel_k0e = _unary("BesselK0e", _FLOAT, "bessel_k0e", "exp(x) K0(x) elementwise "
                    "(`tf.math.special.bessel_k0e`).")
bessel_k1 = _unary("BesselK1", _FLOAT, "bessel_k1", "The modified Bessel function K1 "
                   "elementwise (`tf.math.special.bessel_k1`).")
bessel_k1e = _unary("BesselK1e", _FLOAT, "bessel_k1e", "exp(x) K1(x) elementwise "
                    "(`tf.math.special.bessel_k1e`).")
dawsn = _unary("Dawsn", _FLOAT, "dawsn", "Dawson's integral exp(-x^2) int_0^x exp(t^2) dt "
               "elementwise (`tf.math.special.dawsn`).")
expint = _unary("Expint", _FLOAT, "expint", "The exponential integral Ei(x) elementwise "
                "(`tf.math.special.expint`).")
fresnel_cos = _unary("FresnelCos", _FLOAT, "fresnel_cos", "The Fresnel integral "
                     "int_0^x cos(pi t^2 / 2) dt elementwise (`tf.math.special.fresnel_cos`).")
fresnel_sin = _unary("FresnelSin", _FLOAT, "fresnel_sin", "The Fresnel integral "
                     "int_0^x sin(pi t^2 / 2) dt elementwise (`tf.math.special.fresnel_sin`).")
spence = _unary("Spence", _FLOAT, "spence", "Spence's integral int_1^x log(t) / (1 - t) dt "
                "elementwise (`tf.math.special.spence`).")


def _over_x(x, y, at_zero):
    """y / x, `at_zero` where x == 0 (the limit of the terms below)."""
    zero, y_over_x = _i1_over_x_term(x, y)
    return where_v2(zero, _const_like(at_zero, x), y_over_x)


@gradient("BesselJ0")
def _bessel_j0_grad(op, grad):
    return [multiply(grad, negative(bessel_j1(op.inputs[0])))]


@gradient("BesselJ1")
def _bessel_j1_grad(op, grad):
    """J1' = J0 - J1 / x (1/2 at 0)."""
    x, y = op.inputs[0], op.outputs[0]
    zero, y_over_x = _i1_over_x_term(x, y)
    return [multiply(grad, where_v2(zero, _const_like(0.5, x),
                                    subtract(bessel_j0(x), y_over_x)))]


@gradient("BesselY0")
def _bessel_y0_grad(op, grad):
    return [multiply(grad, negative(bessel_y1(op.inputs[0])))]


@gradient("BesselY1")
def _bessel_y1_grad(op, grad):
    x, y = op.inputs[0], op.outputs[0]
    return [multiply(grad, subtract(bessel_y0(x), truediv(y, x)))]


@gradient("BesselK0")
def _bessel_k0_grad(op, grad):
    return [multiply(grad, negative(bessel_k1(op.inputs[0])))]


@gradient("BesselK0e")
def _bessel_k0e_grad(op, grad):
    x, y = op.inputs[0], op.outputs[0]
    return [multiply(grad, subtract(y, bessel_k1e(x)))]


@gradient("BesselK1")
def _bessel_k1_grad(op, grad):
    """K1' = -K0 - K1 / x."""
    x, y = op.inputs[0], op.outputs[0]
    return [multiply(grad, negative(add(bessel_k0(x), truediv(y, x))))]


@gradient("BesselK1e")
def _bessel_k1e_grad(op, grad):
    """(exp(x) K1)' = K1e (1 - 1/x) - K0e."""
    x, y = op.inputs[0], op.outputs[0]
    return [multiply(grad, subtract(subtract(y, truediv(y, x)), bessel_k0e(x)))]


@gradient("Dawsn")
def _dawsn_grad(op, grad):
    x, y = op.inputs[0], op.outputs[0]
    return [multiply(grad, subtract(_const_like(1, x),
                                    multiply(_const_like(2, x), multiply(x, y))))]


@gradient("Expint")
def _expint_grad(op, grad):
    x = op.inputs[0]
    return [multiply(grad, truediv(exp(x), x))]


@gradient("FresnelCos")
def _fresnel_cos_grad(op, grad):
    x = op.inputs[0]
    return [multiply(grad, cos(multiply(_const_like(math.pi / 2, x), square(x))))]


@gradient("FresnelSin")
def _fresnel_sin_grad(op, grad):
    x = op.inputs[0]
    return [multiply(grad, sin(multiply(_const_like(math.pi / 2, x), square(x))))]


@gradient("Spence")
def _spence_grad(op, grad):
    """log(x) / (1 - x), -1 at x == 1."""
    x = op.inputs[0]
    one = equal(x, _const_like(1, x))
    safe = where_v2(one, _const_like(2, x), x)
    d = truediv(log(safe), subtract(_const_like(1, x), safe))
    return [multiply(grad, where_v2(one, _const_like(-1, x), d))]


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


