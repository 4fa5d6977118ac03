"""Pieces several distributions share: the `logits`/`probs` parameterization (Bernoulli,
Categorical, Multinomial), positivity checks under `validate_args`, and TF1's
`distribution_util.gen_new_seed` (a second seed derived from the first, so that two draws
in one `sample` differ yet stay reproducible)."""

from __future__ import annotations

import hashlib

from tensorflux.debugging import check_ops
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, nn_ops, unary_ops

__all__ = ["LogitsProbsMixin", "logits_and_probs", "gen_new_seed", "with_assertions"]


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


def with_assertions(validate_args, tensor, *checks):
    """`tensor` behind the assertions `checks` build from it when `validate_args`, else
    `tensor` itself; each check is a function of the tensor returning an assert op."""
    if not validate_args:
        return tensor
    with graph_lib.control_dependencies([check(tensor) for check in checks]):
        return array_ops.identity(tensor)


def assert_positive(x):
    return check_ops.assert_positive(x, message=f"{x.op.name.split('/')[-1]} must be positive")
