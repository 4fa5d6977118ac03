"""For the oracle only: TF 2.21 has no tf.contrib; give tf.compat.v1 the few contrib names these
programs use, mapped to their TF1 core equivalents."""
import types

import tensorflow.compat.v1 as tf
import tf_contrib_rnn


def _l2(scale, scope=None):
    return lambda w: scale * tf.nn.l2_loss(w)


tf.contrib = types.SimpleNamespace(
    rnn=tf_contrib_rnn,
    distributions=tf.distributions,
    layers=types.SimpleNamespace(flatten=tf.layers.flatten,
                                 xavier_initializer=tf.glorot_uniform_initializer,
                                 l2_regularizer=_l2))
