"""Placing a replicated model's variables on parameter servers (`tf.train.replica_device_setter`).

Between-graph replication (paper §4.4 and §9.2): each worker builds its own graph, and
every graph puts its variables on the tasks of the "ps" job and the rest of its ops on the
worker's own device. `replica_device_setter` returns the device function doing that; it
is used as `with tf.device(replica_device_setter(...)):`.

For every op created in the block (ops created under `colocate_with` never reach it):

- an op whose type is in `ps_ops` (variable handles and other stateful containers, see
  `STANDARD_PS_OPS`) goes to `ps_device`; when that names a job and the op's device does
  not name another one, the strategy picks the task (`_RoundRobinStrategy` by default,
  `GreedyLoadBalancingStrategy` to balance bytes);
- every other op goes to `worker_device`;
- in both cases fields the op's device already sets (from inner `tf.device` blocks) win;
  with `merge_devices=False` an op that already has a device keeps it unchanged.

TF1 shipped `GreedyLoadBalancingStrategy` and `byte_size_load_fn` in `tf.contrib.training`;
TensorFlow 2.x has no contrib and tensorflux no `tf.contrib` package, so they are exported
as `tf.train.GreedyLoadBalancingStrategy` and `tf.train.byte_size_load_fn`.
"""

from __future__ import annotations

import logging

import numpy as np

from tensorflux.distributed.cluster import ClusterSpec
from tensorflux.framework import device_spec as pydev
from tensorflux.framework import dtypes, tensor_shape
from tensorflux.protos import node_def_pb2

__all__ = ["replica_device_setter", "GreedyLoadBalancingStrategy", "byte_size_load_fn",
           "STANDARD_PS_OPS"]

# Op types placed on the ps job unless `ps_ops` says otherwise: the variable and
# mutable-table handles, boosted-trees resources and resource accumulators (the same list as
# TensorFlow's device_setter).
STANDARD_PS_OPS = (
    "Variable", "VariableV2", "AutoReloadVariable",
    "MutableHashTable", "MutableHashTableV2",
    "MutableHashTableOfTensors", "MutableHashTableOfTensorsV2",
    "MutableDenseHashTable", "MutableDenseHashTableV2",
    "VarHandleOp", "BoostedTreesEnsembleResourceHandleOp",
    "BoostedTreesQuantileStreamResourceHandleOp",
    "ResourceConditionalAccumulator", "DecisionTreeResource",
)

_log = logging.getLogger("tensorflux")


class _RoundRobinStrategy:
    """Hands out ps task indices 0, 1, ..., num_tasks - 1, 0, 1, ... (the default strategy).

    Args:
      num_tasks: how many ps tasks to cycle over.
    """

    def __init__(self, num_tasks: int) -> None:
        self._num_tasks = num_tasks
        self._next_task = 0

    def __call__(self, unused_op) -> int:
        """The task for the next ps op.

        Args:
          unused_op: the op being placed (not looked at).

        Returns:
          A task index in [0, num_tasks).
        """
        task = self._next_task
        self._next_task = (task + 1) % self._num_tasks
        return task


class GreedyLoadBalancingStrategy:
    """Puts each ps op on the ps task with the least load so far, then adds the op's load.

    TF1's `tf.contrib.training.GreedyLoadBalancingStrategy`. With `byte_size_load_fn` the
    load is the variables' bytes, so tasks end up holding similar amounts of memory (ties go
    to the lowest task index).

    Args:
      num_tasks: the number of ps tasks.
      load_fn: `fn(op) -> number`, the load an op adds to the task it is put on.
    """

    def __init__(self, num_tasks: int, load_fn) -> None:
        self._num_tasks = num_tasks
        self._load_fn = load_fn
        self._ps_loads = np.zeros(num_tasks)

    def __call__(self, op) -> int:
        """The least loaded task; its load grows by `load_fn(op)`.

        Args:
          op: the op being placed.

        Returns:
          A task index in [0, num_tasks).
        """
        task = int(np.argmin(self._ps_loads))
        self._ps_loads[task] += self._load_fn(op)
        return task


def byte_size_load_fn(op) -> int:
    """The bytes of an op's single output: a variable's size, for `GreedyLoadBalancingStrategy`.

    For a resource handle (VarHandleOp: a scalar `resource` tensor) the size is that of the
    variable it creates, from the op's `dtype` and `shape` attrs, so resource variables
    balance as TF1's reference variables do. An output whose shape is not fully defined
    falls back on the op's `shape` attr.

    Args:
      op: an Operation with exactly one output, typically a variable op.

    Returns:
      The number of bytes (elements times the element size).

    Raises:
      ValueError: the op does not have exactly one output, or its size is not fully
        defined.
    """
    if len(op.outputs) != 1:
        raise ValueError(f"Op {op} must have a single output")
    output = op.outputs[0]
    dtype, shape = output.dtype, output.get_shape()
    if dtype.base_dtype == dtypes.resource and "dtype" in op.attrs:
        dtype = dtypes.as_dtype(op.get_attr("dtype"))
        shape = tensor_shape.TensorShape(op.get_attr("shape"))
    elif not shape.is_fully_defined():
        shape = tensor_shape.TensorShape(op.get_attr("shape"))
    shape.assert_is_fully_defined()
    return shape.num_elements() * dtype.base_dtype.size


