"""Summary-writer ops: summaries written straight into an event file by a writer resource.

TensorFlow's resource-based summary ops (`tf.contrib.summary`, TF2's `tf.summary`):

- SummaryWriter outputs a `resource` handle naming a writer (its `shared_name`, else the
  node's name) in the device's ResourceMgr; it creates nothing.
- CreateSummaryFileWriter creates the writer behind a handle, an events file in `logdir`
  (a no-op when the writer exists); CloseSummaryWriter flushes it and deletes it (later
  ops on the handle fail with NotFoundError until it is created again); FlushSummaryWriter
  returns once everything written so far is on disk.
- WriteSummary (a tensor with serialized SummaryMetadata), WriteScalarSummary,
  WriteHistogramSummary, WriteImageSummary, WriteAudioSummary, WriteRawProtoSummary and
  WriteGraphSummary (a serialized GraphDef) each append one Event at the int64 `step`;
  ImportEvent appends serialized Events as they are.

None has an output. The writers live in tensorflux/kernels/cpu/summary_ops_v2.py; the
Python API (`tf.contrib.summary`) in tensorflux/summary/summary_ops_v2.py.
"""

from __future__ import annotations

from tensorflux.framework import common_shapes
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable

# No TF1 top-level names: the public wrappers are `tf.contrib.summary.*`.
__all__: list[str] = []

_REAL = "float, double, int32, uint8, int16, int8, int64, bfloat16, uint16, half, uint32, " \
        "uint64"


def _no_outputs(op):
    return []


define_op("SummaryWriter", outputs=["writer: resource"],
          attrs=["shared_name: string = ''", "container: string = ''"],
          shape_fn=common_shapes.scalar, stateful=True)
not_differentiable("SummaryWriter")


def summary_writer(shared_name="", container="", name=None):
    """The handle of the summary writer `shared_name` (nothing is created)."""
    return apply_op("SummaryWriter", shared_name=shared_name, container=container,
                    name=name or "SummaryWriter")


define_op("CreateSummaryFileWriter",
          inputs=["writer: resource", "logdir: string", "max_queue: int32",
                  "flush_millis: int32", "filename_suffix: string"],
          shape_fn=_no_outputs, stateful=True)
not_differentiable("CreateSummaryFileWriter")


def create_summary_file_writer(writer, logdir, max_queue, flush_millis, filename_suffix,
                               name=None):
    """Creates the file writer behind `writer` (a new events file in `logdir`) unless it
    exists; `max_queue` events may wait, synced every `flush_millis` ms."""
    return apply_op("CreateSummaryFileWriter", writer=writer, logdir=logdir,
                    max_queue=max_queue, flush_millis=flush_millis,
                    filename_suffix=filename_suffix, name=name or "CreateSummaryFileWriter")


define_op("FlushSummaryWriter", inputs=["writer: resource"], shape_fn=_no_outputs,
          stateful=True)
not_differentiable("FlushSummaryWriter")
define_op("CloseSummaryWriter", inputs=["writer: resource"], shape_fn=_no_outputs,
          stateful=True)
not_differentiable("CloseSummaryWriter")


def flush_summary_writer(writer, name=None):
    """Syncs everything `writer` was given to disk."""
    return apply_op("FlushSummaryWriter", writer=writer, name=name or "FlushSummaryWriter")


def close_summary_writer(writer, name=None):
    """Flushes `writer`, closes its file and deletes the resource."""
    return apply_op("CloseSummaryWriter", writer=writer, name=name or "CloseSummaryWriter")


define_op("WriteSummary",
          inputs=["writer: resource", "step: int64", "tensor: T", "tag: string",
                  "summary_metadata: string"],
          attrs=["T: type"], shape_fn=_no_outputs, stateful=True)
not_differentiable("WriteSummary")


def write_summary(writer, step, tensor, tag, summary_metadata, name=None):
    """Writes `tensor` as a TensorProto under `tag`, with the serialized SummaryMetadata
    `summary_metadata` (none when empty)."""
    return apply_op("WriteSummary", writer=writer, step=step, tensor=tensor, tag=tag,
                    summary_metadata=summary_metadata, name=name or "WriteSummary")


