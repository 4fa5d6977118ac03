"""Sharded embeddings (tensorflux/nn/embedding_ops.py) and partitioned variables
(tensorflux/variables/partitioned_variables.py, variable_scope.py): lookups over one tensor, lists
of tensor or variable shards and PartitionedVariables with the "mod" and "div" strategies
against a NumPy reference; gradients reaching each shard as IndexedSlices and optimizers
updating only the looked-up rows; ids out of range; partitioners and `get_variable(
partitioner=...)` with TensorFlow's names and errors; `embedding_lookup_sparse` with every
combiner; and an oracle comparison on shared code.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests import oracle

# ---- reference -----------------------------------------------------------------------------


def shard_of(i: int, sizes: list[int], strategy: str) -> tuple[int, int]:
    """(shard, row) of id `i`, straight from the definitions of the two strategies."""
    n = len(sizes)
    if strategy == "mod":
        return i % n, i // n
    total = sum(sizes)
    per, extras = total // n, total % n
    bounds = np.cumsum([per + (1 if p < extras else 0) for p in range(n)])
    p = int(np.searchsorted(bounds, i, side="right"))
    return p, i - (int(bounds[p - 1]) if p else 0)


def ref_lookup(shards, ids, strategy="mod", max_norm=None):
    sizes = [s.shape[0] for s in shards]
    flat = [shards[p][r] for p, r in (shard_of(int(i), sizes, strategy)
                                      for i in np.ravel(ids))]
    out = np.array(flat).reshape(np.shape(ids) + shards[0].shape[1:])
    if max_norm is not None:
        axes = tuple(range(np.ndim(ids), out.ndim))
        norm = np.sqrt(np.sum(out.astype(np.float64) ** 2, axis=axes, keepdims=True))
        out = (out * max_norm / np.maximum(norm, max_norm)).astype(out.dtype)
    return out


def make_shards(sizes, dim=3, dtype=np.float32):
    return [(np.arange(n * dim).reshape(n, dim) + 100 * k).astype(dtype)
            for k, n in enumerate(sizes)]


def densify(value):
    out = np.zeros(tuple(value.dense_shape), value.values.dtype)
    np.add.at(out, value.indices, value.values)
    return out


# ---- lookups -------------------------------------------------------------------------------

LOOKUPS = [  # (name, shard sizes, strategy, ids, max_norm, how params are given)
    ("single_tensor", [7], "mod", [[0, 6], [3, 3]], None, "tensor"),
    ("single_variable", [7], "mod", [2, 5, 2], None, "variable"),
    ("mod_equal", [4, 4, 4], "mod", [0, 1, 2, 3, 11, 5], None, "tensor"),
    ("div_equal", [4, 4, 4], "div", [0, 1, 2, 3, 11, 5], None, "tensor"),
    ("mod_uneven", [4, 3, 3], "mod", [[9, 0], [4, 4]], None, "tensor"),
    ("div_uneven", [4, 3, 3], "div", [9, 0, 4, 3, 7, 6], None, "tensor"),
    ("div_variables", [3, 2, 2], "div", [6, 0, 3, 5], None, "variable"),
    ("mod_variables", [3, 2, 2], "mod", [[6, 0], [3, 5]], None, "variable"),
    ("max_norm", [4, 4, 4], "mod", [[0, 1], [5, 7]], 1.0, "tensor"),
    ("scalar_id", [2, 2], "mod", 3, None, "tensor"),
    ("empty_ids", [2, 2], "div", np.zeros([0], np.int32), None, "tensor"),
]


def _params(shards, kind):
    if kind == "tensor":
        return [tf.constant(s) for s in shards]
    return [tf.Variable(s, name=f"shard{k}") for k, s in enumerate(shards)]


@pytest.mark.parametrize("ids_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("case", LOOKUPS, ids=[c[0] for c in LOOKUPS])
def test_lookup_matches_reference(case, ids_dtype):
    _, sizes, strategy, ids, max_norm, kind = case
    shards = make_shards(sizes)
    ids = np.asarray(ids, ids_dtype)
    with tf.Graph().as_default():
        params = _params(shards, kind)
        if len(params) == 1:
            params = params[0]
        fed = tf.placeholder(ids_dtype, None)
        out_static = tf.nn.embedding_lookup(params, ids, partition_strategy=strategy,
                                            max_norm=max_norm)
        out_fed = tf.nn.embedding_lookup(params, fed, partition_strategy=strategy,
                                         max_norm=max_norm)
        assert out_static.shape.as_list() == list(ids.shape) + [3]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got, got_fed = sess.run([out_static, out_fed], {fed: ids})
    want = ref_lookup(shards, ids, strategy, max_norm)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(got_fed, want, rtol=1e-6)


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_shards_of_unknown_static_shape(strategy):
    """Row counts and element dims read at run time (Shape ops) when the graph cannot say."""
    shards = make_shards([4, 3, 3])
    ids = np.array([[9, 0, 4], [3, 7, 6]], np.int32)
    with tf.Graph().as_default():
        params = [tf.placeholder(tf.float32, [None, None]) for _ in shards]
        out = tf.nn.embedding_lookup(params, ids, partition_strategy=strategy)
        assert out.shape.as_list() == [2, 3, None]
        with tf.Session() as sess:
            got = sess.run(out, dict(zip(params, shards, strict=True)))
            with pytest.raises(tf.errors.InvalidArgumentError, match="ids out of range"):
                sess.run(tf.nn.embedding_lookup(params, [10], partition_strategy=strategy),
                         dict(zip(params, shards, strict=True)))
    np.testing.assert_array_equal(got, ref_lookup(shards, ids, strategy))


def test_sharded_lookup_is_figure_3():
    """DynamicPartition of ids and positions, one gather per shard, ParallelDynamicStitch."""
    with tf.Graph().as_default() as g:
        params = _params(make_shards([3, 3]), "variable")
        out = tf.nn.embedding_lookup(params, [0, 1, 2], name="emb")
        types = [op.type for op in g.get_operations() if op.name.startswith("emb")]
    assert types.count("DynamicPartition") == 2
    assert types.count("ResourceGather") == 2
    assert g.get_operation_by_name("emb").type == "ParallelDynamicStitch"
    assert out.op.type == "Reshape"


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_gradients_reach_each_shard_as_indexed_slices(strategy):
    shards = make_shards([3, 2, 2])
    ids = np.array([[6, 0], [3, 6]], np.int32)
    weights = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    with tf.Graph().as_default():
        params = _params(shards, "variable")
        out = tf.nn.embedding_lookup(params, ids, partition_strategy=strategy)
        grads = tf.gradients(tf.reduce_sum(out * weights), params)
        assert all(isinstance(gr, tf.IndexedSlices) for gr in grads)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = sess.run(grads)
    want = [np.zeros_like(s) for s in shards]
    for i, w in zip(ids.ravel(), weights.reshape(-1, 3), strict=True):
        p, r = shard_of(int(i), [3, 2, 2], strategy)
        want[p][r] += w
    for k, (gv, w) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(densify(gv), w, err_msg=f"shard {k}")
        looked_up = {shard_of(int(i), [3, 2, 2], strategy) for i in ids.ravel()}
        assert set(gv.indices.tolist()) == {r for p, r in looked_up if p == k}


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_gradient_checker_through_tensor_shards(strategy):
    ids = np.array([4, 0, 2, 4, 1], np.int32)
    with tf.Graph().as_default(), tf.Session():
        p0 = tf.placeholder(tf.float64, [3, 2])
        p1 = tf.placeholder(tf.float64, [2, 2])
        out = tf.nn.embedding_lookup([p0, p1], ids, partition_strategy=strategy)
        y = out * np.linspace(1.0, 2.0, 10).reshape(5, 2)
        init = {p0: np.ones((3, 2)), p1: np.full((2, 2), 2.0)}
        for p, shape in ((p0, [3, 2]), (p1, [2, 2])):
            other = {q: v for q, v in init.items() if q is not p}
            err = tf.test.compute_gradient_error(p, shape, y, [5, 2], x_init_value=init[p],
                                                 extra_feed_dict=other)
            assert err < 1e-8


@pytest.mark.parametrize("optimizer", [
    lambda: tf.train.GradientDescentOptimizer(0.5),
    lambda: tf.train.AdagradOptimizer(0.5),
    lambda: tf.train.AdamOptimizer(0.5),
    lambda: tf.train.MomentumOptimizer(0.5, 0.9),
], ids=["sgd", "adagrad", "adam", "momentum"])
def test_optimizer_updates_only_looked_up_rows_of_each_shard(optimizer):
    shards = make_shards([4, 3, 3])
    ids = np.array([1, 9, 9, 4], np.int32)  # div: shard 0 row 1, shard 2 row 2, shard 1 row 0
    with tf.Graph().as_default():
        with tf.variable_scope("emb", partitioner=tf.fixed_size_partitioner(3)):
            w = tf.get_variable("w", [10, 3], initializer=tf.zeros_initializer())
        loss = tf.reduce_sum(tf.square(tf.nn.embedding_lookup(w, ids,
                                                              partition_strategy="div")))
        train = optimizer().minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(w.assign(np.concatenate(shards)))
            sess.run(train)
            after = sess.run(list(w))
    for k, (before, now) in enumerate(zip(shards, after, strict=True)):
        changed = set(np.flatnonzero(np.any(before != now, axis=1)).tolist())
        want = {r for p, r in (shard_of(int(i), [4, 3, 3], "div") for i in ids) if p == k}
        assert changed == want, f"shard {k}: rows {changed} changed, expected {want}"


# ---- ids out of range ----------------------------------------------------------------------

OUT_OF_RANGE = [  # (name, sizes, strategy, ids, message regex)
    # Assert prints string data C-escaped, as TensorFlow's kernel does (' becomes \').
    ("mod", [4, 4, 4], "mod", [0, 12],
     r"embedding_lookup: ids out of range:\] \[12\] \[map to shards\] \[0\] \[rows\] \[4\] "
     r"\[but the 3 shards have \[4, 4, 4\] rows \(partition_strategy \\'mod\\'\)"),
    ("div", [4, 4, 4], "div", [13, 1, 12],
     r"ids out of range:\] \[13 12\] \[map to shards\] \[3 3\]"),
    ("negative", [4, 4, 4], "mod", [-1],
     r"ids out of range:\] \[-1\] \[map to shards\] \[2\]"),
    ("uneven_mod_hole", [2, 4, 4], "mod", [6, 3],
     r"ids out of range:\] \[6\] \[map to shards\] \[0\] \[rows\] \[2\]"),
    ("single", [4], "mod", [0, 7], r"indices\[1\] = 7 is not in \[0, 4\)"),
]


@pytest.mark.parametrize("kind", ["tensor", "variable"])
@pytest.mark.parametrize("case", OUT_OF_RANGE, ids=[c[0] for c in OUT_OF_RANGE])
def test_ids_out_of_range_name_the_id_and_shard(case, kind):
    _, sizes, strategy, ids, message = case
    with tf.Graph().as_default():
        params = _params(make_shards(sizes), kind)
        fed = tf.placeholder(tf.int32, [None])
        out = tf.nn.embedding_lookup(params if len(params) > 1 else params[0], fed,
                                     partition_strategy=strategy)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with pytest.raises(tf.errors.InvalidArgumentError, match=message):
                sess.run(out, {fed: ids})
            sess.run(out, {fed: [0, 1]})  # the session still works


def test_without_validation_the_shard_gather_reports_its_row():
    """TensorFlow's behaviour: the shard-local row, not the id, is named."""
    with tf.Graph().as_default():
        params = _params(make_shards([4, 4, 4]), "tensor")
        out = tf.nn.embedding_lookup(params, [0, 12], validate_indices=False)
        with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                                 match=r"indices\[1\] = 4 is not in \[0, 4\)"):
            sess.run(out)


