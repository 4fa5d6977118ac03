"""Sequence ops (tensorflux/ops/sequence_ops.py): cumulative sums and products, segment sums,
Range and BroadcastGradientArgs."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.ops import sequence_ops
from tests.op_test_util import OpCase, positive
from tests.ops.math_cases import (
    F32_64,
    SEGMENT_IDS,
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

test_value, test_gradient, test_kernel_dtypes_are_exact = table_tests(CASES)



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


def test_range_size_is_computed_in_its_dtype():
    # float32: (0.3 - 0) / 0.1 is exactly 3 (three elements); float64 arithmetic gives 4.
    f32 = tf.range(0.0, 0.3, 0.1)
    f64 = tf.range(np.float64(0), np.float64(0.3), np.float64(0.1))
    p = tf.placeholder(tf.float32, [])
    dynamic = tf.range(0.0, p, 0.1)
    assert f32.shape.as_list() == [3] and f64.shape.as_list() == [3]
    got = run([f32, f64, dynamic, tf.range(1.0, 0.7, -0.1)], {p: 0.3})
    assert [len(v) for v in got] == [3, 3, 3, 3]
