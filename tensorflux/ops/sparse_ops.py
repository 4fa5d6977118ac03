"""Sparse ops: segment reductions over selected rows (SparseSegmentSum/Mean/SqrtN, with
and without num_segments, and their gradient ops), SparseToDense and SparseReorder, with the
TF1 names `tf.sparse.*` / `tf.sparse_*` that use them.

`SparseSegmentSum(data, indices, segment_ids)` is `segment_sum(data[indices], segment_ids)`:
row k of the output sums the rows `data[indices[i]]` whose `segment_ids[i] == k`. Segment
ids are sorted (non-decreasing); the output has `segment_ids[-1] + 1` rows (or
`num_segments`), empty segments give zeros. Mean divides each segment by its size, SqrtN
by the square root of it. The gradient ops scatter rows back:
`SparseSegmentSumGrad(grad, indices, segment_ids, output_dim0)[indices[i]] +=
grad[segment_ids[i]] * scale[segment_ids[i]]`; they are linear, and their own gradients are
the WithNumSegments forward ops, so second derivatives work.

A `tf.SparseTensor` is three dense tensors (framework/sparse_tensor.py); the functions here
that take one read its parts. Kernels are in tensorflux/kernels/cpu/sparse_ops.py.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.common_shapes import (
    constant_value_as_shape,
    merge_dims,
    scalar_value,
    static_dims,
    with_rank,
    with_rank_at_least,
)
from tensorflux.framework.indexed_slices import IndexedSlices
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient
from tensorflux.framework.operation import Tensor
from tensorflux.framework.sparse_tensor import SparseTensor, SparseTensorValue
from tensorflux.framework.tensor_conversion import (
    convert_to_tensor,
    register_tensor_conversion_function,
)
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    constant_op,
    gather_ops,
    math_ops,
    reduction_ops,
    sequence_ops,
)
from tensorflux.ops.gather_ops import indexed_slices_to_tensor

# The TF1 public names of this module (`tf.sparse_*`; `tf.sparse.*` is tensorflux/sparse/).
__all__ = ["sparse_segment_sum", "sparse_segment_mean", "sparse_segment_sqrt_n",
           "sparse_tensor_to_dense", "sparse_to_dense", "sparse_reorder", "sparse_placeholder"]

_REAL = ("T: {float, double, int32, uint8, int16, int8, int64, bfloat16, uint16, half, uint32, "
         "uint64}")
_FLOAT = "T: {bfloat16, half, float, double}"
_IDX = ["Tidx: {int32, int64} = DT_INT32", "Tsegmentids: {int32, int64} = DT_INT32"]
_NUM = "Tnumsegments: {int32, int64} = DT_INT32"

# (reduction, T constraint) for each forward op family.
_REDUCTIONS = {"Sum": _REAL, "Mean": _FLOAT, "SqrtN": _FLOAT}


# ------------------------------------------------------------------------------------------
# SparseSegmentSum / Mean / SqrtN, their WithNumSegments forms and gradient ops


def _segment_inputs(op) -> list | None:
    """Checks indices and segment_ids are vectors of one length; data's dims (rank >= 1)."""
    idx = with_rank(static_dims(op.inputs[1]), 1)
    seg = with_rank(static_dims(op.inputs[2]), 1)
    merge_dims(idx, seg)
    return with_rank_at_least(static_dims(op.inputs[0]), 1)


def _sparse_segment_shape(op):
    data = _segment_inputs(op)
    return [None if data is None else [None] + data[1:]]


def _sparse_segment_num_shape(op):
    data = _segment_inputs(op)
    with_rank(static_dims(op.inputs[3]), 0)
    num = scalar_value(op.inputs[3])
    return [None if data is None else [num] + data[1:]]


def _sparse_segment_grad_shape(op):
    data = _segment_inputs(op)
    with_rank(static_dims(op.inputs[3]), 0)
    dim0 = scalar_value(op.inputs[3])
    return [None if data is None else [dim0] + data[1:]]


