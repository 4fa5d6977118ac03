"""Math ops: values against NumPy (table-driven, every listed dtype, known and unknown
shapes, both executors), gradients against finite differences (float32 and float64),
TensorFlow's errors, and a batch of results compared with TensorFlow itself."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import tensorflux as tf
from tensorflux.ops import math_ops, reduction_ops, sequence_ops, unary_ops
from tests import oracle
from tests.op_test_util import OpCase, away_from, check_gradient, check_value, positive

# The kernels give NaN/inf for 0/0, log(0), NaN casts as TensorFlow does; NumPy's warnings
# about them are silenced in the kernel module (pytest's own warning filters replace that).
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning:tensorflux.kernels.cpu")

BF16 = ml_dtypes.bfloat16
FLOATS = [np.float16, BF16, np.float32, np.float64]
F32_64 = [np.float32, np.float64]
INTS = [np.int32, np.int64]
NUMERIC = [np.float16, BF16, np.float32, np.float64, np.int8, np.int32, np.int64, np.uint8,
           np.complex64, np.complex128]


# ---- input makers ------------------------------------------------------------------------


def nonzero(rng, shape, dtype):
    """Divisors: never 0 (integers in [1, 4] with random signs for signed types)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        v = rng.integers(1, 5, size=shape)
        if dtype.kind == "i":
            v = v * rng.choice([-1, 1], size=shape)
        return v.astype(dtype)
    if dtype.kind == "c":
        return (away_from(rng, shape, np.float64, 0.0, 0.5) + 0.5j).astype(dtype)
    return away_from(rng, shape, np.float64, 0.0, 0.5).astype(dtype)


def unit(rng, shape, dtype):
    """Values in (-0.9, 0.9): asin, acos, atanh."""
    return rng.uniform(-0.9, 0.9, size=shape).astype(dtype)


def above_one(rng, shape, dtype):
    return rng.uniform(1.2, 3.0, size=shape).astype(dtype)


def distinct(rng, shape, dtype):
    """A permutation of well-separated values: no ties for max/min/argmax."""
    n = int(np.prod(shape))
    return (rng.permutation(n).reshape(shape) * 0.37 - n * 0.15).astype(dtype)


def half_integers(rng, shape, dtype):
    """Values k + 0.5 and nearby: round-half-to-even cases."""
    v = rng.integers(-4, 5, size=shape) + rng.choice([0.5, 0.25, 0.75], size=shape)
    return v.astype(dtype)


def spd(rng, shape, dtype):
    """Symmetric positive definite (batches of) matrices."""
    a = rng.standard_normal(shape)
    n = shape[-1]
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(dtype)


def well_conditioned(rng, shape, dtype):
    n = shape[-1]
    a = rng.standard_normal(shape) + 3 * n ** 0.5 * np.eye(n)
    if np.dtype(dtype).kind == "c":
        a = a + 0.3j * rng.standard_normal(shape)
    return a.astype(dtype)


def booleans(rng, shape, dtype):
    return rng.random(shape) < 0.5


# ---- NumPy references --------------------------------------------------------------------


