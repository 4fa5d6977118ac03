"""Issue 15's async MLP target alone: the MLP of mlp_step.py with its variables (and Adam's
slots) on ps:0 and the model on worker:0, 1 PS + 1 worker process, against the same graph
in an in-process session in this process. tensorflux only (the distributed.py program has
TensorFlow's figures).

`--client worker` (the default, the issue's "1 PS + 1 worker process"): this process is
the worker task (`tf.train.Server` of the cluster's worker:0, the session on
`server.target`, as a between-graph script's `MonitoredTrainingSession(master=
server.target)`), the PS a process of `LocalCluster`. `--client remote`: the worker is a
process too and the client a third (figures named `mlp_ps_remote_client_*`).

Rounds alternate: `--steps` distributed steps, then as many in-process steps (5 warm-up
steps each time). Per round: the median wall time of a step, and the CPU time per step of
client + worker + PS (from /proc) or of this process alone. Prints one JSON line per round
and a summary line (medians over rounds, and the ratio distributed / in-process) on
stderr, and the summary's figures as the harness's JSON lines on stdout (with
`--backend tensorflow` it prints nothing: distributed.py has TensorFlow's figures).

    PYTHONPATH=$PWD python benchmarks/programs/distributed_mlp.py --rounds 4 --steps 100
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
from _bench import BACKEND, emit
from _models import mlp

if BACKEND == "tensorflux":
    import tensorflux as tf
    from tensorflux.distributed.launcher import LocalCluster

WORKER = "/job:worker/task:0"
PS = "/job:ps/task:0"
_VARIABLE_OPS = ("Variable", "VariableV2", "VarHandleOp", "AutoReloadVariable")
_TICK = os.sysconf("SC_CLK_TCK")


def ps_placer(op):
    return PS if op.type in _VARIABLE_OPS else WORKER


def cpu_s(pids) -> float:
    """utime + stime of the processes `pids` (this process: 0), seconds."""
    total = 0.0
    for pid in pids:
        if pid == 0:
            t = os.times()
            total += t.user + t.system
            continue
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / _TICK
    return total


def session(target):
    g, x, y, init, train = mlp(tf, ps_placer if target else None)
    rng = np.random.default_rng(0)
    feed = {x: rng.standard_normal((128, 784)).astype(np.float32),
            y: rng.integers(0, 10, 128)}
    config = tf.ConfigProto(device_filters=[WORKER, PS]) if target else None
    sess = tf.Session(target or "", graph=g, config=config)
    sess.run(init)
    sess.run(train, feed)
    return sess, train, feed


def measure(sess, train, feed, steps, pids):
    for _ in range(5):
        sess.run(train, feed)
    times = []
    c0 = cpu_s(pids)
    for _ in range(steps):
        t = time.perf_counter()
        sess.run(train, feed)
        times.append(time.perf_counter() - t)
    cpu = (cpu_s(pids) - c0) / steps
    return float(np.median(times)) * 1e3, float(np.percentile(times, 10)) * 1e3, cpu * 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--backend", default=BACKEND)
    ap.add_argument("--client", choices=("worker", "remote"), default="worker")
    args = ap.parse_args()
    if BACKEND != "tensorflux":
        return
    here = args.client == "worker"
    with LocalCluster(num_workers=1, num_ps=1, startup_timeout=400,
                      served_here=[("worker", 0)] if here else ()) as cluster:
        procs = cluster.processes
        if here:
            server = tf.train.Server(cluster.cluster_spec, job_name="worker", task_index=0)
            pids = [0, procs["ps"][0].pid]
            target = server.target
        else:
            pids = [0, procs["worker"][0].pid, procs["ps"][0].pid]
            target = cluster.targets["worker"][0]
        dist = session(target)
        local = session(None)
        rows = []
        for r in range(args.rounds):
            d = measure(*dist, args.steps, pids)
            loc = measure(*local, args.steps, [0])
            row = {"round": r, "dist_ms": d[0], "dist_p10_ms": d[1], "dist_cpu_ms": d[2],
                   "local_ms": loc[0], "local_cpu_ms": loc[2],
                   "wall_ratio": d[0] / loc[0], "cpu_ratio": d[2] / loc[2]}
            rows.append(row)
            print(json.dumps({k: round(v, 3) for k, v in row.items()}), file=sys.stderr,
                  flush=True)
        summary = {k: round(statistics.median(r[k] for r in rows), 3) for k in rows[0]
                   if k != "round"}
        summary["load"] = os.getloadavg()[0]
        print(json.dumps({"summary": summary}), file=sys.stderr, flush=True)
        note = f"median of {args.rounds} rounds, load {summary['load']:.1f}"
        name, where = ("mlp_ps_probe", "client in the worker process") if here else \
            ("mlp_ps_remote_client", "client in a third process")
        emit(f"{name}_wall_ratio", summary["wall_ratio"], "x", "lower",
             label=f"MLP on 1 PS ({where}): distributed / in-process step, wall (issue 15)",
             note=note)
        emit(f"{name}_cpu_ratio", summary["cpu_ratio"], "x", "lower",
             label=f"MLP on 1 PS ({where}): distributed / in-process step, CPU of all "
                   "processes", note=note)
        dist[0].close()
        local[0].close()


if __name__ == "__main__":
    main()
