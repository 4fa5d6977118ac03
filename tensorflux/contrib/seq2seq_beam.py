"""`tf.contrib.seq2seq.BeamSearchDecoder` and `tile_batch`.

Each step runs the cell on batch x beam rows, adds the step's log-probabilities to each
beam's, and keeps the `beam_width` best (beam, word) pairs per batch entry by score (the
log-probability divided by TF's length penalty ((5 + length) / 6) ** weight, plus, with
`coverage_penalty_weight`, the weighted coverage penalty of the beams already finished:
the sum of log(min(accumulated attention, 1)) over source steps). A finished beam can only
extend with the end token at no cost. `finalize` backtracks the kept beams
through their parents (the GatherTree op).
"""

from __future__ import annotations

import collections

from tensorflux.contrib.seq2seq_decoder import Decoder
from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework.tensor_conversion import convert_to_tensor

BeamSearchDecoderState = collections.namedtuple(
    "BeamSearchDecoderState", ["cell_state", "log_probs", "finished", "lengths",
                               "accumulated_attention_probs"])
BeamSearchDecoderOutput = collections.namedtuple(
    "BeamSearchDecoderOutput", ["scores", "predicted_ids", "parent_ids"])
FinalBeamSearchDecoderOutput = collections.namedtuple(
    "FinalBeamSearchDecoderOutput", ["predicted_ids", "beam_search_decoder_output"])


def _nest():
    from tensorflux.control_flow import control_flow_util

    return control_flow_util


def tile_batch(t, multiplier, name=None):
    """Each batch entry of `t` (a tensor or a nest of them) repeated `multiplier` times in
    a row: [batch, ...] -> [batch * multiplier, ...]."""
    from tensorflux.framework import graph as graph_lib
    from tensorflux.ops import array_ops, joining_ops

    def one(x):
        x = convert_to_tensor(x)
        if x.shape.ndims == 0:
            raise ValueError("t must have statically known rank")
        shape = array_ops.shape(x)
        tiled = joining_ops.tile(array_ops.expand_dims(x, 1),
                                 [1, multiplier] + [1] * (x.shape.ndims - 1))
        out = array_ops.reshape(tiled, joining_ops.concat(
            [array_ops.reshape(shape[0] * multiplier, [1]), shape[1:]], 0))
        dims = x.shape.as_list()
        out.set_shape([None if dims[0] is None else dims[0] * multiplier] + dims[1:])
        return out

    with graph_lib.name_scope(name, "tile_batch"):
        return _nest().map_structure(one, t)


def _split(x, batch, beam):
    """[batch * beam, ...] -> [batch, beam, ...]; scalars (an AttentionWrapperState's
    `time`) and TensorArrays (its alignment history) pass unchanged, as TensorFlow's
    decoder leaves them."""
    from tensorflux.ops import array_ops, joining_ops

    if not hasattr(x, "shape") or x.shape.ndims == 0:
        return x
    return array_ops.reshape(x, joining_ops.concat(
        [joining_ops.stack([batch, beam]), array_ops.shape(x)[1:]], 0))


def _merge(x):
    """[batch, beam, ...] -> [batch * beam, ...]; what has no beam axis (scalars,
    TensorArrays) passes unchanged."""
    from tensorflux.ops import array_ops, joining_ops

    if not hasattr(x, "shape") or (x.shape.ndims is not None and x.shape.ndims < 2):
        return x
    shape = array_ops.shape(x)
    return array_ops.reshape(x, joining_ops.concat(
        [array_ops.reshape(shape[0] * shape[1], [1]), shape[2:]], 0))


def _gather_beams(x, beam_ids, batch, beam):
    """x [batch, beam, ...] reordered along beams by beam_ids [batch, beam]."""
    from tensorflux.ops import array_ops, gather_ops, joining_ops, sequence_ops

    if not hasattr(x, "shape") or (x.shape.ndims is not None and x.shape.ndims < 2):
        return x  # no beam axis: a scalar (an attention state's time), a TensorArray
    rows = array_ops.reshape(sequence_ops.range(batch) * beam, [-1, 1])
    flat = array_ops.reshape(rows + beam_ids, [-1])
    out = gather_ops.gather(_merge(x), flat)
    out = array_ops.reshape(out, joining_ops.concat(
        [joining_ops.stack([batch, beam]), array_ops.shape(x)[2:]], 0))
    out.set_shape(x.shape)  # the loop's shapes stay what they were
    return out


