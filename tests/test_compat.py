"""tf.compat and the behaviour switches: TF1 requests change nothing, TF2 requests that
tensorflux cannot honour raise, and `tensorflux.compat.v1` is the top-level module."""

from __future__ import annotations

import importlib

import pytest

import tensorflux
import tensorflux as tf


def test_compat_v1_is_the_top_level_module():
    v1 = importlib.import_module("tensorflux.compat.v1")
    assert v1 is tensorflux and tf.compat.v1 is tensorflux
    import tensorflux.compat.v1 as tf1  # the import line a TF1 program keeps

    assert tf1 is tensorflux and tf1.Session is tf.Session


@pytest.mark.parametrize("name", ["disable_v2_behavior", "disable_eager_execution",
                                  "enable_resource_variables", "disable_control_flow_v2",
                                  "disable_tensor_equality", "disable_v2_tensorshape"])
def test_tf1_switches_are_accepted(name):
    assert getattr(tf, name)() is None
    assert not tf.executing_eagerly() and not tf.executing_eagerly_outside_functions()


@pytest.mark.parametrize("name", ["enable_v2_behavior", "enable_eager_execution",
                                  "enable_tensor_equality", "enable_v2_tensorshape"])
def test_tf2_switches_raise(name):
    with pytest.raises(ValueError, match="not supported"):
        getattr(tf, name)()


def test_resource_variable_switches():
    assert tf.resource_variables_enabled()
    tf.disable_v2_behavior()  # unlike TensorFlow's, it leaves the variables' kind alone
    assert tf.resource_variables_enabled()
    tf.disable_resource_variables()
    try:
        assert not tf.resource_variables_enabled()
        with tf.Graph().as_default():
            assert tf.Variable(1.0).op.type == "VariableV2"
            assert tf.Variable(1.0, use_resource=True).handle.dtype == tf.resource
    finally:
        tf.enable_resource_variables()
    assert tf.resource_variables_enabled()
    with tf.Graph().as_default():
        assert tf.Variable(1.0).handle.dtype == tf.resource
    tf.enable_control_flow_v2()
    assert not tf.control_flow_v2_enabled()


def test_versions_and_string_helpers():
    assert tf.VERSION == tf.version.VERSION and tf.VERSION.startswith("2.")
    assert isinstance(tf.GIT_VERSION, str) and isinstance(tf.COMPILER_VERSION, str)
    assert tf.version.GRAPH_DEF_VERSION == tf.Graph().as_graph_def().versions.producer
    assert tf.compat.as_bytes("é") == "é".encode() and tf.compat.as_text(b"x") == "x"
    assert tf.compat.as_str_any(3) == "3"
    assert tf.compat.dimension_value(tf.TensorShape([None, 4])[1]) == 4
    with pytest.raises(TypeError):
        tf.compat.as_bytes(3)
