"""`tf.contrib.tensor_forest`: TF 1.x's extremely randomized forests grown online (the
1.4-1.15 "V4" design): `python.tensor_forest` (ForestHParams, RandomForestGraphs),
`python.ops` (model_ops, stats_ops, data_ops over tensorflux/ops/tensor_forest_ops.py) and
`client.random_forest` (TensorForestEstimator, a tf.estimator.Estimator).
TF1's module paths import as they are (`tensorflow.contrib.tensor_forest.python.tensor_forest` ->
`tensorflux.contrib.tensor_forest.python.tensor_forest`)."""

from tensorflux.contrib.tensor_forest import client, python  # noqa: F401
from tensorflux.contrib.tensor_forest.python import tensor_forest  # noqa: F401
