"""tf.contrib.quantize: the rewritten graph's fake-quant nodes and range variables (named
as TF 1.15 names them), batch-norm folding that keeps values and gradients, training with
the rewrite, the eval rewrite's error within a quantization step, delays and options."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.contrib.quantize import fold_batch_norms


def _net(training, residual=False, seed=0):
    """conv1 (no bias) -> fused batch norm -> relu -> conv2 (+bias, relu6) -> fc."""
    tf.set_random_seed(seed)
    x = tf.placeholder(tf.float32, [4, 8, 8, 3], name="x")
    labels = tf.placeholder(tf.int32, [4], name="labels")
    h = tf.layers.conv2d(x, 4, 3, name="conv1", use_bias=False)
    h = tf.layers.batch_normalization(h, training=training, fused=True, name="bn1")
    h = tf.nn.relu(h)
    if residual:
        with tf.variable_scope("block"):
            r = tf.layers.conv2d(h, 4, 3, padding="same", name="conv")
            h = tf.nn.relu(r + h)
    h = tf.layers.conv2d(h, 4, 3, name="conv2", activation=tf.nn.relu6)
    logits = tf.layers.dense(tf.layers.flatten(h), 5, name="fc")
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    return x, labels, logits, loss


def _feed(x, labels, seed=0):
    rng = np.random.default_rng(seed)
    return {x: rng.uniform(-1, 1, (4, 8, 8, 3)).astype(np.float32), labels: [0, 1, 2, 3]}


def _fake_quants(g):
    return {op.name: op for op in g.get_operations() if op.type.startswith("FakeQuant")}


def test_training_rewrite_inserts_fake_quants_and_range_variables():
    g = tf.Graph()
    with g.as_default():
        _net(training=True)
        tf.contrib.quantize.create_training_graph()
        fq = _fake_quants(g)
        assert sorted(fq) == sorted(f"{s}/{k}/FakeQuantWithMinMaxVars"
                                    for s in ("conv1", "conv2", "fc")
                                    for k in ("weights_quant", "act_quant"))
        assert fq["conv1/weights_quant/FakeQuantWithMinMaxVars"].inputs[0].op.name == \
            "conv1/mul_fold"  # the folded weights
        assert fq["conv1/weights_quant/FakeQuantWithMinMaxVars"].get_attr("narrow_range")
        assert fq["conv1/act_quant/FakeQuantWithMinMaxVars"].inputs[0].op.type == "Relu"
        assert fq["conv2/act_quant/FakeQuantWithMinMaxVars"].inputs[0].op.type == "Relu6"
        assert fq["fc/act_quant/FakeQuantWithMinMaxVars"].inputs[0].op.name == "fc/BiasAdd"
        conv2 = g.get_operation_by_name("conv2/Conv2D")
        assert conv2.inputs[0].op.name == "conv1/act_quant/FakeQuantWithMinMaxVars"
        assert conv2.inputs[1].op.name == "conv2/weights_quant/FakeQuantWithMinMaxVars"
        names = {v.op.name for v in tf.global_variables()}
        for s in ("conv1", "conv2", "fc"):
            assert {f"{s}/weights_quant/min", f"{s}/weights_quant/max",
                    f"{s}/act_quant/min", f"{s}/act_quant/max",
                    f"{s}/act_quant/{s}/act_quant/min/biased",
                    f"{s}/act_quant/{s}/act_quant/max/local_step"} <= names
        assert not any("quant" in v.op.name for v in tf.trainable_variables())
        bn = g.get_operation_by_name("bn1/FusedBatchNormV3")
        assert bn.outputs[0].consumers() == []  # replaced by conv1/add_fold
        assert bn.get_attr("_gradient_op_type") == b"FoldFusedBatchNormGrad"
        for name in ("conv1/Conv2D_Fold", "conv1/add_fold", "conv1/post_conv_mul",
                     "conv1/BatchNorm_Fold/batch_norm_correction/correction_scale",
                     "bn1/Undo_Bessel_Correction"):
            g.get_operation_by_name(name)


def test_training_still_learns_and_ranges_follow_the_batches():
    g = tf.Graph()
    with g.as_default():
        x, labels, _, loss = _net(training=True)
        tf.contrib.quantize.create_training_graph()
        update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        with tf.control_dependencies(update_ops):
            train = tf.train.AdamOptimizer(0.01).minimize(loss)
        kernel = [v for v in tf.global_variables() if v.op.name == "fc/kernel"][0]
        w_min, w_max, a_max = [v for name in ("fc/weights_quant/min", "fc/weights_quant/max",
                                              "conv1/act_quant/max")
                               for v in tf.global_variables() if v.op.name == name]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            feed = _feed(x, labels)
            losses = [sess.run([loss, train], feed)[0] for _ in range(30)]
            k, lo, hi, act_hi = sess.run([kernel, w_min, w_max, a_max])
    assert losses[-1] < 0.5 * losses[0]
    # weights: the last batch's range (taken before the last update), holding 0
    assert lo <= 0 <= hi and abs(lo - min(k.min(), 0)) < 0.05 and abs(hi - k.max()) < 0.05
    assert act_hi != 6.0  # the moving average replaced the initial range


def _fold_case(training):
    g = tf.Graph()
    with g.as_default():
        x, labels, logits, loss = _net(training=training, seed=3)
        weights = [v for v in tf.trainable_variables() if "bn1" in v.op.name
                   or "conv1" in v.op.name]
    return g, x, labels, logits, loss, weights


@pytest.mark.parametrize("training", [True, False])
def test_folding_keeps_values_and_gradients(training):
    g, x, labels, logits, loss, weights = _fold_case(training)
    with g.as_default():
        grads = tf.gradients(loss, weights)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            if not training:  # moving statistics other than 0 and 1
                for v in tf.global_variables():
                    if "moving" in v.op.name:
                        sess.run(v.assign(np.linspace(0.5, 1.5, 4).astype(np.float32)))
            feed = _feed(x, labels, seed=1)
            want = sess.run([logits] + grads, feed)
            fold_batch_norms.FoldBatchNorms(g, is_training=training)
            assert g.get_operation_by_name("conv1/add_fold")
            folded_grads = tf.gradients(loss, weights)
            got = sess.run([logits] + folded_grads, feed)
    for w, v in zip(want, got, strict=True):
        np.testing.assert_allclose(v, w, rtol=2e-4, atol=2e-5)


def _step(lo, hi, bits=8, narrow=False):
    return (hi - lo) / ((1 << bits) - 1 - int(narrow))


def test_eval_rewrite_changes_outputs_within_the_quantization_step():
    g = tf.Graph()
    with g.as_default():
        x, labels, logits, _ = _net(training=False)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            feed = _feed(x, labels, seed=2)
            relu = g.get_operation_by_name("conv2/Relu6").outputs[0]
            float_relu = sess.run(relu, feed)
            tf.contrib.quantize.create_eval_graph()
            sess.run(tf.variables_initializer(
                [v for v in tf.global_variables() if "quant" in v.op.name]))
            fq = _fake_quants(g)
            assert "conv1/weights_quant/FakeQuantWithMinMaxVars" in fq
            assert not any("AssignM" in op.name for op in g.get_operations())  # no updates
            act = fq["conv2/act_quant/FakeQuantWithMinMaxVars"]
            got_in, got_out = sess.run([act.inputs[0], act.outputs[0]], feed)
    step = _step(0.0, 6.0)
    # the activation's fake quant rounds to its grid, within half a step
    assert np.max(np.abs(got_out - got_in)) <= step / 2 + 1e-6
    np.testing.assert_allclose(np.round(got_out / step) * step, got_out, atol=1e-5)
    # the weights' quantization moved the activation, by little
    assert not np.array_equal(got_in, float_relu)
    assert np.max(np.abs(got_in - float_relu)) < 10 * _step(-6.0, 6.0, narrow=True)


def test_quant_delay_uses_float_values_until_the_step():
    g = tf.Graph()
    with g.as_default():
        x, labels, logits, _ = _net(training=True)
        tf.contrib.quantize.create_training_graph(quant_delay=2)
        step_var = [v for v in tf.global_variables() if v.op.name == "fake_quantization_step"]
        assert len(step_var) == 1
        g.get_operation_by_name("conv1/act_quant/activate_quant")
        delayed = g.get_operation_by_name("fc/act_quant/delayed_quant/Merge").outputs[0]
        bias_add = g.get_operation_by_name("fc/BiasAdd").outputs[0]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            feed = _feed(x, labels)
            first = sess.run([delayed, bias_add], feed)  # the step counts to 1
            second = sess.run([delayed, bias_add], feed)  # 2: quantized from here
            assert sess.run(step_var[0]) == 2
    np.testing.assert_array_equal(first[0], first[1])
    assert not np.array_equal(second[0], second[1])


def test_experimental_options_bits_symmetric_and_scope():
    g = tf.Graph()
    with g.as_default():
        _net(training=True)
        tf.contrib.quantize.experimental_create_training_graph(
            weight_bits=4, activation_bits=6, symmetric=True, scope="conv2")
        fq = _fake_quants(g)
        assert sorted(fq) == ["conv2/act_quant/FakeQuantWithMinMaxVars",
                              "conv2/weights_quant/FakeQuantWithMinMaxVars"]
        assert fq["conv2/weights_quant/FakeQuantWithMinMaxVars"].get_attr("num_bits") == 4
        assert fq["conv2/act_quant/FakeQuantWithMinMaxVars"].get_attr("num_bits") == 6
    g2 = tf.Graph()
    with g2.as_default():
        _net(training=False)
        tf.contrib.quantize.experimental_create_eval_graph(weight_bits=5)
        fq = _fake_quants(g2)
        assert fq["fc/weights_quant/FakeQuantWithMinMaxVars"].get_attr("num_bits") == 5
        assert fq["fc/act_quant/FakeQuantWithMinMaxVars"].get_attr("num_bits") == 8


def test_residual_bypass_is_quantized_before_and_after():
    g = tf.Graph()
    with g.as_default():
        _net(training=True, residual=True)
        tf.contrib.quantize.create_training_graph(input_graph=g)
        fq = _fake_quants(g)
        assert "block/conv/conv_quant/FakeQuantWithMinMaxVars" in fq  # the bias add
        assert "block/act_quant/FakeQuantWithMinMaxVars" in fq  # after relu(add)
        assert "block/conv/weights_quant/FakeQuantWithMinMaxVars" in fq
        add = fq["block/conv/conv_quant/FakeQuantWithMinMaxVars"].outputs[0].consumers()
        assert [op.type for op in add] == ["AddV2"]
    from tensorflux.contrib.quantize.python import quantize_graph
    assert quantize_graph.create_eval_graph is tf.contrib.quantize.create_eval_graph


@pytest.mark.parametrize("training", [True, False])
def test_depthwise_folding_keeps_values_and_gradients(training):
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(1)
        x = tf.constant(np.random.default_rng(0).uniform(-1, 1, (2, 6, 6, 3)), tf.float32)
        with tf.variable_scope("dw"):
            w = tf.get_variable("depthwise_weights", [3, 3, 3, 2])
            h = tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME")
            h = tf.layers.batch_normalization(h, training=training, fused=True, name="bn")
        out = tf.nn.relu(h)
        loss = tf.reduce_sum(out * out)
        weights = tf.trainable_variables()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            want = sess.run([out] + tf.gradients(loss, weights))
            fold_batch_norms.FoldBatchNorms(g, is_training=training)
            g.get_operation_by_name("dw/BatchNorm_Fold/scale_reshape")
            got = sess.run([out] + tf.gradients(loss, weights))
    for w_, v in zip(want, got, strict=True):
        np.testing.assert_allclose(v, w_, rtol=2e-4, atol=5e-5)


def test_freeze_bn_delay_stops_the_moving_statistics():
    g = tf.Graph()
    with g.as_default():
        x, labels, _, loss = _net(training=True)
        tf.contrib.quantize.experimental_create_training_graph(freeze_bn_delay=2)
        g.get_operation_by_name("conv1/BatchNorm_Fold/batch_norm_correction/use_moving_average")
        with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
            train = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
        mean = [v for v in tf.global_variables() if v.op.name == "bn1/moving_mean"][0]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            feed = _feed(x, labels)
            means = []
            for _ in range(4):
                sess.run(train, feed)
                means.append(sess.run(mean))
    assert not np.array_equal(means[0], np.zeros(4))  # step 1: still moving
    np.testing.assert_array_equal(means[1], means[0])  # from step 2: frozen
    np.testing.assert_array_equal(means[3], means[1])
