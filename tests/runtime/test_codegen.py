"""The one code generator (runtime/codegen.py) and the one frame analysis
(runtime/frame_analysis.py), through both of their users: static schedules and compiled
loops, and the dataflow executor."""

import weakref

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.kernels.registry import KernelContext
from tensorflux.ops import control_flow_ops as cf
from tensorflux.runtime import codegen, executor, frame_analysis, partition
from tensorflux.runtime.executor import Executor
from tensorflux.runtime.static_executor import StaticExecutor
from tensorflux.runtime.step_graph import Node, StepGraph


def _parts(sess):
    """(device, nodes, fetch pairs) of every partition of the session's latest step."""
    step = list(sess._steps.values())[-1]
    return [(d, nodes, pairs) for d, nodes, pairs, _ in step._part_nodes]


def _executors(sess):
    return [ex for step in sess._steps.values() for _, ex, _ in step.parts]


def _compiled_loop_names(sess):
    return [it.node.name for ex in _executors(sess) for it in getattr(ex, "items", ())
            if it.node.op == "_CompiledLoop"]


def _run_direct(ex, device, args=()):
    return ex.run(KernelContext(0, device, args=list(args), runner=device.runner))


# ---- the emitter ---------------------------------------------------------------------------

def _node(id_, name, op, inputs=(), attrs=None, outputs=1):
    n = Node(name, op, dict(attrs or {}), list(inputs), [], [tf.float32] * outputs)
    n.id = id_
    return n


def test_the_emitter_folds_consts_inlines_templates_and_calls_kernels():
    f32 = {"T": tf.float32}
    c = _node(0, "c", "Const", attrs={"value": np.array(2.0, np.float32), "dtype": tf.float32})
    a = _node(1, "a", "_Arg", attrs={"index": 0, "T": tf.float32})
    ident = _node(2, "i", "Identity", [(a, 0)], f32)
    add = _node(3, "s", "Add", [(ident, 0), (c, 0)], f32)
    wrapped = []
    for wrapper in (None, lambda n, kdef, compute: (wrapped.append(n.name), compute)[1]):
        em = codegen.Emitter("CPU", wrapper, scalar_consts=True)
        em.add("def f(ctx, args):", 0)
        statements = [st for n in (c, a, ident, add) if (st := em.statement(n)) is not None]
        assert [st.text for st in statements] == ["v1 = args[0]", "v2 = v1",
                                                   "v3 = k3(ctx, v2, v0)"]
        assert type(em.env["v0"]) is np.float32  # a 0-d Const as a NumPy scalar
        em.add_straight(statements, keep={"v3"})
        em.add("return v3")
        fn, source, _ = em.compile("f", "test")
        assert "del v1" in source and "del v2" in source and "del v3" not in source
        assert fn(None, [np.float32(1.5)]) == 3.5
    assert wrapped == ["i", "s"]  # an unchanged kernel is still inlined


# ---- the line -> node map ----------------------------------------------------------------

def test_an_error_in_a_static_schedule_names_its_node():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, None)
        y = tf.reshape(p * 2.0, [3], name="bad_reshape") + 1.0
        with tf.Session() as s:
            np.testing.assert_allclose(s.run(y, {p: [1.0, 2.0, 3.0]}), [3.0, 5.0, 7.0])
            assert any(isinstance(ex, StaticExecutor) for ex in _executors(s))
            with pytest.raises(tf.errors.InvalidArgumentError, match="bad_reshape") as e:
                s.run(y, {p: [1.0, 2.0]})
    assert e.value.op is not None and e.value.op.name == "bad_reshape"


def _loop_with_reshape(p, nested):
    def body(i, x):
        if nested:
            _, x = tf.while_loop(lambda j, z: j < 2,
                                 lambda j, z: (j + 1, tf.reshape(z, [3], name="inner_bad")),
                                 [0, x])
        else:
            x = tf.reshape(x, [3], name="bad")
        return i + 1, x * 1.0

    return tf.while_loop(lambda i, x: i < 3, body, [0, p])[1]


@pytest.mark.parametrize("nested", [False, True])
def test_an_error_in_a_compiled_loop_names_the_inner_node(nested):
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, None)
        y = _loop_with_reshape(p, nested)
        with tf.Session() as s:
            np.testing.assert_allclose(s.run(y, {p: [1.0, 2.0, 3.0]}), [1.0, 2.0, 3.0])
            assert _compiled_loop_names(s)  # the loop (and its inner loop) ran compiled
            name = "inner_bad" if nested else "bad"
            with pytest.raises(tf.errors.InvalidArgumentError, match=f"/{name}") as e:
                s.run(y, {p: [1.0, 2.0]})
    assert e.value.op is not None and e.value.op.name.endswith("/" + name)
    assert "context/_compiled_loop" not in str(e.value)


