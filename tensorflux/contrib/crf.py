"""`tf.contrib.crf`: a linear-chain conditional random field over per-position tag scores
(the layer on top of BiLSTM taggers for named-entity recognition and chunking).

For unary scores `inputs` [batch, time, tags], a transition matrix `transition_params`
[tags, tags] and per-example lengths, a tag sequence y scores
sum_t inputs[t, y_t] + sum_t transition_params[y_{t-1}, y_t] over its first `length`
positions; `crf_log_norm` is the log of the sum of exp(score) over all sequences (the
forward algorithm), `crf_log_likelihood` their difference (with the `transitions` variable
made when none is given), `crf_decode` the best sequence in the graph (Viterbi: a forward
pass keeping back-pointers, a backward pass following them) and `viterbi_decode` the same in
NumPy. A length of 0 scores 0; a sequence of one position has no transitions.
"""

from __future__ import annotations

import numpy as np

from tensorflux.control_flow.builders import cond
from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.nn.rnn import dynamic_rnn
from tensorflux.nn.rnn_cell_impl import RNNCell
from tensorflux.ops import (
    array_ext_ops,
    array_ops,
    comparison_ops,
    gather_ops,
    joining_ops,
    math_ops,
    reduction_ops,
    sequence_ops,
)
from tensorflux.variables import variable_scope as vs

__all__ = ["crf_sequence_score", "crf_multitag_sequence_score", "crf_log_norm",
           "crf_log_likelihood", "crf_unary_score", "crf_binary_score", "CrfForwardRnnCell",
           "viterbi_decode", "crf_decode", "CrfDecodeForwardRnnCell",
           "CrfDecodeBackwardRnnCell"]


def _one_position(inputs):
    """True (a scalar tensor) when the time axis has length 1."""
    return comparison_ops.equal(array_ops.shape(inputs)[1], 1)


def _zero_where_empty(values, sequence_lengths):
    return comparison_ops.where(comparison_ops.less_equal(sequence_lengths, 0),
                                array_ops.zeros_like(values), values)


def crf_sequence_score(inputs, tag_indices, sequence_lengths, transition_params):
    """The score of each tag sequence `tag_indices` [batch, time] (unary plus transition
    scores over its first `sequence_lengths` positions), [batch]."""
    inputs = convert_to_tensor(inputs, name="inputs")
    tag_indices = convert_to_tensor(tag_indices, name="tag_indices")
    sequence_lengths = convert_to_tensor(sequence_lengths, name="sequence_lengths")

    def single():
        first = inputs[:, 0, :]
        picked = gather_ops.gather_nd(first, joining_ops.stack(
            [sequence_ops.range(array_ops.shape(inputs)[0]),
             math_ops.cast(tag_indices[:, 0], dtypes.int32)], axis=1))
        return _zero_where_empty(picked, sequence_lengths)

    def multi():
        return crf_unary_score(tag_indices, sequence_lengths, inputs) + \
            crf_binary_score(tag_indices, sequence_lengths, transition_params)

    return cond(_one_position(inputs), single, multi)


def crf_multitag_sequence_score(inputs, tag_bitmap, sequence_lengths, transition_params):
    """The log-sum-exp score of all sequences allowed by `tag_bitmap` [batch, time, tags]
    (several tags may be allowed at a position), [batch]."""
    inputs = convert_to_tensor(inputs, name="inputs")
    allowed = convert_to_tensor(tag_bitmap, dtype=dtypes.bool, name="tag_bitmap")
    minus_inf = np.array(-np.inf, inputs.dtype.as_numpy_dtype)
    filtered = comparison_ops.where(allowed, inputs,
                                    array_ops.fill(array_ops.shape(inputs), minus_inf))

    def single():
        return _zero_where_empty(reduction_ops.reduce_logsumexp(filtered[:, 0, :], [1]),
                                 sequence_lengths)

    return cond(_one_position(inputs), single,
                lambda: crf_log_norm(filtered, sequence_lengths, transition_params))


