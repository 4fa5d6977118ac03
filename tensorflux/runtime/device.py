"""Devices of one task: each has a full name, a resource manager, a thread pool and memory
statistics.

`make_local_devices(config)` creates `device_count["CPU"]` CPU devices (default 1) and, when
CuPy finds a GPU, `device_count["GPU"]` GPU devices (default: all). Every device of a
session has its own inter-op thread pool, so partitions on different devices run in parallel.

Memory statistics (`Device.memory_stats()`, TensorFlow's allocator stats). NumPy owns the
memory, so a device cannot count its allocator's blocks; instead `MemoryTracker` counts the
arrays that kernels placed on the device *produce*: an output that owns its data and is not
already tracked adds its `nbytes`, and a weak reference subtracts them when the array dies
(CPython frees it the moment its last reference goes, wherever that is: an executor's entry
table, a variable's storage, the caller's fetch). Views and forwarded inputs add nothing.
Which kernels are tracked (see `tracing.memory_wrapper`): every kernel in traced steps
(RunOptions.trace_level), and the expensive ones (MatMul, Conv2D, big reductions, ...) in
every step, where the ~1 µs of bookkeeping is noise next to the kernel itself. The cheap
kernels of untraced steps are not tracked, so those steps cost nothing extra.
"""

from __future__ import annotations

import os
import random
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from tensorflux.framework import device_spec as device_spec_lib
from tensorflux.framework import errors
from tensorflux.runtime.resource_mgr import ResourceMgr

# TensorFlow reports this nominal limit for a CPU device in list_devices().
CPU_MEMORY_LIMIT = 256 << 20


class MemoryTracker:
    """Bytes of live arrays produced on one device, and the peak (thread-safe).

    Invariant: `bytes_in_use` is the sum of `nbytes` over tracked arrays that are still
    alive; each array is counted once however often it is passed on.
    """

    __slots__ = ("allocator_name", "_lock", "_live", "bytes_in_use", "peak_bytes_in_use",
                 "num_allocs", "largest_alloc_size")

    def __init__(self, allocator_name: str):
        self.allocator_name = allocator_name
        self._lock = threading.RLock()  # a weakref callback may run while we hold it
        self._live: dict[int, weakref.ref] = {}
        self.bytes_in_use = 0
        self.peak_bytes_in_use = 0
        self.num_allocs = 0
        self.largest_alloc_size = 0

    def track(self, value) -> int:
        """Counts `value` if it is a new array owning its data; returns the bytes added."""
        if type(value) is not np.ndarray or not value.flags.owndata:
            return 0
        key = id(value)
        nbytes = value.nbytes
        with self._lock:
            old = self._live.get(key)
            if old is not None and old() is value:
                return 0
            self._live[key] = weakref.ref(value, lambda _r, k=key, n=nbytes: self._free(k, n))
            self.bytes_in_use += nbytes
            self.num_allocs += 1
            if nbytes > self.largest_alloc_size:
                self.largest_alloc_size = nbytes
            if self.bytes_in_use > self.peak_bytes_in_use:
                self.peak_bytes_in_use = self.bytes_in_use
        return nbytes

    def _free(self, key: int, nbytes: int) -> None:
        with self._lock:
            ref = self._live.get(key)
            if ref is not None and ref() is None:
                del self._live[key]
                self.bytes_in_use -= nbytes

    def reset_peak(self) -> None:
        with self._lock:
            self.peak_bytes_in_use = self.bytes_in_use

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"bytes_in_use": self.bytes_in_use,
                    "peak_bytes_in_use": self.peak_bytes_in_use,
                    "num_allocs": self.num_allocs,
                    "largest_alloc_size": self.largest_alloc_size}


