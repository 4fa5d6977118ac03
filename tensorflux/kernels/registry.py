"""Kernel registry: the code that computes each op type on each device type.

A kernel is a function `compute(ctx, *inputs)` returning the op's single output, or a tuple
with one entry per output for ops with several (None for ops with none). Kernels whose work
depends on attributes are registered as factories, `factory(node) -> compute`, so
attributes are read once when a step is built, never per run:

    @kernel("Neg")
    def _neg(ctx, x):
        return np.negative(x)

    @kernel_factory("MatMul", expensive=True)
    def _matmul(node):
        ta, tb = node.attrs["transpose_a"], node.attrs["transpose_b"]
        def compute(ctx, a, b):
            return (a.T if ta else a) @ (b.T if tb else b)
        return compute

A kernel registered with `reuses_inputs=(0, 1)` also takes `donated=(positions...)`: inputs
whose value dies at this call and that nothing else holds, which it may write its output
into (kernels/buffers.py, "donated inputs"); executors that cannot tell pass nothing.

Asynchronous kernels (queues, Recv) are factories with `is_async=True` whose compute takes
a callback, `compute(ctx, done, *inputs)`, and calls `done(outputs)` or `done(error)` later
without holding a thread while they wait. `inline` gives the static executor a Python
expression template (`"{0}"` for Identity, `""` for nothing at all) it may emit in place
of a call; it must mean exactly what the kernel computes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tensorflux.framework import dtypes
from tensorflux.framework.op_registry import registering_module
from tensorflux.kernels import interrupt


class _Dead:
    """The value of an output that a Switch did not take (paper §3.4)."""

    __slots__ = ()
    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "DEAD"

    def __bool__(self) -> bool:
        return False


DEAD = _Dead()


@dataclass(slots=True)
class KernelDef:
    op_type: str
    device_type: str
    factory: Callable  # node -> compute
    constraints: dict[str, frozenset] | None = None  # type attr -> allowed dtypes
    is_async: bool = False
    expensive: bool = False
    inline: str | None = None
    # The kernel's outputs may be the very arrays it was given (Identity, Reshape views):
    # callers must not mutate outputs in place unless they own them.
    forwards_input: bool = False
    # Input positions whose buffer the kernel may write its output into when the executor
    # donates them: `compute(ctx, *inputs, donated=(positions...))` (kernels/buffers.py,
    # "donated inputs"). Empty: the kernel is never passed `donated`.
    reuses_inputs: tuple = ()
    # `compute(ctx)` takes no inputs and its value depends on `ctx.device` alone (a
    # VarHandleOp's handle): a compiled step computes it once, when it is built.
    device_constant: bool = False
    module: str | None = None  # the module that registered it: `tensorflux.kernels.cpu.<family>`

    def matches(self, attrs: dict[str, Any]) -> bool:
        if not self.constraints:
            return True
        for attr, allowed in self.constraints.items():
            value = attrs.get(attr)
            if isinstance(value, list):
                if not all(v in allowed for v in value):
                    return False
            elif value not in allowed:
                return False
        return True


_KERNELS: dict[tuple[str, str], list[KernelDef]] = {}
_lock = threading.Lock()


def _constraints(type_constraints) -> dict[str, frozenset] | None:
    if not type_constraints:
        return None
    return {k: frozenset(dtypes.as_dtype(t) for t in v) for k, v in type_constraints.items()}


def _register(op_types, device: str, factory: Callable, type_constraints, **flags) -> None:
    devices = (device,) if isinstance(device, str) else tuple(device)
    flags["module"] = registering_module()
    if flags.get("expensive") and not flags.get("is_async"):
        # Long kernels poll their step's deadline and cancellation (kernels/interrupt.py).
        factory = interrupt.interruptible(factory)
    with _lock:
        for op_type in op_types:
            for dev in devices:
                kdef = KernelDef(op_type, dev.upper(), factory, _constraints(type_constraints),
                                 **flags)
                _KERNELS.setdefault((op_type, dev.upper()), []).append(kdef)


def kernel(*op_types: str, device="CPU", type_constraints=None, expensive: bool = False,
           inline: str | None = None, forwards_input: bool = False, reuses_inputs: tuple = ()):
    """Registers a plain `compute(ctx, *inputs)` function for each of `op_types`."""

    def register(fn):
        _register(op_types, device, lambda node: fn, type_constraints, expensive=expensive,
                  inline=inline, forwards_input=forwards_input,
                  reuses_inputs=tuple(reuses_inputs))
        return fn

    return register


def kernel_factory(*op_types: str, device="CPU", type_constraints=None,
                   expensive: bool = False, is_async: bool = False,
                   forwards_input: bool = False, reuses_inputs: tuple = (),
                   device_constant: bool = False):
    """Registers `factory(node) -> compute` for each of `op_types`."""

    def register(factory):
        _register(op_types, device, factory, type_constraints, expensive=expensive,
                  is_async=is_async, forwards_input=forwards_input,
                  reuses_inputs=tuple(reuses_inputs), device_constant=device_constant)
        return factory

    return register


def find_kernel(op_type: str, device_type: str, attrs: dict[str, Any]) -> KernelDef | None:
    """The first kernel registered for `op_type` on `device_type` whose constraints hold."""
    for kdef in _KERNELS.get((op_type, device_type), ()):
        if kdef.matches(attrs):
            return kdef
    return None


def has_kernel(op_type: str, device_type: str, attrs: dict[str, Any] | None = None) -> bool:
    if attrs is None:
        return (op_type, device_type) in _KERNELS
    return find_kernel(op_type, device_type, attrs) is not None


def registered_kernels() -> dict[tuple[str, str], list[KernelDef]]:
    return {k: list(v) for k, v in _KERNELS.items()}


class KernelContext:
    """What a kernel may use from its step: one per device per step.

    Attributes:
      step_id: the id of the running step (distinct across concurrent steps).
      device: the runtime Device the kernels run on.
      resource_mgr: the device's ResourceMgr (variables, queues, ...).
      rendezvous: the step's Rendezvous for Send/Recv.
      cancellation: the step's CancellationManager.
      args: feed values, indexed by `_Arg` nodes.
      step_container: per-step resources (TensorArrays, stacks), dropped at step end.
      frame_iter: (frame_id, iter_id) of the node being run, for Send/Recv keys.
      runner: submits a callable to the device's thread pool.
      session: the owning session's runtime state (handles, options).
      options: the RunOptions of this step, or None.
      stats: the step's StepStatsCollector when traced, else None.
      deadline: the step's time.monotonic() deadline (RunOptions.timeout_in_ms), or None.
      workers: the threads a big kernel of this step may use (`intra_op.workers`, worked
        out at the step's first call; 0 until then).
      at_end: callbacks the executor running the step calls once, when it ends (failed or
        not) and nothing of it is in flight any more (`end_step`): a held mutex lock that
        nothing released (kernels/cpu/mutex_ops.py). Kernels append to it.

    Long kernels stop early through `tensorflux.kernels.interrupt` (deadline, cancellation
    and the session's close, polled between chunks).
    """

    __slots__ = ("step_id", "device", "resource_mgr", "rendezvous", "cancellation", "args",
                 "step_container", "frame_iter", "runner", "session", "options",
                 "stats", "deadline", "workers", "at_end", "__weakref__")

    def __init__(self, step_id: int, device, rendezvous=None, cancellation=None,
                 args=(), runner=None, session=None, options=None):
        self.step_id = step_id
        self.device = device
        self.resource_mgr = device.resource_mgr if device is not None else None
        self.rendezvous = rendezvous
        self.cancellation = cancellation
        self.args = args
        self.step_container: dict = {}
        self.frame_iter = (0, 0)
        self.runner = runner
        self.session = session
        self.options = options
        self.stats = None
        self.deadline = None  # time.monotonic() bound of the step, for blocking waits
        self.workers = 0
        self.at_end: list = []

    def end_step(self) -> None:
        """Calls the `at_end` callbacks (each once; the executor's last act of a step)."""
        while self.at_end:
            self.at_end.pop()()
