"""`tf.contrib.estimator` (TF1.15): the heads' factories (`binary_classification_head`,
`multi_class_head`, `multi_label_head`, `regression_head`, `poisson_regression_head`,
`logistic_regression_head`, `multi_head`), the estimators of a head (`DNNEstimator`,
`LinearEstimator`, `DNNLinearCombinedEstimator`, `BaselineEstimator`, and the recurrent
`RNNEstimator` / `RNNClassifier` over sequence feature columns), `forward_features`,
`clip_gradients_by_norm`, `add_metrics`, `call_logit_fn`, `dnn_logit_fn_builder`,
`linear_logit_fn_builder`, `InMemoryEvaluatorHook`, `make_stop_at_checkpoint_step_hook`,
the early-stopping hooks
of tf.estimator.experimental, `export_saved_model_for_mode` / `export_all_saved_models`
with the supervised receivers of TRAIN and EVAL graphs
(`build_raw_supervised_input_receiver_fn`,
`build_supervised_input_receiver_fn_from_input_fn`) and the boosted-trees trainers of
in-memory data; `replicate_model_fn` / `TowerOptimizer` (contrib/estimator_replicate.py)."""

from __future__ import annotations

from tensorflux.contrib.estimator_replicate import TowerOptimizer, replicate_model_fn
from tensorflux.estimator import export_modes
from tensorflux.estimator.boosted_trees import BoostedTreesClassifier, BoostedTreesRegressor
from tensorflux.estimator.canned import (
    BaselineEstimator,
    DNNEstimator,
    DNNLinearCombinedEstimator,
    LinearEstimator,
    dnn_logit_fn_builder,
    linear_logit_fn_builder,
)
from tensorflux.estimator.eval_hooks import (
    InMemoryEvaluatorHook,
    make_stop_at_checkpoint_step_hook,
)
from tensorflux.estimator.export_modes import (
    build_raw_supervised_input_receiver_fn,
    build_supervised_input_receiver_fn_from_input_fn,
)
from tensorflux.estimator.extras import (
    add_metrics,
    call_logit_fn,
    make_early_stopping_hook,
    read_eval_metrics,
    stop_if_higher_hook,
    stop_if_lower_hook,
    stop_if_no_decrease_hook,
    stop_if_no_increase_hook,
)
from tensorflux.estimator.heads import (
    binary_classification_head,
    logistic_regression_head,
    multi_class_head,
    multi_head,
    multi_label_head,
    poisson_regression_head,
    regression_head,
)
from tensorflux.estimator.model_fn import ModeKeys
from tensorflux.estimator.rnn_estimator import RNNClassifier, RNNEstimator
from tensorflux.train.optimizer import Optimizer

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


# ---- forward_features -----------------------------------------------------------------


def forward_features(estimator, keys=None, sparse_default_values=None):
    """An Estimator like `estimator` whose predictions (and "predict"-style export outputs)
    also carry the features named by `keys` (a name or a list; None: every feature). A
    SparseTensor feature is densified with `sparse_default_values[key]` (default 0 / "").

    Raises:
      TypeError: `keys` is not a string or a list of strings.
      ValueError: the model's predictions are not a dict; a key is missing from the
        features or already a prediction key.
    """
    from tensorflux.estimator.estimator import Estimator

    if keys is not None and not isinstance(keys, (str, list, tuple)):
        raise TypeError(f"keys should be either a string or a list of strings. Given: "
                        f"{type(keys)}")
    if isinstance(keys, str):
        keys = [keys]
    for k in keys or ():
        if not isinstance(k, str):
            raise TypeError(f"keys should be either a string or a list of strings. Given "
                            f"one of the keys: {k!r}")

    def model_fn(features, labels, mode, config):
        spec = estimator._call_model_fn(features, labels, mode)
        if mode != ModeKeys.PREDICT:
            return spec
        if not isinstance(spec.predictions, dict):
            raise ValueError(f"Predictions should be a dict to be able to forward features. "
                             f"Given: {type(spec.predictions)}")
        wanted = list(features) if keys is None else keys
        predictions = dict(spec.predictions)
        forwarded = {}
        for k in wanted:
            if not isinstance(features, dict) or k not in features:
                raise ValueError(f"Key ({k}) is not in features dict. features dict keys: "
                                 f"{sorted(features) if isinstance(features, dict) else []}")
            if k in predictions:
                raise ValueError(f"Cannot forward feature key ({k}). Since it does exist in "
                                 f"predictions. Existing prediction keys: "
                                 f"{sorted(predictions)}")
            forwarded[k] = _dense_feature(features[k], (sparse_default_values or {}).get(k))
        predictions.update(forwarded)
        return spec._replace(predictions=predictions,
                             export_outputs=_forward_outputs(spec.export_outputs, forwarded))

    return Estimator(model_fn, model_dir=estimator.model_dir, config=estimator.config,
                     params=estimator.params)


