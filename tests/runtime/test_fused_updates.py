"""The graph optimizer's fusion of a step's optimizer updates (`fuse_optimizer_updates`):
one _FusedResourceApply<rule> node per rule and device, the unfused values bit for bit."""

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.kernels.cpu import native
from tensorflux.ops import state_ops
from tests import threads_util

L0 = tf.ConfigProto(graph_options=tf.GraphOptions(
    optimizer_options=tf.OptimizerOptions(opt_level=tf.OptimizerOptions.L0)))

OPTIMIZERS = {
    "adam": lambda: tf.train.AdamOptimizer(0.01),
    "momentum": lambda: tf.train.MomentumOptimizer(0.05, 0.9),
    "nesterov": lambda: tf.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
    "sgd": lambda: tf.train.GradientDescentOptimizer(0.1),
}
FUSED = {"adam": "_FusedResourceApplyAdam", "momentum": "_FusedResourceApplyMomentum",
         "nesterov": "_FusedResourceApplyMomentum",
         "sgd": "_FusedResourceApplyGradientDescent"}


def _ops(sess):
    """The op types of every step `sess` has built."""
    return [n.op for step in sess._steps.values() for p in step.partition_graphs.values()
            for n in p.nodes]


def _model(opt, dtype=tf.float32, sizes=(6, 300, 3)):
    """A two-layer net and its training op; returns (graph, x, y, train, loss, init,
    variables)."""
    rng = np.random.default_rng(3)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(dtype, [None, sizes[0]])
        y = tf.placeholder(dtype, [None, sizes[2]])
        w1 = tf.Variable(0.1 * rng.standard_normal(sizes[:2]), dtype=dtype)
        b1 = tf.Variable(np.zeros(sizes[1]), dtype=dtype)
        w2 = tf.Variable(0.01 * rng.standard_normal(sizes[1:]), dtype=dtype)
        b2 = tf.Variable(np.zeros(sizes[2]), dtype=dtype)
        out = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2
        loss = tf.reduce_mean(tf.square(out - y))
        train = opt().minimize(loss)
        init = tf.global_variables_initializer()
    return g, x, y, train, loss, init, [w1, b1, w2, b2]


def _train(config, opt, dtype=tf.float32, steps=3, sizes=(6, 300, 3)):
    g, x, y, train, loss, init, variables = _model(opt, dtype, sizes)
    rng = np.random.default_rng(4)
    feed = {x: rng.standard_normal((5, 6)), y: rng.standard_normal((5, 3))}
    with tf.Session(graph=g, config=config) as sess:
        sess.run(init)
        for _ in range(steps):
            sess.run(train, feed)
        return sess.run(variables + [loss], feed), _ops(sess)


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_updates_fuse_with_the_unfused_values(name, dtype):
    (fused, ops1), (plain, ops0) = (_train(None, OPTIMIZERS[name], dtype),
                                    _train(L0, OPTIMIZERS[name], dtype))
    for a, b in zip(fused, plain, strict=True):
        np.testing.assert_array_equal(a, b)
    assert ops1.count(FUSED[name]) == 1
    assert not any(op.startswith("ResourceApply") for op in ops1)
    assert FUSED[name] not in ops0


def test_the_numpy_path_gives_the_same_values(monkeypatch):
    """Without the native loop (no extension) each update runs the NumPy rule."""
    expected, _ = _train(None, OPTIMIZERS["adam"])
    monkeypatch.setattr(native, "updates_many", lambda *a, **k: False)
    got, ops = _train(None, OPTIMIZERS["adam"])
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_array_equal(a, b)
    assert "_FusedResourceApplyAdam" in ops


def test_dependent_updates_stay_apart():
    """Updates that wait on another (a control dependency) are not fused with it: of v0's
    update, v1's and v2's (waiting on v0's) and v3's, v0's and v3's fuse."""
    g = tf.Graph()
    with g.as_default():
        vs = [tf.Variable(np.full(4, float(i), np.float32)) for i in range(4)]
        loss = tf.add_n([tf.reduce_sum(v * v) for v in vs])
        opt = tf.train.GradientDescentOptimizer(0.5)
        grads = opt.compute_gradients(loss, vs)
        first = opt.apply_gradients(grads[:1])
        with tf.control_dependencies([first]):
            later = opt.apply_gradients(grads[1:3])
        alone = opt.apply_gradients(grads[3:])
        init = tf.global_variables_initializer()
    with tf.Session(graph=g) as sess:
        sess.run(init)
        sess.run([later, alone])
        ops = _ops(sess)
        values = sess.run(vs)
    assert ops.count("_FusedResourceApplyGradientDescent") == 1
    assert ops.count("ResourceApplyGradientDescent") == 2
    for v in values:  # v - 0.5 * 2v
        np.testing.assert_array_equal(v, np.zeros(4, np.float32))


