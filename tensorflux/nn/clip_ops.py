"""Clipping: by value, by norm, by global norm (`tf.clip_by_*`, `tf.global_norm`)."""

from __future__ import annotations

from tensorflux.framework import graph as graph_lib
from tensorflux.framework.indexed_slices import IndexedSlices
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, comparison_ops, math_ops, reduction_ops, unary_ops

__all__ = ["clip_by_value", "clip_by_norm", "clip_by_global_norm", "global_norm",
           "clip_by_average_norm"]


def _values(t):
    return t.values if isinstance(t, IndexedSlices) else t


def _rewrap(t, values):
    if isinstance(t, IndexedSlices):
        return IndexedSlices(values, t.indices, t.dense_shape)
    return values


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """min(max(t, clip_value_min), clip_value_max), elementwise.

    Raises:
      ValueError: the clip bounds' shapes do not broadcast to t's.
    """
    with graph_lib.name_scope(name, "clip_by_value", [_values(t)]) as scope:
        values = convert_to_tensor(_values(t))
        clipped = math_ops.minimum(math_ops.maximum(values, clip_value_min), clip_value_max)
        clipped.shape.assert_is_compatible_with(values.shape)

        return _rewrap(t, array_ops.identity(clipped, name=scope))


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """t * clip_norm / max(||t||_2, clip_norm), the norm over `axes` (default: all)."""
    with graph_lib.name_scope(name, "clip_by_norm", [_values(t)]) as scope:
        values = convert_to_tensor(_values(t))
        clip_norm = math_ops.cast(clip_norm, values.dtype)
        l2sum = reduction_ops.reduce_sum(values * values, axes, keepdims=True)
        positive = l2sum > 0
        safe = comparison_ops.select(positive, l2sum, array_ops.ones_like(l2sum))
        l2norm = comparison_ops.select(positive, unary_ops.sqrt(safe), l2sum)
        clipped = values * clip_norm / math_ops.maximum(l2norm, clip_norm)
        return _rewrap(t, array_ops.identity(clipped, name=scope))


def clip_by_average_norm(t, clip_norm, name=None):
    """t * clip_norm / max(||t||_2 / n, clip_norm), n the number of elements."""
    with graph_lib.name_scope(name, "clip_by_average_norm", [t]) as scope:
        t = convert_to_tensor(t)
        n = math_ops.cast(array_ops.size(t), t.dtype)
        l2norm_inv = unary_ops.rsqrt(reduction_ops.reduce_sum(t * t))
        tclip = t * clip_norm * math_ops.minimum(l2norm_inv * n, 1.0 / clip_norm)
        return array_ops.identity(tclip, name=scope)


def global_norm(t_list, name=None):
    """sqrt(sum of squares of every element of every tensor in t_list); None entries skip.

    Raises:
      TypeError: t_list is not a sequence.
    """
    if not isinstance(t_list, (list, tuple)):
        raise TypeError("t_list should be a sequence")
    values = [convert_to_tensor(_values(t)) for t in t_list if t is not None]
    with graph_lib.name_scope(name, "global_norm", values) as scope:
        squares = [reduction_ops.reduce_sum(v * v) for v in values]
        total = math_ops.add_n(squares) if len(squares) > 1 else (
            squares[0] if squares else array_ops.zeros([], "float32"))
        return unary_ops.sqrt(total, name=scope)


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """Scales every tensor by clip_norm / max(global_norm, clip_norm).

    Returns:
      (list of clipped tensors (None stays None), the global norm used).
    """
    if not isinstance(t_list, (list, tuple)):
        raise TypeError("t_list should be a sequence")
    t_list = list(t_list)
    norm = global_norm(t_list) if use_norm is None else use_norm
    with graph_lib.name_scope(name, "clip_by_global_norm",
                              [_values(t) for t in t_list if t is not None]):
        clip = math_ops.cast(clip_norm, norm.dtype)
        scale = clip * math_ops.minimum(1.0 / norm, 1.0 / clip)
        out = []
        for i, t in enumerate(t_list):
            if t is None:
                out.append(None)
                continue
            v = convert_to_tensor(_values(t))
            clipped = array_ops.identity(v * math_ops.cast(scale, v.dtype),
                                         name=f"clip_by_global_norm_{i}")
            out.append(_rewrap(t, clipped))
        return out, norm
