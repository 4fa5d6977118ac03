"""`tf.contrib.rnn`'s cells over the fused recurrent ops (tensorflux/ops/rnn_block_ops.py):
LSTMBlockCell (one LSTMBlockCell op per step), LSTMBlockFusedCell (one BlockLSTM op for a
whole time-major sequence), GRUBlockCell and GRUBlockCellV2 (one GRUBlockCell op per step).

Variable names and shapes are TF's, so checkpoints move between the two: LSTMBlockCell and
LSTMBlockFusedCell own `kernel` [input + units, 4 units] and `bias` [4 units] (gates i, ci,
f, o, as BasicLSTMCell's i, j, f, o), plus `w_i_diag`, `w_f_diag`, `w_o_diag` with
peepholes; GRUBlockCell owns `w_ru`, `b_ru`, `w_c`, `b_c`, and GRUBlockCellV2 GRUCell's
`gates/kernel`, `gates/bias`, `candidate/kernel`, `candidate/bias`.
"""

from __future__ import annotations

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.nn.rnn_cell_impl import LayerRNNCell, LSTMStateTuple, RNNCell
from tensorflux.ops import (
    array_ops,
    gather_ops,
    joining_ops,
    math_ops,
    reduction_ops,
    rnn_block_ops,
    sequence_ops,
)
from tensorflux.variables import init_ops

__all__ = ["LSTMBlockCell", "LSTMBlockFusedCell", "GRUBlockCell", "GRUBlockCellV2"]


def _known_dim(shape, axis, what):
    shape = tensor_shape.TensorShape(shape)
    value = tensor_shape.dimension_value(shape[axis]) if shape.ndims is not None else None
    if not value:
        raise ValueError(f"Expecting {what} to be set, got inputs_shape = {shape}")
    return value


class _LSTMBlockVariables:
    """The kernel, bias and peephole variables of the two block LSTM cells."""

    def _make_lstm_variables(self, input_size):
        n = self._num_units
        self._kernel = self.add_variable("kernel", [input_size + n, 4 * n])
        self._bias = self.add_variable("bias", [4 * n],
                                       initializer=init_ops.constant_initializer(0.0))
        if self._use_peephole:
            self._w_i_diag = self.add_variable("w_i_diag", [n])
            self._w_f_diag = self.add_variable("w_f_diag", [n])
            self._w_o_diag = self.add_variable("w_o_diag", [n])

    def _peepholes(self, dtype):
        if self._use_peephole:
            return self._w_i_diag, self._w_f_diag, self._w_o_diag
        zeros = array_ops.zeros([self._num_units], dtype=dtype)
        return zeros, zeros, zeros


class LSTMBlockCell(_LSTMBlockVariables, LayerRNNCell):
    """The LSTM cell of BasicLSTMCell (or LSTMCell with peepholes and cell clipping), each
    step one fused LSTMBlockCell op.

    Args:
      num_units: int, the number of units.
      forget_bias: float added to the forget gate's pre-activation (default 1.0).
      cell_clip: clip the cell state to [-cell_clip, cell_clip]; None: no clipping.
      use_peephole: add the diagonal peephole connections.
      dtype, reuse, name: as for the core cells (default scope name "lstm_cell").
    """

    def __init__(self, num_units, forget_bias=1.0, cell_clip=None, use_peephole=False,
                 dtype=None, reuse=None, name="lstm_cell"):
        super().__init__(_reuse=reuse, name=name, dtype=dtype)
        self._num_units = num_units
        self._forget_bias = forget_bias
        self._use_peephole = use_peephole
        self._cell_clip = cell_clip if cell_clip is not None else -1

    state_size = property(lambda self: LSTMStateTuple(self._num_units, self._num_units))
    output_size = property(lambda self: self._num_units)

    def build(self, inputs_shape):
        self._make_lstm_variables(_known_dim(inputs_shape, 1, "input_size"))
        self.built = True

    def call(self, inputs, state):
        if len(state) != 2:
            raise ValueError("Expecting state to be a tuple with length 2.")
        cs_prev, h_prev = state
        wci, wcf, wco = self._peepholes(inputs.dtype)
        _, cs, _, _, _, _, h = rnn_block_ops.lstm_block_cell(
            inputs, cs_prev, h_prev, self._kernel, wci, wcf, wco, self._bias,
            forget_bias=self._forget_bias, cell_clip=self._cell_clip,
            use_peephole=self._use_peephole)
        return h, LSTMStateTuple(cs, h)


