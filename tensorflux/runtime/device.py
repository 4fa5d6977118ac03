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
every step. The cheap kernels of untraced steps are not tracked. The counting runs in C
(`_native.Tracker`, ~1 µs a tensor counted and freed): in Python (`_PyTracker`, the
fallback without the extension) it was ~2% of the MLP step, run right after big kernels
whose data had pushed the interpreter out of the cache.
"""

from __future__ import annotations

import contextlib
import random
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from tensorflux.framework import device_spec as device_spec_lib
from tensorflux.framework import errors
from tensorflux.kernels import intra_op
from tensorflux.kernels.cpu import native
from tensorflux.kernels.gpu import backend as gpu_backend
from tensorflux.runtime.resource_mgr import ResourceMgr

# TensorFlow reports this nominal limit for a CPU device in list_devices().
CPU_MEMORY_LIMIT = 256 << 20


class _PyTracker:
    """MemoryTracker's counters in Python (where the C extension is not built): the
    reference for `_native.Tracker`, which does the same in C."""

    __slots__ = ("_lock", "_live", "bytes_in_use", "peak_bytes_in_use", "num_allocs",
                 "largest_alloc_size")

    def __init__(self):
        self._lock = threading.RLock()  # a weakref callback may run while we hold it
        self._live: dict[int, weakref.ref] = {}
        self.bytes_in_use = 0
        self.peak_bytes_in_use = 0
        self.num_allocs = 0
        self.largest_alloc_size = 0

    def track(self, value) -> int:
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


def _counters():
    """The counters a MemoryTracker keeps: the C extension's Tracker when it is built
    (~1 us a tensor counted and freed against 2-4 in Python), else `_PyTracker`."""
    tracker = getattr(native._mod, "Tracker", None) if native.available() else None
    return tracker(np.ndarray) if tracker is not None else _PyTracker()


class MemoryTracker:
    """Bytes of live arrays produced on one device, and the peak (thread-safe).

    Invariant: `bytes_in_use` is the sum of `nbytes` over tracked arrays that are still
    alive; each array is counted once however often it is passed on. `track(value)`
    counts `value` if it is a new array owning its data and returns the bytes added.
    """

    __slots__ = ("allocator_name", "track", "_counters")

    def __init__(self, allocator_name: str, counters=None):
        self.allocator_name = allocator_name
        self._counters = _counters() if counters is None else counters
        self.track = self._counters.track  # called per tensor: no frame of ours

    bytes_in_use = property(lambda self: self._counters.bytes_in_use)
    peak_bytes_in_use = property(lambda self: self._counters.peak_bytes_in_use)
    num_allocs = property(lambda self: self._counters.num_allocs)
    largest_alloc_size = property(lambda self: self._counters.largest_alloc_size)

    def reset_peak(self) -> None:
        self._counters.reset_peak()

    def stats(self) -> dict[str, int]:
        return self._counters.stats()


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
        self.num_threads = max(0, num_threads)  # 0: kernels run on the caller's thread
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

    def accept(self, value):
        """`value`, received from another device, in this device's memory (a CPU takes
        device arrays back to the host)."""
        return value if type(value) is np.ndarray else gpu_backend.to_host(value)

    def to_host(self, value):
        return value

    def to_host_async(self, value):
        """`to_host`, or a copy in flight that the receiving device's `accept` waits for."""
        return self.to_host(value)

    def compute_scope(self):
        """The context this device's partitions run in (a GPU's: its stream current)."""
        return contextlib.nullcontext()

    def runner(self, fn, *args):
        """Runs `fn(*args)` on this device's inter-op thread pool (on the caller's thread
        when the device has no inter-op threads); returns the pool's Future, or None."""
        if self.num_threads == 0:
            fn(*args)
            return None
        return self.pool.submit(fn, *args)

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
    """How many GPUs this process can use: real ones through CuPy, else the simulated ones
    of `TENSORFLUX_FAKE_GPUS` (kernels/gpu/backend.py); 0 when there are none."""
    return gpu_backend.gpu_count()


