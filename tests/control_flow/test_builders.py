"""The control-flow builders (tensorflux/control_flow/builders.py) tf.cond, tf.case,
tf.switch_case and tf.while_loop: graph structure (names as TensorFlow
makes them), semantics (only the taken branch runs; loops of many iterations; nesting;
structures; shape invariants; maximum_iterations), errors at construction (messages
checked against TensorFlow), and the two ways a loop runs (compiled, and on the executor's
frames) agreeing with each other and with the unrolled graph on the static path.
"""

import collections

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.control_flow import builders
from tensorflux.ops import control_flow_ops as cf
from tests.control_flow.conftest import session as _session


def _compiled_loops(sess) -> list[str]:
    """Names of the loop frames the session's executors run compiled."""
    return [it.node.name for step in sess._steps.values() for _, ex, _ in step.parts
            for it in getattr(ex, "items", ()) if it.node.op == "_CompiledLoop"]


def _ops(g, prefix=""):
    return [(o.name, o.type, [t.name for t in o.inputs], [c.name for c in o.control_inputs])
            for o in g.get_operations() if o.name.startswith(prefix)]


# ---- tf.cond -----------------------------------------------------------------------------


def test_whitepaper_conditional(graph, loop_mode):
    # Paper Figure 2: Switch(x, p) feeds f on the true side and g on the false side; Merge
    # forwards whichever branch was live.
    x = tf.placeholder(tf.float32, [None])
    p = tf.placeholder(tf.bool, [])
    r = tf.cond(p, lambda: tf.square(x), lambda: x - 1.0)
    types = {o.type for o in graph.get_operations()}
    assert {"Switch", "Merge"} <= types
    assert r.op.type == "Merge"
    with _session(loop_mode) as s:
        np.testing.assert_array_equal(s.run(r, {x: [1, 2, 3], p: True}), [1, 4, 9])
        np.testing.assert_array_equal(s.run(r, {x: [1, 2, 3], p: False}), [0, 1, 2])


def test_cond_builds_the_graph_tensorflow_builds(graph):
    p = tf.placeholder(tf.bool, [])
    x = tf.constant(2.0)
    r = tf.cond(p, lambda: x + 1.0, lambda: x * 3.0)
    assert r.name == "cond/Merge:0"
    # As TensorFlow 2.21's tf.compat.v1.cond makes it.
    assert _ops(graph, "cond") == [
        ("cond/Switch", "Switch", ["Placeholder:0", "Placeholder:0"], []),
        ("cond/switch_t", "Identity", ["cond/Switch:1"], []),
        ("cond/switch_f", "Identity", ["cond/Switch:0"], []),
        ("cond/pred_id", "Identity", ["Placeholder:0"], []),
        ("cond/add/y", "Const", [], ["cond/switch_t"]),
        ("cond/add", "AddV2", ["cond/add/Switch:1", "cond/add/y:0"], []),
        ("cond/add/Switch", "Switch", ["Const:0", "cond/pred_id:0"], []),
        ("cond/mul/y", "Const", [], ["cond/switch_f"]),
        ("cond/mul", "Mul", ["cond/mul/Switch:0", "cond/mul/y:0"], []),
        ("cond/mul/Switch", "Switch", ["Const:0", "cond/pred_id:0"], []),
        ("cond/Merge", "Merge", ["cond/mul:0", "cond/add:0"], []),
    ]
    assert len(graph.get_collection(tf.GraphKeys.COND_CONTEXT)) == 2


def test_cond_only_the_taken_branch_runs_stateful_ops(graph, loop_mode):
    a = tf.Variable(0, name="a")
    b = tf.Variable(0, name="b")
    p = tf.placeholder(tf.bool, [])
    r = tf.cond(p, lambda: tf.assign_add(a, 1), lambda: tf.assign_add(b, 10))
    with _session(loop_mode) as s:
        s.run(tf.global_variables_initializer())
        assert s.run(r, {p: True}) == 1
        assert s.run(r, {p: True}) == 2
        assert s.run(r, {p: False}) == 10
        assert s.run([a, b]) == [2, 10]


