"""tf.contrib.graph_editor: rerouting, editing and copying subgraphs, in graphs that
Sessions already ran (the edits must show in their next runs), and the gradient
checkpointing of OpenAI's memory_saving_gradients.py, which is built on them."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests.op_test_util import STRATEGIES

ge = tf.contrib.graph_editor


def _chain():
    """a -> c = a + 1 -> d = c * 2 -> e = d - 3, and n = a * 10 (not yet used)."""
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float32, [2], name="a")
        c = tf.add(a, 1.0, name="c")
        d = tf.multiply(c, 2.0, name="d")
        e = tf.subtract(d, 3.0, name="e")
        n = tf.multiply(a, 10.0, name="n")
    return g, a, c, d, e, n


def test_reroute_shows_in_a_session_that_ran_before_under_every_strategy():
    for options in STRATEGIES.values():
        g, a, c, d, e, n = _chain()
        with tf.Session(graph=g, exec_options=options) as sess:
            feed = {a: [1.0, 2.0]}
            np.testing.assert_allclose(sess.run(e, feed), [1.0, 3.0])
            assert ge.reroute_ts(n, c) == 1  # d now reads n
            assert d.op.inputs[0] is n and c.consumers() == []
            np.testing.assert_allclose(sess.run(e, feed), [17.0, 37.0])
            assert ge.swap_ts(n, c) == 1  # back: d reads c again
            np.testing.assert_allclose(sess.run(e, feed), [1.0, 3.0])


def test_reroute_ts_can_modify_cannot_modify_and_errors():
    g, a, c, d, e, n = _chain()
    with g.as_default():
        f = tf.square(c, name="f")
        i = tf.constant([1, 2], name="i")
    assert ge.reroute_ts([n], [c], can_modify=[f.op]) == 1
    assert d.op.inputs[0] is c and f.op.inputs[0] is n
    assert ge.reroute_ts(n, c, cannot_modify=d.op) == 0
    assert ge.reroute_ts(c, c) == 0
    with pytest.raises(ValueError, match="not compatible"):
        ge.reroute_ts(i, c)
    with g.as_default():
        wide = tf.placeholder(tf.float32, [3])
    with pytest.raises(ValueError, match="Shapes"):
        ge.reroute_ts(wide, c)
    with pytest.raises(ValueError, match="different sizes"):
        ge.reroute_ts([n, c], [c])
    with pytest.raises(TypeError):
        ge.reroute_ts(n.op, c)


def test_reroute_and_swap_subgraph_inputs_and_outputs():
    g, a, c, d, e, n = _chain()
    with g.as_default(), tf.Session() as sess:
        b = tf.placeholder(tf.float32, [2], name="b")
        m = tf.negative(b, name="m")
        feed = {a: [1.0, 2.0], b: [5.0, 7.0]}
        ge.reroute_inputs(ge.sgv(m.op), ge.sgv(c.op).remap_inputs([0]))  # c = b + 1
        np.testing.assert_allclose(sess.run(e, feed), [9.0, 13.0])
        ge.swap_inputs(ge.sgv(m.op), ge.sgv(c.op).remap_inputs([0]))  # both read b
        assert m.op.inputs[0] is b and c.op.inputs[0] is b
        ge.reroute_outputs(ge.sgv(m.op), ge.sgv(c.op))  # d reads m
        np.testing.assert_allclose(sess.run(e, feed), [-13.0, -17.0])
        ge.swap_outputs(ge.sgv(m.op), ge.sgv(c.op))  # d reads c again
        np.testing.assert_allclose(sess.run(e, feed), [9.0, 13.0])


def test_detach_connect_and_bypass():
    g, a, c, d, e, n = _chain()
    with g.as_default(), tf.Session() as sess:
        view, inputs = ge.detach_inputs(ge.sgv(d.op))
        assert [t.op.type for t in inputs] == ["Placeholder"] * 2
        assert inputs[0].op.name == "geph__c_0" and d.op.inputs[0] is inputs[0]
        np.testing.assert_allclose(sess.run(e, {inputs[0]: [1.0, 1.0], inputs[1]: 5.0}),
                                   [2.0, 2.0])
        ge.connect(ge.sgv(c.op), ge.sgv(d.op).remap_inputs([0]))
        assert d.op.inputs[0] is c
        _, outputs = ge.detach_outputs(ge.sgv(c.op))
        assert e.op.inputs[0] is d and d.op.inputs[0] is outputs[0]
        assert c.consumers() == []
        g2, a2, c2, d2, e2, _ = _chain()
    with g2.as_default(), tf.Session() as sess:
        view, placeholders = ge.bypass(ge.sgv(d2.op).remap_inputs([0]))
        assert e2.op.inputs[0] is c2  # e reads d's input directly
        np.testing.assert_allclose(sess.run(e2, {a2: [1.0, 2.0]}), [-1.0, 0.0])
        assert d2.op.inputs[0] is placeholders[0]
    g3, a3, c3, d3, e3, _ = _chain()
    _, ins, outs = ge.detach(ge.sgv(d3.op), control_ios=ge.ControlOutputs(g3))
    assert d3.op.inputs[0] is ins[0] and e3.op.inputs[0] is outs[0]


def test_control_inputs_added_and_removed():
    g = tf.Graph()
    with g.as_default(), tf.Session() as sess:
        v = tf.Variable(0.0, name="v")
        bump = tf.assign_add(v, 1.0)
        read = tf.identity(v.read_value(), name="read")
        sess.run(tf.global_variables_initializer())
        assert sess.run(read) == 0.0
        ge.add_control_inputs(read.op, [bump.op])
        assert sess.run(read) == 1.0  # the edit reached the cached step
        with pytest.raises(ValueError, match="already a control_input"):
            ge.add_control_inputs(read.op, bump.op)
        ge.remove_control_inputs(read.op, bump.op)
        assert read.op.control_inputs == [] and sess.run(read) == 1.0
        with pytest.raises(ValueError, match="not a control_input"):
            ge.remove_control_inputs(read.op, bump.op)
        with pytest.raises(TypeError, match="tf.Operation"):
            ge.add_control_inputs(read, [bump.op])
        ge.add_control_inputs(read.op, [bump.op])
        ge.detach_control_inputs(ge.sgv(read.op))
        assert read.op.control_inputs == []


def test_copy_into_another_graph_with_placeholders_and_scopes():
    g, a, c, d, e, n = _chain()
    g2 = tf.Graph()
    view, info = ge.copy(ge.sgv(c.op, d.op, e.op), g2, dst_scope="copied")
    assert [op.name for op in view.ops] == ["copied/c", "copied/d", "copied/e"]
    assert view.graph is g2 and info.transformed(e).graph is g2
    a_ = info.transformed(a)
    assert a_.op.name == "copied/geph__a_0" and a_.op.type == "Placeholder"
    assert info.transformed(d.op).name == "copied/d"
    assert info.original(info.transformed(d)) is d
    assert info.transformed([c, {"x": e}]) == [info.transformed(c), {"x": info.transformed(e)}]
    assert info.transformed("copied_nothing") is None and info.transformed("c") is not None
    originals = [info.original(t) for t in view.inputs]
    assert [t.op.name for t in originals] == ["a", "c/y", "d/y", "e/y"]
    with tf.Session(graph=g) as sess:
        values = sess.run(originals[1:])
    feed = dict(zip(view.inputs, [[1.0, 2.0]] + values, strict=True))
    with tf.Session(graph=g2) as sess:
        np.testing.assert_allclose(sess.run(info.transformed(e), feed), [1.0, 3.0])
    again, _ = ge.copy(ge.sgv(c.op), g2, dst_scope="copied")
    assert again.ops[0].name == "copied_1/c"
    reused, _ = ge.copy(ge.sgv(c.op), g2, dst_scope="copied", reuse_dst_scope=True)
    assert reused.ops[0].name == "copied/c_1"
    with pytest.raises(ValueError, match="does not belong to source scope"):
        ge.copy(ge.sgv(c.op), g2, src_scope="zzz")
    with pytest.raises(TypeError, match="tf.Graph"):
        ge.copy(ge.sgv(c.op), "g2")


def test_copy_with_input_replacements_and_graph_replace():
    g, a, c, d, e, n = _chain()
    with g.as_default(), tf.Session() as sess:
        view, info = ge.copy_with_input_replacements(ge.sgv(c.op, d.op, e.op), {a: n})
        e_ = info.transformed(e)
        assert e_.op.name == "e_1" and info.transformed(c).op.inputs[0] is n
        assert info.transformed(d).op.inputs[1] is d.op.inputs[1]  # kept in one graph
        np.testing.assert_allclose(sess.run([e, e_], {a: [1.0, 2.0]}),
                                   [[1.0, 3.0], [19.0, 39.0]])
        x = tf.constant([5.0, 6.0], name="x")
        constant = d.op.inputs[1]
        replaced = ge.graph_replace({"out": e, "same": constant}, {a: x})
        assert replaced["same"] is constant
        np.testing.assert_allclose(sess.run(replaced["out"]), [9.0, 11.0])
        with pytest.raises(ValueError, match="not connected"):
            ge.graph_replace(e, {x: a})


def test_transformer_with_a_custom_op_handler_and_control_inputs():
    g, a, c, d, e, n = _chain()
    with g.as_default():
        with tf.control_dependencies([n.op]):
            f = tf.identity(e, name="f")

    def add_becomes_sub(info, op, new_inputs):
        op_, outputs_ = ge.copy_op_handler(info, op, new_inputs)
        if op.type == "AddV2":
            with info.graph_.as_default():
                sub = tf.subtract(*new_inputs, name=op_.name + "_as_sub")
            return sub.op, sub.op.outputs
        return op_, outputs_

    transformer = ge.Transformer()
    transformer.transform_op_handler = add_becomes_sub
    transformer.transform_external_input_handler = ge.keep_t_if_possible_handler
    view, info = transformer(ge.sgv(c.op, d.op, e.op, f.op), g, "t")
    f_ = info.transformed(f)
    assert f_.op.control_inputs == [n.op]  # outside the view, same graph: kept
    with tf.Session(graph=g) as sess:
        np.testing.assert_allclose(sess.run(f_, {a: [1.0, 2.0]}), [-3.0, -1.0])
    g2 = tf.Graph()
    _, info2 = ge.copy(ge.sgv(f.op), g2)
    assert info2.transformed(f).op.control_inputs == []  # dropped in another graph
