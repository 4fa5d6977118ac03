"""word2vec's training step (TensorFlow's word2vec_basic.py at a 50,000-word vocabulary):
embedding lookup of 128 ids in a [50000, 128] variable, `tf.nn.nce_loss` with 64 negative
classes from the default log-uniform sampler, GradientDescent(1.0) (sparse updates of the
embedding and the NCE weights). Figure: median step time over 200 steps after 20 warm-up
steps, in ms. Informational: no target.

    python benchmarks/programs/nce_step.py --backend tensorflux|tensorflow
"""

import time

import numpy as np
from _bench import BACKEND, emit, guarded

if BACKEND == "tensorflow":
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import tensorflux as tf

VOCAB, DIM, BATCH, SAMPLED = 50000, 128, 128, 64
WARMUP, STEPS = 20, 200

NAME = "nce_step"
LABEL = ("word2vec step: embedding 50,000 x 128, nce_loss with 64 sampled classes, batch "
         "128, SGD (median)")
with guarded(NAME, label=LABEL):
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(0)
        ids = tf.placeholder(tf.int32, [BATCH])
        labels = tf.placeholder(tf.int64, [BATCH, 1])
        embeddings = tf.Variable(tf.random_uniform([VOCAB, DIM], -1.0, 1.0))
        weights = tf.Variable(tf.truncated_normal([VOCAB, DIM], stddev=DIM ** -0.5))
        biases = tf.Variable(tf.zeros([VOCAB]))
        loss = tf.reduce_mean(tf.nn.nce_loss(
            weights=weights, biases=biases, labels=labels,
            inputs=tf.nn.embedding_lookup(embeddings, ids), num_sampled=SAMPLED,
            num_classes=VOCAB))
        train = tf.train.GradientDescentOptimizer(1.0).minimize(loss)
        init = tf.global_variables_initializer()
    rng = np.random.default_rng(0)
    feed = {ids: rng.integers(0, VOCAB, BATCH).astype(np.int32),
            labels: rng.integers(0, VOCAB, (BATCH, 1))}
    with tf.Session(graph=g) as sess:
        sess.run(init)
        for _ in range(WARMUP):
            sess.run(train, feed)
        times = []
        for _ in range(STEPS):
            start = time.perf_counter()
            sess.run(train, feed)
            times.append(time.perf_counter() - start)
    emit(NAME, float(np.median(times)) * 1e3, "ms", "lower", label=LABEL, steps=STEPS)
