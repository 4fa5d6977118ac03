"""Activation layers with parameters: LeakyReLU, PReLU, ELU, ReLU, Softmax,
ThresholdedReLU."""

from __future__ import annotations

from tensorflux.framework import tensor_shape
from tensorflux.keras import backend as K
from tensorflux.keras.engine.base_layer import Layer, resolve_identifiers
from tensorflux.ops import comparison_ops, math_ops, nn_ops

__all__ = ["LeakyReLU", "PReLU", "ELU", "ReLU", "Softmax", "ThresholdedReLU"]


class LeakyReLU(Layer):
    """x for x >= 0, alpha * x below (Keras's default alpha 0.3)."""

    supports_masking = True

    def __init__(self, alpha=0.3, **kwargs):
        super().__init__(**kwargs)
        self.alpha = float(alpha)

    def call(self, inputs):
        return nn_ops.leaky_relu(inputs, alpha=self.alpha)


class PReLU(Layer):
    """LeakyReLU with a learned slope "alpha" per input entry (shared along
    `shared_axes`, 1-based)."""

    supports_masking = True

    def __init__(self, alpha_initializer="zeros", alpha_regularizer=None,
                 alpha_constraint=None, shared_axes=None, **kwargs):
        super().__init__(**kwargs)
        self._ids = resolve_identifiers({"alpha_initializer": alpha_initializer,
                                         "alpha_regularizer": alpha_regularizer,
                                         "alpha_constraint": alpha_constraint})
        if shared_axes is not None and not isinstance(shared_axes, (list, tuple)):
            shared_axes = [shared_axes]
        self.shared_axes = list(shared_axes) if shared_axes is not None else None

    def build(self, input_shape) -> None:
        shape = list(tensor_shape.TensorShape(input_shape).as_list()[1:])
        for axis in self.shared_axes or []:
            shape[axis - 1] = 1
        self.alpha = self.add_weight("alpha", shape,
                                     initializer=self._ids["alpha_initializer"],
                                     regularizer=self._ids["alpha_regularizer"],
                                     constraint=self._ids["alpha_constraint"])
        self.built = True

    def call(self, inputs):
        return nn_ops.relu(inputs) - self.alpha * nn_ops.relu(-inputs)


class ELU(Layer):
    supports_masking = True

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        self.alpha = float(alpha)

    def call(self, inputs):
        return K.elu(inputs, self.alpha)


class ReLU(Layer):
    """min(max(x, threshold), max_value), with slope `negative_slope` below threshold.

    Raises:
      ValueError: a negative max_value or negative_slope."""

    supports_masking = True

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, **kwargs):
        super().__init__(**kwargs)
        if max_value is not None and max_value < 0.0:
            raise ValueError("max_value of a ReLU layer cannot be a negative value. Received: "
                             f"{max_value}")
        if negative_slope < 0.0:
            raise ValueError("negative_slope of a ReLU layer cannot be a negative value. "
                             f"Received: {negative_slope}")
        self.max_value, self.negative_slope, self.threshold = max_value, negative_slope, \
            threshold

    def call(self, inputs):
        return K.relu(inputs, alpha=self.negative_slope, max_value=self.max_value,
                      threshold=self.threshold)


class Softmax(Layer):
    """Softmax over `axis`; a mask adds -1e9 to the masked entries first (Keras)."""

    supports_masking = True

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def call(self, inputs, mask=None):
        if mask is not None:
            inputs = inputs + (1.0 - math_ops.cast(mask, inputs.dtype)) * -1e9
        return nn_ops.softmax(inputs, axis=self.axis)


class ThresholdedReLU(Layer):
    """x where x > theta, else 0."""

    supports_masking = True

    def __init__(self, theta=1.0, **kwargs):
        super().__init__(**kwargs)
        self.theta = float(theta)

    def call(self, inputs):
        return inputs * math_ops.cast(comparison_ops.greater(inputs, self.theta), inputs.dtype)
