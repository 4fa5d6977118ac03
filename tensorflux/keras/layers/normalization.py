"""Keras BatchNormalization: tf.layers' batch norm whose `training` defaults to the
learning phase; its moving-average updates are the layer's `updates` (run by `fit`)."""

from __future__ import annotations

from tensorflux.keras.layers._wrap import keras_class
from tensorflux.layers import normalization as tf_norm

__all__ = ["BatchNormalization"]

BatchNormalization = keras_class(
    tf_norm.BatchNormalization, "BatchNormalization",
    ["axis", "momentum", "epsilon", "center", "scale", "beta_initializer",
     "gamma_initializer", "moving_mean_initializer", "moving_variance_initializer",
     "beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint"],
    {"beta_initializer": "zeros", "gamma_initializer": "ones",
     "moving_mean_initializer": "zeros", "moving_variance_initializer": "ones"},
    supports_masking=True)
