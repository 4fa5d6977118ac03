"""GraphDef in and out: graph_io (Graph -> GraphDef), importer (GraphDef -> Graph),
train.write_graph, and both directions against TensorFlow (one oracle subprocess)."""

from __future__ import annotations

import base64
import os
import stat

import numpy as np
import pytest
from google.protobuf import text_format

import tensorflux as tf
from tensorflux.framework.importer import extend_graph, import_graph_def
from tensorflux.protos import graph_pb2, op_def_pb2
from tensorflux.train.training_util import write_graph
from tests.oracle import run_tf

# ------------------------------------------------------------------------------------------
# Helpers.


def _sample_graph() -> tf.Graph:
    """Every op that exists, several Const dtypes, partial shapes, control deps, colocation,
    devices."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        p = tf.placeholder(tf.int64, name="p")  # unknown rank
        tf.placeholder(tf.float32, [2, None, 4], name="q")
        c = tf.constant([1.0, 2.0, 3.0], name="c")
        i64 = tf.constant([[1, 2], [3, 4]], dtype=tf.int64, name="i64")
        s = tf.constant(["a", "bc", ""], name="s")
        bf = tf.constant([1.5, -2.0], dtype=tf.bfloat16, name="bf")
        tf.constant(0.5, dtype=tf.float16, name="h")
        tf.constant([True, False], name="bl")
        tf.constant(7, name="sc")
        n0 = tf.no_op(name="n0")
        n1 = tf.no_op(name="n1")
        with tf.control_dependencies([n1, n0]):
            y = tf.add(x, c, name="y")
        with tf.colocate_with(y):
            z = tf.identity(y, name="z")
        with tf.device("/cpu:0"):
            w = tf.identity_n([z, s, bf], name="w")
        sg = tf.stop_gradient(w[0], name="sg")
        pd = tf.placeholder_with_default(c, [3], name="pd")
        k = tf.add(pd, sg, name="k")
        tf.add(p, i64, name="pp")
        tf.identity(w[2], name="bf_out")
        with tf.control_dependencies([k.op, n0]):
            tf.no_op(name="done")
    return g


def _strip_prefix(gd: graph_pb2.GraphDef, prefix: str) -> graph_pb2.GraphDef:
    """`gd` with `prefix` removed from node names, inputs and colocation groups."""
    out = graph_pb2.GraphDef()
    out.CopyFrom(gd)
    for nd in out.node:
        assert nd.name.startswith(prefix), nd.name
        nd.name = nd.name[len(prefix):]
        for i, s in enumerate(nd.input):
            ctrl = s.startswith("^")
            body = s[1:] if ctrl else s
            assert body.startswith(prefix), s
            nd.input[i] = ("^" if ctrl else "") + body[len(prefix):]
        if "_class" in nd.attr:
            groups = nd.attr["_class"].list.s
            for i, g in enumerate(groups):
                groups[i] = g.replace(b"loc:@" + prefix.encode(), b"loc:@")
    return out


def _parse(text: str) -> graph_pb2.GraphDef:
    return text_format.Parse(text, graph_pb2.GraphDef())


_CONST = ('node { name: "c" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } } '
          'attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} '
          'float_val: 1.0 } } } } ')
_T_FLOAT = 'attr { key: "T" value { type: DT_FLOAT } }'


def _import_text(text: str, **kwargs):
    g = tf.Graph()
    with g.as_default():
        return g, import_graph_def(_parse(text), **kwargs)


# ------------------------------------------------------------------------------------------
# Graph -> GraphDef.


def test_node_def_inputs_devices_and_attrs_are_written_as_tensorflow_writes_them():
    g = _sample_graph()
    y = g.get_operation_by_name("y").node_def
    assert list(y.input) == ["x", "c", "^n0", "^n1"]  # controls sorted, as TF does
    assert y.op == "AddV2" and y.attr["T"].type == tf.float32.as_datatype_enum
    sg = g.get_operation_by_name("sg").node_def
    assert list(sg.input) == ["w"]
    bf_out = g.get_operation_by_name("bf_out").node_def
    assert list(bf_out.input) == ["w:2"]
    assert g.get_operation_by_name("w").node_def.device == "/device:CPU:0"
    assert list(g.get_operation_by_name("w").node_def.attr["T"].list.type) == [
        tf.float32.as_datatype_enum, tf.string.as_datatype_enum, tf.bfloat16.as_datatype_enum]
    assert list(g.get_operation_by_name("z").node_def.attr["_class"].list.s) == [b"loc:@y"]
    p_shape = g.get_operation_by_name("p").node_def.attr["shape"].shape
    assert p_shape.unknown_rank
    x_shape = g.get_operation_by_name("x").node_def.attr["shape"].shape
    assert [d.size for d in x_shape.dim] == [-1, 3]


def test_graph_def_versions_from_version_and_add_shapes():
    g = _sample_graph()
    gd = g.as_graph_def()
    assert [n.name for n in gd.node] == [op.name for op in g.get_operations()]
    assert gd.versions == g.graph_def_versions
    assert all("_output_shapes" not in n.attr for n in gd.node)
    version = g.version
    with g.as_default():
        tf.identity(g.get_tensor_by_name("x:0"), name="late")
    assert [n.name for n in g.as_graph_def(from_version=version).node] == ["late"]
    shaped = {n.name: n for n in g.as_graph_def(add_shapes=True).node}
    assert "_output_shapes" not in shaped["n0"].attr  # no outputs, no attr
    (x_shape,) = shaped["x"].attr["_output_shapes"].list.shape
    assert [d.size for d in x_shape.dim] == [-1, 3]
    assert shaped["p"].attr["_output_shapes"].list.shape[0].unknown_rank
    assert len(shaped["w"].attr["_output_shapes"].list.shape) == 3


def test_round_trip_is_lossless_without_and_with_prefix():
    g = _sample_graph()
    gd = g.as_graph_def(add_shapes=True)
    for name, prefix in (("", ""), (None, "import/"), ("pre", "pre/")):
        g2 = tf.Graph()
        with g2.as_default():
            import_graph_def(gd, name=name)
        assert _strip_prefix(g2.as_graph_def(add_shapes=True), prefix) == gd
    g2 = tf.Graph()
    with g2.as_default():
        import_graph_def(gd, name="")
    for op in g.get_operations():
        new = g2.get_operation_by_name(op.name)
        assert [t.shape.as_list() if t.shape.ndims is not None else None
                for t in new.outputs] == [t.shape.as_list() if t.shape.ndims is not None
                                          else None for t in op.outputs]
        # (as a set: a NodeDef lists control inputs sorted by name, as TensorFlow writes them)
        assert {c.name for c in new.control_inputs} == {c.name for c in op.control_inputs}
        assert new.device == op.device


def test_reference_outputs_are_reference_typed_and_import():
    # Barrier's and SparseConditionalAccumulator's handles are `Ref(string)` outputs, as
    # their consumers' inputs are: a GraphDef holding both imports (a master does this).
    g = tf.Graph()
    with g.as_default():
        barrier = tf.Barrier([tf.float32], shapes=[[]])
        barrier.insert_many(0, ["k"], [1.0])
        acc = tf.SparseConditionalAccumulator(tf.float32, shape=[3, 2])
        acc.apply_grad([0], [[1.0, 2.0]])
    assert barrier.barrier_ref.dtype == tf.string._as_ref
    assert acc.accumulator_ref.dtype == tf.string._as_ref
    g2 = tf.Graph()
    with g2.as_default():
        import_graph_def(g.as_graph_def(), name="")
    assert g2.get_operation_by_name(acc.accumulator_ref.op.name).outputs[0].dtype == \
        tf.string._as_ref


def test_import_accepts_nodes_in_any_order_and_runs():
    g = _sample_graph()
    gd = g.as_graph_def()
    shuffled = graph_pb2.GraphDef()
    shuffled.versions.CopyFrom(gd.versions)
    shuffled.node.extend(reversed(gd.node))
    g2 = tf.Graph()
    with g2.as_default():
        k, w2, done = import_graph_def(shuffled, return_elements=["k:0", "w:2", "done"],
                                       name="")
    assert {n.SerializeToString(deterministic=True) for n in g2.as_graph_def().node} == \
        {n.SerializeToString(deterministic=True) for n in gd.node}
    x = g2.get_tensor_by_name("x:0")
    with tf.Session(graph=g2) as sess:
        kv, wv, _ = sess.run([k, w2, done], {x: [[1.0, 1.0, 1.0]]})
    np.testing.assert_allclose(kv, [[3.0, 5.0, 7.0]])
    assert wv.dtype == tf.bfloat16.as_numpy_dtype
    np.testing.assert_array_equal(wv.astype(np.float32), [1.5, -2.0])


# ------------------------------------------------------------------------------------------
# input_map, return_elements, names.


def test_input_map_and_return_elements():
    gd = _sample_graph().as_graph_def()
    g = tf.Graph()
    with g.as_default():
        a = tf.constant([[5.0, 6.0, 7.0]], name="a")
        gate = tf.no_op(name="gate")
        z, y, w1, x_mapped, x_op = import_graph_def(
            gd, input_map={"x": a, "^n0": gate}, return_elements=["z:0", "y", "w:1", "x:0", "x"])
    assert z.name == "import/z:0" and z.shape.as_list() == [1, 3]
    assert y.name == "import/y" and list(y.node_def.input) == [
        "a", "import/c", "^gate", "^import/n1"]
    assert w1.name == "import/w:1" and w1.dtype == tf.string
    assert x_mapped is a  # a mapped tensor comes back as the mapped one
    assert x_op.name == "import/x"  # the mapped node is still imported, unconsumed
    assert g.get_tensor_by_name("import/x:0").consumers() == []
    with tf.Session(graph=g) as sess:
        np.testing.assert_allclose(sess.run(z), [[6.0, 8.0, 10.0]])

    with g.as_default():
        (z2,) = import_graph_def(gd, input_map={"x:0": [[0.0, 0.0, 1.0]]},
                                 return_elements=["z:0"])
        assert import_graph_def(gd, name="none_returned") is None
    assert z2.name == "import_1/z:0"
    assert g.get_operation_by_name("import_1/_inputs/Const").type == "Const"


def test_input_map_and_return_element_errors():
    gd = _parse(_CONST + f'node {{ name: "i" op: "Identity" input: "c" {_T_FLOAT} }}')
    g = tf.Graph()
    with g.as_default():
        a = tf.constant(1.0, name="a")
        n_ops = len(g.get_operations())
        with pytest.raises(ValueError, match=r"Attempted to map inputs that were not found in "
                                             r"graph_def: \[nope:0, c:1, \^zz\]"):
            import_graph_def(gd, input_map={"nope": a, "c:1": a, "c:0": a, "^zz": a})
        with pytest.raises(ValueError, match="Requested return_element 'foo' not found in "
                                             "graph_def."):
            import_graph_def(gd, return_elements=["i", "foo"])
        with pytest.raises(ValueError, match="Requested return_element 'foo:0' not found"):
            import_graph_def(gd, return_elements=["foo:0"])
        with pytest.raises(ValueError, match="Invalid return output 5 of node 'i', which has 1"):
            import_graph_def(gd, return_elements=["i:5"])
        with pytest.raises(ValueError, match="Input 0 of node import_4/i was passed int32 from "
                                             "b:0 incompatible with expected float"):
            import_graph_def(gd, input_map={"c:0": tf.constant(1, name="b")})
        with pytest.raises(ValueError, match="requires a non-empty `name`"):
            import_graph_def(gd, input_map={"c:0": 2.0}, name="")
        with pytest.raises(TypeError, match="must be a dictionary"):
            import_graph_def(gd, input_map=[a])
        with pytest.raises(TypeError, match="keys for argument `input_map` must be strings"):
            import_graph_def(gd, input_map={1: a})
        with pytest.raises(TypeError, match="must be a list of strings"):
            import_graph_def(gd, return_elements=[1])
        with pytest.raises(TypeError, match="must be a GraphDef proto"):
            import_graph_def("not a graph")
    assert len(g.get_operations()) == n_ops + 1  # only the constant "b": nothing imported


def test_mapped_inputs_need_not_exist_and_finalized_graphs_refuse_imports():
    gd = _parse(_IDENT.format(inputs='input: "cut" input: "^gone"', attrs=_T_FLOAT))
    g = tf.Graph()
    with g.as_default():
        a = tf.constant(2.0, name="a")
        (i,) = import_graph_def(gd, input_map={"cut:0": a, "^gone": a}, return_elements=["i"])
    assert [t.name for t in i.inputs] == ["a:0"] and i.control_inputs == [a.op]
    g.finalize()
    with g.as_default(), pytest.raises(RuntimeError, match="finalized"):
        import_graph_def(gd, input_map={"cut:0": a})


def test_names_are_made_unique_in_the_current_name_scope():
    gd = _parse('node { name: "x" op: "NoOp" } node { name: "x_1" op: "NoOp" input: "^x" } '
                'node { name: "y" op: "NoOp" attr { key: "_class" value { list { '
                's: "loc:@x" s: "other" } } } }')
    g = tf.Graph()
    with g.as_default():
        import_graph_def(gd)
        import_graph_def(gd)
        with tf.name_scope("outer"):
            import_graph_def(gd, name="imp")
            import_graph_def(gd, name="imp")
            import_graph_def(gd)
            import_graph_def(gd, name="")  # no prefix, name scope ignored
        import_graph_def(gd, name="a/b/")
        import_graph_def(gd, name="a/b/")  # re-entered scope: clashing names get suffixes
        assert tf.no_op(name="import").name == "import_2"
    names = [op.name for op in g.get_operations()]
    for prefix in ("import/", "import_1/", "outer/imp/", "outer/imp_1/", "outer/import/", "",
                   "a/b/"):
        assert {prefix + "x", prefix + "x_1", prefix + "y"} <= set(names)
    assert {"a/b/x_2", "a/b/x_1_1", "a/b/y_1"} <= set(names)
    y2 = g.get_operation_by_name("a/b/y_1")
    assert y2.get_attr("_class") == [b"loc:@a/b/x_2", b"other"]
    assert [c.name for c in g.get_operation_by_name("a/b/x_1_1").control_inputs] == ["a/b/x_2"]
    assert g.get_operation_by_name("outer/imp/y").get_attr("_class") == [
        b"loc:@outer/imp/x", b"other"]
    with pytest.raises(ValueError, match="not a valid scope name"):
        with g.as_default():
            import_graph_def(gd, name="bad name")


def test_name_clash_with_existing_scope_and_case():
    gd = _parse('node { name: "x" op: "NoOp" }')
    g = tf.Graph()
    with g.as_default():
        with tf.name_scope("x"):
            tf.no_op(name="k")
        (a,) = import_graph_def(gd, return_elements=["x"], name="")
        tf.no_op(name="X")
        g2 = tf.Graph()
    with g2.as_default():
        tf.no_op(name="X")
        (b,) = import_graph_def(gd, return_elements=["x"], name="")
    assert a.name == "x_1"  # "x" is the scope of x/k
    assert b.name == "x"  # names are case-sensitive, as in TensorFlow


def test_extend_graph_keeps_names_that_are_scopes_of_existing_ops():
    # A session's graph extension (the master's ExtendSession): `emb` joins `emb/part_0`
    # under its own name, where import_graph_def(name="") would make it `emb_1`.
    gd = _parse('node { name: "emb" op: "NoOp" input: "^emb/part_0" }')
    g = tf.Graph()
    with g.as_default():
        part = tf.no_op(name="emb/part_0")
        extend_graph(gd, input_map={"^emb/part_0": part})
        assert g.get_operation_by_name("emb").control_inputs == [part]
        with pytest.raises(ValueError, match="'emb' is already in the graph"):
            extend_graph(gd, input_map={"^emb/part_0": part})
    assert [op.name for op in g.get_operations()] == ["emb/part_0", "emb"]


def test_devices_colocation_and_control_dependency_scopes():
    g0 = tf.Graph()
    with g0.as_default():
        x = tf.placeholder(tf.float32, [3], name="x")
        with tf.colocate_with(x):
            tf.identity(x, name="z")
        with tf.device("/job:w/task:1"):
            d = tf.identity(x, name="d")
        with tf.colocate_with(d):
            tf.identity(d, name="e")
    gd = g0.as_graph_def()
    assert gd.node[3].device == "/job:w/task:1"
    g = tf.Graph()
    with g.as_default():
        q = tf.no_op(name="q")
        with tf.device("/gpu:1"), tf.control_dependencies([q]):
            ops = import_graph_def(gd, return_elements=["x", "z", "d", "e"])
    assert [op.device for op in ops] == ["/device:GPU:1", "/device:GPU:1",
                                         "/job:w/task:1/device:GPU:1",
                                         "/job:w/task:1/device:GPU:1"]
    assert all([c.name for c in op.control_inputs] == ["q"] for op in ops)
    g = tf.Graph()
    with g.as_default():
        x_op, e = import_graph_def(gd, return_elements=["x", "e"], name="")
    assert x_op.device == "" and e.device == "/job:w/task:1"


def test_unknown_default_attrs_are_filled_or_stripped():
    # Placeholder without its "shape" attr gets the default (unknown shape).
    g, (p,) = _import_text('node { name: "p" op: "Placeholder" attr { key: "dtype" value { '
                           'type: DT_INT32 } } }', return_elements=["p:0"])
    assert p.shape.ndims is None and p.op.get_attr("shape").unknown_rank
    # An attr TF added later, at its default value, is dropped ...
    extra = 'attr { key: "grad_a" value { b: false } }'
    fake = op_def_pb2.OpList()
    fake.op.add(name="Identity").attr.add(name="grad_a", type="bool").default_value.b = False
    text = _CONST + f'node {{ name: "i" op: "Identity" input: "c" {_T_FLOAT} {extra} }}'
    g, (i,) = _import_text(text, return_elements=["i"], producer_op_list=fake)
    assert "grad_a" not in i.node_def.attr
    # ... with another value, or unknown to the producer's OpDefs, it is an error.
    with pytest.raises(ValueError, match=r"NodeDef mentions attr 'grad_a' not in "
                                         r"Op<name=Identity>; NodeDef: \{\{node import/i\}\}"):
        _import_text(text)
    fake.op[0].attr[0].default_value.b = True
    with pytest.raises(ValueError, match="attr 'grad_a'"):
        _import_text(text, producer_op_list=fake)
    # Private attrs are kept, _output_shapes is recomputed.
    text = _CONST + (f'node {{ name: "i" op: "Identity" input: "c" {_T_FLOAT} '
                     'attr { key: "_has_manual_control_dependencies" value { b: true } } '
                     'attr { key: "_output_shapes" value { list { shape { dim { size: 7 } } '
                     '} } } }')
    g, (i,) = _import_text(text, return_elements=["i"])
    assert i.get_attr("_has_manual_control_dependencies") is True
    assert "_output_shapes" not in i.node_def.attr and i.outputs[0].shape.as_list() == []


# ------------------------------------------------------------------------------------------
# Malformed GraphDefs.

_IDENT = 'node {{ name: "i" op: "Identity" {inputs} {attrs} }}'

_BAD_GRAPHS = [
    ("dangling input", _CONST + _IDENT.format(inputs='input: "nope"', attrs=_T_FLOAT),
     "Node 'i': Unknown input node 'nope'"),
    ("dangling output index", _CONST + _IDENT.format(inputs='input: "c:3"', attrs=_T_FLOAT),
     "Node 'i': Connecting to invalid output 3 of source node c which has 1 outputs"),
    ("dangling control", _CONST + _IDENT.format(inputs='input: "c" input: "^zz"',
                                                attrs=_T_FLOAT),
     r"Node 'i': Unknown input node '\^zz'"),
    ("duplicate", _CONST + _CONST, "Node 'c' is not unique"),
    ("unknown op", _CONST + 'node { name: "f" op: "FooBarOp" input: "c" }',
     "Node 'f': Op type not registered 'FooBarOp'"),
    ("missing attr", _CONST + _IDENT.format(inputs='input: "c"', attrs=""),
     r"NodeDef missing attr 'T' from Op<name=Identity>.*node import/i"),
    ("wrong attr kind", _CONST + _IDENT.format(inputs='input: "c"',
                                               attrs='attr { key: "T" value { i: 3 } }'),
     "AttrValue had value with type 'int' when 'type' expected for attr 'T'"),
    ("too many inputs", _CONST + _IDENT.format(inputs='input: "c" input: "c"', attrs=_T_FLOAT),
     "NodeDef expected inputs 'float' do not match 2 inputs specified"),
    ("no inputs", _CONST + _IDENT.format(inputs="", attrs=_T_FLOAT),
     "NodeDef expected inputs 'float' do not match 0 inputs specified"),
    ("huge number attr", _CONST + 'node { name: "a" op: "AddN" input: "c" input: "c" '  # fuzz
     'attr { key: "N" value { i: 2147483647 } } ' + _T_FLOAT + ' }',
     "NodeDef expected inputs '2147483647 inputs' do not match 2 inputs specified"),
    ("huge output count", _CONST + 'node { name: "u" op: "Unpack" input: "c" '  # found by fuzz
     'attr { key: "num" value { i: 2147483647 } } ' + _T_FLOAT + ' }',
     "Node 'u': attr 'num' asks for 2147483647 outputs, more than the 1048576"),
    ("dtype mismatch", _CONST + _IDENT.format(
        inputs='input: "c"', attrs='attr { key: "T" value { type: DT_INT32 } }'),
     "Input 0 of node import/i was passed float from import/c:0 incompatible with expected "
     "int32"),
    ("control before data", _CONST + _IDENT.format(inputs='input: "^c" input: "c"',
                                                   attrs=_T_FLOAT),
     "Control dependencies must come after regular dependencies"),
    ("bad name", 'node { name: "a b" op: "NoOp" }', "Node name contains invalid characters"),
    ("cycle", _CONST + 'node { name: "a" op: "AddV2" input: "c" input: "b" ' + _T_FLOAT + ' } '
     'node { name: "b" op: "Identity" input: "a" ' + _T_FLOAT + ' }', "2 nodes in a cycle"),
    ("unknown colocation", _CONST + _IDENT.format(
        inputs='input: "c"',
        attrs=_T_FLOAT + ' attr { key: "_class" value { list { s: "loc:@nothere" } } }'),
     "Node 'i' expects to be colocated with unknown node 'nothere'"),
    ("colocation not strings", _CONST + _IDENT.format(  # found by tests/fuzz
        inputs='input: "c"', attrs=_T_FLOAT + ' attr { key: "_class" value { list { i: 0 } } }'),
     "AttrValue had value with type 'list\\(int\\)' when 'list\\(string\\)' expected for "
     "attr '_class'"),
    ("min consumer", 'node { name: "x" op: "NoOp" } versions { producer: 5 min_consumer: 99999 }',
     "GraphDef min consumer version 99999 above current version"),
    ("bad consumer", 'node { name: "x" op: "NoOp" } versions { producer: 5 bad_consumers: 1205 }',
     "GraphDef disallows consumer version 1205"),
    ("gradient library", 'library { gradient { function_name: "fn" gradient_func: "g" } }',
     "function library with gradients"),
]


@pytest.mark.parametrize("text, message", [c[1:] for c in _BAD_GRAPHS],
                         ids=[c[0] for c in _BAD_GRAPHS])
def test_malformed_graph_defs_raise_and_leave_the_graph_unchanged(text, message):
    g = tf.Graph()
    with g.as_default():
        tf.constant(0.0, name="before")
        if "1205" in text:
            text = text.replace("1205", str(g.graph_def_versions.producer))
        with pytest.raises(ValueError, match=message):
            import_graph_def(_parse(text))
    assert [op.name for op in g.get_operations()] == ["before"]


def test_failure_while_creating_ops_rolls_back():
    gd = _parse(_CONST.replace("tensor_shape {}", "tensor_shape { dim { size: 3 } }")
                + 'node { name: "a" op: "AddV2" input: "c" input: "x" ' + _T_FLOAT + ' } '
                'node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT '
                '} } }')
    g = tf.Graph()
    with g.as_default():
        bad = tf.constant([1.0, 2.0], name="bad")
        with pytest.raises(ValueError, match="Dimensions must be equal"):
            import_graph_def(gd, input_map={"x:0": bad}, name="")
        assert [op.name for op in g.get_operations()] == ["bad"]
        assert bad.consumers() == []
        assert tf.no_op(name="c").name == "c"  # the name was freed again
        (a,) = import_graph_def(gd, input_map={"x:0": tf.constant([1.0, 2.0, 3.0])},
                                return_elements=["a:0"])
    assert a.shape.as_list() == [3]


# ------------------------------------------------------------------------------------------
# While-loop back edges (NextIteration -> Merge).


def test_back_edges_are_patched_after_creation():
    text = (_CONST
            + 'node { name: "m" op: "Merge" input: "c" input: "ni" ' + _T_FLOAT
            + ' attr { key: "N" value { i: 2 } } } '
            + 'node { name: "a" op: "AddV2" input: "m" input: "c" ' + _T_FLOAT + ' } '
            + 'node { name: "ni" op: "NextIteration" input: "a" ' + _T_FLOAT + ' } ')
    gd = _parse(text)
    g = tf.Graph()
    with g.as_default():
        m, ni = import_graph_def(gd, return_elements=["m", "ni"], name="")
    assert [t.name for t in m.inputs] == ["c:0", "ni:0"]
    assert ni.outputs[0].consumers() == [m]
    assert [op.name for op in g.get_operations()] == ["c", "m", "a", "ni"]
    out = g.as_graph_def()
    assert [n.SerializeToString(deterministic=True) for n in out.node] == [
        n.SerializeToString(deterministic=True) for n in gd.node]
    # The same loop closed through Identity instead of NextIteration is a plain cycle.
    with g.as_default(), pytest.raises(ValueError, match="3 nodes in a cycle"):
        import_graph_def(_parse(text.replace('"NextIteration"', '"Identity"')))


# ------------------------------------------------------------------------------------------
# write_graph.


def test_write_graph_text_and_binary(tmp_path):
    g = _sample_graph()
    logdir = tmp_path / "a" / "b"
    path = write_graph(g, str(logdir), "graph.pbtxt")
    assert path == os.path.join(str(logdir), "graph.pbtxt")
    with open(path) as f:
        assert _parse(f.read()) == g.as_graph_def()
    path = write_graph(g.as_graph_def(), logdir, "graph.pb", as_text=False)
    with open(path, "rb") as f:
        assert graph_pb2.GraphDef.FromString(f.read()) == g.as_graph_def()
    assert sorted(os.listdir(logdir)) == ["graph.pb", "graph.pbtxt"]  # no temp files left
    mode = stat.S_IMODE(os.stat(path).st_mode)
    umask = os.umask(0)
    os.umask(umask)
    assert mode == 0o666 & ~umask
    with pytest.raises(TypeError):
        write_graph(42, str(logdir), "x")


# ------------------------------------------------------------------------------------------
# Against TensorFlow: one subprocess does both directions.

_ORACLE = """
gd_ours = tf.GraphDef.FromString(base64.b64decode(OURS))
g = tf.Graph()
with g.as_default():
    tf.import_graph_def(gd_ours, name="")
