"""`tf.keras.losses`: per-sample loss functions `fn(y_true, y_pred)` (the mean over the
last axis where Keras takes it), loss classes, and `get` by name."""

from __future__ import annotations

from tensorflux.keras import backend as K
from tensorflux.ops import math_ops, nn_ops, reduction_ops, unary_ops

__all__ = ["mean_squared_error", "mean_absolute_error", "mean_absolute_percentage_error",
           "mean_squared_logarithmic_error", "squared_hinge", "hinge", "categorical_hinge",
           "logcosh", "categorical_crossentropy", "sparse_categorical_crossentropy",
           "binary_crossentropy", "kullback_leibler_divergence", "poisson",
           "cosine_similarity", "mse", "mae", "mape", "msle", "kld", "cosine_proximity",
           "Loss", "LossFunctionWrapper", "MeanSquaredError", "MeanAbsoluteError",
           "BinaryCrossentropy", "CategoricalCrossentropy", "SparseCategoricalCrossentropy",
           "Hinge", "KLDivergence", "get", "serialize", "deserialize", "Reduction"]


class Reduction:
    """How a Keras loss object (and a tf.estimator head) reduces its per-sample losses."""

    AUTO = "auto"
    NONE = "none"
    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"

    @classmethod
    def all(cls):
        return (cls.AUTO, cls.NONE, cls.SUM, cls.SUM_OVER_BATCH_SIZE)

    @classmethod
    def validate(cls, key):
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key}.")


def _cast(y_true, y_pred):
    return math_ops.cast(y_true, y_pred.dtype.base_dtype), y_pred


def mean_squared_error(y_true, y_pred):
    y_true, y_pred = _cast(y_true, y_pred)
    return K.mean(unary_ops.square(y_pred - y_true), axis=-1)


def mean_absolute_error(y_true, y_pred):
    y_true, y_pred = _cast(y_true, y_pred)
    return K.mean(unary_ops.abs(y_pred - y_true), axis=-1)


def mean_absolute_percentage_error(y_true, y_pred):
    y_true, y_pred = _cast(y_true, y_pred)
    diff = unary_ops.abs((y_true - y_pred) / math_ops.maximum(unary_ops.abs(y_true),
                                                              K.epsilon()))
    return 100.0 * K.mean(diff, axis=-1)


def mean_squared_logarithmic_error(y_true, y_pred):
    y_true, y_pred = _cast(y_true, y_pred)
    a = unary_ops.log(math_ops.maximum(y_pred, K.epsilon()) + 1.0)
    b = unary_ops.log(math_ops.maximum(y_true, K.epsilon()) + 1.0)
    return K.mean(unary_ops.square(a - b), axis=-1)


def squared_hinge(y_true, y_pred):
    y_true, y_pred = _cast(y_true, y_pred)
    return K.mean(unary_ops.square(math_ops.maximum(1.0 - y_true * y_pred, 0.0)), axis=-1)


def hinge(y_true, y_pred):
    y_true, y_pred = _cast(y_true, y_pred)
    return K.mean(math_ops.maximum(1.0 - y_true * y_pred, 0.0), axis=-1)


def categorical_hinge(y_true, y_pred):
    y_true, y_pred = _cast(y_true, y_pred)
    pos = reduction_ops.reduce_sum(y_true * y_pred, axis=-1)
    neg = reduction_ops.reduce_max((1.0 - y_true) * y_pred, axis=-1)
    return math_ops.maximum(neg - pos + 1.0, 0.0)


