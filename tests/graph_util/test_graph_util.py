"""tf.graph_util: freezing variables into constants, pruning, and the tensorflux-freeze
command; against TensorFlow where it can say (one subprocess for the module)."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tomllib

import tensorflux as tf
from tensorflux import freeze_cli
from tensorflux.protos import graph_pb2, node_def_pb2, types_pb2
from tests.oracle import run_tf

gu = tf.graph_util
X = np.array([[1.0, -2.0, 0.5], [0.25, 1.0, -1.0]], np.float32)
W = np.array([[0.5, -1.0], [1.5, 0.25], [-0.75, 2.0]], np.float32)
B = np.array([0.1, -0.2], np.float32)
EMB = np.arange(12, dtype=np.float32).reshape(4, 3)


def _build():
    """x -> check_numerics(identity(x W)) + b -> relu -> y, plus an embedding lookup `e`
    and an unrelated variable; returns the fetchable names."""
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    w = tf.Variable(W, name="w")
    b = tf.get_variable("b", initializer=B)
    tf.Variable(np.ones(5, np.float32), name="unused")
    h = tf.identity(tf.matmul(x, w), name="h")
    h = tf.check_numerics(h, "bad", name="chk")
    tf.nn.relu(h + b, name="y")
    ids = tf.placeholder(tf.int32, [None], name="ids")
    emb = tf.get_variable("emb", initializer=EMB)
    tf.identity(tf.nn.embedding_lookup(emb, ids), name="e")


def _session():
    g = tf.Graph()
    with g.as_default():
        _build()
    sess = tf.Session(graph=g)
    with g.as_default():
        sess.run(tf.global_variables_initializer())
    return sess


def _run_graph_def(graph_def, fetches, feed):
    with tf.Graph().as_default() as g:
        tf.import_graph_def(graph_def, name="")
        with tf.Session(graph=g) as sess:
            return sess.run(fetches, feed)


def _expected_y():
    return np.maximum(X @ W + B, 0)


def test_convert_variables_to_constants_runs_without_variables():
    with _session() as sess:
        gd = sess.graph.as_graph_def()
        frozen = gu.convert_variables_to_constants(sess, gd, ["y", "e"])
    ops = {n.name: n.op for n in frozen.node}
    assert ops["w"] == "Const" and ops["b"] == "Const" and ops["emb"] == "Const"
    assert "unused" not in ops  # only what the outputs need
    assert not {"VarHandleOp", "ReadVariableOp", "ResourceGather", "VariableV2"} & \
        set(ops.values())
    y, e = _run_graph_def(frozen, ["y:0", "e:0"], {"x:0": X, "ids:0": [3, 0]})
    np.testing.assert_allclose(y, _expected_y(), rtol=1e-6)
    np.testing.assert_array_equal(e, EMB[[3, 0]])
    gathers = [n for n in frozen.node if n.op == "GatherV2"]
    assert gathers and gathers[0].input[2].endswith("/axis")


def test_allow_and_deny_lists():
    with _session() as sess:
        gd = sess.graph.as_graph_def()
        only_w = gu.convert_variables_to_constants(sess, gd, ["y"],
                                                   variable_names_whitelist=["w"])
        not_w = gu.convert_variables_to_constants(sess, gd, ["y"],
                                                  variable_names_blacklist=["w"])
    assert {n.name: n.op for n in only_w.node}["b"] == "VarHandleOp"
    assert {n.name: n.op for n in not_w.node}["w"] == "VarHandleOp"
    assert {n.name: n.op for n in not_w.node}["b"] == "Const"
    assert any(n.op == "ReadVariableOp" for n in not_w.node)


def test_uninitialized_variable_and_bad_names():
    g = tf.Graph()
    with g.as_default():
        _build()
    with tf.Session(graph=g) as sess:
        gd = g.as_graph_def()
        with pytest.raises(tf.errors.FailedPreconditionError):
            gu.convert_variables_to_constants(sess, gd, ["y"])
        with pytest.raises(AssertionError, match="nope is not in graph"):
            gu.convert_variables_to_constants(sess, gd, ["nope"])
    with pytest.raises(TypeError, match="iterable of strings"):
        gu.extract_sub_graph(gd, "y")
    with pytest.raises(TypeError, match="GraphDef"):
        gu.extract_sub_graph(b"not a graph", ["y"])


def test_extract_sub_graph_keeps_order_control_inputs_library_and_versions():
    gd = graph_pb2.GraphDef()
    gd.versions.producer = 27
    for name, inputs in (("a", []), ("b", []), ("c", ["a:0"]), ("d", ["c", "^b"]),
                         ("e", ["a"])):
        gd.node.add(name=name, op="NoOp", input=inputs)
    out = gu.extract_sub_graph(gd, ["d:0"])
    assert [n.name for n in out.node] == ["a", "b", "c", "d"]
    assert out.versions.producer == 27


def test_remove_training_nodes_splices_identity_and_check_numerics():
    with _session() as sess:
        frozen = gu.convert_variables_to_constants(sess, sess.graph.as_graph_def(), ["y"])
    slim = gu.remove_training_nodes(frozen, protected_nodes=["y"])
    assert not {"Identity", "CheckNumerics"} & {n.op for n in slim.node}
    np.testing.assert_allclose(_run_graph_def(slim, "y:0", {"x:0": X}), _expected_y(),
                               rtol=1e-6)
    kept = gu.remove_training_nodes(frozen, protected_nodes=["h"])
    assert "h" in {n.name for n in kept.node}


def test_remove_training_nodes_keeps_identities_with_control_edges():
    gd = graph_pb2.GraphDef()
    gd.node.add(name="a", op="Const")
    gd.node.add(name="i1", op="Identity", input=["a"])
    gd.node.add(name="i2", op="Identity", input=["a", "^i1"])  # has a control input
    gd.node.add(name="i3", op="Identity", input=["a"])
    gd.node.add(name="z", op="AddN", input=["i2", "i3", "^i3"])  # i3 is a control input
    out = {n.name: list(n.input) for n in gu.remove_training_nodes(gd).node}
    assert out == {"a": [], "i1": ["a"], "i2": ["a", "^i1"], "i3": ["a"],
                   "z": ["i2", "i3", "^i3"]}


def test_must_run_on_cpu_and_tensor_shape():
    def node(op, **types):
        n = node_def_pb2.NodeDef(name="n", op=op)
        for key, value in types.items():
            n.attr[key].type = value
        return n

    assert gu.must_run_on_cpu(node("Const", dtype=types_pb2.DT_INT32))
    assert gu.must_run_on_cpu(node("Const", dtype=types_pb2.DT_STRING))
    assert not gu.must_run_on_cpu(node("Const", dtype=types_pb2.DT_FLOAT))
    assert gu.must_run_on_cpu(node("Cast", SrcT=types_pb2.DT_INT32))
    assert gu.must_run_on_cpu(node("DynamicStitch", T=types_pb2.DT_INT32))
    assert not gu.must_run_on_cpu(node("VariableV2"))
    assert gu.must_run_on_cpu(node("VariableV2"), pin_variables_on_cpu=True)
    with tf.Graph().as_default() as g:
        c = tf.constant(1, name="c")
        assert gu.must_run_on_cpu(c.op)
        tf.placeholder(tf.float32, [None, 3], name="x")
        assert gu.tensor_shape_from_node_def_name(g, "x").as_list() == [None, 3]
        assert gu.tensor_shape_from_node_def_name(g, "x:0").as_list() == [None, 3]
    assert tf.compat.v1.graph_util.import_graph_def is tf.import_graph_def


# ---- tensorflux-freeze -------------------------------------------------------------------


def _saved_model(tmp_path):
    export_dir = str(tmp_path / "sm")
    with _session() as sess, sess.graph.as_default():
        g = sess.graph
        tf.saved_model.simple_save(sess, export_dir, {"x": g.get_tensor_by_name("x:0")},
                                   {"y": g.get_tensor_by_name("y:0")})
    return export_dir


def test_freeze_cli_from_saved_model(tmp_path, capsys):
    out = str(tmp_path / "frozen.pb")
    rc = freeze_cli.main(["--input_saved_model_dir", _saved_model(tmp_path),
                          "--output_node_names", "y", "--output_graph", out])
    assert rc == 0 and "Wrote" in capsys.readouterr().out
    frozen = graph_pb2.GraphDef.FromString(open(out, "rb").read())
    assert all(not n.device for n in frozen.node)
    np.testing.assert_allclose(_run_graph_def(frozen, "y:0", {"x:0": X}), _expected_y(),
                               rtol=1e-6)


def test_freeze_cli_from_graph_and_checkpoint(tmp_path):
    with _session() as sess, sess.graph.as_default():
        prefix = tf.train.Saver().save(sess, str(tmp_path / "model.ckpt"), global_step=3)
        tf.train.write_graph(sess.graph, str(tmp_path), "graph.pbtxt", as_text=True)
    out = str(tmp_path / "frozen.pb")
    rc = freeze_cli.main(["--input_graph", str(tmp_path / "graph.pbtxt"),
                          "--input_checkpoint", prefix, "--output_node_names", "y,e",
                          "--output_graph", out, "--optimize_for_inference",
                          "--input_node_names", "x,ids"])
    assert rc == 0
    frozen = graph_pb2.GraphDef.FromString(open(out, "rb").read())
    assert "CheckNumerics" not in {n.op for n in frozen.node}
    y, e = _run_graph_def(frozen, ["y:0", "e:0"], {"x:0": X, "ids:0": [1]})
    np.testing.assert_allclose(y, _expected_y(), rtol=1e-6)
    np.testing.assert_array_equal(e, EMB[[1]])


def test_freeze_cli_from_meta_graph_and_checkpoint(tmp_path):
    with _session() as sess, sess.graph.as_default():
        prefix = tf.train.Saver().save(sess, str(tmp_path / "model.ckpt"))
    out = str(tmp_path / "frozen.pb")
    assert freeze_cli.main(["--input_meta_graph", prefix + ".meta", "--input_checkpoint",
                            prefix, "--output_node_names", "y", "--output_graph", out,
                            "--variable_names_blacklist", "b"]) == 0
    frozen = graph_pb2.GraphDef.FromString(open(out, "rb").read())
    assert {n.name: n.op for n in frozen.node}["w"] == "Const"
    assert {n.name: n.op for n in frozen.node}["b"] == "VarHandleOp"  # kept: deny list
    assert freeze_cli.main(["--input_meta_graph", prefix + ".meta", "--output_node_names",
                            "y", "--output_graph", out]) == 2  # needs the checkpoint


def test_freeze_cli_bad_input(tmp_path, capsys):
    out = str(tmp_path / "f.pb")
    assert freeze_cli.main(["--output_node_names", "y", "--output_graph", out]) == 2
    assert "is required" in capsys.readouterr().err
    assert freeze_cli.main(["--input_saved_model_dir", str(tmp_path), "--output_node_names",
                            "y", "--output_graph", out]) == 1
    assert "SavedModel file does not exist" in capsys.readouterr().err
    bad = tmp_path / "bad.pb"
    bad.write_bytes(b"\xff\x00 not a graph")
    assert freeze_cli.main(["--input_graph", str(bad), "--output_node_names", "y",
                            "--output_graph", out]) == 1
    assert "Cannot parse file" in capsys.readouterr().err
    assert freeze_cli.main(["--input_saved_model_dir", _saved_model(tmp_path),
                            "--output_node_names", "nope", "--output_graph", out]) == 1
    assert "nope is not in graph" in capsys.readouterr().err
    assert freeze_cli.main(["--output_graph", out]) == 2  # argparse: a required flag


def test_freeze_is_a_console_command():
    proc = subprocess.run([sys.executable, "-m", "tensorflux.freeze_cli", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "--input_saved_model_dir" in proc.stdout
    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["tensorflux-freeze"] == "tensorflux.freeze_cli:main"


# ---- with TensorFlow -------------------------------------------------------------------------

_TF_SIDE = """
from tensorflow.core.framework import graph_pb2
cfg = json.loads(CFG)
out = {}
def graph(b64):
    return graph_pb2.GraphDef.FromString(base64.b64decode(b64))
