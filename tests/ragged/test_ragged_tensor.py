"""tf.RaggedTensor and tf.ragged: factories, views, conversions, Session fetch/feed, errors,
ragged math/reductions/gather/concat, against Python lists and NumPy (TF's values, checked
with the oracle when these tests were written)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf

RT = tf.RaggedTensor


def run(x, feed=None):
    with tf.Session() as sess:
        return sess.run(x, feed)


def as_list(x, feed=None):
    v = run(x, feed)
    return v.to_list() if isinstance(v, tf.ragged.RaggedTensorValue) else v.tolist()


@pytest.fixture(autouse=True)
def _graph():
    with tf.Graph().as_default():
        yield


FACTORIES = [
    ("row_splits", lambda: RT.from_row_splits([1, 2, 3, 4], [0, 2, 2, 4]), [[1, 2], [], [3, 4]]),
    ("row_lengths", lambda: RT.from_row_lengths([1, 2, 3, 4], [2, 0, 2]), [[1, 2], [], [3, 4]]),
    ("value_rowids", lambda: RT.from_value_rowids([1, 2, 3, 4], [0, 0, 2, 2]),
     [[1, 2], [], [3, 4]]),
    ("value_rowids_nrows", lambda: RT.from_value_rowids([1, 2], [0, 0], nrows=3),
     [[1, 2], [], []]),
    ("row_starts", lambda: RT.from_row_starts([1, 2, 3, 4], [0, 2, 2]), [[1, 2], [], [3, 4]]),
    ("row_limits", lambda: RT.from_row_limits([1, 2, 3, 4], [2, 2, 4]), [[1, 2], [], [3, 4]]),
    ("nested_splits", lambda: RT.from_nested_row_splits([1, 2, 3], [[0, 2, 3], [0, 1, 1, 3]]),
     [[[1], []], [[2, 3]]]),
    ("nested_lengths", lambda: RT.from_nested_row_lengths([1, 2, 3], [[2, 1], [1, 0, 2]]),
     [[[1], []], [[2, 3]]]),
    ("tensor", lambda: RT.from_tensor([[1, 2, 0], [3, 0, 0]]), [[1, 2, 0], [3, 0, 0]]),
    ("tensor_padding", lambda: RT.from_tensor([[1, 2, 0], [3, 0, 0]], padding=0),
     [[1, 2], [3]]),
    ("tensor_lengths", lambda: RT.from_tensor([[1, 2, 0], [3, 0, 0]], lengths=[1, 3]),
     [[1], [3, 0, 0]]),
    ("tensor_rank2", lambda: RT.from_tensor(np.arange(8).reshape(2, 2, 2), ragged_rank=2),
     [[[0, 1], [2, 3]], [[4, 5], [6, 7]]]),
    ("tensor_no_columns", lambda: RT.from_tensor(np.zeros([2, 0])), [[], []]),
    ("tensor_rank2_no_columns", lambda: RT.from_tensor(np.zeros([2, 0, 3]), ragged_rank=2),
     [[], []]),
    ("row_lengths_of_tensors", lambda: RT.from_row_lengths(
        [1, 2, 3], [tf.constant(2), tf.constant(1)]), [[1, 2], [3]]),
    ("sparse", lambda: RT.from_sparse(tf.SparseTensor([[0, 0], [0, 1], [2, 0]], [1, 2, 3],
                                                      [3, 4])), [[1, 2], [], [3]]),
    ("constant", lambda: tf.ragged.constant([[1, 2], [3]]), [[1, 2], [3]]),
    ("constant_3d", lambda: tf.ragged.constant([[[1.0, 2]], [[3], [5, 6]]]),
     [[[1.0, 2.0]], [[3.0], [5.0, 6.0]]]),
    ("constant_inner", lambda: tf.ragged.constant([[[1, 2]], [[3, 4], [5, 6]]], ragged_rank=1),
     [[[1, 2]], [[3, 4], [5, 6]]]),
    ("range", lambda: tf.ragged.range([0, 1, 5], [3, 2, 1]), [[0, 1, 2], [1], []]),
    ("range_scalar", lambda: tf.ragged.range(3), [[0, 1, 2]]),
    ("range_delta", lambda: tf.ragged.range([0.0, 1.0], 2.0, 0.5),
     [[0.0, 0.5, 1.0, 1.5], [1.0, 1.5]]),
]


@pytest.mark.parametrize("name,build,want", FACTORIES, ids=[f[0] for f in FACTORIES])
def test_factories(name, build, want):
    assert as_list(build()) == want


def test_properties_and_views():
    rt = tf.ragged.constant([[1, 2], [], [3, 4, 5]])
    assert rt.dtype == tf.int32 and rt.row_splits.dtype == tf.int64
    assert rt.shape.as_list() == [3, None] and rt.ragged_rank == 1
    assert as_list(rt.row_lengths()) == [2, 0, 3]
    assert as_list(rt.row_starts()) == [0, 2, 2]
    assert as_list(rt.row_limits()) == [2, 2, 5]
    assert as_list(rt.value_rowids()) == [0, 0, 2, 2, 2]
    assert run(rt.nrows()) == 3
    assert as_list(rt.bounding_shape()) == [3, 3]
    assert as_list(rt.flat_values) == [1, 2, 3, 4, 5]
    r3 = tf.ragged.constant([[[1], []], [[2, 3]]])
    assert r3.ragged_rank == 2 and len(r3.nested_row_splits) == 2
    assert r3.shape.as_list() == [2, None, None]
    assert [x.tolist() for x in run(list(r3.nested_row_lengths()))] == [[2, 1], [1, 0, 2]]
    assert as_list(r3.merge_dims(0, 1)) == [[1], [], [2, 3]]
    assert as_list(rt[0]) == [1, 2] and as_list(rt[-1]) == [3, 4, 5]
    assert as_list(r3[1]) == [[2, 3]]
    assert as_list(rt.with_flat_values(rt.flat_values * 10)) == [[10, 20], [], [30, 40, 50]]
    assert rt.with_row_splits_dtype(tf.int32).row_splits.dtype == tf.int32
    assert RT.from_row_splits([1, 2], np.array([0, 2], np.int32)).row_splits.dtype == tf.int32


def test_to_tensor_and_to_sparse():
    rt = tf.ragged.constant([[1, 2], [], [3]])
    np.testing.assert_array_equal(run(rt.to_tensor()), [[1, 2], [0, 0], [3, 0]])
    np.testing.assert_array_equal(run(rt.to_tensor(default_value=9, shape=[2, 3])),
                                  [[1, 2, 9], [9, 9, 9]])
    np.testing.assert_array_equal(run(rt.to_tensor(shape=[4, 1])), [[1], [0], [3], [0]])
    r3 = tf.ragged.constant([[[1.0, 2]], [[3], [5, 6]]])
    np.testing.assert_array_equal(run(r3.to_tensor()),
                                  [[[1, 2], [0, 0]], [[3, 0], [5, 6]]])
    s = tf.ragged.constant([["a", "b"], ["c"]])
    assert run(s.to_tensor()).tolist() == [[b"a", b"b"], [b"c", b""]]
    sp = run(rt.to_sparse())
    assert sp.indices.tolist() == [[0, 0], [0, 1], [2, 0]]
    assert sp.values.tolist() == [1, 2, 3] and sp.dense_shape.tolist() == [3, 2]
    sp3 = run(r3.to_sparse())
    assert sp3.indices.tolist() == [[0, 0, 0], [0, 0, 1], [1, 0, 0], [1, 1, 0], [1, 1, 1]]
    empty = RT.from_row_splits(np.zeros([0], np.float32), [0, 0, 0])
    assert run(empty.to_tensor()).shape == (2, 0)


def test_constant_value_and_value_class():
    v = tf.ragged.constant_value([[1, 2], [3]])
    assert isinstance(v, tf.ragged.RaggedTensorValue)
    assert v.values.dtype == np.int64 and v.row_splits.tolist() == [0, 2, 3]
    assert v.to_list() == [[1, 2], [3]] and v.ragged_rank == 1
    assert tf.ragged.constant_value([[1.0], []]).values.dtype == np.float64
    assert str(v) == "<tf.RaggedTensorValue [[1, 2], [3]]>"
    assert tf.ragged.constant([[]]).dtype == tf.float32
    assert tf.ragged.constant([["a"]]).dtype == tf.string
    assert tf.ragged.constant([[1.5]]).dtype == tf.float32


def test_session_fetch_and_feed():
    rt = tf.ragged.constant([[1, 2], [3]])
    v = run(rt)
    assert isinstance(v, tf.ragged.RaggedTensorValue)
    assert v.values.tolist() == [1, 2, 3] and v.row_splits.tolist() == [0, 2, 3]
    fetched = run({"a": rt, "b": [rt.row_splits]})
    assert fetched["a"].to_list() == [[1, 2], [3]]
    p = tf.ragged.placeholder(tf.float32, 1, [])
    assert p.shape.as_list() == [None, None]
    feed = {p: tf.ragged.constant_value([[1.0, 2], [3]])}
    assert as_list(p + 1, feed) == [[2.0, 3.0], [4.0]]
    p2 = tf.ragged.placeholder(tf.int32, 2)
    feed2 = {p2: tf.ragged.constant_value([[[1], []], [[2, 3]]], dtype=tf.int32)}
    assert as_list(tf.reduce_sum(p2.values, axis=1), feed2) == [1, 0, 5]
    with pytest.raises(TypeError):
        run(p + 1, {p: [[1.0]]})
    with pytest.raises(ValueError):
        run(p + 1, {p: tf.ragged.constant_value([[[1.0]]])})


ERRORS = [
    ("splits_rank", lambda: RT.from_row_splits([1, 2, 3], [[0, 2, 3]]), ValueError),
    ("splits_dtype", lambda: RT.from_row_splits([1, 2, 3], [0.0, 2, 3]), ValueError),
    ("scalar_values", lambda: RT.from_row_splits(1, [0, 1]), ValueError),
    ("empty_splits", lambda: RT.from_row_splits([1], np.zeros([0], np.int64)), ValueError),
    ("both", lambda: RT.from_tensor([[1]], lengths=[1], padding=0), ValueError),
    ("ragged_rank", lambda: RT.from_tensor([[1]], ragged_rank=2), ValueError),
    ("depth", lambda: tf.ragged.constant([[1, 2], 3]), ValueError),
    ("inner", lambda: tf.ragged.constant([[[1, 2]], [[3]]], ragged_rank=1), ValueError),
    ("private", lambda: RT([1], [0, 1]), ValueError),
]


@pytest.mark.parametrize("name,build,err", ERRORS, ids=[e[0] for e in ERRORS])
def test_construction_errors(name, build, err):
    with pytest.raises(err):
        build()


RUN_ERRORS = [
    ("not_monotonic", lambda s: RT.from_row_splits([1, 2, 3], s), [0, 2, 1]),
    ("not_zero", lambda s: RT.from_row_splits([1, 2, 3], s), [1, 2, 3]),
    ("nvals", lambda s: RT.from_row_splits([1, 2, 3], s), [0, 1, 2]),
    ("lengths", lambda s: RT.from_row_lengths([1, 2, 3], s), [1, 1]),
    ("rowids", lambda s: RT.from_value_rowids([1, 2, 3], s), [0, 1, 0]),
    ("not_right_ragged", lambda s: RT.from_sparse(tf.SparseTensor(
        tf.stack([s, s], 1), [1, 2, 3], [3, 3])), [0, 1, 2]),
]


@pytest.mark.parametrize("name,build,parts", RUN_ERRORS, ids=[e[0] for e in RUN_ERRORS])
def test_validation_errors_at_run_time(name, build, parts):
    p = tf.placeholder(tf.int64, [None])
    rt = build(p)
    with pytest.raises(tf.errors.InvalidArgumentError):
        run(rt, {p: parts})
    assert as_list(build(p).__class__.from_row_splits([1], [0, 1])) == [[1]]


def test_no_validation():
    p = tf.placeholder(tf.int64, [None])
    rt = RT.from_row_splits([1, 2, 3], p, validate=False)
    assert run(rt.row_splits, {p: [0, 3, 3]}).tolist() == [0, 3, 3]


def test_elementwise_math():
    a = tf.ragged.constant([[1.0, 2], [3]])
    assert as_list(a + a) == [[2.0, 4.0], [6.0]]
    assert as_list(a * 2) == [[2.0, 4.0], [6.0]]
    assert as_list(1 - a) == [[0.0, -1.0], [-2.0]]
    assert as_list(a / 2) == [[0.5, 1.0], [1.5]]
    assert as_list(-a) == [[-1.0, -2.0], [-3.0]]
    assert as_list(tf.add(a, a)) == [[2.0, 4.0], [6.0]]
    assert as_list(tf.math.multiply(a, a)) == [[1.0, 4.0], [9.0]]
    assert as_list(tf.ragged.map_flat_values(tf.square, a)) == [[1.0, 4.0], [9.0]]
    assert as_list(tf.ragged.map_flat_values(tf.add, a, 1.0)) == [[2.0, 3.0], [4.0]]
    assert as_list(tf.add([1, 2], 1)) == [2, 3]  # dense calls are unchanged


def test_reductions():
    r = tf.ragged.constant([[1, 2], [3]])
    f = tf.ragged.constant([[1.0, 2], []])
    assert as_list(tf.reduce_sum(r, axis=1)) == [3, 3]
    assert run(tf.reduce_sum(r)) == 6
    assert as_list(tf.reduce_sum(r, axis=0)) == [4, 2]
    m = run(tf.reduce_mean(f, axis=1))
    assert m[0] == 1.5 and np.isnan(m[1])
    assert as_list(tf.reduce_max(f, axis=1)) == [2.0, float(np.finfo(np.float32).min)]
    assert as_list(tf.reduce_min(r, axis=1)) == [1, 3]
    assert as_list(tf.reduce_sum(r, axis=1, keepdims=True)) == [[3], [3]]


def test_gather_concat_stack_mask():
    r = tf.ragged.constant([[1, 2], [3]])
    assert as_list(tf.gather(r, [1, 0, 1])) == [[3], [1, 2], [3]]
    r3 = tf.ragged.constant([[[1], []], [[2, 3]]])
    assert as_list(tf.gather(r3, [1, 1])) == [[[2, 3]], [[2, 3]]]
    assert as_list(tf.concat([r, r], axis=0)) == [[1, 2], [3], [1, 2], [3]]
    assert as_list(tf.concat([r, r], axis=1)) == [[1, 2, 1, 2], [3, 3]]
    assert as_list(tf.ragged.stack([r, r])) == [[[1, 2], [3]], [[1, 2], [3]]]
    mask = tf.ragged.constant([[True, False], [True]])
    assert as_list(tf.ragged.boolean_mask(r, mask)) == [[1], [3]]
    assert as_list(tf.ragged.boolean_mask(r, [True, False])) == [[1, 2]]


def test_segment_ids_and_splits():
    assert as_list(tf.ragged.segment_ids_to_row_splits([0, 0, 2])) == [0, 2, 2, 3]
    assert as_list(tf.ragged.segment_ids_to_row_splits([0, 0], num_segments=3)) == [0, 2, 2, 2]
    assert as_list(tf.ragged.row_splits_to_segment_ids([0, 2, 2, 3])) == [0, 0, 2]


def test_row_slices_and_uniform_rows():
    r = tf.ragged.constant([[1, 2], [3], [4, 5, 6]])
    assert as_list(r[1:]) == [[3], [4, 5, 6]]
    assert as_list(r[:2]) == [[1, 2], [3]]
    assert as_list(r[-2:]) == [[3], [4, 5, 6]]
    assert as_list(r[:-1]) == [[1, 2], [3]]
    assert as_list(r[1:1]) == []
    r3 = tf.ragged.constant([[[1, 2]], [[3]], [[4], [5, 6]]])
    assert as_list(r3[1:]) == [[[3]], [[4], [5, 6]]]
    assert as_list(r[::2]) == [[1, 2], [4, 5, 6]]
    assert as_list(RT.from_uniform_row_length([1, 2, 3, 4], 2)) == [[1, 2], [3, 4]]
    assert as_list(RT.from_uniform_row_length(np.zeros([0], np.int32), 0, nrows=2)) == [[], []]


def test_dense_broadcasting_and_splits_checks():
    r = tf.ragged.constant([[1, 2], [3], [4, 5, 6]])
    assert as_list(r + tf.constant([[1], [2], [3]])) == [[2, 3], [5], [7, 8, 9]]
    assert as_list(r * tf.constant([[10]])) == [[10, 20], [30], [40, 50, 60]]
    assert as_list(r + tf.ragged.constant([[1, 1], [2], [4, 5, 6]])) == [
        [2, 3], [5], [8, 10, 12]]
    with pytest.raises(tf.errors.InvalidArgumentError):
        as_list(r + tf.ragged.constant([[1], [2, 3], [4, 5, 6]]))
    with pytest.raises(tf.errors.InvalidArgumentError):  # rows of lengths 2, 1, 3 vs 3
        as_list(r + tf.constant([1, 2, 3]))
    inner = tf.ragged.constant([[[1, 2]], [[3, 4], [5, 6]]], ragged_rank=1)
    assert as_list(inner + tf.constant([10, 20])) == [[[11, 22]], [[13, 24], [15, 26]]]


def test_reductions_on_other_axes():
    r3 = tf.ragged.constant([[[1, 2]], [[3]], [[4], [5, 6]]])
    assert as_list(tf.reduce_sum(r3, axis=2)) == [[3], [3], [4, 11]]
    assert as_list(tf.reduce_max(r3, axis=-1)) == [[2], [3], [4, 6]]
    inner = tf.ragged.constant([[[1, 2]], [[3, 4], [5, 6]]], ragged_rank=1)
    assert as_list(tf.reduce_sum(inner, axis=2)) == [[3], [7, 11]]
    assert as_list(tf.reduce_sum(inner, axis=1)) == [[1, 2], [8, 10]]


def test_gradients_flow_through_ragged_ops():
    v = tf.placeholder(tf.float32, [None])
    rt = RT.from_row_lengths(v, [2, 1])
    loss = tf.reduce_sum(tf.reduce_max(rt * rt, axis=1))
    (g,) = tf.gradients(loss, v)
    assert run(g, {v: [1.0, 5.0, 2.0]}).tolist() == [0.0, 10.0, 4.0]
    dense = tf.placeholder(tf.float32, [2, 3])
    (g2,) = tf.gradients(tf.reduce_sum(RT.from_tensor(dense, lengths=[1, 2]).flat_values),
                         dense)
    assert run(g2, {dense: np.ones([2, 3])}).tolist() == [[1, 0, 0], [1, 1, 0]]


@pytest.mark.oracle
def test_against_tensorflow():
    from tests import oracle
    program = """
    RT = tf.RaggedTensor
    r = tf.ragged.constant([[1, 2], [], [3, 4, 5]])
    r3 = tf.ragged.constant([[[1.0, 2]], [[3], [5, 6]], []])
    parts = {
        "splits": RT.from_row_splits([1, 2, 3, 4], [0, 2, 2, 4]),
        "rowids": RT.from_value_rowids([1, 2, 3], [0, 2, 2], nrows=4),
        "starts": RT.from_row_starts([1, 2, 3], [0, 0, 1]),
        "padding": RT.from_tensor([[1, 2, 0], [0, 0, 0], [3, 0, 4]], padding=0),
        "lengths": RT.from_tensor([[1, 2, 0], [3, 0, 0]], lengths=[3, 1]),
        "sparse": RT.from_sparse(tf.SparseTensor([[0, 0], [2, 0]], [7, 8], [3, 2])),
        "range": tf.ragged.range([0, 2, 4], [3, 2, 10], [1, 1, 3]),
        "dense": r.to_tensor(default_value=-1),
        "dense3": r3.to_tensor(),
        "shaped": r.to_tensor(shape=[2, 2]),
        "bounding": r3.bounding_shape(),
        "lens": r.row_lengths(),
        "rowids_of": r.value_rowids(),
        "sum1": tf.reduce_sum(r, axis=1),
        "sum0": tf.reduce_sum(r, axis=0),
        "min1": tf.reduce_min(r, axis=1),
        "sum2": tf.reduce_sum(r3, axis=2),
        "gather": tf.gather(r, [2, 0]),
        "concat0": tf.concat([r, r], axis=0),
        "concat1": tf.concat([r, r], axis=1),
        "stack": tf.ragged.stack([r, r]),
        "mask": tf.ragged.boolean_mask(r, [True, False, True]),
        "math": r * 2 + r,
        "slice": r[1:],
        "row": r[2],
        "seg": tf.ragged.segment_ids_to_row_splits([0, 1, 1, 3]),
    }
    with tf.Session() as sess:
        out = sess.run(parts)
    result = {k: (v.to_list() if hasattr(v, "to_list") else v.tolist()) for k, v in out.items()}
    """
    ours, theirs = oracle.run_both(program, tf)
    assert ours == theirs


CROSS_PROGRAM = """
a = tf.ragged.constant([["a", "b"], ["c"], []])
b = tf.ragged.constant([["x"], ["y", "z"], ["w"]])
d = tf.constant([["1"], ["2"], ["3"]])
ia = tf.ragged.constant([[1, 2], [3], []], dtype=tf.int64)
parts = {
    "cross": tf.ragged.cross([a, b]),
    "cross_dense": tf.ragged.cross([d, a, b]),
    "hashed": tf.ragged.cross_hashed([a, ia], num_buckets=100),
    "sdp": tf.ragged.stack_dynamic_partitions([10, 20, 30, 40, 50], [1, 0, 1, 3, 0], 4),
    "sdp2": tf.ragged.stack_dynamic_partitions([[1, 2], [3, 4]], [1, 1], 2),
}
with tf.Session() as sess:
    out = sess.run(parts)