class BeamSearchDecoder(Decoder):
    """Beam search over `cell` (its `initial_state` already tiled by `tile_batch`), the
    words embedded by `embedding` (a matrix or a function of ids)."""

    tracks_own_finished = True

    def __init__(self, cell, embedding, start_tokens, end_token, initial_state, beam_width,
                 output_layer=None, length_penalty_weight=0.0, coverage_penalty_weight=0.0,
                 reorder_tensor_arrays=True):
        from tensorflux.nn import embedding_ops
        from tensorflux.ops import array_ops, gather_ops, joining_ops

        self._coverage = float(coverage_penalty_weight)
        self._cell, self._output_layer = cell, output_layer
        self._embed = embedding if callable(embedding) else \
            (lambda ids: embedding_ops.embedding_lookup(embedding, ids))
        self._start_tokens = convert_to_tensor(start_tokens, dtype=dtypes.int32,
                                               name="start_tokens")
        if self._start_tokens.shape.ndims != 1:
            raise ValueError("start_tokens must be a vector")
        self._end_token = convert_to_tensor(end_token, dtype=dtypes.int32,
                                            name="end_token")
        if self._end_token.shape.ndims != 0:
            raise ValueError("end_token must be a scalar")
        self._beam = int(beam_width)
        self._penalty = float(length_penalty_weight)
        self._batch = array_ops.size(self._start_tokens)
        self._initial_cell_state = _nest().map_structure(
            lambda s: _split(s, self._batch, self._beam), initial_state)
        if self._coverage:
            _attention_probs(self._initial_cell_state)  # raises without an attentional cell
        tokens = joining_ops.tile(array_ops.expand_dims(self._start_tokens, 1),
                                  [1, self._beam])
        self._start_inputs = self._embed(tokens)
        zeros = array_ops.zeros(array_ops.reshape(self._batch, [1]), dtypes.int32)
        self._finished = gather_ops.one_hot(zeros, depth=self._beam, on_value=False,
                                            off_value=True, dtype=dtypes.bool)

    @property
    def batch_size(self):
        return self._batch

    @property
    def output_size(self):
        shape = tensor_shape.TensorShape([self._beam])
        return BeamSearchDecoderOutput(shape, shape, shape)

    @property
    def output_dtype(self):
        state = _nest().flatten(self._initial_cell_state)[0]
        return BeamSearchDecoderOutput(state.dtype.base_dtype, dtypes.int32, dtypes.int32)

    def initialize(self, name=None):
        from tensorflux.ops import array_ops, gather_ops

        dtype = _nest().flatten(self._initial_cell_state)[0].dtype.base_dtype
        zeros = array_ops.zeros(array_ops.reshape(self._batch, [1]), dtypes.int32)
        log_probs = gather_ops.one_hot(zeros, depth=self._beam, on_value=0.0,
                                       off_value=float("-inf"), dtype=dtype)
        state = BeamSearchDecoderState(
            cell_state=self._initial_cell_state, log_probs=log_probs,
            finished=self._finished,
            lengths=array_ops.zeros_like(self._finished, dtype=dtypes.int64),
            accumulated_attention_probs=(_attention_probs(self._initial_cell_state)
                                         if self._coverage else ()))
        return self._finished, self._start_inputs, state

    def step(self, time, inputs, state, name=None):
        from tensorflux.control_flow import builders
        from tensorflux.ops import (
            array_ops,
            comparison_ops,
            gather_ops,
            math_ops,
            nn_ops,
            reduction_ops,
        )

        nest = _nest()
        batch, beam = self._batch, self._beam
        cell_inputs = nest.map_structure(_merge, inputs)
        cell_state = nest.map_structure(_merge, state.cell_state)
        outputs, next_cell_state = self._cell(cell_inputs, cell_state)
        outputs = _split(outputs, batch, beam)
        next_cell_state = nest.map_structure(lambda s: _split(s, batch, beam),
                                             next_cell_state)
        if self._output_layer is not None:
            outputs = self._output_layer(outputs)
        vocab = array_ops.shape(outputs)[-1]
        step_log_probs = nn_ops.log_softmax(outputs)
        # A finished beam extends only with the end token, at no cost.
        end_only = gather_ops.one_hot(array_ops.fill(array_ops.shape(state.finished),
                                                     self._end_token),
                                      depth=vocab, on_value=0.0, off_value=float("-inf"),
                                      dtype=step_log_probs.dtype)
        finished = array_ops.expand_dims(state.finished, 2)
        step_log_probs = comparison_ops.where(
            finished & array_ops.ones_like(step_log_probs, dtype=dtypes.bool),
            end_only, step_log_probs)
        total = array_ops.expand_dims(state.log_probs, 2) + step_log_probs
        not_end = gather_ops.one_hot(array_ops.fill(array_ops.shape(state.finished),
                                                    self._end_token),
                                     depth=vocab, on_value=0, off_value=1,
                                     dtype=dtypes.int64)
        active = math_ops.cast(comparison_ops.logical_not(state.finished), dtypes.int64)
        lengths = array_ops.expand_dims(state.lengths, 2) + \
            not_end * array_ops.expand_dims(active, 2)
        accumulated = ()
        if self._coverage:  # attention so far, of the beams still running
            running = math_ops.cast(comparison_ops.logical_not(state.finished), total.dtype)
            accumulated = state.accumulated_attention_probs + \
                _attention_probs(next_cell_state) * array_ops.expand_dims(running, 2)
        scores = total
        if self._penalty:
            penalty = math_ops.pow((5.0 + math_ops.cast(lengths, total.dtype)) / 6.0,
                                   self._penalty)
            scores = total / penalty
        if self._coverage:
            scores = scores + array_ops.expand_dims(
                _coverage_penalty(accumulated, state.finished) * self._coverage, 2)
        flat_scores = _rows(scores, batch)
        best, indices = gather_ops.top_k(flat_scores, k=beam)
        indices = math_ops.cast(indices, dtypes.int32)
        word_ids = math_ops.floormod(indices, vocab)
        beam_ids = math_ops.floordiv(indices, vocab)
        chosen_total = _take(_rows(total, batch), indices)
        chosen_lengths = _take(_rows(lengths, batch), indices)
        for t in (best, word_ids, beam_ids, chosen_total, chosen_lengths):
            t.set_shape(state.log_probs.shape)
        was_finished = _gather_beams(state.finished, beam_ids, batch, beam)
        now_finished = comparison_ops.logical_or(
            was_finished, comparison_ops.equal(word_ids, self._end_token))
        next_cell_state = nest.map_structure(
            lambda s: _gather_beams(s, beam_ids, batch, beam), next_cell_state)
        if self._coverage:
            accumulated = _gather_beams(accumulated, beam_ids, batch, beam)
        next_state = BeamSearchDecoderState(
            cell_state=next_cell_state, log_probs=chosen_total, finished=now_finished,
            lengths=chosen_lengths, accumulated_attention_probs=accumulated)
        output = BeamSearchDecoderOutput(scores=best, predicted_ids=word_ids,
                                         parent_ids=beam_ids)
        next_inputs = builders.cond(reduction_ops.reduce_all(now_finished),
                                    lambda: self._start_inputs,
                                    lambda: self._embed(word_ids))
        return output, next_state, next_inputs, now_finished

    def finalize(self, outputs, final_state, sequence_lengths):
        """The kept beams' whole paths (time-major outputs, as dynamic_decode gives
        them)."""
        from tensorflux.ops import beam_search_ops, math_ops, reduction_ops

        longest = math_ops.cast(reduction_ops.reduce_max(final_state.lengths, axis=1),
                                dtypes.int32)
        ids = beam_search_ops.gather_tree(outputs.predicted_ids, outputs.parent_ids,
                                          longest, self._end_token)
        return FinalBeamSearchDecoderOutput(predicted_ids=ids,
                                            beam_search_decoder_output=outputs), final_state


