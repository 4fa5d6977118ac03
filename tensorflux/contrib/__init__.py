"""`tf.contrib`: only the pieces of TF1's contrib that ordinary example programs use:
`tf.contrib.layers` (regularizers, `flatten`, initializers; tensorflux/contrib/layers.py) and
`tf.contrib.rnn` (the core RNN cells and `static_rnn`)."""

from tensorflux.contrib import layers, rnn  # noqa: F401
