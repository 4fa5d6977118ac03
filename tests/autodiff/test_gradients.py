"""tf.gradients as a library (tensorflux/autodiff/gradients.py): bad input (integer tensors,
ops without a gradient, grad_ys of the wrong shape or type, nothing to optimize, ids out of
range, NaNs), tf.hessians against finite differences of the gradient, stop_gradients,
gradient_override_map with tf.RegisterGradient, colocate_gradients_with_ops,
gate_gradients, unconnected xs, IndexedSlices aggregation, and an oracle comparison of a
set of gradients with TensorFlow's on shared code.

TensorFlow facts these tests pin (checked with the oracle, TF 2.21 compat.v1):
  - integer ys, integer xs, or a path through an integer cast: tf.gradients returns None;
  - grad_ys of the wrong static shape: ValueError (TF's comes from whichever gradient op's
    shape check meets it first; ours names y and both shapes up front);
  - grad_ys of another dtype: TypeError; a wrong number of grad_ys: ValueError;
  - minimize() with no trainable variables: ValueError("No variables to optimize.");
  - NaN inputs give NaN gradients and NaN updates (nothing is masked).
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests import oracle


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


def run(fetches, feed=None, init=False):
    with tf.Session() as sess:
        if init:
            sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


# ---- integer tensors -------------------------------------------------------------------------

INTEGER_PATHS = [  # (name, build -> (ys, xs))
    ("int_ys_int_xs", lambda: (lambda x: (x * 3, x))(tf.constant([1, 2]))),
    ("int_ys_float_xs", lambda: (lambda x: (tf.cast(x, tf.int32) * 2, x))(
        tf.constant([1.0, 2.0]))),
    ("float_ys_int_xs", lambda: (lambda x: (tf.cast(x, tf.float32) * 2.0, x))(
        tf.constant([1, 2]))),
    ("through_int_cast", lambda: (lambda x: (tf.cast(tf.cast(x, tf.int32), tf.float32), x))(
        tf.constant([1.5, 2.5]))),
    ("int_ys_with_grad_ys", lambda: (lambda x: ([x * 3], x))(tf.constant([1, 2]))),
]


@pytest.mark.parametrize("build", [c[1] for c in INTEGER_PATHS], ids=[c[0] for c in INTEGER_PATHS])
def test_integer_paths_give_none(graph, build):
    ys, xs = build()
    grad_ys = [tf.constant([1, 1])] if isinstance(ys, list) else None
    assert tf.gradients(ys, xs, grad_ys=grad_ys) == [None]


def test_float_path_next_to_an_integer_one_still_flows(graph):
    x = tf.constant([1.5, 2.5])
    y = tf.cast(tf.cast(x, tf.int32), tf.float32) + 3.0 * x
    np.testing.assert_array_equal(run(tf.gradients(y, x)[0]), [3.0, 3.0])


# ---- ops without a gradient ----------------------------------------------------------------


def test_op_without_registered_gradient_raises_lookup_error_naming_the_op_type(graph):
    x = tf.constant([1.0, 2.0])
    with graph.gradient_override_map({"Square": "NoSuchGradientRegistered"}):
        y = tf.square(x, name="sq")
    with pytest.raises(LookupError, match=r"No gradient defined for operation 'sq' \(op type: "
                       r"Square\)"):
        tf.gradients(y, x)


def test_not_differentiable_op_gives_none(graph):
    x = tf.constant([[1.0, 2.0], [4.0, 3.0]])
    y = tf.cast(tf.argmax(x, 1), tf.float32)  # ArgMax is not differentiable
    assert tf.gradients(y, x) == [None]


# ---- grad_ys -------------------------------------------------------------------------------


def test_grad_ys_of_the_wrong_shape_fail_at_the_first_op_that_cannot_take_them(graph):
    """As in TensorFlow: grad_ys are not checked against ys up front; the op whose gradient
    cannot use them raises (a broadcasting op's shape function, or the driver's check that
    an input's gradient fits the input: TF's message)."""
    a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    for gy in (tf.constant([1.0, 2.0, 3.0]), np.ones(3, np.float32),
               tf.placeholder(tf.float32, [3])):
        with pytest.raises(ValueError, match=r"Dimensions must be equal, but are 2 and 3 for "
                           r"'\{\{node gradients(_\d+)?/mul(_\d+)?_grad/Mul_1\}\}"):
            tf.gradients(a * 2.0, a, grad_ys=gy)
    with pytest.raises(ValueError, match="Gradient of rank 0 for input Const:0 of rank 2"):
        tf.gradients(a * 2.0, a, grad_ys=tf.constant(1.0))
    for gy in ([1.0, 2.0, 3.0], np.ones((1, 2, 2), np.float32)):
        with pytest.raises(ValueError, match=r"Incompatible shapes between op input and "
                           r"calculated input gradient. Forward operation: Identity(_\d+)?. "
                           r"Input index: 0. Original input shape: \(2, 2\). Calculated "
                           r"input gradient shape: \((1, 2, 2|3,)\)"):
            tf.gradients(tf.identity(a), a, grad_ys=tf.constant(gy))


def test_grad_ys_of_another_shape_pass_through_a_reshape_as_in_tf(graph):
    """baselines' ACER: tf.gradients(f, params, grads_f) with grads_f [1, n, k] for an f of
    [n, k] made by a Reshape, whose gradient reshapes to its input's shape."""
    a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    (g,) = tf.gradients(tf.reshape(a * 3.0, [4]), a,
                        grad_ys=tf.constant([[1.0, 2.0, 3.0, 4.0]]))
    assert g.shape.as_list() == [2, 2]
    np.testing.assert_array_equal(run(g), [[3.0, 6.0], [9.0, 12.0]])


