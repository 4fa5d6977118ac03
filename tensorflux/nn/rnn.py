"""Recurrent networks over RNN cells: `tf.nn.dynamic_rnn`, `static_rnn`,
`bidirectional_dynamic_rnn`, `static_bidirectional_rnn` (TF1's `rnn.py`), built only from
other ops (DESIGN §1).

dynamic_rnn follows TF's `_dynamic_rnn_loop`:

  inputs (time-major) --unstack--> input TensorArrays
  while time < min(max_time, max(1, max(sequence_length))):
      input_t = input_ta.read(time)
      output, new_state = cell(input_t, state)       # variables made once, in the body
      where time >= sequence_length[b]:               # only with sequence_length
          output[b] = 0, new_state[b] = state[b]      # copy-through
      output_ta = output_ta.write(time, output)
  outputs = output_ta.stack()                         # steps never run read as zeros

static_rnn unrolls the cell over a Python list of inputs, reusing the cell's variables from
the second step on; with `sequence_length` each step masks the same way (TF wraps the step in
a `tf.cond` that skips the cell once every sequence has ended; here a Select does the
masking at every step, which gives the same values).
"""

from __future__ import annotations

from tensorflux.control_flow import builders
from tensorflux.control_flow.control_flow_util import (
    assert_same_structure,
    flatten,
    is_nested,
    map_structure,
    pack_sequence_as,
)
from tensorflux.framework import common_shapes, dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.nn.rnn_cell_impl import _concat, assert_like_rnncell
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    constant_op,
    gather_ops,
    joining_ops,
    logging_ops,
    math_ops,
    reduction_ops,
    sequence_ops,
    tensor_array_ops,
)
from tensorflux.variables import variable_scope as vs

# The TF1 public names of this module (tf.nn.*).
__all__ = ["dynamic_rnn", "static_rnn", "bidirectional_dynamic_rnn",
           "static_bidirectional_rnn"]


# ---- shapes and dtypes ----------------------------------------------------------------------

def _transpose_batch_time(x: Tensor) -> Tensor:
    """`x` with its first two dimensions swapped (unchanged if its rank is < 2)."""
    shape = x.shape
    if shape.ndims is not None and shape.ndims < 2:
        return x
    if shape.ndims is not None:
        perm = [1, 0] + list(range(2, shape.ndims))
    else:
        perm = joining_ops.concat(([1, 0], sequence_ops.range(2, array_ops.rank(x))), axis=0)
    x_t = array_ops.transpose(x, perm)
    if shape.ndims is not None:
        x_t.set_shape(tensor_shape.TensorShape([shape.dims[1], shape.dims[0]])
                      .concatenate(shape[2:]))
    return x_t


def _best_effort_input_batch_size(flat_input):
    """The static batch size (dimension 1 of time-major inputs), else a scalar Tensor."""
    for input_ in flat_input:
        shape = input_.shape
        if shape.ndims is None:
            continue
        if shape.ndims < 2:
            raise ValueError(f"Input tensor should have rank >= 2. Received input={input_} "
                             f"of rank {shape.ndims}")
        batch_size = tensor_shape.dimension_value(shape[1])
        if batch_size is not None:
            return batch_size
    return array_ops.shape(flat_input[0])[1]


def _infer_state_dtype(explicit_dtype, state):
    """`explicit_dtype`, else the one dtype of the (nested) `state`."""
    if explicit_dtype is not None:
        return explicit_dtype
    if is_nested(state):
        inferred = [element.dtype for element in flatten(state)]
        if not inferred:
            raise ValueError(f"Unable to infer dtype from argument state={state}.")
        if any(d != inferred[0] for d in inferred):
            raise ValueError(f"Argument state={state} has tensors of different inferred "
                             f"dtypes. Unable to infer a single representative dtype. Dtypes "
                             f"received: {inferred}")
        return inferred[0]
    return state.dtype


