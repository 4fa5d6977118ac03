"""The tuples TF-GAN's four steps hand to each other (model -> loss -> train ops -> train
loop). Each is a plain namedtuple with TF-GAN's field names and order, so programs that
build one by hand or call `_replace` on it work unchanged."""

from __future__ import annotations

import collections

__all__ = ["ACGANModel", "CycleGANLoss", "CycleGANModel", "GANLoss", "GANModel",
           "GANTrainOps", "GANTrainSteps", "InfoGANModel", "StarGANModel"]

_GAN_FIELDS = ("generator_inputs", "generated_data", "generator_variables",
               "generator_scope", "generator_fn", "real_data",
               "discriminator_real_outputs", "discriminator_gen_outputs",
               "discriminator_variables", "discriminator_scope", "discriminator_fn")


class GANModel(collections.namedtuple("GANModel", _GAN_FIELDS)):
    """A generator and a discriminator applied to generated and to real data: the
    generator's inputs and outputs, both discriminator outputs, each network's trainable
    variables, variable scope and function."""


class InfoGANModel(collections.namedtuple("InfoGANModel", _GAN_FIELDS + (
        "structured_generator_inputs", "predicted_distributions",
        "discriminator_and_aux_fn"))):
    """A GANModel whose discriminator also predicts the structured noise: one
    `tf.distributions.Distribution` per structured input (`predicted_distributions`);
    `discriminator_fn` returns the logits only, `discriminator_and_aux_fn` both."""


class ACGANModel(collections.namedtuple("ACGANModel", _GAN_FIELDS + (
        "one_hot_labels", "discriminator_real_classification_logits",
        "discriminator_gen_classification_logits"))):
    """A GANModel whose discriminator also classifies its input (class logits on real
    and generated data) against `one_hot_labels`."""


class CycleGANModel(collections.namedtuple(
        "CycleGANModel", ("model_x2y", "model_y2x", "reconstructed_x", "reconstructed_y"))):
    """Two GANModels mapping X to Y and Y to X, and the round trips G(F(x)), F(G(y))."""


class StarGANModel(collections.namedtuple("StarGANModel", (
        "input_data", "input_data_domain_label", "generated_data",
        "generated_data_domain_target", "reconstructed_data",
        "discriminator_input_data_source_predication",
        "discriminator_generated_data_source_predication",
        "discriminator_input_data_domain_predication",
        "discriminator_generated_data_domain_predication",
        "generator_variables", "generator_scope", "generator_fn",
        "discriminator_variables", "discriminator_scope", "discriminator_fn"))):
    """One generator translating images between domains (to a random target domain and
    back) and one discriminator predicting source (real/generated) and domain."""


class GANLoss(collections.namedtuple("GANLoss", ("generator_loss", "discriminator_loss"))):
    """The generator's and the discriminator's scalar losses."""


class CycleGANLoss(collections.namedtuple("CycleGANLoss", ("loss_x2y", "loss_y2x"))):
    """The GANLoss of each direction of a CycleGANModel."""


class GANTrainOps(collections.namedtuple("GANTrainOps", (
        "generator_train_op", "discriminator_train_op", "global_step_inc_op",
        "train_hooks"))):
    """The generator's and the discriminator's train ops, the op incrementing the shared
    global step, and hooks the train ops need (SyncReplicasOptimizer's)."""

    def __new__(cls, generator_train_op, discriminator_train_op, global_step_inc_op,
                train_hooks=()):
        return super().__new__(cls, generator_train_op, discriminator_train_op,
                               global_step_inc_op, train_hooks)


class GANTrainSteps(collections.namedtuple(
        "GANTrainSteps", ("generator_train_steps", "discriminator_train_steps"))):
    """How many generator and discriminator updates one GAN step makes."""
