"""Reductions and arg-reductions (tensorflux/ops/reduction_ops.py): values against NumPy
(table-driven), gradients against finite differences, static shapes and errors."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.ops import reduction_ops
from tests.op_test_util import OpCase, positive
from tests.ops.math_cases import (
    BF16,
    F32_64,
    INTS,
    booleans,
    distinct,
    np_int_mean,
    run,
    table_tests,
    tensor_value,
)

# The kernels give NaN/inf for 0/0, log(0), NaN casts as TensorFlow does; NumPy's warnings
# about them are silenced in the kernel module (pytest's own warning filters replace that).
# Each test runs on a fresh default graph (tests/ops/conftest.py).
pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning:tensorflux.kernels.cpu"),
              pytest.mark.usefixtures("fresh_graph")]

# (case, dtypes to check values for; gradients are checked for float32/float64 when
# case.grad is set).
CASES: list[tuple[OpCase, list]] = [
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
]

test_value, test_gradient, test_kernel_dtypes_are_exact = table_tests(CASES)



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


@pytest.mark.parametrize("dtype, want", [(np.complex64, 0), (np.complex128, 0),
                                         (np.float32, np.nan), (np.int32, 0)])
def test_mean_over_an_empty_axis(dtype, want):
    got = run(tf.reduce_mean(np.zeros((0, 3), dtype), axis=0))
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, np.full(3, want, dtype))
