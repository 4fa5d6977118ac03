"""Ragged dispatch for public functions (tf.add, tf.reduce_sum, tf.gather, tf.concat, ...):
the public namespace wraps its dense functions so that a RaggedTensor argument is handled
by the ragged implementation (as TF's dispatch does); dense calls are unchanged."""

from __future__ import annotations

import functools

from tensorflux.ragged import ragged_ops
from tensorflux.ragged.ragged_tensor import RaggedTensor

# public name -> ragged implementation
RAGGED_IMPLEMENTATIONS = {
    "add": ragged_ops.add, "subtract": ragged_ops.subtract, "multiply": ragged_ops.multiply,
    "divide": ragged_ops.divide, "truediv": ragged_ops.truediv,
    "floordiv": ragged_ops.floordiv, "maximum": ragged_ops.maximum,
    "minimum": ragged_ops.minimum, "pow": ragged_ops.pow,
    "reduce_sum": ragged_ops.reduce_sum, "reduce_mean": ragged_ops.reduce_mean,
    "reduce_max": ragged_ops.reduce_max, "reduce_min": ragged_ops.reduce_min,
    "reduce_prod": ragged_ops.reduce_prod, "gather": ragged_ops.gather,
}


def _has_ragged(args, kwargs) -> bool:
    def ragged(x):
        if isinstance(x, RaggedTensor):
            return True
        return isinstance(x, (list, tuple)) and any(isinstance(i, RaggedTensor) for i in x)
    return any(ragged(a) for a in args) or any(ragged(v) for v in kwargs.values())


def dispatching(dense_fn, ragged_fn):
    """`dense_fn`, calling `ragged_fn` instead when an argument is a RaggedTensor."""
    if getattr(dense_fn, "_ragged_dispatch", False):
        return dense_fn

    @functools.wraps(dense_fn)
    def wrapper(*args, **kwargs):
        if _has_ragged(args, kwargs):
            return ragged_fn(*args, **kwargs)
        return dense_fn(*args, **kwargs)

    wrapper._ragged_dispatch = True
    return wrapper


def _concat(dense_concat):
    def ragged_concat(values, axis, name="concat"):
        return ragged_ops.concat(values, axis, name=None if name == "concat" else name)
    return dispatching(dense_concat, ragged_concat)


def install(namespace) -> None:
    """Wraps the dispatchable functions present in the module `namespace`."""
    for name, ragged_fn in RAGGED_IMPLEMENTATIONS.items():
        fn = getattr(namespace, name, None)
        if callable(fn):
            setattr(namespace, name, dispatching(fn, ragged_fn))
    fn = getattr(namespace, "concat", None)
    if callable(fn):
        namespace.concat = _concat(fn)
