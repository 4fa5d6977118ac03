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


# The updates whose float arithmetic follows TensorFlow's kernels operation for operation
# (m += (g - m)(1 - b1), not b1 m + (1 - b1) g: the same in exact arithmetic, an ulp apart
# in float32): after many steps their variables equal TensorFlow's bit for bit. Adagrad,
# Adadelta and ProximalAdagrad divide by Eigen's approximate rsqrt there, and Ftrl with
# another learning-rate power takes Eigen's pow: close, not equal.
BIT_EXACT = ("sgd", "momentum", "nesterov", "rmsprop", "rmsprop_centered", "adam", "ftrl",
             "ftrl_shrink", "proximal_sgd", "proximal_sgd_l2")

FED_PROGRAM = """
def fed(opt_src, n=256, steps=60):
    rng = np.random.RandomState(0)
    w0 = rng.randn(n).astype(np.float32)
    grads = rng.randn(steps, n).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        w = tf.Variable(w0)
        gp = tf.placeholder(tf.float32, [n])
        train = eval(opt_src).apply_gradients([(gp, w)])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            for row in grads:
                s.run(train, {gp: row})
            return s.run(w).tolist()
"""


def _fed_here(opt_src: str):
    env = {"tf": tf, "np": np}
    exec(FED_PROGRAM, env)
    return np.float32(env["fed"](opt_src))


@pytest.fixture(scope="module")
def tensorflow_fed_results():
    opts = {k: OPTIMIZERS[k] for k in BIT_EXACT}
    return run_tf(f"OPTS = {opts!r}\n" + FED_PROGRAM +
                  "\nresult = {k: fed(v) for k, v in OPTS.items()}\n")


@pytest.mark.oracle
@pytest.mark.parametrize("native_loops", [True, False], ids=["native", "numpy"])
@pytest.mark.parametrize("name", BIT_EXACT)
def test_updates_equal_tensorflows_bit_for_bit(name, native_loops, tensorflow_fed_results,
                                              monkeypatch):
    from tensorflux.kernels.cpu import native

    if not native_loops:
        monkeypatch.setattr(native, "_mod", None)  # the NumPy rules
    ours = _fed_here(OPTIMIZERS[name])
    np.testing.assert_array_equal(ours, np.float32(tensorflow_fed_results[name]),
                                  err_msg=name)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("nesterov", [False, True], ids=["plain", "nesterov"])
def test_adam_and_momentum_rules_compute_in_tensorflows_order(dtype, nesterov):
    """The NumPy rules and the native loops against TensorFlow's arithmetic written out
    here, bit for bit, over 20 steps of arrays of several chunks."""
    from tensorflux.kernels.cpu import native, training_ops

    rng = np.random.default_rng(3)
    n = 70001
    grads = rng.standard_normal((20, n)).astype(dtype)
    w0 = rng.standard_normal(n).astype(dtype)
    t = dtype
    lr, b1, b2, eps, mom = t(0.01), t(0.9), t(0.999), t(1e-7), t(0.9)

    def expected():
        w, m, v, acc = w0.copy(), np.zeros(n, dtype), np.zeros(n, dtype), np.zeros(n, dtype)
        wm = w0.copy()
        for i, g in enumerate(grads):
            b1p, b2p = b1 ** (i + 1), b2 ** (i + 1)
            alpha = lr * np.sqrt(t(1) - b2p) / (t(1) - b1p)
            m = m + (g - m) * (t(1) - b1)
            v = v + (g * g - v) * (t(1) - b2)
            num = g * (t(1) - b1) + b1 * m if nesterov else m
            w = w - (num * alpha) / (np.sqrt(v) + eps)
            acc = acc * mom + g
            wm = wm - (g * lr + acc * mom * lr if nesterov else acc * lr)
        return w, wm

    def run(use_native):
        w, m, v, wm, acc = (w0.copy(), np.zeros(n, dtype), np.zeros(n, dtype), w0.copy(),
                            np.zeros(n, dtype))
        for i, g in enumerate(grads):
            hyper = dict(beta1_power=b1 ** (i + 1), beta2_power=b2 ** (i + 1), lr=lr,
                         beta1=b1, beta2=b2, epsilon=eps, grad=g, use_nesterov=nesterov)
            if not (use_native and training_ops._adam_native(w, m, v, parts=2, **hyper)):
                assert not use_native or native._mod is None
                training_ops._adam(w, m, v, **hyper)
            momentum = dict(lr=lr, grad=g, momentum=mom, use_nesterov=nesterov)
            if not (use_native and training_ops._momentum_native(wm, acc, parts=2,
                                                                 **momentum)):
                training_ops._momentum(wm, acc, **momentum)
        return w, wm

    want = expected()
    for use_native in (False, True):
        for got, ref in zip(run(use_native), want, strict=True):
            np.testing.assert_array_equal(got, ref)


