"""Connectionist temporal classification (Graves et al., 2006): the CTCLoss op (loss and
its gradient in one pass), the CTCGreedyDecoder and CTCBeamSearchDecoder ops, and the TF1
wrappers under `tf.nn` (ctc_loss, ctc_loss_v2, the decoders, ctc_unique_labels,
collapse_repeated). Kernels: kernels/cpu/ctc_ops.py.

The ops take logits time-major, [max_time, batch, num_classes], with the blank as the last
class; the wrappers move another blank there (ctc_loss_v2's `blank_index`).
"""

from __future__ import annotations

from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.common_shapes import checked_dims, merge_dim
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient, not_differentiable
from tensorflux.framework.sparse_tensor import SparseTensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    gather_ops,
    joining_ops,
    math_ops,
    reduction_ops,
    sequence_ops,
)

__all__ = ["ctc_loss", "ctc_loss_v2", "ctc_greedy_decoder", "ctc_beam_search_decoder",
           "ctc_beam_search_decoder_v2", "ctc_unique_labels", "collapse_repeated"]

_FLOATS = "T: {float, double} = DT_FLOAT"


def _logits_and_batch(op):
    """([time, batch, classes] of the logits, batch merged with sequence_length's)."""
    x = checked_dims(op.inputs[0], rank=3) or [None] * 3
    seq = checked_dims(op.inputs[-1] if op.type == "CTCLoss" else op.inputs[1], rank=1)
    return x, merge_dim(x[1], seq[0] if seq else None)


def _ctc_loss_shape(op):
    x, batch = _logits_and_batch(op)
    idx = checked_dims(op.inputs[1], rank=2)
    vals = checked_dims(op.inputs[2], rank=1)
    merge_dim(idx[0] if idx else None, vals[0] if vals else None)
    return [[batch], [x[0], batch, x[2]]]


def _decoded_shapes(batch, n):
    return [[None, 2]] * n + [[None]] * n + [[2]] * n


def _greedy_shape(op):
    _, batch = _logits_and_batch(op)
    return _decoded_shapes(batch, 1) + [[batch, 1]]


def _beam_shape(op):
    _, batch = _logits_and_batch(op)
    k = op.attrs["top_paths"]
    return _decoded_shapes(batch, k) + [[batch, k]]


define_op("CTCLoss", inputs=["inputs: T", "labels_indices: int64", "labels_values: int32",
                             "sequence_length: int32"],
          outputs=["loss: T", "gradient: T"],
          attrs=["preprocess_collapse_repeated: bool = false",
                 "ctc_merge_repeated: bool = true",
                 "ignore_longer_outputs_than_inputs: bool = false", _FLOATS],
          shape_fn=_ctc_loss_shape)
define_op("CTCGreedyDecoder", inputs=["inputs: T", "sequence_length: int32"],
          outputs=["decoded_indices: int64", "decoded_values: int64", "decoded_shape: int64",
                   "log_probability: T"],
          attrs=["merge_repeated: bool = false", "blank_index: int = -1", _FLOATS],
          shape_fn=_greedy_shape)
define_op("CTCBeamSearchDecoder", inputs=["inputs: T", "sequence_length: int32"],
          outputs=["decoded_indices: top_paths * int64", "decoded_values: top_paths * int64",
                   "decoded_shape: top_paths * int64", "log_probability: T"],
          attrs=["beam_width: int >= 1", "top_paths: int >= 1", "merge_repeated: bool = true",
                 _FLOATS],
          shape_fn=_beam_shape)


@gradient("CTCLoss")
def _ctc_loss_grad(op, grad_loss, _=None):
    """d loss / d inputs is the op's second output, scaled per batch entry. That output
    has no gradient of its own (TF's PreventGradient): a second derivative is an error."""
    with op.graph.gradient_override_map({"Identity": "CTCLossNoSecondDerivative"}):
        fused = array_ops.identity(op.outputs[1])
    return [array_ops.reshape(grad_loss, [1, -1, 1]) * fused, None, None, None]


@gradient("CTCLossNoSecondDerivative")
def _ctc_loss_no_second_derivative(op, grad):
    raise LookupError("Currently there is no way to take the second derivative of ctc_loss "
                      "due to the fused implementation's interaction with tf.gradients()")


not_differentiable("CTCGreedyDecoder", "CTCBeamSearchDecoder")