with tf.Session(graph=g) as sess:
    ours_vals = sess.run(["k:0", "w:1", "bf_out:0", "pp:0", "h:0", "bl:0", "sc:0"],
                         {"x:0": [[1.0, 2.0, 3.0]], "p:0": [[10, 20], [30, 40]]})
    sess.run("done", {"x:0": [[1.0, 2.0, 3.0]], "p:0": 1})
ours_reexported = g.as_graph_def().SerializeToString()

g = tf.Graph()
with g.as_default():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    c = tf.constant([[10.0, 20.0]], name="c")
    n0 = tf.no_op(name="n0")
    with tf.control_dependencies([n0]):
        y = tf.add(x, c, name="y")
    z = tf.identity(y, name="z")
    with tf.colocate_with(z):
        zz = tf.identity(z, name="zz")
    idn = tf.identity_n([zz, c], name="idn")
    sg = tf.stop_gradient(idn[1], name="sg")
    d = tf.constant([1, 2, 3], tf.int64, name="d")
    pwd = tf.placeholder_with_default(d, [None], name="pwd")
    s = tf.constant([b"x", b"yz"], name="s")
    sid = tf.identity(s, name="sid")
    y2 = x + 1.0
    with tf.device("/cpu:0"), tf.control_dependencies([y2.op, sid.op]):
        fin = tf.no_op(name="fin")
