"""`tf.metrics`: streaming metrics over local variables, each returning
`(value, update_op)` (TF1)."""

from tensorflux.metrics.metrics_impl import *  # noqa: F401,F403
from tensorflux.metrics.ranking_metrics import *  # noqa: F401,F403
from tensorflux.metrics.threshold_metrics import *  # noqa: F401,F403
