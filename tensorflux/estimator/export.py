"""tf.estimator.export: what a served model takes (ServingInputReceiver and its builders)
and gives (PredictOutput, ClassificationOutput, RegressionOutput), and the exporters that
train_and_evaluate runs after evaluations."""

from __future__ import annotations

import os
import shutil
import time

from tensorflux.framework import dtypes
from tensorflux.framework.operation import Tensor
from tensorflux.framework.sparse_tensor import SparseTensor

DEFAULT_SERVING_KEY = "serving_default"


def _as_dict(value, default_key: str) -> dict:
    return dict(value) if isinstance(value, dict) else {default_key: value}


class ServingInputReceiver:
    """`features` given to the model_fn, built from `receiver_tensors` (the placeholders a
    request fills; a single tensor is named "input")."""

    def __init__(self, features, receiver_tensors, receiver_tensors_alternatives=None):
        if features is None:
            raise ValueError("features must be defined.")
        self.features = features if isinstance(features, dict) or \
            isinstance(features, (Tensor, SparseTensor)) else dict(features)
        self.receiver_tensors = _as_dict(receiver_tensors, "input")
        for name, t in self.receiver_tensors.items():
            if not isinstance(t, Tensor):
                raise ValueError(f"receiver_tensor {name} must be a Tensor.")
        self.receiver_tensors_alternatives = receiver_tensors_alternatives


TensorServingInputReceiver = ServingInputReceiver


def build_raw_serving_input_receiver_fn(features, default_batch_size=None):
    """A receiver_fn whose placeholders have the dtypes and shapes of `features` (a dict
    of tensors or one tensor), with `default_batch_size` as the first dimension."""
    from tensorflux.ops import array_ops

    def receiver_fn():
        given = _as_dict(features, "input")
        tensors = {}
        for name, t in given.items():
            shape = [default_batch_size] + t.shape.as_list()[1:] if t.shape.ndims else None
            tensors[name] = array_ops.placeholder(t.dtype, shape, name=name)
        feats = tensors if isinstance(features, dict) else tensors["input"]
        return ServingInputReceiver(feats, tensors)
    return receiver_fn


def build_parsing_serving_input_receiver_fn(feature_spec, default_batch_size=None):
    """A receiver_fn taking serialized tf.Examples ("examples") parsed with
    `feature_spec`."""
    from tensorflux.ops import array_ops, parsing_ops

    def receiver_fn():
        serialized = array_ops.placeholder(dtypes.string, [default_batch_size],
                                           name="input_example_tensor")
        feats = parsing_ops.parse_example(serialized, feature_spec)
        return ServingInputReceiver(feats, {"examples": serialized})
    return receiver_fn


class PredictOutput:
    """Outputs served by the Predict API: a tensor ("output") or a dict of tensors."""

    def __init__(self, outputs):
        self.outputs = _as_dict(outputs, "output")

    def as_signature_def(self, receiver_tensors):
        from tensorflux.saved_model import signature_def_utils

        return signature_def_utils.predict_signature_def(receiver_tensors, self.outputs)


def _single_string_input(receiver_tensors, what: str):
    if len(receiver_tensors) != 1:
        raise ValueError(f"{what} input must be a single string Tensor; got "
                         f"{receiver_tensors}")
    t = next(iter(receiver_tensors.values()))
    if t.dtype != dtypes.string:
        raise ValueError(f"{what} input must be a single string Tensor; got "
                         f"{receiver_tensors}")
    return t


class ClassificationOutput:
    """Outputs served by the Classify API: `scores` (float) and/or `classes` (string)."""

    def __init__(self, scores=None, classes=None):
        if scores is None and classes is None:
            raise ValueError("At least one of scores and classes must be set.")
        self.scores, self.classes = scores, classes

    def as_signature_def(self, receiver_tensors):
        from tensorflux.saved_model import signature_def_utils

        examples = _single_string_input(receiver_tensors, "Classification")
        return signature_def_utils.classification_signature_def(examples, self.classes,
                                                                 self.scores)


class RegressionOutput:
    """Outputs served by the Regress API: one float tensor `value`."""

    def __init__(self, value):
        if not isinstance(value, Tensor) or not value.dtype.is_floating:
            raise ValueError(f"Regression output value must be a float32 Tensor; got "
                             f"{value}")
        self.value = value

    def as_signature_def(self, receiver_tensors):
        from tensorflux.saved_model import signature_def_utils

        examples = _single_string_input(receiver_tensors, "Regression")
        return signature_def_utils.regression_signature_def(examples, self.value)


def signature_defs(receiver: ServingInputReceiver, spec) -> dict:
    """The SignatureDefs of an export: one per export output (default: the predictions as
    "serving_default"). An output the receiver cannot feed (Classify and Regress take one
    string tensor of serialized Examples) is left out with a warning, as TensorFlow does.

    Raises:
      ValueError: no signature is left.
    """
    from tensorflux.platform import tf_logging as logging

    outputs = spec.export_outputs or {DEFAULT_SERVING_KEY: PredictOutput(spec.predictions)}
    signatures = {}
    for key, out in outputs.items():
        try:
            signatures[key] = out.as_signature_def(receiver.receiver_tensors)
        except ValueError as e:
            logging.warning("Signature %s left out of the export: %s", key, e)
    if not signatures:
        raise ValueError("Export includes no signatures!")
    if DEFAULT_SERVING_KEY not in signatures:
        logging.warning("Export includes no default signature!")
    return signatures


