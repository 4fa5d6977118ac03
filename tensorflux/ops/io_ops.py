"""Readers and file ops: TFRecordReader, TextLineReader, FixedLengthRecordReader,
WholeFileReader, IdentityReader, LMDBReader; read_file, write_file, matching_files.

A reader is a stateful resource (`TFRecordReaderV2` outputs its `resource` handle) that
turns *work units* (file names, dequeued from a string queue) into records: `read(queue)`
returns the next (key, value), taking the next file name from `queue` when the current file
is exhausted, and fails with OutOfRangeError once that queue is closed and empty. Reads are
asynchronous kernels (tensorflux/kernels/cpu/io_ops.py): waiting for a file name holds no
thread. One reader serves its reads one at a time, in arrival order, so several threads
may share it.

Keys are TensorFlow's: "file:offset" (TFRecord), "file:line" (text, 1-based),
"file:record index" (fixed length, 0-based), the file name (whole file), the record's own
key (LMDB: work units are LMDB data files, `data.mdb`, read by lib/io/lmdb.py).

LMDBReader is TF1's ref-typed reader (its handle a `Ref(string)`, no V2 op exists): its
methods run the V1 reader ops (ReaderRead, ...), and a read passes the queue's resource
handle through FakeQueue, as TensorFlow does for ref readers.
"""

from __future__ import annotations

from tensorflux.framework import common_shapes, dtypes, tensor_shape
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.lib.io.tf_record import TFRecordOptions

# The TF1 public names of this module.
__all__ = ["ReaderBase", "TFRecordReader", "TextLineReader", "FixedLengthRecordReader",
           "WholeFileReader", "IdentityReader", "LMDBReader", "read_file", "write_file",
           "matching_files"]

TensorShape = tensor_shape.TensorShape
_READER_TAIL = ["container: string = ''", "shared_name: string = ''"]


def _no_outputs(op):
    return []


def _scalar_pair(op):
    return [TensorShape([]), TensorShape([])]


def _vector_pair(op):
    return [TensorShape([None]), TensorShape([None])]


define_op("TFRecordReaderV2", outputs=["reader_handle: resource"],
          attrs=_READER_TAIL + ["compression_type: string = ''"],
          shape_fn=common_shapes.scalar, stateful=True)
define_op("TextLineReaderV2", outputs=["reader_handle: resource"],
          attrs=["skip_header_lines: int = 0"] + _READER_TAIL,
          shape_fn=common_shapes.scalar, stateful=True)
define_op("FixedLengthRecordReaderV2", outputs=["reader_handle: resource"],
          attrs=["header_bytes: int = 0", "record_bytes: int", "footer_bytes: int = 0",
                 "hop_bytes: int = 0"] + _READER_TAIL + ["encoding: string = ''"],
          shape_fn=common_shapes.scalar, stateful=True)
define_op("WholeFileReaderV2", outputs=["reader_handle: resource"], attrs=_READER_TAIL,
          shape_fn=common_shapes.scalar, stateful=True)
define_op("IdentityReaderV2", outputs=["reader_handle: resource"], attrs=_READER_TAIL,
          shape_fn=common_shapes.scalar, stateful=True)
define_op("ReaderReadV2", inputs=["reader_handle: resource", "queue_handle: resource"],
          outputs=["key: string", "value: string"], shape_fn=_scalar_pair, stateful=True)
define_op("ReaderReadUpToV2",
          inputs=["reader_handle: resource", "queue_handle: resource", "num_records: int64"],
          outputs=["keys: string", "values: string"], shape_fn=_vector_pair, stateful=True)
define_op("ReaderNumRecordsProducedV2", inputs=["reader_handle: resource"],
          outputs=["records_produced: int64"], shape_fn=common_shapes.scalar, stateful=True)
define_op("ReaderNumWorkUnitsCompletedV2", inputs=["reader_handle: resource"],
          outputs=["units_completed: int64"], shape_fn=common_shapes.scalar, stateful=True)
define_op("ReaderSerializeStateV2", inputs=["reader_handle: resource"],
          outputs=["state: string"], shape_fn=common_shapes.scalar, stateful=True)
define_op("ReaderRestoreStateV2", inputs=["reader_handle: resource", "state: string"],
          shape_fn=_no_outputs, stateful=True)
define_op("ReaderResetV2", inputs=["reader_handle: resource"], shape_fn=_no_outputs,
          stateful=True)
# TF1's ref-typed reader ops: LMDBReader makes the only such reader (TensorFlow 2.21 keeps
# the op but its kernel is gone); FakeQueue gives a queue's resource handle to ReaderRead.
define_op("LMDBReader", outputs=["reader_handle: Ref(string)"], attrs=_READER_TAIL,
          shape_fn=lambda op: [TensorShape([2])], stateful=True)
define_op("FakeQueue", inputs=["resource: resource"], outputs=["handle: Ref(string)"],
          shape_fn=lambda op: [TensorShape([2])], stateful=True)