def test_grad_ys_dtype_and_count(graph):
    a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(TypeError, match=r"Gradient type int32 of grad_ys\[0\] does not match "
                       "the type float32 of y"):
        tf.gradients(a * 2.0, a, grad_ys=tf.constant([[1, 2], [3, 4]]))
    with pytest.raises(ValueError, match="Passed 2 grad_ys for 1 ys"):
        tf.gradients(a * 2.0, a, grad_ys=[None, None])


def test_grad_ys_of_compatible_or_unknown_shape_are_used(graph):
    a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    gy = tf.placeholder(tf.float32)
    (g1,) = tf.gradients(a * 2.0, a, grad_ys=gy)
    # (a nested Python list would be read as one grad_ys per y, as in TensorFlow)
    (g2,) = tf.gradients(a * 2.0, a, grad_ys=np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
    got1, got2 = run([g1, g2], {gy: np.full((2, 2), 0.5, np.float32)})
    np.testing.assert_array_equal(got1, np.ones((2, 2)))
    np.testing.assert_array_equal(got2, [[2.0, 4.0], [6.0, 8.0]])


# ---- optimizers: nothing to optimize -------------------------------------------------------


def test_minimize_with_no_trainable_variables(graph):
    loss = tf.reduce_sum(tf.constant([1.0, 2.0]))
    tf.Variable(1.0, trainable=False)
    with pytest.raises(ValueError, match=r"^No variables to optimize.$"):
        tf.train.GradientDescentOptimizer(0.1).minimize(loss)


def test_minimize_with_no_gradient_to_any_variable(graph):
    v = tf.Variable([1.0, 2.0], name="v")
    loss = tf.reduce_sum(tf.constant([1.0, 2.0]))
    with pytest.raises(ValueError, match="No gradients provided for any variable, check your "
                       r"graph for ops that do not support gradients, between variables \['v:0'\]"):
        tf.train.GradientDescentOptimizer(0.1).minimize(loss, var_list=[v])


def test_embedding_ids_out_of_range(graph):
    shards = [tf.constant(np.ones((4, 2), np.float32)) for _ in range(3)]
    out = tf.nn.embedding_lookup(shards, [1, 14])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"ids out of range:\] \[14\] \[map to shards\] \[2\]"):
        run(out)


# ---- NaNs are propagated, never hidden -----------------------------------------------------

NAN_OPTIMIZERS = [
    ("sgd", lambda: tf.train.GradientDescentOptimizer(0.1)),
    ("adam", lambda: tf.train.AdamOptimizer(0.1)),
    ("momentum", lambda: tf.train.MomentumOptimizer(0.1, 0.9)),
]


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("make", [o[1] for o in NAN_OPTIMIZERS], ids=[o[0] for o in NAN_OPTIMIZERS])
def test_nan_in_input_shows_in_gradient_and_update(graph, make, sparse):
    x = tf.constant([1.0, np.nan, 3.0])
    v = tf.Variable([1.0, 2.0, 3.0])
    used = tf.gather(v, [0, 1, 2]) if sparse else v.value()
    loss = tf.reduce_sum(used * x)
    (grad,) = tf.gradients(loss, v)
    assert isinstance(grad, tf.IndexedSlices) == sparse
    train = make().minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        g = sess.run(tf.convert_to_tensor(grad))
        sess.run(train)
        after = sess.run(v)
    np.testing.assert_array_equal(np.isnan(g), [False, True, False])
    assert np.isnan(after[1]) and np.all(np.isfinite(after[[0, 2]]))


