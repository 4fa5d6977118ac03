"""For the oracle (TF 2.21 has no tf.contrib): tf.contrib.rnn's names from tf.compat.v1.nn."""
import tensorflow.compat.v1 as tf
from tensorflow.compat.v1.nn.rnn_cell import *  # noqa

static_rnn = tf.nn.static_rnn
static_bidirectional_rnn = tf.nn.static_bidirectional_rnn
