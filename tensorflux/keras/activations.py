"""`tf.keras.activations`: functions of a tensor, and `get` by name."""

from __future__ import annotations

from tensorflux.keras import backend as K
from tensorflux.ops import nn_ops, unary_ops

__all__ = ["relu", "sigmoid", "tanh", "softmax", "elu", "selu", "softplus", "softsign",
           "linear", "exponential", "hard_sigmoid", "swish", "get", "serialize",
           "deserialize"]


def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along `axis`.

    Raises:
      ValueError: a rank-1 input (Keras cannot apply softmax to a 1-D tensor)."""
    if K.ndim(x) == 1:
        raise ValueError(f"Cannot apply softmax to a tensor that is 1D. Received input: {x}")
    return nn_ops.softmax(x, axis=axis)


def relu(x, alpha=0.0, max_value=None, threshold=0.0):
    return K.relu(x, alpha=alpha, max_value=max_value, threshold=threshold)


def elu(x, alpha=1.0):
    return K.elu(x, alpha)


def selu(x):
    return nn_ops.selu(x)


def softplus(x):
    return nn_ops.softplus(x)


def softsign(x):
    return K.softsign(x)


def sigmoid(x):
    return unary_ops.sigmoid(x)


def tanh(x):
    return unary_ops.tanh(x)


def hard_sigmoid(x):
    return K.hard_sigmoid(x)


def exponential(x):
    return unary_ops.exp(x)


def linear(x):
    return x


def swish(x):
    return x * unary_ops.sigmoid(x)


_BY_NAME = {f.__name__: f for f in (relu, sigmoid, tanh, softmax, elu, selu, softplus,
                                    softsign, linear, exponential, hard_sigmoid, swish)}


def get(identifier):
    """An activation function from a name or a callable (None: `linear`).

    Raises:
      ValueError: an unknown name.
      TypeError: neither a name nor a callable."""
    if identifier is None:
        return linear
    if isinstance(identifier, str):
        if identifier not in _BY_NAME:
            raise ValueError(f"Unknown activation function: '{identifier}'. Please ensure you "
                             "are using a `keras.utils.custom_object_scope` and that this "
                             "object is included in the scope.")
        return _BY_NAME[identifier]
    if isinstance(identifier, dict):
        return deserialize(identifier["config"] if "config" in identifier else identifier)
    if callable(identifier):
        return identifier
    raise TypeError(f"Could not interpret activation function identifier: {identifier}")


def serialize(activation) -> str:
    return getattr(activation, "__name__", type(activation).__name__)


def deserialize(name, custom_objects=None):
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    return get(name)
