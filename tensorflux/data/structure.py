"""Element structures of tf.data: nested tuples and dicts of components.

As in TensorFlow's tf.data, tuples (namedtuples too) and dicts are structure, while a list
is a value (converted to one tensor). Dict entries are ordered by sorted key. A structure's
leaves here are `Spec`s (dtype, static shape) or tensors.
"""

from __future__ import annotations

from dataclasses import dataclass

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework.operation import Tensor


@dataclass(frozen=True)
class Spec:
    """One component of an element: its dtype and static shape."""

    dtype: dtypes.DType
    shape: tensor_shape.TensorShape


def is_structure(x) -> bool:
    return isinstance(x, (tuple, dict))


def flatten(s) -> list:
    if isinstance(s, dict):
        return [leaf for k in sorted(s) for leaf in flatten(s[k])]
    if isinstance(s, tuple):
        return [leaf for v in s for leaf in flatten(v)]
    return [s]


def pack(like, flat: list):
    """`flat` (leaves in `flatten` order) arranged as `like`."""
    it = iter(flat)

    def build(s):
        if isinstance(s, dict):
            return {k: build(s[k]) for k in sorted(s)}
        if isinstance(s, tuple):
            items = [build(v) for v in s]
            return type(s)(*items) if hasattr(s, "_fields") else tuple(items)
        return next(it)

    return build(like)


def map_structure(fn, s):
    return pack(s, [fn(leaf) for leaf in flatten(s)])


def same_structure(a, b) -> bool:
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and sorted(a) == sorted(b) and \
            all(same_structure(a[k], b[k]) for k in a)
    if isinstance(a, tuple) or isinstance(b, tuple):
        return isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) and \
            all(same_structure(x, y) for x, y in zip(a, b, strict=True))
    return True


def spec_of(t: Tensor) -> Spec:
    return Spec(t.dtype.base_dtype, t.shape)


def types(structure):
    return map_structure(lambda s: s.dtype, structure)


def shapes(structure):
    return map_structure(lambda s: s.shape, structure)


def classes(structure):
    return map_structure(lambda s: Tensor, structure)


def specs_from(output_types, output_shapes=None):
    """The Spec structure of `output_types` (a structure of dtypes) and `output_shapes`
    (a matching structure, or None for unknown shapes)."""
    flat_types = [dtypes.as_dtype(t) for t in flatten(output_types)]
    if output_shapes is None:
        flat_shapes = [tensor_shape.unknown_shape()] * len(flat_types)
    else:
        flat_shapes = flatten_up_to(output_types, output_shapes)
        flat_shapes = [tensor_shape.as_shape(s) for s in flat_shapes]
    return pack(output_types, [Spec(t, s) for t, s in zip(flat_types, flat_shapes,
                                                         strict=True)])


def flatten_up_to(like, s) -> list:
    """The leaves of `s` at the positions of `like`'s leaves (a shape given as a list or
    tuple of dims is one leaf)."""
    if isinstance(like, dict):
        if not isinstance(s, dict) or sorted(s) != sorted(like):
            raise ValueError(f"The two structures don't have the same keys: {like} vs {s}")
        return [leaf for k in sorted(like) for leaf in flatten_up_to(like[k], s[k])]
    if isinstance(like, tuple):
        if not isinstance(s, (tuple, list)) or len(s) != len(like):
            raise ValueError(f"The two structures don't have the same sequence length: "
                             f"{like} vs {s}")
        return [leaf for a, b in zip(like, s, strict=True) for leaf in flatten_up_to(a, b)]
    return [s]


def most_specific_compatible(a: tensor_shape.TensorShape, b: tensor_shape.TensorShape):
    """The shape both `a` and `b` have (unknown where they differ)."""
    if a.ndims is None or b.ndims is None or a.ndims != b.ndims:
        return tensor_shape.unknown_shape()
    return tensor_shape.TensorShape([x if x == y else None
                                     for x, y in zip(a.as_list(), b.as_list(), strict=True)])


class HasElementSignature:
    """`output_types`, `output_shapes` and `output_classes` of an object whose elements are
    described by `self._structure` (datasets and iterators)."""

    @property
    def output_types(self):
        return types(self._structure)

    @property
    def output_shapes(self):
        return shapes(self._structure)

    @property
    def output_classes(self):
        return classes(self._structure)
