"""Every tf.keras layer on one table of cases, run here and in TensorFlow's Keras 2
(tf_keras, graph mode; one oracle run): variable names and shapes, outputs, gradients
with respect to the input and every variable, with the same weights (each variable set
from a generator seeded by its name). The UPDATE_OPS collection stays empty in both (TF1
Keras keeps batch-norm updates on the layer); the moving statistics after training are
compared in test_training_vs_tensorflow.py."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import tensorflux as tf
from tests import oracle

_rng = np.random.RandomState(7)
INPUTS = {
    "xd": _rng.randn(3, 5).astype(np.float32),
    "x1": _rng.randn(2, 9, 3).astype(np.float32),
    "x2": _rng.randn(2, 6, 7, 3).astype(np.float32),
    "x3": _rng.randn(2, 4, 5, 4, 2).astype(np.float32),
    "ids": np.array([[1, 4, 0], [3, 3, 9]], np.int32),
}
L = "tf.keras.layers."
CASES = [
    L + "Dense(4, activation='relu')(xd)",
    L + "Dense(3, use_bias=False, activation='tanh')(x1)",
    L + "Activation('softplus')(xd)",
    L + "Activation('hard_sigmoid')(xd)",
    L + "Activation('selu')(xd)",
    L + "Activation('elu')(xd)",
    L + "Activation('softsign')(xd)",
    L + "Dropout(0.5)(xd, training=False)",
    L + "Flatten()(x2)",
    L + "Reshape((3, 9))(x1)",
    L + "Reshape((-1, 3))(x2)",
    L + "Permute((2, 1))(x1)",
    L + "RepeatVector(3)(xd)",
    L + "Lambda(lambda t: t * 2.0 + 1.0)(xd)",
    L + "Conv1D(4, 3, strides=2, padding='same')(x1)",
    L + "Conv2D(4, (2, 3), strides=(2, 1), padding='same', activation='relu')(x2)",
    L + "Conv2D(3, 3, dilation_rate=2, use_bias=False)(x2)",
    L + "Conv3D(2, 2, padding='same')(x3)",
    L + "Conv2DTranspose(2, 3, strides=2)(x2)",
    L + "SeparableConv2D(5, 3, depth_multiplier=2, padding='same')(x2)",
    L + "DepthwiseConv2D(3, depth_multiplier=2)(x2)",
    L + "DepthwiseConv2D((2, 3), strides=2, padding='same')(x2)",
    L + "MaxPooling1D()(x1)",
    L + "AveragePooling1D(3, padding='same')(x1)",
    L + "MaxPooling2D((3, 3), strides=2, padding='same')(x2)",
    L + "AveragePooling2D()(x2)",
    L + "MaxPooling3D()(x3)",
    L + "AveragePooling3D(2, strides=1, padding='same')(x3)",
    L + "GlobalAveragePooling1D()(x1)",
    L + "GlobalMaxPooling1D()(x1)",
    L + "GlobalAveragePooling2D()(x2)",
    L + "GlobalMaxPooling2D()(x2)",
    L + "ZeroPadding2D(((1, 2), (0, 1)))(x2)",
    L + "ZeroPadding1D(2)(x1)",
    L + "UpSampling2D((2, 3))(x2)",
    L + "UpSampling1D(2)(x1)",
    L + "Cropping2D(((1, 2), (2, 1)))(x2)",
    L + "Cropping1D((1, 3))(x1)",
    L + "BatchNormalization(momentum=0.8)(x2, training=True)",
    L + "BatchNormalization()(x2, training=False)",
    L + "BatchNormalization(momentum=0.9, center=False)(xd, training=True)",
    L + "BatchNormalization(axis=1, epsilon=0.01)(x1, training=True)",
    L + "Embedding(10, 4)(ids)",
    L + "SimpleRNN(4)(x1)",
    L + "SimpleRNN(3, return_sequences=True, go_backwards=True, activation='relu')(x1)",
    L + "LSTM(4)(x1)",
    L + "LSTM(3, return_sequences=True, return_state=True)(x1)",
    L + "LSTM(2, go_backwards=True, unit_forget_bias=False)(x1)",
    L + "GRU(4)(x1)",
    L + "GRU(3, return_sequences=True, return_state=True)(x1)",
    L + "GRU(2, reset_after=True, recurrent_activation='sigmoid')(x1)",
    L + "Bidirectional(tf.keras.layers.LSTM(3, return_sequences=True))(x1)",
    L + "Bidirectional(tf.keras.layers.GRU(2), merge_mode='sum')(x1)",
    L + "TimeDistributed(tf.keras.layers.Dense(3))(x1)",
    L + "Concatenate()([x1, x1 * 2.0])",
    L + "Add()([xd, xd * 2.0, xd])",
    L + "Subtract()([xd, xd * 3.0])",
    L + "Multiply()([xd, xd + 1.0])",
    L + "Average()([xd, xd * 3.0])",
    L + "Maximum()([xd, -xd])",
    L + "Minimum()([xd, -xd])",
    L + "Dot(axes=1)([xd, xd * 2.0])",
    L + "Dot(axes=(2, 2), normalize=True)([x1, x1 + 1.0])",
    "tf.keras.layers.concatenate([xd, xd], axis=0)",
    "tf.keras.layers.add([xd, xd])",
    L + "LeakyReLU()(xd)",
    L + "LeakyReLU(0.1)(xd)",
    L + "PReLU()(x1)",
    L + "PReLU(shared_axes=[1])(x1)",
    L + "ELU(0.5)(xd)",
    L + "ReLU(max_value=0.5)(xd)",
    L + "ReLU(negative_slope=0.1, threshold=0.2)(xd)",
    L + "Softmax()(x1)",
    L + "ThresholdedReLU(0.3)(xd)",
    L + "LayerNormalization()(x2)",
    L + "LayerNormalization(axis=[1, 2], epsilon=0.01, center=False)(x2)",
    L + "LayerNormalization(axis=1, scale=False)(x1)",
    L + "UpSampling2D(interpolation='bilinear')(x2)",
    L + "UpSampling2D((3, 2), interpolation='bicubic')(x2)",
    L + "UpSampling2D((2, 3), data_format='channels_first', interpolation='bilinear')(x2)",
    L + "GaussianNoise(0.3)(xd)",
    L + "GaussianDropout(0.3)(x1, training=False)",
    L + "AlphaDropout(0.3)(x1, training=False)",
    L + "SpatialDropout1D(0.4)(x1)",
    L + "SpatialDropout2D(0.4)(x2, training=False)",
]

# Shared by the oracle programs of tests/keras: each variable's value from a generator
# seeded by its name (variances positive), and outputs flattened.
VALUE_HELPERS = """
import zlib
def _value(v):
    shape = v.shape.as_list()
    r = np.random.RandomState(zlib.crc32(v.op.name.encode()) % 2**31)
    if 'variance' in v.op.name:
        return (r.rand(*shape) + 0.5).astype(np.float32)
    return (r.randn(*shape) * 0.5).astype(np.float32)

