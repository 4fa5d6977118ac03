"""Seeded TF1 training programs whose results must be the same bits in every process
(tests/runtime/test_determinism.py runs them in several fresh processes and compares).

Each program builds its graph in a graph of its own under `tf.set_random_seed`, trains a
few steps on fixed data with the session's default (multi-threaded) intra-op settings, and
returns the md5 of what it computed (every global variable, and what it fetched). Sizes are
small, but each program has kernels big enough to split over the intra-op threads
(intra_op.MIN_FLOPS, MIN_ELEMENTS).

    python -c "from tests.runtime.determinism_programs import main; main()" [names...]

prints one JSON object {name: digest}.
"""

from __future__ import annotations

import hashlib
import json
import sys

import numpy as np

import tensorflux as tf


def _digest(arrays) -> str:
    h = hashlib.md5()
    for a in arrays:
        a = np.asarray(a)
        h.update(str((a.dtype.str, a.shape)).encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _train(train, feeds, steps: int, fetches=()) -> str:
    """Runs `train` `steps` times with `feeds` (a function of the step, or a dict), then
    digests every global variable and the last step's `fetches`."""
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(tf.local_variables_initializer())
        got = []
        for i in range(steps):
            got = sess.run([train, *fetches], feeds(i) if callable(feeds) else feeds)[1:]
        return _digest(sess.run(tf.global_variables()) + got)


def cnn() -> str:
    """The brief's convnet: 5x5 convs, max pooling, batch norm, Momentum."""
    x = tf.placeholder(tf.float32, [None, 32, 32, 3])
    y = tf.placeholder(tf.int64, [None])
    h = tf.layers.conv2d(x, 32, 5, activation=tf.nn.relu)
    h = tf.layers.max_pooling2d(h, 2, 2)
    h = tf.layers.conv2d(h, 64, 5, activation=tf.nn.relu)
    h = tf.layers.batch_normalization(h, training=True)
    logits = tf.layers.dense(tf.layers.flatten(h), 10)
    loss = tf.losses.sparse_softmax_cross_entropy(y, logits)
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train = tf.train.MomentumOptimizer(0.01, 0.9).minimize(loss)
    rng = np.random.default_rng(0)
    data = {x: rng.standard_normal((64, 32, 32, 3)).astype(np.float32),
            y: rng.integers(0, 10, 64)}
    return _train(train, data, 4, [loss])


def convs() -> str:
    """3x3 convs (Winograd F(4x4) at 28x28, F(2x2) at 14x14), a 5x5 conv (Winograd F(4x4,
    5x5) or the FFT), 1x1 and strided convs, conv2d_transpose, fused batch norm; Adam."""
    x = tf.placeholder(tf.float32, [16, 28, 28, 8])
    h = tf.layers.conv2d(x, 48, 3, padding="same", activation=tf.nn.relu)
    h = tf.layers.conv2d(h, 48, 3, padding="same", use_bias=False)
    h = tf.nn.relu(tf.layers.batch_normalization(h, training=True, fused=True))
    h = tf.layers.max_pooling2d(h, 2, 2)
    h = tf.layers.conv2d(h, 64, 3, padding="same", activation=tf.nn.relu)
    h = tf.layers.conv2d(h, 64, 5, padding="same", activation=tf.nn.relu)
    h = tf.layers.conv2d(h, 32, 1)
    h = tf.layers.conv2d(h, 32, 3, strides=2, padding="same", activation=tf.nn.relu)
    h = tf.layers.conv2d_transpose(h, 8, 4, strides=4, padding="same")
    loss = tf.reduce_mean(tf.square(h - x))
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train = tf.train.AdamOptimizer(1e-3).minimize(loss)
    rng = np.random.default_rng(1)
    return _train(train, {x: rng.standard_normal(x.shape.as_list()).astype(np.float32)}, 3,
                  [loss])


def lstm() -> str:
    """tf.nn.dynamic_rnn over an LSTM (a while loop: the dataflow executor), RMSProp."""
    x = tf.placeholder(tf.float32, [64, 12, 48])
    y = tf.placeholder(tf.float32, [64, 8])
    cell = tf.nn.rnn_cell.LSTMCell(256)
    out, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    pred = tf.layers.dense(out[:, -1], 8)
    loss = tf.losses.mean_squared_error(y, pred)
    train = tf.train.RMSPropOptimizer(1e-3).minimize(loss)
    rng = np.random.default_rng(2)
    data = {x: rng.standard_normal((64, 12, 48)).astype(np.float32),
            y: rng.standard_normal((64, 8)).astype(np.float32)}
    return _train(train, data, 3, [loss])


def embedding() -> str:
    """embedding_lookup (sparse gradients with repeated ids) trained with Adam's sparse
    update, beside a dense layer; dropout draws from the seeded stream every step."""
    ids = tf.placeholder(tf.int64, [256, 20])
    y = tf.placeholder(tf.int64, [256])
    table = tf.get_variable("table", [5000, 64])
    h = tf.reduce_mean(tf.nn.embedding_lookup(table, ids), axis=1)
    h = tf.nn.dropout(tf.layers.dense(h, 512, activation=tf.nn.relu), keep_prob=0.8)
    logits = tf.layers.dense(h, 50)
    loss = tf.losses.sparse_softmax_cross_entropy(y, logits)
    train = tf.train.AdamOptimizer(1e-2).minimize(loss)
    rng = np.random.default_rng(3)

    def feeds(i):
        return {ids: rng.zipf(1.3, (256, 20)) % 5000, y: rng.integers(0, 50, 256)}

    return _train(train, feeds, 4, [loss])


def reductions() -> str:
    """Reductions over big tensors (full, per axis, mean, max, logsumexp, norms) and a
    product over a long inner dimension (the gradient of a wide batch), with their
    gradients."""
    x = tf.placeholder(tf.float32, [4096, 384])
    w = tf.get_variable("w", [384, 256])
    z = tf.matmul(x, w)
    terms = [tf.reduce_sum(z), tf.reduce_mean(tf.reduce_sum(tf.square(z), axis=0)),
             tf.reduce_mean(tf.reduce_max(z, axis=1)),
             tf.reduce_mean(tf.reduce_logsumexp(z, axis=1)), tf.norm(z), tf.nn.l2_loss(w)]
    loss = tf.add_n(terms) * 1e-6
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    big = tf.reduce_sum(tf.reshape(z, [-1])) + tf.reduce_sum(x, axis=[0, 1])
    rng = np.random.default_rng(4)
    data = {x: rng.standard_normal((4096, 384)).astype(np.float32)}
    return _train(train, data, 3, [big, *terms])


def dataset() -> str:
    """A tf.data pipeline (shuffle with a seed, map with parallel calls, batch, prefetch)
    feeding a small model."""
    rng = np.random.default_rng(5)
    feats = rng.standard_normal((512, 64)).astype(np.float32)
    labels = rng.integers(0, 10, 512)
    ds = tf.data.Dataset.from_tensor_slices((feats, labels)).shuffle(512, seed=7)
    ds = ds.map(lambda a, b: (tf.tanh(a) * 2.0 + tf.reduce_mean(a), b),
                num_parallel_calls=4).batch(64).prefetch(2)
    a, b = ds.make_one_shot_iterator().get_next()
    logits = tf.layers.dense(tf.layers.dense(a, 256, activation=tf.nn.relu), 10)
    loss = tf.losses.sparse_softmax_cross_entropy(b, logits)
    train = tf.train.AdamOptimizer(1e-3).minimize(loss)
    return _train(train, {}, 6, [a, b, loss])


PROGRAMS = {f.__name__: f for f in (cnn, convs, lstm, embedding, reductions, dataset)}


def run(name: str) -> str:
    """The digest of program `name`, built in a graph of its own with seed 1."""
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        return PROGRAMS[name]()


def main(argv=None) -> None:
    names = (sys.argv[1:] if argv is None else argv) or list(PROGRAMS)
    print(json.dumps({name: run(name) for name in names}))


if __name__ == "__main__":
    main()
