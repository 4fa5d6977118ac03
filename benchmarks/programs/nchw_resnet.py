"""One training step of a small CIFAR ResNet (tensorpack's cifar10-resnet.py shape, n=2):
conv3x3x16, then three stages of two residual blocks (16, 32, 64 channels; the first block
of stages 2 and 3 strides 2 and widens its shortcut by a strided 1x1 conv), each block
conv3x3-BN-ReLU-conv3x3-BN + shortcut, ReLU; batch norm fused (tf.layers, training mode),
global average pool, fc10, sparse softmax cross-entropy, Momentum(0.1, 0.9); 32x32x3
images, batch 64. Built twice: `nchw_resnet` in NCHW (channels_first convs, fused batch
norm on axis 1, mean over axes 2 and 3) and `nhwc_resnet` in NHWC, the same model, so the
two layouts compare on both backends (TensorFlow's CPU kernels run NCHW through oneDNN).
Figures: median step time over 10 steps after 5 warm-up steps, in ms, with the median CPU
time of the process per step beside it (`cpu_ms`).

    python benchmarks/programs/nchw_resnet.py --backend tensorflux|tensorflow
"""

import os

import numpy as np
from _bench import BACKEND, emit, guarded
from _models import median_step_ms

if BACKEND == "tensorflow":
    os.environ["TF_USE_LEGACY_KERAS"] = "1"  # (tf.layers)
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import tensorflux as tf

BATCH = 64
BLOCKS = 2  # residual blocks per stage


def _resnet(channels_first: bool):
    fmt = "channels_first" if channels_first else "channels_last"
    axis = 1 if channels_first else 3
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(0)
        shape = [BATCH, 3, 32, 32] if channels_first else [BATCH, 32, 32, 3]
        x = tf.placeholder(tf.float32, shape)
        y = tf.placeholder(tf.int64, [BATCH])

        def conv(h, n, stride=1, k=3):
            return tf.layers.conv2d(h, n, k, stride, "same", data_format=fmt,
                                    use_bias=False)

        def bn(h):
            return tf.layers.batch_normalization(h, axis=axis, fused=True, training=True)

        h = tf.nn.relu(bn(conv(x, 16)))
        for stage, n in enumerate((16, 32, 64)):
            for block in range(BLOCKS):
                stride = 2 if stage > 0 and block == 0 else 1
                r = tf.nn.relu(bn(conv(h, n, stride)))
                r = bn(conv(r, n))
                short = conv(h, n, stride, k=1) if stride > 1 else h
                h = tf.nn.relu(r + short)
        h = tf.reduce_mean(h, [2, 3] if channels_first else [1, 2])
        logits = tf.layers.dense(h, 10)
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        with tf.control_dependencies(updates):
            train = tf.train.MomentumOptimizer(0.1, 0.9).minimize(loss)
        init = tf.global_variables_initializer()
    return g, x, y, init, train


def _measure(name: str, channels_first: bool):
    label = (f"CIFAR ResNet (3 stages x {BLOCKS} blocks, 16/32/64 ch), 32x32, batch "
             f"{BATCH}, fused BN, Momentum, {'NCHW' if channels_first else 'NHWC'}: "
             "one step (median)")
    with guarded(name, label=label):
        rng = np.random.default_rng(0)
        g, x, y, init, train = _resnet(channels_first)
        shape = (BATCH, 3, 32, 32) if channels_first else (BATCH, 32, 32, 3)
        with tf.Session(graph=g) as sess:
            sess.run(init)
            feed = {x: rng.standard_normal(shape).astype(np.float32),
                    y: rng.integers(0, 10, BATCH)}
            ms, steps, cpu_ms = median_step_ms(sess, train, feed, 10, with_cpu=True)
        emit(name, ms, "ms", "lower", label=label, steps=steps,
             cpu_ms=round(cpu_ms, 1))


_measure("nchw_resnet", True)
_measure("nhwc_resnet", False)
