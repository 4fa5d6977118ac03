"""tf.CriticalSection: subgraphs that run one at a time, across steps and threads.

A CriticalSection is a mutex resource (MutexV2, tensorflux/ops/mutex_ops.py). `execute(fn)`
builds, as TF1 does:

    lock = MutexLock(mutex)                   after every outside input of fn's ops is ready
    r = fn()                                  fn's ops under a control dependency on `lock`
    release = ConsumeMutexLock(lock)          after every returned value (colocated with
                                              the mutex)
    outputs = identities of r                 after `release`

so that fetching any output runs fn's ops while the step holds the mutex, and another step
(of any thread) that executes on the same mutex waits for the release without holding a
thread. The lock waits for fn's outside inputs (the ops producing what fn's ops read) so
that a step never holds the mutex while it waits for something else.

Graph-time checks (ValueError, as TF1 raises them): executing in a critical section from
inside a `fn` already executing in it (a deadlock), `fn` building ops on the section's own
mutex, and two critical sections reaching the same resource (a variable, a queue, ...)
unless neither asked for `exclusive_resource_access`. Every CriticalSection is in the
"critical_sections" collection; every execution's signature in
"critical_section_executions".
"""

from __future__ import annotations

import contextlib
import threading
from typing import NamedTuple

from tensorflux.control_flow import builders
from tensorflux.control_flow.control_flow_util import (
    flatten,
    outside_control_flow,
    pack_sequence_as,
)
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.operation import Operation
from tensorflux.ops import array_ops, mutex_ops
from tensorflux.ops.tensor_array_ops import TensorArray

__all__ = ["CriticalSection"]

CRITICAL_SECTIONS = "critical_sections"
CRITICAL_SECTION_EXECUTIONS = "critical_section_executions"


class _ExecutionSignature(NamedTuple):
    """One `execute`: its MutexLock op, the section's handle, the resources fn's ops
    read, and whether it asked for exclusive access to them."""

    op: Operation
    handle: object
    resources: list
    exclusive_resource_access: bool


# The signatures of the sections whose `execute` is running on this thread (innermost last).
_running = threading.local()


@contextlib.contextmanager
def _entered(signature: tuple):
    stack = _running.__dict__.setdefault("stack", [])
    if signature in stack:
        raise ValueError(f"Attempting to lock a CriticalSection (signature={signature}) in "
                         "which we are already running. This is illegal and may cause "
                         "deadlocks.")
    stack.append(signature)
    try:
        yield
    finally:
        stack.pop()


def _colocation(op: Operation):
    try:
        return op.get_attr("_class")
    except ValueError:
        return None


def _identity(x):
    """A new point in the ordering for `x`: an Identity, a group of an Operation, a
    TensorArray with an Identity of its flow."""
    if isinstance(x, TensorArray):
        return x.identity()
    if isinstance(x, Operation):
        return builders.group(x)
    return array_ops.identity(x)


def _gated(values: list) -> list:
    """`values` (tensors and Operations), each available only once all of them are."""
    with graph_lib.name_scope(None, "tuple"):
        gate = builders.group(*values)
        with graph_lib.control_dependencies([gate]):
            return [builders.group(v) if isinstance(v, Operation) else
                    array_ops.identity(v) for v in values]


