"""TF-GAN's first two steps: build a model (`gan_model`, `infogan_model`, `acgan_model`,
`cyclegan_model`, `stargan_model`), add its losses (`gan_loss`, `cyclegan_loss`,
`stargan_loss`). Making and running the train ops: contrib/gan/train_ops.py.

Scopes and variables follow TF-GAN: the generator is built in the variable scope
`generator_scope` ('Generator'), the discriminator on generated data in
`discriminator_scope` ('Discriminator') and again on real data in the same scope with
`reuse=True`, so both calls share one set of variables; each network's variables are the
trainable variables under its scope.
"""

from __future__ import annotations

from tensorflux.contrib.gan import losses as tfgan_losses
from tensorflux.contrib.gan import losses_wargs, namedtuples
from tensorflux.contrib.layers_core import get_trainable_variables
from tensorflux.debugging import check_ops
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.losses import losses_impl, util
from tensorflux.ops import array_ops, gather_ops, joining_ops, random_ops, reduction_ops
from tensorflux.summary import summary
from tensorflux.variables import variable_scope

__all__ = ["acgan_model", "cyclegan_loss", "cyclegan_model", "gan_loss", "gan_model",
           "infogan_model", "stargan_loss", "stargan_model"]


def _convert_tensor_or_l_or_d(value):
    """A tensor, or a list or dict of them, from what a program passes."""
    if isinstance(value, (list, tuple)):
        return [convert_to_tensor(x) for x in value]
    if isinstance(value, dict):
        return {k: convert_to_tensor(v) for k, v in value.items()}
    return convert_to_tensor(value)


def _check_generated_shape(generated_data, real_data) -> None:
    if not generated_data.shape.is_compatible_with(real_data.shape):
        raise ValueError(f"Generator output shape ({generated_data.shape}) must be the same "
                         f"shape as real data ({real_data.shape}).")


def gan_model(generator_fn, discriminator_fn, real_data, generator_inputs,
              generator_scope="Generator", discriminator_scope="Discriminator",
              check_shapes=True):
    """A GANModel: `generator_fn(generator_inputs)` in `generator_scope`, and
    `discriminator_fn(data, generator_inputs)` on the generated and (reusing its
    variables) on the real data in `discriminator_scope`.

    Raises:
      ValueError: `check_shapes` and the generated data's shape is not compatible with the
        real data's.
    """
    with variable_scope.variable_scope(generator_scope) as gen_scope:
        generator_inputs = _convert_tensor_or_l_or_d(generator_inputs)
        generated_data = generator_fn(generator_inputs)
    with variable_scope.variable_scope(discriminator_scope) as dis_scope:
        dis_gen_outputs = discriminator_fn(generated_data, generator_inputs)
    with variable_scope.variable_scope(dis_scope, reuse=True):
        real_data = _convert_tensor_or_l_or_d(real_data)
        dis_real_outputs = discriminator_fn(real_data, generator_inputs)
    if check_shapes:
        _check_generated_shape(generated_data, real_data)
    return namedtuples.GANModel(
        generator_inputs, generated_data, get_trainable_variables(gen_scope), gen_scope,
        generator_fn, real_data, dis_real_outputs, dis_gen_outputs,
        get_trainable_variables(dis_scope), dis_scope, discriminator_fn)


def infogan_model(generator_fn, discriminator_fn, real_data, unstructured_generator_inputs,
                  structured_generator_inputs, generator_scope="Generator",
                  discriminator_scope="Discriminator"):
    """An InfoGANModel: the generator takes the unstructured then the structured inputs
    as one list; the discriminator returns (logits, one predicted distribution per
    structured input).

    Raises:
      ValueError: the distributions are not a list as long as the structured inputs, or
        the generated data's shape is not compatible with the real data's.
    """
    with variable_scope.variable_scope(generator_scope) as gen_scope:
        unstructured = _convert_tensor_or_l_or_d(unstructured_generator_inputs)
        structured = _convert_tensor_or_l_or_d(structured_generator_inputs)
        generator_inputs = unstructured + structured
        generated_data = generator_fn(generator_inputs)
    with variable_scope.variable_scope(discriminator_scope) as dis_scope:
        dis_gen_outputs, predicted_distributions = discriminator_fn(generated_data,
                                                                    generator_inputs)
    if not isinstance(predicted_distributions, (tuple, list)):
        raise ValueError("`predicted_distributions` must be a list. Instead, found "
                         f"{type(predicted_distributions)}.")
    if len(predicted_distributions) != len(structured):
        raise ValueError(f"Length of `predicted_distributions` {len(predicted_distributions)}"
                         f" must be the same as the length of structured noise "
                         f"{len(structured)}.")
    with variable_scope.variable_scope(dis_scope, reuse=True):
        real_data = convert_to_tensor(real_data)
        dis_real_outputs, _ = discriminator_fn(real_data, generator_inputs)
    _check_generated_shape(generated_data, real_data)
    return namedtuples.InfoGANModel(
        generator_inputs, generated_data, get_trainable_variables(gen_scope), gen_scope,
        generator_fn, real_data, dis_real_outputs, dis_gen_outputs,
        get_trainable_variables(dis_scope), dis_scope,
        lambda x, y: discriminator_fn(x, y)[0], structured, predicted_distributions,
        discriminator_fn)


