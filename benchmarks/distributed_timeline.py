"""Where issue 15's distributed MLP step spends its time, without FULL_TRACE: the MLP of
distributed_mlp.py on 1 PS + 1 worker (the client in the worker's process), then the same
graph in-process, with every process timed by benchmarks/timeline_probe (a sitecustomize
loaded through PYTHONPATH; it only records).

Prints the median of each phase of a distributed step (the probe adds a few us to each
recorded call, so the total reads above distributed_mlp.py's step):
  client_pre  Session.run to the RunGraph frame written to the PS
  to_ps       that frame to the PS's partition starting
  ps_reads    the PS's partition start to its last push of the variables written
  to_worker   that push to the worker's first product starting
  worker      the worker's first product to its last push (the gradients) written
  ps_apply    that push to the PS's partition ending (Adam on the PS)
  reply       the PS's partition end to Session.run returning
and the medians of the big kernels (native gemm / skinny products, the optimizer's
updates) in the distributed step against the same kernels in-process.

    python benchmarks/distributed_timeline.py [--steps 100] [--keep DIR]
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WARMUP = 10
PHASES = ("client_pre", "to_ps", "ps_reads", "to_worker", "worker", "ps_apply", "reply")
KERNELS = ("gemm", "skinny", "update")


def run_steps(steps: int) -> None:
    """The child: distributed steps, then in-process ones (the probe records them)."""
    sys.path.insert(0, os.path.join(HERE, "programs"))
    os.environ.setdefault("TFX_BENCH_BACKEND", "tensorflux")
    from _models import mlp

    import tensorflux as tf
    from tensorflux.distributed.launcher import LocalCluster

    worker, ps = "/job:worker/task:0", "/job:ps/task:0"
    variable_ops = ("Variable", "VariableV2", "VarHandleOp", "AutoReloadVariable")

    def placer(op):
        return ps if op.type in variable_ops else worker

    def train(target):
        g, x, y, init, train_op = mlp(tf, placer if target else None)
        rng = np.random.default_rng(0)
        feed = {x: rng.standard_normal((128, 784)).astype(np.float32),
                y: rng.integers(0, 10, 128)}
        config = tf.ConfigProto(device_filters=[worker, ps]) if target else None
        with tf.Session(target, graph=g, config=config) as sess:
            sess.run(init)
            for _ in range(1 + WARMUP + steps):
                sess.run(train_op, feed)

    with LocalCluster(num_workers=1, num_ps=1, startup_timeout=400,
                      served_here=[("worker", 0)]) as cluster:
        server = tf.train.Server(cluster.cluster_spec, job_name="worker", task_index=0)
        train(server.target)
        time.sleep(0.5)  # the PS writes its records at its last RunGraph
        train("")


def load(folder: str):
    events = []
    for path in glob.glob(os.path.join(folder, "*.json")):
        pid = int(os.path.basename(path)[:-5])
        with open(path) as f:
            events.extend((e[2], e[3], pid, e[1], e[0], e[4]) for e in json.load(f))
    events.sort()
    return events


def phases(events, runs, client: int) -> dict:
    """Each phase's samples (us) over the distributed steps `runs`."""
    out = collections.defaultdict(list)
    for start, end, *_ in runs:
        inside = [e for e in events if start <= e[0] <= end]
        mine = [e for e in inside if e[2] == client]
        ps = [e for e in inside if e[2] != client]
        try:
            part = next(e for e in ps if e[4] == "partition")
            frame = [e for e in mine if e[4] == "send" and e[1] <= part[0]][-1]
            first = next(e for e in mine if e[4] in ("gemm", "skinny"))
            pushes = [e for e in ps if e[4] == "send" and e[1] <= first[0]]
            grads = [e for e in mine if e[4] == "send" and first[0] <= e[1] <= part[1]]
        except (StopIteration, IndexError):
            continue
        if not pushes or not grads:
            continue
        marks = [start, frame[1], part[0], pushes[-1][1], first[0], grads[-1][1], part[1], end]
        for name, a, b in zip(PHASES, marks[:-1], marks[1:], strict=True):
            out[name].append((b - a) / 1e3)
        out["total"].append((end - start) / 1e3)
    return out


def kernels(events, runs) -> dict:
    """(process is the client, label, detail) -> durations (us) over `runs`."""
    out = collections.defaultdict(list)
    for start, end, pid, *_ in runs:
        for e in events:
            if start <= e[0] <= end and e[4] in KERNELS:
                out[(e[2] == pid, e[4], json.dumps(e[5]))].append((e[1] - e[0]) / 1e3)
    return out


def summarize(folder: str, steps: int) -> None:
    events = load(folder)
    runs = [e for e in events if e[4] == "session_run"]
    client = runs[0][2]
    per_session = 2 + WARMUP + steps  # init, the first step, warm-up, timed
    dist = runs[per_session - steps:per_session]
    local = runs[2 * per_session - steps:2 * per_session]
    print(f"{len(dist)} distributed and {len(local)} in-process steps "
          f"(medians, us; the probe's own cost included)")
    got = phases(events, dist, client)
    print("  ".join(f"{k} {statistics.median(got[k]):.0f}" for k in (*PHASES, "total")
                    if got[k]))
    print(f"in-process step {statistics.median((e[1] - e[0]) / 1e3 for e in local):.0f}")
    d, loc = kernels(events, dist), kernels(events, local)
    print(f"{'kernel':44} {'process':8} {'per step':>8} {'dist':>7} {'local':>7}")
    in_dist = {k[1:] for k in d}
    for key in sorted(set(d) | {k for k in loc if k[1:] not in in_dist}):
        here, label, detail = key
        local_key = (True, label, detail)
        n = len(d.get(key, ())) / max(len(dist), 1)
        a = statistics.median(d[key]) if key in d else float("nan")
        b = statistics.median(loc[local_key]) if local_key in loc else float("nan")
        print(f"{label + ' ' + detail:44} {'worker' if here else 'ps':8} {n:8.1f} "
              f"{a:7.0f} {b:7.0f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--keep", help="write the records into this folder (kept)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        run_steps(args.steps)
        return
    folder = args.keep or tempfile.mkdtemp(prefix="tfx-timeline-")
    os.makedirs(folder, exist_ok=True)
    for stale in glob.glob(os.path.join(folder, "*.json")):
        os.remove(stale)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (os.path.join(HERE, "timeline_probe"), ROOT, env.get("PYTHONPATH")) if p)
    # the PS serves init, the first step, the warm-up and the timed steps
    env["TFX_TIMELINE"] = f"{folder},{2 + WARMUP + args.steps}"
    subprocess.run([sys.executable, os.path.abspath(__file__), "--child",
                    "--steps", str(args.steps)], env=env, check=True)
    summarize(folder, args.steps)


if __name__ == "__main__":
    main()
