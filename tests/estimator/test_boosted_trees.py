"""BoostedTreesClassifier and BoostedTreesRegressor as TF's boosted-trees tutorial uses them:
bucketized or float numeric columns (quantile boundaries), indicator columns, one batch per
layer, train/evaluate/predict;
checkpoints (the ensemble saved as TF names it), resumed training, stopping at n_trees,
several batches per layer, bias centering, feature importances and typed errors."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.protos import boosted_trees_pb2

fc = tf.feature_column
RNG = np.random.RandomState(0)
N = 240
X1 = RNG.uniform(-1, 1, N).astype(np.float32)
X2 = RNG.uniform(-1, 1, N).astype(np.float32)
CAT = RNG.choice(["a", "b", "c"], N)
Y = ((X1 * X2 > 0) ^ (CAT == "c")).astype(np.int64)
Y_REG = (2.0 * (X1 > 0.2) - np.abs(X2) + (CAT == "b")).astype(np.float32)
EDGES = list(np.linspace(-1, 1, 9)[1:-1])
COLUMNS = [fc.bucketized_column(fc.numeric_column("x1"), EDGES),
           fc.bucketized_column(fc.numeric_column("x2"), EDGES),
           fc.indicator_column(fc.categorical_column_with_vocabulary_list("cat",
                                                                           ["a", "b", "c"]))]
FEATURES = {"x1": X1, "x2": X2, "cat": CAT}


def _train_input(y, batch=N, features=FEATURES):
    return lambda: tf.data.Dataset.from_tensor_slices((features, y)).batch(batch).repeat()


def _eval_input(y, features=FEATURES):
    return lambda: tf.data.Dataset.from_tensor_slices((features, y)).batch(N)


def _predict_input(features=FEATURES):
    return lambda: tf.data.Dataset.from_tensor_slices(features).batch(64)


def _classifier(model_dir, **kw):
    kw.setdefault("n_trees", 6)
    kw.setdefault("max_depth", 3)
    return tf.estimator.BoostedTreesClassifier(COLUMNS, n_batches_per_layer=1,
                                               model_dir=model_dir, **kw)


def _logits(est, features=FEATURES):
    return np.array([p["logits"][0] for p in est.predict(_predict_input(features))])


def test_classifier_learns_and_restores_from_checkpoint(tmp_path):
    est = _classifier(str(tmp_path))
    est.train(_train_input(Y), max_steps=100)
    result = est.evaluate(_eval_input(Y), steps=1)
    assert result["accuracy"] > 0.85 and result["auc"] > 0.9
    assert result["global_step"] == 18  # 6 trees of 3 layers, then the stop hook
    predictions = list(est.predict(_predict_input()))
    assert set(predictions[0]) == {"logits", "logistic", "probabilities", "class_ids",
                                   "classes", "all_class_ids", "all_classes"}
    again = _classifier(str(tmp_path))  # a fresh Estimator on the same checkpoint
    np.testing.assert_array_equal(_logits(again), [p["logits"][0] for p in predictions])
    names = dict(tf.train.list_variables(str(tmp_path)))
    assert {"boosted_trees:0_stamp", "boosted_trees:0_serialized", "global_step"} <= set(names)
    proto = boosted_trees_pb2.TreeEnsemble.FromString(tf.train.load_variable(
        str(tmp_path), "boosted_trees:0_serialized"))
    assert sum(m.is_finalized for m in proto.tree_metadata) == 6
    assert all(m.num_layers_grown == 3 for m in proto.tree_metadata[:6])


def test_resumed_training_equals_one_run(tmp_path):
    whole, parts = str(tmp_path / "whole"), str(tmp_path / "parts")
    _classifier(whole).train(_train_input(Y), max_steps=8)
    est = _classifier(parts)
    est.train(_train_input(Y), max_steps=5)
    assert est.get_variable_value("global_step") == 5
    est.train(_train_input(Y), max_steps=8)
    assert est.get_variable_value("global_step") == 8
    np.testing.assert_allclose(_logits(est), _logits(_classifier(whole)), rtol=1e-6)


def test_training_stops_at_n_trees_and_then_stays(tmp_path):
    est = _classifier(str(tmp_path), n_trees=2, max_depth=2)
    est.train(_train_input(Y), max_steps=1000)
    assert est.get_variable_value("global_step") == 4
    before = _logits(est)
    est.train(_train_input(Y), steps=3)  # nothing left to grow: the ensemble stays
    np.testing.assert_array_equal(_logits(est), before)


@pytest.mark.parametrize("pruning_mode", ["pre", "post"])
def test_pruning_keeps_positive_gains_only(tmp_path, pruning_mode):
    y = (X2 > 0.1).astype(np.int64)
    est = _classifier(str(tmp_path), n_trees=3, pruning_mode=pruning_mode,
                      tree_complexity=0.002)
    est.train(_train_input(y), max_steps=100)
    proto = boosted_trees_pb2.TreeEnsemble.FromString(tf.train.load_variable(
        str(tmp_path), "boosted_trees:0_serialized"))
    gains = [n.metadata.gain for t in proto.trees for n in t.nodes
             if n.HasField("bucketized_split")]
    assert gains and min(gains) >= 0
    assert len(gains) < 3 * 7  # some splits were not made, or pruned
    assert est.evaluate(_eval_input(y), steps=1)["accuracy"] > 0.95


def test_regressor_learns(tmp_path):
    est = tf.estimator.BoostedTreesRegressor(COLUMNS, n_batches_per_layer=1,
                                             model_dir=str(tmp_path), n_trees=20,
                                             max_depth=3, learning_rate=0.3)
    est.train(_train_input(Y_REG), max_steps=100)
    result = est.evaluate(_eval_input(Y_REG), steps=1)
    assert result["average_loss"] < 0.1 * np.var(Y_REG)
    got = np.array([p["predictions"][0] for p in est.predict(_predict_input())])
    assert np.corrcoef(got, Y_REG)[0, 1] > 0.95


def test_label_vocabulary_and_weights(tmp_path):
    labels = np.where(Y == 1, "yes", "no")
    features = dict(FEATURES, w=np.where(Y == 1, 2.0, 1.0).astype(np.float32))
    est = _classifier(str(tmp_path / "a"), label_vocabulary=["no", "yes"], weight_column="w",
                      max_depth=4)
    est.train(_train_input(labels, features=features), max_steps=100)
    result = est.evaluate(_eval_input(labels, features=features), steps=1)
    assert result["accuracy"] > 0.85
    classes = {p["classes"][0] for p in est.predict(_predict_input(features))}
    assert classes == {b"no", b"yes"}
    # equal weights scale gradients and hessians alike: the same trees as no weights
    twos = dict(FEATURES, w=np.full(N, 2.0, np.float32))
    weighted = _classifier(str(tmp_path / "b"), weight_column="w", n_trees=2)
    weighted.train(_train_input(Y, features=twos), max_steps=100)
    plain = _classifier(str(tmp_path / "c"), n_trees=2)
    plain.train(_train_input(Y), max_steps=100)
    np.testing.assert_allclose(_logits(weighted, twos), _logits(plain), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("center_bias", [False, True])
def test_several_batches_per_layer(tmp_path, center_bias):
    est = tf.estimator.BoostedTreesClassifier(COLUMNS, n_batches_per_layer=3,
                                              model_dir=str(tmp_path), n_trees=3,
                                              max_depth=2, center_bias=center_bias)
    est.train(_train_input(Y, batch=N // 3), max_steps=100)
    whole = _classifier(str(tmp_path / "whole"), n_trees=3, max_depth=2,
                        center_bias=center_bias)
    whole.train(_train_input(Y), max_steps=100)
    # 3 batches per step of `whole`: 3 trees x 2 layers (and the centering steps)
    assert est.get_variable_value("global_step") == \
        3 * whole.get_variable_value("global_step")
    assert whole.get_variable_value("global_step") > (6 if center_bias else 5)
    # a layer grows (the bias moves) from the mean of its batches' statistics: here those
    # of the whole data
    np.testing.assert_allclose(_logits(est), _logits(whole), rtol=1e-4, atol=1e-5)


def test_center_bias_starts_from_the_label_mean(tmp_path):
    labels = (RNG.uniform(size=N) < 0.8).astype(np.int64)
    est = _classifier(str(tmp_path), center_bias=True, n_trees=1, max_depth=1)
    est.train(_train_input(labels), max_steps=4)
    proto = boosted_trees_pb2.TreeEnsemble.FromString(tf.train.load_variable(
        str(tmp_path), "boosted_trees:0_serialized"))
    root = proto.trees[0].nodes[0]
    bias = root.metadata.original_leaf.scalar if root.HasField("bucketized_split") else \
        root.leaf.scalar
    assert bias == pytest.approx(np.log(labels.mean() / (1 - labels.mean())), abs=0.05)


def test_feature_importances(tmp_path):
    y = (X2 > 0.1).astype(np.int64)
    est = _classifier(str(tmp_path), n_trees=3, max_depth=2)
    est.train(_train_input(y), max_steps=100)
    importances = est.experimental_feature_importances(normalize=True)
    assert list(importances)[0] == "x2"
    assert set(importances) == {"x1", "x2", "cat"}
    assert sum(importances.values()) == pytest.approx(1.0)
    raw = est.experimental_feature_importances()
    assert raw["x2"] > 0 and list(raw) == list(importances)
    (tmp_path / "none").mkdir()
    untrained = _classifier(str(tmp_path / "none"))
    with pytest.raises(ValueError):  # a model_dir with no checkpoint
        untrained.experimental_feature_importances()
    stumps = _classifier(str(tmp_path / "stumps"), n_trees=1, max_depth=1,
                         pruning_mode="pre", tree_complexity=1e6)
    stumps.train(_train_input(y), max_steps=3)  # no split is worth it
    assert set(stumps.experimental_feature_importances().values()) == {0.0}
    with pytest.raises(ValueError, match="root node"):
        stumps.experimental_feature_importances(normalize=True)


def test_breast_cancer(tmp_path):
    datasets = pytest.importorskip("sklearn.datasets")
    data = datasets.load_breast_cancer()
    x, y = data.data.astype(np.float32)[:, :10], data.target.astype(np.int64)
    order = RNG.permutation(len(y))
    train, test = order[:400], order[400:]
    columns, feats = [], {}
    for j in range(x.shape[1]):
        key = f"f{j}"
        edges = np.unique(np.quantile(x[train, j], np.linspace(0, 1, 12)[1:-1]))
        columns.append(fc.bucketized_column(fc.numeric_column(key), list(edges)))
        feats[key] = x[:, j]
    pick = lambda idx: {k: v[idx] for k, v in feats.items()}  # noqa: E731
    est = tf.estimator.BoostedTreesClassifier(columns, n_batches_per_layer=1,
                                              model_dir=str(tmp_path), n_trees=10,
                                              max_depth=3)
    est.train(lambda: tf.data.Dataset.from_tensor_slices((pick(train), y[train])).batch(400)
              .repeat(), max_steps=100)
    result = est.evaluate(lambda: tf.data.Dataset.from_tensor_slices(
        (pick(test), y[test])).batch(len(test)), steps=1)
    assert result["accuracy"] > 0.88


def test_float_numeric_columns_are_bucketized_by_quantiles(tmp_path):
    columns = [fc.numeric_column("x1"), fc.numeric_column("x2"), COLUMNS[2]]
    features = dict(FEATURES, x1=X1.astype(np.float64))  # a float64 feature, as pandas has
    est = tf.estimator.BoostedTreesClassifier(columns, 1, model_dir=str(tmp_path), n_trees=6,
                                              max_depth=3, quantile_sketch_epsilon=0.05)
    est.train(_train_input(Y, features=features), max_steps=100)
    # one step makes the quantile boundaries, then 6 trees of 3 layers
    assert est.get_variable_value("global_step") == 19
    assert est.evaluate(_eval_input(Y, features=features), steps=1)["accuracy"] > 0.85
    bounds = tf.train.load_variable(str(tmp_path),
                                    "boosted_trees/QuantileAccumulator:0_bucket_boundaries_0")
    assert bounds[0] == X1.min() and bounds[-1] == X1.max() and 10 <= bounds.size <= 21
    again = tf.estimator.BoostedTreesClassifier(columns, 1, model_dir=str(tmp_path))
    np.testing.assert_array_equal(_logits(again, features), _logits(est, features))
    assert set(est.experimental_feature_importances()) == {"x1", "x2", "cat"}


def test_quantiles_from_several_batches(tmp_path):
    columns = [fc.numeric_column("x", shape=(2,)), COLUMNS[2]]
    features = {"x": np.stack([X1, X2], axis=1), "cat": CAT}
    est = tf.estimator.BoostedTreesClassifier(columns, 3, model_dir=str(tmp_path), n_trees=2,
                                              max_depth=2)
    est.train(_train_input(Y, batch=N // 3, features=features), max_steps=100)
    # three batches of quantiles, then 2 trees x 2 layers x 3 batches
    assert est.get_variable_value("global_step") == 15
    for i, column in enumerate((X1, X2)):
        bounds = tf.train.load_variable(
            str(tmp_path), f"boosted_trees/QuantileAccumulator:0_bucket_boundaries_{i}")
        assert bounds[0] == column.min() and bounds[-1] == column.max()


@pytest.mark.parametrize("kwargs, match", [
    (dict(feature_columns=[fc.numeric_column("x1", dtype=tf.int64)]), "bucketized_column"),
    (dict(quantile_sketch_epsilon=0.0), "quantile_sketch_epsilon"),
    (dict(feature_columns=[fc.embedding_column(
        fc.categorical_column_with_vocabulary_list("cat", ["a"]), 2)]), "bucketized_column"),
    (dict(n_classes=3), "binary"),
    (dict(n_batches_per_layer=0), "n_batches_per_layer"),
    (dict(n_trees=0), "n_trees"),
    (dict(max_depth=0), "max_depth"),
    (dict(learning_rate=0.0), "learning_rate"),
    (dict(l2_regularization=-1.0), "l2"),
    (dict(pruning_mode="sometimes"), "pruning_mode"),
    (dict(tree_complexity=0.5), "Tree complexity"),
    (dict(pruning_mode="pre"), "tree_complexity"),
])
def test_bad_arguments_raise_value_error(tmp_path, kwargs, match):
    args = dict(feature_columns=COLUMNS, n_batches_per_layer=1, model_dir=str(tmp_path))
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        tf.estimator.BoostedTreesClassifier(**args)


def test_tree_ensemble_saved_and_restored_by_a_saver(tmp_path):
    from tensorflux.estimator.boosted_trees import TreeEnsemble
    from tensorflux.ops import boosted_trees_ops as bt

    proto = boosted_trees_pb2.TreeEnsemble()
    proto.trees.add().nodes.add().leaf.scalar = 1.25
    proto.tree_weights.append(1.0)
    proto.tree_metadata.add()
    with tf.Graph().as_default():
        ensemble = TreeEnsemble("ensemble", stamp_token=4,
                                serialized_proto=proto.SerializeToString())
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(ensemble.initializer)
            path = saver.save(sess, str(tmp_path / "model"))
    with tf.Graph().as_default():
        ensemble = TreeEnsemble("ensemble")
        logits = bt.predict(ensemble.resource_handle, [tf.constant([0, 3])], 1)
        saver = tf.train.Saver()
        with tf.Session() as sess:
            saver.restore(sess, path)
            assert sess.run(ensemble.get_states())[0] == 4
            np.testing.assert_allclose(sess.run(logits)[:, 0], [1.25, 1.25])


def test_predict_with_explanations_sums_to_the_probability(tmp_path):
    est = _classifier(str(tmp_path), center_bias=True, n_trees=3)
    est.train(_train_input(Y), max_steps=100)
    assert est.evaluate(_eval_input(Y), steps=1)["accuracy"] > 0.7  # trees grow after it
    explained = list(est.experimental_predict_with_explanations(_predict_input()))
    plain = list(est.predict(_predict_input()))
    assert len(explained) == N
    for got, want in zip(explained[:20], plain[:20], strict=True):
        assert list(got["dfc"]) == sorted(got["dfc"], key=lambda k: -abs(got["dfc"][k]))
        assert set(got["dfc"]) == {"x1", "x2", "cat"}
        total = got["bias"] + sum(got["dfc"].values())
        assert total == pytest.approx(float(want["probabilities"][1]), abs=1e-5)
        np.testing.assert_array_equal(got["logits"], want["logits"])
    assert abs(explained[0]["bias"] - Y.mean()) < 0.05  # the centered bias: the label mean
    assert any(abs(v) > 0.01 for got in explained for v in got["dfc"].values())
    with pytest.raises(ValueError, match="center_bias"):
        next(_classifier(str(tmp_path)).experimental_predict_with_explanations(
            _predict_input()))


def test_regressor_explanations_sum_to_the_prediction(tmp_path):
    est = tf.estimator.BoostedTreesRegressor(COLUMNS, n_batches_per_layer=1,
                                             model_dir=str(tmp_path), n_trees=3,
                                             max_depth=2, center_bias=True)
    est.train(_train_input(Y_REG), max_steps=100)
    for got in list(est.experimental_predict_with_explanations(_predict_input()))[:10]:
        total = got["bias"] + sum(got["dfc"].values())
        assert total == pytest.approx(float(got["predictions"][0]), abs=1e-5)


def test_exported_saved_model_predicts_the_same(tmp_path):
    est = _classifier(str(tmp_path), n_trees=2)
    est.train(_train_input(Y), max_steps=100)
    receiver = tf.estimator.export.build_raw_serving_input_receiver_fn({
        "x1": tf.placeholder(tf.float32, [None]), "x2": tf.placeholder(tf.float32, [None]),
        "cat": tf.placeholder(tf.string, [None])})
    path = est.export_saved_model(str(tmp_path / "export"), receiver)
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, ["serve"], path)
        sig = meta.signature_def["predict"]
        got = sess.run(sig.outputs["logits"].name, {
            sig.inputs["x1"].name: X1, sig.inputs["x2"].name: X2,
            sig.inputs["cat"].name: CAT})  # the vocabulary table initialized by main_op
    np.testing.assert_array_equal(got[:, 0], _logits(est))



def test_multi_element_bucketized_and_identity_indicator_columns(tmp_path):
    x = np.stack([X1, X2], axis=1)
    ids = RNG.randint(0, 5, N)
    y = ((X2 > 0) ^ (ids == 3)).astype(np.int64)
    columns = [fc.bucketized_column(fc.numeric_column("x", shape=(2,)), [-0.5, 0.0, 0.5]),
               fc.indicator_column(fc.categorical_column_with_identity("ids", 5))]
    features = {"x": x, "ids": ids, "w": np.ones(N, np.float32)}
    est = tf.estimator.BoostedTreesClassifier(columns, 1, model_dir=str(tmp_path), n_trees=3,
                                              max_depth=3, weight_column=fc.numeric_column("w"))
    est.train(_train_input(y, features=features), max_steps=100)
    assert est.evaluate(_eval_input(y, features=features), steps=1)["accuracy"] > 0.95
    assert set(est.experimental_feature_importances()) == {"x", "ids"}
