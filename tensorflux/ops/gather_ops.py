"""Gathering, scattering and selection ops: Gather, GatherV2, GatherNd, ScatterNd, OneHot,
Unique, TopKV2, DynamicPartition, DynamicStitch / ParallelDynamicStitch, and the
`tf.sequence_mask` composition.

Kernels are in tensorflux/kernels/cpu/gather_ops.py. The gradient of an axis-0 gather is an
IndexedSlices (only the looked-up rows), so optimizers can update sparsely.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.common_shapes import (
    constant_evaluator,
    constant_value,
    constant_value_as_shape,
    merge_dims,
    merge_shapes,
    scalar_value,
    shape_str,
    static_dims,
    static_shape,
    with_rank,
    with_rank_at_least,
)
from tensorflux.framework.indexed_slices import IndexedSlices
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient, not_differentiable
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, constant_op, joining_ops

__all__ = ["gather", "gather_nd", "scatter_nd", "one_hot", "unique", "top_k",
           "dynamic_partition", "dynamic_stitch", "parallel_dynamic_stitch", "sequence_mask"]



def indexed_slices_to_tensor(value) -> Tensor:
    """A dense tensor for a gradient that may be an IndexedSlices."""
    return convert_to_tensor(value) if hasattr(value, "_is_indexed_slices") else value


def _const(value, dtype) -> Tensor:
    return constant_op.constant(np.asarray(value, dtype=dtype.as_numpy_dtype))


# ------------------------------------------------------------------------------------------
# Gather, GatherV2


def _gather_out(params, indices, axis, batch_dims):
    """Output dims of a gather from static dims (lists or None)."""
    if params is None or indices is None:
        return None
    return params[:axis] + indices[batch_dims:] + params[axis + 1:]


def _gather_v2_shape(op):
    params, indices = static_dims(op.inputs[0]), static_dims(op.inputs[1])
    with_rank(static_dims(op.inputs[2]), 0)
    batch_dims = op.attrs["batch_dims"]
    axis = scalar_value(op.inputs[2])
    if batch_dims < 0:
        if indices is None:
            return [None]
        batch_dims += len(indices)
    if axis is None:
        if params is None or indices is None:
            return [None]
        return [[None] * (len(params) + len(indices) - 1 - batch_dims)]
    if params is None:
        return [None]
    with_rank_at_least(params, axis + 1 if axis >= 0 else -axis)
    axis %= len(params)
    if indices is None:
        return [None]
    if batch_dims > axis:
        raise ValueError(f"batch_dims ({batch_dims}) must be less than or equal to axis "
                         f"({axis}).")
    if batch_dims > len(indices):
        raise ValueError(f"batch_dims ({batch_dims}) must be less than or equal to rank("
                         f"indices) ({len(indices)}).")
    if batch_dims:
        merged = merge_dims(params[:batch_dims], indices[:batch_dims])
        params = merged + params[batch_dims:]
        indices = merged + indices[batch_dims:]
    return [_gather_out(params, indices, axis, batch_dims)]


define_op("GatherV2", inputs=["params: Tparams", "indices: Tindices", "axis: Taxis"],
          outputs=["output: Tparams"],
          attrs=["batch_dims: int = 0", "Tparams: type", "Tindices: {int16, int32, int64}",
                 "Taxis: {int32, int64}"], shape_fn=_gather_v2_shape)


def _gather_v1_shape(op):
    params, indices = static_dims(op.inputs[0]), static_dims(op.inputs[1])
    if params is None or indices is None:
        return [None]
    with_rank_at_least(params, 1)
    return [indices + params[1:]]


define_op("Gather", inputs=["params: Tparams", "indices: Tindices"],
          outputs=["output: Tparams"],
          attrs=["validate_indices: bool = true", "Tparams: type",
                 "Tindices: {int32, int64}"], shape_fn=_gather_v1_shape)


def gather(params, indices, validate_indices=None, name: str | None = None, axis=None,
           batch_dims: int = 0):
    """Slices of `params` along `axis` at `indices` (`tf.gather`).

    `output = params[:axis] + indices[batch_dims:] + params[axis + 1:]` in shape. Indices
    out of range are an InvalidArgumentError at run time. Resource variables read only the
    rows asked for (`sparse_read`).
    """
    del validate_indices
    if axis is None:
        axis = batch_dims
    axis_value = constant_value(axis) if isinstance(axis, Tensor) else axis
    if axis_value is None or int(np.reshape(axis_value, ())) != 0 or batch_dims != 0:
        return apply_op("GatherV2", params=params, indices=indices, axis=axis,
                        batch_dims=batch_dims, name=name or "GatherV2")
    if hasattr(params, "sparse_read"):
        return params.sparse_read(indices, name=name)
    return apply_op("GatherV2", params=params, indices=indices, axis=axis,
                    name=name or "GatherV2")


def _axis0_gather_grad(params: Tensor, indices: Tensor, grad) -> IndexedSlices:
    """IndexedSlices(rows = grad reshaped to [n_indices, params.shape[1:]], indices)."""
    grad = indexed_slices_to_tensor(grad)
    pdims = static_shape(params)
    if pdims is not None:
        dense_shape = _const(pdims, dtypes.int32)
        values_shape = _const([-1] + pdims[1:], dtypes.int32)
    else:
        dense_shape = array_ops.shape(params, out_type=dtypes.int32)
        values_shape = joining_ops.concat([[-1], dense_shape[1:]], 0)
    values = array_ops.reshape(grad, values_shape)
    flat = indices if indices.shape.ndims == 1 else array_ops.reshape(indices, [-1])
    return IndexedSlices(values, flat, dense_shape)


@gradient("Gather")
def _gather_grad(op, grad):
    return [_axis0_gather_grad(op.inputs[0], op.inputs[1], grad), None]


@gradient("GatherV2")
def _gather_v2_grad(op, grad):
    params, indices, axis_t = op.inputs
    axis = scalar_value(axis_t)
    batch_dims = op.attrs["batch_dims"]
    if axis == 0 and batch_dims == 0:
        return [_axis0_gather_grad(params, indices, grad), None, None]
    pdims, idims = static_dims(params), static_dims(indices)
    if pdims is None or idims is None or axis is None:
        raise NotImplementedError("The gradient of GatherV2 with axis != 0 needs a constant "
                                  "axis and inputs of known rank")
    n = len(pdims)
    axis %= n
    if batch_dims < 0:
        batch_dims += len(idims)
    return [_batch_gather_grad(params, indices, indexed_slices_to_tensor(grad), axis,
                               batch_dims), None, None]


def _batch_gather_grad(params, indices, grad, axis: int, b: int) -> Tensor:
    """Dense gradient of a gather along `axis` with `b` batch dims: move the gathered axis
    next to the batch dims, segment-sum the rows (offsetting indices by batch), move back."""
    pdims = static_dims(params)
    n = len(pdims)
    static = static_shape(params)
    pshape = _const(static, dtypes.int32) if static is not None else \
        array_ops.shape(params, out_type=dtypes.int32)

    def part(lo, hi):
        return np.array(static[lo:hi], dtype=np.int32) if static is not None else pshape[lo:hi]

    values = array_ops.reshape(grad, joining_ops.concat([part(0, axis), [-1], part(axis + 1, n)],
                                                      0) if static is None else
                               np.array(static[:axis] + [-1] + static[axis + 1:], np.int32))
    perm = list(range(b)) + [axis] + list(range(b, axis)) + list(range(axis + 1, n))
    values = array_ops.transpose(values, np.array(perm, dtype=np.int32))
    gather_size = pshape[axis] if static is None else static[axis]
    flat_indices = array_ops.reshape(indices, [-1])
    if b:
        batch = int(np.prod(static[:b])) if static is not None else \
            apply_op("Prod", input=part(0, b), reduction_indices=[0], keep_dims=False,
                     name="Prod")
        offsets = apply_op("Mul", x=apply_op("Range", start=0, limit=batch, delta=1,
                                             name="Range"),
                           y=gather_size, name="mul") if static is None else \
            np.arange(batch, dtype=np.int64) * static[axis]
        idims = static_dims(indices)
        per_batch = int(np.prod(idims[b:])) if all(d is not None for d in idims[b:]) \
            else None
        if static is not None and per_batch is not None:
            offsets = np.repeat(offsets, per_batch).astype(indices.dtype.as_numpy_dtype)
        else:
            inner = apply_op("Prod", input=array_ops.shape(indices)[b:],
                             reduction_indices=[0], keep_dims=False, name="Prod")
            offsets = array_ops.reshape(joining_ops.tile(
                array_ops.expand_dims(apply_op("Cast", x=offsets, DstT=indices.dtype,
                                               name="Cast"), 1),
                joining_ops.stack([1, apply_op("Cast", x=inner, DstT=dtypes.int32,
                                             name="Cast")])), [-1])
        flat_indices = apply_op("AddV2", x=flat_indices, y=offsets, name="add")
        values = array_ops.reshape(values, joining_ops.concat([[-1], part(b, axis),
                                                             part(axis + 1, n)], 0)
                                   if static is None else
                                   np.array([-1] + static[b:axis] + static[axis + 1:],
                                            np.int32))
        num = batch * gather_size if static is not None else \
            apply_op("Mul", x=batch, y=gather_size, name="mul")
    else:
        num = gather_size
    out = apply_op("UnsortedSegmentSum", data=values, segment_ids=flat_indices,
                   num_segments=num, name="UnsortedSegmentSum")
    if b:
        moved = np.array(static[:b] + [static[axis]] + static[b:axis] + static[axis + 1:],
                         np.int32) if static is not None else joining_ops.concat(
            [part(0, b), array_ops.expand_dims(gather_size, 0), part(b, axis),
             part(axis + 1, n)], 0)
        out = array_ops.reshape(out, moved)
    inv = list(range(b)) + list(range(b + 1, axis + 1)) + [b] + list(range(axis + 1, n))
    return array_ops.transpose(out, np.array(inv, dtype=np.int32))


@constant_evaluator("GatherV2")
def _gather_v2_const(op):
    p, i = constant_value(op.inputs[0]), constant_value(op.inputs[1])
    axis = scalar_value(op.inputs[2])
    if p is None or i is None or axis is None or op.attrs["batch_dims"] != 0 or \
            i.size * max(p.size, 1) > (1 << 22):
        return None
    return np.take(p, i, axis=axis)


# ------------------------------------------------------------------------------------------
# GatherNd, ScatterNd


def _gather_nd_shape(op):
    params, indices = static_dims(op.inputs[0]), static_dims(op.inputs[1])
    if params is None or indices is None:
        return [None]
    if not indices:
        raise ValueError("indices.shape[-1] must be <= params.rank, but saw indices shape: "
                         "[] and params shape: " + shape_str(params))
    k = indices[-1]
    if k is None:
        return [None]
    if k > len(params):
        raise ValueError(f"indices.shape[-1] must be <= params.rank, but saw indices shape: "
                         f"{shape_str(indices)} and params shape: "
                         f"{shape_str(params)}")
    return [indices[:-1] + params[k:]]


define_op("GatherNd", inputs=["params: Tparams", "indices: Tindices"],
          outputs=["output: Tparams"],
          attrs=["Tparams: type", "Tindices: {int16, int32, int64}",
                 "bad_indices_policy: string = ''"], shape_fn=_gather_nd_shape)


def gather_nd(params, indices, name: str | None = None, batch_dims: int = 0):
    """Slices of `params` at N-d `indices` (`tf.gather_nd`): `indices[..., :]` is an index
    into the first `indices.shape[-1]` dimensions of `params`. With `batch_dims` b (a
    Python int or a constant), the first b dimensions of both are batch dimensions: each
    batch's indices index that batch's slice of `params`."""
    if isinstance(batch_dims, Tensor):
        value = constant_value(batch_dims)
        if value is None:
            raise ValueError("tf.gather_nd needs a constant batch_dims in tensorflux")
        batch_dims = int(value)
    if batch_dims < 0:
        raise ValueError("tf.gather_nd does not allow negative batch_dims.")
    if batch_dims:
        return _batch_gather_nd(params, indices, int(batch_dims), name)
    if hasattr(params, "_gather_nd"):
        return params._gather_nd(indices, name=name)
    return apply_op("GatherNd", params=params, indices=indices, name=name or "GatherNd")


def _batch_gather_nd(params, indices, batch_dims: int, name) -> Tensor:
    """gather_nd with batch dimensions, as one GatherNd on the batch dimensions flattened
    into one: each index gets its batch's position in front (its gradient is GatherNd's)."""
    from tensorflux.ops import sequence_ops  # (sequence_ops imports this module)

    with graph_lib.name_scope(name, "BatchGatherND", [params, indices]):
        params = convert_to_tensor(params, name="params")
        indices = convert_to_tensor(indices, name="indices")
        p_rank, i_rank = params.shape.ndims, indices.shape.ndims
        if i_rank is not None and batch_dims >= i_rank:
            raise ValueError(f"Argument `batch_dims` = {batch_dims} must be less than "
                             f"rank(`indices`) = {i_rank}")
        if p_rank is not None and batch_dims >= p_rank:
            raise ValueError(f"Argument `batch_dims` = {batch_dims} must be less than "
                             f"rank(`params`) = {p_rank}")
        itype = indices.dtype
        p_shape = array_ops.shape(params, out_type=itype)
        i_shape = array_ops.shape(indices, out_type=itype)
        batch_shape = p_shape[:batch_dims]
        batch = apply_op("Prod", input=batch_shape, reduction_indices=[0])
        flat_params = array_ops.reshape(params, joining_ops.concat(
            [[batch], p_shape[batch_dims:]], 0))
        inner = i_shape[batch_dims:]  # the indices' other dimensions, then K
        flat_indices = array_ops.reshape(indices, joining_ops.concat([[batch], inner], 0))
        # each index's batch position, one more column in front of its K
        rows = array_ops.reshape(
            sequence_ops.range(batch, dtype=itype),
            joining_ops.concat([[-1], array_ops.ones_like(inner[:-1]), [1]], 0))
        rows = joining_ops.broadcast_to(rows, joining_ops.concat(
            [array_ops.shape(flat_indices, out_type=itype)[:-1], [1]], 0))
        out = apply_op("GatherNd", params=flat_params,
                       indices=joining_ops.concat([rows, flat_indices], -1), name="GatherNd")
        result = array_ops.reshape(out, joining_ops.concat(
            [batch_shape, array_ops.shape(out, out_type=itype)[1:]], 0))
        result.set_shape(_batch_gather_nd_shape(params, indices, batch_dims))
        return result


def _batch_gather_nd_shape(params, indices, batch_dims: int):
    """The static shape of a batched gather_nd: the batch dimensions (of params and indices
    merged), the indices' inner dimensions, then the params' dimensions past the K
    indexed."""
    p, i = static_dims(params), static_dims(indices)
    if p is None or i is None or i[-1] is None:
        return None
    batch = merge_dims(p[:batch_dims], i[:batch_dims])
    return batch + i[batch_dims:-1] + p[batch_dims + i[-1]:]


@gradient("GatherNd")
def _gather_nd_grad(op, grad):
    params, indices = op.inputs
    grad = indexed_slices_to_tensor(grad)
    dims = static_shape(params)
    ref_shape = _const(dims, indices.dtype) if dims is not None else \
        array_ops.shape(params, out_type=indices.dtype)
    idims = static_dims(indices)
    if idims is not None and len(idims) == 2 and idims[-1] == 1:
        return [IndexedSlices(grad, array_ops.squeeze(indices, axis=[-1]), ref_shape), None]
    return [scatter_nd(indices, grad, ref_shape), None]


def _scatter_nd_shape(op):
    indices, updates = static_dims(op.inputs[0]), static_dims(op.inputs[1])
    with_rank(static_dims(op.inputs[2]), 1)
    out = constant_value_as_shape(op.inputs[2])
    if indices is None or updates is None or out.ndims is None:
        return [out]
    out_dims = out.as_list()
    k = indices[-1] if indices else None
    if k is None:
        return [out]
    outer = len(indices) - 1
    if len(updates) < outer:
        raise ValueError(f"Shape must be at least rank {outer} but is rank {len(updates)}")
    try:
        merge_dims(indices[:outer], updates[:outer])
    except ValueError as e:
        raise ValueError(f"Dimensions [0,{outer}) of indices[shape="
                         f"{shape_str(indices)}] = "
                         f"{shape_str(indices[:outer])} must match dimensions "
                         f"[0,{outer}) of updates[shape={shape_str(updates)}] = "
                         f"{shape_str(updates[:outer])}: {e}") from None
    inner = updates[outer:]
    if len(inner) != len(out_dims) - k:
        raise ValueError(f"Dimensions [{outer},{len(updates)}) of updates[shape="
                         f"{shape_str(updates)}] must match dimensions [{k},"
                         f"{len(out_dims)}) of output[shape={shape_str(out_dims)}]")
    merge_dims(inner, out_dims[k:])
    return [out]


define_op("ScatterNd", inputs=["indices: Tindices", "updates: T", "shape: Tindices"],
          outputs=["output: T"],
          attrs=["T: type", "Tindices: {int16, int32, int64}",
                 "bad_indices_policy: string = ''"], shape_fn=_scatter_nd_shape)


def scatter_nd(indices, updates, shape, name: str | None = None):
    """A zero tensor of `shape` with `updates` added at `indices` (`tf.scatter_nd`);
    repeated indices add up."""
    return apply_op("ScatterNd", indices=indices, updates=updates, shape=shape,
                    name=name or "ScatterNd")


@gradient("ScatterNd")
def _scatter_nd_grad(op, grad):
    return [None, gather_nd(grad, op.inputs[0]), None]


# ------------------------------------------------------------------------------------------
# OneHot


def _one_hot_shape(op):
    axis = op.attrs["axis"]
    if axis < -1:
        raise ValueError(f"axis must be >= -1, but got {axis}")
    indices = static_dims(op.inputs[0])
    depth = scalar_value(op.inputs[1])
    if depth is not None and depth < 0:
        raise ValueError(f"Dimension size, given by scalar input 1, must be non-negative but "
                         f"is {depth}")
    if indices is None:
        return [None]
    n = len(indices)
    if axis > n:
        raise ValueError(f"Expected axis to be -1 or between [0, {n + 1}).  But received: "
                         f"{axis}")
    pos = n if axis == -1 else axis
    return [indices[:pos] + [depth] + indices[pos:]]


define_op("OneHot", inputs=["indices: TI", "depth: int32", "on_value: T", "off_value: T"],
          outputs=["output: T"],
          attrs=["axis: int = -1", "T: type", "TI: {uint8, int8, int32, int64} = DT_INT64"],
          shape_fn=_one_hot_shape)
not_differentiable("OneHot")


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None,
            name: str | None = None):
    """A one-hot encoding of `indices` (`tf.one_hot`): `on_value` where the new dimension's
    position equals the index, `off_value` elsewhere (indices out of range give all off).

    Raises:
      TypeError: `on_value`, `off_value` and `dtype` disagree.
    """
    with graph_lib.name_scope(name, "one_hot", [indices, depth, on_value, off_value]) as scope:
        dtype = dtypes.as_dtype(dtype).base_dtype if dtype is not None else None
        on = convert_to_tensor(on_value, dtype_hint=dtype) if on_value is not None else None
        off = convert_to_tensor(off_value, dtype_hint=dtype) if off_value is not None else None
        on_dt = on.dtype.base_dtype if on is not None else None
        off_dt = off.dtype.base_dtype if off is not None else None
        if on is not None or off is not None:
            if dtype is not None:
                for what, dt in (("on_value", on_dt), ("off_value", off_dt)):
                    if dt is not None and dt != dtype:
                        raise TypeError(f"dtype {dt} of {what} does not match dtype parameter "
                                        f"{dtype}")
            else:
                dtype = on_dt if on is not None else off_dt
        elif dtype is None:
            dtype = dtypes.float32
        if on is None:
            on, on_dt = convert_to_tensor(1, dtype, name="on_value"), dtype
        if off is None:
            off, off_dt = convert_to_tensor(0, dtype, name="off_value"), dtype
        if on_dt != off_dt:
            raise TypeError(f"dtype {on_dt} of on_value does not match dtype {off_dt} of "
                            "off_value")
        return apply_op("OneHot", indices=indices, depth=depth, on_value=on, off_value=off,
                        axis=-1 if axis is None else axis, name=scope)


# ------------------------------------------------------------------------------------------
# Unique


def _unique_shape(op):
    with_rank(static_dims(op.inputs[0]), 1)
    return [[None], op.inputs[0].shape]


define_op("Unique", inputs=["x: T"], outputs=["y: T", "idx: out_idx"],
          attrs=["T: type", "out_idx: {int32, int64} = DT_INT32"], shape_fn=_unique_shape)
not_differentiable("Unique")


def unique(x, out_idx=dtypes.int32, name: str | None = None):
    """The distinct elements of 1-D `x` in order of first appearance, and for each element
    of `x` its position in them (`tf.unique`): `x == y[idx]`."""
    return apply_op("Unique", x=x, out_idx=dtypes.as_dtype(out_idx), name=name or "Unique")


# ------------------------------------------------------------------------------------------
# TopKV2


def _top_k_shape(op):
    dims = with_rank_at_least(static_dims(op.inputs[0]), 1)
    with_rank(static_dims(op.inputs[1]), 0)
    k = scalar_value(op.inputs[1])
    if k is not None and k < 0:
        raise ValueError(f"Dimension size, given by scalar input 1, must be non-negative but "
                         f"is {k}")
    if dims is None:
        return [None, None]
    if k is not None and dims[-1] is not None and dims[-1] < k:
        raise ValueError(f"input must have last dimension >= k = {k} but is {dims[-1]}")
    out = dims[:-1] + [k]
    return [out, out]


define_op("TopKV2", inputs=["input: T", "k: Tk"], outputs=["values: T", "indices: index_type"],
          attrs=["sorted: bool = true",
                 "T: {float, double, int32, uint8, int16, int8, int64, bfloat16, uint16, half, "
                 "uint32, uint64}", "Tk: {int16, int32, int64} = DT_INT32",
                 "index_type: {int16, int32, int64} = DT_INT32"], shape_fn=_top_k_shape)


def top_k(input, k=1, sorted: bool = True, name: str | None = None,  # noqa: A002
          index_type=dtypes.int32):
    """The `k` largest entries of the last dimension of `input` and their indices
    (`tf.nn.top_k`), largest first; equal values keep their index order.

    Returns:
      (values, indices), indices of dtype `index_type` (int32).
    """
    return apply_op("TopKV2", input=input, k=k, sorted=sorted,
                    index_type=dtypes.as_dtype(index_type), name=name or "TopKV2")


@gradient("TopKV2")
def _top_k_grad(op, grad, _):
    """Scatters the values' gradient to the input positions the indices name."""
    return [scatter_top_k_grad(op.inputs[0], op.outputs[1], grad), None]