def test_bad_arguments():
    with tf.Graph().as_default():
        params = _params(make_shards([2, 2]), "tensor")
        with pytest.raises(ValueError, match="Length of params is currently 0"):
            tf.nn.embedding_lookup([], [0])
        with pytest.raises(ValueError, match="params must be specified"):
            tf.nn.embedding_lookup(None, [0])
        with pytest.raises(ValueError, match="Unrecognized partition strategy: foo.Must be one "
                           "of either `mod` or `div`."):
            tf.nn.embedding_lookup(params, [0], partition_strategy="foo")


# ---- partitioners --------------------------------------------------------------------------

PARTITIONERS = [  # (name, partitioner, shape, dtype, expected partitions)
    ("fixed", tf.fixed_size_partitioner(3), [10, 4], tf.float32, [3, 1]),
    ("fixed_more_than_rows", tf.fixed_size_partitioner(5), [2, 2], tf.float32, [2, 1]),
    ("fixed_axis1", tf.fixed_size_partitioner(2, axis=1), [2, 5], tf.float32, [1, 2]),
    ("axis_size", tf.variable_axis_size_partitioner(1000), [100, 10], tf.float32, [4, 1]),
    ("axis_size_max", tf.variable_axis_size_partitioner(1000, max_shards=2), [100, 10],
     tf.float32, [2, 1]),
    ("axis_size_string", tf.variable_axis_size_partitioner(64), [10, 2], tf.string, [5, 1]),
    ("min_max", tf.min_max_variable_partitioner(4, min_slice_size=1000), [100, 10],
     tf.float32, [4, 1]),
    ("min_max_small", tf.min_max_variable_partitioner(4, min_slice_size=1 << 20), [100, 10],
     tf.float32, [1, 1]),
]


