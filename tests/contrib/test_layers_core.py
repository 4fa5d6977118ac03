"""tf.contrib.layers / slim / framework: TF1 contrib's variable names and collections, values
against NumPy, arg_scope rules."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf

slim = tf.contrib.slim
layers = tf.contrib.layers
RNG = np.random.default_rng(5)


def _run(fetches, feed=None):
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        return s.run(fetches, feed)


def test_names_collections_and_shapes():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 8, 8, 3])
        with slim.arg_scope([slim.conv2d, slim.fully_connected],
                            weights_regularizer=slim.l2_regularizer(0.01)):
            net = slim.conv2d(x, 4, [3, 3], scope="conv1")
            net = slim.repeat(net, 2, slim.conv2d, 4, 3, scope="conv2")
            net = slim.max_pool2d(net, [2, 2])
            net = slim.batch_norm(net, scale=True)
            net = slim.stack(slim.flatten(net), slim.fully_connected, [6, 5], scope="fc")
            net = layers.fully_connected(net, 3, activation_fn=None,
                                         outputs_collections="outputs")
        names = [v.op.name for v in tf.global_variables()]
        collected = tf.get_collection("outputs")
        out = _run(net, {x: np.ones([2, 8, 8, 3], np.float32)})
        reg = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
        updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        model = tf.get_collection(tf.GraphKeys.MODEL_VARIABLES)
        moving = tf.get_collection(tf.GraphKeys.MOVING_AVERAGE_VARIABLES)
        trainable = tf.trainable_variables()
    assert names == ["conv1/weights", "conv1/biases", "conv2/conv2_1/weights",
                     "conv2/conv2_1/biases", "conv2/conv2_2/weights", "conv2/conv2_2/biases",
                     "BatchNorm/gamma", "BatchNorm/beta", "BatchNorm/moving_mean",
                     "BatchNorm/moving_variance", "fc/fc_1/weights", "fc/fc_1/biases",
                     "fc/fc_2/weights", "fc/fc_2/biases", "fully_connected/weights",
                     "fully_connected/biases"]
    assert out.shape == (2, 3)
    assert collected == [net]
    assert len(reg) == 6  # every weights variable made inside the arg_scope
    assert len(updates) == 2 and len(model) == 16 and len(moving) == 2
    assert len(trainable) == 14


def test_fully_connected_and_conv2d_values():
    x = RNG.normal(size=(2, 5, 5, 3)).astype(np.float32)
    with tf.Graph().as_default():
        fc = layers.fully_connected(tf.constant(x.reshape(2, -1)), 4,
                                    biases_initializer=tf.constant_initializer(0.5))
        conv = layers.conv2d(tf.constant(x), 2, [3, 3], stride=2, padding="VALID",
                             activation_fn=tf.nn.tanh)
        deep = layers.fully_connected(tf.constant(x), 6, activation_fn=None, scope="deep")
        w_fc, w_conv, w_deep = [v for v in tf.global_variables()
                                if v.op.name.endswith("weights")]
        got = _run([fc, conv, deep, w_fc, w_conv, w_deep])
    fc_v, conv_v, deep_v, wf, wc, wd = got
    np.testing.assert_allclose(fc_v, np.maximum(x.reshape(2, -1) @ wf + 0.5, 0), rtol=1e-5)
    want = np.zeros((2, 2, 2, 2), np.float32)
    for i in range(2):
        for j in range(2):
            patch = x[:, 2 * i:2 * i + 3, 2 * j:2 * j + 3, :]
            want[:, i, j, :] = np.tensordot(patch, wc, axes=([1, 2, 3], [0, 1, 2]))
    np.testing.assert_allclose(conv_v, np.tanh(want), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(deep_v, x @ wd, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("rank", [2, 4])
def test_batch_norm_training_inference_and_updates(rank):
    shape = (16, 3) if rank == 2 else (4, 3, 3, 3)
    x = RNG.normal(loc=2.0, scale=3.0, size=shape).astype(np.float32)
    with tf.Graph().as_default():
        training = tf.placeholder(tf.bool, [])
        out = layers.batch_norm(tf.constant(x), decay=0.9, scale=True, is_training=training,
                                updates_collections=None)
        mm, mv = (v for v in tf.global_variables() if "moving" in v.op.name)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            trained = s.run(out, {training: True})
            moving = s.run([mm, mv])
            inferred = s.run(out, {training: False})
    axes = tuple(range(rank - 1))
    mean, var = x.mean(axis=axes), x.var(axis=axes)
    np.testing.assert_allclose(trained, (x - mean) / np.sqrt(var + 1e-3), rtol=1e-3,
                               atol=1e-4)
    n = x.size // 3
    used = var * n / (n - 1)  # TF takes the fused kernel (unbiased variance) for rank 2 and 4
    np.testing.assert_allclose(moving[0], 0.1 * mean, rtol=1e-4)
    np.testing.assert_allclose(moving[1], 0.9 + 0.1 * used, rtol=1e-4)
    np.testing.assert_allclose(inferred, (x - moving[0]) / np.sqrt(moving[1] + 1e-3),
                               rtol=1e-4, atol=1e-4)


def test_layer_norm_dropout_one_hot_embed():
    x = RNG.normal(size=(3, 4, 5)).astype(np.float32)
    with tf.Graph().as_default():
        ln = layers.layer_norm(tf.constant(x))
        drop_eval = layers.dropout(tf.constant(x), 0.5, is_training=False)
        drop_train = layers.dropout(tf.ones([1000]), 0.5)
        hot = layers.one_hot_encoding(tf.constant([0, 2]), 3)
        emb = layers.embed_sequence(tf.constant([[1, 2], [0, 0]]), vocab_size=4, embed_dim=2)
        names = [v.op.name for v in tf.global_variables()]
        ln_v, de, dt, hv, ev, table = _run([ln, drop_eval, drop_train, hot, emb,
                                            tf.global_variables()[-1]])
    mu = x.mean(axis=(1, 2), keepdims=True)
    sd = np.sqrt(x.var(axis=(1, 2), keepdims=True) + 1e-12)
    np.testing.assert_allclose(ln_v, (x - mu) / sd, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(de, x)
    assert set(np.unique(dt)) <= {0.0, 2.0} and 350 < (dt > 0).sum() < 650
    np.testing.assert_array_equal(hv, [[1, 0, 0], [0, 0, 1]])
    np.testing.assert_allclose(ev, table[[[1, 2], [0, 0]]])
    assert names == ["LayerNorm/beta", "LayerNorm/gamma", "EmbedSequence/embeddings"]


def test_arg_scope_rules():
    with tf.Graph().as_default():
        with slim.arg_scope([slim.fully_connected], activation_fn=None) as sc:
            with slim.arg_scope([slim.fully_connected], num_outputs=3):
                inner = slim.current_arg_scope()
                a = slim.fully_connected(tf.ones([1, 2]))  # both scopes' defaults
            b = slim.fully_connected(tf.ones([1, 2]), 4, activation_fn=tf.nn.relu)
        with slim.arg_scope(sc):
            c = slim.fully_connected(tf.ones([1, 2]), 5)
        with pytest.raises(ValueError, match="not decorated with @add_arg_scope"):
            with slim.arg_scope([tf.nn.relu], x=1):
                pass
        with pytest.raises(ValueError, match="stack_args need to be a list"):
            slim.stack(tf.ones([1, 2]), slim.fully_connected, 3)
    assert a.shape.as_list() == [1, 3] and a.op.type != "Relu"
    assert b.op.type == "Relu" and c.op.type != "Relu"
    assert len(inner) == 1


@pytest.mark.parametrize("optimizer", ["SGD", tf.train.GradientDescentOptimizer,
                                       lambda lr: tf.train.GradientDescentOptimizer(lr)])
def test_optimize_loss_trains(optimizer):
    with tf.Graph().as_default():
        step = tf.train.get_or_create_global_step()
        w = tf.Variable(5.0)
        loss = tf.square(w - 2.0)
        train = layers.optimize_loss(loss, step, 0.1, optimizer, clip_gradients=1.0,
                                     learning_rate_decay_fn=lambda lr, s: lr * 1.0)
        lr_vars = [v.op.name for v in tf.global_variables() if "learning_rate" in v.op.name]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            first = s.run(train)
            w1 = s.run(w)
            for _ in range(100):
                s.run(train)
            final, steps = s.run([w, step])
    assert first == pytest.approx(9.0)  # the loss before the update
    assert w1 == pytest.approx(5.0 - 0.1)  # the gradient 6.0 clipped to norm 1
    assert final == pytest.approx(2.0, abs=1e-3) and steps == 101
    assert lr_vars == ["OptimizeLoss/learning_rate"]


def test_optimize_loss_errors():
    with tf.Graph().as_default():
        w = tf.Variable(1.0)
        with pytest.raises(ValueError, match="Optimizer name should be one of"):
            layers.optimize_loss(w * w, None, 0.1, "Nope")
        with pytest.raises(ValueError, match="Learning rate is None"):
            layers.optimize_loss(w * w, None, None, "SGD")


def test_contrib_recompute_grad_keeps_values_and_gradients():
    """tf.contrib.layers.recompute_grad (a decorator): the wrapped block's values and
    gradients are the plain block's."""
    x = np.array([[1.0, -2.0], [0.5, 3.0]], np.float32)
    results = []
    for wrap in (lambda f: f, tf.contrib.layers.recompute_grad):
        with tf.Graph().as_default():
            tf.set_random_seed(3)

            @wrap
            def block(t):
                return tf.layers.dense(t, 3, activation=tf.nn.tanh, name="d")

            y = block(tf.constant(x))
            grads = tf.gradients(tf.reduce_sum(y * y), tf.trainable_variables())
            with tf.Session() as s:
                s.run(tf.global_variables_initializer())
                results.append(s.run([y] + grads))
    for got, want in zip(*results, strict=True):
        np.testing.assert_array_equal(got, want)
