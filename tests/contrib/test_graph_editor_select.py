"""tf.contrib.graph_editor: selecting ops and tensors, graph walks and SubGraphViews."""

from __future__ import annotations

import re

import pytest

import tensorflux as tf

ge = tf.contrib.graph_editor


def _graph():
    """a, b -> c = a + b -> d = c * 2 -> e = identity(d); f = c - 1 (another consumer of c);
    under scope "s": s/g = e + f."""
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float32, [2], name="a")
        b = tf.constant([1.0, 2.0], name="b")
        c = tf.add(a, b, name="c")
        d = tf.multiply(c, 2.0, name="d")
        e = tf.identity(d, name="e")
        f = tf.subtract(c, 1.0, name="f")
        with tf.name_scope("s"):
            s = tf.add(e, f, name="g")
    return g, dict(a=a, b=b, c=c, d=d, e=e, f=f, s=s)


def _names(items):
    return [item.name for item in items]


def test_select_ops_and_ts_by_regex_and_objects():
    g, t = _graph()
    assert _names(ge.select_ops("^c$|^d$", graph=g)) == ["c", "d"]
    assert _names(ge.select_ops(re.compile("^e$"), t["c"].op, [t["a"].op], graph=g)) == \
        ["e", "c", "a"]
    assert ge.select_ops(t["c"]) == []  # tensors are ignored by select_ops
    assert _names(ge.select_ops("^[cd]$", graph=g,
                                positive_filter=lambda op: op.type == "Mul")) == ["d"]
    assert ge.select_ops("(?#ts)^c", graph=g) == []
    assert ge.select_ops("^c$", graph=g, restrict_ops_regex=True) == []
    assert _names(ge.select_ts("^c:0$", graph=g)) == ["c:0"]
    assert _names(ge.select_ts(t["e"], t["c"].op)) == ["e:0"]
    ops, ts = ge.select_ops_and_ts("^c$", "(?#ts)^e:0$", graph=g)
    assert _names(ops) == ["c"] and _names(ts) == ["e:0"]
    with pytest.raises(ValueError, match="keyword argument 'graph'"):
        ge.select_ops("^c$")
    with pytest.raises(ValueError, match="Wrong keywords argument"):
        ge.select_ops("^c$", graph=g, bogus=1)
    assert ge.can_be_regex("x") and ge.can_be_regex(re.compile("x"))
    assert not ge.can_be_regex(t["c"])


def test_filters_name_scopes_and_list_conversions():
    g, t = _graph()
    ops = [t["c"].op, t["d"].op]
    assert _names(ge.filter_ts(ops, True)) == ["a:0", "b:0", "c:0", "d/y:0", "d:0"]
    assert _names(ge.filter_ts_from_regex(ops, "^d")) == ["d/y:0", "d:0"]
    assert _names(ge.filter_ops(g, lambda op: op.type == "Identity")) == ["e"]
    assert _names(ge.filter_ops_from_regex(g, "^s/")) == ["s/g"]
    assert _names(ge.get_name_scope_ops(g, "s/")) == ["s/g"]
    assert _names(ge.get_name_scope_ops(g, "d")) == ["d/y", "d"]
    assert ge.make_list_of_op(g) == g.get_operations()
    assert ge.make_list_of_t(t["c"]) == [t["c"]]
    with pytest.raises(TypeError, match="Operation"):
        ge.make_list_of_op([t["c"]])
    with pytest.raises(TypeError, match="allow_graph"):
        ge.make_list_of_op(g, allow_graph=False)
    assert ge.make_list_of_op([t["c"], t["c"].op], ignore_ts=True) == [t["c"].op]
    with tf.Graph().as_default():
        other = tf.constant(1.0)
    with pytest.raises(ValueError, match="does not belong"):
        ge.make_list_of_t([t["c"], other])
    assert ge.get_unique_graph([t["c"].op]) is g
    assert ge.get_generating_ops([t["c"], t["e"]]) == [t["c"].op, t["e"].op]
    assert ge.get_consuming_ops([t["c"]]) == [t["d"].op, t["f"].op]


def test_forward_and_backward_walks():
    g, t = _graph()
    assert _names(ge.get_forward_walk_ops(t["a"].op)) == ["a", "c", "d", "f", "e", "s/g"]
    assert _names(ge.get_forward_walk_ops([t["c"]])) == ["d", "f", "e", "s/g"]
    assert _names(ge.get_forward_walk_ops(t["c"].op, inclusive=False)) == \
        ["d", "f", "e", "s/g"]
    assert _names(ge.get_forward_walk_ops(t["c"].op, stop_at_ts=[t["d"]])) == \
        ["c", "d", "f", "s/g"]
    within = [t["c"].op, t["d"].op, t["e"].op]
    assert _names(ge.get_forward_walk_ops(t["a"].op, within_ops=within)) == []
    assert _names(ge.get_forward_walk_ops(t["c"].op, within_ops=within)) == ["c", "d", "e"]
    assert _names(ge.get_forward_walk_ops(
        t["c"].op, within_ops_fn=lambda op: op.type != "Identity")) == ["c", "d", "f", "s/g"]
    assert _names(ge.get_backward_walk_ops(t["e"].op)) == ["e", "d", "c", "d/y", "a", "b"]
    assert _names(ge.get_backward_walk_ops([t["e"]], inclusive=False)) == \
        ["d", "c", "d/y", "a", "b"]
    assert _names(ge.get_backward_walk_ops(t["e"].op, stop_at_ts=[t["c"]])) == \
        ["e", "d", "d/y"]
    assert _names(ge.get_walks_intersection_ops(t["a"].op, t["e"].op)) == ["a", "c", "d", "e"]
    assert _names(ge.get_walks_intersection_ops(
        t["a"].op, t["e"].op, forward_inclusive=False, backward_inclusive=False)) == ["c", "d"]
    assert _names(ge.get_walks_union_ops(t["d"].op, t["c"].op)) == \
        ["d", "e", "s/g", "c", "a", "b"]
    assert ge.get_forward_walk_ops([]) == []


