"""For the oracle only: TF 2.21 has no tf.contrib; give tf.compat.v1 the few contrib names these
programs use, mapped to their TF1 core equivalents."""
import types

import tensorflow.compat.v1 as tf
import tf_contrib_rnn


def _l2(scale, scope=None):
    return lambda w: scale * tf.nn.l2_loss(w)


def _l1(scale, scope=None):
    return lambda w: scale * tf.reduce_sum(tf.abs(w))


def _variance_scaling(factor=2.0, mode="FAN_IN", uniform=False, seed=None, dtype=tf.float32):
    """contrib.layers' (He initialisation by default), as core's variance_scaling."""
    return tf.variance_scaling_initializer(
        scale=factor, mode=mode.lower(), seed=seed, dtype=dtype,
        distribution="uniform" if uniform else "truncated_normal")


def _sequence_loss_by_example(logits, targets, weights, average_across_timesteps=True,
                              softmax_loss_function=None, name=None):
    """contrib.legacy_seq2seq's: the weighted per-step losses summed over the steps."""
    with tf.name_scope(name, "sequence_loss_by_example", logits + targets + weights):
        losses = []
        for logit, target, weight in zip(logits, targets, weights, strict=True):
            if softmax_loss_function is None:
                step = tf.nn.sparse_softmax_cross_entropy_with_logits(
                    labels=tf.reshape(target, [-1]), logits=logit)
            else:
                step = softmax_loss_function(labels=target, logits=logit)
            losses.append(step * weight)
        total = tf.add_n(losses)
        if average_across_timesteps:
            total /= tf.add_n(weights) + 1e-12
        return total


tf.contrib = types.SimpleNamespace(
    legacy_seq2seq=types.SimpleNamespace(sequence_loss_by_example=_sequence_loss_by_example),
    rnn=tf_contrib_rnn,
    distributions=tf.distributions,
    layers=types.SimpleNamespace(flatten=tf.layers.flatten,
                                 xavier_initializer=tf.glorot_uniform_initializer,
                                 l1_regularizer=_l1, l2_regularizer=_l2,
                                 variance_scaling_initializer=_variance_scaling))
