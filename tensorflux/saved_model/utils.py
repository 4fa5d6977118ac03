"""`tf.saved_model.utils`: TensorInfo protos for the tensors of a signature, and back."""

from __future__ import annotations

from tensorflux.framework import dtypes, nested_structure_coder
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.operation import Tensor
from tensorflux.framework.sparse_tensor import SparseTensor
from tensorflux.protos import meta_graph_pb2, struct_pb2

__all__ = ["build_tensor_info", "get_tensor_from_tensor_info"]


def _is_composite(value) -> bool:
    """A value recorded as a composite tensor: one with a TypeSpec (RaggedTensor,
    IndexedSlices, a dataset) but a SparseTensor (its own `coo_sparse` encoding)."""
    return not isinstance(value, (Tensor, SparseTensor)) and \
        hasattr(type(value), "_type_spec")


def _flat(structure) -> list:
    if isinstance(structure, (list, tuple)):
        return [leaf for s in structure for leaf in _flat(s)]
    return [structure]


def _pack(like, flat: list):
    it = iter(flat)

    def build(s):
        if isinstance(s, (list, tuple)):
            return type(s)(build(c) for c in s)
        return next(it)

    return build(like)


def build_tensor_info(tensor) -> meta_graph_pb2.TensorInfo:
    """The TensorInfo of `tensor`: its name (or the three names of a SparseTensor), dtype
    and static shape; for a composite value (a RaggedTensor, IndexedSlices), its TypeSpec
    (nested_structure_coder's encoding) and the TensorInfos of its components.

    Args:
      tensor: a Tensor, SparseTensor, RaggedTensor, IndexedSlices or Variable.

    Returns:
      A meta_graph_pb2.TensorInfo.
    """
    if _is_composite(tensor):
        spec = tensor._type_spec
        info = meta_graph_pb2.TensorInfo()
        info.composite_tensor.type_spec.CopyFrom(
            nested_structure_coder.encode_structure(spec).type_spec_value)
        for component in _flat(spec._to_components(tensor)):
            info.composite_tensor.components.add().CopyFrom(build_tensor_info(component))
        return info
    info = meta_graph_pb2.TensorInfo(
        dtype=dtypes.as_dtype(tensor.dtype).base_dtype.as_datatype_enum,
        tensor_shape=tensor.get_shape().as_proto())
    if isinstance(tensor, SparseTensor):
        info.coo_sparse.values_tensor_name = tensor.values.name
        info.coo_sparse.indices_tensor_name = tensor.indices.name
        info.coo_sparse.dense_shape_tensor_name = tensor.dense_shape.name
    else:
        info.name = tensor.name
    return info


def _prepend(name: str, import_scope: str | None) -> str:
    return f"{import_scope.rstrip('/')}/{name}" if import_scope else name


def get_tensor_from_tensor_info(tensor_info, graph=None, import_scope=None):
    """The Tensor (or SparseTensor) that `tensor_info` names in `graph` (default graph).

    Raises:
      KeyError: a named tensor is not in the graph.
      ValueError: `tensor_info` has no dense or sparse encoding.
    """
    graph = graph or graph_lib.get_default_graph()

    def get(name):
        return graph.get_tensor_by_name(_prepend(name, import_scope))

    encoding = tensor_info.WhichOneof("encoding")
    if encoding == "name":
        return get(tensor_info.name)
    if encoding == "coo_sparse":
        coo = tensor_info.coo_sparse
        return SparseTensor(get(coo.indices_tensor_name), get(coo.values_tensor_name),
                            get(coo.dense_shape_tensor_name))
    if encoding == "composite_tensor":
        spec = nested_structure_coder.decode_proto(struct_pb2.StructuredValue(
            type_spec_value=tensor_info.composite_tensor.type_spec))
        components = [get(c.name) for c in tensor_info.composite_tensor.components]
        return spec._from_components(_pack(spec._component_specs, components))
    raise ValueError(f"Invalid TensorInfo.encoding: {encoding}. Expected `coo_sparse`, "
                     "`composite_tensor`, or `name` for a dense tensor.")
