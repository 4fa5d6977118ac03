"""Kernels of _Arg, _Send, _Recv and _CompiledLoop (any device: they only move Python
references, or run a loop whose kernels are already chosen)."""

from __future__ import annotations

from tensorflux.framework.rendezvous_key import create_key
from tensorflux.kernels.registry import DEAD, kernel_factory

_ALL = ("CPU", "GPU")


@kernel_factory("_Arg", device=_ALL)
def _arg(node):
    index = node.attrs["index"]

    def compute(ctx):
        return ctx.args[index]

    return compute


def _key_parts(node):
    a = node.attrs
    return a["send_device"], a["send_device_incarnation"], a["recv_device"], a["tensor_name"]


@kernel_factory("_Send", device=_ALL)
def _send(node):
    src, inc, dst, name = _key_parts(node)

    def compute(ctx, value):
        key = create_key(src, inc, dst, name, ctx.frame_iter)
        ctx.rendezvous.send(key, None if value is DEAD else value, value is DEAD)

    return compute


@kernel_factory("_Recv", device=_ALL, is_async=True)
def _recv(node):
    src, inc, dst, name = _key_parts(node)

    def compute(ctx, done):
        key = create_key(src, inc, dst, name, ctx.frame_iter)

        def on_value(err, value, is_dead):
            done(err if err is not None else (DEAD if is_dead else value))

        ctx.rendezvous.recv_async(key, on_value)

    return compute


@kernel_factory("_CompiledLoop", device=_ALL)
def _compiled_loop(node):
    # The loop's generated function (runtime/compiled_loops.py) is the kernel.
    return node.attrs["body"]
