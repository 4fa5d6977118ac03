"""Every tf.layers function on one table of cases, run here and in TensorFlow (one oracle
run): the variable names, the outputs, the gradients with respect to the input and every
variable, and the moving statistics after the update ops, with the same weights (each
variable set from a generator seeded by its name)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import tensorflux as tf
from tests import oracle

_rng = np.random.RandomState(5)
INPUTS = {
    "xd": _rng.randn(3, 5).astype(np.float32),
    "x1": _rng.randn(2, 9, 3).astype(np.float32),
    "x2": _rng.randn(2, 6, 7, 3).astype(np.float32),
    "x3": _rng.randn(2, 4, 5, 4, 2).astype(np.float32),
}
CASES = [
    "tf.layers.dense(xd, 4, activation=tf.nn.relu)",
    "tf.layers.dense(x1, 4, use_bias=False)",
    "tf.layers.conv1d(x1, 4, 3, strides=2, padding='same')",
    "tf.layers.conv1d(x1, 2, 2, dilation_rate=2)",
    "tf.layers.conv2d(x2, 4, 3)",
    "tf.layers.conv2d(x2, 4, (2, 3), strides=(2, 1), padding='same', activation=tf.nn.tanh)",
    "tf.layers.conv2d(x2, 3, 3, dilation_rate=2, padding='same', use_bias=False)",
    "tf.layers.conv3d(x3, 3, 2, padding='same')",
    "tf.layers.conv3d(x3, 2, (2, 3, 2), strides=(1, 2, 1))",
    "tf.layers.separable_conv2d(x2, 5, 3, depth_multiplier=2, padding='same')",
    "tf.layers.separable_conv1d(x1, 4, 3, strides=2)",
    "tf.layers.conv2d_transpose(x2, 2, 3, strides=2)",
    "tf.layers.conv2d_transpose(x2, 2, 2, strides=2, padding='same')",
    "tf.layers.conv3d_transpose(x3, 2, 2, strides=(1, 2, 2))",
    "tf.layers.max_pooling1d(x1, 2, 2)",
    "tf.layers.average_pooling1d(x1, 3, 2, padding='same')",
    "tf.layers.max_pooling2d(x2, 3, 2, padding='same')",
    "tf.layers.average_pooling2d(x2, 2, 2)",
    "tf.layers.max_pooling3d(x3, 2, 2)",
    "tf.layers.average_pooling3d(x3, 2, 1, padding='same')",
    "tf.layers.batch_normalization(x2, training=True, momentum=0.8)",
    "tf.layers.batch_normalization(x2, training=True, fused=False, momentum=0.8)",
    "tf.layers.batch_normalization(x2, training=False)",
    "tf.layers.batch_normalization(xd, training=True, momentum=0.9, center=False)",
    "tf.layers.batch_normalization(x3, training=True, epsilon=0.01)",
    "tf.layers.dropout(x2, 0.5, training=False)",
    "tf.layers.flatten(x3)",
]

# The same program for both libraries: build every case, give each variable values from a
# generator seeded by its name, then run outputs, gradients and the updates.
PROGRAM = """
import zlib
def _value(v):
    shape = v.shape.as_list()
    r = np.random.RandomState(zlib.crc32(v.op.name.encode()) % 2**31)
    if 'variance' in v.op.name:
        return (r.rand(*shape) + 0.5).astype(np.float32)
    return (r.randn(*shape) * 0.5).astype(np.float32)

with tf.Graph().as_default():
    env = {k: tf.constant(v) for k, v in INPUTS.items()}
    env['tf'] = tf
    outs = [eval(c, env) for c in CASES]
    variables = tf.global_variables()
    loss = tf.add_n([tf.reduce_sum(tf.square(o)) for o in outs])
    grads = tf.gradients(loss, [env[k] for k in sorted(INPUTS)] + tf.trainable_variables())
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for v in variables:
            sess.run(tf.assign(v, _value(v)))
        values = sess.run(outs + grads)
        sess.run(tf.get_collection(tf.GraphKeys.UPDATE_OPS))
        moving = sess.run([v for v in variables if 'moving' in v.op.name])
    result = [[v.name for v in variables], [np.asarray(a) for a in values + moving]]
"""


def _run_here():
    scope = {"tf": tf, "np": np, "INPUTS": INPUTS, "CASES": CASES, "zlib": zlib}
    exec(PROGRAM, scope)  # noqa: S102 - our own program text
    return scope["result"]


def test_cases_run_and_name_variables_as_tf1():
    names, values = _run_here()
    assert names[:2] == ["dense/kernel:0", "dense/bias:0"]
    assert "separable_conv2d/depthwise_kernel:0" in names
    assert "batch_normalization_1/moving_variance:0" in names
    assert all(np.all(np.isfinite(v)) for v in values)


@pytest.mark.oracle
def test_every_case_matches_tensorflow(monkeypatch):
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")  # tf.layers lives in tf_keras
    ours_names, ours = _run_here()
    inputs = {k: (v.tolist(), str(v.dtype)) for k, v in INPUTS.items()}
    theirs_names, theirs = oracle.run_tf(
        f"INPUTS = {{k: np.array(v, d) for k, (v, d) in {inputs!r}.items()}}\n"
        f"CASES = {CASES!r}\n{PROGRAM}", timeout=180)
    assert ours_names == theirs_names
    labels = CASES + ["grad " + k for k in sorted(INPUTS)] + [
        "grad " + n for n in ours_names if "moving" not in n] + ["moving"] * 99
    for label, a, b in zip(labels, ours, theirs, strict=False):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-4, err_msg=label)
    assert len(ours) == len(theirs)
