"""Dataset.ragged_batch (`tf.data.experimental.dense_to_ragged_batch`): batches whose
components of different shapes become RaggedTensors.

Before batching, each Tensor component of known rank whose shape is not fully known turns
into a ragged component: a RaggedTensorSpec of the same shape whose ragged rank is its last
unknown dimension (0 for a component like [None, 3]: its rows keep their uniform shape).
Its values are encoded as ragged variants (RaggedTensor.from_tensor, or the dense tensor
itself for ragged rank 0), so batching stacks them and the batch decodes as one
RaggedTensor with a ragged dimension more. Other components (fully known shapes, unknown
ranks, SparseTensors, RaggedTensors) are batched as they are.
"""

from __future__ import annotations

from tensorflux.data import structure as st
from tensorflux.data.dataset_ops import DatasetV1, _encode, _Traced
from tensorflux.framework import dtypes
from tensorflux.framework.tensor_spec import TensorSpec
from tensorflux.ragged.ragged_tensor import RaggedTensor
from tensorflux.ragged.ragged_tensor_spec import RaggedTensorSpec


def _ragged_spec(spec, row_splits_dtype):
    """The spec a component is batched as (`spec` itself unless it becomes ragged)."""
    if not isinstance(spec, TensorSpec) or spec.shape.ndims is None or \
            spec.shape.is_fully_defined():
        return spec
    rank = max(i for i, d in enumerate(spec.shape.as_list()) if d is None)
    return RaggedTensorSpec(spec.shape, spec.dtype, rank, row_splits_dtype)


def _to_ragged_variant(value, spec):
    if spec.ragged_rank == 0:
        return _encode(value, spec=spec)
    rt = RaggedTensor.from_tensor(value, ragged_rank=spec.ragged_rank,
                                  row_splits_dtype=spec.row_splits_dtype)
    return rt._to_variant(batched_input=False)


def dense_to_ragged(dataset: DatasetV1, row_splits_dtype=dtypes.int64) -> DatasetV1:
    """`dataset` with its varying-shape Tensor components as ragged components."""
    row_splits_dtype = dtypes.as_dtype(row_splits_dtype)
    mine = dataset._structure
    ragged = st.map_structure(lambda s: _ragged_spec(s, row_splits_dtype), mine)
    pairs = list(zip(st.flatten(mine), st.flatten(ragged), strict=True))
    if all(a is b for a, b in pairs):
        return dataset

    def encode(*x):
        flat = st.flatten(x[0] if len(x) == 1 else x)
        return st.pack(mine, [v if a is b else _to_ragged_variant(v, b)
                              for v, (a, b) in zip(flat, pairs, strict=True)])

    traced = _Traced(encode, mine, "dense_to_ragged")
    return dataset._derive("MapDataset", ragged, other_arguments=traced.captured,
                           f=traced.ref)


def ragged_batch(dataset: DatasetV1, batch_size, drop_remainder=False,
                 row_splits_dtype=dtypes.int64) -> DatasetV1:
    """Batches of `batch_size` elements, varying-shape components as RaggedTensors."""
    return dense_to_ragged(dataset, row_splits_dtype).batch(batch_size, drop_remainder)
