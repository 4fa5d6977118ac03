"""L-BFGS built only from graph ops, minimizing the n-dimensional Rosenbrock function.

The TensorFlow paper (§4.1) notes that users implemented optimizers such as L-BFGS on top
of the graph, with no help from the runtime. This is such a program. The algorithm's whole
state lives in variables:

    x      the current point                     S, Y  the last m steps s = x' - x and
    g      the gradient at x                           gradient changes y = g' - g,
    count  how many (s, y) pairs are stored            newest in row m-1; rho = 1 / (y . s)

One `sess.run(step)` is one iteration, entirely in the graph:
  1. the two-loop recursion turns g into the direction d = -H g (H the L-BFGS inverse
     Hessian from the stored pairs, scaled by gamma = s.y / y.y of the newest pair), the
     loops unrolled over the m history rows with unfilled rows masked out;
  2. a backtracking line search: the objective at x + t d for t = 1, 1/2, 1/4, ... is
     computed for all t at once, and the first t meeting the Armijo condition is taken;
  3. the new gradient, the pair (s, y) shifted into the history when y.s > 0, and all
     variables assigned together.
Python only loops over `sess.run` and stops when the gradient norm is small; it never does
arithmetic on the algorithm's state.

    python examples/lbfgs.py [--dim 10] [--history 6] [--max-iterations 200]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import tensorflux as tf

DTYPE = tf.float64


def rosenbrock(x):
    """sum_i 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2 over the last axis of `x`."""
    head, tail = x[..., :-1], x[..., 1:]
    return tf.reduce_sum(100.0 * tf.square(tail - tf.square(head)) + tf.square(1.0 - head),
                         axis=-1)


def dot(a, b):
    return tf.reduce_sum(a * b)


def two_loop_direction(g, S, Y, rho, count, m: int):
    """d = -H g by the L-BFGS two-loop recursion over history rows m-1 (newest) .. 0."""
    valid = [tf.cast(count > m - 1 - i, DTYPE) for i in range(m)]  # row i is filled
    q, alphas = g, [None] * m
    for i in reversed(range(m)):
        alphas[i] = valid[i] * rho[i] * dot(S[i], q)
        q = q - alphas[i] * Y[i]
    newest_sy, newest_yy = dot(S[m - 1], Y[m - 1]), dot(Y[m - 1], Y[m - 1])
    gamma = valid[m - 1] * newest_sy / tf.maximum(newest_yy, 1e-300) + (1.0 - valid[m - 1])
    r = gamma * q
    for i in range(m):
        beta = valid[i] * rho[i] * dot(Y[i], r)
        r = r + S[i] * (alphas[i] - beta)
    return -r


def backtracking_step(f_value, g, x, d, steps: int = 30, c1: float = 1e-4):
    """x + t d for the first t in 1, 1/2, ... with f(x + t d) <= f(x) + c1 t g.d (Armijo),
    all candidates evaluated in one batch; the smallest t if none qualifies."""
    t = tf.constant(0.5 ** np.arange(steps), DTYPE)
    trials = x[None, :] + t[:, None] * d[None, :]
    ok = rosenbrock(trials) <= f_value + c1 * t * dot(g, d)
    first = tf.argmax(tf.concat([tf.cast(ok, tf.int32), [1]], 0), output_type=tf.int32)
    chosen = tf.gather(tf.concat([t, t[-1:]], 0), first)
    return x + chosen * d


def build(dim: int, m: int):
    start = np.where(np.arange(dim) % 2 == 0, -1.2, 1.0)
    x = tf.Variable(start, dtype=DTYPE, name="x")
    S = tf.Variable(np.zeros((m, dim)), dtype=DTYPE, name="S")
    Y = tf.Variable(np.zeros((m, dim)), dtype=DTYPE, name="Y")
    rho = tf.Variable(np.zeros(m), dtype=DTYPE, name="rho")
    count = tf.Variable(0, name="count")

    x0 = x.read_value()
    f0 = rosenbrock(x0)
    (g0,) = tf.gradients(f0, x0)
    d = two_loop_direction(g0, S.read_value(), Y.read_value(), rho.read_value(),
                           count.read_value(), m)
    x1 = backtracking_step(f0, g0, x0, d)
    f1 = rosenbrock(x1)
    (g1,) = tf.gradients(f1, x1)
    s, y = x1 - x0, g1 - g0
    sy = dot(s, y)
    # Curvature condition (relative, so tiny steps near the minimum still count); when it
    # fails the history stays as it is.
    keep = tf.cast(sy > 1e-10 * dot(y, y), DTYPE)
    S1 = S + keep * (tf.concat([S[1:], s[None]], 0) - S)
    Y1 = Y + keep * (tf.concat([Y[1:], y[None]], 0) - Y)
    rho1 = rho + keep * (tf.concat([rho[1:], [1.0 / tf.maximum(sy, 1e-300)]], 0) - rho)
    count1 = tf.minimum(count + tf.cast(keep, tf.int32), m)
    with tf.control_dependencies([S1, Y1, rho1, count1, f1, g1]):
        step = tf.group(x.assign(x1), S.assign(S1), Y.assign(Y1), rho.assign(rho1),
                        count.assign(count1))
    return step, f1, tf.sqrt(dot(g1, g1)), x


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dim", type=int, default=10)
    parser.add_argument("--history", type=int, default=6)
    parser.add_argument("--max-iterations", type=int, default=200)
    parser.add_argument("--tolerance", type=float, default=1e-8)
    args = parser.parse_args(argv)

    step, f_new, g_norm, x = build(args.dim, args.history)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for it in range(1, args.max_iterations + 1):
            _, f_value, norm = sess.run([step, f_new, g_norm])
            if it % 10 == 0:
                print(f"iteration {it:3d}  f {f_value:.3e}  |g| {norm:.3e}")
            if norm < args.tolerance:
                break
        solution = sess.run(x)
    err = float(np.max(np.abs(solution - 1.0)))
    print(f"L-BFGS (m={args.history}) minimized the {args.dim}-d Rosenbrock function in {it} "
          f"iterations: f = {f_value:.3e}, max |x - 1| = {err:.2e}")
    return 0 if err < 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