define_op("WriteScalarSummary",
          inputs=["writer: resource", "step: int64", "tag: string", "value: T"],
          attrs=[f"T: {{{_REAL}}}"], shape_fn=_no_outputs, stateful=True)
not_differentiable("WriteScalarSummary")


def write_scalar_summary(writer, step, tag, value, name=None):
    """Writes the single real `value` as a `simple_value` (float32) under `tag`."""
    return apply_op("WriteScalarSummary", writer=writer, step=step, tag=tag, value=value,
                    name=name or "WriteScalarSummary")


define_op("WriteHistogramSummary",
          inputs=["writer: resource", "step: int64", "tag: string", "values: T"],
          attrs=[f"T: {{{_REAL}, bool}} = DT_FLOAT"], shape_fn=_no_outputs, stateful=True)
not_differentiable("WriteHistogramSummary")


def write_histogram_summary(writer, step, tag, values, name=None):
    """Writes the histogram of the finite `values` under `tag`."""
    return apply_op("WriteHistogramSummary", writer=writer, step=step, tag=tag,
                    values=values, name=name or "WriteHistogramSummary")


define_op("WriteImageSummary",
          inputs=["writer: resource", "step: int64", "tag: string", "tensor: T",
                  "bad_color: uint8"],
          attrs=["max_images: int >= 1 = 3", "T: {uint8, double, float, half} = DT_FLOAT"],
          shape_fn=_no_outputs, stateful=True)
not_differentiable("WriteImageSummary")


def write_image_summary(writer, step, tag, tensor, bad_color, max_images=3, name=None):
    """Writes up to `max_images` PNGs of the [batch, h, w, 1|3|4] `tensor`, tagged
    `tag/image/i` (or `tag/image` when `max_images` is 1)."""
    return apply_op("WriteImageSummary", writer=writer, step=step, tag=tag, tensor=tensor,
                    bad_color=bad_color, max_images=max_images,
                    name=name or "WriteImageSummary")


define_op("WriteAudioSummary",
          inputs=["writer: resource", "step: int64", "tag: string", "tensor: float",
                  "sample_rate: float"],
          attrs=["max_outputs: int >= 1 = 3"], shape_fn=_no_outputs, stateful=True)
not_differentiable("WriteAudioSummary")


def write_audio_summary(writer, step, tag, tensor, sample_rate, max_outputs=3, name=None):
    """Writes up to `max_outputs` WAV clips of the [batch, frames(, channels)] `tensor`."""
    return apply_op("WriteAudioSummary", writer=writer, step=step, tag=tag, tensor=tensor,
                    sample_rate=sample_rate, max_outputs=max_outputs,
                    name=name or "WriteAudioSummary")


define_op("WriteRawProtoSummary", inputs=["writer: resource", "step: int64", "tensor: string"],
          shape_fn=_no_outputs, stateful=True)
not_differentiable("WriteRawProtoSummary")
define_op("WriteGraphSummary", inputs=["writer: resource", "step: int64", "tensor: string"],
          shape_fn=_no_outputs, stateful=True)
not_differentiable("WriteGraphSummary")
define_op("ImportEvent", inputs=["writer: resource", "event: string"], shape_fn=_no_outputs,
          stateful=True)
not_differentiable("ImportEvent")


def write_raw_proto_summary(writer, step, tensor, name=None):
    """Writes the serialized Summaries in `tensor`, one Event each."""
    return apply_op("WriteRawProtoSummary", writer=writer, step=step, tensor=tensor,
                    name=name or "WriteRawProtoSummary")


def write_graph_summary(writer, step, tensor, name=None):
    """Writes the serialized GraphDef `tensor` (a string scalar) as a graph Event."""
    return apply_op("WriteGraphSummary", writer=writer, step=step, tensor=tensor,
                    name=name or "WriteGraphSummary")


def import_event(writer, event, name=None):
    """Writes the serialized Events in `event` as they are (wall time and step kept)."""
    return apply_op("ImportEvent", writer=writer, event=event, name=name or "ImportEvent")
