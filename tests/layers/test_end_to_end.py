"""A TF1 CNN built from tf.layers (conv2d, batch_normalization, max_pooling2d, dense,
dropout) and trained with tf.losses.sparse_softmax_cross_entropy learns sklearn's 8x8
digits: over 90% on held-out images, using the moving statistics at test time."""

from __future__ import annotations

import numpy as np
from sklearn.datasets import load_digits

import tensorflux as tf


def test_cnn_learns_digits():
    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[..., None]
    labels = digits.target.astype(np.int32)
    rng = np.random.RandomState(0)
    order = rng.permutation(len(images))
    images, labels = images[order], labels[order]
    train_x, train_y, test_x, test_y = images[:1400], labels[:1400], images[1400:], \
        labels[1400:]
    with tf.Graph().as_default():
        tf.set_random_seed(0)
        x = tf.placeholder(tf.float32, [None, 8, 8, 1])
        y = tf.placeholder(tf.int32, [None])
        training = tf.placeholder_with_default(False, [])
        h = tf.layers.conv2d(x, 16, 3, padding="same", activation=tf.nn.relu)
        h = tf.layers.batch_normalization(h, training=training)
        h = tf.layers.max_pooling2d(h, 2, 2)
        h = tf.layers.dense(tf.layers.flatten(h), 64, activation=tf.nn.relu)
        h = tf.layers.dropout(h, 0.2, training=training)
        logits = tf.layers.dense(h, 10)
        loss = tf.losses.sparse_softmax_cross_entropy(y, logits)
        with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
            train = tf.train.AdamOptimizer(0.003).minimize(loss)
        correct = tf.equal(tf.argmax(logits, 1, output_type=tf.int32), y)
        accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = sess.run(loss, {x: train_x[:256], y: train_y[:256]})
            for _ in range(400):
                batch = rng.randint(0, len(train_x), 64)
                sess.run(train, {x: train_x[batch], y: train_y[batch], training: True})
            last = sess.run(loss, {x: train_x[:256], y: train_y[:256]})
            test_accuracy = sess.run(accuracy, {x: test_x, y: test_y})
    assert last < first / 4
    assert test_accuracy > 0.9, test_accuracy