def scatter_top_k_grad(x, idx, grad):
    """The gradient of a top-k selection along x's last axis: `grad` (shaped as `idx`)
    scattered to the positions `idx` names, zeros elsewhere (TopKV2, ApproxTopK)."""
    grad = indexed_slices_to_tensor(grad)
    in_dims, idx_dims = static_shape(x), static_shape(idx)
    if in_dims is not None and idx_dims is not None:
        n, k = in_dims[-1], idx_dims[-1]
        outer = int(np.prod(in_dims[:-1], dtype=np.int64))
        offsets = (np.arange(outer, dtype=np.int64) * n).reshape(-1, 1).astype(
            idx.dtype.as_numpy_dtype)
        flat = array_ops.reshape(apply_op("AddV2", x=array_ops.reshape(idx, [-1, k]),
                                          y=offsets, name="add"), [-1])
        total = np.array([outer * n], dtype=idx.dtype.as_numpy_dtype)
        in_shape = np.array(in_dims, dtype=np.int32)
    else:
        in_shape = array_ops.shape(x)
        n = apply_op("Cast", x=in_shape[-1], DstT=idx.dtype, name="Cast")
        k = apply_op("Cast", x=array_ops.shape(idx)[-1], DstT=dtypes.int32, name="Cast")
        idx_2d = array_ops.reshape(idx, joining_ops.stack([-1, k]))
        outer = array_ops.shape(idx_2d, out_type=idx.dtype)[0]
        offsets = array_ops.expand_dims(apply_op("Range", start=apply_op(
            "Cast", x=0, DstT=idx.dtype, name="Cast"), limit=apply_op(
            "Mul", x=outer, y=n, name="mul"), delta=n, name="Range"), -1)
        flat = array_ops.reshape(apply_op("AddV2", x=idx_2d, y=offsets, name="add"), [-1])
        total = array_ops.expand_dims(apply_op("Mul", x=outer, y=n, name="mul"), 0)
    dense = scatter_nd(array_ops.expand_dims(flat, -1), array_ops.reshape(grad, [-1]), total)
    return array_ops.reshape(dense, in_shape)