def np_truncdiv(x, y):
    if np.dtype(x.dtype).kind in "iu":
        return (np.sign(x) * np.sign(y) * (np.abs(x) // np.abs(y))).astype(x.dtype)
    return np.trunc(x / y).astype(x.dtype)


def np_truediv(x, y):
    if np.dtype(x.dtype).kind in "iu":
        out = np.float32 if np.dtype(x.dtype).itemsize <= 2 else np.float64
        return x.astype(out) / y.astype(out)
    return np.true_divide(x, y)


def np_floordiv(x, y):
    if np.dtype(x.dtype).kind in "iu":
        return np.floor_divide(x, y)
    return np.floor(x.astype(np.float64) / y).astype(x.dtype)


def np_sigmoid(x):
    with np.errstate(over="ignore"):
        return (1 / (1 + np.exp(-x.astype(np.float64)))).astype(x.dtype)


def np_erf(x):
    return np.vectorize(math.erf)(x.astype(np.float64)).astype(x.dtype)


def np_int_mean(x, axis=None, keepdims=False):
    s = np.sum(x, axis=axis, keepdims=keepdims, dtype=np.int64)
    n = x.size // max(s.size, 1)
    return (np.sign(s) * (np.abs(s) // n)).astype(x.dtype)


def in_f64(fn):
    """A reference computed in float64 (complex128) and cast back to the input dtype."""

    def ref(*xs):
        wide = [x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)
                if np.dtype(x.dtype).kind in "fcV" else x for x in xs]
        return np.asarray(fn(*wide)).astype(xs[0].dtype)

    return ref


def same(fn):
    """A reference keeping the input dtype."""
    return lambda *xs: np.asarray(fn(*xs)).astype(xs[0].dtype)


def tensor_value(value, dtype=np.int32):
    """`value` as a tensor whose value shape inference does not know."""
    return tf.placeholder_with_default(np.asarray(value, dtype), [None] * np.ndim(value))


SEGMENT_IDS = np.array([[0, 2, -1], [2, 2, 1]])
BCAST = [(2, 3), (3,)]
BCAST3 = [(2, 1, 3), (4, 1)]

# (case, dtypes to check values for; gradients are checked for float32/float64 when
# case.grad is set).
CASES: list[tuple[OpCase, list]] = [
    # ---- binary ----
    (OpCase("add", tf.add, in_f64(np.add), BCAST), NUMERIC),
    (OpCase("add_op", lambda x, y: x + y, in_f64(np.add), BCAST3), [np.float32, np.int32]),
    (OpCase("radd_python", lambda x: 2 + x, lambda x: (2 + x).astype(x.dtype), [(3,)]),
     [np.float32, np.int64]),
    (OpCase("subtract", tf.subtract, in_f64(np.subtract), BCAST), NUMERIC),
    (OpCase("sub_op", lambda x, y: x - y, in_f64(np.subtract), BCAST3), [np.float64]),
    (OpCase("rsub_python", lambda x: 1.5 - x, lambda x: (1.5 - x).astype(x.dtype), [(3,)]),
     F32_64),
    (OpCase("multiply", tf.multiply, in_f64(np.multiply), BCAST), NUMERIC),
    (OpCase("mul_op", lambda x, y: x * y, in_f64(np.multiply), BCAST3), [np.float32]),
    (OpCase("realdiv", tf.realdiv, in_f64(np.true_divide), BCAST, make=nonzero),
     [np.float16, BF16, np.float32, np.float64, np.complex64]),
    (OpCase("truediv_op", lambda x, y: x / y, np_truediv, BCAST, make=nonzero),
     [np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8]),
    (OpCase("rtruediv_python", lambda x: 1.0 / x, lambda x: (1.0 / x).astype(x.dtype), [(3,)],
            make=nonzero), F32_64),
    (OpCase("div_tf1", tf.div, lambda x, y: np_floordiv(x, y) if x.dtype.kind in "iu"
            else np.true_divide(x, y), BCAST, make=nonzero), [np.float32, np.int32]),
    (OpCase("floordiv", tf.floordiv, np_floordiv, BCAST, make=nonzero, grad=False),
     [np.float32, np.float64, np.int8, np.int32, np.int64, np.uint8]),
    (OpCase("floordiv_op", lambda x, y: x // y, np_floordiv, BCAST, make=nonzero,
            grad=False), [np.int32]),
    (OpCase("floormod", tf.floormod, same(np.remainder), BCAST, make=nonzero),
     [np.float32, np.float64, np.int32, np.int64, np.uint8]),
    (OpCase("mod_op", lambda x, y: x % y, same(np.remainder), BCAST, make=nonzero,
            grad=False), [np.int32]),
    (OpCase("truncatediv", tf.truncatediv, np_truncdiv, BCAST, make=nonzero, grad=False),
     [np.float32, np.int32, np.int64, np.uint8]),
    (OpCase("truncatemod", tf.truncatemod, same(np.fmod), BCAST, make=nonzero),
     [np.float32, np.float64, np.int32, np.int64]),
    (OpCase("pow", tf.pow, in_f64(np.power), BCAST, make=positive),
     [np.float16, np.float32, np.float64, np.complex64]),
    (OpCase("pow_int", lambda x, y: x ** y, same(np.power), [(2, 3), (3,)], grad=False,
            make=lambda rng, s, d: rng.integers(0, 4, size=s).astype(d)), INTS),
    (OpCase("maximum", tf.maximum, same(np.maximum), BCAST, make=distinct),
     [np.float16, BF16, np.float32, np.float64, np.int32, np.int64, np.uint8]),
    (OpCase("minimum", tf.minimum, same(np.minimum), BCAST, make=distinct),
     [np.float16, BF16, np.float32, np.float64, np.int32, np.int64]),
    (OpCase("squared_difference", tf.squared_difference,
            in_f64(lambda x, y: (x - y) * np.conj(x - y)), BCAST),
     [np.float32, np.float64, np.int32, np.complex64]),
    (OpCase("div_no_nan", tf.div_no_nan,
            in_f64(lambda x, y: np.where(y == 0, 0, x / np.where(y == 0, 1, y))), BCAST,
            make=lambda rng, s, d: np.where(rng.random(s) < 0.3, 0,
                                            nonzero(rng, s, d)).astype(d), grad_inputs=[0]),
     [np.float32, np.float64]),
    (OpCase("atan2", tf.atan2, in_f64(np.arctan2), BCAST, make=nonzero), FLOATS),
    (OpCase("scalar_mul", lambda x: tf.scalar_mul(2.5, x), same(lambda x: 2.5 * x),
            [(2, 3)]), F32_64),
    # ---- ops the TF1 wrappers do not create, through apply_op ----
    (OpCase("add_legacy", lambda x, y: math_ops.apply_op("Add", x=x, y=y), np.add, BCAST),
     F32_64),
    (OpCase("div_legacy", lambda x, y: math_ops.apply_op("Div", x=x, y=y),
            lambda x, y: np_truncdiv(x, y) if x.dtype.kind in "iu" else x / y, BCAST,
            make=nonzero), [np.float32, np.float64, np.int32]),
    (OpCase("div_no_nan_y", tf.div_no_nan, np.true_divide, BCAST, make=nonzero), F32_64),
    (OpCase("xlogy", lambda x, y: math_ops.apply_op("Xlogy", x=x, y=y),
            lambda x, y: x * np.log(y), BCAST, make=positive), F32_64),
    (OpCase("xdivy", lambda x, y: math_ops.apply_op("Xdivy", x=x, y=y),
            lambda x, y: x / y, BCAST, make=positive), F32_64),
    (OpCase("inv", lambda x: math_ops.apply_op("Inv", x=x), np.reciprocal, [(2, 3)],
            make=nonzero), F32_64),
    (OpCase("batch_matmul_v1", lambda x, y: math_ops.apply_op(
        "BatchMatMul", x=x, y=y, adj_y=True), lambda x, y: x @ np.swapaxes(y, -1, -2),
        [(2, 2, 3), (2, 4, 3)]), F32_64),
    # ---- unary ----
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
    (OpCase("real", tf.real, np.real, [(2, 3)], grad=False), [np.complex64, np.complex128]),
    (OpCase("imag", tf.imag, np.imag, [(2, 3)], grad=False), [np.complex64, np.complex128]),
    (OpCase("conj", tf.conj, np.conj, [(2, 3)], grad=False), [np.complex64]),
    (OpCase("angle", tf.angle, np.angle, [(2, 3)], grad=False), [np.complex128]),
    (OpCase("complex", tf.complex, lambda x, y: (x + 1j * y).astype(
        np.complex64 if x.dtype == np.float32 else np.complex128), BCAST, grad=False),
     F32_64),
    # ---- AddN, Cast, comparisons, selection ----
    (OpCase("add_n", lambda x, y, z: tf.add_n([x, y, z]), in_f64(lambda x, y, z: x + y + z),
            [(2, 3)] * 3), [np.float16, BF16, np.float32, np.float64, np.int32]),
    (OpCase("add_n_one", lambda x: tf.add_n([x], name="one"), lambda x: x, [(2,)]),
     F32_64),
    (OpCase("cast_to_f32", lambda x: tf.cast(x, tf.float32),
            lambda x: x.real.astype(np.float32), [(2, 3)], grad_tol=1e-2),
     [np.float16, BF16, np.float64, np.int32, np.uint8, np.complex64]),
    (OpCase("cast_to_int", lambda x: tf.cast(x, tf.int32), lambda x: x.astype(np.int32),
            [(2, 3)], make=lambda rng, s, d: (rng.standard_normal(s) * 5).astype(d),
            grad=False), [np.float32, np.float64, np.int64, np.bool_]),
    (OpCase("cast_to_bool", lambda x: tf.cast(x, tf.bool), lambda x: x.astype(bool),
            [(5,)], make=lambda rng, s, d: np.array([0, 1, -2, 0, 3], d), grad=False),
     [np.float32, np.int32]),
    (OpCase("to_double", tf.to_double, lambda x: x.astype(np.float64), [(3,)]),
     [np.float32, np.int32]),
    (OpCase("equal", tf.equal, np.equal, BCAST, make=lambda rng, s, d: rng.integers(
        0, 2, s).astype(d), grad=False), [np.float32, np.int32, np.bool_, np.complex64]),
    (OpCase("not_equal", tf.not_equal, np.not_equal, BCAST, make=lambda rng, s, d:
            rng.integers(0, 2, s).astype(d), grad=False), [np.float32, np.int64]),
    (OpCase("less", tf.less, np.less, BCAST, grad=False), [np.float32, np.int32, BF16]),
    (OpCase("less_equal", tf.less_equal, np.less_equal, BCAST, grad=False),
     [np.float64, np.int32]),
    (OpCase("greater", tf.greater, np.greater, BCAST, grad=False), [np.float32, np.uint8]),
    (OpCase("greater_equal", tf.greater_equal, np.greater_equal, BCAST, grad=False),
     [np.float16, np.int64]),
    (OpCase("lt_op", lambda x, y: x < y, np.less, BCAST3, grad=False), [np.float32]),
    (OpCase("ge_op_python", lambda x: x >= 0.5, lambda x: x >= 0.5, [(4,)], grad=False),
     [np.float32]),
    (OpCase("logical_and", tf.logical_and, np.logical_and, BCAST, make=booleans),
     [np.bool_]),
    (OpCase("logical_or", tf.logical_or, np.logical_or, BCAST, make=booleans), [np.bool_]),
    (OpCase("logical_xor", tf.logical_xor, np.logical_xor, BCAST, make=booleans),
     [np.bool_]),
    (OpCase("logical_not", tf.logical_not, np.logical_not, [(2, 3)], make=booleans),
     [np.bool_]),
    (OpCase("and_or_xor_invert_bool", lambda x, y: [x & y, x | y, x ^ y, ~x],
            lambda x, y: [x & y, x | y, x ^ y, ~x], [(2, 3)] * 2, make=booleans),
     [np.bool_]),
    (OpCase("and_or_xor_invert_int", lambda x, y: [x & y, x | y, x ^ y, ~x],
            lambda x, y: [x & y, x | y, x ^ y, ~x], [(2, 3)] * 2, grad=False), INTS),
    (OpCase("where_select", lambda c, x, y: tf.where(c, x, y), np.where,
            [(2, 3)] * 3, input_dtypes=[np.bool_, None, None], grad_inputs=[1, 2]),
     [np.float32, np.float64, np.int32]),
    (OpCase("where_select_rows", lambda c, x, y: tf.where(c, x, y),
            lambda c, x, y: np.where(c[:, None], x, y), [(2,), (2, 3), (2, 3)],
            input_dtypes=[np.bool_, None, None], grad_inputs=[1, 2]), F32_64),
    (OpCase("where_select_scalar", lambda c, x, y: tf.where(c, x, y), np.where,
            [(), (2, 3), (2, 3)], input_dtypes=[np.bool_, None, None], grad=False),
     [np.float32]),
    (OpCase("where_v2", tf.where_v2, np.where, [(2, 1), (3,), (2, 3)],
            input_dtypes=[np.bool_, None, None], grad_inputs=[1, 2]), F32_64),
    (OpCase("where_coordinates", tf.where, lambda c: np.argwhere(c), [(3, 4)],
            grad=False, make=booleans), [np.bool_]),
    (OpCase("where_coordinates_numeric", tf.where, lambda c: np.argwhere(c), [(5,)],
            grad=False, make=lambda rng, s, d: np.array([0, 2, 0, -1, 3], d)),
     [np.float32, np.int32]),
    # ---- reductions ----
    (OpCase("reduce_sum_all", tf.reduce_sum, lambda x: np.sum(x, dtype=x.dtype), [(2, 3)]),
     [np.float32, np.float64, np.int32, np.int64, np.uint8, np.complex64]),
    (OpCase("reduce_sum_low_precision", lambda x: tf.reduce_sum(x, 1),
            lambda x: np.sum(x.astype(np.float32), 1).astype(x.dtype), [(3, 40)],
            make=positive), [np.float16, BF16]),
    (OpCase("reduce_sum_axis0", lambda x: tf.reduce_sum(x, 0), lambda x: np.sum(x, 0),
            [(2, 3)]), F32_64 + INTS),
    (OpCase("reduce_sum_negative_axis_keepdims",
            lambda x: tf.reduce_sum(x, axis=-1, keepdims=True),
            lambda x: np.sum(x, -1, keepdims=True), [(2, 3, 4)]), F32_64),
    (OpCase("reduce_sum_list_keep_dims", lambda x: tf.reduce_sum(
        x, reduction_indices=[0, 2], keep_dims=True),
        lambda x: np.sum(x, (0, 2), keepdims=True), [(2, 3, 4)]), F32_64),
    (OpCase("reduce_sum_tensor_axis", lambda x: tf.reduce_sum(x, tensor_value([2, 0])),
            lambda x: np.sum(x, (2, 0)), [(2, 3, 4)], grad=False), F32_64),
    (OpCase("reduce_sum_empty", lambda x: tf.reduce_sum(x, 0), lambda x: np.sum(x, 0),
            [(0, 3)], grad=False), [np.float32, np.int32]),
    (OpCase("reduce_mean", lambda x: tf.reduce_mean(x, 1), lambda x: np.mean(x, 1),
            [(2, 5)]), [np.float16, np.float32, np.float64, np.complex64]),
    (OpCase("reduce_mean_all", tf.reduce_mean, np.mean, [(3, 4)]), F32_64),
    (OpCase("reduce_mean_int_truncates", lambda x: tf.reduce_mean(x, 1),
            lambda x: np_int_mean(x, 1), [(4, 3)], grad=False), [np.int32, np.int64]),
    (OpCase("reduce_mean_empty", lambda x: tf.reduce_mean(x, 0),
            lambda x: np.full(x.shape[1:], np.nan if x.dtype.kind == "f" else 0, x.dtype),
            [(0, 3)], grad=False), [np.float32, np.int32]),
    (OpCase("reduce_max", lambda x: tf.reduce_max(x, 1), lambda x: np.max(x, 1), [(3, 4)],
            make=distinct), [np.float16, BF16, np.float32, np.float64, np.int32, np.uint8]),
    (OpCase("reduce_max_all_keepdims", lambda x: tf.reduce_max(x, keepdims=True),
            lambda x: np.max(x, keepdims=True), [(3, 4)], make=distinct), F32_64),
    (OpCase("reduce_max_ties", lambda x: tf.reduce_max(x, 1), lambda x: np.max(x, 1),
            [(2, 3)], make=lambda rng, s, d: np.array([[1, 3, 3], [2, 2, 2]], d),
            grad=False), F32_64),
    (OpCase("reduce_max_empty", lambda x: tf.reduce_max(x, 0),
            lambda x: np.full(x.shape[1:], -np.inf if x.dtype.kind == "f"
                              else np.iinfo(x.dtype).min, x.dtype), [(0, 3)], grad=False),
     [np.float32, np.int32]),
    (OpCase("reduce_min", lambda x: tf.reduce_min(x, 0), lambda x: np.min(x, 0), [(3, 4)],
            make=distinct), [np.float32, np.float64, np.int64]),
    (OpCase("reduce_min_empty", lambda x: tf.reduce_min(x, 0),
            lambda x: np.full(x.shape[1:], np.inf, x.dtype), [(0, 3)], grad=False),
     [np.float32]),
    (OpCase("reduce_prod", lambda x: tf.reduce_prod(x, 1), lambda x: np.prod(x, 1),
            [(3, 4)]), [np.float32, np.float64, np.int32]),
    (OpCase("reduce_prod_with_zero", lambda x: tf.reduce_prod(x, [0, 2]),
            lambda x: np.prod(x, (0, 2)), [(2, 3, 2)],
            make=lambda rng, s, d: np.where(np.arange(12).reshape(s) == 5, 0,
                                            rng.uniform(0.5, 1.5, s)).astype(d)), F32_64),
    (OpCase("reduce_prod_tensor_axis", lambda x: tf.reduce_prod(x, tensor_value([-2])),
            lambda x: np.prod(x, -2), [(2, 3, 2)], make=positive, grad=False), F32_64),
    (OpCase("reduce_all", lambda x: tf.reduce_all(x, 1), lambda x: np.all(x, 1), [(3, 2)],
            make=booleans), [np.bool_]),
    (OpCase("reduce_any", lambda x: tf.reduce_any(x, 0, keepdims=True),
            lambda x: np.any(x, 0, keepdims=True), [(3, 2)], make=booleans), [np.bool_]),
    (OpCase("reduce_logsumexp", lambda x: tf.reduce_logsumexp(x, 1),
            lambda x: np.log(np.sum(np.exp(x.astype(np.float64)), 1)).astype(x.dtype),
            [(2, 4)]), F32_64),
    (OpCase("reduce_logsumexp_large", lambda x: tf.reduce_logsumexp(x),
            lambda x: (1000 + np.log(np.sum(np.exp(x.astype(np.float64) - 1000)))).astype(
                x.dtype), [(3,)], make=lambda rng, s, d: np.array([1000, 999, 998], d),
            grad=False), F32_64),
    (OpCase("reduce_euclidean_norm", lambda x: tf.reduce_euclidean_norm(x, 1),
            lambda x: np.sqrt(np.sum(x * x, 1)), [(2, 4)]), F32_64),
    (OpCase("count_nonzero", lambda x: tf.count_nonzero(x, 1),
            lambda x: np.count_nonzero(x, 1).astype(np.int64), [(3, 4)],
            make=lambda rng, s, d: rng.integers(0, 2, s).astype(d), grad=False),
     [np.float32, np.int32]),
    (OpCase("argmax", lambda x: tf.argmax(x, 1), lambda x: np.argmax(x, 1), [(3, 4)],
            make=distinct, grad=False), [np.float32, np.float64, np.int32, np.float16]),
    (OpCase("argmax_default_axis_int32", lambda x: tf.argmax(x, output_type=tf.int32),
            lambda x: np.argmax(x, 0).astype(np.int32), [(3, 4)], make=distinct, grad=False),
     [np.float32]),
    (OpCase("argmin_dimension", lambda x: tf.argmin(x, dimension=-1),
            lambda x: np.argmin(x, -1), [(3, 4)], make=distinct, grad=False),
     [np.float32, np.int64]),
    # ---- matrices ----
    (OpCase("matmul", tf.matmul, in_f64(np.matmul), [(2, 3), (3, 4)]),
     [np.float16, BF16, np.float32, np.float64, np.int32, np.complex64]),
    (OpCase("matmul_transpose_a", lambda a, b: tf.matmul(a, b, transpose_a=True),
            lambda a, b: a.T @ b, [(3, 2), (3, 4)]), F32_64),
    (OpCase("matmul_transpose_b", lambda a, b: tf.matmul(a, b, transpose_b=True),
            lambda a, b: a @ b.T, [(2, 3), (4, 3)]), F32_64),
    (OpCase("matmul_transpose_both", lambda a, b: tf.matmul(a, b, True, True),
            lambda a, b: a.T @ b.T, [(3, 2), (4, 3)]), F32_64),
    (OpCase("matmul_adjoint", lambda a, b: tf.matmul(a, b, adjoint_a=True),
            lambda a, b: np.conj(a.T) @ b, [(3, 2), (3, 4)], grad=False), [np.complex64]),
    (OpCase("matmul_op", lambda a, b: a @ b, lambda a, b: a @ b, [(2, 3), (3, 4)]),
     [np.float32]),
    (OpCase("batch_matmul", tf.matmul, np.matmul, [(2, 2, 3), (2, 3, 4)]), F32_64),
    (OpCase("batch_matmul_broadcast", tf.matmul, np.matmul, [(2, 1, 2, 3), (3, 3, 4)]),
     F32_64),
    (OpCase("batch_matmul_rank2_rhs", lambda a, b: tf.matmul(a, b, transpose_b=True),
            lambda a, b: a @ b.T, [(2, 2, 3), (4, 3)]), F32_64),
    (OpCase("batch_matmul_adjoint", lambda a, b: tf.matmul(a, b, adjoint_a=True,
                                                           adjoint_b=True),
            lambda a, b: np.conj(np.swapaxes(a, -1, -2)) @ np.conj(np.swapaxes(b, -1, -2)),
            [(2, 3, 2), (2, 4, 3)], grad=False), [np.complex128]),
    (OpCase("matrix_inverse", tf.matrix_inverse, in_f64(np.linalg.inv), [(2, 3, 3)],
            make=well_conditioned), [np.float32, np.float64, np.complex64]),
    (OpCase("matrix_inverse_adjoint", lambda x: tf.matrix_inverse(x, adjoint=True),
            lambda x: np.linalg.inv(np.swapaxes(x, -1, -2)), [(3, 3)],
            make=well_conditioned), F32_64),
    (OpCase("matrix_determinant", tf.matrix_determinant, in_f64(np.linalg.det),
            [(2, 3, 3)], make=well_conditioned), [np.float32, np.float64]),
    (OpCase("cholesky", tf.cholesky, in_f64(np.linalg.cholesky), [(2, 3, 3)], make=spd,
            grad=False), [np.float32, np.float64]),
    (OpCase("cholesky_of_gram", lambda x: tf.cholesky(
        tf.matmul(x, x, transpose_b=True) + 3 * np.eye(3, dtype=x.dtype.as_numpy_dtype)),
        lambda x: np.linalg.cholesky(x @ x.T + 3 * np.eye(3)).astype(x.dtype), [(3, 3)]),
     F32_64),
    # ---- cumulative, segments ----
    (OpCase("cumsum", lambda x: tf.cumsum(x, 1), lambda x: np.cumsum(x, 1, dtype=x.dtype),
            [(2, 4)]), [np.float32, np.float64, np.int32, np.float16]),
    (OpCase("cumsum_exclusive_reverse", lambda x: tf.cumsum(x, 0, exclusive=True,
                                                            reverse=True),
            lambda x: np.flip(np.cumsum(np.flip(x, 0), 0) - np.flip(x, 0), 0), [(4, 2)]),
     F32_64),
    (OpCase("cumprod", lambda x: tf.cumprod(x, -1), lambda x: np.cumprod(x, -1), [(2, 4)],
            make=positive), F32_64),
    (OpCase("cumprod_exclusive", lambda x: tf.cumprod(x, 0, exclusive=True),
            lambda x: np.concatenate([np.ones_like(x[:1]), np.cumprod(x, 0)[:-1]]),
            [(4, 2)], make=positive), F32_64),
    (OpCase("unsorted_segment_sum", lambda d: tf.unsorted_segment_sum(d, [0, 2, 0, -1], 4),
            lambda d: np.stack([d[0] + d[2], 0 * d[0], d[1], 0 * d[0]]), [(4, 3)]),
     [np.float16, np.float32, np.float64, np.int32]),
    (OpCase("unsorted_segment_sum_2d_ids",
            lambda d: tf.unsorted_segment_sum(d, tensor_value(SEGMENT_IDS, np.int64), 3),
            lambda d: np.stack([d[SEGMENT_IDS == k].sum(0) for k in range(3)]).astype(
                d.dtype), [(2, 3, 2)]), F32_64),
]

CASE_IDS = [c.name for c, _ in CASES]
assert len(set(CASE_IDS)) == len(CASE_IDS)
VALUE_PARAMS = [pytest.param(c, dt, id=f"{c.name}-{np.dtype(dt).name}")
                for c, dts in CASES for dt in dts]
GRAD_PARAMS = [pytest.param(c, dt, id=f"{c.name}-{np.dtype(dt).name}")
               for c, dts in CASES if c.grad and any(np.dtype(d).kind == "f" for d in dts)
               for dt in F32_64
               if any(np.dtype(d) == np.dtype(dt) for d in dts)
               and (c.input_dtypes is None or any(d is None for d in c.input_dtypes))]


@pytest.mark.parametrize("case,dtype", VALUE_PARAMS)
def test_value(case, dtype):
    check_value(case, dtype)


@pytest.mark.parametrize("case,dtype", GRAD_PARAMS)
def test_gradient(case, dtype):
    check_gradient(case, dtype)


def test_kernel_dtypes_are_exact():
    """No NumPy type promotion leaks: each output's dtype is its tensor's dtype."""
    cases = [(c, dt) for c, dts in CASES for dt in dts]
    for case, dtype in cases:
        arrays = case.inputs(dtype)
        g = tf.Graph()
        with g.as_default():
            feeds = {tf.placeholder(tf.as_dtype(a.dtype), a.shape): a for a in arrays}
            tensors = [a if k in case.consts else p
                       for k, (p, a) in enumerate(zip(feeds, arrays, strict=True))]
            outs = case.build(*tensors)
            outs = outs if isinstance(outs, list) else [outs]
        with tf.Session(graph=g) as sess:
            values = sess.run(outs, feeds)
        for t, v in zip(outs, values, strict=True):
            assert np.asarray(v).dtype == t.dtype.as_numpy_dtype, \
                f"{case.name}[{np.dtype(dtype).name}]: {np.asarray(v).dtype} != {t.dtype.name}"


# ---- special cases -----------------------------------------------------------------------


def run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


def test_integer_division_semantics():
    a = tf.constant([7, -7, 7, -7])
    b = tf.constant([2, 2, -2, -2])
    got = run([a // b, a % b, tf.truncatediv(a, b), tf.truncatemod(a, b), tf.div(a, b),
               a / b])
    np.testing.assert_array_equal(got[0], [3, -4, -4, 3])
    np.testing.assert_array_equal(got[1], [1, 1, -1, -1])
    np.testing.assert_array_equal(got[2], [3, -3, -3, 3])
    np.testing.assert_array_equal(got[3], [1, -1, 1, -1])
    np.testing.assert_array_equal(got[4], [3, -4, -4, 3])
    assert got[5].dtype == np.float64
    np.testing.assert_array_equal(got[5], [3.5, -3.5, -3.5, 3.5])
    x = tf.constant([-7.5, 7.5, 1.0])
    y = tf.constant([2.0, -2.0, 0.1])
    np.testing.assert_allclose(run(tf.floordiv(x, y)), [-4.0, -4.0, 10.0])
    np.testing.assert_allclose(run(tf.floormod(x[:2], y[:2])), [0.5, -0.5])


def test_integer_division_by_zero_is_an_error_naming_the_node():
    p = tf.placeholder(tf.int32)
    q = tf.floordiv(p, p, name="my_div")
    ok = p + 1
    with tf.Session() as sess:
        for op in (q, tf.floormod(p, p), tf.div(p, p)):
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match="Integer division by zero") as info:
                sess.run(op, {p: [3, 0]})
            assert op.op.name in str(info.value)
        # TF 2.21's TruncateDiv and TruncateMod report it as an InternalError.
        for op in (tf.truncatediv(p, p), tf.truncatemod(p, p)):
            with pytest.raises(tf.errors.InternalError,
                               match="only integer div and mod should have errors") as info:
                sess.run(op, {p: [3, 0]})
            assert op.op.name in str(info.value)
        assert "my_div" in str(pytest.raises(tf.errors.InvalidArgumentError, sess.run, q,
                                             {p: [0]}).value)
        assert sess.run(ok, {p: [1]}) == [2]  # the session still works
    np.testing.assert_array_equal(run(tf.floordiv(1.0, 0.0)), np.inf)


def test_pow_integer_negative_exponent():
    p = tf.placeholder(tf.int32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="negative integer powers"):
        run(tf.pow(p, p), {p: [2, -1]})
    np.testing.assert_array_equal(run(tf.pow(tf.constant([0, 2, -2]), [0, 0, 3])), [1, 1, -8])


def test_round_half_to_even_and_int_round_is_identity():
    x = tf.constant([0.5, 1.5, 2.5, -0.5, -1.5, 2.6])
    np.testing.assert_array_equal(run(tf.round(x)), [0.0, 2.0, 2.0, -0.0, -2.0, 3.0])
    i = tf.constant([1, 2])
    assert tf.round(i) is i


def test_nan_propagates_through_maximum_and_minimum():
    x = tf.constant([np.nan, 1.0])
    y = tf.constant([1.0, np.nan])
    mx, mn, rmax = run([tf.maximum(x, y), tf.minimum(x, y), tf.reduce_max(x)])
    assert np.isnan(mx).all() and np.isnan(mn).all() and np.isnan(rmax)


def test_cast_semantics():
    f = tf.constant([np.nan, 1e10, -1e10, 2.7, -2.7])
    np.testing.assert_array_equal(run(tf.cast(f, tf.int32)),
                                  [-2**31, -2**31, -2**31, 2, -2])
    np.testing.assert_array_equal(run(tf.cast(tf.constant([0.0, 0.5, np.nan]), tf.bool)),
                                  [False, True, True])
    np.testing.assert_array_equal(run(tf.cast(tf.constant([300, -129]), tf.int8)), [44, 127])
    np.testing.assert_array_equal(run(tf.cast(tf.constant([1 + 2j]), tf.float32)), [1.0])
    x = tf.constant([1.0])
    assert tf.cast(x, tf.float32) is x
    assert tf.to_float(tf.constant([1])).op.name == "ToFloat"
    assert tf.cast(tf.constant(1), tf.float32).op.type == "Cast"
    b = tf.cast(tf.constant([1.00390625 + 2**-10], tf.float32), tf.bfloat16)
    assert run(b).dtype == ml_dtypes.bfloat16


def test_cast_string_is_unimplemented_at_run_time():
    s = tf.cast(tf.constant(["1"]), tf.int32)
    t = tf.cast(tf.constant([1]), tf.string)
    with pytest.raises(tf.errors.UnimplementedError, match="Cast string to int32 is not"):
        run(s)
    with pytest.raises(tf.errors.UnimplementedError, match="Cast int32 to string is not"):
        run(t)


def test_string_add_concatenates():
    a = tf.constant(["ab", "c"])
    out = a + tf.constant(["x", "yz"])
    assert out.op.type == "Add"
    assert list(run(out)) == [b"abx", b"cyz"]
    assert tf.add(tf.constant("p"), "q").op.type == "Add"
    assert list(run(tf.equal(a, "c"))) == [False, True]


def test_range():
    r = tf.range(5)
    assert r.dtype == tf.int32 and r.op.name == "range" and r.shape.as_list() == [5]
    assert tf.range(1.0, 5).dtype == tf.float32
    assert tf.range(1, 5.0).dtype == tf.float32
    assert tf.range(5, dtype=tf.float64).dtype == tf.float64
    assert tf.range(tf.constant(3, tf.int64)).dtype == tf.int64
    f = tf.range(1.0, 2.0, 0.3)
    assert f.shape.as_list() == [4]
    got = run([f, tf.range(5, 1, -2), tf.range(3, 3), tf.range(0, 10, 3)])
    np.testing.assert_allclose(got[0], [1.0, 1.3, 1.6, 1.9], rtol=1e-6)
    np.testing.assert_array_equal(got[1], [5, 3])
    assert got[2].shape == (0,)
    np.testing.assert_array_equal(got[3], [0, 3, 6, 9])
    with pytest.raises(ValueError, match="Requires start <= limit when delta > 0: 3/1"):
        tf.range(3, 1)
    p = tf.placeholder(tf.int32, [])
    dyn = tf.range(0, 5, p)
    assert dyn.shape.as_list() == [None]
    with pytest.raises(tf.errors.InvalidArgumentError, match="Requires delta != 0: 0"):
        run(dyn, {p: 0})
    # A range of constants is a constant for shape inference.
    assert tf._constant_value(tf.range(2, 8, 2)).tolist() == [2, 4, 6]


def test_constant_evaluation_for_shapes():
    a = tf.constant([2, 3])
    assert tf._constant_value(a * 2 + 1).tolist() == [5, 7]
    assert tf._constant_value(tf.maximum(a, 3) - 1).tolist() == [2, 2]
    assert tf._constant_value(a // 2).tolist() == [1, 1]
    assert tf._constant_value(tf.reduce_prod(a)) == 6
    assert tf._constant_value(tf.reduce_sum(a, keepdims=True)).tolist() == [5]
    assert tf._constant_value(tf.cast(a, tf.int64)).dtype == np.int64
    assert tf._constant_value(a // tf.constant([0, 1])) is None  # an error at run time
    assert tf._constant_value(a + tf.placeholder(tf.int32)) is None


def test_reduction_static_shapes():
    x = tf.placeholder(tf.float32, [2, None, 4])
    assert tf.reduce_sum(x).shape.as_list() == []
    assert tf.reduce_sum(x, 1).shape.as_list() == [2, 4]
    assert tf.reduce_sum(x, [0, -1], keepdims=True).shape.as_list() == [1, None, 1]
    a = tf.placeholder(tf.int32)
    assert tf.reduce_mean(x, a, keep_dims=True).shape.as_list() == [None, None, None]
    assert tf.reduce_max(x, a).shape.ndims is None
    u = tf.placeholder(tf.float32)
    assert tf.reduce_sum(u).shape.as_list() == []
    assert tf.argmax(x, 2).shape.as_list() == [2, None]
    assert tf.argmax(x).dtype == tf.int64
    with pytest.raises(ValueError, match="Invalid reduction dimension 3 for input with 3 "
                                         "dimensions"):
        tf.reduce_sum(x, 3)
    with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'reduction_indices'"):
        tf.reduce_sum(x, axis=0, reduction_indices=0)
    with pytest.raises(ValueError, match="Cannot specify both 'keepdims' and 'keep_dims'"):
        tf.reduce_sum(x, keepdims=True, keep_dims=True)
    with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'dimension'"):
        tf.argmax(x, axis=0, dimension=0)


def test_reduction_runtime_errors():
    x = tf.placeholder(tf.float32)
    a = tf.placeholder(tf.int32)
    s = tf.reduce_sum(x, a)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Invalid reduction dimension \(2 for input with 2"):
            sess.run(s, {x: np.ones((2, 3)), a: 2})
        with pytest.raises(tf.errors.InvalidArgumentError, match="duplicate dimension: 1"):
            sess.run(s, {x: np.ones((2, 3)), a: [1, -1]})
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Reduction axis 0 is empty in shape \[0,3\]"):
            sess.run(tf.argmax(x, 0), {x: np.ones((0, 3))})
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Expected dimension in the range \[-2, 2\), but got 2"):
            sess.run(tf.argmax(x, a), {x: np.ones((2, 3)), a: 2})
        np.testing.assert_array_equal(sess.run(s, {x: np.ones((2, 3)), a: [-1]}), [3, 3])


def test_mismatched_dtypes_are_type_errors_naming_the_argument():
    i = tf.constant([1])
    f = tf.constant([1.0])
    with pytest.raises(TypeError, match="Input 'y' of 'AddV2' Op has type float32 that does "
                                        "not match"):
        tf.add(i, f)
    with pytest.raises(TypeError, match="'y' of 'Mul' Op has type float32"):
        tf.multiply(i, f)
    with pytest.raises(TypeError, match="Input 'y' of 'AddV2' Op has type float32"):
        i + f
    with pytest.raises(TypeError, match="Input 'y' of 'Sub' Op has type float32"):
        f.__rsub__(i)
    with pytest.raises(TypeError):
        i + 1.5
    with pytest.raises(TypeError, match="`x` and `y` must have the same dtype"):
        tf.truediv(i, f)
    with pytest.raises(TypeError, match="Input 'b' of 'MatMul' Op has type int32"):
        tf.matmul(tf.constant([[1.0]]), tf.constant([[1]]))
    with pytest.raises(TypeError, match="not in list of allowed values"):
        tf.sqrt(tf.constant([4]))
    with pytest.raises(TypeError, match="Invalid dtype tf.bool in __truediv__"):
        tf.constant([True]) / tf.constant([True])


def test_incompatible_static_shapes_are_value_errors():
    with pytest.raises(ValueError, match=r"Dimensions must be equal, but are 2 and 3 for "
                                         r"'\{\{node Add\}\} = AddV2"):
        tf.add(tf.ones([2]) if hasattr(tf, "ones") else tf.constant([1.0, 1.0]),
               tf.constant([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 3 and 2"):
        tf.matmul(tf.constant(np.ones((2, 3))), tf.constant(np.ones((2, 3))))
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 3"):
        tf.equal(tf.constant([1, 2]), tf.constant([1, 2, 3]))
    with pytest.raises(ValueError, match="Dimension 0 in both shapes must be equal, but are "
                                         "3 and 2"):
        tf.where(tf.constant([True, False, True]), tf.constant(np.ones((2, 3))),
                 tf.constant(np.zeros((2, 3))))
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 3"):
        tf.matrix_inverse(tf.constant(np.zeros((2, 3))))
    with pytest.raises(ValueError):
        tf.add_n([tf.constant([1.0, 2.0]), tf.constant([1.0, 2.0, 3.0])])


def test_broadcasting_with_unknown_dimensions():
    a = tf.placeholder(tf.float32, [None, 3])
    b = tf.placeholder(tf.float32, [4, 1])
    c = tf.placeholder(tf.float32, [None, 1, None])
    assert (a + b).shape.as_list() == [4, 3]
    assert (a * c).shape.as_list() == [None, None, 3]
    assert tf.maximum(a, 1.0).shape.as_list() == [None, 3]
    assert tf.equal(a, tf.placeholder(tf.float32)).shape.ndims is None
    assert tf.where_v2(tf.placeholder(tf.bool, [None, 1]), a, 0.0).shape.as_list() == [None, 3]
    assert tf.matmul(tf.placeholder(tf.float32, [None, 2, 3]),
                     tf.placeholder(tf.float32, [5, 1, 3, 4])).shape.as_list() == \
        [5, None, 2, 4]
    av = np.arange(6, dtype=np.float32).reshape(2, 3)
    cv = np.ones((5, 1, 3), np.float32)
    got = run([a * c, a + 1.0], {a: av, c: cv})
    np.testing.assert_array_equal(got[0], av * cv)
    assert got[0].shape == (5, 2, 3)


def test_runtime_shape_errors_name_the_node_and_session_survives():
    p = tf.placeholder(tf.float32, [None])
    q = tf.placeholder(tf.float32, [None])
    s = tf.add(p, q, name="sum_pq")
    m = tf.placeholder(tf.float32, [None, None])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Incompatible shapes: \[3\] vs. \[2\]") as info:
            sess.run(s, {p: [1, 2, 3], q: [1, 2]})
        assert "sum_pq" in str(info.value)
        with pytest.raises(tf.errors.InvalidArgumentError, match="Incompatible shapes"):
            sess.run(tf.equal(p, q), {p: [1, 2, 3], q: [1, 2]})
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Matrix size-incompatible: In\[0\]: \[2,3\], In\[1\]: "
                                 r"\[2,3\]"):
            sess.run(tf.matmul(m, m), {m: np.ones((2, 3))})
        with pytest.raises(tf.errors.InvalidArgumentError, match="must have the same size and "
                                                                 "shape"):
            sess.run(tf.add_n([p, q]), {p: [1, 2, 3], q: [1, 2]})
        np.testing.assert_array_equal(sess.run(s, {p: [1], q: [2]}), [3])
    ne = math_ops.apply_op("NotEqual", x=p, y=q, incompatible_shape_error=False)
    assert run(ne, {p: [1, 2, 3], q: [1, 2]}) == np.True_


def test_select_runtime_errors():
    c = tf.placeholder(tf.bool)
    x = tf.placeholder(tf.float32)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="same size and shape"):
            sess.run(tf.where(c, x, x), {c: [True, False], x: [1.0, 2.0, 3.0]})
        np.testing.assert_array_equal(
            sess.run(tf.where(c, x, -x), {c: True, x: [1.0, 2.0]}), [1.0, 2.0])


def test_singular_and_non_positive_definite_matrices():
    with pytest.raises(tf.errors.InvalidArgumentError, match="Input is not invertible."):
        run(tf.matrix_inverse(tf.constant(np.zeros((2, 2), np.float32))))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Cholesky decomposition was "
                                                             "not successful"):
        run(tf.cholesky(tf.constant([[1.0, 2.0], [2.0, 1.0]])))
    assert run(tf.matrix_determinant(tf.constant(np.zeros((0, 0), np.float32)))) == 1.0


def test_segment_ids_out_of_range():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"segment_ids\[1\] = 5 is out of range \[0, 3\)"):
        run(tf.unsorted_segment_sum([1.0, 2.0, 3.0], [0, 5, -1], 3))
    with pytest.raises(ValueError):
        tf.unsorted_segment_sum([1.0, 2.0, 3.0], [[0, 2]], 3)


# Pairs of shapes and TensorFlow's BroadcastGradientArgs results (asked of TF 2.21).
BGA = [([2, 1, 3], [1, 3], [1], [0, 1]), ([1], [1], [], []), ([], [2], [0], []),
       ([2, 3], [2, 3], [], []), ([1, 1], [1], [0, 1], [0, 1]),
       ([2, 1], [1, 1], [1], [0, 1]), ([], [], [], []), ([1, 2], [], [0], [0, 1]),
       ([3, 1, 1], [1, 1], [1, 2], [0, 1, 2])]


@pytest.mark.parametrize("s0,s1,r0,r1", BGA)
def test_broadcast_gradient_args(s0, s1, r0, r1):
    a = tf.placeholder(tf.int32, [None])
    b = tf.placeholder(tf.int32, [None])
    got0, got1 = run(list(sequence_ops.broadcast_gradient_args(a, b)), {a: s0, b: s1})
    assert got0.tolist() == r0 and got1.tolist() == r1
    assert got0.dtype == np.int32


def test_broadcast_gradient_args_incompatible():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Incompatible shapes: \[2\] vs. \[3\]"):
        run(list(sequence_ops.broadcast_gradient_args([2], [3])))


def test_operator_names_follow_tensorflow():
    x = tf.constant(1.0)
    i = tf.constant(1)
    b = tf.constant(True)
    s = x + 1
    assert s.op.name == "add" and s.op.inputs[1].op.name == "add/y"
    r = 2 - x
    assert r.op.name == "sub" and r.op.inputs[0].op.name == "sub/x"
    assert (x * x).op.name == "mul"
    assert (i / i).op.name == "truediv" and (i / i).op.type == "RealDiv"
    assert (i // i).op.name == "floordiv"
    assert (i % i).op.name == "mod" and (i % i).op.type == "FloorMod"
    assert (x ** 2).op.name == "pow"
    assert (-x).op.type == "Neg" and abs(x).op.type == "Abs"
    assert (x < 2).op.type == "Less" and (x >= 2).op.type == "GreaterEqual"
    c = b & b
    assert c.op.type == "LogicalAnd" and c.op.name == "and"
    assert (~b).op.type == "LogicalNot" and (i & i).op.type == "BitwiseAnd"
    s = tf.add(x, x)
    assert s.op.name == "Add_1" and s.op.type == "AddV2"  # names are case-insensitive
    d = tf.div(1.0, 2.0)
    assert d.op.name == "div" and d.op.type == "RealDiv"
    assert tf.abs(tf.constant([1j])).op.type == "ComplexAbs"
    assert tf.matmul(tf.ones([3, 2, 2]) if hasattr(tf, "ones") else
                     tf.constant(np.ones((3, 2, 2))), np.ones((2, 2))).op.type == \
        "BatchMatMulV2"
    assert (x == x) is True  # TF1: == is identity
    assert x in {x: 1}


def test_add_n_single_input_is_returned():
    x = tf.constant([1.0])
    assert tf.add_n([x]) is x
    with pytest.raises(ValueError, match="Inputs must be an iterable"):
        tf.add_n([])


def test_scalar_mul_needs_a_scalar():
    with pytest.raises(ValueError, match="The input scalar must be a 0-D value"):
        tf.scalar_mul(tf.constant([1.0, 2.0]), tf.constant([1.0, 2.0]))


def test_gradients_of_broadcasting_ops_sum_back():
    x = tf.placeholder(tf.float32, [2, 3])
    y = tf.placeholder(tf.float32, [3])
    gx, gy = tf.gradients(tf.reduce_sum(x * y), [x, y])
    xv = np.arange(6, dtype=np.float32).reshape(2, 3)
    yv = np.array([1, 2, 3], np.float32)
    got = run([gx, gy], {x: xv, y: yv})
    np.testing.assert_allclose(got[0], np.broadcast_to(yv, (2, 3)))
    np.testing.assert_allclose(got[1], xv.sum(0))


def test_gradients_with_unknown_shapes():
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.placeholder(tf.float32, [None, 1])
    loss = tf.reduce_mean(tf.square(x - y), axis=1)
    gx, gy = tf.gradients(tf.reduce_sum(loss), [x, y])
    xv = np.arange(6, dtype=np.float32).reshape(2, 3)
    yv = np.array([[1.0], [2.0]], np.float32)
    got = run([gx, gy], {x: xv, y: yv})
    np.testing.assert_allclose(got[0], 2 * (xv - yv) / 3, rtol=1e-6)
    np.testing.assert_allclose(got[1], (-2 * (xv - yv) / 3).sum(1, keepdims=True), rtol=1e-6)


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


def test_reduction_gradients_with_axes_unknown_at_graph_time():
    x = tf.placeholder(tf.float64, [None, 3, None])
    xv = np.random.default_rng(0).uniform(0.5, 1.5, (2, 3, 4))
    for axes in ([2, 0], [-2], [0, 1, 2]):
        a = tensor_value(axes)
        (gs,) = tf.gradients(tf.reduce_sum(tf.reduce_sum(x, a) * 2.0), x)
        (gm,) = tf.gradients(tf.reduce_sum(tf.reduce_mean(x, a)), x)
        (gp,) = tf.gradients(tf.reduce_sum(tf.reduce_prod(x, a)), x)
        (gx,) = tf.gradients(tf.reduce_sum(tf.reduce_max(x, a)), x)
        got = run([gs, gm, gp, gx], {x: xv})
        ax = tuple(axes)
        np.testing.assert_allclose(got[0], np.full(xv.shape, 2.0))
        count = xv.size // np.sum(xv, ax).size
        np.testing.assert_allclose(got[1], np.full(xv.shape, 1.0 / count))
        np.testing.assert_allclose(got[2], np.prod(xv, ax, keepdims=True) / xv, rtol=1e-10)
        np.testing.assert_allclose(got[3], (xv == np.max(xv, ax, keepdims=True)) * 1.0)


def test_complex_gradients():
    x = tf.placeholder(tf.float64, [3])
    y = tf.placeholder(tf.float64, [3])
    z = tf.complex(x, y)
    xv, yv = np.array([1.0, -2.0, 0.5]), np.array([0.5, 1.5, -3.0])
    r = np.hypot(xv, yv)
    for f, want in ((tf.real(z * tf.conj(z)), (2 * xv, 2 * yv)),
                    (tf.abs(z), (xv / r, yv / r)),
                    (tf.angle(z), (-yv / r ** 2, xv / r ** 2)),
                    (tf.imag(z * z), (2 * yv, 2 * xv))):
        got = run(tf.gradients(tf.reduce_sum(f), [x, y]), {x: xv, y: yv})
        np.testing.assert_allclose(got[0], want[0], rtol=1e-10, err_msg=f.op.type)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-10, err_msg=f.op.type)


def test_integer_paths_have_no_gradient():
    x = tf.placeholder(tf.float32, [2])
    y = tf.cast(tf.cast(x, tf.int32), tf.float32)
    assert tf.gradients(tf.reduce_sum(y), x) == [None]
    assert tf.gradients(tf.reduce_sum(tf.floor(x)), x) == [None]


# ---- the oracle --------------------------------------------------------------------------

ORACLE_SNIPPETS = {
    # name: expression using a (float32 [2,3]), b (float32 [3]), i (int32 [2,3]),
    # j (int32 [3], non-zero)
    "add": "a + b", "sub": "b - a", "mul": "a * b", "truediv": "a / b",
    "int_truediv": "i / j", "floordiv": "i // j", "mod": "i % j",
    "float_floordiv": "a // b", "float_mod": "a % b",
    "truncatediv": "tf.truncatediv(i, j)", "truncatemod": "tf.truncatemod(i, j)",
    "div": "tf.div(i, j)", "pow": "tf.pow(tf.abs(a) + 0.5, b)",
    "maximum": "tf.maximum(a, b)", "minimum": "tf.minimum(i, j)",
    "squared_difference": "tf.squared_difference(a, b)",
    "div_no_nan": "tf.div_no_nan(a, b * tf.cast(tf.abs(b) > 0.5, tf.float32))",
    "atan2": "tf.atan2(a, b)", "neg": "-i", "abs": "tf.abs(a)", "sign": "tf.sign(i)",
    "square": "tf.square(i)", "sqrt": "tf.sqrt(tf.abs(a))", "rsqrt": "tf.rsqrt(tf.abs(a))",
    "exp": "tf.exp(a)", "expm1": "tf.expm1(a)", "log": "tf.log(tf.abs(a))",
    "log1p": "tf.log1p(tf.abs(a))", "sin": "tf.sin(a)", "tan": "tf.tan(a)",
    "tanh": "tf.tanh(a)", "sigmoid": "tf.sigmoid(a * 10)", "reciprocal": "tf.reciprocal(b)",
    "floor": "tf.floor(a * 3)", "ceil": "tf.ceil(a * 3)", "round": "tf.round(a * 4)",
    "rint": "tf.rint(a * 4)", "erf": "tf.erf(a)", "erfc": "tf.erfc(a)",
    "lgamma": "tf.lgamma(tf.abs(a) + 0.1)", "digamma": "tf.digamma(tf.abs(a) + 0.1)",
    "cast_int": "tf.cast(a * 3, tf.int32)", "cast_uint8": "tf.cast(i * 50, tf.uint8)",
    "cast_bf16": "tf.cast(a, tf.bfloat16)", "equal": "tf.equal(i, j)",
    "less": "a < b", "where": "tf.where(a > 0)", "select": "tf.where(a > 0, a, -a)",
    "where_v2": "tf.where_v2(b > 0, a, 0.0)", "add_n": "tf.add_n([a, a, a])",
    "sum": "tf.reduce_sum(a, 1)", "sum_int": "tf.reduce_sum(i, [0, 1])",
    "mean": "tf.reduce_mean(a, 0)", "mean_int": "tf.reduce_mean(i, 1)",
    "max": "tf.reduce_max(a, -1, keepdims=True)", "min": "tf.reduce_min(i)",
    "prod": "tf.reduce_prod(a)", "all": "tf.reduce_all(a > -1, 1)",
    "any": "tf.reduce_any(a > 1, 0)", "logsumexp": "tf.reduce_logsumexp(a, 1)",
    "argmax": "tf.argmax(a, 1)", "argmin": "tf.argmin(i, 0, output_type=tf.int32)",
    "count_nonzero": "tf.count_nonzero(i, 1)",
    "matmul": "tf.matmul(a, a, transpose_b=True)",
    "batch_matmul": "tf.matmul(tf.reshape(a, [2, 1, 3]), tf.reshape(a, [2, 3, 1]))",
    "inverse": "tf.matrix_inverse(tf.matmul(a, a, transpose_b=True) + tf.eye(2))",
    "det": "tf.matrix_determinant(tf.matmul(a, a, transpose_b=True))",
    "cholesky": "tf.cholesky(tf.matmul(a, a, transpose_b=True) + tf.eye(2))",
    "range": "tf.range(1.0, 2.0, 0.3)", "range_int": "tf.range(10, 1, -3)",
    "cumsum": "tf.cumsum(a, 1, exclusive=True, reverse=True)",
    "cumprod": "tf.cumprod(a, 0, exclusive=True)",
    "segment_sum": "tf.unsorted_segment_sum(a, [1, -1], 3)",
}
GRAD_SNIPPETS = {
    # gradient of reduce_sum(expr * w) with respect to a, with w a fixed weight
    "g_mul": "a * b", "g_div": "a / b", "g_pow": "tf.pow(tf.abs(a) + 0.5, b)",
    "g_max": "tf.maximum(a, b)", "g_sqdiff": "tf.squared_difference(a, b)",
    "g_tanh": "tf.tanh(a)", "g_sigmoid": "tf.sigmoid(a)", "g_sqrt": "tf.sqrt(tf.abs(a))",
    "g_erf": "tf.erf(a)", "g_mean": "tf.reduce_mean(a, 1)",
    "g_max_red": "tf.reduce_max(a, 0)", "g_prod": "tf.reduce_prod(a, 1)",
    "g_logsumexp": "tf.reduce_logsumexp(a, 1)", "g_matmul": "tf.matmul(a, a, "
    "transpose_b=True)", "g_cumprod": "tf.cumprod(a, 1, reverse=True)",
    "g_inverse": "tf.matrix_inverse(tf.matmul(a, a, transpose_b=True) + tf.eye(2))",
    "g_cholesky": "tf.cholesky(tf.matmul(a, a, transpose_b=True) + tf.eye(2))",
}

_A = np.array([[0.3, -1.2, 2.1], [-0.7, 1.5, 0.05]], np.float32)
_B = np.array([1.3, -0.4, 0.8], np.float32)
_I = np.array([[7, -7, 3], [-2, 9, 0]], np.int32)
_J = np.array([2, -3, 4], np.int32)

_ORACLE_PROGRAM = """
a = tf.constant(np.array({a}, np.float32))
b = tf.constant(np.array({b}, np.float32))
i = tf.constant(np.array({i}, np.int32))
j = tf.constant(np.array({j}, np.int32))
exprs = {exprs}
grads = {grads}
fetch = {{k: eval(v) for k, v in exprs.items()}}
for k, v in grads.items():
    y = eval(v)
    w = tf.constant(np.linspace(-1, 1, int(np.prod(y.shape.as_list()))).reshape(
        y.shape.as_list()).astype(np.float32))
    fetch[k] = tf.gradients(tf.reduce_sum(y * w), a)[0]
with tf.Session() as s:
    out = s.run(fetch)
result = {{k: np.asarray(v).astype(np.float64).tolist() if np.asarray(v).dtype.kind != "b"
          else np.asarray(v).tolist() for k, v in out.items()}}
result["__dtypes__"] = {{k: str(np.asarray(v).dtype) for k, v in out.items()}}
"""


@pytest.mark.oracle
def test_against_tensorflow():
    """One TensorFlow subprocess computes every snippet; tensorflux must agree."""
    program = _ORACLE_PROGRAM.format(a=_A.tolist(), b=_B.tolist(), i=_I.tolist(),
                                     j=_J.tolist(), exprs=ORACLE_SNIPPETS,
                                     grads=GRAD_SNIPPETS)
    want = oracle.run_tf(program, timeout=120)
    eye = np.eye(2, dtype=np.float32)
    a, b, i, j = (tf.constant(v) for v in (_A, _B, _I, _J))
    env = {"tf": tf, "np": np, "a": a, "b": b, "i": i, "j": j}
    fetch = {}
    for k, v in ORACLE_SNIPPETS.items():
        fetch[k] = eval(v.replace("tf.eye(2)", "eye"), {**env, "eye": eye})
    for k, v in GRAD_SNIPPETS.items():
        y = eval(v.replace("tf.eye(2)", "eye"), {**env, "eye": eye})
        n = int(np.prod(y.shape.as_list()))
        w = np.linspace(-1, 1, n).reshape(y.shape.as_list()).astype(np.float32)
        fetch[k] = tf.gradients(tf.reduce_sum(y * w), a)[0]
    got = run(fetch)
    dtypes_ = want.pop("__dtypes__")
    bad = []
    for k in fetch:
        g = np.asarray(got[k])
        w = np.asarray(want[k])
        tol = 2e-2 if dtypes_[k] == "bfloat16" else 1e-4
        if str(g.dtype) != dtypes_[k]:
            bad.append(f"{k}: dtype {g.dtype} != {dtypes_[k]}")
        elif g.shape != w.shape or not np.allclose(g.astype(np.float64), w, rtol=tol,
                                                   atol=tol, equal_nan=True):
            bad.append(f"{k}: {g.tolist()} != {w.tolist()}")
    assert not bad, "\n".join(bad)


# ---- the split and fast paths of big float kernels (kernels/cpu/math_ops.py, matrix_ops.py) -


@pytest.fixture
def split_everything(monkeypatch):
    """Every float kernel takes its intra-op path, in many small chunks over two threads."""
    from tensorflux.kernels import intra_op

    monkeypatch.setattr(intra_op, "MIN_ELEMENTS", 0)
    monkeypatch.setattr(intra_op, "MIN_FLOPS", 0)
    monkeypatch.setattr(intra_op, "CHUNK_ELEMENTS", 16)
    monkeypatch.setattr(intra_op, "workers", lambda ctx=None: 2)


@pytest.mark.parametrize("dtype", F32_64)
@pytest.mark.parametrize("xs, ys", [((6, 5, 4), (4,)), ((4,), (6, 5, 4)), ((6, 5, 4), (1, 1, 4)),
                                    ((6, 5, 4), (5, 4)), ((6, 5, 4), (6, 5, 4)),
                                    ((1, 4), (6, 5, 4)), ((6, 5, 4), (6, 1, 4))])
@pytest.mark.parametrize("op, ref", [(tf.add, np.add), (tf.subtract, np.subtract),
                                     (tf.multiply, np.multiply)])
def test_split_binary_arithmetic(split_everything, dtype, xs, ys, op, ref):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(xs).astype(dtype)
    y = rng.standard_normal(ys).astype(dtype)
    with tf.Session() as s:
        got = s.run(op(x, y))
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, ref(x, y))


def test_split_binary_on_non_contiguous_inputs(split_everything):
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    t = tf.transpose(tf.constant(x))
    with tf.Session() as s:
        np.testing.assert_array_equal(s.run(t + np.float32([1, 2, 3, 4])),
                                      x.T + np.float32([1, 2, 3, 4]))


@pytest.mark.parametrize("axes, keepdims", [([0], False), ([0, 1], False), ([1, 0], True),
                                            ([0, 1, 2], False), ([], False), ([1], False)])
def test_sum_over_leading_axes_and_no_axes(axes, keepdims):
    x = np.random.default_rng(2).standard_normal((64, 8, 16)).astype(np.float32)
    with tf.Session() as s:
        got = s.run(tf.reduce_sum(x, axes, keepdims=keepdims))
    want = np.sum(x.astype(np.float64), axis=tuple(axes), keepdims=keepdims)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def test_reductions_over_no_axes():
    x = np.array([[-1.5, 2.0], [3.0, -4.0]], np.float32)
    with tf.Session() as s:
        for op in (tf.reduce_sum, tf.reduce_mean, tf.reduce_max, tf.reduce_min,
                   tf.reduce_prod):
            np.testing.assert_array_equal(s.run(op(x, [])), x)
        # EuclideanNorm over no axis is |x|, not x.
        np.testing.assert_array_equal(s.run(reduction_ops.reduce_euclidean_norm(x, [])), abs(x))


@pytest.mark.parametrize("ta, tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("m, k, n", [(70, 30, 200), (300, 20, 50), (1, 5, 1)])
def test_split_matmul(split_everything, ta, tb, m, k, n):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    with tf.Session() as s:
        got = s.run(tf.matmul(a, b, transpose_a=ta, transpose_b=tb))
    want = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


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


@pytest.mark.parametrize("dtype", [np.float16, BF16, np.float32, np.float64])
def test_argmax_argmin_skip_nan(dtype):
    nan, inf = np.nan, np.inf
    rows = [([1, nan, 3, 0], 2, 3), ([nan, 1, 3], 2, 1), ([nan, nan], 0, 0),
            ([1, nan, nan], 0, 0), ([nan, nan, 1], 2, 2), ([nan, -inf], 0, 1),
            ([nan, inf], 1, 0), ([5, nan, 5], 0, 0)]
    for values, amax, amin in rows:
        x = np.array(values, dtype)
        assert run([tf.argmax(x), tf.argmin(x)]) == [amax, amin], values
    x = np.array([[nan, 1], [2, nan]], dtype)
    np.testing.assert_array_equal(run(tf.argmax(x, axis=1)), [1, 0])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_digamma_is_nan_at_its_poles(dtype):
    x = np.array([-0.0, 0.0, -1, -2, -np.inf, np.inf, 1, -1.5], dtype)
    got = run(tf.digamma(x))
    assert np.isnan(got[:5]).all() and got[5] == np.inf
    np.testing.assert_allclose(got[6:].astype(np.float64), [-0.5772157, 0.7031566],
                               rtol=2e-3 if dtype == np.float16 else 1e-6)


@pytest.mark.parametrize("dtype, want", [(np.complex64, 0), (np.complex128, 0),
                                         (np.float32, np.nan), (np.int32, 0)])
def test_mean_over_an_empty_axis(dtype, want):
    got = run(tf.reduce_mean(np.zeros((0, 3), dtype), axis=0))
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, np.full(3, want, dtype))


def test_range_size_is_computed_in_its_dtype():
    # float32: (0.3 - 0) / 0.1 is exactly 3 (three elements); float64 arithmetic gives 4.
    f32 = tf.range(0.0, 0.3, 0.1)
    f64 = tf.range(np.float64(0), np.float64(0.3), np.float64(0.1))
    p = tf.placeholder(tf.float32, [])
    dynamic = tf.range(0.0, p, 0.1)
    assert f32.shape.as_list() == [3] and f64.shape.as_list() == [3]
    got = run([f32, f64, dynamic, tf.range(1.0, 0.7, -0.1)], {p: 0.3})
    assert [len(v) for v in got] == [3, 3, 3, 3]


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


@pytest.mark.parametrize("op", ["Real", "Imag", "Angle", "ComplexAbs"])
def test_complex_parts_need_tout_to_be_the_real_dtype(op):
    from tensorflux.framework.op_def_library import apply_op

    c = np.array([1 + 2j, -3 - 4j], np.complex64)
    c64, c128 = tf.constant(c), tf.constant(c.astype(np.complex128))
    arg = "x" if op == "ComplexAbs" else "input"
    wrong = [apply_op(op, **{arg: c64, "Tout": tf.float64}),
             apply_op(op, **{arg: c128, "Tout": tf.float32})]
    message = ("Signature mismatch, have: complex64->double expected: complex64->float"
               if op == "ComplexAbs" else
               f"No OpKernel was registered to support Op '{op}' with these attrs: "
               "[T=DT_COMPLEX64, Tout=DT_DOUBLE]")
    with tf.Session() as s:
        for t in wrong:
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                s.run(t)
            if t is wrong[0]:
                assert message in str(info.value)
        right = s.run(apply_op(op, **{arg: c128, "Tout": tf.float64}))
    assert right.dtype == np.float64
    want = {"Real": c.real, "Imag": c.imag, "Angle": np.angle(c), "ComplexAbs": np.abs(c)}[op]
    np.testing.assert_allclose(right, want.astype(np.float64), rtol=1e-6)


def test_found_by_the_differential_test():
    # Each of these differed from TF 2.21 (tests/ops/test_differential.py).
    with pytest.raises(ValueError, match="Invalid reduction dimension 0 for input with 0"):
        tf.reduce_sum(tf.constant(1.0), axis=0)
    scalar = tf.placeholder(tf.float32, [])
    assert tf.argmax(scalar, 0).shape.as_list() == []  # the kernel rejects it, not the shape
    x = np.zeros((0,), np.float32)
    ints = tf.placeholder(tf.int64, [1, 3])
    got = run([tf.cumsum(x, exclusive=True, reverse=True), tf.cumprod(x, exclusive=True),
               tf.pow(np.zeros((0, 3), np.int64), ints),
               tf.lgamma(np.array([-np.inf, np.inf], np.float32))], {ints: [[1, -1, 2]]})
    assert got[0].shape == got[1].shape == (0,) and got[2].shape == (0, 3)
    np.testing.assert_array_equal(got[3], [np.inf, np.inf])
    with tf.Session() as s, pytest.raises(tf.errors.InvalidArgumentError):
        s.run(tf.argmax(scalar, 0), {scalar: 1.0})
