"""`tf.contrib`: only the pieces of TF1's contrib that ordinary layer programs use,
`tf.contrib.layers`'s weight regularizers (tensorflux/layers/regularizers.py)."""

from tensorflux.contrib import layers  # noqa: F401
