"""CPU kernels of the summary-writer ops (tensorflux/ops/summary_ops_v2.py).

A `SummaryFileWriter` resource owns one `EventFileWriter` (tensorflux/lib/io): its file is
named `events.out.tfevents.<seconds>.<host>.<pid>.<n><suffix>` (n counts the writers this
process made, as TensorFlow's names do), `max_queue` Events may wait for the writing
thread and the file is synced every `flush_millis` ms. Every write op stamps its Event with
the current wall time and its step and queues it, so ops running at once in several
threads (or steps) never block one another for longer than a queue insertion; the events
of one op stay whole and in order. The Summary values are built by the same functions as
the tf.summary ops' (kernels/cpu/summary_ops.py). Values carry SummaryMetadata only where
the op was given some (WriteSummary); unlike FileWriter, it is kept on every event.

SummaryWriter only names the resource; CreateSummaryFileWriter creates it (once: later runs
find it); CloseSummaryWriter deletes it, after which the other ops fail with NotFoundError.
A writer left open is flushed and closed when its ResourceMgr drops it (the Session closes).
"""

from __future__ import annotations

import itertools
import os
import threading
import time

import numpy as np
from google.protobuf.message import DecodeError

from tensorflux.framework import errors
from tensorflux.kernels.cpu.data_flow_ops import lookup as lookup_resource
from tensorflux.kernels.cpu.state_ops import as_handle, handle_kernel
from tensorflux.kernels.cpu.summary_ops import (
    audio_summary,
    fill_tensor_proto,
    histogram_summary,
    image_summary,
)
from tensorflux.kernels.registry import kernel, kernel_factory
from tensorflux.lib.io.event_file_writer import EventFileWriter
from tensorflux.protos import event_pb2, summary_pb2

_TYPE_NAME = "N10tensorflow22SummaryWriterInterfaceE"
_file_counter = itertools.count()
_counter_lock = threading.Lock()


class SummaryFileWriter:
    """The resource behind a SummaryWriter handle: an events file and its writing thread.

    Raises (on creation):
      FailedPreconditionError, NotFoundError, PermissionDeniedError: `logdir` or the file
        cannot be made.
    """

    dropped = False

    def __init__(self, logdir: str, max_queue: int, flush_millis: int, suffix: str):
        with _counter_lock:
            n = next(_file_counter)
        self.writer = EventFileWriter(logdir, max_queue=max(max_queue, 1),
                                      flush_secs=max(flush_millis, 0) / 1000.0,
                                      filename_suffix=f".{os.getpid()}.{n}{suffix}")

    def write(self, step, **fields) -> None:
        """Queues an Event at `step` (now as its wall time) with the given fields."""
        event = event_pb2.Event(wall_time=time.time(), step=int(step), **fields)
        self.writer.add_event(event)

    def close_resource(self) -> None:
        self.dropped = True
        self.writer.close()

    def __repr__(self) -> str:
        return f"<SummaryFileWriter {self.writer.path}>"


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _scalar(value, what: str):
    """The one element of a scalar input; InvalidArgumentError for another shape."""
    arr = np.asarray(value)
    if arr.ndim != 0:
        raise _invalid(f"{what} must be a scalar, got shape "
                       f"[{','.join(str(d) for d in arr.shape)}]")
    return arr[()]


def _text(value, what: str) -> str:
    s = _scalar(value, what)
    return s.decode("utf-8", "replace") if isinstance(s, bytes) else str(s)


def _writer(ctx, handle) -> SummaryFileWriter:
    return lookup_resource(ctx, handle, SummaryFileWriter, _TYPE_NAME)


def _step(step) -> int:
    return int(_scalar(step, "step"))


# ---- the resource ------------------------------------------------------------------------


kernel_factory("SummaryWriter", device_constant=True)(handle_kernel)


@kernel("CreateSummaryFileWriter")
def _create_summary_file_writer(ctx, handle, logdir, max_queue, flush_millis, suffix):
    h = as_handle(handle)
    logdir = _text(logdir, "logdir")
    queue, millis = int(_scalar(max_queue, "max_queue")), int(_scalar(flush_millis,
                                                                      "flush_millis"))
    suffix = _text(suffix, "filename_suffix")
    ctx.resource_mgr.lookup_or_create(
        h.container, h.name, lambda: SummaryFileWriter(logdir, queue, millis, suffix))


