"""The cost model the placer simulates with (whitepaper §3.2.1).

"The input to the placement algorithm is a cost model, which contains estimates of the sizes
(in bytes) of the input and output tensors for each graph node, along with estimates of the
computation time required for each node when presented with its input tensors. This cost
model is either statically estimated based on heuristics associated with different
operation types, or is measured based on an actual set of placement decisions for earlier
executions of the graph."

Both kinds live here:

- Static estimates (`static_compute_micros`), from the op type and the static shapes of a
  node's inputs and outputs: FLOPs for the dense kernels (MatMul, BatchMatMul, Conv2D and its
  backprops, pooling) divided by the device type's FLOP rate; bytes read and written divided
  by its memory bandwidth for everything else; plus a fixed per-node overhead (a kernel call
  in the Python executor). Unknown dimensions count as `UNKNOWN_DIM`, an unknown rank as
  `UNKNOWN_ELEMENTS` elements. Ops that only move references (Identity, Reshape, Const,
  variable reads, ...) cost the overhead alone. Both facts are recorded with each op's
  definition: `define_op(..., cost_free=True)` and `define_op(..., flops="matmul")`.
- Measured costs (`CostModel.record_step_stats`), from the RunMetadata.step_stats of a traced
  step: each node's kernel time (op_end_rel - op_start_rel) on its device type and the bytes
  of its outputs, averaged over the traced steps. A measured figure, when there is one,
  replaces the static one. `version` goes up when a measurement is new or moves by more
  than `CHANGE_FACTOR`, so a session knows when placements made with older figures are
  worth redoing.

Transfers cost `latency + bytes / bandwidth` between two devices and nothing on one device;
the latency stands for a Send/Recv pair and the rendezvous hop in this runtime, the
bandwidth depends on the pair (same task CPU-CPU: references are handed over, so only cache
traffic; CPU-GPU: PCIe; another task: the network).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field

from tensorflux.framework import flops as flops_lib
from tensorflux.framework import op_registry
from tensorflux.runtime.step_graph import Node

UNKNOWN_DIM = 32  # a batch dimension left open (None) is usually a modest batch
UNKNOWN_ELEMENTS = 1024
CHANGE_FACTOR = 2.0


@dataclass(frozen=True)
class DeviceRates:
    """How fast one device type computes, for static estimates."""

    flops_per_us: float  # sustained FLOP per microsecond of dense kernels
    bytes_per_us: float  # bytes read + written per microsecond by memory-bound kernels
    overhead_us: float  # fixed cost of running one node


@dataclass(frozen=True)
class CostParams:
    """The constants of the model. Defaults fit this runtime on a current x86 core."""

    rates: dict[str, DeviceRates] = field(default_factory=lambda: {
        "CPU": DeviceRates(flops_per_us=5.0e4, bytes_per_us=1.0e4, overhead_us=2.0),
        "GPU": DeviceRates(flops_per_us=5.0e6, bytes_per_us=3.0e5, overhead_us=10.0),
    })
    transfer_latency_us: float = 40.0  # one Send/Recv pair between devices of one task
    remote_latency_us: float = 300.0  # ... between tasks
    local_bytes_per_us: float = 2.0e4  # CPU <-> CPU in one process (no copy, cache traffic)
    pcie_bytes_per_us: float = 1.0e4  # CPU <-> GPU
    network_bytes_per_us: float = 1.0e3  # between tasks
    # A device other than the one the node's inputs favour must finish it this much sooner
    # to be chosen (the estimates are rough; every split has costs the model does not see).
    switch_margin_us: float = 50.0
    # Extra start-up time of a device that has no node yet (one more partition per step).
    device_startup_us: float = 50.0
    # True when every kernel already spreads over all the cores (intra-op parallelism): the
    # CPU devices of a task then share one timeline, as they share the cores, and moving
    # work to another CPU device buys no time.
    cpu_devices_share_cores: bool = False


# Which ops are free (`define_op(..., cost_free=True)`, and the control-flow primitives, which
# only route references) and which FLOP formula an op takes (`define_op(..., flops=...)`,
# formulas in framework/flops.py) is recorded with each op's definition (the runtime's own
# _Arg, _Send and _Recv included).


def _dims(shape) -> list[int] | None:
    """A shape's dimensions with unknown ones replaced by UNKNOWN_DIM; None if rank unknown."""
    if shape is None or shape.ndims is None:
        return None
    return [UNKNOWN_DIM if d is None else d for d in shape.as_list()]


