"""Interleaved A/B rounds of the busy-mode figures (issue 20 part 1): the two 3xMatMul
1024^2 chains of programs/multi_device.py (one device, default threads) and the Adam MLP
step of programs/mlp_step.py, for several tensorflux trees and TensorFlow, each run a fresh
process, beside N competing busy processes (as `harness.py --busy N` starts them).

    # one run (prints one JSON line): wall and CPU per step, the output's digests
    python benchmarks/busy_share_probe.py run chains --backend tensorflux --steps 15
    # rounds, ABBA order over the builds, TF too
    python benchmarks/busy_share_probe.py rounds --builds main=/tmp/main,new=. --tf \\
        --what chains,mlp --busy 1 --rounds 4

Run it in a nice'd session group to keep other agents' load off the cores (BENCHMARKS.md,
"MatMul chains and the BLAS kernel"): `setsid` and `echo -19 > /proc/self/autogroup`.
The digests show whether a product's bits change from step to step and run to run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TF_PYTHON = os.environ.get("TENSORFLUX_ORACLE_PYTHON",
                           str(Path.home() / ".cache/tensorflux-oracle-venv/bin/python"))
BUSY = "while True:\n    pass\n"


def _import(backend):
    if backend == "tensorflow":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow.compat.v1 as tf

        tf.disable_v2_behavior()
        return tf
    import tensorflux as tf

    return tf


def _timed(sess, op, feed, warmup, steps):
    import numpy as np

    for _ in range(warmup):
        sess.run(op, feed)
    walls, cpus, digests = [], [], []
    for _ in range(steps):
        c, t = time.process_time(), time.perf_counter()
        out = sess.run(op, feed)
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
        if isinstance(out, np.ndarray):
            digests.append(hashlib.sha1(out.tobytes()).hexdigest()[:12])
    return walls, cpus, digests


def run_chains(tf, steps):
    import numpy as np

    n, depth = 1024, 3
    rng = np.random.default_rng(1)
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float32, [n, n])
        b = tf.placeholder(tf.float32, [n, n])
        chains = []
        for m in (a, b):
            x = m
            for _ in range(depth):
                x = tf.matmul(x, m) * (1.0 / n)
            chains.append(x)
        out = chains[0] + chains[1]
    feed = {a: rng.random((n, n), dtype=np.float32), b: rng.random((n, n), dtype=np.float32)}
    with tf.Session(graph=g, config=tf.ConfigProto(device_count={"CPU": 1})) as sess:
        return _timed(sess, out, feed, 2, steps)


def run_mlp(tf, steps):
    import numpy as np

    sys.path.insert(0, str(HERE / "programs"))
    from _models import mlp

    rng = np.random.default_rng(0)
    g, x, y, init, train = mlp(tf)
    with tf.Session(graph=g) as sess:
        sess.run(init)
        feed = {x: rng.standard_normal((128, 784)).astype(np.float32),
                y: rng.integers(0, 10, 128)}
        walls, cpus, _ = _timed(sess, train, feed, 20, steps)
    return walls, cpus, []


def run_cnn(tf, steps):
    import numpy as np

    sys.path.insert(0, str(HERE / "programs"))
    from _models import cnn

    rng = np.random.default_rng(0)
    g, x, y, init, train = cnn(tf)
    with tf.Session(graph=g) as sess:
        sess.run(init)
        feed = {x: rng.standard_normal((64, 32, 32, 3)).astype(np.float32),
                y: rng.integers(0, 10, 64)}
        walls, cpus, _ = _timed(sess, train, feed, 5, steps)
    return walls, cpus, []


def one_run(what, backend, steps):
    tf = _import(backend)
    walls, cpus, digests = {"chains": run_chains, "mlp": run_mlp, "cnn": run_cnn}[what](
        tf, steps)
    ms = sorted(w * 1e3 for w in walls)
    print(json.dumps({
        "what": what, "median": statistics.median(ms), "best": ms[0],
        "p10": ms[len(ms) // 10], "cpu": statistics.median(c * 1e3 for c in cpus),
        "digests": sorted(set(digests))}))


def rounds(args):
    builds = [tuple(b.split("=", 1)) for b in args.builds.split(",") if b]
    # name=tree:K=V runs that tree with the environment variable K set to V
    builds = [(n, r.split(":")[0], r.split(":")[1] if ":" in r else None) for n, r in builds]
    if args.tf:
        builds.append(("TF", None, None))
    whats = args.what.split(",")
    steps = {"chains": args.chain_steps, "mlp": args.mlp_steps, "cnn": args.cnn_steps}
    results: dict = {}
    for r in range(args.rounds):
        order = builds if r % 2 == 0 else builds[::-1]  # ABBA over rounds
        for what in whats:
            for name, root, force in order:
                if root is None:
                    cmd = [TF_PYTHON, __file__, "run", what, "--backend", "tensorflow"]
                    env = dict(os.environ)
                else:
                    cmd = [sys.executable, __file__, "run", what, "--backend", "tensorflux"]
                    env = dict(os.environ, PYTHONPATH=str(Path(root).resolve()))
                    if force is not None:
                        env[force.split("=")[0]] = force.split("=", 1)[1]
                cmd += ["--steps", str(steps[what])]
                busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(args.busy)]
                try:
                    proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                                          timeout=600, check=False)
                finally:
                    for p in busy:
                        p.kill()
                        p.wait()
                line = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
                rec = json.loads(line[-1]) if line else {"error": proc.stderr[-300:]}
                rec["load"] = os.getloadavg()[0]
                results.setdefault((what, name), []).append(rec)
                print(f"round {r + 1} {what:6s} {name:5s} " + (
                    f"median {rec['median']:7.2f} best {rec['best']:7.2f} cpu "
                    f"{rec['cpu']:7.2f} ms digests {len(rec['digests'])} {rec['digests'][:2]}"
                    f" load {rec['load']:.1f}" if "median" in rec else rec["error"]),
                    flush=True)
    print("summary (median of the rounds' medians; per-round medians):")
    for (what, name), recs in results.items():
        meds = [r["median"] for r in recs if "median" in r]
        cpus = [r["cpu"] for r in recs if "cpu" in r]
        if meds:
            print(f"  {what:6s} {name:5s} {statistics.median(meds):7.2f} ms  "
                  f"[{', '.join(f'{m:.1f}' for m in meds)}]  cpu "
                  f"[{', '.join(f'{c:.1f}' for c in cpus)}]")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("run")
    p.add_argument("what", choices=["chains", "mlp", "cnn"])
    p.add_argument("--backend", default="tensorflux")
    p.add_argument("--steps", type=int, default=15)
    q = sub.add_parser("rounds")
    q.add_argument("--builds", default="", help="name=tree,... (tensorflux trees)")
    q.add_argument("--tf", action="store_true", help="TensorFlow too")
    q.add_argument("--what", default="chains,mlp")
    q.add_argument("--busy", type=int, default=1)
    q.add_argument("--rounds", type=int, default=4)
    q.add_argument("--chain-steps", type=int, default=15)
    q.add_argument("--mlp-steps", type=int, default=300)
    q.add_argument("--cnn-steps", type=int, default=30)
    args = parser.parse_args()
    if args.cmd == "run":
        one_run(args.what, args.backend, args.steps)
    else:
        rounds(args)


if __name__ == "__main__":
    main()