define_op("ReaderRead", inputs=["reader_handle: Ref(string)", "queue_handle: Ref(string)"],
          outputs=["key: string", "value: string"], shape_fn=_scalar_pair, stateful=True)
define_op("ReaderReadUpTo",
          inputs=["reader_handle: Ref(string)", "queue_handle: Ref(string)",
                  "num_records: int64"],
          outputs=["keys: string", "values: string"], shape_fn=_vector_pair, stateful=True)
define_op("ReaderNumRecordsProduced", inputs=["reader_handle: Ref(string)"],
          outputs=["records_produced: int64"], shape_fn=common_shapes.scalar, stateful=True)
define_op("ReaderNumWorkUnitsCompleted", inputs=["reader_handle: Ref(string)"],
          outputs=["units_completed: int64"], shape_fn=common_shapes.scalar, stateful=True)
define_op("ReaderSerializeState", inputs=["reader_handle: Ref(string)"],
          outputs=["state: string"], shape_fn=common_shapes.scalar, stateful=True)
define_op("ReaderRestoreState", inputs=["reader_handle: Ref(string)", "state: string"],
          shape_fn=_no_outputs, stateful=True)
define_op("ReaderReset", inputs=["reader_handle: Ref(string)"], shape_fn=_no_outputs,
          stateful=True)
not_differentiable("LMDBReader", "FakeQueue", "ReaderRead", "ReaderReadUpTo",
                   "ReaderNumRecordsProduced", "ReaderNumWorkUnitsCompleted",
                   "ReaderSerializeState", "ReaderRestoreState", "ReaderReset")
# ReadFile and MatchingFiles are stateless in TensorFlow; here they are marked stateful so
# that constant folding never freezes a file's contents into a cached step.
define_op("ReadFile", inputs=["filename: string"], outputs=["contents: string"],
          shape_fn=common_shapes.scalar, stateful=True)
define_op("WriteFile", inputs=["filename: string", "contents: string"], shape_fn=_no_outputs,
          stateful=True)
define_op("MatchingFiles", inputs=["pattern: string"], outputs=["filenames: string"],
          shape_fn=lambda op: [TensorShape([None])], stateful=True)
not_differentiable("TFRecordReaderV2", "TextLineReaderV2", "FixedLengthRecordReaderV2",
                   "WholeFileReaderV2", "IdentityReaderV2", "ReaderReadV2", "ReaderReadUpToV2",
                   "ReaderNumRecordsProducedV2", "ReaderNumWorkUnitsCompletedV2",
                   "ReaderSerializeStateV2", "ReaderRestoreStateV2", "ReaderResetV2",
                   "ReadFile", "WriteFile", "MatchingFiles")


def _queue_ref(queue) -> Tensor:
    return queue if isinstance(queue, Tensor) else queue.queue_ref


class ReaderBase:
    """Base class of the readers (`tf.ReaderBase`): records from work units in a queue.

    Args:
      reader_ref: the reader's `resource` handle.
      supports_serialize: whether `serialize_state`/`restore_state` work.
    """

    def __init__(self, reader_ref, supports_serialize=False):
        self._reader_ref = reader_ref
        self._supports_serialize = supports_serialize

    def _op(self, v2_type: str) -> str:
        """The op type for this reader's handle: `v2_type`, or its V1 form for a ref."""
        return v2_type if self._reader_ref.dtype == dtypes.resource else v2_type[:-2]

    def _queue(self, queue) -> Tensor:
        ref = _queue_ref(queue)
        if self._reader_ref.dtype == dtypes.resource or ref.dtype != dtypes.resource:
            return ref
        return apply_op("FakeQueue", resource=ref, name="FakeQueue")

    @property
    def reader_ref(self) -> Tensor:
        return self._reader_ref

    @property
    def supports_serialize(self) -> bool:
        return self._supports_serialize

    def read(self, queue, name=None):
        """The next record: a (key, value) pair of string scalars.

        Args:
          queue: a queue of work units (file names), or its handle tensor.
          name: a name for the op.

        Returns:
          (key, value). Fails with OutOfRangeError when the queue is closed and empty.
        """
        op = self._op("ReaderReadV2")
        return apply_op(op, reader_handle=self._reader_ref, queue_handle=self._queue(queue),
                        name=name or op)

    def read_up_to(self, queue, num_records, name=None):
        """Up to `num_records` records from one work unit: (keys, values) vectors."""
        num = convert_to_tensor(num_records, dtype=dtypes.int64)
        op = self._op("ReaderReadUpToV2")
        return apply_op(op, reader_handle=self._reader_ref, queue_handle=self._queue(queue),
                        num_records=num, name=name or op)

    def num_records_produced(self, name=None) -> Tensor:
        """An int64 scalar: the records this reader has produced."""
        op = self._op("ReaderNumRecordsProducedV2")
        return apply_op(op, reader_handle=self._reader_ref, name=name or op)

    def num_work_units_completed(self, name=None) -> Tensor:
        """An int64 scalar: the work units (files) this reader has finished."""
        op = self._op("ReaderNumWorkUnitsCompletedV2")
        return apply_op(op, reader_handle=self._reader_ref, name=name or op)

    def serialize_state(self, name=None) -> Tensor:
        """A string scalar encoding the reader's state (UnimplementedError if unsupported)."""
        op = self._op("ReaderSerializeStateV2")
        return apply_op(op, reader_handle=self._reader_ref, name=name or op)

    def restore_state(self, state, name=None):
        """Restores a state from `serialize_state`."""
        op = self._op("ReaderRestoreStateV2")
        return apply_op(op, reader_handle=self._reader_ref,
                        state=convert_to_tensor(state, dtype=dtypes.string), name=name or op)

    def reset(self, name=None):
        """Back to the initial state: no current work unit, counters at zero."""
        op = self._op("ReaderResetV2")
        return apply_op(op, reader_handle=self._reader_ref, name=name or op)


