"""Comparison, logical and selection ops (tensorflux/ops/comparison_ops.py): values against
NumPy (table-driven), gradients of Select, and their errors."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.kernels.cpu import native
from tests.op_test_util import OpCase
from tests.ops.math_cases import (
    BCAST,
    BCAST3,
    BF16,
    F32_64,
    booleans,
    table_tests,
)

# The kernels give NaN/inf for 0/0, log(0), NaN casts as TensorFlow does; NumPy's warnings
# about them are silenced in the kernel module (pytest's own warning filters replace that).
# Each test runs on a fresh default graph (tests/ops/conftest.py).
pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning:tensorflux.kernels.cpu"),
              pytest.mark.usefixtures("fresh_graph")]

# (case, dtypes to check values for; gradients are checked for float32/float64 when
# case.grad is set).
CASES: list[tuple[OpCase, list]] = [
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
    # above comparison_ops._BITS_MIN_ELEMENTS: the branch-free select of bits
    (OpCase("where_v2_large", tf.where_v2, np.where, [(64, 1), (128,), (64, 128)],
            input_dtypes=[np.bool_, None, None], grad=False),
     [np.float32, np.float64, np.int32, np.int64]),
    (OpCase("where_select_large", lambda c, x, y: tf.where(c, x, y), np.where,
            [(64, 128)] * 3, input_dtypes=[np.bool_, None, None], grad=False),
     [np.float32, np.float16]),
    (OpCase("where_coordinates", tf.where, lambda c: np.argwhere(c), [(3, 4)],
            grad=False, make=booleans), [np.bool_]),
    (OpCase("where_coordinates_numeric", tf.where, lambda c: np.argwhere(c), [(5,)],
            grad=False, make=lambda rng, s, d: np.array([0, 2, 0, -1, 3], d)),
     [np.float32, np.int32]),
]

test_value, test_gradient, test_kernel_dtypes_are_exact = table_tests(CASES)



def test_select_runtime_errors():
    c = tf.placeholder(tf.bool)
    x = tf.placeholder(tf.float32)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="same size and shape"):
            sess.run(tf.where(c, x, x), {c: [True, False], x: [1.0, 2.0, 3.0]})
        np.testing.assert_array_equal(
            sess.run(tf.where(c, x, -x), {c: True, x: [1.0, 2.0]}), [1.0, 2.0])


# (condition, then, else) shapes; "0" stands for a scalar zero of the dtype
_SELECT_SHAPES = [((64, 128), (64, 128), (64, 128)), ((64, 128), (64, 128), "0"),
                  ((64, 128), "0", (64, 128)), ((64, 128), (128,), (64, 1)),
                  ((128,), (64, 128), (64, 128)), ((64, 1), (1, 128), "0"),
                  ((), (64, 128), (64, 128)), ((64, 128), (), ()),
                  ((5, 65539), (5, 65539), (5, 65539)), ((3, 5), (3, 5), (3, 5))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32, np.int64,
                                   np.uint8, np.int16, np.bool_, np.complex64])
@pytest.mark.parametrize("in_c", [True, False])
def test_select_bits_equal_np_where(dtype, in_c, monkeypatch):
    """SelectV2's branch-free select gives np.where's bits: NaN, -0.0 and inf included;
    in C (native.select: operands of the condition's shape or single elements, the large
    one in chunks over the intra-op threads) and in NumPy."""
    if not in_c:
        monkeypatch.setattr(native, "_mod", None)
    elif not native.available():
        pytest.skip("the C extension is not built")
    rng = np.random.default_rng(3)

    def make(shape):
        if shape == "0":
            return np.zeros((), dtype)
        x = (rng.standard_normal(shape) * 5).astype(dtype)
        if x.dtype.kind == "f" and x.size >= 3:
            x.flat[:3] = [np.nan, -0.0, np.inf]
        return x

    c_in = tf.placeholder(tf.bool)
    t_in, e_in = tf.placeholder(dtype), tf.placeholder(dtype)
    out = tf.where_v2(c_in, t_in, e_in)
    with tf.Session() as sess:
        for c_shape, t_shape, e_shape in _SELECT_SHAPES:
            c, t, e = rng.random(c_shape) > 0.5, make(t_shape), make(e_shape)
            got, want = sess.run(out, {c_in: c, t_in: t, e_in: e}), np.where(c, t, e)
            assert got.shape == want.shape and got.dtype == want.dtype
            assert got.tobytes() == want.tobytes(), (c_shape, t_shape, e_shape)
        with pytest.raises(tf.errors.InvalidArgumentError, match="broadcastable"):
            sess.run(out, {c_in: np.ones((64, 128), bool), t_in: make((64, 3)),
                           e_in: make((64, 128))})


def test_native_select_takes_only_what_it_can():
    c = np.ones((4, 8), bool)
    f32 = np.ones((4, 8), np.float32)
    assert native.select(c, f32, f32[:, :4], 1) is None  # a broadcast operand
    assert native.select(c, f32, np.ones((1, 1, 1), np.float32), 1) is None  # more axes
    assert native.select(c, f32.T, f32.T, 1) is None  # not C-contiguous
    assert native.select(c.astype(np.uint8), f32, f32, 1) is None  # not a bool condition
    assert native.select(c, f32, f32.astype(np.float64), 1) is None  # two dtypes
    assert native.select(c, f32.astype(object), f32.astype(object), 1) is None
    if native.available():
        with pytest.raises(ValueError, match="item size"):
            native._mod.select(np.empty(32, np.float32), c, f32, np.ones(32, np.float64), 1)
        with pytest.raises(ValueError, match="item size"):
            native._mod.select(np.empty(32, np.float32), c, f32, np.ones(31, np.float32), 1)
