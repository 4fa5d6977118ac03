"""A small attention sequence-to-sequence model's training step: the regime of many small
kernels (TensorFlow's translate tutorial at `--size=64`, ~2,000 kernels of a few thousand
elements each a step), where the cost of running a kernel counts more than its arithmetic.

Encoder: 2 layers of GRUCell(64) unrolled by static_rnn over 10 steps on embedded tokens
(vocabulary 40, batch 32); decoder: the same cells over 10 steps with dot-product attention
over the encoder's outputs, a tanh projection and a softmax over the vocabulary; gradients
clipped by global norm, plain SGD (embedding gradients as IndexedSlices). Figure: median
step time over 30 steps after 5 warm-up steps, in ms. Informational: no target.

    python benchmarks/programs/small_seq2seq.py --backend tensorflux|tensorflow
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

HIDDEN, BATCH, STEPS, VOCAB, LAYERS = 64, 32, 10, 40, 2
REPS = 30


def build():
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(1)
        enc = [tf.placeholder(tf.int32, [BATCH]) for _ in range(STEPS)]
        dec = [tf.placeholder(tf.int32, [BATCH]) for _ in range(STEPS)]
        tgt = [tf.placeholder(tf.int32, [BATCH]) for _ in range(STEPS)]
        emb_enc = tf.get_variable("emb_enc", [VOCAB, HIDDEN])
        emb_dec = tf.get_variable("emb_dec", [VOCAB, HIDDEN])
        cell = rnn_cell.MultiRNNCell([rnn_cell.GRUCell(HIDDEN) for _ in range(LAYERS)])
        with tf.variable_scope("encoder"):
            outputs, state = tf.nn.static_rnn(
                cell, [tf.nn.embedding_lookup(emb_enc, t) for t in enc], dtype=tf.float32)
        memory = tf.stack(outputs, 1)  # [batch, time, hidden]
        w_att = tf.get_variable("w_att", [2 * HIDDEN, HIDDEN])
        w_out = tf.get_variable("w_out", [HIDDEN, VOCAB])
        b_out = tf.get_variable("b_out", [VOCAB])
        losses = []
        with tf.variable_scope("decoder"):
            for i, t in enumerate(dec):
                if i:
                    tf.get_variable_scope().reuse_variables()
                out, state = cell(tf.nn.embedding_lookup(emb_dec, t), state)
                scores = tf.reduce_sum(memory * tf.expand_dims(out, 1), 2)
                weights = tf.nn.softmax(scores)
                context = tf.reduce_sum(memory * tf.expand_dims(weights, 2), 1)
                h = tf.tanh(tf.matmul(tf.concat([out, context], 1), w_att))
                logits = tf.matmul(h, w_out) + b_out
                losses.append(tf.nn.sparse_softmax_cross_entropy_with_logits(
                    labels=tgt[i], logits=logits))
        loss = tf.reduce_mean(tf.add_n(losses))
        params = tf.trainable_variables()
        grads, _ = tf.clip_by_global_norm(tf.gradients(loss, params), 5.0)
        train = tf.train.GradientDescentOptimizer(0.5).apply_gradients(
            zip(grads, params, strict=True))
        init = tf.global_variables_initializer()
    return g, enc + dec + tgt, init, train


NAME = "small_seq2seq_step"
LABEL = ("Attention seq2seq, 2 x GRU-64, 10+10 steps, batch 32, vocab 40, SGD: one "
         "training step (median; ~2,000 small kernels)")
with guarded(NAME, label=LABEL):
    g, inputs, init, train = build()
    rng = np.random.default_rng(0)
    with tf.Session(graph=g) as sess:
        sess.run(init)
        feed = {p: rng.integers(0, VOCAB, BATCH).astype(np.int32) for p in inputs}
        ms, steps = median_step_ms(sess, train, feed, REPS)
    emit(NAME, ms, "ms", "lower", label=LABEL, steps=steps)
