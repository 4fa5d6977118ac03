"""Step statistics: what ran where and when (RunOptions.trace_level; whitepaper §9.2).

A traced step (trace_level other than NO_TRACE) runs on *traced twins* of the step's
executors: the same strategy (exec_options.choose_strategies' plan: static, merged, compiled
loops, dataflow or reference) over the same nodes, with every kernel wrapped once, when the
twin was built, by `traced_wrapper`, and inlining off (so every node is a call). Inside a
compiled loop each iteration's kernel calls are recorded (its Merge, Switch and NextIteration
are plain assignments there), and the loop node as a whole. The
wrapper times the kernel call and hands the
node, the times, the thread and the outputs to the step's StepStatsCollector
(`KernelContext.stats`). Untraced steps run the ordinary executors, whose kernels carry no
timing code at all, so tracing costs nothing when it is off.

Per node the collector keeps TensorFlow's NodeExecStats fields:
- `all_start_micros`: wall-clock (epoch) microseconds when the kernel was called;
- `op_start_rel_micros` = 0, `op_end_rel_micros`: when it returned (for an asynchronous
  kernel such as _Recv, when it called `done`: the wait is part of the op);
- `all_end_rel_micros`: the same end (outputs are handed on right after);
- `thread_id` (the OS thread id) and `DeviceStepStats.thread_names`;
- `output`: slot, dtype, shape and bytes of each output, `memory`: bytes this node newly
  allocated on its device's tracker and the device's bytes in use afterwards;
- `timeline_label`: `name = Op(input, ...)`, and for _Send/_Recv TensorFlow's
  `name = _Send(tensor_name @recv_device)` / `name = _Recv(tensor_name @send_device)`,
  which is how the timeline draws transfer arrows.

`memory_wrapper` is the always-on, cheap half: it only counts the outputs of expensive
kernels on the device's MemoryTracker (see runtime/device.py).
"""

from __future__ import annotations

import threading
import time

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels import interrupt
from tensorflux.kernels.gpu import backend as gpu_backend
from tensorflux.kernels.registry import DEAD
from tensorflux.protos import step_stats_pb2
from tensorflux.runtime.step_graph import Node

_now_ns = time.perf_counter_ns
# Their outputs are tensors made elsewhere (a feed, another device's tensor).
_NOT_ALLOCATING = frozenset(("_Arg", "_Recv", "_HostRecv"))


def timeline_label(node: Node) -> str:
    """TensorFlow's NodeExecStats.timeline_label for `node`."""
    a = node.attrs
    if node.op in ("_Send", "_HostSend"):
        return f"{node.name} = {node.op}({a['tensor_name']} @{a['recv_device']})"
    if node.op in ("_Recv", "_HostRecv"):
        return f"{node.name} = {node.op}({a['tensor_name']} @{a['send_device']})"
    inputs = [s.name if i == 0 else f"{s.name}:{i}" for s, i in node.inputs]
    inputs += [f"^{c.name}" for c in node.control_inputs]
    return f"{node.name} = {node.op}({', '.join(inputs)})"