def _initial_state(cell, initial_state, batch_size, dtype):
    if initial_state is not None:
        return initial_state
    if not dtype:
        raise ValueError("If no initial_state is provided, argument `dtype` must be "
                         "specified")
    if getattr(cell, "get_initial_state", None) is not None:
        return cell.get_initial_state(inputs=None, batch_size=batch_size, dtype=dtype)
    return cell.zero_state(batch_size, dtype)


# ---- one masked step ------------------------------------------------------------------------

def _rnn_step(time, sequence_length, zero_output, state, call_cell):
    """One step with sequence-length masking: rows whose sequence has ended
    (`time >= sequence_length[b]`) get `zero_output` and keep their previous `state`.

    Returns:
      (output, new_state), nested like `zero_output` and `state`.

    Raises:
      ValueError or TypeError: the cell's output or state does not nest like
        `zero_output` or `state`.
    """
    new_output, new_state = call_cell()
    assert_same_structure(zero_output, new_output)
    assert_same_structure(state, new_state)
    copy_cond = time >= sequence_length

    def copy_one_through(old, new):
        if old.shape.ndims == 0:
            return new
        with graph_lib.colocate_with(new.op):
            out = comparison_ops.where(copy_cond, old, new)
        out.set_shape(old.shape)
        return out

    return (map_structure(copy_one_through, zero_output, new_output),
            map_structure(copy_one_through, state, new_state))


def _zero_output_like(cell, batch_size, dtype, fixed_batch_size=None):
    """Zeros of shape [batch_size] + s for each s in `cell.output_size`."""

    def zeros_for(size):
        z = array_ops.zeros(_concat(batch_size, size), dtype)
        static = _concat(fixed_batch_size, size, static=True)
        if static is not None:
            z.set_shape(static)
        return z

    return map_structure(zeros_for, cell.output_size)


def _prepare_sequence_length(sequence_length, name: str = "sequence_length"):
    sequence_length = math_ops.cast(convert_to_tensor(sequence_length), dtypes.int32)
    if sequence_length.shape.ndims not in (None, 1):
        raise ValueError(f"Argument sequence_length must be a vector of length batch_size. "
                         f"Received sequence_length={sequence_length} of shape: "
                         f"{sequence_length.shape}")
    return array_ops.identity(sequence_length, name=name)


# ---- static_rnn -----------------------------------------------------------------------------

def _static_batch_size(inputs):
    """(static batch dimension, batch size as int or Tensor) of a list of inputs."""
    first_input = inputs
    while is_nested(first_input):
        first_input = first_input[0]
    if first_input.shape.ndims != 1:
        fixed_batch_size = first_input.shape.with_rank_at_least(2)[0]
        for flat_input in flatten(inputs):
            input_shape = flat_input.shape.with_rank_at_least(2)
            fixed_batch_size.assert_is_compatible_with(input_shape[0])
            for i, size in enumerate(input_shape[1:].dims):
                if tensor_shape.dimension_value(size) is None:
                    raise ValueError(f"Input size (dimension {i} of input {flat_input}) must "
                                     f"be accessible via shape inference, but saw value None.")
    else:
        fixed_batch_size = first_input.shape.with_rank_at_least(1)[0]
    static = tensor_shape.dimension_value(fixed_batch_size)
    return static, (static if static else array_ops.shape(first_input)[0])


