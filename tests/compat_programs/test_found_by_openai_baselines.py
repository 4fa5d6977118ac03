"""Behaviour TF1 programs rely on, found by running openai/baselines' own test suite
(test_serialization: a2c/acktr/acer/ppo2 with mlp, cnn and lstm policies) under tensorflux.

- `Dimension`s where TF1 takes ints: `tf.split(h, num_or_size_splits=x.shape[1])`
  (a2c/utils.batch_to_seq) and int-list attrs such as extract_image_patches' ksizes
  (acktr's K-FAC).
- Chained updates: `tf.assign_add(tf.assign(v, v * decay), (1 - decay) * x)` (K-FAC's
  running averages), with resource and with reference variables.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_both


@pytest.fixture
def graph():
    with tf.Graph().as_default() as g:
        yield g


def test_split_takes_a_dimension_as_the_number_of_parts(graph):
    h = tf.reshape(tf.range(12.0), [2, 3, 2])
    parts = tf.split(axis=1, num_or_size_splits=h.shape[1], value=h)
    assert len(parts) == 3 and parts[0].op.type == "Split"
    with tf.Session() as s:
        got = s.run([tf.squeeze(p, [1]) for p in parts])
    np.testing.assert_array_equal(got[1], [[2.0, 3.0], [8.0, 9.0]])


def test_split_by_an_unknown_dimension_is_refused_as_in_tf1(graph):
    h = tf.placeholder(tf.float32, [2, None])
    with pytest.raises(ValueError, match=r"Cannot convert an unknown Dimension to a Tensor: \?"):
        tf.split(h, h.shape[1], axis=1)


def test_int_attrs_take_known_dimensions(graph):
    x = tf.reshape(tf.range(32.0), [1, 4, 4, 2])
    k = x.shape[1] // 2  # Dimension(2)
    patches = tf.extract_image_patches(x, ksizes=[1, k, k, 1], strides=[1, k, k, 1],
                                       rates=[1, 1, 1, 1], padding="VALID")
    assert patches.op.get_attr("ksizes") == [1, 2, 2, 1]
    assert patches.shape.as_list() == [1, 2, 2, 8]
    with pytest.raises(TypeError, match="Expected int for argument 'ksizes' not "
                       r"Dimension\(None\)"):
        tf.extract_image_patches(x, ksizes=[1, tf.Dimension(None), 2, 1],
                                 strides=[1, 1, 1, 1], rates=[1, 1, 1, 1], padding="VALID")


CHAINED = """
out = {}
for use_resource in (True, False):
    with tf.Graph().as_default():
        v = tf.get_variable("v", initializer=tf.constant([1.0, 2.0]),
                            use_resource=use_resource)
        x = tf.placeholder(tf.float32, [2])
        avg = tf.assign_add(tf.assign(v, v * 0.5, use_locking=True), 0.5 * x,
                            use_locking=True)
        c = tf.assign_sub(tf.assign_add(v, x), [1.0, 1.0])
        d = tf.assign(tf.assign_add(v, x), x * 3)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            r = [s.run(avg, {x: [2.0, 4.0]}), s.run(v), s.run(c, {x: [1.0, 1.0]}),
                 s.run(d, {x: [1.0, 2.0]}), s.run(v)]
    out[str(use_resource)] = [np.asarray(a).tolist() for a in r]
result = out
"""


@pytest.mark.oracle
def test_chained_updates_apply_to_the_variable_in_order_like_tf():
    ours, theirs = run_both(CHAINED, tf)
    assert ours == theirs
    assert ours["True"] == [[1.5, 3.0], [1.5, 3.0], [1.5, 3.0], [3.0, 6.0], [3.0, 6.0]]


def test_a_chained_update_runs_after_the_first_one(graph):
    v = tf.Variable([4.0], use_resource=True)
    first = tf.assign(v, v * 0.5)
    second = tf.assign_add(first, [1.0])
    assign_op = first.op.control_inputs[0]
    assert assign_op.type == "AssignVariableOp" and _depends_on(second.op, assign_op)
    with tf.Session() as s:
        s.run(v.initializer)
        assert s.run(second).tolist() == [3.0]


def _depends_on(op, target) -> bool:
    seen, work = set(), [op]
    while work:
        o = work.pop()
        if o is target:
            return True
        if o in seen:
            continue
        seen.add(o)
        work.extend(t.op for t in o.inputs)
        work.extend(o.control_inputs)
    return False


def test_only_variables_and_their_updates_can_be_updated(graph):
    v = tf.Variable([1.0])
    with pytest.raises(TypeError, match="tf.assign_add needs a tf.Variable as `ref`, got "
                       "Tensor"):
        tf.assign_add(v.read_value(), [1.0])
    with pytest.raises(TypeError, match="tf.assign needs a tf.Variable"):
        tf.assign(tf.constant([1.0]), [2.0])
