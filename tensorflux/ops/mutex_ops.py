"""Mutexes: the ops under `tf.CriticalSection` (TensorFlow's MutexV2, MutexLock,
ConsumeMutexLock).

- MutexV2 outputs a scalar `resource` handle naming a mutex in its device's ResourceMgr
  (container `container`, name `shared_name` or a unique "_N_<node name>"), as the queue
  ops do.
- MutexLock takes the handle and outputs a scalar `variant`, the held lock, once the mutex
  is free; until then the step waits without holding a thread (an asynchronous kernel), and
  waiting steps get the mutex in the order they asked for it. A step cancelled while it
  waits (Session.close, a RunOptions deadline, another partition's failure) fails with
  CancelledError("Lock acquisition cancelled.").
- ConsumeMutexLock takes the held lock and releases the mutex. A lock that no
  ConsumeMutexLock released (the step failed, or its fetches did not need the release) is
  released when its step ends, as TensorFlow releases it when the lock tensor is destroyed.

None of them has a gradient. Kernels: tensorflux/kernels/cpu/mutex_ops.py; the library
built on them: tensorflux/control_flow/critical_section.py.
"""

from __future__ import annotations

from tensorflux.framework import common_shapes
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable

# The ops are TensorFlow's raw ops (tf.raw_ops); TF1's public name is tf.CriticalSection.
__all__: list[str] = []


def _no_outputs(op):
    return []


define_op("MutexV2", outputs=["resource: resource"],
          attrs=["container: string = ''", "shared_name: string = ''"],
          shape_fn=common_shapes.scalar, stateful=True)
define_op("MutexLock", inputs=["mutex: resource"], outputs=["mutex_lock: variant"],
          shape_fn=common_shapes.scalar, stateful=True)
define_op("ConsumeMutexLock", inputs=["mutex_lock: variant"], shape_fn=_no_outputs,
          stateful=True)
not_differentiable("MutexV2", "MutexLock", "ConsumeMutexLock")


def mutex_v2(container: str = "", shared_name: str = "", name=None):
    """A mutex resource (its scalar `resource` handle)."""
    return apply_op("MutexV2", container=container, shared_name=shared_name,
                    name=name or "MutexV2")


def mutex_lock(mutex, name=None):
    """Locks `mutex` (waiting for it to be free); the held lock, a scalar `variant`."""
    return apply_op("MutexLock", mutex=mutex, name=name or "MutexLock")


def consume_mutex_lock(mutex_lock, name=None):
    """Releases the lock `mutex_lock` holds (MutexLock's output); an Operation."""
    return apply_op("ConsumeMutexLock", mutex_lock=mutex_lock,
                    name=name or "ConsumeMutexLock")
