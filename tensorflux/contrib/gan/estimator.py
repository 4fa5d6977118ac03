"""`tf.contrib.gan.estimator`: `GANEstimator`, a tf.estimator.Estimator whose model is a
GAN: the input_fn's features are the generator's inputs, its labels the real data.

- TRAIN: `gan_model` (the networks called with `mode=` when they take it), the two loss
  functions on it, `gan_train_ops` with the two optimizers (an optimizer may be a function
  returning one, called inside the model_fn); the spec's train op is the global step's
  increment and its hooks (`get_hooks_fn`, default sequential 1:1) run the updates; its
  loss is generator loss + discriminator loss.
- EVAL: the same model and losses; metrics 'generator_loss' and 'discriminator_loss'
  (tf.metrics.mean) and those of `get_eval_metric_ops_fn(gan_model)`.
- PREDICT: only the generator (in its 'Generator' scope), its output the predictions;
  labels must be None.
`add_summaries` takes `SummaryType`s (VARIABLES: variable histograms, IMAGES: image grids,
IMAGE_COMPARISON: input/generated/real comparisons).
"""

from __future__ import annotations

import enum
import functools
import inspect

from tensorflux.contrib.gan import eval as tfgan_eval
from tensorflux.contrib.gan import namedtuples
from tensorflux.contrib.gan import train as tfgan_train
from tensorflux.contrib.gan import train_ops as tfgan_train_ops
from tensorflux.contrib.layers_core import get_trainable_variables
from tensorflux.estimator.estimator import Estimator
from tensorflux.estimator.model_fn import EstimatorSpec, ModeKeys
from tensorflux.framework import graph as graph_lib
from tensorflux.metrics import metrics_impl
from tensorflux.variables import variable_scope

__all__ = ["GANEstimator", "SummaryType"]


class SummaryType(enum.IntEnum):
    NONE = 0
    VARIABLES = 1
    IMAGES = 2
    IMAGE_COMPARISON = 3


_SUMMARIES = {
    SummaryType.VARIABLES: tfgan_eval.add_gan_model_summaries,
    SummaryType.IMAGES: tfgan_eval.add_gan_model_image_summaries,
    SummaryType.IMAGE_COMPARISON: tfgan_eval.add_image_comparison_summaries,
}


def _with_mode(fn, mode):
    try:
        takes_mode = "mode" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        takes_mode = False
    return functools.partial(fn, mode=mode) if takes_mode else fn


def _prediction_model(generator_inputs, generator_fn, generator_scope="Generator"):
    generator_fn = _with_mode(generator_fn, ModeKeys.PREDICT)
    with variable_scope.variable_scope(generator_scope) as gen_scope:
        generator_inputs = tfgan_train._convert_tensor_or_l_or_d(generator_inputs)
        generated_data = generator_fn(generator_inputs)
    return namedtuples.GANModel(
        generator_inputs, generated_data, get_trainable_variables(gen_scope), gen_scope,
        generator_fn, real_data=None, discriminator_real_outputs=None,
        discriminator_gen_outputs=None, discriminator_variables=None,
        discriminator_scope=None, discriminator_fn=None)


def _gan_model(mode, generator_fn, discriminator_fn, real_data, generator_inputs,
               add_summaries):
    if mode == ModeKeys.PREDICT:
        if real_data is not None:
            raise ValueError("`labels` must be `None` when mode is `predict`. Instead, "
                             f"found {real_data}")
        return _prediction_model(generator_inputs, generator_fn)
    model = tfgan_train.gan_model(_with_mode(generator_fn, mode),
                                  _with_mode(discriminator_fn, mode), real_data,
                                  generator_inputs, check_shapes=False)
    if add_summaries:
        kinds = add_summaries if isinstance(add_summaries, (tuple, list)) else [add_summaries]
        with graph_lib.name_scope(None):
            for kind in kinds:
                _SUMMARIES[kind](model)
    return model