def _acgan_outputs(outputs):
    try:
        logits, class_logits = outputs
    except (TypeError, ValueError):
        raise TypeError("A discriminator function for ACGAN must output a tuple consisting "
                        "of (discrimination logits, classification logits).") from None
    return logits, class_logits


def acgan_model(generator_fn, discriminator_fn, real_data, generator_inputs, one_hot_labels,
                generator_scope="Generator", discriminator_scope="Discriminator",
                check_shapes=True):
    """An ACGANModel: as `gan_model`, with a discriminator returning (logits, class
    logits), built under the name scopes '<scope>/generated/' and '<scope>/real/'.

    Raises:
      TypeError: the discriminator does not return a pair.
      ValueError: `check_shapes` and incompatible generated and real shapes.
    """
    with variable_scope.variable_scope(generator_scope) as gen_scope:
        generator_inputs = _convert_tensor_or_l_or_d(generator_inputs)
        generated_data = generator_fn(generator_inputs)
    with variable_scope.variable_scope(discriminator_scope) as dis_scope:
        with graph_lib.name_scope(dis_scope.name + "/generated/"):
            dis_gen, dis_gen_class = _acgan_outputs(discriminator_fn(generated_data,
                                                                     generator_inputs))
    with variable_scope.variable_scope(dis_scope, reuse=True):
        with graph_lib.name_scope(dis_scope.name + "/real/"):
            real_data = convert_to_tensor(real_data)
            dis_real, dis_real_class = _acgan_outputs(discriminator_fn(real_data,
                                                                       generator_inputs))
    if check_shapes:
        _check_generated_shape(generated_data, real_data)
    return namedtuples.ACGANModel(
        generator_inputs, generated_data, get_trainable_variables(gen_scope), gen_scope,
        generator_fn, real_data, dis_real, dis_gen, get_trainable_variables(dis_scope),
        dis_scope, discriminator_fn, one_hot_labels, dis_real_class, dis_gen_class)


def cyclegan_model(generator_fn, discriminator_fn, data_x, data_y,
                   generator_scope="Generator", discriminator_scope="Discriminator",
                   model_x2y_scope="ModelX2Y", model_y2x_scope="ModelY2X",
                   check_shapes=True):
    """A CycleGANModel: a GANModel X->Y under `model_x2y_scope`, one Y->X under
    `model_y2x_scope` (each with its own Generator/Discriminator), and the round trips
    G(F(x)), F(G(y)) built with the generators' variables reused."""
    def partial_model(inputs, outputs):
        return gan_model(generator_fn, discriminator_fn, real_data=outputs,
                         generator_inputs=inputs, generator_scope=generator_scope,
                         discriminator_scope=discriminator_scope, check_shapes=check_shapes)

    with variable_scope.variable_scope(model_x2y_scope):
        model_x2y = partial_model(data_x, data_y)
    with variable_scope.variable_scope(model_y2x_scope):
        model_y2x = partial_model(data_y, data_x)
    with variable_scope.variable_scope(model_y2x.generator_scope, reuse=True):
        reconstructed_x = model_y2x.generator_fn(model_x2y.generated_data)
    with variable_scope.variable_scope(model_x2y.generator_scope, reuse=True):
        reconstructed_y = model_x2y.generator_fn(model_y2x.generated_data)
    return namedtuples.CycleGANModel(model_x2y, model_y2x, reconstructed_x, reconstructed_y)


