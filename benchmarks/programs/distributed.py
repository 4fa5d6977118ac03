"""The distributed runtime on loopback (issue 14): a cluster of one worker and 8 PS tasks,
each task a subprocess of this backend's python (`tf.train.Server(cluster, job, index)`,
then blocking on stdin), the client in this process with `tf.Session("grpc://<worker>")`.
Every session names its tasks in `ConfigProto.device_filters`; ops are placed explicitly
(`/job:worker/task:0`, `/job:ps/task:i`). Figures:

0. cluster_start (info): seconds from starting the 9 task processes until all serve
   (the backend's import included).
1. tiny_step: `x + 1.0` on a fed float32 scalar, on the worker (the session's master);
   mean ms per `Session.run` over 4 rounds of 500 steps, best round.
2. null_step_2ps / null_step_8ps: the synchronous null step of the TensorFlow paper
   (Figure 6): N PS tasks each hold one scalar variable; a step fetches
   `tf.add_n([v_0, ..., v_N-1])` computed on the worker, so it reads every PS once. Mean
   ms per step, best of 4 rounds.
3. dense_fetch_100mb: fetch a 100 MB float32 variable (25M elements, `tf.zeros` on ps:0)
   through the worker's master; MB/s (1e6 bytes) of the best of 5 fetches.
4. sparse_gather_64mib / sparse_gather_1gib: an embedding variable [rows, 1024] float32
   initialized by `tf.random_uniform` on the PS itself (never sent from the client), and
   `tf.gather(emb, ids)` of 32 fed random rows on the PS, the rows fetched; mean ms per
   step, best of 4 rounds. The big one is 1 GiB, or 512/256 MiB when the machine has less
   than 8/6 GiB available (then the name and label say so).
5. mlp_step_ps: MLP 784-512-512-10 (ReLU), batch 128, Adam(1e-3) with its variables (and
   Adam's slots) on ps:0 and the model on the worker; median step ms (as mlp_step.py).
   mlp_step_local: the same graph in an in-process session, after the cluster is stopped;
   mlp_ps_over_local: their ratio (issue 14: tensorflux's <= 1.3).

Tasks are started on free loopback ports and always killed at the end (try/finally,
atexit, SIGTERM; a task also exits when its stdin, a pipe from this process, closes). A
watchdog stops the cluster after DEADLINE_S (140 s, or $TFX_BENCH_DIST_DEADLINE) so that
stuck calls fail, prints an error line for every figure not measured and exits 20 s later;
a figure whose measurement raises prints an error line too. The whole program takes
~40-50 s per backend on a quiet 2-core machine.

    python benchmarks/programs/distributed.py --backend tensorflux|tensorflow
"""

import atexit
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
from _bench import BACKEND, emit, emit_error, guarded
from _models import median_step_ms, mlp

if BACKEND == "tensorflow":
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import tensorflux as tf

NUM_PS = 8
START_TIMEOUT_S = 90.0     # all tasks serving
DEADLINE_S = float(os.environ.get("TFX_BENCH_DIST_DEADLINE", 140.0))  # the whole program
RUN_TIMEOUT_MS = 60_000    # RunOptions of set-up runs (initializers, first steps)
WORKER = "/job:worker/task:0"


def ps(i: int) -> str:
    return f"/job:ps/task:{i}"


# ---- a task (child process) -----------------------------------------------------------

def serve(spec: str) -> None:
    """Runs one task of the cluster in $TFX_BENCH_CLUSTER until stdin closes."""
    job, index = spec.split(":")
    cluster = tf.train.ClusterSpec(json.loads(os.environ["TFX_BENCH_CLUSTER"]))
    server = tf.train.Server(cluster, job_name=job, task_index=int(index), start=True)
    print("ready", server.target, flush=True)
    try:
        while sys.stdin.buffer.read(65536):  # blocks (GIL released) until the parent goes
            pass
    finally:
        os._exit(0)


if "--serve" in sys.argv:
    serve(sys.argv[sys.argv.index("--serve") + 1])


# ---- the cluster (client side) ----------------------------------------------------------

