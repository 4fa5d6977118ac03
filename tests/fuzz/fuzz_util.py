"""What every fuzz test shares: seeded hypothesis settings (a few seconds by default, more
under `slow`), byte mutators, and a memory bound (an address-space limit while a case runs,
and the peak RSS checked afterwards).

Every fuzz test is deterministic: hypothesis runs with `derandomize=True` (examples derived
from the test's name) and no example database, so a failure reproduces on every run.
"""

from __future__ import annotations

import contextlib
import random
import resource

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

GiB = 1 << 30


def fuzz_settings(max_examples: int) -> settings:
    """Seeded settings with `max_examples` cases; hypothesis' own per-example deadline is off
    (timing never decides pass/fail); each case bounds its own time (RunOptions timeouts)
    and pytest-timeout bounds the test."""
    return settings(derandomize=True, database=None, max_examples=max_examples, deadline=None,
                    print_blob=True, suppress_health_check=list(HealthCheck))


# ---- byte mutations ----------------------------------------------------------------------
# A mutation is (kind, position in [0, 1), a byte value, a length); positions are fractions
# so one strategy serves inputs of any size.
_KINDS = ("flip", "set", "insert", "delete", "truncate", "duplicate", "zero")


def byte_mutations(max_mutations: int = 4):
    """A strategy for a list of mutations for `mutate_bytes`: drawn by a `random.Random`
    seeded from hypothesis (hypothesis' own draws favour position 0 and value 0, where almost
    every mutation breaks the framing)."""
    def build(seed: int):
        rng = random.Random(seed)
        return [(rng.choice(_KINDS), rng.random(), rng.randrange(256), rng.randint(1, 16))
                for _ in range(rng.randint(1, max_mutations))]

    return st.integers(0, 2**32 - 1).map(build)


def mutate_bytes(data: bytes, mutations) -> bytes:
    """`data` with `mutations` (from `byte_mutations`) applied in order."""
    buf = bytearray(data)
    for kind, where, value, length in mutations:
        pos = int(where * len(buf)) if buf else 0
        if kind == "flip" and buf:
            buf[pos] ^= 1 << (value % 8)
        elif kind == "set" and buf:
            buf[pos] = value
        elif kind == "insert":
            buf[pos:pos] = bytes([value]) * length
        elif kind == "delete":
            del buf[pos:pos + length]
        elif kind == "truncate":
            del buf[pos:]
        elif kind == "duplicate":
            buf[pos:pos] = buf[pos:pos + length]
        elif kind == "zero":
            buf[pos:pos + length] = bytes(len(buf[pos:pos + length]))
    return bytes(buf)


# ---- memory --------------------------------------------------------------------------------


def _status(field: str) -> int | None:
    """A `/proc/self/status` field in bytes (None where there is no procfs)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _reset_peak_rss() -> bool:
    """Resets VmHWM (Linux: writing 5 to clear_refs); False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_rss() -> int:
    peak = _status("VmHWM")
    return peak if peak is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@contextlib.contextmanager
def bounded_memory(extra: int = GiB):
    """Runs the body with at most about `extra` more bytes of memory: the address space is
    capped at its current size plus 2 * `extra` (an allocation beyond fails with
    MemoryError instead of taking the machine), and the peak RSS may grow by at most `extra`.
    """
    before_rss = _status("VmRSS") or 0
    if not _reset_peak_rss():
        before_rss = _peak_rss()
    vm = _status("VmSize")
    old = resource.getrlimit(resource.RLIMIT_AS)
    limited = vm is not None and (old[1] == resource.RLIM_INFINITY or old[1] > vm + 2 * extra)
    if limited:
        resource.setrlimit(resource.RLIMIT_AS, (vm + 2 * extra, old[1]))
    try:
        yield
    finally:
        if limited:
            resource.setrlimit(resource.RLIMIT_AS, old)
    grown = _peak_rss() - before_rss
    assert grown < extra, f"peak RSS grew by {grown / GiB:.2f} GiB (bound {extra / GiB} GiB)"
