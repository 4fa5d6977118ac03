"""Graph helpers: py_func and friends, custom_gradient, make_template, variable creator
scopes, init_scope, gradient registration names; some checked against TensorFlow."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests import oracle, threads_util

# ---- py_func ----------------------------------------------------------------------------


def test_py_func_values_and_op_types():
    with tf.Graph().as_default():
        x = tf.constant([1.0, 2.0])
        a = tf.py_func(lambda v: v * 2, [x], tf.float32)
        b = tf.py_func(lambda v: v * 2, [x], tf.float32, stateful=False, name="foo")
        c = tf.numpy_function(lambda v: v + 1, [x], tf.float32)
        d = tf.py_function(lambda v: v.numpy() * 3, [x], tf.float32)
        e = tf.py_func(lambda v: (v, v.astype(np.int32)), [x], [tf.float32, tf.int32])
        s = tf.py_func(lambda: b"hello", [], tf.string)
        u = tf.py_func(lambda v: np.array(["a", "bb"]), [x], tf.string)
        n = tf.py_func(lambda v: None, [x], [])
        assert (a.op.type, b.op.type, c.op.type, d.op.type) == \
            ("PyFunc", "PyFuncStateless", "PyFunc", "EagerPyFunc")
        assert b.op.name == "foo" and a.shape.ndims is None
        assert a.op.get_attr("token").startswith(b"pyfunc_")
        assert isinstance(e, list) and len(e) == 2 and isinstance(n, tf.Operation)
        assert tf.gradients(a, x) == [None]
        with tf.Session() as sess:
            va, vb, vc, vd, ve, vs, vu, vn = sess.run([a, b, c, d, e, s, u, n])
        np.testing.assert_array_equal(va, [2, 4])
        np.testing.assert_array_equal(vb, [2, 4])
        np.testing.assert_array_equal(vc, [2, 3])
        np.testing.assert_array_equal(vd, [3, 6])
        assert ve[1].dtype == np.int32 and vs == b"hello" and list(vu) == [b"a", b"bb"]
        assert vn is None


@pytest.mark.parametrize("func, tout, error, message", [
    (lambda v: v.astype(np.float64), tf.float32, tf.errors.InvalidArgumentError,
     r"0-th value returned by pyfunc_\d+ is double, but expects float"),
    (lambda v: (v, v), tf.float32, tf.errors.InvalidArgumentError,
     r"pyfunc_\d+ returns 2 values, but expects to see 1 values"),
    (lambda v: "s", tf.float32, tf.errors.InvalidArgumentError,
     r"is string, but expects float"),
    (lambda v: int("x"), tf.float32, tf.errors.InvalidArgumentError, "ValueError"),
    (lambda v: 1 / 0, tf.float32, tf.errors.UnknownError, "ZeroDivisionError"),
    (lambda v: next(iter([])), tf.float32, tf.errors.OutOfRangeError, "StopIteration"),
    (lambda v: [][1], tf.float32, tf.errors.UnknownError, "IndexError"),
])
def test_py_func_errors(func, tout, error, message):
    with tf.Graph().as_default():
        y = tf.py_func(func, [tf.constant([1.0])], tout)
        with tf.Session() as sess, pytest.raises(error, match=message):
            sess.run(y)


def test_py_func_error_classes_match_tensorflow():
    program = """
def raiser(e):
    def f(v):
        raise e
    return f
excs = [ValueError("v"), TypeError("t"), IndexError("i"), KeyError("k"), StopIteration(),
        MemoryError(), NotImplementedError("n"), RuntimeError("r"), ZeroDivisionError("z")]
ts = [tf.py_func(raiser(e), [tf.constant([1.0])], tf.float32) for e in excs]
result = {}
with tf.Session() as sess:
    for e, t in zip(excs, ts):
        try:
            sess.run(t)
        except tf.errors.OpError as err:
            result[type(e).__name__] = type(err).__name__
