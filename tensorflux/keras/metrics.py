"""`tf.keras.metrics`: metric functions `fn(y_true, y_pred)` (per sample), the metric
classes `compile` accepts, stateful in graph mode (`update_state` returns an op over two
local variables, `result()` a tensor, `reset_states()` runs in the Keras session), and
`get` by name."""

from __future__ import annotations

from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.keras import backend as K
from tensorflux.keras import losses as losses_lib
from tensorflux.ops import array_ops, comparison_ops, math_ops, nn_ops, reduction_ops
from tensorflux.variables import variables as variables_lib

__all__ = ["binary_accuracy", "categorical_accuracy", "sparse_categorical_accuracy",
           "top_k_categorical_accuracy", "sparse_top_k_categorical_accuracy", "accuracy",
           "mse", "mae", "mape", "msle", "mean_squared_error", "mean_absolute_error",
           "binary_crossentropy", "categorical_crossentropy",
           "sparse_categorical_crossentropy", "Metric", "Mean", "Sum", "MeanMetricWrapper",
           "Accuracy", "BinaryAccuracy", "CategoricalAccuracy", "SparseCategoricalAccuracy",
           "TopKCategoricalAccuracy", "MeanSquaredError", "MeanAbsoluteError",
           "BinaryCrossentropy", "CategoricalCrossentropy", "SparseCategoricalCrossentropy",
           "get", "serialize", "deserialize"]


def _f(x):
    return math_ops.cast(x, K.floatx())


def accuracy(y_true, y_pred):
    """1.0 where y_true equals y_pred."""
    return _f(comparison_ops.equal(math_ops.cast(y_true, y_pred.dtype), y_pred))


def binary_accuracy(y_true, y_pred, threshold=0.5):
    y_pred = _f(comparison_ops.greater(y_pred, threshold))
    return K.mean(_f(comparison_ops.equal(math_ops.cast(y_true, y_pred.dtype), y_pred)), axis=-1)


def categorical_accuracy(y_true, y_pred):
    return _f(comparison_ops.equal(reduction_ops.argmax(y_true, -1),
                                   reduction_ops.argmax(y_pred, -1)))


def sparse_categorical_accuracy(y_true, y_pred):
    """y_true integer labels of shape [batch] or [batch, 1]."""
    pred = reduction_ops.argmax(y_pred, -1)
    labels = math_ops.cast(y_true, pred.dtype)
    if y_true.shape.ndims is None or y_true.shape.ndims == y_pred.shape.ndims:
        labels = array_ops.reshape(labels, array_ops.shape(pred))
    return _f(comparison_ops.equal(labels, pred))


def top_k_categorical_accuracy(y_true, y_pred, k=5):
    return _f(nn_ops.in_top_k(y_pred, reduction_ops.argmax(y_true, -1, output_type=dtypes.int32),
                              k))


def sparse_top_k_categorical_accuracy(y_true, y_pred, k=5):
    labels = math_ops.cast(array_ops.reshape(y_true, [-1]), dtypes.int32)
    return _f(nn_ops.in_top_k(y_pred, labels, k))


mse = mean_squared_error = losses_lib.mean_squared_error
mae = mean_absolute_error = losses_lib.mean_absolute_error
mape = losses_lib.mape
msle = losses_lib.msle
binary_crossentropy = losses_lib.binary_crossentropy
categorical_crossentropy = losses_lib.categorical_crossentropy
sparse_categorical_crossentropy = losses_lib.sparse_categorical_crossentropy
acc = binary_accuracy


class Metric:
    """A stateful metric over local variables "total" and "count" (graph mode: the ops
    are built once per call of `update_state`)."""

    def __init__(self, name=None, dtype=None):
        self.name = name or _snake(type(self).__name__)
        self.dtype = dtypes.as_dtype(dtype or K.floatx())
        with graph_lib.name_scope(self.name):
            keys = [graph_lib.GraphKeys.LOCAL_VARIABLES, graph_lib.GraphKeys.METRIC_VARIABLES]
            self.total = variables_lib.Variable(0.0, trainable=False, name="total",
                                                dtype=self.dtype, collections=keys)
            self.count = variables_lib.Variable(0.0, trainable=False, name="count",
                                                dtype=self.dtype, collections=keys)
        self._initialized = False

    def update_state(self, *args, **kwargs):
        raise NotImplementedError("Metric.update_state")

    def _add(self, values, sample_weight=None):
        values = math_ops.cast(values, self.dtype)
        if sample_weight is not None:
            w = math_ops.cast(sample_weight, self.dtype)
            w = w + array_ops.zeros_like(values)
            return self._update(reduction_ops.reduce_sum(values * w), reduction_ops.reduce_sum(w))
        n = math_ops.cast(array_ops.size(values), self.dtype)
        return self._update(reduction_ops.reduce_sum(values), n)

    def _update(self, total, count):
        from tensorflux.control_flow import builders

        return builders.group(self.total.assign_add(total), self.count.assign_add(count))

    def result(self):
        return math_ops.div_no_nan(self.total, self.count)

    def reset_states(self) -> None:
        K.get_session().run(variables_lib.variables_initializer(self.variables))

    reset_state = reset_states

    @property
    def variables(self):
        return [self.total, self.count]

    def __call__(self, *args, **kwargs):
        """Updates the state and returns the result (run the returned tensor)."""
        update = self.update_state(*args, **kwargs)
        with graph_lib.control_dependencies([update]):
            return array_ops.identity(self.result())

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self.dtype.name}


