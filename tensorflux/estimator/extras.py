"""TF1's smaller tf.estimator pieces: `add_metrics`, `classifier_parse_example_spec`,
`regressor_parse_example_spec`, and `tf.estimator.experimental`'s early stopping
(`stop_if_higher_hook` & co., `make_early_stopping_hook`, `read_eval_metrics`) and
`call_logit_fn`.

Early stopping: a hook that, every `run_every_secs` seconds or `run_every_steps` steps of
training, reads the evaluations written to the estimator's eval directory
(`read_eval_metrics`: {global step: {tag: value}}, in step order) and asks `should_stop_fn`;
when it says so the training stops (`request_stop`), as TF1's single-process hook does.
"""

from __future__ import annotations

import collections
import glob
import os
import time

from tensorflux.estimator.model_fn import EstimatorSpec, ModeKeys
from tensorflux.framework import dtypes
from tensorflux.train.session_run_hook import SessionRunHook

__all__ = ["add_metrics", "classifier_parse_example_spec", "regressor_parse_example_spec"]


def add_metrics(estimator, metric_fn):
    """An Estimator like `estimator` whose evaluations also report `metric_fn`'s metrics
    (`metric_fn(labels, predictions[, features][, config])` -> {name: (value, update)}; a
    name the model already reports is replaced).

    Raises:
      ValueError: `metric_fn` takes an argument other than labels, predictions, features
        and config.
    """
    from tensorflux.estimator.estimator import Estimator, _args, _call_with

    allowed = {"labels", "predictions", "features", "config"}
    extra = set(_args(metric_fn)) - allowed
    if extra:
        raise ValueError(f"metric_fn ({metric_fn}) has the arguments {sorted(extra)}; it "
                         f"may take only {sorted(allowed)}")

    def model_fn(features, labels, mode, config):
        spec = estimator._call_model_fn(features, labels, mode)
        if mode != ModeKeys.EVAL:
            return spec
        more = _call_with(metric_fn, {"labels": labels, "predictions": spec.predictions,
                                      "features": features, "config": config})
        ops = dict(spec.eval_metric_ops or {})
        ops.update(more)
        return spec._replace(eval_metric_ops=ops) if isinstance(spec, EstimatorSpec) else spec

    return Estimator(model_fn, model_dir=estimator.model_dir, config=estimator.config,
                     params=estimator.params)


def _with_label(feature_columns, label_key, spec_of_label, weight_column):
    from tensorflux.feature_column.feature_column import make_parse_example_spec

    spec = make_parse_example_spec(feature_columns)
    if label_key in spec:
        raise ValueError(f"label should not be used as feature. label_key: {label_key}, "
                         f"features: {sorted(spec)}")
    spec[label_key] = spec_of_label
    if isinstance(weight_column, str):
        spec[weight_column] = _fixed((1,), dtypes.float32, None)
    elif weight_column is not None:
        spec.update(make_parse_example_spec([weight_column]))
    return spec


def _fixed(shape, dtype, default):
    from tensorflux.ops.parsing_ops import FixedLenFeature

    return FixedLenFeature(shape, dtype, default)


def classifier_parse_example_spec(feature_columns, label_key, label_dtype=dtypes.int64,
                                  label_default=None, weight_column=None) -> dict:
    """`parse_example`'s spec for the features, an int64 (or string) label of shape [1] and
    an optional weight column, as the canned classifiers read tf.Examples."""
    return _with_label(feature_columns, label_key,
                       _fixed((1,), label_dtype, label_default), weight_column)


def regressor_parse_example_spec(feature_columns, label_key, label_dtype=dtypes.float32,
                                 label_default=None, label_dimension=1,
                                 weight_column=None) -> dict:
    """`parse_example`'s spec for the features, a float label of [label_dimension] and an
    optional weight column, as the canned regressors read tf.Examples."""
    return _with_label(feature_columns, label_key,
                       _fixed((label_dimension,), label_dtype, label_default), weight_column)


# ---- tf.estimator.experimental -------------------------------------------------------


def read_eval_metrics(eval_dir) -> collections.OrderedDict:
    """{global step: {tag: value}} of the evaluation summaries in `eval_dir`'s event files,
    in step order (a later event of a step updates its tags)."""
    from tensorflux.summary import summary_iterator

    by_step: dict[int, dict] = {}
    for path in sorted(glob.glob(os.path.join(os.fspath(eval_dir), "*.tfevents.*"))):
        for event in summary_iterator.summary_iterator(path):
            if not event.HasField("summary"):
                continue
            values = {v.tag: v.simple_value for v in event.summary.value
                      if v.HasField("simple_value")}
            if values:
                by_step.setdefault(event.step, {}).update(values)
    return collections.OrderedDict(sorted(by_step.items()))