@pytest.mark.parametrize("partitioner,shape,dtype,want", [p[1:] for p in PARTITIONERS],
                         ids=[p[0] for p in PARTITIONERS])
def test_partitioners(partitioner, shape, dtype, want):
    assert partitioner(shape=tf.TensorShape(shape), dtype=dtype) == want


def test_partitioner_argument_errors():
    with pytest.raises(ValueError, match="Both max_shard_bytes and bytes_per_string_element "
                       "must be positive"):
        tf.variable_axis_size_partitioner(0)
    with pytest.raises(ValueError, match="max_shards must be positive."):
        tf.variable_axis_size_partitioner(10, max_shards=-1)
    with pytest.raises(ValueError, match="Cannot partition variable along axis 2"):
        tf.min_max_variable_partitioner(2, axis=2)(shape=tf.TensorShape([3, 3]),
                                                   dtype=tf.float32)


# ---- partitioned variables -----------------------------------------------------------------


def test_get_variable_with_scope_partitioner():
    with tf.Graph().as_default():
        with tf.variable_scope("emb", partitioner=tf.fixed_size_partitioner(3)):
            w = tf.get_variable("w", [10, 4], initializer=tf.ones_initializer())
        assert isinstance(w, tf.PartitionedVariable)
        assert w.name == "emb/w" and w.get_shape().as_list() == [10, 4] and len(w) == 3
        assert w.dtype == tf.float32 and w._get_partitions() == [3, 1]
        assert [(v.name, v.shape.as_list()) for v in w] == [
            ("emb/w/part_0:0", [4, 4]), ("emb/w/part_1:0", [3, 4]), ("emb/w/part_2:0", [3, 4])]
        assert [v._get_save_slice_info().var_offset for v in w] == [[0, 0], [4, 0], [7, 0]]
        assert list(w)[1]._get_save_slice_info().spec == "10 4 4,3:0,4"
        assert [v.name for v in tf.trainable_variables()] == [v.name for v in w]
        assert [v.name for v in tf.global_variables()] == [v.name for v in w]
        t = w.as_tensor()
        assert t.name == "emb/w:0" and t.shape.as_list() == [10, 4]
        with tf.variable_scope("emb", reuse=True):
            assert tf.get_variable("w") is w
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(tf.convert_to_tensor(w)), np.ones((10, 4)))
            sess.run(w.assign(np.arange(40.0).reshape(10, 4)))
            np.testing.assert_array_equal(sess.run(list(w)[2]), np.arange(28.0, 40).reshape(3, 4))


