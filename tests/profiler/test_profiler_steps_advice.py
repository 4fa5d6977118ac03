"""tf.profiler.Profiler (several traced steps, the scope and op views, advise),
tf.profiler.advise and tf.profiler.write_op_log (tfprof_log, an OpLogProto)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.profiler.tfprof_logger import node_stats
from tests.oracle import run_tf


def _traced_steps(n=3):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [64, 128], name="x")
        w = tf.Variable(tf.ones([128, 256]), name="w")
        y = tf.reduce_sum(tf.nn.relu(tf.matmul(x, w, name="MatMul")), name="Sum")
        metas = []
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(n):
                meta = tf.RunMetadata()
                sess.run(y, {x: np.ones((64, 128), np.float32)},
                         options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                         run_metadata=meta)
                metas.append(meta)
    return g, metas


def _quiet(options):
    return dict(options, output="none")


def test_steps_averaged_or_chosen():
    g, metas = _traced_steps()
    prof = tf.profiler.Profiler(g)
    for i, meta in enumerate(metas):
        prof.add_step(i, meta)
    each = [node_stats(g, m)["MatMul"].exec_micros for m in metas]
    opts = _quiet(tf.profiler.ProfileOptionBuilder.time_and_memory())
    by_type = prof.profile_operations(opts)
    matmul = by_type.children[0]
    assert matmul.name == "MatMul"
    assert matmul.exec_micros == round(sum(each) / 3)
    assert by_type.total_exec_micros >= matmul.exec_micros > 0
    assert matmul.graph_nodes[0].name == "MatMul" and matmul.graph_nodes[0].run_count == 1
    chosen = prof.profile_operations(dict(opts, step=1)).children[0]
    assert chosen.exec_micros == each[1]
    scope = prof.profile_name_scope(
        _quiet(tf.profiler.ProfileOptionBuilder.trainable_variables_parameter()))
    assert scope.total_parameters == 128 * 256
    with pytest.raises(tf.errors.InvalidArgumentError, match="step 7 was not added"):
        prof.profile_operations(dict(opts, step=7))
    with pytest.raises(tf.errors.UnimplementedError):
        prof.profile_graph(opts)
    with pytest.raises(tf.errors.UnimplementedError):
        prof.profile_python(opts)


_TYPE_LINE = (r"top \d operation type: \w+, cpu: [\d.]+(us|ms|sec), accelerator: 0us, "
              r"total: [\d.]+(us|ms|sec) \([\d.]+%\)")


def test_advise_reports_and_printout(capsys):
    g, metas = _traced_steps()
    prof = tf.profiler.Profiler(g)
    for i, meta in enumerate(metas):
        prof.add_step(i, meta)
    capsys.readouterr()
    advice = prof.advise(tf.profiler.ALL_ADVICE)
    out = capsys.readouterr().out
    assert sorted(advice.checkers) == ["AcceleratorUtilizationChecker",
                                       "ExpensiveOperationChecker", "OperationChecker"]
    types, node = advice.checkers["ExpensiveOperationChecker"].reports
    lines = types.split("\n")
    assert len(lines) == 3 and all(re.fullmatch(_TYPE_LINE, line) for line in lines)
    assert lines[0].startswith("top 1 operation type: MatMul, ")
    shares = [float(re.search(r"\(([\d.]+)%\)", line).group(1)) for line in lines]
    assert shares == sorted(shares, reverse=True) and sum(shares) <= 100.01
    assert re.fullmatch(r"top 1 graph node: MatMul, cpu: .*, accelerator: 0us, total: .*",
                        node)
    assert not advice.checkers["AcceleratorUtilizationChecker"].reports
    assert out == ("\nAcceleratorUtilizationChecker:\n\nExpensiveOperationChecker:\n"
                   f"{types}\n{node}\n\nOperationChecker:\n")
    single = tf.profiler.advise(g, metas[0])
    assert single.checkers["ExpensiveOperationChecker"].reports[0].startswith(
        "top 1 operation type: MatMul")
    only = tf.profiler.advise(g, metas[0], {"OperationChecker": {}})
    assert list(only.checkers) == ["OperationChecker"]


def test_write_op_log(tmp_path):
    g, metas = _traced_steps(1)
    tf.profiler.write_op_log(g, str(tmp_path), run_meta=metas[0])
    log = tf.profiler.OpLogProto.FromString((tmp_path / "tfprof_log").read_bytes())
    entries = {e.name: e for e in log.log_entries}
    assert entries["MatMul"].float_ops == 2 * 64 * 128 * 256
    assert list(entries["w"].types) == ["_trainable_variables"]
    files = {log.id_to_string[t.file_id] for t in entries["MatMul"].code_def.traces}
    assert __file__ in files
    # a later profile reads the log's types
    extra = tf.profiler.OpLogProto()
    extra.log_entries.add(name="Sum", types=["my_type"], float_ops=5)
    tf.profiler.write_op_log(g, str(tmp_path), op_log=extra, add_trace=False)
    log = tf.profiler.OpLogProto.FromString((tmp_path / "tfprof_log").read_bytes())
    entries = {e.name: e for e in log.log_entries}
    assert (list(entries["Sum"].types), entries["Sum"].float_ops) == (["my_type"], 5)
    assert not entries["MatMul"].code_def.traces
    opts = _quiet(dict(tf.profiler.ProfileOptionBuilder.float_operation(),
                       account_type_regexes=["my_type"]))
    shown = tf.profiler.profile(g, op_log=log, options=opts)
    assert [c.name for c in shown.children] == ["Sum"]  # the only node of the logged type
    with pytest.raises(tf.errors.NotFoundError, match="No such file or directory"):
        tf.profiler.write_op_log(g, str(tmp_path / "missing"))


@pytest.mark.oracle
def test_tensorflow_reads_our_op_log(tmp_path):
    g, metas = _traced_steps(1)
    tf.profiler.write_op_log(g, str(tmp_path), run_meta=metas[0])
    got = run_tf(f"""
from tensorflow.core.profiler import tfprof_log_pb2
log = tfprof_log_pb2.OpLogProto.FromString(open({str(tmp_path / "tfprof_log")!r}, "rb").read())
e = {{x.name: x for x in log.log_entries}}
result = [e["MatMul"].float_ops, list(e["w"].types),
          sorted({{log.id_to_string[t.file_id] for t in e["MatMul"].code_def.traces}})]
""")
    assert got[0] == 2 * 64 * 128 * 256 and got[1] == ["_trainable_variables"]
    assert __file__ in got[2]