def test_cond_tensors_made_outside_run_whatever_the_predicate(graph, loop_mode):
    # TF1 semantics: an op created outside the cond is not part of either branch.
    v = tf.Variable(0, name="v")
    p = tf.placeholder(tf.bool, [])
    outside = tf.assign_add(v, 1)
    r = tf.cond(p, lambda: outside, lambda: tf.constant(-1))
    with _session(loop_mode) as s:
        s.run(v.initializer)
        assert s.run(r, {p: False}) == -1
        assert s.run(v) == 1  # ran although its branch was not taken
        assert s.run(r, {p: True}) == 2


def test_cond_branches_returning_operations(graph, loop_mode):
    v = tf.Variable(0.0, name="v")
    p = tf.placeholder(tf.bool, [])
    r = tf.cond(p, lambda: tf.assign_add(v, 1.0).op, lambda: tf.assign_add(v, 5.0).op)
    assert r.dtype == tf.bool
    with _session(loop_mode) as s:
        s.run(v.initializer)
        s.run(r, {p: True})
        s.run(r, {p: False})
        assert s.run(v) == 6.0


Point = collections.namedtuple("Point", "x y")


def test_cond_nested_structures(graph, loop_mode):
    p = tf.placeholder(tf.bool, [])
    x = tf.constant(1.0)
    r = tf.cond(p, lambda: {"a": Point(x, x * 2), "b": [x + 1]},
                lambda: {"a": Point(x * 3, x * 4), "b": [x - 1]})
    assert isinstance(r["a"], Point) and isinstance(r["b"], list)
    with _session(loop_mode) as s:
        assert s.run(r, {p: True}) == {"a": Point(1.0, 2.0), "b": [2.0]}
        assert s.run(r, {p: False}) == {"a": Point(3.0, 4.0), "b": [0.0]}
    # Singletons are unpacked unless strict.
    one = tf.cond(p, lambda: [x], lambda: [x * 2])
    assert isinstance(one, tf.Tensor)
    strict = tf.cond(p, lambda: [x], lambda: [x * 2], strict=True)
    assert isinstance(strict, list) and len(strict) == 1


def test_nested_conds_and_names(graph, loop_mode):
    p = tf.placeholder(tf.bool, [])
    q = tf.placeholder(tf.bool, [])
    x = tf.placeholder(tf.float32, [])
    r = tf.cond(p, lambda: tf.cond(q, lambda: x + 1, lambda: x + 2), lambda: x * 10,
                name="outer")
    assert r.name.startswith("outer/")
    with _session(loop_mode) as s:
        for pv, qv, want in [(True, True, 4), (True, False, 5), (False, True, 30)]:
            assert s.run(r, {p: pv, q: qv, x: 3.0}) == want
    # Only non-nested conds are recorded.
    assert len(graph.get_collection(tf.GraphKeys.COND_CONTEXT)) == 2


def test_fetching_or_feeding_inside_a_cond_is_refused(graph, loop_mode):
    p = tf.placeholder(tf.bool, [])
    inside = []

    def true_fn():
        inside.append(tf.constant(1.0) * 2.0)
        return inside[0]

    r = tf.cond(p, true_fn, lambda: tf.constant(0.0))
    with _session(loop_mode) as s:
        with pytest.raises(ValueError, match="not fetchable"):
            s.run(inside[0], {p: True})
        assert s.run(r, {p: True, inside[0]: 7.0}) == 7.0  # feeding is allowed


@pytest.mark.parametrize("build, error, message", [
    (lambda p, x: tf.cond(p, lambda: (x, x), lambda: x), ValueError,
     "don't have the same nested structure"),
    (lambda p, x: tf.cond(p, lambda: x, lambda: tf.constant(1)), ValueError,
     "Outputs of 'true_fn' and 'false_fn' must have the same type\\(s\\). Received float32 "
     "from 'true_fn' and int32 from 'false_fn'."),
    (lambda p, x: tf.cond(True, lambda: x, lambda: x), TypeError,
     "'pred' must not be a Python bool."),
    (lambda p, x: tf.cond(p, 1, lambda: x), TypeError, "'true_fn' must be callable."),
    (lambda p, x: tf.cond(p, lambda: None, lambda: x), ValueError,
     "'true_fn' must have a return value."),
    (lambda p, x: tf.cond(tf.constant(1), lambda: x, lambda: x), TypeError,
     "Input 'pred' of 'Switch' Op has type int32 that does not match expected type of bool"),
    (lambda p, x: tf.cond(tf.constant([True, False]), lambda: x, lambda: x), ValueError,
     "Shape must be rank 0 but is rank 1"),
    (lambda p, x: tf.cond(p, lambda: {"a": x}, lambda: {"b": x}), ValueError,
     "same set of keys"),
    (lambda p, x: tf.cond(p, lambda: [x], lambda: x, strict=True), ValueError,
     "same nested structure"),
])
def test_cond_errors(graph, build, error, message):
    # Classes and messages as TensorFlow raises them at construction.
    p = tf.placeholder(tf.bool, [])
    with pytest.raises(error, match=message):
        build(p, tf.constant(1.0))