def test_partitioned_initializers_slice_values_and_use_the_full_shape():
    full = np.arange(14.0).reshape(7, 2)
    with tf.Graph().as_default():
        a = tf.get_variable("a", initializer=tf.constant(full),
                            partitioner=tf.fixed_size_partitioner(3))
        b = tf.get_variable("b", [7, 2], initializer=tf.constant_initializer(5.0),
                            partitioner=tf.fixed_size_partitioner(2, axis=1))
        seen = []

        def recording(shape, dtype=None, partition_info=None):
            seen.append((list(shape), partition_info.full_shape, partition_info.var_offset))
            return tf.zeros(shape, dtype)

        tf.get_variable("c", [5, 2], initializer=recording,
                        partitioner=tf.fixed_size_partitioner(2))
        assert a.dtype == tf.float64 and [v.shape.as_list() for v in a] == [[3, 2], [2, 2],
                                                                             [2, 2]]
        assert [v.name for v in b] == ["b/part_0:0", "b/part_1:0"]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(a.as_tensor()), full)
            np.testing.assert_array_equal(sess.run(b.as_tensor()), np.full((7, 2), 5.0))
    assert seen == [([3, 2], [5, 2], [0, 0]), ([2, 2], [5, 2], [3, 0])]


PARTITION_ERRORS = [
    ("scalar_is_plain", lambda: tf.get_variable("s", [], partitioner=tf.fixed_size_partitioner(
        2)), None),
    ("unknown_shape", lambda: tf.get_variable("u", [None, 2],
                                              partitioner=tf.fixed_size_partitioner(2)),
     r"Shape of a new partitioned variable must be fully defined, but instead was \(\?, 2\)."),
    ("numpy_value_no_shape", lambda: tf.get_variable(
        "n", initializer=np.ones((4, 2)), partitioner=tf.fixed_size_partitioner(2)),
     "Shape of a new partitioned variable must be fully defined, but instead was <unknown>."),
    ("two_axes", lambda: tf.get_variable("b", [4, 2], partitioner=lambda shape, dtype: [2, 2]),
     r"Can only slice a variable along one dimension: shape: \(4, 2\), partitioning: \[2, 2\]"),
    ("wrong_rank", lambda: tf.get_variable("b", [4, 2], partitioner=lambda shape, dtype: [2]),
     r"Partitioner returned a partition list that does not match the Variable's rank: \[2\] "
     r"vs. \(4, 2\)"),
    ("zero", lambda: tf.get_variable("b", [4, 2], partitioner=lambda shape, dtype: [0, 1]),
     r"Partitioner returned zero partitions for some axes: \[0, 1\]"),
    ("not_callable", lambda: tf.get_variable("b", [4, 2], partitioner=5),
     "Partitioner must be callable, but received: 5"),
]


