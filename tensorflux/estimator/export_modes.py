"""SavedModels of several modes (TF1.15's `experimental_export_all_saved_models`,
tf.contrib.estimator's `export_all_saved_models` / `export_saved_model_for_mode`) and the
supervised input receivers that TRAIN and EVAL graphs take.

One SavedModel holds a meta graph per mode: TRAIN under the "train" tag with a "train"
signature (inputs: the receiver's feature and label tensors; outputs "loss",
"predictions[/key]", "metrics/<name>/value" and "metrics/<name>/update_op"; method
"tensorflow/supervised/training"; the train op also in the "saved_model_train_op"
collection), EVAL under "eval" with an "eval" signature of the same outputs, PREDICT under
"serve" with the model's export outputs. The variables (restored from the checkpoint) are
saved with the first mode of TRAIN, EVAL, PREDICT, so the TRAIN graph's optimizer slots are
among them.
"""

from __future__ import annotations

import os

from tensorflux.estimator import export as export_lib
from tensorflux.estimator.model_fn import ModeKeys
from tensorflux.framework.operation import Tensor
from tensorflux.framework.sparse_tensor import SparseTensor

__all__ = ["SupervisedInputReceiver", "build_raw_supervised_input_receiver_fn",
           "build_supervised_input_receiver_fn_from_input_fn", "export_all_saved_models"]

_TAGS = {ModeKeys.TRAIN: ["train"], ModeKeys.EVAL: ["eval"], ModeKeys.PREDICT: ["serve"]}
_METHODS = {ModeKeys.TRAIN: "tensorflow/supervised/training",
            ModeKeys.EVAL: "tensorflow/supervised/eval"}
TRAIN_OP_COLLECTION = "saved_model_train_op"


class SupervisedInputReceiver:
    """`features` and `labels` given to a TRAIN or EVAL model_fn, built from
    `receiver_tensors` (the placeholders a caller feeds; a single tensor is "input")."""

    def __init__(self, features, labels, receiver_tensors):
        for what, value in (("features", features), ("labels", labels)):
            leaves = value.values() if isinstance(value, dict) else [value]
            for t in leaves:
                if not isinstance(t, (Tensor, SparseTensor)):
                    raise ValueError(f"{what} must be a Tensor, SparseTensor or a dict of "
                                     f"them; got {value!r}")
        self.features, self.labels = features, labels
        self.receiver_tensors = export_lib._as_dict(receiver_tensors, "input")


def build_raw_supervised_input_receiver_fn(features, labels, default_batch_size=None):
    """A receiver_fn whose placeholders have the dtypes and shapes (batch dimension
    `default_batch_size`) of `features` and `labels` (each a tensor or a dict; a lone
    feature tensor is fed as "input", a lone label tensor as "label").

    Raises:
      ValueError: a feature and a label of the same name.
    """
    from tensorflux.ops import array_ops

    f_given = export_lib._as_dict(features, "input")
    l_given = export_lib._as_dict(labels, "label")
    clash = sorted(set(f_given) & set(l_given))
    if clash:
        raise ValueError(f"Features and labels must have distinct keys. Found overlapping "
                         f"keys: {clash}")

    def placeholders(given):
        out = {}
        for name, t in given.items():
            shape = [default_batch_size] + t.shape.as_list()[1:] if t.shape.ndims else None
            out[name] = array_ops.placeholder(t.dtype, shape, name=name)
        return out

    def receiver_fn():
        f, lab = placeholders(f_given), placeholders(l_given)
        return SupervisedInputReceiver(
            f if isinstance(features, dict) else f["input"],
            lab if isinstance(labels, dict) else lab["label"], {**f, **lab})

    return receiver_fn


def build_supervised_input_receiver_fn_from_input_fn(input_fn, **input_fn_args):
    """A raw supervised receiver_fn shaped like what `input_fn(**input_fn_args)` gives
    (its dataset is built once, in a graph of its own)."""
    from tensorflux.estimator.estimator import _features_and_labels
    from tensorflux.framework import graph as graph_lib

    with graph_lib.Graph().as_default():
        features, labels, _ = _features_and_labels(input_fn(**input_fn_args))
    return build_raw_supervised_input_receiver_fn(features, labels)


def _tensor_of(value):
    """A metric's update op as a tensor (an op becomes a constant run after it)."""
    from tensorflux.framework import graph as graph_lib
    from tensorflux.ops import constant_op

    if isinstance(value, Tensor):
        return value
    with graph_lib.get_default_graph().control_dependencies([value]):
        return constant_op.constant(0)


