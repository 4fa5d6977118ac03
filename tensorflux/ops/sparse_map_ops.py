"""SparseTensors kept in a per-device map under int64 handles, so that a queue (which
holds dense tensors) can carry them: AddSparseToTensorsMap (one SparseTensor, one handle),
AddManySparseToTensorsMap (a minibatch split along its first dimension, a handle per row)
and TakeManySparseFromTensorsMap (a vector of handles back to one SparseTensor with a new
first dimension, the handles' entries taken out of the map). `tf.train.batch` and its
relatives store SparseTensors this way before enqueueing and take them back after the
dequeue (train/input.py), as TF1 does.

The map is a resource named `shared_name` in `container`; an Add with an empty
`shared_name` uses its node's name, and the Take reading its handles names that map (TF's
rule: `take_many_sparse(map_op, handles)` passes the Add's shared_name or name). Kernels:
tensorflux/kernels/cpu/sparse_map_ops.py.
"""

from __future__ import annotations

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable
from tensorflux.framework.sparse_tensor import SparseTensor

__all__: list[str] = []

_MAP_ATTRS = ["T: type", "container: string = ''", "shared_name: string = ''"]


def _sparse_inputs_rank(op):
    shape = op.inputs[2].shape
    return None if shape.ndims != 1 else shape.dims[0].value


define_op("AddSparseToTensorsMap",
          inputs=["sparse_indices: int64", "sparse_values: T", "sparse_shape: int64"],
          outputs=["sparse_handle: int64"], attrs=_MAP_ATTRS,
          shape_fn=lambda op: [tensor_shape.TensorShape([])], stateful=True)
define_op("AddManySparseToTensorsMap",
          inputs=["sparse_indices: int64", "sparse_values: T", "sparse_shape: int64"],
          outputs=["sparse_handles: int64"], attrs=_MAP_ATTRS,
          shape_fn=lambda op: [tensor_shape.TensorShape([None])], stateful=True)
define_op("TakeManySparseFromTensorsMap", inputs=["sparse_handles: int64"],
          outputs=["sparse_indices: int64", "sparse_values: dtype", "sparse_shape: int64"],
          attrs=["dtype: type", "container: string = ''", "shared_name: string = ''"],
          shape_fn=lambda op: [tensor_shape.TensorShape([None, None]),
                               tensor_shape.TensorShape([None]),
                               tensor_shape.TensorShape([None])], stateful=True)
not_differentiable("AddSparseToTensorsMap", "AddManySparseToTensorsMap",
                   "TakeManySparseFromTensorsMap")


def add_sparse_to_tensors_map(sp: SparseTensor, many: bool = False, shared_name=None,
                              name=None):
    """The handle of `sp` in a map (a vector of handles, one per row, with `many`); the map
    op is the returned tensor's op (`take_many_sparse_from_tensors_map(op, handles)`)."""
    op = "AddManySparseToTensorsMap" if many else "AddSparseToTensorsMap"
    return apply_op(op, sparse_indices=sp.indices, sparse_values=sp.values,
                    sparse_shape=sp.dense_shape, shared_name=shared_name or "",
                    name=name or op)


def take_many_sparse_from_tensors_map(sparse_map_op, sparse_handles, rank=None, name=None):
    """The SparseTensors `sparse_handles` name in `sparse_map_op`'s map, as one SparseTensor
    of rank `rank` + 1 (rows in handle order); the static rank when `rank` is known."""
    with graph_lib.name_scope(name, "TakeManySparseFromTensorsMap", [sparse_handles]):
        with graph_lib.get_default_graph().colocate_with(sparse_map_op):
            shared = sparse_map_op.attrs.get("shared_name") or sparse_map_op.name
            if isinstance(shared, bytes):
                shared = shared.decode()
            indices, values, shape = apply_op(
                "TakeManySparseFromTensorsMap", sparse_handles=sparse_handles,
                dtype=sparse_map_op.attrs["T"], container=sparse_map_op.attrs["container"],
                shared_name=shared)
        if rank is not None:
            indices.set_shape([None, rank + 1])
            shape.set_shape([rank + 1])
        return SparseTensor(indices, values, shape)


del dtypes  # (the dtypes come from the map op's attrs)
