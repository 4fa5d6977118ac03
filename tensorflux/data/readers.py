"""File datasets: tf.data.TFRecordDataset, TextLineDataset, FixedLengthRecordDataset.

Each takes one file name or a vector of them and yields scalar string records, reading the
files in order; with `num_parallel_reads` the files are interleaved (one record from each
of that many files in turn), as TensorFlow's readers do.
"""

from __future__ import annotations

from tensorflux.data.dataset_ops import DatasetV1
from tensorflux.framework import dtypes
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.framework.tensor_spec import TensorSpec
from tensorflux.ops import array_ops

_SCALAR_STRING = TensorSpec([], dtypes.string)
_DEFAULT_BUFFER = 256 * 1024


def _filenames(filenames):
    t = convert_to_tensor(filenames, dtype=dtypes.string, name="filenames")
    if t.shape.ndims is not None and t.shape.ndims > 1:
        raise TypeError("`filenames` must be a `tf.Tensor` of rank 0 or 1, got rank "
                        f"{t.shape.ndims}.")
    return array_ops.reshape(t, [-1]) if t.shape.ndims != 1 else t


def _compression(compression_type) -> object:
    return convert_to_tensor(compression_type or "", dtype=dtypes.string,
                             name="compression_type")


def _int64(v, name):
    return convert_to_tensor(v, dtype=dtypes.int64, name=name)


def _maybe_interleave(filenames, one_file, num_parallel_reads):
    """Files one after another, or `num_parallel_reads` of them interleaved."""
    if num_parallel_reads is None:
        return one_file(filenames)
    return DatasetV1.from_tensor_slices(filenames).interleave(
        one_file, cycle_length=num_parallel_reads, block_length=1)


class TFRecordDataset(DatasetV1):
    """The records of TFRecord files (`compression_type` "", "GZIP" or "ZLIB")."""

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None):
        def one(names):
            return DatasetV1(apply_op(
                "TFRecordDataset", filenames=names,
                compression_type=_compression(compression_type),
                buffer_size=_int64(_DEFAULT_BUFFER if buffer_size is None else buffer_size,
                                   "buffer_size")), _SCALAR_STRING)
        ds = _maybe_interleave(_filenames(filenames), one, num_parallel_reads)
        super().__init__(ds._variant_tensor, ds._structure)


class TextLineDataset(DatasetV1):
    """The lines of text files, without their line endings."""

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None):
        def one(names):
            return DatasetV1(apply_op(
                "TextLineDataset", filenames=names,
                compression_type=_compression(compression_type),
                buffer_size=_int64(_DEFAULT_BUFFER if buffer_size is None else buffer_size,
                                   "buffer_size")), _SCALAR_STRING)
        ds = _maybe_interleave(_filenames(filenames), one, num_parallel_reads)
        super().__init__(ds._variant_tensor, ds._structure)


class FixedLengthRecordDataset(DatasetV1):
    """Records of `record_bytes` bytes between `header_bytes` and `footer_bytes`."""

    def __init__(self, filenames, record_bytes, header_bytes=None, footer_bytes=None,
                 buffer_size=None, compression_type=None, num_parallel_reads=None):
        def one(names):
            return DatasetV1(apply_op(
                "FixedLengthRecordDatasetV2", filenames=names,
                header_bytes=_int64(header_bytes or 0, "header_bytes"),
                record_bytes=_int64(record_bytes, "record_bytes"),
                footer_bytes=_int64(footer_bytes or 0, "footer_bytes"),
                buffer_size=_int64(buffer_size or _DEFAULT_BUFFER, "buffer_size"),
                compression_type=_compression(compression_type)), _SCALAR_STRING)
        ds = _maybe_interleave(_filenames(filenames), one, num_parallel_reads)
        super().__init__(ds._variant_tensor, ds._structure)
