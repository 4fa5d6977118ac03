"""CPU kernels of the array ops (tensorflux/ops/array_ops.py)."""

from __future__ import annotations

from tensorflux.framework import errors
from tensorflux.kernels.registry import kernel, kernel_factory

_ALL = ("CPU", "GPU")


@kernel_factory("Placeholder", device=_ALL)
def _placeholder(node):
    dtype = node.attrs["dtype"]
    shape = node.attrs.get("shape")
    shape_str = "" if shape is None or shape.ndims is None else \
        f" and shape [{','.join('?' if d is None else str(d) for d in shape.as_list())}]"
    type_name = {"float32": "float", "float64": "double"}.get(dtype.name, dtype.name)

    def compute(ctx):
        raise errors.InvalidArgumentError(
            None, None, f"You must feed a value for placeholder tensor '{node.name}' with "
            f"dtype {type_name}{shape_str}")

    return compute


@kernel("Identity", "StopGradient", "PlaceholderWithDefault", device=_ALL,
        inline="{0}", forwards_input=True)
def _identity(ctx, x):
    return x


@kernel("IdentityN", device=_ALL, forwards_input=True)
def _identity_n(ctx, *xs):
    return xs
