"""`tf.contrib`: the pieces of TF1's contrib that ordinary programs use: `tf.contrib.layers`
(layer functions, regularizers, `flatten`, initializers; tensorflux/contrib/layers.py),
`tf.contrib.framework` (arg_scope, variable helpers), `tf.contrib.slim` (both, as TF-Slim's
layer API) and `tf.contrib.rnn` (the core RNN cells and `static_rnn`)."""

from tensorflux.contrib import framework, layers, legacy_seq2seq, rnn, seq2seq, slim  # noqa: F401
