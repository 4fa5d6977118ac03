"""A timeline probe for distributed steps, loaded by every Python process that has this
folder on its PYTHONPATH and TFX_TIMELINE set (benchmarks/distributed_timeline.py sets
both, so the PS task that LocalCluster starts loads it too).

TFX_TIMELINE="<folder>,<n>": wraps a few functions of tensorflux's step path with
(label, thread, start ns, end ns, detail) records on CLOCK_MONOTONIC (the same clock in
every process on the host), and writes them to <folder>/<pid>.json when the process exits
and, in a task serving RunGraph, after its n-th RunGraph (a task is killed, not exited).
Measuring only: nothing here changes what a step does.
"""

from __future__ import annotations

import os

_SETTING = os.environ.get("TFX_TIMELINE")

if _SETTING:
    import atexit
    import functools
    import json
    import threading
    import time

    _folder, _, _count = _SETTING.partition(",")
    _dump_at = int(_count or 0)
    _log: list = []
    _ns = time.perf_counter_ns

    def _dump() -> None:
        with open(os.path.join(_folder, f"{os.getpid()}.json"), "w") as f:
            json.dump(_log, f)

    def _wrap(owner, name: str, label: str, detail=None, after=None) -> None:
        fn = getattr(owner, name)

        @functools.wraps(fn)
        def timed(*args, **kwargs):
            t0 = _ns()
            try:
                return fn(*args, **kwargs)
            finally:
                _log.append((label, threading.current_thread().name, t0, _ns(),
                             detail(args) if detail else None))
                if after is not None:
                    after()

        setattr(owner, name, timed)

    import tensorflux  # noqa: F401 - the modules below, loaded
    from tensorflux.distributed import push, push_conn, shm, worker
    from tensorflux.kernels.cpu import native
    from tensorflux.runtime import session, static_executor

    _served = [0]

    def _count_run_graph() -> None:
        _served[0] += 1
        if _served[0] == _dump_at:
            _dump()

    def _shapes(args):
        return [list(getattr(a, "shape", ())) for a in args[:2]]

    _wrap(push_conn, "send_all", "send", lambda a: sum(len(p) for p in a[1]))
    push._send_all = push_conn.send_all  # push.py imported it by name
    _wrap(push_conn.FrameReader, "next", "frame")
    _wrap(shm.Segment, "put", "shm_put")
    if hasattr(shm.Segment, "resident"):  # a variable's storage copied into a segment
        _wrap(shm.Segment, "resident", "shm_resident")
    _wrap(shm.Segment, "release", "shm_release", lambda a: len(a[1]))
    _wrap(static_executor.StaticExecutor, "run", "partition")
    _wrap(worker.Worker, "run_graph", "run_graph", after=_count_run_graph)
    _wrap(session.BaseSession, "run", "session_run")
    _wrap(native, "gemm", "gemm", _shapes)
    _wrap(native, "skinny", "skinny", _shapes)
    _wrap(native, "updates_many", "update", lambda a: len(a[1]))
    atexit.register(_dump)
