"""Unary ops (tensorflux/ops/unary_ops.py): values against NumPy (table-driven, every listed
dtype, known and unknown shapes, every executor), gradients against finite differences,
the *Grad kernels, and special functions."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.ops import math_ops, unary_ops
from tests.op_test_util import OpCase, away_from, positive
from tests.ops.math_cases import (
    BF16,
    F32_64,
    FLOATS,
    INTS,
    NUMERIC,
    above_one,
    half_integers,
    in_f64,
    nonzero,
    np_erf,
    np_sigmoid,
    run,
    same,
    table_tests,
    unit,
)

# The kernels give NaN/inf for 0/0, log(0), NaN casts as TensorFlow does; NumPy's warnings
# about them are silenced in the kernel module (pytest's own warning filters replace that).
# Each test runs on a fresh default graph (tests/ops/conftest.py).
pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning:tensorflux.kernels.cpu"),
              pytest.mark.usefixtures("fresh_graph")]

# (case, dtypes to check values for; gradients are checked for float32/float64 when
# case.grad is set).
CASES: list[tuple[OpCase, list]] = [
    (OpCase("inv", lambda x: math_ops.apply_op("Inv", x=x), np.reciprocal, [(2, 3)],
            make=nonzero), F32_64),
    (OpCase("negative", tf.negative, same(np.negative), [(2, 3)]),
     [np.float16, BF16, np.float32, np.float64, np.int8, np.int32, np.int64, np.complex64]),
    (OpCase("neg_op", lambda x: -x, same(np.negative), [(4,)]), [np.float32, np.int32]),
    (OpCase("abs", tf.abs, same(np.abs), [(2, 3)], make=lambda rng, s, d: away_from(
        rng, s, d, 0.0) if np.dtype(d).kind == "f" else rng.integers(-5, 5, s).astype(d)),
     [np.float16, BF16, np.float32, np.float64, np.int8, np.int32, np.int64]),
    (OpCase("abs_op", lambda x: abs(x), same(np.abs), [(4,)], make=nonzero), [np.float32]),
    (OpCase("complex_abs", tf.abs, lambda x: np.abs(x), [(2, 3)], grad=False),
     [np.complex64, np.complex128]),
    (OpCase("sign", tf.sign, same(np.sign), [(2, 3)], make=nonzero),
     [np.float16, np.float32, np.float64, np.int32, np.int64, np.complex64]),
    (OpCase("square", tf.square, in_f64(np.square), [(2, 3)]), NUMERIC),
    (OpCase("sqrt", tf.sqrt, in_f64(np.sqrt), [(2, 3)], make=positive),
     FLOATS + [np.complex64]),
    (OpCase("rsqrt", tf.rsqrt, in_f64(lambda x: 1 / np.sqrt(x)), [(2, 3)], make=positive),
     FLOATS),
    (OpCase("exp", tf.exp, in_f64(np.exp), [(2, 3)]), FLOATS + [np.complex128]),
    (OpCase("expm1", tf.expm1, in_f64(np.expm1), [(2, 3)]), FLOATS),
    (OpCase("log", tf.log, in_f64(np.log), [(2, 3)], make=positive), FLOATS + [np.complex64]),
    (OpCase("log1p", tf.log1p, in_f64(np.log1p), [(2, 3)], make=positive), FLOATS),
    (OpCase("sin", tf.sin, in_f64(np.sin), [(2, 3)]), FLOATS),
    (OpCase("cos", tf.cos, in_f64(np.cos), [(2, 3)]), FLOATS),
    (OpCase("tan", tf.tan, in_f64(np.tan), [(2, 3)], make=unit), FLOATS),
    (OpCase("asin", tf.asin, in_f64(np.arcsin), [(2, 3)], make=unit), F32_64),
    (OpCase("acos", tf.acos, in_f64(np.arccos), [(2, 3)], make=unit), F32_64),
    (OpCase("atan", tf.atan, in_f64(np.arctan), [(2, 3)]), F32_64),
    (OpCase("sinh", tf.sinh, in_f64(np.sinh), [(2, 3)]), F32_64),
    (OpCase("cosh", tf.cosh, in_f64(np.cosh), [(2, 3)]), F32_64),
    (OpCase("asinh", tf.asinh, in_f64(np.arcsinh), [(2, 3)]), F32_64),
    (OpCase("acosh", tf.acosh, in_f64(np.arccosh), [(2, 3)], make=above_one), F32_64),
    (OpCase("atanh", tf.atanh, in_f64(np.arctanh), [(2, 3)], make=unit), F32_64),
    (OpCase("tanh", tf.tanh, in_f64(np.tanh), [(2, 3)]), FLOATS + [np.complex64]),
    (OpCase("sigmoid", tf.sigmoid, np_sigmoid, [(2, 3)]), FLOATS),
    (OpCase("sigmoid_extreme", tf.sigmoid, np_sigmoid, [(4,)], grad=False,
            make=lambda rng, s, d: np.array([-1e4, -50, 50, 1e4], d)), F32_64),
    (OpCase("reciprocal", tf.reciprocal, in_f64(np.reciprocal), [(2, 3)], make=nonzero),
     FLOATS + [np.complex64]),
    (OpCase("reciprocal_int", tf.reciprocal,
            lambda x: np.where(np.abs(x) == 1, x, 0).astype(x.dtype), [(2, 3)],
            make=nonzero), INTS),
    (OpCase("floor", tf.floor, same(np.floor), [(2, 3)], grad=False), FLOATS),
    (OpCase("ceil", tf.ceil, same(np.ceil), [(2, 3)], grad=False), FLOATS),
    (OpCase("round_half_even", tf.round, same(np.round), [(3, 4)], make=half_integers,
            grad=False), FLOATS),
    (OpCase("rint", tf.rint, same(np.rint), [(3, 4)], make=half_integers, grad=False),
     FLOATS),
    (OpCase("erf", tf.erf, np_erf, [(2, 3)]), FLOATS),
    (OpCase("erfc", tf.erfc, lambda x: (1 - np_erf(x).astype(np.float64)).astype(x.dtype),
            [(2, 3)]), F32_64),
    (OpCase("lgamma", tf.lgamma, lambda x: np.vectorize(math.lgamma)(x).astype(x.dtype),
            [(2, 3)], make=positive), F32_64),
    (OpCase("digamma", tf.digamma, lambda x: np.vectorize(
        lambda v: (math.lgamma(v + 1e-6) - math.lgamma(v - 1e-6)) / 2e-6)(
        x.astype(np.float64)).astype(x.dtype), [(2, 3)], make=positive, tol=1e-4,
        grad=False), F32_64),
    (OpCase("is_nan", tf.is_nan, np.isnan, [(5,)], grad=False,
            make=lambda rng, s, d: np.array([0, np.nan, np.inf, -np.inf, 1], d)), FLOATS),
    (OpCase("is_inf", tf.is_inf, np.isinf, [(5,)], grad=False,
            make=lambda rng, s, d: np.array([0, np.nan, np.inf, -np.inf, 1], d)), FLOATS),
    (OpCase("is_finite", tf.is_finite, np.isfinite, [(5,)], grad=False,
            make=lambda rng, s, d: np.array([0, np.nan, np.inf, -np.inf, 1], d)), FLOATS),
]

test_value, test_gradient, test_kernel_dtypes_are_exact = table_tests(CASES)



def test_round_half_to_even_and_int_round_is_identity():
    x = tf.constant([0.5, 1.5, 2.5, -0.5, -1.5, 2.6])
    np.testing.assert_array_equal(run(tf.round(x)), [0.0, 2.0, 2.0, -0.0, -2.0, 3.0])
    i = tf.constant([1, 2])
    assert tf.round(i) is i


def test_second_order_gradients():
    x = tf.placeholder(tf.float64, [3])
    for fn, d2 in ((tf.tanh, lambda v: -2 * np.tanh(v) * (1 - np.tanh(v) ** 2)),
                   (tf.sigmoid, lambda v: (s := 1 / (1 + np.exp(-v))) * (1 - s) * (1 - 2 * s)),
                   (tf.sqrt, lambda v: -0.25 * v ** -1.5),
                   (tf.rsqrt, lambda v: 0.75 * v ** -2.5),
                   (tf.reciprocal, lambda v: 2 * v ** -3.0)):
        (g,) = tf.gradients(tf.reduce_sum(fn(x)), x)
        (h,) = tf.gradients(tf.reduce_sum(g), x)
        v = np.array([0.5, 1.0, 2.0])
        np.testing.assert_allclose(run(h, {x: v}), d2(v), rtol=1e-6, err_msg=fn.__name__)


# ---- semantics checked against TensorFlow 2.21 (issue 21); expected values from the oracle --


def test_tanh_and_sigmoid_grad_kernels_do_not_conjugate():
    # TF's kernels compute dy * (1 - y*y) and dy * y * (1 - y) as written; the gradients of
    # Tanh and Sigmoid pass conj(y) themselves.
    y = np.array([0.5 + 0.5j, 0.2 - 1j], np.complex64)
    dy = np.array([1 + 2j, 0.3 + 0.1j], np.complex64)
    tanh_g, sig_g = run([unary_ops.tanh_grad(y, dy), unary_ops.sigmoid_grad(y, dy)])
    np.testing.assert_allclose(tanh_g, [2 + 1.5j, 0.548 + 0.316j], rtol=1e-6)
    np.testing.assert_allclose(sig_g, [0.5 + 1j, 0.408 - 0.064j], rtol=1e-6)
    # tf.gradients of sigmoid(x) for complex x is dy * conj(s * (1 - s)).
    x = tf.constant(np.array([0.3 - 0.2j], np.complex64))
    s = tf.sigmoid(x)
    (g,) = tf.gradients(s, x, grad_ys=tf.constant(np.array([1 + 0j], np.complex64)))
    sv, gv = run([s, g])
    np.testing.assert_allclose(gv, np.conj(sv * (1 - sv)), rtol=1e-6)


@pytest.mark.parametrize("op", ["SqrtGrad", "RsqrtGrad", "ReciprocalGrad", "InvGrad"])
def test_inverse_grads_are_zero_where_dy_is_zero(op):
    from tensorflux.framework.op_def_library import apply_op

    y = np.array([0.0, np.inf, np.nan, 0.0, 1.0], np.float32)
    dy = np.array([0.0, 0.0, -0.0, 1.0, 0.0], np.float32)
    got = run(apply_op(op, y=y, dy=dy))
    want = {"SqrtGrad": [0, 0, 0, np.inf, 0]}.get(op, [0, 0, 0, -0.0, 0])
    np.testing.assert_array_equal(got, np.array(want, np.float32))
    np.testing.assert_array_equal(np.signbit(got), np.signbit(np.array(want, np.float32)))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_digamma_is_nan_at_its_poles(dtype):
    x = np.array([-0.0, 0.0, -1, -2, -np.inf, np.inf, 1, -1.5], dtype)
    got = run(tf.digamma(x))
    assert np.isnan(got[:5]).all() and got[5] == np.inf
    np.testing.assert_allclose(got[6:].astype(np.float64), [-0.5772157, 0.7031566],
                               rtol=2e-3 if dtype == np.float16 else 1e-6)


def test_special_functions_on_scalars_without_scipy():
    # The kernels' NumPy fallbacks (used when SciPy is absent) must take 0-d inputs: a ufunc
    # gives a bare scalar there, which has no .astype and cannot be an out= argument.
    import json
    import subprocess
    import sys

    program = """if True:
        import sys
        sys.modules["scipy"] = None  # import scipy now raises ImportError
        import numpy as np
        import tensorflux as tf
        p = tf.placeholder(tf.float16, [])
        ops = [tf.erf, tf.erfc, tf.lgamma, tf.rsqrt, tf.sigmoid, tf.digamma]
        with tf.Session() as s:
            got = s.run([f(p) for f in ops], {p: np.float16(0.5)})
        print([float(v) for v in got])
    """
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=100)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    # float16 values from TF 2.21
    np.testing.assert_allclose(got, [0.5205, 0.4795, 0.5723, 1.414, 0.6226, -1.964],
                               rtol=1e-3)