class LSTMBlockFusedCell(_LSTMBlockVariables, RNNCell):
    """The LSTM of LSTMBlockCell run over a whole time-major sequence by one BlockLSTM op.

    Called as `cell(inputs, initial_state=None, dtype=None, sequence_length=None)` with
    inputs [time, batch, input] (or a list of [batch, input] tensors); returns `(outputs,
    LSTMStateTuple(c, h))`: outputs [time, batch, units] (a list for list inputs), zero past
    each sequence_length, and the state at each sequence's last step.

    Args:
      num_units, forget_bias, cell_clip, use_peephole: as for LSTMBlockCell.
      reuse, dtype, name: as for the core cells (default scope name "lstm_fused_cell").
    """

    def __init__(self, num_units, forget_bias=1.0, cell_clip=None, use_peephole=False,
                 reuse=None, dtype=None, name="lstm_fused_cell"):
        super().__init__(_reuse=reuse, name=name, dtype=dtype)
        self._num_units = num_units
        self._forget_bias = forget_bias
        self._use_peephole = use_peephole
        self._cell_clip = cell_clip if cell_clip is not None else -1

    num_units = property(lambda self: self._num_units)
    state_size = property(lambda self: LSTMStateTuple(self._num_units, self._num_units))
    output_size = property(lambda self: self._num_units)

    def __call__(self, inputs, initial_state=None, dtype=None, sequence_length=None,
                 scope=None):
        is_list = isinstance(inputs, (list, tuple))
        inputs = joining_ops.stack(list(inputs)) if is_list else convert_to_tensor(inputs)
        outputs, state = self._layer_call(inputs, (initial_state, dtype, sequence_length),
                                          scope=scope)
        return (joining_ops.unstack(outputs) if is_list else outputs), state

    def build(self, inputs_shape):
        self._make_lstm_variables(_known_dim(tensor_shape.TensorShape(inputs_shape)
                                             .with_rank(3), 2, "inputs_shape[2]"))
        self.built = True

    def call(self, inputs, state):
        initial_state, dtype, sequence_length = state
        time_len = tensor_shape.dimension_value(inputs.shape[0])
        if time_len is None:
            time_len = array_ops.shape(inputs)[0]
        batch = tensor_shape.dimension_value(inputs.shape[1])
        if batch is None:
            batch = array_ops.shape(inputs)[1]
        if initial_state is None:
            if dtype is None:
                raise ValueError("Either initial_state or dtype needs to be specified")
            zero = array_ops.zeros(joining_ops.stack([batch, self._num_units]), dtype=dtype)
            initial_state = (zero, zero)
        elif len(initial_state) != 2:
            raise ValueError("Expecting initial_state to be a tuple with length 2 or None")
        dtype = inputs.dtype
        c0, h0 = initial_state
        if sequence_length is None:
            steps = math_ops.cast(time_len, dtypes.int64)
        else:
            sequence_length = convert_to_tensor(sequence_length)
            steps = math_ops.cast(reduction_ops.reduce_max(sequence_length), dtypes.int64)
        wci, wcf, wco = self._peepholes(dtype)
        _, cs, _, _, _, _, h = rnn_block_ops.block_lstm(
            steps, inputs, c0, h0, self._kernel, wci, wcf, wco, self._bias,
            forget_bias=self._forget_bias, cell_clip=self._cell_clip,
            use_peephole=self._use_peephole)
        if sequence_length is None:
            return h, LSTMStateTuple(cs[-1], h[-1])
        mask = array_ops.transpose(gather_ops.sequence_mask(sequence_length, time_len,
                                                            dtype=dtype), [1, 0])
        h = h * array_ops.expand_dims(mask, -1)
        # index 0 is the initial state, t + 1 the state after step t
        rows = joining_ops.stack([math_ops.cast(sequence_length, dtypes.int32),
                                  sequence_ops.range(batch)], axis=1)

        def last(initial, seq):
            full = joining_ops.concat([array_ops.expand_dims(initial, 0), seq], 0)
            return gather_ops.gather_nd(full, rows)

        return h, LSTMStateTuple(last(c0, cs), last(h0, h))


class GRUBlockCell(LayerRNNCell):
    """GRUCell's math, each step one fused GRUBlockCell op; variables `w_ru`, `b_ru`
    (initialized to 1), `w_c`, `b_c` (0).

    Args:
      num_units: int, the number of units (`cell_size` is its deprecated name).
      reuse, name: as for the core cells (default scope name "gru_cell").
    """

    _names = {"w_ru": "w_ru", "b_ru": "b_ru", "w_c": "w_c", "b_c": "b_c"}

    def __init__(self, num_units=None, cell_size=None, reuse=None, name="gru_cell"):
        super().__init__(_reuse=reuse, name=name)
        if num_units is None:
            if cell_size is None:
                raise ValueError("num_units is required")
            num_units = cell_size
        self._cell_size = num_units

    state_size = property(lambda self: self._cell_size)
    output_size = property(lambda self: self._cell_size)

    def build(self, inputs_shape):
        depth = _known_dim(inputs_shape, 1, "input_size")
        n, names = self._cell_size, self._names
        self._gate_kernel = self.add_variable(names["w_ru"], [depth + n, 2 * n])
        self._gate_bias = self.add_variable(names["b_ru"], [2 * n],
                                            initializer=init_ops.constant_initializer(1.0))
        self._candidate_kernel = self.add_variable(names["w_c"], [depth + n, n])
        self._candidate_bias = self.add_variable(
            names["b_c"], [n], initializer=init_ops.constant_initializer(0.0))
        self.built = True

    def call(self, inputs, state):
        size = tensor_shape.dimension_value(state.shape[-1]) if state.shape.ndims else None
        if size is not None and size != self._cell_size:
            raise ValueError(f"Shape of h_prev[1] incorrect: cell_size {self._cell_size} "
                             f"vs {size}")
        _, _, _, h = rnn_block_ops.gru_block_cell(
            inputs, state, self._gate_kernel, self._candidate_kernel, self._gate_bias,
            self._candidate_bias)
        return h, h


class GRUBlockCellV2(GRUBlockCell):
    """GRUBlockCell with GRUCell's variable names (`gates/kernel`, `gates/bias`,
    `candidate/kernel`, `candidate/bias`), so the two share checkpoints."""

    _names = {"w_ru": "gates/kernel", "b_ru": "gates/bias", "w_c": "candidate/kernel",
              "b_c": "candidate/bias"}
