"""GPU kernels of the resource variable ops (ops/state_ops.py): the CPU kernels' handles,
lookups and errors (kernels/cpu/state_ops.py), with the stored array in device memory.

Copy-on-write as on the CPU: a read returns the stored array itself; an update writes into
it only when nothing else holds it (`exclusively_owned`), else stores an updated copy.
Every kernel of one GPU is queued on the same stream, so a write queued after a read never
overtakes it.

While a step is captured into a CUDA graph (kernels/gpu/graphs.py), or a capturable step runs
the usual way, a read copies the stored array and an assignment of the same shape and dtype
writes into it (`graphs.keeps_buffers()`), so that every update lands in the buffer the
graphs read.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels import registry
from tensorflux.kernels.buffers import exclusively_owned
from tensorflux.kernels.cpu import state_ops as cpu_state
from tensorflux.kernels.gpu import backend, graphs
from tensorflux.kernels.gpu._common import NUMERIC

for _op in ("VarHandleOp", "VarIsInitializedOp", "DestroyResourceOp", "VariableShape"):
    _k = registry.registered_kernels()[(_op, "CPU")][0]
    registry.kernel_factory(_op, device="GPU", forwards_input=_k.forwards_input)(_k.factory)


@registry.kernel_factory("ReadVariableOp", device="GPU", forwards_input=True)
def _read_variable(node):
    cpu = registry.registered_kernels()[("ReadVariableOp", "CPU")][0].factory(node)

    def compute(ctx, handle):
        value = cpu(ctx, handle)
        if graphs.keeps_buffers():
            h = cpu_state.as_handle(handle)
            graphs.note_var(cpu_state._find(ctx, h))
            return backend.to_device(value).copy()
        return value

    return compute


def own_device_value(var) -> object:
    """The device array an update of `var` (holding its lock) may write into."""
    arr = var.value
    if graphs.keeps_buffers():
        # Reads copy while capturing, so nothing else holds the buffer: write into it.
        graphs.note_var(var)
        if backend.is_device_array(arr):
            return arr
    if not (backend.is_device_array(arr) and exclusively_owned(arr, 3)):
        arr = backend.to_device(arr).copy()
        var.value = arr
    return arr


@registry.kernel_factory("AssignVariableOp", device="GPU", type_constraints={"dtype": NUMERIC})
def _assign_variable(node):
    dtype = node.attrs["dtype"]
    np_dtype = dtype.as_numpy_dtype
    validate_shape = node.attrs["validate_shape"]

    def compute(ctx, handle, value):
        h = cpu_state.as_handle(handle)
        cpu_state._check_device(ctx, h)
        if h.dtype != dtype:
            raise errors.InvalidArgumentError(
                None, None, f"Trying to assign variable with wrong dtype. Expected "
                f"{cpu_state._tf_name(h.dtype)} got {cpu_state._tf_name(dtype)}")
        var = ctx.resource_mgr.lookup_or_create(h.container, h.name,
                                                lambda: cpu_state.Var(dtype))
        if not isinstance(var, cpu_state.Var) or var.dtype != dtype:
            cpu_state._existing(ctx, h, dtype, "assign")
        shape = np.shape(value)
        with var.lock:
            old = var.value
            if validate_shape and old is not None and old.shape != shape:
                raise errors.InvalidArgumentError(
                    None, None, "Trying to assign to variable with tensor with wrong shape. "
                    f"Expected {cpu_state._shape_str(old.shape)} got "
                    f"{cpu_state._shape_str(shape)}")
            if graphs.keeps_buffers():
                graphs.note_var(var)
                if backend.is_device_array(old) and old.shape == shape and \
                        old.dtype == np_dtype:
                    old[...] = backend.to_device(value)
                    return
            var.value = backend.xp().array(backend.to_device(value), dtype=np_dtype,
                                           copy=True)
            del old

    return compute


def _update(op_type: str, sign: int):
    @registry.kernel_factory(op_type, device="GPU", type_constraints={"dtype": NUMERIC})
    def factory(node):
        dtype = node.attrs["dtype"]

        def compute(ctx, handle, value):
            h = cpu_state.as_handle(handle)
            var = cpu_state._existing(ctx, h, dtype, "update")
            value = backend.to_device(value)
            with var.lock:
                if var.value is None:
                    raise cpu_state._not_found(ctx, h)
                if var.value.shape != value.shape:
                    raise errors.InvalidArgumentError(
                        None, None, f"Cannot update variable with shape "
                        f"{cpu_state._shape_str(var.value.shape)} using a Tensor with shape "
                        f"{cpu_state._shape_str(value.shape)}, shapes must be equal.")
                arr = own_device_value(var)
                if sign > 0:
                    arr += value
                else:
                    arr -= value

        return compute

    return factory


_update("AssignAddVariableOp", 1)
_update("AssignSubVariableOp", -1)


@registry.kernel_factory("ResourceGather", device="GPU", type_constraints={"dtype": NUMERIC})
def _resource_gather(node):
    dtype = node.attrs["dtype"]

    def compute(ctx, handle, indices):
        h = cpu_state.as_handle(handle)
        var = cpu_state._existing(ctx, h, dtype, "read")
        graphs.note_var(var)
        with var.lock:
            value = var.value
        if value is None:
            raise cpu_state._uninitialized(ctx, h)
        idx = backend.to_host(indices)
        n = value.shape[0]
        if isinstance(idx, np.ndarray) and idx.size and (idx.min() < 0 or idx.max() >= n):
            raise errors.InvalidArgumentError(
                None, None, f"indices has values outside [0, {n})")
        return backend.xp().take(value, backend.to_device(idx).astype(np.int64), axis=0)

    return compute


_SCATTER_UFUNCS = {"ResourceScatterMul": "multiply", "ResourceScatterDiv": "divide",
                   "ResourceScatterMin": "minimum", "ResourceScatterMax": "maximum"}


def _scatter_on_device(target, op_type: str, indices: np.ndarray, updates) -> None:
    """The CPU kernel's `_scatter_apply` on a device array: rows in index order, so that a
    repeated index sees the earlier updates (Add/Sub through an atomic scatter-add; the
    others one round per repetition: the k-th occurrences of every index together)."""
    xp = backend.xp()
    flat = indices.reshape(-1)
    updates = updates.astype(target.dtype, copy=False)
    rows = xp.broadcast_to(updates, indices.shape + target.shape[1:]).reshape(
        (flat.size,) + target.shape[1:])
    if op_type in ("ResourceScatterAdd", "ResourceScatterSub"):
        backend.scatter_add(target, backend.to_device(flat),
                            rows if op_type == "ResourceScatterAdd" else -rows)
        return
    order = np.argsort(flat, kind="stable")
    rank = np.empty(flat.size, np.int64)
    starts = np.r_[0, np.flatnonzero(np.diff(flat[order])) + 1] if flat.size else \
        np.zeros(0, np.int64)
    counts = np.diff(np.r_[starts, flat.size])
    rank[order] = np.arange(flat.size) - np.repeat(starts, counts)
    for r in range(int(rank.max()) + 1 if flat.size else 0):
        pick = np.flatnonzero(rank == r)
        idx = backend.to_device(flat[pick])
        upd = rows[backend.to_device(pick)]
        if op_type == "ResourceScatterUpdate":
            target[idx] = upd
        elif op_type == "ResourceScatterDiv" and target.dtype.kind in "iu":
            target[idx] = cpu_state._trunc_divide(target[idx], upd)
        else:
            target[idx] = getattr(xp, _SCATTER_UFUNCS[op_type])(target[idx], upd)


for _op_type in ("ResourceScatterAdd", "ResourceScatterSub", "ResourceScatterMul",
                 "ResourceScatterDiv", "ResourceScatterMin", "ResourceScatterMax",
                 "ResourceScatterUpdate"):
    cpu_state.scatter_kernel(_op_type, "GPU", {"dtype": NUMERIC},
                             lambda v: np.asarray(backend.to_host(v)), backend.to_device,
                             own_device_value, _scatter_on_device)
