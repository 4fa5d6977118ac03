"""Linear regression by gradient descent: fit y = w x + b to noisy samples of
y = 3 x + 0.5, the smallest complete TF1 training program (placeholders, variables, a loss,
an optimizer's train op, a Session loop).

    python examples/linear_regression.py [--steps 300] [--learning-rate 0.5]

Prints the loss as it falls and the fitted parameters, and exits non-zero if they are not
within 0.05 of the true ones.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import tensorflux as tf

TRUE_W, TRUE_B = 3.0, 0.5


def make_data(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    xs = rng.uniform(-1.0, 1.0, (n, 1)).astype(np.float32)
    ys = (TRUE_W * xs + TRUE_B + rng.normal(0.0, 0.1, (n, 1))).astype(np.float32)
    return xs, ys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--learning-rate", type=float, default=0.5)
    args = parser.parse_args(argv)

    xs, ys = make_data(256)
    x = tf.placeholder(tf.float32, [None, 1], name="x")
    y = tf.placeholder(tf.float32, [None, 1], name="y")
    w = tf.get_variable("w", [1, 1], initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    prediction = tf.matmul(x, w) + b
    loss = tf.reduce_mean(tf.square(prediction - y))
    global_step = tf.train.get_or_create_global_step()
    train = tf.train.GradientDescentOptimizer(args.learning_rate).minimize(
        loss, global_step=global_step)

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(args.steps):
            _, loss_value = sess.run([train, loss], {x: xs, y: ys})
            if step % 50 == 0:
                print(f"step {step:4d}  loss {loss_value:.5f}")
        w_value, b_value, loss_value = sess.run([w, b, loss], {x: xs, y: ys})
    fitted_w, fitted_b = float(w_value[0, 0]), float(b_value[0])
    print(f"fitted w={fitted_w:.3f} b={fitted_b:.3f} (true w={TRUE_W}, b={TRUE_B}); "
          f"loss {loss_value:.5f}")
    ok = abs(fitted_w - TRUE_W) < 0.05 and abs(fitted_b - TRUE_B) < 0.05
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
