"""The resource guard: a few bytes of graph or request never allocate without bound.

A GraphDef, a feed or a tensor's *values* (a shape, a multiple, a range limit) can ask for a
tensor far larger than anything the user gave: a Const of shape [2**40] holding one value,
`tf.fill([2**40], 0.)`, `tf.tile(x, [2**30])`, `tf.range(2**62)`. Such a tensor is refused
before it is allocated, with ResourceExhaustedError naming its shape, dtype and the bound
(the executor adds the node): never a bare MemoryError, never the kernel's OOM kill.

The bound, in bytes of one tensor:
  - per process: `set_default_limit` (default: half the machine's physical memory;
    `tensor_util.set_max_expanded_bytes` is the same setting);
  - per session: `ExecOptions(max_tensor_bytes=...)` (`tf.Session(config, exec_options=...)`:
    TensorFlow's ConfigProto has no field for a host-memory bound), which kernels read
    through `limit(ctx)`.

At import and construction nothing is expanded: a Const whose TensorProto repeats a few
stored values over a large shape keeps the proto (`tensor_util.DeferredTensor`, its shape
and dtype known) and is expanded by its kernel, against the running session's bound.
"""

from __future__ import annotations

import math

import numpy as np

from tensorflux.framework import errors, tensor_util


def default_limit() -> int:
    """The per-process bound in bytes of one tensor built from a small input."""
    return tensor_util._max_expanded_bytes


def set_default_limit(limit: int) -> None:
    """Sets the per-process bound (bytes of one tensor built from a small input)."""
    tensor_util.set_max_expanded_bytes(limit)


def limit(ctx=None) -> int:
    """The bound for a kernel of step `ctx` (a KernelContext or None): its session's
    `ExecOptions.max_tensor_bytes` when set, else the per-process default."""
    options = getattr(getattr(ctx, "session", None), "_exec_options", None)
    bound = getattr(options, "max_tensor_bytes", None)
    return tensor_util._max_expanded_bytes if bound is None else int(bound)


def _itemsize(dtype) -> int:
    try:
        size = np.dtype(getattr(dtype, "as_numpy_dtype", dtype)).itemsize
    except TypeError:
        size = 0
    return size if size and np.dtype(getattr(dtype, "as_numpy_dtype", dtype)).kind != "O" \
        else 8  # object arrays (string, resource, variant): a pointer per element


def _dtype_name(dtype) -> str:
    name = getattr(dtype, "name", None)
    if isinstance(name, str):
        return name
    try:
        from tensorflux.framework import dtypes  # noqa: PLC0415 - a leaf module
        return dtypes.as_dtype(dtype).name
    except TypeError:
        return str(dtype)


def check_shape(shape, dtype, ctx=None, bound: int | None = None, what: str = "") -> None:
    """Raises ResourceExhaustedError when a tensor of `shape` and `dtype` would take more
    than the bound (`bound`, else `limit(ctx)`); `what` says where it came from."""
    dims = [int(d) for d in shape]
    nbytes = math.prod(dims) * _itemsize(dtype)
    bound = limit(ctx) if bound is None else bound
    if nbytes > bound:
        raise errors.ResourceExhaustedError(
            None, None, f"OOM when allocating tensor with shape{dims} and type "
            f"{_dtype_name(dtype)}: {nbytes} bytes{what} exceed the limit of {bound} bytes "
            "(resource_guard: ExecOptions.max_tensor_bytes, or the process default "
            "set by tensor_util.set_max_expanded_bytes)")


def check_elements(count: int, dtype, ctx=None, what: str = "") -> None:
    """`check_shape` for a flat tensor of `count` elements."""
    check_shape([count], dtype, ctx, what=what)
