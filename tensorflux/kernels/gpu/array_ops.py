"""GPU kernels of the array ops (ops in array_ops.py, joining_ops.py, slicing_ops.py,
gather_ops.py, sequence_ops.py, constant_op.py, random_ops.py).

Many CPU kernels here only index, reshape or call NumPy functions that CuPy arrays answer
(`np.concatenate`, `np.split`, ...): they serve the GPU as they are, with their data inputs
moved to the device first and their shape-like inputs (begin, axis, multiples, ...) kept on
the host (`_on_device`). Shape arithmetic (Shape, Range, BroadcastGradientArgs, ...) runs on
the host. Random ops draw on the host with the CPU kernels (so a seed gives the same numbers
on either device, TensorFlow's seed rules included) and move the result to the device.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels import registry
from tensorflux.kernels.cpu._nn_common import _invalid
from tensorflux.kernels.cpu.constant_op import const_value
from tensorflux.kernels.cpu.slicing_ops import _MASKS, _index_for
from tensorflux.kernels.gpu import backend
from tensorflux.kernels.gpu._common import (
    FLOATS,
    NUMERIC,
    cpu_compute,
    host,
    host_kernel,
    hybrid,
    same_on_gpu,
)

# Kernels that look only at shapes or pass references on.
same_on_gpu("Reshape", "Shape", "ShapeN", "Size", "Rank", "ExpandDims", "Squeeze",
            "Snapshot", "PreventGradient", "EnsureShape")

# Shape arithmetic, in host memory.
# Unique: its output size depends on the values, which the host reads anyway (TF's GPU
# kernel copies the count back too); the sparse optimizers dedup with it beside a
# variable pinned to the GPU.
for _op in ("Range", "BroadcastGradientArgs", "BroadcastArgs", "ConcatOffset",
            "InvertPermutation", "Unique"):
    host_kernel(_op)


def _on_device(op_type: str, host_args: tuple[int, ...], fn=None):
    """A GPU kernel of `op_type`: inputs at `host_args` on the host, the others on the
    device when any input is there, then the CPU kernel on them, or with `fn` the output
    built by the array module (`fn(node, *inputs)`: the CPU kernels of the joining ops write
    large outputs in host blocks); inputs `fn` refuses go to the CPU kernel, for its error."""

    def factory(node):
        cpu = cpu_compute(op_type, node)

        def compute(ctx, *inputs):
            n = len(inputs)
            keep = {i % n for i in host_args}
            moved = [host(v) if i in keep else backend.to_device(v)
                     for i, v in enumerate(inputs)]
            if fn is None:
                return cpu(ctx, *moved)
            try:
                return fn(node, *moved)
            except (ValueError, IndexError, TypeError):
                return backend.to_device(cpu(ctx, *(host(v) for v in inputs)))

        return compute

    hybrid(op_type, factory, {"T": NUMERIC})


_on_device("Slice", (1, 2))
_on_device("StridedSlice", (1, 2, 3))
_on_device("Unpack", ())
_on_device("Split", (0,))
_on_device("SplitV", (1, 2))
_on_device("Transpose", (1,))


def _concat(node, *args):
    values, axis = args[:-1], int(args[-1])
    if values[0].ndim == 0 or any(v.dtype != values[0].dtype for v in values):
        raise ValueError("to the CPU kernel's checks")
    return backend.xp().concatenate(values, axis=axis)


def _tile(node, x, multiples):
    if multiples.ndim != 1 or len(multiples) != x.ndim or (multiples < 0).any():
        raise ValueError("to the CPU kernel's checks")
    return backend.xp().tile(x, tuple(int(m) for m in multiples))


_on_device("ConcatV2", (-1,), _concat)
_on_device("Pack", (), lambda node, *values: backend.xp().stack(values,
                                                                 axis=node.attrs["axis"]))
_on_device("Tile", (1,), _tile)


def _const(node):
    """A float constant of more than one element lives in device memory (copied once per
    step graph); other constants stay on the host."""
    deferred = node.attrs["value"]
    expanded: list = []
    moved = []

    def compute(ctx):
        value = const_value(deferred, ctx, expanded)
        if isinstance(value, np.ndarray) and value.dtype.kind in "fc" and value.size > 1:
            if not moved:
                moved.append(backend.to_device(value))
            return moved[0]
        return value

    return compute


registry.kernel_factory("Const", device="GPU")(_const)


def _fill(node):
    def compute(ctx, dims, value):
        dims, value = host(dims), backend.to_host(value)
        if dims.ndim != 1:
            raise _invalid(f"dims must be a vector, got shape {list(dims.shape)}")
        if np.ndim(value) != 0:
            raise _invalid(f"value must represent a scalar, got shape {list(np.shape(value))}")
        shape = dims.tolist()
        if any(d < 0 for d in shape):
            raise _invalid(f"Dimension {min(shape)} must be >= 0")
        value = np.asarray(value)
        return backend.xp().full(shape, value[()], dtype=value.dtype)

    return compute


@registry.kernel_factory("Fill", device="GPU", type_constraints={"T": NUMERIC})
def _fill_kernel(node):
    return _fill(node)


def _like(fill):
    def factory(node):
        def compute(ctx, x):
            xp = backend.xp()
            return xp.full(np.shape(x), fill, dtype=x.dtype)
        return compute
    return factory


registry.kernel_factory("ZerosLike", device="GPU", type_constraints={"T": NUMERIC})(_like(0))
registry.kernel_factory("OnesLike", device="GPU", type_constraints={"T": NUMERIC})(_like(1))


def _broadcast_to(node):
    def compute(ctx, x, shape):
        target = tuple(host(shape).tolist())
        x = backend.to_device(x)
        if x.shape == target:
            return x
        try:
            return backend.xp().broadcast_to(x, target).copy()
        except ValueError:
            raise _invalid(f"Incompatible shapes: {list(x.shape)} vs. {list(target)}") \
                from None

    return compute


hybrid("BroadcastTo", _broadcast_to, {"T": NUMERIC})


def _pad(node):
    def compute(ctx, x, paddings, *constant):
        x = backend.to_device(x)
        pads = host(paddings).reshape(-1, 2).tolist()
        if len(pads) != x.ndim or any(b < 0 or a < 0 for b, a in pads):
            raise _invalid(f"The first dimension of paddings must be the rank of inputs "
                           f"{x.ndim}, and paddings must be non-negative: {pads}")
        value = backend.to_host(constant[0])[()] if constant else 0
        out = backend.xp().full([d + b + a for d, (b, a) in zip(x.shape, pads, strict=True)],
                                value, dtype=x.dtype)
        out[tuple(slice(b, b + d) for d, (b, _) in zip(x.shape, pads, strict=True))] = x
        return out

    return compute


hybrid("Pad", _pad, {"T": NUMERIC})
hybrid("PadV2", _pad, {"T": NUMERIC})


def _strided_slice_grad(node):
    masks = {k: node.attrs[k] for k in _MASKS}
    cache: dict = {}

    def compute(ctx, shape, begin, end, strides, dy):
        shape = tuple(host(shape).tolist())
        index = _index_for(cache, masks, shape, host(begin), host(end), host(strides))
        dy = backend.to_device(dy)
        out = backend.xp().zeros(shape, dtype=dy.dtype)
        if out[index].shape != dy.shape:
            raise _invalid(f"shape of dy was {list(dy.shape)} instead of "
                           f"{list(out[index].shape)}")
        out[index] = dy
        return out

    return compute


hybrid("StridedSliceGrad", _strided_slice_grad, {"T": NUMERIC})


def _gather(node):
    batch_dims = node.attrs.get("batch_dims", 0)

    def compute(ctx, params, indices, axis=None):
        params = backend.to_device(params)
        ax = 0 if axis is None else int(host(axis).reshape(-1)[0])
        ax %= max(params.ndim, 1)
        n = params.shape[ax]
        idx = host(indices) if not backend.is_device_array(indices) else indices
        if isinstance(idx, np.ndarray) and idx.size and (idx.min() < 0 or idx.max() >= n):
            bad = idx.reshape(-1)[np.argmax((idx.reshape(-1) < 0) | (idx.reshape(-1) >= n))]
            raise _invalid(f"indices = {int(bad)} is not in [0, {n})")
        if batch_dims:
            raise errors.UnimplementedError(
                None, None, f"GatherV2 with batch_dims={batch_dims} on a GPU is not "
                "implemented (place it on the CPU)")
        return backend.xp().take(params, backend.to_device(idx).astype(np.int64), axis=ax)

    return compute


hybrid("GatherV2", _gather, {"Tparams": NUMERIC})
hybrid("Gather", _gather, {"Tparams": NUMERIC})


def _unsorted_segment_sum(node):
    def compute(ctx, data, segment_ids, num_segments):
        xp = backend.xp()
        data = backend.to_device(data)
        ids = backend.to_device(segment_ids).astype(np.int64)
        n = int(host(num_segments).reshape(-1)[0])
        out = xp.zeros((n,) + data.shape[ids.ndim:], dtype=data.dtype)
        flat = data.reshape((-1,) + data.shape[ids.ndim:])
        backend.scatter_add(out, ids.reshape(-1), flat)
        return out

    return compute


hybrid("UnsortedSegmentSum", _unsorted_segment_sum, {"T": FLOATS})


def _random(op_type: str):
    """The CPU kernel's draw, moved to the device."""

    @registry.kernel_factory(op_type, device="GPU", type_constraints={"dtype": FLOATS})
    def factory(node):
        cpu = cpu_compute(op_type, node)

        def compute(ctx, *inputs):
            return backend.to_device(cpu(ctx, *(backend.to_host(v) for v in inputs)))

        return compute


for _op in ("RandomUniform", "RandomStandardNormal", "TruncatedNormal"):
    _random(_op)
