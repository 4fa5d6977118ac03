"""Element structures of tf.data: nested tuples and dicts of components.

As in TensorFlow's tf.data, tuples (namedtuples too) and dicts are structure, while a list
is a value (converted to one tensor). Dict entries are ordered by sorted key. A structure's
leaves here are `Spec`s (dtype, static shape) or tensors; a SparseTensor component is a
`SparseSpec` and travels through the dataset ops as one variant tensor (TensorFlow's
encoding: its flat type is variant of unknown shape; data/dataset_ops.py encodes and
decodes it).
"""

from __future__ import annotations

from dataclasses import dataclass

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework.operation import Tensor
from tensorflux.framework.sparse_tensor import SparseTensor, SparseTensorValue


@dataclass(frozen=True)
class Spec:
    """One component of an element: its dtype and static shape."""

    dtype: dtypes.DType
    shape: tensor_shape.TensorShape

    @property
    def flat_dtype(self) -> dtypes.DType:
        """The dtype of the tensor this component travels as through dataset ops."""
        return self.dtype

    @property
    def flat_shape(self) -> tensor_shape.TensorShape:
        return self.shape

    value_class = Tensor

    def with_shape(self, shape) -> Spec:
        return type(self)(self.dtype, tensor_shape.as_shape(shape))


@dataclass(frozen=True)
class SparseSpec(Spec):
    """A SparseTensor component: its values' dtype and its dense shape. It travels as a
    variant tensor [..., 3] (indices, values, dense shape; leading dimensions for batches,
    which DeserializeSparse turns into the leading dimensions of one SparseTensor)."""

    @property
    def flat_dtype(self) -> dtypes.DType:
        return dtypes.variant

    @property
    def flat_shape(self) -> tensor_shape.TensorShape:
        return tensor_shape.unknown_shape()

    value_class = SparseTensor


@dataclass(frozen=True)
class DatasetSpec(Spec):
    """A component that is itself a dataset (a window, a group): `element` is the Spec
    structure of its elements. It travels as a scalar variant tensor."""

    element: object = None

    @property
    def flat_dtype(self) -> dtypes.DType:
        return dtypes.variant

    @property
    def flat_shape(self) -> tensor_shape.TensorShape:
        return tensor_shape.TensorShape([])

    def with_shape(self, shape) -> Spec:
        return DatasetSpec(self.dtype, tensor_shape.as_shape(shape), self.element)

    @staticmethod
    def of(element) -> DatasetSpec:
        return DatasetSpec(dtypes.variant, tensor_shape.TensorShape([]), element)


def _is_tuple(x) -> bool:
    """A tuple that is structure (a SparseTensorValue, a namedtuple, is one value)."""
    return isinstance(x, tuple) and not isinstance(x, SparseTensorValue)


def is_structure(x) -> bool:
    return isinstance(x, dict) or _is_tuple(x)


def flatten(s) -> list:
    if isinstance(s, dict):
        return [leaf for k in sorted(s) for leaf in flatten(s[k])]
    if _is_tuple(s):
        return [leaf for v in s for leaf in flatten(v)]
    return [s]


def pack(like, flat: list):
    """`flat` (leaves in `flatten` order) arranged as `like`."""
    it = iter(flat)

    def build(s):
        if isinstance(s, dict):
            return {k: build(s[k]) for k in sorted(s)}
        if _is_tuple(s):
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
    if _is_tuple(a) or _is_tuple(b):
        return _is_tuple(a) and _is_tuple(b) and len(a) == len(b) and \
            all(same_structure(x, y) for x, y in zip(a, b, strict=True))
    return True


def spec_of(t) -> Spec:
    if hasattr(t, "_variant_tensor"):  # a tf.data dataset (data/dataset_ops.py)
        return DatasetSpec.of(t._structure)
    if isinstance(t, SparseTensor):
        return SparseSpec(t.dtype.base_dtype, t.shape)
    return Spec(t.dtype.base_dtype, t.shape)


def types(structure):
    return map_structure(lambda s: s.dtype, structure)


def shapes(structure):
    return map_structure(lambda s: s.shape, structure)


def classes(structure):
    return map_structure(lambda s: s.value_class, structure)


def specs_from(output_types, output_shapes=None, output_classes=None):
    """The Spec structure of `output_types` (a structure of dtypes), `output_shapes` and
    `output_classes` (matching structures, or None for unknown shapes and Tensors)."""
    flat_types = [dtypes.as_dtype(t) for t in flatten(output_types)]
    if output_shapes is None:
        flat_shapes = [tensor_shape.unknown_shape()] * len(flat_types)
    else:
        flat_shapes = flatten_up_to(output_types, output_shapes)
        flat_shapes = [tensor_shape.as_shape(s) for s in flat_shapes]
    flat_classes = [Tensor] * len(flat_types) if output_classes is None else \
        flatten_up_to(output_types, output_classes)
    return pack(output_types, [
        (SparseSpec if isinstance(c, type) and issubclass(c, SparseTensor) else Spec)(t, s)
        for t, s, c in zip(flat_types, flat_shapes, flat_classes, strict=True)])


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