class _StopOnPredicateHook(SessionRunHook):
    """Asks `should_stop_fn` every `run_every_secs` seconds or `run_every_steps` steps and
    stops the training when it answers True."""

    def __init__(self, should_stop_fn, run_every_secs=60, run_every_steps=None):
        if not callable(should_stop_fn):
            raise TypeError("`should_stop_fn` must be callable.")
        if (run_every_secs is None) == (run_every_steps is None):
            raise ValueError("Exactly one of run_every_secs and run_every_steps must be "
                             "provided.")
        self._fn, self._secs, self._steps = should_stop_fn, run_every_secs, run_every_steps
        self._last_time = time.monotonic()
        self._count = 0

    def after_run(self, run_context, run_values):
        self._count += 1
        if self._steps is not None:
            due = self._count % self._steps == 0
        else:
            due = time.monotonic() - self._last_time >= self._secs
        if due:
            self._last_time = time.monotonic()
            if self._fn():
                run_context.request_stop()


def make_early_stopping_hook(estimator, should_stop_fn, run_every_secs=60,
                             run_every_steps=None):
    """A training hook stopping when `should_stop_fn()` returns True (checked every
    `run_every_secs` seconds or `run_every_steps` steps).

    Raises:
      TypeError: `should_stop_fn` is not callable.
      ValueError: not exactly one of `run_every_secs` and `run_every_steps`.
    """
    del estimator
    return _StopOnPredicateHook(should_stop_fn, run_every_secs, run_every_steps)


def _threshold_hook(estimator, metric_name, threshold, beyond, eval_dir, min_steps,
                    run_every_secs, run_every_steps):
    eval_dir = eval_dir or estimator.eval_dir()

    def should_stop():
        for step, metrics in read_eval_metrics(eval_dir).items():
            if step < min_steps or metric_name not in metrics:
                continue
            if beyond(metrics[metric_name], threshold):
                return True
        return False

    return make_early_stopping_hook(estimator, should_stop, run_every_secs, run_every_steps)


def _no_improvement_hook(estimator, metric_name, max_steps, better, eval_dir, min_steps,
                         run_every_secs, run_every_steps):
    eval_dir = eval_dir or estimator.eval_dir()

    def should_stop():
        best = best_step = None
        for step, metrics in read_eval_metrics(eval_dir).items():
            if step < min_steps or metric_name not in metrics:
                continue
            value = metrics[metric_name]
            if best is None or better(value, best):
                best, best_step = value, step
            if step - best_step >= max_steps:
                return True
        return False

    return make_early_stopping_hook(estimator, should_stop, run_every_secs, run_every_steps)


def stop_if_higher_hook(estimator, metric_name, threshold, eval_dir=None, min_steps=0,
                        run_every_secs=60, run_every_steps=None):
    """Stops training once an evaluation at step >= min_steps has `metric_name` above
    `threshold`."""
    return _threshold_hook(estimator, metric_name, threshold, lambda v, t: v > t, eval_dir,
                           min_steps, run_every_secs, run_every_steps)


def stop_if_lower_hook(estimator, metric_name, threshold, eval_dir=None, min_steps=0,
                       run_every_secs=60, run_every_steps=None):
    """Stops training once an evaluation has `metric_name` below `threshold`."""
    return _threshold_hook(estimator, metric_name, threshold, lambda v, t: v < t, eval_dir,
                           min_steps, run_every_secs, run_every_steps)


def stop_if_no_increase_hook(estimator, metric_name, max_steps_without_increase,
                             eval_dir=None, min_steps=0, run_every_secs=60,
                             run_every_steps=None):
    """Stops training once `metric_name` has not risen for `max_steps_without_increase`
    global steps of evaluations."""
    return _no_improvement_hook(estimator, metric_name, max_steps_without_increase,
                                lambda v, best: v > best, eval_dir, min_steps,
                                run_every_secs, run_every_steps)


def stop_if_no_decrease_hook(estimator, metric_name, max_steps_without_decrease,
                             eval_dir=None, min_steps=0, run_every_secs=60,
                             run_every_steps=None):
    """Stops training once `metric_name` has not fallen for `max_steps_without_decrease`
    global steps of evaluations."""
    return _no_improvement_hook(estimator, metric_name, max_steps_without_decrease,
                                lambda v, best: v < best, eval_dir, min_steps,
                                run_every_secs, run_every_steps)


def call_logit_fn(logit_fn, features, mode, params, config):
    """`logit_fn` called with the arguments it takes of (features, mode, params, config).

    Raises:
      ValueError: it returns something other than a Tensor or a dict of Tensors.
    """
    from tensorflux.estimator.estimator import _call_with
    from tensorflux.framework.operation import Tensor

    logits = _call_with(logit_fn, {"features": features, "mode": mode, "params": params,
                                   "config": config})
    if isinstance(logits, dict):
        if not all(isinstance(v, Tensor) for v in logits.values()):
            raise ValueError(f"logit_fn should return a Tensor or a dictionary mapping "
                             f"strings to Tensors.  logit_fn returned: {logits}")
    elif not isinstance(logits, Tensor):
        raise ValueError(f"logit_fn should return a Tensor or a dictionary mapping strings "
                         f"to Tensors.  logit_fn returned: {logits}")
    return logits
