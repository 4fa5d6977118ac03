"""`tf.summary` ops: scalar, histogram, image, audio, text, tensor_summary, merge, merge_all.

Each adds one summary op (tensorflux/ops/summary_ops.py) named by TensorFlow's rules and adds
its output to the SUMMARIES collection (or `collections`):

- the name is cleaned first: every character other than letters, digits, `_`, `-`, `/`
  and `.` becomes `_`, and leading slashes are dropped (a warning is logged);
- the op is named by a name scope `name` (or `family/name`) opened inside the current
  scope, so it is unique (`loss`, `loss_1`, ...);
- the tag is that scope without its trailing slash, prefixed by `family/` when a family is
  given (so the family is the tag's first component, the TensorBoard tab).
"""

from __future__ import annotations

import contextlib
import logging
import re

from google.protobuf import json_format

from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.graph import GraphKeys
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import summary_ops
from tensorflux.protos import summary_pb2

__all__ = ["scalar", "histogram", "image", "audio", "text", "tensor_summary", "merge",
           "merge_all", "get_summary_description"]

_log = logging.getLogger("tensorflux")
_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w.]")


def _clean_tag(name):
    """`name` with characters a node name cannot hold replaced by `_`, leading `/` removed."""
    if name is None:
        return None
    cleaned = _INVALID_TAG_CHARACTERS.sub("_", name).lstrip("/")
    if cleaned != name:
        _log.warning("Summary name %s is illegal; using %s instead.", name, cleaned)
    return cleaned


@contextlib.contextmanager
def _summary_scope(name, family=None, default_name=None, values=None):
    """Opens the summary's name scope; yields (tag, scope)."""
    name = _clean_tag(name)
    family = _clean_tag(family)
    base = name if family is None else f"{family}/{name}"
    with graph_lib.name_scope(base, default_name, values) as scope:
        tag = scope.rstrip("/")
        yield (tag if family is None else f"{family}/{tag}"), scope


def _collect(value, collections, default_collections) -> None:
    for key in default_collections if collections is None else collections:
        graph_lib.add_to_collection(key, value)


def scalar(name, tensor, collections=None, family=None):
    """A summary of one real value (`tf.summary.scalar`).

    Args:
      name: the node's name; also the series name in TensorBoard.
      tensor: a real tensor holding a single value (a scalar; another shape fails at run
        time).
      collections: graph collections to add the summary to (default: [SUMMARIES]).
      family: prefix of the tag (the TensorBoard tab).

    Returns:
      A string scalar tensor: the serialized Summary.
    """
    with _summary_scope(name, family, values=[tensor]) as (tag, scope):
        value = summary_ops.scalar_summary(tags=tag, values=tensor, name=scope)
        _collect(value, collections, [GraphKeys.SUMMARIES])
    return value


def histogram(name, values, collections=None, family=None):
    """A summary of the distribution of `values` (`tf.summary.histogram`).

    Args:
      name: the node's name; also the series name in TensorBoard.
      values: a real tensor of any shape; a non-finite value fails at run time.
      collections: graph collections to add the summary to (default: [SUMMARIES]).
      family: prefix of the tag.

    Returns:
      A string scalar tensor: the serialized Summary.
    """
    with _summary_scope(name, family, default_name="HistogramSummary",
                        values=[values]) as (tag, scope):
        value = summary_ops.histogram_summary(tag=tag, values=values, name=scope)
        _collect(value, collections, [GraphKeys.SUMMARIES])
    return value


def image(name, tensor, max_outputs=3, collections=None, family=None):
    """A summary of up to `max_outputs` images (`tf.summary.image`).

    Float images are scaled one at a time into [0, 255] (by 255 / max when no value is
    negative, else around 128 by 127 / max |value|); uint8 images are kept. Tags are
    `<tag>/image/<i>`, or `<tag>/image` when `max_outputs` is 1.

    Args:
      name: the node's name.
      tensor: a uint8, float32, float16 or float64 tensor [batch, height, width, channels]
        with 1 (grey), 3 (RGB) or 4 (RGBA) channels.
      max_outputs: how many of the batch's images to keep.
      collections: graph collections to add the summary to (default: [SUMMARIES]).
      family: prefix of the tag.

    Returns:
      A string scalar tensor: the serialized Summary.
    """
    with _summary_scope(name, family, values=[tensor]) as (tag, scope):
        value = summary_ops.image_summary(tag=tag, tensor=tensor, max_images=max_outputs,
                                          name=scope)
        _collect(value, collections, [GraphKeys.SUMMARIES])
    return value


