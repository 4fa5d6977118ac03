"""tf.data.experimental.Optional and tf.OptionalSpec: a value that may be absent.

An Optional is one scalar variant tensor (OptionalFromValue / OptionalNone /
IteratorGetNextAsOptional) and the structure of TypeSpecs of the value it may hold;
`get_value` decodes that value as an iterator's `get_next` does.
"""

from __future__ import annotations

from tensorflux.data import structure as st
from tensorflux.data.dataset_ops import _encode, _to_tensors, element_op
from tensorflux.framework import dtypes, nested_structure_coder, tensor_shape, type_spec
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_spec import TensorSpec
from tensorflux.protos import struct_pb2

__all__ = ["Optional", "OptionalSpec", "get_next_as_optional"]


class Optional:
    """A value that may be absent: an element of a dataset's structure, or none
    (`get_next_as_optional` gives one per call instead of raising at the end)."""

    def __init__(self, variant, structure):
        self._variant_tensor, self._structure = variant, structure

    @staticmethod
    def from_value(value) -> Optional:
        """An Optional holding `value` (a structure of tensors and composite values)."""
        with graph_lib.name_scope("optional") as scope:
            tensors = _to_tensors(value)
            flat = [_encode(t) for t in st.flatten(tensors)]
            v = apply_op("OptionalFromValue", components=flat, name=scope)
        return Optional(v, st.map_structure(st.spec_of, tensors))

    @staticmethod
    def empty(element_spec) -> Optional:
        """An Optional without a value, of `element_spec` (a structure of TypeSpecs;
        tensorflux also takes Tensors and (dtype, shape) pairs)."""
        return Optional(apply_op("OptionalNone"), _specs(element_spec))

    @property
    def element_spec(self):
        return self._structure

    @property
    def _type_spec(self) -> OptionalSpec:
        return OptionalSpec(self._structure)

    def has_value(self, name=None):
        return apply_op("OptionalHasValue", optional=self._variant_tensor, name=name)

    def get_value(self, name=None):
        """The value (InvalidArgumentError at run time when there is none)."""
        return element_op("OptionalGetValue", self._structure, name,
                          optional=self._variant_tensor)


class OptionalSpec(type_spec.TypeSpec):
    """The type of an Optional (`tf.OptionalSpec`): the structure of TypeSpecs of the value
    it may hold. An Optional travels through tf.data as its scalar variant."""

    __slots__ = ("_element_spec",)

    def __init__(self, element_spec):
        self._element_spec = element_spec

    value_type = property(lambda self: Optional)
    element_spec = property(lambda self: self._element_spec)

    def _serialize(self) -> tuple:
        return (self._element_spec,)

    @staticmethod
    def from_value(value) -> OptionalSpec:
        return OptionalSpec(value.element_spec)

    _component_specs = property(lambda self: TensorSpec([], dtypes.variant))

    def _to_components(self, value):
        return value._variant_tensor

    def _from_components(self, components):
        return Optional(components, self._element_spec)

    _flat_tensor_specs = property(lambda self: [TensorSpec([], dtypes.variant)])


nested_structure_coder.register_type_spec(OptionalSpec, struct_pb2.TypeSpecProto.OPTIONAL_SPEC)


def _specs(element_spec):
    def one(x):
        if isinstance(x, type_spec.TypeSpec):
            return x
        if isinstance(x, Tensor):
            return st.spec_of(x)
        dtype, shape = x
        return TensorSpec(tensor_shape.as_shape(shape), dtypes.as_dtype(dtype))
    if isinstance(element_spec, tuple) and len(element_spec) == 2 and \
            isinstance(element_spec[0], dtypes.DType):
        return one(element_spec)
    return st.map_structure(one, element_spec)


def get_next_as_optional(iterator) -> Optional:
    """The iterator's next element as an Optional (empty at the end, without an error)."""
    v = apply_op("IteratorGetNextAsOptional", iterator=iterator._iterator_resource,
                 **st.flat_attrs(iterator._structure))
    return Optional(v, iterator._structure)
