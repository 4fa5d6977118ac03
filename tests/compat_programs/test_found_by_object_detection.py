"""Behaviour found by running tensorflow/models' TF1 research code under tensorflux
(object_detection's core/, utils/, matchers/, box_coders/ and anchor_generators/ unit tests;
im2txt, attention_ocr, inception's slim and the official models' tests):

- shape lists holding variables in the random ops (`tf.random_normal([n, tf.Variable(32)])`);
- `crop_and_resize(extrapolation_value=None)` (the attr's default, as TF's op wrappers take);
- `tf.contrib.framework.is_tensor` and the other tensor helpers TF1 exported there;
- absltest's assertions on `tf.test.TestCase` (`assertEmpty`, `assertLen`, ...);
- `tf.contrib.image.bipartite_match` (object_detection's GreedyBipartiteMatcher);
- static checks (`tf.assert_equal`) decided at graph time only where TF's constant_value
  knows both values; elsewhere the Assert raises when it runs.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_tf

RANDOM_SHAPES = """
v = tf.Variable(3)
ops = [tf.random_normal([2, v, tf.Variable(4), 1]), tf.truncated_normal([2, v]),
       tf.random_uniform([2, tf.Variable(1)], 0, 10, dtype=tf.int32),
       tf.random_uniform([v], dtype=tf.float32)]
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    result = [[t.shape.as_list() for t in ops], [list(a.shape) for a in sess.run(ops)]]
"""


@pytest.mark.oracle
def test_random_op_shapes_may_hold_variables():
    theirs = run_tf(RANDOM_SHAPES)
    ns = {"tf": tf}
    with tf.Graph().as_default():
        exec(RANDOM_SHAPES, ns)  # noqa: S102 - the shared program
    assert ns["result"] == theirs
    assert theirs[1] == [[2, 3, 4, 1], [2, 3], [2, 1], [3]]


def test_crop_and_resize_takes_none_extrapolation_value():
    with tf.Graph().as_default(), tf.Session() as sess:
        image = tf.constant(np.arange(32.).reshape(1, 4, 4, 2), tf.float32)
        crop = tf.image.crop_and_resize(image, [[0., 0., 1.5, 1.]], [0], [2, 2], "bilinear",
                                        None)
        assert crop.op.get_attr("extrapolation_value") == 0.0
        # TF 2.21 gives [[0, 6], [0, 0]] for channel 0: the rows past the image read 0.
        np.testing.assert_array_equal(sess.run(crop)[0, :, :, 0], [[0., 6.], [0., 0.]])


def test_contrib_framework_tensor_helpers():
    cf = tf.contrib.framework
    with tf.Graph().as_default() as g:
        t = tf.constant([3, 1, 2])
        assert cf.is_tensor(t) and not cf.is_tensor(np.ones(2))
        assert cf.get_graph_from_inputs([t]) is g
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(cf.sort(t)), [1, 2, 3])
            np.testing.assert_array_equal(sess.run(cf.argsort(t)), [1, 2, 0])
        assert cf.assert_same_float_dtype([tf.constant(1.)]) == tf.float32


class _AbslCase(tf.test.TestCase):
    def runTest(self):  # noqa: N802 - unittest's name
        pass


@pytest.mark.parametrize("method,args,passes", [
    ("assertEmpty", ([],), True), ("assertEmpty", ([1],), False),
    ("assertEmpty", (3,), False),
    ("assertNotEmpty", ({1: 2},), True), ("assertNotEmpty", ("",), False),
    ("assertLen", ([1, 2], 2), True), ("assertLen", ((1,), 2), False),
    ("assertContainsSubset", ([1, 2], {1, 2, 3}), True),
    ("assertContainsSubset", ([1, 4], [1, 2, 3]), False),
    ("assertNoCommonElements", ([1, 2], [3]), True),
    ("assertNoCommonElements", ([1, 2], [2]), False),
    ("assertSequenceStartsWith", ([1, 2], (1, 2, 3)), True),
    ("assertSequenceStartsWith", ([2], [1, 2]), False),
    ("assertDictContainsSubset", ({"a": 1}, {"a": 1, "b": 2}), True),
    ("assertDictContainsSubset", ({"a": 2}, {"a": 1}), False),
    ("assertContainsInOrder", (["ab", "d"], "abcd"), True),
    ("assertContainsInOrder", (["d", "ab"], "abcd"), False),
    ("assertBetween", (2, 1, 3), True), ("assertBetween", (4, 1, 3), False),
])
def test_absltest_assertions(method, args, passes):
    case = _AbslCase()
    if passes:
        getattr(case, method)(*args)
    else:
        with pytest.raises(AssertionError):
            getattr(case, method)(*args)


# (distances, num_valid_rows, top_k, row_to_col, col_to_row): the greedy rule picks the
# smallest remaining distance each step, the first in row-major order on ties.
_MATCH_CASES = [
    ([[-0.5, -0.1, -0.8], [-0.15, -0.2, -0.3]], 2, -1, [2, 1], [-1, 1, 0]),
    ([[-0.5, -0.1, -0.8], [-0.15, -0.2, -0.3]], -1, -1, [2, 1], [-1, 1, 0]),
    ([[-0.5, -0.1, -0.8], [-0.15, -0.2, -0.3]], 0, -1, [-1, -1], [-1, -1, -1]),
    ([[-0.5, -0.1, -0.8], [-0.15, -0.2, -0.3]], 1, -1, [2, -1], [-1, -1, 0]),
    ([[-0.5, -0.1, -0.8], [-0.15, -0.2, -0.3]], 2, 1, [2, -1], [-1, -1, 0]),
    ([[1., 1.], [1., 1.], [1., 1.]], 3, -1, [0, 1, -1], [0, 1]),
    ([[np.inf, 2.], [np.nan, 3.]], 2, -1, [1, -1], [-1, 0]),
    ([[1., 5.], [2., 1.5], [0.5, 9.]], 3, -1, [-1, 1, 0], [2, 1]),
    (np.zeros((0, 3)), -1, -1, [], [-1, -1, -1]),
]


@pytest.mark.parametrize("dist,valid,top_k,rows,cols", _MATCH_CASES)
def test_bipartite_match(dist, valid, top_k, rows, cols):
    with tf.Graph().as_default(), tf.Session() as sess:
        d = tf.constant(np.asarray(dist, np.float32))
        r, c = tf.contrib.image.bipartite_match(d, valid, top_k=top_k)
        assert r.dtype == tf.int32 and r.shape.as_list() == [len(rows)]
        assert c.shape.as_list() == [len(cols)]
        got_r, got_c = sess.run([r, c])
    np.testing.assert_array_equal(got_r, rows)
    np.testing.assert_array_equal(got_c, cols)


def test_bipartite_match_errors():
    with tf.Graph().as_default(), tf.Session() as sess:
        d = tf.placeholder(tf.float32)
        r, _ = tf.contrib.image.bipartite_match(d, 1.)
        with pytest.raises(tf.errors.InvalidArgumentError, match="2-dimensional"):
            sess.run(r, {d: np.ones(3)})
        with pytest.raises(ValueError, match="rank"):
            tf.contrib.image.bipartite_match(tf.ones([2, 2, 2]), 1.)


STATIC_CHECKS = """
labels = tf.constant([[[0, 1], [1, 0]]], tf.float32)
unmatched = tf.constant([1., 0., 0.])
boxes = tf.constant([[0.0, 0.0, 0.5, 0.5], [0.5, 0.5, 0.9, 0.9], [.75, 0, .95, .27]])
cases = [lambda: tf.assert_equal(tf.shape(labels)[1:], tf.shape(unmatched)),
         lambda: tf.assert_equal(tf.shape(labels)[0], tf.shape(boxes)[0]),
         lambda: tf.assert_equal(tf.reduce_sum(tf.constant([1, 2])), 4),
         lambda: tf.assert_less(tf.size(boxes), tf.rank(boxes)),
         lambda: tf.assert_equal(tf.cast(tf.stack([1, 2]), tf.float32), [1., 3.]),
         lambda: tf.assert_rank(labels, tf.constant(2) + 1),
         lambda: tf.assert_rank(labels, tf.identity(tf.constant(2)))]
