"""`tensorflow.contrib.tensor_forest.python.ops.data_ops`: features and labels as the
forest's ops take them (dense float32 features; float32 labels)."""

from __future__ import annotations

from tensorflux.framework import dtypes
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, joining_ops, math_ops

__all__ = ["ParseDataTensorOrDict", "ParseLabelTensorOrDict", "TensorForestDataSpec"]


class TensorForestDataSpec:
    """The layout of the forest's input (here: one dense float block of `size` columns);
    `SerializeToString()` gives the ops' `input_spec` attr."""

    def __init__(self, size: int | None = None):
        self.dense_features_size = size or 0

    def SerializeToString(self) -> bytes:  # noqa: N802 - the proto method's name
        return b""


def _dense(t) -> Tensor:
    t = convert_to_tensor(t)
    if t.dtype.base_dtype != dtypes.float32:
        t = math_ops.cast(t, dtypes.float32)
    if t.shape.ndims == 1:
        t = array_ops.expand_dims(t, 1)
    return t


def _is_sparse(t) -> bool:
    return hasattr(t, "indices") and hasattr(t, "dense_shape")


def ParseDataTensorOrDict(data):  # noqa: N802 - TF1's name
    """(dense features [batch, n] float32, sparse features (None here), data spec).

    A dict of feature tensors is concatenated in sorted key order.

    Raises:
      NotImplementedError: sparse features (not supported here).
    """
    if isinstance(data, dict):
        keys = sorted(data)
        if any(_is_sparse(data[k]) for k in keys):
            raise NotImplementedError("tensor_forest here takes dense features only")
        parts = [_dense(data[k]) for k in keys]
        dense = parts[0] if len(parts) == 1 else joining_ops.concat(parts, 1)
    else:
        if _is_sparse(data):
            raise NotImplementedError("tensor_forest here takes dense features only")
        dense = _dense(data)
    size = dense.shape[1] if dense.shape.ndims == 2 else None
    return dense, None, TensorForestDataSpec(size)


def ParseLabelTensorOrDict(labels):  # noqa: N802 - TF1's name
    """The labels as float32 (a dict's tensors concatenated in sorted key order)."""
    if isinstance(labels, dict):
        parts = [convert_to_tensor(labels[k]) for k in sorted(labels)]
        labels = parts[0] if len(parts) == 1 else joining_ops.concat(parts, 1)
    return math_ops.cast(convert_to_tensor(labels), dtypes.float32)
