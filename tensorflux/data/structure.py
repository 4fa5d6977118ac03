"""Element structures of tf.data: nested tuples and dicts of TypeSpecs.

As in TensorFlow's tf.data, tuples (namedtuples too) and dicts are structure, while a list
is a value (converted to one tensor). Dict entries are ordered by sorted key. A structure's
leaves are TypeSpecs (framework/type_spec.py): TensorSpec, SparseTensorSpec,
RaggedTensorSpec, DatasetSpec (data/dataset_ops.py) or OptionalSpec (data/optional_ops.py);
`Dataset.element_spec` is the structure itself. Each leaf travels through the dataset ops
as the one tensor of its `_flat_tensor_specs`: a Tensor as itself, a SparseTensor, a
RaggedTensor, a dataset or an Optional as a variant (TensorFlow's encodings;
data/dataset_ops.py encodes and decodes them).
"""

from __future__ import annotations

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework.operation import Tensor
from tensorflux.framework.sparse_tensor import SparseTensor, SparseTensorSpec, SparseTensorValue
from tensorflux.framework.tensor_spec import TensorSpec
from tensorflux.framework.type_spec import TypeSpec
from tensorflux.ragged.ragged_tensor_spec import RaggedTensorSpec


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


def spec_of(t) -> TypeSpec:
    """The spec of a component value: a Tensor (its base dtype, no name), or a composite
    value (SparseTensor, RaggedTensor, dataset, Optional) by its `_type_spec`."""
    if isinstance(t, Tensor):
        return TensorSpec(t.shape, t.dtype.base_dtype)
    return t._type_spec


def flat_attrs(structure) -> dict:
    """The `output_types` / `output_shapes` attrs of a dataset op whose elements are of
    `structure`: one flat tensor per leaf."""
    flat = [f for s in flatten(structure) for f in s._flat_tensor_specs]
    return {"output_types": [f.dtype for f in flat], "output_shapes": [f.shape for f in flat]}


def types(structure):
    return map_structure(lambda s: s._to_legacy_output_types(), structure)


def shapes(structure):
    return map_structure(lambda s: s._to_legacy_output_shapes(), structure)


def classes(structure):
    return map_structure(lambda s: s._to_legacy_output_classes(), structure)


def with_shape(spec: TypeSpec, shape) -> TypeSpec:
    """`spec` with another (dense or dataset) shape."""
    shape = tensor_shape.as_shape(shape)
    if isinstance(spec, RaggedTensorSpec):
        return RaggedTensorSpec(shape, spec.dtype, spec.ragged_rank, spec.row_splits_dtype)
    if isinstance(spec, TensorSpec):
        return TensorSpec(shape, spec.dtype, spec.name)
    if isinstance(spec, SparseTensorSpec):
        return SparseTensorSpec(shape, spec.dtype)
    return type(spec)(spec.element_spec, shape)  # a DatasetSpec


def without_names(structure):
    """`structure` with its TensorSpecs unnamed (what TF1 iterators describe)."""
    return map_structure(lambda s: TensorSpec(s.shape, s.dtype)
                         if isinstance(s, TensorSpec) and s.name else s, structure)


def specs_from(output_types, output_shapes=None, output_classes=None):
    """The spec structure of `output_types` (a structure of dtypes), `output_shapes` and
    `output_classes` (matching structures, or None for unknown shapes and Tensors; a class
    may also be a TypeSpec, TensorFlow's legacy form of a ragged component)."""
    flat_types = flatten(output_types)
    if output_shapes is None:
        flat_shapes = [tensor_shape.unknown_shape()] * len(flat_types)
    else:
        flat_shapes = flatten_up_to(output_types, output_shapes)
        flat_shapes = [tensor_shape.as_shape(s) for s in flat_shapes]
    flat_classes = [Tensor] * len(flat_types) if output_classes is None else \
        flatten_up_to(output_types, output_classes)

    def one(t, s, c):
        if isinstance(c, TypeSpec):
            return c
        if isinstance(t, TypeSpec):  # TensorFlow's legacy types of a dataset component
            return t
        cls = SparseTensorSpec if isinstance(c, type) and issubclass(c, SparseTensor) \
            else TensorSpec
        return cls(s, dtypes.as_dtype(t))

    return pack(output_types, [one(t, s, c) for t, s, c in
                               zip(flat_types, flat_shapes, flat_classes, strict=True)])


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
    """`element_spec`, `output_types`, `output_shapes` and `output_classes` of an object
    whose elements are described by `self._structure` (datasets and iterators)."""

    @property
    def element_spec(self):
        """The structure of TypeSpecs of the elements."""
        return self._structure

    @property
    def output_types(self):
        return types(self._structure)

    @property
    def output_shapes(self):
        return shapes(self._structure)

    @property
    def output_classes(self):
        return classes(self._structure)