def test_updates_run_as_targets_keep_their_identity():
    from tensorflux.ops import training_ops

    g = tf.Graph()
    with g.as_default():
        a = tf.Variable(np.ones(3, np.float32))
        b = tf.Variable(np.ones(3, np.float32))
        ua = training_ops.resource_apply_gradient_descent(a.handle, 1.0, tf.ones(3))
        ub = training_ops.resource_apply_gradient_descent(b.handle, 2.0, tf.ones(3))
        init = tf.global_variables_initializer()
    with tf.Session(graph=g) as sess:
        sess.run(init)
        sess.run([ua, ub])
        assert _ops(sess).count("ResourceApplyGradientDescent") == 2
        assert sess.run(a).tolist() == [0.0] * 3 and sess.run(b).tolist() == [-1.0] * 3


def test_the_fused_node_waits_for_every_input_and_is_waited_on():
    """What waited on one update (the optimizer's finish op, a user's control
    dependency) runs after the fused node."""
    g = tf.Graph()
    with g.as_default():
        a = tf.Variable(np.ones(3, np.float32))
        b = tf.Variable(np.ones(3, np.float32))
        opt = tf.train.GradientDescentOptimizer(1.0)
        train = opt.minimize(tf.reduce_sum(a * 2.0) + tf.reduce_sum(b * 3.0))
        with tf.control_dependencies([train]):
            after = tf.identity(a.read_value() + b.read_value())
        init = tf.global_variables_initializer()
    with tf.Session(graph=g) as sess:
        sess.run(init)
        np.testing.assert_array_equal(sess.run(after), np.full(3, -3.0, np.float32))
        assert "_FusedResourceApplyGradientDescent" in _ops(sess)


def test_control_flow_steps_are_left_alone():
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.bool, [])
        a = tf.Variable(1.0)
        b = tf.Variable(1.0)
        opt = tf.train.GradientDescentOptimizer(1.0)
        train = tf.cond(p, lambda: tf.group(opt.apply_gradients(
            [(tf.constant(1.0), a), (tf.constant(1.0), b)])), tf.no_op)
        init = tf.global_variables_initializer()
    with tf.Session(graph=g) as sess:
        sess.run(init)
        sess.run(train, {p: False})
        assert sess.run([a, b]) == [1.0, 1.0]
        sess.run(train, {p: True})
        assert sess.run([a, b]) == [0.0, 0.0]
        assert not any(op.startswith("_Fused") for op in _ops(sess))


def test_a_variable_updated_twice_in_one_node_gets_both_updates():
    """Two updates of one variable (two optimizers' on one variable) fused: applied one
    after another, as two nodes would be."""
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(np.ones(5, np.float32))
        loss = tf.reduce_sum(v)
        t1 = tf.train.GradientDescentOptimizer(1.0).minimize(loss)
        t2 = tf.train.GradientDescentOptimizer(2.0).minimize(loss)
        init = tf.global_variables_initializer()
    with tf.Session(graph=g) as sess:
        sess.run(init)
        sess.run([t1, t2])
        assert "_FusedResourceApplyGradientDescent" in _ops(sess)
        np.testing.assert_array_equal(sess.run(v), np.full(5, -2.0, np.float32))


def test_big_variables_keep_their_own_update():
    """Updates of variables over FUSE_MAX_ELEMENTS stay apart (the schedule runs each as
    soon as its gradient exists); the small ones fuse."""
    (fused, ops1), (plain, _) = (_train(None, OPTIMIZERS["adam"], sizes=(6, 70000, 3)),
                                 _train(L0, OPTIMIZERS["adam"], sizes=(6, 70000, 3)))
    for a, b in zip(fused, plain, strict=True):
        np.testing.assert_array_equal(a, b)
    # w1 (6 x 70000), b1 (70000) and w2 (70000 x 3) alone; b2 is the only small one
    assert ops1.count("ResourceApplyAdam") == 4 and "_FusedResourceApplyAdam" not in ops1
    _, ops2 = _train(None, OPTIMIZERS["adam"], sizes=(6, 20000, 3))
    # w1 (120000) alone; b1 (20000), w2 (60000) and b2 fuse
    assert ops2.count("ResourceApplyAdam") == 1 and ops2.count("_FusedResourceApplyAdam") == 1


