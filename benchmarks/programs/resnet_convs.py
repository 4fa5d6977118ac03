"""The 3x3 and 1x1 convolutions of a small CIFAR ResNet (nchw_resnet.py's `nhwc_resnet`:
conv3x3x16, three stages of two residual blocks at 16/32/64 channels, 32x32 -> 16x16 ->
8x8, strided 1x1 shortcuts) as single ops, batch 64, NHWC, float32, SAME: each Conv2D,
Conv2DBackpropInput and Conv2DBackpropFilter alone, its operands held in variables, one
value of its result fetched. Informational (no target): which of the step's convs lag.
  - stem: 3x3, 32x32x3 -> 16 (no backprop-input in a step: its input is the images);
  - s1a: 3x3, 32x32x16 -> 16 (4 convs a step); s2in: 3x3/2, 32x32x16 -> 16x16x32 (1);
  - s1b: 3x3, 16x16x32 -> 32 (3); s3in: 3x3/2, 16x16x32 -> 8x8x64 (1);
  - s1c: 3x3, 8x8x64 -> 64 (3); p2: 1x1/2, 32x32x16 -> 32 (1); p3: 1x1/2, 16x16x32 -> 64.
Figure: median time of one run of the op over 15 runs after 3 warm-up runs, in ms; `count`
says how many convs of the shape a training step has.

    python benchmarks/programs/resnet_convs.py --backend tensorflux|tensorflow [NAME...]
"""

import sys
import time

import numpy as np
from _bench import BACKEND, emit, guarded

if BACKEND == "tensorflow":
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import tensorflux as tf

BATCH = 64
# name: (input HWC, filter size, output channels, stride, convs a step)
CONVS = {"stem": ((32, 32, 3), 3, 16, 1, 1),
         "s1a": ((32, 32, 16), 3, 16, 1, 4),
         "s2in": ((32, 32, 16), 3, 32, 2, 1),
         "s1b": ((16, 16, 32), 3, 32, 1, 3),
         "s3in": ((16, 16, 32), 3, 64, 2, 1),
         "s1c": ((8, 8, 64), 3, 64, 1, 3),
         "p2": ((32, 32, 16), 1, 32, 2, 1),
         "p3": ((16, 16, 32), 1, 64, 2, 1)}
LABELS = {"fwd": "Conv2D", "bpi": "Conv2DBackpropInput", "bpf": "Conv2DBackpropFilter"}
ONLY = [a for a in sys.argv[1:] if not a.startswith("-") and a in CONVS]


def _median_ms(sess, op, reps=15, warmup=3):
    for _ in range(warmup):
        sess.run(op)
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        sess.run(op)
        times.append(time.perf_counter() - t)
    return float(np.median(times)) * 1e3


def _ops(hwc, k, f, s):
    rng = np.random.default_rng(0)
    h, w, c = hwc
    oh, ow = -(-h // s), -(-w // s)
    strides = [1, s, s, 1]
    x = tf.Variable(rng.standard_normal((BATCH, h, w, c)).astype(np.float32))
    wt = tf.Variable(rng.standard_normal((k, k, c, f)).astype(np.float32) * 0.1)
    dy = tf.Variable(rng.standard_normal((BATCH, oh, ow, f)).astype(np.float32))
    return {"fwd": tf.nn.conv2d(x, wt, strides, "SAME"),
            "bpi": tf.nn.conv2d_backprop_input([BATCH, h, w, c], wt, dy, strides, "SAME"),
            "bpf": tf.nn.conv2d_backprop_filter(x, [k, k, c, f], dy, strides, "SAME")}


for conv, (hwc, k, f, s, count) in CONVS.items():
    if ONLY and conv not in ONLY:
        continue
    for kind in ("fwd", "bpi", "bpf"):
        if conv == "stem" and kind == "bpi":
            continue
        name = f"resnet_{conv}_{kind}"
        h, w, c = hwc
        label = (f"{LABELS[kind]} {k}x{k}/{s} {h}x{w}x{c} -> {f}, batch {BATCH}, SAME "
                 f"(median)")
        with guarded(name, label=label):
            g = tf.Graph()
            with g.as_default():
                op = _ops(hwc, k, f, s)[kind][0, 0, 0, 0]  # (one value fetched)
                init = tf.global_variables_initializer()
            with tf.Session(graph=g) as sess:
                sess.run(init)
                ms = _median_ms(sess, op)
            emit(name, ms, "ms", "lower", label=label, count=count)