def _supervised_signature(mode, receiver, spec):
    from tensorflux.saved_model import signature_def_utils, utils

    outputs = {"loss": spec.loss}
    preds = spec.predictions
    if isinstance(preds, dict):
        outputs.update({f"predictions/{k}": v for k, v in preds.items()
                        if isinstance(v, Tensor)})
    elif isinstance(preds, Tensor):
        outputs["predictions"] = preds
    for name, (value, update) in (spec.eval_metric_ops or {}).items():
        outputs[f"metrics/{name}/value"] = value
        outputs[f"metrics/{name}/update_op"] = _tensor_of(update)
    return signature_def_utils.build_signature_def(
        {k: utils.build_tensor_info(t) for k, t in receiver.receiver_tensors.items()},
        {k: utils.build_tensor_info(t) for k, t in outputs.items()}, _METHODS[mode])


def _add_mode(estimator, builder, mode, receiver_fn, checkpoint, first):
    from tensorflux.framework import graph as graph_lib
    from tensorflux.runtime.session import Session
    from tensorflux.train import monitored_session
    from tensorflux.train import saver as saver_lib
    from tensorflux.train.global_step import get_or_create_global_step

    with estimator._graph().as_default() as g:
        get_or_create_global_step(g)
        receiver = receiver_fn()
        if mode == ModeKeys.PREDICT:
            if not isinstance(receiver, export_lib.ServingInputReceiver):
                raise ValueError("The PREDICT receiver_fn must return a "
                                 "ServingInputReceiver.")
            spec = estimator._spec(receiver.features, None, mode)
            signatures = export_lib.signature_defs(receiver, spec)
        else:
            if not isinstance(receiver, SupervisedInputReceiver):
                raise ValueError(f"The {mode} receiver_fn must return a "
                                 f"SupervisedInputReceiver.")
            spec = estimator._spec(receiver.features, receiver.labels, mode)
            signatures = {mode: _supervised_signature(mode, receiver, spec)}
            if mode == ModeKeys.TRAIN:
                g.add_to_collection(TRAIN_OP_COLLECTION, spec.train_op)
        local_init = (spec.scaffold.local_init_op if spec.scaffold is not None
                      else None) or monitored_session.Scaffold.default_local_init_op()
        assets = graph_lib.get_collection(graph_lib.GraphKeys.ASSET_FILEPATHS)
        saver = saver_lib.Saver(sharded=True)
        if first:
            with Session(config=estimator.config.session_config) as sess:
                saver.restore(sess, checkpoint)
                builder.add_meta_graph_and_variables(
                    sess, _TAGS[mode], signature_def_map=signatures,
                    assets_collection=assets, main_op=local_init, strip_default_attrs=True,
                    saver=saver)
        else:
            builder.add_meta_graph(_TAGS[mode], signature_def_map=signatures,
                                   assets_collection=assets, main_op=local_init,
                                   strip_default_attrs=True, saver=saver)


def export_all_saved_models(estimator, export_dir_base, input_receiver_fn_map,
                            assets_extra=None, as_text=False, checkpoint_path=None):
    """One SavedModel (under export_dir_base/<timestamp>) of the modes of
    `input_receiver_fn_map` ({ModeKeys.X: receiver_fn}); returns its directory as bytes.

    Raises:
      ValueError: no checkpoint; an unknown mode; a receiver_fn of the wrong kind.
    """
    from tensorflux.platform import tf_logging as logging
    from tensorflux.saved_model import builder as builder_lib

    unknown = sorted(set(input_receiver_fn_map) - set(_TAGS))
    if unknown:
        raise ValueError(f"Unknown modes {unknown}: expected some of {sorted(_TAGS)}")
    checkpoint = checkpoint_path or estimator.latest_checkpoint()
    if checkpoint is None:
        raise ValueError(f"Couldn't find trained model at {estimator.model_dir}.")
    export_dir = export_lib.timestamped_dir(export_dir_base)
    builder = builder_lib.SavedModelBuilder(export_dir)
    modes = [m for m in (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT)
             if m in input_receiver_fn_map]
    for i, mode in enumerate(modes):
        _add_mode(estimator, builder, mode, input_receiver_fn_map[mode], checkpoint, i == 0)
    builder.save(as_text)
    export_lib.copy_assets_extra(export_dir, assets_extra)
    logging.info("SavedModel written to: %s", export_dir)
    return os.fsencode(export_dir)