for _red, _types in _REDUCTIONS.items():
    define_op(f"SparseSegment{_red}",
              inputs=["data: T", "indices: Tidx", "segment_ids: Tsegmentids"],
              outputs=["output: T"], attrs=[_types, *_IDX, "sparse_gradient: bool = false"],
              shape_fn=_sparse_segment_shape)
    define_op(f"SparseSegment{_red}WithNumSegments",
              inputs=["data: T", "indices: Tidx", "segment_ids: Tsegmentids",
                      "num_segments: Tnumsegments"],
              outputs=["output: T"],
              attrs=[_types, "Tidx: {int32, int64} = DT_INT32", _NUM,
                     "Tsegmentids: {int32, int64} = DT_INT32",
                     "sparse_gradient: bool = false"],
              shape_fn=_sparse_segment_num_shape)
    define_op(f"SparseSegment{_red}Grad",
              inputs=["grad: T", "indices: Tidx", "segment_ids: Tsegmentids",
                      "output_dim0: int32"],
              outputs=["output: T"], attrs=[_FLOAT, *_IDX], shape_fn=_sparse_segment_grad_shape)


def _sparse_segment(reduction: str, data, indices, segment_ids, name, num_segments,
                    sparse_gradient):
    if num_segments is not None:
        return apply_op(f"SparseSegment{reduction}WithNumSegments", data=data, indices=indices,
                        segment_ids=segment_ids, num_segments=num_segments,
                        sparse_gradient=sparse_gradient,
                        name=name or f"SparseSegment{reduction}WithNumSegments")
    return apply_op(f"SparseSegment{reduction}", data=data, indices=indices,
                    segment_ids=segment_ids, sparse_gradient=sparse_gradient,
                    name=name or f"SparseSegment{reduction}")


def sparse_segment_sum(data, indices, segment_ids, name=None, num_segments=None,
                       sparse_gradient=False):
    """Sums of the rows `data[indices]` by sorted `segment_ids` (`tf.sparse.segment_sum`).

    Args:
      data: a tensor of rank >= 1.
      indices: 1-D int32/int64, rows of `data` to select (may repeat).
      segment_ids: 1-D int32/int64 of the same length, non-decreasing.
      name: a name for the op.
      num_segments: the number of output rows (default: `segment_ids[-1] + 1`).
      sparse_gradient: the gradient with respect to `data` is an IndexedSlices.

    Returns:
      A tensor of `data`'s dtype, shape `[num_segments] + data.shape[1:]`.

    Raises:
      InvalidArgumentError (at run time): an index out of range, or segment ids not sorted,
        negative, or not below `num_segments`.
    """
    return _sparse_segment("Sum", data, indices, segment_ids, name, num_segments,
                           sparse_gradient)


def sparse_segment_mean(data, indices, segment_ids, name=None, num_segments=None,
                        sparse_gradient=False):
    """Means of the rows `data[indices]` by sorted `segment_ids` (`tf.sparse.segment_mean`);
    empty segments are zero. Arguments as for `sparse_segment_sum`; `data` is floating."""
    return _sparse_segment("Mean", data, indices, segment_ids, name, num_segments,
                           sparse_gradient)


def sparse_segment_sqrt_n(data, indices, segment_ids, name=None, num_segments=None,
                          sparse_gradient=False):
    """Sums divided by sqrt(segment size) (`tf.sparse.segment_sqrt_n`); empty segments are
    zero. Arguments as for `sparse_segment_sum`; `data` is floating."""
    return _sparse_segment("SqrtN", data, indices, segment_ids, name, num_segments,
                           sparse_gradient)


def _rows(t):
    """dim 0 of `t` as an int32 scalar: a Const when static, else Shape(t)[0]."""
    dims = static_dims(t)
    if dims is not None and dims and dims[0] is not None:
        return constant_op.constant(np.int32(dims[0]))
    return array_ops.shape(t, out_type=dtypes.int32)[0]