# ---- tf.case, tf.switch_case ----------------------------------------------------------------


def test_case(graph, loop_mode):
    x = tf.placeholder(tf.int32, [])
    pairs = [(tf.less(x, 0), lambda: tf.constant(-1)), (tf.equal(x, 0), lambda: tf.constant(0))]
    r = tf.case(pairs, default=lambda: tf.constant(1))
    r_dict = tf.case({tf.less(x, 0): lambda: tf.constant(-1)}, default=lambda: tf.constant(7))
    r_excl = tf.case([(tf.less(x, 5), lambda: tf.constant(1)),
                      (tf.less(x, 10), lambda: tf.constant(2))],
                     default=lambda: tf.constant(3), exclusive=True)
    r_nodefault = tf.case(pairs)
    with _session(loop_mode) as s:
        assert [s.run(r, {x: v}) for v in (-5, 0, 5)] == [-1, 0, 1]
        assert [s.run(r_dict, {x: v}) for v in (-5, 5)] == [-1, 7]
        assert s.run(r_excl, {x: 7}) == 2
        assert s.run(r_nodefault, {x: 0}) == 0
        with pytest.raises(tf.errors.InvalidArgumentError, match="exclusive"):
            s.run(r_excl, {x: 1})  # two predicates true
        with pytest.raises(tf.errors.InvalidArgumentError, match="None of conditions"):
            s.run(r_nodefault, {x: 5})
    with pytest.raises(TypeError, match="must be a list, tuple, or dict"):
        tf.case(lambda: 1)
    with pytest.raises(TypeError, match="2-tuple"):
        tf.case([tf.less(x, 0)])
    with pytest.raises(TypeError, match="must be Tensor of type bool"):
        tf.case([(x, lambda: x)])


def test_switch_case(graph, loop_mode):
    i = tf.placeholder(tf.int32, [])
    r = tf.switch_case(i, [lambda: tf.constant(10), lambda: tf.constant(20),
                           lambda: tf.constant(30)])
    with _session(loop_mode) as s:
        assert [s.run(r, {i: k}) for k in (0, 1, 2, 7)] == [10, 20, 30, 30]


# ---- tf.while_loop ---------------------------------------------------------------------


def test_while_loop_builds_the_graph_tensorflow_builds(graph):
    n = tf.placeholder(tf.int32, [])
    y = tf.constant(2.0)
    r = tf.while_loop(lambda i, x: i < n, lambda i, x: (i + 1, x * y), [0, 1.0])
    assert [t.name for t in r] == ["while/Exit:0", "while/Exit_1:0"]
    got = {name: (typ, ins, ctl) for name, typ, ins, ctl in _ops(graph, "while")}
    # A selection of TensorFlow 2.21's tf.compat.v1.while_loop graph for the same program.
    for name, typ, ins, ctl in [
            ("while/Enter", "Enter", ["while/Const:0"], []),
            ("while/Merge", "Merge", ["while/Enter:0", "while/NextIteration:0"], []),
            ("while/Less", "Less", ["while/Merge:0", "while/Less/Enter:0"], []),
            ("while/Less/Enter", "Enter", ["Placeholder:0"], []),
            ("while/LoopCond", "LoopCond", ["while/Less:0"], []),
            ("while/Switch_1", "Switch", ["while/Merge_1:0", "while/LoopCond:0"], []),
            ("while/Identity", "Identity", ["while/Switch:1"], []),
            ("while/add/y", "Const", [], ["while/Identity"]),
            ("while/mul", "Mul", ["while/Identity_1:0", "while/mul/Enter:0"], []),
            ("while/mul/Enter", "Enter", ["Const:0"], []),
            ("while/NextIteration_1", "NextIteration", ["while/mul:0"], []),
            ("while/Exit_1", "Exit", ["while/Switch_1:0"], [])]:
        assert got[name] == (typ, ins, ctl), name
    enter = graph.get_operation_by_name("while/mul/Enter")
    assert enter.get_attr("frame_name") == b"while/while_context"
    assert enter.get_attr("is_constant") and enter.get_attr("parallel_iterations") == 10
    assert not graph.get_operation_by_name("while/Enter").get_attr("is_constant")
    assert len(graph.get_collection(tf.GraphKeys.WHILE_CONTEXT)) == 1