# Sparse (IndexedSlices) updates equal to TensorFlow's bit for bit. TensorFlow's sparse
# Momentum kernel orders Nesterov's step otherwise than its dense one (lr g + (lr momentum)
# accum); its sparse RMSProp kernels divide by rsqrt, and its graph optimizer reassociates
# sparse Adam's (g g)(1 - beta2) into g (g (1 - beta2)): those stay within an ulp or so.
SPARSE_BIT_EXACT = ("sgd", "momentum", "nesterov", "ftrl", "ftrl_shrink")

SPARSE_PROGRAM = """
def sparse(opt_src, steps=40):
    rng = np.random.RandomState(0)
    e0 = rng.randn(50, 8).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        e = tf.Variable(e0)
        ids = tf.placeholder(tf.int32, [6])
        t = tf.placeholder(tf.float32, [6, 8])
        train = eval(opt_src).minimize(tf.reduce_sum(tf.square(tf.gather(e, ids) - t)))
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            for _ in range(steps):  # repeated ids: duplicates summed first, as TF does
                s.run(train, {ids: rng.randint(0, 50, 6), t: rng.randn(6, 8).astype(np.float32)})
            return s.run(e).tolist()
"""


@pytest.mark.oracle
def test_sparse_updates_equal_tensorflows_bit_for_bit():
    opts = {k: OPTIMIZERS[k] for k in SPARSE_BIT_EXACT}
    theirs = run_tf(f"OPTS = {opts!r}\n" + SPARSE_PROGRAM +
                    "\nresult = {k: sparse(v) for k, v in OPTS.items()}\n")
    env = {"tf": tf, "np": np}
    exec(SPARSE_PROGRAM, env)
    for name, src in opts.items():
        np.testing.assert_array_equal(np.float32(env["sparse"](src)),
                                      np.float32(theirs[name]), err_msg=name)


@pytest.mark.parametrize("nesterov", [False, True], ids=["plain", "nesterov"])
def test_keras_momentum_ops_follow_tensorflows_rule(nesterov):
    """tf.raw_ops.ResourceApplyKerasMomentum and its sparse form (Keras's SGD): accum =
    accum * momentum - grad * lr; var += accum (Nesterov: var += accum * momentum - grad *
    lr), the sparse one on the rows given only; written out here in float32."""
    rng = np.random.RandomState(0)
    w0, grads = rng.randn(5, 3).astype(np.float32), rng.randn(4, 5, 3).astype(np.float32)
    lr, mom = np.float32(0.05), np.float32(0.9)
    rows = np.array([4, 1])
    want_w, want_a = w0.copy(), np.zeros_like(w0)
    want_sw, want_sa = w0.copy(), np.zeros_like(w0)
    for g in grads:
        want_a = want_a * mom - g * lr
        want_w = want_w + (want_a * mom - g * lr if nesterov else want_a)
        want_sa[rows] = want_sa[rows] * mom - g[rows] * lr
        want_sw[rows] += want_sa[rows] * mom - g[rows] * lr if nesterov else want_sa[rows]
    with tf.Graph().as_default():
        variables = [tf.get_variable(n, initializer=init, use_resource=True) for n, init in
                     (("w", w0), ("a", np.zeros_like(w0)), ("sw", w0),
                      ("sa", np.zeros_like(w0)))]
        w, a, sw, sa = variables
        g = tf.placeholder(tf.float32, [5, 3])
        dense = tf.raw_ops.ResourceApplyKerasMomentum(
            var=w.handle, accum=a.handle, lr=lr, grad=g, momentum=mom,
            use_nesterov=nesterov)
        sparse = tf.raw_ops.ResourceSparseApplyKerasMomentum(
            var=sw.handle, accum=sa.handle, lr=lr, grad=tf.gather(g, rows), indices=rows,
            momentum=mom, use_nesterov=nesterov)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for grad in grads:
                sess.run([dense, sparse], {g: grad})
            got = sess.run(variables)
    for value, want in zip(got, (want_w, want_a, want_sw, want_sa), strict=True):
        np.testing.assert_array_equal(value, want)
