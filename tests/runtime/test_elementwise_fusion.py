"""Elementwise fusion (runtime/elementwise_fusion.py, kernels/cpu/fused_elementwise_ops.py):
which nodes fuse, and that fused steps give the unfused steps' values bit for bit under
every strategy (the unfused reference: the reference executor at L0, where the optimizer
passes are off)."""

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework import errors
from tensorflux.kernels.cpu import fused_elementwise_ops as fused_kernels
from tensorflux.kernels.cpu import native
from tensorflux.runtime import elementwise_fusion
from tensorflux.runtime.step_graph import Node
from tests.op_test_util import STRATEGIES

L0 = tf.ConfigProto(graph_options=tf.GraphOptions(
    optimizer_options=tf.OptimizerOptions(opt_level=tf.OptimizerOptions.L0)))
needs_native = pytest.mark.skipif(getattr(native._mod, "elementwise", None) is None,
                                  reason="the C extension is not built")


def _step_ops(sess) -> list[str]:
    return [n.op for st in sess._steps.values() for p in st.partition_graphs.values()
            for n in p.nodes]


def _check_all_strategies(graph, fetches, feeds, fused_at_least=1, runs=2):
    """Runs `fetches` unfused (reference executor, L0) and fused under every strategy;
    asserts equal bits and that at least `fused_at_least` nodes fused; returns the
    unfused values."""
    with tf.Session(graph=graph, config=L0,
                    exec_options=STRATEGIES["reference"]) as s:
        want = s.run(fetches, feeds)
        assert "_FusedElementwise" not in _step_ops(s)
    for name, options in STRATEGIES.items():
        with tf.Session(graph=graph, exec_options=options) as s:
            for _ in range(runs):
                got = s.run(fetches, feeds)
                for w, g in zip(want, got, strict=True):
                    np.testing.assert_array_equal(g, w, err_msg=name)
            assert _step_ops(s).count("_FusedElementwise") >= fused_at_least, name
    return want


