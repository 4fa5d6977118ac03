"""`tf.sparse`: SparseTensor and the sparse ops under their TF1 `tf.sparse.*` names
(the same functions are also `tf.sparse_*`; see tensorflux/ops/sparse_ops.py)."""

from tensorflux.framework.sparse_tensor import SparseTensor, SparseTensorValue  # noqa: F401
from tensorflux.ops.sparse_ops import (
    from_dense,  # noqa: F401
    sparse_to_dense,  # noqa: F401
)
from tensorflux.ops.sparse_ops import sparse_placeholder as placeholder  # noqa: F401
from tensorflux.ops.sparse_ops import sparse_reorder as reorder  # noqa: F401
from tensorflux.ops.sparse_ops import sparse_segment_mean as segment_mean  # noqa: F401
from tensorflux.ops.sparse_ops import sparse_segment_sqrt_n as segment_sqrt_n  # noqa: F401
from tensorflux.ops.sparse_ops import sparse_segment_sum as segment_sum  # noqa: F401
from tensorflux.ops.sparse_ops import sparse_tensor_to_dense as to_dense  # noqa: F401