class StepStatsCollector:
    """Collects the NodeExecStats of one step across devices (thread-safe)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._records: dict[str, list[tuple]] = {}
        self._threads: dict[str, dict[int, str]] = {}
        self._epoch_offset_ns = time.time_ns() - _now_ns()

    def record(self, device, node: Node, label: str, start_ns: int, end_ns: int,
               outputs, inputs=(), allocates: bool = True) -> None:
        """Notes one executed node.

        Args:
          device: the Device it ran on.
          node: the node; label: its timeline label; start_ns, end_ns: perf_counter times.
          outputs: the kernel's return value.
          inputs: the kernel's inputs (an output that is one of them is no allocation).
          allocates: False for kernels whose outputs are never new memory of this device
            (_Arg, _Recv, kernels that forward an input).
        """
        if len(node.output_dtypes) == 1:
            values = (outputs,)
        elif node.output_dtypes and isinstance(outputs, (tuple, list)):
            values = tuple(outputs)
        else:
            values = ()
        memory = device.memory
        allocated = 0
        if allocates:
            allocated = sum(memory.track(v) for v in values
                            if not any(v is i for i in inputs))
        thread = threading.current_thread()
        tid = threading.get_native_id() & 0xFFFFFFFF
        outputs = tuple(_describe(v) for v in values)  # never keep the arrays themselves
        rec = (node, label, start_ns, end_ns, tid, outputs, allocated, memory.bytes_in_use)
        with self._lock:
            self._records.setdefault(device.name, []).append(rec)
            self._threads.setdefault(device.name, {})[tid] = thread.name

    def devices(self) -> list[str]:
        with self._lock:
            return list(self._records)

    def fill(self, step_stats, memory_names: dict[str, str] | None = None) -> None:
        """Writes what was collected into a StepStats proto (replacing its contents).

        Args:
          step_stats: a `step_stats_pb2.StepStats` (e.g. RunMetadata.step_stats).
          memory_names: device name -> allocator name for the `memory` entries.
        """
        del step_stats.dev_stats[:]
        memory_names = memory_names or {}
        with self._lock:
            records = {d: list(r) for d, r in self._records.items()}
            threads = {d: dict(t) for d, t in self._threads.items()}
        for device, recs in records.items():
            dev = step_stats.dev_stats.add(device=device)
            for tid, name in threads.get(device, {}).items():
                dev.thread_names[tid] = name
            allocator = memory_names.get(device, "cpu")
            for rec in sorted(recs, key=lambda r: r[2]):
                _fill_node(dev.node_stats.add(), rec, self._epoch_offset_ns, allocator)


def _describe(value) -> tuple | None:
    """(shape, bytes) of an output value, None when it has no array shape."""
    if value is None or value is DEAD or not (isinstance(value, (np.ndarray, np.generic))
                                              or gpu_backend.is_device_array(value)):
        return None
    return np.shape(value), int(value.nbytes)


def _fill_node(ns, rec, offset_ns: int, allocator: str) -> None:
    node, label, start_ns, end_ns, tid, values, allocated, in_use = rec
    start = start_ns + offset_ns
    dur = max(0, end_ns - start_ns)
    ns.node_name = node.name
    ns.timeline_label = label
    ns.thread_id = tid
    ns.all_start_micros = start // 1000
    ns.all_start_nanos = start
    ns.scheduled_micros = start // 1000
    ns.scheduled_nanos = start
    ns.op_start_rel_micros = 0
    ns.op_end_rel_micros = dur // 1000
    ns.all_end_rel_micros = dur // 1000
    ns.op_end_rel_nanos = dur
    ns.all_end_rel_nanos = dur
    for slot, v in enumerate(values):
        out = ns.output.add(slot=slot)
        desc = out.tensor_description
        desc.dtype = node.output_dtypes[slot].as_datatype_enum
        if v is not None:
            shape, nbytes = v
            for d in shape:
                desc.shape.dim.add(size=d)
            desc.allocation_description.requested_bytes = nbytes
            desc.allocation_description.allocated_bytes = nbytes
            desc.allocation_description.allocator_name = allocator
    if allocated or values:
        ns.memory.add(allocator_name=allocator, total_bytes=allocated, peak_bytes=allocated,
                      live_bytes=allocated, allocator_bytes_in_use=in_use)


def traced_wrapper(device):
    """A kernel wrapper (for any executor's `kernel_wrapper`) recording every node's run in
    the step's collector (`ctx.stats`) for `device`."""

    sync = gpu_backend.synchronize_stream if device.device_type == "GPU" else None

    def wrap(node: Node, kdef, compute):
        label = timeline_label(node)
        allocates = not (kdef.forwards_input or node.op in _NOT_ALLOCATING)
        if kdef.is_async:
            def run_async(ctx, done, *inputs):
                stats = ctx.stats
                start = _now_ns()

                def finish(outputs=None):
                    if stats is not None and not isinstance(outputs, BaseException):
                        stats.record(device, node, label, start, _now_ns(), outputs, inputs,
                                     allocates)
                    done(outputs)

                return compute(ctx, finish, *inputs)

            return run_async

        def run(ctx, *inputs):
            start = _now_ns()
            out = compute(ctx, *inputs)
            if sync is not None:
                sync()  # a GPU kernel's time is its device time, not its queueing
            end = _now_ns()
            stats = ctx.stats
            if stats is not None:
                stats.record(device, node, label, start, end, out, inputs, allocates)
            return out

        return run

    return wrap


def _track_each(track):
    def each(outs):
        for v in outs:
            track(v)

    return each


def memory_wrapper(device):
    """A kernel wrapper counting the outputs of expensive kernels on `device`'s memory
    tracker (other kernels are returned unchanged); on a GPU, the wrapper that turns an
    allocation failure into ResourceExhaustedError (`gpu_memory_wrapper`)."""
    if device.device_type == "GPU":
        return gpu_memory_wrapper(device)
    track = device.memory.track

    def wrap(node: Node, kdef, compute):
        if not kdef.expensive or kdef.is_async:
            return compute
        many = len(node.output_dtypes) > 1
        scoped = getattr(compute, "scoped", None)  # under interrupt.interruptible's run
        if scoped is not None:  # one frame for both (~1 us each after a big kernel)
            run = interrupt.scoped_then(scoped, _track_each(track) if many else track)
            run.passes_donations = True
            return run

        def run(ctx, *inputs, **donated):
            out = compute(ctx, *inputs, **donated)
            if many:
                for v in out:
                    track(v)
            else:
                track(out)
            return out

        run.passes_donations = True  # `donated` (kernels/buffers.py) goes on to the kernel
        return run

    return wrap


def new_step_stats() -> step_stats_pb2.StepStats:
    return step_stats_pb2.StepStats()


def gpu_memory_wrapper(device):
    """A GPU's kernel wrapper: an allocation the device cannot satisfy becomes TensorFlow's
    ResourceExhaustedError naming the node and the allocator's state (the executor adds
    the node, op and device to the message), and expensive kernels update the memory
    peak of `device.memory_stats()`."""
    oom = gpu_backend.backend().oom_errors

    def wrap(node: Node, kdef, compute):
        if kdef.is_async:
            return compute
        expensive = kdef.expensive

        def run(ctx, *inputs):
            try:
                out = compute(ctx, *inputs)
            except oom as e:
                stats = device.memory_stats()
                raise errors.ResourceExhaustedError(
                    None, None, f"OOM when allocating a tensor for {node.name} ({node.op}) "
                    f"on {device.name}: {e} (bytes in use {stats['bytes_in_use']}, limit "
                    f"{stats['bytes_limit']})") from None
            if expensive:
                device.note_memory()
            return out

        return run

    return wrap
