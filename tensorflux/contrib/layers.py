"""`tf.contrib.layers`: the weight regularizers (l1, l2, l1_l2, sum, apply_regularization),
`flatten` and the contrib initializers (xavier, variance scaling). The rest of TF1's
contrib.layers is not provided; `tf.layers` has the layers."""

from tensorflux.contrib.layers_extra import *  # noqa: F401,F403
from tensorflux.layers.regularizers import *  # noqa: F401,F403
