"""The graph optimizer: folding and CSE are visible in the step graph; results never change."""

import numpy as np
import pytest

import tensorflux as tf

L0 = tf.ConfigProto(graph_options=tf.GraphOptions(
    optimizer_options=tf.OptimizerOptions(opt_level=tf.OptimizerOptions.L0)))


def _step_nodes(sess):
    (step,) = sess._steps.values()
    return [n for p in step.partition_graphs.values() for n in p.nodes]


def _graph():
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.float32, [None], name="p")
        c = tf.constant(2.0) + tf.constant(3.0)  # folds to one constant
        a = p + c
        b = p + c  # the same expression again: CSE keeps one
        out = tf.identity(a) + tf.identity(b)
    return g, p, out


def test_folding_and_cse_are_visible_and_harmless():
    g, p, out = _graph()
    x = np.arange(3, dtype=np.float32)
    with tf.Session(graph=g) as s1, tf.Session(graph=g, config=L0) as s0:
        v1, v0 = s1.run(out, {p: x}), s0.run(out, {p: x})
        np.testing.assert_array_equal(v1, v0)
        np.testing.assert_array_equal(v1, 2 * (x + 5))
        ops1 = [n.op for n in _step_nodes(s1)]
        ops0 = [n.op for n in _step_nodes(s0)]
    assert ops0.count("AddV2") == 4 and ops1.count("AddV2") == 2
    assert ops0.count("Identity") == 2 and ops1.count("Identity") == 1
    assert ops1.count("Const") == 1


@pytest.mark.parametrize("flags", [(True, False), (False, True)])
def test_individual_flags_at_l0(flags):
    fold, cse = flags
    g, p, out = _graph()
    cfg = tf.ConfigProto(graph_options=tf.GraphOptions(optimizer_options=tf.OptimizerOptions(
        opt_level=tf.OptimizerOptions.L0, do_constant_folding=fold,
        do_common_subexpression_elimination=cse)))
    with tf.Session(graph=g, config=cfg) as s:
        np.testing.assert_array_equal(s.run(out, {p: [1.0]}), [12.0])
        ops = [n.op for n in _step_nodes(s)]
    assert (ops.count("Const") == 1) == fold
    assert (ops.count("Identity") == 1) == cse


def test_fed_and_fetched_nodes_keep_identity():
    g = tf.Graph()
    with g.as_default():
        c1 = tf.constant(1.0) + tf.constant(1.0)
        c2 = tf.constant(1.0) + tf.constant(1.0)
    with tf.Session(graph=g) as s:
        assert s.run([c1, c2], {c1: 5.0}) == [5.0, 2.0]


def test_folding_keeps_control_dependencies_of_folded_constants():
    """`1 - beta` inside control_dependencies([assign]) folds to a constant that must still
    wait for the assign (the Adam sparse update depends on it)."""
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(1.0)
        assign = v.assign(5.0)
        with tf.control_dependencies([assign]):
            k = tf.constant(2.0) - tf.constant(1.0)  # folds; the Const waits on the assign
        later = v.assign_add(k)  # must see 5.0, not 1.0
    for cfg in (None, L0):
        with tf.Session(graph=g, config=cfg) as s:
            s.run(v.initializer)
            assert s.run(later) == 6.0


def test_unread_nodes_kept_by_control_edges_become_no_ops():
    """A stateless node whose output nothing reads (tf.tuple's gates keep the input gradient
    of a first layer) is not computed, as grappler's dependency optimizer does; what waited
    on it still waits on its inputs."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 4, 4, 1])
        w = tf.Variable(np.ones((2, 2, 1, 1), np.float32))
        loss = tf.reduce_sum(tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME"))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        init = tf.global_variables_initializer()
    feed = {x: np.ones((2, 4, 4, 1), np.float32)}
    results = []
    for config in (None, L0):
        with tf.Session(graph=g, config=config) as s:
            s.run(init)
            s._steps.clear()
            s.run(train, feed)
            ops = [n.op for n in _step_nodes(s)]
            results.append(s.run(w))
        assert ("Conv2DBackpropInput" in ops) == (config is L0)
        assert "Conv2DBackpropFilter" in ops
    np.testing.assert_array_equal(*results)
