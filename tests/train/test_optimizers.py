"""Optimizers: each one's variables after a few steps equal TensorFlow's (dense and sparse
gradients), plus slots, global_step, errors and learning-rate schedules."""

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_tf

# name -> constructor source, evaluated with `tf` bound to either library.
OPTIMIZERS = {
    "sgd": "tf.train.GradientDescentOptimizer(0.1)",
    "momentum": "tf.train.MomentumOptimizer(0.1, 0.9)",
    "nesterov": "tf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True)",
    "adagrad": "tf.train.AdagradOptimizer(0.3)",
    "adadelta": "tf.train.AdadeltaOptimizer(1.0, rho=0.9, epsilon=1e-6)",
    "rmsprop": "tf.train.RMSPropOptimizer(0.01, decay=0.9, momentum=0.5)",
    "rmsprop_centered": "tf.train.RMSPropOptimizer(0.01, momentum=0.3, centered=True)",
    "adam": "tf.train.AdamOptimizer(0.1)",
    "ftrl": "tf.train.FtrlOptimizer(0.3, l1_regularization_strength=0.01, "
            "l2_regularization_strength=0.02)",
    "ftrl_shrink": "tf.train.FtrlOptimizer(0.3, l1_regularization_strength=0.01, "
                   "l2_shrinkage_regularization_strength=0.05)",
    "proximal_sgd": "tf.train.ProximalGradientDescentOptimizer(0.1, "
                    "l1_regularization_strength=0.05, l2_regularization_strength=0.1)",
    "proximal_sgd_l2": "tf.train.ProximalGradientDescentOptimizer(0.1, "
                       "l2_regularization_strength=0.1)",
    "proximal_adagrad": "tf.train.ProximalAdagradOptimizer(0.3, "
                        "l1_regularization_strength=0.05, l2_regularization_strength=0.1)",
    "proximal_adagrad_plain": "tf.train.ProximalAdagradOptimizer(0.3)",
    "adagrad_da": "tf.train.AdagradDAOptimizer(0.3, step, l1_regularization_strength=0.01, "
                  "l2_regularization_strength=0.02)",
    "adagrad_da_plain": "tf.train.AdagradDAOptimizer(0.5, step)",
}

PROGRAM = """
def train(opt_src, steps=5):
    g = tf.Graph()
    with g.as_default():
        rng = np.random.RandomState(0)
        x = tf.constant(rng.randn(4, 3).astype(np.float32))
        y = tf.constant(rng.randn(4, 2).astype(np.float32))
        w = tf.Variable(rng.randn(3, 2).astype(np.float32), name="w")
        b = tf.Variable(np.zeros(2, np.float32), name="b")
        emb = tf.Variable(rng.randn(5, 3).astype(np.float32), name="emb")
        rows = tf.gather(emb, tf.constant([0, 2, 2, 4]))
        loss = tf.reduce_sum(tf.square(tf.matmul(x, w) + b - y)) + \\
            tf.reduce_sum(tf.square(rows - 1.0))
        step = tf.Variable(0, dtype=tf.int64, name="global_step", trainable=False)
        opt = eval(opt_src)
        train_op = opt.minimize(loss, global_step=step)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            for _ in range(steps):
                s.run(train_op)
            return [v.tolist() for v in s.run([w, b, emb])] + [int(s.run(step))]
"""


def _train_here(opt_src: str):
    env = {"tf": tf, "np": np}
    exec(PROGRAM, env)
    return env["train"](opt_src)


@pytest.fixture(scope="module")
def tensorflow_results():
    code = PROGRAM + "\nresult = {k: train(v) for k, v in OPTS.items()}\n"
    return run_tf(f"OPTS = {OPTIMIZERS!r}\n" + code)


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_matches_tensorflow(name, tensorflow_results):
    ours = _train_here(OPTIMIZERS[name])
    theirs = tensorflow_results[name]
    for k, (a, b) in enumerate(zip(ours[:3], theirs[:3], strict=True)):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5,
                                   err_msg=f"{name}: variable {['w', 'b', 'emb'][k]}")
    assert ours[3] == theirs[3] == 5


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_every_optimizer_lowers_the_loss(name):
    w0 = _train_here_steps(OPTIMIZERS[name], 0)
    w5 = _train_here_steps(OPTIMIZERS[name], 20)
    assert w5 < w0


def _train_here_steps(opt_src, steps):
    g = tf.Graph()
    with g.as_default():
        rng = np.random.RandomState(1)
        x = tf.constant(rng.randn(8, 3).astype(np.float32))
        y = tf.constant(rng.randn(8, 1).astype(np.float32))
        w = tf.Variable(rng.randn(3, 1).astype(np.float32))
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
        step = tf.train.get_or_create_global_step()
        train_op = eval(opt_src).minimize(loss, global_step=step)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            for _ in range(steps):
                s.run(train_op)
            return float(s.run(loss))


