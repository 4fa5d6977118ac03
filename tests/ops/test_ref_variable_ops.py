"""TF1 reference variables (VariableV2, Assign, Scatter*, Apply*): GraphDefs written by
TensorFlow 1 programs run in tensorflux and end in TensorFlow's values."""

from __future__ import annotations

import base64

import numpy as np
import pytest

import tensorflux as tf
from tests import oracle

# Each program builds a TF1 graph with reference variables (TF's default under
# disable_v2_behavior), names `init`, a train op `step` run STEPS times with `feed`, and
# the tensors to compare in `check`.
_PROGRAMS = {
    "optimizers": """
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        gs = tf.train.get_or_create_global_step()
        ops, check = [], ["global_step:0"]
        for k, opt in enumerate([tf.train.GradientDescentOptimizer(0.1),
                                 tf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
                                 tf.train.AdagradOptimizer(0.1),
                                 tf.train.AdadeltaOptimizer(1.0),
                                 tf.train.RMSPropOptimizer(0.05, centered=True),
                                 tf.train.AdamOptimizer(0.1),
                                 tf.train.FtrlOptimizer(0.1, l1_regularization_strength=0.01)]):
            w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2) / 5, name=f"w{k}")
            loss = tf.reduce_sum(tf.square(tf.matmul(x, w) - 1.0))
            ops.append(opt.minimize(loss, global_step=gs if k == 0 else None))
            check.append(f"w{k}:0")
        step = tf.group(*ops, name="step")
        init = tf.global_variables_initializer()
        feed = {"x:0": np.ones((2, 3), np.float32)}
    """,
    "sparse_updates": """
        emb = tf.Variable(np.arange(20, dtype=np.float32).reshape(10, 2) / 10, name="emb")
        ids = tf.placeholder(tf.int32, [None], name="ids")
        loss = tf.reduce_sum(tf.nn.embedding_lookup(emb, ids) ** 2)
        train = tf.train.AdagradOptimizer(0.1).minimize(loss)
        with tf.control_dependencies([train]):  # one order, so the result is defined
            scatter = tf.scatter_add(emb, [0, 9], [[1.0, 1.0], [2.0, 2.0]])
        with tf.control_dependencies([scatter]):
            sub = tf.assign_sub(emb, tf.ones([10, 2]) * 0.01)
        counter = tf.Variable(0, name="counter")
        step = tf.group(sub, tf.count_up_to(counter, 100), name="step")
        init = tf.global_variables_initializer()
        feed = {"ids:0": np.array([1, 3, 3, 7], np.int32)}
        check = ["emb:0", "counter:0"]
    """,
    "initialization": """
        a = tf.Variable(1.0, name="a")
        b = tf.Variable(a.initialized_value() * 3.0, name="b")
        with tf.control_dependencies([tf.assign_add(a, 1.0)]):
            c = tf.identity(a, name="c_after_add")
        step = tf.group(c, name="step")
        init = tf.global_variables_initializer()
        uninit = tf.identity(tf.report_uninitialized_variables(), name="uninit")
        feed = {}
        check = ["a:0", "b:0", "c_after_add:0"]
    """,
}
STEPS = 3

_TF_SIDE = """
import base64
out = {}
for key, program in PROGRAMS.items():
    g = tf.Graph()
    with g.as_default():
        ns = {"tf": tf, "np": np}
        exec(program, ns)
        with tf.Session() as s:
            before = s.run("uninit:0") if key == "initialization" else None
            s.run("init")
            for _ in range(STEPS):
                s.run("step", ns["feed"])
            out[key] = {"graph": base64.b64encode(g.as_graph_def().SerializeToString()).decode(),
                        "values": [s.run(n) for n in ns["check"]],
                        "uninit_before": None if before is None else [x.decode() for x in before]}
result = out
"""


@pytest.fixture(scope="module")
def tf_runs():
    import textwrap

    programs = {k: textwrap.dedent(v) for k, v in _PROGRAMS.items()}
    return oracle.run_tf(f"PROGRAMS = {programs!r}\nSTEPS = {STEPS}\n" + _TF_SIDE)


@pytest.mark.oracle
@pytest.mark.parametrize("key", sorted(_PROGRAMS))
def test_tf1_graphs_with_reference_variables_train_as_in_tensorflow(tf_runs, key):
    import textwrap

    theirs = tf_runs[key]
    gd = tf.GraphDef.FromString(base64.b64decode(theirs["graph"]))
    g = tf.Graph()
    with g.as_default():
        tf.import_graph_def(gd, name="")
        feed_ns = {"np": np}
        feed_line = [ln for ln in textwrap.dedent(_PROGRAMS[key]).splitlines()
                     if ln.startswith("feed =")][0]
        exec(feed_line, feed_ns)
        check_line = [ln for ln in textwrap.dedent(_PROGRAMS[key]).splitlines()
                      if ln.startswith("check =") or ln.startswith("ops, check =")][0]
        with tf.Session() as s:
            if theirs["uninit_before"] is not None:
                got = [x.decode() for x in s.run("uninit:0")]
                assert got == theirs["uninit_before"]
            s.run("init")
            for _ in range(STEPS):
                s.run("step", feed_ns["feed"])
            names = _check_names(check_line, key)
            for name, want in zip(names, theirs["values"], strict=True):
                np.testing.assert_allclose(s.run(name), want, rtol=1e-5, atol=1e-6,
                                           err_msg=name)


def _check_names(line: str, key: str) -> list[str]:
    if key == "optimizers":
        return ["global_step:0"] + [f"w{k}:0" for k in range(7)]
    ns: dict = {}
    exec(line, ns)
    return ns["check"]


def test_reading_an_unassigned_reference_variable_is_tf1s_error():
    g = tf.Graph()
    with g.as_default():
        gd = tf.GraphDef()
        node = gd.node.add(name="v", op="VariableV2")
        node.attr["dtype"].type = tf.float32.as_datatype_enum
        node.attr["shape"].shape.SetInParent()
        read = gd.node.add(name="read", op="Identity", input=["v"])
        read.attr["T"].type = tf.float32.as_datatype_enum
        tf.import_graph_def(gd, name="")
        with tf.Session() as s:
            with pytest.raises(tf.errors.FailedPreconditionError,
                               match="uninitialized value v"):
                s.run("read:0")