def test_loop_of_a_thousand_iterations(graph, loop_mode):
    n = tf.placeholder(tf.int32, [])
    i, total = tf.while_loop(lambda i, t: i < n, lambda i, t: (i + 1, t + tf.cast(i, tf.int64)),
                             [tf.constant(0), tf.constant(0, tf.int64)])
    with _session(loop_mode) as s:
        assert s.run([i, total], {n: 1000}) == [1000, 999 * 1000 // 2]
        assert s.run([i, total], {n: 0}) == [0, 0]
        assert _compiled_loops(s) == (["while/while_context/_compiled_loop"]
                                      if loop_mode == "compiled" else [])


def test_loops_with_products_compile_only_on_the_recurrence(graph, loop_mode):
    # An RNN's step product waits for its previous iteration: the loop is compiled. A
    # product per element that no later iteration waits for (map_fn's) keeps the loop on
    # the dataflow executor, which may run several iterations of it at once.
    rng = np.random.RandomState(0)
    w_np = (rng.randn(4, 4) * 0.3).astype(np.float32)
    xs_np = rng.randn(6, 3, 4).astype(np.float32)
    w, xs = tf.constant(w_np), tf.constant(xs_np)
    ta = tf.TensorArray(tf.float32, size=6).unstack(xs)

    def rnn_step(t, h):
        return t + 1, tf.tanh(tf.matmul(h, w) + ta.read(t))

    _, h = tf.while_loop(lambda t, h: t < 6, rnn_step, [tf.constant(0), tf.zeros([3, 4])],
                         name="rnn")
    mapped = tf.map_fn(lambda x: tf.matmul(x, w), xs, name="per_element")
    want_h = np.zeros((3, 4), np.float32)
    for t in range(6):
        want_h = np.tanh(want_h @ w_np + xs_np[t])
    with _session(loop_mode) as s:
        got_h, got_m = s.run([h, mapped])
        np.testing.assert_allclose(got_h, want_h, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got_m, xs_np @ w_np, rtol=1e-5, atol=1e-6)
        assert _compiled_loops(s) == (["rnn/while_context/_compiled_loop"]
                                      if loop_mode == "compiled" else [])


def _rnn_gradients(model: str, gate_gradients: bool):
    """A 7-step RNN over a batch of unknown size (tf.nn.dynamic_rnn of a TF1 cell, or a
    tf.keras recurrent layer), a loss, and its gradients for the weights, the inputs and
    (for dynamic_rnn) the initial state, with the feeds and the forward loop's frame."""
    rng = np.random.RandomState(3)
    x = tf.placeholder(tf.float32, [None, 7, 2])
    feeds = {x: rng.randn(3, 7, 2).astype(np.float32)}
    if model.startswith("keras"):
        layer = getattr(tf.keras.layers, model.split(".")[1])(5, return_sequences=True)
        out = layer(x)
        starts, frame = [], f"{layer.name}/rnn/while"
    else:
        h0 = tf.placeholder(tf.float32, [None, 5])
        feeds[h0] = rng.randn(3, 5).astype(np.float32)
        cell = getattr(tf.nn.rnn_cell, model.split(".")[1])(5)
        out, _ = tf.nn.dynamic_rnn(cell, x, initial_state=h0)
        starts, frame = [h0], "rnn/while"
    loss = tf.reduce_sum(out * out)
    wrt = tf.trainable_variables() + [x] + starts
    return tf.gradients(loss, wrt, gate_gradients=gate_gradients), feeds, frame


@pytest.mark.parametrize("model, gate_gradients", [
    ("dynamic_rnn.BasicRNNCell", False), ("dynamic_rnn.BasicRNNCell", True),
    ("dynamic_rnn.GRUCell", True), ("keras.SimpleRNN", True), ("keras.LSTM", True)])
def test_rnn_gradient_loops_compile_and_give_the_frames_values(graph, model, gate_gradients):
    # The gradient loop of an RNN: stack pops of the forward loop's activations, the
    # recurrence's product dz @ U' on a loop variable's cycle, the weight product h' @ dz
    # and (gate_gradients, as minimize passes) tf.gradients' `tuple` NoOps on the loop's
    # Switches, one of whose Identities leaves with the initial state's gradient. Keras's
    # layers also keep their input product x_t @ W inside the forward loop. Both loops
    # compile, bit for bit the values of the executor's frames and of the reference.
    tf.set_random_seed(0)
    grads, feeds, frame = _rnn_gradients(model, gate_gradients)
    init = tf.global_variables_initializer()
    results = {}
    for mode in ("compiled", "frames", "reference"):
        with _session(mode) as s:
            s.run(init)
            results[mode] = s.run(grads, feeds)
            compiled = sorted(_compiled_loops(s))
        assert compiled == ([f"gradients/{frame}/while_context/_compiled_loop",
                             f"{frame}/while_context/_compiled_loop"]
                            if mode == "compiled" else [])
    for got, frames, reference in zip(*results.values(), strict=True):
        assert np.abs(frames).sum() > 0
        np.testing.assert_array_equal(got, frames)
        np.testing.assert_array_equal(got, reference)


def test_map_fn_gradient_loop_stays_on_the_frames(graph):
    # Every product of map_fn's gradient loop (g_t @ W' for the elements, x_t' @ g_t for
    # the weight) is off the loop variables' cycles: that loop keeps to the dataflow
    # executor, whose parallel iterations may overlap them.
    rng = np.random.RandomState(0)
    w = tf.Variable(rng.randn(4, 4).astype(np.float32))
    xs_np = rng.randn(6, 3, 4).astype(np.float32)
    xs = tf.constant(xs_np)
    mapped = tf.map_fn(lambda x: tf.matmul(x, w), xs, name="per_element")
    (dw,) = tf.gradients(tf.reduce_sum(mapped), [w])
    with _session("compiled") as s:
        s.run(tf.global_variables_initializer())
        np.testing.assert_allclose(s.run(dw), np.tile(xs_np.sum(axis=(0, 1))[:, None],
                                                      (1, 4)), rtol=1e-5)
        assert _compiled_loops(s) == []


def test_kernel_errors_in_a_compiled_gradient_loop_name_the_node(graph):
    # CheckNumerics's gradient checks the gradient: an infinite one fails inside the
    # compiled gradient loop, and the error names that node.
    x = tf.placeholder(tf.float32, [None, 4, 2])
    cell = tf.nn.rnn_cell.BasicRNNCell(3, activation=lambda v: tf.check_numerics(
        tf.tanh(v), "activation"))
    out, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    (dx,) = tf.gradients(out, [x], grad_ys=[tf.fill(tf.shape(out), np.inf)])
    with _session("compiled") as s:
        s.run(tf.global_variables_initializer())
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="node gradients/rnn/while/basic_rnn_cell/"
                           "CheckNumerics_grad/CheckNumerics .*CPU:0"):
            s.run(dx, {x: np.ones((2, 4, 2), np.float32)})
        assert "gradients/rnn/while/while_context/_compiled_loop" in _compiled_loops(s)