def crf_log_norm(inputs, sequence_lengths, transition_params):
    """log Z: the log-sum-exp of the scores of every tag sequence (the forward algorithm),
    [batch]; 0 for an empty sequence."""
    inputs = convert_to_tensor(inputs, name="inputs")
    sequence_lengths = convert_to_tensor(sequence_lengths, name="sequence_lengths")
    first = inputs[:, 0, :]

    def single():
        return _zero_where_empty(reduction_ops.reduce_logsumexp(first, [1]),
                                 sequence_lengths)

    def multi():
        rest = inputs[:, 1:, :]
        shorter = math_ops.maximum(array_ops.zeros_like(sequence_lengths),
                                   sequence_lengths - 1)
        _, alphas = dynamic_rnn(CrfForwardRnnCell(transition_params), rest,
                                sequence_length=shorter, initial_state=first,
                                dtype=inputs.dtype)
        return _zero_where_empty(reduction_ops.reduce_logsumexp(alphas, [1]),
                                 sequence_lengths)

    return cond(_one_position(inputs), single, multi)


def crf_log_likelihood(inputs, tag_indices, sequence_lengths, transition_params=None):
    """(log p(tag_indices | inputs) [batch], the transition matrix); a `transitions`
    variable [tags, tags] is made in the current scope when `transition_params` is None.

    Raises:
      ValueError: the number of tags (inputs' last dimension) is not known statically.
    """
    inputs = convert_to_tensor(inputs, name="inputs")
    num_tags = tensor_shape.dimension_value(inputs.shape.with_rank(3)[2])
    if num_tags is None:
        raise ValueError(f"crf_log_likelihood: the number of tags (inputs' last dimension) "
                         f"must be known statically, got shape {inputs.shape}")
    if transition_params is None:
        transition_params = vs.get_variable("transitions", [num_tags, num_tags])
    scores = crf_sequence_score(inputs, tag_indices, sequence_lengths, transition_params)
    log_norm = crf_log_norm(inputs, sequence_lengths, transition_params)
    return scores - log_norm, transition_params


def crf_unary_score(tag_indices, sequence_lengths, inputs):
    """sum over each sequence's first `sequence_lengths` positions of
    inputs[b, t, tag_indices[b, t]], [batch]."""
    inputs = convert_to_tensor(inputs, name="inputs")
    tag_indices = math_ops.cast(convert_to_tensor(tag_indices), dtypes.int32)
    picked = reduction_ops.reduce_sum(
        inputs * gather_ops.one_hot(tag_indices, array_ops.shape(inputs)[2],
                                    dtype=inputs.dtype), 2)
    masks = gather_ops.sequence_mask(sequence_lengths, maxlen=array_ops.shape(tag_indices)[1],
                                     dtype=inputs.dtype)
    return reduction_ops.reduce_sum(picked * masks, 1)


def crf_binary_score(tag_indices, sequence_lengths, transition_params):
    """sum over each sequence's transitions (positions 1 .. length-1) of
    transition_params[tag[t-1], tag[t]], [batch]."""
    transition_params = convert_to_tensor(transition_params, name="transition_params")
    tag_indices = math_ops.cast(convert_to_tensor(tag_indices), dtypes.int32)
    num_tags = array_ops.shape(transition_params)[0]
    start, end = tag_indices[:, :-1], tag_indices[:, 1:]
    scores = gather_ops.gather(array_ops.reshape(transition_params, [-1]),
                               start * num_tags + end)
    masks = gather_ops.sequence_mask(sequence_lengths, maxlen=array_ops.shape(tag_indices)[1],
                                     dtype=transition_params.dtype)
    return reduction_ops.reduce_sum(scores * masks[:, 1:], 1)


class _CrfCell(RNNCell):
    """A cell of the CRF's recurrences: no variables, no scope of its own."""

    def __call__(self, inputs, state, scope=None):
        return self.call(inputs, state)


class _TransitionCell(_CrfCell):
    """A forward-pass cell over `transition_params` [tags, tags]; state and output are
    per-tag vectors."""

    def __init__(self, transition_params):
        super().__init__()
        transition_params = convert_to_tensor(transition_params, name="transition_params")
        self._transitions = array_ops.expand_dims(transition_params, 0)
        self._num_tags = tensor_shape.dimension_value(transition_params.shape[0])

    state_size = property(lambda self: self._num_tags)
    output_size = property(lambda self: self._num_tags)


