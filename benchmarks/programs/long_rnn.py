"""A long recurrence: tf.nn.dynamic_rnn of BasicRNNCell(100) over 784 steps (pixel-by-pixel
MNIST's shape: inputs [batch, 784, 1]), batch 32, a dense layer to 10 logits, sparse softmax
cross-entropy, GradientDescent(0.001); default session config. Figures: the median
training step (forward loop, gradient loop, update) over 10 steps after 5 warm-up, in ms,
with the median CPU time of the process per step; and, informational, the forward loop
alone (fetching the final state).

The loop is 784 iterations of a few small kernels (a [32, 101] x [101, 100] product, a
tanh), so the per-node cost of running a loop frame is most of the step: the target is the
compiled loops' (runtime/compiled_loops.py), forward and gradient.

    python benchmarks/programs/long_rnn.py --backend tensorflux|tensorflow
"""

import numpy as np
from _bench import BACKEND, emit, guarded
from _models import median_step_ms

if BACKEND == "tensorflow":
    import tensorflow.compat.v1 as tf
    from tensorflow.python.keras.layers.legacy_rnn import rnn_cell_impl as rnn_cell

    tf.disable_v2_behavior()
else:
    import tensorflux as tf

    rnn_cell = tf.nn.rnn_cell

STEPS, BATCH, UNITS = 784, 32, 100
REPS = 10


def long_rnn():
    """(graph, x, y, init, train op, final state) of the model above."""
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(0)
        x = tf.placeholder(tf.float32, [None, STEPS, 1])
        y = tf.placeholder(tf.int64, [None])
        _, state = tf.nn.dynamic_rnn(rnn_cell.BasicRNNCell(UNITS), x, dtype=tf.float32)
        w = tf.get_variable("dense/kernel", [UNITS, 10])
        b = tf.get_variable("dense/bias", [10], initializer=tf.zeros_initializer())
        logits = tf.matmul(state, w) + b
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                             logits=logits))
        train = tf.train.GradientDescentOptimizer(0.001).minimize(loss)
        init = tf.global_variables_initializer()
    return g, x, y, init, train, state


NAME = "long_rnn_step"
LABEL = ("RNN-100 over 784 steps (dynamic_rnn), batch 32, SGD: one training step "
         "(median)")
TARGET = 1.0  # step time <= TensorFlow's (issue 20: ahead on every model step)
NAME_FORWARD = "long_rnn_forward"
LABEL_FORWARD = "RNN-100 over 784 steps as above: the forward loop alone (median)"
with guarded(NAME, NAME_FORWARD, label=LABEL, target=TARGET):
    rng = np.random.default_rng(0)
    g, x, y, init, train, state = long_rnn()
    with tf.Session(graph=g) as sess:
        sess.run(init)
        feed = {x: rng.standard_normal((BATCH, STEPS, 1)).astype(np.float32),
                y: rng.integers(0, 10, BATCH)}
        ms, steps, cpu = median_step_ms(sess, train, feed, REPS, with_cpu=True)
        emit(NAME, ms, "ms", "lower", label=LABEL, target=TARGET, steps=steps, cpu_ms=cpu)
        ms, steps, cpu = median_step_ms(sess, state, feed, REPS, with_cpu=True)
        emit(NAME_FORWARD, ms, "ms", "lower", label=LABEL_FORWARD, steps=steps, cpu_ms=cpu)
