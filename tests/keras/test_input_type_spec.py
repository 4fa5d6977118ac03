"""tf.keras.Input(type_spec=...) in TF1 graph mode: tf_keras builds inputs from a TypeSpec
only eagerly, so graph mode refuses it (after its check of the other arguments), with
TensorFlow's messages."""

from __future__ import annotations

import pytest

import tensorflux as tf

INPUT_TYPE_SPEC_CASES = [
    "tf.keras.Input(type_spec=tf.TensorSpec([None, 3], tf.int32, name='zz'))",
    "tf.keras.Input(shape=[3], type_spec=tf.TensorSpec([None, 3], tf.int32))",
    "tf.keras.Input(type_spec=tf.TensorSpec([None, 3], tf.int32), dtype=tf.float32)",
    "tf.keras.Input(type_spec=tf.TensorSpec([None, 3]), batch_size=2)",
    "tf.keras.Input(type_spec=tf.SparseTensorSpec([None, 3], tf.int32))",
    "tf.keras.Input(type_spec=tf.RaggedTensorSpec([None, None], tf.int32))",
    "tf.keras.layers.InputLayer(type_spec=tf.TensorSpec([2, 3]))",
    "tf.keras.Input()",
]
INPUT_TYPE_SPEC_ERRORS = [
    "Creating TF-Keras inputs from a type_spec is only supported when eager execution is "
    "enabled.",
    "When `type_spec` is not None, all other args except `name` must be None, but "
    "(input_)shape is not None.",
    "When `type_spec` is not None, all other args except `name` must be None, but dtype is "
    "not None.",
    "When `type_spec` is not None, all other args except `name` must be None, but "
    "batch_size is not None.",
    "Creating TF-Keras inputs from a type_spec is only supported when eager execution is "
    "enabled.",
    "Creating TF-Keras inputs from a type_spec is only supported when eager execution is "
    "enabled.",
    "Creating TF-Keras inputs from a type_spec is only supported when eager execution is "
    "enabled.",
    "Please provide to Input a `shape` or a `tensor` or a `type_spec` argument. Note that "
    "`shape` does not include the batch dimension.",
]


def _input_errors():
    out = []
    for expr in INPUT_TYPE_SPEC_CASES:
        try:
            eval(expr)  # noqa: S307 - the table's own expressions
            out.append(None)
        except ValueError as e:
            out.append(str(e))
    return out


def test_input_type_spec_is_refused_in_graph_mode():
    """TF1 graph-mode Keras builds no input from a TypeSpec (tf_keras needs eager)."""
    with tf.Graph().as_default():
        assert _input_errors() == INPUT_TYPE_SPEC_ERRORS


@pytest.mark.oracle
def test_input_type_spec_errors_are_tensorflows():
    from tests.oracle import run_tf

    theirs = run_tf(f"""
import os
os.environ["TF_USE_LEGACY_KERAS"] = "1"
out = []
for expr in {INPUT_TYPE_SPEC_CASES!r}:
    try:
        eval(expr)
        out.append(None)
    except ValueError as e:
        out.append(str(e))
result = out
""")
    assert theirs == INPUT_TYPE_SPEC_ERRORS