def audio(name, tensor, sample_rate, max_outputs=3, collections=None, family=None):
    """A summary of up to `max_outputs` audio clips, as WAV (`tf.summary.audio`).

    Args:
      name: the node's name.
      tensor: a float32 tensor [batch, frames, channels] or [batch, frames], in [-1, 1].
      sample_rate: a float32 scalar, in hertz.
      max_outputs: how many of the batch's clips to keep.
      collections: graph collections to add the summary to (default: [SUMMARIES]).
      family: prefix of the tag.

    Returns:
      A string scalar tensor: the serialized Summary.
    """
    with _summary_scope(name, family, values=[tensor]) as (tag, scope):
        sample_rate = convert_to_tensor(sample_rate, dtype=dtypes.float32, name="sample_rate")
        value = summary_ops.audio_summary_v2(tag=tag, tensor=tensor, sample_rate=sample_rate,
                                             max_outputs=max_outputs, name=scope)
        _collect(value, collections, [GraphKeys.SUMMARIES])
    return value


def text(name, tensor, collections=None):
    """A summary of a string tensor, shown by TensorBoard's text plugin (`tf.summary.text`).

    Args:
      name: the node's name.
      tensor: a string tensor.
      collections: graph collections to add the summary to (default: [SUMMARIES]).

    Returns:
      A string scalar tensor: the serialized Summary.

    Raises:
      ValueError: `tensor` is not a string tensor.
    """
    tensor = convert_to_tensor(tensor)
    if tensor.dtype != dtypes.string:
        raise ValueError(f"Expected tensor {tensor.name} to have dtype string, got "
                         f"{tensor.dtype}")
    metadata = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="text"))
    return tensor_summary(name, tensor, summary_metadata=metadata, collections=collections)


def tensor_summary(name, tensor, summary_description=None, collections=None,
                   summary_metadata=None, family=None, display_name=None):
    """A summary holding a whole tensor (`tf.summary.tensor_summary`).

    Args:
      name: the node's name.
      tensor: a tensor of any type and shape.
      summary_description: a description stored in the metadata.
      collections: graph collections to add the summary to (default: [SUMMARIES]).
      summary_metadata: a SummaryMetadata (plugin data, display name) to record.
      family: prefix of the tag.
      display_name: a display name stored in the metadata.

    Returns:
      A string scalar tensor: the serialized Summary.
    """
    metadata = summary_pb2.SummaryMetadata()
    if summary_metadata is not None:
        metadata.CopyFrom(summary_metadata)
    if summary_description is not None:
        metadata.summary_description = summary_description
    if display_name is not None:
        metadata.display_name = display_name
    serialized = metadata.SerializeToString()
    with _summary_scope(name, family, values=[tensor]) as (tag, scope):
        value = summary_ops.tensor_summary_v2(tag=tag, tensor=tensor,
                                              serialized_summary_metadata=serialized,
                                              name=scope)
        _collect(value, collections, [GraphKeys.SUMMARIES])
    return value


def merge(inputs, collections=None, name=None):
    """One summary with the values of all `inputs` (`tf.summary.merge`).

    Args:
      inputs: string tensors holding serialized Summaries.
      collections: graph collections to add the merged summary to (default: none).
      name: a name for the op.

    Returns:
      A string scalar tensor: the serialized Summary. Running it fails when two inputs
      have a value with the same tag.
    """
    name = _clean_tag(name)
    with graph_lib.name_scope(name, "Merge", inputs):
        value = summary_ops.merge_summary(inputs=inputs, name=name)
        _collect(value, collections, [])
    return value


def merge_all(key=GraphKeys.SUMMARIES, scope=None, name=None):
    """Merges every summary of the collection `key` (`tf.summary.merge_all`).

    Args:
      key: the collection of summaries.
      scope: keep only summaries whose name matches this (a regular expression).
      name: a name for the op.

    Returns:
      The merged summary tensor, or None when the collection holds none.
    """
    summaries = graph_lib.get_collection(key, scope=scope)
    return merge(summaries, name=name) if summaries else None


def get_summary_description(node_def):
    """The SummaryDescription of a `TensorSummary` node (its `description` attr, JSON).

    Raises:
      ValueError: the node is not a TensorSummary.
    """
    if node_def.op != "TensorSummary":
        raise ValueError(f"Can't get_summary_description on {node_def.op}")
    description = summary_pb2.SummaryDescription()
    json_format.Parse(node_def.attr["description"].s.decode(), description)
    return description
