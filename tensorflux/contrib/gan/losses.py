"""`tf.contrib.gan.losses`: TF-GAN's losses taking a model tuple. Each wraps the loss of
the same name in `losses.wargs` (contrib/gan/losses_wargs.py): its arguments named like a
field of the model are read from the model (a field that is None leaves the default), the
rest come as keywords; giving a field as a keyword too is an error. Also
`cycle_consistency_loss(cyclegan_model)`, `combine_adversarial_loss(gan_loss, gan_model,
non_adversarial_loss, ...)` and the StarGAN wrappers."""

from __future__ import annotations

import inspect

from tensorflux.contrib.gan import losses_wargs, namedtuples
from tensorflux.contrib.gan import losses_wargs as wargs  # noqa: F401 - tfgan.losses.wargs
from tensorflux.variables import variable_scope

__all__ = ["acgan_discriminator_loss", "acgan_generator_loss", "combine_adversarial_loss",
           "cycle_consistency_loss", "least_squares_discriminator_loss",
           "least_squares_generator_loss", "minimax_discriminator_loss",
           "minimax_generator_loss", "modified_discriminator_loss",
           "modified_generator_loss", "mutual_information_penalty",
           "stargan_discriminator_loss_wrapper", "stargan_generator_loss_wrapper",
           "stargan_gradient_penalty_wrapper", "wasserstein_discriminator_loss",
           "wasserstein_generator_loss", "wasserstein_gradient_penalty"]


def _args_to_gan_model(loss_fn):
    """`loss_fn(tensor args...)` -> `fn(gan_model, **kwargs)` reading the arguments named
    like the model's fields from the model."""
    params = inspect.signature(loss_fn).parameters
    required = {n for n, p in params.items() if p.default is inspect.Parameter.empty}
    defaults = {n: p.default for n, p in params.items()
                if p.default is not inspect.Parameter.empty}

    def new_loss_fn(gan_model, **kwargs):
        fields = {k: getattr(gan_model, k) for k in gan_model._fields}
        missing = sorted(required - set(fields) - set(kwargs))
        if missing:
            raise ValueError(f"`{missing[0]}` must be supplied to {loss_fn.__name__} loss "
                             "function.")
        ambiguous = set(fields) & set(kwargs)
        if ambiguous:
            raise ValueError("The following args are present in both the tuple and keyword "
                             f"args for {loss_fn.__name__}: {ambiguous}")
        for name in required & set(fields):
            kwargs[name] = fields[name]
        for name, default in defaults.items():
            if fields.get(name) is not None:
                kwargs[name] = fields[name]
            elif kwargs.get(name) is None:
                kwargs[name] = default
        return loss_fn(**kwargs)

    new_loss_fn.__name__ = loss_fn.__name__
    new_loss_fn.__doc__ = f"The gan_model version of `losses.wargs.{loss_fn.__name__}`."
    new_loss_fn.__docstring__ = new_loss_fn.__doc__  # the attribute TF-GAN sets
    return new_loss_fn


wasserstein_generator_loss = _args_to_gan_model(losses_wargs.wasserstein_generator_loss)
wasserstein_discriminator_loss = _args_to_gan_model(
    losses_wargs.wasserstein_discriminator_loss)
wasserstein_gradient_penalty = _args_to_gan_model(losses_wargs.wasserstein_gradient_penalty)
acgan_discriminator_loss = _args_to_gan_model(losses_wargs.acgan_discriminator_loss)
acgan_generator_loss = _args_to_gan_model(losses_wargs.acgan_generator_loss)
minimax_discriminator_loss = _args_to_gan_model(losses_wargs.minimax_discriminator_loss)
minimax_generator_loss = _args_to_gan_model(losses_wargs.minimax_generator_loss)
modified_discriminator_loss = _args_to_gan_model(losses_wargs.modified_discriminator_loss)
modified_generator_loss = _args_to_gan_model(losses_wargs.modified_generator_loss)
least_squares_generator_loss = _args_to_gan_model(losses_wargs.least_squares_generator_loss)
least_squares_discriminator_loss = _args_to_gan_model(
    losses_wargs.least_squares_discriminator_loss)
mutual_information_penalty = _args_to_gan_model(losses_wargs.mutual_information_penalty)


def combine_adversarial_loss(gan_loss, gan_model, non_adversarial_loss, weight_factor=None,
                             gradient_ratio=None, gradient_ratio_epsilon=1e-6,
                             scalar_summaries=True, gradient_summaries=True):
    """`gan_loss` with its generator loss (the adversarial one) combined with
    `non_adversarial_loss` by `losses.wargs.combine_adversarial_loss` over the generator's
    variables."""
    combined = losses_wargs.combine_adversarial_loss(
        non_adversarial_loss, gan_loss.generator_loss, weight_factor, gradient_ratio,
        gradient_ratio_epsilon, gan_model.generator_variables, scalar_summaries,
        gradient_summaries)
    return gan_loss._replace(generator_loss=combined)


def cycle_consistency_loss(cyclegan_model, scope=None, add_summaries=False):
    """The cycle consistency loss of a CycleGANModel: x, G(F(x)), y, F(G(y)) taken from
    the model.

    Raises:
      ValueError: `cyclegan_model` is not a CycleGANModel.
    """
    if not isinstance(cyclegan_model, namedtuples.CycleGANModel):
        raise ValueError("`cyclegan_model` must be a `CycleGANModel`. Instead, was "
                         f"{type(cyclegan_model)}.")
    return losses_wargs.cycle_consistency_loss(
        cyclegan_model.model_x2y.generator_inputs, cyclegan_model.reconstructed_x,
        cyclegan_model.model_y2x.generator_inputs, cyclegan_model.reconstructed_y,
        scope, add_summaries)


def stargan_generator_loss_wrapper(loss_fn):
    """A generator loss on tensors -> one on a StarGANModel (its discriminator's source
    prediction on the generated data)."""
    def new_loss_fn(stargan_model, **kwargs):
        return loss_fn(stargan_model.discriminator_generated_data_source_predication,
                       **kwargs)
    new_loss_fn.__name__ = getattr(loss_fn, "__name__", "stargan_generator_loss")
    return new_loss_fn


def stargan_discriminator_loss_wrapper(loss_fn):
    """A discriminator loss on tensors -> one on a StarGANModel (source predictions on the
    input and on the generated data)."""
    def new_loss_fn(stargan_model, **kwargs):
        return loss_fn(stargan_model.discriminator_input_data_source_predication,
                       stargan_model.discriminator_generated_data_source_predication,
                       **kwargs)
    new_loss_fn.__name__ = getattr(loss_fn, "__name__", "stargan_discriminator_loss")
    return new_loss_fn


def stargan_gradient_penalty_wrapper(loss_fn):
    """A gradient penalty on tensors -> one on a StarGANModel: the discriminator (called
    with the number of domains as its second argument) between input and generated
    data."""
    def new_loss_fn(stargan_model, **kwargs):
        with variable_scope.variable_scope(stargan_model.discriminator_scope, reuse=True):
            return loss_fn(
                real_data=stargan_model.input_data,
                generated_data=stargan_model.generated_data,
                generator_inputs=stargan_model.input_data_domain_label.shape.as_list()[-1],
                discriminator_fn=stargan_model.discriminator_fn,
                discriminator_scope=stargan_model.discriminator_scope, **kwargs)
    new_loss_fn.__name__ = getattr(loss_fn, "__name__", "stargan_gradient_penalty")
    return new_loss_fn
