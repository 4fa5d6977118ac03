"""Graph construction: names, scopes, control dependencies, devices, collections, errors.

Expected names and devices were read off TensorFlow 2.21 (tf.compat.v1) for the same
programs (see tests/oracle.py); the oracle test at the bottom re-checks them live.
"""

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework.op_def_library import apply_op
from tests.oracle import run_tf

PROGRAM = """
a = tf.constant(1.0, name="a")
b = tf.constant(2.0, name="a")
with tf.name_scope("s"):
    c = tf.identity(a)
    with tf.name_scope("t"):
        d = tf.identity(a, name="x")
with tf.name_scope("s"):
    e = tf.identity(a)
with tf.name_scope("s/"):
    f = tf.identity(a)
A = tf.constant(3.0, name="A")
with tf.control_dependencies([a]):
    h = tf.identity(b)
    with tf.control_dependencies([b]):
        i = tf.identity(b)
    with tf.control_dependencies(None):
        j = tf.identity(b)
with tf.device("/cpu:0"):
    k = tf.identity(a)
    with tf.device("/job:ps"):
        l = tf.identity(a)
    with tf.device(None):
        m = tf.identity(a)
with tf.colocate_with(a):
    n = tf.identity(b)
facts = {
    "names": [x.name for x in [a, b, c, d, e, f, A]],
    "ctrl": [[o.name for o in x.op.control_inputs] for x in [h, i, j]],
    "dev": [x.device for x in [k, l, m, n]],
    "class": [x.decode() for x in n.op.get_attr("_class")],
}
"""

EXPECTED = {
    "names": ["a:0", "a_1:0", "s/Identity:0", "s/t/x:0", "s_1/Identity:0", "s/Identity_1:0",
              "A_2:0"],
    "ctrl": [["a"], ["a"], []],
    "dev": ["/device:CPU:0", "/job:ps/device:CPU:0", "", ""],
    "class": ["loc:@a"],
}


def _run_program():
    g = tf.Graph()
    env = {"tf": tf}
    with g.as_default():
        exec(PROGRAM, env)
    return env["facts"]


def test_names_scopes_control_deps_devices():
    assert _run_program() == EXPECTED


@pytest.mark.oracle
def test_program_matches_tensorflow():
    facts = run_tf("g = tf.Graph()\nwith g.as_default():\n" +
                   "\n".join("    " + line for line in PROGRAM.splitlines()) +
                   "\nresult = facts")
    assert facts == EXPECTED


def test_default_graph_stack_and_lookup():
    g = tf.Graph()
    with g.as_default() as g2:
        assert g2 is g and tf.get_default_graph() is g
        c = tf.constant([1, 2], name="c")
    assert tf.get_default_graph() is not g
    assert g.get_operation_by_name("c") is c.op
    assert g.get_tensor_by_name("c:0") is c
    assert c.op.outputs == (c,) and c.value_index == 0 and c.graph is g
    with pytest.raises(KeyError, match="does not exist"):
        g.get_tensor_by_name("c:1")
    with pytest.raises(KeyError, match="not in the graph"):
        g.get_operation_by_name("nope")
    with pytest.raises(ValueError, match="refers to an Operation"):
        g.get_tensor_by_name("c")
    with pytest.raises(TypeError):
        g.get_operation_by_name(3)


def test_consumers_shapes_and_dtype():
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.float32, [None, 3], name="p")
        q = tf.identity(p)
        r = tf.identity(p)
    assert set(p.consumers()) == {q.op, r.op}
    assert p.shape.as_list() == [None, 3] and p.dtype == tf.float32
    q.set_shape([5, None])
    assert q.shape.as_list() == [5, 3]  # merged with the known (?, 3)
    with pytest.raises(ValueError):
        r.set_shape([2, 4])
    assert str(p) == 'Tensor("p:0", shape=(?, 3), dtype=float32)'
    assert repr(p) == "<tf.Tensor 'p:0' shape=(?, 3) dtype=float32>"


