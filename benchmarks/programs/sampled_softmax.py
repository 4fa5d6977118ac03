"""Sampled softmax against the full softmax on the same model (issue 15, paper §4.2/§6.4).

A word-prediction model: ids -> embedding [100,000 x 256] -> tanh dense 256 -> output
weights [100,000 x 256] and biases; batch 128, plain SGD. One step of the full softmax
(`sparse_softmax_cross_entropy_with_logits` over all 100,000 classes) against one step of
`tf.nn.sampled_softmax_loss` with 64 sampled classes (the default log-uniform sampler, so
the output weights get IndexedSlices gradients). Figures: median step time of each over 10
steps after 5 warm-up steps, and their ratio (this backend's own speed-up).

    python benchmarks/programs/sampled_softmax.py --backend tensorflux|tensorflow
"""

import numpy as np
from _bench import BACKEND, emit, guarded
from _models import median_step_ms

if BACKEND == "tensorflow":
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import tensorflux as tf

VOCAB, DIM, BATCH, SAMPLED = 100_000, 256, 128, 64
TARGET = 10.0  # the sampled step >= 10x faster than the full one


def model(sampled: bool):
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(1)
        ids = tf.placeholder(tf.int32, [BATCH])
        labels = tf.placeholder(tf.int64, [BATCH])
        emb = tf.Variable(tf.random_uniform([VOCAB, DIM], -0.1, 0.1))
        w1 = tf.Variable(tf.truncated_normal([DIM, DIM], stddev=0.05))
        h = tf.tanh(tf.matmul(tf.nn.embedding_lookup(emb, ids), w1))
        out_w = tf.Variable(tf.truncated_normal([VOCAB, DIM], stddev=0.05))
        out_b = tf.Variable(tf.zeros([VOCAB]))
        if sampled:
            loss = tf.nn.sampled_softmax_loss(out_w, out_b, tf.reshape(labels, [-1, 1]), h,
                                              SAMPLED, VOCAB)
        else:
            logits = tf.matmul(h, out_w, transpose_b=True) + out_b
            loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                  logits=logits)
        train = tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_mean(loss))
        init = tf.global_variables_initializer()
    return g, ids, labels, init, train


def step_ms(sampled: bool) -> float:
    g, ids, labels, init, train = model(sampled)
    rng = np.random.default_rng(0)
    feed = {ids: rng.integers(0, VOCAB, BATCH), labels: rng.integers(0, VOCAB, BATCH)}
    with tf.Session(graph=g) as sess:
        sess.run(init)
        return median_step_ms(sess, train, feed, 10)[0]


what = f"vocab {VOCAB:,}, dim {DIM}, batch {BATCH}, SGD"
with guarded("sampled_softmax_step", "full_softmax_step", "sampled_softmax_speedup"):
    full = step_ms(False)
    sampled = step_ms(True)
    emit("full_softmax_step", full, "ms", "lower",
         label=f"full softmax ({what}): one training step (median)")
    emit("sampled_softmax_step", sampled, "ms", "lower",
         label=f"sampled softmax, {SAMPLED} classes ({what}): one training step (median)")
    met = "met" if full / sampled >= TARGET else "not met"
    emit("sampled_softmax_speedup", full / sampled, "x", "higher",
         label="the same: full step / sampled step",
         note=f"{BACKEND}'s own speed-up; target >= {TARGET:g} ({met})")
