"""Devices of one task: each has a full name, a resource manager and a thread pool.

`make_local_devices(config)` creates `device_count["CPU"]` CPU devices (default 1) and, when
CuPy finds a GPU, `device_count["GPU"]` GPU devices (default: all). Every device of a
session has its own inter-op thread pool, so partitions on different devices run in parallel.
"""

from __future__ import annotations

import os
import random
import threading
from concurrent.futures import ThreadPoolExecutor

from tensorflux.framework import device_spec as device_spec_lib
from tensorflux.framework import errors
from tensorflux.runtime.resource_mgr import ResourceMgr


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
        self.num_threads = max(1, num_threads)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self.bytes_in_use = 0
        self.peak_bytes_in_use = 0

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


def make_local_devices(config=None, job: str = "localhost", replica: int = 0,
                       task: int = 0) -> list[Device]:
    counts = dict(config.device_count) if config is not None else {}
    threads = config.inter_op_parallelism_threads if config is not None else 0
    threads = threads if threads > 0 else (os.cpu_count() or 2)
    n_cpu = counts.get("CPU", 1)
    if n_cpu < 1:
        raise errors.InvalidArgumentError(None, None, "device_count['CPU'] must be >= 1")
    devices = [Device(job, replica, task, "CPU", i, threads) for i in range(n_cpu)]
    n_gpu = min(counts.get("GPU", 1 << 30), gpu_count())
    devices += [Device(job, replica, task, "GPU", i, threads) for i in range(n_gpu)]
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

    def shutdown(self) -> None:
        for d in self.devices:
            d.shutdown()