# ------------------------------------------------------------------------------------------
# DynamicPartition, DynamicStitch, ParallelDynamicStitch


def _dynamic_partition_shape(op):
    num = op.attrs["num_partitions"]
    data, parts = static_dims(op.inputs[0]), static_dims(op.inputs[1])
    if data is None or parts is None:
        return [None] * num
    with_rank_at_least(data, len(parts))
    prefix = data[:len(parts)]
    for a, b in zip(prefix, parts, strict=True):
        if a is not None and b is not None and a != b:
            raise ValueError(f"Dimensions must be equal, but are {a} and {b}")
    return [[None] + data[len(parts):]] * num


define_op("DynamicPartition", inputs=["data: T", "partitions: int32"],
          outputs=["outputs: num_partitions * T"],
          attrs=["num_partitions: int >= 1", "T: type"], shape_fn=_dynamic_partition_shape)


def dynamic_partition(data, partitions, num_partitions: int, name: str | None = None):
    """Splits `data` into `num_partitions` tensors by `partitions` (`tf.dynamic_partition`):
    output i holds, in order, the slices of `data` whose partition is i."""
    return apply_op("DynamicPartition", data=data, partitions=partitions,
                    num_partitions=num_partitions, name=name or "DynamicPartition")


def _dynamic_partition_const(op, index):
    data, parts = constant_value(op.inputs[0]), constant_value(op.inputs[1])
    if data is None or parts is None:
        return None
    return data[parts == index]


