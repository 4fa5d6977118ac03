"""tf.sparse_placeholder as TensorFlow builds it (a PlaceholderWithDefault dense shape when a
shape is given, names under `name/`), SparseTensor's `*` and `/` with a dense operand
(broadcast onto the sparse shape, only present entries computed), tf.sparse.retain with a mask
of unknown static rank, and a GCN-style program (tkipf/gcn's sparse dropout and sparse-dense
products) that trains. Values against NumPy, gradients by finite differences; the oracle
test runs one program in both.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests import oracle

IDX = np.array([[0, 1], [1, 0], [1, 3], [2, 2]], np.int64)
VALS = np.array([1.0, -2.0, 3.0, 4.0])
SHAPE = [3, 4]


def _dense(values, indices=IDX, shape=SHAPE):
    out = np.zeros(shape)
    out[tuple(indices.T)] = values
    return out


@pytest.mark.parametrize("shape, names, static, feed_shape", [
    # (placeholder shape, (indices, values, shape) names with name="sp", static shape,
    #  dense shape when only indices and values are fed)
    (None, ("sp/indices:0", "sp/values:0", "sp/shape:0"), None, None),
    ([3, 4], ("sp/indices:0", "sp/values:0", "sp/shape:0"), [3, 4], [3, 4]),
    ([3, None], ("sp/indices:0", "sp/values:0", "sp/shape:0"), [3, None], [3, -1]),
    ("tensor", ("sp/indices:0", "sp/values:0", "sp/shape:0"), [3, 4], [3, 4]),
])
def test_sparse_placeholder(shape, names, static, feed_shape):
    with tf.Graph().as_default() as g:
        if shape == "tensor":
            shape = tf.constant([3, 4], dtype=tf.int64)
        sp = tf.sparse_placeholder(tf.float32, shape=shape, name="sp")
        assert (sp.indices.name, sp.values.name, sp.dense_shape.name) == names
        if static is None:
            assert sp.shape.ndims is None
            assert sp.dense_shape.op.type == "Placeholder"
        else:
            assert sp.shape.as_list() == static
            assert sp.dense_shape.op.type == "PlaceholderWithDefault"
            assert sp.indices.shape.as_list() == [None, len(static)]
        total = tf.sparse.reduce_sum(sp)
        with tf.Session() as sess:
            whole = tf.SparseTensorValue(IDX, VALS, [3, 4])
            assert sess.run(total, {sp: whole}) == pytest.approx(VALS.sum())
            if feed_shape is not None:
                got = sess.run(sp.dense_shape, {sp.indices: IDX, sp.values: VALS})
                np.testing.assert_array_equal(got, feed_shape)
            else:
                with pytest.raises(tf.errors.InvalidArgumentError, match="sp/shape"):
                    sess.run(total, {sp.indices: IDX, sp.values: VALS})
        made = [op.name for op in g.get_operations()]
        assert ("sp/shape_default" in made) == isinstance(shape, list)


def test_sparse_placeholder_default_names():
    with tf.Graph().as_default() as g:
        tf.sparse_placeholder(tf.float32, shape=[2, 2])
        tf.sparse_placeholder(tf.float32)
        got = [(op.name, op.type) for op in g.get_operations()]
    assert got == [("Const", "Const"), ("PlaceholderWithDefault", "PlaceholderWithDefault"),
                   ("Placeholder", "Placeholder"), ("Placeholder_1", "Placeholder"),
                   ("Placeholder_2", "Placeholder"), ("Placeholder_3", "Placeholder"),
                   ("Placeholder_4", "Placeholder")]


@pytest.mark.parametrize("op, dense", [
    ("mul", np.float64(2.5)),
    ("mul", np.array([1.0, 2.0, -1.0, 0.5])),          # broadcast along rows
    ("mul", np.array([[2.0], [3.0], [-4.0]])),         # broadcast along columns
    ("mul", np.arange(12.0).reshape(3, 4)),            # full shape
    ("div", np.float64(4.0)),
    ("div", np.array([[1.0, 2.0, 4.0, 8.0]])),
])
def test_sparse_dense_operators(op, dense):
    want = VALS * np.broadcast_to(dense, SHAPE)[tuple(IDX.T)] if op == "mul" else \
        VALS / np.broadcast_to(dense, SHAPE)[tuple(IDX.T)]
    with tf.Graph().as_default():
        sp = tf.SparseTensor(IDX, VALS, SHAPE)
        out = sp * dense if op == "mul" else sp / dense
        assert isinstance(out, tf.SparseTensor)
        with tf.Session() as sess:
            got = sess.run(out)
    np.testing.assert_array_equal(got.indices, IDX)
    np.testing.assert_allclose(got.values, want, rtol=1e-12)
    np.testing.assert_array_equal(got.dense_shape, SHAPE)


@pytest.mark.parametrize("wrt", ["values", "dense"])
@pytest.mark.parametrize("op", ["mul", "div"])
def test_sparse_dense_operator_gradients(wrt, op):
    rng = np.random.default_rng(3)
    dense0 = rng.uniform(1.0, 2.0, (1, 4))
    with tf.Graph().as_default():
        v = tf.placeholder(tf.float64, [4])
        d = tf.placeholder(tf.float64, [1, 4])
        sp = tf.SparseTensor(IDX, v, SHAPE)
        out = sp * d if op == "mul" else sp / d
        loss = tf.reduce_sum(tf.sparse.to_dense(out) * np.arange(1.0, 13.0).reshape(3, 4))
        x, x0, other = (v, VALS, {d: dense0}) if wrt == "values" else (d, dense0, {v: VALS})
        with tf.Session() as sess:
            grad = sess.run(tf.gradients(loss, x)[0], {x: x0, **other})
            eps, numeric = 1e-6, np.zeros_like(x0)
            for i in np.ndindex(x0.shape):
                hi, lo = x0.copy(), x0.copy()
                hi[i] += eps
                lo[i] -= eps
                numeric[i] = (sess.run(loss, {x: hi, **other}) -
                              sess.run(loss, {x: lo, **other})) / (2 * eps)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-7)


def test_sparse_dense_operator_errors():
    with tf.Graph().as_default():
        sp = tf.SparseTensor(IDX, VALS, SHAPE)
        with pytest.raises(ValueError, match="rank 3 exceeds the sparse operand's 2"):
            sp * np.ones((1, 3, 4))
        with pytest.raises(ValueError, match="rank must be known"):
            sp * tf.placeholder(tf.float64)
        with pytest.raises(TypeError, match="must be dense"):
            sp * sp


def test_retain_takes_a_mask_of_unknown_rank():
    with tf.Graph().as_default():
        n = tf.placeholder(tf.int32)
        mask = tf.cast(tf.floor(0.5 + tf.random_uniform(n, seed=1)), tf.bool)
        assert mask.shape.ndims is None
        kept = tf.sparse_retain(tf.SparseTensor(IDX, VALS, SHAPE), mask)
        with tf.Session() as sess:
            m, got = sess.run([mask, kept], {n: [4]})
    np.testing.assert_array_equal(got.indices, IDX[m])
    np.testing.assert_array_equal(got.values, VALS[m])
    with tf.Graph().as_default():
        with pytest.raises(ValueError):
            tf.sparse_retain(tf.SparseTensor(IDX, VALS, SHAPE), [[True, False]])


def test_gcn_style_program_trains():
    """tkipf/gcn's pattern: features and the normalized adjacency fed as sparse
    placeholders with tensor shapes, sparse dropout by sparse_retain and `sp * (1/keep)`,
    sparse-dense products; the loss falls and the feature dropout keeps the right entries."""
    rng = np.random.default_rng(0)
    n, f, c = 12, 8, 3
    feats = (rng.uniform(size=(n, f)) < 0.3).astype(np.float32)
    fi = np.argwhere(feats).astype(np.int64)
    adj = np.eye(n, dtype=np.float32) + np.roll(np.eye(n, dtype=np.float32), 1, 1)
    ai = np.argwhere(adj).astype(np.int64)
    labels = np.eye(c, dtype=np.float32)[rng.integers(0, c, n)]
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        x = tf.sparse_placeholder(tf.float32, shape=tf.constant([n, f], dtype=tf.int64))
        a = tf.sparse_placeholder(tf.float32, shape=tf.constant([n, n], dtype=tf.int64))
        keep = tf.placeholder_with_default(1.0, ())
        nnz = tf.placeholder(tf.int32)
        mask = tf.cast(tf.floor(keep + tf.random_uniform(nnz)), tf.bool)
        dropped = tf.sparse_retain(x, mask) * (1.0 / keep)
        w = tf.Variable(tf.random_normal([f, c], stddev=0.3, seed=2))
        h = tf.sparse_tensor_dense_matmul(a, tf.sparse_tensor_dense_matmul(dropped, w))
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels,
                                                                          logits=h))
        train = tf.train.AdamOptimizer(0.05).minimize(loss)
        feed = {x: (fi, feats[tuple(fi.T)], [n, f]), a: (ai, adj[tuple(ai.T)], [n, n]),
                nnz: [len(fi)]}
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = sess.run(loss, feed)
            for _ in range(60):
                sess.run(train, {**feed, keep: 0.5})
            last = sess.run(loss, feed)
            d = sess.run(dropped, {**feed, keep: 0.5})
    assert last < 0.75 * first
    assert set(map(tuple, d.indices)) <= set(map(tuple, fi))
    np.testing.assert_allclose(d.values, 2.0)


ORACLE_PROGRAM = """
idx = np.array([[0, 1], [1, 0], [1, 3], [2, 2]], np.int64)
vals = np.array([1.0, -2.0, 3.0, 4.0])
sp = tf.sparse_placeholder(tf.float64, shape=[3, None], name="sp")
t = tf.sparse_placeholder(tf.float64, shape=tf.constant([3, 4], dtype=tf.int64))
prod = sp * np.array([[2.0], [3.0], [-4.0]])
quot = t / np.array([1.0, 2.0, 4.0, 8.0])
g = tf.gradients(tf.reduce_sum(prod.values * quot.values), [sp.values, t.values])
with tf.Session() as s:
    r = s.run([sp.dense_shape, t.dense_shape, prod.values, quot.values] + g,
              {sp.indices: idx, sp.values: vals, sp.dense_shape: [3, 5], t.indices: idx,
               t.values: vals})
result = {"names": [sp.indices.name, sp.values.name, sp.dense_shape.name, t.dense_shape.name,
                    str(sp.shape.as_list()), str(t.shape.as_list())],
          "values": [np.asarray(v) for v in r]}
"""


@pytest.mark.oracle
def test_matches_tensorflow():
    ours, theirs = oracle.run_both(ORACLE_PROGRAM, tf)
    assert ours["names"] == theirs["names"]
    for mine, want in zip(ours["values"], theirs["values"], strict=True):
        np.testing.assert_allclose(mine, want, rtol=1e-12)
