"""The BoostedTrees* ops: kernels against plain NumPy/Python references, growth invariants
under every execution strategy, the resource's lifetime and errors, and (oracle) the op
definitions against TensorFlow's. TensorFlow 2.21 registers no kernels for these ops, so the
oracle checks their signatures only."""

from __future__ import annotations

import json

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework import errors, op_registry
from tensorflux.ops import boosted_trees_ops as bt
from tensorflux.protos import boosted_trees_pb2
from tests.op_test_util import STRATEGIES
from tests.oracle import run_tf

pytestmark = pytest.mark.usefixtures("fresh_graph")

OPS = ["BoostedTreesEnsembleResourceHandleOp", "BoostedTreesCreateEnsemble",
       "IsBoostedTreesEnsembleInitialized", "BoostedTreesSerializeEnsemble",
       "BoostedTreesDeserializeEnsemble", "BoostedTreesGetEnsembleStates",
       "BoostedTreesMakeStatsSummary", "BoostedTreesCalculateBestGainsPerFeature",
       "BoostedTreesUpdateEnsemble", "BoostedTreesTrainingPredict", "BoostedTreesPredict",
       "BoostedTreesExampleDebugOutputs", "BoostedTreesCenterBias",
       "BoostedTreesQuantileStreamResourceHandleOp", "BoostedTreesCreateQuantileStreamResource",
       "IsBoostedTreesQuantileStreamResourceInitialized", "BoostedTreesMakeQuantileSummaries",
       "BoostedTreesQuantileStreamResourceAddSummaries",
       "BoostedTreesQuantileStreamResourceFlush",
       "BoostedTreesQuantileStreamResourceGetBucketBoundaries",
       "BoostedTreesQuantileStreamResourceDeserialize", "BoostedTreesBucketize"]


# ---- references --------------------------------------------------------------------------


def ref_stats(node_ids, g, h, features, max_splits, num_buckets):
    out = np.zeros((len(features), max_splits, num_buckets, 2), np.float64)
    for f, col in enumerate(features):
        for i, (n, b) in enumerate(zip(node_ids, col, strict=True)):
            out[f, n, b] += (g[i, 0], h[i, 0])
    return out


def ref_leaf(g, h, l1, l2):
    """(weight, gain) of one leaf, written out case by case."""
    if abs(g) <= l1:
        return 0.0, 0.0
    g = g - l1 if g > 0 else g + l1
    if h + l2 <= 1e-15:
        return 0.0, 0.0
    w = -g / (h + l2)
    return w, -g * w


def ref_best_gains(stats, start, end, l1, l2, tc, mnw):
    """Per node of [start, end): (node, gain, threshold, left, right) by trying every bucket."""
    out = []
    for node in range(start, end):
        s = stats[node].astype(np.float64)
        total = s.sum(axis=0)
        if total[1] < mnw:
            continue
        _, parent = ref_leaf(total[0], total[1], l1, l2)
        best = None
        for b in range(s.shape[0]):
            left = s[:b + 1].sum(axis=0)
            lw, lg = ref_leaf(left[0], left[1], l1, l2)
            rw, rg = ref_leaf(total[0] - left[0], total[1] - left[1], l1, l2)
            if best is None or lg + rg > best[0] + 1e-6:
                best = (lg + rg, b, lw, rw)
        out.append((node, best[0] - parent - tc, best[1], best[2], best[3]))
    return out


def ref_predict(proto, features):
    """Sum over trees of weight * leaf value, walking each example down node by node."""
    out = np.zeros(features.shape[1])
    for tree, w in zip(proto.trees, proto.tree_weights, strict=True):
        for i in range(features.shape[1]):
            n = 0
            while tree.nodes[n].WhichOneof("node") == "bucketized_split":
                s = tree.nodes[n].bucketized_split
                n = s.left_id if features[s.feature_id, i] <= s.threshold else s.right_id
            out[i] += w * tree.nodes[n].leaf.scalar
    return out


# ---- stats and gains ---------------------------------------------------------------------

STATS_CASES = [  # (batch, num_features, max_splits, num_buckets, seed)
    (6, 2, 3, 4, 0), (50, 3, 7, 5, 1), (1, 1, 1, 1, 2), (200, 4, 15, 11, 3)]