def run(gd, fetches, feed):
    with tf.Graph().as_default() as g:
        tf.import_graph_def(gd, name="")
        with tf.Session(graph=g) as sess:
            return sess.run(fetches, feed)
x = np.array(cfg["x"], np.float32)
out["ours_frozen"] = run(graph(cfg["frozen"]), ["y:0", "e:0"], {"x:0": x, "ids:0": [3, 0]})
out["ours_slim"] = run(graph(cfg["slim"]), "y:0", {"x:0": x})
plain = graph(cfg["plain"])
out["extract"] = [n.name for n in tf.graph_util.extract_sub_graph(plain, ["y"]).node]
out["remove"] = [[n.name, list(n.input)] for n in
                 tf.graph_util.remove_training_nodes(plain, protected_nodes=["y"]).node]
out["cpu"] = [tf.graph_util.must_run_on_cpu(n) for n in plain.node]
# TensorFlow freezes ref and resource variables; tensorflux runs the result.
with tf.Graph().as_default() as g, tf.Session() as sess:
    xp = tf.placeholder(tf.float32, [None, 3], name="x")
    w = tf.Variable(np.array(cfg["w"], np.float32), name="w")
    b = tf.get_variable("b", initializer=np.array(cfg["b"], np.float32), use_resource=True)
    tf.nn.relu(tf.matmul(xp, w) + b, name="y")
    sess.run(tf.global_variables_initializer())
    frozen = tf.graph_util.convert_variables_to_constants(sess, g.as_graph_def(), ["y"])
    out["tf_frozen"] = frozen.SerializeToString()
    out["tf_y"] = sess.run("y:0", {xp: x})
