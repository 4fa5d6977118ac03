"""ApproxTopK (tensorflux/ops/nn_ops.py, `tf.approx_top_k`, `tf.math.approx_max_k` /
`approx_min_k`): exact on CPU as TensorFlow's (its TopK kernel), checked against NumPy for
every reduction dimension, is_max_k and dtype, with finite-difference gradients; values,
gradients, the op definition and the static shapes (aggregate_to_topk=False's reduction
sizes and the shape function's errors included) against the oracle."""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework import errors, op_registry
from tests import oracle
from tests.op_test_util import OpCase, check_gradient, check_value

pytestmark = pytest.mark.usefixtures("fresh_graph")


def numpy_top_k(x, k, axis=-1, largest=True):
    """The k largest (smallest) values along axis, equal values in index order."""
    rows = np.moveaxis(x, axis, -1)
    key = -rows.astype(np.float64) if largest else rows.astype(np.float64)
    idx = np.argsort(key, axis=-1, kind="stable")[..., :k]
    values = np.take_along_axis(rows, idx, axis=-1)
    return np.moveaxis(values, -1, axis), np.moveaxis(idx, -1, axis).astype(np.int32)


def spread(rng, shape, dtype):
    """Distinct values at least 0.25 apart (finite differences keep the order)."""
    n = int(np.prod(shape))
    return (rng.permutation(n).reshape(shape) * 0.25 - n / 8).astype(dtype)


def ties(rng, shape, dtype):
    return rng.integers(-2, 3, shape).astype(dtype)


CASES = [
    OpCase(f"{make.__name__}_{shape}_k{k}_axis{axis}_{'max' if largest else 'min'}",
           lambda x, k=k, axis=axis, largest=largest: list(tf.approx_top_k(
               x, k, reduction_dimension=axis, is_max_k=largest)),
           lambda x, k=k, axis=axis, largest=largest: list(numpy_top_k(x, k, axis, largest)),
           shapes=[shape], make=make, unknown_shapes=False, grad=make is spread)
    for make in (spread, ties)
    for shape, k, axis in [((7,), 3, -1), ((3, 6), 6, 1), ((3, 6), 2, 0), ((2, 5, 4), 2, 1),
                           ((2, 5, 4), 0, -1), ((4, 3), 1, -2)]
    for largest in (True, False)
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_values_against_numpy(case, dtype):
    check_value(case, dtype)


@pytest.mark.parametrize("case", [c for c in CASES if c.grad], ids=lambda c: c.name)
def test_gradients_by_finite_differences(case):
    check_gradient(case, np.float32)


def test_approx_max_and_min_k_are_the_op():
    x = np.array([[3.0, 1.0, 4.0, 1.0, 5.0], [9.0, 2.0, 6.0, 5.0, 3.0]], np.float32)
    top = tf.math.approx_max_k(x, 2)
    bottom = tf.math.approx_min_k(x, 2, reduction_dimension=0)
    assert top[0].op.type == bottom[0].op.type == "ApproxTopK"
    assert bottom[0].op.get_attr("is_max_k") is False
    with tf.Session() as sess:
        (tv, ti), (bv, bi) = sess.run([top, bottom])
    np.testing.assert_array_equal(tv, [[5, 4], [9, 6]])
    np.testing.assert_array_equal(ti, [[4, 2], [0, 2]])
    np.testing.assert_array_equal(bv, [[3, 1, 4, 1, 3], [9, 2, 6, 5, 5]])
    np.testing.assert_array_equal(bi, [[0, 0, 0, 0, 1], [1, 1, 1, 1, 0]])


def test_run_time_errors():
    """The shape function rejects these at graph time; the kernel checks what a GraphDef
    built without shapes hands it."""
    x = tf.placeholder(tf.float32)
    op = tf.get_default_graph().create_op("ApproxTopK", [x], [tf.float32, tf.int32],
                                          attrs={"k": 3}, compute_shapes=False)
    with tf.Session() as sess, pytest.raises(errors.InvalidArgumentError,
                                             match="at least k columns. Had 2, needed 3"):
        sess.run(op.outputs[0], {x: np.ones([4, 2], np.float32)})


# ---- TensorFlow --------------------------------------------------------------------------


_VALUES_PROGRAM = """
rng = np.random.RandomState(3)
x = rng.randint(-4, 5, size=(3, 40)).astype(np.float32)
outs = {}
for dt in (tf.float32, tf.float16, tf.bfloat16):
    xt = tf.constant(x, dt)
    for k in (0, 1, 5, 40):
        v, i = tf.approx_top_k(xt, k)
        outs[f"{dt.name}/{k}"] = [tf.cast(v, tf.float32), i]
    for agg, rt, ov in ((False, 0.5, -1), (True, 1.0, 100), (False, 0.9, 7)):
        v, i = tf.approx_top_k(xt, 4, recall_target=rt, aggregate_to_topk=agg,
                               reduction_input_size_override=ov)
        outs[f"{dt.name}/knobs{agg}{rt}{ov}"] = [tf.cast(v, tf.float32), i]
w = tf.constant(rng.randn(2, 3, 9).astype(np.float32))
v, i = tf.approx_top_k(w, 4)
outs["grad"] = tf.gradients(v * np.arange(24.0, dtype=np.float32).reshape(2, 3, 4), w)[0]
with tf.Session() as sess:
    got = sess.run(outs)
result = {k: (v.tolist() if isinstance(v, np.ndarray) else [a.tolist() for a in v])
          for k, v in got.items()}
"""


@pytest.mark.oracle
def test_values_and_gradient_equal_tensorflow():
    ours, theirs = oracle.run_both(_VALUES_PROGRAM, tf)
    assert set(ours) == set(theirs)
    for key in sorted(theirs):
        assert ours[key] == theirs[key], key


_SHAPES_PROGRAM = """
import itertools
result = {}
for shape, axis, k, recall, override, agg in itertools.product(
        [(3000,), (100,), (2, 5000), (5000, 3), (2, 200), (1500,), (2, 70000), (None, 3000),
         (3, None), (), None], [-1, 0, 1, -3], [0, 1, 2, 10, 300], [0.95, 0.5, 1.0, 0.0, 1.5],
        [-1, 20000, 10], [False, True]):
    key = str((shape, axis, k, recall, override, agg))
    try:
        out = tf.approx_top_k(tf.placeholder(tf.float32, shape), k, reduction_dimension=axis,
                              recall_target=recall, reduction_input_size_override=override,
                              aggregate_to_topk=agg)
        result[key] = [out[0].shape.as_list() if out[0].shape.ndims is not None else None,
                       out[1].shape.as_list()]
    except ValueError as e:
        result[key] = str(e).split(" for '")[0]
"""


@pytest.mark.oracle
def test_static_shapes_and_shape_errors_equal_tensorflow():
    ours, theirs = oracle.run_both(_SHAPES_PROGRAM, tf, timeout=300)
    assert set(ours) == set(theirs)
    differ = {k: (ours[k], theirs[k]) for k in theirs if ours[k] != theirs[k]}
    assert not differ, list(differ.items())[:5]


@pytest.mark.oracle
def test_op_definition_matches_tensorflow():
    from google.protobuf import json_format

    theirs = oracle.run_tf("""
from google.protobuf import json_format
from tensorflow.python.framework import op_def_registry
d = json_format.MessageToDict(op_def_registry.get("ApproxTopK"))
d.pop("summary", None); d.pop("description", None)
result = json.dumps(d, sort_keys=True)
""")
    ours = json_format.MessageToDict(op_registry.get("ApproxTopK").to_proto())
    assert json.loads(theirs) == ours