def static_rnn(cell, inputs, initial_state=None, dtype=None, sequence_length=None,
               scope=None):
    """Creates a recurrent network by unrolling `cell` over the list `inputs`.

    Args:
      cell: an RNNCell.
      inputs: a length-T list of `[batch_size, input_size]` tensors (or nests of them).
      initial_state: the initial state (default: the cell's zero state).
      dtype: the state and output dtype; required without `initial_state`.
      sequence_length: optional int32/int64 vector `[batch_size]`: past a row's length,
        its outputs are zero and its state is copied through.
      scope: the variable scope (default "rnn").

    Returns:
      (outputs, state): a length-T list of outputs and the final state.

    Raises:
      TypeError: `cell` is not an RNNCell or `inputs` is not a sequence.
      ValueError: `inputs` is empty, an input depth is unknown, or neither `dtype` nor
        `initial_state` is given.
    """
    assert_like_rnncell("cell", cell)
    if not is_nested(inputs):
        raise TypeError(f"Argument `inputs` must be a sequence. Received: {inputs}")
    if not inputs:
        raise ValueError("Argument `inputs` must not be empty.")
    outputs = []
    with vs.variable_scope(scope or "rnn") as varscope:
        fixed_batch_size, batch_size = _static_batch_size(inputs)
        state = _initial_state(cell, initial_state, batch_size, dtype)
        if sequence_length is not None:
            sequence_length = _prepare_sequence_length(sequence_length)
            zero_output = _zero_output_like(cell, batch_size,
                                            _infer_state_dtype(dtype, state),
                                            fixed_batch_size)
        for time, input_ in enumerate(inputs):
            if time > 0:
                varscope.reuse_variables()

            def call_cell(input_=input_, state=state):
                return cell(input_, state)

            if sequence_length is not None:
                output, state = _rnn_step(time, sequence_length, zero_output, state,
                                          call_cell)
            else:
                output, state = call_cell()
            outputs.append(output)
        return outputs, state


def _reverse_seq(input_seq, lengths):
    """Reverses a list of (nests of) tensors, each row up to its length in `lengths`."""
    if lengths is None:
        return list(reversed(input_seq))
    flat_input_seq = tuple(flatten(input_) for input_ in input_seq)
    flat_results = [[] for _ in input_seq]
    for sequence in zip(*flat_input_seq, strict=True):
        input_shape = tensor_shape.unknown_shape(rank=sequence[0].shape.ndims)
        for input_ in sequence:
            input_shape.assert_is_compatible_with(input_.shape)
            input_.set_shape(input_shape)
        s_joined = joining_ops.stack(sequence)
        s_reversed = reverse_sequence(s_joined, lengths, 0, 1)
        for r, flat_result in zip(joining_ops.unstack(s_reversed), flat_results, strict=True):
            r.set_shape(input_shape)
            flat_result.append(r)
    return [pack_sequence_as(input_, flat_result)
            for input_, flat_result in zip(input_seq, flat_results, strict=True)]


def static_bidirectional_rnn(cell_fw, cell_bw, inputs, initial_state_fw=None,
                             initial_state_bw=None, dtype=None, sequence_length=None,
                             scope=None):
    """A forward and a backward `static_rnn` over `inputs`; outputs concatenated.

    Returns:
      (outputs, output_state_fw, output_state_bw): outputs a length-T list of
      `[batch_size, fw_size + bw_size]` tensors.

    Raises:
      TypeError: a cell is not an RNNCell or `inputs` is not a list.
      ValueError: `inputs` is empty.
    """
    assert_like_rnncell("cell_fw", cell_fw)
    assert_like_rnncell("cell_bw", cell_bw)
    if not is_nested(inputs):
        raise TypeError(f"inputs must be a sequence. Received: {inputs}")
    if not inputs:
        raise ValueError("inputs must not be empty")
    with vs.variable_scope(scope or "bidirectional_rnn"):
        with vs.variable_scope("fw") as fw_scope:
            output_fw, output_state_fw = static_rnn(
                cell_fw, inputs, initial_state_fw, dtype, sequence_length, scope=fw_scope)
        with vs.variable_scope("bw") as bw_scope:
            reversed_inputs = _reverse_seq(inputs, sequence_length)
            tmp, output_state_bw = static_rnn(
                cell_bw, reversed_inputs, initial_state_bw, dtype, sequence_length,
                scope=bw_scope)
    output_bw = _reverse_seq(tmp, sequence_length)
    flat_output_fw = flatten(output_fw)
    flat_output_bw = flatten(output_bw)
    flat_outputs = tuple(joining_ops.concat([fw, bw], 1)
                         for fw, bw in zip(flat_output_fw, flat_output_bw, strict=True))
    outputs = pack_sequence_as(output_fw, flat_outputs)
    return outputs, output_state_fw, output_state_bw


