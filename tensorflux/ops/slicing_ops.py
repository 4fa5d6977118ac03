"""Slicing ops: Slice, StridedSlice (with its gradient op StridedSliceGrad), NumPy-style
indexing of tensors (`t[1:, ..., tf.newaxis, 0]`) and `tf.boolean_mask`.

Kernels are in tensorflux/kernels/cpu/slicing_ops.py; the index canonicalization both
sides share is tensorflux/framework/slice_spec.py.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.common_shapes import (
    constant_evaluator,
    constant_value,
    constant_value_as_shape,
    merge_dims,
    num_elements,
    shape_evaluator,
    static_dims,
    static_shape,
    with_rank,
)
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient
from tensorflux.framework.operation import Tensor
from tensorflux.framework.slice_spec import strided_slice_spec
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, constant_op, gather_ops, joining_ops

__all__ = ["slice", "strided_slice", "boolean_mask"]

_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


# ------------------------------------------------------------------------------------------
# Slice


def _slice_shape(op):
    in_dims = static_dims(op.inputs[0])
    b_dims = with_rank(static_dims(op.inputs[1]), 1)
    s_dims = with_rank(static_dims(op.inputs[2]), 1)
    n = b_dims[0] if b_dims[0] is not None else s_dims[0]
    if b_dims[0] is not None and s_dims[0] is not None and b_dims[0] != s_dims[0]:
        raise ValueError(f"Dimension 0 in both shapes must be equal, but are {b_dims[0]} and "
                         f"{s_dims[0]}")
    if in_dims is not None and n is not None and len(in_dims) != n:
        raise ValueError(f"Shape must be rank {n} but is rank {len(in_dims)}")
    n = len(in_dims) if in_dims is not None else n
    if n is None:
        return [None]
    in_dims = in_dims if in_dims is not None else [None] * n
    begin = constant_value(op.inputs[1])
    sizes = constant_value_as_shape(op.inputs[2])
    raw_sizes = constant_value(op.inputs[2])
    out = []
    for i in range(n):
        s = None if raw_sizes is None else int(raw_sizes[i])
        if s is None:
            s = sizes.as_list()[i] if sizes.ndims is not None else None
        if s is not None and s >= 0:
            out.append(s)
        elif s == -1 and begin is not None and in_dims[i] is not None:
            b = int(begin[i])
            if not 0 <= b <= in_dims[i]:
                raise ValueError(f"Expected begin[{i}] in [0, {in_dims[i]}], but got {b}")
            out.append(in_dims[i] - b)
        elif s is not None and s < -1:
            raise ValueError(f"Expected size[{i}] >= -1, but got {s}")
        else:
            out.append(None)
    return [out]


define_op("Slice", inputs=["input: T", "begin: Index", "size: Index"], outputs=["output: T"],
          attrs=["T: type", "Index: {int32, int64}"], shape_fn=_slice_shape)


def slice(input_, begin, size, name: str | None = None):  # noqa: A001
    """The `size`-shaped block of `input_` starting at `begin` (`tf.slice`); a size of -1
    takes the rest of that dimension."""
    return apply_op("Slice", input=input_, begin=begin, size=size, name=name or "Slice")


@gradient("Slice")
def _slice_grad(op, grad):
    """Pads the gradient back to the input's shape: before = begin, after = the rest."""
    x, begin = op.inputs[0], op.inputs[1]
    in_dims = static_shape(x)
    out_dims = static_shape(op.outputs[0])
    b = constant_value(begin)
    if in_dims is not None and out_dims is not None and b is not None:
        b = np.reshape(b, -1)
        after = np.array(in_dims) - np.array(out_dims) - b
        paddings = np.stack([b, after], axis=1).astype(begin.dtype.as_numpy_dtype)
    else:
        r = array_ops.rank(x)
        before = array_ops.reshape(begin, joining_ops.stack([r, 1]))
        after = apply_op("Sub", x=apply_op("Sub", x=array_ops.shape(x, out_type=begin.dtype),
                                           y=array_ops.shape(op.outputs[0],
                                                             out_type=begin.dtype),
                                           name="sub"), y=begin, name="sub_1")
        paddings = joining_ops.concat([before, array_ops.reshape(after, joining_ops.stack([r, 1]))],
                                    1)
    out = joining_ops.pad(grad, paddings)
    out.set_shape(x.shape)
    return [out, None, None]


