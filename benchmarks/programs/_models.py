"""Layers and timing shared by mlp_step.py and cnn_step.py, written against a `tf` module
passed in (the programs choose the backend). Copied in structure from
../shared/anchors/tf_models.py.
"""

from __future__ import annotations

import time

import numpy as np

WARMUP = 5
BUDGET_S = 20.0  # timed steps stop early past this, keeping a program well under a minute


def dense(tf, h, n, act=None):
    d = int(h.shape[-1])
    w = tf.Variable(tf.random_normal([d, n], stddev=0.05))
    b = tf.Variable(tf.zeros([n]))
    o = tf.matmul(h, w) + b
    return act(o) if act else o


def conv(tf, h, n, k, act=None):
    d = int(h.shape[-1])
    w = tf.Variable(tf.random_normal([k, k, d, n], stddev=0.05))
    b = tf.Variable(tf.zeros([n]))
    o = tf.nn.conv2d(h, w, strides=[1, 1, 1, 1], padding="SAME") + b
    return act(o) if act else o


def mlp(tf, device_fn=None):
    """The MLP of ../shared/anchors/tf_models.py: 784-512-512-10 (ReLU), sparse softmax
    cross-entropy, Adam(1e-3), in a new Graph under `tf.device(device_fn)`.

    Returns (graph, x, y, init, train).
    """
    g = tf.Graph()
    with g.as_default(), tf.device(device_fn):
        x = tf.placeholder(tf.float32, [None, 784])
        y = tf.placeholder(tf.int64, [None])
        h = dense(tf, dense(tf, x, 512, tf.nn.relu), 512, tf.nn.relu)
        logits = dense(tf, h, 10)
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        train = tf.train.AdamOptimizer(1e-3).minimize(loss)
        init = tf.global_variables_initializer()
    return g, x, y, init, train


def median_step_ms(sess, op, feed, reps):
    """Median wall time of `sess.run(op, feed)` over `reps` steps after WARMUP steps.

    Returns (median in ms, number of timed steps); fewer than `reps` (at least 3) when the
    steps are slow enough to pass BUDGET_S.
    """
    for _ in range(WARMUP):
        sess.run(op, feed)
    times = []
    start = time.perf_counter()
    while len(times) < reps and (len(times) < 3 or time.perf_counter() - start < BUDGET_S):
        t = time.perf_counter()
        sess.run(op, feed)
        times.append(time.perf_counter() - t)
    return float(np.median(times)) * 1e3, len(times)