def test_node_error_maps_the_innermost_generated_line():
    node = object()
    em = codegen.Emitter("CPU")
    em.add("def f(x):", 0)
    em.add("y = x + 1")
    em.add("return 1 / y", 1, node)
    fn, source, filename = em.compile("f", "test")
    assert "return 1 / y" in source and filename.startswith("<tensorflux test")
    with pytest.raises(ZeroDivisionError) as e:
        fn(-1)
    mapped = codegen.node_error(e.value, filename, em.line_nodes, lambda n: "dev")
    assert mapped.node is node and mapped.device == "dev" and mapped.cause is e.value
    assert codegen.node_error(mapped, filename, {}, str) is mapped  # passes through
    with pytest.raises(TypeError) as e:
        fn("a")  # line 2: no node's line
    assert codegen.node_error(e.value, filename, em.line_nodes, str) is None


# ---- the dataflow loop, written once ----------------------------------------------------

class _Stepper:
    def __init__(self):
        self.seen = []

    def run(self, xs):
        step = self.step
        for x in xs:
            step(x)
        return self.seen

    def step(self, x):
        """Keeps the non-negative ones."""
        if x < 0:
            return
        self.seen.append(x)

    def returns_a_value(self, x):
        return x

    def returns_in_a_loop(self, x):
        for _ in range(2):
            return

    def run_outside_a_loop(self, x):
        step = self.step
        step(x)


def test_inline_call_splices_the_body_and_turns_returns_into_continue(monkeypatch):
    fn = codegen.inline_call(_Stepper.run, _Stepper.step, "step")
    assert fn is not _Stepper.run and fn.__qualname__ == _Stepper.run.__qualname__
    for caller, callee in ((_Stepper.run, _Stepper.returns_a_value),
                           (_Stepper.run, _Stepper.returns_in_a_loop),
                           (_Stepper.run_outside_a_loop, _Stepper.step)):
        with pytest.raises(ValueError):
            codegen.inline_call(caller, callee, "step")
    monkeypatch.setattr(_Stepper, "step", None)  # the generated loop no longer calls it
    assert fn(_Stepper(), [1, -1, 2]) == [1, 2]


def test_the_driver_loop_runs_process_inlined():
    code = executor._Run._loop.__code__
    assert code.co_filename == executor.__file__  # tracebacks show executor.py's lines
    assert "_start" in code.co_names  # _process's body is in it
    assert "_start" not in executor._Run._loop_by_calls.__code__.co_names


# ---- liveness ------------------------------------------------------------------------------

def test_the_static_schedule_frees_each_value_after_its_last_use():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [1000])
        a = tf.multiply(p, 2.0, name="a")
        b = tf.add(a, 1.0, name="b")
        c = tf.multiply(b, 3.0, name="c")
        d = tf.add(c, 1.0, name="d")
        l0 = tf.ConfigProto(graph_options=tf.GraphOptions(optimizer_options=tf.OptimizerOptions(
            opt_level=tf.OptimizerOptions.L0)))  # the four nodes, not fused into one
        with tf.Session(config=l0) as s:
            s.run(d, {p: np.zeros(1000, np.float32)})
            ((device, nodes, pairs),) = _parts(s)
    refs = {}
    alive_at_d = {}

    def wrap(node, kdef, compute):
        def run(ctx, *inputs):
            if node.name == "d":
                alive_at_d.update({k: r() is not None for k, r in refs.items()})
            out = compute(ctx, *inputs)
            refs[node.name] = weakref.ref(out)
            return out

        return run

    ex = StaticExecutor(nodes, device, pairs, kernel_wrapper=wrap)
    assert "del " in ex.source
    (out,) = _run_direct(ex, device, [np.ones(1000, np.float32)])
    np.testing.assert_allclose(out, np.full(1000, 10.0))
    # a and b are gone once c has read b; c is what d reads, so it is still there.
    assert alive_at_d == {"a": False, "b": False, "c": True}
    assert refs["d"]() is out  # the fetched value is kept


# ---- frame analysis ------------------------------------------------------------------------

def _control_flow_graphs():
    def while_loop():
        x = tf.placeholder(tf.float32, [])
        return tf.while_loop(lambda i, v: i < 4, lambda i, v: (i + 1, v * 2.0), [0, x])[1]

    def nested():
        x = tf.placeholder(tf.float32, [])

        def body(i, v):
            inner = tf.while_loop(lambda j, w: j < 2, lambda j, w: (j + 1, w + 1.0), [0, v])
            return i + 1, inner[1]

        return tf.while_loop(lambda i, v: i < 3, body, [0, x])[1]

    def cond_in_loop():
        x = tf.placeholder(tf.float32, [])

        def body(i, v):
            return i + 1, tf.cond(i < 2, lambda: v + 1.0, lambda: v * 2.0)

        return tf.while_loop(lambda i, v: i < 4, body, [0, x])[1]

    def gradient():
        x = tf.placeholder(tf.float32, [])
        y = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * v), [0, x])[1]
        return tf.gradients(y, x)[0]

    def switch_merge():
        pred = tf.placeholder(tf.bool, [])
        f, t = cf.switch(tf.constant(3.0), pred)
        return cf.merge([f - 1.0, t * 10.0])[0]

    return [while_loop, nested, cond_in_loop, gradient, switch_merge]


