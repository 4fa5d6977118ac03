"""Gradients through tf.cond and tf.while_loop (nested loops, conds inside loops, loop
invariants, TensorArrays, unused loop outputs), checked against closed forms and finite
differences, on compiled loops and on the executor's frames.
"""

import numpy as np
import pytest

import tensorflux as tf
from tests.control_flow.conftest import session as _session


def _fd_check(sess, y, xs, values, feed=None, delta=1e-5, rtol=1e-5, atol=1e-7):
    """Compares tf.gradients(y, xs) with central differences of the scalar y (float64)."""
    feed = dict(feed or {})
    grads = tf.gradients(y, xs)
    assert all(g is not None for g in grads)
    base = {**feed, **dict(zip(xs, values, strict=True))}
    analytic = sess.run(grads, base)
    for x, v, g in zip(xs, values, analytic, strict=True):
        v = np.asarray(v, np.float64)
        numeric = np.zeros_like(v)
        for idx in np.ndindex(*v.shape):
            plus, minus = v.copy(), v.copy()
            plus[idx] += delta
            minus[idx] -= delta
            fp = sess.run(y, {**base, x: plus})
            fm = sess.run(y, {**base, x: minus})
            numeric[idx] = (fp - fm) / (2 * delta)
        np.testing.assert_allclose(g, numeric, rtol=rtol, atol=atol, err_msg=x.name)


# ---- cond ---------------------------------------------------------------------------------


def test_cond_gradients_take_the_taken_branch(graph, loop_mode):
    p = tf.placeholder(tf.bool, [])
    x = tf.placeholder(tf.float64, [3])
    w = tf.placeholder(tf.float64, [3])
    y = tf.reduce_sum(tf.cond(p, lambda: tf.sin(x) * w, lambda: x * x))
    gx, gw = tf.gradients(y, [x, w])
    xv, wv = np.array([0.1, -0.7, 1.3]), np.array([2.0, 3.0, -1.0])
    with _session(loop_mode) as s:
        a, b = s.run([gx, gw], {p: True, x: xv, w: wv})
        np.testing.assert_allclose(a, np.cos(xv) * wv)
        np.testing.assert_allclose(b, np.sin(xv))
        a, b = s.run([gx, gw], {p: False, x: xv, w: wv})
        np.testing.assert_allclose(a, 2 * xv)
        np.testing.assert_array_equal(b, [0, 0, 0])  # zeros, live, on the untaken side
        _fd_check(s, y, [x, w], [xv, wv], {p: True})


def test_nested_cond_gradients(graph, loop_mode):
    p = tf.placeholder(tf.bool, [])
    q = tf.placeholder(tf.bool, [])
    x = tf.placeholder(tf.float64, [])
    y = tf.cond(p, lambda: tf.cond(q, lambda: x ** 3, lambda: tf.exp(x)), lambda: 5.0 * x)
    (g,) = tf.gradients(y, [x])
    with _session(loop_mode) as s:
        assert s.run(g, {p: True, q: True, x: 2.0}) == pytest.approx(12.0)
        assert s.run(g, {p: True, q: False, x: 2.0}) == pytest.approx(np.exp(2.0))
        assert s.run(g, {p: False, q: True, x: 2.0}) == pytest.approx(5.0)


# ---- while loops --------------------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 5])
def test_gradient_of_x_to_the_n_computed_by_a_loop(graph, loop_mode, n):
    x = tf.placeholder(tf.float32, [])
    k = tf.placeholder(tf.int32, [])
    _, y = tf.while_loop(lambda i, y: i < k, lambda i, y: (i + 1, y * x), [0, 1.0])
    (g,) = tf.gradients(y, x)
    with _session(loop_mode) as s:
        yv, gv = s.run([y, g], {x: 1.5, k: n})
        compiled = [it.node.name for step in s._steps.values() for _, ex, _ in step.parts
                    for it in getattr(ex, "items", ()) if it.node.op == "_CompiledLoop"]
    # The forward loop (with its history pushes) and the gradient loop both compile.
    assert len(compiled) == (2 if loop_mode == "compiled" else 0)
    assert yv == pytest.approx(1.5 ** n)
    assert gv == pytest.approx(n * 1.5 ** (n - 1) if n else 0.0)


def test_gradients_of_nested_loops(graph, loop_mode):
    x = tf.placeholder(tf.float64, [2])

    def outer(i, y):
        _, y2 = tf.while_loop(lambda j, z: j < i + 1, lambda j, z: (j + 1, tf.sin(z) * x),
                              [0, y])
        return i + 1, y2

    _, y = tf.while_loop(lambda i, y: i < 3, outer, [0, x])
    loss = tf.reduce_sum(y * y)
    with _session(loop_mode) as s:
        _fd_check(s, loss, [x], [np.array([0.4, -1.1])])


