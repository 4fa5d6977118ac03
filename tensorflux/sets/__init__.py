"""`tf.sets`: set operations over the last dimension (tensorflux/ops/set_ops.py)."""

from tensorflux.ops.set_ops import (  # noqa: F401
    set_difference,
    set_intersection,
    set_size,
    set_union,
)
from tensorflux.ops.set_ops import set_difference as difference  # noqa: F401
from tensorflux.ops.set_ops import set_intersection as intersection  # noqa: F401
from tensorflux.ops.set_ops import set_size as size  # noqa: F401
from tensorflux.ops.set_ops import set_union as union  # noqa: F401