def _sparse_segment_grad(reduction: str):
    def grad_fn(op, grad):
        data, indices, segment_ids = op.inputs[:3]
        grad = indexed_slices_to_tensor(grad)
        extra = [None] * (len(op.inputs) - 3)
        grad_op = f"SparseSegment{reduction}Grad"
        if op.attrs.get("sparse_gradient"):
            # Row i of the dense gradient op with indices = range(n) is the contribution of
            # entry i; those rows at `indices` are the IndexedSlices.
            n = array_ops.shape(indices, out_type=dtypes.int32)[0]
            positions = apply_op("Range", start=np.int32(0), limit=n, delta=np.int32(1),
                                 name="Range")
            positions = apply_op("Cast", x=positions, DstT=indices.dtype, name="Cast") \
                if indices.dtype != dtypes.int32 else positions
            values = apply_op(grad_op, grad=grad, indices=positions, segment_ids=segment_ids,
                              output_dim0=n, name=grad_op)
            dense_shape = array_ops.shape(data, out_type=indices.dtype)
            return [IndexedSlices(values, indices, dense_shape), None, None, *extra]
        dense = apply_op(grad_op, grad=grad, indices=indices, segment_ids=segment_ids,
                         output_dim0=_rows(data), name=grad_op)
        return [dense, None, None, *extra]

    return grad_fn


def _sparse_segment_grad_grad(reduction: str):
    """The gradient op is linear in `grad`; its transpose is the forward op with
    num_segments = rows of `grad`."""
    def grad_fn(op, grad):
        g_in, indices, segment_ids = op.inputs[:3]
        back = apply_op(f"SparseSegment{reduction}WithNumSegments",
                        data=indexed_slices_to_tensor(grad), indices=indices,
                        segment_ids=segment_ids, num_segments=_rows(g_in),
                        name=f"SparseSegment{reduction}WithNumSegments")
        return [back, None, None, None]

    return grad_fn


for _red in _REDUCTIONS:
    gradient(f"SparseSegment{_red}")(_sparse_segment_grad(_red))
    gradient(f"SparseSegment{_red}WithNumSegments")(_sparse_segment_grad(_red))
    gradient(f"SparseSegment{_red}Grad")(_sparse_segment_grad_grad(_red))


# ------------------------------------------------------------------------------------------
# SparseToDense


def _sparse_to_dense_shape(op):
    indices = static_dims(op.inputs[0])
    if indices is not None and len(indices) > 2:
        raise ValueError(f"Shape must be at most rank 2 but is rank {len(indices)}")
    out_dims = with_rank(static_dims(op.inputs[1]), 1)
    values = static_dims(op.inputs[2])
    if values is not None and len(values) > 1:
        raise ValueError(f"Shape must be at most rank 1 but is rank {len(values)}")
    with_rank(static_dims(op.inputs[3]), 0)
    shape = constant_value_as_shape(op.inputs[1])
    if shape.ndims is None and out_dims[0] is not None:
        shape = tensor_shape.unknown_shape(out_dims[0])
    return [shape]


define_op("SparseToDense",
          inputs=["sparse_indices: Tindices", "output_shape: Tindices", "sparse_values: T",
                  "default_value: T"],
          outputs=["dense: T"],
          attrs=["validate_indices: bool = true", "T: type", "Tindices: {int32, int64}"],
          shape_fn=_sparse_to_dense_shape)


@gradient("SparseToDense")
def _sparse_to_dense_grad(op, grad):
    """Values get the gradient at their positions; the default value gets the rest."""
    indices, output_shape, values, _ = op.inputs
    grad = gather_ops.indexed_slices_to_tensor(grad)
    nd = static_dims(indices)
    if nd is None or len(nd) < 2:  # 0-D or 1-D: each entry indexes a 1-D output
        indices = array_ops.reshape(indices, [-1, 1])
    picked = gather_ops.gather_nd(grad, indices)
    if values.shape.ndims == 0:
        values_grad = reduction_ops.reduce_sum(picked)
    else:
        values_grad = array_ops.reshape(picked, array_ops.shape(values))
    default_grad = reduction_ops.reduce_sum(grad) - reduction_ops.reduce_sum(picked)
    return [None, None, values_grad, default_grad]