@constant_evaluator("Slice")
def _slice_const(op):
    x = constant_value(op.inputs[0])
    b, s = constant_value(op.inputs[1]), constant_value(op.inputs[2])
    if x is None or b is None or s is None:
        return None
    idx = tuple(np.s_[int(bi):] if int(si) == -1 else np.s_[int(bi):int(bi) + int(si)]
                for bi, si in zip(np.reshape(b, -1), np.reshape(s, -1), strict=True))
    return x[idx]


# ------------------------------------------------------------------------------------------
# StridedSlice, StridedSliceGrad


def _masks(op) -> dict:
    return {k: op.attrs[k] for k in _MASKS}


def _strided_slice_shape(op):
    in_dims = static_dims(op.inputs[0])
    b_dims = with_rank(static_dims(op.inputs[1]), 1)
    e_dims = with_rank(static_dims(op.inputs[2]), 1)
    s_dims = with_rank(static_dims(op.inputs[3]), 1)
    sparse = merge_dims(merge_dims(b_dims, e_dims), s_dims)[0]
    strides = constant_value(op.inputs[3])
    if in_dims is None or sparse is None or strides is None:
        return [None]
    begin, end = constant_value(op.inputs[1]), constant_value(op.inputs[2])
    spec = strided_slice_spec(in_dims, None if begin is None else np.reshape(begin, -1),
                              None if end is None else np.reshape(end, -1),
                              np.reshape(strides, -1), **_masks(op))
    return [spec.final_shape]


_SS_ATTRS = ["T: type", "Index: {int16, int32, int64}", "begin_mask: int = 0",
             "end_mask: int = 0", "ellipsis_mask: int = 0", "new_axis_mask: int = 0",
             "shrink_axis_mask: int = 0"]
define_op("StridedSlice", inputs=["input: T", "begin: Index", "end: Index", "strides: Index"],
          outputs=["output: T"], attrs=_SS_ATTRS, shape_fn=_strided_slice_shape)


def _strided_slice_grad_shape(op):
    return [constant_value_as_shape(op.inputs[0])]


define_op("StridedSliceGrad",
          inputs=["shape: Index", "begin: Index", "end: Index", "strides: Index", "dy: T"],
          outputs=["output: T"], attrs=["T: type", "Index: {int32, int64}"] + _SS_ATTRS[2:],
          shape_fn=_strided_slice_grad_shape)


def strided_slice(input_, begin, end, strides=None, begin_mask: int = 0, end_mask: int = 0,
                  ellipsis_mask: int = 0, new_axis_mask: int = 0, shrink_axis_mask: int = 0,
                  var=None, name: str | None = None):
    """A strided slice of `input_` (`tf.strided_slice`); see `Tensor.__getitem__` for the
    NumPy-style way to write one.

    Args:
      input_: the tensor to slice.
      begin, end, strides: 1-D int tensors of equal length; `strides` defaults to ones.
      *_mask: bit i set makes index i of the spec: begin/end unbounded (begin_mask,
        end_mask), an ellipsis, a new axis of size 1, or an integer index that removes
        its dimension (shrink_axis_mask).
      var: the Variable being sliced, if any (kept for `var[...].assign`).
      name: the op name.

    Raises:
      ValueError: an index is statically out of range.
    """
    if strides is None:
        strides = array_ops.ones_like(begin)
    out = apply_op("StridedSlice", input=input_, begin=begin, end=end, strides=strides,
                   begin_mask=begin_mask, end_mask=end_mask, ellipsis_mask=ellipsis_mask,
                   new_axis_mask=new_axis_mask, shrink_axis_mask=shrink_axis_mask,
                   name=name or "StridedSlice")
    if var is not None and hasattr(var, "_strided_slice_assign"):
        out.assign = lambda value, name=None: var._strided_slice_assign(
            begin=begin, end=end, strides=strides, value=value, name=name, **{
                k: v for k, v in zip(_MASKS, (begin_mask, end_mask, ellipsis_mask,
                                              new_axis_mask, shrink_axis_mask), strict=True)})
    return out


@gradient("StridedSlice")
def _strided_slice_grad(op, grad):
    x, begin, end, strides = op.inputs
    index_type = begin.dtype
    dims = static_shape(x)
    shape = np.array(dims, dtype=index_type.as_numpy_dtype) if dims is not None else \
        array_ops.shape(x, out_type=index_type)
    return [apply_op("StridedSliceGrad", shape=shape, begin=begin, end=end, strides=strides,
                     dy=grad, name="StridedSliceGrad", **_masks(op)), None, None, None]