def ctc_loss(labels, inputs=None, sequence_length=None, preprocess_collapse_repeated=False,
             ctc_merge_repeated=True, ignore_longer_outputs_than_inputs=False, time_major=True,
             logits=None):
    """CTC loss of `inputs` (logits, [max_time, batch, num_classes] when `time_major`, else
    [batch, max_time, num_classes]) against the SparseTensor `labels` (`tf.nn.ctc_loss`).
    The blank is class num_classes - 1; labels at or above it end a label sequence.

    Returns:
      A [batch] tensor: the negative log-probability of each label sequence.

    Raises:
      TypeError: `labels` is not a SparseTensor.
      ValueError: both or neither of `inputs` and `logits` given; wrong static ranks.
    """
    if not isinstance(labels, SparseTensor):
        raise TypeError("Expected argument `labels` to be a SparseTensor. Received "
                        f"labels={labels} of type: {type(labels).__name__}")
    if (inputs is None) == (logits is None):
        raise ValueError("Cannot specify both 'inputs' and 'logits'" if inputs is not None
                         else "Must specify one of 'inputs' and 'logits'")
    inputs = convert_to_tensor(inputs if inputs is not None else logits, name="logits")
    if not time_major:
        inputs = array_ops.transpose(inputs, [1, 0, 2])
    orig = inputs.dtype
    if orig in (dtypes.float16, dtypes.bfloat16):
        inputs = math_ops.cast(inputs, dtypes.float32)
    loss, _ = apply_op("CTCLoss", inputs=inputs, labels_indices=labels.indices,
                       labels_values=labels.values, sequence_length=sequence_length,
                       preprocess_collapse_repeated=preprocess_collapse_repeated,
                       ctc_merge_repeated=ctc_merge_repeated,
                       ignore_longer_outputs_than_inputs=ignore_longer_outputs_than_inputs)
    return math_ops.cast(loss, orig) if orig != loss.dtype else loss


def _num_classes(logits):
    dims = checked_dims(logits)
    if dims is not None and len(dims) == 3 and dims[2] is not None:
        return dims[2]
    return array_ops.shape(logits)[2]


def _dense_to_sparse(labels, label_length):
    """The first label_length[b] entries of each row of dense `labels` as a SparseTensor."""
    labels = convert_to_tensor(labels, name="labels")
    mask = gather_ops.sequence_mask(label_length, array_ops.shape(labels)[1])
    indices = comparison_ops.where(mask)
    values = math_ops.cast(gather_ops.gather_nd(labels, indices), dtypes.int32)
    return SparseTensor(indices, values, math_ops.cast(array_ops.shape(labels), dtypes.int64))


def ctc_loss_v2(labels, logits, label_length, logit_length, logits_time_major=True,
                unique=None, blank_index=None, name=None):
    """CTC loss with dense ([batch, max_label_length] plus `label_length`) or sparse labels
    and a blank at `blank_index` (default 0 for dense labels; required for sparse ones)
    (`tf.compat.v1.nn.ctc_loss_v2`). `unique` (ctc_unique_labels' result) is accepted and
    does not change the value.

    Returns:
      A [batch] tensor of negative log-probabilities.

    Raises:
      ValueError: sparse labels without `blank_index`.
    """
    del unique  # an optimisation hint of TF's dense implementation; the value is the same
    sparse = isinstance(labels, SparseTensor)
    if sparse and blank_index is None:
        raise ValueError("Argument `blank_index` must be provided when labels is a "
                         "SparseTensor.")
    with graph_lib.name_scope(name, "ctc_loss_dense" if not sparse else "ctc_loss",
                              [logits, logit_length]):
        logits = convert_to_tensor(logits, name="logits")
        if not sparse:
            labels = _dense_to_sparse(labels, label_length)
            blank_index = 0 if blank_index is None else blank_index
        classes = _num_classes(logits)
        if blank_index < 0:
            blank_index += classes
        if not isinstance(classes, int) or blank_index != classes - 1:
            logits = joining_ops.concat([logits[:, :, :blank_index],
                                         logits[:, :, blank_index + 1:],
                                         logits[:, :, blank_index:blank_index + 1]], axis=2)
            values = comparison_ops.where(labels.values < blank_index, labels.values,
                                          labels.values - 1)
            labels = SparseTensor(labels.indices, values, labels.dense_shape)
        return ctc_loss(labels, logits, logit_length, time_major=logits_time_major)


def ctc_greedy_decoder(inputs, sequence_length, merge_repeated=True, blank_index=None):
    """Best-path decoding of time-major logits (`tf.nn.ctc_greedy_decoder`): the argmax
    class at each step, repeats merged when `merge_repeated`, blanks removed.

    Returns:
      ([SparseTensor of the decoded classes, shape [batch, max_decoded_length]],
       [batch, 1] tensor: minus the sum over time of the largest logit).
    """
    outs = apply_op("CTCGreedyDecoder", inputs=inputs, sequence_length=sequence_length,
                    merge_repeated=merge_repeated,
                    blank_index=-1 if blank_index is None else blank_index)
    ix, val, shape, log_prob = outs
    return [SparseTensor(ix, val, shape)], log_prob


