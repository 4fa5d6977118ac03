"""`tf.manip`: the TF1 array-manipulation aliases."""

from tensorflux.ops.array_ext_ops import batch_to_space_nd, space_to_batch_nd  # noqa: F401
from tensorflux.ops.array_ops import reshape  # noqa: F401
from tensorflux.ops.gather_ops import gather_nd, scatter_nd  # noqa: F401
from tensorflux.ops.joining_ops import (
    reverse,  # noqa: F401
    tile,  # noqa: F401
)
from tensorflux.ops.math_ext_ops import roll  # noqa: F401