result = {k: (v.to_list() if hasattr(v, "to_list") else v.tolist()) for k, v in out.items()}
result = json.loads(json.dumps(result, default=lambda b: b.decode()))
"""

# TensorFlow 2.21's answers to CROSS_PROGRAM.
CROSS_WANT = {
    "cross": [["a_X_x", "b_X_x"], ["c_X_y", "c_X_z"], []],
    "cross_dense": [["1_X_a_X_x", "1_X_b_X_x"], ["2_X_c_X_y", "2_X_c_X_z"], []],
    "hashed": [[85, 87, 83, 57], [94], []],
    "sdp": [[20, 50], [10, 30], [], [40]],
    "sdp2": [[], [[1, 2], [3, 4]]],
}


def test_cross_and_stack_dynamic_partitions():
    import json
    scope = {"tf": tf, "json": json}
    exec(CROSS_PROGRAM, scope)  # noqa: S102 - the program the oracle test runs too
    assert scope["result"] == CROSS_WANT
    p = tf.placeholder(tf.int32, [None])
    out = tf.ragged.stack_dynamic_partitions([1, 2], p, 2)
    with pytest.raises(tf.errors.InvalidArgumentError):
        run(out, {p: [0, 2]})


@pytest.mark.oracle
def test_cross_against_tensorflow():
    from tests import oracle
    ours, theirs = oracle.run_both(CROSS_PROGRAM, tf)
    assert ours == theirs == CROSS_WANT


def test_elementwise_dispatch():
    r = tf.ragged.constant([[1.0, -2], [3]])
    s = tf.ragged.constant([["Ab", "c"], []])
    assert as_list(tf.abs(r)) == [[1.0, 2.0], [3.0]]
    assert as_list(tf.cast(r, tf.int32)) == [[1, -2], [3]]
    assert as_list(tf.math.square(r)) == [[1.0, 4.0], [9.0]]
    assert as_list(tf.equal(r, 3.0)) == [[False, False], [True]]
    assert as_list(tf.math.less(r, r + 1)) == [[True, True], [True]]
    assert as_list(tf.clip_by_value(r, 0.0, 2.0)) == [[1.0, 0.0], [2.0]]
    assert as_list(tf.strings.length(s)) == [[2, 1], []]
    assert as_list(tf.strings.lower(s)) == [[b"ab", b"c"], []]
    assert as_list(tf.strings.substr(s, 0, 1)) == [[b"A", b"c"], []]
    assert as_list(tf.abs([-1])) == [1]  # dense calls are unchanged


def test_ragged_fill_empty_rows():
    # TensorFlow 2.21's answers for the same calls.
    o = run(tf.ragged_fill_empty_rows([0, 0, 2], [1.0, 2, 3], 4, -1.0))
    assert o.output_value_rowids.tolist() == [0, 0, 1, 2, 3]
    assert o.output_values.tolist() == [1.0, 2.0, -1.0, 3.0, -1.0]
    assert o.empty_row_indicator.tolist() == [False, True, False, True]
    assert o.reverse_index_map.tolist() == [0, 1, 3]
    g = run(tf.ragged_fill_empty_rows_grad([0, 1, 3], [1.0, 2, 3, 4, 5]))
    assert g.d_values.tolist() == [1.0, 2.0, 4.0] and g.d_default_value == 8.0
    e = run(tf.ragged_fill_empty_rows(tf.zeros([0], tf.int64), tf.zeros([0]), 2, 7.0))
    assert e.output_values.tolist() == [7.0, 7.0] and e.reverse_index_map.tolist() == []
