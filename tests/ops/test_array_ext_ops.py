"""More array ops (tensorflux/ops/array_ext_ops.py): a table of expressions compared with
TensorFlow, values against NumPy, finite-difference gradients of every differentiable op,
static shapes and errors."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework import op_registry
from tensorflux.kernels import registry as kernel_registry
from tests import oracle
from tests.op_test_util import OpCase, check_gradient, check_value

PROGRAM = '''
h = tf.SparseTensor([[0, 0], [0, 1], [1, 0]], ["a", "b", "c"], [3, 2])
t = tf.SparseTensor([[0, 0], [1, 0], [1, 1], [2, 0]], ["a", "c", "d", "e"], [3, 2])
h2 = tf.SparseTensor([[0, 0], [1, 0]], ["a", "b"], [3, 1])
t2 = tf.SparseTensor(np.zeros((0, 2), np.int64), tf.constant([], tf.string), [3, 1])
img = np.arange(2 * 6 * 6 * 4, dtype=np.float32).reshape(2, 6, 6, 4)
ex = {
 "ed": tf.edit_distance(h, t), "ed_raw": tf.edit_distance(h, t, normalize=False),
 "ed_empty": tf.edit_distance(h2, t2),
 "unravel": tf.unravel_index([5, 7], [3, 4]), "unravel_s": tf.unravel_index(5, [3, 4]),
 "setdiff": list(tf.setdiff1d([1, 2, 3, 4, 5], [2, 4])),
 "uwc": list(tf.unique_with_counts([1, 1, 2, 4, 4, 4, 7])),
 "roll": tf.roll([[1, 2, 3], [4, 5, 6]], [1, -1], [0, 1]),
 "roll1": tf.roll([1, 2, 3, 4], 1, 0),
 "roll_same": tf.roll(np.arange(10), [2, 3], [0, 0]),
 "rep": tf.repeat([[1, 2], [3, 4]], [1, 2], axis=0),
 "rep_flat": tf.repeat([[1, 2], [3, 4]], 2),
 "rep_ax1": tf.repeat([[1, 2], [3, 4]], 3, axis=1),
 "mesh": tf.meshgrid([1, 2, 3], [4, 5]),
 "mesh_ij": tf.meshgrid([1, 2, 3], [4, 5], [6, 7], indexing="ij"),
 "mesh_xy3": tf.meshgrid([1, 2, 3], [4, 5], [6, 7, 8, 9]),
 "bitcast": tf.bitcast(tf.constant([1.0], tf.float32), tf.int32),
 "bitcast_up": tf.bitcast(tf.constant([1, 2], tf.int16), tf.int32),
 "bitcast_down": tf.bitcast(tf.constant([65537], tf.int32), tf.uint8),
 "s2d": tf.space_to_depth(img, 2), "d2s": tf.depth_to_space(img, 2),
 "s2d_3": tf.space_to_depth(img, 3),
 "s2b": tf.space_to_batch(img, [[1, 1], [0, 2]], 2),
 "b2s": tf.batch_to_space(tf.space_to_batch(img, [[1, 1], [0, 2]], 2), [[1, 1], [0, 2]], 2),
 "s2bnd": tf.space_to_batch_nd(img[:, :, :, 0], [3], [[0, 0]]),
 "b2snd": tf.batch_to_space_nd(img, [2, 1], [[1, 1], [0, 0]]),
 "patches_valid": tf.extract_image_patches(img, [1, 2, 3, 1], [1, 2, 1, 1], [1, 1, 1, 1],
                                           "VALID"),
 "patches_same": tf.extract_image_patches(img, [1, 3, 3, 1], [1, 2, 2, 1], [1, 2, 1, 1],
                                          "SAME"),
 "tsu": tf.tensor_scatter_update(tf.zeros([4, 2]), [[1], [3]], [[5., 6.], [7., 8.]]),
 "tsa": tf.tensor_scatter_add(tf.ones([4]), [[1], [1]], [5., 6.]),
 "tss": tf.tensor_scatter_sub(tf.ones([2, 2]), [[0, 1]], [3.]),
 "bg": tf.batch_gather([[1, 2, 3], [4, 5, 6]], [[0, 2], [1, 1]]),
 "rs": tf.reverse_sequence([[1, 2, 3], [4, 5, 6]], [2, 3], seq_axis=1, batch_axis=0),
 "rs_t": tf.reverse_sequence(img[:, :, :, :2], [0, 4, 6, 1, 2, 3], seq_axis=2, batch_axis=1),
 "ps": tf.parallel_stack([[1, 2], [3, 4], [5, 6]]),
 "gc": tf.guarantee_const([1.5]),
 "fp_s": tf.fingerprint(["abc", "de"]), "fp_s2": tf.fingerprint([["abc", "de"], ["x", "y"]]),
 "fp_i": tf.fingerprint(np.arange(6, dtype=np.int32).reshape(2, 3)),
 "fp_f": tf.fingerprint(img[:, :2]),
 "rstbp": list(tf.required_space_to_batch_paddings([5, 7], [2, 3], [[1, 0], [0, 2]])),
 "rstbp0": list(tf.required_space_to_batch_paddings([6, 7], [4, 4])),
 "tsmax": tf.tensor_scatter_nd_max(tf.constant([1., 5., 2.]), [[0], [1], [0]], [3., 4., 2.5]),
 "tsmin": tf.tensor_scatter_nd_min(tf.ones([2, 2]), [[0, 1], [1, 1]], [-3., 7.]),
}
with tf.Session() as s:
    result = s.run(ex)
for k in list(result):
    if isinstance(result[k], list):
        for i, v in enumerate(result.pop(k)):
            result[f"{k}.{i}"] = v
'''


@pytest.mark.oracle
def test_matches_tensorflow():
    ours, theirs = oracle.run_both(PROGRAM, tf)
    assert set(ours) == set(theirs)
    for key in sorted(theirs):
        w, g = np.asarray(theirs[key]), np.asarray(ours[key])
        assert g.shape == w.shape, f"{key}: {g.shape} vs TF {w.shape}"
        if w.ndim:  # scalars come back from the oracle as Python numbers
            assert g.dtype == w.dtype, f"{key}: {g.dtype} vs TF {w.dtype}"
        np.testing.assert_array_equal(g, w, err_msg=key)


def _np_space_to_depth(x, b):
    n, h, w, c = x.shape
    return x.reshape(n, h // b, b, w // b, b, c).transpose(0, 1, 3, 2, 4, 5).reshape(
        n, h // b, w // b, b * b * c)


GRAD_CASES = [
    OpCase("space_to_depth", lambda x: tf.space_to_depth(x, 2),
           lambda x: _np_space_to_depth(x, 2), shapes=[(2, 4, 6, 3)]),
    OpCase("depth_to_space", lambda x: tf.depth_to_space(x, 2),
           lambda x: x.reshape(2, 3, 2, 2, 2, 2).transpose(0, 1, 3, 2, 4, 5).reshape(2, 6, 4, 2),
           shapes=[(2, 3, 2, 8)]),
    OpCase("space_to_batch_nd", lambda x: tf.space_to_batch_nd(x, [2, 2], [[1, 1], [0, 2]]),
           None, shapes=[(2, 4, 4, 3)]),
    OpCase("batch_to_space_nd", lambda x: tf.batch_to_space_nd(x, [2, 2], [[1, 0], [0, 1]]),
           None, shapes=[(8, 3, 2, 2)]),
    OpCase("extract_patches_valid", lambda x: tf.extract_image_patches(
        x, [1, 2, 3, 1], [1, 2, 1, 1], [1, 1, 1, 1], "VALID"), None, shapes=[(2, 5, 6, 2)]),
    OpCase("extract_patches_same", lambda x: tf.extract_image_patches(
        x, [1, 3, 3, 1], [1, 2, 2, 1], [1, 2, 1, 1], "SAME"), None, shapes=[(1, 6, 5, 2)]),
    OpCase("reverse_sequence", lambda x: tf.reverse_sequence(x, [1, 3, 0], 1, 0),
           None, shapes=[(3, 4, 2)]),
    OpCase("roll", lambda x: tf.roll(x, [1, -2], [0, 1]), lambda x: np.roll(x, (1, -2), (0, 1)),
           shapes=[(3, 5)]),
    OpCase("tensor_scatter_update", lambda x, u: tf.tensor_scatter_update(x, [[1], [3]], u),
           None, shapes=[(5, 2), (2, 2)]),
    OpCase("tensor_scatter_add", lambda x, u: tf.tensor_scatter_add(x, [[1, 0], [1, 0]], u),
           None, shapes=[(3, 2), (2,)]),
    OpCase("tensor_scatter_sub", lambda x, u: tf.tensor_scatter_sub(x, [[2]], u),
           None, shapes=[(3, 2), (1, 2)]),
    OpCase("tensor_scatter_max", lambda x, u: tf.tensor_scatter_nd_max(x, [[1], [3], [1]], u),
           None, shapes=[(5, 2), (3, 2)]),
    OpCase("tensor_scatter_min", lambda x, u: tf.tensor_scatter_nd_min(x, [[0, 1], [2, 0]], u),
           None, shapes=[(3, 2), (2,)]),
    OpCase("repeat", lambda x: tf.repeat(x, [2, 0, 1], axis=1),
           lambda x: np.repeat(x, [2, 0, 1], axis=1), shapes=[(2, 3)]),
    OpCase("batch_gather", lambda x: tf.batch_gather(x, [[0, 2], [1, 1]]),
           lambda x: np.take_along_axis(x, np.array([[0, 2], [1, 1]]), 1), shapes=[(2, 3)]),
    OpCase("ensure_shape", lambda x: tf.ensure_shape(x, [None, 3]), lambda x: x,
           shapes=[(2, 3)]),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_gradients(case):
    check_gradient(case, np.float64)


@pytest.mark.parametrize("case", [c for c in GRAD_CASES if c.ref is not None],
                         ids=lambda c: c.name)
def test_values(case):
    check_value(case, np.float32)


def test_dynamic_repeat_and_shapes():
    x = tf.placeholder(tf.int32, [None])
    r = tf.placeholder(tf.int32, [None])
    y = tf.repeat(x, r)
    with tf.Session() as s:
        np.testing.assert_array_equal(s.run(y, {x: [1, 2, 3], r: [2, 0, 3]}),
                                      [1, 1, 3, 3, 3])
    assert tf.space_to_depth(tf.placeholder(tf.float32, [None, 4, 6, 3]), 2).shape.as_list() \
        == [None, 2, 3, 12]
    assert tf.extract_image_patches(tf.placeholder(tf.float32, [None, 7, 7, 2]),
                                    [1, 3, 3, 1], [1, 2, 2, 1], [1, 1, 1, 1],
                                    "SAME").shape.as_list() == [None, 4, 4, 18]
    assert tf.bitcast(tf.placeholder(tf.int16, [3, 2]), tf.int32).shape.as_list() == [3]
    with pytest.raises(ValueError):
        tf.space_to_depth(tf.placeholder(tf.float32, [1, 3, 4, 1]), 2)


def test_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="not compatible with expected"):
        with tf.Session() as s:
            s.run(tf.ensure_shape(tf.placeholder_with_default([1, 2, 3], [None]), [2]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="not in"):
        with tf.Session() as s:
            s.run(tf.tensor_scatter_update(tf.zeros([3]), [[3]], [1.0]))
    with pytest.raises(TypeError):
        tf.edit_distance(tf.constant([1]), tf.constant([1]))
    with pytest.raises(ValueError):
        tf.meshgrid([1, 2], indexing="xx")


MY_OPS = ["SpaceToDepth", "DepthToSpace", "SpaceToBatchND", "BatchToSpaceND",
          "ExtractImagePatches", "ReverseSequence", "Roll", "UniqueWithCounts", "ListDiff",
          "TensorScatterUpdate", "TensorScatterAdd", "TensorScatterSub", "UnravelIndex",
          "Bitcast", "EnsureShape", "GuaranteeConst", "EditDistance", "TensorScatterMax",
          "TensorScatterMin", "Fingerprint"]


@pytest.mark.parametrize("op_type", MY_OPS)
def test_every_op_has_shape_fn_kernel_and_gradient(op_type):
    assert op_registry.get(op_type).shape_fn is not None
    assert kernel_registry.has_kernel(op_type, "CPU")
    assert op_registry.get_gradient(op_type) is not None



@pytest.mark.parametrize("x,y", [
    (np.array([4, 1, 4, 7, 2, 1], np.int32), np.array([1, 9], np.int32)),
    (np.arange(100_000, dtype=np.int64), np.arange(0, 100_000, 3, dtype=np.int64)),
    (np.array([np.nan, -0.0, 1.5, 2.0, np.inf], np.float32),
     np.array([0.0, np.nan, 2.0], np.float32)),
    (np.array([True, False, True]), np.array([True])),
    (np.array([3, 5], np.uint8), np.array([], np.uint8)),
    (np.array([b"a", b"b", b"a", b"c"], object), np.array([b"a"], object)),
])
def test_setdiff1d_keeps_what_is_not_in_y_in_order(x, y):
    """ListDiff: x's values not in y (duplicates kept, x's order), and their positions; NaN
    is never found in y and -0.0 is found as 0.0 (a Python set's membership, which the
    sorted path for numbers agrees with)."""
    exclude = set(y.tolist())
    positions = [i for i, v in enumerate(x.tolist()) if v not in exclude]
    with tf.Session() as s:
        out, idx = s.run(tf.setdiff1d(x, y))
    np.testing.assert_array_equal(idx, positions)
    np.testing.assert_array_equal(out, x[positions])