def _flat(o):
    return list(o) if isinstance(o, (list, tuple)) else [o]
"""

PROGRAM = VALUE_HELPERS + """
with tf.Graph().as_default():
    env = {k: tf.constant(v) for k, v in INPUTS.items()}
    env['tf'] = tf
    pairs = [(c, t) for c in CASES for t in _flat(eval(c, env))]
    outs = [t for _, t in pairs]
    variables = tf.global_variables()
    loss = tf.add_n([tf.reduce_sum(tf.square(o)) for o in outs])
    wrt = [env[k] for k in sorted(INPUTS) if k != 'ids'] + tf.trainable_variables()
    grads = [tf.convert_to_tensor(g) for g in tf.gradients(loss, wrt)]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for v in variables:
            sess.run(tf.assign(v, _value(v)))
        values = sess.run(outs + grads)
        sess.run(tf.get_collection(tf.GraphKeys.UPDATE_OPS))
        moving = sess.run([v for v in variables if 'moving' in v.op.name])
    result = [[v.name + str(v.shape.as_list()) for v in variables],
              [np.asarray(a) for a in values + moving], [c for c, _ in pairs]]
"""


def _run_here():
    scope = {"tf": tf, "np": np, "INPUTS": INPUTS, "CASES": CASES, "zlib": zlib}
    exec(PROGRAM, scope)  # noqa: S102 - our own program text
    return scope["result"]


def test_cases_run_and_name_variables_as_keras():
    names, values, _ = _run_here()
    assert names[:2] == ["dense/kernel:0[5, 4]", "dense/bias:0[4]"]
    assert "lstm/lstm_cell/recurrent_kernel:0[4, 16]" in names
    assert "gru/gru_cell/bias:0[12]" in names
    assert "gru_2/gru_cell/bias:0[2, 6]" in names
    assert "bidirectional/forward_lstm_3/lstm_cell/kernel:0[3, 12]" in names
    assert all(np.all(np.isfinite(v)) for v in values)


@pytest.mark.oracle
@pytest.mark.slow
@pytest.mark.timeout(400)
def test_every_case_matches_tf_keras(monkeypatch):
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")  # tf.keras = tf_keras (Keras 2)
    ours_names, ours, out_labels = _run_here()
    inputs = {k: (v.tolist(), str(v.dtype)) for k, v in INPUTS.items()}
    theirs_names, theirs, _ = oracle.run_tf(
        f"INPUTS = {{k: np.array(v, d) for k, (v, d) in {inputs!r}.items()}}\n"
        f"CASES = {CASES!r}\n{PROGRAM}", timeout=240)
    assert ours_names == theirs_names
    labels = out_labels + [
        "grad " + k for k in sorted(INPUTS) if k != "ids"] + [
        "grad " + n for n in ours_names if "moving" not in n] + ["moving"] * 99
    assert len(ours) == len(theirs)
    for label, a, b in zip(labels, ours, theirs, strict=False):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-4, err_msg=label)