def _gru_tail(rng, shape=(32, 64)):
    """A GRU cell's output `u * h + (1 - u) * c` and its gradients (Mul, Sub, Neg, AddN,
    TanhGrad, SigmoidGrad), fed random values."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, shape, name="x")
        h = tf.placeholder(tf.float32, shape, name="h")
        u = tf.sigmoid(x * 0.5)
        c = tf.tanh(x - h)
        new_h = u * h + (1 - u) * c
        loss = tf.reduce_sum(new_h * new_h)
        grads = tf.gradients(loss, [x, h])
    feeds = {x: rng.standard_normal(shape).astype(np.float32),
             h: rng.standard_normal(shape).astype(np.float32)}
    return g, [new_h] + grads, feeds


@pytest.mark.parametrize("shape", [(32, 64), (2,), (3, 85), (257,)])
def test_a_gru_cell_and_its_gradient_fuse_and_keep_their_bits(shape):
    g, fetches, feeds = _gru_tail(np.random.default_rng(0), shape)
    _check_all_strategies(g, fetches, feeds, fused_at_least=2)


def _random_program(rng, x, y, depth=0):
    """A random expression of fusable ops (and a few that are not) over x, y."""
    if depth > 4 or rng.random() < 0.15:
        return [x, y, tf.constant(float(rng.uniform(-2, 2)))][rng.integers(0, 3)]
    a = _random_program(rng, x, y, depth + 1)
    b = _random_program(rng, x, y, depth + 1)
    kind = rng.integers(0, 9)
    if kind == 0:
        return a + b
    if kind == 1:
        return a - b
    if kind == 2:
        return a * b
    if kind == 3:
        return -a + x
    if kind == 4:
        return tf.add_n([a + x, b * y, x])
    if kind == 5:
        return tf.tanh(a) * b
    if kind == 6:  # the gradients take two inputs of one shape
        return tf.raw_ops.TanhGrad(y=tf.tanh(a + x), dy=b + y)
    if kind == 7:
        return tf.raw_ops.SigmoidGrad(y=tf.sigmoid(a + x), dy=b - y)
    return tf.add(a, b, name="shared") * a  # `a` read by two nodes


@pytest.mark.parametrize("seed", range(6))
def test_random_elementwise_programs_under_every_strategy(seed):
    rng = np.random.default_rng(seed)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [5, 7], name="x")
        y = tf.placeholder(tf.float32, [5, 7], name="y")
        x, y = tf.identity(x), tf.identity(y)  # a fed _Arg has no static shape: no fusion
        outs = [_random_program(rng, x, y) for _ in range(4)]
        outs = [o if o.shape == x.shape else o + x for o in outs]
        middle = outs[0] * outs[1]
        fetches = [middle + outs[2], middle, outs[3]]  # a fetched node inside a tree
    feeds = {x.op.inputs[0]: rng.standard_normal((5, 7)).astype(np.float32),
             y.op.inputs[0]: rng.standard_normal((5, 7)).astype(np.float32)}
    _check_all_strategies(g, fetches, feeds, fused_at_least=1)


def test_fusion_inside_a_while_loop_body():
    rng = np.random.default_rng(3)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [4, 6], name="x")
        feeds = {x: rng.standard_normal((4, 6)).astype(np.float32)}
        x = tf.identity(x)

        def body(i, v):
            return i + 1, (v * 0.5 + x) * (1.0 - v) - tf.tanh(v)

        _, out = tf.while_loop(lambda i, v: i < 5, body, [tf.constant(0), x])
    _check_all_strategies(g, [out], feeds, fused_at_least=1)


@pytest.mark.parametrize("take", [True, False])
def test_fusion_inside_cond_branches(take):
    rng = np.random.default_rng(4)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [4, 6], name="x")
        pred = tf.placeholder(tf.bool, [], name="pred")
        feeds = {x: rng.standard_normal((4, 6)).astype(np.float32), pred: take}
        v = tf.identity(x)
        out = tf.cond(pred, lambda: (v * 2.0 + 1.0) * (1.0 - v),
                      lambda: -(v * v) + tf.tanh(v) * v)
    _check_all_strategies(g, [out], feeds, fused_at_least=1)


def _fused_ops_of(fetches, feeds=()) -> list[str]:
    with tf.Session(graph=fetches[0].graph) as s:
        s.run(fetches, dict(feeds))
        return _step_ops(s)


def test_what_does_not_fuse():
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.float32, [None, 8], name="p")  # unknown shape
        q = tf.placeholder(tf.float32, [4, 8], name="q")
        d = tf.placeholder(tf.float64, [4, 8], name="d")
        b = tf.placeholder(tf.float32, [8], name="b")
        big = tf.placeholder(tf.float32, [elementwise_fusion.MAX_ELEMENTS + 1], name="big")
        fed = (p, q, d, b, big)
        p, q, d, b, big = (tf.identity(t) for t in fed)  # shapes of their own (not _Args)
        unknown = (p * 2.0) + p
        doubles = (d * 2.0) + d
        broadcast = (q * b) + q  # a vector input: not a scalar
        large = (big * 2.0) + big
        control = (q * 2.0) + q
    values = (np.ones((4, 8), np.float32), np.ones((4, 8), np.float32), np.ones((4, 8)),
              np.ones(8, np.float32), np.ones(elementwise_fusion.MAX_ELEMENTS + 1, np.float32))
    feeds = dict(zip(fed, values, strict=True))
    for out in (unknown, doubles, large):
        assert "_FusedElementwise" not in _fused_ops_of([out], feeds)
    ops = _fused_ops_of([broadcast], feeds)
    assert "_FusedElementwise" not in ops and "Mul" in ops
    assert "_FusedElementwise" in _fused_ops_of([control], feeds)


def test_awaited_and_shared_nodes_stay_nodes():
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.float32, [4, 8], name="p")
        q = tf.identity(p)
        shared = q * 3.0
        awaited = q * 4.0
        with tf.control_dependencies([awaited]):
            marker = tf.identity(q)
        out = (shared + q) * shared + (awaited + q) + marker
    feeds = {p: np.arange(32, dtype=np.float32).reshape(4, 8)}
    with tf.Session(graph=g) as s:
        got = s.run(out, feeds)
        ops = _step_ops(s)
    assert ops.count("Mul") == 2  # `shared` (two readers) and `awaited` (a control edge)
    assert ops.count("_FusedElementwise") >= 1
    x = feeds[p]
    np.testing.assert_array_equal(got, (x * 3 + x) * (x * 3) + (x * 4 + x) + x)


def test_long_sums_and_chains_fuse_in_trees_within_the_limits():
    g = tf.Graph()
    with g.as_default():
        q = tf.placeholder(tf.float32, [3, 5], name="q")
        x = tf.identity(q)  # an _Arg has no static shape
        terms = [x * float(k) for k in range(60)]
        out = tf.add_n(terms[:30]) - tf.add_n(terms[30:40]) * tf.add_n(terms[40:])
        chain = x
        for k in range(400):  # deeper than the interpreter's recursion limit in trees
            chain = chain * 0.999 + float(k % 3)
    feeds = {q: np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)}
    _check_all_strategies(g, [out, chain], feeds, fused_at_least=20, runs=1)
    with tf.Session(graph=g) as s:
        s.run([out, chain], feeds)
        nodes = [n for st in s._steps.values() for p in st.partition_graphs.values()
                 for n in p.nodes if n.op == "_FusedElementwise"]
    assert all(n.attrs["N"] + len(n.attrs["ops"]) <= elementwise_fusion.MAX_REGISTERS
               for n in nodes)
    assert sum(len(n.attrs["ops"]) for n in nodes) > 800


def _kernel(ops, operands, shape, n):
    node = Node("f", "_FusedElementwise", {"ops": ops, "operands": operands,
                                           "shape": list(shape), "N": n,
                                           "T": tf.float32}, [], [], [tf.float32])
    return fused_kernels._fused_elementwise(node)


PROGRAM = (["Mul", "Sub", "TanhGrad", "SigmoidGrad", "Neg", "Add"],
           [0, 1, 2, 3, 0, 4, 1, 5, 6, 6, 7, 2])  # registers 0-2 inputs (2: a scalar)


def _program_numpy(a, b, s):
    t0 = a * b
    t1 = s - t0
    t2 = t1 * (1 - a * a)  # TanhGrad(a, t1)
    t3 = (t2 * b) * (1 - b)  # SigmoidGrad(b, t2)
    return -t3 + s


@pytest.mark.parametrize("size", [2, 255, 256, 257, 1000, 40000])
def test_the_kernel_in_c_and_in_numpy(size, monkeypatch):
    rng = np.random.default_rng(size)
    a, b = (rng.standard_normal(size).astype(np.float32) for _ in range(2))
    s = np.float32(0.75)
    want = _program_numpy(a, b, s)
    compute = _kernel(*PROGRAM, (size,), 3)
    np.testing.assert_array_equal(compute(None, a, b, np.asarray(s)), want)
    np.testing.assert_array_equal(compute(None, a, b, s), want)  # a NumPy scalar
    np.testing.assert_array_equal(compute(None, a[::-1].copy()[::-1], b, s), want)
    strided = np.stack([a, a]).T[:, 0]  # not contiguous: the NumPy path
    np.testing.assert_array_equal(compute(None, strided, b, s), want)
    monkeypatch.setattr(native, "_mod", None)  # no extension: the NumPy path
    np.testing.assert_array_equal(_kernel(*PROGRAM, (size,), 3)(None, a, b, s), want)


@needs_native
def test_the_c_loop_refuses_what_it_cannot_run():
    out = np.empty((2, 2), np.float32)
    x = np.ones((2, 2), np.float32)
    program = np.array([[2, 0, 1]], np.int32).tobytes()
    assert native.elementwise(out, (x, x), program)
    assert native.elementwise(out, (x, np.ones((), np.float32)), program)
    for other in (np.ones(4, np.float32), np.ones((2, 2)), np.ones((1, 2), np.float32),
                  np.ones((2, 4), np.float32)[:, :2], [[1.0, 1.0], [1.0, 1.0]]):
        assert not native.elementwise(out, (x, other), program)
    assert not native.elementwise(out[:, :1], (x[:, :1], x[:, :1]), program)
    for bad in (np.array([[9, 0, 1]], np.int32).tobytes(), b"\x00",
                np.array([[2, 0, 2]], np.int32).tobytes()):  # reads a register not there yet
        with pytest.raises(ValueError, match="elementwise: bad"):
            native.elementwise(out, (x, x), bad)
    with pytest.raises(ValueError, match="too many inputs"):
        native.elementwise(out, (x,) * 60, program)


def test_the_kernel_checks_its_inputs_and_attrs():
    compute = _kernel(["Mul"], [0, 1], (2, 3), 2)
    with pytest.raises(errors.InvalidArgumentError, match=r"input 1 has shape \[3,2\]"):
        compute(None, np.ones((2, 3), np.float32), np.ones((3, 2), np.float32))
    with pytest.raises(errors.InvalidArgumentError, match="two operands each"):
        _kernel(["Exp"], [0, 0], (2,), 1)
    with pytest.raises(errors.InvalidArgumentError, match="not there yet"):
        _kernel(["Mul", "Add"], [0, 1, 0, 3], (2,), 2)
