"""`tf.contrib.estimator`: the boosted-trees trainers of in-memory data,
`boosted_trees_classifier_train_in_memory` and `boosted_trees_regressor_train_in_memory`
(the rest of TF1's contrib.estimator is not here)."""

from __future__ import annotations

from tensorflux.estimator.boosted_trees import BoostedTreesClassifier, BoostedTreesRegressor

_WHOLE = 2 ** 31 - 1  # one batch holds the whole data set


def _in_memory(train_input_fn):
    """An input_fn of the whole first epoch of `train_input_fn`'s unbatched dataset as one
    batch, over and over (each layer then grows from all the data)."""

    def input_fn():
        return train_input_fn().batch(_WHOLE).take(1).cache().repeat()

    return input_fn


def boosted_trees_classifier_train_in_memory(
        train_input_fn, feature_columns, model_dir=None, n_classes=2, weight_column=None,
        label_vocabulary=None, n_trees=100, max_depth=6, learning_rate=0.1,
        l1_regularization=0.0, l2_regularization=0.0, tree_complexity=0.0,
        min_node_weight=0.0, config=None, train_hooks=None, center_bias=False,
        pruning_mode="none", quantile_sketch_epsilon=0.01):
    """Trains a BoostedTreesClassifier on all of `train_input_fn`'s data at once and
    returns it.

    Args:
      train_input_fn: returns a Dataset of (features, label) examples, unbatched and
        finite; only its first epoch is used.
      The others: as BoostedTreesClassifier's; `train_hooks` run during training.

    Raises:
      ValueError: as BoostedTreesClassifier.
    """
    est = BoostedTreesClassifier(
        feature_columns, 1, model_dir=model_dir, n_classes=n_classes,
        weight_column=weight_column, label_vocabulary=label_vocabulary, n_trees=n_trees,
        max_depth=max_depth, learning_rate=learning_rate,
        l1_regularization=l1_regularization, l2_regularization=l2_regularization,
        tree_complexity=tree_complexity, min_node_weight=min_node_weight, config=config,
        center_bias=center_bias, pruning_mode=pruning_mode,
        quantile_sketch_epsilon=quantile_sketch_epsilon, train_in_memory=True)
    est.train(_in_memory(train_input_fn), hooks=train_hooks)
    return est


def boosted_trees_regressor_train_in_memory(
        train_input_fn, feature_columns, model_dir=None, label_dimension=1,
        weight_column=None, n_trees=100, max_depth=6, learning_rate=0.1,
        l1_regularization=0.0, l2_regularization=0.0, tree_complexity=0.0,
        min_node_weight=0.0, config=None, train_hooks=None, center_bias=False,
        pruning_mode="none", quantile_sketch_epsilon=0.01):
    """Trains a BoostedTreesRegressor on all of `train_input_fn`'s data at once and
    returns it (see boosted_trees_classifier_train_in_memory).

    Raises:
      ValueError: as BoostedTreesRegressor.
    """
    est = BoostedTreesRegressor(
        feature_columns, 1, model_dir=model_dir, label_dimension=label_dimension,
        weight_column=weight_column, n_trees=n_trees, max_depth=max_depth,
        learning_rate=learning_rate, l1_regularization=l1_regularization,
        l2_regularization=l2_regularization, tree_complexity=tree_complexity,
        min_node_weight=min_node_weight, config=config, center_bias=center_bias,
        pruning_mode=pruning_mode, quantile_sketch_epsilon=quantile_sketch_epsilon,
        train_in_memory=True)
    est.train(_in_memory(train_input_fn), hooks=train_hooks)
    return est


__all__ = ["boosted_trees_classifier_train_in_memory",
           "boosted_trees_regressor_train_in_memory"]
