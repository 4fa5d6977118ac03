"""`tf.keras.estimator.model_to_estimator`: a compiled Keras model as a tf.estimator.

The Estimator's model_fn rebuilds the model in the Estimator's graph on its features (a
dict keyed by the model's input names, or a tensor for a one-input model), with the
learning phase fixed by the mode (1 when training): a fresh copy of each layer
(`models.clone_model`) whose weights start from the Keras model's weights at conversion
time (assigned by the Scaffold's init_fn when there is no checkpoint yet). The loss is the
compiled loss of each output against its labels (a tensor, or a dict/list by output name)
plus the model's own losses; training applies a copy of the compiled optimizer and the
model's updates (batch norm); evaluation reports the loss and the compiled metrics as
streaming means under their compiled names; predictions are keyed by output name.
"""

from __future__ import annotations

from tensorflux.control_flow import builders
from tensorflux.framework import graph as graph_lib
from tensorflux.keras import backend as K
from tensorflux.keras import losses as losses_lib
from tensorflux.keras import models
from tensorflux.keras import optimizers as optimizers_lib
from tensorflux.keras.engine import training
from tensorflux.metrics import metrics_impl
from tensorflux.ops import array_ops, math_ops, reduction_ops, state_ops

__all__ = ["model_to_estimator"]


def _optimizer_copy(optimizer):
    """A fresh optimizer like `optimizer` (one of Keras's by its config; a tf.train one as
    it is: it makes its slots per variable)."""
    try:
        return optimizers_lib.deserialize(optimizers_lib.serialize(optimizer))
    except (AttributeError, ValueError, TypeError, NotImplementedError):
        return optimizer


def _by_name(value, names, what: str) -> list:
    if isinstance(value, dict):
        missing = [n for n in names if n not in value]
        if missing:
            raise ValueError(f"The model's {what} {missing} are not among the keys "
                             f"{sorted(value)}")
        return [value[n] for n in names]
    if isinstance(value, (list, tuple)):
        if len(value) != len(names):
            raise ValueError(f"{len(value)} {what} for a model with {len(names)}")
        return list(value)
    if len(names) != 1:
        raise ValueError(f"A model with {len(names)} {what} needs them as a dict keyed "
                         f"by {names}")
    return [value]


def _model_fn_for(keras_model, weights, compile_args):
    from tensorflux.estimator import model_fn as model_fn_lib
    from tensorflux.train import monitored_session
    from tensorflux.train.global_step import get_global_step

    loss, metrics, loss_weights = compile_args
    input_names, output_names = list(keras_model.input_names), list(keras_model.output_names)

    def model_fn(features, labels, mode):
        K.set_learning_phase(1 if mode == model_fn_lib.ModeKeys.TRAIN else 0)
        inputs = _by_name(features, input_names, "inputs")
        model = models.clone_model(keras_model)
        outputs = model(inputs[0] if len(inputs) == 1 else inputs)
        outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
        predictions = dict(zip(output_names, outputs, strict=True))
        if mode == model_fn_lib.ModeKeys.PREDICT:
            return model_fn_lib.EstimatorSpec(mode, predictions=predictions)
        targets = _by_name(labels, output_names, "outputs")
        loss_fns = training._per_output(loss, output_names, "loss")
        weights_per = training._per_output(loss_weights if loss_weights is not None else 1.0,
                                           output_names, "loss_weights")
        metric_lists = training._per_output_metrics(metrics, output_names)
        total, eval_ops = 0.0, {}
        for name, out, target, fn, w, ms in zip(output_names, outputs, targets, loss_fns,
                                                weights_per, metric_lists, strict=True):
            fn = losses_lib.get(fn)
            target = math_ops.cast(target, out.dtype.base_dtype)
            if not training._is_sparse(fn) and target.shape.ndims == 1 and \
                    out.shape.ndims == 2:
                target = array_ops.expand_dims(target, -1)
            total = total + float(w) * reduction_ops.reduce_mean(fn(target, out))
            for m in ms:
                metric, (summed, count) = training._metric(m, fn, target, out)
                key = metric if len(output_names) == 1 else f"{name}_{metric}"
                eval_ops[key] = metrics_impl.mean(summed / count, weights=count)
        if model.losses:
            total = total + math_ops.add_n([math_ops.cast(r, total.dtype)
                                            for r in model.losses])
        train_op = None
        if mode == model_fn_lib.ModeKeys.TRAIN:
            minimize = _optimizer_copy(keras_model.optimizer).minimize(
                total, global_step=get_global_step(),
                var_list=model.trainable_weights)
            train_op = builders.group(minimize, *model.updates)
        with graph_lib.name_scope("keras_weights"):
            start = builders.group(*[state_ops.assign(v, w) for v, w in
                                     zip(model.weights, weights, strict=True)])
        scaffold = monitored_session.Scaffold(
            init_fn=lambda _scaffold, sess: sess.run(start))
        return model_fn_lib.EstimatorSpec(mode, predictions=predictions, loss=total,
                                          train_op=train_op, eval_metric_ops=eval_ops,
                                          scaffold=scaffold)

    return model_fn


def model_to_estimator(keras_model=None, keras_model_path=None, custom_objects=None,
                       model_dir=None, config=None, checkpoint_format=None, **kwargs):
    """An Estimator training, evaluating and predicting like the compiled `keras_model`
    (or the one saved at `keras_model_path`), starting from its current weights.

    Raises:
      ValueError: neither or both of `keras_model` and `keras_model_path`; a model that
        was not compiled.
    """
    del checkpoint_format, kwargs
    from tensorflux.estimator import estimator as estimator_lib

    if keras_model is None and keras_model_path is None:
        raise ValueError("Either `keras_model` or `keras_model_path` needs to be provided.")
    if keras_model is not None and keras_model_path is not None:
        raise ValueError("Please specity either `keras_model` or `keras_model_path`, but not "
                         "both.")
    if keras_model is None:
        keras_model = models.load_model(keras_model_path, custom_objects)
    compile_args = getattr(keras_model, "_compile_args", None)
    if compile_args is None or getattr(keras_model, "optimizer", None) is None:
        raise ValueError("The given keras model has not been compiled yet. Please compile "
                         "the model with `model.compile()` before calling "
                         "`model_to_estimator()`.")
    weights = keras_model.get_weights()
    return estimator_lib.Estimator(_model_fn_for(keras_model, weights, compile_args),
                                   model_dir=model_dir, config=config)
