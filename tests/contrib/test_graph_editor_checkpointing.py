"""The graph editor as OpenAI's gradient checkpointing (memory_saving_gradients.py) uses
it: walk the forward graph, copy the ops between checkpoints with
copy_with_input_replacements, reroute the copies onto stop-gradient checkpoints, chain
the pieces with control inputs. The gradients must equal tf.gradients' and training must
proceed as with them."""

from __future__ import annotations

import numpy as np

import tensorflux as tf
from tests.op_test_util import STRATEGIES

ge = tf.contrib.graph_editor


def _fast_backward_ops(within_ops, seed_ops, stop_at_ts):
    bwd_ops = set(ge.get_backward_walk_ops(seed_ops, stop_at_ts=stop_at_ts))
    ops = bwd_ops.intersection(within_ops).difference([t.op for t in stop_at_ts])
    return list(ops)


def _add_control_inputs(wait_to_do_ops, inputs_to_do_before):
    for op in wait_to_do_ops:
        before = [i for i in inputs_to_do_before if i not in op.control_inputs]
        ge.add_control_inputs(op, before)


def _copy_rerouted(ops_to_copy, disconnected_new, disconnected_old):
    """Copies `ops_to_copy` and makes the copies read the stop-gradient checkpoints."""
    _, info = ge.copy_with_input_replacements(ge.sgv(ops_to_copy), {})
    for origin_op, op in info._transformed_ops.items():
        op._set_device(origin_op.node_def.device)
    copied_ops = info._transformed_ops.values()
    ge.reroute_ts(disconnected_new, disconnected_old, can_modify=copied_ops)
    return info, list(copied_ops)


def checkpointed_gradients(ys, xs, checkpoints):
    """memory_saving_gradients.gradients(ys, xs, checkpoints=<list>) for checkpoints in
    forward order (the library sorts them topologically)."""
    bwd_ops = ge.get_backward_walk_ops([y.op for y in ys], inclusive=True)
    fwd_ops = ge.get_forward_walk_ops([x.op for x in xs], inclusive=True, within_ops=bwd_ops)
    fwd_ops = [op for op in fwd_ops if op.inputs and op not in [x.op for x in xs]]
    fwd_ops = [op for op in fwd_ops if "/read" not in op.name]
    disconnected = {x: tf.stop_gradient(x, name=x.op.name + "_sg") for x in checkpoints}

    ops_to_copy = _fast_backward_ops(fwd_ops, [y.op for y in ys], checkpoints)
    info, copied_ops = _copy_rerouted(ops_to_copy, list(disconnected.values()),
                                      list(disconnected))
    copied_ys = [info._transformed_ops[y.op]._outputs[0] for y in ys]
    boundary = list(disconnected.values())
    dv = tf.gradients(copied_ys, boundary + xs)
    _add_control_inputs(copied_ops + [g.op for g in dv if g is not None], [y.op for y in ys])
    d_checkpoints = dict(zip(checkpoints, dv[:len(checkpoints)], strict=True))
    d_xs = dv[len(checkpoints):]

    for r in reversed(checkpoints):
        others = [c for c in checkpoints if c is not r]
        others_disconnected = [disconnected[c] for c in others]
        ops_to_copy = _fast_backward_ops(fwd_ops, [r.op], others)
        if not ops_to_copy:
            break
        info, copied_ops = _copy_rerouted(ops_to_copy, others_disconnected, others)
        dv = tf.gradients([info._transformed_ops[r.op]._outputs[0]], others_disconnected + xs,
                          grad_ys=[d_checkpoints[r]])
        _add_control_inputs(copied_ops + [g.op for g in dv if g is not None],
                            [d_checkpoints[r].op])
        for c, dc in zip(others, dv[:len(others)], strict=True):
            if dc is not None:
                d_checkpoints[c] = dc if d_checkpoints[c] is None else d_checkpoints[c] + dc
        d_xs = [dx if acc is None else acc if dx is None else acc + dx
                for acc, dx in zip(d_xs, dv[len(others):], strict=True)]
    return d_xs


def _mlp(seed=0):
    rng = np.random.default_rng(seed)
    x = tf.constant(rng.standard_normal((8, 6)).astype(np.float32), name="x")
    labels = tf.constant(rng.standard_normal((8, 1)).astype(np.float32), name="labels")
    h, checkpoints, weights = x, [], []
    for k, width in enumerate([16, 16, 16, 1]):
        w = tf.Variable(rng.standard_normal((h.shape[1].value, width)).astype(np.float32)
                        * 0.3, name=f"w{k}")
        weights.append(w)
        h = tf.matmul(h, w, name=f"matmul{k}")
        if k < 3:
            h = tf.tanh(h, name=f"tanh{k}")
            checkpoints.append(h)
    loss = tf.reduce_mean(tf.square(h - labels), name="loss")
    return loss, weights, checkpoints[:2]


def test_checkpointed_gradients_equal_tf_gradients():
    g = tf.Graph()
    with g.as_default():
        loss, weights, checkpoints = _mlp()
        plain = tf.gradients(loss, weights)
        saved = checkpointed_gradients([loss], weights, checkpoints)
        copies = [op for op in g.get_operations() if op.name.startswith("tanh2_")]
        assert copies, "the segments between checkpoints were recomputed"
        for options in STRATEGIES.values():
            with tf.Session(graph=g, exec_options=options) as sess:
                sess.run(tf.global_variables_initializer())
                want, got = sess.run([plain, saved])
                for w_, g_ in zip(want, got, strict=True):
                    np.testing.assert_allclose(g_, w_, rtol=1e-5, atol=1e-6)


def test_training_with_checkpointed_gradients_follows_plain_training():
    losses = {}
    for kind in ("plain", "checkpointed"):
        g = tf.Graph()
        with g.as_default():
            loss, weights, checkpoints = _mlp(seed=1)
            grads = (tf.gradients(loss, weights) if kind == "plain"
                     else checkpointed_gradients([loss], weights, checkpoints))
            opt = tf.train.GradientDescentOptimizer(0.1)
            train = opt.apply_gradients(list(zip(grads, weights, strict=True)))
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                losses[kind] = [sess.run([loss, train])[0] for _ in range(5)]
    np.testing.assert_allclose(losses["checkpointed"], losses["plain"], rtol=1e-5)
    assert losses["plain"][-1] < losses["plain"][0]
