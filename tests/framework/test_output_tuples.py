"""Multi-output ops hand their outputs back as TensorFlow's generated wrappers do: a named
tuple called after the op type with one field per output argument (`TopKV2(values,
indices)`), which still unpacks as a tuple and fetches as one."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework import op_registry
from tensorflux.framework.op_def_library import output_tuple
from tests import oracle

X = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]], np.float32)


def _img():
    return tf.constant(np.arange(32, dtype=np.float32).reshape(1, 4, 4, 2))


# (public call, the op's tuple type name, its fields): TF 2.21's tf.compat.v1 answers.
CASES = [
    (lambda: tf.nn.top_k(X, 2), "TopKV2", ("values", "indices")),
    (lambda: tf.math.top_k(X, 2), "TopKV2", ("values", "indices")),
    (lambda: tf.unique([1, 1, 2]), "Unique", ("y", "idx")),
    (lambda: tf.unique_with_counts([1, 1, 2]), "UniqueWithCounts", ("y", "idx", "count")),
    (lambda: tf.linalg.qr(X), "Qr", ("q", "r")),
    (lambda: tf.linalg.lu(X[:, :2]), "Lu", ("lu", "p")),
    (lambda: tf.linalg.slogdet(X[:, :2]), "LogMatrixDeterminant",
     ("sign", "log_abs_determinant")),
    (lambda: tf.setdiff1d([1, 2, 3], [2]), "ListDiff", ("out", "idx")),
    (lambda: tf.nn.max_pool_with_argmax(_img(), [1, 2, 2, 1], [1, 2, 2, 1], "SAME"),
     "MaxPoolWithArgmax", ("output", "argmax")),
    (lambda: tf.nn.fractional_max_pool(_img(), [1, 1.5, 1.5, 1]), "FractionalMaxPool",
     ("output", "row_pooling_sequence", "col_pooling_sequence")),
    (lambda: tf.nn.fractional_avg_pool(_img(), [1, 1.5, 1.5, 1]), "FractionalAvgPool",
     ("output", "row_pooling_sequence", "col_pooling_sequence")),
    (lambda: tf.nn.uniform_candidate_sampler(tf.constant([[1]], tf.int64), 1, 2, True, 5),
     "UniformCandidateSampler",
     ("sampled_candidates", "true_expected_count", "sampled_expected_count")),
    (lambda: tf.image.combined_non_max_suppression(tf.zeros([1, 4, 1, 4]),
                                                   tf.zeros([1, 4, 1]), 2, 2),
     "CombinedNonMaxSuppression",
     ("nmsed_boxes", "nmsed_scores", "nmsed_classes", "valid_detections")),
    (lambda: tf.quantization.quantize(X, -1.0, 1.0, tf.quint8), "QuantizeV2",
     ("output", "output_min", "output_max")),
]


@pytest.mark.parametrize("call,name,fields", CASES)
def test_named_outputs(call, name, fields):
    with tf.Graph().as_default():
        out = call()
        assert type(out).__name__ == name and out._fields == fields
        assert isinstance(out, tuple) and len(out) == len(fields)
        first, *rest = out  # still unpacks
        assert first is getattr(out, fields[0])


def test_fetched_values_keep_the_names():
    with tf.Graph().as_default(), tf.Session() as sess:
        top = tf.nn.top_k(X, 2)
        got = sess.run(top)
        assert type(got).__name__ == "TopKV2"
        np.testing.assert_array_equal(got.values, [[3.0, 2.0], [5.0, 4.0]])
        np.testing.assert_array_equal(got.indices, [[0, 2], [1, 2]])
        values, indices = sess.run([top.values, top.indices])
        np.testing.assert_array_equal(indices, got.indices)
        u = sess.run(tf.unique_with_counts([4, 4, 7]))
        assert (u.y.tolist(), u.idx.tolist(), u.count.tolist()) == ([4, 7], [0, 0, 1], [2, 1])


def test_plain_tuples_where_tensorflow_has_them():
    # TF's Python wrappers rebuild these from the op's outputs: plain tuples.
    with tf.Graph().as_default():
        assert type(tf.linalg.svd(X)) is tuple
        assert type(tf.linalg.eigh(np.eye(2, dtype=np.float32))) is tuple
        assert type(tf.nn.moments(X, [0])) is tuple


@pytest.mark.oracle
def test_every_multi_output_op_has_tensorflows_fields():
    ops = {name: d for name, d in op_registry.registered_ops().items()
           if len(d.outputs) > 1 and not name.startswith("_")}
    theirs = oracle.run_tf(f"""
import importlib, pkgutil
import tensorflow.python.ops as ops_pkg
mods = [importlib.import_module("tensorflow.python.ops." + m.name)
        for m in pkgutil.iter_modules(ops_pkg.__path__) if m.name.startswith("gen_")]
result = {{}}
for op in {sorted(ops)!r}:
    for m in mods:
        nt = getattr(m, "_" + op + "Output", None)
        if nt is not None:
            result[op] = list(nt._fields)
            break
""")
    mismatched = {op: (list(output_tuple(ops[op])._fields), fields)
                  for op, fields in theirs.items()
                  if list(output_tuple(ops[op])._fields) != fields}
    assert not mismatched
    assert len(theirs) > 0.9 * len(ops)


def test_named_outputs_through_structures():
    # Control flow keeps the named tuple (as TF 2.21 does); functions that take lists
    # accept one; a custom gradient may return one.
    with tf.Graph().as_default(), tf.Session() as sess:
        x = tf.constant([[1.0, 2.0]])
        loop = tf.while_loop(lambda a, b: tf.reduce_sum(a) < 10,
                             lambda a, b: tf.nn.top_k(a * 2 + tf.cast(b, tf.float32), 1),
                             tf.nn.top_k(x, 1))
        cond = tf.cond(tf.constant(True), lambda: tf.nn.top_k([1.0, 2.0], 1),
                       lambda: tf.nn.top_k([3.0, 4.0], 1))
        scan = tf.scan(lambda a, v: tf.nn.top_k(v, 1), tf.constant([[1.0, 2.0], [4.0, 3.0]]),
                       initializer=tf.nn.top_k([0.0, 0.0], 1))
        assert {type(v).__name__ for v in (loop, cond, scan)} == {"TopKV2"}
        got = sess.run({"loop": loop, "cond": cond, "scan": scan,
                        "qr": tf.concat(tf.linalg.qr(tf.eye(2)), 0)})
        assert got["loop"].values.tolist() == [[10.0]] and got["cond"].indices.tolist() == [1]
        assert got["scan"].values.tolist() == [[2.0], [4.0]] and got["qr"].shape == (4, 2)

        @tf.custom_gradient
        def f(v):
            return tf.nn.top_k(v, 1), lambda dv, di: dv * 0 + 1.0

        assert type(f(x)).__name__ == "TopKV2"
