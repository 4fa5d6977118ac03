"""examples/distributed/digits.py on a local cluster (tensorflux-cluster, one process per task)."""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import random
import re
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import tensorflux as tf
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
    code, out = run_cluster(1, 2, "--steps", "1000")
    assert code == 0, out[-3000:]
    # Both workers trained: each reports its local steps when done (how many the second
    # one gets depends on when it joins; pushed transfers made the steps fast enough that
    # it may join after the first progress lines, which come every 100 steps).
    local = dict(re.findall(r"^\[worker:\d\] worker (\d): done, (\d+) local steps", out,
                            re.MULTILINE))
    assert set(local) == {"0", "1"} and all(int(n) > 0 for n in local.values()), out
    assert chief_accuracy(out) > 0.8


@pytest.mark.timeout(120)
def test_digits_sync():
    code, out = run_cluster(1, 2, "--steps", "150", "--sync")  # 0.975 accuracy at 150
    assert code == 0, out[-3000:]
    assert chief_accuracy(out) > 0.8


@pytest.mark.timeout(60)
def test_cluster_cli_layouts_and_timeout():
    """The TF_CONFIG each task gets with --chief/--evaluator (the evaluator outside the
    cluster), and --timeout: the training tasks are stopped first and the exit code is
    124."""
    show = "import json, os; c = json.loads(os.environ['TF_CONFIG']); print(json.dumps(c))"
    argv = [sys.executable, "-m", "tensorflux.cluster_cli", "--chief", "--ps", "1",
            "--workers", "1", "--evaluator", "--ps-server", "--", sys.executable, "-c", show]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=50)
    assert done.returncode == 0, done.stdout + done.stderr
    configs = {m[0]: json.loads(m[1]) for m in re.findall(
        r"^\[(\w+:\d)\] (\{.*\})$", done.stdout, re.MULTILINE)}
    assert set(configs) == {"chief:0", "worker:0", "evaluator:0"}, done.stdout
    cluster = configs["chief:0"]["cluster"]
    assert sorted(cluster) == ["chief", "ps", "worker"] and len(cluster["chief"]) == 1
    assert all(c["cluster"] == cluster for c in configs.values())
    assert configs["evaluator:0"]["task"] == {"type": "evaluator", "index": 0}
    sleep = [sys.executable, "-m", "tensorflux.cluster_cli", "--ps", "0", "--workers", "2",
             "--timeout", "1", "--", sys.executable, "-c", "import time; time.sleep(60)"]
    start = time.monotonic()
    done = subprocess.run(sleep, cwd=ROOT, capture_output=True, text=True, timeout=50)
    assert done.returncode == 124 and "stopping after 1 s" in done.stdout, done.stdout
    assert time.monotonic() - start < 30


