"""Behaviour TF1 programs rely on, found by running cleverhans v3.1's tests_tf suite under
tensorflux (the L-BFGS attack, the Keras model wrapper, the MNIST dataset helper).

- `feed_dict={variable: value}`: TF1's variables were reference variables, and feeding one
  gives all its consumers the value for the step, initialized or not (cleverhans' L-BFGS
  feeds its `ori_img` and `const` variables and never initializes them). A fed reference
  variable failed here ("Expected a resource handle"), and a fed resource variable (the
  default) reached only one of its reads.
- `from tensorflow.python.keras.utils import np_utils` (TF1's internal module path).
- Keras' `Node.inbound_layers` and `Layer.get_input_at` on a layer never called.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_tf

FEED_VARIABLE = """
out = {}
for name, use_resource in (("ref", False), ("resource", True)):
    with tf.Graph().as_default():
        v = tf.Variable(np.zeros(2, np.float32), name="ori_img", use_resource=use_resource)
        x = tf.placeholder(tf.float32, [2])
        y = tf.reduce_sum(tf.square(x - v))
        (g,) = tf.gradients(y, x)
        doubled = v * 2.0
        with tf.Session() as s:
            try:
                got = s.run([y, g, v, doubled], {x: [1.0, 2.0], v: [1.0, 1.0]})
            except tf.errors.OpError as e:
                out[name] = type(e).__name__
                continue
            initialized = bool(s.run(tf.is_variable_initialized(v)))
    out[name] = [np.asarray(a).tolist() for a in got] + [initialized]
result = out
"""


@pytest.mark.oracle
def test_feeding_a_variable_gives_every_consumer_the_value_as_tf1_reference_variables():
    theirs = run_tf(FEED_VARIABLE)
    ns = {"tf": tf, "np": np}
    exec(FEED_VARIABLE, ns)  # noqa: S102 - the shared program
    ours = ns["result"]
    expected = [1.0, [0.0, 2.0], [1.0, 1.0], [2.0, 2.0], False]
    assert theirs["ref"] == expected  # TF1's default variables
    assert theirs["resource"] == "FailedPreconditionError"
    # tensorflux's reference variables do the same; its resource variables (its default
    # tf.Variable) follow TF1's default, where TF's resource variables fail unread
    assert ours["ref"] == expected and ours["resource"] == expected


def test_feeding_a_resource_variable_leaves_the_value_an_update_returns(graph):
    v = tf.Variable([1.0, 2.0])
    updated = tf.assign_add(v, [10.0, 10.0])
    plain = v * 1.0
    with tf.Session() as s:
        s.run(v.initializer)
        got_plain, got_updated = s.run([plain, updated], {v: [5.0, 5.0]})
        assert got_plain.tolist() == [5.0, 5.0]
        assert got_updated.tolist() == [11.0, 12.0]  # the variable itself, updated
        assert s.run(v).tolist() == [11.0, 12.0]


@pytest.fixture
def graph():
    with tf.Graph().as_default() as g:
        yield g


def test_keras_np_utils_from_tensorflows_internal_path():
    from tensorflux.python.keras.utils import np_utils

    np.testing.assert_array_equal(np_utils.to_categorical([2, 0], 3),
                                  [[0, 0, 1], [1, 0, 0]])
    import tensorflux.python.keras.utils as utils

    with pytest.raises(AttributeError, match="has no attribute 'no_such_module'"):
        utils.no_such_module  # noqa: B018


def test_keras_node_inbound_layers_and_get_input_at(graph):
    keras = tf.keras
    model = keras.models.Sequential([
        keras.layers.Dense(4, name="l1", input_shape=(3,)), keras.layers.Dense(2, name="l2"),
        keras.layers.Activation("softmax", name="softmax")])
    node = model.get_layer("softmax")._inbound_nodes[0]
    assert node.inbound_layers is model.get_layer("l2")  # one input: the layer itself
    a, b = keras.layers.Input((2,)), keras.layers.Input((2,))
    added = keras.layers.Add(name="add")
    added([keras.layers.Dense(2, name="da")(a), keras.layers.Dense(2, name="db")(b)])
    assert [layer.name for layer in added._inbound_nodes[0].inbound_layers] == ["da", "db"]
    with pytest.raises(RuntimeError, match="The layer has never been called and thus has no "
                       "defined input."):
        model.get_input_at(0)
    assert model.get_layer("l2").get_output_at(0) is model.get_layer("l2").output
    with pytest.raises(ValueError, match="Asked to get output at node 1, but the layer has "
                       "only 1 inbound nodes."):
        model.get_layer("l2").get_output_at(1)


def test_keras_layer_input_and_output_are_the_first_calls_as_in_tf_keras(graph):
    """cleverhans' mnist_tutorial_keras calls the model on its own input once more, then
    reads every layer's `output`: tf.keras gives the first call's (no error), and the
    shapes while every call agrees on them."""
    keras = tf.keras
    model = keras.models.Sequential([keras.layers.Dense(3, name="d", input_shape=(5,)),
                                     keras.layers.Activation("softmax", name="sm")])
    first = model.get_layer("d").output
    model(model.input)
    model(tf.placeholder(tf.float32, [None, 5]))
    layer = model.get_layer("d")
    assert len(layer._inbound_nodes) == 3 and layer.output is first
    assert layer.input is model.input and layer.output_shape == (None, 3)
    assert model.input_shape == (None, 5) and model.output_shape == (None, 3)
    twice = keras.layers.Dense(2, name="twice")
    twice(keras.layers.Input((4,)))
    twice(keras.layers.Input((4,), batch_size=7))
    with pytest.raises(AttributeError, match=r'The layer "twice" has multiple inbound nodes, '
                       r'with different input shapes'):
        twice.input_shape  # noqa: B018
    assert twice.get_input_shape_at(1) == (7, 4)
    never = keras.layers.Dense(2, name="never")
    with pytest.raises(AttributeError, match="Layer never has no inbound nodes."):
        never.output  # noqa: B018
    with pytest.raises(AttributeError, match="has never been called and thus has no defined "
                       "output shape"):
        never.output_shape  # noqa: B018