def test_gradients_through_a_cond_inside_a_loop(graph, loop_mode):
    x = tf.placeholder(tf.float64, [])

    def body(i, y):
        y = tf.cond(tf.equal(i % 2, 0), lambda: y * x, lambda: y + tf.square(x))
        return i + 1, y

    _, y = tf.while_loop(lambda i, y: i < 5, body, [0, tf.constant(1.0, tf.float64)])
    with _session(loop_mode) as s:
        _fd_check(s, y, [x], [np.array(0.7)])


def test_loop_invariant_and_initial_value_gradients(graph, loop_mode):
    a = tf.placeholder(tf.float64, [2, 2])
    h0 = tf.placeholder(tf.float64, [2])

    def body(i, h):
        return i + 1, tf.tanh(tf.linalg_matvec(a, h) if hasattr(tf, "linalg_matvec")
                              else tf.matmul(a, tf.expand_dims(h, 1))[:, 0])

    _, h = tf.while_loop(lambda i, h: i < 4, body, [0, h0])
    loss = tf.reduce_sum(h * tf.constant([1.0, -2.0], tf.float64))
    with _session(loop_mode) as s:
        _fd_check(s, loss, [a, h0], [np.array([[0.5, -0.3], [0.2, 0.9]]), np.array([0.3, 0.8])])


def test_gradient_when_some_loop_outputs_are_unused(graph, loop_mode):
    # y uses only `a`, but `a` depends on `b`, whose Exit gets a zero gradient.
    x = tf.placeholder(tf.float64, [])
    _, a, b = tf.while_loop(lambda i, a, b: i < 3, lambda i, a, b: (i + 1, a + b, b * x),
                            [0, tf.constant(0.0, tf.float64), x])
    with _session(loop_mode) as s:
        _fd_check(s, a, [x], [np.array(1.3)])
        (gb,) = tf.gradients(b, x)  # and the other way round
        assert s.run(gb, {x: 2.0}) == pytest.approx(4 * 2.0 ** 3)  # b = x ** 4


def test_back_prop_false_gives_no_gradient(graph):
    x = tf.placeholder(tf.float32, [])
    y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * x), [0, x],
                      back_prop=False)[1]
    assert tf.gradients(y, x) == [None]


def test_gradients_with_maximum_iterations_and_parallel_iterations(graph, loop_mode):
    x = tf.placeholder(tf.float64, [3])

    def run(pi):
        return tf.while_loop(lambda y: tf.constant(True), lambda y: tf.sin(y) + x, [x],
                             maximum_iterations=6, parallel_iterations=pi)

    y1, y10 = run(1), run(10)
    g1, g10 = tf.gradients(tf.reduce_sum(y1), x)[0], tf.gradients(tf.reduce_sum(y10), x)[0]
    xv = np.array([0.1, 0.5, -0.9])
    with _session(loop_mode) as s:
        a, b = s.run([g1, g10], {x: xv})
        np.testing.assert_array_equal(a, b)
        _fd_check(s, tf.reduce_sum(y1), [x], [xv])


def test_lstm_gradient_check(graph, loop_mode):
    """A small LSTM written by hand inside a while_loop over TensorArrays."""
    steps, batch, n_in, n_hid = 4, 2, 3, 2
    rng = np.random.RandomState(0)
    inputs = tf.placeholder(tf.float64, [steps, batch, n_in])
    w = tf.placeholder(tf.float64, [n_in + n_hid, 4 * n_hid])
    b = tf.placeholder(tf.float64, [4 * n_hid])
    inputs_ta = tf.TensorArray(tf.float64, size=steps).unstack(inputs)

    def step(t, h, c, out_ta):
        z = tf.matmul(tf.concat([inputs_ta.read(t), h], 1), w) + b
        i, f, g, o = tf.split(z, 4, axis=1)
        c = tf.sigmoid(f + 1.0) * c + tf.sigmoid(i) * tf.tanh(g)
        h = tf.sigmoid(o) * tf.tanh(c)
        return t + 1, h, c, out_ta.write(t, h)

    zeros = tf.zeros([batch, n_hid], tf.float64)
    _, h, c, out_ta = tf.while_loop(lambda t, *_: t < steps, step,
                                    [0, zeros, zeros, tf.TensorArray(tf.float64, size=steps)])
    outputs = out_ta.stack()
    loss = tf.reduce_sum(outputs * tf.constant(rng.randn(steps, batch, n_hid))) + \
        tf.reduce_sum(c)
    with _session(loop_mode) as s:
        _fd_check(s, loss, [w, b, inputs],
                  [rng.randn(n_in + n_hid, 4 * n_hid) * 0.5, rng.randn(4 * n_hid) * 0.1,
                   rng.randn(steps, batch, n_in)])


def test_gradient_loop_runs_after_the_forward_loop_in_one_step(graph, loop_mode):
    # Fetching the loop's value and its gradient together: the histories of one run.
    x = tf.placeholder(tf.float32, [])
    _, y = tf.while_loop(lambda i, y: i < 4, lambda i, y: (i + 1, tf.sin(y) * x), [0, x])
    (g,) = tf.gradients(y, x)
    with _session(loop_mode) as s:
        for xv in (0.5, 1.0, -2.0):
            yv, gv = s.run([y, g], {x: xv})
            yp = s.run(y, {x: xv + 1e-3})
            ym = s.run(y, {x: xv - 1e-3})
            assert gv == pytest.approx((yp - ym) / 2e-3, rel=1e-2, abs=1e-3)