def test_nested_loops(graph, loop_mode):
    # for i in range(4): for j in range(i + 1): total += i * j
    def outer(i, total):
        def inner(j, t):
            return j + 1, t + i * j

        _, t = tf.while_loop(lambda j, t: j <= i, inner, [0, total])
        return i + 1, t

    _, total = tf.while_loop(lambda i, t: i < 4, outer, [0, 0])
    frames = {o.get_attr("frame_name") for o in graph.get_operations() if o.type == "Enter"}
    assert frames == {b"while/while_context", b"while/while/while_context"}
    with _session(loop_mode) as s:
        assert s.run(total) == sum(i * j for i in range(4) for j in range(i + 1))
        # The inner loop becomes one node of the outer loop, which is compiled in turn.
        assert _compiled_loops(s) == (["while/while_context/_compiled_loop"]
                                      if loop_mode == "compiled" else [])


def test_loop_with_nested_structures_and_tensor_arrays(graph, loop_mode):
    State = collections.namedtuple("State", "h c")
    init = {"step": tf.constant(0), "s": State(tf.zeros([2]), tf.ones([2])),
            "ta": tf.TensorArray(tf.float32, size=3)}

    def body(v):
        s = State(v["s"].h + v["s"].c, v["s"].c * 2.0)
        # A list, as loop_vars is one (TensorFlow compares list(loop_vars) with it).
        return [{"step": v["step"] + 1, "s": s, "ta": v["ta"].write(v["step"], s.h)}]

    (out,) = tf.while_loop(lambda v: v["step"] < 3, body, [init])
    assert isinstance(out, dict) and isinstance(out["s"], State)
    assert isinstance(out["ta"], tf.TensorArray)
    with _session(loop_mode) as s:
        step, h, stacked = s.run([out["step"], out["s"].h, out["ta"].stack()])
    assert step == 3
    np.testing.assert_array_equal(h, [7.0, 7.0])
    np.testing.assert_array_equal(stacked, [[1, 1], [3, 3], [7, 7]])