class GpuDevice(Device):
    """A GPU: kernels registered for "GPU" run here, on arrays in device memory.

    Values kept on a GPU device are device arrays, except host-resident small tensors
    (constants, shapes; see kernels/gpu/backend.py). `accept` moves a value received from
    another device into device memory; `to_host` is what fetches and sends to a CPU see.
    Memory: CuPy's caching pool (one per process; `per_process_gpu_memory_fraction` bounds
    it), reported by `memory_stats()`.
    """

    def __init__(self, job, replica, task, index, num_threads, physical_index,
                 memory_fraction: float = 0.0):
        b = gpu_backend.backend()
        limit = 0
        if b.cupy is not None:
            with b.cupy.cuda.Device(physical_index):
                total = int(b.cupy.cuda.runtime.memGetInfo()[1])
                limit = int(total * memory_fraction) if 0 < memory_fraction <= 1 else total
                if 0 < memory_fraction <= 1:
                    b.cupy.get_default_memory_pool().set_limit(size=limit)
        else:
            limit = 1 << 30  # the simulation's nominal size
        super().__init__(job, replica, task, "GPU", index, num_threads, limit)
        self.physical_index = physical_index
        self.xp = b.xp
        self._peak = 0
        # Its partitions' kernels queue on a stream of their own (the first GPU's; others
        # use the default stream).
        self._stream = gpu_backend.compute_stream() if physical_index == 0 else None

    def accept(self, value):
        """`value` (received from another device) in this device's memory: float and
        complex arrays move to the device; integer, bool and string tensors stay in host
        memory until a kernel needs them there (TensorFlow keeps int32 on the host)."""
        if isinstance(value, np.ndarray) and value.dtype.kind in "fc":
            return gpu_backend.to_device(value)
        return value

    def to_host(self, value):
        return gpu_backend.to_host(value)

    def to_host_async(self, value):
        return gpu_backend.to_host_async(value)

    def compute_scope(self):
        return contextlib.nullcontext() if self._stream is None else self._stream

    def memory_stats(self) -> dict[str, int]:
        b = gpu_backend.backend()
        if b.cupy is not None:
            pool = b.cupy.get_default_memory_pool()
            in_use, total = int(pool.used_bytes()), int(pool.total_bytes())
        else:
            in_use = total = 0
        self._peak = max(self._peak, in_use)
        return {"bytes_in_use": in_use, "peak_bytes_in_use": self._peak,
                "num_allocs": 0, "largest_alloc_size": 0, "bytes_reserved": total,
                "bytes_limit": self.memory_limit}

    def note_memory(self) -> None:
        """Records the pool's bytes in use for the peak (after expensive kernels)."""
        b = gpu_backend.backend()
        if b.cupy is not None:
            used = int(b.cupy.get_default_memory_pool().used_bytes())
            if used > self._peak:
                self._peak = used


def _visible_gpus(config) -> list[int]:
    """The physical GPU indices of `gpu_options.visible_device_list` (all when empty).

    Raises:
      InvalidArgumentError: naming the entry, for an entry that is not a GPU of this machine
        or appears twice.
    """
    n = gpu_count()
    spec = config.gpu_options.visible_device_list.strip() if config is not None else ""
    if not spec:
        return list(range(n))
    out = []
    for part in spec.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) >= n or int(part) in out:
            raise errors.InvalidArgumentError(
                None, None, f"'visible_device_list' listed an invalid GPU id '{part}' (this "
                f"machine has {n} GPU(s), ids 0-{n - 1}; each may appear once): '{spec}'")
        out.append(int(part))
    return out


def make_local_devices(config=None, job: str = "localhost", replica: int = 0,
                       task: int = 0) -> list[Device]:
    """The devices of this process for a session with `config` (a ConfigProto or None).

    GPUs: `device_count["GPU"]` of those `gpu_options.visible_device_list` names (default:
    all), numbered from 0 in that order, as TensorFlow numbers them.

    Raises:
      InvalidArgumentError: if `device_count["CPU"]` is less than 1, or the visible device
        list names a GPU that does not exist.
    """
    counts = dict(config.device_count) if config is not None else {}
    threads = intra_op.inter_op_threads(config)
    n_cpu = counts.get("CPU", 1)
    if n_cpu < 1:
        raise errors.InvalidArgumentError(None, None, "device_count['CPU'] must be >= 1")
    devices = [Device(job, replica, task, "CPU", i, threads, CPU_MEMORY_LIMIT)
               for i in range(n_cpu)]
    if gpu_count() == 0 or counts.get("GPU", 1) == 0:
        return devices
    visible = _visible_gpus(config)[:counts.get("GPU", 1 << 30)]
    fraction = config.gpu_options.per_process_gpu_memory_fraction if config is not None \
        else 0.0
    devices += [GpuDevice(job, replica, task, i, threads, physical, fraction)
                for i, physical in enumerate(visible)]
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
