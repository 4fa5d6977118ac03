"""ModeKeys and EstimatorSpec: what a model_fn is called with and what it returns."""

from __future__ import annotations

import collections

from tensorflux.estimator.export import DEFAULT_SERVING_KEY
from tensorflux.framework.operation import Operation, Tensor


class ModeKeys:
    """The mode a model_fn builds its graph for."""

    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


_SPEC_FIELDS = ("mode", "predictions", "loss", "train_op", "eval_metric_ops",
                "export_outputs", "training_chief_hooks", "training_hooks", "scaffold",
                "evaluation_hooks", "prediction_hooks")


class EstimatorSpec(collections.namedtuple("EstimatorSpec", _SPEC_FIELDS)):
    """The ops and objects a model_fn returns for one mode.

    TRAIN needs `loss` and `train_op`; EVAL needs `loss` (and takes `eval_metric_ops`: name ->
    a (value, update_op) pair or a metric); PREDICT needs `predictions` (a tensor or a dict of
    tensors).

    Raises:
      ValueError: what the mode needs is missing, or a value is of the wrong kind.
    """

    def __new__(cls, mode, predictions=None, loss=None, train_op=None, eval_metric_ops=None,
                export_outputs=None, training_chief_hooks=None, training_hooks=None,
                scaffold=None, evaluation_hooks=None, prediction_hooks=None):
        if mode not in (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT):
            raise ValueError(f"Invalid mode: {mode!r}.")
        if mode == ModeKeys.TRAIN and train_op is None:
            raise ValueError("Missing train_op.")
        if mode in (ModeKeys.TRAIN, ModeKeys.EVAL) and loss is None:
            raise ValueError("Missing loss.")
        if mode == ModeKeys.PREDICT and predictions is None:
            raise ValueError("Missing predictions.")
        if loss is not None:
            if not isinstance(loss, Tensor):
                raise TypeError(f"loss must be a Tensor. Given: {loss}")
            if loss.shape.ndims not in (None, 0) and loss.shape.num_elements() != 1:
                raise ValueError(f"Loss must be scalar, given: {loss}")
        if train_op is not None and not isinstance(train_op, (Tensor, Operation)):
            raise TypeError(f"train_op must be an Operation or a Tensor. Given: {train_op}")
        if predictions is not None:
            leaves = predictions.values() if isinstance(predictions, dict) else [predictions]
            for v in leaves:
                if not isinstance(v, Tensor) and not hasattr(v, "indices"):
                    raise TypeError(f"predictions must be a Tensor or a dict of Tensors. "
                                    f"Given: {predictions}")
        metrics = dict(eval_metric_ops or {})
        for key, value in metrics.items():
            if not (isinstance(value, tuple) and len(value) == 2):
                raise TypeError(f"Values of eval_metric_ops must be (metric_value, "
                                f"update_op) tuples, given: {value} for key: {key}")
        export_outputs = _export_outputs(export_outputs)
        hooks = [list(h or ()) for h in (training_chief_hooks, training_hooks,
                                         evaluation_hooks, prediction_hooks)]
        return super().__new__(cls, mode, predictions, loss, train_op, metrics,
                               export_outputs, hooks[0], hooks[1], scaffold, hooks[2],
                               hooks[3])


def _export_outputs(export_outputs):
    """`export_outputs` as TF1's EstimatorSpec keeps them: a single output is also the
    default serving signature ("serving_default"; the cloudml-samples census model exports
    {'prediction': PredictOutput(...)} and is served through the default); several need
    one of them under that key.

    Raises:
      TypeError: not a dict of export outputs.
      ValueError: several outputs and none is the default.
    """
    if export_outputs is None:
        return None
    if not isinstance(export_outputs, dict):
        raise TypeError(f"export_outputs must be dict, given: {export_outputs}")
    for value in export_outputs.values():
        if not hasattr(value, "as_signature_def"):
            raise TypeError(f"Values in export_outputs must be ExportOutput objects. Given: "
                            f"{export_outputs}")
    outputs = dict(export_outputs)
    if len(outputs) == 1:
        (value,) = outputs.values()
        outputs.setdefault(DEFAULT_SERVING_KEY, value)
    elif len(outputs) > 1 and DEFAULT_SERVING_KEY not in outputs:
        raise ValueError("Multiple export_outputs were provided, but none of them is "
                         "specified as the default.  Do this by naming one of them with "
                         "signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY.")
    return outputs
