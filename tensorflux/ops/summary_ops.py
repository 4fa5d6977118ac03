"""Summary ops: each outputs a serialized `Summary` protocol buffer (a string scalar).

ScalarSummary, HistogramSummary, ImageSummary, AudioSummaryV2 (and the older AudioSummary,
its sample rate an attribute), TensorSummaryV2 and MergeSummary, with TensorFlow's
signatures. Every output is a scalar whatever the inputs (as in TensorFlow: a wrong input
shape fails at run time). The wrappers here are the raw ops; `tf.summary.*`
(tensorflux/summary/summary.py) names the nodes and tags and fills the collections. The
kernels are in tensorflux/kernels/cpu/summary_ops.py.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import common_shapes
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable

# No TF1 top-level names: the public wrappers are `tf.summary.*`.
__all__: list[str] = []

_REAL = "{float, double, int32, uint8, int16, int8, int64, bfloat16, uint16, half, uint32, " \
        "uint64}"

define_op("ScalarSummary", inputs=["tags: string", "values: T"], outputs=["summary: string"],
          attrs=[f"T: {_REAL}"], shape_fn=common_shapes.scalar)
not_differentiable("ScalarSummary")


def scalar_summary(tags, values, name=None):
    """A Summary with one `simple_value` per entry of `values`, tagged by `tags`.

    Args:
      tags: a string tensor with the shape of `values`.
      values: a real tensor.
      name: a name for the op.

    Returns:
      A string scalar: the serialized Summary.
    """
    return apply_op("ScalarSummary", tags=tags, values=values, name=name or "ScalarSummary")


define_op("HistogramSummary", inputs=["tag: string", "values: T"], outputs=["summary: string"],
          attrs=[f"T: {_REAL} = DT_FLOAT"], shape_fn=common_shapes.scalar)
not_differentiable("HistogramSummary")


def histogram_summary(tag, values, name=None):
    """A Summary with the histogram of `values` (finite) under the scalar string `tag`."""
    return apply_op("HistogramSummary", tag=tag, values=values,
                    name=name or "HistogramSummary")


_IMAGE_SUMMARY = define_op(
    "ImageSummary", inputs=["tag: string", "tensor: T"], outputs=["summary: string"],
    attrs=["max_images: int >= 1 = 3", "T: {uint8, float, half, double} = DT_FLOAT",
           "bad_color: tensor"], shape_fn=common_shapes.scalar)
# The default colour of non-finite pixels, a uint8 tensor as in TensorFlow's registration
# (the signature syntax would read the list as int32).
_IMAGE_SUMMARY.attrs["bad_color"].default = np.array([255, 0, 0, 255], dtype=np.uint8)
not_differentiable("ImageSummary")


def image_summary(tag, tensor, max_images=3, bad_color=None, name=None):
    """A Summary with up to `max_images` PNG images of the [batch, height, width, 1|3|4]
    `tensor`, tagged `tag/image/i` (or `tag/image` when `max_images` is 1)."""
    kwargs = {} if bad_color is None else {"bad_color": np.asarray(bad_color, np.uint8)}
    return apply_op("ImageSummary", tag=tag, tensor=tensor, max_images=max_images,
                    name=name or "ImageSummary", **kwargs)


define_op("AudioSummaryV2", inputs=["tag: string", "tensor: float", "sample_rate: float"],
          outputs=["summary: string"], attrs=["max_outputs: int >= 1 = 3"],
          shape_fn=common_shapes.scalar)
not_differentiable("AudioSummaryV2")
define_op("AudioSummary", inputs=["tag: string", "tensor: float"], outputs=["summary: string"],
          attrs=["sample_rate: float", "max_outputs: int >= 1 = 3"],
          shape_fn=common_shapes.scalar)
not_differentiable("AudioSummary")


def audio_summary_v2(tag, tensor, sample_rate, max_outputs=3, name=None):
    """A Summary with up to `max_outputs` WAV clips of the [batch, frames(, channels)]
    float `tensor` in [-1, 1], tagged `tag/audio/i` (or `tag/audio`)."""
    return apply_op("AudioSummaryV2", tag=tag, tensor=tensor, sample_rate=sample_rate,
                    max_outputs=max_outputs, name=name or "AudioSummaryV2")


define_op("TensorSummaryV2",
          inputs=["tag: string", "tensor: T", "serialized_summary_metadata: string"],
          outputs=["summary: string"], attrs=["T: type"], shape_fn=common_shapes.scalar)
not_differentiable("TensorSummaryV2")


def tensor_summary_v2(tag, tensor, serialized_summary_metadata, name=None):
    """A Summary holding `tensor` as a TensorProto, with the given SummaryMetadata."""
    return apply_op("TensorSummaryV2", tag=tag, tensor=tensor,
                    serialized_summary_metadata=serialized_summary_metadata,
                    name=name or "TensorSummaryV2")


define_op("MergeSummary", inputs=["inputs: N * string"], outputs=["summary: string"],
          attrs=["N: int >= 1"], shape_fn=common_shapes.scalar)
not_differentiable("MergeSummary")


def merge_summary(inputs, name=None):
    """The union of the values of serialized Summaries (a tag may appear only once)."""
    return apply_op("MergeSummary", inputs=list(inputs), name=name or "MergeSummary")
