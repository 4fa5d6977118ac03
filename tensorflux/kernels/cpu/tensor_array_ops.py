"""CPU kernels of TensorArray and the stack ops (tensorflux/ops/tensor_array_ops.py).

Both live in the step's `step_container` (KernelContext): created by TensorArrayV3/StackV2
during a step, found again by the handle value (a small named object), dropped when the
step ends. Element arrays are stored as given, never copied or written into (tensors are
immutable); a gradient array adds repeated writes to one element (`aggregate`).

The kernels serve CPU and GPU: element arrays are NumPy or CuPy arrays (`_xp` picks the
module of the device), index and length inputs are read on the host.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from tensorflux.framework import errors, tensor_shape
from tensorflux.kernels.gpu import backend as gpu_backend
from tensorflux.kernels.registry import kernel, kernel_factory

_ALL = ("CPU", "GPU")
_ids = itertools.count()


@dataclass(frozen=True, slots=True)
class TensorArrayHandle:
    """The value of a TensorArray's `handle` tensor."""

    name: str


@dataclass(frozen=True, slots=True)
class StackHandle:
    """The value of a stack's `handle` tensor."""

    name: str


def _xp(ctx):
    """The array module of the kernel's device: the GPU backend's on a GPU (CuPy, or the
    simulation's), NumPy otherwise."""
    device = getattr(ctx, "device", None)
    if device is not None and device.device_type == "GPU":
        return gpu_backend.xp()
    return np


def _host(x) -> np.ndarray:
    """An index or length input as a host NumPy array."""
    return np.asarray(gpu_backend.to_host(x))


def _shape_str(shape) -> str:
    if shape is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


class _TensorArray:
    """One TensorArray of a step: its elements and what has been done to them."""

    __slots__ = ("name", "dtype", "size", "values", "written", "cleared", "dynamic_size",
                 "clear_after_read", "element_shape", "identical_shapes", "aggregate",
                 "closed", "grads", "xp")

    def __init__(self, name, dtype, size, element_shape, dynamic_size, clear_after_read,
                 identical_shapes, aggregate=False, xp=np):
        self.xp = xp
        self.name = name
        self.dtype = dtype
        self.size = size
        self.values: list = [None] * size
        self.written = [False] * size
        self.cleared = [False] * size
        self.dynamic_size = dynamic_size
        self.clear_after_read = clear_after_read
        self.element_shape = element_shape  # tuple with None entries, or None (unknown rank)
        self.identical_shapes = identical_shapes
        self.aggregate = aggregate
        self.closed = False
        self.grads: dict[str, TensorArrayHandle] = {}

    def _check_open(self):
        if self.closed:
            raise errors.InvalidArgumentError(
                None, None, f"TensorArray {self.name} has already been closed.")

    def _compatible(self, shape) -> bool:
        es = self.element_shape
        if es is None:
            return True
        return len(es) == len(shape) and all(d is None or d == s for d, s in zip(
            es, shape, strict=True))

    def write(self, index: int, value) -> None:
        self._check_open()
        if index < 0:
            raise errors.InvalidArgumentError(
                None, None, f"TensorArray {self.name}: Tried to write to index {index} but "
                "array size is: " + str(self.size))
        if index >= self.size:
            if not self.dynamic_size:
                raise errors.InvalidArgumentError(
                    None, None, f"TensorArray {self.name}: Tried to write to index {index} "
                    f"but array is not resizeable and size is: {self.size}")
            grow = index + 1 - self.size
            self.values.extend([None] * grow)
            self.written.extend([False] * grow)
            self.cleared.extend([False] * grow)
            self.size = index + 1
        if not hasattr(value, "shape"):
            value = self.xp.asarray(value)
        if value.dtype.kind == "S" and np.dtype(self.dtype).kind == "O":  # bytes: strings
            value = value.astype(object)
        if value.dtype != self.dtype:
            raise errors.InvalidArgumentError(
                None, None, f"TensorArray dtype is {self.dtype} but Op is trying to write "
                f"dtype {value.dtype}")
        if not self._compatible(value.shape):
            raise errors.InvalidArgumentError(
                None, None, f"TensorArray {self.name}: Could not write to TensorArray index "
                f"{index} because the value shape is {_shape_str(value.shape)} which is "
                f"incompatible with the TensorArray's inferred element shape: "
                f"{_shape_str(self.element_shape)} (consider setting infer_shape=False).")
        if self.written[index]:
            if not self.aggregate:
                raise errors.InvalidArgumentError(
                    None, None, f"TensorArray {self.name}: Could not write to TensorArray "
                    f"index {index} because it has already been written to.")
            old = self.values[index]
            if old.shape != value.shape:
                raise errors.InvalidArgumentError(
                    None, None, f"TensorArray {self.name}: Could not aggregate to TensorArray "
                    f"index {index} because the existing shape is {_shape_str(old.shape)} but"
                    f" the new input shape is {_shape_str(value.shape)}.")
            value = old + value
        if self.identical_shapes:
            self.element_shape = tuple(value.shape)
        self.values[index] = value
        self.written[index] = True

    def read(self, index: int):
        self._check_open()
        if not 0 <= index < self.size:
            raise errors.InvalidArgumentError(
                None, None, f"Tried to read from index {index} but array size is: {self.size}")
        if self.cleared[index]:
            raise errors.InvalidArgumentError(
                None, None, f"TensorArray {self.name}: Could not read index {index} twice "
                "because it was cleared after a previous read (perhaps try setting "
                "clear_after_read = false?).")
        if not self.written[index]:
            es = self.element_shape
            if es is None or any(d is None for d in es):
                raise errors.InvalidArgumentError(
                    None, None, f"TensorArray {self.name}: Could not read from TensorArray "
                    f"index {index}.  Furthermore, the element shape is not fully defined: "
                    f"{_shape_str(es)}.  It is possible you are working with a resizeable "
                    "TensorArray and stop_gradients is not allowing the gradients to be "
                    "written.  If you set the full element_shape property on the forward "
                    "TensorArray, the proper all-zeros tensor will be returned instead of "
                    "incurring this error.")
            return self.xp.zeros(es, dtype=self.dtype)
        value = self.values[index]
        if self.clear_after_read and not self.aggregate:
            self.values[index] = None
            self.cleared[index] = True
        return value


