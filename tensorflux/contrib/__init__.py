"""`tf.contrib`: the pieces of TF1's contrib that ordinary programs use: `tf.contrib.layers`
(layer functions, regularizers, `flatten`, initializers; tensorflux/contrib/layers.py),
`tf.contrib.framework` (arg_scope, variable helpers), `tf.contrib.slim` (both, as TF-Slim's
layer API), `tf.contrib.rnn` (the core RNN cells and `static_rnn`), seq2seq and
legacy_seq2seq, `tf.contrib.data` (tf.data.experimental under its TF1 name),
`tf.contrib.tpu`'s TPUEstimator for TPU programs run with `use_tpu=False`, and
`tf.contrib.training.HParams`, `tf.contrib.crf` (linear-chain CRFs), and
`tf.contrib.tensorboard.plugins.projector` (the embedding projector's config), and
`tf.contrib.distributions` (tf.distributions under its contrib name), and `tf.contrib.util`
(constant_value, make_tensor_proto, make_ndarray)."""

from tensorflux.contrib import (  # noqa: F401
    cluster_resolver,
    crf,
    data,
    distributions,
    framework,
    layers,
    learn,
    legacy_seq2seq,
    rnn,
    seq2seq,
    slim,
    tensorboard,
    tpu,
    training,
    util,
)
