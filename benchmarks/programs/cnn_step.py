"""One training step of a small CNN on 32x32x3 images, batch 64: conv5x5x32-ReLU, max pool,
conv5x5x64-ReLU, max pool, fc256-ReLU, fc10, sparse softmax cross-entropy,
Momentum(0.01, 0.9); default session config. Figure: median step time over 10 steps after 5
warm-up steps, in ms, with the median CPU time of the process per step beside it
(`cpu_ms`). The model of ../shared/anchors/tf_models.py.

    python benchmarks/programs/cnn_step.py --backend tensorflux|tensorflow
"""

import numpy as np
from _bench import BACKEND, emit, guarded
from _models import cnn, median_step_ms

if BACKEND == "tensorflow":
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import tensorflux as tf

NAME = "cnn_step"
LABEL = "CNN 2x(conv5x5+pool) fc256 fc10, 32x32x3, batch 64, Momentum: one step (median)"
TARGET = 1 / 1.5  # step time <= 1.5x TensorFlow's

with guarded(NAME, label=LABEL, target=TARGET):
    rng = np.random.default_rng(0)
    g, x, y, init, train = cnn(tf)
    with tf.Session(graph=g) as sess:
        sess.run(init)
        feed = {x: rng.standard_normal((64, 32, 32, 3)).astype(np.float32),
                y: rng.integers(0, 10, 64)}
        ms, steps, cpu_ms = median_step_ms(sess, train, feed, 10, with_cpu=True)
    emit(NAME, ms, "ms", "lower", label=LABEL, target=TARGET, steps=steps,
         cpu_ms=round(cpu_ms, 1))
