"""A character-level LSTM's training step at a large hidden size: the model of tflearn's
examples/nlp/lstm_generator_shakespeare.py written in plain TF1 with the ops tflearn's
layers produce. One-hot characters [128, 25, 60] in; three LSTM layers of 512 units, each
unrolled by tf.nn.static_rnn over its own BasicLSTMCell (one MatMul of the concatenated
[input, h] by a [input + 512, 2048] gate matrix per time step, BiasAdd, Split into four
gates); dropout 0.5 after each layer behind a tf.cond on a training-mode variable (tflearn's
`dropout`); the first two layers return the whole sequence, the last one its last output;
a dense softmax over the 60 characters, tflearn's categorical cross-entropy (normalized,
clipped probabilities), gradients clipped by global norm 5.0, Adam(1e-3). Figure: median
step time in ms over 5 steps after 2 warm-up steps (a step is about a second).

An informational second figure runs the same three layers as one MultiRNNCell unrolled by
tf.nn.dynamic_rnn (a while loop; the one-hot input, loss and optimizer as above, no
dropout), the other way TF1 programs write this model.

    python benchmarks/programs/char_lstm.py --backend tensorflux|tensorflow
"""

import numpy as np
from _bench import BACKEND, emit, guarded
from _models import median_step_ms

if BACKEND == "tensorflow":
    import tensorflow.compat.v1 as tf

    # Keras 3 dropped tf.compat.v1.nn.rnn_cell; the TF1 cells live on in the legacy module.
    from tensorflow.python.keras.layers.legacy_rnn import rnn_cell_impl as rnn_cell

    tf.disable_v2_behavior()
else:
    import tensorflux as tf

    rnn_cell = tf.nn.rnn_cell

CHARS, HIDDEN, LAYERS, STEPS, BATCH = 60, 512, 3, 25, 128
REPS = 5
EPSILON = 1e-8


def _dropout(x, training, keep_prob=0.5):
    return tf.cond(training, lambda: tf.nn.dropout(x, keep_prob), lambda: x)


def _loss_and_train(logits, y):
    """tflearn's softmax output, categorical cross-entropy and clipped Adam."""
    probs = tf.nn.softmax(logits)
    probs /= tf.reduce_sum(probs, axis=1, keepdims=True)
    probs = tf.clip_by_value(probs, EPSILON, 1.0 - EPSILON)
    loss = tf.reduce_mean(-tf.reduce_sum(y * tf.log(probs), axis=1))
    opt = tf.train.AdamOptimizer(1e-3)
    grads, params = zip(*opt.compute_gradients(loss), strict=True)
    grads, _ = tf.clip_by_global_norm(grads, 5.0)
    return opt.apply_gradients(zip(grads, params, strict=True))


def build(unroll: str):
    """The model in a new Graph; `unroll` "static" (tflearn's layers) or "dynamic".
    Returns (graph, x, y, init, train)."""
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(0)
        x = tf.placeholder(tf.float32, [BATCH, STEPS, CHARS])
        y = tf.placeholder(tf.float32, [BATCH, CHARS])
        training = tf.Variable(True, trainable=False, name="is_training")
        if unroll == "static":
            seq = x
            for layer in range(LAYERS):
                with tf.variable_scope(f"LSTM_{layer}"):
                    inputs = tf.unstack(tf.transpose(seq, [1, 0, 2]))
                    cell = rnn_cell.BasicLSTMCell(HIDDEN, forget_bias=1.0)
                    outs, _ = tf.nn.static_rnn(cell, inputs, dtype=tf.float32)
                    seq = tf.stack(outs, 1) if layer < LAYERS - 1 else outs[-1]
                    seq = _dropout(seq, training)
            last = seq
        else:
            cells = [rnn_cell.BasicLSTMCell(HIDDEN, forget_bias=1.0) for _ in range(LAYERS)]
            outputs, _ = tf.nn.dynamic_rnn(rnn_cell.MultiRNNCell(cells), x, dtype=tf.float32)
            last = outputs[:, -1]
        w = tf.get_variable("softmax_w", [HIDDEN, CHARS])
        b = tf.get_variable("softmax_b", [CHARS], initializer=tf.zeros_initializer())
        train = _loss_and_train(tf.matmul(last, w) + b, y)
        init = tf.global_variables_initializer()
    return g, x, y, init, train


def measure(unroll: str):
    rng = np.random.default_rng(0)
    g, x, y, init, train = build(unroll)
    eye = np.eye(CHARS, dtype=np.float32)
    feed = {x: eye[rng.integers(0, CHARS, (BATCH, STEPS))],
            y: eye[rng.integers(0, CHARS, BATCH)]}
    with tf.Session(graph=g) as sess:
        sess.run(init)
        return median_step_ms(sess, train, feed, REPS)


NAME = "char_lstm_step"
LABEL = ("char LSTM (tflearn's Shakespeare generator): 3 x LSTM-512 by static_rnn over 25 "
         "steps, batch 128, 60 one-hot chars, cond dropout, clipped Adam: one training step "
         "(median)")
NAME_DYNAMIC = "char_lstm_dynamic_step"
LABEL_DYNAMIC = "char LSTM as above, MultiRNNCell by dynamic_rnn (while loop), no dropout"


def main():
    with guarded(NAME, label=LABEL):
        ms, steps = measure("static")
        emit(NAME, ms, "ms", "lower", label=LABEL, steps=steps)
    with guarded(NAME_DYNAMIC, label=LABEL_DYNAMIC):
        ms, steps = measure("dynamic")
        emit(NAME_DYNAMIC, ms, "ms", "lower", label=LABEL_DYNAMIC, steps=steps)


if __name__ == "__main__":  # imported by profiling scripts for its build()
    main()
