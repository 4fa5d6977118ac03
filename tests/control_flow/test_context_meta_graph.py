"""tf.cond / tf.while_loop contexts through a MetaGraphDef (control_flow/context_protos.py):
export as TensorFlow's CondContextDef/WhileContextDef, import (with and without a scope)
rebuilding the contexts, gradients through the imported conds and loops equal to the
original graph's; TensorFlow reads ours and we read TensorFlow's."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.protos import control_flow_pb2
from tests.oracle import run_tf

FEED = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
W0 = np.arange(9, dtype=np.float32).reshape(3, 3) / 10

# The same program under both libraries (`tf` bound to each): a loop whose body holds a
# cond, a cond after the loop, gradients of both.
PROGRAM = """
x = tf.placeholder(tf.float32, [4, 3], name="x")
p = tf.placeholder(tf.bool, [], name="p")
w = tf.Variable(W0, name="w")
def body(i, h):
    h2 = tf.tanh(tf.matmul(h, w))
    h2 = tf.cond(i < 1, lambda: h2 * 2.0, lambda: h2 + 1.0)
    return i + 1, h2
_, h = tf.while_loop(lambda i, h: i < 3, body, [0, x])
y = tf.cond(p, lambda: tf.reduce_sum(h * h), lambda: tf.reduce_sum(h))
tf.add_to_collection("y", y)
"""


def _build():
    scope = {"tf": tf, "W0": W0}
    exec(PROGRAM, scope)  # noqa: S102 - the shared program text above
    return scope["x"], scope["p"], scope["w"], scope["y"]


def _values(sess, y, grads, x, p):
    return [sess.run([y, *grads], {x: FEED, p: b}) for b in (True, False)]


def _imported_values(meta_graph, scope=None):
    with tf.Graph().as_default() as g:
        tf.train.import_meta_graph(meta_graph, import_scope=scope)
        pre = f"{scope}/" if scope else ""
        y = tf.get_collection("y")[0]
        x, p = g.get_tensor_by_name(pre + "x:0"), g.get_tensor_by_name(pre + "p:0")
        w = [v for v in tf.global_variables() if v.op.name == pre + "w"][0]
        grads = tf.gradients(y, [w, x])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return _values(sess, y, grads, x, p), g


def _original():
    with tf.Graph().as_default():
        x, p, w, y = _build()
        grads = tf.gradients(y, [w, x])
        meta_graph = tf.train.export_meta_graph()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return _values(sess, y, grads, x, p), meta_graph


def _assert_same(a, b):
    for run_a, run_b in zip(a, b, strict=True):
        for u, v in zip(run_a, run_b, strict=True):
            np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-6)


def test_exported_contexts_are_tensorflows_messages():
    _, meta_graph = _original()
    loops = meta_graph.collection_def["while_context"].bytes_list.value
    conds = meta_graph.collection_def["cond_context"].bytes_list.value
    assert len(loops) == 1 and len(conds) == 2  # outermost contexts; the rest nested
    loop = control_flow_pb2.WhileContextDef.FromString(loops[0])
    assert loop.context_name == "while/while_context" and loop.parallel_iterations == 10
    assert loop.back_prop and loop.pivot_name == "while/LoopCond:0"
    assert loop.pivot_for_pred_name == "while/Merge:0"
    # the loop's two variables, and the iteration counter the gradient added
    assert loop.loop_exit_names[:2] == ["while/Exit:0", "while/Exit_1:0"]
    assert loop.loop_enter_names[:2] == ["while/Enter:0", "while/Enter_1:0"]
    assert "while/Enter_1:0" in loop.values_def.values
    nested = [c.cond_ctxt for c in loop.nested_contexts]
    assert [c.branch for c in nested] == [1, 0]
    assert nested[0].pivot_name == "while/cond/switch_t:0"
    cond = control_flow_pb2.CondContextDef.FromString(conds[0])
    assert (cond.pred_name, cond.pivot_name, cond.branch) == \
        ("cond/pred_id:0", "cond/switch_t:0", 1)
    assert cond.values_def.external_values  # the loop's output enters through a Switch


@pytest.mark.parametrize("scope", [None, "imported"])
def test_gradients_through_imported_conds_and_loops(scope):
    want, meta_graph = _original()
    got, g = _imported_values(meta_graph, scope)
    _assert_same(want, got)
    pre = f"{scope}/" if scope else ""
    loops = g.get_collection("while_context")
    assert loops[0].name == pre + "while/while_context"  # then the gradient's loops
    assert [c.name for c in loops[0]._nested_contexts] == \
        [pre + "while/cond/cond_text", pre + "while/cond/cond_text_1"]
    frames = {op.get_attr("frame_name") for op in g.get_operations()
              if op.type == "Enter" and op.name.startswith(pre + "while/")}
    assert {f.decode() if isinstance(f, bytes) else f for f in frames} == \
        {pre + "while/while_context"}


def test_export_scope_keeps_only_its_contexts():
    with tf.Graph().as_default():
        with tf.name_scope("a"):
            tf.while_loop(lambda i: i < 3, lambda i: i + 1, [0])
        with tf.name_scope("b"):
            tf.while_loop(lambda i: i < 4, lambda i: i + 1, [0])
        meta_graph = tf.train.export_meta_graph(export_scope="a")
    loops = [control_flow_pb2.WhileContextDef.FromString(v)
             for v in meta_graph.collection_def["while_context"].bytes_list.value]
    assert [loop.context_name for loop in loops] == ["while/while_context"]
    assert loops[0].pivot_name == "while/LoopCond:0"


@pytest.mark.oracle
def test_tensorflow_differentiates_through_our_meta_graph(tmp_path):
    want, meta_graph = _original()
    path = tmp_path / "ours.meta"
    path.write_bytes(meta_graph.SerializeToString())
    got = run_tf(f"""
tf.train.import_meta_graph({str(path)!r}, import_scope="imp")
g = tf.get_default_graph()
y = tf.get_collection("y")[0]
x, p = g.get_tensor_by_name("imp/x:0"), g.get_tensor_by_name("imp/p:0")
w = [v for v in tf.global_variables() if v.op.name == "imp/w"][0]
grads = tf.gradients(y, [w, x])
feed = np.array({FEED.tolist()!r}, np.float32)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    result = [sess.run([y] + grads, {{x: feed, p: b}}) for b in (True, False)]
""")
    _assert_same(want, got)


@pytest.mark.oracle
def test_we_differentiate_through_tensorflows_meta_graph(tmp_path):
    path = tmp_path / "theirs.meta"
    want = run_tf(f"""
W0 = np.arange(9, dtype=np.float32).reshape(3, 3) / 10
exec({PROGRAM!r})
grads = tf.gradients(y, [w, x])
tf.train.export_meta_graph({str(path)!r})
feed = np.array({FEED.tolist()!r}, np.float32)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    result = [sess.run([y] + grads, {{x: feed, p: b}}) for b in (True, False)]
""")
    got, _ = _imported_values(str(path), "theirs")
    _assert_same(want, got)