class _ReplicaDeviceChooser:
    """The device function `replica_device_setter` returns (see the module docstring)."""

    def __init__(self, ps_tasks, ps_device, worker_device, merge_devices, ps_ops,
                 ps_strategy) -> None:
        self._ps_tasks = ps_tasks
        self._ps_device = ps_device
        self._worker_device = worker_device
        self._merge_devices = merge_devices
        self._ps_ops = ps_ops
        self._ps_strategy = ps_strategy

    def device_function(self, op) -> str:
        """The device of `op`.

        Args:
          op: an Operation (or a NodeDef) about to be placed.

        Returns:
          A device string: the ps or worker device merged under the op's current one.
        """
        if not self._merge_devices and op.device:
            return op.device
        current = pydev.DeviceSpecV2.from_string(op.device or "")
        op_type = op.op if isinstance(op, node_def_pb2.NodeDef) else op.type
        if self._ps_tasks and self._ps_device and op_type in self._ps_ops:
            ps = pydev.DeviceSpecV2.from_string(self._ps_device)
            if ps.job and (not current.job or current.job == ps.job):
                ps = ps.replace(task=self._ps_strategy(op))
            return ps.make_merged_spec(current).to_string()
        worker = pydev.DeviceSpecV2.from_string(self._worker_device or "")
        return worker.make_merged_spec(current).to_string()


def _ps_tasks_of(cluster, ps_device) -> int:
    """The number of tasks of `ps_device`'s job in `cluster` (0 when it has none)."""
    spec = cluster.as_dict() if isinstance(cluster, ClusterSpec) else \
        ClusterSpec(cluster).as_dict()
    job = pydev.DeviceSpecV2.from_string(ps_device or "").job
    if job not in spec or spec[job] is None:
        return 0
    return len(spec[job])


def replica_device_setter(ps_tasks: int = 0, ps_device: str = "/job:ps",
                          worker_device: str = "/job:worker", merge_devices: bool = True,
                          cluster=None, ps_ops=None, ps_strategy=None):
    """A device function for `tf.device` that puts variables on ps tasks, the rest on the
    worker (`tf.train.replica_device_setter`).

        cluster = {"ps": ["ps0:2222", "ps1:2222"], "worker": ["w0:2222", "w1:2222"]}
        with tf.device(tf.train.replica_device_setter(cluster=cluster)):
            v1 = tf.Variable(...)   # /job:ps/task:0
            v2 = tf.Variable(...)   # /job:ps/task:1
            v3 = tf.Variable(...)   # /job:ps/task:0
            y = v1 + v2             # /job:worker

    Args:
      ps_tasks: the number of ps tasks; ignored when `cluster` is given.
      ps_device: the ps device, e.g. "/job:ps" (a task is added per op); "" places no op
        on a ps job.
      worker_device: the device of every other op, e.g. "/job:worker/task:1"; "" adds
        nothing.
      merge_devices: True fills in only the fields an op's device leaves unset; False
        leaves ops that already have a device alone (deprecated in TF1, with a warning).
      cluster: a ClusterSpec, a dict of job -> addresses, or a ClusterDef; `ps_tasks` is
        the size of `ps_device`'s job in it.
      ps_ops: op types placed on ps tasks (default `STANDARD_PS_OPS`).
      ps_strategy: `fn(op) -> task index` for each ps op (default: round robin over
        the ps tasks).

    Returns:
      The device function, or None when there are no ps tasks (`ps_tasks` is 0, or
      `cluster` has no job named by `ps_device`): `tf.device(None)` then clears the
      enclosing device scopes, as in TF1.

    Raises:
      TypeError: `cluster` is not a ClusterSpec, dict or ClusterDef, or `ps_strategy`
        is not callable.
      ValueError: `ps_tasks` > 0 with a `cluster` that has no ps job (TF returns None).
    """
    if cluster is not None:
        in_cluster = _ps_tasks_of(cluster, ps_device)
        if ps_tasks > 0 and in_cluster == 0:
            # TensorFlow ignores ps_tasks here and places everything on the workers; a
            # cluster with no ps job contradicts an explicit ps_tasks, so we say so.
            raise ValueError(f"replica_device_setter was given ps_tasks={ps_tasks} but the "
                             f"cluster has no tasks in the job of ps_device {ps_device!r}")
        ps_tasks = in_cluster
    if ps_tasks == 0:
        return None
    if ps_ops is None:
        ps_ops = list(STANDARD_PS_OPS)
    if not merge_devices:
        _log.warning("DEPRECATION: It is recommended to set merge_devices=true in "
                     "replica_device_setter")
    if ps_strategy is None:
        ps_strategy = _RoundRobinStrategy(ps_tasks)
    if not callable(ps_strategy):
        raise TypeError("ps_strategy must be callable")
    chooser = _ReplicaDeviceChooser(ps_tasks, ps_device, worker_device, merge_devices,
                                    ps_ops, ps_strategy)
    return chooser.device_function
