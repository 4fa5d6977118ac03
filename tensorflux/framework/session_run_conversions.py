"""How composite tensors (SparseTensor, IndexedSlices, ...) are fetched and fed by
`Session.run`: each type registers functions that split it into plain tensors.

The registry lives in framework, beside the composite types that register themselves
(sparse_tensor.py, indexed_slices.py); the runtime's fetch mapper (runtime/fetching.py)
looks types up here.
"""

from __future__ import annotations

from collections.abc import Callable

# type -> (fetch_fn(obj) -> (list of elements, rebuild(values) -> result),
#          feed_fn(obj, value) -> list of (tensor, value))
_conversions: list[tuple[type, Callable, Callable | None]] = []


def register_session_run_conversion_functions(tensor_type, fetch_function,
                                              feed_function=None,
                                              feed_function_for_partial_run=None) -> None:
    """Teaches Session.run to fetch and feed `tensor_type` (TF1's API).

    Args:
      fetch_function: `fn(obj) -> (list of fetchable elements, fn(list of values) -> value)`.
      feed_function: `fn(obj, feed_value) -> list of (tensor, value)` pairs.
    """
    _conversions.insert(0, (tensor_type, fetch_function, feed_function))


def conversion_for(obj):
    """(fetch_fn, feed_fn) registered for `obj`'s type, or None."""
    for t, fetch_fn, feed_fn in _conversions:
        if isinstance(obj, t):
            return fetch_fn, feed_fn
    return None