def test_return_same_structure_and_single_variables(graph, loop_mode):
    single = tf.while_loop(lambda x: x < 10, lambda x: x + 1, [tf.constant(1)])
    assert isinstance(single, tf.Tensor)
    one_tuple = tf.while_loop(lambda x: x < 10, lambda x: x + 1, (tf.constant(1),))
    assert isinstance(one_tuple, tf.Tensor)
    same = tf.while_loop(lambda x: x < 10, lambda x: x + 1, [tf.constant(1)],
                         return_same_structure=True)
    assert isinstance(same, list) and len(same) == 1
    with _session(loop_mode) as s:
        assert s.run([single, one_tuple, same[0]]) == [10, 10, 10]


def test_name_and_swap_memory(graph, loop_mode):
    r = tf.while_loop(lambda x: x < 3, lambda x: x + 1, [tf.constant(0)], swap_memory=True,
                      name="count")
    assert r.name == "count/Exit:0"
    enter = graph.get_operation_by_name("count/Enter")
    assert enter.get_attr("frame_name") == b"count/while_context"
    with _session(loop_mode) as s:
        assert s.run(r) == 3


def test_shape_invariants(graph, loop_mode):
    x = tf.constant([1])
    r = tf.while_loop(lambda x: tf.reduce_sum(x) < 10, lambda x: tf.concat([x, x], 0), [x],
                      shape_invariants=[tf.TensorShape([None])])
    assert r.shape.as_list() == [None]
    with _session(loop_mode) as s:
        np.testing.assert_array_equal(s.run(r), [1] * 16)


def test_maximum_iterations_stops_a_loop_whose_condition_stays_true(graph, loop_mode):
    m = tf.placeholder(tf.int32, [])
    r = tf.while_loop(lambda x: tf.constant(True), lambda x: x * 2, [tf.constant(1)],
                      maximum_iterations=m)
    # A list body result: loop_vars become (counter, [a, b]) and TensorFlow compares types.
    both = tf.while_loop(lambda a, b: a < 5, lambda a, b: [a + 1, b + 2], [0, 0],
                         maximum_iterations=100)
    # As TensorFlow: the counter is a loop variable compared in the condition.
    assert graph.get_operation_by_name("while/iteration_counter").type == "Const"
    with _session(loop_mode) as s:
        assert s.run(r, {m: 10}) == 1024
        assert s.run(r, {m: 0}) == 1
        assert s.run(both) == [5, 10]