@pytest.mark.parametrize("build,message", [e[1:] for e in PARTITION_ERRORS],
                         ids=[e[0] for e in PARTITION_ERRORS])
def test_partitioned_variable_errors(build, message):
    with tf.Graph().as_default():
        if message is None:
            assert isinstance(build(), tf.Variable)
            return
        with pytest.raises(ValueError, match=message):
            build()


def test_reuse_rules_of_partitioned_variables():
    part3 = tf.fixed_size_partitioner(3)
    with tf.Graph().as_default():
        with tf.variable_scope("emb"):
            tf.get_variable("w", [10, 4], partitioner=part3)
        cases = [
            (False, lambda: tf.get_variable("w", [10, 4], partitioner=part3),
             "Partitioned variable with name emb/w already exists. Did you mean to set "
             "reuse=True or reuse=tf.AUTO_REUSE in VarScope?"),
            (False, lambda: tf.get_variable("w", [10, 4]),
             "No partitioner was provided, but a partitioned version of the variable was "
             "found: emb/w/part_0."),
            (True, lambda: tf.get_variable("w", [10, 4],
                                           partitioner=tf.fixed_size_partitioner(2)),
             r"Trying to reuse partitioned variable emb/w, but specified partitions \[2, 1\] "
             r"and found partitions \[3, 1\]."),
            (True, lambda: tf.get_variable("w", [11, 4], partitioner=part3),
             r"Trying to reuse partitioned variable emb/w, but specified shape \(11, 4\) and "
             r"found shape \(10, 4\)."),
            (True, lambda: tf.get_variable("zz", [11, 4], partitioner=part3),
             "PartitionedVariable emb/zz does not exist, or was not created with "
             "tf.get_variable()."),
        ]
        for reuse, build, message in cases:
            with tf.variable_scope("emb", reuse=reuse or None), \
                    pytest.raises(ValueError, match=message):
                build()
        with tf.variable_scope("plain"):
            tf.get_variable("v", [4, 2])
            with pytest.raises(ValueError, match="A partitioner was provided, but an "
                               "unpartitioned version of the variable was found: plain/v"):
                tf.get_variable("v", [4, 2], partitioner=part3)
        with tf.variable_scope("emb", reuse=tf.AUTO_REUSE):
            assert isinstance(tf.get_variable("w", [10, 4], partitioner=part3),
                              tf.PartitionedVariable)