class Device:
    """One compute device: `/job:localhost/replica:0/task:0/device:CPU:0`."""

    def __init__(self, job: str, replica: int, task: int, device_type: str, index: int,
                 num_threads: int, memory_limit: int = 0):
        self.job, self.replica, self.task = job, replica, task
        self.device_type = device_type
        self.index = index
        self.name = f"/job:{job}/replica:{replica}/task:{task}/device:{device_type}:{index}"
        self.incarnation = random.getrandbits(63) or 1
        self.resource_mgr = ResourceMgr()
        self.memory_limit = memory_limit
        self.memory = MemoryTracker(f"{device_type.lower()}_{index}")
        self.num_threads = max(1, num_threads)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    @property
    def pool(self) -> ThreadPoolExecutor:
        if self._pool is None:
            with self._pool_lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(
                        max_workers=self.num_threads,
                        thread_name_prefix=f"tfx-{self.device_type}{self.index}")
        return self._pool

    def runner(self, fn, *args) -> None:
        """Runs `fn(*args)` on this device's inter-op thread pool."""
        self.pool.submit(fn, *args)

    @property
    def bytes_in_use(self) -> int:
        return self.memory.bytes_in_use

    @property
    def peak_bytes_in_use(self) -> int:
        return self.memory.peak_bytes_in_use

    def memory_stats(self) -> dict[str, int]:
        """TensorFlow's allocator statistics for this device.

        Returns:
          A dict with `bytes_in_use`, `peak_bytes_in_use`, `num_allocs`, `largest_alloc_size`
          (of the tracked arrays; see the module docstring) and `bytes_limit`.
        """
        stats = self.memory.stats()
        stats["bytes_limit"] = self.memory_limit
        return stats

    def shutdown(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
        self.resource_mgr.clear()

    def __repr__(self) -> str:
        return f"Device({self.name})"


class DeviceAttributes:
    """What `Session.list_devices()` returns for each device (TF's `_DeviceAttributes`)."""

    __slots__ = ("name", "device_type", "memory_limit_bytes", "incarnation")

    def __init__(self, device: Device):
        self.name = device.name
        self.device_type = device.device_type
        self.memory_limit_bytes = device.memory_limit
        self.incarnation = device.incarnation

    def __repr__(self) -> str:
        return (f"_DeviceAttributes({self.name}, {self.device_type}, "
                f"{self.memory_limit_bytes}, {self.incarnation})")


def gpu_count() -> int:
    """How many GPUs CuPy sees (0 when CuPy or a GPU is absent)."""
    try:
        import cupy  # noqa: F401 - optional dependency

        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:
        return 0


def _gpu_memory_limit(index: int) -> int:
    try:
        import cupy

        with cupy.cuda.Device(index):
            return int(cupy.cuda.runtime.memGetInfo()[1])
    except Exception:
        return 0


def make_local_devices(config=None, job: str = "localhost", replica: int = 0,
                       task: int = 0) -> list[Device]:
    """The devices of this process for a session with `config` (a ConfigProto or None).

    Raises:
      InvalidArgumentError: if `device_count["CPU"]` is less than 1.
    """
    counts = dict(config.device_count) if config is not None else {}
    threads = config.inter_op_parallelism_threads if config is not None else 0
    threads = threads if threads > 0 else (os.cpu_count() or 2)
    n_cpu = counts.get("CPU", 1)
    if n_cpu < 1:
        raise errors.InvalidArgumentError(None, None, "device_count['CPU'] must be >= 1")
    devices = [Device(job, replica, task, "CPU", i, threads, CPU_MEMORY_LIMIT)
               for i in range(n_cpu)]
    n_gpu = min(counts.get("GPU", 1 << 30), gpu_count())
    devices += [Device(job, replica, task, "GPU", i, threads, _gpu_memory_limit(i))
                for i in range(n_gpu)]
    return devices


class DeviceMgr:
    """The devices of one session (or one worker task), found by full or partial name."""

    def __init__(self, devices: list[Device]):
        self.devices = devices
        self._by_name = {d.name: d for d in devices}

    def lookup(self, name: str) -> Device:
        d = self._by_name.get(name)
        if d is None:
            raise errors.InvalidArgumentError(None, None, f"Unknown device: {name}")
        return d

    def matching(self, spec: str) -> list[Device]:
        """Devices whose names satisfy the (partial) device spec `spec`."""
        if not spec:
            return list(self.devices)
        return [d for d in self.devices if device_spec_lib.is_compatible(spec, d.name)]

    def memory_stats(self) -> dict[str, dict[str, int]]:
        """Device name -> `Device.memory_stats()`."""
        return {d.name: d.memory_stats() for d in self.devices}

    def shutdown(self) -> None:
        for d in self.devices:
            d.shutdown()
