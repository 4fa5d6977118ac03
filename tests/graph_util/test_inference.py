"""tensorflux/graph_util/inference.py: constant folding and batch-norm folding keep a frozen
model's outputs (within float rounding) while removing the batch norms, on a small CNN
built with tf.layers (fused batch norm after convolutions, the Mul/Add form after a dense
layer) and on hand-made patterns; TensorFlow runs the folded graph to the same outputs."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.graph_util import inference
from tests.oracle import run_tf

gu = tf.graph_util
RTOL = 1e-4


def _randomize(sess, rng):
    """Non-trivial values for every variable (moving statistics included)."""
    for v in tf.global_variables():
        low = 0.5 if "variance" in v.op.name or "gamma" in v.op.name else -1.0
        sess.run(v.assign(rng.uniform(low, 1.5, v.shape.as_list()).astype(np.float32)))


def _cnn_frozen(seed=0):
    """A small CNN with batch norm in inference mode; (frozen GraphDef, input, output)."""
    rng = np.random.RandomState(seed)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 8, 8, 2], name="x")
        h = tf.layers.conv2d(x, 4, 3, padding="same", use_bias=False, name="conv1")
        h = tf.nn.relu(tf.layers.batch_normalization(h, training=False, name="bn1"))
        h = tf.layers.conv2d(h, 3, 3, name="conv2")  # with a bias before the batch norm
        h = tf.layers.batch_normalization(h, training=False, name="bn2")
        h = tf.layers.max_pooling2d(h, 2, 2)
        h = tf.layers.dropout(tf.layers.flatten(h), 0.5, training=False)
        h = tf.layers.dense(h, 5, name="fc")
        h = tf.layers.batch_normalization(h, training=False, name="bn3")  # Mul/Add form
        y = tf.identity(tf.check_numerics(h, "logits"), name="y")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            _randomize(sess, rng)
            xv = rng.randn(3, 8, 8, 2).astype(np.float32)
            ref = sess.run(y, {x: xv})
            assert np.isfinite(ref).all()
            frozen = gu.convert_variables_to_constants(sess, g.as_graph_def(), ["y"])
    return frozen, xv, ref


def _run(graph_def, x, fetch="y:0"):
    with tf.Graph().as_default() as g:
        tf.import_graph_def(graph_def, name="")
        with tf.Session(graph=g) as sess:
            return sess.run(fetch, {"x:0": x})


def _ops(graph_def):
    return [n.op for n in graph_def.node]


def test_cnn_batch_norms_fold_into_the_convolutions_and_dense_layer():
    frozen, xv, ref = _cnn_frozen()
    assert _ops(frozen).count("FusedBatchNormV3") == 2 and "Rsqrt" in _ops(frozen)
    opt = inference.optimize_for_inference(frozen, ["x"], ["y"])
    ops = _ops(opt)
    assert not {"FusedBatchNormV3", "Rsqrt", "Mul", "Sub", "CheckNumerics"} & set(ops)
    assert ops.count("Identity") == 1  # the output node itself
    assert ops.count("Conv2D") == 2 and ops.count("MatMul") == 1 and ops.count("BiasAdd") == 3
    assert len(opt.node) < len(frozen.node) // 2
    np.testing.assert_allclose(_run(opt, xv), ref, rtol=RTOL, atol=1e-4)
    # The linear ops keep their names; the batch norms' names now name their outputs.
    names = {n.name: n.op for n in opt.node}
    assert names["conv1/Conv2D"] == "Conv2D" and names["bn1/FusedBatchNormV3"] == "BiasAdd"


def test_fold_constants_evaluates_constant_subgraphs_only():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [2], name="x")
        c = tf.sqrt(tf.constant([4.0, 9.0]) + 0.0, name="c")
        r = tf.random_uniform([2], name="r")  # stateful: stays
        tf.add(x * c, r * 0.0, name="y")
    folded = inference.fold_constants(g.as_graph_def(), ["y"])
    ops = {n.name: n.op for n in folded.node}
    assert ops["c"] == "Const" and ops["x"] == "Placeholder"
    assert "RandomUniform" in ops.values() and "Sqrt" not in ops.values()
    np.testing.assert_allclose(_run(folded, np.ones(2, np.float32)), [2.0, 3.0])


def _check_folded(build, x_value, folded_away, rtol=RTOL):
    """Builds a graph with `build()` (returns the output tensor named "y"), freezes it,
    folds, and checks that `folded_away` ops are gone and the outputs are unchanged."""
    g = tf.Graph()
    with g.as_default():
        build()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            _randomize(sess, np.random.RandomState(1))
            ref = sess.run("y:0", {"x:0": x_value})
            assert np.isfinite(ref).all()
            frozen = gu.convert_variables_to_constants(sess, g.as_graph_def(), ["y"])
    opt = inference.optimize_for_inference(frozen, ["x"], ["y"])
    assert not set(folded_away) & set(_ops(opt)), _ops(opt)
    np.testing.assert_allclose(_run(opt, x_value), ref, rtol=rtol, atol=1e-4)
    return opt


def test_depthwise_and_transposed_matmul_and_plain_scaling():
    def depthwise():
        x = tf.placeholder(tf.float32, [None, 5, 5, 2], name="x")
        w = tf.Variable(np.ones([3, 3, 2, 3], np.float32))
        h = tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME")
        scale = tf.Variable(np.ones(6, np.float32), name="gamma")
        offset = tf.Variable(np.ones(6, np.float32), name="beta")
        mean = tf.Variable(np.ones(6, np.float32), name="mean")
        var = tf.Variable(np.ones(6, np.float32), name="variance")
        y, _, _ = tf.nn.fused_batch_norm(h, scale, offset, mean, var, is_training=False)
        tf.identity(y, name="y")

    _check_folded(depthwise, np.random.RandomState(2).randn(2, 5, 5, 2).astype(np.float32),
                  ["FusedBatchNormV3", "FusedBatchNorm"])

    def transposed():
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        w = tf.Variable(np.ones([3, 4], np.float32))
        s = tf.Variable(np.ones([1, 3], np.float32))  # broadcasts per column
        t = tf.Variable(np.ones([3], np.float32))
        tf.add(tf.matmul(x, w, transpose_b=True) * s + 0.0, t, name="y")

    opt = _check_folded(transposed, np.random.RandomState(3).randn(4, 4).astype(np.float32),
                        ["Mul"])
    assert _ops(opt).count("MatMul") == 1


def test_nothing_is_folded_where_a_value_would_be_lost():
    def shared():
        x = tf.placeholder(tf.float32, [None, 4, 4, 1], name="x")
        h = tf.nn.conv2d(x, tf.Variable(np.ones([2, 2, 1, 2], np.float32)), [1] * 4, "SAME")
        scale = tf.Variable(np.ones(2, np.float32), name="gamma")
        y, _, _ = tf.nn.fused_batch_norm(h, scale, scale, scale, scale, is_training=False)
        tf.add(y, tf.reduce_sum(h), name="y")  # the convolution's output is read again

    opt = _check_folded(shared, np.random.RandomState(4).randn(1, 4, 4, 1).astype(np.float32),
                        [])
    assert any(op.startswith("FusedBatchNorm") for op in _ops(opt))

    def not_per_channel():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        h = tf.matmul(x, tf.Variable(np.ones([3, 2], np.float32)))
        tf.multiply(h, tf.Variable(np.ones([4, 1, 2], np.float32)), name="y")  # broadcasts up

    opt = _check_folded(not_per_channel, np.ones([2, 3], np.float32), [])
    assert "Mul" in _ops(opt)


def test_output_nodes_are_protected():
    frozen, xv, ref = _cnn_frozen(seed=5)
    opt = inference.optimize_for_inference(frozen, ["x"], ["y", "bn1/FusedBatchNormV3"])
    assert "FusedBatchNormV3" in _ops(opt)  # bn1 is an output: kept as it is
    np.testing.assert_allclose(_run(opt, xv), ref, rtol=RTOL, atol=1e-4)


@pytest.mark.oracle
def test_tensorflow_runs_the_folded_cnn():
    frozen, xv, ref = _cnn_frozen(seed=7)
    opt = inference.optimize_for_inference(frozen, ["x"], ["y"])
    cfg = {"graph": base64.b64encode(opt.SerializeToString()).decode(), "x": xv.tolist()}
    theirs = run_tf(f"cfg = json.loads({json.dumps(json.dumps(cfg))})\n" + """