def _container(ctx) -> dict:
    return ctx.step_container


def _lookup(ctx, handle) -> _TensorArray:
    if not isinstance(handle, TensorArrayHandle):
        raise errors.InvalidArgumentError(
            None, None, f"Expected a TensorArray handle, got {type(handle).__name__}")
    ta = _container(ctx).get(("TensorArray", handle.name))
    if ta is None:
        raise errors.NotFoundError(
            None, None, f"Container per-step does not exist. (Could not find resource: "
            f"per-step/{handle.name})")
    return ta


def _as_shape(attr):
    if attr is None:
        return None
    shape = tensor_shape.as_shape(attr)
    return None if shape.ndims is None else tuple(shape.as_list())


@kernel_factory("TensorArrayV3", device=_ALL)
def _tensor_array(node):
    dtype = node.attrs["dtype"].as_numpy_dtype
    element_shape = _as_shape(node.attrs.get("element_shape"))
    dynamic = bool(node.attrs.get("dynamic_size", False))
    clear = bool(node.attrs.get("clear_after_read", True))
    identical = bool(node.attrs.get("identical_element_shapes", False))
    base = node.attrs.get("tensor_array_name") or node.name

    def compute(ctx, size):
        size = int(size)
        if size < 0:
            raise errors.InvalidArgumentError(None, None, f"Size should be >= 0, got: {size}")
        name = f"{base}_{next(_ids)}"
        _container(ctx)[("TensorArray", name)] = _TensorArray(
            name, dtype, size, element_shape, dynamic, clear, identical, xp=_xp(ctx))
        return TensorArrayHandle(name), np.float32(0.0)

    return compute


@kernel_factory("TensorArrayGradV3", device=_ALL)
def _tensor_array_grad(node):
    source = node.attrs["source"]

    def compute(ctx, handle, flow):
        ta = _lookup(ctx, handle)
        g = ta.grads.get(source)
        if g is None:
            name = f"{ta.name}@{source}"
            _container(ctx)[("TensorArray", name)] = _TensorArray(
                name, ta.dtype, ta.size, ta.element_shape, False, True, ta.identical_shapes,
                aggregate=True, xp=ta.xp)
            g = ta.grads[source] = TensorArrayHandle(name)
        return g, np.float32(flow)

    return compute


@kernel("TensorArrayWriteV3", device=_ALL)
def _tensor_array_write(ctx, handle, index, value, flow):
    _lookup(ctx, handle).write(int(index), value)
    return np.float32(flow)


@kernel("TensorArrayReadV3", device=_ALL)
def _tensor_array_read(ctx, handle, index, flow):
    return _lookup(ctx, handle).read(int(index))


@kernel_factory("TensorArrayGatherV3", device=_ALL)
def _tensor_array_gather(node):
    attr_shape = _as_shape(node.attrs.get("element_shape"))

    def compute(ctx, handle, indices, flow):
        ta = _lookup(ctx, handle)
        indices = _host(indices).reshape(-1)
        if indices.size == 0:
            es = ta.element_shape if ta.element_shape is not None else attr_shape
            if es is None or any(d is None for d in es):
                es = ()
            return ta.xp.zeros((0,) + tuple(es), dtype=ta.dtype)
        values = [ta.read(int(i)) for i in indices]
        first = values[0].shape
        for k, v in enumerate(values):
            if v.shape != first:
                raise errors.InvalidArgumentError(
                    None, None, f"TensorArray has inconsistent shapes.  Index 0 has shape: "
                    f"{_shape_str(first)} but index {k} has shape: {_shape_str(v.shape)}")
        return ta.xp.stack(values)

    return compute


