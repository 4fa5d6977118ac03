"""`tf.contrib.seq2seq`'s decoding loop: Helpers (TrainingHelper, GreedyEmbeddingHelper)
that choose each step's next input, BasicDecoder (a cell, a helper, an optional output
layer) and `dynamic_decode`, which runs a decoder in a while loop until every sequence
has finished (or `maximum_iterations`), collecting the outputs in TensorArrays. The other
helpers are in seq2seq_helpers.py, attention in seq2seq_attention.py, beam search in
seq2seq_beam.py.
"""

from __future__ import annotations

import collections

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework.tensor_conversion import convert_to_tensor


def _nest():
    from tensorflux.control_flow import control_flow_util

    return control_flow_util


def _batch_time_swap(t):
    """[batch, time, ...] <-> [time, batch, ...]."""
    from tensorflux.ops import array_ops

    perm = [1, 0] + list(range(2, t.shape.ndims))
    return array_ops.transpose(t, perm)


class Helper:
    """Chooses a decoder's inputs: `initialize()` -> (finished, first inputs);
    `sample(time, outputs, state)` -> sample ids; `next_inputs(time, outputs, state,
    sample_ids)` -> (finished, next inputs, state)."""

    batch_size = None
    sample_ids_shape = tensor_shape.TensorShape([])
    sample_ids_dtype = dtypes.int32


def _argmax_ids(outputs):
    from tensorflux.ops import math_ops, reduction_ops

    return math_ops.cast(reduction_ops.argmax(outputs, axis=-1), dtypes.int32)


class TrainingHelper(Helper):
    """Feeds the given inputs (teacher forcing): step t reads inputs[:, t]; a sequence
    finishes at its `sequence_length`."""

    def __init__(self, inputs, sequence_length, time_major=False, name=None):
        from tensorflux.ops import array_ops, math_ops, tensor_array_ops

        inputs = convert_to_tensor(inputs, name="inputs")
        if not time_major:
            inputs = _batch_time_swap(inputs)
        self._inputs = inputs
        self._sequence_length = math_ops.cast(
            convert_to_tensor(sequence_length, name="sequence_length"), dtypes.int32)
        if self._sequence_length.shape.ndims != 1:
            raise ValueError(f"Expected sequence_length to be a vector, but received shape: "
                             f"{self._sequence_length.shape}")
        self._ta = tensor_array_ops.TensorArray(inputs.dtype, size=array_ops.shape(inputs)[0],
                                                element_shape=inputs.shape[1:])
        self._ta = self._ta.unstack(inputs)
        self._zero_inputs = array_ops.zeros_like(inputs[0])
        self.batch_size = array_ops.size(self._sequence_length)

    def initialize(self, name=None):
        from tensorflux.control_flow import builders
        from tensorflux.ops import comparison_ops, reduction_ops

        finished = comparison_ops.equal(0, self._sequence_length)
        inputs = builders.cond(reduction_ops.reduce_all(finished),
                               lambda: self._zero_inputs, lambda: self._ta.read(0))
        return finished, inputs

    def sample(self, time, outputs, state, name=None):
        return _argmax_ids(outputs)

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        from tensorflux.control_flow import builders
        from tensorflux.ops import comparison_ops, reduction_ops

        step = time + 1
        finished = comparison_ops.greater_equal(step, self._sequence_length)
        inputs = builders.cond(reduction_ops.reduce_all(finished),
                               lambda: self._zero_inputs, lambda: self._ta.read(step))
        return finished, inputs, state


class GreedyEmbeddingHelper(Helper):
    """Feeds back the embedding of the previous step's argmax; a sequence finishes when
    it emits `end_token`."""

    def __init__(self, embedding, start_tokens, end_token):
        from tensorflux.nn import embedding_ops
        from tensorflux.ops import array_ops

        self._embed = embedding if callable(embedding) else \
            (lambda ids: embedding_ops.embedding_lookup(embedding, ids))
        self._start_tokens = convert_to_tensor(start_tokens, dtype=dtypes.int32,
                                               name="start_tokens")
        self._end_token = convert_to_tensor(end_token, dtype=dtypes.int32, name="end_token")
        if self._start_tokens.shape.ndims != 1:
            raise ValueError("start_tokens must be a vector")
        if self._end_token.shape.ndims != 0:
            raise ValueError("end_token must be a scalar")
        self.batch_size = array_ops.size(self._start_tokens)
        self._start_inputs = self._embed(self._start_tokens)

    def initialize(self, name=None):
        from tensorflux.ops import array_ops

        return array_ops.zeros_like(self._start_tokens, dtype=dtypes.bool), \
            self._start_inputs

    def sample(self, time, outputs, state, name=None):
        return _argmax_ids(outputs)

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        from tensorflux.control_flow import builders
        from tensorflux.ops import comparison_ops, reduction_ops

        finished = comparison_ops.equal(sample_ids, self._end_token)
        inputs = builders.cond(reduction_ops.reduce_all(finished),
                               lambda: self._start_inputs, lambda: self._embed(sample_ids))
        return finished, inputs, state


BasicDecoderOutput = collections.namedtuple("BasicDecoderOutput", ["rnn_output", "sample_id"])


class Decoder:
    """What `dynamic_decode` runs (subclass it for a decoder of your own): `batch_size`,
    `output_size` and `output_dtype` (structures matching the step's outputs),
    `initialize()` -> (finished, inputs, state), `step(time, inputs, state)` ->
    (outputs, state, inputs, finished), and optionally `finalize(outputs, state, lengths)`.
    With `tracks_own_finished` the step's `finished` replaces the loop's own."""

    tracks_own_finished = False

    @property
    def batch_size(self):
        raise NotImplementedError

    @property
    def output_size(self):
        raise NotImplementedError

    @property
    def output_dtype(self):
        raise NotImplementedError

    def initialize(self, name=None):
        raise NotImplementedError

    def step(self, time, inputs, state, name=None):
        raise NotImplementedError


