"""`tf.ragged` and `tf.RaggedTensor`: ragged tensors as composites of plain tensors
(tensorflux/ragged/ragged_tensor.py) and the functions on them (ragged_ops.py)."""

from tensorflux.ragged import (
    ragged_getitem,  # noqa: F401 - RaggedTensor.__getitem__
    ragged_session,  # noqa: F401,E402 - Session.run fetch/feed
)
from tensorflux.ragged.ragged_ops import (  # noqa: F401
    boolean_mask,
    constant,
    constant_value,
    cross,
    cross_hashed,
    map_flat_values,
    placeholder,
    range,
    segment_ids_to_row_splits,
    stack,
    stack_dynamic_partitions,
)
from tensorflux.ragged.ragged_tensor import RaggedTensor, row_splits_to_segment_ids  # noqa: F401
from tensorflux.ragged.ragged_tensor_spec import RaggedTensorSpec  # noqa: F401 - registers it
from tensorflux.ragged.ragged_tensor_value import RaggedTensorValue  # noqa: F401
