"""Sparse ops (tensorflux/ops/sparse_ops.py): SparseSegmentSum/Mean/SqrtN with and without
num_segments and their gradient ops, SparseToDense, SparseReorder, from_dense. One record per
configuration against a NumPy reference, finite-difference gradients in float32 and float64
(including second derivatives through the gradient ops), static shapes, TensorFlow's run-time
errors (messages checked with the oracle), and an oracle comparison on shared code.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework import op_registry
from tensorflux.framework.op_def_library import apply_op
from tensorflux.kernels import registry as kernel_registry
from tests import oracle
from tests.op_test_util import OpCase, check_gradient, check_value

# ---- NumPy references ----------------------------------------------------------------------


def ref_segment(data, indices, segment_ids, reduction="sum", num_segments=None):
    data = np.asarray(data, np.float64) if data.dtype.kind == "f" else np.asarray(data)
    rows = num_segments if num_segments is not None else \
        (int(segment_ids[-1]) + 1 if len(segment_ids) else 0)
    out = np.zeros((rows,) + data.shape[1:], data.dtype)
    count = np.zeros(rows)
    for i, s in zip(indices, segment_ids, strict=True):
        out[s] += data[i]
        count[s] += 1
    if reduction != "sum":
        scale = np.maximum(count, 1) if reduction == "mean" else np.sqrt(np.maximum(count, 1))
        out = out / scale.reshape((-1,) + (1,) * (data.ndim - 1))
    return out


def ref_segment_grad(grad, indices, segment_ids, dim0, reduction="sum"):
    grad = np.asarray(grad, np.float64)
    count = np.bincount(segment_ids, minlength=grad.shape[0]).astype(np.float64)
    out = np.zeros((dim0,) + grad.shape[1:])
    for i, s in zip(indices, segment_ids, strict=True):
        scale = 1.0 if reduction == "sum" else \
            (1.0 / count[s] if reduction == "mean" else 1.0 / np.sqrt(count[s]))
        out[i] += grad[s] * scale
    return out


def ref_to_dense(indices, shape, values, default):
    out = np.full(shape, default, dtype=np.asarray(values).dtype)
    idx = np.asarray(indices).reshape(-1, len(shape))
    vals = np.broadcast_to(values, (idx.shape[0],))
    for k, ix in enumerate(idx):
        out[tuple(ix)] = vals[k]
    return out


# ---- value and gradient records ------------------------------------------------------------

IDX = np.array([0, 3, 3, 1, 4], np.int32)        # repeated and skipped rows
SEG = np.array([0, 0, 2, 2, 2], np.int32)        # segment 1 empty
IDX64, SEG64 = IDX.astype(np.int64), SEG.astype(np.int64)
FNS = {"sum": tf.sparse.segment_sum, "mean": tf.sparse.segment_mean,
       "sqrtn": tf.sparse.segment_sqrt_n}
GRAD_OPS = {"sum": "SparseSegmentSumGrad", "mean": "SparseSegmentMeanGrad",
            "sqrtn": "SparseSegmentSqrtNGrad"}


def _rows3(y):
    """`y` with its 3 rows made static (TF leaves them unknown without num_segments)."""
    return tf.reshape(y, tf.concat([[3], tf.shape(y)[1:]], 0))


def _segment_cases():
    cases = []
    for red, fn in FNS.items():
        cases += [
            OpCase(f"segment_{red}", lambda d, fn=fn: _rows3(fn(d, IDX, SEG)),
                   lambda d, red=red: ref_segment(d, IDX, SEG, red).astype(d.dtype),
                   shapes=[(5, 3)]),
            OpCase(f"segment_{red}_int64_rank3", lambda d, fn=fn: _rows3(fn(d, IDX64, SEG64)),
                   lambda d, red=red: ref_segment(d, IDX64, SEG64, red).astype(d.dtype),
                   shapes=[(5, 2, 2)]),
            OpCase(f"segment_{red}_num_segments",
                   lambda d, fn=fn: fn(d, IDX, SEG, num_segments=5),
                   lambda d, red=red: ref_segment(d, IDX, SEG, red, 5).astype(d.dtype),
                   shapes=[(5, 3)]),
            OpCase(f"segment_{red}_sparse_gradient",
                   lambda d, fn=fn: _rows3(fn(d, IDX, SEG, sparse_gradient=True)),
                   lambda d, red=red: ref_segment(d, IDX, SEG, red).astype(d.dtype),
                   shapes=[(5, 3)]),
            # the gradient ops are linear; their own gradients give second derivatives
            OpCase(f"segment_{red}_grad_op",
                   lambda g, red=red: apply_op(GRAD_OPS[red], grad=g, indices=IDX,
                                               segment_ids=SEG, output_dim0=6,
                                               name=GRAD_OPS[red]),
                   lambda g, red=red: ref_segment_grad(g, IDX, SEG, 6, red).astype(g.dtype),
                   shapes=[(3, 2)]),
        ]
    return cases


SEGMENT_CASES = _segment_cases()
DENSE_CASES = [
    OpCase("to_dense", lambda v: tf.sparse.to_dense(
        tf.SparseTensor([[0, 1], [1, 0], [2, 3]], v, [3, 4])),
        lambda v: ref_to_dense([[0, 1], [1, 0], [2, 3]], (3, 4), v, 0), shapes=[(3,)]),
    OpCase("sparse_to_dense_default", lambda v, d: tf.sparse_to_dense(
        [[0, 1], [1, 0], [2, 3]], [3, 4], v, d),
        lambda v, d: ref_to_dense([[0, 1], [1, 0], [2, 3]], (3, 4), v, d),
        shapes=[(3,), ()]),
    OpCase("sparse_to_dense_1d_scalar_value", lambda v, d: tf.sparse_to_dense(
        [1, 3], [5], v, d), lambda v, d: ref_to_dense([[1], [3]], (5,), v, d),
        shapes=[(), ()]),
    OpCase("reorder_values", lambda v: tf.sparse.reorder(
        tf.SparseTensor([[2, 0], [0, 1], [1, 1]], v, [3, 2])).values,
        lambda v: v[[1, 2, 0]], shapes=[(3,)]),
]


@pytest.mark.parametrize("case", SEGMENT_CASES + DENSE_CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_value(case, dtype):
    check_value(case, dtype)


@pytest.mark.parametrize("case", SEGMENT_CASES + DENSE_CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gradient(case, dtype):
    check_gradient(case, dtype)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float16, ml_dtypes.bfloat16])
def test_segment_sum_other_dtypes(dtype):
    data = (np.arange(15) % 7).reshape(5, 3).astype(dtype)
    with tf.Graph().as_default(), tf.Session() as sess:
        got = sess.run(tf.sparse.segment_sum(data, IDX, SEG))
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got.astype(np.float64),
                                  ref_segment(data.astype(np.float64), IDX, SEG))


def test_sparse_gradient_is_indexed_slices_and_dense_is_a_grad_op():
    with tf.Graph().as_default():
        d = tf.constant(np.ones((5, 3), np.float32))
        (sparse,) = tf.gradients(tf.sparse.segment_mean(d, IDX, SEG, sparse_gradient=True), d)
        (dense,) = tf.gradients(tf.sparse.segment_mean(d, IDX, SEG), d)
        assert isinstance(sparse, tf.IndexedSlices)
        assert dense.op.type == "SparseSegmentMeanGrad"
        with tf.Session() as sess:
            s, dn = sess.run([sparse, dense])
    np.testing.assert_array_equal(s.indices, IDX)
    np.testing.assert_allclose(_densify(s), dn, rtol=1e-6)


def _densify(slices):
    out = np.zeros(tuple(slices.dense_shape), slices.values.dtype)
    np.add.at(out, slices.indices, slices.values)
    return out


def test_from_dense_and_round_trip():
    dense = np.array([[0, 2.5, 0], [1, 0, 0]], np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        st = tf.sparse.from_dense(dense)
        value = sess.run(st)
        back = sess.run(tf.sparse.to_dense(st))
    np.testing.assert_array_equal(value.indices, [[0, 1], [1, 0]])
    np.testing.assert_array_equal(value.values, [2.5, 1.0])
    np.testing.assert_array_equal(value.dense_shape, [2, 3])
    np.testing.assert_array_equal(back, dense)


def test_reorder_keeps_duplicates_in_order_and_sparse_tensor_values_are_accepted():
    with tf.Graph().as_default(), tf.Session() as sess:
        value = tf.SparseTensorValue([[1, 0], [0, 2], [1, 0]], [1.0, 2.0, 3.0], [2, 3])
        st = tf.sparse.reorder(value)
        got = sess.run(st)
    np.testing.assert_array_equal(got.indices, [[0, 2], [1, 0], [1, 0]])
    np.testing.assert_array_equal(got.values, [2.0, 1.0, 3.0])


# ---- static shapes -------------------------------------------------------------------------

SHAPES = [
    ("segment_unknown_rows", lambda: tf.sparse.segment_sum(
        tf.placeholder(tf.float32, [None, 3]), [0, 1], [0, 0]), [None, 3]),
    ("segment_num_segments", lambda: tf.sparse.segment_sum(
        tf.zeros([4, 3]), [0, 1], [0, 0], num_segments=7), [7, 3]),
    ("segment_unknown_ids", lambda: tf.sparse.segment_mean(
        tf.zeros([4, 3]), tf.placeholder(tf.int32), tf.placeholder(tf.int32)), [None, 3]),
    ("to_dense_const_shape", lambda: tf.sparse_to_dense([1, 3], [5], [7, 8], 0), [5]),
    ("to_dense_unknown", lambda: tf.sparse_to_dense(
        tf.placeholder(tf.int32, [None, 2]), tf.placeholder(tf.int32, [2]), 1.0),
        [None, None]),
]


@pytest.mark.parametrize("build,want", [s[1:] for s in SHAPES], ids=[s[0] for s in SHAPES])
def test_static_shape(build, want):
    with tf.Graph().as_default():
        assert build().shape.as_list() == want


def test_shape_errors_at_graph_construction():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Dimension 0 in both shapes must be equal, but "
                           r"are 3 and 2. Shapes are \[3\] and \[2\]"):
            tf.sparse.segment_sum(tf.zeros([4, 3]), [0, 1, 3], [0, 0])
        with pytest.raises(ValueError, match="Shape must be rank 1 but is rank 2"):
            tf.sparse.segment_sum(tf.zeros([4, 3]), [[0, 1]], [0, 0])
        with pytest.raises(TypeError, match="Input must be a SparseTensor"):
            tf.sparse.to_dense(tf.zeros([2]))


# ---- run-time errors (messages as TensorFlow's kernels word them; see the oracle test) ----

_D = np.arange(12, dtype=np.float32).reshape(4, 3)
ERRORS = [
    ("unsorted", lambda: tf.sparse.segment_sum(_D, [0, 1, 3], [1, 0, 2]),
     "segment ids are not increasing"),
    ("bad_index", lambda: tf.sparse.segment_sum(_D, [0, 7, 3], [0, 0, 2]),
     r"Bad: indices\[1\] == 7 out of range \[0, 4\)"),
    ("negative_segment", lambda: tf.sparse.segment_sum(_D, [0, 1, 3], [-1, 0, 2]),
     r"Segment id -1 out of range \[0, 3\), possibly because 'segment_ids' input is not "
     "sorted."),
    ("num_segments_small", lambda: tf.sparse.segment_sum(_D, [0, 1, 3], [0, 0, 2],
                                                         num_segments=2),
     "segment ids must be < num_segments"),
    ("to_dense_out_of_order", lambda: tf.sparse.to_dense(
        tf.SparseTensor([[2, 0], [0, 1]], [5.0, 6.0], [3, 4])),
     r"indices\[1\] = \[0,1\] is out of order. Many sparse ops require sorted indices."),
    ("to_dense_out_of_bounds", lambda: tf.sparse.to_dense(
        tf.SparseTensor([[0, 1], [3, 0]], [5.0, 6.0], [3, 4])),
     r"indices\[1\] = \[3,0\] is out of bounds: need 0 <= index < \[3,4\]"),
    ("to_dense_repeated", lambda: tf.sparse.to_dense(
        tf.SparseTensor([[0, 1], [0, 1]], [5.0, 6.0], [3, 4])),
     r"indices\[1\] = \[0,1\] is repeated"),
    ("to_dense_values_shape", lambda: tf.sparse_to_dense([[0, 1], [1, 1]], [3, 4],
                                                         tf.constant([1.0, 2.0, 3.0])),
     r"sparse_values has incorrect shape \[3\], should be \[\] or \[2\]"),
]


@pytest.mark.parametrize("build,message", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_runtime_errors(build, message):
    with tf.Graph().as_default(), tf.Session() as sess:
        out = build()
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            sess.run(out)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_unvalidated_sparse_to_dense_scatters_by_flat_positions(index_dtype):
    # validate_indices=False (a sampled softmax's accidental hits): in-bounds indices go
    # by their row-major positions, repeated ones included (the last value stays);
    # out-of-bounds ones, negative ones and an empty output fail as before
    cases = [([[0, 1], [2, 3], [0, 1], [1, 0]], [3, 4], [1.0, 2.0, 3.0, 4.0]),
             ([[1, 0, 2], [0, 2, 1]], [2, 3, 4], 7.0), ([4, 0, 2], [5], [1.0, 2.0, 3.0]),
             ([[0, 0]], [1, 1], [9.0])]
    with tf.Graph().as_default(), tf.Session() as sess:
        for idx, shape, values in cases:
            got = sess.run(tf.sparse_to_dense(np.array(idx, index_dtype), shape, values,
                                              -1.0, validate_indices=False))
            want = np.full(shape, -1.0, np.float32)
            rows = np.array(idx).reshape(len(idx), -1)
            for k, row in enumerate(rows):
                want[tuple(row)] = values[k] if isinstance(values, list) else values
            np.testing.assert_array_equal(got, want)
        for idx, shape in (([[0, 4]], [3, 4]), ([[-1, 0]], [3, 4]), ([[0, 0]], [0, 4])):
            with pytest.raises(tf.errors.InvalidArgumentError, match="out of bounds"):
                sess.run(tf.sparse_to_dense(np.array(idx, index_dtype), shape, 1.0,
                                            validate_indices=False))


def test_unvalidated_to_dense_takes_indices_as_given():
    with tf.Graph().as_default(), tf.Session() as sess:
        st = tf.SparseTensor([[2, 0], [0, 1]], [5.0, 6.0], [3, 4])
        got = sess.run(tf.sparse.to_dense(st, validate_indices=False))
    assert got[2, 0] == 5.0 and got[0, 1] == 6.0


@pytest.mark.parametrize("op_type", sorted(
    [f"SparseSegment{r}{s}" for r in ("Sum", "Mean", "SqrtN")
     for s in ("", "WithNumSegments", "Grad")] + ["SparseToDense", "SparseReorder"]))
def test_registered_with_shape_fn_kernel_and_gradient(op_type):
    assert op_registry.get(op_type).shape_fn is not None
    assert kernel_registry.has_kernel(op_type, "CPU")
    assert op_registry.get_gradient(op_type) is not None


# ---- TensorFlow oracle: the same code under both ------------------------------------------

_SHARED = """
d = tf.constant(np.arange(15, dtype=np.float64).reshape(5, 3) / 7.0)
w = tf.constant(np.linspace(-1.0, 1.0, 9).reshape(3, 3))
out = {}
for name, fn in [("sum", tf.sparse.segment_sum), ("mean", tf.sparse.segment_mean),
                 ("sqrtn", tf.sparse.segment_sqrt_n)]:
    y = fn(d, [0, 3, 3, 1, 4], [0, 0, 2, 2, 2])
    out[name] = y
    out[name + "_grad"] = tf.gradients(tf.reduce_sum(y * w), d)[0]
    z = fn(d, [0, 3], [1, 1], num_segments=4)
    out[name + "_num"] = z
    out[name + "_num_grad"] = tf.gradients(tf.reduce_sum(z * z), d)[0]
vals = tf.constant([5.0, 6.0, 7.0])
st = tf.SparseTensor([[2, 0], [0, 1], [1, 1]], vals, [3, 2])
ro = tf.sparse.reorder(st)
out["reorder_indices"], out["reorder_values"] = ro.indices, ro.values
dense = tf.sparse.to_dense(ro, default_value=-1.0)
out["to_dense"] = dense
out["to_dense_grad"] = tf.gradients(tf.reduce_sum(dense * tf.constant(
    np.arange(6.0, dtype=np.float32).reshape(3, 2))), vals)[0]
default = tf.constant(2.0)
s2d = tf.sparse_to_dense([[0, 1], [2, 0]], [3, 2], [1.0, 4.0], default)
out["sparse_to_dense"] = s2d
out["sparse_to_dense_default_grad"] = tf.gradients(tf.reduce_sum(s2d * 3.0), default)[0]
with tf.Session() as sess:
    vals = sess.run(out)
result = {k: np.asarray(v) for k, v in vals.items()}
"""


@pytest.mark.oracle
def test_matches_tensorflow():
    ours, theirs = oracle.run_both(_SHARED, tf)
    oracle.assert_results_close(ours, theirs, rtol=1e-6, atol=1e-9)