@pytest.mark.parametrize("batch,nf,max_splits,num_buckets,seed", STATS_CASES)
def test_make_stats_summary(batch, nf, max_splits, num_buckets, seed):
    rng = np.random.RandomState(seed)
    node_ids = rng.randint(0, max_splits, batch).astype(np.int32)
    g = rng.randn(batch, 1).astype(np.float32)
    h = rng.rand(batch, 1).astype(np.float32)
    feats = [rng.randint(0, num_buckets, batch).astype(np.int32) for _ in range(nf)]
    out = bt.make_stats_summary(node_ids, g, h, feats, max_splits, num_buckets)
    assert out.shape.as_list() == [nf, max_splits, num_buckets, 2]
    with tf.Session() as sess:
        got = sess.run(out)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, ref_stats(node_ids, g, h, feats, max_splits, num_buckets),
                               rtol=1e-5, atol=1e-5)


GAIN_CASES = [  # (l1, l2, tree_complexity, min_node_weight)
    (0.0, 0.0, 0.0, 0.0), (0.05, 0.0, 0.0, 0.0), (0.0, 0.5, 0.0, 0.0), (0.1, 1.0, 0.2, 0.0),
    (0.0, 0.0, 0.0, 2.5), (3.0, 0.0, 0.0, 0.0)]


