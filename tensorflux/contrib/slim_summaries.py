"""`slim.summaries`: summaries named after their tensor's op (`<prefix>/<op name>`), one
tensor or a list at a time; `print_summary=True` also prints the value each time the
summary runs (the returned op is then a `tf.Print` of the summary, which alone is in
SUMMARIES)."""

from __future__ import annotations

from tensorflux.framework import graph as graph_lib
from tensorflux.framework.graph import GraphKeys
from tensorflux.math.math_impl import zero_fraction
from tensorflux.ops import logging_ops
from tensorflux.summary import summary

__all__ = ["add_histogram_summaries", "add_histogram_summary", "add_image_summaries",
           "add_image_summary", "add_scalar_summaries", "add_scalar_summary",
           "add_zero_fraction_summaries", "add_zero_fraction_summary"]


def _get_summary_name(tensor, name=None, prefix=None, postfix=None) -> str:
    name = name or tensor.op.name
    if prefix:
        name = prefix + "/" + name
    if postfix:
        name = name + "/" + postfix
    return name


def _printed(op, tensor, summary_name, print_summary):
    if print_summary:
        op = logging_ops.Print(op, [tensor], summary_name)
        graph_lib.add_to_collection(GraphKeys.SUMMARIES, op)
    return op


def add_histogram_summary(tensor, name=None, prefix=None):
    """A histogram summary of `tensor`."""
    return summary.histogram(_get_summary_name(tensor, name, prefix), tensor)


def add_image_summary(tensor, name=None, prefix=None, print_summary=False):
    """An image summary of `tensor` ([batch, height, width, channels])."""
    summary_name = _get_summary_name(tensor, name, prefix)
    op = summary.image(summary_name, tensor, collections=[] if print_summary else None)
    return _printed(op, tensor, summary_name, print_summary)


def add_scalar_summary(tensor, name=None, prefix=None, print_summary=False):
    """A scalar summary of `tensor`."""
    summary_name = _get_summary_name(tensor, name, prefix)
    op = summary.scalar(summary_name, tensor, collections=[] if print_summary else None)
    return _printed(op, tensor, summary_name, print_summary)


def add_zero_fraction_summary(tensor, name=None, prefix=None, print_summary=False):
    """A scalar summary `<name>/Fraction_of_Zero_Values` of `tf.nn.zero_fraction`."""
    name = _get_summary_name(tensor, name, prefix, "Fraction_of_Zero_Values")
    return add_scalar_summary(zero_fraction(tensor), name,
                              print_summary=print_summary)


def add_histogram_summaries(tensors, prefix=None) -> list:
    return [add_histogram_summary(t, prefix=prefix) for t in tensors]


def add_image_summaries(tensors, prefix=None) -> list:
    return [add_image_summary(t, prefix=prefix) for t in tensors]


def add_scalar_summaries(tensors, prefix=None, print_summary=False) -> list:
    return [add_scalar_summary(t, prefix=prefix, print_summary=print_summary)
            for t in tensors]


def add_zero_fraction_summaries(tensors, prefix=None) -> list:
    return [add_zero_fraction_summary(t, prefix=prefix) for t in tensors]