_dynamic_partition_const._takes_index = True
constant_evaluator("DynamicPartition")(_dynamic_partition_const)


@gradient("DynamicPartition")
def _dynamic_partition_grad(op, *grads):
    data, partitions = op.inputs
    num = op.attrs["num_partitions"]
    pdims = static_shape(partitions)
    if pdims is not None:
        original = _const(np.arange(int(np.prod(pdims, dtype=np.int64))).reshape(pdims),
                          dtypes.int32)
    else:
        pshape = array_ops.shape(partitions)
        count = apply_op("Prod", input=pshape, reduction_indices=[0], keep_dims=False,
                         name="Prod")
        original = array_ops.reshape(apply_op("Range", start=0, limit=count, delta=1,
                                              name="Range"), pshape)
    parts = dynamic_partition(original, partitions, num)
    stitched = apply_op("ParallelDynamicStitch", indices=parts,
                        data=[indexed_slices_to_tensor(g) for g in grads],
                        name="ParallelDynamicStitch")
    return [array_ops.reshape_like(stitched, data), None]


def _dynamic_stitch_shape(op):
    n = op.attrs["N"]
    indices, data = op.inputs[:n], op.inputs[n:]
    rest = None
    for i, d in zip(indices, data, strict=True):
        idims, ddims = static_dims(i), static_dims(d)
        if idims is None or ddims is None:
            continue
        with_rank_at_least(ddims, len(idims))
        tail = ddims[len(idims):]
        rest = tail if rest is None else merge_shapes(rest, tail)
    values = [constant_value(i) for i in indices]
    first = None
    if all(v is not None for v in values):
        first = max((int(v.max()) + 1 for v in values if v.size), default=0)
    return [None if rest is None else [first] + rest]


