"""`tf.profiler.profile` (tensorflux/profiler): parameter counts and float operations per
scope and per op type for an MLP and a CNN, the report text and the returned protos,
against TensorFlow's profiler on the same programs."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_both

# One program, run under TensorFlow and under tensorflux: for each model the report texts
# (written to a file) and, from the returned protos, every displayed node's own and total
# parameters and float operations.
PROGRAM = r'''
import os, tempfile
POB = tf.profiler.ProfileOptionBuilder
out = os.path.join(tempfile.mkdtemp(), "report.txt")

def flat(node, into):
    into[node.name] = [node.parameters, node.total_parameters, node.float_ops,
                       node.total_float_ops, node.total_definition_count]
    for c in node.children:
        flat(c, into)
    return into

def op_rows(node, into):
    for c in node.children:
        into.append([c.name, c.float_ops, c.total_float_ops, c.parameters,
                     sorted(g.name for g in c.graph_nodes)])
        op_rows(c, into)
    return into

def profile(g, options, cmd="scope"):
    opts = POB(options).with_file_output(out).build()
    proto = tf.profiler.profile(g, cmd=cmd, options=opts)
    with open(out) as f:
        text = f.read()
    return [text, op_rows(proto, []) if cmd == "op" else flat(proto, {})]

def mlp():
    x = tf.placeholder(tf.float32, [16, 32], name="x")
    labels = tf.placeholder(tf.float32, [16, 10], name="labels")
    with tf.variable_scope("hidden"):
        w = tf.get_variable("kernel", [32, 64])
        b = tf.get_variable("bias", [64], initializer=tf.zeros_initializer())
        h = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w), b))
    with tf.variable_scope("logits"):
        w2 = tf.get_variable("kernel", [64, 10],
                             initializer=tf.truncated_normal_initializer(stddev=0.1))
        b2 = tf.get_variable("bias", [10])
        y = tf.matmul(h, w2) + b2
    loss = tf.reduce_mean(tf.square(tf.nn.softmax(y) - labels))
    tf.Variable(0, trainable=False, name="global_step")
    return loss

def cnn():
    images = tf.placeholder(tf.float32, [4, 12, 12, 3], name="images")
    with tf.variable_scope("conv1"):
        k = tf.get_variable("weights", [3, 3, 3, 8])
        c = tf.nn.relu(tf.nn.conv2d(images, k, [1, 1, 1, 1], "SAME"))
        p = tf.nn.max_pool(c, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    with tf.variable_scope("conv2"):
        k2 = tf.get_variable("weights", [3, 3, 8, 16])
        c2 = tf.nn.conv2d(p, k2, [1, 2, 2, 1], "SAME")
        a = tf.nn.avg_pool(c2, [1, 3, 3, 1], [1, 1, 1, 1], "SAME")
    flat_ = tf.reshape(a, [4, 3 * 3 * 16])
    with tf.variable_scope("fc"):
        w = tf.get_variable("weights", [144, 10])
        logits = tf.matmul(flat_, w)
    probs = tf.nn.softmax(logits)
    return tf.reduce_sum(tf.log(probs)) + tf.nn.l2_loss(w) + tf.add_n([tf.reduce_mean(p)] * 3)

result = {}
for name, model in (("mlp", mlp), ("cnn", cnn)):
    g = tf.Graph()
    with g.as_default():
        model()
        result[name + "_params"] = profile(g, POB.trainable_variables_parameter())
        result[name + "_flops"] = profile(g, POB.float_operation())
        result[name + "_op"] = profile(g, POB.float_operation(), cmd="op")
        both = POB(POB.trainable_variables_parameter()).select(["params", "float_ops"])
        result[name + "_both"] = profile(g, both.order_by("params").with_max_depth(2).build())
        names = POB(POB.float_operation()).with_node_names(
            show_name_regexes=[".*conv.*", ".*Mean.*"], hide_name_regexes=[".*Relu.*"],
            trim_name_regexes=[".*Initializer"])
        result[name + "_names"] = profile(g, names.build())
'''


@pytest.fixture(scope="module")
def both():
    return run_both(PROGRAM, tf)


@pytest.mark.oracle
@pytest.mark.parametrize("model", ["mlp", "cnn"])
@pytest.mark.parametrize("view", ["params", "flops", "op", "both", "names"])
def test_profile_matches_tensorflow(both, model, view):
    ours, theirs = both
    key = f"{model}_{view}"
    our_text, our_nodes = ours[key]
    their_text, their_nodes = theirs[key]
    assert our_text == their_text
    assert _plain(our_nodes) == their_nodes


def _plain(value):
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def test_stdout_report_and_returned_proto(capsys):
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [8, 4])
        w = tf.Variable(tf.ones([4, 2]), name="w")
        tf.matmul(x, w, name="product")
        proto = tf.profiler.profile(g)  # trainable parameters by default
        flops = tf.profiler.profile(g, options=tf.profiler.ProfileOptionBuilder
                                    .float_operation())
    out = capsys.readouterr().out
    assert out.startswith("\n=========================Options=============================\n"
                          "-max_depth                  10000\n")
    assert "-account_type_regexes       _trainable_variables\n" in out
    assert "_TFProfRoot (--/8 params)\n  w (4x2, 8/8 params)\n" in out
    assert out.endswith("\n======================End of Report==========================\n")
    assert isinstance(proto, tf.profiler.GraphNodeProto)
    assert (proto.total_parameters, proto.children[0].name) == (8, "w")
    assert flops.total_float_ops == 2 * 8 * 4 * 2
    product = [c for c in flops.children if c.name == "product"][0]
    assert [d.size for d in product.input_shapes[0].dim] == [8, 4]


def test_incomplete_shapes_run_metadata_and_time(capsys):
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        y = tf.matmul(x, tf.ones([4, 3]), name="y")
        z = tf.reduce_sum(y, name="z")
        opts = tf.profiler.ProfileOptionBuilder(
            tf.profiler.ProfileOptionBuilder.float_operation()).with_empty_output().build()
        static = tf.profiler.profile(g, options=opts)
        assert capsys.readouterr().err == "2 ops no flops stats due to incomplete shapes.\n"
        assert static.total_float_ops == 0
        meta = tf.RunMetadata()
        with tf.Session() as s:
            s.run(z, {x: np.ones([5, 4])},
                  options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                  run_metadata=meta)
        traced = tf.profiler.profile(g, run_meta=meta, options=opts)
        # z's input shape comes from the trace; y's input x was fed, so it stays unknown.
        assert traced.total_float_ops == 5 * 3 - 1
        timed = tf.profiler.profile(g, run_meta=meta, options=tf.profiler.ProfileOptionBuilder(
            tf.profiler.ProfileOptionBuilder.time_and_memory(min_micros=0, min_bytes=0))
            .with_empty_output().build())
    assert timed.total_run_count >= 2
    assert timed.total_requested_bytes > 0 or timed.total_output_bytes > 0


def test_errors_and_option_builder():
    builder = tf.profiler.ProfileOptionBuilder
    with tf.Graph().as_default() as g:
        with pytest.raises(tf.errors.InvalidArgumentError, match="unknown cmd: bogus"):
            tf.profiler.profile(g, cmd="bogus")
        with pytest.raises(tf.errors.UnimplementedError):
            tf.profiler.profile(g, cmd="code")
    opts = builder().with_max_depth(3).with_min_memory(min_bytes=5).with_min_execution_time(
        min_micros=7).with_min_parameters(2).with_min_occurrence(1).with_min_float_operations(
        9).with_accounted_types(["MatMul"]).account_displayed_op_only(False).order_by(
        "bytes").select(["bytes", "micros"]).with_step(4).with_stdout_output().build()
    assert {k: opts[k] for k in ("max_depth", "min_bytes", "min_micros", "min_params",
                                 "min_occurrence", "min_float_ops", "account_type_regexes",
                                 "account_displayed_op_only", "order_by", "select", "step",
                                 "output")} == {
        "max_depth": 3, "min_bytes": 5, "min_micros": 7, "min_params": 2, "min_occurrence": 1,
        "min_float_ops": 9, "account_type_regexes": ["MatMul"],
        "account_displayed_op_only": False, "order_by": "bytes",
        "select": ["bytes", "micros"], "step": 4, "output": "stdout"}
    assert builder().with_file_output("/tmp/f").build()["output"] == "file:outfile=/tmp/f"
