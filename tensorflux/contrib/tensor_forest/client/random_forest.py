"""`tensorflow.contrib.tensor_forest.client.random_forest`: a random forest as an Estimator.

`TensorForestEstimator(params, model_dir=...)` (and TF 1.15's `CoreTensorForestEstimator`,
the same class here) is a `tf.estimator.Estimator` whose model_fn builds a
RandomForestGraphs: training runs the forest's training graph and advances the global step;
the loss is the head's on the forest's output taken as logits, as TF's tf.learn heads
did (softmax cross-entropy of the class probabilities, the log-odds of class 1 for two
classes; squared error for regression); predictions are `probabilities` and `classes`
(`scores` for regression) with `prediction_variance`. TensorForestLossHook stops training
once the loss has not improved for `early_stopping_rounds` steps.

Besides the core API (train/evaluate/predict with an input_fn) it takes tf.learn's calls:
`fit(x=, y=, input_fn=, steps=, batch_size=)`, `evaluate(x=, y=, ...)`, `predict(x=, ...)`.
"""

from __future__ import annotations

import numpy as np

from tensorflux.contrib.tensor_forest.python import tensor_forest
from tensorflux.control_flow import builders
from tensorflux.estimator import inputs
from tensorflux.estimator.canned import _head
from tensorflux.estimator.estimator import Estimator
from tensorflux.estimator.model_fn import EstimatorSpec, ModeKeys
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.operation import Tensor
from tensorflux.ops import array_ops, math_ops, reduction_ops, slicing_ops, unary_ops
from tensorflux.platform import tf_logging as logging
from tensorflux.summary import summary
from tensorflux.train.global_step import get_global_step
from tensorflux.train.session_run_hook import SessionRunArgs, SessionRunHook

__all__ = ["TensorForestEstimator", "CoreTensorForestEstimator", "TensorForestLossHook",
           "get_model_fn"]

KEYS_NAME = "keys"
LOSS_NAME = "rf_training_loss"
EPSILON = 0.000001


class TensorForestLossHook(SessionRunHook):
    """Requests a stop once the loss has not fallen by `early_stopping_loss_threshold`
    (a fraction) for more than `early_stopping_rounds` steps."""

    def __init__(self, early_stopping_rounds, early_stopping_loss_threshold=None,
                 loss_op=None):
        self.early_stopping_rounds = early_stopping_rounds
        self.early_stopping_loss_threshold = early_stopping_loss_threshold or 0.0
        self.loss_op = loss_op
        self.min_loss = None
        self.last_step = -1
        self.steps = 0

    def before_run(self, run_context):
        return SessionRunArgs({"global_step": get_global_step(),
                               "current_loss": self.loss_op})

    def after_run(self, run_context, run_values):
        loss = run_values.results["current_loss"]
        step = run_values.results["global_step"]
        self.steps += 1
        if self.last_step == -1 or self.last_step > step:  # a restart: start over
            self.last_step, self.steps, self.min_loss = step, 0, None
            return
        self.last_step = step
        if self.min_loss is None or \
                loss < self.min_loss - self.min_loss * self.early_stopping_loss_threshold:
            self.min_loss, self.steps = loss, 0
        if self.steps > self.early_stopping_rounds:
            logging.info("TensorForestLossHook requesting stop.")
            run_context.request_stop()


def _logits(params, probabilities):
    """TF's trick: two classes become the log-odds of class 1 (clipped away from 0/1)."""
    if params.regression or params.num_classes != 2:
        return probabilities
    p1 = slicing_ops.slice(probabilities, [0, 1], [-1, 1])
    return unary_ops.log(math_ops.maximum(p1 / math_ops.maximum(1.0 - p1, EPSILON), EPSILON))


def get_model_fn(params, graph_builder_class=tensor_forest.RandomForestGraphs,
                 device_assigner=None, weights_name=None, keys_name=None,
                 early_stopping_rounds=100, early_stopping_loss_threshold=0.001,
                 num_trainers=1, trainer_id=0, report_feature_importances=False,
                 local_eval=False):
    """The model_fn of a forest of `params` (filled ForestHParams)."""
    head = _head(None if params.regression else params.num_classes,
                 label_dimension=params.num_classes, weight_column=weights_name)

    def model_fn(features, labels, mode):
        if isinstance(features, Tensor):
            features = {"features": features}
        features = dict(features)
        weights = features.pop(weights_name, None) if weights_name else None
        keys = features.pop(keys_name, None) if keys_name else None
        assigner = None if mode == ModeKeys.PREDICT or (local_eval and mode == ModeKeys.EVAL) \
            else device_assigner
        forest = graph_builder_class(params, device_assigner=assigner)
        probabilities, _, variance = forest.inference_graph(features)
        summary.scalar("average_tree_size", forest.average_size())
        logits = _logits(params, probabilities)
        training_graph = None
        if labels is not None and mode == ModeKeys.TRAIN:
            with graph_lib.control_dependencies([logits.op]):
                training_graph = builders.group(
                    forest.training_graph(features, labels, input_weights=weights,
                                          num_trainers=num_trainers, trainer_id=trainer_id),
                    get_global_step().assign_add(1))
        if weights is not None:
            features[weights_name] = weights
        spec = head.create_estimator_spec(features, mode, logits, labels,
                                          train_op_fn=lambda loss: training_graph)
        predictions = _predictions(params, probabilities, variance, keys)
        loss = spec.loss
        if loss is not None:
            loss = math_ops.div(loss, math_ops.cast(array_ops.shape(logits)[0],
                                                    dtypes.float32), name=LOSS_NAME)
        hooks = []
        if report_feature_importances and mode == ModeKeys.TRAIN:
            logging.info("feature importances are reported by forest.feature_importances()")
        if early_stopping_rounds and mode == ModeKeys.TRAIN:
            hooks.append(TensorForestLossHook(early_stopping_rounds,
                                              early_stopping_loss_threshold, loss))
        return EstimatorSpec(mode, predictions=predictions, loss=loss,
                             train_op=spec.train_op, eval_metric_ops=spec.eval_metric_ops,
                             training_hooks=hooks)

    return model_fn