def test_slots_names_and_errors():
    g = tf.Graph()
    with g.as_default():
        w = tf.Variable([1.0, 2.0], name="w")
        opt = tf.train.AdamOptimizer(0.1)
        loss = tf.reduce_sum(w * w)
        opt.minimize(loss)
        assert opt.get_slot_names() == ["m", "v"]
        assert opt.get_slot(w, "m").name == "w/Adam:0"
        assert opt.get_slot(w, "v").name == "w/Adam_1:0"
        assert {v.name for v in opt.variables()} >= {"beta1_power:0", "beta2_power:0"}
        unrelated = tf.Variable(1.0, name="u")
        with pytest.raises(ValueError, match="No gradients provided"):
            tf.train.GradientDescentOptimizer(0.1).minimize(tf.constant(1.0) * 2.0,
                                                            var_list=[unrelated])
        with pytest.raises(ValueError, match="gate_gradients"):
            opt.compute_gradients(loss, gate_gradients=7)


def test_sparse_update_touches_only_gathered_rows():
    g = tf.Graph()
    with g.as_default():
        emb = tf.Variable(np.ones((4, 2), np.float32))
        loss = tf.reduce_sum(tf.gather(emb, [1, 1, 3]))
        grads = tf.gradients(loss, emb)[0]
        assert isinstance(grads, tf.IndexedSlices)
        train_op = tf.train.MomentumOptimizer(0.5, 0.9).minimize(loss)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            s.run(train_op)
            out = s.run(emb)
    np.testing.assert_allclose(out, [[1, 1], [0, 0], [1, 1], [0.5, 0.5]])


def test_learning_rate_schedules():
    g = tf.Graph()
    with g.as_default():
        step = tf.placeholder(tf.int64, [])
        exp = tf.train.exponential_decay(0.1, step, 10, 0.5)
        stair = tf.train.exponential_decay(0.1, step, 10, 0.5, staircase=True)
        inv = tf.train.inverse_time_decay(0.1, step, 10, 0.5)
        poly = tf.train.polynomial_decay(0.1, step, 10, 0.01, power=2.0)
        pw = tf.train.piecewise_constant(step, [5, 10], [1.0, 0.5, 0.1])
        with tf.Session() as s:
            for t in (0, 5, 7, 10, 15):
                e, st, i, p, c = s.run([exp, stair, inv, poly, pw], {step: t})
                assert e == pytest.approx(0.1 * 0.5 ** (t / 10))
                assert st == pytest.approx(0.1 * 0.5 ** (t // 10))
                assert i == pytest.approx(0.1 / (1 + 0.5 * t / 10))
                assert p == pytest.approx((0.1 - 0.01) * (1 - min(t, 10) / 10) ** 2 + 0.01)
                assert c == pytest.approx(1.0 if t <= 5 else 0.5 if t <= 10 else 0.1)


def test_clipping():
    g = tf.Graph()
    with g.as_default():
        a = tf.constant([3.0, 4.0])
        b = tf.constant([[0.0, 12.0]])
        clipped, norm = tf.clip_by_global_norm([a, None, b], 6.5)
        by_norm = tf.clip_by_norm(a, 1.0)
        by_value = tf.clip_by_value(a, 3.5, 3.8)
        with tf.Session() as s:
            (ca, cb), n, bn, bv = s.run([[clipped[0], clipped[2]], norm, by_norm, by_value])
    assert clipped[1] is None and n == pytest.approx(13.0)
    np.testing.assert_allclose(ca, [1.5, 2.0], rtol=1e-6)
    np.testing.assert_allclose(cb, [[0.0, 6.0]], rtol=1e-6)
    np.testing.assert_allclose(bn, [0.6, 0.8], rtol=1e-6)
    np.testing.assert_allclose(bv, [3.5, 3.8])


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_dense_updates_split_over_threads_change_nothing(monkeypatch, name):
    """Big dense updates run over chunks on the intra-op threads; the variables end up
    bitwise equal to an unsplit run (every rule is elementwise)."""
    from tensorflux.kernels import intra_op

    monkeypatch.setattr(intra_op, "MIN_ELEMENTS", 0)
    monkeypatch.setattr(intra_op, "CHUNK_ELEMENTS", 7)

    def run(workers):
        monkeypatch.setattr(intra_op, "workers", lambda ctx=None: workers)
        g = tf.Graph()
        with g.as_default():
            rng = np.random.RandomState(1)
            w = tf.Variable(rng.randn(9, 5).astype(np.float32))
            x = tf.constant(rng.randn(4, 9).astype(np.float32))
            loss = tf.reduce_sum(tf.square(tf.matmul(x, w) - 1.0))
            step = tf.train.get_or_create_global_step()
            train = eval(OPTIMIZERS[name]).minimize(loss, global_step=step)
            with tf.Session() as s:
                s.run(tf.global_variables_initializer())
                for _ in range(3):
                    s.run(train)
                return s.run(w)

    np.testing.assert_array_equal(run(1), run(2))