def test_partitioned_variable_in_optimizer_var_list():
    with tf.Graph().as_default():
        w = tf.get_variable("w", [6, 2], initializer=tf.ones_initializer(),
                            partitioner=tf.fixed_size_partitioner(2))
        loss = tf.reduce_sum(tf.nn.embedding_lookup(w, [0, 5], partition_strategy="div"))
        opt = tf.train.GradientDescentOptimizer(1.0)
        pairs = opt.compute_gradients(loss, var_list=[w])
        assert [v.name for _, v in pairs] == ["w/part_0:0", "w/part_1:0"]
        train = opt.minimize(loss, var_list=w)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train)
            got = sess.run(w.as_tensor())
    want = np.ones((6, 2))
    want[[0, 5]] = 0.0
    np.testing.assert_array_equal(got, want)


# ---- embedding_lookup_sparse ---------------------------------------------------------------

SP_INDICES = [[0, 0], [0, 1], [2, 0], [2, 1], [2, 2]]
SP_IDS = [1, 4, 9, 1, 1]
SP_WEIGHTS = [1.0, 2.0, 0.5, 1.0, 1.0]


def ref_sparse(full_lookup, combiner, weighted):
    rows = []
    for r in range(3):
        picks = [k for k, ix in enumerate(SP_INDICES) if ix[0] == r]
        if not picks:
            rows.append(np.zeros(2))
            continue
        w = [SP_WEIGHTS[k] if weighted else 1.0 for k in picks]
        e = sum(full_lookup(SP_IDS[k]) * wk for k, wk in zip(picks, w, strict=True))
        scale = {"sum": 1.0, "mean": sum(w), "sqrtn": np.sqrt(sum(x * x for x in w))}[combiner]
        rows.append(e / scale)
    return np.array(rows)


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_embedding_lookup_sparse(strategy, combiner, weighted):
    shards = make_shards([4, 3, 3], dim=2)
    with tf.Graph().as_default():
        params = _params(shards, "variable")
        sp_ids = tf.SparseTensor(SP_INDICES, tf.constant(SP_IDS, tf.int64), [4, 3])
        sp_w = tf.SparseTensor(SP_INDICES, SP_WEIGHTS, [4, 3]) if weighted else None
        out = tf.nn.embedding_lookup_sparse(params, sp_ids, sp_w, partition_strategy=strategy,
                                            combiner=combiner)
        grads = tf.gradients(tf.reduce_sum(out), params)
        assert all(gr is None or isinstance(gr, tf.IndexedSlices) for gr in grads)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got, grad_values = sess.run([out, [gr for gr in grads if gr is not None]])
    sizes = [4, 3, 3]

    def lookup(i):
        p, r = shard_of(i, sizes, strategy)
        return shards[p][r]

    np.testing.assert_allclose(got, ref_sparse(lookup, combiner, weighted), rtol=1e-5)
    touched = {shard_of(i, sizes, strategy) for i in SP_IDS}
    assert sum(len(set(v.indices.tolist())) for v in grad_values) == len(touched)