def sparse_to_dense(sparse_indices, output_shape, sparse_values, default_value=0,
                    validate_indices=True, name=None):
    """A dense tensor of `output_shape` holding `sparse_values` at `sparse_indices` and
    `default_value` elsewhere (`tf.sparse_to_dense`).

    Args:
      sparse_indices: 0-D, 1-D or 2-D int32/int64; row i is the full index of value i.
      output_shape: 1-D, the dense shape.
      sparse_values: a scalar (used for every index) or 1-D, one value per index.
      default_value: the scalar for the other positions.
      validate_indices: check at run time that indices are in bounds, sorted and unique.
      name: a name for the op.

    Raises:
      InvalidArgumentError (at run time): an index out of bounds, out of order or repeated.
    """
    with graph_lib.name_scope(name, "SparseToDense", [sparse_indices, output_shape,
                                                      sparse_values, default_value]) as scope:
        sparse_values = convert_to_tensor(sparse_values, name="sparse_values")
        default_value = convert_to_tensor(default_value, dtype=sparse_values.dtype,
                                          name="default_value")
        return apply_op("SparseToDense", sparse_indices=sparse_indices,
                        output_shape=output_shape, sparse_values=sparse_values,
                        default_value=default_value, validate_indices=validate_indices,
                        name=scope)


def _as_sparse(sp_input, fn: str) -> SparseTensor:
    if isinstance(sp_input, SparseTensorValue):
        return SparseTensor.from_value(sp_input)
    if not isinstance(sp_input, SparseTensor):
        raise TypeError(f"Input must be a SparseTensor, got {type(sp_input).__name__} in "
                        f"tf.{fn}")
    return sp_input


def sparse_tensor_to_dense(sp_input, default_value=None, validate_indices=True, name=None):
    """The dense tensor a SparseTensor stands for (`tf.sparse.to_dense`), `default_value`
    (zero by default) where it has no entry.

    Raises:
      TypeError: `sp_input` is not a SparseTensor.
      InvalidArgumentError (at run time, with `validate_indices`): indices out of bounds,
        out of order or repeated (`tf.sparse.reorder` sorts them).
    """
    sp_input = _as_sparse(sp_input, "sparse.to_dense")
    if default_value is None:
        default_value = b"" if sp_input.dtype.base_dtype == dtypes.string else \
            np.zeros((), sp_input.dtype.as_numpy_dtype)
    default_value = convert_to_tensor(default_value, dtype=sp_input.dtype)
    return apply_op("SparseToDense", sparse_indices=sp_input.indices,
                    output_shape=sp_input.dense_shape, sparse_values=sp_input.values,
                    default_value=default_value, validate_indices=validate_indices,
                    name=name or "SparseToDense")


# ------------------------------------------------------------------------------------------
# SparseReorder


def _sparse_reorder_shape(op):
    indices = with_rank(static_dims(op.inputs[0]), 2)
    values = with_rank(static_dims(op.inputs[1]), 1)
    with_rank(static_dims(op.inputs[2]), 1)
    n = merge_dims(indices[:1], values)
    return [n + indices[1:], n]


define_op("SparseReorder", inputs=["input_indices: int64", "input_values: T",
                                   "input_shape: int64"],
          outputs=["output_indices: int64", "output_values: T"], attrs=["T: type"],
          shape_fn=_sparse_reorder_shape)


@gradient("SparseReorder")
def _sparse_reorder_grad(op, _, values_grad):
    """The values' gradient gathered back through the inverse of the sorting permutation."""
    input_indices, _, input_shape = op.inputs
    n = array_ops.shape(input_indices, out_type=dtypes.int64)[0]
    entries = sequence_ops.range(np.int64(0), n, np.int64(1))
    _, order = apply_op("SparseReorder", input_indices=input_indices, input_values=entries,
                        input_shape=input_shape, name="SparseReorder")
    inverse = array_ops.invert_permutation(math_ops.cast(order, dtypes.int32))
    values_grad = gather_ops.indexed_slices_to_tensor(values_grad)
    return [None, gather_ops.gather(values_grad, inverse), None]