class CrfForwardRnnCell(_TransitionCell):
    """One step of the forward algorithm: alpha_t = inputs_t + logsumexp over the previous
    tag of (alpha_{t-1} + transitions)."""

    def call(self, inputs, state):
        scores = array_ops.expand_dims(state, 2) + self._transitions
        alphas = inputs + reduction_ops.reduce_logsumexp(scores, [1])
        return alphas, alphas


class CrfDecodeForwardRnnCell(_TransitionCell):
    """One step of Viterbi's forward pass: the best previous tag for each tag (output, int32)
    and the best scores (state)."""

    def call(self, inputs, state):
        scores = array_ops.expand_dims(state, 2) + self._transitions
        best = inputs + reduction_ops.reduce_max(scores, [1])
        pointers = math_ops.cast(reduction_ops.argmax(scores, 1), dtypes.int32)
        return pointers, best


class CrfDecodeBackwardRnnCell(_CrfCell):
    """One step of Viterbi's backward pass: follows the back-pointers (inputs) from the tag
    in the state ([batch, 1] int32)."""

    def __init__(self, num_tags):
        super().__init__()
        self._num_tags = num_tags

    state_size = property(lambda self: 1)
    output_size = property(lambda self: 1)

    def call(self, inputs, state):
        tags = array_ops.squeeze(state, [1])
        rows = sequence_ops.range(array_ops.shape(inputs)[0])
        new = array_ops.expand_dims(
            gather_ops.gather_nd(inputs, joining_ops.stack([rows, tags], axis=1)), -1)
        return new, new


def crf_decode(potentials, transition_params, sequence_length):
    """The highest-scoring tag sequences (Viterbi), in the graph: (tags [batch, time] int32,
    their scores [batch]). Positions past a sequence's length hold 0."""
    potentials = convert_to_tensor(potentials, name="potentials")
    sequence_length = convert_to_tensor(sequence_length, name="sequence_length")
    num_tags = tensor_shape.dimension_value(potentials.shape.with_rank(3)[2])

    def single():
        first = potentials[:, 0, :]
        tags = array_ops.expand_dims(math_ops.cast(reduction_ops.argmax(first, 1),
                                                   dtypes.int32), 1)
        return tags, reduction_ops.reduce_max(first, 1)

    def multi():
        first = potentials[:, 0, :]
        rest = potentials[:, 1:, :]
        lengths = math_ops.cast(sequence_length, dtypes.int32)
        shorter = math_ops.maximum(array_ops.zeros_like(lengths), lengths - 1)
        pointers, last = dynamic_rnn(CrfDecodeForwardRnnCell(transition_params), rest,
                                     sequence_length=shorter, initial_state=first,
                                     dtype=dtypes.int32)
        pointers = array_ext_ops.reverse_sequence(pointers, shorter, seq_axis=1,
                                                  batch_axis=0)
        start = array_ops.expand_dims(math_ops.cast(reduction_ops.argmax(last, 1),
                                                    dtypes.int32), -1)
        tags, _ = dynamic_rnn(CrfDecodeBackwardRnnCell(num_tags), pointers,
                              sequence_length=shorter, initial_state=start,
                              dtype=dtypes.int32)
        tags = joining_ops.concat([start, array_ops.squeeze(tags, [2])], axis=1)
        tags = array_ext_ops.reverse_sequence(tags, lengths, seq_axis=1, batch_axis=0)
        return tags, reduction_ops.reduce_max(last, 1)

    return cond(_one_position(potentials), single, multi)


def viterbi_decode(score, transition_params):
    """The best tag sequence for one example's `score` [time, tags] (NumPy): (a list of
    tags, its score)."""
    score = np.asarray(score)
    transition_params = np.asarray(transition_params)
    trellis = np.zeros_like(score)
    pointers = np.zeros_like(score, dtype=np.int32)
    trellis[0] = score[0]
    for t in range(1, score.shape[0]):
        v = np.expand_dims(trellis[t - 1], 1) + transition_params
        trellis[t] = score[t] + np.max(v, 0)
        pointers[t] = np.argmax(v, 0)
    path = [int(np.argmax(trellis[-1]))]
    for bp in reversed(pointers[1:]):
        path.append(int(bp[path[-1]]))
    path.reverse()
    return path, float(np.max(trellis[-1]))