# ---- reverse_sequence ------------------------------------------------------------------------

def reverse_sequence(input, seq_lengths, seq_axis, batch_axis, name=None):  # noqa: A002
    """`tf.reverse_sequence`: the first `seq_lengths[b]` slices along `seq_axis` of each
    batch row `b` reversed. Uses the ReverseSequence op when one is registered, else a
    gather_nd composition."""
    if hasattr(array_ops, "reverse_sequence"):
        return array_ops.reverse_sequence(input, seq_lengths, seq_axis=seq_axis,
                                          batch_axis=batch_axis, name=name)
    with graph_lib.name_scope(name, "ReverseSequence", [input, seq_lengths]):
        x = convert_to_tensor(input)
        rank = x.shape.ndims
        if rank is None:
            raise ValueError("reverse_sequence needs inputs of known rank")
        seq_axis, batch_axis = seq_axis % rank, batch_axis % rank
        perm = [seq_axis, batch_axis] + [a for a in range(rank)
                                         if a not in (seq_axis, batch_axis)]
        inverse = [perm.index(a) for a in range(rank)]
        xt = array_ops.transpose(x, perm)                       # [T, B, ...]
        shape = array_ops.shape(xt)
        t = array_ops.expand_dims(sequence_ops.range(shape[0]), 1)  # [T, 1]
        lengths = array_ops.expand_dims(math_ops.cast(seq_lengths, dtypes.int32), 0)
        inside = math_ops.cast(t < lengths, dtypes.int32)       # [T, B]
        src = t + inside * (lengths - 1 - 2 * t)
        b = array_ops.zeros_like(src) + sequence_ops.range(shape[1])
        out = gather_ops.gather_nd(xt, joining_ops.stack([src, b], axis=-1))
        out = array_ops.transpose(out, inverse)
        out.set_shape(x.shape)
        return out


# ---- dynamic_rnn ---------------------------------------------------------------------------

def dynamic_rnn(cell, inputs, sequence_length=None, initial_state=None, dtype=None,
                parallel_iterations=None, swap_memory=False, time_major=False, scope=None):
    """Creates a recurrent network from `cell`, unrolled dynamically by a while loop.

    Args:
      cell: an RNNCell.
      inputs: `[batch_size, max_time, ...]` (time_major=False) or `[max_time,
        batch_size, ...]` (time_major=True), or a nest of such tensors.
      sequence_length: optional int32/int64 vector `[batch_size]`: past a row's length,
        its outputs are zero and its state is copied through; the loop stops after the
        longest sequence.
      initial_state: the initial state (default: the cell's zero state).
      dtype: the state and output dtype; required without `initial_state`.
      parallel_iterations: iterations that may run at once (default 32).
      swap_memory: accepted (no device memory to swap from).
      time_major: the layout of `inputs` and `outputs` (see above).
      scope: the variable scope (default "rnn").

    Returns:
      (outputs, state): outputs `[batch_size, max_time, output_size]` (or time-major),
      nested like `cell.output_size`; the final state, nested like `cell.state_size`.

    Raises:
      TypeError: `cell` is not an RNNCell.
      ValueError: an input depth is unknown, inputs disagree on time or batch size,
        `sequence_length` is not a vector, or neither `dtype` nor `initial_state` is given.
    """
    assert_like_rnncell("cell", cell)
    with vs.variable_scope(scope or "rnn"):
        flat_input = [convert_to_tensor(input_) for input_ in flatten(inputs)]
        if not time_major:
            flat_input = [_transpose_batch_time(input_) for input_ in flat_input]
        parallel_iterations = parallel_iterations or 32
        if sequence_length is not None:
            sequence_length = _prepare_sequence_length(sequence_length)
        batch_size = _best_effort_input_batch_size(flat_input)
        state = _initial_state(cell, initial_state, batch_size, dtype)
        if sequence_length is not None:
            sequence_length = _check_sequence_length(sequence_length, batch_size)
        inputs = pack_sequence_as(inputs, flat_input)
        outputs, final_state = _dynamic_rnn_loop(
            cell, inputs, state, parallel_iterations=parallel_iterations,
            swap_memory=swap_memory, sequence_length=sequence_length, dtype=dtype)
        if not time_major:
            outputs = map_structure(_transpose_batch_time, outputs)
        return outputs, final_state


