"""Shared pieces of the math-family op tests (tests/ops/test_math_ops.py, test_unary_ops.py,
test_comparison_ops.py, test_reduction_ops.py, test_matrix_ops.py, test_sequence_ops.py):
input makers, dtype lists, NumPy references, and the parametrization of a `CASES` table."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import tensorflux as tf
from tests.op_test_util import OpCase, away_from, check_gradient, check_value

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

def run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)




def value_params(cases):
    """One test_value param per (case, dtype) of a `CASES` table."""
    return [pytest.param(c, dt, id=f"{c.name}-{np.dtype(dt).name}")
            for c, dts in cases for dt in dts]


def grad_params(cases):
    """The test_gradient params of a `CASES` table: float32/float64 where the case has them."""
    return [pytest.param(c, dt, id=f"{c.name}-{np.dtype(dt).name}")
            for c, dts in cases if c.grad and any(np.dtype(d).kind == "f" for d in dts)
            for dt in F32_64
            if any(np.dtype(d) == np.dtype(dt) for d in dts)
            and (c.input_dtypes is None or any(d is None for d in c.input_dtypes))]


def check_kernel_dtypes(cases: list[tuple[OpCase, list]]):
    """No NumPy type promotion leaks: each output's dtype is its tensor's dtype."""
    for case, dtype in [(c, dt) for c, dts in cases for dt in dts]:
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


def table_tests(cases: list[tuple[OpCase, list]]):
    """The table-driven tests of one op family's `CASES`: values against NumPy for every
    listed dtype, finite-difference gradients (float32/float64), exact kernel dtypes. A
    test module binds them: `test_value, test_gradient, test_kernel_dtypes_are_exact =
    table_tests(CASES)`."""
    names = [c.name for c, _ in cases]
    assert len(set(names)) == len(names), "case names must be unique"

    @pytest.mark.parametrize("case,dtype", value_params(cases))
    def test_value(case, dtype):
        check_value(case, dtype)

    @pytest.mark.parametrize("case,dtype", grad_params(cases))
    def test_gradient(case, dtype):
        check_gradient(case, dtype)

    def test_kernel_dtypes_are_exact():
        check_kernel_dtypes(cases)

    return test_value, test_gradient, test_kernel_dtypes_are_exact