def free_ports(n: int) -> list:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class Cluster:
    """worker:0 and ps:0..num_ps-1, each a subprocess running `serve`."""

    def __init__(self, num_ps: int):
        ports = free_ports(1 + num_ps)
        self.spec = {"worker": [f"127.0.0.1:{ports[0]}"],
                     "ps": [f"127.0.0.1:{p}" for p in ports[1:]]}
        self.target = f"grpc://{self.spec['worker'][0]}"
        self.procs: list = []
        self.logs: list = []
        self._lock = threading.Lock()

    def start(self, timeout: float) -> None:
        env = dict(os.environ, TFX_BENCH_CLUSTER=json.dumps(self.spec))
        if BACKEND == "tensorflux":  # the package this process imported, first on the path
            root = os.path.dirname(os.path.dirname(os.path.abspath(tf.__file__)))
            env["PYTHONPATH"] = os.pathsep.join(
                p for p in (root, env.get("PYTHONPATH")) if p)
        tasks = [("worker", 0)] + [("ps", i) for i in range(len(self.spec["ps"]))]
        with self._lock:
            for job, i in tasks:
                log = tempfile.TemporaryFile()
                self.logs.append(log)
                self.procs.append(subprocess.Popen(
                    [sys.executable, os.path.abspath(__file__), "--backend", BACKEND,
                     "--serve", f"{job}:{i}"],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env,
                    cwd=os.path.dirname(os.path.abspath(__file__))))
        waiting = {p.stdout.fileno(): (p, f"/job:{job}/task:{i}")
                   for p, (job, i) in zip(self.procs, tasks, strict=True)}
        deadline = time.monotonic() + timeout
        while waiting:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"tasks not serving after {timeout:g} s: "
                                   + ", ".join(t for _, t in waiting.values()))
            ready, _, _ = select.select(list(waiting), [], [], min(left, 1.0))
            for fd in ready:
                proc, task = waiting.pop(fd)
                line = proc.stdout.readline().decode(errors="replace")
                if not line.startswith("ready"):
                    proc.wait(timeout=5)
                    raise RuntimeError(f"task {task} failed to start (exit status "
                                       f"{proc.returncode}): {self._tail(proc)}")
            for proc, task in list(waiting.values()):
                if proc.poll() is not None:
                    raise RuntimeError(f"task {task} exited with status {proc.returncode}: "
                                       f"{self._tail(proc)}")

    def _tail(self, proc) -> str:
        log = self.logs[self.procs.index(proc)]
        log.seek(0)
        lines = [ln for ln in log.read().decode(errors="replace").splitlines() if ln.strip()]
        return lines[-1][:200] if lines else "no output"

    def stop(self) -> None:
        """Kills every task (idempotent; safe from atexit, a signal or the watchdog)."""
        with self._lock:
            procs, self.procs = self.procs, []
            for p in procs:
                for f in (p.stdin, p.stdout):
                    try:
                        f.close()
                    except OSError:
                        pass
                if p.poll() is None:
                    p.terminate()
            for p in procs:
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(timeout=5)
            for log in self.logs:
                log.close()
            self.logs = []


def start_cluster(num_ps: int) -> tuple:
    """A started cluster and the seconds it took; two tries (a port taken in between)."""
    for attempt in range(2):
        cluster = Cluster(num_ps)
        CLUSTERS.append(cluster)
        t = time.perf_counter()
        try:
            cluster.start(START_TIMEOUT_S)
            return cluster, time.perf_counter() - t
        except Exception:
            cluster.stop()
            if attempt:
                raise
    raise AssertionError("unreachable")


CLUSTERS: list = []


def stop_all() -> None:
    for c in CLUSTERS:
        c.stop()


atexit.register(stop_all)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))



def big_embedding_rows() -> int:
    """Rows of 1024 float32 for the big embedding: 1 GiB unless the machine has little
    memory available (the PS holds it plus its initial value, the client nothing)."""
    try:
        with open("/proc/meminfo") as f:
            info = {ln.split(":")[0]: int(ln.split()[1]) for ln in f}
        available_gib = info["MemAvailable"] / 2**20
    except (OSError, KeyError, ValueError):
        available_gib = 8.0
    if available_gib >= 8:
        return 262144
    return 131072 if available_gib >= 6 else 65536


BIG_ROWS = big_embedding_rows()
BIG_MIB = BIG_ROWS * 4 // 1024
BIG = f"sparse_gather_{'1gib' if BIG_MIB == 1024 else f'{BIG_MIB}mib'}"

# name -> (label, target), in table order; the watchdog prints an error line for those
# never emitted.
FIGURES = {
    "cluster_start": ("start 1 worker + 8 PS task processes until all serve (info)", None),
    "tiny_step": ("distributed: Session.run(x + 1.0), fed float32 scalar, on the worker "
                  "(mean of 500 steps, best of 4)", 1.0),
    "null_step_2ps": ("distributed null step, 1 worker + 2 PS: add_n of one scalar "
                      "variable per PS (mean, best of 4)", 1.0),
    "null_step_8ps": ("distributed null step, 1 worker + 8 PS: add_n of one scalar "
                      "variable per PS (mean, best of 4)", 1.0),
    "dense_fetch_100mb": ("distributed: fetch a 100 MB float32 variable on a PS through "
                          "the worker's master (best of 5)", 1.0),
    "sparse_gather_64mib": ("distributed: gather 32 random rows of a 64 MiB embedding "
                            "[16384, 1024] on a PS (mean, best of 4)", None),
    BIG: (f"distributed: gather 32 random rows of a {BIG_MIB} MiB embedding "
          f"[{BIG_ROWS}, 1024] on a PS (mean, best of 4)"
          + ("" if BIG_MIB == 1024 else ", 1 GiB does not fit this machine's memory"),
          None),
    "mlp_step_ps": ("distributed: MLP 784-512-512-10, batch 128, Adam, variables on 1 PS, "
                    "model on the worker (median)", None),
    "mlp_step_local": ("the same MLP in an in-process session (median)", None),
    "mlp_ps_over_local": ("MLP: distributed step / in-process step (the backend's own "
                          "ratio)", None),
}
done: set = set()