def _check_sequence_length(sequence_length, batch_size):
    """`sequence_length` after a run-time check that it has `batch_size` entries."""
    with graph_lib.control_dependencies([_assert_shape_op(sequence_length, batch_size)]):
        return array_ops.identity(sequence_length, name="CheckSeqLen")


def _assert_shape_op(x, batch_size):
    """An Assert op failing the step unless `x` has shape `[batch_size]`."""
    x_shape = array_ops.shape(x)
    packed_shape = joining_ops.stack([batch_size])
    return logging_ops.Assert(reduction_ops.reduce_all(comparison_ops.equal(x_shape, packed_shape)),
                              [f"Expected shape for Tensor {x.name} is ", packed_shape,
                               " but saw shape: ", x_shape])


def _check_loop_inputs(flat_input):
    """The static shapes of the time-major inputs, after checking they agree."""
    shapes = tuple(input_.shape.with_rank_at_least(3) for input_ in flat_input)
    const_time_steps, const_batch_size = shapes[0].as_list()[:2]
    for input_, shape in zip(flat_input, shapes, strict=True):
        if not shape[2:].is_fully_defined():
            raise ValueError(f"Input size (depth of inputs) must be accessible via shape "
                             f"inference, but saw value None for input={input_}.")
        if const_time_steps != tensor_shape.dimension_value(shape[0]):
            raise ValueError(f"Time steps is not the same for all the elements in the input "
                             f"in a batch. Received time steps="
                             f"{tensor_shape.dimension_value(shape[0])} for input={input_}.")
        if const_batch_size != tensor_shape.dimension_value(shape[1]):
            raise ValueError(f"Batch_size is not the same for all the elements in the input. "
                             f"Received batch size={tensor_shape.dimension_value(shape[1])} "
                             f"for input={input_}.")
    return shapes, const_time_steps, const_batch_size


