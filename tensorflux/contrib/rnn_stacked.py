"""contrib.rnn's stacked bidirectional RNNs: layer i runs a forward and a backward cell over
layer i-1's concatenated outputs, in variable scope `<scope>/cell_<i>` (scope defaults to
"stack_bidirectional_rnn"), as TF 1.x's contrib/rnn/python/ops/rnn.py does."""

from __future__ import annotations

from tensorflux.nn.rnn import bidirectional_dynamic_rnn, static_bidirectional_rnn
from tensorflux.ops.joining_ops import concat
from tensorflux.variables import variable_scope as vs

__all__ = ["stack_bidirectional_rnn", "stack_bidirectional_dynamic_rnn"]


def _check_cells(cells_fw, cells_bw, initial_states_fw, initial_states_bw) -> None:
    if not cells_fw:
        raise ValueError("Must specify at least one fw cell for BidirectionalRNN.")
    if not cells_bw:
        raise ValueError("Must specify at least one bw cell for BidirectionalRNN.")
    if not isinstance(cells_fw, list):
        raise ValueError("cells_fw must be a list of RNNCells (one per layer).")
    if not isinstance(cells_bw, list):
        raise ValueError("cells_bw must be a list of RNNCells (one per layer).")
    if len(cells_fw) != len(cells_bw):
        raise ValueError("Forward and Backward cells must have the same depth.")
    for name, states in (("fw", initial_states_fw), ("bw", initial_states_bw)):
        if states is not None and (not isinstance(states, list) or
                                   len(states) != len(cells_fw)):
            raise ValueError(f"initial_states_{name} must be a list of state tensors (one per "
                             "layer).")


def stack_bidirectional_rnn(cells_fw, cells_bw, inputs, initial_states_fw=None,
                            initial_states_bw=None, dtype=None, sequence_length=None,
                            scope=None):
    """Stacked `static_bidirectional_rnn`s over a list of per-step inputs.

    Args:
      cells_fw, cells_bw: lists of RNNCells, one per layer, of the same length.
      inputs: a list of [batch_size, input_size] tensors, one per step.
      initial_states_fw, initial_states_bw: optional lists of initial states, one per layer.
      dtype: the initial states' dtype when none are given.
      sequence_length: optional [batch_size] int vector.
      scope: the variable scope (default "stack_bidirectional_rnn").

    Returns:
      (outputs, output_states_fw, output_states_bw): the last layer's per-step outputs
      (forward and backward concatenated) and tuples of each layer's final states.

    Raises:
      ValueError: the cell lists or initial states do not match, or no inputs.
    """
    if not inputs:
        raise ValueError("inputs must not be empty")
    _check_cells(cells_fw, cells_bw, initial_states_fw, initial_states_bw)
    states_fw, states_bw = [], []
    prev_layer = inputs
    with vs.variable_scope(scope or "stack_bidirectional_rnn"):
        for i, (cell_fw, cell_bw) in enumerate(zip(cells_fw, cells_bw, strict=True)):
            with vs.variable_scope(f"cell_{i}") as cell_scope:
                prev_layer, state_fw, state_bw = static_bidirectional_rnn(
                    cell_fw, cell_bw, prev_layer,
                    initial_state_fw=initial_states_fw[i] if initial_states_fw else None,
                    initial_state_bw=initial_states_bw[i] if initial_states_bw else None,
                    sequence_length=sequence_length, dtype=dtype, scope=cell_scope)
            states_fw.append(state_fw)
            states_bw.append(state_bw)
    return prev_layer, tuple(states_fw), tuple(states_bw)


def stack_bidirectional_dynamic_rnn(cells_fw, cells_bw, inputs, initial_states_fw=None,
                                    initial_states_bw=None, dtype=None, sequence_length=None,
                                    parallel_iterations=None, time_major=False, scope=None,
                                    swap_memory=False):
    """Stacked `bidirectional_dynamic_rnn`s over a [batch, time, depth] tensor (time-major
    [time, batch, depth] with `time_major=True`).

    Args:
      cells_fw, cells_bw: lists of RNNCells, one per layer, of the same length.
      inputs: the input tensor.
      initial_states_fw, initial_states_bw: optional lists of initial states, one per layer.
      dtype: the initial states' dtype when none are given.
      sequence_length: optional [batch_size] int vector.
      parallel_iterations, swap_memory, time_major: as `tf.nn.dynamic_rnn`.
      scope: the variable scope (default "stack_bidirectional_rnn").

    Returns:
      (outputs, output_states_fw, output_states_bw): the last layer's outputs (forward and
      backward concatenated on the depth axis) and tuples of each layer's final states.

    Raises:
      ValueError: the cell lists or initial states do not match.
    """
    _check_cells(cells_fw, cells_bw, initial_states_fw, initial_states_bw)
    states_fw, states_bw = [], []
    prev_layer = inputs
    with vs.variable_scope(scope or "stack_bidirectional_rnn"):
        for i, (cell_fw, cell_bw) in enumerate(zip(cells_fw, cells_bw, strict=True)):
            with vs.variable_scope(f"cell_{i}"):
                outputs, (state_fw, state_bw) = bidirectional_dynamic_rnn(
                    cell_fw, cell_bw, prev_layer,
                    initial_state_fw=initial_states_fw[i] if initial_states_fw else None,
                    initial_state_bw=initial_states_bw[i] if initial_states_bw else None,
                    sequence_length=sequence_length, parallel_iterations=parallel_iterations,
                    dtype=dtype, swap_memory=swap_memory, time_major=time_major)
                prev_layer = concat(outputs, 2)
            states_fw.append(state_fw)
            states_bw.append(state_bw)
    return prev_layer, tuple(states_fw), tuple(states_bw)