def test_nan_gradient_of_a_nan_free_input(graph):
    x = tf.constant([0.0, 4.0])
    (g,) = tf.gradients(tf.log(x) * 0.0, x)  # 0 * (1 / 0) = nan at x = 0
    got = run(g)
    assert np.isnan(got[0]) and got[1] == 0.0
    # SqrtGrad is 0 where its dy is 0, even at sqrt(0) (TF's kernel): no NaN there.
    (g,) = tf.gradients(tf.sqrt(x) * 0.0, x)
    np.testing.assert_array_equal(run(g), [0.0, 0.0])


# ---- tf.hessians ---------------------------------------------------------------------------


def _fd_hessian(grad_fn, x0, delta):
    """Central differences of the gradient, one column per coordinate."""
    n = x0.size
    h = np.zeros((n, n))
    for i in range(n):
        e = np.zeros(n)
        e[i] = delta
        h[:, i] = (grad_fn((x0.ravel() + e).reshape(x0.shape)).ravel() -
                   grad_fn((x0.ravel() - e).reshape(x0.shape)).ravel()) / (2 * delta)
    return h.reshape(x0.shape * 2)


def test_hessian_of_a_quadratic_form(graph):
    a = np.array([[2.0, 1.0, 0.0], [0.5, 3.0, -1.0], [0.0, 2.0, 1.0]])
    x = tf.placeholder(tf.float64, [3])
    y = tf.reduce_sum(x * tf.reshape(tf.matmul(a, tf.reshape(x, [3, 1])), [3]))  # x^T A x
    (h,) = tf.hessians(y, x)
    assert h.shape.as_list() == [3, 3]
    np.testing.assert_allclose(run(h, {x: [0.3, -1.0, 2.0]}), a + a.T, rtol=1e-12)


def test_hessian_of_a_small_mlp_matches_finite_differences(graph):
    rng = np.random.default_rng(3)
    xs = rng.standard_normal((5, 3))
    w2 = rng.standard_normal((4, 1))
    w1 = tf.placeholder(tf.float64, [3, 4])
    loss = tf.reduce_sum(tf.matmul(tf.tanh(tf.matmul(xs, w1)), w2) ** 2)
    (h,) = tf.hessians(loss, w1)
    (g,) = tf.gradients(loss, w1)
    w1_0 = rng.standard_normal((3, 4)) * 0.5
    with tf.Session() as sess:
        got = sess.run(h, {w1: w1_0})
        want = _fd_hessian(lambda w: sess.run(g, {w1: w}), w1_0, 1e-5)
    assert got.shape == (3, 4, 3, 4)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.reshape(12, 12), got.reshape(12, 12).T, atol=1e-10)


def test_hessians_of_unconnected_xs_are_none(graph):
    x = tf.placeholder(tf.float64, [2])
    c = tf.constant([1.0, 2.0], tf.float64)
    h_x, h_c = tf.hessians(tf.reduce_sum(x ** 3), [x, c])
    assert h_c is None
    np.testing.assert_allclose(run(h_x, {x: [1.0, 2.0]}), np.diag([6.0, 12.0]))


def test_hessians_of_a_variable(graph):
    v = tf.Variable([1.0, 2.0], dtype=tf.float64)
    (h,) = tf.hessians(tf.reduce_sum(v ** 3), v)
    np.testing.assert_allclose(run(h, init=True), np.diag([6.0, 12.0]))


# ---- stop_gradients, stop_gradient ---------------------------------------------------------


def test_stop_gradients_holds_tensors_constant(graph):
    a = tf.constant(3.0)
    b = 2.0 * a
    y = a + b
    assert run(tf.gradients(y, [a, b])) == [3.0, 1.0]
    assert run(tf.gradients(y, a, stop_gradients=[b])) == [1.0]  # only the direct path


def test_stop_gradients_that_are_also_xs(graph):
    a = tf.constant(3.0)
    b = 2.0 * a
    assert run(tf.gradients(a + b, [a, b], stop_gradients=[a, b])) == [1.0, 1.0]


def test_stop_gradients_as_a_single_tensor(graph):
    a = tf.constant(3.0)
    b = 2.0 * a
    assert run(tf.gradients(a + b, a, stop_gradients=b)) == [1.0]


