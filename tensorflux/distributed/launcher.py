"""A cluster of `tensorflux-server` processes on this machine, for tests and experiments.

    with LocalCluster(num_workers=2, num_ps=1) as cluster:
        with tf.Session(cluster.targets["worker"][0]) as sess: ...
        cluster.kill("ps", 0)          # SIGKILL
        cluster.restart("ps", 0)       # a new process on the same port

Each task is one `python -m tensorflux.server` process on a free loopback port, started
with `--ps_hosts`/`--worker_hosts` (and `extra_args`); the launcher waits for each task's
"serving at" line. A task's stderr (its log) goes to a temporary file (`stderr(job, i)`),
quoted in the error when the task fails to start. `close()` (also on leaving the `with`
block, and at interpreter exit as a safety net) kills whatever is still running.
"""

from __future__ import annotations

import atexit
import os
import pathlib
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence

from tensorflux.distributed import cluster as cluster_lib

_READY = "serving at "
_PACKAGE_ROOT = str(pathlib.Path(__file__).resolve().parents[2])
_live: set = set()  # clusters not closed yet (killed at exit)


def free_ports(n: int) -> list[int]:
    """`n` distinct loopback ports that were free a moment ago (all held while picking)."""
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def free_port() -> int:
    """A loopback port that was free a moment ago."""
    return free_ports(1)[0]


class _Task:
    """One task's process, its ready event and its stderr file."""

    def __init__(self, argv: list[str], env: dict, job: str, index: int):
        self.argv, self.env, self.job, self.index = argv, env, job, index
        self.stderr = tempfile.NamedTemporaryFile(  # closed in close()
            prefix=f"tfx-{job}{index}-", suffix=".log", delete=False)
        self.process: subprocess.Popen | None = None
        self.ready = threading.Event()
        self.target = ""

    def start(self) -> None:
        """Starts the task's process (its stdout read by a thread of its own)."""
        self.ready.clear()
        self.process = subprocess.Popen(
            self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.stderr,
            env=self.env, text=True, bufsize=1)
        threading.Thread(target=self._read, args=(self.process,), daemon=True,
                         name=f"tfx-launcher-{self.job}{self.index}").start()

    def _read(self, process: subprocess.Popen) -> None:
        """Waits for the ready line, then drains stdout (so the pipe never fills)."""
        for line in process.stdout:
            if not self.ready.is_set() and _READY in line:
                self.target = line.rsplit(_READY, 1)[1].strip()
                self.ready.set()
        process.stdout.close()

    def log(self) -> str:
        """What the task's processes wrote to stderr so far."""
        with open(self.stderr.name, encoding="utf-8", errors="replace") as f:
            return f.read()

    def wait_ready(self, deadline: float) -> None:
        """Raises RuntimeError (with the task's stderr) unless it is ready by `deadline`."""
        while not self.ready.wait(0.05):
            exited = self.process.poll()
            if exited is not None or time.monotonic() > deadline:
                what = f"exited with code {exited}" if exited is not None else \
                    "was not ready in time"
                tail = self.log()[-4000:]
                raise RuntimeError(f"Task /job:{self.job}/task:{self.index} "
                                   f"({' '.join(self.argv[1:])}) {what}; its stderr:\n{tail}")

    def kill(self) -> int | None:
        """SIGKILLs the process if it runs; returns its exit code (None: never started)."""
        p = self.process
        if p is not None and p.poll() is None:
            p.kill()
        return p.wait() if p is not None else None


