"""`Dataset.snapshot` and `tf.data.experimental.snapshot`: a dataset's elements written to
files by its first complete pass and read from them by later passes and later processes
(the SnapshotDatasetV2 op; layout and files: kernels/dataset_snapshot.py).

As in TensorFlow, without a `shard_func` the elements are enumerated and shard i holds the
elements whose index is i modulo the number of CPUs (`os.cpu_count()` where the graph is
built); without a `reader_func` the shards are read by an interleave over them with that
cycle length, which gives the elements back in their order; the index is dropped after
the snapshot.
"""

from __future__ import annotations

import os

from tensorflux.data import structure as st
from tensorflux.data.dataset_ops import DatasetSpec, DatasetV1, _Traced
from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor

__all__ = ["snapshot"]


def snapshot(path, compression="AUTO", reader_func=None, shard_func=None):
    """A transformation for `Dataset.apply`: `dataset.snapshot(path, ...)`
    (`tf.data.experimental.snapshot`).

    Args:
      path: the directory of the snapshot (its fingerprint's subdirectory is created).
      compression: "AUTO" (Snappy), "GZIP", "SNAPPY" or None.
      reader_func: datasets -> dataset: how the shards' datasets are read.
      shard_func: element -> int64 scalar >= 0: the shard an element is written to.
    """
    def apply(dataset):
        return snapshot_dataset(dataset, path, compression, reader_func, shard_func)
    return apply


def snapshot_dataset(dataset: DatasetV1, path, compression="AUTO", reader_func=None,
                     shard_func=None) -> DatasetV1:
    """`dataset.snapshot(...)`; see `snapshot`.

    Raises:
      ValueError: `compression` is not one of the above, or `shard_func` does not return
        an int64 scalar.
      TypeError: `reader_func` does not return a dataset.
    """
    compression = "" if compression is None else str(compression).upper()
    if compression not in ("", "AUTO", "GZIP", "SNAPPY", "NONE"):
        raise ValueError(f"Unsupported compression {compression!r}: expected AUTO, GZIP, "
                         "SNAPPY or None.")
    compression = "" if compression == "NONE" else compression
    cpus = os.cpu_count() or 1
    enumerated = shard_func is None
    ds = dataset.enumerate() if enumerated else dataset
    if enumerated:
        def shard_func(index, _):
            return index % cpus
    if reader_func is None:
        def reader_func(datasets):
            return datasets.interleave(lambda x: x, cycle_length=cpus)
    shard = _Traced(shard_func, ds._structure, "snapshot_shard_func")
    r = shard.result
    if not isinstance(r, Tensor) or r.dtype.base_dtype != dtypes.int64 or \
            not r.shape.is_compatible_with(tensor_shape.TensorShape([])):
        raise ValueError(f"`shard_func` must return a scalar int64 tensor, got {r}.")
    reader = _Traced(reader_func, DatasetSpec(DatasetSpec(ds._structure)),
                     "snapshot_reader_func")
    if not isinstance(reader.result, DatasetV1):
        raise TypeError(f"`reader_func` must return a `Dataset` object. Got "
                        f"{type(reader.result)}.")
    v = apply_op("SnapshotDatasetV2", input_dataset=ds._variant_tensor,
                 path=convert_to_tensor(path, dtype=dtypes.string, name="path"),
                 reader_func_other_args=reader.captured,
                 shard_func_other_args=shard.captured, compression=compression,
                 reader_func=reader.ref, shard_func=shard.ref, **st.flat_attrs(ds._structure))
    out = DatasetV1(v, ds._structure)
    return out.map(lambda _, element: element) if enumerated else out