def test_updates_many_equals_one_update_at_a_time():
    """native.updates_many over variables of several chunks and of none, each rule and
    type: the single-variable functions' values bit for bit."""
    if native._mod is None:
        pytest.skip("no C extension")
    rng = np.random.default_rng(5)
    shapes = [(300, 700), (0,), (3,), (70000,)]
    for dtype in (np.float32, np.float64):
        for rule, arrays, scalars in (("adam", 4, (0.9 ** 3, 0.999 ** 3, 0.01, 0.9, 0.999,
                                                   1e-7)),
                                      ("momentum", 3, (0.05, 0.9)),
                                      ("gradient_descent", 2, (0.1,))):
            for nesterov in ((False, True) if rule != "gradient_descent" else (False,)):
                one = [[np.abs(rng.standard_normal(s)).astype(dtype) for _ in range(arrays)]
                       for s in shapes]
                many = [[a.copy() for a in group] for group in one]
                for group in one:
                    if rule == "adam":
                        b1p, b2p, lr, b1, b2, eps = (np.asarray(v, dtype) for v in scalars)
                        lr_t = lr * np.sqrt(1 - b2p) / (1 - b1p)
                        assert native.adam(*group, lr_t, b1, b2, eps, nesterov, 2)
                    elif rule == "momentum":
                        assert native.momentum(*group, *scalars, nesterov, 2)
                    else:
                        assert native.gradient_descent(*group, *scalars, 2)
                assert native.updates_many(rule, [(*g, *scalars) for g in many], nesterov, 2)
                for g1, g2 in zip(one, many, strict=True):
                    for a, b in zip(g1, g2, strict=True):
                        np.testing.assert_array_equal(a, b)


def test_uninitialized_slot_is_reported():
    """The fused kernel reports an uninitialized slot as the single kernel does."""
    errors = []
    for config in (None, L0):
        g, x, y, train, loss, init, variables = _model(OPTIMIZERS["momentum"],
                                                       sizes=(2, 3, 1))
        with g.as_default():
            init_vars = tf.variables_initializer(variables)  # not the slots
        with tf.Session(graph=g, config=config) as sess:
            sess.run(init_vars)
            with pytest.raises(tf.errors.OpError) as info:
                sess.run(train, {x: np.ones((1, 2)), y: np.ones((1, 1))})
            errors.append(info.value)
    assert type(errors[0]) is type(errors[1])
    assert "Momentum" in errors[0].message


def _sgd_from_threads(sizes, use_locking: bool, config=None, warmup: int = 0):
    """8 threads running 20 steps each of one SGD on variables of `sizes` whose gradient is
    constant (-1 an element); (the variables' values, the step's op types)."""
    g = tf.Graph()
    with g.as_default():
        vs = [tf.Variable(np.zeros(n, np.float64)) for n in sizes]
        train = tf.train.GradientDescentOptimizer(1.0, use_locking=use_locking).minimize(
            -tf.add_n([tf.reduce_sum(v) for v in vs]))
        init = tf.global_variables_initializer()
    with tf.Session(graph=g, config=config) as sess:
        sess.run(init)
        for _ in range(warmup):
            sess.run(train)
        errors = []

        def work():
            try:
                for _ in range(20):
                    sess.run(train)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads_util.join(*(threads_util.start(work) for _ in range(8)), timeout=60)
        assert not errors
        return sess.run(vs), _ops(sess)


def test_concurrent_steps_of_a_fused_update():
    """Hogwild: 8 threads stepping one fused SGD at once; every update lands (the
    gradient is constant, so the result is exact)."""
    values, ops = _sgd_from_threads((3, 60000), use_locking=False, warmup=1)
    assert "_FusedResourceApplyGradientDescent" in ops
    # unlocked updates may race (as TensorFlow's); the sum is at most 161 per element
    for v in values:
        assert 1.0 <= v.min() <= v.max() <= 161.0