@pytest.mark.parametrize("build", _control_flow_graphs(), ids=lambda b: b.__name__)
def test_one_frame_analysis_for_the_executor_and_the_loop_compiler(build, monkeypatch):
    with tf.Graph().as_default():
        out = build()
        with tf.Session(config=tf.ConfigProto(graph_options=tf.GraphOptions(
                optimizer_options=tf.OptimizerOptions(opt_level=tf.OptimizerOptions.L0)))) \
                as s:
            feed = {t: np.array(True if t.dtype == tf.bool else 1.5, t.dtype.as_numpy_dtype)
                    for t in (
                op.outputs[0] for op in tf.get_default_graph().get_operations()
                if op.type == "Placeholder")}
            expected = s.run(out, feed)
            ((device, nodes, pairs),) = _parts(s)
    frames = frame_analysis.analyze(nodes)
    # The partitioner's control loops read the same analysis (frames as the executor's).
    sg = StepGraph()
    sg.nodes = list(nodes)
    other = partition._ControlLoops(sg)
    assert frames.frame_of == other.frame
    assert {f: p for f, p in frames.parent.items() if p is not None} == {
        f: p for f, p in other.parent.items() if f}
    # An Enter's outputs live in its frame, whose parent is the Enter's own frame; an Exit
    # is inside a loop frame and its outputs live in that frame's parent.
    for n in nodes:
        if n.op == "Enter":
            assert frames.out_frame[n] == n.attrs["frame_name"]
            assert frames.parent[n.attrs["frame_name"]] == frames.frame_of[n]
        elif n.op == "Exit":
            assert frames.out_frame[n] == frames.parent[frames.frame_of[n]] is not None
        else:
            assert frames.out_frame[n] == frames.frame_of[n]
    assert len(frames.parent) > 1 or build.__name__ == "switch_merge"
    # The dataflow executor's frames are the analysis's, with or without compiled loops.
    ex = Executor(nodes, device, pairs, compile_loops=False)
    assert {it.node: it.frame.name for it in ex.items} == frames.frame_of
    assert set(ex.frames) == set(frames.parent)
    # ... and so are its results, with the driver loop as generated and as written.
    for loop in (executor._Run._loop, executor._Run._loop_by_calls):
        monkeypatch.setattr(executor._Run, "_loop", loop)
        for loops in (False, True):
            got = _run_direct(Executor(nodes, device, pairs, compile_loops=loops), device,
                              [feed[t] for t in feed])
            np.testing.assert_allclose(got[0], expected)


def test_frame_analysis_reports_malformed_graphs():
    with tf.Graph().as_default():
        x = tf.constant(1.0)
        cf.exit(x, name="lost_exit")
        with tf.Session() as s:
            with pytest.raises(tf.errors.InvalidArgumentError, match="lost_exit"):
                s.run(tf.get_default_graph().get_operation_by_name("lost_exit"))


def test_flow_kinds_are_attributes_of_the_op_definitions():
    kinds = {op: frame_analysis.flow_kind(op) for op in (
        "Merge", "Enter", "Exit", "NextIteration", "_Send", "ControlTrigger", "Switch",
        "LoopCond", "Add", "_CompiledLoop")}
    assert kinds == {"Merge": "merge", "Enter": "enter", "Exit": "exit",
                     "NextIteration": "next_iteration", "_Send": "dead_aware",
                     "ControlTrigger": "dead_aware", "Switch": "switch", "LoopCond": None,
                     "Add": None, "_CompiledLoop": None}
    assert frame_analysis.is_control_flow("Switch")
    assert frame_analysis.is_control_flow("LoopCond")
    assert not frame_analysis.is_control_flow("_CompiledLoop")
    assert not frame_analysis.is_control_flow("Add")


def test_variable_handles_are_computed_when_the_step_is_built():
    """A VarHandleOp (registered device_constant) is no call in a compiled step: the step
    holds its handle, the one object the kernel gives for that device; fetched, it is
    that handle; the variable's reads, assigns and updates run as before."""
    from tensorflux.kernels.cpu.state_ops import ResourceHandle

    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(np.arange(3, dtype=np.float32), name="v")
        step = tf.train.GradientDescentOptimizer(0.5).minimize(tf.reduce_sum(v * v))
        read = v.read_value()
    with tf.Session(graph=g) as sess:
        sess.run(v.initializer)
        sess.run(step)
        np.testing.assert_allclose(sess.run(read), [0.0, 0.0, 0.0])
        handle = sess.run(v.handle)
        compiled = [ex for ex in _executors(sess) if hasattr(ex, "source")]
        assert compiled
        calls = [line for ex in compiled
                 for i, line in enumerate(ex.source.splitlines(), 1)
                 if getattr(ex._line_nodes.get(i), "op", None) == "VarHandleOp"]
        assert calls == []
        traced = tf.RunMetadata()  # a traced step calls every kernel, the handle's too
        sess.run(read, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                 run_metadata=traced)
        assert any(ns.node_name == "v" for d in traced.step_stats.dev_stats
                   for ns in d.node_stats)
    handle_value = handle.reshape(-1)[0] if isinstance(handle, np.ndarray) else handle
    assert type(handle_value) is ResourceHandle and handle_value.name == "v"