def report(name: str, value: float, unit: str, better: str, **extra) -> None:
    label, target = FIGURES.get(name, (name, None))
    extra.setdefault("label", label)
    if target is not None:
        extra.setdefault("target", target)
    emit(name, value, unit, better, **extra)
    done.add(name)


def watchdog() -> None:
    time.sleep(DEADLINE_S)
    print(f"distributed.py: deadline of {DEADLINE_S:g} s passed; stopping the cluster",
          file=sys.stderr, flush=True)
    stop_all()  # blocked calls now fail and their figures print errors
    time.sleep(20)
    for name, (label, target) in FIGURES.items():
        if name not in done:
            emit_error(name, TimeoutError(f"not measured within {DEADLINE_S:g} s"),
                       label=label, **({"target": target} if target else {}))
    os._exit(1)


threading.Thread(target=watchdog, daemon=True).start()


# ---- measurements -------------------------------------------------------------------------

def session_config(*tasks: str):
    return tf.ConfigProto(device_filters=list(tasks))


def setup_options():
    return tf.RunOptions(timeout_in_ms=RUN_TIMEOUT_MS)


def mean_step_ms(sess, fetch, feeds, steps: int, rounds: int = 4, budget_s: float = 8.0):
    """Best over `rounds` of the mean time of `steps` runs (feeds: a list of feed dicts
    cycled through, or [None]); stops early, after at least one round, past budget_s."""
    for k in range(min(50, steps)):
        sess.run(fetch, feeds[k % len(feeds)])
    best = float("inf")
    start = time.perf_counter()
    n = len(feeds)
    for _ in range(rounds):
        t = time.perf_counter()
        for k in range(steps):
            sess.run(fetch, feeds[k % n])
        best = min(best, (time.perf_counter() - t) / steps)
        if time.perf_counter() - start > budget_s:
            break
    return best * 1e3


def tiny_step(target: str) -> None:
    g = tf.Graph()
    with g.as_default(), tf.device(WORKER):
        x = tf.placeholder(tf.float32, [])
        y = x + 1.0
    with tf.Session(target, graph=g, config=session_config(WORKER)) as sess:
        got = sess.run(y, {x: 1.0}, options=setup_options())
        if got != 2.0:
            raise RuntimeError(f"wrong result: expected 2.0, got {got!r}")
        report("tiny_step", mean_step_ms(sess, y, [{x: 1.0}], 500), "ms", "lower")


def null_step(target: str, n: int) -> None:
    g = tf.Graph()
    with g.as_default():
        vs = []
        for i in range(n):
            with tf.device(ps(i)):
                vs.append(tf.Variable(float(i), name=f"null{n}_v{i}"))
        with tf.device(WORKER):
            total = tf.add_n(vs)
        init = tf.variables_initializer(vs)
    config = session_config(WORKER, *(ps(i) for i in range(n)))
    with tf.Session(target, graph=g, config=config) as sess:
        sess.run(init, options=setup_options())
        got = sess.run(total, options=setup_options())
        if got != sum(range(n)):
            raise RuntimeError(f"wrong result: expected {sum(range(n))}, got {got!r}")
        report(f"null_step_{n}ps", mean_step_ms(sess, total, [None], 250), "ms", "lower")


def dense_fetch(target: str) -> None:
    elements = 25_000_000  # 100 MB
    g = tf.Graph()
    with g.as_default(), tf.device(ps(0)):
        v = tf.Variable(tf.zeros([elements]), name="dense_100mb")
    with tf.Session(target, graph=g, config=session_config(WORKER, ps(0))) as sess:
        sess.run(v.initializer, options=setup_options())
        got = sess.run(v, options=setup_options())
        if got.shape != (elements,) or got.dtype != np.float32:
            raise RuntimeError(f"wrong fetch: {got.shape} {got.dtype}")
        del got
        best = float("inf")
        for _ in range(5):
            t = time.perf_counter()
            sess.run(v)
            best = min(best, time.perf_counter() - t)
    report("dense_fetch_100mb", elements * 4 / 1e6 / best, "MB/s", "higher",
           ms_per_fetch=round(best * 1e3, 2))