def _elements(shape) -> int:
    dims = _dims(shape)
    if dims is None:
        return UNKNOWN_ELEMENTS
    return math.prod(dims)


def tensor_bytes(shape, dtype) -> int:
    """Estimated bytes of a tensor of static `shape` (TensorShape or None) and `dtype`."""
    size = dtype.size if dtype is not None and dtype.size else 4
    return _elements(shape) * size


def _flops(node: Node, formula: str, in_shapes, out_shapes) -> float | None:
    """The node's float operations by its formula (framework/flops.py), unknown dimensions
    counted as UNKNOWN_DIM."""
    return flops_lib.count(formula, node.op, node.attrs.get, [_dims(s) for s in in_shapes],
                           [_dims(s) for s in out_shapes])


def _cost_rule(op_type: str) -> tuple[bool, str | None]:
    """(free, FLOP formula or None) of an op type, from its definition; only formulas of
    compute-bound kernels count here (the others' kernels are limited by memory)."""
    opdef = op_registry.lookup(op_type)
    if opdef is None:
        return False, None
    free = opdef.cost_free or opdef.control_flow
    compute_bound = opdef.flops and opdef.flops.partition(":")[0] in flops_lib.COMPUTE_BOUND
    return free, opdef.flops if compute_bound else None


def static_compute_micros(node: Node, in_shapes: list, out_shapes: list,
                          rates: DeviceRates) -> float:
    """Estimated time of one node's kernel on a device with `rates`.

    Args:
      node: the step-graph node (its op type and attrs are read).
      in_shapes: static TensorShapes (or None) of its data inputs.
      out_shapes: static TensorShapes (or None) of its outputs.
      rates: the device type's DeviceRates.

    Returns:
      Microseconds.
    """
    free, formula = _cost_rule(node.op)
    if free:
        return rates.overhead_us
    if formula is not None:
        flops = _flops(node, formula, in_shapes, out_shapes)
        if flops is not None:
            return rates.overhead_us + flops / rates.flops_per_us
    moved = 0
    for (src, i), shape in zip(node.inputs, in_shapes, strict=False):
        moved += tensor_bytes(shape, src.output_dtypes[i])
    for dtype, shape in zip(node.output_dtypes, out_shapes, strict=False):
        moved += tensor_bytes(shape, dtype)
    return rates.overhead_us + moved / rates.bytes_per_us


