"""What the GPU kernel families share: where a kernel computes, and registration helpers.

The rule of every GPU kernel here: a kernel given only host arrays (int32 shape arithmetic,
constants) computes on the host with the op's CPU kernel, so its semantics and errors are
the CPU's and nothing moves; given any device array it computes on the device with the
array module of kernels/gpu/backend.py, moving its other inputs there first (a host 0-d
array becomes a typed scalar argument, which costs no transfer).
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import dtypes
from tensorflux.kernels import registry
from tensorflux.kernels.gpu import backend

FLOATS = (dtypes.float16, dtypes.float32, dtypes.float64)
NUMERIC = FLOATS + (dtypes.int32, dtypes.int64, dtypes.int8, dtypes.int16, dtypes.uint8,
                    dtypes.bool)
REAL = FLOATS + (dtypes.int32, dtypes.int64)


def any_device(values) -> bool:
    return any(backend.is_device_array(v) for v in values)


def dev(v):
    """`v` as an operand of a device computation (see the module docstring)."""
    if isinstance(v, np.ndarray) and v.ndim == 0:
        return v[()]
    if isinstance(v, np.generic):
        return v
    return backend.to_device(v)


def host(v):
    return np.asarray(backend.to_host(v))


def cpu_compute(op_type: str, node):
    """The CPU kernel's compute for `node` (None when the CPU has no kernel for it)."""
    kdef = registry.find_kernel(op_type, "CPU", node.attrs)
    return None if kdef is None else kdef.factory(node)


def hybrid(op_type: str, device_fn, type_constraints=None, expensive: bool = False):
    """Registers a GPU kernel for `op_type`: the CPU kernel when every input is on the host,
    else `device_fn(node)(ctx, *inputs)` (a factory) on device operands."""

    @registry.kernel_factory(op_type, device="GPU", type_constraints=type_constraints,
                             expensive=expensive)
    def factory(node):
        cpu = cpu_compute(op_type, node)
        on_device = device_fn(node)

        def compute(ctx, *inputs):
            if cpu is not None and not any_device(inputs):
                return cpu(ctx, *inputs)
            return on_device(ctx, *inputs)

        return compute

    return factory


def host_kernel(op_type: str, type_constraints=None):
    """Registers the CPU kernel for the GPU with its inputs in host memory and its outputs
    left there (TensorFlow's HostMemory kernels: shape arithmetic)."""

    @registry.kernel_factory(op_type, device="GPU", type_constraints=type_constraints)
    def factory(node):
        cpu = cpu_compute(op_type, node)

        def compute(ctx, *inputs):
            return cpu(ctx, *(backend.to_host(v) for v in inputs))

        return compute

    return factory


def same_on_gpu(*op_types: str, type_constraints=None) -> None:
    """Registers the CPU kernels of `op_types` for the GPU as they are: kernels that only
    look at shapes or pass references on (Shape, Reshape, Identity), for any array."""
    for op_type in op_types:
        kdefs = [k for k in registry.registered_kernels().get((op_type, "CPU"), ())]
        if not kdefs:
            continue
        k = kdefs[0]
        registry.kernel_factory(op_type, device="GPU", type_constraints=type_constraints,
                                is_async=k.is_async,
                                forwards_input=k.forwards_input)(k.factory)