from tensorflow.core.framework import graph_pb2
gd = graph_pb2.GraphDef.FromString(base64.b64decode(cfg["graph"]))
with tf.Graph().as_default() as g:
    tf.import_graph_def(gd, name="")
    with tf.Session(graph=g) as sess:
        result = sess.run("y:0", {"x:0": np.array(cfg["x"], np.float32)})
""")
    np.testing.assert_allclose(theirs, ref, rtol=RTOL, atol=1e-4)


def test_a_training_flag_with_a_default_is_fixed_and_its_branches_pruned():
    rng = np.random.RandomState(9)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 6, 6, 1], name="x")
        training = tf.placeholder_with_default(False, [], name="training")
        h = tf.layers.conv2d(x, 3, 3, name="conv")
        h = tf.layers.batch_normalization(h, training=training, name="bn")  # tf.cond inside
        h = tf.layers.dropout(h, 0.5, training=training)  # tf.cond inside
        h = tf.layers.dense(tf.layers.flatten(h), 2, name="fc")
        tf.identity(h, name="y")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            _randomize(sess, rng)
            xv = rng.randn(2, 6, 6, 1).astype(np.float32)
            ref = sess.run("y:0", {x: xv})
            frozen = gu.convert_variables_to_constants(sess, g.as_graph_def(), ["y"])
    assert {"Switch", "Merge", "RandomUniform"} <= set(_ops(frozen))
    switches = [n for n in frozen.node if n.op == "Switch"]
    assert any(n.attr["T"].type == tf.float32.as_datatype_enum for n in switches)  # was resource
    np.testing.assert_allclose(_run(frozen, xv), ref, rtol=1e-6)
    opt = inference.optimize_for_inference(frozen, ["x"], ["y"])
    assert set(_ops(opt)) == {"Placeholder", "Const", "Conv2D", "BiasAdd", "Reshape", "MatMul",
                              "Identity"}
    np.testing.assert_allclose(_run(opt, xv), ref, rtol=RTOL, atol=1e-5)
    # Listed as an input, the flag stays a placeholder and both branches stay.
    kept = inference.optimize_for_inference(frozen, ["x", "training"], ["y"])
    assert "Merge" in _ops(kept) and "PlaceholderWithDefault" in _ops(kept)
    np.testing.assert_allclose(_run(kept, xv), ref, rtol=RTOL, atol=1e-5)


@pytest.mark.oracle
def test_freezing_and_folding_a_tensorflow_saved_model(tmp_path):
    """TensorFlow writes a TF1 SavedModel of a CNN with both batch-norm forms (ref and
    resource variables); tensorflux-freeze --optimize_for_inference gives its outputs."""
    export_dir = str(tmp_path / "tf_cnn")
    cfg = {"dir": export_dir}
    theirs = run_tf(f"cfg = json.loads({json.dumps(json.dumps(cfg))})\n" + """
