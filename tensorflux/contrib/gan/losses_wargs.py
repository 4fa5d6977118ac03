"""`tf.contrib.gan.losses.wargs`: TF-GAN's losses on tensors (the discriminator's outputs,
logits, data), each reduced by `tf.losses.compute_weighted_loss` (weights, reduction) and
added to `loss_collection` once, as a whole (a two-part discriminator loss adds the sum,
not its parts). `tf.contrib.gan.losses` has the same losses taking a GANModel
(contrib/gan/losses.py).

The formulas, with D the discriminator's logits:
  wasserstein:   G: -D(G(z));  D: D(G(z)) - D(x)
  minimax:       D: xent(1, D(x)) [label smoothing] + xent(0, D(G(z)));  G: -(the same
                 with D(x) := 1 and both weights `weights`)
  modified:      D: as minimax;  G: xent(1, D(G(z)))  (= -log sigmoid D(G(z)))
  least squares: G: (D(G(z)) - real_label)^2 / 2;  D: (D(x) - real)^2/2 + (D(G(z)) - fake)^2/2
  acgan:         softmax cross entropy of the class logits against the one-hot labels
  gradient penalty (WGAN-GP): (|grad_x D(x_hat)| / target - 1)^2 at random points x_hat
                 between real and generated data, |.| = sqrt(sum of squares + epsilon)
  mutual information: -mean over the structured inputs of mean(log q(c|x))
"""

from __future__ import annotations

import numpy as np

from tensorflux.autodiff import gradients as gradients_lib
from tensorflux.distributions.distribution import Distribution
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.common_shapes import constant_value
from tensorflux.framework.graph import GraphKeys
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.losses import losses_impl, util
from tensorflux.losses.losses_impl import Reduction
from tensorflux.nn import clip_ops
from tensorflux.ops import array_ops, math_ops, random_ops, reduction_ops, unary_ops
from tensorflux.summary import summary
from tensorflux.variables import variable_scope
from tensorflux.variables import variables as variables_lib

__all__ = ["acgan_discriminator_loss", "acgan_generator_loss", "combine_adversarial_loss",
           "cycle_consistency_loss", "least_squares_discriminator_loss",
           "least_squares_generator_loss", "minimax_discriminator_loss",
           "minimax_generator_loss", "modified_discriminator_loss",
           "modified_generator_loss", "mutual_information_penalty",
           "wasserstein_discriminator_loss", "wasserstein_generator_loss",
           "wasserstein_gradient_penalty"]

_LOSSES = GraphKeys.LOSSES
_NONZERO = Reduction.SUM_BY_NONZERO_WEIGHTS


def _scalars(add_summaries, **named) -> None:
    if add_summaries:
        for tag, value in named.items():
            summary.scalar(tag, value)


def wasserstein_generator_loss(discriminator_gen_outputs, weights=1.0, scope=None,
                               loss_collection=_LOSSES, reduction=_NONZERO,
                               add_summaries=False):
    """-D(G(z)), weighted and reduced (Wasserstein GAN)."""
    with graph_lib.name_scope(scope, "generator_wasserstein_loss",
                              (discriminator_gen_outputs, weights)) as scope:
        outputs = math_ops.to_float(discriminator_gen_outputs)
        loss = losses_impl.compute_weighted_loss(-outputs, weights, scope, loss_collection,
                                                 reduction)
        _scalars(add_summaries, generator_wass_loss=loss)
    return loss


def wasserstein_discriminator_loss(discriminator_real_outputs, discriminator_gen_outputs,
                                   real_weights=1.0, generated_weights=1.0, scope=None,
                                   loss_collection=_LOSSES, reduction=_NONZERO,
                                   add_summaries=False):
    """D(G(z)) - D(x), each side weighted and reduced on its own (Wasserstein GAN)."""
    with graph_lib.name_scope(scope, "discriminator_wasserstein_loss", (
            discriminator_real_outputs, discriminator_gen_outputs, real_weights,
            generated_weights)) as scope:
        real = math_ops.to_float(discriminator_real_outputs)
        gen = math_ops.to_float(discriminator_gen_outputs)
        real.shape.assert_is_compatible_with(gen.shape)
        on_gen = losses_impl.compute_weighted_loss(gen, generated_weights, scope,
                                                   loss_collection=None, reduction=reduction)
        on_real = losses_impl.compute_weighted_loss(real, real_weights, scope,
                                                    loss_collection=None, reduction=reduction)
        loss = on_gen - on_real
        util.add_loss(loss, loss_collection)
        _scalars(add_summaries, discriminator_gen_wass_loss=on_gen,
                 discriminator_real_wass_loss=on_real, discriminator_wass_loss=loss)
    return loss