@gradient("StridedSliceGrad")
def _strided_slice_grad_grad(op, grad):
    _, begin, end, strides, _ = op.inputs
    return [None, None, None, None,
            apply_op("StridedSlice", input=grad, begin=begin, end=end, strides=strides,
                     name="StridedSlice", **_masks(op))]


@constant_evaluator("StridedSlice")
def _strided_slice_const(op):
    x = constant_value(op.inputs[0])
    b, e, s = (constant_value(t) for t in op.inputs[1:])
    if x is None or b is None or e is None or s is None:
        return None
    spec = strided_slice_spec(list(x.shape), np.reshape(b, -1), np.reshape(e, -1),
                              np.reshape(s, -1), **_masks(op))
    return np.asarray(x[spec.index])


_NOT_A_SHAPE = object()


def partial_slice_of_shape(op):
    """A StridedSlice of a partially known 1-D shape vector (`tf.shape(x)[1:]`,
    `tf.shape(x)[0]`): a list of dims for a slice, an int or None for one element;
    `_NOT_A_SHAPE` if the op is not such a slice."""
    x = op.inputs[0]
    if x.shape.ndims != 1 or not x.dtype.is_integer:
        return _NOT_A_SHAPE
    b, e, s = (constant_value(t) for t in op.inputs[1:])
    if b is None or e is None or s is None:
        return _NOT_A_SHAPE
    vec = constant_value_as_shape(x)
    if vec.ndims is None:
        return _NOT_A_SHAPE
    dims = vec.as_list()
    masks = _masks(op)
    if masks["new_axis_mask"] or masks["ellipsis_mask"]:
        return _NOT_A_SHAPE
    spec = strided_slice_spec([len(dims)], np.reshape(b, -1), np.reshape(e, -1),
                              np.reshape(s, -1), **masks)
    idx = spec.index[0] if spec.index else np.s_[:]
    return dims[idx]


@shape_evaluator("StridedSlice")
def _strided_slice_partial_shape(t):
    got = partial_slice_of_shape(t.op)
    if isinstance(got, list):
        return tensor_shape.TensorShape(got)
    return None


@constant_evaluator("StridedSliceGrad")
def _strided_slice_grad_const(op):
    return None


# ------------------------------------------------------------------------------------------
# Tensor.__getitem__: NumPy-style index expressions become one StridedSlice.

_BAD_INDEX = ("Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and scalar "
              "tf.int32/tf.int64 tensors are valid indices, got {!r}")


def _check_index(idx):
    """`idx` if TF accepts it as an index (a known Dimension becomes its int), else
    TypeError."""
    if isinstance(idx, (bool, np.bool_)):
        raise TypeError(_BAD_INDEX.format(idx))
    if isinstance(idx, (int, np.integer)):
        return idx
    if isinstance(idx, tensor_shape.Dimension) and idx.value is not None:
        return idx.value
    if isinstance(idx, Tensor) or hasattr(idx, "_as_graph_element"):
        dt = idx.dtype.base_dtype
        if dt not in (dtypes.int32, dtypes.int64, dtypes.int16) or \
                (idx.shape.ndims is not None and idx.shape.ndims != 0):
            raise TypeError(_BAD_INDEX.format(idx))
        return idx
    raise TypeError(_BAD_INDEX.format(idx))


def _is_unset(v) -> bool:
    return v is None or (isinstance(v, tensor_shape.Dimension) and v.value is None)


