"""Train a small convolutional network on scikit-learn's digits (8x8 images, 10 classes).

A plain TF1 program: change `import tensorflux as tf` to `import tensorflow.compat.v1 as tf`
(plus `tf.disable_v2_behavior()`) and it runs under TensorFlow unchanged.

At the end it saves the trained model with `tf.train.Saver` (into --checkpoint-dir, a
directory under the system's temporary directory by default) and prints the checkpoint.
While training it writes summaries for TensorBoard into <checkpoint-dir>/logs/<run>: the
loss and the batch accuracy, the weights' histograms and a few input digits every
--summary-every steps, the graph, and the test accuracy at the end; it prints the
`tensorboard --logdir` command that shows them.

    ./scripts/demo                 # sets up .venv, then runs this
    python examples/digits_cnn.py --epochs 30 --batch-size 64
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
from sklearn.datasets import load_digits
from tqdm import tqdm

import tensorflux as tf


def load_data(seed: int):
    """Digits scaled to [0, 1], shaped NHWC, split 80/20 with a fixed shuffle."""
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[..., None]  # (1797, 8, 8, 1)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    x, y = x[order], y[order]
    n_train = int(0.8 * len(x))
    return (x[:n_train], y[:n_train]), (x[n_train:], y[n_train:])


def conv_relu(h, out_channels, name):
    in_channels = int(h.shape[-1])
    with tf.variable_scope(name):
        w = tf.get_variable("w", [3, 3, in_channels, out_channels],
                            initializer=tf.glorot_uniform_initializer())
        b = tf.get_variable("b", [out_channels], initializer=tf.zeros_initializer())
        h = tf.nn.conv2d(h, w, strides=[1, 1, 1, 1], padding="SAME")
        return tf.nn.relu(tf.nn.bias_add(h, b))


def dense(h, units, name, activation=None):
    with tf.variable_scope(name):
        w = tf.get_variable("w", [int(h.shape[-1]), units],
                            initializer=tf.glorot_uniform_initializer())
        b = tf.get_variable("b", [units], initializer=tf.zeros_initializer())
        h = tf.matmul(h, w) + b
        return activation(h) if activation else h


def build_model(learning_rate: float):
    images = tf.placeholder(tf.float32, [None, 8, 8, 1], name="images")
    labels = tf.placeholder(tf.int64, [None], name="labels")
    pool = lambda h: tf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")  # noqa: E731
    h = pool(conv_relu(images, 32, "conv1"))          # 4x4x32
    h = pool(conv_relu(h, 64, "conv2"))               # 2x2x64
    h = tf.reshape(h, [-1, 2 * 2 * 64])
    h = dense(h, 128, "fc1", tf.nn.relu)
    logits = dense(h, 10, "logits")
    loss = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.AdamOptimizer(learning_rate).minimize(loss, global_step=global_step)
    correct = tf.equal(tf.argmax(logits, axis=1), labels)
    accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
    return images, labels, loss, train_op, accuracy, global_step


def build_summaries(images, loss, accuracy):
    """The training summaries, merged: loss and batch accuracy, every weight's histogram,
    the first three input digits."""
    with tf.name_scope("train"):  # tags train/loss, train/accuracy: one TensorBoard tab
        tf.summary.scalar("loss", loss)
        tf.summary.scalar("accuracy", accuracy)
    with tf.name_scope("weights"):
        for var in tf.trainable_variables():
            tf.summary.histogram(var.op.name, var)
    tf.summary.image("digits", images, max_outputs=3)
    return tf.summary.merge_all()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checkpoint-dir",
                        default=os.path.join(tempfile.gettempdir(), "tensorflux-digits-cnn"),
                        help="where the trained model's checkpoint is written")
    parser.add_argument("--summary-every", type=int, default=20,
                        help="write the training summaries every N steps")
    args = parser.parse_args()

    (x_train, y_train), (x_test, y_test) = load_data(args.seed)
    tf.set_random_seed(args.seed)
    images, labels, loss, train_op, accuracy, global_step = build_model(args.learning_rate)
    summaries = build_summaries(images, loss, accuracy)
    logdir = os.path.join(args.checkpoint_dir, "logs")
    rng = np.random.default_rng(args.seed)
    steps_per_epoch = int(np.ceil(len(x_train) / args.batch_size))
    start = time.perf_counter()
    with tf.Session() as sess, tf.summary.FileWriter(
            os.path.join(logdir, time.strftime("%Y%m%d-%H%M%S")), sess.graph) as writer:
        sess.run(tf.global_variables_initializer())
        bar = tqdm(total=args.epochs * steps_per_epoch, unit="step", desc="training")
        for epoch in range(args.epochs):
            order = rng.permutation(len(x_train))
            for i in range(steps_per_epoch):
                idx = order[i * args.batch_size:(i + 1) * args.batch_size]
                feed = {images: x_train[idx], labels: y_train[idx]}
                step = epoch * steps_per_epoch + i
                if step % args.summary_every == 0:
                    _, loss_value, summary = sess.run([train_op, loss, summaries], feed)
                    writer.add_summary(summary, step)
                else:
                    _, loss_value = sess.run([train_op, loss], feed)
                bar.update(1)
                bar.set_postfix(epoch=epoch + 1, loss=f"{loss_value:.4f}")
        bar.close()
        test_acc = sess.run(accuracy, {images: x_test, labels: y_test})
        steps = sess.run(global_step)
        elapsed = time.perf_counter() - start
        writer.add_summary(tf.Summary(value=[tf.Summary.Value(
            tag="test/accuracy", simple_value=float(test_acc))]), steps)
        os.makedirs(args.checkpoint_dir, exist_ok=True)
        path = tf.train.Saver().save(sess, os.path.join(args.checkpoint_dir, "model.ckpt"),
                                     global_step=global_step)
    print(f"trained {steps} steps in {elapsed:.1f} s; test accuracy {test_acc:.4f} "
          f"on {len(x_test)} held-out digits")
    print(f"checkpoint: {path} (tf.train.latest_checkpoint({args.checkpoint_dir!r}))")
    print(f"summaries: tensorboard --logdir {logdir}")


if __name__ == "__main__":
    main()
