"""The Const kernel: its value, fixed when the step is built."""

from __future__ import annotations

from tensorflux.kernels.registry import kernel_factory


@kernel_factory("Const")
def _const(node):
    value = node.attrs["value"]

    def compute(ctx):
        return value

    return compute