result = out
"""


@pytest.fixture(scope="module")
def tf_side():
    with _session() as sess:
        gd = sess.graph.as_graph_def()
        frozen = gu.convert_variables_to_constants(sess, gd, ["y", "e"])
    slim = gu.remove_training_nodes(frozen, protected_nodes=["y"])
    # A graph without CheckNumerics, where TensorFlow's remove_training_nodes is exact.
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        c = tf.constant(np.ones([3, 2], np.float32), name="c")
        with tf.control_dependencies([tf.no_op(name="dep")]):
            h = tf.identity(tf.matmul(x, c), name="h")
        k = tf.identity(tf.constant(3, name="i"), name="k")
        tf.add(tf.identity(h, name="h2"), tf.cast(k, tf.float32), name="y")
        tf.constant("s", name="str")
    plain = g.as_graph_def()

    def b64(gd):
        return base64.b64encode(gd.SerializeToString()).decode()

    cfg = {"frozen": b64(frozen), "slim": b64(slim), "plain": b64(plain), "x": X.tolist(),
           "w": W.tolist(), "b": B.tolist()}
    return plain, run_tf(f"CFG = {json.dumps(json.dumps(cfg))}\n" + _TF_SIDE, timeout=180)


@pytest.mark.oracle
def test_tensorflow_runs_our_frozen_graphs(tf_side):
    _, theirs = tf_side
    y, e = theirs["ours_frozen"]
    np.testing.assert_allclose(y, _expected_y(), rtol=1e-6)
    np.testing.assert_array_equal(e, EMB[[3, 0]])
    np.testing.assert_allclose(theirs["ours_slim"], _expected_y(), rtol=1e-6)


@pytest.mark.oracle
def test_pruning_matches_tensorflow(tf_side):
    plain, theirs = tf_side
    assert [n.name for n in gu.extract_sub_graph(plain, ["y"]).node] == theirs["extract"]
    ours = [[n.name, list(n.input)] for n in
            gu.remove_training_nodes(plain, protected_nodes=["y"]).node]
    assert ours == theirs["remove"]
    assert [gu.must_run_on_cpu(n) for n in plain.node] == theirs["cpu"]


@pytest.mark.oracle
def test_we_run_tensorflows_frozen_graph(tf_side):
    _, theirs = tf_side
    frozen = graph_pb2.GraphDef.FromString(theirs["tf_frozen"])
    assert {n.name: n.op for n in frozen.node}["b"] == "Const"
    np.testing.assert_allclose(_run_graph_def(frozen, "y:0", {"x:0": X}), theirs["tf_y"],
                               rtol=1e-6)
    np.testing.assert_allclose(theirs["tf_y"], _expected_y(), rtol=1e-6)