def _attention_probs(cell_state):
    """The attention probabilities [batch, beam, max_time] of an attentional cell's state
    (an AttentionWrapperState, or a tuple holding some): the mean over its attention
    mechanisms, and over the wrappers' means when there are several (TF's rule)."""
    from tensorflux.contrib.seq2seq_attention import AttentionWrapperState
    from tensorflux.ops import array_ops, joining_ops, reduction_ops

    def mean_of(probs):
        if isinstance(probs, (list, tuple)):
            probs = reduction_ops.reduce_mean(joining_ops.concat(
                [array_ops.expand_dims(p, -1) for p in probs], -1), -1)
        return probs

    if isinstance(cell_state, AttentionWrapperState):
        layers = [mean_of(cell_state.alignments)]
    elif isinstance(cell_state, tuple):
        layers = [mean_of(s.alignments) for s in cell_state
                  if isinstance(s, AttentionWrapperState)]
    else:
        layers = []
    if not layers:
        raise ValueError("coverage_penalty_weight must be 0.0 if no cell is attentional.")
    return mean_of(layers) if len(layers) > 1 else layers[0]


def _coverage_penalty(accumulated, finished):
    """sum over source steps of log(min(attention so far, 1)), steps never attended (0)
    left out, for the beams already finished (GNMT's coverage penalty, TF's form)."""
    from tensorflux.ops import array_ops, comparison_ops, math_ops, reduction_ops, unary_ops

    attended = comparison_ops.where(comparison_ops.equal(accumulated, 0.0),
                                    array_ops.ones_like(accumulated), accumulated)
    penalty = reduction_ops.reduce_sum(
        unary_ops.log(math_ops.minimum(attended, 1.0)), 2)
    return penalty * math_ops.cast(finished, penalty.dtype)


def _rows(x, batch):
    """[batch, beam, vocab] -> [batch, beam * vocab]."""
    from tensorflux.ops import array_ops, joining_ops

    return array_ops.reshape(x, joining_ops.stack([batch, -1]))


def _take(rows, indices):
    """rows[b, indices[b, k]] for each b, k."""
    from tensorflux.ops import gather_ops

    return gather_ops.gather(rows, indices, batch_dims=1)