def _predictions(params, probabilities, variance, keys) -> dict:
    out = {"prediction_variance": variance}
    if params.regression:
        out["scores"] = probabilities
    else:
        out["probabilities"] = probabilities
        out["classes"] = reduction_ops.argmax(probabilities, axis=1)
    if keys is not None:
        out[KEYS_NAME] = keys
    return out


class TensorForestEstimator(Estimator):
    """An Estimator that trains and evaluates a random forest (see the module docstring).

    Args:
      params: ForestHParams (filled here).
      device_assigner: a device function for the trees' variables (or None).
      model_dir: where checkpoints and summaries go.
      graph_builder_class: the forest's graph builder (RandomForestGraphs).
      config: a RunConfig.
      weights_name: the feature holding per-example weights, if any.
      keys_name: a feature passed through to the predictions, if any.
      feature_engineering_fn: (features, labels) -> (features, labels), applied first.
      early_stopping_rounds: stop after this many steps without a lower loss (falsy: never).
      early_stopping_loss_threshold: the fraction by which the loss must fall.
      num_trainers, trainer_id: split the trees among trainers.
      report_feature_importances: unused here.
      local_eval: evaluate without the device assigner.
      version: unused.
      head: unused (the head follows params.regression).
    """

    def __init__(self, params, device_assigner=None, model_dir=None,
                 graph_builder_class=tensor_forest.RandomForestGraphs, config=None,
                 weights_name=None, keys_name=None, feature_engineering_fn=None,
                 early_stopping_rounds=100, early_stopping_loss_threshold=0.001,
                 num_trainers=1, trainer_id=0, report_feature_importances=False,
                 local_eval=False, version=None, head=None):
        del version, head
        model_fn = get_model_fn(params.fill(), graph_builder_class, device_assigner,
                                weights_name, keys_name, early_stopping_rounds,
                                early_stopping_loss_threshold, num_trainers, trainer_id,
                                report_feature_importances, local_eval)
        if feature_engineering_fn is not None:
            inner = model_fn

            def model_fn(features, labels, mode):
                features, labels = feature_engineering_fn(features, labels)
                return inner(features, labels, mode)

        super().__init__(model_fn, model_dir=model_dir, config=config)

    # ---- tf.learn's calls ---------------------------------------------------------------
    def fit(self, x=None, y=None, input_fn=None, steps=None, batch_size=None, monitors=None,
            max_steps=None):
        """Trains on arrays (x, y) or an input_fn; returns self."""
        input_fn = input_fn or inputs.numpy_input_fn(
            _as_float(x), _labels(y), batch_size=batch_size or 128, num_epochs=None,
            shuffle=True)
        return self.train(input_fn, hooks=monitors, steps=steps, max_steps=max_steps)

    def evaluate(self, x=None, y=None, input_fn=None, feed_fn=None, batch_size=None,
                 steps=None, metrics=None, name=None, checkpoint_path=None, hooks=None):
        """Evaluates on arrays (x, y) or an input_fn; returns the metrics' values."""
        del feed_fn, metrics
        input_fn = input_fn or inputs.numpy_input_fn(
            _as_float(x), _labels(y), batch_size=batch_size or 128, num_epochs=1,
            shuffle=False)
        return super().evaluate(input_fn, steps=steps, hooks=hooks,
                                checkpoint_path=checkpoint_path, name=name)

    def predict(self, x=None, input_fn=None, batch_size=None, outputs=None,
                as_iterable=True, predict_keys=None, hooks=None, checkpoint_path=None,
                yield_single_examples=True):
        """Predictions for arrays x or an input_fn: an iterable of dicts (or, with
        as_iterable=False, a dict of arrays)."""
        input_fn = input_fn or inputs.numpy_input_fn(
            _as_float(x), batch_size=batch_size or 128, num_epochs=1, shuffle=False)
        keys = predict_keys or outputs
        results = super().predict(input_fn, predict_keys=keys, hooks=hooks,
                                  checkpoint_path=checkpoint_path,
                                  yield_single_examples=yield_single_examples)
        if as_iterable:
            return results
        rows = list(results)
        return {k: np.stack([r[k] for r in rows]) for k in (rows[0] if rows else {})}


CoreTensorForestEstimator = TensorForestEstimator


def _as_float(x):
    if isinstance(x, dict):
        return {k: np.asarray(v, np.float32) for k, v in x.items()}
    return {"features": np.asarray(x, np.float32)}


def _labels(y):
    return None if y is None else np.asarray(y)
