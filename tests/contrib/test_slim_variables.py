"""slim's (tf.contrib.framework's) variable helpers: filling variables from a checkpoint
(`assign_from_checkpoint(_fn)`, with missing variables ignored or raising, renamed through
a dict, reshaped) or from NumPy values (`assign_from_values(_fn)`), and the lookup and
placement helpers."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tensorflux as tf

slim = tf.contrib.slim


def _checkpoint(path, **values):
    with tf.Graph().as_default():
        for name, value in values.items():
            tf.get_variable(name, initializer=tf.constant(value))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return tf.train.Saver().save(sess, os.path.join(path, "model.ckpt"))


_A = np.arange(6, dtype=np.float32).reshape(2, 3)
_B = np.array([7.0, 8.0], np.float32)


def test_assign_from_checkpoint_fn_restores_and_renames(tmp_path):
    ckpt = _checkpoint(str(tmp_path), a=_A, b=_B)
    with tf.Graph().as_default():
        with tf.variable_scope("model"):
            a = tf.get_variable("a", shape=[2, 3])
        b = tf.get_variable("b", shape=[2])
        init_fn = slim.assign_from_checkpoint_fn(ckpt, {"a": a, "b": b})
        with tf.Session() as sess:
            init_fn(sess)
            np.testing.assert_array_equal(sess.run(a), _A)
            np.testing.assert_array_equal(sess.run(b), _B)


def test_assign_from_checkpoint_fn_missing_variables(tmp_path):
    ckpt = _checkpoint(str(tmp_path), a=_A)
    with tf.Graph().as_default():
        a = tf.get_variable("a", shape=[2, 3])
        c = tf.get_variable("c", initializer=tf.constant(1.0))
        init_fn = slim.assign_from_checkpoint_fn(ckpt, [a, c], ignore_missing_vars=True)
        with tf.Session() as sess:
            sess.run(c.initializer)
            init_fn(sess)
            np.testing.assert_array_equal(sess.run(a), _A)
            assert sess.run(c) == 1.0
        assert slim.assign_from_checkpoint_fn(ckpt, [c], ignore_missing_vars=True) is None
        strict = slim.assign_from_checkpoint_fn(ckpt, [a, c])
        with tf.Session() as sess, pytest.raises(tf.errors.NotFoundError):
            strict(sess)
        with pytest.raises(ValueError, match="var_list cannot be empty"):
            slim.assign_from_checkpoint_fn(ckpt, [])


def test_assign_from_checkpoint_fn_reshape(tmp_path):
    ckpt = _checkpoint(str(tmp_path), a=_A)
    with tf.Graph().as_default():
        a = tf.get_variable("a", shape=[3, 2])
        with tf.Session() as sess:
            slim.assign_from_checkpoint_fn(ckpt, [a], reshape_variables=True)(sess)
            np.testing.assert_array_equal(sess.run(a), _A.reshape(3, 2))
            with pytest.raises(tf.errors.InvalidArgumentError):
                slim.assign_from_checkpoint_fn(ckpt, [a])(sess)


def test_assign_from_checkpoint_feeds(tmp_path):
    ckpt = _checkpoint(str(tmp_path), a=_A, b=_B)
    with tf.Graph().as_default():
        a = tf.get_variable("a", shape=[2, 3])
        c = tf.get_variable("c", shape=[])
        assign_op, feed_dict = slim.assign_from_checkpoint(ckpt, [a, c],
                                                           ignore_missing_vars=True)
        assert [p.op.name for p in feed_dict] == ["placeholder/a"]
        with tf.Session() as sess:
            sess.run(assign_op, feed_dict)
            np.testing.assert_array_equal(sess.run(a), _A)
        with pytest.raises(ValueError, match="missing variable \\[c\\]"):
            slim.assign_from_checkpoint(ckpt, [a, c])


def test_assign_from_values(tmp_path):
    with tf.Graph().as_default():
        with tf.variable_scope("s"):
            v = tf.get_variable("v", shape=[2, 2])
        w = tf.get_variable("w", shape=[3], dtype=tf.int32)
        assign_op, feed_dict = slim.assign_from_values({"s/v": [1, 2, 3, 4], "w": [5, 6, 7]})
        with tf.Session() as sess:
            sess.run(assign_op, feed_dict)
            np.testing.assert_array_equal(sess.run(v), [[1, 2], [3, 4]])
            np.testing.assert_array_equal(sess.run(w), [5, 6, 7])
            slim.assign_from_values_fn({"w": np.array([0, 0, 1])})(sess)
            np.testing.assert_array_equal(sess.run(w), [0, 0, 1])
        with pytest.raises(ValueError, match="wasn't found"):
            slim.assign_from_values({"nope": 1.0})


def test_variable_lookup_helpers():
    with tf.Graph().as_default():
        with tf.variable_scope("net"):
            weights = slim.model_variable("weights", shape=[2])
            biases = tf.get_variable("biases", shape=[2])
        local = slim.local_variable(3.0, name="counter")
        glob = slim.global_variable(1, name="g")
        assert slim.get_unique_variable("net/weights") is weights
        with pytest.raises(ValueError, match="Couldn't find variable"):
            slim.get_unique_variable("net/nothing")
        assert slim.get_variables_by_suffix("biases") == [biases]
        assert local in slim.get_local_variables() and local not in tf.global_variables()
        assert glob in tf.global_variables() and glob not in tf.trainable_variables()
        assert slim.filter_variables([weights, biases], include_patterns=["net/w"]) == \
            [weights]
        assert slim.filter_variables([weights, biases], exclude_patterns=["ases$"]) == \
            [weights]
        assert slim.get_variable_full_name(weights) == "net/weights"
        slim.add_model_variable(biases)
        assert biases in slim.get_model_variables()
        assert slim.get_or_create_global_step() is slim.get_global_step()
        assert slim.assert_or_get_global_step() is slim.get_global_step()
        chooser = slim.VariableDeviceChooser(num_tasks=2)
        assert [chooser(None) for _ in range(3)] == [
            "/job:ps/task:0/device:CPU:0", "/job:ps/task:1/device:CPU:0",
            "/job:ps/task:0/device:CPU:0"]
        assert slim.VariableDeviceChooser()(None) == "/device:CPU:0"  # no tasks: no job
        with tf.Session() as sess:
            sess.run(biases.initializer)
            sess.run(slim.zero_initializer(biases))
            np.testing.assert_array_equal(sess.run(biases), [0.0, 0.0])