@kernel("TensorArrayScatterV3", device=_ALL)
def _tensor_array_scatter(ctx, handle, indices, value, flow):
    ta = _lookup(ctx, handle)
    indices = _host(indices).reshape(-1)
    if not hasattr(value, "shape"):
        value = ta.xp.asarray(value)
    if value.ndim == 0 or value.shape[0] != indices.size:
        raise errors.InvalidArgumentError(
            None, None, f"Expected len(indices) == values.shape[0], but saw: {indices.size} "
            f"vs. {value.shape[0] if value.ndim else 0}")
    if indices.size and not ta.dynamic_size and int(indices.max()) >= ta.size:
        raise errors.InvalidArgumentError(
            None, None, f"Max scatter index must be < array size ({int(indices.max())} vs. "
            f"{ta.size})")
    for k, i in enumerate(indices):
        ta.write(int(i), value[k])
    return np.float32(flow)


@kernel("TensorArrayConcatV3", device=_ALL)
def _tensor_array_concat(ctx, handle, flow):
    ta = _lookup(ctx, handle)
    values = [ta.read(i) for i in range(ta.size)]
    for k, v in enumerate(values):
        if v.ndim == 0:
            raise errors.InvalidArgumentError(
                None, None, f"Concat saw a scalar shape at index {k} but requires at least "
                "vectors.")
    lengths = np.array([v.shape[0] for v in values], dtype=np.int64)
    if not values:
        es = ta.element_shape
        tail = tuple(es[1:]) if es is not None and None not in es[1:] else ()
        return ta.xp.zeros((0,) + tail, dtype=ta.dtype), lengths
    return ta.xp.concatenate(values, axis=0), lengths


@kernel("TensorArraySplitV3", device=_ALL)
def _tensor_array_split(ctx, handle, value, lengths, flow):
    ta = _lookup(ctx, handle)
    if not hasattr(value, "shape"):
        value = ta.xp.asarray(value)
    lengths = _host(lengths).astype(np.int64).reshape(-1)
    if value.ndim == 0:
        raise errors.InvalidArgumentError(None, None, "Expected value to be at least a vector, "
                                          "but received shape: []")
    total = int(lengths.sum())
    if total != value.shape[0]:
        raise errors.InvalidArgumentError(
            None, None, f"Expected sum of lengths to be equal to values.shape[0], but sum of "
            f"lengths is {total} and value's shape is: {_shape_str(value.shape)}")
    if not ta.dynamic_size and lengths.size != ta.size:
        raise errors.InvalidArgumentError(
            None, None, f"TensorArray's size is not equal to the size of lengths ("
            f"{lengths.size} vs. {ta.size}), and the TensorArray is not marked as "
            "dynamically resizeable")
    start = 0
    for i, n in enumerate(lengths):
        ta.write(i, value[start:start + int(n)])
        start += int(n)
    return np.float32(flow)


@kernel("TensorArraySizeV3", device=_ALL)
def _tensor_array_size(ctx, handle, flow):
    return np.int32(_lookup(ctx, handle).size)


@kernel("TensorArrayCloseV3", device=_ALL)
def _tensor_array_close(ctx, handle):
    ta = _lookup(ctx, handle)
    ta.closed = True
    ta.values = [None] * ta.size
    return None


# ---- stacks -------------------------------------------------------------------------------


class _Stack:
    __slots__ = ("name", "max_size", "elements", "closed")

    def __init__(self, name: str, max_size: int):
        self.name = name
        self.max_size = max_size
        self.elements: list = []
        self.closed = False


def _stack(ctx, handle) -> _Stack:
    stack = _container(ctx).get(("Stack", getattr(handle, "name", None)))
    if stack is None or stack.closed:
        raise errors.InvalidArgumentError(
            None, None, f"Stack {getattr(handle, 'name', handle)} has already been closed.")
    return stack


@kernel_factory("StackV2", device=_ALL)
def _stack_v2(node):
    base = node.attrs.get("stack_name") or node.name

    def compute(ctx, max_size):
        name = f"{base}_{next(_ids)}"
        _container(ctx)[("Stack", name)] = _Stack(name, int(max_size))
        return StackHandle(name)

    return compute


@kernel("StackPushV2", device=_ALL)
def _stack_push(ctx, handle, elem):
    stack = _stack(ctx, handle)
    if 0 <= stack.max_size <= len(stack.elements):
        raise errors.InvalidArgumentError(
            None, None, f"Stack[{stack.name}] overflowed its max_size ({stack.max_size})")
    stack.elements.append(elem)
    return elem


@kernel("StackPopV2", device=_ALL)
def _stack_pop(ctx, handle):
    stack = _stack(ctx, handle)
    if not stack.elements:
        raise errors.InvalidArgumentError(
            None, None, f"Stack[{stack.name}] is empty when calling Pop().")
    return stack.elements.pop()


@kernel("StackCloseV2", device=_ALL)
def _stack_close(ctx, handle):
    stack = _container(ctx).pop(("Stack", getattr(handle, "name", None)), None)
    if stack is not None:
        stack.closed = True
        stack.elements.clear()
    return None
