"""The Const kernel: its value, fixed when the step is built.

A large splat (a few stored values repeated over a big shape, `tensor_util.DeferredTensor`)
is expanded here, when a step first needs it, against the running session's bound
(framework/resource_guard.py): a Const too large fails its step with ResourceExhaustedError
naming the node, where import and graph construction allocated nothing.
"""

from __future__ import annotations

from tensorflux.framework import resource_guard, tensor_util
from tensorflux.kernels import interrupt
from tensorflux.kernels.registry import kernel_factory


def const_value(value, ctx, cache: list):
    """The array of a Const's `value` (a DeferredTensor expanded once, into `cache`)."""
    if not isinstance(value, tensor_util.DeferredTensor):
        return value
    if not cache:  # a large expansion is written in blocks that check the step
        cache.append(value.materialize(resource_guard.limit(ctx), fill=lambda dst, v: (
            interrupt.copyto(ctx, dst, v))))
    return cache[0]


@kernel_factory("Const")
def _const(node):
    value = node.attrs["value"]
    if isinstance(value, tensor_util.DeferredTensor):
        cache: list = []

        def expand(ctx):
            return const_value(value, ctx, cache)

        return expand

    def compute(ctx):
        return value

    return compute
