"""One convolution op alone, for the programs that time a model's convs one by one
(dcgan_convs.py, resnet_convs.py): its operands held in variables, one value of its result
fetched, with whichever `tf` module is passed in."""

from __future__ import annotations

import time

import numpy as np

LABELS = {"fwd": "Conv2D", "bpi": "Conv2DBackpropInput", "bpf": "Conv2DBackpropFilter"}


def label(kind: str, hwc, k: int, f: int, s: int, batch: int) -> str:
    h, w, c = hwc
    return f"{LABELS[kind]} {k}x{k}/{s} {h}x{w}x{c} -> {f}, batch {batch}, SAME (median)"


def median_ms(sess, op, reps: int = 15, warmup: int = 3) -> float:
    """The median time of `sess.run(op)` over `reps` runs after `warmup`, in ms."""
    for _ in range(warmup):
        sess.run(op)
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        sess.run(op)
        times.append(time.perf_counter() - t)
    return float(np.median(times)) * 1e3


def conv_op_ms(tf, kind: str, hwc, k: int, f: int, s: int, batch: int,
               scale: float) -> float:
    """The median time of one conv op (`kind`: fwd, bpi or bpf) of a k x k, stride-s,
    SAME NHWC conv of [batch, *hwc] to `f` channels (filter values N(0, scale^2))."""
    g = tf.Graph()
    with g.as_default():
        rng = np.random.default_rng(0)
        h, w, c = hwc
        oh, ow = -(-h // s), -(-w // s)
        strides = [1, s, s, 1]
        x = tf.Variable(rng.standard_normal((batch, h, w, c)).astype(np.float32))
        wt = tf.Variable(rng.standard_normal((k, k, c, f)).astype(np.float32) * scale)
        dy = tf.Variable(rng.standard_normal((batch, oh, ow, f)).astype(np.float32))
        if kind == "fwd":
            out = tf.nn.conv2d(x, wt, strides, "SAME")
        elif kind == "bpi":
            out = tf.nn.conv2d_backprop_input([batch, h, w, c], wt, dy, strides, "SAME")
        else:
            out = tf.nn.conv2d_backprop_filter(x, [k, k, c, f], dy, strides, "SAME")
        op = out[0, 0, 0, 0]  # (one value fetched)
        init = tf.global_variables_initializer()
    with tf.Session(graph=g) as sess:
        sess.run(init)
        return median_ms(sess, op)
