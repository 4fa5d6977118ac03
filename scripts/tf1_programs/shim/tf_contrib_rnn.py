"""For the oracle (TF 2.21 has no tf.contrib): tf.contrib.rnn's names from tf.compat.v1.nn."""
import tensorflow.compat.v1 as tf
from tensorflow.compat.v1.nn.rnn_cell import *  # noqa

static_rnn = tf.nn.static_rnn
static_bidirectional_rnn = tf.nn.static_bidirectional_rnn


class OutputProjectionWrapper(RNNCell):  # noqa: F405 - from the star import
    """contrib.rnn's: `cell`'s outputs through a dense layer (`kernel`, `bias` in the
    wrapper's scope), then `activation`."""

    def __init__(self, cell, output_size, activation=None, reuse=None):
        super().__init__(_reuse=reuse)
        self._cell, self._out, self._activation = cell, output_size, activation

    @property
    def state_size(self):
        return self._cell.state_size

    @property
    def output_size(self):
        return self._out

    def zero_state(self, batch_size, dtype):
        return self._cell.zero_state(batch_size, dtype)

    def call(self, inputs, state):
        output, new_state = self._cell(inputs, state)
        kernel = tf.get_variable("kernel", [output.shape[-1], self._out], output.dtype)
        bias = tf.get_variable("bias", [self._out], output.dtype,
                               initializer=tf.zeros_initializer())
        projected = tf.nn.bias_add(tf.matmul(output, kernel), bias)
        if self._activation is not None:
            projected = self._activation(projected)
        return projected, new_state