def _snake(name):
    from tensorflux.layers.base import _snake_case

    return _snake_case(name)


class Mean(Metric):
    def update_state(self, values, sample_weight=None):
        return self._add(values, sample_weight)


class Sum(Metric):
    def update_state(self, values, sample_weight=None):
        return self._update(reduction_ops.reduce_sum(math_ops.cast(values, self.dtype)), 0.0)

    def result(self):
        return array_ops.identity(self.total)


class MeanMetricWrapper(Mean):
    """The mean of `fn(y_true, y_pred, **kwargs)` over all samples seen."""

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        super().__init__(name=name, dtype=dtype)
        self._fn, self._fn_kwargs = fn, kwargs

    def update_state(self, y_true, y_pred, sample_weight=None):
        return self._add(self._fn(y_true, y_pred, **self._fn_kwargs), sample_weight)

    def fn(self, y_true, y_pred):
        """The per-sample values (what `compile` averages per batch)."""
        return self._fn(y_true, y_pred, **self._fn_kwargs)


def _metric_class(cls_name, fn, default_name, params=()):
    return losses_lib.wrapper_class(MeanMetricWrapper, cls_name, fn, default_name, params)


Accuracy = _metric_class("Accuracy", accuracy, "accuracy")
BinaryAccuracy = _metric_class("BinaryAccuracy", binary_accuracy, "binary_accuracy",
                               ("threshold",))
CategoricalAccuracy = _metric_class("CategoricalAccuracy", categorical_accuracy,
                                    "categorical_accuracy")
SparseCategoricalAccuracy = _metric_class("SparseCategoricalAccuracy",
                                          sparse_categorical_accuracy,
                                          "sparse_categorical_accuracy")
TopKCategoricalAccuracy = _metric_class("TopKCategoricalAccuracy", top_k_categorical_accuracy,
                                        "top_k_categorical_accuracy", ("k",))
MeanSquaredError = _metric_class("MeanSquaredError", mean_squared_error, "mean_squared_error")
MeanAbsoluteError = _metric_class("MeanAbsoluteError", mean_absolute_error,
                                  "mean_absolute_error")
BinaryCrossentropy = _metric_class("BinaryCrossentropy", binary_crossentropy,
                                   "binary_crossentropy", ("from_logits", "label_smoothing"))
CategoricalCrossentropy = _metric_class("CategoricalCrossentropy", categorical_crossentropy,
                                        "categorical_crossentropy",
                                        ("from_logits", "label_smoothing"))
SparseCategoricalCrossentropy = _metric_class("SparseCategoricalCrossentropy",
                                              sparse_categorical_crossentropy,
                                              "sparse_categorical_crossentropy",
                                              ("from_logits",))

_BY_NAME = {f.__name__: f for f in (
    binary_accuracy, categorical_accuracy, sparse_categorical_accuracy,
    top_k_categorical_accuracy, sparse_top_k_categorical_accuracy)}
_BY_NAME.update({k: v for k, v in losses_lib._BY_NAME.items()})


def get(identifier):
    """A metric function from a name, or the callable itself.

    Raises:
      ValueError: an unknown name or an identifier of another kind."""
    if isinstance(identifier, str):
        if identifier not in _BY_NAME:
            raise ValueError(f"Unknown metric function: {identifier}. Please ensure this "
                             "object is passed to the `custom_objects` argument.")
        return _BY_NAME[identifier]
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret metric function identifier: {identifier}")


def serialize(metric):
    return getattr(metric, "__name__", None) or metric.name


def deserialize(name, custom_objects=None):
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    return get(name)