def _dynamic_rnn_loop(cell, inputs, initial_state, parallel_iterations, swap_memory,
                      sequence_length=None, dtype=None):
    """The time loop of dynamic_rnn (see the module docstring); inputs are time-major.

    Returns:
      (final_outputs, final_state): outputs `[time, batch, ...]` nested like
      `cell.output_size`; the state nested like `initial_state`.
    """
    state = initial_state
    flat_input = flatten(inputs)
    flat_output_size = flatten(cell.output_size)
    shapes, const_time_steps, const_batch_size = _check_loop_inputs(flat_input)
    time_steps = array_ops.shape(flat_input[0])[0]
    batch_size = _best_effort_input_batch_size(flat_input)
    out_dtype = _infer_state_dtype(dtype, state)
    zero_output = None
    if sequence_length is not None:
        zero_output = _zero_output_like(cell, batch_size, out_dtype)
        max_sequence_length = reduction_ops.reduce_max(sequence_length)
    else:
        max_sequence_length = time_steps
    time = constant_op.constant(0, dtype=dtypes.int32, name="time")
    with graph_lib.name_scope("dynamic_rnn") as base_name:
        pass

    def create_ta(name, element_shape, ta_dtype):
        return tensor_array_ops.TensorArray(dtype=ta_dtype, size=time_steps,
                                            element_shape=element_shape,
                                            tensor_array_name=base_name + name)

    output_ta = tuple(
        create_ta(f"output_{i}", tensor_shape.TensorShape([const_batch_size]).concatenate(
            _static_shape_of_size(size)), out_dtype)
        for i, size in enumerate(flat_output_size))
    input_ta = tuple(create_ta(f"input_{i}", x.shape[1:], x.dtype)
                     for i, x in enumerate(flat_input))
    input_ta = tuple(ta.unstack(x) for ta, x in zip(input_ta, flat_input, strict=True))

    def time_step(time, output_ta_t, state):
        input_t = tuple(ta.read(time) for ta in input_ta)
        for input_, shape in zip(input_t, shapes, strict=True):
            input_.set_shape(shape[1:])
        input_t = pack_sequence_as(inputs, input_t)

        def call_cell():
            return cell(input_t, state)

        if sequence_length is not None:
            output, new_state = _rnn_step(time, sequence_length, zero_output, state,
                                          call_cell)
        else:
            output, new_state = call_cell()
        output_ta_t = tuple(ta.write(time, out)
                            for ta, out in zip(output_ta_t, flatten(output), strict=True))
        return time + 1, output_ta_t, new_state

    loop_bound = math_ops.minimum(time_steps, math_ops.maximum(1, max_sequence_length))
    _, output_final_ta, final_state = builders.while_loop(
        cond=lambda time, *_: time < loop_bound, body=time_step,
        loop_vars=(time, output_ta, state), parallel_iterations=parallel_iterations,
        maximum_iterations=time_steps, swap_memory=swap_memory)
    final_outputs = tuple(ta.stack() for ta in output_final_ta)
    for output, output_size in zip(final_outputs, flat_output_size, strict=True):
        output.set_shape(_concat([const_time_steps, const_batch_size], output_size,
                                 static=True))
    return pack_sequence_as(cell.output_size, final_outputs), final_state


def _static_shape_of_size(size) -> tensor_shape.TensorShape:
    if isinstance(size, Tensor):
        value = common_shapes.constant_value(size)
        return tensor_shape.TensorShape(None if value is None else [int(v) for v in value])
    return tensor_shape.TensorShape(size)


def bidirectional_dynamic_rnn(cell_fw, cell_bw, inputs, sequence_length=None,
                              initial_state_fw=None, initial_state_bw=None, dtype=None,
                              parallel_iterations=None, swap_memory=False, time_major=False,
                              scope=None):
    """A forward and a backward `dynamic_rnn` over `inputs` (the backward one on inputs
    reversed up to each row's length).

    Returns:
      ((output_fw, output_bw), (output_state_fw, output_state_bw)).

    Raises:
      TypeError: a cell is not an RNNCell.
    """
    assert_like_rnncell("cell_fw", cell_fw)
    assert_like_rnncell("cell_bw", cell_bw)
    time_axis, batch_axis = (0, 1) if time_major else (1, 0)

    def reverse(input_):
        if sequence_length is not None:
            return reverse_sequence(input_, sequence_length, seq_axis=time_axis,
                                    batch_axis=batch_axis)
        return joining_ops.reverse(input_, axis=[time_axis])

    with vs.variable_scope(scope or "bidirectional_rnn"):
        with vs.variable_scope("fw") as fw_scope:
            output_fw, output_state_fw = dynamic_rnn(
                cell_fw, inputs, sequence_length=sequence_length,
                initial_state=initial_state_fw, dtype=dtype,
                parallel_iterations=parallel_iterations, swap_memory=swap_memory,
                time_major=time_major, scope=fw_scope)
        with vs.variable_scope("bw") as bw_scope:
            inputs_reverse = map_structure(reverse, inputs)
            tmp, output_state_bw = dynamic_rnn(
                cell_bw, inputs_reverse, sequence_length=sequence_length,
                initial_state=initial_state_bw, dtype=dtype,
                parallel_iterations=parallel_iterations, swap_memory=swap_memory,
                time_major=time_major, scope=bw_scope)
    output_bw = reverse(tmp)
    return (output_fw, output_bw), (output_state_fw, output_state_bw)