def test_stop_gradient_op(graph):
    a = tf.constant(3.0)
    y = a * a + tf.stop_gradient(a * a)
    assert run(tf.gradients(y, a)) == [6.0]
    assert tf.gradients(tf.stop_gradient(a), a) == [None]


# ---- gradient_override_map, RegisterGradient -----------------------------------------------


@tf.RegisterGradient("TestGradientsDoubleGrad")
def _double_grad(op, grad):
    return [2.0 * grad]


def test_gradient_override_map_uses_a_registered_gradient(graph):
    x = tf.constant([1.0, 2.0])
    with graph.gradient_override_map({"Identity": "TestGradientsDoubleGrad"}):
        y = tf.identity(x)
    z = tf.identity(x)  # outside the block: the normal gradient
    assert y.op.get_attr("_gradient_op_type") in ("TestGradientsDoubleGrad",
                                                  b"TestGradientsDoubleGrad")
    np.testing.assert_array_equal(run(tf.gradients(y, x)[0]), [2.0, 2.0])
    np.testing.assert_array_equal(run(tf.gradients(z, x)[0]), [1.0, 1.0])


def test_register_gradient_rejects_bad_names_and_duplicates():
    with pytest.raises(TypeError):
        tf.RegisterGradient(7)
    with pytest.raises((KeyError, ValueError)):
        tf.RegisterGradient("TestGradientsDoubleGrad")(lambda op, grad: [grad])


# ---- colocate_gradients_with_ops, gate_gradients -------------------------------------------


def _grad_ops(graph, prefix):
    return [op for op in graph.get_operations() if op.name.startswith(prefix)]


def test_colocate_gradients_with_ops(graph):
    x = tf.constant([[1.0, 2.0]])
    w = tf.constant([[3.0], [4.0]])
    y = tf.matmul(x, w, name="mm")
    tf.gradients(y, [x, w], colocate_gradients_with_ops=True, name="colocated")
    tf.gradients(y, [x, w], name="free")
    colocated = [op for op in _grad_ops(graph, "colocated/mm_grad") if op.type == "MatMul"]
    free = [op for op in _grad_ops(graph, "free/mm_grad") if op.type == "MatMul"]
    assert len(colocated) == 2 and len(free) == 2
    assert all(b"loc:@mm" in op.colocation_groups() or "loc:@mm" in op.colocation_groups()
               for op in colocated)
    assert not any(b"loc:@mm" in op.colocation_groups() or
                   "loc:@mm" in op.colocation_groups() for op in free)


def test_gate_gradients_groups_the_gradients_of_each_op(graph):
    x = tf.constant([[1.0, 2.0]])
    w = tf.constant([[3.0], [4.0]])
    y = tf.matmul(x, w, name="mm")
    gated = tf.gradients(y, [x, w], gate_gradients=True, name="gated")
    plain = tf.gradients(y, [x, w], name="plain")
    assert any(op.type == "NoOp" for op in _grad_ops(graph, "gated/mm_grad"))
    assert not any(op.type == "NoOp" for op in _grad_ops(graph, "plain/mm_grad"))
    assert all(g.op.type == "Identity" and g.op.control_inputs for g in gated)
    for a, b in zip(run(gated), run(plain), strict=True):
        np.testing.assert_array_equal(a, b)


def _cone(tensors) -> set:
    """The ops a run of `tensors` runs: their inputs and control inputs, transitively."""
    seen, work = set(), [t.op for t in tensors]
    while work:
        op = work.pop()
        if op not in seen:
            seen.add(op)
            work.extend([t.op for t in op.inputs] + list(op.control_inputs))
    return seen


def test_gated_gradients_leave_out_inputs_that_pass_nothing_on(graph):
    # the stopped labels' gradient (a LogSoftmax), a constant's and a StopGradient's
    # operand's: built by the gradient functions, neither gated nor run
    logits = tf.constant([[1.0, 2.0, 0.5], [0.1, -1.0, 3.0]])
    w = tf.constant(2.0)
    scaled = logits * w - tf.stop_gradient(tf.reduce_max(logits, 1, keepdims=True))
    labels = tf.stop_gradient(tf.nn.softmax(logits * 0.5))
    loss = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=scaled)
    gated = tf.gradients(loss, [logits], gate_gradients=True)
    plain = tf.gradients(loss, [logits])
    cone = _cone(gated)
    assert not any(op.type == "LogSoftmax" for op in cone)
    assert any(op.type == "LogSoftmax" for op in graph.get_operations())
    np.testing.assert_allclose(run(gated)[0], run(plain)[0], rtol=1e-6)
    # a StopGradient's output asked for as an x still gets its gradient
    stopped = tf.stop_gradient(logits * 3.0)
    assert run(tf.gradients(tf.reduce_sum(stopped * stopped), stopped,
                            gate_gradients=True))[0].tolist() == \
        (2.0 * 3.0 * run(logits)).tolist()


