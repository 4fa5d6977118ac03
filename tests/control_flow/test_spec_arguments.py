"""TF1 APIs that take TypeSpecs where they took dtypes or shapes: map_fn's
`fn_output_signature` / `dtype` (TensorSpec, RaggedTensorSpec, SparseTensorSpec results),
py_function's `Tout` (TensorSpecs) and while_loop's `shape_invariants` (TensorSpecs). The
same program runs under TensorFlow."""

from __future__ import annotations

import pytest

import tensorflux as tf
from tests.oracle import run_both

PROGRAM = """
def _plain(v):
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in sorted(v.items())}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if hasattr(v, "to_list"):
        return ["ragged", v.to_list()]
    if isinstance(v, tf.SparseTensorValue):
        return ["sparse", v.indices.tolist(), v.values.tolist(), v.dense_shape.tolist()]
    return v.tolist() if hasattr(v, "tolist") else v

x = tf.constant([[1, 0, 2], [0, 0, 3]])
rows = tf.constant([1, 3, 0, 2], tf.int64)
fetches = {
    "dense_signature": tf.map_fn(lambda r: tf.cast(r, tf.float32) / 2, x,
                                 fn_output_signature=tf.TensorSpec([3], tf.float32)),
    "dense_dtype_spec": tf.map_fn(lambda r: r * 2, x, dtype=tf.TensorSpec(None, tf.int32)),
    "ragged": tf.map_fn(lambda n: tf.RaggedTensor.from_row_lengths(tf.range(n), [n]), rows,
                        fn_output_signature=tf.RaggedTensorSpec([1, None], tf.int64)),
    "ragged_rank0": tf.map_fn(lambda n: tf.range(n), rows,
                              fn_output_signature=tf.RaggedTensorSpec([None], tf.int64, 0)),
    "sparse": tf.map_fn(lambda r: tf.sparse.from_dense(r), x,
                        fn_output_signature=tf.SparseTensorSpec([3], tf.int32)),
    "structure": tf.map_fn(lambda r: {"d": r + 1, "s": tf.sparse.from_dense(r)}, x,
                           fn_output_signature={"d": tf.TensorSpec([3], tf.int32),
                                                "s": tf.SparseTensorSpec([3], tf.int32)}),
    "py_function": tf.py_function(lambda v: v.numpy() * 3, [x],
                                  Tout=tf.TensorSpec([2, 3], tf.int32)),
    "py_function_list": tf.py_function(lambda v: [v.numpy() + 1], [x],
                                       Tout=[tf.TensorSpec(None, tf.int32)]),
    "while_spec": tf.while_loop(
        lambda i, v: i < 3, lambda i, v: (i + 1, tf.concat([v, v], 0)),
        [tf.constant(0), tf.constant([1])],
        shape_invariants=[tf.TensorSpec([], tf.int32), tf.TensorSpec([None], tf.int32)]),
}
static = {k: repr(v.shape) for k, v in fetches.items()
          if isinstance(v, tf.Tensor)}
static["ragged"] = repr(fetches["ragged"].shape)
with tf.Session() as s:
    values = s.run(fetches)
result = {"values": _plain(values), "static": static}
"""


@pytest.mark.oracle
def test_spec_arguments_as_tensorflow():
    ours, theirs = run_both(PROGRAM, tf)
    assert ours["values"] == theirs["values"]
    assert ours["static"] == theirs["static"]


def test_map_fn_ragged_results_without_the_oracle():
    with tf.Graph().as_default():
        out = tf.map_fn(lambda n: tf.range(n), tf.constant([2, 0, 1], tf.int64),
                        fn_output_signature=tf.RaggedTensorSpec([None], tf.int64, 0))
        assert isinstance(out, tf.RaggedTensor) and out.ragged_rank == 1
        with tf.Session() as s:
            assert s.run(out).to_list() == [[0, 1], [], [0]]


def test_unsupported_specs_are_type_errors():
    with tf.Graph().as_default():
        x = tf.constant([1, 2])
        with pytest.raises(TypeError, match="map_fn takes TensorSpec, SparseTensorSpec and "
                                            "RaggedTensorSpec results"):
            tf.map_fn(lambda v: v, x, fn_output_signature=tf.TensorArraySpec())
        with pytest.raises(TypeError, match="py_function takes DTypes and TensorSpecs"):
            tf.py_function(lambda v: v, [x], Tout=tf.SparseTensorSpec())
        with pytest.raises(TypeError):  # numpy_function takes DTypes only, as TF's
            tf.numpy_function(lambda v: v, [x], Tout=tf.TensorSpec([2], tf.int32))
