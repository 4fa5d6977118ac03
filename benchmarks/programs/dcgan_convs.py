"""The 5x5 convolutions of a DCGAN (tflearn's examples/images/dcgan.py: conv2d_transpose
generator, strided 5x5 discriminator) as single ops, batch 64, NHWC, float32: each
Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter alone, its operands held in variables,
one value of its result fetched.
A conv2d_transpose is a Conv2DBackpropInput, and its gradients are the Conv2D and the
Conv2DBackpropFilter of the strided conv it transposes, so one strided conv's three ops
cover one transposed conv:
  - s1: 5x5, 64 -> 128 channels, 14x14, SAME, stride 1;
  - s2a: 5x5/2, 28x28x1 -> 14x14x64, SAME (its backprop-input: conv2d_transpose
    [64,14,14,64] -> [64,28,28,1]);
  - s2b: 5x5/2, 14x14x64 -> 7x7x128, SAME (its backprop-input: conv2d_transpose
    [64,7,7,128] -> [64,14,14,64]);
  - s1c1: 5x5, 28x28x64 -> 1 channel, SAME, stride 1 (a generator's last layer after a
    resize, as in /tmp/s28's DCGAN step).
Figure: median time of one run of the op over 15 runs after 3 warm-up runs, in ms.
Last, `dcgan_step`: one training step of tflearn's DCGAN example as its fit runs it (the
discriminator's Adam step on fake and real images, then the generator's through the
discriminator; generator: dense 7x7x128, batch norm, tanh, nearest-neighbour upsampling
and 5x5 convs to 64 then 1 channel; discriminator: 5x5 convs to 64 and 128 channels, 2x2
average pools, dense 1024 and 2), batch 64: median of 10 steps after 3, in ms.

    python benchmarks/programs/dcgan_convs.py --backend tensorflux|tensorflow
"""

import os
import time

import _conv_ops
import numpy as np
from _bench import BACKEND, emit, guarded

if BACKEND == "tensorflow":
    os.environ["TF_USE_LEGACY_KERAS"] = "1"  # (tf.layers)
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import tensorflux as tf

BATCH = 64
# name: (input HWC, filter size, output channels, stride)
CONVS = {"s1": ((14, 14, 64), 5, 128, 1),
         "s2a": ((28, 28, 1), 5, 64, 2),
         "s2b": ((14, 14, 64), 5, 128, 2),
         "s1c1": ((28, 28, 64), 5, 1, 1)}


for conv, (hwc, k, f, s) in CONVS.items():
    for kind in ("fwd", "bpi", "bpf"):
        name = f"dcgan_{conv}_{kind}"
        label = _conv_ops.label(kind, hwc, k, f, s, BATCH)
        with guarded(name, label=label):
            ms = _conv_ops.conv_op_ms(tf, kind, hwc, k, f, s, BATCH, scale=0.05)
            emit(name, ms, "ms", "lower", label=label)


def _generator(z):
    with tf.variable_scope("G", reuse=tf.AUTO_REUSE):
        x = tf.layers.dense(z, 7 * 7 * 128)
        mean, var = tf.nn.moments(x, [0])
        x = tf.tanh(tf.nn.batch_normalization(x, mean, var, None, None, 1e-5))
        x = tf.image.resize_nearest_neighbor(tf.reshape(x, [-1, 7, 7, 128]), [14, 14])
        x = tf.layers.conv2d(x, 64, 5, padding="same", activation=tf.tanh)
        x = tf.image.resize_nearest_neighbor(x, [28, 28])
        return tf.layers.conv2d(x, 1, 5, padding="same", activation=tf.sigmoid)


def _discriminator(x):
    with tf.variable_scope("D", reuse=tf.AUTO_REUSE):
        x = tf.layers.conv2d(x, 64, 5, padding="same", activation=tf.tanh)
        x = tf.nn.avg_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
        x = tf.layers.conv2d(x, 128, 5, padding="same", activation=tf.tanh)
        x = tf.nn.avg_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
        x = tf.layers.dense(tf.reshape(x, [-1, 7 * 7 * 128]), 1024, activation=tf.tanh)
        return tf.layers.dense(x, 2)


def _xent(logits, label):
    labels = tf.one_hot(tf.fill([BATCH], label), 2)
    return tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels,
                                                                     logits=logits))


STEP = "dcgan_step"
STEP_LABEL = ("DCGAN (tflearn's example) discriminator + generator Adam steps, batch 64 "
              "(median)")
with guarded(STEP, label=STEP_LABEL):
    rng = np.random.default_rng(0)
    g = tf.Graph()
    with g.as_default():
        z = tf.placeholder(tf.float32, [BATCH, 200])
        real = tf.placeholder(tf.float32, [BATCH, 28, 28, 1])
        loss_d = _xent(_discriminator(_generator(z)), 0) + _xent(_discriminator(real), 1)
        loss_g = _xent(_discriminator(_generator(z)), 1)
        d_vars = [v for v in tf.trainable_variables() if v.name.startswith("D/")]
        g_vars = [v for v in tf.trainable_variables() if v.name.startswith("G/")]
        train_d = tf.train.AdamOptimizer(1e-3).minimize(loss_d, var_list=d_vars)
        train_g = tf.train.AdamOptimizer(1e-3).minimize(loss_g, var_list=g_vars)
        init = tf.global_variables_initializer()
    feed = {z: rng.uniform(-1, 1, (BATCH, 200)).astype(np.float32),
            real: rng.random((BATCH, 28, 28, 1)).astype(np.float32)}
    with tf.Session(graph=g) as sess:
        sess.run(init)
        for _ in range(3):
            sess.run(train_d, feed)
            sess.run(train_g, feed)
        times = []
        for _ in range(10):
            t = time.perf_counter()
            sess.run(train_d, feed)
            sess.run(train_g, feed)
            times.append(time.perf_counter() - t)
    emit(STEP, float(np.median(times)) * 1e3, "ms", "lower", label=STEP_LABEL)