def test_tensor_python_protocols():
    g = tf.Graph()
    with g.as_default():
        c = tf.constant([1.0, 2.0])
    with pytest.raises(TypeError, match="Python `bool`"):
        bool(c)
    with pytest.raises(TypeError, match="iterable"):
        iter(c)
    with pytest.raises(TypeError, match="len is not well defined"):
        len(c)
    with g.as_default():
        other = tf.constant([1.0, 2.0])
    assert c == c and c != other  # TF1 tensors compare by identity
    assert len({c, other}) == 2


def test_collections_and_finalize():
    g = tf.Graph()
    with g.as_default():
        a = tf.constant(1.0, name="layer1/w")
        b = tf.constant(2.0, name="layer2/w")
        tf.add_to_collection("weights", a)
        tf.add_to_collections(["weights", "other"], b)
        assert tf.get_collection("weights") == [a, b]
        assert tf.get_collection("weights", scope="layer2") == [b]
        ref = tf.get_collection_ref("weights")
        ref.append("x")
        assert g.get_collection("weights")[-1] == "x"
        assert sorted(g.get_all_collection_keys()) == ["other", "weights"]
    g.finalize()
    assert g.finalized
    with g.as_default(), pytest.raises(RuntimeError, match="finalized"):
        tf.constant(3.0)


def test_device_function_and_merge():
    g = tf.Graph()
    calls = []

    def dev_fn(op):
        calls.append(op.type)
        return "/device:CPU:0" if op.type == "Const" else ""

    with g.as_default():
        with tf.device(dev_fn):
            c = tf.constant(1.0)
            i = tf.identity(c)
        with tf.device("/job:worker/task:1"), tf.device("/device:CPU:2"):
            j = tf.identity(c)
    assert c.device == "/device:CPU:0" and i.device == ""
    assert j.device == "/job:worker/task:1/device:CPU:2"
    assert calls == ["Const", "Identity"]


def test_name_scope_function_and_invalid_names():
    g = tf.Graph()
    with g.as_default():
        with tf.name_scope(None, "default", []) as scope:
            assert scope == "default/"
            x = tf.constant(1, name="x")
        assert x.op.name == "default/x"
        with pytest.raises(ValueError):
            with tf.name_scope("bad name!"):
                pass
        with pytest.raises(ValueError):
            tf.constant(1, name="bad name!")


def test_op_attrs_node_def_and_repr():
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.float32, [2, None], name="p")
    op = p.op
    assert op.get_attr("dtype") == tf.float32
    shape = op.get_attr("shape")
    assert [d.size for d in shape.dim] == [2, -1]
    with pytest.raises(ValueError, match="no attr named"):
        op.get_attr("nope")
    nd = op.node_def
    assert nd.name == "p" and nd.op == "Placeholder"
    assert repr(op).startswith("p = Placeholder[dtype=float32")


def test_tensor_from_another_graph_is_rejected():
    g1, g2 = tf.Graph(), tf.Graph()
    with g1.as_default():
        a = tf.constant(1.0)
    with g2.as_default():
        b = tf.constant(2.0)
        with pytest.raises(ValueError, match="same graph"):
            tf.add(a, b)


def test_create_op_low_level():
    g = tf.Graph()
    with g.as_default():
        c = tf.constant(np.float32(2.0))
        op = g.create_op("Identity", [c], [tf.float32], name="ident")
    assert op.name == "ident" and op.outputs[0].dtype == tf.float32
    assert op.get_attr("T") == tf.float32
    with tf.Session(graph=g) as s:
        assert s.run(op.outputs[0]) == 2.0


def test_unknown_attr_and_wrong_dtype_rejected():
    g = tf.Graph()
    with g.as_default():
        i = tf.constant(1)
        f = tf.constant(1.0)
        with pytest.raises(TypeError, match="does not match"):
            tf.add(i, f)
        with pytest.raises(TypeError, match="unexpected keyword"):
            apply_op("Identity", input=f, bogus=1)
        with pytest.raises(ValueError, match="not in Op"):
            g.create_op("Identity", [f], attrs={"T": tf.float32, "bogus": 1})
