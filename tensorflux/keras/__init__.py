"""`tf.keras` for TF1 graph-mode programs (Keras 2 semantics, as tf_keras under
`disable_v2_behavior`): layers on graph tensors with TF1 variable names, functional,
Sequential and subclassed models with compile/fit/evaluate/predict run in the Keras
session (`backend.get_session`). What exists and what does not: docs/keras.md."""

from tensorflux.keras import (  # noqa: F401
    activations,
    backend,
    callbacks,
    constraints,
    datasets,
    estimator,
    initializers,
    layers,
    losses,
    metrics,
    models,
    optimizers,
    preprocessing,
    regularizers,
    utils,
)
from tensorflux.keras.engine.input_layer import Input  # noqa: F401
from tensorflux.keras.engine.sequential import Sequential  # noqa: F401
from tensorflux.keras.engine.training import Model  # noqa: F401

__version__ = "2.21.0-tf"
