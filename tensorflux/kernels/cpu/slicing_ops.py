"""CPU kernels of the slicing ops (tensorflux/ops/slicing_ops.py): Slice, StridedSlice and
StridedSliceGrad. Slices are NumPy basic indexing, so the forward kernels return views.
"""

from __future__ import annotations

from tensorflux.framework import errors
from tensorflux.framework.slice_spec import strided_slice_spec
from tensorflux.kernels.cpu.array_ops import _invalid, _shape_str, _zeros
from tensorflux.kernels.registry import kernel, kernel_factory

_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")
_CACHE_LIMIT = 256


@kernel("Slice", forwards_input=True)
def _slice(ctx, x, begin, size):
    n = x.ndim
    if begin.ndim != 1 or size.ndim != 1 or begin.size != n or size.size != n:
        raise _invalid(f"Expected begin and size arguments to be 1-D tensors of size {n}, but "
                       f"got shapes {_shape_str(begin.shape)} and {_shape_str(size.shape)} "
                       "instead.")
    index = []
    for i, (b, s) in enumerate(zip(begin.tolist(), size.tolist(), strict=True)):
        d = x.shape[i]
        if s == -1:
            s = d - b
        if d == 0:
            if b != 0 or s != 0:
                raise _invalid(f"Expected begin[{i}] == 0 (got {b}) and size[{i}] == 0 (got "
                               f"{s}) when input.dim_size({i}) == 0")
        else:
            if not 0 <= b <= d:
                raise _invalid(f"Expected begin[{i}] in [0, {d}], but got {b}")
            if not 0 <= s or b + s > d:
                raise _invalid(f"Expected size[{i}] in [0, {d - b}], but got {s}")
        index.append(slice(b, b + s))
    return x[tuple(index)]


def _index_for(cache: dict, masks: dict, shape: tuple, begin, end, strides) -> tuple:
    """The NumPy index of a strided slice, memoized per (shape, begin, end, strides): in a
    training loop the same slice of the same shape repeats every step."""
    key = (shape, begin.tobytes(), end.tobytes(), strides.tobytes())
    index = cache.get(key)
    if index is None:
        try:
            spec = strided_slice_spec(list(shape), begin.reshape(-1).tolist(),
                                      end.reshape(-1).tolist(), strides.reshape(-1).tolist(),
                                      **masks)
        except ValueError as e:
            raise _invalid(str(e)) from None
        # A trailing Ellipsis makes NumPy return a 0-d array (not a scalar or a bare Python
        # object) when every dimension is indexed by an integer.
        index = spec.index + (Ellipsis,)
        if len(cache) < _CACHE_LIMIT:
            cache[key] = index
    return index


@kernel_factory("StridedSlice", forwards_input=True)
def _strided_slice(node):
    masks = {k: node.attrs[k] for k in _MASKS}
    cache: dict = {}

    def compute(ctx, x, begin, end, strides):
        return x[_index_for(cache, masks, x.shape, begin, end, strides)]

    return compute


@kernel_factory("StridedSliceGrad")
def _strided_slice_grad(node):
    masks = {k: node.attrs[k] for k in _MASKS}
    cache: dict = {}

    def compute(ctx, shape, begin, end, strides, dy):
        shape = tuple(shape.tolist())
        index = _index_for(cache, masks, shape, begin, end, strides)
        out = _zeros(shape, dy.dtype)
        view = out[index]
        if view.shape != dy.shape:
            raise errors.InvalidArgumentError(
                None, None, f"shape of dy was {_shape_str(dy.shape)} instead of "
                f"{_shape_str(view.shape)}")
        out[index] = dy
        return out

    return compute