for _t in ("DynamicStitch", "ParallelDynamicStitch"):
    define_op(_t, inputs=["indices: N * int32", "data: N * T"], outputs=["merged: T"],
              attrs=["N: int >= 1", "T: type"], shape_fn=_dynamic_stitch_shape)


def dynamic_stitch(indices, data, name: str | None = None):
    """Interleaves `data` into one tensor by `indices` (`tf.dynamic_stitch`):
    `merged[indices[m][i]] = data[m][i]`, later entries winning over earlier ones."""
    return apply_op("DynamicStitch", indices=list(indices), data=list(data),
                    name=name or "DynamicStitch")


def parallel_dynamic_stitch(indices, data, name: str | None = None):
    """`dynamic_stitch` whose ties may resolve in any order (`tf.parallel_dynamic_stitch`)."""
    return apply_op("ParallelDynamicStitch", indices=list(indices), data=list(data),
                    name=name or "ParallelDynamicStitch")


@gradient("DynamicStitch")
def _dynamic_stitch_grad(op, grad):
    n = op.attrs["N"]
    grad = indexed_slices_to_tensor(grad)
    return [None] * n + [gather(grad, i) for i in op.inputs[:n]]


gradient("ParallelDynamicStitch")(_dynamic_stitch_grad)


# ------------------------------------------------------------------------------------------
# sequence_mask (a composition: Range < lengths[..., None])


