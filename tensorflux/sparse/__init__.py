"""`tf.sparse`: SparseTensor and the sparse ops under their TF1 `tf.sparse.*` names
(the same functions are also `tf.sparse_*`; see tensorflux/ops/sparse_ops.py)."""

from tensorflux.framework.sparse_tensor import SparseTensor, SparseTensorValue  # noqa: F401
from tensorflux.ops.data_flow_ops import SparseConditionalAccumulator  # noqa: F401,E402

# Issue 18 (breadth): crosses, counts and merge (tensorflux/ops/sparse_ext_ops.py).
from tensorflux.ops.sparse_ext_ops import sparse_bincount as bincount  # noqa: F401,E402
from tensorflux.ops.sparse_ext_ops import sparse_cross as cross  # noqa: F401,E402
from tensorflux.ops.sparse_ext_ops import sparse_cross_hashed as cross_hashed  # noqa: F401,E402
from tensorflux.ops.sparse_ext_ops import sparse_merge as merge  # noqa: F401,E402
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

# Issue 18: compositions over a SparseTensor's parts (tensorflux/sparse/sparse_extra.py).
from tensorflux.sparse.sparse_extra import sparse_add as add  # noqa: F401,E402
from tensorflux.sparse.sparse_extra import sparse_concat as concat  # noqa: F401,E402
from tensorflux.sparse.sparse_extra import sparse_expand_dims as expand_dims  # noqa: F401,E402
from tensorflux.sparse.sparse_extra import sparse_eye as eye  # noqa: F401,E402
from tensorflux.sparse.sparse_extra import sparse_fill_empty_rows as fill_empty_rows  # noqa: F401,E402,E501
from tensorflux.sparse.sparse_extra import sparse_mask as mask  # noqa: F401,E402
from tensorflux.sparse.sparse_extra import sparse_maximum as maximum  # noqa: F401,E402
from tensorflux.sparse.sparse_extra import sparse_minimum as minimum  # noqa: F401,E402
from tensorflux.sparse.sparse_extra import sparse_reduce_max as reduce_max  # noqa: F401,E402
from tensorflux.sparse.sparse_extra import (  # noqa: F401,E402
    sparse_reduce_max_sparse as reduce_max_sparse,
)
from tensorflux.sparse.sparse_extra import sparse_reduce_sum as reduce_sum  # noqa: F401,E402
from tensorflux.sparse.sparse_extra import (  # noqa: F401,E402
    sparse_reduce_sum_sparse as reduce_sum_sparse,
)
from tensorflux.sparse.sparse_extra import sparse_reset_shape as reset_shape  # noqa: F401,E402
from tensorflux.sparse.sparse_extra import sparse_reshape as reshape  # noqa: F401,E402
from tensorflux.sparse.sparse_extra import sparse_retain as retain  # noqa: F401,E402
from tensorflux.sparse.sparse_extra import sparse_slice as slice  # noqa: F401,E402,A004
from tensorflux.sparse.sparse_extra import sparse_softmax as softmax  # noqa: F401,E402
from tensorflux.sparse.sparse_extra import sparse_split as split  # noqa: F401,E402
from tensorflux.sparse.sparse_extra import sparse_tensor_dense_matmul as matmul  # noqa: F401,E402
from tensorflux.sparse.sparse_extra import sparse_tensor_dense_matmul as sparse_dense_matmul  # noqa: F401,E402,E501
from tensorflux.sparse.sparse_extra import sparse_to_indicator as to_indicator  # noqa: F401,E402
from tensorflux.sparse.sparse_extra import sparse_transpose as transpose  # noqa: F401,E402