class LocalCluster:
    """`num_ps` ps and `num_workers` worker tasks as processes (see the module docstring).

    Args:
      num_workers: tasks of the "worker" job.
      num_ps: tasks of the "ps" job (0: no ps job).
      extra_args: more flags for every task, e.g. ("--device_count_cpu", "2").
      env: variables set for the tasks (over this process's environment).
      startup_timeout: seconds each task may take to be ready.
      served_here: (job, index) tasks that are in the cluster spec but not started: the
        caller serves them in its own process (`tf.train.Server(cluster.cluster_spec,
        job, index)`, as a between-graph worker script does with its client beside it).

    Raises:
      RuntimeError: a task exited or was not ready in time (its stderr quoted); the tasks
        started are killed.
    """

    def __init__(self, num_workers: int, num_ps: int, extra_args: Sequence[str] = (),
                 env: Mapping[str, str] | None = None, startup_timeout: float = 60,
                 served_here: Sequence[tuple[str, int]] = ()):
        self.startup_timeout = startup_timeout
        ports = [f"localhost:{p}" for p in free_ports(num_ps + num_workers)]
        spec: dict[str, list[str]] = {}
        if num_ps:
            spec["ps"] = ports[:num_ps]
        spec["worker"] = ports[num_ps:]
        self.cluster_spec = cluster_lib.ClusterSpec(spec)
        full_env = {**os.environ, **(env or {})}
        path = full_env.get("PYTHONPATH", "")
        full_env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, path) if p)
        hosts = [f"--ps_hosts={','.join(spec.get('ps', []))}",
                 f"--worker_hosts={','.join(spec['worker'])}"]
        here = set(served_here)
        # A task served here is None in its job's list (indices stay the tasks' indices).
        self._tasks = {job: [None if (job, i) in here else
                             _Task([sys.executable, "-m", "tensorflux.server",
                                    f"--job_name={job}", f"--task_index={i}", *hosts,
                                    *extra_args], full_env, job, i)
                             for i in range(len(addresses))]
                       for job, addresses in spec.items()}
        _live.add(self)
        try:
            for task in self._all():
                task.start()
            deadline = time.monotonic() + startup_timeout
            for task in self._all():
                task.wait_ready(deadline)
        except BaseException:
            self.close()
            raise

    def _all(self) -> list[_Task]:
        return [t for tasks in self._tasks.values() for t in tasks if t is not None]

    def _task(self, job: str, index: int) -> _Task:
        try:
            task = self._tasks[job][index]
        except (KeyError, IndexError):
            raise ValueError(f"No task /job:{job}/task:{index} in {self.cluster_spec}") \
                from None
        if task is None:
            raise ValueError(f"Task /job:{job}/task:{index} is served in the caller's "
                             "process, not started by this cluster")
        return task

    @property
    def targets(self) -> dict[str, list[str]]:
        """job -> the "grpc://localhost:port" session target of each task (served here too)."""
        return {job: [f"grpc://{self.cluster_spec.task_address(job, i)}"
                      for i in range(self.cluster_spec.num_tasks(job))]
                for job in self.cluster_spec.jobs}

    @property
    def processes(self) -> dict[str, list[subprocess.Popen]]:
        """job -> each started task's current process (not those served here)."""
        return {job: [t.process for t in tasks if t is not None]
                for job, tasks in self._tasks.items()}

    def stderr(self, job: str, index: int) -> str:
        """What the task's processes (all of its restarts) wrote to stderr so far."""
        return self._task(job, index).log()

    def kill(self, job: str, index: int) -> None:
        """Kills a task with SIGKILL and waits for its process to end."""
        self._task(job, index).kill()

    def terminate(self, job: str, index: int, timeout: float = 30) -> int:
        """Sends SIGTERM to a task and returns its exit code.

        Raises:
          subprocess.TimeoutExpired: it did not exit within `timeout` seconds (it is
            then killed).
        """
        return self.signal(job, index, signal.SIGTERM, timeout)

    def signal(self, job: str, index: int, signum: int, timeout: float = 30) -> int:
        """Sends `signum` to a task and returns its exit code (see `terminate`)."""
        process = self._task(job, index).process
        if process.poll() is None:
            process.send_signal(signum)
        try:
            return process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise

    def wait(self, job: str, index: int, timeout: float = 30) -> int:
        """The exit code of a task's process, once it exits (TimeoutExpired otherwise)."""
        return self._task(job, index).process.wait(timeout)

    def restart(self, job: str, index: int) -> None:
        """Starts a task again, on the same port (killing it first if it still runs).

        Raises:
          RuntimeError: it did not start (its stderr quoted).
        """
        task = self._task(job, index)
        task.kill()
        task.start()
        task.wait_ready(time.monotonic() + self.startup_timeout)

    def close(self) -> None:
        """Kills every task still running and removes the stderr files."""
        for task in self._all():
            task.kill()
            task.stderr.close()
            try:
                os.unlink(task.stderr.name)
            except OSError:
                pass
        _live.discard(self)

    def __enter__(self) -> LocalCluster:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@atexit.register
def _kill_leftovers() -> None:
    for cluster in list(_live):
        cluster.close()