def acgan_discriminator_loss(discriminator_real_classification_logits,
                             discriminator_gen_classification_logits, one_hot_labels,
                             label_smoothing=0.0, real_weights=1.0, generated_weights=1.0,
                             scope=None, loss_collection=_LOSSES, reduction=_NONZERO,
                             add_summaries=False):
    """The classification loss on generated plus on real data (label smoothing on the
    real side only) (ACGAN)."""
    with graph_lib.name_scope(scope, "acgan_discriminator_loss", (
            discriminator_real_classification_logits,
            discriminator_gen_classification_logits, one_hot_labels)) as scope:
        on_gen = losses_impl.softmax_cross_entropy(
            one_hot_labels, discriminator_gen_classification_logits,
            weights=generated_weights, scope=scope, loss_collection=None,
            reduction=reduction)
        on_real = losses_impl.softmax_cross_entropy(
            one_hot_labels, discriminator_real_classification_logits,
            weights=real_weights, label_smoothing=label_smoothing, scope=scope,
            loss_collection=None, reduction=reduction)
        loss = on_gen + on_real
        util.add_loss(loss, loss_collection)
        _scalars(add_summaries, discriminator_gen_ac_loss=on_gen,
                 discriminator_real_ac_loss=on_real, discriminator_ac_loss=loss)
    return loss


def acgan_generator_loss(discriminator_gen_classification_logits, one_hot_labels,
                         weights=1.0, scope=None, loss_collection=_LOSSES,
                         reduction=_NONZERO, add_summaries=False):
    """The classification loss of the generated data against their labels (ACGAN)."""
    with graph_lib.name_scope(scope, "acgan_generator_loss", (
            discriminator_gen_classification_logits, one_hot_labels)) as scope:
        loss = losses_impl.softmax_cross_entropy(
            one_hot_labels, discriminator_gen_classification_logits, weights=weights,
            scope=scope, loss_collection=loss_collection, reduction=reduction)
        _scalars(add_summaries, generator_ac_loss=loss)
    return loss


def _interpolates(real_data, generated_data):
    """Points x + alpha (G(z) - x), one uniform alpha per example; rank must be known."""
    if real_data.shape.ndims is None:
        raise ValueError("`real_data` can't have unknown rank.")
    if generated_data.shape.ndims is None:
        raise ValueError("`generated_data` can't have unknown rank.")
    differences = generated_data - real_data
    batch_size = differences.shape.dims[0].value or array_ops.shape(differences)[0]
    alpha = random_ops.random_uniform([batch_size] + [1] * (differences.shape.ndims - 1))
    return real_data + alpha * differences, batch_size