def _as_one_tensor(value):
    value = _convert_tensor_or_l_or_d(value)
    if isinstance(value, list):
        value = joining_ops.concat(value, 0)
    return value


def _generate_stargan_random_domain_target(batch_size, num_domains):
    """[batch_size, num_domains] one-hot rows of uniformly drawn domains."""
    domain = random_ops.random_uniform([batch_size], minval=0, maxval=num_domains,
                                       dtype=dtypes.int32)
    return gather_ops.one_hot(domain, num_domains)


def stargan_model(generator_fn, discriminator_fn, input_data, input_data_domain_label,
                  generator_scope="Generator", discriminator_scope="Discriminator"):
    """A StarGANModel: `generator_fn(images, target_domains)` to random one-hot target
    domains and back to the input's domains (variables reused);
    `discriminator_fn(images, num_domains)` -> (source, domain logits) on the generated
    and the input images.

    Raises:
      ValueError: the domain labels are not of rank 2 and fully defined shape.
    """
    input_data = _as_one_tensor(input_data)
    labels = _as_one_tensor(input_data_domain_label)
    labels.shape.assert_has_rank(2)
    labels.shape.assert_is_fully_defined()
    batch_size, num_domains = labels.shape.as_list()
    with variable_scope.variable_scope(generator_scope) as gen_scope:
        target = _generate_stargan_random_domain_target(batch_size, num_domains)
        generated_data = generator_fn(input_data, target)
    with variable_scope.variable_scope(gen_scope, reuse=True):
        reconstructed_data = generator_fn(generated_data, labels)
    with variable_scope.variable_scope(discriminator_scope) as dis_scope:
        gen_source, gen_domain = discriminator_fn(generated_data, num_domains)
    with variable_scope.variable_scope(dis_scope, reuse=True):
        input_source, input_domain = discriminator_fn(input_data, num_domains)
    return namedtuples.StarGANModel(
        input_data=input_data, input_data_domain_label=labels,
        generated_data=generated_data, generated_data_domain_target=target,
        reconstructed_data=reconstructed_data,
        discriminator_input_data_source_predication=input_source,
        discriminator_generated_data_source_predication=gen_source,
        discriminator_input_data_domain_predication=input_domain,
        discriminator_generated_data_domain_predication=gen_domain,
        generator_variables=get_trainable_variables(gen_scope), generator_scope=gen_scope,
        generator_fn=generator_fn,
        discriminator_variables=get_trainable_variables(dis_scope),
        discriminator_scope=dis_scope, discriminator_fn=discriminator_fn)


def _validate_aux_loss_weight(weight, name="aux_loss_weight"):
    """A tensor weight gets a run-time check >= 0; a number is checked now."""
    if isinstance(weight, Tensor):
        weight.shape.assert_is_compatible_with([])
        with graph_lib.control_dependencies([check_ops.assert_greater_equal(weight, 0.0)]):
            weight = array_ops.identity(weight)
    elif weight is not None and weight < 0:
        raise ValueError(f"`{name}` must be greater than 0. Instead, was {weight}")
    return weight


def _use_aux_loss(weight) -> bool:
    if weight is None:
        return False
    return True if isinstance(weight, Tensor) else weight > 0


def _tensor_pool_adjusted_model(model, tensor_pool_fn):
    """`model` with the discriminator's generated-side outputs recomputed on data drawn
    from `tensor_pool_fn` (older generated batches)."""
    if isinstance(model, namedtuples.ACGANModel):
        inputs, data = tensor_pool_fn((model.generator_inputs, model.generated_data))
        with variable_scope.variable_scope(model.discriminator_scope, reuse=True):
            outputs, class_logits = model.discriminator_fn(data, inputs)
        return model._replace(generator_inputs=inputs, generated_data=data,
                              discriminator_gen_outputs=outputs,
                              discriminator_gen_classification_logits=class_logits)
    if isinstance(model, namedtuples.InfoGANModel):
        inputs, data, structured = tensor_pool_fn(
            (model.generator_inputs, model.generated_data, model.structured_generator_inputs))
        with variable_scope.variable_scope(model.discriminator_scope, reuse=True):
            outputs, distributions = model.discriminator_and_aux_fn(data, inputs)
        return model._replace(generator_inputs=inputs, generated_data=data,
                              structured_generator_inputs=structured,
                              discriminator_gen_outputs=outputs,
                              predicted_distributions=distributions)
    if isinstance(model, namedtuples.GANModel):
        inputs, data = tensor_pool_fn((model.generator_inputs, model.generated_data))
        with variable_scope.variable_scope(model.discriminator_scope, reuse=True):
            outputs = model.discriminator_fn(data, inputs)
        return model._replace(generator_inputs=inputs, generated_data=data,
                              discriminator_gen_outputs=outputs)
    raise ValueError(f"Tensor pool does not support `model`: {type(model)}.")


