"""`tf.contrib.layers`' summary helpers (TF1's `contrib.layers.python.layers.summaries`,
also reachable as `tf.contrib.layers.summaries`): a scalar summary for a rank-0 tensor and a
histogram otherwise, tagged with the tensor's op name; activations also get the fraction of
inputs a Relu/Relu6/Softplus cuts to zero (`<op>/zeros`) and, for Relu6, the fraction it
caps at six (`<op>/sixes`)."""

from __future__ import annotations

import re

from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.graph import GraphKeys
from tensorflux.ops import comparison_ops, math_ops, reduction_ops
from tensorflux.summary import summary

__all__ = ["summarize_activation", "summarize_activations", "summarize_biases",
           "summarize_collection", "summarize_tensor", "summarize_tensors",
           "summarize_variables", "summarize_weights"]


def _scalar(tensor, tag):
    tensor.shape.assert_has_rank(0)
    return summary.scalar(tag, tensor)


def _histogram(tensor, tag):
    return summary.histogram(tag, tensor)


def _fraction(condition):
    return reduction_ops.reduce_mean(math_ops.cast(condition, dtypes.float32))


def summarize_activation(op):
    """Summaries of an activation tensor: `<op>/activation` (histogram), and `<op>/zeros` /
    `<op>/sixes` (fractions of the inputs below 0 / above 6) for Relu, Softplus, Relu6.

    Returns:
      The histogram summary.
    """
    name = op.op.name
    if op.op.type in ("Relu", "Softplus", "Relu6"):
        x = op.op.inputs[0]
        _scalar(_fraction(comparison_ops.less(x, math_ops.cast(0.0, x.dtype))),
                f"{name}/zeros")
    if op.op.type == "Relu6":
        x = op.op.inputs[0]
        _scalar(_fraction(comparison_ops.greater(x, math_ops.cast(6.0, x.dtype))),
                f"{name}/sixes")
    return _histogram(op, f"{name}/activation")


def summarize_tensor(tensor, tag=None):
    """A scalar summary for a rank-0 tensor, else a histogram; tag: the op's name."""
    tag = tensor.op.name if tag is None else tag
    if tensor.shape.ndims == 0:
        return _scalar(tensor, tag)
    return _histogram(tensor, tag)


def summarize_tensors(tensors, summarizer=summarize_tensor):
    """`summarizer` applied to each tensor; the list of summaries."""
    return [summarizer(t) for t in tensors]


def summarize_collection(collection, name_filter=None, summarizer=summarize_tensor):
    """Summaries of the tensors in a graph collection whose names match `name_filter`
    (a regular expression searched in the name)."""
    tensors = [t for t in graph_lib.get_collection(collection)
               if name_filter is None or re.match(name_filter, t.op.name)]
    return summarize_tensors(tensors, summarizer)


def summarize_activations(name_filter=None, summarizer=summarize_activation):
    """Summaries of the ACTIVATIONS collection."""
    return summarize_collection(GraphKeys.ACTIVATIONS, name_filter, summarizer)


def summarize_variables(name_filter=None):
    """Summaries of the global variables (`summarize_collection(GLOBAL_VARIABLES)`)."""
    return summarize_collection(GraphKeys.GLOBAL_VARIABLES, name_filter)


def summarize_weights(name_filter=None):
    """Summaries of the WEIGHTS collection."""
    return summarize_collection(GraphKeys.WEIGHTS, name_filter)


def summarize_biases(name_filter=None):
    """Summaries of the BIASES collection."""
    return summarize_collection(GraphKeys.BIASES, name_filter)
