"""tf.contrib.tensor_forest (TF 1.15's V4 forests), by behaviour (TF 2.x has no contrib,
so no oracle): fill()'s defaults, growth bounds, learning a pure rule, accuracy on the
digits, determinism under base_random_seed, an untrained forest, Saver round trips,
regression, bagging, resources' initialization reports, typed errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from tensorflux.python.ops import resources

import tensorflux as tf
from tensorflux.contrib.tensor_forest.python import tensor_forest

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


@pytest.fixture(scope="module")
def digits():
    datasets = pytest.importorskip("sklearn.datasets")
    d = datasets.load_digits()
    return (d.data / 16.0).astype(np.float32), d.target.astype(np.int32)


def _forest(num_features, num_classes=2, **kwargs):
    x = tf.placeholder(tf.float32, [None, num_features])
    y = tf.placeholder(tf.float32 if kwargs.get("regression") else tf.int32,
                       [None, num_classes] if kwargs.get("regression") else [None])
    hparams = tensor_forest.ForestHParams(num_classes=num_classes, num_features=num_features,
                                          **kwargs).fill()
    forest = tensor_forest.RandomForestGraphs(hparams)
    train = forest.training_graph(x, y)
    probs, paths, variance = forest.inference_graph(x)
    sess = tf.Session()
    sess.run(tf.group(tf.global_variables_initializer(),
                      resources.initialize_resources(resources.shared_resources())))
    return x, y, forest, train, (probs, paths, variance), sess


def _train(sess, train, x, y, data, labels, steps, batch, seed=0):
    rng = np.random.RandomState(seed)
    for _ in range(steps):
        idx = rng.randint(0, len(data), batch)
        sess.run(train, {x: data[idx], y: labels[idx]})


# ---- fill() -------------------------------------------------------------------------------

FILL_CASES = [  # (constructor arguments, expected filled values)
    (dict(num_classes=10, num_features=784),
     dict(num_splits_to_consider=28, split_after_samples=250, valid_leaf_threshold=1,
          base_random_seed=0, bagged_num_features=784, bagged_features=None,
          num_outputs=1, num_output_columns=11, regression=False, max_nodes=10000,
          num_trees=100, prune_every_samples=0, early_finish_check_every_samples=0,
          split_type="less_or_equal", finish_type="SPLIT_FINISH_BASIC")),
    (dict(num_classes=3, num_features=4), dict(num_splits_to_consider=10)),
    (dict(num_classes=3, num_features=2_000_000), dict(num_splits_to_consider=1000)),
    (dict(num_classes=3, num_features=4, num_splits_to_consider=7, base_random_seed=9),
     dict(num_splits_to_consider=7, base_random_seed=9)),
    (dict(num_classes=2, num_features=50, regression=True),
     dict(num_outputs=2, num_output_columns=3, leaf_model_type="MODEL_REGRESSION",
          num_splits_to_consider=10)),
    (dict(num_classes=2, num_features=10, feature_bagging_fraction=0.5, num_trees=3),
     dict(bagged_num_features=5)),
    (dict(num_classes=2, num_features=10, split_pruning_name="half",
          split_finish_name="hoeffding", split_after_samples=100),
     dict(prune_every_samples=50, early_finish_check_every_samples=25)),
]


@pytest.mark.parametrize("kwargs,expected", FILL_CASES)
def test_fill_computes_tf_1_15_defaults(kwargs, expected):
    hp = tensor_forest.ForestHParams(**kwargs).fill()
    for name, value in expected.items():
        assert getattr(hp, name) == value, name
    f = kwargs["num_features"]
    if "num_splits_to_consider" not in kwargs:
        assert hp.num_splits_to_consider == min(max(10, math.floor(math.sqrt(f))), 1000)
    if hp.bagged_features is not None:
        assert len(hp.bagged_features) == hp.num_trees
        assert all(len(set(b)) == hp.bagged_num_features for b in hp.bagged_features)


def test_fill_needs_num_classes_and_num_features():
    with pytest.raises(AttributeError):
        tensor_forest.ForestHParams(num_features=3).fill()
    with pytest.raises(AttributeError):
        tensor_forest.ForestHParams(num_classes=3).fill()


# ---- growing and learning -----------------------------------------------------------------


@pytest.mark.parametrize("max_nodes,bound", [(15, 15), (16, 17)])
def test_trees_stop_at_max_nodes(max_nodes, bound):
    # TF splits while a tree has fewer than max_nodes nodes; a split adds two.
    rng = np.random.RandomState(0)
    data = rng.rand(400, 5).astype(np.float32)
    labels = (rng.rand(400) * 3).astype(np.int32)
    x, y, forest, train, _, sess = _forest(5, 3, num_trees=3, max_nodes=max_nodes,
                                           split_after_samples=8, base_random_seed=1)
    sizes = [forest.trees[i].size() for i in range(3)]
    _train(sess, train, x, y, data, labels, steps=30, batch=64)
    got = sess.run(sizes)
    assert max(got) <= bound and min(got) >= max_nodes - 2, got
    assert sess.run(forest.average_size()) == pytest.approx(np.mean(got))
    assert sess.run(forest.training_loss(x, y)) == pytest.approx(-np.mean(got))


def test_a_pure_rule_is_learned_exactly():
    rng = np.random.RandomState(1)
    data = rng.rand(2000, 6).astype(np.float32)
    labels = (data[:, 3] > 0.5).astype(np.int32)
    x, y, forest, train, (probs, _, _), sess = _forest(
        6, 2, num_trees=5, max_nodes=101, split_after_samples=20, num_splits_to_consider=30,
        base_random_seed=7)
    _train(sess, train, x, y, data[:1500], labels[:1500], steps=40, batch=128)
    test = rng.rand(500, 6).astype(np.float32)
    test = test[np.abs(test[:, 3] - 0.5) > 0.05]  # away from the learned thresholds
    pred = sess.run(probs, {x: test}).argmax(1)
    np.testing.assert_array_equal(pred, (test[:, 3] > 0.5).astype(int))
    importances = sess.run(forest.feature_importances())
    assert importances.shape == (6,) and importances.sum() == pytest.approx(1.0)
    assert importances.argmax() == 3


def test_digits_accuracy_well_above_chance(digits):
    data, labels = digits
    x, y, forest, train, (probs, _, _), sess = _forest(64, 10, num_trees=10, max_nodes=1000,
                                                       base_random_seed=3)
    _train(sess, train, x, y, data[:1500], labels[:1500], steps=120, batch=256)
    accuracy = (sess.run(probs, {x: data[1500:]}).argmax(1) == labels[1500:]).mean()
    assert accuracy > 0.75, accuracy
    p = sess.run(probs, {x: data[1500:1510]})
    np.testing.assert_allclose(p.sum(1), 1.0, rtol=1e-5)


def _run_seeded(seed, data, labels):
    with tf.Graph().as_default():
        x, y, forest, train, (probs, _, _), sess = _forest(
            64, 10, num_trees=3, max_nodes=200, split_after_samples=50, base_random_seed=seed)
        _train(sess, train, x, y, data, labels, steps=15, batch=128)
        trees = sess.run([forest.trees[i].size() for i in range(3)])
        return sess.run(probs, {x: data[:200]}), trees


def test_base_random_seed_makes_training_deterministic(digits):
    data, labels = digits
    p1, sizes1 = _run_seeded(11, data, labels)
    p2, sizes2 = _run_seeded(11, data, labels)
    np.testing.assert_array_equal(p1, p2)
    assert sizes1 == sizes2
    p3, _ = _run_seeded(12, data, labels)
    assert not np.array_equal(p1, p3)


def test_untrained_forest_predicts_zeros_as_tf_does():
    # TF's root leaf starts with no counts and TreePredictionsV4 leaves all-zero rows alone.
    x, _, _, _, (probs, paths, variance), sess = _forest(4, 3, num_trees=2)
    p, tp, v = sess.run([probs, paths, variance], {x: np.ones((5, 4), np.float32)})
    np.testing.assert_array_equal(p, np.zeros((5, 3)))
    np.testing.assert_array_equal(v, np.zeros((5, 3)))
    assert tp.shape == (0, 2)


def test_inference_tree_paths_and_variance(digits):
    data, labels = digits
    x, y, _, train, (probs, paths, variance), sess = _forest(
        64, 10, num_trees=4, max_nodes=50, split_after_samples=30, inference_tree_paths=True,
        base_random_seed=2)
    _train(sess, train, x, y, data, labels, steps=10, batch=128)
    p, tp, v = sess.run([probs, paths, variance], {x: data[:7]})
    assert tp.shape == (7, 4)
    assert all(s.startswith(b"0,") for s in tp.ravel())
    assert (v >= 0).all() and v.shape == p.shape


def test_bagging_and_feature_bagging_train(digits):
    data, labels = digits
    x, y, forest, train, (probs, _, _), sess = _forest(
        64, 10, num_trees=4, max_nodes=300, split_after_samples=40, bagging_fraction=0.7,
        feature_bagging_fraction=0.5, base_random_seed=5)
    _train(sess, train, x, y, data[:1500], labels[:1500], steps=40, batch=256)
    accuracy = (sess.run(probs, {x: data[1500:]}).argmax(1) == labels[1500:]).mean()
    assert accuracy > 0.5, accuracy
    assert sess.run(forest.average_size()) > 10


def test_regression_fits_a_step_function():
    rng = np.random.RandomState(4)
    data = rng.rand(3000, 3).astype(np.float32)
    target = np.stack([np.where(data[:, 0] > 0.5, 2.0, -1.0),
                       np.where(data[:, 1] > 0.3, 1.0, 0.0)], 1).astype(np.float32)
    x, y, _, train, (probs, _, variance), sess = _forest(
        3, 2, regression=True, num_trees=4, max_nodes=63, split_after_samples=30,
        num_splits_to_consider=20, base_random_seed=3)
    _train(sess, train, x, y, data, target, steps=30, batch=200)
    test = rng.rand(300, 3).astype(np.float32)
    test = test[(np.abs(test[:, 0] - 0.5) > 0.05) & (np.abs(test[:, 1] - 0.3) > 0.05)]
    want = np.stack([np.where(test[:, 0] > 0.5, 2.0, -1.0),
                     np.where(test[:, 1] > 0.3, 1.0, 0.0)], 1)
    pred, var = sess.run([probs, variance], {x: test})
    assert np.abs(pred - want).mean() < 0.1
    assert (var >= 0).all()


# ---- checkpoints and resources -----------------------------------------------------------


def test_saver_round_trip_restores_predictions_exactly(digits, tmp_path):
    data, labels = digits
    x, y, forest, train, (probs, _, _), sess = _forest(64, 10, num_trees=3, max_nodes=200,
                                                       split_after_samples=40,
                                                       base_random_seed=1)
    _train(sess, train, x, y, data, labels, steps=20, batch=128)
    saver = tf.train.Saver()
    path = saver.save(sess, str(tmp_path / "forest"))
    want = sess.run(probs, {x: data[:300]})
    sizes = sess.run([forest.trees[i].size() for i in range(3)])
    assert min(sizes) > 1
    _train(sess, train, x, y, data, labels, steps=5, batch=128, seed=9)  # moves on
    saver.restore(sess, path)
    np.testing.assert_array_equal(sess.run(probs, {x: data[:300]}), want)
    with tf.Session() as fresh:  # restoring creates the resources
        saver.restore(fresh, path)
        np.testing.assert_array_equal(fresh.run(probs, {x: data[:300]}), want)
        assert fresh.run([forest.trees[i].size() for i in range(3)]) == sizes
        _train(fresh, train, x, y, data, labels, steps=3, batch=128)  # trains on


def test_resources_are_registered_and_reported():
    x = tf.placeholder(tf.float32, [None, 4])
    hparams = tensor_forest.ForestHParams(num_classes=2, num_features=4, num_trees=2).fill()
    tensor_forest.RandomForestGraphs(hparams)
    shared = resources.shared_resources()
    assert len(shared) == 4 and resources.local_resources() == []
    assert shared == tf.get_collection(tf.GraphKeys.RESOURCES)
    report = resources.report_uninitialized_resources()
    with tf.Session() as sess:
        names = sorted(sess.run(report).tolist())
        assert names == [b"stats-0", b"stats-1", b"tree-0", b"tree-1"]
        sess.run(resources.initialize_resources(shared))
        assert sess.run(report).tolist() == []
    assert resources.initialize_resources([]).type == "NoOp"
    del x


def test_register_local_resource():
    handle = tf.constant(0, name="h")
    resources.register_resource(handle, tf.no_op(name="make"), tf.constant(False),
                                is_shared=False)
    assert len(resources.local_resources()) == 1 and resources.shared_resources() == []
    with tf.Session() as sess:
        assert sess.run(resources.report_uninitialized_resources()).tolist() == [b"h"]


def test_tf1_module_paths_import():
    from tensorflux.python.training import saver

    import tensorflux.contrib.tensor_forest.python.ops.model_ops as model_ops
    import tensorflux.contrib.tensor_forest.python.ops.stats_ops as stats_ops

    assert tf.contrib.tensor_forest.python.tensor_forest is tensor_forest
    assert callable(model_ops.tree_variable) and callable(stats_ops.fertile_stats_variable)
    assert saver.BaseSaverBuilder.SaveableObject.__name__ == "SaveableObject"
    assert resources.initialize_resources.__module__ == "tensorflux.variables.resources"


# ---- errors -----------------------------------------------------------------------------


def test_labels_out_of_range_raise_invalid_argument():
    x, y, _, train, _, sess = _forest(3, 2, num_trees=1)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"(?s)label 2 outside \[0, 2\).*(UpdateModelV4|ProcessInputV4)"):
        sess.run(train, {x: np.zeros((4, 3), np.float32), y: [0, 1, 2, 0]})
    with pytest.raises(tf.errors.InvalidArgumentError, match="label -1"):
        sess.run(train, {x: np.zeros((4, 3), np.float32), y: [0, 1, -1, 0]})


def test_wrong_feature_count_raises_invalid_argument():
    x = tf.placeholder(tf.float32, [None, None])
    hparams = tensor_forest.ForestHParams(num_classes=2, num_features=5, num_trees=1).fill()
    forest = tensor_forest.RandomForestGraphs(hparams)
    probs, _, _ = forest.inference_graph(x)
    with tf.Session() as sess:
        sess.run(resources.initialize_resources(resources.shared_resources()))
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"(?s)has 3 features, but the forest was built for 5.*"
                                 r"node TreePredictionsV4"):
            sess.run(probs, {x: np.zeros((2, 3), np.float32)})


def test_using_a_tree_before_initialization_is_not_found():
    x, _, _, _, (probs, _, _), _ = _forest(3, 2, num_trees=1)
    with tf.Session() as sess, pytest.raises(tf.errors.NotFoundError, match="tree-0"):
        sess.run(probs, {x: np.zeros((1, 3), np.float32)})


def test_monitored_training_session_initializes_and_checkpoints_the_forest(digits, tmp_path):
    # TF1's Scaffold initializes the shared resources and waits for them to be ready.
    data, labels = digits
    x = tf.placeholder(tf.float32, [None, 64])
    y = tf.placeholder(tf.int32, [None])
    hparams = tensor_forest.ForestHParams(num_classes=10, num_features=64, num_trees=2,
                                          max_nodes=100, split_after_samples=30,
                                          base_random_seed=4).fill()
    forest = tensor_forest.RandomForestGraphs(hparams)
    train = tf.group(forest.training_graph(x, y), tf.train.get_or_create_global_step()
                     .assign_add(1))
    probs, _, _ = forest.inference_graph(x)
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path),
                                           save_checkpoint_steps=5) as sess:
        for step in range(10):
            idx = np.arange(step * 128, (step + 1) * 128) % len(data)
            sess.run(train, {x: data[idx], y: labels[idx]})
        want = sess.run(probs, {x: data[:50]})
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path)) as sess:
        np.testing.assert_array_equal(sess.run(probs, {x: data[:50]}), want)


# ---- the Estimator (client.random_forest) ------------------------------------------------


def test_estimator_fits_evaluates_and_predicts(digits, tmp_path):
    from tensorflux.contrib.tensor_forest.client import random_forest

    data, labels = digits
    hparams = tensor_forest.ForestHParams(num_classes=10, num_features=64, num_trees=5,
                                          max_nodes=500, base_random_seed=2)
    est = random_forest.TensorForestEstimator(hparams, model_dir=str(tmp_path))
    est.fit(x=data[:1500], y=labels[:1500], steps=40, batch_size=128)
    metrics = est.evaluate(x=data[1500:], y=labels[1500:])
    assert metrics["global_step"] == 40 and metrics["accuracy"] > 0.6, metrics
    out = est.predict(x=data[1500:1520], as_iterable=False)
    assert out["probabilities"].shape == (20, 10)
    assert (out["classes"] == out["probabilities"].argmax(1)).all()
    assert (out["classes"] == labels[1500:1520]).mean() > 0.5


def test_estimator_regression_and_early_stopping(tmp_path):
    from tensorflux.contrib.tensor_forest.client import random_forest

    rng = np.random.RandomState(0)
    data = rng.rand(2000, 2).astype(np.float32)
    target = np.where(data[:, :1] > 0.5, 3.0, 1.0).astype(np.float32)
    hparams = tensor_forest.ForestHParams(num_classes=1, num_features=2, num_trees=2,
                                          max_nodes=15, split_after_samples=40,
                                          num_splits_to_consider=30, regression=True,
                                          base_random_seed=1)
    est = random_forest.CoreTensorForestEstimator(hparams, model_dir=str(tmp_path),
                                                  early_stopping_rounds=5)
    input_fn = tf.estimator.inputs.numpy_input_fn({"features": data}, target, batch_size=100,
                                                  num_epochs=None, shuffle=True)
    est.train(input_fn, steps=200)  # the trees stop growing, the loss stays: stops early
    step = est.get_variable_value("global_step")
    assert 5 < step < 200
    test = np.array([[0.1, 0.5], [0.9, 0.5]], np.float32)
    pred = est.predict(x=test, as_iterable=False)["scores"]
    np.testing.assert_allclose(pred[:, 0], [1.0, 3.0], atol=0.3)


def _train_under(options, data, labels):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 64])
        y = tf.placeholder(tf.int32, [None])
        hparams = tensor_forest.ForestHParams(num_classes=10, num_features=64, num_trees=2,
                                              max_nodes=60, split_after_samples=25,
                                              bagging_fraction=0.8, base_random_seed=6).fill()
        forest = tensor_forest.RandomForestGraphs(hparams)
        train = forest.training_graph(x, y)
        probs, _, _ = forest.inference_graph(x)
        with tf.Session(exec_options=options) as sess:
            sess.run(tf.group(tf.global_variables_initializer(),
                              resources.initialize_resources(resources.shared_resources())))
            for step in range(8):
                idx = np.arange(step * 100, step * 100 + 100)
                sess.run(train, {x: data[idx], y: labels[idx]})
            return sess.run(probs, {x: data[:100]})


def test_every_strategy_trains_as_the_reference(digits):
    from tests.op_test_util import STRATEGIES

    data, labels = digits
    want = _train_under(STRATEGIES["reference"], data, labels)
    assert want.any()
    for name, options in STRATEGIES.items():
        np.testing.assert_array_equal(_train_under(options, data, labels), want, err_msg=name)


def _write_idx(path, magic, arr):
    import gzip
    import struct

    with gzip.open(path, "wb") as f:
        f.write(struct.pack(">I", magic) + b"".join(struct.pack(">I", n) for n in arr.shape))
        f.write(arr.tobytes())


def test_aymericdamiens_random_forest_program(digits, tmp_path):
    # examples/2_BasicModels/random_forest.py's statements, on MNIST-shaped idx files made
    # from the digits (8x8 -> 28x28), with fewer steps.
    from tensorflux.examples.tutorials.mnist import input_data

    data, labels = digits
    images = np.zeros((len(data), 28, 28), np.uint8)
    images[:, 2:26, 2:26] = np.kron(data.reshape(-1, 8, 8) * 255, np.ones((3, 3)))
    for prefix, rows in (("train", slice(0, 1500)), ("t10k", slice(1500, None))):
        _write_idx(tmp_path / f"{prefix}-images-idx3-ubyte.gz", 2051, images[rows])
        _write_idx(tmp_path / f"{prefix}-labels-idx1-ubyte.gz", 2049,
                   labels[rows].astype(np.uint8))
    mnist = input_data.read_data_sets(str(tmp_path), one_hot=False, validation_size=0)
    X = tf.placeholder(tf.float32, shape=[None, 784])  # noqa: N806 - the program's names
    Y = tf.placeholder(tf.int32, shape=[None])  # noqa: N806
    hparams = tensor_forest.ForestHParams(num_classes=10, num_features=784, num_trees=10,
                                          max_nodes=1000).fill()
    forest_graph = tensor_forest.RandomForestGraphs(hparams)
    train_op = forest_graph.training_graph(X, Y)
    loss_op = forest_graph.training_loss(X, Y)
    infer_op, _, _ = forest_graph.inference_graph(X)
    correct_prediction = tf.equal(tf.argmax(infer_op, 1), tf.cast(Y, tf.int64))
    accuracy_op = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))
    init_vars = tf.group(tf.global_variables_initializer(),
                         resources.initialize_resources(resources.shared_resources()))
    sess = tf.Session()
    sess.run(init_vars)
    losses = []
    for _ in range(40):
        batch_x, batch_y = mnist.train.next_batch(256)
        _, loss = sess.run([train_op, loss_op], feed_dict={X: batch_x, Y: batch_y})
        losses.append(loss)
    assert losses[-1] < losses[0] < 0  # minus the average tree size
    test_x, test_y = mnist.test.images, mnist.test.labels
    assert sess.run(accuracy_op, feed_dict={X: test_x, Y: test_y}) > 0.7


def test_leaf_ids_outside_the_tree_are_invalid():
    from tensorflux.contrib.tensor_forest.python.ops import model_ops

    x, y, forest, _, _, sess = _forest(3, 2, num_trees=1)
    update = model_ops.update_model_v4(forest.variables[0].tree, [0, 5], [0.0, 1.0], [],
                                       params=forest.params.serialized_params_proto)
    with pytest.raises(tf.errors.InvalidArgumentError, match="node ids of the tree"):
        sess.run(update)
    del x, y