def _regularization_loss(scope):
    return util.get_regularization_loss(scope.name) if scope else 0


def gan_loss(model, generator_loss_fn=tfgan_losses.wasserstein_generator_loss,
             discriminator_loss_fn=tfgan_losses.wasserstein_discriminator_loss,
             gradient_penalty_weight=None, gradient_penalty_epsilon=1e-10,
             gradient_penalty_target=1.0, gradient_penalty_one_sided=False,
             mutual_information_penalty_weight=None, aux_cond_generator_weight=None,
             aux_cond_discriminator_weight=None, tensor_pool_fn=None, add_summaries=True):
    """A GANLoss: the two loss functions on `model`, plus the weighted gradient penalty
    (discriminator), mutual information penalty (both; InfoGANModel only), ACGAN class
    losses (ACGANModel only) and each network's regularization losses. With
    `tensor_pool_fn` the discriminator's losses see pooled generated data.

    Raises:
      ValueError: a negative weight, or a penalty the model's type does not support.
    """
    gp_weight = _validate_aux_loss_weight(gradient_penalty_weight, "gradient_penalty_weight")
    mi_weight = _validate_aux_loss_weight(mutual_information_penalty_weight, "infogan_weight")
    ac_gen_weight = _validate_aux_loss_weight(aux_cond_generator_weight,
                                              "aux_cond_generator_weight")
    ac_dis_weight = _validate_aux_loss_weight(aux_cond_discriminator_weight,
                                              "aux_cond_discriminator_weight")
    if _use_aux_loss(mi_weight) and not isinstance(model, namedtuples.InfoGANModel):
        raise ValueError("When `mutual_information_penalty_weight` is provided, `model` must "
                         f"be an `InfoGANModel`. Instead, was {type(model)}.")
    if ((_use_aux_loss(ac_gen_weight) or _use_aux_loss(ac_dis_weight))
            and not isinstance(model, namedtuples.ACGANModel)):
        raise ValueError("When `aux_cond_generator_weight` or "
                         "`aux_cond_discriminator_weight` is provided, `model` must be an "
                         f"`ACGANModel`. Instead, was {type(model)}.")
    pooled = _tensor_pool_adjusted_model(model, tensor_pool_fn) if tensor_pool_fn else model
    gen_loss = generator_loss_fn(model, add_summaries=add_summaries)
    dis_loss = discriminator_loss_fn(pooled, add_summaries=add_summaries)
    if _use_aux_loss(gp_weight):
        gp_loss = tfgan_losses.wasserstein_gradient_penalty(
            pooled, epsilon=gradient_penalty_epsilon, target=gradient_penalty_target,
            one_sided=gradient_penalty_one_sided, add_summaries=add_summaries)
        dis_loss += gp_weight * gp_loss
    if _use_aux_loss(mi_weight):
        gen_info = tfgan_losses.mutual_information_penalty(model, add_summaries=add_summaries)
        dis_info = gen_info if tensor_pool_fn is None else (
            tfgan_losses.mutual_information_penalty(pooled, add_summaries=add_summaries))
        gen_loss += mi_weight * gen_info
        dis_loss += mi_weight * dis_info
    if _use_aux_loss(ac_gen_weight):
        gen_loss += ac_gen_weight * tfgan_losses.acgan_generator_loss(
            model, add_summaries=add_summaries)
    if _use_aux_loss(ac_dis_weight):
        dis_loss += ac_dis_weight * tfgan_losses.acgan_discriminator_loss(
            pooled, add_summaries=add_summaries)
    return namedtuples.GANLoss(gen_loss + _regularization_loss(model.generator_scope),
                               dis_loss + _regularization_loss(model.discriminator_scope))