@pytest.mark.parametrize("parallel_iterations", [2, 10, 32])
def test_parallel_iterations_give_the_results_of_one(graph, loop_mode, parallel_iterations):
    def run(pi):
        xs = tf.constant(np.linspace(-1, 1, 40, dtype=np.float32))
        ta = tf.TensorArray(tf.float32, size=40).unstack(xs)

        def body(i, acc, out):
            v = ta.read(i)
            acc = acc * 0.9 + tf.sin(v) * tf.cast(i, tf.float32)
            return i + 1, acc, out.write(i, acc)

        _, acc, out = tf.while_loop(lambda i, *_: i < 40, body,
                                    [0, 0.0, tf.TensorArray(tf.float32, size=40)],
                                    parallel_iterations=pi)
        return acc, out.stack()

    one, many = run(1), run(parallel_iterations)
    with _session(loop_mode) as s:
        a, b = s.run([one, many])
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_stateful_ops_in_a_loop_run_once_per_iteration(graph, loop_mode):
    v = tf.Variable(0, name="v")

    def body(i):
        with tf.control_dependencies([tf.assign_add(v, 1)]):
            return i + 1

    r = tf.while_loop(lambda i: i < 25, body, [0])
    with _session(loop_mode) as s:
        s.run(v.initializer)
        assert s.run(r) == 25
        assert s.run(v) == 25


def test_loop_waits_for_enclosing_control_dependencies(graph, loop_mode):
    v = tf.Variable(1, name="v")
    with tf.control_dependencies([tf.assign(v, 10)]):
        r = tf.while_loop(lambda i: i < 3, lambda i: i + 1, [tf.constant(0)])
    read = tf.identity(v.read_value())
    with _session(loop_mode) as s:
        s.run(v.initializer)
        s.run(r)
        assert s.run(read) == 10


def test_loop_inside_cond_and_cond_inside_loop(graph, loop_mode):
    p = tf.placeholder(tf.bool, [])
    n = tf.placeholder(tf.int32, [])
    in_cond = tf.cond(p, lambda: tf.while_loop(lambda i: i < n, lambda i: i + 2, [0]),
                      lambda: tf.constant(-1))

    def body(i, acc):
        acc = tf.cond(tf.equal(i % 3, 0), lambda: acc + i, lambda: acc - 1)
        return i + 1, acc

    _, in_loop = tf.while_loop(lambda i, a: i < n, body, [0, 0])
    with _session(loop_mode) as s:
        assert s.run(in_cond, {p: True, n: 7}) == 8
        assert s.run(in_cond, {p: False, n: 7}) == -1
        want = sum(i if i % 3 == 0 else -1 for i in range(10))
        assert s.run(in_loop, {n: 10}) == want


def test_loop_agrees_with_the_unrolled_graph_on_the_static_path(graph, loop_mode):
    x = tf.placeholder(tf.float32, [3])
    w = tf.constant([[0.5, -0.2, 0.1], [0.3, 0.8, -0.4], [0.0, 0.1, 0.9]])

    def step(h):
        return tf.tanh(tf.matmul(tf.expand_dims(h, 0), w)[0] + 0.1)

    looped = tf.while_loop(lambda i, h: i < 6, lambda i, h: (i + 1, step(h)), [0, x])[1]
    unrolled = x
    for _ in range(6):
        unrolled = step(unrolled)
    xv = np.array([0.3, -1.0, 2.0], np.float32)
    with tf.Session() as s:
        static = s.run(unrolled, {x: xv})
        assert s._steps and any(type(ex).__name__ == "StaticExecutor"
                                for step_ in s._steps.values() for _, ex, _ in step_.parts)
    with _session(loop_mode) as s:
        np.testing.assert_array_equal(s.run(looped, {x: xv}), static)


def test_loop_results_are_fetchable_and_inside_values_are_not(graph, loop_mode):
    inside = []

    def body(i):
        inside.append(i + 1)
        return inside[0]

    r = tf.while_loop(lambda i: i < 3, body, [0])
    with _session(loop_mode) as s:
        assert s.run(r) == 3
        with pytest.raises(ValueError, match="not fetchable"):
            s.run(inside[0])
        with pytest.raises(ValueError, match="may not be fed"):
            s.run(r, {inside[0]: 5})


def test_loop_graph_def_round_trip(graph, loop_mode):
    n = tf.placeholder(tf.int32, [], name="n")
    r = tf.while_loop(lambda i, x: i < n, lambda i, x: (i + 1, x * 2.0), [0, 1.0])
    gd = graph.as_graph_def()
    with tf.Graph().as_default():
        n2, x2 = tf.import_graph_def(gd, return_elements=["n:0", r[1].name], name="")
        with _session(loop_mode) as s:
            assert s.run(x2, {n2: 5}) == 32.0


