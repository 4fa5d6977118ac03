"""`tf.contrib.rnn.LayerNormBasicLSTMCell`: BasicLSTMCell with layer normalization (Ba et
al., 2016) of each gate's pre-activation and of the new cell state, and optional recurrent
dropout on the candidate (Semeniuta et al., 2016). No fused op: plain ops.

Variables (TF's names, in the cell's scope): `kernel` [input + units, 4 units]; with
layer_norm, `gamma` and `beta` [units] under `input`, `transform`, `forget`, `output` and
`state`; without it, `bias` [4 units].
"""

from __future__ import annotations

from tensorflux.nn import nn_impl
from tensorflux.nn.rnn_cell_impl import LSTMStateTuple, RNNCell
from tensorflux.ops import joining_ops, matrix_ops, nn_ops, unary_ops
from tensorflux.variables import init_ops
from tensorflux.variables import variable_scope as vs

__all__ = ["LayerNormBasicLSTMCell"]


class LayerNormBasicLSTMCell(RNNCell):
    """LSTM with layer-normalized gates (`tf.contrib.rnn.LayerNormBasicLSTMCell`).

    Args:
      num_units: int, the number of units.
      forget_bias: float added to the forget gate's (normalized) pre-activation.
      input_size: deprecated and unused.
      activation: the inner nonlinearity (default tanh).
      layer_norm: normalize the gates and the cell state; False gives BasicLSTMCell's math.
      norm_gain, norm_shift: the initial values of every gamma and beta.
      dropout_keep_prob: keep probability (float or scalar tensor) of the dropout applied
        to the candidate; 1.0: none.
      dropout_prob_seed: the dropout's seed.
      reuse: whether to reuse variables in an existing scope.
    """

    def __init__(self, num_units, forget_bias=1.0, input_size=None, activation=None,
                 layer_norm=True, norm_gain=1.0, norm_shift=0.0, dropout_keep_prob=1.0,
                 dropout_prob_seed=None, reuse=None):
        super().__init__(_reuse=reuse)
        del input_size  # deprecated in TF as well
        self._num_units = num_units
        self._activation = activation or unary_ops.tanh
        self._forget_bias = forget_bias
        self._keep_prob = dropout_keep_prob
        self._seed = dropout_prob_seed
        self._layer_norm = layer_norm
        self._g = norm_gain
        self._b = norm_shift

    state_size = property(lambda self: LSTMStateTuple(self._num_units, self._num_units))
    output_size = property(lambda self: self._num_units)

    def _norm(self, inp, scope, dtype):
        shape = inp.shape[-1:]
        with vs.variable_scope(scope):
            gamma = vs.get_variable("gamma", shape=shape, dtype=dtype,
                                    initializer=init_ops.constant_initializer(self._g))
            beta = vs.get_variable("beta", shape=shape, dtype=dtype,
                                   initializer=init_ops.constant_initializer(self._b))
            mean, variance = nn_impl.moments(inp, [1], keep_dims=True)
            return nn_impl.batch_normalization(inp, mean, variance, beta, gamma, 1e-12)

    def _linear(self, args):
        out_size = 4 * self._num_units
        weights = vs.get_variable("kernel", [args.shape[-1], out_size], dtype=args.dtype)
        out = matrix_ops.matmul(args, weights)
        if not self._layer_norm:
            bias = vs.get_variable("bias", [out_size], dtype=args.dtype)
            out = nn_ops.bias_add(out, bias)
        return out

    def call(self, inputs, state):
        c, h = state
        args = joining_ops.concat([inputs, h], 1)
        dtype = args.dtype
        i, j, f, o = joining_ops.split(self._linear(args), 4, axis=1)
        if self._layer_norm:
            i = self._norm(i, "input", dtype)
            j = self._norm(j, "transform", dtype)
            f = self._norm(f, "forget", dtype)
            o = self._norm(o, "output", dtype)
        g = self._activation(j)
        if not isinstance(self._keep_prob, float) or self._keep_prob < 1:
            g = nn_impl.dropout(g, self._keep_prob, seed=self._seed)
        new_c = c * unary_ops.sigmoid(f + self._forget_bias) + unary_ops.sigmoid(i) * g
        if self._layer_norm:
            new_c = self._norm(new_c, "state", dtype)
        new_h = self._activation(new_c) * unary_ops.sigmoid(o)
        return new_h, LSTMStateTuple(new_c, new_h)