def timestamped_dir(base) -> str:
    """base/<seconds since the epoch>, a name not taken yet."""
    base = os.fsdecode(base)
    while True:
        path = os.path.join(base, str(int(time.time())))
        if not os.path.exists(path):
            return path
        time.sleep(1)


class Exporter:
    """Something train_and_evaluate calls after an evaluation."""

    name = "exporter"

    def export(self, estimator, export_path, checkpoint_path, eval_result,
               is_the_final_export):
        raise NotImplementedError


class LatestExporter(Exporter):
    """Exports after every evaluation, keeping the newest `exports_to_keep`."""

    def __init__(self, name, serving_input_receiver_fn, assets_extra=None, as_text=False,
                 exports_to_keep=5):
        self.name, self._fn = name, serving_input_receiver_fn
        self._assets_extra, self._as_text = assets_extra, as_text
        self._keep = exports_to_keep

    def export(self, estimator, export_path, checkpoint_path, eval_result,
               is_the_final_export):
        out = estimator.export_saved_model(export_path, self._fn, self._assets_extra,
                                           self._as_text, checkpoint_path)
        if self._keep:
            old = sorted((d for d in os.listdir(export_path) if d.isdigit()), key=int)
            for d in old[:-self._keep]:
                shutil.rmtree(os.path.join(export_path, d), ignore_errors=True)
        return out


class FinalExporter(LatestExporter):
    """Exports once, after the last evaluation."""

    def __init__(self, name, serving_input_receiver_fn, assets_extra=None, as_text=False):
        super().__init__(name, serving_input_receiver_fn, assets_extra, as_text, None)

    def export(self, estimator, export_path, checkpoint_path, eval_result,
               is_the_final_export):
        if not is_the_final_export:
            return None
        return super().export(estimator, export_path, checkpoint_path, eval_result, True)


def _loss_smaller(best_eval_result, current_eval_result) -> bool:
    """BestExporter's default comparison: the current evaluation's loss is smaller.

    Raises:
      ValueError: either result is empty or has no 'loss'.
    """
    for what, result in (("best_eval_result", best_eval_result),
                         ("current_eval_result", current_eval_result)):
        if not result or "loss" not in result:
            raise ValueError(f"{what} cannot be empty or no loss is found in it.")
    return best_eval_result["loss"] > current_eval_result["loss"]


class BestExporter(LatestExporter):
    """Exports when an evaluation beats the best one so far (`compare_fn(best, current)`,
    by default a smaller loss), keeping the newest `exports_to_keep` exports. The best
    result starts from the evaluations already in the model directory's event files
    matching `event_file_pattern` (a resumed training does not export a worse model)."""

    def __init__(self, name="best_exporter", serving_input_receiver_fn=None,
                 event_file_pattern="eval/*.tfevents.*", compare_fn=_loss_smaller,
                 assets_extra=None, as_text=False, exports_to_keep=5):
        if serving_input_receiver_fn is None:
            raise ValueError("`serving_input_receiver_fn` must be defined.")
        if compare_fn is None:
            raise ValueError("`compare_fn` must not be None.")
        if exports_to_keep is not None and exports_to_keep <= 0:
            raise ValueError("`exports_to_keep`, if provided, must be a positive number. "
                             f"Got {exports_to_keep}")
        super().__init__(name, serving_input_receiver_fn, assets_extra, as_text,
                         exports_to_keep)
        self._compare_fn = compare_fn
        self._event_file_pattern = event_file_pattern
        self._best = None
        self._read_model_dir = None

    def _best_from_events(self, model_dir: str):
        """The best evaluation (a dict of tag -> value) in the event files of `model_dir`."""
        import glob

        from tensorflux.summary import summary_iterator

        best = None
        for path in sorted(glob.glob(os.path.join(model_dir, self._event_file_pattern))):
            for event in summary_iterator.summary_iterator(path):
                if not event.HasField("summary"):
                    continue
                result = {v.tag: v.simple_value for v in event.summary.value
                          if v.HasField("simple_value")}
                if result and (best is None or self._compare_fn(best, result)):
                    best = result
        return best

    def export(self, estimator, export_path, checkpoint_path, eval_result,
               is_the_final_export):
        if self._read_model_dir != estimator.model_dir:
            self._read_model_dir = estimator.model_dir
            self._best = self._best_from_events(estimator.model_dir) \
                if self._event_file_pattern else None
        if self._best is None or self._compare_fn(self._best, eval_result):
            self._best = dict(eval_result)
            return super().export(estimator, export_path, checkpoint_path, eval_result,
                                  is_the_final_export)
        return None


def copy_assets_extra(export_dir: str, assets_extra) -> None:
    """Copies each `assets_extra` entry (path in the export -> source file) into the
    SavedModel's assets.extra/ folder."""
    for name, source in (assets_extra or {}).items():
        dest = os.path.join(export_dir, "assets.extra", name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(source, "rb") as src, open(dest, "wb") as dst:
            dst.write(src.read())
