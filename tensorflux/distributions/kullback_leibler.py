"""`tf.distributions.kl_divergence` and `RegisterKL`: KL(a || b) looked up by the two
distributions' classes (the nearest registered pair along both method resolution orders,
`a`'s first)."""

from __future__ import annotations

from tensorflux.debugging import check_ops
from tensorflux.framework import graph as graph_lib
from tensorflux.ops import array_ops

__all__ = ["kl_divergence", "RegisterKL", "cross_entropy"]

_DIVERGENCES: dict = {}


def _registered(type_a, type_b):
    for parent_a in type_a.__mro__:
        for parent_b in type_b.__mro__:
            fn = _DIVERGENCES.get((parent_a, parent_b))
            if fn is not None:
                return fn
    return None


def kl_divergence(distribution_a, distribution_b, allow_nan_stats=True, name=None):
    """KL(distribution_a || distribution_b), one value per batch element.

    Raises:
      NotImplementedError: no divergence is registered for the two classes.
    """
    fn = _registered(type(distribution_a), type(distribution_b))
    if fn is None:
        raise NotImplementedError(
            f"No KL(distribution_a || distribution_b) registered for distribution_a type "
            f"{type(distribution_a).__name__} and distribution_b type "
            f"{type(distribution_b).__name__}")
    with graph_lib.name_scope("KullbackLeibler"):
        kl = fn(distribution_a, distribution_b, name=name)
        if allow_nan_stats:
            return kl
        kl = array_ops.identity(kl, name="kl")
        message = (f"KL calculation between {distribution_a.name} and {distribution_b.name} "
                   "returned NaN values (and was called with allow_nan_stats=False).")
        with graph_lib.control_dependencies([check_ops.assert_equal(kl, kl, message=message)]):
            return array_ops.identity(kl, name="checked_kl")


def cross_entropy(ref, other, allow_nan_stats=True, name=None):
    """H(ref, other) = KL(ref || other) + H(ref)."""
    with graph_lib.name_scope(name or "cross_entropy"):
        return ref.entropy() + kl_divergence(ref, other, allow_nan_stats=allow_nan_stats)


class RegisterKL:
    """Decorator registering `fn(a, b, name=None)` as KL(a || b) for two classes.

    Raises:
      ValueError: the pair already has a divergence.
    """

    def __init__(self, dist_cls_a, dist_cls_b):
        self._key = (dist_cls_a, dist_cls_b)

    def __call__(self, kl_fn):
        if not callable(kl_fn):
            raise TypeError(f"kl_fn must be callable, received: {kl_fn}")
        if self._key in _DIVERGENCES:
            raise ValueError(f"KL({self._key[0].__name__} || {self._key[1].__name__}) "
                             f"has already been registered to: {_DIVERGENCES[self._key]}")
        _DIVERGENCES[self._key] = kl_fn
        return kl_fn
