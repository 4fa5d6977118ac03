"""Train the digits CNN briefly and export it as a SavedModel that `tensorflux-serve` (or
TensorFlow Serving) serves.

    python examples/serving/export_digits.py --export_dir /tmp/digits_model

writes version 1 (or --version) under --export_dir with `tf.saved_model.simple_save`: one
"serving_default" signature taking `images` (float32 [?, 8, 8, 1], pixels in [0, 1]) and
giving `probabilities` (float32 [?, 10]) and `classes` (int64 [?]). A plain TF1 program: it
runs under `import tensorflow.compat.v1 as tf` too.
"""

from __future__ import annotations

import argparse
import os

import numpy as np
from sklearn.datasets import load_digits

import tensorflux as tf


def load_data(seed: int = 0):
    """Digits scaled to [0, 1], NHWC, split 80/20 with a fixed shuffle."""
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[..., None]
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    n_train = int(0.8 * len(x))
    x, y = x[order], y[order]
    return (x[:n_train], y[:n_train]), (x[n_train:], y[n_train:])


def _conv(h, out_channels, name):
    with tf.variable_scope(name):
        w = tf.get_variable("w", [3, 3, int(h.shape[-1]), out_channels],
                            initializer=tf.glorot_uniform_initializer())
        b = tf.get_variable("b", [out_channels], initializer=tf.zeros_initializer())
        h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(h, w, [1, 1, 1, 1], "SAME"), b))
        return tf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")


def _dense(h, units, name):
    with tf.variable_scope(name):
        w = tf.get_variable("w", [int(h.shape[-1]), units],
                            initializer=tf.glorot_uniform_initializer())
        b = tf.get_variable("b", [units], initializer=tf.zeros_initializer())
        return tf.matmul(h, w) + b


def build_model():
    """(images, labels, probabilities, classes, train_op, accuracy)."""
    images = tf.placeholder(tf.float32, [None, 8, 8, 1], name="images")
    labels = tf.placeholder(tf.int64, [None], name="labels")
    h = _conv(_conv(images, 32, "conv1"), 64, "conv2")            # 2x2x64
    h = tf.nn.relu(_dense(tf.reshape(h, [-1, 2 * 2 * 64]), 128, "fc1"))
    logits = _dense(h, 10, "logits")
    probabilities = tf.nn.softmax(logits, name="probabilities")
    classes = tf.argmax(logits, axis=1, name="classes")
    loss = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    train_op = tf.train.AdamOptimizer(1e-3).minimize(loss)
    accuracy = tf.reduce_mean(tf.cast(tf.equal(classes, labels), tf.float32))
    return images, labels, probabilities, classes, train_op, accuracy


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--export_dir", required=True, help="the model base path to serve")
    p.add_argument("--version", type=int, default=1)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch_size", type=int, default=64)
    args = p.parse_args(argv)
    (x_train, y_train), (x_test, y_test) = load_data()
    with tf.Graph().as_default():
        tf.set_random_seed(0)
        images, labels, probabilities, classes, train_op, accuracy = build_model()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            rng = np.random.default_rng(0)
            for _ in range(args.epochs):
                order = rng.permutation(len(x_train))
                for i in range(0, len(order), args.batch_size):
                    batch = order[i:i + args.batch_size]
                    sess.run(train_op, {images: x_train[batch], labels: y_train[batch]})
            acc = sess.run(accuracy, {images: x_test, labels: y_test})
            print(f"test accuracy {acc:.3f}")
            version_dir = os.path.join(args.export_dir, str(args.version))
            tf.saved_model.simple_save(
                sess, version_dir, inputs={"images": images},
                outputs={"probabilities": probabilities, "classes": classes})
            print(f"exported {version_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