"""
    ours, theirs = oracle.run_both(program, tf)
    assert ours == theirs


def test_py_func_gradient_override_and_threads():
    with tf.Graph().as_default() as g:
        @tf.RegisterGradient("SquareByPy")
        def _grad(op, dy):
            return [dy * 2 * op.inputs[0]]

        x = tf.placeholder(tf.float32, [None])
        with g.gradient_override_map({"PyFunc": "SquareByPy"}):
            y = tf.py_func(np.square, [x], tf.float32)
        y.set_shape(x.shape)
        dx, = tf.gradients(tf.reduce_sum(y), x)
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(dx, {x: [1.0, 3.0]}), [2.0, 6.0])
            results = {}

            def work(i):
                results[i] = sess.run(y, {x: [float(i)]})

            threads_util.join(*[threads_util.start(work, i) for i in range(16)])
            assert all(results[i][0] == i * i for i in range(16))


def test_py_func_keeps_function_alive_with_graph():
    from tensorflux.framework import py_func_registry

    with tf.Graph().as_default():
        y = tf.py_func(lambda: np.float32(7), [], tf.float32)
        import gc

        gc.collect()
        token = y.op.get_attr("token").decode()
        assert py_func_registry.lookup(token) is not None
        with tf.Session() as sess:
            assert sess.run(y) == 7


# ---- custom_gradient --------------------------------------------------------------------


@tf.custom_gradient
def _log1pexp(x):
    e = tf.exp(x)

    def grad(dy):
        return dy * (1 - 1 / (1 + e))

    return tf.log(1 + e), grad


def test_custom_gradient_replaces_the_gradient():
    with tf.Graph().as_default():
        x = tf.constant(100.0)
        y = _log1pexp(x)
        dx, = tf.gradients(y, x)
        assert y.op.type == "IdentityN"
        assert y.op.get_attr("_gradient_op_type").startswith(b"CustomGradient-")
        with tf.Session() as sess:
            assert sess.run(dx) == 1.0  # the naive gradient is NaN here


def test_custom_gradient_several_inputs_outputs_and_variables():
    with tf.Graph().as_default():
        w = tf.Variable(3.0, name="w")

        @tf.custom_gradient
        def f(a, b):
            out = (a * b * w, a + b)

            def grad(dy0, dy1, variables=None):
                assert [v.name for v in variables] == ["w:0"]
                return (dy0 * 10.0, dy1 * 20.0), [dy0 * 30.0]

            return out, grad

        a, b = tf.constant(1.0), tf.constant(2.0)
        y0, y1 = f(a, b)
        grads = tf.gradients(y0 + y1, [a, b, w])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run([y0, y1]) == [6.0, 3.0]
            assert sess.run(grads) == [10.0, 20.0, 30.0]


def test_custom_gradient_errors():
    with tf.Graph().as_default():
        @tf.custom_gradient
        def bad(a):
            return a * 2, lambda dy: (dy, dy)

        y = bad(tf.constant(1.0))
        with pytest.raises(ValueError, match="expected to return 1 gradients"):
            tf.gradients(y, y.op.inputs[1])
        with pytest.raises(ValueError, match="keywords"):
            _log1pexp(x=tf.constant(1.0))
        v = tf.Variable(1.0)

        @tf.custom_gradient
        def uses_var(a):
            return a * v, lambda dy: dy

        with pytest.raises(TypeError, match="variables"):
            uses_var(tf.constant(1.0))


def test_custom_gradient_matches_tensorflow():
    program = """
@tf.custom_gradient
def clip_grad(x):
    def grad(dy):
        return tf.clip_by_value(dy, -0.5, 0.5)
    return tf.identity(x), grad
x = tf.constant([1.0, -2.0, 3.0])
y = clip_grad(x * 2.0) * tf.constant([0.1, 4.0, -3.0])
g = tf.gradients(tf.reduce_sum(y), x)[0]
with tf.Session() as sess:
    result = {"y": sess.run(y), "g": sess.run(g)}
"""
    ours, theirs = oracle.run_both(program, tf)
    oracle.assert_results_close(ours, theirs, rtol=1e-6, atol=1e-6)


# ---- make_template ----------------------------------------------------------------------


def _linear(x, scale=1.0):
    w = tf.get_variable("w", [2], initializer=tf.ones_initializer())
    return x * w * scale


def test_make_template_shares_variables():
    with tf.Graph().as_default():
        t = tf.make_template("lin", _linear, scale=2.0)
        x = tf.constant([1.0, 2.0])
        y1, y2 = t(x), t(x)
        assert [v.name for v in tf.global_variables()] == ["lin/w:0"]
        assert t.variable_scope_name == "lin/" and t.name == "lin"
        assert [v.name for v in t.trainable_variables] == ["lin/w:0"]
        t2 = tf.make_template("lin", _linear)
        t2(x)
        assert tf.global_variables()[-1].name == "lin_1/w:0"
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(y1), sess.run(y2))
            np.testing.assert_array_equal(sess.run(y1), [2.0, 4.0])


def test_make_template_options_and_errors():
    with tf.Graph().as_default():
        with tf.variable_scope("outer"):
            t = tf.make_template("tmpl", _linear, create_scope_now_=True)
        assert t.variable_scope_name == "outer/tmpl/"
        t(tf.constant([1.0, 1.0]))
        assert tf.global_variables()[-1].name == "outer/tmpl/w:0"
        u = tf.make_template("ignored", _linear, unique_name_="exact")
        u(tf.constant([1.0, 1.0]))
        assert tf.global_variables()[-1].name == "exact/w:0"

        def makes_variable(x):
            return x * tf.Variable(1.0, name="v")

        bad = tf.make_template("bad", makes_variable)
        bad(tf.constant(1.0))
        with pytest.raises(ValueError, match="Trainable variable created"):
            bad(tf.constant(1.0))
        with pytest.raises(ValueError, match="name cannot be None"):
            tf.make_template(None, _linear)


def test_make_template_names_match_tensorflow():
    program = """