def sparse_reorder(sp_input, name=None) -> SparseTensor:
    """The same SparseTensor with its entries in row-major (lexicographic) index order
    (`tf.sparse.reorder`); repeated indices stay, in their original order.

    Raises:
      TypeError: `sp_input` is not a SparseTensor.
    """
    sp_input = _as_sparse(sp_input, "sparse.reorder")
    indices, values = apply_op("SparseReorder", input_indices=sp_input.indices,
                               input_values=sp_input.values, input_shape=sp_input.dense_shape,
                               name=name or "SparseReorder")
    return SparseTensor(indices, values, sp_input.dense_shape)


# ------------------------------------------------------------------------------------------
# from_dense (a composition: Where, GatherNd, Shape)


def from_dense(tensor, name=None) -> SparseTensor:
    """A SparseTensor of the non-zero entries of a dense tensor (`tf.sparse.from_dense`),
    indices in row-major order."""
    with graph_lib.name_scope(name, "dense_to_sparse", [tensor]):
        tensor = convert_to_tensor(tensor)
        zero = np.zeros((), tensor.dtype.as_numpy_dtype) if tensor.dtype != dtypes.string \
            else b""
        indices = comparison_ops.where(comparison_ops.not_equal(tensor, zero))
        values = gather_ops.gather_nd(tensor, indices)
        shape = array_ops.shape(tensor, out_type=dtypes.int64)
        return SparseTensor(indices, values, shape)


# ---- composite tensors' graph-side pieces (their classes are in framework/) ---------------


def sparse_placeholder(dtype, shape=None, name=None) -> SparseTensor:
    """A SparseTensor of placeholders (`tf.sparse_placeholder`): feed a SparseTensorValue.

    As TensorFlow builds it: with a `shape` (a list, a TensorShape or a shape tensor) the
    dense shape is a PlaceholderWithDefault of that shape (unknown dimensions as -1), so only
    `indices` and `values` need feeding; with none it is a Placeholder. With a `name` the
    parts are `name/indices`, `name/values` and `name/shape` (its default
    `name/shape_default`); without one they get the default names at the current scope.
    """
    def part(suffix):
        return None if name is None else f"{name}/{suffix}"

    if shape is None:
        rank, static = None, None
        dense_shape = array_ops.placeholder(dtypes.int64, [None], name=part("shape"))
    elif isinstance(shape, Tensor):
        shape = convert_to_tensor(shape, dtype=dtypes.int64)
        rank = shape.shape.with_rank(1).as_list()[0]
        static = constant_value_as_shape(shape)
        dense_shape = array_ops.placeholder_with_default(shape, [rank], name=part("shape"))
    else:
        static = tensor_shape.as_shape(shape)
        rank = static.ndims
        if rank is None:
            dense_shape = array_ops.placeholder(dtypes.int64, [None], name=part("shape"))
        else:
            default = convert_to_tensor(
                np.array([-1 if d is None else d for d in static.as_list()], np.int64),
                name=part("shape_default"))
            dense_shape = array_ops.placeholder_with_default(default, [rank],
                                                             name=part("shape"))
    values = array_ops.placeholder(dtype, [None], name=part("values"))
    indices = array_ops.placeholder(dtypes.int64, [None, rank], name=part("indices"))
    result = SparseTensor(indices, values, dense_shape)
    if static is not None:
        result.set_shape(static)
    return result


def _indexed_slices_to_tensor(value: IndexedSlices, dtype=None, name=None,
                              as_ref=False) -> Tensor:
    """Densifies (sums rows with repeated indices), as TensorFlow does implicitly."""
    if dtype is not None and not dtype.is_compatible_with(value.dtype):
        raise ValueError(f"Tensor conversion requested dtype {dtype.name} for IndexedSlices "
                         f"with dtype {value.dtype.name}")
    if value.dense_shape is None:
        raise ValueError(f"Tensor conversion requested for IndexedSlices without dense_shape: "
                         f"{value!r}")
    return sequence_ops.unsorted_segment_sum(value.values, value.indices, value.dense_shape[0],
                                             name=name)


register_tensor_conversion_function(IndexedSlices, _indexed_slices_to_tensor)