def slice_helper(tensor, slice_spec, var=None):
    """`tensor[slice_spec]` as one StridedSlice (also used by Variables' `__getitem__`).

    Integers (Python or scalar int tensors) remove their dimension, slices take strided
    ranges, `...` stands for all dimensions not otherwise indexed and `tf.newaxis` (None)
    inserts a dimension of size 1. A boolean tensor or array index is `tf.boolean_mask`.

    Raises:
      TypeError: an index of a kind TF does not accept (floats, lists, ...).
      ValueError: an index that is statically out of range.
    """
    if isinstance(slice_spec, (bool, np.bool_)) or \
            (isinstance(slice_spec, Tensor) and slice_spec.dtype.base_dtype is dtypes.bool) \
            or (isinstance(slice_spec, np.ndarray) and slice_spec.dtype == bool):
        return boolean_mask(tensor, slice_spec)
    if not isinstance(slice_spec, (list, tuple)):
        slice_spec = [slice_spec]
    begin, end, strides = [], [], []
    masks = dict.fromkeys(_MASKS, 0)
    for i, s in enumerate(slice_spec):
        bit = 1 << i
        if isinstance(s, type(np.s_[:])):
            for part, lst, mask, fill in ((s.start, begin, "begin_mask", 0),
                                          (s.stop, end, "end_mask", 0),
                                          (s.step, strides, None, 1)):
                if _is_unset(part):
                    lst.append(fill)
                    if mask:
                        masks[mask] |= bit
                else:
                    lst.append(_check_index(part))
        elif s is Ellipsis or s is None:
            begin.append(0)
            end.append(0)
            strides.append(1)
            masks["ellipsis_mask" if s is Ellipsis else "new_axis_mask"] |= bit
        else:
            s = _check_index(s)
            begin.append(s)
            end.append(s + 1)
            strides.append(1)
            masks["shrink_axis_mask"] |= bit
    with graph_lib.name_scope(None, "strided_slice", [tensor] + begin + end + strides) as name:
        if begin:
            packed = [joining_ops.stack(v) for v in (begin, end, strides)]
            if any(p.dtype is dtypes.int64 for p in packed):
                packed = [p if p.dtype is dtypes.int64 else
                          apply_op("Cast", x=p, DstT=dtypes.int64, name="Cast") for p in packed]
        else:
            empty = constant_op.constant([], dtype=dtypes.int32)
            packed = [empty, empty, empty]
        return strided_slice(tensor, *packed, var=var, name=name, **masks)


Tensor._override_operator("__getitem__", slice_helper)


# ------------------------------------------------------------------------------------------
# boolean_mask (a composition: Where, then Gather)


def boolean_mask(tensor, mask, name: str = "boolean_mask", axis=None):
    """The elements (or slices) of `tensor` where `mask` is True (`tf.boolean_mask`).

    `mask` (rank K) covers dimensions [axis, axis + K) of `tensor`; those flatten into one
    dimension holding the selected entries in row-major order.

    Raises:
      ValueError: `mask` is a scalar or of unknown rank, or its static shape conflicts with
        `tensor`'s.
    """
    with graph_lib.name_scope(name, values=[tensor, mask]):
        tensor = convert_to_tensor(tensor, name="tensor")
        mask = convert_to_tensor(mask, name="mask")
        k = mask.shape.ndims
        if k == 0:
            raise ValueError("mask cannot be scalar.")
        if k is None:
            raise ValueError("Number of mask dimensions must be specified, even if some "
                             "dimensions are None.  E.g. shape=[None] is ok, but shape=None "
                             "is not.")
        axis = 0 if axis is None else axis
        axis_value = constant_value(axis) if isinstance(axis, Tensor) else axis
        t_shape = tensor.shape
        if axis_value is not None:
            axis = int(axis_value)
            if t_shape.ndims is not None:
                t_shape[axis:axis + k].assert_is_compatible_with(mask.shape)
        if k > 1 or t_shape.ndims is None:
            tensor = _flatten_masked_dims(tensor, axis, k)
            mask = array_ops.reshape(mask, [-1])
        where = apply_op("Where", input=mask, name="Where")
        indices = array_ops.squeeze(where, axis=[1])
        return gather_ops.gather(tensor, indices, axis=axis)


def _flatten_masked_dims(tensor: Tensor, axis, k: int) -> Tensor:
    dims = static_dims(tensor)
    if dims is not None and not isinstance(axis, Tensor):
        axis %= max(len(dims), 1)
        lead = num_elements(dims[axis:axis + k])
        if all(d is not None for d in dims[:axis] + dims[axis + k:]):
            new = dims[:axis] + [-1 if lead is None else lead] + dims[axis + k:]
            return array_ops.reshape(tensor, np.array(new, dtype=np.int32))
    s = array_ops.shape(tensor)
    lead = apply_op("Prod", input=s[axis:axis + k], reduction_indices=[0], keep_dims=False,
                    name="Prod")
    out = array_ops.reshape(tensor, joining_ops.concat([s[:axis], [lead], s[axis + k:]], 0))
    if dims is not None and not isinstance(axis, Tensor):
        first = tensor.shape[axis:axis + k].num_elements()
        out.set_shape(tensor.shape[:axis].concatenate([first]).concatenate(
            tensor.shape[axis + k:]))
    return out