def test_walks_along_control_edges():
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(1.0, name="x")
        with tf.control_dependencies([x.op]):
            y = tf.constant(2.0, name="y")
        z = tf.identity(y, name="z")
    assert _names(ge.get_forward_walk_ops(x.op)) == ["x"]
    assert _names(ge.get_forward_walk_ops(x.op, control_outputs=ge.ControlOutputs(g))) == \
        ["x", "y", "z"]
    assert _names(ge.get_backward_walk_ops(z.op)) == ["z", "y"]
    assert _names(ge.get_backward_walk_ops(z.op, control_inputs=True)) == ["z", "y", "x"]
    control = ge.ControlOutputs(g)
    assert control.get(x.op) == (y.op,) and control.get(y.op) == ()
    assert _names(ge.get_walks_intersection_ops(x.op, z.op, control_ios=control)) == \
        ["x", "y", "z"]
    with pytest.raises(TypeError, match="ControlOutputs"):
        ge.get_forward_walk_ops(x.op, control_outputs={})


def test_within_boundary_and_ops_ios():
    g, t = _graph()
    everything = g.get_operations()
    assert _names(ge.get_within_boundary_ops(everything, t["c"].op,
                                             boundary_ops=[t["d"].op, t["f"].op])) == \
        ["a", "b", "c", "d", "f"]
    assert _names(ge.get_within_boundary_ops(everything, t["c"].op,
                                             boundary_ops=[t["d"].op, t["f"].op],
                                             inclusive=False)) == ["a", "b", "c"]
    with pytest.raises(ValueError, match="intersecting"):
        ge.get_within_boundary_ops(everything, t["c"].op, boundary_ops=[t["c"].op])
    assert _names(ge.get_ops_ios([t["c"].op])) == ["a", "b", "d", "f"]
    inputs, outputs, inside = ge.compute_boundary_ts([t["c"].op, t["d"].op])
    assert _names(inputs) == ["a:0", "b:0", "d/y:0"]
    assert _names(outputs) == ["c:0", "d:0"]  # c:0 is also read by f, outside
    assert _names(inside) == ["c:0"]


def test_subgraph_view_boundary_remap_and_lookups():
    g, t = _graph()
    view = ge.sgv(t["c"].op, t["d"].op)
    assert view.graph is g and bool(view) and not ge.SubGraphView()
    assert _names(view.ops) == ["c", "d"]
    assert _names(view.inputs) == ["a:0", "b:0", "d/y:0"]
    assert _names(view.outputs) == ["c:0", "d:0"]
    assert _names(view.consumers()) == ["f", "e"]
    assert view.input_index(t["b"]) == 1 and view.output_index(t["d"]) == 1
    with pytest.raises(ValueError, match="Can't find e:0"):
        view.input_index(t["e"])
    assert view.find_op_by_name("d") is t["d"].op
    with pytest.raises(ValueError, match="not in subgraph"):
        view.find_op_by_name("e")
    remapped = view.remap_inputs([2, t["a"]])
    assert _names(remapped.inputs) == ["d/y:0", "a:0"] and len(view.inputs) == 3
    assert _names(view.remap_outputs([1, 1, 0]).outputs) == ["d:0", "d:0", "c:0"]
    assert _names(view.remap_outputs([1, 1]).remap_outputs_make_unique().outputs) == ["d:0"]
    assert _names(view.remap_outputs_to_consumers().outputs) == ["c:0", "c:0", "d:0"]
    assert _names(remapped.remap_default().inputs) == ["a:0", "b:0", "d/y:0"]
    with pytest.raises(ValueError, match="repetition"):
        view.remap_inputs([0, 0])
    with pytest.raises(ValueError, match="range"):
        view.remap(new_output_indices=[5])
    through = ge.sgv(t["c"].op, t["e"])
    assert through.passthroughs == [t["e"]] and through.is_passthrough(t["e"])
    assert t["e"] in through.inputs and t["e"] in through.outputs
    assert t["e"] not in through.connected_inputs
    assert ge.sgv(view) is view
    assert _names(ge.sgv("^[cd]$", graph=g).ops) == ["c", "d"]
    assert _names(ge.sgv_scope("s", g).ops) == ["s/g"]
    with pytest.raises(ValueError, match="Graph mismatch"):
        ge.sgv(view, graph=tf.Graph())
    assert "ops[2]: c, d" in str(view)


def test_placeholders_and_names():
    g, t = _graph()
    with g.as_default():
        p = ge.make_placeholder_from_tensor(t["d"])
        assert p.op.name == "geph__d_0" and p.shape.as_list() == [2]
        assert p.dtype == tf.float32 and p.op.type == "Placeholder"
        q = ge.make_placeholder_from_tensor(t["s"], scope="x")
        assert q.op.name == "x/geph__g_0"
        r = ge.ph(tf.int32, [3], scope="y")
        assert r.op.name == "y/geph" and r.shape.as_list() == [3]
    assert ge.placeholder_name(t["s"]) == "s/geph__g_0"
    assert ge.placeholder_name(p) == "geph__d_0"
    assert ge.placeholder_name(t["c"], prefix="p") == "p__c_0"
    with pytest.raises(TypeError, match="tf.Tensor"):
        ge.placeholder_name(t["c"].op)
