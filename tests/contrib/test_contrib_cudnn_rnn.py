"""tf.contrib.cudnn_rnn: the cuDNN-compatible CPU cells (variable names, and values against
NumPy transcriptions of cuDNN's LSTM and GRU) and the cuDNN layers' CPU behaviour."""

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.contrib import cudnn_rnn

RNG = np.random.RandomState(2)
X = RNG.randn(2, 4, 3).astype(np.float32)  # batch, time, depth


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def _run_cell(cell):
    with tf.Graph().as_default():
        out, _ = tf.nn.dynamic_rnn(cell, tf.constant(X), dtype=tf.float32)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for v in tf.global_variables():  # values that make every term matter
                sess.run(v.assign(RNG.randn(*v.shape.as_list()).astype(np.float32) * 0.5))
            values = {v.op.name.split("/", 2)[-1]: sess.run(v) for v in tf.global_variables()}
            names = sorted(v.op.name for v in tf.global_variables())
            return sess.run(out), values, names


def test_compatible_gru_cell():
    out, w, names = _run_cell(cudnn_rnn.CudnnCompatibleGRUCell(5))
    assert names == sorted(f"rnn/cudnn_compatible_gru_cell/{n}" for n in [
        "gates/kernel", "gates/bias", "candidate/input_projection/kernel",
        "candidate/input_projection/bias", "candidate/hidden_projection/kernel",
        "candidate/hidden_projection/bias"])
    h = np.zeros((2, 5))
    for t in range(4):
        x = X[:, t]
        gates = _sigmoid(np.concatenate([x, h], 1) @ w["gates/kernel"] + w["gates/bias"])
        r, u = gates[:, :5], gates[:, 5:]
        c = np.tanh(x @ w["candidate/input_projection/kernel"] +
                    w["candidate/input_projection/bias"] +
                    r * (h @ w["candidate/hidden_projection/kernel"] +
                         w["candidate/hidden_projection/bias"]))
        h = (1 - u) * c + u * h
        np.testing.assert_allclose(out[:, t], h, rtol=1e-4, atol=1e-5)


def test_compatible_lstm_cell():
    out, w, names = _run_cell(cudnn_rnn.CudnnCompatibleLSTMCell(5))
    assert names == ["rnn/cudnn_compatible_lstm_cell/bias",
                     "rnn/cudnn_compatible_lstm_cell/kernel"]
    h, c = np.zeros((2, 5)), np.zeros((2, 5))
    for t in range(4):
        z = np.concatenate([X[:, t], h], 1) @ w["kernel"] + w["bias"]
        i, ci, f, o = np.split(z, 4, axis=1)  # no forget bias
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(ci)
        h = _sigmoid(o) * np.tanh(c)
        np.testing.assert_allclose(out[:, t], h, rtol=1e-4, atol=1e-5)


def test_cudnn_layers_on_cpu():
    with pytest.raises(ValueError, match="Invalid direction: both"):
        cudnn_rnn.CudnnLSTM(1, 4, direction="both")
    with pytest.raises(ValueError, match="Invalid input_mode: x"):
        cudnn_rnn.CudnnGRU(1, 4, input_mode="x")
    layer = cudnn_rnn.CudnnLSTM(2, 4, direction=cudnn_rnn.CUDNN_RNN_BIDIRECTION)
    assert layer.num_dirs == 2 and layer.rnn_mode == "lstm"
    with tf.Graph().as_default(), pytest.raises(tf.errors.InvalidArgumentError,
                                                match="No OpKernel was registered"):
        layer(tf.zeros([3, 2, 4]))
