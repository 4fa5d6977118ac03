"""Optimizer state is named as in TF1, so TF1 checkpoints restore (golbin's TensorBoard
tutorial ships one with "optimizer/beta1_power"): Adam's beta powers take the caller's name
scope, slots the caller's variable scope. Names checked with the oracle (TF 2.21
tf.compat.v1 graph mode)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


def test_optimizer_state_names_follow_the_callers_scopes():
    x = tf.Variable(1.0, name="w")
    with tf.name_scope("optimizer"):
        tf.train.AdamOptimizer(0.1).minimize(x * x)
    with tf.variable_scope("vs"):
        tf.train.AdamOptimizer(0.1).minimize(x * x)
    with tf.name_scope("m"):
        tf.train.MomentumOptimizer(0.1, 0.9).minimize(x * x)
        tf.train.RMSPropOptimizer(0.1).minimize(x * x)
    assert [v.name for v in tf.global_variables()] == [
        "w:0", "optimizer/beta1_power:0", "optimizer/beta2_power:0", "w/Adam:0", "w/Adam_1:0",
        "vs/beta1_power:0", "vs/beta2_power:0", "vs/w/Adam:0", "vs/w/Adam_1:0",
        "w/Momentum:0", "w/RMSProp:0", "w/RMSProp_1:0"]


def test_a_checkpoint_with_scoped_adam_state_restores_by_name(tmp_path):
    def build():
        step = tf.Variable(0, trainable=False, name="global_step")
        with tf.name_scope("layer1"):
            w = tf.Variable(tf.ones([2, 3]), name="W1")
        with tf.name_scope("optimizer"):
            cost = tf.reduce_sum(tf.square(tf.matmul(tf.ones([1, 2]), w)))
            train = tf.train.AdamOptimizer(0.01).minimize(cost, global_step=step)
        return step, w, train

    with tf.Graph().as_default():
        step, w, train = build()
        saver = tf.train.Saver(tf.global_variables())
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(3):
                sess.run(train)
            saved = sess.run(w)
            path = saver.save(sess, str(tmp_path / "dnn.ckpt"), global_step=step)
    names = [name for name, _ in tf.train.list_variables(path)]
    assert names == ["global_step", "layer1/W1", "layer1/W1/Adam", "layer1/W1/Adam_1",
                     "optimizer/beta1_power", "optimizer/beta2_power"]
    with tf.Graph().as_default():
        step, w, train = build()
        with tf.Session() as sess:
            tf.train.Saver(tf.global_variables()).restore(sess, path)
            assert sess.run(step) == 3
            np.testing.assert_array_equal(sess.run(w), saved)
            sess.run(train)
            assert sess.run(step) == 4