@pytest.mark.timeout(150)
def test_estimator_train_and_evaluate_on_a_cluster(tmp_path):
    """examples/estimator_digits.py under `tensorflux-cluster --chief --ps 1 --workers 1
    --evaluator`: TF_CONFIG per task, the chief and the worker train between-graph with the
    variables on the PS, the evaluator evaluates the checkpoints and exports the last."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    model_dir = tmp_path / "model"
    argv = [sys.executable, "-m", "tensorflux.cluster_cli", "--chief", "--ps", "1",
            "--workers", "1", "--evaluator", "--timeout", "120", "--", sys.executable,
            str(ROOT / "examples" / "estimator_digits.py"), "--steps", "400",
            "--model_dir", str(model_dir)]
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=140)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    for task in ("chief:0", "worker:0", "ps:0"):
        assert f"[{task}] {task}: done" in out, out[-3000:]
    found = re.findall(r"^\[evaluator:0\] after (\d+) steps: held-out accuracy ([0-9.]+)",
                       out, re.MULTILINE)
    assert found and int(found[-1][0]) >= 400 and float(found[-1][1]) > 0.8, out[-3000:]
    assert list((model_dir / "export" / "digits").iterdir()), "no SavedModel exported"


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
        self.stamps: list[float] = []  # time.monotonic() at which each line arrived
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
                self.stamps.append(time.monotonic())
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


_STEP = re.compile(r"^\[(worker:\d)\] worker \d: step (\d+) loss")


def _steps_since(tasks: _Tasks, mark: int):
    """(arrival time, task, global step) of the step lines printed from line `mark` on."""
    n = len(tasks.lines)  # the lists grow together; stamps first
    return [(tasks.stamps[i], m.group(1), int(m.group(2)))
            for i in range(mark, n) if (m := _STEP.match(tasks.lines[i]))]


def ps_resume_seconds(tasks: _Tasks, restarted_at: float, mark: int,
                      timeout: float = 60) -> float:
    """Seconds from a ps restart (at `restarted_at`, output line `mark`) to the first
    global-step increase printed after it (two step lines from after the restart, the
    second higher: a train step ran against the restarted ps)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen = _steps_since(tasks, mark)
        for (_, _, first), (t, _, later) in zip(seen, seen[1:], strict=False):
            if later > first:
                return t - restarted_at
        time.sleep(0.05)
    raise AssertionError(f"no progress {timeout}s after the ps restart:\n"
                         f"{tasks.output()[-4000:]}")


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_chaos_five_random_kills(tmp_path):
    """Five kill -9s of random tasks (ps:0, the chief, worker:1) at random moments, each
    restarted on its port; training reaches its target and the result is right."""
    seed = int(os.environ.get("TENSORFLUX_CHAOS_SEED", "1234"))
    rng = random.Random(seed)
    # enough steps that the surviving worker cannot finish while a killed one restarts
    # (a process start is seconds under load; one worker alone makes ~300 steps/s)
    target = 6000
    ckpt = tmp_path / "ckpt"
    tasks = _Tasks(1, 2, ["--steps", str(target), "--log_every", "5", "--checkpoint_dir",
                          str(ckpt), "--save_checkpoint_steps", "50"])
    plan, ps_resume = [], []
    try:
        deadline = time.monotonic() + 240

        def wait_until(cond, what):
            while not cond():
                assert time.monotonic() < deadline, f"{what}:\n{tasks.output()[-4000:]}"
                for name, p in tasks.procs.items():
                    assert p.poll() is None, (
                        f"{name} exited with {p.returncode} while {what}:\n"
                        f"{tasks.output()[-4000:]}")
                time.sleep(0.05)

        # past the first checkpoints, so that a restarted chief restores rather than
        # initializing from scratch
        wait_until(lambda: _global_step(tasks.lines) >= 150, "waiting for step 150")
        mark = 0
        for _ in range(5):
            victim = rng.choice(["ps:0", "worker:0", "worker:1"])
            advance = rng.randint(50, 200)  # the random moment: this many steps on

            def advanced(mark=mark, advance=advance):
                seen = _steps_since(tasks, mark)  # from the first step since the restart
                return bool(seen) and max(s for _, _, s in seen) >= seen[0][2] + advance
            wait_until(advanced, f"waiting {advance} steps before killing {victim}")
            step = _steps_since(tasks, mark)[-1][2]
            assert step < target - 400, f"too late for another kill ({step}): {plan}"
            plan.append((victim, step))
            tasks.kill(victim)
            assert tasks.procs[victim].returncode == -9
            time.sleep(rng.uniform(0.2, 1.0))
            mark = len(tasks.lines)
            restarted_at = time.monotonic()
            job, index = victim.split(":")
            tasks.start(job, int(index))
            if job == "ps":
                ps_resume.append(ps_resume_seconds(tasks, restarted_at, mark))
                print(f"chaos: ps:0 restart -> training resumed in {ps_resume[-1]:.2f}s")
            else:  # back in training: the restarted worker itself takes steps again
                wait_until(lambda victim=victim, mark=mark: any(
                    t == victim for _, t, _ in _steps_since(tasks, mark)),
                           f"waiting for the restarted {victim} to train")
        print(f"chaos: seed {seed}, kills (victim, step): {plan}")
        for w in ("worker:0", "worker:1"):  # the latest incarnation of each
            code = tasks.procs[w].wait(timeout=max(deadline - time.monotonic(), 1))
            assert code == 0, f"{w} exited with {code}:\n{tasks.output()[-4000:]}"
        out = tasks.output()
        done = [int(g) for g in re.findall(
            r"^\[worker:\d\] worker \d: done, \d+ local steps, global step (\d+)",
            out, re.MULTILINE)]
        # (a step's fetched global_step is read before its own increment, as TensorFlow's
        # StopAtStepHook assumes: the last one printed may be target - 1; the checkpoint
        # below holds the final value)
        assert done and max(done) >= target - 1, out[-3000:]
        assert chief_accuracy(out) > 0.8
    finally:
        tasks.close()
    for seconds in ps_resume:
        assert seconds < 30, ps_resume

    # the latest checkpoint holds the final state: the chief saved it at the end
    latest = tf.train.latest_checkpoint(str(ckpt))
    assert latest, list(ckpt.iterdir())
    reader = tf.train.NewCheckpointReader(latest)
    assert int(reader.get_tensor("global_step")) >= target
    spec = importlib.util.spec_from_file_location("digits_example", DIGITS)
    digits = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(digits)
    _, (x_test, y_test) = digits.load_data()
    h = np.maximum(x_test @ reader.get_tensor("fc1/w") + reader.get_tensor("fc1/b"), 0)
    logits = h @ reader.get_tensor("logits/w") + reader.get_tensor("logits/b")
    assert (logits.argmax(1) == y_test).mean() > 0.8
