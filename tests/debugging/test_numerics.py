"""`tf.add_check_numerics_ops` and `tf.verify_tensor_all_finite`
(tensorflux/debugging/numerics.py). The expected node names, messages and control inputs
are what TensorFlow 2.21 builds for the same graphs."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning:tensorflux.kernels.cpu")


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


def _checks(g):
    return [(op.name, op.get_attr("message").decode(), [c.name for c in op.control_inputs])
            for op in g.get_operations() if op.type == "CheckNumerics"]


def test_every_float_output_is_checked_in_graph_order(fresh_graph):
    x = tf.placeholder(tf.float32, [3], name="x")
    n = tf.placeholder(tf.int32, [], name="n")
    y = tf.log(x)
    z = tf.sqrt(y) * 2.0
    _ = tf.cast(n, tf.float64) + 1
    group = tf.add_check_numerics_ops()
    assert (group.type, group.name) == ("NoOp", "group_deps")
    assert _checks(fresh_graph) == [
        ("CheckNumerics", "x:0", []),
        ("CheckNumerics_1", "Log:0", ["CheckNumerics"]),
        ("CheckNumerics_2", "Sqrt:0", ["CheckNumerics_1"]),
        ("CheckNumerics_3", "mul/y:0", ["CheckNumerics_2"]),
        ("CheckNumerics_4", "mul:0", ["CheckNumerics_3"]),
        ("CheckNumerics_5", "Cast:0", ["CheckNumerics_4"]),
        ("CheckNumerics_6", "add/y:0", ["CheckNumerics_5"]),
        ("CheckNumerics_7", "add:0", ["CheckNumerics_6"]),
    ]
    assert [c.name for c in group.control_inputs] == ["CheckNumerics_7"]
    with tf.Session() as s:
        np.testing.assert_allclose(s.run(z, {x: [-1.0, 1.0, 2.0]})[1:],
                                   [0.0, 2 * np.sqrt(np.log(2.0))], rtol=1e-6)
        s.run(group, {x: [1.0, 2.0, 3.0], n: 1})
        # Log makes the first NaN (and Sqrt propagates it): the error names Log.
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Log:0 : Tensor had NaN values") as e:
            s.run([z, group], {x: [-1.0, 1.0, 2.0], n: 1})
        assert "CheckNumerics_1" in e.value.message
        with pytest.raises(tf.errors.InvalidArgumentError, match="Log:0 : Tensor had Inf"):
            s.run(group, {x: [0.0, 1.0, 2.0], n: 1})


def test_the_first_bad_op_is_named_whatever_the_schedule(fresh_graph):
    x = tf.placeholder(tf.float32, [4], name="x")
    branches = [tf.identity(x * float(i), name=f"b{i}") for i in range(6)]
    bad = tf.div(branches[2], branches[0], name="bad")  # 0/0 -> NaN, 2/0 -> Inf
    worse = tf.add_n([bad] + branches, name="worse")
    check = tf.add_check_numerics_ops()
    with tf.Session() as s:
        for _ in range(3):
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r"^bad:0 : Tensor had Inf and NaN values"):
                s.run([worse, check], {x: [1.0, 2.0, 0.0, 3.0]})


def test_reference_outputs_are_skipped_and_control_flow_refused(fresh_graph):
    v = tf.Variable(1.0)
    _ = v.read_value() * 2
    tf.add_check_numerics_ops()  # the variable handle is a resource: not checked
    assert all(op.inputs[0].dtype != tf.resource
               for op in fresh_graph.get_operations() if op.type == "CheckNumerics")
    with tf.Graph().as_default():
        p = tf.placeholder(tf.bool, [])
        tf.cond(p, lambda: tf.constant(1.0), lambda: tf.constant(2.0))
        with pytest.raises(ValueError, match="not compatible with TensorFlow control flow"):
            tf.add_check_numerics_ops()


def test_verify_tensor_all_finite(fresh_graph):
    x = tf.placeholder(tf.float32, [3], name="x")
    v = tf.verify_tensor_all_finite(x, "bad x")
    assert (v.name, v.op.type) == ("VerifyFinite/control_dependency:0", "Identity")
    assert [c.name for c in v.op.control_inputs] == ["VerifyFinite/CheckNumerics"]
    a = tf.debugging.assert_all_finite(x=x * 2, message="doubled")
    with tf.Session() as s:
        np.testing.assert_allclose(s.run(v, {x: [1.0, 2.0, 3.0]}), [1.0, 2.0, 3.0])
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"bad x : Tensor had NaN values"):
            s.run(v, {x: [np.nan, 1.0, 2.0]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="doubled : Tensor had Inf"):
            s.run(a, {x: [3e38, 1.0, 2.0]})
    with pytest.raises(TypeError, match="DataType int32 not in list of allowed values"):
        tf.verify_tensor_all_finite(tf.constant([1]), "ints")
    with pytest.raises(ValueError, match="Exactly one"):
        tf.verify_tensor_all_finite(x, "m", x=x)