out = []
for f in cases:
    try:
        check = f()
    except Exception as e:
        out.append("static " + type(e).__name__)
        continue
    try:
        tf.Session().run(check)
        out.append("ran")
    except Exception as e:
        out.append("run " + type(e).__name__)
result = out
"""


@pytest.mark.oracle
def test_static_checks_fold_what_tensorflow_folds():
    theirs = run_tf(STATIC_CHECKS)
    ns = {"tf": tf}
    with tf.Graph().as_default():
        exec(STATIC_CHECKS, ns)  # noqa: S102 - the shared program
    assert ns["result"] == theirs
    assert theirs[:5] == ["run InvalidArgumentError"] * 3 + ["static InvalidArgumentError"] * 2


def test_contrib_layers_summaries_module():
    from tensorflux.contrib.layers.python.layers import summaries

    assert tf.contrib.layers.summaries is summaries
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [4])
        summaries.summarize_activation(tf.nn.relu6(x, name="act"))
        summaries.summarize_activation(tf.nn.tanh(x, name="th"))
        tf.contrib.layers.summarize_tensors([tf.reduce_sum(x, name="total"), x])
        tags = [s.op.name for s in tf.get_collection(tf.GraphKeys.SUMMARIES)]
        # The summaries of `total` and `x` are ops named after the tensors' ops, uniquified.
        assert tags == ["act/zeros", "act/sixes", "act/activation", "th/activation",
                        "total_1", "Placeholder_1"]
        zeros, sixes = tf.get_collection(tf.GraphKeys.SUMMARIES)[:2]
        with tf.Session() as sess:
            got = [tf.Summary.FromString(b).value[0].simple_value
                   for b in sess.run([zeros, sixes], {x: [-1., 2., 7., 8.]})]
    assert got == [0.25, 0.5]


def test_estimator_evaluate_gives_numpy_scalars():
    def model_fn(features, labels, mode):
        w = tf.get_variable("w", [], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(features * w - labels))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=tf.train.get_or_create_global_step())
        return tf.estimator.EstimatorSpec(
            mode, loss=loss, train_op=train,
            eval_metric_ops={"mae": tf.metrics.mean_absolute_error(labels, features * w)})

    def input_fn():
        return tf.constant([1., 2.]), tf.constant([2., 4.])

    est = tf.estimator.Estimator(model_fn)
    est.train(input_fn, steps=2)
    results = est.evaluate(input_fn, steps=1)
    # TF's evaluate returns what the session fetched: `results["loss"].shape == ()`.
    assert type(results["loss"]) is np.float32 and results["loss"].shape == ()
    assert type(results["mae"]) is np.float32
    assert type(results["global_step"]) is np.int64 and results["global_step"] == 2


MOVING_AVERAGE_NAMES = """
from ROOT.python.training import moving_averages
out = []
for use_resource in (False, True):
    with tf.Graph().as_default() as g:
        with tf.variable_scope("BatchNorm"):
            v = tf.get_variable("mm", [3], initializer=tf.zeros_initializer(),
                                use_resource=use_resource, trainable=False)
            u = moving_averages.assign_moving_average(v, tf.ones([3]), 0.9)
            u2 = moving_averages.assign_moving_average(v, tf.ones([3]), 0.9,
                                                       zero_debias=False)
        names = {op.name: op.type for op in g.get_operations()}
        out.append([names.get("BatchNorm/AssignMovingAvg"),
                    names.get("BatchNorm/AssignMovingAvg_1"), u.shape.as_list()])
        if not use_resource:
            out.append([u.op.name, u2.op.name])
