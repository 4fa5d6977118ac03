"""One training step of an MLP 784-512-512-10 (ReLU), batch 128, sparse softmax
cross-entropy, Adam(1e-3); default session config. Figure: median step time over 30 steps
after 5 warm-up steps, in ms. The model of ../shared/anchors/tf_models.py.

    python benchmarks/programs/mlp_step.py --backend tensorflux|tensorflow
"""

import numpy as np
from _bench import BACKEND, emit, guarded
from _models import median_step_ms, mlp

if BACKEND == "tensorflow":
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import tensorflux as tf

NAME = "mlp_step"
LABEL = "MLP 784-512-512-10, batch 128, Adam: one training step (median)"
TARGET = 1.0  # step time <= 1.0x TensorFlow's
with guarded(NAME, label=LABEL, target=TARGET):
    rng = np.random.default_rng(0)
    g, x, y, init, train = mlp(tf)
    with tf.Session(graph=g) as sess:
        sess.run(init)
        feed = {x: rng.standard_normal((128, 784)).astype(np.float32),
                y: rng.integers(0, 10, 128)}
        ms, steps = median_step_ms(sess, train, feed, 30)
    emit(NAME, ms, "ms", "lower", label=LABEL, target=TARGET, steps=steps)