def test_updates_many_checks_its_items():
    if native._mod is None:
        pytest.skip("no C extension")
    var = np.ones(4, np.float32)
    assert not native.updates_many("gradient_descent", [(var, np.ones(5, np.float32), 1.0)],
                                   False, 2)
    assert not native.updates_many("gradient_descent", [(var, np.ones(4, np.float64), 1.0)],
                                   False, 2)
    ro = np.ones(4, np.float32)
    ro.flags.writeable = False
    assert not native.updates_many("gradient_descent", [(ro, var, 1.0)], False, 2)
    with pytest.raises(TypeError):
        native._mod.updates_many(2, [(var, var.copy(), "x")], False, 2)
    with pytest.raises(ValueError):
        native._mod.updates_many(5, [(var, var.copy(), 1.0)], False, 2)
    np.testing.assert_array_equal(var, np.ones(4, np.float32))


def test_updates_many_takes_scalars_without_dimensions_only():
    """A scalar argument may be a Python number, a NumPy scalar or a 0-d array; one with
    dimensions (even of one element) makes updates_many decline, nothing written, so the
    kernel's own path reports it."""
    if native._mod is None:
        pytest.skip("no C extension")
    var = np.ones(4, np.float32)
    delta = np.full(4, 2.0, np.float32)
    for alpha in (0.5, np.float32(0.5), np.array(0.5, np.float64)):
        var[:] = 1.0
        assert native.updates_many("gradient_descent", [(var, delta, alpha)], False, 2)
        np.testing.assert_array_equal(var, np.zeros(4, np.float32))
    var[:] = 1.0
    for alpha in (np.array([0.5]), np.array([[0.5]]), np.ones(3), np.ones(4)[::2]):
        assert not native.updates_many("gradient_descent", [(var, delta, alpha)], False, 2)
    np.testing.assert_array_equal(var, np.ones(4, np.float32))


@pytest.mark.parametrize("config", [None, L0], ids=["fused", "unfused"])
def test_an_update_with_a_non_scalar_rate_is_refused(config):
    """An Adam or SGD update fed a learning rate with dimensions is refused as TensorFlow
    refuses it, fused or not, and the variable keeps its value."""
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(np.ones(3, np.float32), use_resource=True)
        lr = tf.placeholder(tf.float32)
        loss = tf.reduce_sum(v * v)
        train = [tf.train.AdamOptimizer(lr).minimize(loss),
                 tf.train.GradientDescentOptimizer(lr).minimize(loss)]
        init = tf.global_variables_initializer()
    with tf.Session(graph=g, config=config) as sess:
        sess.run(init)
        for op in train:
            with pytest.raises(tf.errors.InvalidArgumentError, match="scalar"):
                sess.run(op, {lr: np.full([1], 0.1, np.float32)})
            np.testing.assert_array_equal(sess.run(v), np.ones(3, np.float32))
        sess.run(train, {lr: 0.1})
        assert (sess.run(v) < 1).all()


@pytest.mark.parametrize("config", [None, L0], ids=["fused", "unfused"])
def test_updates_find_variables_destroyed_and_made_again(config):
    """The update kernels keep the variables they looked up while nothing is removed from
    the resource manager: a variable destroyed between steps is reported missing, and one
    made again under its name is the one updated next."""
    g, x, y, train, loss, init, variables = _model(OPTIMIZERS["momentum"], sizes=(2, 3, 1))
    with g.as_default():
        b2 = variables[3]
        destroy = state_ops.destroy_resource_op(b2.handle)
    feed = {x: np.ones((1, 2)), y: np.ones((1, 1))}
    with tf.Session(graph=g, config=config) as sess:
        sess.run(init)
        sess.run(train, feed)
        sess.run(destroy)
        with pytest.raises(tf.errors.OpError, match="does not exist|Could not find"):
            sess.run(train, feed)
        sess.run(b2.initializer)  # made again: zeros, then one more update
        before = sess.run(b2)
        np.testing.assert_array_equal(before, np.zeros(1))
        sess.run(train, feed)
        after = sess.run(b2)
        assert after[0] != 0.0
        assert (config is None) == ("_FusedResourceApplyMomentum" in _ops(sess))


@pytest.mark.parametrize("config", [None, L0], ids=["fused", "unfused"])
def test_locked_updates_from_many_threads_all_land(config):
    """use_locking: 8 threads stepping one SGD at once, each update under the variables'
    locks, so every one lands (the gradient is constant: the result is exact)."""
    values, ops = _sgd_from_threads((3, 5, 60000), use_locking=True, config=config)
    for v in values:
        np.testing.assert_array_equal(v, np.full(v.shape, 160.0))
    assert (config is None) == ("_FusedResourceApplyGradientDescent" in ops)
