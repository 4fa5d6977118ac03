"""`tf.contrib.seq2seq`: `sequence_loss` (and `tf.contrib.legacy_seq2seq`'s sequence
losses): the weighted cross-entropy of per-step logits, averaged or summed over steps and
batch; and the decoding loop of seq2seq_decoder.py (helpers, BasicDecoder,
dynamic_decode)."""

from __future__ import annotations

import sys as _sys

from tensorflux.contrib import tf1_paths as _tf1_paths  # noqa: E402
from tensorflux.contrib.seq2seq_attention import (  # noqa: F401
    AttentionWrapper,
    AttentionWrapperState,
    BahdanauAttention,
    LuongAttention,
)
from tensorflux.contrib.seq2seq_beam import (  # noqa: F401
    BeamSearchDecoder,
    BeamSearchDecoderOutput,
    BeamSearchDecoderState,
    FinalBeamSearchDecoderOutput,
    tile_batch,
)
from tensorflux.contrib.seq2seq_decoder import (  # noqa: F401
    BasicDecoder,
    BasicDecoderOutput,
    Decoder,
    GreedyEmbeddingHelper,
    Helper,
    TrainingHelper,
    dynamic_decode,
)
from tensorflux.contrib.seq2seq_helpers import (  # noqa: F401
    CustomHelper,
    InferenceHelper,
    SampleEmbeddingHelper,
    ScheduledEmbeddingTrainingHelper,
    ScheduledOutputTrainingHelper,
)
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor


def _xent(labels, logits, softmax_loss_function):
    from tensorflux.nn import nn_impl

    if softmax_loss_function is None:
        return nn_impl.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    return softmax_loss_function(labels=labels, logits=logits)


def sequence_loss(logits, targets, weights, average_across_timesteps=True,
                  average_across_batch=True, sum_over_timesteps=False, sum_over_batch=False,
                  softmax_loss_function=None, name=None):
    """Cross-entropy of logits [batch, time, classes] against targets [batch, time],
    weighted by `weights` [batch, time]; averaged (by the weights' sum when summing over
    an axis, else by its size) or summed over time and batch as the flags say.

    Raises:
      ValueError: wrong ranks, or both averaging and summing over one axis.
    """
    from tensorflux.ops import array_ops, reduction_ops

    if average_across_timesteps and sum_over_timesteps:
        raise ValueError("average_across_timesteps and sum_over_timesteps cannot be set to "
                         "True at same time.")
    if average_across_batch and sum_over_batch:
        raise ValueError("average_across_batch and sum_over_batch cannot be set to True at "
                         "same time.")
    with graph_lib.name_scope(name, "sequence_loss", [logits, targets, weights]):
        logits, targets = convert_to_tensor(logits), convert_to_tensor(targets)
        weights = convert_to_tensor(weights, dtype=logits.dtype)
        if logits.shape.ndims != 3:
            raise ValueError("Logits must be a [batch_size x sequence_length x logits] "
                             "tensor")
        if targets.shape.ndims != 2:
            raise ValueError("Targets must be a [batch_size x sequence_length] tensor")
        if weights.shape.ndims != 2:
            raise ValueError("Weights must be a [batch_size x sequence_length] tensor")
        n_classes = array_ops.shape(logits)[2]
        flat = array_ops.reshape(logits, [-1, n_classes])
        xent = _xent(array_ops.reshape(targets, [-1]), flat, softmax_loss_function)
        xent = xent * array_ops.reshape(weights, [-1])
        if average_across_timesteps and average_across_batch:
            return _div(reduction_ops.reduce_sum(xent), reduction_ops.reduce_sum(weights))
        if sum_over_timesteps and sum_over_batch:
            return _div(reduction_ops.reduce_sum(xent), _count(weights, None))
        xent = array_ops.reshape(xent, array_ops.shape(logits)[:2])
        if average_across_timesteps or average_across_batch:
            axis = [0] if average_across_batch else [1]
            return _div(reduction_ops.reduce_sum(xent, axis=axis),
                        reduction_ops.reduce_sum(weights, axis=axis))
        if sum_over_timesteps or sum_over_batch:
            axis = [0] if sum_over_batch else [1]
            return _div(reduction_ops.reduce_sum(xent, axis=axis), _count(weights, axis))
        return xent


def _div(x, y):
    """x / y, 0 where y is 0."""
    from tensorflux.ops import math_ops

    return math_ops.div_no_nan(x, y)


def _count(weights, axis):
    """How many weights are not zero (along `axis`), as the weights' dtype."""
    from tensorflux.ops import math_ops, reduction_ops

    return math_ops.cast(reduction_ops.count_nonzero(weights, axis=axis), weights.dtype)


def sequence_loss_by_example(logits, targets, weights, average_across_timesteps=True,
                             softmax_loss_function=None, name=None):
    """legacy_seq2seq: per-example losses from lists of per-step logits [batch, classes],
    targets [batch] and weights [batch]: sum over steps, divided by the weights' sum when
    `average_across_timesteps`."""
    from tensorflux.ops import math_ops

    if not len(logits) == len(targets) == len(weights):
        raise ValueError(f"Lengths of logits, weights, and targets must be the same "
                         f"{len(logits)}, {len(weights)}, {len(targets)}.")
    with graph_lib.name_scope(name, "sequence_loss_by_example",
                              list(logits) + list(targets) + list(weights)):
        terms = [_xent(t, lg, softmax_loss_function) * w
                 for lg, t, w in zip(logits, targets, weights, strict=True)]
        total = math_ops.add_n(terms)
        if average_across_timesteps:
            total = total / (math_ops.add_n(list(weights)) + 1e-12)
        return total


def legacy_sequence_loss(logits, targets, weights, average_across_timesteps=True,
                         average_across_batch=True, softmax_loss_function=None, name=None):
    """legacy_seq2seq.sequence_loss: sequence_loss_by_example summed over the batch,
    divided by the batch size when `average_across_batch`."""
    from tensorflux.ops import array_ops, math_ops, reduction_ops

    with graph_lib.name_scope(name, "sequence_loss",
                              list(logits) + list(targets) + list(weights)):
        cost = reduction_ops.reduce_sum(sequence_loss_by_example(
            logits, targets, weights, average_across_timesteps, softmax_loss_function))
        if average_across_batch:
            cost = cost / math_ops.cast(array_ops.shape(targets[0])[0], cost.dtype)
        return cost


python = _tf1_paths.register(__name__, {
    f"python.ops.{_name}": _sys.modules[__name__]
    for _name in ("attention_wrapper", "basic_decoder", "beam_search_decoder", "decoder",
                  "helper", "loss", "beam_search_ops")})
