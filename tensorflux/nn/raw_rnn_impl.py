"""`tf.nn.raw_rnn` (an RNN whose every step's input, state and emitted output a user
`loop_fn` decides) and `tf.nn.static_state_saving_rnn` (static_rnn whose state comes from
and goes back to a state saver), built only from other ops (DESIGN §1).

raw_rnn's loop, as TF1's:

  finished, input, state, emit_structure, loop_state = loop_fn(0, None, None, None)
  while not all(finished):
      output, cell_state = cell(input, state)
      next_finished, input, next_state, emit, loop_state = loop_fn(t + 1, output,
                                                                   cell_state, loop_state)
      where finished[b]: emit[b] = 0, next_state[b] = state[b]   # copy-through
      emit_ta[t] = emit;  finished |= next_finished;  state = next_state
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
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.nn.rnn import static_rnn
from tensorflux.nn.rnn_cell_impl import _concat, assert_like_rnncell
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    constant_op,
    reduction_ops,
    tensor_array_ops,
)
from tensorflux.variables import variable_scope as vs

__all__ = ["raw_rnn", "static_state_saving_rnn"]


def _static_size(size):
    """A TensorShape for an emit size given as an int, TensorShape or shape Tensor."""
    if isinstance(size, int):
        return tensor_shape.TensorShape([size])
    if isinstance(size, tensor_shape.TensorShape):
        return size
    if hasattr(size, "op"):
        return common_shapes.constant_value_as_shape(size)
    return tensor_shape.TensorShape(size)


def _emit_specs(emit_structure, cell, state_dtype):
    """(structure, flat sizes, flat dtypes) of what each step emits."""
    if emit_structure is not None:
        flat = flatten(emit_structure)
        sizes = [e.shape if e.shape.is_fully_defined() else array_ops.shape(e) for e in flat]
        return emit_structure, sizes, [e.dtype for e in flat]
    sizes = flatten(cell.output_size)
    return cell.output_size, sizes, [state_dtype] * len(sizes)


def raw_rnn(cell, loop_fn, parallel_iterations=None, swap_memory=False, scope=None):
    """Runs `cell` in a while loop driven by `loop_fn` (`tf.nn.raw_rnn`).

    Args:
      cell: an RNNCell.
      loop_fn: fn(time, cell_output, cell_state, loop_state) -> (finished [batch] bool,
        next_input, next_cell_state, emit_output, next_loop_state). At time 0 it is called
        with None for the last three and returns the initial input and state, and as
        emit_output the structure of what each step emits (or None: the cell's output).
      parallel_iterations: iterations the loop may run at once (default 32).
      swap_memory: passed to the while loop.
      scope: variable scope (default "rnn").

    Returns:
      (emit_ta: TensorArrays, structured like the emit, of [batch] + emit shape per step,
       final_state, final_loop_state (None if loop_fn's first loop state was None)).

    Raises:
      TypeError: `cell` is not an RNNCell or `loop_fn` not callable.
    """
    assert_like_rnncell("cell", cell)
    if not callable(loop_fn):
        raise TypeError(f"Argument `loop_fn` must be a callable. Received: {loop_fn}.")
    parallel_iterations = parallel_iterations or 32
    with vs.variable_scope(scope or "rnn"):
        time = constant_op.constant(0, dtype=dtypes.int32)
        finished, next_input, initial_state, emit_structure, init_loop_state = loop_fn(
            time, None, None, None)
        flat_input = flatten(next_input)
        loop_state = (init_loop_state if init_loop_state is not None
                      else constant_op.constant(0, dtype=dtypes.int32))
        static_batch = tensor_shape.Dimension(None)
        for x in flat_input:
            dim = x.shape[0] if x.shape.ndims else None
            static_batch = static_batch.merge_with(dim)
        const_batch = static_batch.value
        batch_size = const_batch if const_batch is not None else \
            array_ops.shape(flat_input[0])[0]
        assert_same_structure(initial_state, cell.state_size)
        flat_state = [convert_to_tensor(s) for s in flatten(initial_state)]
        state = pack_sequence_as(initial_state, flat_state)
        emit_structure, sizes, emit_dtypes = _emit_specs(emit_structure, cell,
                                                         flat_state[0].dtype)
        flat_ta = [tensor_array_ops.TensorArray(
            dtype=dt, size=0, dynamic_size=True, name=f"rnn_output_{i}",
            element_shape=tensor_shape.TensorShape([const_batch]).concatenate(
                _static_size(size))) for i, (dt, size) in enumerate(zip(emit_dtypes, sizes,
                                                                       strict=True))]
        emit_ta = pack_sequence_as(emit_structure, flat_ta)
        zero_emit = pack_sequence_as(emit_structure, [
            array_ops.zeros(_concat(batch_size, size), dt)
            for size, dt in zip(sizes, emit_dtypes, strict=True)])

        def condition(unused_time, elements_finished, *_):
            return comparison_ops.logical_not(reduction_ops.reduce_all(elements_finished))

        def body(time, elements_finished, current_input, emit_ta, state, loop_state):
            output, cell_state = cell(current_input, state)
            assert_same_structure(state, cell_state)
            assert_same_structure(cell.output_size, output)
            next_time = time + 1
            next_finished, next_input, next_state, emit, next_loop_state = loop_fn(
                next_time, output, cell_state, loop_state)
            assert_same_structure(state, next_state)
            assert_same_structure(current_input, next_input)
            assert_same_structure(emit_ta, emit)
            loop_state = loop_state if next_loop_state is None else next_loop_state

            def copy_through(current, candidate):
                def one(cur, cand):
                    if isinstance(cur, tensor_array_ops.TensorArray) or cur.shape.ndims == 0:
                        return cand
                    return comparison_ops.where(elements_finished, cur, cand)

                return map_structure(one, current, candidate)

            emit = copy_through(zero_emit, emit)
            next_state = copy_through(state, next_state)
            emit_ta = map_structure(lambda ta, e: ta.write(time, e), emit_ta, emit)
            elements_finished = comparison_ops.logical_or(elements_finished, next_finished)
            return next_time, elements_finished, next_input, emit_ta, next_state, loop_state

        returned = builders.while_loop(
            condition, body, loop_vars=[time, finished, next_input, emit_ta, state, loop_state],
            parallel_iterations=parallel_iterations, swap_memory=swap_memory,
            return_same_structure=True)
        emit_ta, final_state, final_loop_state = returned[-3:]
        return emit_ta, final_state, (None if init_loop_state is None else final_loop_state)


def static_state_saving_rnn(cell, inputs, state_saver, state_name, sequence_length=None,
                            scope=None):
    """static_rnn whose initial state is `state_saver.state(name)` and whose final state is
    saved back with `state_saver.save_state(name, value)` before the last output and the
    final state are available (`tf.nn.static_state_saving_rnn`).

    Args:
      cell: an RNNCell.
      inputs: a list of [batch, ...] inputs, one per step.
      state_saver: an object with `state(name)` and `save_state(name, value)`.
      state_name: a name, or names structured like `cell.state_size`.
      sequence_length: optional [batch] lengths.
      scope: variable scope.

    Returns:
      (outputs: list, one per input; final state).

    Raises:
      ValueError: `state_name` is not structured like `cell.state_size`.
    """
    state_size = cell.state_size
    state_is_tuple = is_nested(state_size)
    if state_is_tuple != is_nested(state_name):
        raise ValueError("Argument `state_name` should be the same type as "
                         f"`cell.state_size`. Received: state_name={state_name!s}, "
                         f"cell.state_size={state_size!s}.")
    if state_is_tuple:
        names, sizes = flatten(state_name), flatten(state_size)
        if len(names) != len(sizes):
            raise ValueError("Number of elements in argument `state_name` and "
                             "`cell.state_size` are mismatched. Received "
                             f"state_name={state_name} with {len(names)} elements and "
                             f"cell.state_size={state_size} with {len(sizes)} elements.")
        initial_state = pack_sequence_as(state_size, [state_saver.state(n) for n in names])
    else:
        initial_state = state_saver.state(state_name)
    outputs, state = static_rnn(cell, inputs, initial_state=initial_state,
                                sequence_length=sequence_length, scope=scope)
    if state_is_tuple:
        saves = [state_saver.save_state(n, s)
                 for n, s in zip(flatten(state_name), flatten(state), strict=True)]
    else:
        saves = [state_saver.save_state(state_name, state)]
    with graph_lib.control_dependencies(saves):
        last = outputs[-1]
        outputs[-1] = pack_sequence_as(last, [array_ops.identity(o) for o in flatten(last)])
        state = pack_sequence_as(state, [array_ops.identity(s) for s in flatten(state)])
    return outputs, state
