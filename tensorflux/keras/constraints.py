"""`tf.keras.constraints`: projections applied to a weight after each optimizer update
(`tf.get_variable(constraint=...)`, run by the optimizers as TF1 Keras's are)."""

from __future__ import annotations

from tensorflux.keras import backend as K
from tensorflux.keras._lookup import make_lookup
from tensorflux.ops import comparison_ops, math_ops, reduction_ops, unary_ops

__all__ = ["Constraint", "MaxNorm", "NonNeg", "UnitNorm", "MinMaxNorm", "max_norm",
           "non_neg", "unit_norm", "min_max_norm", "get", "serialize", "deserialize"]


class Constraint:
    def __call__(self, w):
        return w

    def get_config(self) -> dict:
        return {}


def _norms(w, axis):
    return unary_ops.sqrt(reduction_ops.reduce_sum(unary_ops.square(w), axis=axis,
                                                   keepdims=True))


class MaxNorm(Constraint):
    """Rescales slices along `axis` whose L2 norm exceeds `max_value`."""

    def __init__(self, max_value=2, axis=0):
        self.max_value, self.axis = max_value, axis

    def __call__(self, w):
        norms = _norms(w, self.axis)
        desired = K.clip(norms, 0, self.max_value)
        return w * (desired / (K.epsilon() + norms))

    def get_config(self) -> dict:
        return {"max_value": self.max_value, "axis": self.axis}


class NonNeg(Constraint):
    """Zeroes the negative weights."""

    def __call__(self, w):
        return w * math_ops.cast(comparison_ops.greater_equal(w, 0.0), w.dtype.base_dtype)


class UnitNorm(Constraint):
    """Scales slices along `axis` to unit L2 norm."""

    def __init__(self, axis=0):
        self.axis = axis

    def __call__(self, w):
        return w / (K.epsilon() + _norms(w, self.axis))

    def get_config(self) -> dict:
        return {"axis": self.axis}


class MinMaxNorm(Constraint):
    """Moves slice norms along `axis` toward [min_value, max_value] at `rate`."""

    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        self.min_value, self.max_value, self.rate, self.axis = min_value, max_value, rate, axis

    def __call__(self, w):
        norms = _norms(w, self.axis)
        desired = self.rate * K.clip(norms, self.min_value, self.max_value) + \
            (1 - self.rate) * norms
        return w * (desired / (K.epsilon() + norms))

    def get_config(self) -> dict:
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate,
                "axis": self.axis}


max_norm, non_neg, unit_norm, min_max_norm = MaxNorm, NonNeg, UnitNorm, MinMaxNorm
maxnorm, nonneg, unitnorm = MaxNorm, NonNeg, UnitNorm
_BY_NAME = {"max_norm": MaxNorm, "maxnorm": MaxNorm, "MaxNorm": MaxNorm,
            "non_neg": NonNeg, "nonneg": NonNeg, "NonNeg": NonNeg, "unit_norm": UnitNorm,
            "unitnorm": UnitNorm, "UnitNorm": UnitNorm, "min_max_norm": MinMaxNorm,
            "MinMaxNorm": MinMaxNorm}


get, serialize, deserialize = make_lookup("constraint", _BY_NAME)
