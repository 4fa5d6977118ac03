"""`tensorflow.contrib.tensor_forest.python`: the forest's graph builders and ops."""

from tensorflux.contrib.tensor_forest.python import ops, tensor_forest  # noqa: F401