def net(x):
    w = tf.get_variable("w", [2], initializer=tf.ones_initializer())
    b = tf.get_variable("b", [], initializer=tf.zeros_initializer())
    return x * w + b
t = tf.make_template("net", net)
x = tf.constant([1.0, 2.0])
y = t(x) + t(x)
with tf.variable_scope("s"):
    t2 = tf.make_template("net", net, create_scope_now_=True)
t2(x)
result = {"vars": sorted(v.name for v in tf.global_variables()),
          "scope": t.variable_scope_name, "scope2": t2.variable_scope_name}
"""
    ours, theirs = oracle.run_both(program, tf)
    assert ours == theirs


# ---- variable creators, init_scope, gradient registration -------------------------------


def test_variable_creator_scope():
    calls = []

    def outer(next_creator, **kwargs):
        calls.append(("outer", kwargs["name"]))
        return next_creator(**kwargs)

    def inner(next_creator, **kwargs):
        calls.append(("inner", kwargs["name"]))
        kwargs["trainable"] = False
        kwargs["name"] = "renamed"
        return next_creator(**kwargs)

    with tf.Graph().as_default():
        with tf.variable_creator_scope(outer), tf.variable_creator_scope(inner):
            v = tf.Variable(1.0, name="v")
            w = tf.get_variable("w", [], initializer=tf.zeros_initializer())
        after = tf.Variable(2.0, name="after")
        assert calls[:2] == [("inner", "v"), ("outer", "renamed")]
        assert v.name == "renamed:0" and not v.trainable
        assert isinstance(w, tf.Variable) and len(calls) == 4
        assert after.trainable and len(calls) == 4


def test_init_scope_leaves_control_dependencies():
    with tf.Graph().as_default():
        a = tf.constant(1.0)
        with tf.name_scope("s"), tf.control_dependencies([a]):
            with tf.init_scope():
                b = tf.constant(2.0, name="b")
            c = tf.constant(3.0, name="c")
        assert b.op.control_inputs == [] and c.op.control_inputs == [a.op]
        assert b.op.name == "s/b"


def test_gradient_registration_names():
    assert tf.NoGradient is tf.NotDifferentiable
    with tf.Graph().as_default() as g:
        tf.no_gradient("MyNoGradOp")

        @tf.RegisterGradient("DoubleGrad")
        def _double(op, dy):
            return [dy * 2.0]

        x = tf.constant(1.0)
        with g.gradient_override_map({"Identity": "DoubleGrad"}):
            y = tf.identity(x)
        with tf.Session() as sess:
            assert sess.run(tf.gradients(y, x)) == [2.0]
        v = tf.get_local_variable("loc", [], initializer=tf.zeros_initializer())
        assert v in tf.local_variables() and v not in tf.global_variables()


def test_py_func_gradient_through_custom_gradient():
    with tf.Graph().as_default():
        @tf.custom_gradient
        def cube(x):
            y = tf.py_func(lambda v: v ** 3, [x], tf.float32)

            def grad(dy):
                return dy * 3.0 * x * x

            return y, grad

        x = tf.constant([1.0, 2.0])
        dx, = tf.gradients(cube(x), x)
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(dx), [3.0, 12.0])


@pytest.mark.parametrize("strategy", ["reference", "dataflow", "auto"])
def test_py_func_tables_and_metrics_under_every_strategy(strategy):
    from tensorflux.runtime.exec_options import ExecOptions

    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None])
        y = tf.py_func(lambda v: v * 2, [x], tf.float32)
        table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer([1, 2], [3.0, 4.0]), -1.0)
        found = table.lookup(tf.constant([2, 9]))
        _, update = tf.metrics.mean(x)
        bad = tf.py_func(lambda v: 1 / 0, [x], tf.float32)
        with tf.Session(exec_options=ExecOptions(strategy=strategy)) as sess:
            sess.run([tf.local_variables_initializer(), tf.tables_initializer()])
            got = sess.run([y, found, update], {x: [1.0, 2.0]})
            np.testing.assert_array_equal(got[0], [2.0, 4.0])
            np.testing.assert_array_equal(got[1], [4.0, -1.0])
            assert got[2] == 1.5
            with pytest.raises(tf.errors.UnknownError, match="ZeroDivisionError"):
                sess.run(bad, {x: [1.0]})
