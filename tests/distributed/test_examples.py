"""examples/distributed/digits.py on a local cluster (tensorflux-cluster, one process per task)."""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
import threading
import time

import pytest

from tensorflux.distributed import launcher

ROOT = pathlib.Path(__file__).resolve().parents[2]
DIGITS = ROOT / "examples" / "distributed" / "digits.py"


def run_cluster(ps: int, workers: int, *script_args: str, timeout: float = 100):
    """Runs digits.py on a cluster via `python -m tensorflux.cluster_cli`; returns
    (exit code, output)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    argv = [sys.executable, "-m", "tensorflux.cluster_cli", "--ps", str(ps), "--workers",
            str(workers), "--timeout", str(timeout - 10), "--",
            sys.executable, str(DIGITS), *script_args]
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)
    return done.returncode, done.stdout + done.stderr


def chief_accuracy(output: str) -> float:
    found = re.findall(r"^\[worker:0\] test accuracy ([0-9.]+)$", output, re.MULTILINE)
    assert found, output[-3000:]
    return float(found[-1])


@pytest.mark.timeout(120)
def test_digits_async():
    code, out = run_cluster(1, 2, "--steps", "400")
    assert code == 0, out[-3000:]
    assert re.search(r"^\[worker:1\] worker 1: step \d+ loss", out, re.MULTILINE), out
    assert chief_accuracy(out) > 0.8


@pytest.mark.timeout(120)
def test_digits_sync():
    code, out = run_cluster(1, 2, "--steps", "300", "--sync")
    assert code == 0, out[-3000:]
    assert chief_accuracy(out) > 0.8


# ---- chaos: kill -9 a task during training, restart it, training finishes ----------------

class _Tasks:
    """digits.py as one process per task (TF_CONFIG each, as tensorflux-cluster sets it),
    with kill -9 and restart on the same port (the launcher's LocalCluster runs
    tensorflux-server, not a training script)."""

    def __init__(self, ps: int, workers: int, script_args):
        ports = [f"localhost:{p}" for p in launcher.free_ports(ps + workers)]
        self.spec = {"ps": ports[:ps], "worker": ports[ps:]}
        self.args = list(script_args)
        self.lines: list[str] = []
        self.procs: dict[str, subprocess.Popen] = {}
        for job in ("ps", "worker"):
            for i in range(len(self.spec[job])):
                self.start(job, i)

    def start(self, job: str, index: int) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
            "TF_CONFIG": json.dumps({"cluster": self.spec,
                                     "task": {"type": job, "index": index}})}
        name = f"{job}:{index}"
        p = subprocess.Popen([sys.executable, str(DIGITS), *self.args], env=env, cwd=ROOT,
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, bufsize=1)
        self.procs[name] = p

        def copy():
            for line in p.stdout:
                self.lines.append(f"[{name}] {line.rstrip()}")
        threading.Thread(target=copy, daemon=True).start()

    def kill(self, name: str) -> None:
        p = self.procs[name]
        p.kill()
        p.wait()

    def output(self) -> str:
        return "\n".join(self.lines)

    def close(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()


def _global_step(lines) -> int:
    steps = [int(m.group(1)) for line in list(lines)
             if (m := re.search(r"worker \d: step (\d+) loss", line))]
    return max(steps, default=0)


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("victim", ["ps:0", "worker:1"])
def test_digits_survives_kill_and_restart(victim, tmp_path):
    tasks = _Tasks(1, 2, ["--steps", "800", "--log_every", "25", "--checkpoint_dir",
                          str(tmp_path / "ckpt"), "--save_checkpoint_steps", "50"])
    try:
        deadline = time.monotonic() + 60
        while _global_step(tasks.lines) < 200:
            assert time.monotonic() < deadline, tasks.output()[-3000:]
            assert all(p.poll() is None for p in tasks.procs.values()), tasks.output()
            time.sleep(0.1)
        tasks.kill(victim)
        assert tasks.procs[victim].returncode == -9
        killed_at = _global_step(tasks.lines)
        time.sleep(0.5)
        job, index = victim.split(":")
        tasks.start(job, int(index))
        for w in ("worker:0", "worker:1"):
            code = tasks.procs[w].wait(timeout=max(deadline + 40 - time.monotonic(), 1))
            assert code == 0, f"{w} exited with {code}:\n{tasks.output()[-4000:]}"
        assert _global_step(tasks.lines) > killed_at + 100, tasks.output()[-3000:]
        assert chief_accuracy(tasks.output()) > 0.8
    finally:
        tasks.close()
