"""The digits CNN the quantization tests train and quantize (scikit-learn's 8x8 digits).

conv3x3x16-ReLU, conv3x3x32/2-ReLU, fc64-ReLU, fc10: ~39k weights. `train` fits it with
tensorflux in a few seconds; `frozen_graph_def` rebuilds it with the trained values as
Consts (a frozen inference graph: Placeholder "input", output node "logits").
"""

from __future__ import annotations

import numpy as np
from sklearn.datasets import load_digits

import tensorflux as tf

SHAPES = {"conv1/w": [3, 3, 1, 16], "conv1/b": [16], "conv2/w": [3, 3, 16, 32],
          "conv2/b": [32], "fc1/w": [512, 64], "fc1/b": [64], "fc2/w": [64, 10],
          "fc2/b": [10]}


def load_data(seed=0):
    """(train_x, train_y), (test_x, test_y): NHWC in [0, 1], an 80/20 split."""
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[..., None]
    y = digits.target.astype(np.int64)
    order = np.random.RandomState(seed).permutation(len(x))
    n = int(0.8 * len(x))
    return (x[order[:n]], y[order[:n]]), (x[order[n:]], y[order[n:]])


def forward(x, p):
    """Logits of NHWC `x` with parameters `p` (Variables or Consts by SHAPES' names)."""
    h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, p["conv1/w"], [1, 1, 1, 1], "SAME"),
                                  p["conv1/b"]))
    h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(h, p["conv2/w"], [1, 2, 2, 1], "SAME"),
                                  p["conv2/b"]))
    h = tf.reshape(h, [-1, 512])
    h = tf.nn.relu(tf.matmul(h, p["fc1/w"]) + p["fc1/b"])
    return tf.add(tf.matmul(h, p["fc2/w"]), p["fc2/b"], name="logits")


def train(train_xy, steps=400, seed=0):
    """The trained parameters, {name: NumPy array}."""
    xs, ys = train_xy
    rng = np.random.RandomState(seed)
    with tf.Graph().as_default():
        tf.set_random_seed(seed)
        p = {name: tf.Variable(tf.glorot_uniform_initializer()(shape) if name.endswith("w")
                               else tf.zeros(shape), name=name.replace("/", "_"))
             for name, shape in SHAPES.items()}
        x = tf.placeholder(tf.float32, [None, 8, 8, 1])
        y = tf.placeholder(tf.int64, [None])
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=y, logits=forward(x, p)))
        step = tf.train.AdamOptimizer(3e-3).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(steps):
                idx = rng.randint(0, len(xs), 64)
                sess.run(step, {x: xs[idx], y: ys[idx]})
            return sess.run(p)


def frozen_graph_def(params):
    """The inference graph with `params` as Consts: feed "input:0", fetch "logits:0"."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 8, 8, 1], name="input")
        forward(x, {k: tf.constant(v, name=k) for k, v in params.items()})
    return g.as_graph_def()


def predict(graph_def, images, batch=512):
    """Logits of `images` by running `graph_def` (fed "input:0", fetched "logits:0")."""
    with tf.Graph().as_default() as g:
        tf.import_graph_def(graph_def, name="")
        with tf.Session(graph=g) as sess:
            return np.concatenate([sess.run("logits:0", {"input:0": images[i:i + batch]})
                                   for i in range(0, len(images), batch)])