def test_infinite_compiled_loop_times_out(graph):
    r = tf.while_loop(lambda i: tf.constant(True), lambda i: i + 1, [0])
    with tf.Session() as s:
        with pytest.raises(tf.errors.DeadlineExceededError):
            s.run(r, options=tf.RunOptions(timeout_in_ms=200))


def test_kernel_errors_in_loops_name_the_node(graph, loop_mode):
    ta = tf.TensorArray(tf.float32, size=2)

    def body(i, ta):
        return i + 1, ta.write(i, tf.cast(i, tf.float32))

    _, out = tf.while_loop(lambda i, _: i < 3, body, [0, ta])  # writes past the end
    with _session(loop_mode) as s:
        with pytest.raises(tf.errors.InvalidArgumentError, match="TensorArrayWrite"):
            s.run(out.stack())


@pytest.mark.parametrize("build, error, message", [
    (lambda: tf.while_loop(lambda x: tf.reduce_sum(x) < 10, lambda x: tf.concat([x, x], 0),
                           [tf.constant([1], name="start")]), ValueError,
     "Input tensor 'start:0' enters the loop with shape \\(1,\\), but has shape \\(2,\\) after "
     "one iteration. To allow the shape to vary across iterations, use the "
     "`shape_invariants` argument of tf.while_loop to specify a less-specific shape."),
    (lambda: tf.while_loop(lambda x: x < 10, lambda x: tf.cast(x, tf.float32),
                           [tf.constant(1, name="start")]), TypeError,
     "Loop variable start:0 enters the loop with dtype int32, but the loop body returns "
     "float32"),
    (lambda: tf.while_loop(lambda x: x < 10, lambda x: (x, x), [tf.constant(1)]), ValueError,
     "don't have the same nested structure"),
    (lambda: tf.while_loop(lambda x, y: x < 10, lambda x, y: [x + 1, [y]], [1, (2,)]),
     TypeError, "don't have the same nested structure"),
    (lambda: tf.while_loop(lambda x: x < 10, lambda x: x + 1, []), ValueError,
     "'loop_vars' must be provided."),
    (lambda: tf.while_loop(lambda x: x < 10, lambda x: x + 1, [1],
                           shape_invariants=[tf.TensorShape([2])]), ValueError,
     "The shape invariant specified for while/Const:0 is not compatible with the initial "
     "shape of the loop variable. It enters the loop with shape \\(\\), but the specified "
     "shape invariant is \\(2,\\)."),
    (lambda: tf.while_loop(lambda x: x < 10, 3, [1]), TypeError, "'body' must be callable."),
    (lambda: tf.while_loop(3, lambda x: x, [1]), TypeError, "'cond' must be callable."),
    (lambda: tf.while_loop(lambda x: x < 10, lambda x: x + 1, [1], parallel_iterations=0),
     TypeError, "'parallel_iterations' must be a positive integer."),
    (lambda: tf.while_loop(lambda x: x, lambda x: x + 1, [1]), TypeError,
     "Input 'input' of 'LoopCond' Op has type int32 that does not match expected type of "
     "bool."),
    (lambda: tf.while_loop(lambda x: x < 10, lambda x: x + 1, [1], maximum_iterations=[1, 2]),
     ValueError, "'maximum_iterations' must be a scalar. Received shape: \\(2,\\)"),
])
def test_while_loop_errors(graph, build, error, message):
    with pytest.raises(error, match=message):
        build()


def test_primitive_wrappers(graph, loop_mode):
    p = tf.placeholder(tf.bool, [])
    f, t = cf.switch(tf.constant([1.0, 2.0]), p)
    out, index = cf.merge([f * 2.0, t * 3.0])
    with _session(loop_mode) as s:
        np.testing.assert_array_equal(s.run(out, {p: True}), [3.0, 6.0])
        assert s.run(index, {p: False}) == 0
    dep = builders.with_dependencies([tf.no_op()], tf.constant(1.0))
    assert dep.op.type == "Identity" and dep.op.control_inputs