result = out
"""


@pytest.mark.oracle
def test_assign_moving_average_update_named_by_its_scope():
    theirs = run_tf(MOVING_AVERAGE_NAMES.replace("ROOT", "tensorflow"))
    ns = {"tf": tf}
    exec(MOVING_AVERAGE_NAMES.replace("ROOT", "tensorflux"), ns)  # noqa: S102
    # Resource variables: TF's update returns an unread variable whose `.op` is the assign;
    # tensorflux returns a read after it (the update op itself is named alike).
    assert ns["result"][:2] == theirs[:2]
    assert ns["result"][2][0] == theirs[2][0] == "AssignVariableOp"
    assert theirs[1] == ["BatchNorm/AssignMovingAvg", "BatchNorm/AssignMovingAvg_1"]


ALL_EQUAL_STRINGS = """
class T(tf.test.TestCase):
    def runTest(self):
        pass
case = T()
pairs = [(["A"], np.array([b"A"], dtype=object)), (np.array([b"A"], dtype=object), ["A"]),
         (["A"], [b"A"]), (np.array(["A"]), np.array([b"A"])), (["A"], [b"B"]),
         ([[b"x", b"y"]], np.array([["x", "y"]])), ([1, 2], [1, 2]), ([1, 2], [1, 3])]
out = []
for a, b in pairs:
    try:
        case.assertAllEqual(a, b)
        out.append("ok")
    except AssertionError:
        out.append("fail")
result = out
"""


@pytest.mark.oracle
def test_assert_all_equal_takes_text_for_bytes():
    theirs = run_tf(ALL_EQUAL_STRINGS)
    ns = {"tf": tf, "np": np}
    exec(ALL_EQUAL_STRINGS, ns)  # noqa: S102 - the shared program
    assert ns["result"] == theirs == ["ok"] * 4 + ["fail", "ok", "ok", "fail"]
