"""contrib.rnn's NASCell: the recurrent cell found by Neural Architecture Search (Zoph and
Le, "Neural Architecture Search with Reinforcement Learning", ICLR 2017), as
tensorflow/nmt offers it (`--unit_type=nas`).

The cell computes eight branches from the input and the previous output, combines them in a
fixed tree of sums and products under sigmoid / tanh / relu, injects the memory at the
second level and keeps the third level's product as the new memory; an optional projection
maps the output to `num_proj` units. Its state is an LSTMStateTuple(c, m).
"""

from __future__ import annotations

from tensorflux.nn.rnn_cell_impl import LayerRNNCell, LSTMStateTuple, _input_depth
from tensorflux.ops import joining_ops, matrix_ops, nn_ops, unary_ops

__all__ = ["NASCell"]

_BRANCHES = 8


class NASCell(LayerRNNCell):
    """Neural Architecture Search recurrent cell (`tf.contrib.rnn.NASCell`).

    Args:
      num_units: the memory's size.
      num_proj: the output's size after a projection (no projection when None).
      use_biases: add a bias to the recurrent branches.
      reuse: whether to reuse variables in an existing scope.

    Variables: `kernel` [input depth, 8 * num_units], `recurrent_kernel` [output size,
    8 * num_units], `bias` [8 * num_units] with `use_biases`, `projection_weights`
    [num_units, num_proj] with `num_proj`.
    """

    def __init__(self, num_units, num_proj=None, use_biases=False, reuse=None, **kwargs):
        super().__init__(_reuse=reuse, **kwargs)
        self._num_units = num_units
        self._num_proj = num_proj
        self._use_biases = use_biases
        out = num_proj if num_proj is not None else num_units
        self._state_size = LSTMStateTuple(num_units, out)
        self._output_size = out

    state_size = property(lambda self: self._state_size)
    output_size = property(lambda self: self._output_size)

    def build(self, inputs_shape):
        depth = _input_depth(self, inputs_shape)
        width = _BRANCHES * self._num_units
        self._recurrent_kernel = self.add_variable("recurrent_kernel",
                                                   [self._output_size, width])
        self._kernel = self.add_variable("kernel", [depth, width])
        self._bias = self.add_variable("bias", [width]) if self._use_biases else None
        self._projection = self.add_variable(
            "projection_weights", [self._num_units, self._num_proj]) \
            if self._num_proj is not None else None
        self.built = True

    def call(self, inputs, state):
        c_prev, m_prev = state
        recurrent = matrix_ops.matmul(m_prev, self._recurrent_kernel)
        if self._bias is not None:
            recurrent = nn_ops.bias_add(recurrent, self._bias)
        m = joining_ops.split(recurrent, _BRANCHES, axis=1)
        x = joining_ops.split(matrix_ops.matmul(inputs, self._kernel), _BRANCHES, axis=1)
        sig, tanh, relu = unary_ops.sigmoid, unary_ops.tanh, nn_ops.relu
        # first level: the eight branches
        a0, a1 = sig(x[0] + m[0]), relu(x[1] + m[1])
        a2, a3 = sig(x[2] + m[2]), relu(x[3] * m[3])
        a4, a5 = tanh(x[4] + m[4]), sig(x[5] + m[5])
        a6, a7 = tanh(x[6] + m[6]), sig(x[7] + m[7])
        # second level, with the memory injected into its first node
        b0 = tanh(tanh(a0 * a1) + c_prev)
        b1, b2, b3 = tanh(a2 + a3), tanh(a4 * a5), sig(a6 + a7)
        # third level: the new memory, then the output
        new_c = b0 * b1
        new_m = tanh(new_c * tanh(b2 + b3))
        if self._projection is not None:
            new_m = matrix_ops.matmul(new_m, self._projection)
        return new_m, LSTMStateTuple(new_c, new_m)
