"""tf.contrib.opt: each optimizer's updates against a NumPy transcription of TF 1.15's
formulas (gradients fed step by step through a linear loss), LazyAdam's dense case against
TensorFlow's Adam, the wrappers, and ScipyOptimizerInterface."""

import math

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.contrib import opt
from tests.oracle import run_tf

RNG = np.random.RandomState(0)
INIT = RNG.randn(4, 3).astype(np.float32)
GRADS = [RNG.randn(4, 3).astype(np.float32) for _ in range(4)]
ROWS = np.array([2, 0, 2], np.int32)  # a repeated row: its gradient rows are summed
ROW_GRADS = [RNG.randn(3, 3).astype(np.float32) for _ in range(4)]


def _run(make_opt, sparse=False, steps=4, **minimize_kwargs):
    """The variable after each step of `make_opt()` on loss = sum(g * var) (or, sparse,
    sum(g * gather(var, ROWS)))."""
    with tf.Graph().as_default():
        var = tf.Variable(INIT, name="w")
        g = tf.placeholder(tf.float32, [3 if sparse else 4, 3])
        seen = tf.gather(var, ROWS) if sparse else var
        train = make_opt().minimize(tf.reduce_sum(g * seen), **minimize_kwargs)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            out = []
            for i in range(steps):
                sess.run(train, {g: (ROW_GRADS if sparse else GRADS)[i]})
                out.append(sess.run(var))
    return out


def _dense_rows(i):
    g = np.zeros_like(INIT)
    np.add.at(g, ROWS, ROW_GRADS[i])
    return g


def _adam_like(step_fn, sparse=False, lazy=False):
    var, m, v = INIT.astype(np.float64), np.zeros((4, 3)), np.zeros((4, 3))
    out = []
    for t in range(1, 5):
        g = _dense_rows(t - 1) if sparse else GRADS[t - 1].astype(np.float64)
        rows = np.unique(ROWS) if lazy else slice(None)
        var, m, v = step_fn(t, var, m, v, g, rows)
        out.append(var.copy())
    return out


def _adam_step(t, var, m, v, g, rows, lr=0.001, b1=0.9, b2=0.999, eps=1e-8):
    m[rows] = b1 * m[rows] + (1 - b1) * g[rows]
    v[rows] = b2 * v[rows] + (1 - b2) * g[rows] ** 2
    lr_t = lr * math.sqrt(1 - b2 ** t) / (1 - b1 ** t)
    var[rows] -= lr_t * m[rows] / (np.sqrt(v[rows]) + eps)
    return var, m, v


def _nadam_step(t, var, m, v, g, rows, lr=0.001, b1=0.9, b2=0.999, eps=1e-8):
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g ** 2
    lr_t = lr * math.sqrt(1 - b2 ** t) / (1 - b1 ** t)
    nesterov = b1 * m + (1 - b1) * g
    if rows == slice(None):
        return var - lr_t * nesterov / (np.sqrt(v) + eps), m, v
    var = var.copy()
    var[np.unique(ROWS)] -= (lr_t * nesterov / (np.sqrt(v) + eps))[np.unique(ROWS)]
    return var, m, v


def _adamax_step(t, var, m, v, g, rows, lr=0.001, b1=0.9, b2=0.999, eps=1e-8):
    m[rows] = b1 * m[rows] + (1 - b1) * g[rows]
    v[rows] = np.maximum(b2 * v[rows], np.abs(g[rows]))
    var[rows] -= lr / (1 - b1 ** t) * m[rows] / (v[rows] + eps)
    return var, m, v


@pytest.mark.parametrize("make_opt, step_fn, sparse, lazy", [
    (opt.LazyAdamOptimizer, _adam_step, False, False),
    (opt.LazyAdamOptimizer, _adam_step, True, True),
    (opt.NadamOptimizer, _nadam_step, False, False),
    (opt.NadamOptimizer, _nadam_step, True, False),
    (opt.AdaMaxOptimizer, _adamax_step, False, False),
    (opt.AdaMaxOptimizer, _adamax_step, True, True),
], ids=["lazyadam", "lazyadam-sparse", "nadam", "nadam-sparse", "adamax", "adamax-sparse"])
def test_adam_variants(make_opt, step_fn, sparse, lazy):
    got = _run(make_opt, sparse=sparse)
    want = _adam_like(step_fn, sparse=sparse, lazy=lazy)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_lazy_adam_sparse_leaves_other_rows_alone():
    got = _run(opt.LazyAdamOptimizer, sparse=True)[-1]
    np.testing.assert_array_equal(got[[1, 3]], INIT[[1, 3]])