def _eval_spec(model, loss, get_eval_metric_ops_fn):
    with graph_lib.name_scope(None, "metrics", [loss.generator_loss,
                                                loss.discriminator_loss]):
        metric_ops = {"generator_loss": metrics_impl.mean(loss.generator_loss),
                      "discriminator_loss": metrics_impl.mean(loss.discriminator_loss)}
        if get_eval_metric_ops_fn is not None:
            custom = get_eval_metric_ops_fn(model)
            if not isinstance(custom, dict):
                raise TypeError(f"get_eval_metric_ops_fn must return a dict, received: "
                                f"{custom}")
            metric_ops.update(custom)
    return EstimatorSpec(mode=ModeKeys.EVAL, predictions=model.generated_data,
                         loss=loss.generator_loss + loss.discriminator_loss,
                         eval_metric_ops=metric_ops)


def _estimator_spec(mode, model, generator_loss_fn, discriminator_loss_fn,
                    get_eval_metric_ops_fn, generator_optimizer, discriminator_optimizer,
                    get_hooks_fn, use_loss_summaries, is_chief):
    if mode == ModeKeys.PREDICT:
        return EstimatorSpec(mode=mode, predictions=model.generated_data)
    loss = namedtuples.GANLoss(
        generator_loss=generator_loss_fn(model, add_summaries=use_loss_summaries),
        discriminator_loss=discriminator_loss_fn(model, add_summaries=use_loss_summaries))
    if mode == ModeKeys.EVAL:
        return _eval_spec(model, loss, get_eval_metric_ops_fn)
    if callable(generator_optimizer):
        generator_optimizer = generator_optimizer()
    if callable(discriminator_optimizer):
        discriminator_optimizer = discriminator_optimizer()
    get_hooks_fn = get_hooks_fn or tfgan_train_ops.get_sequential_train_hooks()
    train_ops = tfgan_train_ops.gan_train_ops(model, loss, generator_optimizer,
                                              discriminator_optimizer, is_chief=is_chief)
    return EstimatorSpec(loss=loss.generator_loss + loss.discriminator_loss,
                         mode=ModeKeys.TRAIN, train_op=train_ops.global_step_inc_op,
                         training_hooks=get_hooks_fn(train_ops))


class GANEstimator(Estimator):
    """An Estimator training a generator (`generator_fn(features[, mode])`) against a
    discriminator (`discriminator_fn(data, generator_inputs[, mode])`) on the real data
    of the labels; see the module docstring for each mode.

    Raises:
      ValueError: a loss function that is not callable, or `use_loss_summaries` not
        True/False/None.
      TypeError: `get_hooks_fn` given but not callable.
    """

    def __init__(self, model_dir=None, generator_fn=None, discriminator_fn=None,
                 generator_loss_fn=None, discriminator_loss_fn=None,
                 generator_optimizer=None, discriminator_optimizer=None, get_hooks_fn=None,
                 get_eval_metric_ops_fn=None, add_summaries=None, use_loss_summaries=True,
                 config=None, params=None, warm_start_from=None, is_chief=True):
        if not callable(generator_loss_fn):
            raise ValueError("generator_loss_fn must be callable.")
        if not callable(discriminator_loss_fn):
            raise ValueError("discriminator_loss_fn must be callable.")
        if use_loss_summaries not in (True, False, None):
            raise ValueError("use_loss_summaries must be True, False or None.")
        if get_hooks_fn is not None and not callable(get_hooks_fn):
            raise TypeError("get_hooks_fn must be callable.")

        def _model_fn(features, labels, mode):
            if mode not in (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT):
                raise ValueError(f"Mode not recognized: {mode}")
            model = _gan_model(mode, generator_fn, discriminator_fn, labels, features,
                               add_summaries)
            return _estimator_spec(mode, model, generator_loss_fn, discriminator_loss_fn,
                                   get_eval_metric_ops_fn, generator_optimizer,
                                   discriminator_optimizer, get_hooks_fn,
                                   use_loss_summaries, is_chief)

        super().__init__(model_fn=_model_fn, model_dir=model_dir, config=config,
                         params=params, warm_start_from=warm_start_from)
