"""`tensorflux-cluster`: run a TF1 between-graph training script on a local cluster.

    tensorflux-cluster --ps 2 --workers 3 -- python train.py --steps 1000
    tensorflux-cluster --ps 1 --workers 2 --tf1-flags -- python mnist_replica.py

Starts one process per task on free loopback ports: each runs the command with `TF_CONFIG`
naming the cluster and its task (`{"cluster": {...}, "task": {"type": "worker", "index":
1}}`, what Kubernetes training operators set), so `tf.train.Server()` with no arguments
finds its place. With `--tf1-flags` the command also gets TensorFlow's customary flags
(`--job_name`, `--task_index`, `--ps_hosts`, `--worker_hosts`). With `--ps-server`, ps tasks
run `tensorflux-server` instead of the command (for scripts that only run workers).
`--chief` adds a `chief` job of one task and `--evaluator` an evaluator task outside the
cluster (TF_CONFIG's task type `evaluator`), as `tf.estimator.train_and_evaluate` expects:

    tensorflux-cluster --chief --ps 1 --workers 1 --evaluator -- python estimator_train.py

Each task's output is shown prefixed with its name (`[worker:1] ...`) and kept in
`--logdir/<job>-<index>.log`. The cluster ends when every chief, worker and evaluator task has
exited: ps tasks are asked to shut down (`tf.train.Server.shutdown_job`), then terminated;
Ctrl-C or SIGTERM stops everything (exit code 130), as does `--timeout` (124); these stop
the training tasks before the ps tasks. Otherwise the exit code is the first failing
one's, else 0.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from tensorflux.distributed import cluster as cluster_lib
from tensorflux.distributed import control, launcher


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tensorflux-cluster", description=__doc__.split("\n")[0])
    p.add_argument("--ps", type=int, default=1, help="parameter server tasks (default 1)")
    p.add_argument("--workers", type=int, default=2, help="worker tasks (default 2)")
    p.add_argument("--chief", action="store_true",
                   help="a chief job of one task too (tf.estimator's cluster layout)")
    p.add_argument("--evaluator", action="store_true",
                   help="an evaluator task outside the cluster (tf.estimator's)")
    p.add_argument("--logdir", default=None, help="where each task's log goes")
    p.add_argument("--tf1-flags", action="store_true",
                   help="also pass --job_name/--task_index/--ps_hosts/--worker_hosts")
    p.add_argument("--ps-server", action="store_true",
                   help="ps tasks run tensorflux-server instead of the command")
    p.add_argument("--timeout", type=float, default=0,
                   help="stop everything after this many seconds (0: no limit)")
    p.add_argument("command", nargs=argparse.REMAINDER,
                   help="the command each task runs, after --")
    return p


class _Task:
    """One task's process, its log file and the thread copying its output."""

    def __init__(self, job: str, index: int, argv: list[str], env: dict, log: Path | None):
        self.job, self.index, self.name = job, index, f"{job}:{index}"
        self.log = open(log, "w", encoding="utf-8") if log else None  # noqa: SIM115
        self.process = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True, bufsize=1, start_new_session=True)
        self.thread = threading.Thread(target=self._copy, daemon=True)
        self.thread.start()

    def _copy(self) -> None:
        for line in self.process.stdout:
            sys.stdout.write(f"[{self.name}] {line}")
            sys.stdout.flush()
            if self.log:
                self.log.write(line)
                self.log.flush()

    def stop(self, sig=signal.SIGTERM, wait: float = 10.0) -> int:
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.process.wait(wait)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.thread.join(5)
        if self.log:
            self.log.close()
        return self.process.returncode


def _task_argv(args, job: str, index: int, spec: dict) -> list[str]:
    if job == "ps" and args.ps_server:
        return [sys.executable, "-m", "tensorflux.server"]
    argv = list(args.command)
    if args.tf1_flags:
        argv += [f"--job_name={job}", f"--task_index={index}",
                 f"--ps_hosts={','.join(spec.get('ps', []))}",
                 f"--worker_hosts={','.join(spec.get('worker', []))}"]
    return argv


def main(argv: list[str] | None = None) -> int:
    """Runs the cluster; returns the exit code (see the module docstring)."""
    args = _parser().parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    args.command = command
    if not command or args.workers + args.chief < 1 or args.workers < 0 or args.ps < 0:
        _parser().error("give a command after --, at least one worker (or --chief), "
                        "workers >= 0 and ps >= 0")
    ports = [f"localhost:{p}" for p in launcher.free_ports(args.ps + args.workers
                                                           + args.chief)]
    spec: dict[str, list[str]] = {}
    if args.chief:
        spec["chief"] = [ports.pop()]
    if args.workers:
        spec["worker"] = ports[args.ps:]
    if args.ps:
        spec["ps"] = ports[:args.ps]
    logdir = Path(args.logdir) if args.logdir else None
    if logdir:
        logdir.mkdir(parents=True, exist_ok=True)
    tasks: list[_Task] = []
    stopping = threading.Event()

    def on_signal(signum, frame):
        stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    jobs = [(job, i) for job in ("ps", "chief", "worker") for i in range(len(spec.get(job, [])))]
    if args.evaluator:
        jobs.append(("evaluator", 0))  # in TF_CONFIG's task, not in its cluster
    for job, i in jobs:
        env = {**os.environ, "TF_CONFIG": json.dumps(
            {"cluster": spec, "task": {"type": job, "index": i}})}
        tasks.append(_Task(job, i, _task_argv(args, job, i, spec), env,
                           logdir / f"{job}-{i}.log" if logdir else None))
    trainers = [t for t in tasks if t.job != "ps"]  # chief, workers, evaluator
    start, timed_out = time.monotonic(), False
    while not stopping.is_set() and any(t.process.poll() is None for t in trainers):
        if args.timeout and time.monotonic() - start > args.timeout:
            print(f"tensorflux-cluster: stopping after {args.timeout:g} s", flush=True)
            timed_out = True
            break
        time.sleep(0.1)
    if timed_out or stopping.is_set():
        # Stopped from outside: the training tasks first, so that none of them reports
        # its parameter servers going away as an error.
        for t in trainers:
            t.stop()
    if args.ps:
        try:
            control.shutdown_job(cluster_lib.ClusterSpec(spec), "ps")
        except Exception:  # noqa: BLE001 - ps tasks are terminated below anyway
            pass
        give_up = time.monotonic() + 5.0  # a ps whose join() returned exits by itself
        for t in tasks:
            while t.job == "ps" and t.process.poll() is None and time.monotonic() < give_up:
                time.sleep(0.05)
    codes = {t.name: t.stop() for t in reversed(tasks)}
    failed = [(n, c) for n, c in codes.items() if not n.startswith("ps") and c]
    summary = ", ".join(f"{n}={c}" for n, c in sorted(codes.items()))
    print(f"tensorflux-cluster: exit codes {summary}", flush=True)
    if stopping.is_set():
        return 130
    if timed_out:
        return 124
    return failed[0][1] if failed else 0


if __name__ == "__main__":
    sys.exit(main())
