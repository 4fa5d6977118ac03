"""Throughput of digits.py on local clusters, in the spirit of Figures 7-9 of the paper.

Runs digits.py (1 ps) asynchronously with 1, 2 and 3 workers, then synchronously with 3
workers and 0 or 1 backup workers while one worker is a straggler (`--slow_worker 2
--delay_ms 50`), reads the chief's global steps/s and draws them into a PNG.

    python examples/distributed/scaling.py --out scaling.png

On a machine with fewer cores than tasks the workers compete for the CPUs, so adding
workers cannot add much; the backup worker's effect on a straggler shows regardless.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def run(workers: int, *flags: str, steps: int, timeout: float) -> float:
    """Global steps/s that the chief measured for digits.py on 1 ps + `workers` workers."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    argv = [sys.executable, "-m", "tensorflux.cluster_cli", "--ps", "1", "--workers",
            str(workers), "--timeout", str(timeout), "--", sys.executable,
            str(HERE / "digits.py"), "--steps", str(steps), "--log_every", "1000000", *flags]
    out = subprocess.run(argv, env=env, capture_output=True, text=True,
                         timeout=timeout + 30).stdout
    found = re.search(r"^\[worker:0\] worker 0: done.* ([0-9.]+) global steps/s$", out,
                      re.MULTILINE)
    if not found:
        raise RuntimeError(f"no rate in the output of {' '.join(argv)}:\n{out[-3000:]}")
    return float(found.group(1))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="scaling.png")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--delay_ms", type=float, default=50)
    p.add_argument("--timeout", type=float, default=120, help="seconds per run")
    args = p.parse_args()
    slow = ["--slow_worker", "2", "--delay_ms", str(args.delay_ms)]
    configs = [(f"async\n{w} worker{'s' if w > 1 else ''}", w, []) for w in (1, 2, 3)]
    configs += [("sync 3\nstraggler", 3, ["--sync", *slow]),
                ("sync 2+1 backup\nstraggler", 3, ["--sync", "--backup", "1", *slow])]
    rates = []
    for label, workers, flags in configs:
        rates.append(run(workers, *flags, steps=args.steps, timeout=args.timeout))
        print(f"{label.replace(chr(10), ', ')}: {rates[-1]:.1f} global steps/s", flush=True)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    bars = ax.bar(range(len(rates)), rates,
                  color=["tab:blue"] * 3 + ["tab:orange", "tab:green"])
    ax.bar_label(bars, fmt="%.1f")
    ax.set_xticks(range(len(rates)), [c[0] for c in configs])
    ax.set_ylabel("global steps/s")
    ax.set_title(f"digits.py, 1 ps, {os.cpu_count()} CPUs "
                 f"(straggler: worker 2 sleeps {args.delay_ms:g} ms a step)")
    fig.tight_layout()
    fig.savefig(args.out, dpi=100)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