theirs = g.as_graph_def().SerializeToString()
with tf.Session(graph=g) as sess:
    tv = sess.run(["zz:0", "idn:1", "sg:0", "pwd:0", "sid:0", "add:0"],
                  {"x:0": [[1.0, 2.0], [3.0, 4.0]]})
    sess.run("fin", {"x:0": [[1.0, 2.0], [3.0, 4.0]]})
result = {
    "ours_vals": [ours_vals[0], [bytes(v) for v in ours_vals[1]],
                  ours_vals[2].astype(np.float32)] + ours_vals[3:],
    "ours_reexported": ours_reexported,
    "theirs": theirs,
    "their_vals": tv[:4] + [[bytes(v) for v in tv[4]]] + tv[5:],
}
"""


@pytest.fixture(scope="module")
def oracle():
    ours = _sample_graph().as_graph_def().SerializeToString()
    code = f"OURS = {base64.b64encode(ours).decode()!r}\n" + _ORACLE
    return {"ours": ours, **run_tf(code)}


@pytest.mark.oracle
def test_tensorflow_imports_and_runs_our_graph_def(oracle):
    k, w1, bf_out, pp, h, bl, sc = oracle["ours_vals"]
    np.testing.assert_allclose(k, [[3.0, 6.0, 9.0]])
    assert w1 == [b"a", b"bc", b""]
    np.testing.assert_array_equal(bf_out, [1.5, -2.0])
    np.testing.assert_array_equal(pp, [[11, 22], [33, 44]])
    assert h == 0.5 and list(bl) == [True, False] and sc == 7
    # TensorFlow reads every node back exactly as we wrote it.
    ours = graph_pb2.GraphDef.FromString(oracle["ours"])
    back = graph_pb2.GraphDef.FromString(oracle["ours_reexported"])
    assert list(back.node) == list(ours.node)


@pytest.mark.oracle
def test_graph_def_written_by_tensorflow_imports_and_runs(oracle):
    theirs = graph_pb2.GraphDef.FromString(oracle["theirs"])
    assert {n.op for n in theirs.node} == {"Placeholder", "Const", "NoOp", "AddV2", "Identity",
                                           "IdentityN", "StopGradient",
                                           "PlaceholderWithDefault"}
    g = tf.Graph()
    with g.as_default():
        import_graph_def(theirs, name="")
    # Our export of the imported graph is TensorFlow's GraphDef, node for node.
    assert list(g.as_graph_def().node) == list(theirs.node)
    assert g.get_operation_by_name("zz").get_attr("_class") == [b"loc:@z"]
    assert g.get_operation_by_name("fin").device == "/device:CPU:0"
    feed = {g.get_tensor_by_name("x:0"): [[1.0, 2.0], [3.0, 4.0]]}
    with tf.Session(graph=g) as sess:
        ours = sess.run(["zz:0", "idn:1", "sg:0", "pwd:0", "sid:0", "add:0"], feed)
        sess.run("fin", feed)
    want = oracle["their_vals"]
    for got, expected in zip(ours[:4] + ours[5:], want[:4] + want[5:], strict=True):
        np.testing.assert_allclose(got, expected)
    assert list(ours[4]) == want[4]
