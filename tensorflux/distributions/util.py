"""Pieces several distributions share: the `logits`/`probs` parameterization (Bernoulli,
Categorical, Multinomial), the `loc`/`scale` one (Normal, Laplace, StudentT), positivity
checks under `validate_args`, and TF1's `distribution_util.gen_new_seed` (a second seed
derived from the first, so that two draws in one `sample` differ yet stay reproducible)."""

from __future__ import annotations

import hashlib

import numpy as np

from tensorflux.debugging import check_ops
from tensorflux.distributions import distribution
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    joining_ops,
    math_ops,
    nn_ops,
    reduction_ops,
    unary_ops,
)

__all__ = ["LocScaleMixin", "LogitsProbsMixin", "checked_parameters", "gen_new_seed",
           "log_combinations", "logits_and_probs", "nan_where_not", "positive_sample"]


class LocScaleMixin:
    """`loc` and `scale`, and a batch shape that is their broadcast (Normal, Laplace;
    StudentT adds `df` to its own)."""

    @property
    def loc(self):
        return self._loc

    @property
    def scale(self):
        return self._scale

    def _batch_shape(self):
        return joining_ops.broadcast_static_shape(self._loc.shape, self._scale.shape)

    def _batch_shape_tensor(self):
        return joining_ops.broadcast_dynamic_shape(array_ops.shape(self._loc),
                                                   array_ops.shape(self._scale))


def logits_and_probs(logits, probs, multidimensional):
    """Exactly one of `logits`/`probs` given: both, the other computed from it (softmax
    and log for a categorical, sigmoid and log-odds for a Bernoulli).

    Raises:
      ValueError: both or neither given.
    """
    if (logits is None) == (probs is None):
        raise ValueError("Must pass probs or logits, but not both.")
    if probs is None:
        logits = convert_to_tensor(logits, name="logits", preferred_dtype=dtypes.float32)
        with graph_lib.name_scope("probs"):
            probs = (nn_ops.softmax(logits) if multidimensional
                     else unary_ops.sigmoid(logits))
        return logits, probs
    probs = convert_to_tensor(probs, name="probs", preferred_dtype=dtypes.float32)
    with graph_lib.name_scope("logits"):
        logits = (unary_ops.log(probs) if multidimensional
                  else unary_ops.log(probs) - unary_ops.log1p(-probs))
    return logits, probs


class LogitsProbsMixin:
    """The `logits` and `probs` properties of a distribution built by
    `logits_and_probs` (which sets `_logits` and `_probs`)."""

    @property
    def logits(self):
        """Log-probabilities (log-odds for a Bernoulli)."""
        return self._logits

    @property
    def probs(self):
        """Probabilities."""
        return self._probs


def gen_new_seed(seed, salt):
    """TF1's `distribution_util.gen_new_seed`: None stays None, else the first 8 hex digits
    of md5(str(seed) + salt), masked to 31 bits."""
    if seed is None:
        return None
    digest = hashlib.md5((str(seed) + salt).encode("utf-8")).hexdigest()  # noqa: S324
    return int(digest[:8], 16) & 0x7FFFFFFF


def checked_parameters(values: dict, validate_args: bool, positive=()) -> dict:
    """`distribution.float_parameters(values)`, the `positive` ones behind an
    assert_positive when `validate_args` (InvalidArgumentError at run time, as in TF)."""
    params = distribution.float_parameters(values)
    for k in positive if validate_args else ():
        check = check_ops.assert_positive(params[k], message=f"{k} must be positive")
        with graph_lib.control_dependencies([check]):
            params[k] = array_ops.identity(params[k], name=k)
    return params


def positive_sample(validate_args: bool, x):
    """`x`, behind an assert_positive when `validate_args`."""
    if not validate_args:
        return x
    with graph_lib.control_dependencies([check_ops.assert_positive(
            x, message="sample must be positive")]):
        return array_ops.identity(x)


def nan_where_not(condition, value, allow_nan_stats: bool, message: str):
    """`value` where `condition`, NaN elsewhere; with allow_nan_stats=False, `value`
    behind an assertion that `condition` holds everywhere (TF1's undefined mode/mean)."""
    if allow_nan_stats:
        nan = array_ops.fill(array_ops.shape(value),
                             np.array(np.nan, value.dtype.as_numpy_dtype))
        return comparison_ops.where_v2(condition, value, nan)
    holds = math_ops.cast(condition, dtypes.int32)
    check = check_ops.assert_equal(holds, array_ops.ones_like(holds), message=message)
    with graph_lib.control_dependencies([check]):
        return array_ops.identity(value)


def log_combinations(n, counts):
    """log(n! / prod_k counts_k!), the multinomial coefficient over the last axis."""
    with graph_lib.name_scope("log_combinations", values=[n, counts]):
        return (unary_ops.lgamma(n + 1.)
                - reduction_ops.reduce_sum(unary_ops.lgamma(counts + 1.), axis=-1))
