"""Keras's regularization-noise layers: GaussianNoise, GaussianDropout, AlphaDropout,
SpatialDropout1D/2D/3D. Each adds its noise in the training phase only (the `training`
argument, else the learning phase) and is the identity otherwise; masks pass through."""

from __future__ import annotations

import math

from tensorflux.keras import backend as K
from tensorflux.keras.engine.base_layer import InputSpec, Layer
from tensorflux.keras.layers.core import Dropout
from tensorflux.ops import array_ops, comparison_ops, math_ops

__all__ = ["GaussianNoise", "GaussianDropout", "AlphaDropout", "SpatialDropout1D",
           "SpatialDropout2D", "SpatialDropout3D"]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


class GaussianNoise(Layer):
    """Adds zero-mean Gaussian noise of standard deviation `stddev` while training."""

    supports_masking = True

    def __init__(self, stddev, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.stddev, self.seed = float(stddev), seed

    def call(self, inputs, training=None):
        def noised():
            return inputs + K.random_normal(array_ops.shape(inputs), mean=0.0,
                                            stddev=self.stddev, dtype=inputs.dtype,
                                            seed=self.seed)

        return K.in_train_phase(noised, inputs, training=training)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self) -> dict:
        return {**super().get_config(), "stddev": self.stddev, "seed": self.seed}


class GaussianDropout(Layer):
    """Multiplies by Gaussian noise of mean 1 and variance rate / (1 - rate) while
    training (for 0 < rate < 1; else the identity)."""

    supports_masking = True

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate, self.seed = float(rate), seed

    def call(self, inputs, training=None):
        if not 0 < self.rate < 1:
            return inputs

        def noised():
            stddev = math.sqrt(self.rate / (1.0 - self.rate))
            return inputs * K.random_normal(array_ops.shape(inputs), mean=1.0, stddev=stddev,
                                            dtype=inputs.dtype, seed=self.seed)

        return K.in_train_phase(noised, inputs, training=training)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self) -> dict:
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}


class AlphaDropout(Layer):
    """Dropout for SELU networks: dropped entries become SELU's negative saturation
    value, then an affine map keeps the mean and variance (Keras's formula)."""

    supports_masking = True

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate, self.noise_shape, self.seed = float(rate), noise_shape, seed

    def call(self, inputs, training=None):
        if not 0 < self.rate < 1:
            return inputs
        rate = self.rate

        def dropped():
            shape = self.noise_shape if self.noise_shape is not None else \
                array_ops.shape(inputs)
            alpha_p = -_SELU_ALPHA * _SELU_SCALE
            kept = math_ops.cast(comparison_ops.greater_equal(
                K.random_uniform(shape, seed=self.seed), rate), inputs.dtype)
            a = ((1 - rate) * (1 + rate * alpha_p ** 2)) ** -0.5
            b = -a * alpha_p * rate
            return a * (inputs * kept + alpha_p * (1 - kept)) + b

        return K.in_train_phase(dropped, inputs, training=training)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self) -> dict:
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}


def _spatial(name, rank, doc):
    def __init__(self, rate, data_format=None, **kwargs):
        Dropout.__init__(self, rate, **kwargs)
        self.data_format = data_format or ("channels_last" if rank == 1
                                           else K.image_data_format())
        if self.data_format not in ("channels_last", "channels_first"):
            raise ValueError("`data_format` must be 'channels_last' or 'channels_first'. "
                             f"Received: data_format={data_format}")
        self.input_spec = InputSpec(ndim=rank + 2)

    def call(self, inputs, training=None):
        shape = array_ops.shape(inputs)
        ones = [1] * rank
        if self.data_format == "channels_first":
            self.noise_shape = [shape[0], shape[1]] + ones
        else:
            self.noise_shape = [shape[0]] + ones + [shape[rank + 1]]
        return Dropout.call(self, inputs, training=training)

    return type(name, (Dropout,), {"__init__": __init__, "call": call, "__doc__": doc,
                                   "__module__": __name__})


SpatialDropout1D = _spatial("SpatialDropout1D", 1,
                            "Drops whole channels of [batch, steps, channels] inputs.")
SpatialDropout2D = _spatial("SpatialDropout2D", 2, "Drops whole feature maps of 4-D inputs.")
SpatialDropout3D = _spatial("SpatialDropout3D", 3, "Drops whole feature maps of 5-D inputs.")