# ---- unconnected xs, IndexedSlices aggregation ---------------------------------------------


def test_unconnected_xs_get_none(graph):
    a = tf.constant([[1.0, 2.0]])
    b = tf.constant(5.0)
    v = tf.Variable([1.0])
    grads = tf.gradients(a * 2.0, [a, b, v])
    assert grads[1] is None and grads[2] is None
    np.testing.assert_array_equal(run(grads[0]), [[2.0, 2.0]])


def test_two_gathers_of_one_variable_aggregate_as_indexed_slices(graph):
    v = tf.Variable(np.arange(10.0, dtype=np.float32).reshape(5, 2))
    loss = tf.reduce_sum(tf.gather(v, [0, 3]) * 2.0) + tf.reduce_sum(tf.gather(v, [3, 4]))
    (grad,) = tf.gradients(loss, v)
    assert isinstance(grad, tf.IndexedSlices)
    assert grad.indices.op.type == "ConcatV2" and grad.values.op.type == "ConcatV2"
    train = tf.train.GradientDescentOptimizer(1.0).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        value = sess.run(grad)
        sess.run(train)
        after = sess.run(v)
    # partials concatenated in the order TensorFlow concatenates them (oracle: [3 4 0 3])
    np.testing.assert_array_equal(value.indices, [3, 4, 0, 3])
    np.testing.assert_array_equal(value.values, [[1, 1], [1, 1], [2, 2], [2, 2]])
    want = np.arange(10.0).reshape(5, 2)
    want[0] -= 2.0
    want[3] -= 3.0
    want[4] -= 1.0
    np.testing.assert_array_equal(after, want)


def test_mixed_dense_and_sparse_partials_are_summed_densely(graph):
    v = tf.Variable(np.ones((3, 2), np.float32))
    loss = tf.reduce_sum(tf.gather(v, [1])) + tf.reduce_sum(v * 3.0)
    (grad,) = tf.gradients(loss, v)
    assert isinstance(grad, tf.Tensor)
    np.testing.assert_array_equal(run(grad, init=True), [[3, 3], [4, 4], [3, 3]])


# ---- TensorFlow oracle: the same code under both ------------------------------------------

_SHARED = """
rng = np.random.RandomState(5)
x = tf.constant(rng.standard_normal((4, 3)))
w1 = tf.constant(rng.standard_normal((3, 5)))
w2 = tf.constant(rng.standard_normal((5, 2)))
labels = tf.constant(np.eye(2)[[0, 1, 1, 0]])
h = tf.nn.relu(tf.matmul(x, w1) + 0.1)
logits = tf.matmul(tf.tanh(h), w2)
loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits))
out = {}
out["mlp_x"], out["mlp_w1"], out["mlp_w2"] = tf.gradients(loss, [x, w1, w2])
out["grad_ys"] = tf.gradients(logits, w2, grad_ys=tf.constant(rng.standard_normal((4, 2))))[0]
a = tf.constant(3.0, tf.float64)
b = 2.0 * a
out["stop"] = tf.gradients(a * a + b, a, stop_gradients=[b])[0]
out["hess"] = tf.hessians(tf.reduce_sum(tf.sin(w1) * tf.exp(w1)), w1)[0]
table = tf.constant(rng.standard_normal((6, 3)))
gathered = tf.reduce_sum(tf.gather(table, [0, 2, 2]) ** 2) + tf.reduce_sum(
    tf.gather(table, [5, 0]))
out["gather_sum"] = tf.convert_to_tensor(tf.gradients(gathered, table)[0])
sq = tf.reduce_sum(tf.square(x) / (1.0 + tf.abs(x)))
out["div_abs"] = tf.gradients(sq, x)[0]
mx = tf.reduce_max(x, axis=1)
out["reduce_max"] = tf.gradients(mx, x, grad_ys=tf.constant([1.0, 2.0, 3.0, 4.0], tf.float64))[0]
with tf.Session() as sess:
    vals = sess.run(out)
result = {k: np.asarray(v) for k, v in vals.items()}
"""


@pytest.mark.oracle
def test_matches_tensorflow():
    ours, theirs = oracle.run_both(_SHARED, tf)
    oracle.assert_results_close(ours, theirs, rtol=1e-9, atol=1e-12)