class TFRecordReader(ReaderBase):
    """Reads the records of TFRecord files (`tf.TFRecordReader`).

    Args:
      name: the op name.
      options: a `tf.python_io.TFRecordOptions` (or compression type string).
    """

    def __init__(self, name=None, options=None):
        compression = TFRecordOptions.get_compression_type_string(options)
        ref = apply_op("TFRecordReaderV2", compression_type=compression,
                       name=name or "TFRecordReaderV2")
        super().__init__(ref)


class TextLineReader(ReaderBase):
    """Reads the lines of text files, without the line ending (`tf.TextLineReader`).

    Args:
      skip_header_lines: lines to skip at the start of each file.
      name: the op name.
    """

    def __init__(self, skip_header_lines=None, name=None):
        ref = apply_op("TextLineReaderV2", skip_header_lines=skip_header_lines or 0,
                       name=name or "TextLineReaderV2")
        super().__init__(ref)


class FixedLengthRecordReader(ReaderBase):
    """Reads fixed-length records from files (`tf.FixedLengthRecordReader`).

    Args:
      record_bytes: bytes per record.
      header_bytes, footer_bytes: bytes skipped at the start and end of each file.
      hop_bytes: bytes between record starts (0: `record_bytes`).
      name: the op name.
      encoding: "" or "ZLIB"/"GZIP" for compressed files.
    """

    def __init__(self, record_bytes, header_bytes=None, footer_bytes=None, hop_bytes=None,
                 name=None, encoding=None):
        ref = apply_op("FixedLengthRecordReaderV2", record_bytes=record_bytes,
                       header_bytes=header_bytes or 0, footer_bytes=footer_bytes or 0,
                       hop_bytes=hop_bytes or 0, encoding=encoding or "",
                       name=name or "FixedLengthRecordReaderV2")
        super().__init__(ref)


class WholeFileReader(ReaderBase):
    """Outputs each file whole: key = file name, value = contents (`tf.WholeFileReader`)."""

    def __init__(self, name=None):
        super().__init__(apply_op("WholeFileReaderV2", name=name or "WholeFileReaderV2"),
                         supports_serialize=True)


class IdentityReader(ReaderBase):
    """Outputs each work unit as both key and value (`tf.IdentityReader`)."""

    def __init__(self, name=None):
        super().__init__(apply_op("IdentityReaderV2", name=name or "IdentityReaderV2"),
                         supports_serialize=True)


class LMDBReader(ReaderBase):
    """Reads the (key, value) records of LMDB databases in key order (`tf.LMDBReader`):
    each work unit is the path of an LMDB data file (`data.mdb`) or of its directory;
    keys are the records' own keys.

    Args:
      name: the op name.
      options: unused (as in TensorFlow).
    """

    def __init__(self, name=None, options=None):
        del options
        super().__init__(apply_op("LMDBReader", name=name or "LMDBReader"))


def read_file(filename, name=None) -> Tensor:
    """The contents of the file `filename` (`tf.read_file`)."""
    return apply_op("ReadFile", filename=convert_to_tensor(filename, dtype=dtypes.string),
                    name=name or "ReadFile")


def write_file(filename, contents, name=None):
    """Writes `contents` to `filename`, creating its directory (`tf.write_file`)."""
    return apply_op("WriteFile", filename=convert_to_tensor(filename, dtype=dtypes.string),
                    contents=convert_to_tensor(contents, dtype=dtypes.string),
                    name=name or "WriteFile")


def matching_files(pattern, name=None) -> Tensor:
    """The sorted file names matching a glob pattern (or a vector of them)
    (`tf.matching_files`)."""
    return apply_op("MatchingFiles", pattern=convert_to_tensor(pattern, dtype=dtypes.string),
                    name=name or "MatchingFiles")