@pytest.mark.parametrize("l1,l2,tc,mnw", GAIN_CASES)
def test_calculate_best_gains_per_feature(l1, l2, tc, mnw):
    rng = np.random.RandomState(7)
    stats = np.stack([np.stack([rng.randn(3, 6), rng.rand(3, 6)], axis=-1)
                      for _ in range(2)]).astype(np.float32)  # [features, nodes, buckets, 2]
    stats[1, 2] = 0.0  # a node with no examples for feature 1
    out = bt.calculate_best_gains_per_feature([1, 3], list(stats), l1, l2, tc, mnw, 3)
    with tf.Session() as sess:
        nodes, gains, thresholds, lefts, rights = sess.run(out)
    for f in range(2):
        want = ref_best_gains(stats[f], 1, 3, l1, l2, tc, mnw)
        assert nodes[f].tolist() == [w[0] for w in want]
        assert thresholds[f].tolist() == [w[2] for w in want]
        np.testing.assert_allclose(gains[f], [w[1] for w in want], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(lefts[f][:, 0], [w[3] for w in want], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(rights[f][:, 0], [w[4] for w in want], rtol=1e-4,
                                   atol=1e-5)
        assert lefts[f].shape == (len(want), 1)


# ---- growth ------------------------------------------------------------------------------


def _grower(batch=64, nf=3, buckets=8, max_depth=2, lr=0.3, seed=0, pruning="none", tc=0.0):
    """One layer-by-layer step on a squared loss towards a fixed target, plus the
    ensemble's predictions and the logits TrainingPredict reconstructs."""
    rng = np.random.RandomState(seed)
    feats_np = rng.randint(0, buckets, (nf, batch)).astype(np.int32)
    target = (feats_np[0] > buckets // 2) * 1.0 - (feats_np[1] < 2) * 0.5
    h = bt.ensemble_resource_handle_op(shared_name="ensemble")
    create = bt.create_ensemble(h, 0, "")
    feats = [tf.constant(f) for f in feats_np]
    cache_t = tf.placeholder(tf.int32, [batch])
    cache_n = tf.placeholder(tf.int32, [batch])
    partial, tree_ids, node_ids = bt.training_predict(h, cache_t, cache_n, feats, 1)
    logits = tf.placeholder(tf.float32, [batch, 1])
    grads = logits - target.reshape(-1, 1).astype(np.float32)
    max_splits = (1 << max_depth) - 1
    # an empty ensemble leaves fresh examples at node -1: the root of the first tree
    stats = bt.make_stats_summary(tf.maximum(node_ids, 0), grads, tf.ones_like(grads), feats,
                                  max_splits, buckets)
    states = bt.get_ensemble_states(h)
    gains = bt.calculate_best_gains_per_feature(states[4], tf.unstack(stats, num=nf), 0.0,
                                                1.0, tc, 0.0, max_splits)
    update = bt.update_ensemble(h, list(range(nf)), *gains, max_depth=max_depth,
                                learning_rate=lr, pruning_mode=pruning)
    ops = dict(create=create, partial=partial, tree_ids=tree_ids, node_ids=node_ids,
               update=update, states=states, predict=bt.predict(h, feats, 1),
               serialized=bt.serialize_ensemble(h)[1])
    return ops, feats_np, (cache_t, cache_n, logits)


def _run_layers(sess, ops, feeds, batch, layers):
    cache_t, cache_n, logits = feeds
    trees, nodes = np.zeros(batch, np.int32), -np.ones(batch, np.int32)
    cached = np.zeros((batch, 1), np.float32)
    for _ in range(layers):
        partial, trees, nodes = sess.run([ops["partial"], ops["tree_ids"], ops["node_ids"]],
                                         {cache_t: trees, cache_n: nodes})
        cached = cached + partial
        sess.run(ops["update"], {cache_t: trees, cache_n: nodes, logits: cached})
    partial = sess.run(ops["partial"], {cache_t: trees, cache_n: nodes})
    return cached + partial


@pytest.mark.parametrize("strategy", ["reference", "auto", "dataflow"])
def test_layers_grow_and_cached_logits_match_predict(strategy):
    ops, feats_np, feeds = _grower()
    with tf.Session(exec_options=STRATEGIES[strategy]) as sess:
        sess.run(ops["create"])
        cached = _run_layers(sess, ops, feeds, 64, layers=5)
        stamp, num_trees, finalized, attempted, nodes_range = sess.run(ops["states"])
        predicted = sess.run(ops["predict"])
        proto = boosted_trees_pb2.TreeEnsemble.FromString(sess.run(ops["serialized"]))
    # max_depth 2: trees 0 and 1 finalized after four layers, the fifth grows tree 2
    # every update bumps the stamp; three trees attempted, the third one layer in
    assert (stamp, num_trees, finalized, attempted) == (5, 3, 2, 5)
    assert proto.growing_metadata.num_trees_attempted == 3
    assert [m.num_layers_grown for m in proto.tree_metadata] == [2, 2, 1]
    assert [m.is_finalized for m in proto.tree_metadata] == [True, True, False]
    assert nodes_range.tolist() == [1, 3]
    np.testing.assert_allclose(predicted[:, 0], ref_predict(proto, feats_np), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(cached, predicted, rtol=1e-5, atol=1e-6)
    root = proto.trees[0].nodes[0]
    assert root.WhichOneof("node") == "bucketized_split" and root.metadata.gain > 0
    left = proto.trees[0].nodes[root.bucketized_split.left_id]
    assert left.metadata.original_leaf.scalar != 0  # the value it had before its split


@pytest.mark.parametrize("tc, sizes", [(0.0, [15, 15, 3]), (1.0, [5, 3, 3]),
                                       (20.0, [1, 1, 3])])
def test_post_pruning(tc, sizes):
    ops, feats_np, feeds = _grower(max_depth=3, pruning="post", tc=tc)
    with tf.Session() as sess:
        sess.run(ops["create"])
        # seven layers: two trees of three finalized (and pruned), one layer of a third;
        # the cache of the pruned trees' examples is from before their pruning
        cached = _run_layers(sess, ops, feeds, 64, layers=7)
        predicted = sess.run(ops["predict"])
        proto = boosted_trees_pb2.TreeEnsemble.FromString(sess.run(ops["serialized"]))
    assert [len(t.nodes) for t in proto.trees] == sizes
    for tree, meta in zip(proto.trees[:2], proto.tree_metadata[:2], strict=True):
        pruned = len(tree.nodes) < 15
        assert len(meta.post_pruned_nodes_meta) == (15 if pruned else 0)
        gains = [n.metadata.gain for n in tree.nodes if n.HasField("bucketized_split")]
        assert all(g >= 0 for g in gains) or not pruned
    np.testing.assert_allclose(predicted[:, 0], ref_predict(proto, feats_np), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(cached, predicted, rtol=1e-5, atol=1e-6)


def test_split_children_values_are_parent_plus_scaled_contribution():
    h = bt.ensemble_resource_handle_op(shared_name="e")
    create = bt.create_ensemble(h, 3, "")
    update = bt.update_ensemble(
        h, [4, 9], [[0], [0]], [[1.0], [1.0]], [[2], [5]], [[[0.5]], [[7.0]]],
        [[[-0.5]], [[-7.0]]], max_depth=3, learning_rate=0.1, pruning_mode="none")
    ser = bt.serialize_ensemble(h)
    with tf.Session() as sess:
        sess.run(create)
        sess.run(update)
        stamp, data = sess.run(ser)
    proto = boosted_trees_pb2.TreeEnsemble.FromString(data)
    split = proto.trees[0].nodes[0].bucketized_split
    assert stamp == 4
    assert (split.feature_id, split.threshold, split.left_id, split.right_id) == (4, 2, 1, 2)
    assert not proto.trees[0].nodes[0].metadata.HasField("original_leaf")  # it was 0
    assert [n.leaf.scalar for n in proto.trees[0].nodes[1:]] == pytest.approx([0.05, -0.05])
    g = proto.growing_metadata
    assert (g.num_trees_attempted, g.num_layers_attempted) == (1, 1)
    assert (g.last_layer_node_start, g.last_layer_node_end) == (1, 3)


def _ensemble_after(updates, start=None):
    """The TreeEnsemble (and stamp) after UpdateEnsemble runs of `updates`: (feature_ids,
    per feature (node_ids, gains, thresholds, lefts, rights), max_depth, pruning)."""
    h = bt.ensemble_resource_handle_op(shared_name="e")
    create = bt.create_ensemble(h, 0, start.SerializeToString() if start else "")
    ops = []
    for feature_ids, lists, max_depth, pruning in updates:
        cols = list(zip(*lists, strict=True)) if lists else [[]] * 5
        ops.append(bt.update_ensemble(
            h, feature_ids, [np.array(c, np.int32) for c in cols[0]],
            [np.array(c, np.float32) for c in cols[1]],
            [np.array(c, np.int32) for c in cols[2]],
            [np.array(c, np.float32).reshape(-1, 1) for c in cols[3]],
            [np.array(c, np.float32).reshape(-1, 1) for c in cols[4]],
            max_depth=max_depth, learning_rate=1.0, pruning_mode=pruning))
    ser = bt.serialize_ensemble(h)
    with tf.Session() as sess:
        sess.run(create)
        for op in ops:
            sess.run(op)
        stamp, data = sess.run(ser)
    return stamp, boosted_trees_pb2.TreeEnsemble.FromString(data)


def _growth(e):
    g = e.growing_metadata
    return (len(e.trees), [(m.num_layers_grown, m.is_finalized) for m in e.tree_metadata],
            g.num_trees_attempted, g.num_layers_attempted,
            (g.last_layer_node_start, g.last_layer_node_end))


ROOT = ([0], [1.0], [3], [-0.5], [0.5])  # one candidate for the root


def test_growth_metadata():
    # depth 1: the tree is finalized at once and an empty one starts
    stamp, e = _ensemble_after([([2], [ROOT], 1, "none")])
    assert stamp == 1
    assert _growth(e) == (2, [(1, True), (0, False)], 1, 1, (0, 1))
    assert e.trees[1].nodes[0].HasField("leaf") and e.tree_weights[1] == 1.0
    # the empty tree's first layer counts a tree attempt
    stamp, e = _ensemble_after([([2], [ROOT], 1, "none"), ([5], [ROOT], 2, "none")])
    assert _growth(e) == (2, [(1, True), (1, False)], 2, 2, (1, 3))
    # no candidates: a layer attempt and a new stamp, nothing else changes
    stamp, e = _ensemble_after([([2], [ROOT], 3, "none"), ([], [], 3, "none")])
    assert stamp == 2 and _growth(e) == (1, [(1, False)], 1, 2, (1, 3))


def test_post_pruning_remaps_nodes_to_their_collapsed_ancestors():
    layers = [([1], [([0], [-0.2], [33], [0.01], [0.0143])], 3, "post"),
              ([3], [([1, 2], [-0.2, 0.5], [7, 5], [0.07, 0.041], [0.083, 0.064])], 3,
               "post"),
              ([9], [([3], [-0.45], [11], [0.15], [0.5])], 3, "post")]
    _, e = _ensemble_after(layers)
    tree = e.trees[0]
    # node 3 (children 7, 8) and then node 1 (children 3, 4) go; the root keeps its
    # negative-gain split, its right child being a split of positive gain
    kinds = [n.WhichOneof("node") for n in tree.nodes]
    assert kinds == ["bucketized_split", "leaf", "bucketized_split", "leaf", "leaf"]
    assert tree.nodes[1].leaf.scalar == pytest.approx(0.01)
    s = tree.nodes[2].bucketized_split
    assert (s.left_id, s.right_id) == (3, 4)
    moved = e.tree_metadata[0].post_pruned_nodes_meta
    assert [m.new_node_id for m in moved] == [0, 1, 2, 1, 1, 3, 4, 1, 1]
    held = [0.0, 0.01, 0.0143, 0.08, 0.093, 0.0553, 0.0783, 0.23, 0.58]
    want = [0.0 if new != 1 else 0.01 - old for old, new in
            zip(held, [m.new_node_id for m in moved], strict=True)]
    want[1] = 0.0
    np.testing.assert_allclose([m.logit_change[0] for m in moved], want, atol=1e-6)


def test_pre_pruning_drops_negative_gains():
    h = bt.ensemble_resource_handle_op(shared_name="e")
    create = bt.create_ensemble(h, 0, "")
    update = bt.update_ensemble(h, [0], [[0]], [[-0.1]], [[1]], [[[1.0]]], [[[-1.0]]],
                                max_depth=2, learning_rate=1.0, pruning_mode="pre")
    states = bt.get_ensemble_states(h)
    with tf.Session() as sess:
        sess.run(create)
        sess.run(update)
        _, num_trees, _, attempted, nodes_range = sess.run(states)
    assert (num_trees, attempted, nodes_range.tolist()) == (1, 1, [0, 1])


def test_center_bias_moves_the_root_by_newton_steps():
    h = bt.ensemble_resource_handle_op(shared_name="e")
    create = bt.create_ensemble(h, 0, "")
    center = bt.center_bias(h, [[-0.6]], [[0.25]], 0.1, 0.05)
    logits = bt.predict(h, [tf.constant([0, 1])], 1)
    states = bt.get_ensemble_states(h)
    with tf.Session() as sess:
        sess.run(create)
        assert sess.run(center)  # first step: from 0 to (0.6 - 0.1) / 0.3
        np.testing.assert_allclose(sess.run(logits)[:, 0], [5 / 3, 5 / 3], rtol=1e-5)
        stamp, num_trees, finalized, attempted, nodes_range = sess.run(states)
        assert (stamp, num_trees, finalized, attempted) == (1, 1, 0, 0)
        assert nodes_range.tolist() == [0, 1]  # the bias tree's root is the next layer
        assert sess.run(center)  # the same mean gradient again: the bias doubles
        np.testing.assert_allclose(sess.run(logits)[:, 0], [10 / 3, 10 / 3], rtol=1e-5)


def test_center_bias_stops_when_the_step_is_small():
    h = bt.ensemble_resource_handle_op(shared_name="e")
    create = bt.create_ensemble(h, 0, "")
    g = tf.placeholder(tf.float32, [1, 1])
    center = bt.center_bias(h, g, [[1.0]], 0.0, 0.0)
    with tf.Session() as sess:
        sess.run(create)
        assert sess.run(center, {g: [[-1.0]]})
        assert not sess.run(center, {g: [[-0.001]]})


# ---- the resource ------------------------------------------------------------------------


def _two_trees(prune_meta=None):
    """Tree 0 (weight 0.5): root split f0 <= 1 (was -1 as a leaf) into leaf 1 (2.0) and a
    split node 2 f1 <= 0 (was 3.0) into leaves 3 (4.0) and 4 (6.0); tree 1 (weight 1):
    root split f1 <= 2 into leaves -1.0 and 1.0."""
    e = boosted_trees_pb2.TreeEnsemble()
    t = e.trees.add()
    for kind, args in [("split", (0, 1, 1, 2, -1.0)), ("leaf", 2.0), ("split", (1, 0, 3, 4, 3.0)),
                       ("leaf", 4.0), ("leaf", 6.0)]:
        node = t.nodes.add()
        if kind == "leaf":
            node.leaf.scalar = args
            continue
        s = node.bucketized_split
        s.feature_id, s.threshold, s.left_id, s.right_id = args[:4]
        node.metadata.original_leaf.scalar = args[4]
    t2 = e.trees.add()
    s = t2.nodes.add().bucketized_split
    s.feature_id, s.threshold, s.left_id, s.right_id = 1, 2, 1, 2
    t2.nodes.add().leaf.scalar = -1.0
    t2.nodes.add().leaf.scalar = 1.0
    e.tree_weights.extend([0.5, 1.0])
    m = e.tree_metadata.add()
    m.is_finalized = True
    for new_id, change in prune_meta or []:
        pm = m.post_pruned_nodes_meta.add()
        pm.new_node_id = new_id
        pm.logit_change.append(change)
    e.tree_metadata.add()
    return e


# (cached tree, cached node) -> (partial logits, tree, node) for the examples
# f0 = [0, 5], f1 = [1, 3]: example 0 reaches leaf 1 then leaf 1; example 1 leaf 4 then 2
TRAINING_PREDICT_CASES = [
    ("fresh", None, ([0, 0], [-1, -1]), ([0.5 * 2 - 1, 0.5 * 6 + 1], [1, 1], [1, 2])),
    ("cached at split nodes", None, ([0, 0], [0, 2]),
     ([0.5 * (2 + 1) - 1, 0.5 * (6 - 3) + 1], [1, 1], [1, 2])),
    ("cached at leaves", None, ([0, 0], [1, 4]), ([-1, 1], [1, 1], [1, 2])),
    ("cached in the latest tree", None, ([1, 1], [0, 2]), ([-1, 0], [1, 1], [1, 2])),
    # node 2 of an unpruned tree went into node 1 (value moved by -0.5 for an example
    # held there); node 4 became node 2
    ("post-pruned", [(0, 0.0), (1, 0.0), (2, -0.5), (1, 0.25), (2, 0.0)],
     ([0, 0], [2, 4]), ([0.5 * -0.5 + 0.5 * (2 - 2) - 1, 0.5 * 0.0 + 1], [1, 1], [1, 2])),
]


@pytest.mark.parametrize("name, pruned, cache, want", TRAINING_PREDICT_CASES,
                         ids=[c[0] for c in TRAINING_PREDICT_CASES])
def test_training_predict(name, pruned, cache, want):
    e = _two_trees(pruned)
    if pruned:  # the pruned tree: node 2 collapsed (a leaf of 2.0), node 4 is now node 2
        t = e.trees[0]
        del t.nodes[:]
        s = t.nodes.add().bucketized_split
        s.feature_id, s.threshold, s.left_id, s.right_id = 0, 1, 1, 2
        t.nodes.add().leaf.scalar = 2.0
        t.nodes.add().leaf.scalar = 6.0
    h = bt.ensemble_resource_handle_op(shared_name="e")
    create = bt.create_ensemble(h, 0, e.SerializeToString())
    out = bt.training_predict(h, cache[0], cache[1], [[0, 5], [1, 3]], 1)
    with tf.Session() as sess:
        sess.run(create)
        partial, trees, nodes = sess.run(out)
    np.testing.assert_allclose(partial[:, 0], want[0], rtol=1e-6)
    assert trees.tolist() == want[1] and nodes.tolist() == want[2]


def test_training_predict_on_an_empty_ensemble_keeps_the_caches():
    h = bt.ensemble_resource_handle_op(shared_name="e")
    create = bt.create_ensemble(h, 0, "")
    out = bt.training_predict(h, [0, 0], [-1, 3], [[1, 2]], 1)
    with tf.Session() as sess:
        sess.run(create)
        partial, trees, nodes = sess.run(out)
    assert partial.tolist() == [[0.0], [0.0]] and trees.tolist() == [0, 0]
    assert nodes.tolist() == [-1, 3]


def test_lifetime_serialization_and_errors():
    h = bt.ensemble_resource_handle_op(shared_name="e")
    initialized = bt.is_ensemble_initialized(h)
    proto = boosted_trees_pb2.TreeEnsemble()
    tree = proto.trees.add()
    split = tree.nodes.add().bucketized_split
    split.feature_id, split.threshold, split.left_id, split.right_id = 1, 2, 1, 2
    tree.nodes.add().leaf.scalar = -1.5
    tree.nodes.add().leaf.scalar = 2.0
    proto.tree_weights.append(0.5)
    proto.tree_metadata.add()
    create = bt.create_ensemble(h, 7, proto.SerializeToString())
    stamp, data = bt.serialize_ensemble(h)
    feats = [tf.constant([9, 9, 9]), tf.constant([0, 2, 3])]
    logits = bt.predict(h, feats, 1)
    restore = bt.deserialize_ensemble(h, 11, "")
    with tf.Session() as sess:
        assert not sess.run(initialized)
        with pytest.raises(errors.NotFoundError, match="does not exist"):
            sess.run(logits)
        sess.run(create)
        assert sess.run(initialized)
        with pytest.raises(errors.AlreadyExistsError):
            sess.run(create)
        np.testing.assert_allclose(sess.run(logits)[:, 0], [-0.75, -0.75, 1.0])
        assert sess.run(stamp) == 7
        assert boosted_trees_pb2.TreeEnsemble.FromString(sess.run(data)) == proto
        sess.run(restore)
        assert sess.run(stamp) == 11
        np.testing.assert_allclose(sess.run(logits)[:, 0], [0.0, 0.0, 0.0])


def test_bad_inputs_raise_invalid_argument():
    h = bt.ensemble_resource_handle_op(shared_name="e")
    create = bt.create_ensemble(h, 0, "not a proto \xff")
    with tf.Session() as sess, pytest.raises(errors.InvalidArgumentError, match="parse"):
        sess.run(create)
    stats = bt.make_stats_summary([0, 5], [[1.0], [1.0]], [[1.0], [1.0]], [[0, 0]], 3, 2)
    buckets = bt.make_stats_summary([0, 1], [[1.0], [1.0]], [[1.0], [1.0]], [[0, 4]], 3, 2)
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError, match="Node ids"):
            sess.run(stats)
        with pytest.raises(errors.InvalidArgumentError, match="Bucket ids"):
            sess.run(buckets)


def test_debug_outputs_follow_each_example_path():
    h = bt.ensemble_resource_handle_op(shared_name="e")
    proto = boosted_trees_pb2.TreeEnsemble()
    tree = proto.trees.add()
    root = tree.nodes.add()
    root.bucketized_split.feature_id, root.bucketized_split.threshold = 1, 0
    root.bucketized_split.left_id, root.bucketized_split.right_id = 1, 2
    root.metadata.original_leaf.scalar = 0.25
    tree.nodes.add().leaf.scalar = 1.0
    tree.nodes.add().leaf.scalar = -2.0
    proto.tree_weights.append(1.0)
    proto.tree_metadata.add()
    create = bt.create_ensemble(h, 0, proto.SerializeToString())
    out = bt.example_debug_outputs(h, [tf.constant([5, 5]), tf.constant([0, 1])], 1)
    with tf.Session() as sess:
        sess.run(create)
        got = [boosted_trees_pb2.DebugOutput.FromString(s) for s in sess.run(out)]
    assert [list(d.feature_ids) for d in got] == [[1], [1]]
    assert [list(d.logits_path) for d in got] == [[0.25, 1.0], [0.25, -2.0]]


def test_empty_batch():
    h = bt.ensemble_resource_handle_op(shared_name="e")
    proto = boosted_trees_pb2.TreeEnsemble()
    proto.trees.add().nodes.add().leaf.scalar = 1.0
    proto.tree_weights.append(1.0)
    proto.tree_metadata.add()
    create = bt.create_ensemble(h, 0, proto.SerializeToString())
    empty = tf.zeros([0], tf.int32)
    partial, trees, nodes = bt.training_predict(h, empty, empty, [empty], 1)
    logits = bt.predict(h, [empty], 1)
    stats = bt.make_stats_summary(nodes, partial, partial, [empty], 1, 2)
    with tf.Session() as sess:
        sess.run(create)
        got = sess.run([partial, trees, nodes, logits, stats])
    assert [g.shape for g in got] == [(0, 1), (0,), (0,), (0, 1), (1, 1, 2, 2)]


def test_static_shapes():
    h = bt.ensemble_resource_handle_op()
    feats = [tf.placeholder(tf.int32, [5]) for _ in range(2)]
    partial, trees, nodes = bt.training_predict(h, tf.zeros([5], tf.int32),
                                                tf.zeros([5], tf.int32), feats, 1)
    assert partial.shape.as_list() == [5, 1] and nodes.shape.as_list() == [5]
    assert bt.predict(h, feats, 1).shape.as_list() == [5, 1]
    stats = bt.make_stats_summary(nodes, partial, partial, feats, 7, 4)
    assert stats.shape.as_list() == [2, 7, 4, 2]
    states = bt.get_ensemble_states(h)
    assert [s.dtype for s in states] == [tf.int64, tf.int32, tf.int32, tf.int32, tf.int32]
    assert states[4].shape.as_list() == [2]


# ---- quantile streams ----------------------------------------------------------------------


def ref_boundaries(values, weights, num_buckets):
    """Min, max, and per rank i * total / num_buckets the value whose middle rank is
    nearest, written out with plain loops."""
    pairs = {}
    for v, w in zip(values, weights, strict=True):
        if w > 0:
            pairs[v] = pairs.get(v, 0.0) + w
    ordered, rank, middles = sorted(pairs), 0.0, []
    for v in ordered:
        middles.append(rank + pairs[v] / 2)
        rank += pairs[v]
    out = {ordered[0], ordered[-1]}
    for i in range(num_buckets + 1):
        target = i * rank / num_buckets
        out.add(ordered[min(range(len(ordered)), key=lambda j: abs(middles[j] - target))])
    return sorted(out)


QUANTILE_CASES = [  # (values per feature, weights, num_buckets)
    ([[5.0, 1.0, 3.0, 3.0, 9.0, 7.0, 2.0]], [1, 1, 1, 1, 1, 1, 1], 3),
    ([[0.5, -1.0, 4.0, 2.0], [1.0, 1.0, 1.0, 2.0]], [3, 1, 1, 0], 2),
    ([np.linspace(-2, 2, 41).tolist()], [1] * 41, 10),
]


@pytest.mark.parametrize("values, weights, num_buckets", QUANTILE_CASES)
def test_quantile_streams_and_bucketize(values, weights, num_buckets):
    floats = [tf.constant(np.array(v, np.float32)) for v in values]
    h = bt.quantile_stream_resource_handle_op(shared_name="q")
    create = bt.create_quantile_stream_resource(h, 0.01, len(values))
    # two batches: the stream sums both
    add = bt.quantile_add_summaries(h, bt.make_quantile_summaries(
        floats, np.array(weights, np.float32), 0.01))
    flush = bt.quantile_flush(h, num_buckets)
    bounds = bt.get_bucket_boundaries(h, len(values))
    buckets = bt.boosted_trees_bucketize(floats, bounds)
    with tf.Session() as sess:
        sess.run(create)
        assert [b.size for b in sess.run(bounds)] == [0] * len(values)
        sess.run(add)
        sess.run(add)
        sess.run(flush)
        got_bounds, got_buckets = sess.run([bounds, buckets])
    for v, b, q in zip(values, got_bounds, got_buckets, strict=True):
        want = ref_boundaries(v, [2 * w for w in weights], num_buckets)
        np.testing.assert_allclose(b, want, rtol=1e-6)
        assert q.tolist() == [sum(x > e for e in want) for x in np.float32(v)]


def test_quantile_summaries_and_restore():
    values = tf.constant([2.0, 1.0, 2.0, 5.0])
    summary = bt.make_quantile_summaries([values], tf.constant([1.0, 2.0, 0.5, 1.0]), 0.1)
    h = bt.quantile_stream_resource_handle_op(shared_name="q")
    create = bt.create_quantile_stream_resource(h, 0.1, 2)
    initialized = bt.is_quantile_stream_resource_initialized(h)
    restore = bt.quantile_resource_deserialize(h, [[0.5, 1.5], [3.0]])
    bounds = bt.get_bucket_boundaries(h, 2)
    with tf.Session() as sess:
        rows = sess.run(summary[0])  # a list of one summary per feature
        np.testing.assert_allclose(rows, [[1, 2, 0, 2], [2, 1.5, 2, 3.5], [5, 1, 3.5, 4.5]])
        assert not sess.run(initialized)
        sess.run(create)
        assert sess.run(initialized)
        sess.run(restore)
        got = sess.run(bounds)
    assert [b.tolist() for b in got] == [[0.5, 1.5], [3.0]]


# ---- TensorFlow ----------------------------------------------------------------------------


@pytest.mark.oracle
def test_op_definitions_match_tensorflow():
    from google.protobuf import json_format

    theirs = run_tf(f"""
from google.protobuf import json_format
from tensorflow.python.framework import op_def_registry
result = {{}}
for name in {OPS!r}:
    d = json_format.MessageToDict(op_def_registry.get(name))
    d.pop("summary", None); d.pop("description", None)
    result[name] = json.dumps(d, sort_keys=True)
""")
    for op_type in OPS:
        ours = json_format.MessageToDict(op_registry.get(op_type).to_proto())
        assert json.loads(theirs[op_type]) == ours, op_type