def cyclegan_loss(model, generator_loss_fn=tfgan_losses.least_squares_generator_loss,
                  discriminator_loss_fn=tfgan_losses.least_squares_discriminator_loss,
                  cycle_consistency_loss_fn=tfgan_losses.cycle_consistency_loss,
                  cycle_consistency_loss_weight=10.0, **kwargs):
    """A CycleGANLoss: `gan_loss` of each direction (`kwargs` passed on), each generator
    loss plus the weighted cycle consistency loss.

    Raises:
      ValueError: `model` is not a CycleGANModel, or the weight is negative.
    """
    if not isinstance(model, namedtuples.CycleGANModel):
        raise ValueError(f"`model` must be a `CycleGANModel`. Instead, was {type(model)}.")
    cycle_loss = cycle_consistency_loss_fn(model,
                                           add_summaries=kwargs.get("add_summaries", True))
    weight = _validate_aux_loss_weight(cycle_consistency_loss_weight,
                                       "cycle_consistency_loss_weight")
    aux_loss = weight * cycle_loss

    def partial_loss(partial_model):
        loss = gan_loss(partial_model, generator_loss_fn=generator_loss_fn,
                        discriminator_loss_fn=discriminator_loss_fn, **kwargs)
        return loss._replace(generator_loss=loss.generator_loss + aux_loss)

    with graph_lib.name_scope("cyclegan_loss_x2y"):
        loss_x2y = partial_loss(model.model_x2y)
    with graph_lib.name_scope("cyclegan_loss_y2x"):
        loss_y2x = partial_loss(model.model_y2x)
    return namedtuples.CycleGANLoss(loss_x2y, loss_y2x)


def stargan_loss(model,
                 generator_loss_fn=tfgan_losses.stargan_generator_loss_wrapper(
                     losses_wargs.wasserstein_generator_loss),
                 discriminator_loss_fn=tfgan_losses.stargan_discriminator_loss_wrapper(
                     losses_wargs.wasserstein_discriminator_loss),
                 gradient_penalty_weight=10.0, gradient_penalty_epsilon=1e-10,
                 gradient_penalty_target=1.0, gradient_penalty_one_sided=False,
                 reconstruction_loss_fn=losses_impl.absolute_difference,
                 reconstruction_loss_weight=10.0,
                 classification_loss_fn=losses_impl.softmax_cross_entropy,
                 classification_loss_weight=1.0, classification_one_hot=True,
                 add_summaries=True):
    """A GANLoss for a StarGANModel: adversarial losses, the gradient penalty
    (discriminator), the weighted reconstruction loss (generator) and the domain
    classification losses (generator: generated vs. its targets; discriminator: input vs.
    its labels)."""
    def classification_loss(labels, logits, scope_name):
        with graph_lib.name_scope(scope_name, values=(labels, logits)):
            loss = classification_loss_fn(onehot_labels=labels, logits=logits)
            if not classification_one_hot:
                loss = reduction_ops.reduce_sum(loss, axis=1)
            loss = reduction_ops.reduce_mean(loss)
            if add_summaries:
                summary.scalar(scope_name, loss)
            return loss

    model.input_data_domain_label.shape.assert_has_rank(2)
    model.input_data_domain_label.shape[1:].assert_is_fully_defined()
    gen_loss = generator_loss_fn(model, add_summaries=add_summaries)
    dis_loss = discriminator_loss_fn(model, add_summaries=add_summaries)
    if _use_aux_loss(gradient_penalty_weight):
        penalty_fn = tfgan_losses.stargan_gradient_penalty_wrapper(
            losses_wargs.wasserstein_gradient_penalty)
        dis_loss += penalty_fn(model, epsilon=gradient_penalty_epsilon,
                               target=gradient_penalty_target,
                               one_sided=gradient_penalty_one_sided,
                               add_summaries=add_summaries) * gradient_penalty_weight
    reconstruction = reconstruction_loss_fn(model.input_data, model.reconstructed_data)
    gen_loss += reconstruction * reconstruction_loss_weight
    if add_summaries:
        summary.scalar("reconstruction_loss", reconstruction)
    gen_loss += classification_loss(
        model.generated_data_domain_target,
        model.discriminator_generated_data_domain_predication,
        "generator_classification_loss") * classification_loss_weight
    dis_loss += classification_loss(
        model.input_data_domain_label, model.discriminator_input_data_domain_predication,
        "discriminator_classification_loss") * classification_loss_weight
    return namedtuples.GANLoss(gen_loss, dis_loss)

