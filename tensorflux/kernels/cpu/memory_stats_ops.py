"""CPU kernels of the memory statistics ops (tensorflux/ops/memory_stats_ops.py): the
process's resident memory, its peak, and the memory it may use (see that module)."""

from __future__ import annotations

import os
import resource

import numpy as np

from tensorflux.kernels.registry import kernel

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_CGROUP_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")


def resident_bytes() -> int:
    """The process's resident set size now."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return peak_resident_bytes()


def peak_resident_bytes() -> int:
    """The process's peak resident set size."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024  # Linux: KiB


def memory_limit_bytes() -> int:
    """The memory the process may use: physical memory, or a lower cgroup limit."""
    try:
        limit = os.sysconf("SC_PHYS_PAGES") * _PAGE
    except (AttributeError, ValueError, OSError):
        limit = 0
    for path in _CGROUP_LIMITS:
        try:
            with open(path) as f:
                text = f.read().strip()
        except OSError:
            continue
        if text.isdigit() and (limit <= 0 or 0 < int(text) < limit):
            limit = int(text)
    return limit


@kernel("BytesInUse")
def _bytes_in_use(ctx):
    return np.int64(resident_bytes())


@kernel("MaxBytesInUse")
def _max_bytes_in_use(ctx):
    # The peak the kernel reports never falls below the value it reports now.
    return np.int64(max(peak_resident_bytes(), resident_bytes()))


@kernel("BytesLimit")
def _bytes_limit(ctx):
    # Not the CPU device's nominal memory_limit (TF's 256 MiB, which limits nothing).
    return np.int64(memory_limit_bytes())
