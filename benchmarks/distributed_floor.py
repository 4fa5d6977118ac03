"""The floor of issue 15's async MLP on this host: what one PS process and one worker
process cost over a single process when nothing but the work itself runs.

The MLP of benchmarks/programs/_models.py (784-512-512-10, ReLU, softmax cross-entropy,
Adam), written by hand in NumPy (float32, one batch of 128), three ways:
- `local`: one process computes the gradients and applies Adam;
- `dist`: a PS process holds the variables and Adam's slots in shared memory, a worker
  process computes; per step four one-byte messages on a Unix socketpair (go, parameters
  ready, gradients ready, applied), the PS copying the variables into a snapshot the worker
  reads (a read's consistent value) and applying Adam from the gradients the worker wrote
  into shared memory (no copy);
- `dist --nocopy`: the worker reads the variables in place (not a consistent read: the
  floor of the floor).
Rounds alternate `dist` and `local` steps; the median step and the ratio print per round.
What tensorflux's distributed step costs above this floor is its runtime's, not the host's
(BENCHMARKS.md, twenty-fifth session).

    python benchmarks/distributed_floor.py [--nocopy] [--rounds 4] [--steps 300]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import time
from multiprocessing import shared_memory

import numpy as np

SHAPES = [(784, 512), (512,), (512, 512), (512,), (512, 10), (10,)]
BATCH = 128


def views(buf, offset):
    """One float32 array per variable shape in `buf` from `offset`: (arrays, end)."""
    arrays = []
    for shape in SHAPES:
        n = int(np.prod(shape))
        arrays.append(np.ndarray(shape, np.float32, buf, offset))
        offset += 4 * n
    return arrays, offset


def gradients(params, x, y, out):
    """The MLP's gradients of the mean cross-entropy into `out`."""
    w1, b1, w2, b2, w3, b3 = params
    h1 = x @ w1
    h1 += b1
    np.maximum(h1, 0, out=h1)
    h2 = h1 @ w2
    h2 += b2
    np.maximum(h2, 0, out=h2)
    logits = h2 @ w3
    logits += b3
    logits -= logits.max(1, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(1, keepdims=True)
    p[np.arange(BATCH), y] -= 1
    p /= BATCH
    np.matmul(h2.T, p, out=out[4])
    p.sum(0, out=out[5])
    d2 = p @ w3.T
    d2 *= h2 > 0
    np.matmul(h1.T, d2, out=out[2])
    d2.sum(0, out=out[3])
    d1 = d2 @ w2.T
    d1 *= h1 > 0
    np.matmul(x.T, d1, out=out[0])
    d1.sum(0, out=out[1])


def adam(params, m, v, grads, t, tmp, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
    """Adam in place, in TF's order of operations."""
    lr_t = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
    for p, mm, vv, g, s in zip(params, m, v, grads, tmp, strict=True):
        np.subtract(g, mm, out=s)
        s *= 1 - b1
        mm += s
        np.multiply(g, g, out=s)
        s -= vv
        s *= 1 - b2
        vv += s
        np.sqrt(vv, out=s)
        s += eps
        np.divide(mm, s, out=s)
        s *= lr_t
        p -= s


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nocopy", action="store_true")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--steps", type=int, default=300)
    args = ap.parse_args()
    nbytes = 4 * sum(int(np.prod(s)) for s in SHAPES)
    segment = shared_memory.SharedMemory(create=True, size=5 * nbytes)
    try:
        params, end = views(segment.buf, 0)
        snapshot, end = views(segment.buf, end)
        grads, end = views(segment.buf, end)
        m, end = views(segment.buf, end)
        v, end = views(segment.buf, end)
        rng = np.random.default_rng(0)
        for p in params:
            p[...] = rng.standard_normal(p.shape).astype(np.float32) * 0.05
        for a in m + v:
            a[...] = 0
        tmp = [np.empty(s, np.float32) for s in SHAPES]
        x = rng.standard_normal((BATCH, 784)).astype(np.float32)
        y = rng.integers(0, 10, BATCH)
        run(args, params, snapshot, grads, m, v, tmp, x, y)
        del params, snapshot, grads, m, v
    finally:
        segment.close()
        segment.unlink()


def run(args, params, snapshot, grads, m, v, tmp, x, y) -> None:
    ours, theirs = socket.socketpair()
    pid = os.fork()
    if pid == 0:  # the PS
        ours.close()
        t = 0
        while theirs.recv(1) == b"g":
            if not args.nocopy:
                for s, p in zip(snapshot, params, strict=True):
                    np.copyto(s, p)
            theirs.send(b"r")
            theirs.recv(1)
            t += 1
            adam(params, m, v, grads, t, tmp)
            theirs.send(b"d")
        os._exit(0)
    theirs.close()
    local_grads = [np.empty(s, np.float32) for s in SHAPES]
    source = params if args.nocopy else snapshot
    local_t = 0

    def dist_step():
        ours.send(b"g")
        ours.recv(1)
        gradients(source, x, y, grads)
        ours.send(b"G")
        ours.recv(1)

    def local_step():
        nonlocal local_t
        local_t += 1
        gradients(params, x, y, local_grads)
        adam(params, m, v, local_grads, local_t, tmp)

    try:
        for r in range(args.rounds):
            d, loc = (median_ms(step, args.steps) for step in (dist_step, local_step))
            print(f"round {r}: distributed {d:.3f} ms, one process {loc:.3f} ms, "
                  f"ratio {d / loc:.2f}", flush=True)
    finally:
        ours.send(b"q")
        os.waitpid(pid, 0)


def median_ms(step, steps: int) -> float:
    for _ in range(5):
        step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


if __name__ == "__main__":
    main()