rng = np.random.RandomState(11)
def var(name, shape, low=-1.0, resource=False):
    init = rng.uniform(low, 1.5, shape).astype(np.float32)
    return tf.get_variable(name, initializer=init, use_resource=resource)
with tf.Graph().as_default(), tf.Session() as sess:
    x = tf.placeholder(tf.float32, [None, 6, 6, 2], name="x")
    h = tf.nn.conv2d(x, var("k1", [3, 3, 2, 4]), [1, 1, 1, 1], "SAME")
    h, _, _ = tf.nn.fused_batch_norm(h, var("g1", [4], 0.5), var("b1", [4], resource=True),
                                     var("m1", [4]), var("v1", [4], 0.5), is_training=False)
    h = tf.nn.relu(h)
    h = tf.nn.bias_add(tf.nn.conv2d(h, var("k2", [3, 3, 4, 3], resource=True), [1, 1, 1, 1],
                                    "VALID"), var("c2", [3]))
    h = tf.nn.batch_normalization(h, var("m2", [3]), var("v2", [3], 0.5), var("b2", [3]),
                                  var("g2", [3], 0.5), 1e-3)
    h = tf.reshape(h, [-1, 4 * 4 * 3])
    y = tf.identity(tf.matmul(h, var("w3", [48, 2])), name="y")
    sess.run(tf.global_variables_initializer())
    builder = tf.saved_model.Builder(cfg["dir"])
    builder.add_meta_graph_and_variables(
        sess, ["serve"], {"serving_default": tf.saved_model.predict_signature_def({"x": x},
                                                                                  {"y": y})},
        saver=tf.train.Saver(sharded=False))
    builder.save()
    xv = rng.randn(2, 6, 6, 2).astype(np.float32)
    result = {"x": xv, "y": sess.run(y, {x: xv})}
""")
    out = str(tmp_path / "frozen.pb")
    from tensorflux import freeze_cli

    assert freeze_cli.main(["--input_saved_model_dir", export_dir, "--output_node_names", "y",
                            "--output_graph", out, "--optimize_for_inference",
                            "--input_node_names", "x"]) == 0
    folded = tf.GraphDef.FromString(open(out, "rb").read())
    assert not {"FusedBatchNormV3", "FusedBatchNorm", "Rsqrt", "Mul", "VariableV2",
                "VarHandleOp"} & set(_ops(folded))
    np.testing.assert_allclose(_run(folded, theirs["x"]), theirs["y"], rtol=RTOL, atol=1e-4)
