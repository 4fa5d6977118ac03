"""Kernels of _Arg, _Send, _Recv and _CompiledLoop (any device: they only move Python
references, or run a loop whose kernels are already chosen).

Between a GPU and anything but a GPU of the same task, a transfer is a copy between device
and host memory: the GPU's _Send copies its value to the host when the receiver is not
such a GPU (a CPU, or another task, whose wire takes host bytes), and a _Recv hands what it
receives to its device's `accept` (a GPU moves float tensors into device memory)."""

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


def _task(device_name: str) -> str:
    return device_name.partition("/device:")[0]


def _crosses_to_host(node) -> bool:
    """A _Send on a GPU whose receiver is not a GPU of the same task."""
    src, dst = node.attrs["send_device"], node.attrs["recv_device"]
    return "/device:GPU:" in src and not ("/device:GPU:" in dst and _task(src) == _task(dst))


def _key_parts(node):
    a = node.attrs
    return a["send_device"], a["send_device_incarnation"], a["recv_device"], a["tensor_name"]


@kernel_factory("_Send", device=_ALL)
def _send(node):
    src, inc, dst, name = _key_parts(node)
    host = _crosses_to_host(node)
    # To a CPU of the same task the copy is queued and the receiver waits for it (its
    # device's `accept`); another task's wire takes the bytes now.
    local = host and _task(src) == _task(dst)

    def compute(ctx, value):
        key = create_key(src, inc, dst, name, ctx.frame_iter)
        if value is DEAD:
            ctx.rendezvous.send(key, None, True)
        elif host:
            ctx.rendezvous.send(key, ctx.device.to_host_async(value) if local else
                                ctx.device.to_host(value), False)
        else:
            ctx.rendezvous.send(key, value, False)

    return compute


@kernel_factory("_Recv", device=_ALL, is_async=True)
def _recv(node):
    src, inc, dst, name = _key_parts(node)

    def compute(ctx, done):
        key = create_key(src, inc, dst, name, ctx.frame_iter)

        def on_value(err, value, is_dead):
            done(err if err is not None else (DEAD if is_dead else ctx.device.accept(value)))

        ctx.rendezvous.recv_async(key, on_value)

    return compute


@kernel_factory("_CompiledLoop", device=_ALL)
def _compiled_loop(node):
    # The loop's generated function (runtime/compiled_loops.py) is the kernel.
    return node.attrs["body"]