def wasserstein_gradient_penalty(real_data, generated_data, generator_inputs,
                                 discriminator_fn, discriminator_scope, epsilon=1e-10,
                                 target=1.0, one_sided=False, weights=1.0, scope=None,
                                 loss_collection=_LOSSES, reduction=_NONZERO,
                                 add_summaries=False):
    """The WGAN-GP penalty: (|grad D(x_hat)| / target - 1)^2 (only its positive part when
    `one_sided`) at random interpolates x_hat, D called again in `discriminator_scope`
    (variables reused; a fresh 'gpenalty_dscope' when it is None).

    Raises:
      ValueError: `real_data` or `generated_data` of unknown rank.
    """
    with graph_lib.name_scope(scope, "wasserstein_gradient_penalty",
                              (real_data, generated_data)) as scope:
        real_data = convert_to_tensor(real_data)
        generated_data = convert_to_tensor(generated_data)
        interpolates, batch_size = _interpolates(real_data, generated_data)
        with graph_lib.name_scope(None):  # update ops land in the discriminator's scope
            with variable_scope.variable_scope(discriminator_scope, "gpenalty_dscope",
                                               reuse=variable_scope.AUTO_REUSE):
                disc_interpolates = discriminator_fn(interpolates, generator_inputs)
        if isinstance(disc_interpolates, tuple):  # ACGAN: (logits, class logits)
            disc_interpolates = disc_interpolates[0]
        grads = gradients_lib.gradients(disc_interpolates, interpolates)[0]
        squares = reduction_ops.reduce_sum(unary_ops.square(grads),
                                           axis=list(range(1, grads.shape.ndims)))
        if isinstance(batch_size, int):
            squares.set_shape([batch_size] + squares.shape.as_list()[1:])
        slopes = unary_ops.sqrt(squares + epsilon)  # epsilon inside: finite gradient at 0
        penalties = slopes / target - 1.0
        if one_sided:
            penalties = math_ops.maximum(0., penalties)
        penalty = losses_impl.compute_weighted_loss(
            unary_ops.square(penalties), weights, scope=scope,
            loss_collection=loss_collection, reduction=reduction)
        _scalars(add_summaries, gradient_penalty_loss=penalty)
        return penalty


def minimax_discriminator_loss(discriminator_real_outputs, discriminator_gen_outputs,
                               label_smoothing=0.25, real_weights=1.0,
                               generated_weights=1.0, scope=None, loss_collection=_LOSSES,
                               reduction=_NONZERO, add_summaries=False):
    """-log sigmoid(D(x)) (labels smoothed to 1 - label_smoothing / 2) - log(1 -
    sigmoid(D(G(z)))), as sigmoid cross entropies."""
    with graph_lib.name_scope(scope, "discriminator_minimax_loss", (
            discriminator_real_outputs, discriminator_gen_outputs, real_weights,
            generated_weights, label_smoothing)) as scope:
        on_real = losses_impl.sigmoid_cross_entropy(
            array_ops.ones_like(discriminator_real_outputs), discriminator_real_outputs,
            real_weights, label_smoothing, scope, loss_collection=None, reduction=reduction)
        on_gen = losses_impl.sigmoid_cross_entropy(
            array_ops.zeros_like(discriminator_gen_outputs), discriminator_gen_outputs,
            generated_weights, scope=scope, loss_collection=None, reduction=reduction)
        loss = on_real + on_gen
        util.add_loss(loss, loss_collection)
        _scalars(add_summaries, discriminator_gen_minimax_loss=on_gen,
                 discriminator_real_minimax_loss=on_real, discriminator_minimax_loss=loss)
    return loss


def minimax_generator_loss(discriminator_gen_outputs, label_smoothing=0.0, weights=1.0,
                           scope=None, loss_collection=_LOSSES, reduction=_NONZERO,
                           add_summaries=False):
    """Minus the minimax discriminator loss with D(x) replaced by logits of 1 (TF-GAN's
    definition: the real side is a constant, the gradient that of log(1 - D(G(z))))."""
    with graph_lib.name_scope(scope, "generator_minimax_loss") as scope:
        loss = -minimax_discriminator_loss(
            array_ops.ones_like(discriminator_gen_outputs), discriminator_gen_outputs,
            label_smoothing, weights, weights, scope, loss_collection, reduction,
            add_summaries=False)
    _scalars(add_summaries, generator_minimax_loss=loss)
    return loss


def modified_discriminator_loss(discriminator_real_outputs, discriminator_gen_outputs,
                                label_smoothing=0.25, real_weights=1.0,
                                generated_weights=1.0, scope=None, loss_collection=_LOSSES,
                                reduction=_NONZERO, add_summaries=False):
    """The minimax discriminator loss (under the scope 'discriminator_modified_loss')."""
    return minimax_discriminator_loss(
        discriminator_real_outputs, discriminator_gen_outputs, label_smoothing,
        real_weights, generated_weights, scope or "discriminator_modified_loss",
        loss_collection, reduction, add_summaries)


