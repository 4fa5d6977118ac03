"""CPU kernels of the resource variable ops (tensorflux/ops/state_ops.py).

Handles. The value of a `resource` tensor is a `ResourceHandle`: a small immutable object
naming the variable (container, name), the device whose ResourceMgr holds it, and its dtype
and shape. VarHandleOp only makes the handle; AssignVariableOp creates the variable (`Var`) in
the ResourceMgr when it is absent; every other op looks it up and fails if it is missing.

Snapshots and copy-on-write. A `Var` holds one NumPy array. ReadVariableOp and ResourceGather
take the array reference under the variable's lock and return it (Read) or a gathered copy
(Gather) without copying the storage, so a read is O(1). Updates (AssignAdd/Sub, scatters,
Assign of a same-shaped value) run under the lock and write into the stored array only when
`buffers.exclusively_owned` says nothing else holds it: no read of it alive in a step, no
fetched result, no queue element. Otherwise they store an updated copy and leave the old
array to its holders. So every tensor a read produced stays a snapshot, and since Session.run
copies any fetched array that a variable still holds, writing into a fetched array never
changes a variable. AssignVariableOp always stores a private copy of its input: a kernel
cannot know who else holds an input (a feed from the user, a constant, another consumer).

Locks. Every update holds the variable's lock across its read-modify-write, as TensorFlow's
resource kernels do whatever `use_locking` says, so concurrent `assign_add` steps never lose
an update; reads hold it only while taking the reference.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from tensorflux.framework import dtypes, errors
from tensorflux.kernels.buffers import exclusively_owned, take_fresh
from tensorflux.kernels.cpu import native
from tensorflux.kernels.registry import kernel, kernel_factory

VAR_TYPE_NAME = "N10tensorflow3VarE"  # how TensorFlow names the variable resource type


@dataclass(frozen=True, slots=True)
class ResourceHandle:
    """The value of a `resource` tensor: which resource, where, and of what dtype/shape.

    Attributes:
      container: the ResourceMgr container ("" means the device's default, "localhost").
      name: the resource's shared name.
      device: the full name of the device whose ResourceMgr holds it.
      dtype: the variable's element type.
      shape: the variable's static shape as a tuple (None entries unknown), or None.
    """

    container: str
    name: str
    device: str
    dtype: dtypes.DType
    shape: tuple | None = None

    def __repr__(self) -> str:
        return (f"ResourceHandle({self.container or 'localhost'}/{self.name} on {self.device},"
                f" dtype={self.dtype.name}, shape={self.shape})")


class Var:
    """A variable's storage: one array (None until first assigned), its dtype and lock."""

    __slots__ = ("value", "dtype", "lock", "__weakref__")

    def __init__(self, dtype: dtypes.DType):
        self.value: np.ndarray | None = None
        self.dtype = dtype
        self.lock = threading.Lock()

    def __repr__(self) -> str:
        state = "uninitialized" if self.value is None else \
            f"shape={self.value.shape}"
        return f"<Var dtype={self.dtype.name} {state}>"


# ---- helpers -----------------------------------------------------------------------------


def _tf_name(dtype: dtypes.DType) -> str:
    return {"float32": "float", "float64": "double", "float16": "half"}.get(dtype.name,
                                                                          dtype.name)


def _shape_str(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def as_handle(value) -> ResourceHandle:
    """The ResourceHandle a `resource` tensor holds (a handle, or a 0-d object array)."""
    if isinstance(value, ResourceHandle):
        return value
    if isinstance(value, np.ndarray) and value.dtype == object and value.size == 1:
        inner = value.reshape(-1)[0]
        if isinstance(inner, ResourceHandle):
            return inner
    raise errors.InvalidArgumentError(
        None, None, f"Expected a resource handle, got {type(value).__name__}: {value!r:.80}")


def _container(ctx, h: ResourceHandle) -> str:
    return h.container or ctx.resource_mgr.default_container


def _check_device(ctx, h: ResourceHandle) -> None:
    if h.device and ctx.device is not None and h.device != ctx.device.name:
        raise errors.InvalidArgumentError(
            None, None, f"Trying to access resource {h.name} located in device {h.device} "
            f"from device {ctx.device.name}")


def _find(ctx, h: ResourceHandle) -> Var | None:
    _check_device(ctx, h)
    res = ctx.resource_mgr.get(h.container, h.name)
    if res is not None and not isinstance(res, Var):
        raise errors.InvalidArgumentError(
            None, None, f"Trying to access resource {h.name} using the wrong type. Expected "
            f"{VAR_TYPE_NAME} got {type(res).__name__}")
    return res


def _not_found(ctx, h: ResourceHandle) -> errors.NotFoundError:
    return errors.NotFoundError(
        None, None, f"Resource {_container(ctx, h)}/{h.name}/{VAR_TYPE_NAME} does not exist.")


def _existing(ctx, h: ResourceHandle, dtype: dtypes.DType, verb: str) -> Var:
    """The variable `h` names; NotFoundError if absent, InvalidArgumentError on dtype."""
    var = _find(ctx, h)
    if var is None:
        raise _not_found(ctx, h)
    if var.dtype != dtype:
        raise errors.InvalidArgumentError(
            None, None, f"Trying to {verb} variable with wrong dtype. Expected "
            f"{_tf_name(var.dtype)} got {_tf_name(dtype)}")
    return var


class FoundVars:
    """The variables a node's handles name, looked up once (by `find(ctx, handle)`, which
    raises for a missing one or one of another dtype) and then reused while nothing has
    been removed from the resource manager since (`ResourceMgr.version` counts removals,
    and a name is never bound to another resource without one) and the same handle
    objects come on the same device (a VarHandleOp gives the same object every step).
    The MLP step's reads and updates looked up ~30 variables a step; an update of many
    variables spent ~30% of its time there."""

    __slots__ = ("find", "entry")

    def __init__(self, find):
        self.find = find
        # (resource manager, its version, device, handles, variables, any named twice)
        self.entry = None

    def look_up(self, ctx, handles: tuple) -> list:
        rm = ctx.resource_mgr  # entry_for's test written out: one frame less a read
        entry = self.entry
        if entry is not None and entry[0] is rm and entry[1] == rm.version and \
                entry[2] is ctx.device and entry[3] == handles:
            return entry[4]
        return self.entry_for(ctx, handles)[4]

    def entry_for(self, ctx, handles: tuple) -> tuple:
        rm = ctx.resource_mgr
        entry = self.entry
        if entry is not None and entry[0] is rm and entry[1] == rm.version and \
                entry[2] is ctx.device and entry[3] == handles:
            return entry
        version = rm.version  # read first: a removal while looking makes the entry stale
        found = [self.find(ctx, as_handle(h)) for h in handles]
        entry = (rm, version, ctx.device, handles, found,
                 len({id(v) for v in found}) < len(found))
        if all(type(h) is ResourceHandle for h in handles):  # compared by identity above
            self.entry = entry
        return entry


def _private_copy(value, np_dtype) -> np.ndarray:
    """A fresh, writable ndarray holding `value` (0-d arrays stay arrays)."""
    return np.array(value, dtype=np_dtype, copy=True)


def _writable_alone(arr) -> bool:
    """True if `arr` (referenced by a Var slot and by the caller's one local name) may be
    written in place: nothing else holds it or a view of its buffer."""
    # Known holders: the Var slot, the caller's local and our parameter `arr`.
    return type(arr) is np.ndarray and arr.flags.writeable and exclusively_owned(arr, 3)


def own_value(var: Var) -> np.ndarray:
    """The array an update of `var` (holding `var.lock`) may write into: the stored array
    when nothing else holds it, else a copy put in its place (copy-on-write, so earlier
    reads stay snapshots). The caller must hold no other reference to the stored array."""
    arr = var.value
    if not _writable_alone(arr):
        arr = arr.copy()
        var.value = arr
    return arr


# ---- VarHandleOp -------------------------------------------------------------------------


def handle_kernel(node, dtype=dtypes.resource, shape=None):
    """The compute function of a resource's handle op (VarHandleOp and the like): the
    ResourceHandle of the node's (container, shared_name or node name) on the step's
    device, one object per device (a VarHandleOp gives the same object every step)."""
    container = node.attrs.get("container", "")
    name = node.attrs.get("shared_name") or node.name
    by_device: dict[str, ResourceHandle] = {}

    def compute(ctx):
        dev = ctx.device.name if ctx.device is not None else ""
        h = by_device.get(dev)
        if h is None:
            h = by_device[dev] = ResourceHandle(container, name, dev, dtype, shape)
        return h

    return compute


@kernel_factory("VarHandleOp", device_constant=True)
def _var_handle(node):
    shape = node.attrs.get("shape")
    shape = None if shape is None or shape.ndims is None else tuple(shape.as_list())
    return handle_kernel(node, node.attrs["dtype"], shape)


# ---- ReadVariableOp, AssignVariableOp, AssignAdd/SubVariableOp ---------------------------


def _uninitialized(ctx, h: ResourceHandle) -> errors.FailedPreconditionError:
    container = _container(ctx, h)
    if container in ctx.resource_mgr.containers():
        status = f"Resource {container}/{h.name}/{VAR_TYPE_NAME} does not exist."
    else:
        status = (f"Container {container} does not exist. (Could not find resource: "
                  f"{container}/{h.name})")
    return errors.FailedPreconditionError(
        None, None, f"Could not find variable {h.name}. This could mean that the variable has "
        "been deleted. In TF1, it can also mean the variable is uninitialized. Debug info: "
        f"container={container}, status error message={status}")


@kernel_factory("ReadVariableOp", forwards_input=True)  # returns the stored array itself
def _read_variable(node):
    dtype = node.attrs["dtype"]

    def find(ctx, h):
        var = _find(ctx, h)
        if var is None:
            raise _uninitialized(ctx, h)
        if var.dtype != dtype:
            raise errors.InvalidArgumentError(
                None, None, f"Trying to read variable with wrong dtype. Expected "
                f"{_tf_name(var.dtype)} got {_tf_name(dtype)}")
        return var

    found = FoundVars(find)

    def compute(ctx, handle):
        var, = found.look_up(ctx, (handle,))
        with var.lock:
            value = var.value
        if value is None:
            raise _uninitialized(ctx, as_handle(handle))
        return value

    return native.var_reader(found, compute)  # compute's common case in C


@kernel_factory("AssignVariableOp")
def _assign_variable(node):
    dtype = node.attrs["dtype"]
    np_dtype = dtype.as_numpy_dtype
    validate_shape = node.attrs["validate_shape"]

    def find(ctx, h):
        _check_device(ctx, h)
        if h.dtype != dtype:
            raise errors.InvalidArgumentError(
                None, None, f"Trying to assign variable with wrong dtype. Expected "
                f"{_tf_name(h.dtype)} got {_tf_name(dtype)}")
        var = ctx.resource_mgr.lookup_or_create(h.container, h.name, lambda: Var(dtype))
        if not isinstance(var, Var) or var.dtype != dtype:
            _existing(ctx, h, dtype, "assign")  # raises the matching error
        return var

    found = FoundVars(find)

    def compute(ctx, handle, value):
        var, = found.look_up(ctx, (handle,))
        shape = value.shape if type(value) is np.ndarray else np.shape(value)
        with var.lock:
            old = var.value
            if validate_shape and old is not None and old.shape != shape:
                raise errors.InvalidArgumentError(
                    None, None, "Trying to assign to variable with tensor with wrong shape. "
                    f"Expected {_shape_str(old.shape)} got {_shape_str(shape)}")
            if type(value) is np.ndarray and value.dtype == np_dtype and \
                    value.flags.writeable and take_fresh(ctx, value):
                var.value = value  # a restored tensor nothing else has seen: no copy
            elif old is not None and old.shape == shape and _writable_alone(old):
                np.copyto(old, value, casting="unsafe")  # reuse the buffer nobody else holds
            else:
                var.value = _private_copy(value, np_dtype)
            del old

    return compute


def _update_kernel(op_type: str, ufunc):
    @kernel_factory(op_type)
    def factory(node):
        dtype = node.attrs["dtype"]

        def compute(ctx, handle, value):
            var = _existing(ctx, as_handle(handle), dtype, "update")
            with var.lock:
                old = var.value
                if old is None:
                    raise _not_found(ctx, as_handle(handle))
                if old.shape != np.shape(value):
                    raise errors.InvalidArgumentError(
                        None, None, f"Cannot update variable with shape "
                        f"{_shape_str(old.shape)} using a Tensor with shape "
                        f"{_shape_str(np.shape(value))}, shapes must be equal.")
                if _writable_alone(old):
                    ufunc(old, value, out=old)
                else:
                    var.value = np.asarray(ufunc(old, value), dtype=old.dtype)
                del old

        return compute

    return factory


_update_kernel("AssignAddVariableOp", np.add)
_update_kernel("AssignSubVariableOp", np.subtract)


# ---- VarIsInitializedOp, DestroyResourceOp, VariableShape, ResourceCountUpTo -------------


@kernel("VarIsInitializedOp")
def _var_is_initialized(ctx, handle):
    h = as_handle(handle)
    var = ctx.resource_mgr.get(h.container, h.name)
    return np.bool_(isinstance(var, Var) and var.value is not None)


@kernel_factory("DestroyResourceOp")
def _destroy_resource(node):
    ignore = node.attrs["ignore_lookup_error"]

    def compute(ctx, handle):
        h = as_handle(handle)
        try:
            ctx.resource_mgr.delete(h.container, h.name)
        except errors.NotFoundError:
            if not ignore:
                raise errors.NotFoundError(
                    None, None, f"Resource {_container(ctx, h)}/{h.name}/<unknown> does not "
                    "exist.") from None

    return compute


@kernel_factory("VariableShape")
def _variable_shape(node):
    np_dtype = node.attrs["out_type"].as_numpy_dtype

    def compute(ctx, handle):
        h = as_handle(handle)
        var = _find(ctx, h)
        value = var.value if var is not None else None
        if value is None:
            raise _not_found(ctx, h)
        return np.array(value.shape, dtype=np_dtype)

    return compute


@kernel_factory("ResourceCountUpTo")
def _count_up_to(node):
    limit, dtype = node.attrs["limit"], node.attrs["T"]

    def compute(ctx, handle):
        h = as_handle(handle)
        var = _existing(ctx, h, dtype, "read")
        with var.lock:
            before = var.value
            if before is None:
                raise _uninitialized(ctx, h)
            if before >= limit:
                raise errors.OutOfRangeError(None, None, f"Reached limit of {limit}")
            var.value = np.asarray(before + 1, dtype=before.dtype)  # never written in place
        return before

    return compute


# ---- ResourceGather ----------------------------------------------------------------------


def _check_indices(indices: np.ndarray, limit: int) -> None:
    """InvalidArgumentError naming the first index outside [0, limit), as TensorFlow does."""
    if native.indices_in_range(indices, limit):
        return
    bad = (indices < 0) | (indices >= limit)
    if bad.any():
        pos = np.argwhere(bad)[0] if indices.ndim else ()
        where = ",".join(str(int(p)) for p in pos)
        raise errors.InvalidArgumentError(
            None, None, f"indices[{where}] = {int(indices[tuple(pos)])} is not in "
            f"[0, {limit})")


def gather(params: np.ndarray, indices, batch_dims: int = 0) -> np.ndarray:
    """`params` gathered along axis `batch_dims` (TensorFlow's batched Gather)."""
    indices = np.asarray(indices)
    if batch_dims < 0:
        batch_dims += indices.ndim
    if params.ndim <= batch_dims:
        raise errors.InvalidArgumentError(
            None, None, f"params must be at least {batch_dims + 1} dimensional, got shape "
            f"{_shape_str(params.shape)}")
    _check_indices(indices, params.shape[batch_dims])
    if batch_dims == 0:
        return np.take(params, indices, axis=0)
    if params.shape[:batch_dims] != indices.shape[:batch_dims]:
        raise errors.InvalidArgumentError(
            None, None, f"params.shape[:{batch_dims}] {_shape_str(params.shape[:batch_dims])} "
            f"must equal indices.shape[:{batch_dims}] "
            f"{_shape_str(indices.shape[:batch_dims])}")
    flat_params = params.reshape((-1,) + params.shape[batch_dims:])
    flat_indices = indices.reshape((flat_params.shape[0], -1))
    rows = np.arange(flat_params.shape[0])[:, None]
    out = flat_params[rows, flat_indices]
    return out.reshape(indices.shape + params.shape[batch_dims + 1:])


@kernel_factory("ResourceGather")
def _resource_gather(node):
    dtype, batch_dims = node.attrs["dtype"], node.attrs["batch_dims"]

    def compute(ctx, handle, indices):
        var = _existing(ctx, as_handle(handle), dtype, "read")
        with var.lock:
            params = var.value
        if params is None:
            raise _not_found(ctx, as_handle(handle))
        return gather(params, indices, batch_dims)

    return compute


# ---- ResourceScatter* --------------------------------------------------------------------


def _trunc_divide(a, b):
    """Integer division rounding toward zero, as C++ (and TensorFlow's ScatterDiv) does."""
    q = np.floor_divide(a, b)
    fix = (q < 0) & (q * b != a)
    return q + fix


def _scatter_apply(target: np.ndarray, op_type: str, indices, updates) -> None:
    if op_type == "ResourceScatterUpdate":
        target[indices] = updates
    elif op_type == "ResourceScatterDiv" and target.dtype.kind in "iu":
        upd = np.broadcast_to(updates, indices.shape + target.shape[1:])
        for k, i in enumerate(indices.reshape(-1)):
            row = upd.reshape((-1,) + target.shape[1:])[k]
            target[i] = _trunc_divide(target[i], row)
    elif op_type in _ROWS_IN_C and native.scatter_rows(
            target, indices, updates, op_type == "ResourceScatterSub"):
        pass  # rows added in order in C, as the loops below would
    elif target.ndim > 1 and target[0].size >= _ROW_LOOP_MIN and indices.size:
        # Whole rows, one ufunc call per index in order (what ufunc.at does, duplicates
        # included, element by element: ~23 ns an element against ~1 us a row here; an
        # Adam step on a [10000, 512] embedding scattered 640 rows in 3.5 ms, now 0.4).
        ufunc = _SCATTER_UFUNCS[op_type]
        rows = np.broadcast_to(updates, indices.shape + target.shape[1:]).reshape(
            (indices.size,) + target.shape[1:])
        with np.errstate(divide="ignore", invalid="ignore"):
            for k, i in enumerate(indices.reshape(-1).tolist()):
                row = target[i]
                ufunc(row, rows[k], out=row)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            _SCATTER_UFUNCS[op_type].at(target, indices, updates)


_ROW_LOOP_MIN = 64  # elements of a row from which a scatter goes row by row
_ROWS_IN_C = ("ResourceScatterAdd", "ResourceScatterSub")


_SCATTER_UFUNCS = {"ResourceScatterAdd": np.add, "ResourceScatterSub": np.subtract,
                   "ResourceScatterMul": np.multiply, "ResourceScatterDiv": np.divide,
                   "ResourceScatterMin": np.minimum, "ResourceScatterMax": np.maximum}


def check_scatter(ctx, h, old, indices, updates) -> None:
    """The checks of a ResourceScatter* on variable value `old` (NumPy or device array;
    `indices` on the host)."""
    if old is None:
        raise _not_found(ctx, h)
    if old.ndim == 0:
        raise errors.InvalidArgumentError(None, None, "params must be at least 1-D, got []")
    want = indices.shape + old.shape[1:]
    if updates.ndim != 0 and updates.shape != want:
        raise errors.InvalidArgumentError(
            None, None, "Must have updates.shape = indices.shape + params.shape[1:] or "
            f"updates.shape = [], got updates.shape {_shape_str(updates.shape)}, "
            f"indices.shape {_shape_str(indices.shape)}, params.shape "
            f"{_shape_str(old.shape)}")
    _check_indices(indices, old.shape[0])


def scatter_kernel(op_type: str, device: str = "CPU", type_constraints=None,
                   indices_of=np.asarray, updates_of=np.asarray, own=None, apply=None):
    """Registers ResourceScatter* `op_type` for `device`: the handle's variable checked
    (`check_scatter`) and updated in place under its lock by `apply(own(var), op_type,
    indices, updates)` (defaults: this module's own_value and _scatter_apply), with the
    indices as `indices_of` gives them (on the host) and the updates as `updates_of`."""

    @kernel_factory(op_type, device=device, type_constraints=type_constraints)
    def factory(node):
        dtype = node.attrs["dtype"]

        def compute(ctx, handle, indices, updates):
            h = as_handle(handle)
            var = _existing(ctx, h, dtype, "update")
            indices, updates = indices_of(indices), updates_of(updates)
            with var.lock:
                check_scatter(ctx, h, var.value, indices, updates)
                # (the module's functions looked up at run time: tests count the copies)
                (apply or _scatter_apply)((own or own_value)(var), op_type, indices,
                                          updates)

        return compute

    return factory


for _op_type in ("ResourceScatterAdd", "ResourceScatterSub", "ResourceScatterMul",
                 "ResourceScatterDiv", "ResourceScatterMin", "ResourceScatterMax",
                 "ResourceScatterUpdate"):
    scatter_kernel(_op_type)


def _scatter_nd_kernel(op_type: str, ufunc):
    @kernel_factory(op_type)
    def factory(node):
        dtype = node.attrs["T"]

        def compute(ctx, handle, indices, updates):
            h = as_handle(handle)
            var = _existing(ctx, h, dtype, "update")
            indices = np.asarray(indices)
            updates = np.asarray(updates)
            with var.lock:
                old = var.value
                if old is None:
                    raise _not_found(ctx, h)
                index = _nd_index(indices, old.shape, updates.shape)
                del old  # own_value must see the variable as the array's only holder
                target = own_value(var)
                if ufunc is None:
                    target[index] = updates
                else:
                    ufunc.at(target, index, updates)
                del target

        return compute

    return factory


def _nd_index(indices: np.ndarray, shape: tuple, updates_shape: tuple) -> tuple:
    """The NumPy index tuple of ScatterNd `indices` [..., depth], checked against `shape`."""
    if indices.ndim == 0:
        raise errors.InvalidArgumentError(None, None, "indices must be at least 1-D")
    depth = indices.shape[-1]
    if depth > len(shape):
        raise errors.InvalidArgumentError(
            None, None, f"The last dimension of indices ({depth}) must be <= the rank of the "
            f"variable ({len(shape)})")
    want = indices.shape[:-1] + tuple(shape[depth:])
    if updates_shape != want:
        raise errors.InvalidArgumentError(
            None, None, f"updates.shape {_shape_str(updates_shape)} must equal "
            f"indices.shape[:-1] + params.shape[indices.shape[-1]:] = {_shape_str(want)}")
    flat = indices.reshape(-1, depth)
    bad = ((flat < 0) | (flat >= np.array(shape[:depth], dtype=np.int64))).any(axis=1)
    if bad.any():
        k = int(np.argmax(bad))
        raise errors.InvalidArgumentError(
            None, None, f"indices[{k}] = [{', '.join(str(int(v)) for v in flat[k])}] does not "
            f"index into param shape {_shape_str(shape)}")
    return tuple(indices[..., d] for d in range(depth))


_scatter_nd_kernel("ResourceScatterNdAdd", np.add)
_scatter_nd_kernel("ResourceScatterNdSub", np.subtract)
_scatter_nd_kernel("ResourceScatterNdUpdate", None)