def ctc_beam_search_decoder(inputs, sequence_length, beam_width=100, top_paths=1,
                            merge_repeated=True):
    """CTC prefix beam search over time-major logits (`tf.nn.ctc_beam_search_decoder`); the
    blank is the last class.

    Returns:
      (list of `top_paths` SparseTensors, best first; [batch, top_paths] log-probabilities).
    """
    outs = apply_op("CTCBeamSearchDecoder", inputs=inputs, sequence_length=sequence_length,
                    beam_width=beam_width, top_paths=top_paths, merge_repeated=merge_repeated)
    ixs, vals, shapes, log_prob = outs
    return [SparseTensor(i, v, s) for i, v, s in zip(ixs, vals, shapes, strict=True)], log_prob


def ctc_beam_search_decoder_v2(inputs, sequence_length, beam_width=100, top_paths=1):
    """ctc_beam_search_decoder without merging repeated labels
    (`tf.nn.ctc_beam_search_decoder_v2`)."""
    return ctc_beam_search_decoder(inputs, sequence_length, beam_width=beam_width,
                                   top_paths=top_paths, merge_repeated=False)


def collapse_repeated(labels, seq_length, name=None):
    """Merges runs of equal labels in each row of dense `labels` [batch, max_len]
    (`tf.nn.collapse_repeated`).

    Returns:
      (collapsed labels [batch, new max length] padded with 0, new lengths [batch]).
    """
    with graph_lib.name_scope(name, "collapse_repeated_labels", [labels, seq_length]):
        labels = convert_to_tensor(labels, name="labels")
        seq_length = convert_to_tensor(seq_length, name="seq_length")
        keep = joining_ops.concat([array_ops.ones_like(labels[:, :1], dtype=dtypes.bool),
                                   comparison_ops.not_equal(labels[:, 1:], labels[:, :-1])],
                                  axis=1)
        maxlen = array_ops.shape(labels)[1]
        keep = comparison_ops.logical_and(keep, gather_ops.sequence_mask(seq_length, maxlen))
        new_len = reduction_ops.reduce_sum(math_ops.cast(keep, dtypes.int32), axis=1)
        new_max = reduction_ops.reduce_max(new_len)
        # Position of each kept label in its collapsed row: the count of kept ones before it.
        pos = sequence_ops.cumsum(math_ops.cast(keep, dtypes.int64), axis=1, exclusive=True)
        where = comparison_ops.where(keep)
        rows = where[:, :1]
        cols = gather_ops.gather_nd(pos, where)
        out_shape = joining_ops.stack([math_ops.cast(array_ops.shape(labels)[0], dtypes.int64),
                                       math_ops.cast(new_max, dtypes.int64)])
        collapsed = gather_ops.scatter_nd(
            joining_ops.concat([rows, array_ops.expand_dims(cols, 1)], axis=1),
            gather_ops.gather_nd(labels, where), out_shape)
        return collapsed, math_ops.cast(new_len, seq_length.dtype)


def ctc_unique_labels(labels, name=None):
    """The unique labels of each row of `labels` [batch, max_len] in first-seen order,
    padded with 0, and each label's index among them (`tf.nn.ctc_unique_labels`).

    Returns:
      (int64 [batch, max_len] unique labels, int32 [batch, max_len] indices).
    """
    with graph_lib.name_scope(name, "ctc_unique_labels", [labels]):
        labels = convert_to_tensor(labels, name="labels")
        # same[b, i, j]: labels i and j of row b are equal. A label is new when no earlier
        # one equals it; its unique index is the number of new labels before its first copy.
        same = comparison_ops.equal(array_ops.expand_dims(labels, 2),
                                    array_ops.expand_dims(labels, 1))
        steps = sequence_ops.range(array_ops.shape(labels)[1])
        earlier = comparison_ops.less(array_ops.expand_dims(steps, 0),
                                      array_ops.expand_dims(steps, 1))
        seen = reduction_ops.reduce_any(comparison_ops.logical_and(same, earlier), axis=2)
        new = math_ops.cast(comparison_ops.logical_not(seen), dtypes.int32)
        rank = sequence_ops.cumsum(new, axis=1, exclusive=True)
        first = reduction_ops.argmax(math_ops.cast(same, dtypes.int32), axis=2,
                                     output_type=dtypes.int32)
        idx = gather_ops.gather(rank, first, batch_dims=1)
        where = comparison_ops.where(math_ops.cast(new, dtypes.bool))
        slots = joining_ops.concat([where[:, :1], math_ops.cast(
            array_ops.expand_dims(gather_ops.gather_nd(rank, where), 1), dtypes.int64)], 1)
        y = gather_ops.scatter_nd(slots, math_ops.cast(gather_ops.gather_nd(labels, where),
                                                       dtypes.int64),
                                  math_ops.cast(array_ops.shape(labels), dtypes.int64))
        return y, idx