def modified_generator_loss(discriminator_gen_outputs, label_smoothing=0.0, weights=1.0,
                            scope=None, loss_collection=_LOSSES, reduction=_NONZERO,
                            add_summaries=False):
    """-log sigmoid(D(G(z))): the non-saturating generator loss."""
    with graph_lib.name_scope(scope, "generator_modified_loss",
                              [discriminator_gen_outputs]) as scope:
        loss = losses_impl.sigmoid_cross_entropy(
            array_ops.ones_like(discriminator_gen_outputs), discriminator_gen_outputs,
            weights, label_smoothing, scope, loss_collection, reduction)
        _scalars(add_summaries, generator_modified_loss=loss)
    return loss


def least_squares_generator_loss(discriminator_gen_outputs, real_label=1, weights=1.0,
                                 scope=None, loss_collection=_LOSSES, reduction=_NONZERO,
                                 add_summaries=False):
    """(D(G(z)) - real_label)^2 / 2 (LSGAN)."""
    with graph_lib.name_scope(scope, "lsq_generator_loss",
                              (discriminator_gen_outputs, real_label)) as scope:
        gen = math_ops.to_float(discriminator_gen_outputs)
        loss = math_ops.squared_difference(gen, real_label) / 2.0
        loss = losses_impl.compute_weighted_loss(loss, weights, scope, loss_collection,
                                                 reduction)
    _scalars(add_summaries, generator_lsq_loss=loss)
    return loss


def least_squares_discriminator_loss(discriminator_real_outputs, discriminator_gen_outputs,
                                     real_label=1, fake_label=0, real_weights=1.0,
                                     generated_weights=1.0, scope=None,
                                     loss_collection=_LOSSES, reduction=_NONZERO,
                                     add_summaries=False):
    """(D(x) - real_label)^2 / 2 + (D(G(z)) - fake_label)^2 / 2 (LSGAN)."""
    with graph_lib.name_scope(scope, "lsq_discriminator_loss",
                              (discriminator_gen_outputs, real_label)) as scope:
        real = math_ops.to_float(discriminator_real_outputs)
        gen = math_ops.to_float(discriminator_gen_outputs)
        real.shape.assert_is_compatible_with(gen.shape)
        on_real = losses_impl.compute_weighted_loss(
            math_ops.squared_difference(real, real_label) / 2.0, real_weights, scope,
            loss_collection=None, reduction=reduction)
        on_gen = losses_impl.compute_weighted_loss(
            math_ops.squared_difference(gen, fake_label) / 2.0, generated_weights, scope,
            loss_collection=None, reduction=reduction)
        loss = on_real + on_gen
        util.add_loss(loss, loss_collection)
    _scalars(add_summaries, discriminator_gen_lsq_loss=on_gen,
             discriminator_real_lsq_loss=on_real, discriminator_lsq_loss=loss)
    return loss


def _validate_information_penalty_inputs(structured_generator_inputs,
                                         predicted_distributions) -> None:
    if not isinstance(predicted_distributions, (list, tuple)):
        raise ValueError("`distributions` must be a list or tuple. Instead, found "
                         f"{type(predicted_distributions)}.")
    for dist in predicted_distributions:
        if not isinstance(dist, Distribution):
            raise ValueError("`distributions` must be a list of `Distributions`. Instead, "
                             f"found {type(dist)}.")
    if len(structured_generator_inputs) != len(predicted_distributions):
        raise ValueError(
            f"`structured_generator_inputs` length {len(structured_generator_inputs)} must "
            f"be the same as `predicted_distributions` length "
            f"{len(predicted_distributions)}.")


def mutual_information_penalty(structured_generator_inputs, predicted_distributions,
                               weights=1.0, scope=None, loss_collection=_LOSSES,
                               reduction=_NONZERO, add_summaries=False):
    """Minus the weighted mean log-likelihood of each structured input under its predicted
    distribution (InfoGAN).

    Raises:
      ValueError: `predicted_distributions` is not a list of Distributions of the same
        length as `structured_generator_inputs`.
    """
    _validate_information_penalty_inputs(structured_generator_inputs,
                                         predicted_distributions)
    with graph_lib.name_scope(scope, "mutual_information_loss") as scope:
        log_probs = [reduction_ops.reduce_mean(dist.log_prob(noise)) for dist, noise in
                     zip(predicted_distributions, structured_generator_inputs, strict=True)]
        loss = -1 * losses_impl.compute_weighted_loss(
            log_probs, weights, scope, loss_collection=loss_collection, reduction=reduction)
        _scalars(add_summaries, mutual_information_penalty=loss)
    return loss