class CriticalSection:
    """A resource in the graph whose `execute` calls run in serial order (TF1's
    `tf.CriticalSection`).

    Args:
      name: the name (scope) of the MutexV2 op (default "CriticalSection").
      shared_name: the mutex's shared name; default: the name scope ("CriticalSection/"),
        so sessions sharing a device's resources share the mutex.
      critical_section_def: not supported (ValueError, as in TF).
      import_scope: unused.

    Raises:
      ValueError: `critical_section_def` is given.
    """

    def __init__(self, name=None, shared_name=None, critical_section_def=None,
                 import_scope=None):
        if critical_section_def and name is not None:
            raise ValueError(f"Arguments critical_section_def={critical_section_def} and "
                             f"shared_name={shared_name} are mutually exclusive. Please only "
                             "specify one of them.")
        if critical_section_def:
            raise ValueError("Argument `critical_section_def` is not supported.")
        g = graph_lib.get_default_graph()
        with graph_lib.name_scope(name, "CriticalSection") as scope, outside_control_flow(g):
            container = g._container or ""
            if shared_name is None:
                shared_name = scope
            self._handle = mutex_ops.mutex_v2(container=container, shared_name=shared_name,
                                              name=scope)
        op = self._handle.op
        self._signature = (container, shared_name or id(self._handle),
                           op.device or _colocation(op))
        g.add_to_collections(CRITICAL_SECTIONS, self)

    @property
    def name(self) -> str:
        return self._handle.op.name

    def execute(self, fn, exclusive_resource_access=True, name=None):
        """Runs `fn()`'s ops while holding this section's mutex.

        Args:
          fn: a function of no arguments building ops; it returns a tensor, an Operation, a
            TensorArray, or a nested structure of them (use a lambda to pass arguments).
          exclusive_resource_access: whether the resources fn's ops read (variables, ...)
            may not be reached by another CriticalSection's executions.
          name: the name scope (default "critical_section_execute").

        Returns:
          The structure `fn` returned, each value available once the mutex is released.

        Raises:
          ValueError: `fn` executes in this section again (directly or by building ops on
            its mutex), or another CriticalSection's execution reaches a resource that
            fn's ops read and one of the two asked for exclusive access.
        """
        g = graph_lib.get_default_graph()
        with graph_lib.name_scope(name, "critical_section_execute"):
            with _entered(self._signature):
                lock = mutex_ops.mutex_lock(self._handle)
                with g._lock:  # no op of another thread's graph building is counted
                    first = len(g.get_operations())
                    with g.control_dependencies([lock]):
                        r = fn()
                    created = g.get_operations()[first:]
            self._lock_after_inputs(created, lock.op)
            resources = _resources_read(created)
            if any(self._is_own_mutex(t) for t in resources):
                raise ValueError("Attempting to lock a CriticalSection in which we are "
                                 f"already running (signature={self._signature}). This is "
                                 "illegal and may cause deadlocks.")
            self._check_exclusive(g, resources, exclusive_resource_access)
            flat = flatten(r)
            returned = [_identity(x) for x in flat]
            with g.control_dependencies(returned):
                with g.colocate_with(self._handle):
                    release = mutex_ops.consume_mutex_lock(lock)
                flat = _gated(flat)
            with g.control_dependencies([release]):
                outputs = pack_sequence_as(r, [_identity(x) for x in flat])
            g.add_to_collections(CRITICAL_SECTION_EXECUTIONS, _ExecutionSignature(
                lock.op, self._handle, resources, exclusive_resource_access))
            return outputs

    def _lock_after_inputs(self, created: list, lock_op: Operation) -> None:
        """Makes the lock wait for every op outside fn whose output (or completion) fn's
        ops need, so the mutex is never held while the step waits for them."""
        inside = set(created)
        needed = {t.op for op in created for t in op.inputs}
        needed.update(c for op in created for c in op.control_inputs)
        needed -= inside
        needed -= set(lock_op.control_inputs)
        needed -= {t.op for t in lock_op.inputs}
        needed.discard(lock_op)
        if needed:
            ordered = sorted(needed, key=lambda op: op._id)
            lock_op._add_control_input(builders.group(*ordered))

    def _is_own_mutex(self, t) -> bool:
        """Whether tensor `t` is a handle of this section's mutex."""
        op, own = t.op, self._handle.op
        if op.type != "MutexV2":
            return False
        shared = op.get_attr("shared_name")
        return bool(shared) and shared == own.get_attr("shared_name") and (
            op.device == own.device or _colocation(op) == _colocation(own))

    def _check_exclusive(self, g, resources: list, exclusive: bool) -> None:
        for sg in g.get_collection(CRITICAL_SECTION_EXECUTIONS):
            if self._is_own_mutex(sg.handle) or not (exclusive or
                                                     sg.exclusive_resource_access):
                continue
            both = [t for t in resources if any(t is s for s in sg.resources)]
            if both:
                raise ValueError(
                    f"This execution would access resources: {both}. Either this lock "
                    f"(CriticalSection: {self._handle}) or lock '{sg}' (CriticalSection: "
                    f"{sg.handle}) requested exclusive resource access of this resource. "
                    "Did you mean to call execute with keyword argument "
                    "exclusive_resource_access=False?")


def _resources_read(created: list) -> list:
    """The distinct `resource` tensors that the ops in `created` take as inputs."""
    out = []
    for op in created:
        for t in op.inputs:
            if t.dtype == dtypes.resource and not any(t is s for s in out):
                out.append(t)
    return out