def test_weight_decay_optimizers():
    wd, lr = 0.01, 0.1

    def adamw_step(t, var, m, v, g, rows):
        var = var - wd * var
        return _adam_step(t, var, m, v, g, rows, lr=lr)

    got = _run(lambda: opt.AdamWOptimizer(wd, learning_rate=lr))
    for a, b in zip(got, _adam_like(adamw_step), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)

    var, acc = INIT.astype(np.float64), np.zeros((4, 3))
    got = _run(lambda: opt.MomentumWOptimizer(wd, lr, 0.9))
    for t in range(4):
        var = var - wd * var
        acc = 0.9 * acc + GRADS[t]
        var = var - lr * acc
        np.testing.assert_allclose(got[t], var, rtol=1e-5, atol=1e-6)

    sgdw = opt.extend_with_decoupled_weight_decay(tf.train.GradientDescentOptimizer)
    assert issubclass(sgdw, opt.DecoupledWeightDecayExtension)
    got = _run(lambda: sgdw(wd, lr))
    var = INIT.astype(np.float64)
    for t in range(4):
        var = var - wd * var - lr * GRADS[t]
        np.testing.assert_allclose(got[t], var, rtol=1e-5, atol=1e-6)


def test_weight_decay_sparse_and_decay_var_list():
    wd, lr = 0.05, 0.1
    got = _run(lambda: opt.MomentumWOptimizer(wd, lr, 0.0), sparse=True, steps=1)[0]
    want = INIT.astype(np.float64)
    rows = np.unique(ROWS)
    want[rows] -= wd * want[rows]
    want -= lr * _dense_rows(0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    with tf.Graph().as_default():
        a, b = tf.Variable([1.0, 2.0]), tf.Variable([3.0])
        loss = tf.reduce_sum(a) + tf.reduce_sum(b)
        o = opt.AdamWOptimizer(0.5, learning_rate=0.0)
        step = o.apply_gradients(o.compute_gradients(loss), decay_var_list=[b])
        # TF 1.15: minimize's decay_var_list is reset by the apply_gradients it calls
        every = opt.AdamWOptimizer(0.5, learning_rate=0.0).minimize(loss, decay_var_list=[b])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(step)
            np.testing.assert_allclose(sess.run(a), [1.0, 2.0])
            np.testing.assert_allclose(sess.run(b), [1.5])
            sess.run(every)
            np.testing.assert_allclose(sess.run(a), [0.5, 1.0])
            np.testing.assert_allclose(sess.run(b), [0.75])


@pytest.mark.parametrize("kind", ["addsign", "powersign"])
def test_sign_optimizers(kind):
    lr, beta = 0.1, 0.9
    if kind == "addsign":
        got = _run(lambda: opt.AddSignOptimizer(lr, alpha=1.0, beta=beta))
    else:
        got = _run(lambda: opt.PowerSignOptimizer(lr, base=2.0, beta=beta))
    var, m = INIT.astype(np.float64), np.zeros((4, 3))
    for t in range(4):
        g = GRADS[t].astype(np.float64)
        m = beta * m + (1 - beta) * g
        s = np.sign(g) * np.sign(m)
        var = var - lr * ((1.0 + s) if kind == "addsign" else np.exp(np.log(2.0) * s)) * g
        np.testing.assert_allclose(got[t], var, rtol=1e-5, atol=1e-6)


def test_sign_decay_schedules():
    steps = [0, 25, 50, 100, 150]
    with tf.Graph().as_default(), tf.Session() as sess:
        gs = tf.placeholder(tf.int64, [])
        fns = [opt.get_linear_decay_fn(100), opt.get_cosine_decay_fn(100),
               opt.get_restart_decay_fn(100, num_periods=2)]
        got = [[sess.run(fn(gs), {gs: s}) for s in steps] for fn in fns]
    f = np.minimum(steps, 100) / 100.0
    np.testing.assert_allclose(got[0], 1 - f, atol=1e-6)
    np.testing.assert_allclose(got[1], 0.5 * (1 + np.cos(np.pi * f)), atol=1e-6)
    np.testing.assert_allclose(got[2], 0.5 * (1 + np.cos(np.pi * np.mod(2 * f, 1.0))),
                               atol=1e-6)
    with pytest.raises(ValueError, match="global_step is required for linear_decay"):
        opt.get_linear_decay_fn(10)(None)


def test_add_sign_with_decay_needs_global_step():
    with tf.Graph().as_default():
        v = tf.Variable([1.0])
        o = opt.AddSignOptimizer(sign_decay_fn=opt.get_linear_decay_fn(10))
        with pytest.raises(ValueError, match="global_step is required"):
            o.minimize(tf.reduce_sum(v))


def test_variable_clipping():
    with tf.Graph().as_default():
        w = tf.Variable([[3.0, 4.0], [0.3, 0.4]])
        base = tf.train.GradientDescentOptimizer(0.0)
        step = opt.VariableClippingOptimizer(base, {w: [1]}, max_norm=1.0).minimize(
            tf.reduce_sum(w))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(step)
            np.testing.assert_allclose(sess.run(w), [[0.6, 0.8], [0.3, 0.4]], rtol=1e-6)


def test_moving_average_optimizer_and_swapping_saver(tmp_path):
    with tf.Graph().as_default():
        w = tf.Variable(1.0, name="w")
        o = opt.MovingAverageOptimizer(tf.train.GradientDescentOptimizer(1.0),
                                       average_decay=0.5)
        with pytest.raises(RuntimeError, match="Must call apply_gradients"):
            o.swapping_saver()
        step = o.minimize(w * 2.0)
        saver = o.swapping_saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(step)  # w: 1 -> -1; average 0.5 * 1 + 0.5 * (-1) = 0
            sess.run(step)  # w: -3; average 0.5 * 0 + 0.5 * (-3) = -1.5
            assert sess.run(w) == -3.0
            path = saver.save(sess, str(tmp_path / "ckpt"))
        reader = tf.train.load_checkpoint(path)
        assert reader.get_tensor("w") == -1.5
        assert reader.get_tensor("w/ExponentialMovingAverage") == -3.0


def test_scipy_optimizer_interface():
    pytest.importorskip("scipy")
    with tf.Graph().as_default():
        x = tf.Variable([3.0, -2.0], name="x")
        loss = tf.reduce_sum(tf.square(x - [1.0, 5.0]))
        bounded = opt.ScipyOptimizerInterface(loss, var_to_bounds={x: ([-10, -10], [10, 4])})
        equality = opt.ScipyOptimizerInterface(loss, equalities=[x[0] + x[1] - 1.0],
                                               method="SLSQP")
        losses = []
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            bounded.minimize(sess, fetches=[loss], loss_callback=losses.append)
            np.testing.assert_allclose(sess.run(x), [1.0, 4.0], atol=1e-4)
            assert losses[0] == pytest.approx(53.0) and losses[-1] == pytest.approx(1.0)
            equality.minimize(sess)
            # min (x0 - 1)^2 + (x1 - 5)^2 with x0 + x1 = 1: x = (-1.5, 2.5)
            np.testing.assert_allclose(sess.run(x), [-1.5, 2.5], atol=1e-4)
            with pytest.raises(ValueError, match="Bounds must be set using the var_to_bo"):
                opt.ScipyOptimizerInterface(loss, bounds=[]).minimize(sess)


@pytest.mark.oracle
def test_lazy_adam_dense_equals_tensorflows_adam():
    want = run_tf(f"""
init = np.array({INIT.tolist()}, np.float32)
grads = np.array({np.array(GRADS).tolist()}, np.float32)
var = tf.Variable(init)
g = tf.placeholder(tf.float32, [4, 3])
train = tf.train.AdamOptimizer().minimize(tf.reduce_sum(g * var))
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for i in range(4):
        sess.run(train, {{g: grads[i]}})
    result = sess.run(var).tolist()
""")
    np.testing.assert_array_equal(_run(opt.LazyAdamOptimizer)[-1], np.float32(want))