def _stable_global_norm(tensors):
    """The global norm of `tensors`, scaled by their largest magnitude first (no overflow
    of the squares); 0.0 when all are None."""
    present = [t for t in tensors if t is not None]
    if not present:
        return 0.0
    largest = reduction_ops.reduce_max(
        [reduction_ops.reduce_max(unary_ops.abs(t)) for t in present])
    return largest * clip_ops.global_norm([t / largest for t in present])


def _weight_value(weights):
    for weight in weights:
        if weight is not None:
            return constant_value(convert_to_tensor(weight))
    return None


def combine_adversarial_loss(main_loss, adversarial_loss, weight_factor=None,
                             gradient_ratio=None, gradient_ratio_epsilon=1e-6,
                             variables=None, scalar_summaries=True, gradient_summaries=True,
                             scope=None):
    """main_loss + c * adversarial_loss, c either `weight_factor` or chosen so that the
    two losses' gradient norms (over `variables`, default all trainable) keep the ratio
    `gradient_ratio`; c carries no gradient.

    Raises:
      ValueError: both or neither of `weight_factor` and `gradient_ratio`, or a loss that
        is not a scalar.
    """
    for loss in (main_loss, adversarial_loss):
        loss.shape.assert_is_compatible_with([])
    if weight_factor is None and gradient_ratio is None:
        raise ValueError("`weight_factor` and `gradient_ratio` cannot both be `None.`")
    if weight_factor is not None and gradient_ratio is not None:
        raise ValueError("`weight_factor` and `gradient_ratio` cannot both be specified.")
    if variables is None:
        variables = variables_lib.trainable_variables()
    with graph_lib.name_scope(scope, "adversarial_loss", values=[main_loss, adversarial_loss]):
        if gradient_summaries or gradient_ratio is not None:
            main_mag = _stable_global_norm(gradients_lib.gradients(main_loss, variables))
            adv_mag = _stable_global_norm(gradients_lib.gradients(adversarial_loss,
                                                                  variables))
        _scalars(scalar_summaries, main_loss=main_loss, adversarial_loss=adversarial_loss)
        if gradient_summaries:
            _scalars(True, main_loss_gradients=main_mag, adversarial_loss_gradients=adv_mag)
        used = _weight_value((weight_factor, gradient_ratio))
        if used is not None and np.all(used == 0):
            return main_loss
        if weight_factor is not None:
            return main_loss + array_ops.stop_gradient(weight_factor) * adversarial_loss
        coefficient = main_mag / (adv_mag + gradient_ratio_epsilon) / gradient_ratio
        summary.scalar("adversarial_coefficient", coefficient)
        return main_loss + array_ops.stop_gradient(coefficient) * adversarial_loss


def cycle_consistency_loss(data_x, reconstructed_data_x, data_y, reconstructed_data_y,
                           scope=None, add_summaries=False):
    """(mean |x - G(F(x))| + mean |y - F(G(y))|) / 2 (CycleGAN); the two L1 terms join
    LOSSES as `tf.losses.absolute_difference` adds them."""
    with graph_lib.name_scope(scope, "cycle_consistency_loss", values=[
            data_x, reconstructed_data_x, data_y, reconstructed_data_y]):
        loss_x2x = losses_impl.absolute_difference(data_x, reconstructed_data_x)
        loss_y2y = losses_impl.absolute_difference(data_y, reconstructed_data_y)
        loss = (loss_x2x + loss_y2y) / 2.0
        _scalars(add_summaries, cycle_consistency_loss_x2x=loss_x2x,
                 cycle_consistency_loss_y2y=loss_y2y, cycle_consistency_loss=loss)
    return loss
