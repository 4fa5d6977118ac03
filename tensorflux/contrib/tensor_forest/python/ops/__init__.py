"""`tensorflow.contrib.tensor_forest.python.ops`: the forest's resources and ops."""

from tensorflux.contrib.tensor_forest.python.ops import (  # noqa: F401
    data_ops,
    model_ops,
    stats_ops,
)
