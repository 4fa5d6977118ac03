"""`tf.contrib`: the pieces of TF1's contrib that ordinary programs use: `tf.contrib.layers`
(layer functions, regularizers, `flatten`, initializers; tensorflux/contrib/layers.py),
`tf.contrib.framework` (arg_scope, variable helpers), `tf.contrib.slim` (both, as TF-Slim's
layer API), `tf.contrib.rnn` (the core RNN cells and `static_rnn`), seq2seq and
legacy_seq2seq, `tf.contrib.data` (tf.data.experimental under its TF1 name),
`tf.contrib.tpu`'s TPUEstimator for TPU programs run with `use_tpu=False`, and
`tf.contrib.training.HParams`, `tf.contrib.crf` (linear-chain CRFs), and
`tf.contrib.tensorboard.plugins.projector` (the embedding projector's config), and
`tf.contrib.distributions` (tf.distributions under its contrib name), `tf.contrib.gan`
(TF-GAN: GAN models, losses, train ops and hooks, features, eval metrics, GANEstimator).

Also: `tf.contrib.opt` (LazyAdam, AdamW/MomentumW, Nadam, AdaMax, AddSign/PowerSign,
MovingAverageOptimizer, VariableClippingOptimizer, ScipyOptimizerInterface),
`tf.contrib.image` (projective transforms: transform/rotate/translate, dense_image_warp),
`tf.contrib.learn.datasets` (MNIST's `read_data_sets` from local files; also
`tensorflow.examples.tutorials.mnist.input_data`), `tf.contrib.cudnn_rnn` (the
cuDNN-compatible CPU cells), `tf.contrib.lookup` (tf.lookup plus HashTable,
MutableDenseHashTable, IdTableWithHashBuckets), `tf.contrib.nn` (alpha_dropout, ...), and
the aliases `tf.contrib.signal` (tf.signal), `tf.contrib.keras` (tf.keras),
`tf.contrib.stateless` (the stateless random ops); TF-Slim's library under `tf.contrib.slim`
(learning, evaluation, data providers and TFExample decoders) with `tf.contrib.losses` and
`tf.contrib.metrics` (contrib's streaming metrics), `tf.contrib.util` (constant_value,
make_tensor_proto, make_ndarray), `tf.contrib.factorization` (KMeans, WALS, GMM),
`tf.contrib.summary` (resource-based summary writers), `tf.contrib.staging.StagingArea`,
`tf.contrib.memory_stats` (BytesInUse, BytesLimit, MaxBytesInUse), `tf.contrib.sparsemax`,
`tf.contrib.tensor_forest` (random forests grown online), `tf.contrib.resampler`
(bilinear sampling at (x, y) points), `tf.contrib.graph_editor` (rerouting, copying and
replacing subgraphs in place), `tf.contrib.quantize` (the fake-quantization rewrites for
quantization-aware training and evaluation), `tf.contrib.feature_column`
(sequence columns and `sequence_input_layer`), `tf.contrib.predictor` and
`tf.contrib.estimator`'s heads, estimators of a head, helpers (forward_features, ...) and
boosted-trees trainers of in-memory data. What exists:
docs/tf1_programs.md."""

from tensorflux.contrib import (  # noqa: F401
    cluster_resolver,
    crf,
    cudnn_rnn,
    data,
    distributions,
    eager,
    estimator,
    factorization,
    feature_column,
    framework,
    gan,
    graph_editor,
    image,
    keras,
    layers,
    learn,
    legacy_seq2seq,
    lookup,
    losses,
    memory_stats,
    metrics,
    nn,
    opt,
    predictor,
    quantize,
    resampler,
    rnn,
    seq2seq,
    signal,
    slim,
    sparsemax,
    staging,
    stateless,
    summary,
    tensor_forest,
    tensorboard,
    tpu,
    training,
    util,
)