def logcosh(y_true, y_pred):
    y_true, y_pred = _cast(y_true, y_pred)
    x = y_pred - y_true
    return K.mean(x + nn_ops.softplus(-2.0 * x) - 0.6931471805599453, axis=-1)


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0):
    y_true, y_pred = _cast(y_true, y_pred)
    if label_smoothing:
        n = math_ops.cast(K.shape(y_true)[-1], y_pred.dtype)
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / n
    return K.categorical_crossentropy(y_true, y_pred, from_logits=from_logits)


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, axis=-1):
    return K.sparse_categorical_crossentropy(y_true, y_pred, from_logits=from_logits,
                                             axis=axis)


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0):
    y_true, y_pred = _cast(y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    return K.mean(K.binary_crossentropy(y_true, y_pred, from_logits=from_logits), axis=-1)


def kullback_leibler_divergence(y_true, y_pred):
    y_true, y_pred = _cast(y_true, y_pred)
    y_true = K.clip(y_true, K.epsilon(), 1.0)
    y_pred = K.clip(y_pred, K.epsilon(), 1.0)
    return reduction_ops.reduce_sum(y_true * unary_ops.log(y_true / y_pred), axis=-1)


def poisson(y_true, y_pred):
    y_true, y_pred = _cast(y_true, y_pred)
    return K.mean(y_pred - y_true * unary_ops.log(y_pred + K.epsilon()), axis=-1)


def cosine_similarity(y_true, y_pred, axis=-1):
    y_true, y_pred = _cast(y_true, y_pred)
    return -reduction_ops.reduce_sum(K.l2_normalize(y_true, axis) * K.l2_normalize(y_pred, axis),
                                     axis=axis)


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
kld = KLD = kullback_leibler_divergence
cosine_proximity = cosine = cosine_similarity


class Loss:
    """A loss object: `loss(y_true, y_pred, sample_weight=None)` is the mean (over the
    batch) of the per-sample losses `call(y_true, y_pred)`."""

    def __init__(self, reduction="auto", name=None):
        self.reduction, self.name = reduction, name

    def __call__(self, y_true, y_pred, sample_weight=None):
        values = self.call(y_true, y_pred)
        if sample_weight is not None:
            values = values * math_ops.cast(sample_weight, values.dtype)
        if self.reduction == "none":
            return values
        if self.reduction == "sum":
            return reduction_ops.reduce_sum(values)
        return reduction_ops.reduce_mean(values)

    def call(self, y_true, y_pred):
        raise NotImplementedError("Loss.call")

    def get_config(self) -> dict:
        return {"reduction": self.reduction, "name": self.name}


class LossFunctionWrapper(Loss):
    def __init__(self, fn, reduction="auto", name=None, **kwargs):
        super().__init__(reduction, name)
        self.fn, self._fn_kwargs = fn, kwargs

    def call(self, y_true, y_pred):
        return self.fn(y_true, y_pred, **self._fn_kwargs)


def wrapper_class(base, cls_name, fn, default_name, params=()):
    """A subclass of `base` (a wrapper of `fn` taking `fn`, `name` and `fn`'s keyword
    arguments) named `cls_name`; positional arguments bind to `params`."""

    def __init__(self, *args, name=default_name, **kwargs):
        kwargs.update(zip(params, args, strict=False))
        base.__init__(self, fn, name=name, **kwargs)

    return type(cls_name, (base,), {"__init__": __init__,
                                    "__doc__": f"The `{fn.__name__}` of y_true, y_pred."})


def _loss_class(cls_name, fn, default_name, params=()):
    return wrapper_class(LossFunctionWrapper, cls_name, fn, default_name, params)


MeanSquaredError = _loss_class("MeanSquaredError", mean_squared_error, "mean_squared_error")
MeanAbsoluteError = _loss_class("MeanAbsoluteError", mean_absolute_error,
                                "mean_absolute_error")
BinaryCrossentropy = _loss_class("BinaryCrossentropy", binary_crossentropy,
                                 "binary_crossentropy", ("from_logits", "label_smoothing"))
CategoricalCrossentropy = _loss_class("CategoricalCrossentropy", categorical_crossentropy,
                                      "categorical_crossentropy",
                                      ("from_logits", "label_smoothing"))
SparseCategoricalCrossentropy = _loss_class("SparseCategoricalCrossentropy",
                                            sparse_categorical_crossentropy,
                                            "sparse_categorical_crossentropy",
                                            ("from_logits",))
Hinge = _loss_class("Hinge", hinge, "hinge")
KLDivergence = _loss_class("KLDivergence", kullback_leibler_divergence, "kl_divergence")

_BY_NAME = {f.__name__: f for f in (
    mean_squared_error, mean_absolute_error, mean_absolute_percentage_error,
    mean_squared_logarithmic_error, squared_hinge, hinge, categorical_hinge, logcosh,
    categorical_crossentropy, sparse_categorical_crossentropy, binary_crossentropy,
    kullback_leibler_divergence, poisson, cosine_similarity)}
_BY_NAME.update(mse=mse, mae=mae, mape=mape, msle=msle, kld=kld, MSE=mse, MAE=mae, MAPE=mape,
                MSLE=msle, KLD=kld, cosine_proximity=cosine_similarity, cosine=cosine_similarity,
                log_cosh=logcosh, kl_divergence=kld, huber_loss=None)
_BY_NAME.pop("huber_loss")


def get(identifier):
    """A loss function from a name or a callable.

    Raises:
      ValueError: an unknown name (Keras's message) or an identifier of another kind."""
    if identifier is None:
        return None
    if isinstance(identifier, str):
        if identifier not in _BY_NAME:
            raise ValueError(f"Unknown loss function: {identifier}. Please ensure this object "
                             "is passed to the `custom_objects` argument.")
        return _BY_NAME[identifier]
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret loss function identifier: {identifier}")


def serialize(loss):
    return getattr(loss, "__name__", None) or {"class_name": type(loss).__name__,
                                               "config": loss.get_config()}


def deserialize(name, custom_objects=None):
    if custom_objects and isinstance(name, str) and name in custom_objects:
        return custom_objects[name]
    if isinstance(name, dict):
        cls = {c.__name__: c for c in (MeanSquaredError, MeanAbsoluteError,
                                       BinaryCrossentropy, CategoricalCrossentropy,
                                       SparseCategoricalCrossentropy, Hinge,
                                       KLDivergence)}.get(name["class_name"])
        if cls is None:
            raise ValueError(f"Unknown loss function: {name['class_name']}")
        return cls(**name.get("config", {}))
    return get(name)