def sparse_gather(target: str, rows: int, task: int, name: str) -> None:
    rng = np.random.default_rng(rows)
    g = tf.Graph()
    with g.as_default(), tf.device(ps(task)):
        emb = tf.Variable(tf.random_uniform([rows, 1024]), name=f"emb_{rows}")
        ids = tf.placeholder(tf.int32, [32])
        got_rows = tf.gather(emb, ids)
    with tf.Session(target, graph=g, config=session_config(WORKER, ps(task))) as sess:
        sess.run(emb.initializer, options=setup_options())
        feeds = [{ids: rng.integers(0, rows, 32, dtype=np.int32)} for _ in range(64)]
        got = sess.run(got_rows, feeds[0], options=setup_options())
        if got.shape != (32, 1024) or not (0.0 <= got.min() and got.max() < 1.0):
            raise RuntimeError(f"wrong rows: shape {got.shape}")
        report(name, mean_step_ms(sess, got_rows, feeds, 250), "ms", "lower",
               embedding_mib=rows * 1024 * 4 // 2**20)


def mlp_graph(device_fn):
    """The MLP of mlp_step.py; device_fn(op) -> device, or None for no placement."""
    g, x, y, init, train = mlp(tf, device_fn)
    rng = np.random.default_rng(0)
    feed = {x: rng.standard_normal((128, 784)).astype(np.float32),
            y: rng.integers(0, 10, 128)}
    return g, init, train, feed


_VARIABLE_OPS = ("Variable", "VariableV2", "VarHandleOp", "AutoReloadVariable")


def ps_placer(op):
    """What tf.train.replica_device_setter(ps_tasks=1, worker_device=WORKER) does:
    variables on ps:0, everything else on the worker (ops colocated with a variable,
    e.g. Adam's updates and slots, follow it)."""
    return ps(0) if op.type in _VARIABLE_OPS else WORKER


def mlp_steps(target: str | None) -> float:
    if target is None:
        g, init, train, feed = mlp_graph(None)
        sess = tf.Session(graph=g)
    else:
        g, init, train, feed = mlp_graph(ps_placer)
        sess = tf.Session(target, graph=g, config=session_config(WORKER, ps(0)))
    with sess:
        sess.run(init, options=setup_options())
        sess.run(train, feed, options=setup_options())
        ms, _ = median_step_ms(sess, train, feed, 30)
    return ms


def meta(name: str) -> dict:
    label, target = FIGURES[name]
    return {"label": label, **({"target": target} if target else {})}


def main() -> None:
    try:
        cluster, seconds = start_cluster(NUM_PS)
    except Exception as e:  # noqa: BLE001 - every distributed figure reports it
        for name in FIGURES:
            if name not in ("mlp_step_local", "mlp_ps_over_local"):
                emit_error(name, e, **meta(name))
        with guarded("mlp_step_local", **meta("mlp_step_local")):
            report("mlp_step_local", mlp_steps(None), "ms", "lower")
        return
    report("cluster_start", seconds, "s", "lower")
    target = cluster.target
    with guarded("tiny_step", **meta("tiny_step")):
        tiny_step(target)
    for n in (2, NUM_PS):
        with guarded(f"null_step_{n}ps", **meta(f"null_step_{n}ps")):
            null_step(target, n)
    with guarded("dense_fetch_100mb", **meta("dense_fetch_100mb")):
        dense_fetch(target)
    with guarded("sparse_gather_64mib", **meta("sparse_gather_64mib")):
        sparse_gather(target, 16384, 1, "sparse_gather_64mib")
    with guarded(BIG, **meta(BIG)):
        sparse_gather(target, BIG_ROWS, 2, BIG)
    dist = local = None
    with guarded("mlp_step_ps", **meta("mlp_step_ps")):
        dist = mlp_steps(target)
    cluster.stop()  # the in-process step without 9 idle servers beside it
    with guarded("mlp_step_local", **meta("mlp_step_local")):
        local = mlp_steps(None)
    if dist is not None:
        note = f"{BACKEND}: distributed / in-process step = "
        note += f"{dist / local:.2f}" if local else "n/a"
        if BACKEND == "tensorflux" and local:
            note += f" (issue 14 target <= 1.3: {'met' if dist / local <= 1.3 else 'not met'})"
        report("mlp_step_ps", dist, "ms", "lower", note=note)
    if local is not None:
        report("mlp_step_local", local, "ms", "lower")
    if dist is not None and local:
        report("mlp_ps_over_local", dist / local, "x", "lower",
               note=f"{BACKEND}'s own ratio; issue 14 target for tensorflux <= 1.3")


try:
    main()
finally:
    stop_all()