def _dense_feature(value, default):
    from tensorflux.framework import dtypes
    from tensorflux.ops import sparse_ops

    if hasattr(value, "indices") and hasattr(value, "dense_shape"):
        if default is None:
            default = "" if value.dtype == dtypes.string else 0
        return sparse_ops.sparse_tensor_to_dense(value, default_value=default)
    return value


def _forward_outputs(outputs, forwarded):
    from tensorflux.estimator import export as export_lib

    if not outputs:
        return outputs
    out = {}
    for key, value in outputs.items():
        if isinstance(value, export_lib.PredictOutput):
            value = export_lib.PredictOutput({**value.outputs, **forwarded})
        out[key] = value
    return out


# ---- clip_gradients_by_norm --------------------------------------------------------------


class _ClippedOptimizer(Optimizer):
    """`optimizer` whose gradients are scaled down to a global norm of at most
    `clip_norm` before they are applied."""

    def __init__(self, optimizer, clip_norm):
        super().__init__(False, "ClipByNorm" + optimizer.get_name())
        self._inner, self._clip_norm = optimizer, clip_norm

    def compute_gradients(self, loss, var_list=None, **kwargs):
        from tensorflux.nn import clip_ops

        pairs = self._inner.compute_gradients(loss, var_list=var_list, **kwargs)
        kept = [(g, v) for g, v in pairs if g is not None]
        clipped, _ = clip_ops.clip_by_global_norm([g for g, _ in kept], self._clip_norm)
        by_var = {id(v): c for (_, v), c in zip(kept, clipped, strict=True)}
        return [(by_var.get(id(v)), v) for _, v in pairs]

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        return self._inner.apply_gradients(grads_and_vars, global_step=global_step,
                                           name=name)

    def get_slot(self, var, name):
        return self._inner.get_slot(var, name)

    def get_slot_names(self):
        return self._inner.get_slot_names()

    def variables(self):
        return self._inner.variables()


def clip_gradients_by_norm(optimizer, clip_norm):
    """An optimizer like `optimizer` that first clips the gradients to a global norm of
    `clip_norm` (tf.clip_by_global_norm)."""
    return _ClippedOptimizer(optimizer, clip_norm)


# ---- export by mode ------------------------------------------------------------------------


def export_saved_model_for_mode(estimator, export_dir_base, input_receiver_fn,
                                assets_extra=None, as_text=False, checkpoint_path=None,
                                strip_default_attrs=True, mode=ModeKeys.PREDICT):
    """A SavedModel of `estimator`'s graph of `mode` (TRAIN and EVAL take a supervised
    receiver_fn; see tensorflux/estimator/export_modes.py); returns its directory.

    Raises:
      ValueError: no checkpoint; an unknown mode; a receiver_fn of the wrong kind.
    """
    return export_modes.export_all_saved_models(
        estimator, export_dir_base, {mode: input_receiver_fn}, assets_extra=assets_extra,
        as_text=as_text, checkpoint_path=checkpoint_path)


def export_all_saved_models(estimator, export_dir_base, input_receiver_fn_map,
                            assets_extra=None, as_text=False, checkpoint_path=None,
                            strip_default_attrs=True):
    """One SavedModel of the modes of `input_receiver_fn_map` ({mode: receiver_fn});
    returns its directory.

    Raises:
      ValueError: as export_saved_model_for_mode.
    """
    return export_modes.export_all_saved_models(
        estimator, export_dir_base, input_receiver_fn_map, assets_extra=assets_extra,
        as_text=as_text, checkpoint_path=checkpoint_path)


__all__ = ["boosted_trees_classifier_train_in_memory",
           "boosted_trees_regressor_train_in_memory", "binary_classification_head",
           "multi_class_head", "multi_label_head", "regression_head",
           "poisson_regression_head", "logistic_regression_head", "multi_head",
           "DNNEstimator", "LinearEstimator", "DNNLinearCombinedEstimator",
           "BaselineEstimator", "forward_features", "clip_gradients_by_norm", "add_metrics",
           "InMemoryEvaluatorHook", "make_early_stopping_hook", "read_eval_metrics",
           "stop_if_higher_hook", "stop_if_lower_hook", "stop_if_no_decrease_hook",
           "stop_if_no_increase_hook", "export_saved_model_for_mode",
           "export_all_saved_models", "RNNClassifier", "RNNEstimator", "call_logit_fn",
           "dnn_logit_fn_builder", "linear_logit_fn_builder",
           "make_stop_at_checkpoint_step_hook", "build_raw_supervised_input_receiver_fn",
           "build_supervised_input_receiver_fn_from_input_fn", "replicate_model_fn",
           "TowerOptimizer"]


def _register_tf1_paths():
    import sys

    from tensorflux.contrib import estimator_replicate, tf1_paths

    return tf1_paths.register(__name__, {
        "python.estimator.replicate_model_fn": estimator_replicate,
        "python.estimator.extenders": sys.modules[__name__]})


python = _register_tf1_paths()