def test_embedding_lookup_sparse_argument_errors():
    with tf.Graph().as_default():
        params = tf.zeros([4, 2])
        sp = tf.SparseTensor([[0, 0]], tf.constant([1], tf.int64), [1, 1])
        with pytest.raises(ValueError, match="combiner must be one of 'mean', 'sqrtn' or "
                           "'sum', got max"):
            tf.nn.embedding_lookup_sparse(params, sp, None, combiner="max")
        with pytest.raises(TypeError, match="sp_ids must be SparseTensor"):
            tf.nn.embedding_lookup_sparse(params, tf.constant([1]), None)
        with pytest.raises(TypeError, match="sp_weights must be either None or SparseTensor"):
            tf.nn.embedding_lookup_sparse(params, sp, tf.constant([1.0]))


# ---- TensorFlow oracle: the same code under both ------------------------------------------

_SHARED = """
full = np.arange(20, dtype=np.float32).reshape(10, 2) / 4.0
out = {}
with tf.variable_scope("emb", partitioner=tf.fixed_size_partitioner(3)):
    w = tf.get_variable("w", initializer=tf.constant(full), use_resource=True)
out["parts"] = tf.constant([v.shape.as_list() for v in w])
consts = [tf.constant(full[:4]), tf.constant(full[4:7]), tf.constant(full[7:])]
ids = tf.constant([[9, 0], [4, 7], [3, 3]])
for strategy in ("mod", "div"):
    look = tf.nn.embedding_lookup(consts, ids, partition_strategy=strategy)
    out["const_" + strategy] = look
    out["norm_" + strategy] = tf.nn.embedding_lookup(consts, ids, partition_strategy=strategy,
                                                     max_norm=2.0)
    vlook = tf.nn.embedding_lookup(w, ids, partition_strategy=strategy)
    out["var_" + strategy] = vlook
    grads = tf.gradients(tf.reduce_sum(vlook * vlook), list(w))
    for k, gr in enumerate(grads):
        out["grad_%s_%d" % (strategy, k)] = tf.convert_to_tensor(gr)
sp_ids = tf.SparseTensor([[0, 0], [0, 1], [2, 0], [2, 1], [2, 2]],
                         tf.constant([1, 4, 9, 1, 1], tf.int64), [4, 3])
sp_w = tf.SparseTensor([[0, 0], [0, 1], [2, 0], [2, 1], [2, 2]],
                       [1.0, 2.0, 0.5, 1.0, 1.0], [4, 3])
for combiner in ("sum", "mean", "sqrtn"):
    for weights in (None, sp_w):
        key = "sparse_%s_%s" % (combiner, "w" if weights is not None else "u")
        e = tf.nn.embedding_lookup_sparse(w, sp_ids, weights, partition_strategy="div",
                                          combiner=combiner)
        out[key] = e
        out[key + "_grad"] = tf.convert_to_tensor(
            tf.gradients(tf.reduce_sum(e * e), list(w))[2])
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    vals = sess.run(out)
result = {k: np.asarray(v) for k, v in vals.items()}
"""


@pytest.mark.oracle
def test_matches_tensorflow():
    want = oracle.run_tf("g = tf.Graph()\nwith g.as_default():\n" +
                         "\n".join("    " + line for line in _SHARED.splitlines()))
    ns = {"tf": tf, "np": np}
    with tf.Graph().as_default():
        exec(_SHARED, ns)  # noqa: S102 - the shared test program
    got = ns["result"]
    assert set(got) == set(want)
    for key in sorted(want):
        w, g = np.asarray(want[key]), np.asarray(got[key])
        assert g.shape == w.shape, f"{key}: shape {g.shape} vs TF {w.shape}"
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=key)