def sequence_mask(lengths, maxlen=None, dtype=dtypes.bool, name: str | None = None):
    """`mask[i..., j] = j < lengths[i...]` for j in [0, maxlen) (`tf.sequence_mask`);
    `maxlen` defaults to the largest length.

    Raises:
      ValueError: `maxlen` is not a scalar.
    """
    with graph_lib.name_scope(name, "SequenceMask", [lengths, maxlen]):
        lengths = convert_to_tensor(lengths)
        if maxlen is None:
            r = lengths.shape.ndims
            axes = np.arange(r, dtype=np.int32) if r is not None else \
                apply_op("Range", start=0, limit=array_ops.rank(lengths), delta=1,
                         name="Range")
            maxlen = apply_op("Max", input=lengths, reduction_indices=axes, keep_dims=False,
                              name="Max")
            maxlen = apply_op("Maximum", x=constant_op.constant(0, dtype=maxlen.dtype),
                              y=maxlen, name="Maximum")
        else:
            maxlen = convert_to_tensor(maxlen)
        if maxlen.shape.ndims is not None and maxlen.shape.ndims != 0:
            raise ValueError(f"Argument `maxlen` must be scalar for sequence_mask, received "
                             f"`maxlen` = {maxlen}with shape '{maxlen.shape}' instead")
        row = apply_op("Range", start=constant_op.constant(0, dtype=maxlen.dtype),
                       limit=maxlen, delta=constant_op.constant(1, dtype=maxlen.dtype),
                       name="Range")
        matrix = array_ops.expand_dims(lengths, -1)
        if matrix.dtype != maxlen.dtype:
            matrix = apply_op("Cast", x=matrix, DstT=maxlen.dtype, name="Cast")
        result = apply_op("Less", x=row, y=matrix, name="Less")
        dtype = dtypes.as_dtype(dtype) if dtype is not None else None
        if dtype is None or dtype.is_compatible_with(result.dtype):
            return result
        return apply_op("Cast", x=result, DstT=dtype, name="Cast")