# ---- against TensorFlow ---------------------------------------------------------------

_ORACLE_PROGRAM = """
def program(tf, np):
    out = {}
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.bool, [])
        x = tf.placeholder(tf.float64, [3])
        c = tf.cond(p, lambda: tf.sin(x) * 2.0, lambda: x ** 2)
        (gc,) = tf.gradients(tf.reduce_sum(c), [x])
        k = tf.placeholder(tf.int32, [])
        _, power = tf.while_loop(lambda i, y: i < k, lambda i, y: (i + 1, y * x),
                                 [0, tf.ones([3], tf.float64)])
        (gpow,) = tf.gradients(tf.reduce_sum(power), [x])

        def outer(i, y):
            _, y = tf.while_loop(lambda j, z: j < i, lambda j, z: (j + 1, tf.cos(z) + x),
                                 [0, y])
            return i + 1, y

        _, nested = tf.while_loop(lambda i, y: i < 3, outer, [0, x])
        (gnested,) = tf.gradients(tf.reduce_sum(nested), [x])
        sc = tf.scan(lambda a, e: a * 0.5 + e * e, tf.reshape(x, [3, 1]),
                     initializer=tf.constant([1.0], tf.float64))
        (gsc,) = tf.gradients(tf.reduce_sum(sc), [x])
        mp = tf.map_fn(lambda e: tf.exp(e) - e, x)
        (gmp,) = tf.gradients(tf.reduce_sum(mp * mp), [x])
        fr = tf.foldr(lambda a, e: a * e + 1.0, x)
        (gfr,) = tf.gradients(fr, [x])
        ta = tf.TensorArray(tf.float64, size=3).unstack(x)

        def body(i, acc, out):
            acc = tf.tanh(acc + ta.read(i))
            return i + 1, acc, out.write(i, acc)

        _, _, seq = tf.while_loop(lambda i, *_: i < 3, body,
                                  [0, tf.constant(0.5, tf.float64),
                                   tf.TensorArray(tf.float64, size=3)])
        stacked = seq.stack()
        (gta,) = tf.gradients(tf.reduce_sum(stacked * [1.0, -2.0, 3.0]), [x])
        fetch = {"cond_t": [c, gc], "power": [power, gpow], "nested": [nested, gnested],
                 "scan": [sc, gsc], "map": [mp, gmp], "foldr": [fr, gfr],
                 "ta": [stacked, gta]}
        xv = np.array([0.3, -0.8, 1.2])
        with tf.Session() as s:
            for key, ts in fetch.items():
                out[key] = [np.asarray(v).tolist() for v in s.run(ts, {p: True, x: xv, k: 4})]
            out["cond_f"] = [np.asarray(v).tolist() for v in s.run([c, gc], {p: False, x: xv})]
    return out
"""


@pytest.mark.oracle
def test_results_and_gradients_match_tensorflow():
    from tests.oracle import run_tf

    want = run_tf(_ORACLE_PROGRAM + "\nresult = program(tf, np)\n")
    namespace: dict = {}
    exec(_ORACLE_PROGRAM, namespace)  # noqa: S102 - the same program on both sides
    got = namespace["program"](tf, np)
    assert sorted(got) == sorted(want)
    for key in want:
        for g, w in zip(got[key], want[key], strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12, err_msg=key)


@pytest.mark.oracle
def test_tensorflow_graph_def_with_a_loop_and_its_gradient_runs_here(loop_mode):
    # TensorFlow's own GraphDef: Enter/Merge/Switch/Exit, a cond inside the loop, and the
    # gradient loop with its StackV2/StackPushV2/StackPopV2 histories.
    import base64

    from tests.oracle import run_tf

    res = run_tf("""
import base64
g = tf.Graph()
with g.as_default():
    n = tf.placeholder(tf.int32, [], name="n")
    x = tf.placeholder(tf.float32, [], name="x")
    _, y = tf.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, tf.cond(
        tf.equal(i % 2, 0), lambda: y * x, lambda: y + x)), [0, 1.0])
    gx = tf.gradients(y, x)[0]
    with tf.Session() as s:
        vals = s.run([y, gx], {n: 5, x: 1.5})
result = {"gd": base64.b64encode(g.as_graph_def().SerializeToString()).decode(),
          "names": [y.name, gx.name], "vals": vals}
""")
    gd = tf.GraphDef()
    gd.ParseFromString(base64.b64decode(res["gd"]))
    with tf.Graph().as_default():
        y, gx = tf.import_graph_def(gd, return_elements=res["names"], name="")
        with _session(loop_mode) as s:
            np.testing.assert_allclose(s.run([y, gx], {"n:0": 5, "x:0": 1.5}), res["vals"])