class BasicDecoder(Decoder):
    """One decoding step: the cell on the helper's inputs, the output layer, the helper's
    sample and next inputs."""

    def __init__(self, cell, helper, initial_state, output_layer=None):
        if not isinstance(helper, Helper):
            raise TypeError(f"helper must be a Helper, received: {type(helper)}")
        self._cell, self._helper = cell, helper
        self._initial_state, self._output_layer = initial_state, output_layer

    @property
    def batch_size(self):
        return self._helper.batch_size

    @property
    def output_size(self):
        size = self._cell.output_size
        if self._output_layer is not None:
            size = self._output_layer.units
        return BasicDecoderOutput(rnn_output=tensor_shape.TensorShape([size]),
                                  sample_id=self._helper.sample_ids_shape)

    @property
    def output_dtype(self):
        state = _nest().flatten(self._initial_state)[0]
        return BasicDecoderOutput(state.dtype.base_dtype, self._helper.sample_ids_dtype)

    def initialize(self, name=None):
        finished, inputs = self._helper.initialize()
        return finished, inputs, self._initial_state

    def step(self, time, inputs, state, name=None):
        outputs, state = self._cell(inputs, state)
        if self._output_layer is not None:
            outputs = self._output_layer(outputs)
        ids = self._helper.sample(time, outputs, state)
        finished, next_inputs, state = self._helper.next_inputs(time, outputs, state, ids)
        return BasicDecoderOutput(outputs, ids), state, next_inputs, finished


def dynamic_decode(decoder, output_time_major=False, impute_finished=False,
                   maximum_iterations=None, parallel_iterations=32, swap_memory=False,
                   scope=None):
    """Runs `decoder` until every sequence has finished (or `maximum_iterations` steps):
    (outputs [batch, time, ...] unless `output_time_major`, final state, lengths). With
    `impute_finished` a finished sequence's outputs are zeros and its state is frozen.
    """
    from tensorflux.control_flow import builders
    from tensorflux.ops import (
        array_ops,
        comparison_ops,
        joining_ops,
        reduction_ops,
        tensor_array_ops,
    )
    from tensorflux.variables import variable_scope

    nest = _nest()
    with variable_scope.variable_scope(scope, "decoder"):
        finished, inputs, state = decoder.initialize()
        batch = decoder.batch_size
        sizes, kinds = decoder.output_size, decoder.output_dtype
        zeros = nest.map_structure(
            lambda size, dtype: array_ops.zeros(joining_ops.concat(
                [array_ops.reshape(batch, [1]), convert_to_tensor(size.as_list(),
                                                                  dtype=dtypes.int32)], 0),
                dtype), sizes, kinds)
        if maximum_iterations is not None:
            maximum_iterations = convert_to_tensor(maximum_iterations, dtype=dtypes.int32,
                                                   name="maximum_iterations")
            finished = comparison_ops.logical_or(
                finished, comparison_ops.greater_equal(0, maximum_iterations))
        lengths = array_ops.zeros_like(finished, dtype=dtypes.int32)
        arrays = nest.map_structure(
            lambda dtype: tensor_array_ops.TensorArray(dtype, size=0, dynamic_size=True),
            kinds)

        def cond(time, arrays, state, inputs, finished, lengths):
            return comparison_ops.logical_not(reduction_ops.reduce_all(finished))

        def body(time, arrays, state, inputs, finished, lengths):
            outputs, new_state, next_inputs, step_finished = decoder.step(time, inputs,
                                                                         state)
            now_finished = step_finished if getattr(decoder, "tracks_own_finished", False) \
                else comparison_ops.logical_or(step_finished, finished)
            if maximum_iterations is not None:
                now_finished = comparison_ops.logical_or(
                    now_finished, comparison_ops.greater_equal(time + 1, maximum_iterations))
            lengths = comparison_ops.where(comparison_ops.logical_not(finished),
                                           array_ops.fill(array_ops.shape(lengths), time + 1),
                                           lengths)
            if impute_finished:
                outputs = nest.map_structure(
                    lambda out, zero: comparison_ops.where(finished, zero, out),
                    outputs, zeros)
                new_state = nest.map_structure(
                    lambda new, cur: _keep_finished(finished, new, cur), new_state, state)
            arrays = nest.map_structure(lambda ta, out: ta.write(time, out), arrays,
                                        outputs)
            return time + 1, arrays, new_state, next_inputs, now_finished, lengths

        loop = builders.while_loop(
            cond, body, (convert_to_tensor(0, dtypes.int32), arrays, state, inputs,
                         finished, lengths),
            parallel_iterations=parallel_iterations, swap_memory=swap_memory,
            maximum_iterations=maximum_iterations, return_same_structure=True)
        outputs = nest.map_structure(lambda ta: ta.stack(), loop[1])
        final_state = loop[2]
        if hasattr(decoder, "finalize"):
            outputs, final_state = decoder.finalize(outputs, final_state, loop[5])
        if not output_time_major:
            outputs = nest.map_structure(_batch_time_swap, outputs)
        return outputs, final_state, loop[5]


def _keep_finished(finished, new, current):
    """`current` for the finished rows of a state tensor, `new` for the others."""
    from tensorflux.ops import array_ops, comparison_ops

    if new.shape.ndims == 0:
        return new
    mask = finished
    for _ in range(new.shape.ndims - 1):
        mask = array_ops.expand_dims(mask, -1)
    return comparison_ops.where(mask & array_ops.ones_like(new, dtype=dtypes.bool),
                                current, new)