@kernel("FlushSummaryWriter")
def _flush_summary_writer(ctx, handle):
    _writer(ctx, handle).writer.flush()


@kernel("CloseSummaryWriter")
def _close_summary_writer(ctx, handle):
    h = as_handle(handle)
    _writer(ctx, handle)  # NotFoundError, as TensorFlow words it, when there is none
    try:
        ctx.resource_mgr.delete(h.container, h.name)  # closes it (close_resource)
    except errors.NotFoundError:
        pass  # closed by another op meanwhile


# ---- writing -----------------------------------------------------------------------------


def _one_value(value: summary_pb2.Summary.Value) -> summary_pb2.Summary:
    summary = summary_pb2.Summary()
    summary.value.add().CopyFrom(value)
    return summary


@kernel_factory("WriteScalarSummary")
def _write_scalar(node):
    def compute(ctx, handle, step, tag, value):
        value = np.asarray(value)
        if value.size != 1:
            raise _invalid(f"value must be a scalar, got shape "
                           f"[{','.join(str(d) for d in value.shape)}]")
        summary = summary_pb2.Summary()
        summary.value.add(tag=_text(tag, "tag"),
                          simple_value=float(value.astype(np.float32).reshape(-1)[0]))
        _writer(ctx, handle).write(_step(step), summary=summary)

    return compute


@kernel_factory("WriteHistogramSummary")
def _write_histogram(node):
    name = node.name

    def compute(ctx, handle, step, tag, values):
        summary = histogram_summary(_text(tag, "tag"), values, name)
        _writer(ctx, handle).write(_step(step), summary=summary)

    return compute


@kernel_factory("WriteImageSummary")
def _write_image(node):
    max_images = node.attrs["max_images"]

    def compute(ctx, handle, step, tag, tensor, bad_color):
        color = np.asarray(bad_color, dtype=np.uint8).reshape(-1)
        summary = image_summary(_text(tag, "tag"), tensor, max_images, color)
        _writer(ctx, handle).write(_step(step), summary=summary)

    return compute


@kernel_factory("WriteAudioSummary")
def _write_audio(node):
    max_outputs = node.attrs["max_outputs"]

    def compute(ctx, handle, step, tag, tensor, sample_rate):
        rate = float(_scalar(sample_rate, "sample_rate"))
        summary = audio_summary(_text(tag, "tag"), tensor, rate, max_outputs)
        _writer(ctx, handle).write(_step(step), summary=summary)

    return compute


@kernel_factory("WriteSummary")
def _write_summary(node):
    dtype = node.attrs["T"]

    def compute(ctx, handle, step, tensor, tag, summary_metadata):
        summary = summary_pb2.Summary()
        value = summary.value.add(tag=_text(tag, "tag"))
        fill_tensor_proto(value.tensor, np.asarray(tensor), dtype)
        metadata = _scalar(summary_metadata, "summary_metadata")
        if metadata:
            try:
                value.metadata.ParseFromString(metadata)
            except DecodeError:
                raise _invalid("Could not parse summary_metadata") from None
        _writer(ctx, handle).write(_step(step), summary=summary)

    return compute


def _parsed(message_class, serialized, what: str):
    message = message_class()
    try:
        message.ParseFromString(serialized)
    except (DecodeError, TypeError):
        raise errors.DataLossError(None, None, f"Bad {what} binary proto") from None
    return message


@kernel("WriteRawProtoSummary")
def _write_raw_proto(ctx, handle, step, tensor):
    writer, step = _writer(ctx, handle), _step(step)
    for serialized in np.asarray(tensor, dtype=object).reshape(-1).tolist():
        writer.write(step, summary=_parsed(summary_pb2.Summary, serialized,
                                           "tf.compat.v1.Summary"))


@kernel("WriteGraphSummary")
def _write_graph(ctx, handle, step, tensor):
    graph_def = _scalar(tensor, "graph")
    _writer(ctx, handle).write(_step(step), graph_def=graph_def)


@kernel("ImportEvent")
def _import_event(ctx, handle, event):
    writer = _writer(ctx, handle)
    for serialized in np.asarray(event, dtype=object).reshape(-1).tolist():
        writer.writer.add_event(_parsed(event_pb2.Event, serialized, "tf.compat.v1.Event"))
