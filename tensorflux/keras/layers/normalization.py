"""Keras BatchNormalization: tf.layers' batch norm whose `training` defaults to the
learning phase; its moving-average updates are the layer's `updates` (run by `fit`);
renorm, virtual_batch_size and adjustment as tf.layers' (fused=True with them raises).
LayerNormalization: each sample normalized over `axis` (Keras's epsilon 1e-3), then
scaled by "gamma" and shifted by "beta"."""

from __future__ import annotations

from tensorflux.framework import tensor_shape
from tensorflux.keras.engine.base_layer import Layer, resolve_identifiers
from tensorflux.keras.layers._wrap import keras_class
from tensorflux.layers import normalization as tf_norm
from tensorflux.nn import nn_impl
from tensorflux.ops import array_ops

__all__ = ["BatchNormalization", "LayerNormalization"]

BatchNormalization = keras_class(
    tf_norm.BatchNormalization, "BatchNormalization",
    ["axis", "momentum", "epsilon", "center", "scale", "beta_initializer",
     "gamma_initializer", "moving_mean_initializer", "moving_variance_initializer",
     "beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint"],
    {"beta_initializer": "zeros", "gamma_initializer": "ones",
     "moving_mean_initializer": "zeros", "moving_variance_initializer": "ones"},
    supports_masking=True)
# TF2's Keras refuses fused=True with renorm, virtual_batch_size or an adjustment.
BatchNormalization._refuse_fused_options = True


class LayerNormalization(Layer):
    """Normalizes each sample over `axis` (an int or a list): (x - mean) /
    sqrt(variance + epsilon) * gamma + beta, gamma and beta shaped like the normalized
    axes.

    Raises:
      ValueError: an axis outside the input's rank (when built)."""

    supports_masking = True

    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.axis = list(axis) if isinstance(axis, (list, tuple)) else [axis]
        self.epsilon, self.center, self.scale = float(epsilon), center, scale
        self._ids = resolve_identifiers({
            "beta_initializer": beta_initializer, "gamma_initializer": gamma_initializer,
            "beta_regularizer": beta_regularizer, "gamma_regularizer": gamma_regularizer,
            "beta_constraint": beta_constraint, "gamma_constraint": gamma_constraint})

    def build(self, input_shape) -> None:
        dims = tensor_shape.TensorShape(input_shape).as_list()
        rank = len(dims)
        axes = []
        for a in self.axis:
            if not -rank <= a < rank:
                raise ValueError(f"Invalid value for `axis` argument. Expected 0 <= axis < "
                                 f"inputs.rank (with inputs.rank={rank}). Received: "
                                 f"layer.axis={self.axis}")
            axes.append(a % rank)
        self.axis = sorted(set(axes))
        shape = [dims[a] for a in self.axis]
        ids = self._ids
        self.gamma = self.add_weight(
            "gamma", shape, initializer=ids["gamma_initializer"],
            regularizer=ids["gamma_regularizer"], constraint=ids["gamma_constraint"],
            trainable=True) if self.scale else None
        self.beta = self.add_weight(
            "beta", shape, initializer=ids["beta_initializer"],
            regularizer=ids["beta_regularizer"], constraint=ids["beta_constraint"],
            trainable=True) if self.center else None
        self.built = True

    def call(self, inputs):
        rank = inputs.shape.ndims
        dims = inputs.shape.as_list()
        broadcast = [1] * rank
        for a in self.axis:
            broadcast[a] = dims[a]

        def shaped(v):
            return None if v is None else (
                array_ops.reshape(v, broadcast) if self.axis != [rank - 1] else v)

        mean, variance = nn_impl.moments(inputs, self.axis, keep_dims=True)
        return nn_impl.batch_normalization(inputs, mean, variance, shaped(self.beta),
                                           shaped(self.gamma), self.epsilon)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis, "epsilon": self.epsilon,
                "center": self.center, "scale": self.scale}