class CostModel:
    """Static and measured costs of nodes and transfers; one per Session (thread-safe).

    Args:
      params: the model's constants (CostParams()).
    """

    def __init__(self, params: CostParams | None = None):
        self.params = params or CostParams()
        self.version = 0
        self._lock = threading.Lock()
        # (node name, device type) -> measured kernel micros (mean over traced steps)
        self._compute: dict[tuple[str, str], tuple[float, int]] = {}
        self._bytes: dict[tuple[str, int], int] = {}  # (node name, output) -> measured bytes

    # ---- queries --------------------------------------------------------------------------
    def measured_compute_micros(self, name: str, device_type: str) -> float | None:
        entry = self._compute.get((name, device_type))
        return None if entry is None else entry[0]

    def measured_output_bytes(self, name: str, index: int) -> int | None:
        return self._bytes.get((name, index))

    def rates(self, device_type: str) -> DeviceRates:
        return self.params.rates.get(device_type, self.params.rates["CPU"])

    def transfer_micros(self, nbytes: int, src, dst) -> float:
        """Time to move `nbytes` from Device `src` to Device `dst` (0 on one device)."""
        if src is dst:
            return 0.0
        p = self.params
        if (src.job, src.replica, src.task) != (dst.job, dst.replica, dst.task):
            return p.remote_latency_us + nbytes / p.network_bytes_per_us
        if src.device_type == dst.device_type == "CPU":
            return p.transfer_latency_us + nbytes / p.local_bytes_per_us
        return p.transfer_latency_us + nbytes / p.pcie_bytes_per_us

    # ---- measurements ---------------------------------------------------------------------
    def record_step_stats(self, step_stats, device_types: dict[str, str]) -> bool:
        """Folds the node timings and output sizes of one traced step into the model.

        Args:
          step_stats: a StepStats proto (RunMetadata.step_stats).
          device_types: device name -> device type ("CPU", "GPU").

        Returns:
          True if some figure is new or changed by more than CHANGE_FACTOR (then `version`
          has gone up).
        """
        changed = False
        with self._lock:
            for dev in step_stats.dev_stats:
                dtype = device_types.get(dev.device, "CPU")
                for ns in dev.node_stats:
                    if ns.node_name.startswith("_") or "/_" in ns.node_name:
                        continue  # runtime-inserted nodes (_Send, _Recv, casts, args)
                    micros = max(0, ns.op_end_rel_micros - ns.op_start_rel_micros)
                    changed |= self._record_compute((ns.node_name, dtype), float(micros))
                    for out in ns.output:
                        nbytes = out.tensor_description.allocation_description.requested_bytes
                        key = (ns.node_name, out.slot)
                        old = self._bytes.get(key)
                        if old is None or _moved(old, nbytes):
                            changed = True
                        self._bytes[key] = nbytes
            if changed:
                self.version += 1
        return changed

    def _record_compute(self, key: tuple[str, str], micros: float) -> bool:
        old = self._compute.get(key)
        if old is None:
            self._compute[key] = (micros, 1)
            return micros > self.params.switch_margin_us / 10
        mean, n = old
        n = min(n + 1, 16)  # a running mean that keeps adapting
        new_mean = mean + (micros - mean) / n
        self._compute[key] = (new_mean, n)
        return _moved(mean, new_mean) and max(mean, new_mean) > self.params.switch_margin_us / 10


def _moved(old: float, new: float) -> bool:
    lo, hi = sorted((abs(old), abs(new)))
    return hi > CHANGE_FACTOR * max(lo, 1.0)


class StepCosts:
    """The costs of one step graph's nodes, looked up once each (used by the placer).

    Args:
      model: the session's CostModel.
      feed_shapes: `_Arg` node -> static TensorShape of the fed tensor.
    """

    def __init__(self, model: CostModel, feed_shapes: dict[Node, object] | None = None):
        self.model = model
        self._feed_shapes = feed_shapes or {}
        self._compute: dict[tuple[Node, str], float] = {}

    def shape(self, node: Node, index: int):
        if node.op == "_Arg":
            return self._feed_shapes.get(node)
        shapes = node.output_shapes
        if shapes is None or index >= len(shapes):
            return None
        return shapes[index]

    def output_bytes(self, node: Node, index: int) -> int:
        measured = self.model.measured_output_bytes(node.name, index)
        if measured is not None:
            return measured
        return tensor_bytes(self.shape(node, index), node.output_dtypes[index])

    def compute_micros(self, node: Node, device_type: str) -> float:
        key = (node, device_type)
        cost = self._compute.get(key)
        if cost is None:
            cost = self.model.measured_compute_micros(node.name, device_type)
            if cost is None:
                in_shapes = [self.shape(src, i) for src, i in node.inputs]
                out_shapes = [self.shape(node, i) for i in range(len(node.output_dtypes))]
                cost = static_compute_micros(node, in_shapes, out_shapes,
                                             self.model.rates(device_type))
            self._compute[key] = cost
        return cost


__all__ = ["CostModel", "CostParams", "DeviceRates", "StepCosts", "static_compute_micros",
           "tensor_bytes"]
