"""One training step of an LSTM-512 language model: embedding lookup on a [10000, 512]
variable, BasicLSTMCell(512) unrolled by tf.nn.dynamic_rnn over 20 time steps, batch 32,
full softmax over a 10,000-word vocabulary (sparse softmax cross-entropy on [640, 10000]
logits), Adam(1e-3); default session config. Figure: median step time over 10 steps after
5 warm-up steps, in ms (issue 4's target: <= 1.5x TensorFlow's).

An informational second figure runs the same model unrolled by tf.nn.static_rnn (no
while loop: the plain graph path), to separate the loop's cost from the kernels'.

    python benchmarks/programs/lstm_lm.py --backend tensorflux|tensorflow
"""

import numpy as np
from _bench import BACKEND, emit, guarded
from _models import lstm_lm, median_step_ms

if BACKEND == "tensorflow":
    import tensorflow.compat.v1 as tf

    # TF 2.21 with Keras 3 no longer exports tf.compat.v1.nn.rnn_cell; its TF1 cells live on
    # in the legacy module.
    from tensorflow.python.keras.layers.legacy_rnn import rnn_cell_impl as rnn_cell

    tf.disable_v2_behavior()
else:
    import tensorflux as tf

    rnn_cell = tf.nn.rnn_cell

VOCAB, HIDDEN, STEPS, BATCH = 10000, 512, 20, 32
REPS = 10


def measure(unroll: str):
    rng = np.random.default_rng(0)
    g, x, y, init, train = lstm_lm(tf, rnn_cell, unroll, VOCAB, HIDDEN, STEPS, BATCH)
    with tf.Session(graph=g) as sess:
        sess.run(init)
        feed = {x: rng.integers(0, VOCAB, (BATCH, STEPS)).astype(np.int32),
                y: rng.integers(0, VOCAB, (BATCH, STEPS)).astype(np.int32)}
        return median_step_ms(sess, train, feed, REPS)


NAME = "lstm_lm_step"
LABEL = ("LSTM-512 LM, dynamic_rnn 20 steps, batch 32, vocab 10k full softmax, Adam: "
         "one training step (median)")
TARGET = 1 / 1.5  # step time <= 1.5x TensorFlow's
with guarded(NAME, label=LABEL, target=TARGET):
    ms, steps = measure("dynamic")
    emit(NAME, ms, "ms", "lower", label=LABEL, target=TARGET, steps=steps)

NAME_STATIC = "lstm_lm_static_step"
LABEL_STATIC = "LSTM-512 LM as above, unrolled by static_rnn (no while loop)"
with guarded(NAME_STATIC, label=LABEL_STATIC):
    ms, steps = measure("static")
    emit(NAME_STATIC, ms, "ms", "lower", label=LABEL_STATIC, steps=steps)
