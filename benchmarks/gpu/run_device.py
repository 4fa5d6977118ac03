"""The on-device check of issue 22, in one run (write everything under $OUT):

1. the GPU kernel tests (tests/kernels/test_gpu_kernels.py, test_gpu_graphs.py) on the real
   GPU through CuPy;
2. the MLP training step at batch 1024 on the GPU and on the CPU (tensorflux both);
3. the paper's Table 1 nets (benchmarks/programs/_convnets.py), one SGD step each at the
   paper's batch sizes, tensorflux on the GPU side by side with PyTorch on the same GPU;
4. the CNN step of benchmarks/programs/cnn_step.py on the GPU and the CPU.

Every GPU step runs twice: as CUDA graphs (the default, runtime/gpu_graphs.py) and kernel
by kernel (TENSORFLUX_GPU_GRAPHS=0), with the graphs' captures, replays and failures.

    python benchmarks/gpu/run_device.py [--only NAME,...] [--budget SECONDS]

Each item has a time budget; the report (report.json, report.md) is rewritten after each.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [ROOT, os.path.join(ROOT, "benchmarks", "programs"), HERE]
OUT = os.environ.get("OUT", "/tmp/tfx_gpu_out")
os.makedirs(OUT, exist_ok=True)
REPORT: dict = {"items": {}}
T0 = time.time()


def save():
    with open(os.path.join(OUT, "report.json"), "w") as f:
        json.dump(REPORT, f, indent=1, default=str)


def item(name):
    def deco(fn):
        def run(*args):
            t = time.time()
            try:
                REPORT["items"][name] = fn(*args)
            except Exception as e:  # noqa: BLE001 - reported, the next item runs
                REPORT["items"][name] = {"error": f"{type(e).__name__}: {e}"[:2000],
                                         "trace": traceback.format_exc()[-3000:]}
            REPORT["items"][name] = dict(REPORT["items"][name] or {},
                                         wall_s=round(time.time() - t, 1))
            print(name, json.dumps(REPORT["items"][name], default=str)[:600], flush=True)
            save()
        return run
    return deco


def environment():
    env = {"python": platform.python_version(), "numpy": np.__version__}
    try:
        import cupy
        env["cupy"] = cupy.__version__
        env["gpu"] = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
        env["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
        try:
            from cupy.cuda import cudnn  # noqa: F401
            env["cupy_cudnn"] = True
        except Exception as e:  # noqa: BLE001
            env["cupy_cudnn"] = f"no: {e}"[:200]
    except Exception as e:  # noqa: BLE001
        env["cupy"] = f"unavailable: {e}"
    try:
        import torch
        env["torch"] = torch.__version__
    except Exception as e:  # noqa: BLE001
        env["torch"] = f"unavailable: {e}"
    import google.protobuf
    env["protobuf"] = google.protobuf.__version__
    from tensorflux.kernels.gpu import backend, cudnn
    env["gpus"] = backend.gpu_count()
    env["CUPY_TF32"] = os.environ.get("CUPY_TF32")
    env["cudnn"] = cudnn.available()
    return env


@item("gpu_kernel_tests")
def gpu_tests(timeout):
    log = os.path.join(OUT, "gpu_tests.log")
    with open(log, "w") as f:
        p = subprocess.run([sys.executable, "-m", "pytest", "tests/kernels/test_gpu_kernels.py",
                            "tests/kernels/test_gpu_graphs.py", "-q", "-p", "no:cacheprovider",
                            "--timeout", "120", "-o", "addopts="],
                           cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, timeout=timeout)
    tail = open(log).read()[-1500:]
    return {"rc": p.returncode, "tail": tail}


def _steps(sess, fetch, feed, warmup, reps, budget, sync, host=None):
    for _ in range(warmup):
        sess.run(fetch, feed)
    sync()
    times = []
    start = time.time()
    cpu = time.process_time()
    while len(times) < reps and (len(times) < 2 or time.time() - start < budget):
        t = time.perf_counter()
        sess.run(fetch, feed)
        sync()
        times.append(time.perf_counter() - t)
    if host is not None:
        host["host_cpu_ms"] = round((time.process_time() - cpu) / len(times) * 1e3, 2)
    return float(np.median(times)) * 1e3, len(times)


def _graphs(on: bool):
    os.environ["TENSORFLUX_GPU_GRAPHS"] = "1" if on else "0"


def _graph_stats(sess):
    out = []
    for step in sess._steps.values():
        g = getattr(step, "_gpu_graphs", None)
        if g is not None and (g.captures or g.replays or g.failures):
            out.append({"captures": g.captures, "replays": g.replays,
                        "failures": [f[:300] for f in g.failures]})
    return out


def _sync():
    from tensorflux.kernels.gpu import backend
    backend.synchronize()


@item("mlp_batch1024")
def mlp(budget):
    import _models

    import tensorflux as tf
    rng = np.random.default_rng(0)
    feed_x = rng.standard_normal((1024, 784)).astype(np.float32)
    feed_y = rng.integers(0, 10, 1024)
    out = {}
    for dev, cfg, on in (("gpu", None, True), ("gpu_kernels", None, False),
                         ("cpu", tf.ConfigProto(device_count={"GPU": 0}), False)):
        _graphs(on)
        g, x, y, init, train = _models.mlp(tf)
        with tf.Session(graph=g, config=cfg) as s:
            s.run(init)
            host = {}
            out[f"{dev}_ms"], out[f"{dev}_steps"] = _steps(
                s, train, {x: feed_x, y: feed_y}, 5, 30, budget / 3, _sync, host)
            out[f"{dev}_host_cpu_ms"] = host["host_cpu_ms"]
            if dev.startswith("gpu"):
                out[f"{dev}_graphs"] = _graph_stats(s)
            if dev == "gpu_kernels":
                out["profile"] = _profile(s, g, train, {x: feed_x, y: feed_y})
    _graphs(True)
    out["speedup"] = out["cpu_ms"] / out["gpu_ms"]
    out["speedup_kernel_by_kernel"] = out["cpu_ms"] / out["gpu_kernels_ms"]
    out["same_training"] = _same_training(_models, tf)
    return out


def _same_training(_models, tf, steps=12):
    """Losses and weights of the MLP trained `steps` steps with graphs and without."""
    rng = np.random.default_rng(1)
    data = [(rng.standard_normal((1024, 784)).astype(np.float32), rng.integers(0, 10, 1024))
            for _ in range(steps)]
    runs = []
    for on in (True, False):
        _graphs(on)
        g, x, y, init, train = _models.mlp(tf)
        with tf.Session(graph=g) as s:
            variables = g.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES)
            s.run(init)
            start = s.run(variables)
            if runs:  # the same initial values in both runs
                for v, value in zip(variables, runs[0]["start"], strict=True):
                    v.load(value, s)
            for bx, by in data:
                s.run(train, {x: bx, y: by})
            runs.append({"start": start, "end": s.run(variables), "graphs": _graph_stats(s)})
    _graphs(True)
    diff = max(float(np.max(np.abs(a - b))) for a, b in zip(runs[0]["end"], runs[1]["end"],
                                                             strict=True))
    return {"max_abs_weight_diff": diff, "graphs": runs[0]["graphs"]}


@item("lstm_lm")
def lstm(budget):
    """The LSTM language model of benchmarks/programs/lstm_lm.py (BasicLSTMCell(512), 20
    steps, batch 32, vocab 10k, Adam) unrolled by dynamic_rnn and by static_rnn, on the GPU
    and on the CPU."""
    import _models

    import tensorflux as tf
    rng = np.random.default_rng(0)
    feed_x = rng.integers(0, 10000, (32, 20)).astype(np.int32)
    feed_y = rng.integers(0, 10000, (32, 20)).astype(np.int32)
    out = {}
    for unroll in ("dynamic", "static"):
        for dev, cfg in (("gpu", None), ("cpu", tf.ConfigProto(device_count={"GPU": 0}))):
            g, x, y, init, train = _models.lstm_lm(tf, tf.nn.rnn_cell, unroll)
            with tf.Session(graph=g, config=cfg) as s:
                s.run(init)
                key = f"{unroll}_{dev}"
                out[f"{key}_ms"], out[f"{key}_steps"] = _steps(
                    s, train, {x: feed_x, y: feed_y}, 3, 15, budget / 4, _sync)
                if dev == "gpu":
                    out[f"{key}_graphs"] = _graph_stats(s)
        out[f"{unroll}_speedup"] = out[f"{unroll}_cpu_ms"] / out[f"{unroll}_gpu_ms"]
    return out


@item("cnn_step_batch64")
def cnn(budget):
    from _models import conv, dense

    import tensorflux as tf
    rng = np.random.default_rng(0)
    out = {}
    for dev, cfg, on in (("gpu", None, True), ("gpu_kernels", None, False),
                         ("cpu", tf.ConfigProto(device_count={"GPU": 0}), False)):
        _graphs(on)
        g = tf.Graph()
        with g.as_default():
            x = tf.placeholder(tf.float32, [None, 32, 32, 3])
            y = tf.placeholder(tf.int64, [None])

            def pool(h):
                return tf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
            h = pool(conv(tf, pool(conv(tf, x, 32, 5, tf.nn.relu)), 64, 5, tf.nn.relu))
            h = tf.reshape(h, [-1, 8 * 8 * 64])
            logits = dense(tf, dense(tf, h, 256, tf.nn.relu), 10)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=y, logits=logits))
            train = tf.train.MomentumOptimizer(0.01, 0.9).minimize(loss)
            init = tf.global_variables_initializer()
        with tf.Session(graph=g, config=cfg) as s:
            s.run(init)
            feed = {x: rng.standard_normal((64, 32, 32, 3)).astype(np.float32),
                    y: rng.integers(0, 10, 64)}
            out[f"{dev}_ms"], out[f"{dev}_steps"] = _steps(s, train, feed, 4, 20,
                                                           budget / 3, _sync)
            if dev.startswith("gpu"):
                out[f"{dev}_graphs"] = _graph_stats(s)
    _graphs(True)
    out["speedup"] = out["cpu_ms"] / out["gpu_ms"]
    out["speedup_kernel_by_kernel"] = out["cpu_ms"] / out["gpu_kernels_ms"]
    return out


def table1(name, budget):
    import _convnets as convnets

    import tensorflux as tf
    batch = convnets.BATCH[name]
    size = convnets.IMAGE[name]
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((batch, size, size, 3)).astype(np.float32)
    ys = rng.integers(0, 1000, batch)
    out = {"batch": batch, "data": "synthetic, in GPU memory (both)"}
    t = time.time()
    # TFX_KERNEL_BY_KERNEL_NETS: the nets also timed kernel by kernel (default: all).
    both = os.environ.get("TFX_KERNEL_BY_KERNEL_NETS", ",".join(convnets.NETS)).split(",")
    for on in (True, False) if name in both else (True,):
        _graphs(on)
        tag = "tensorflux" if on else "tensorflux_kernels"
        g, x, y, init, train, loss = convnets.build(tf, name, batch, synthetic=True)
        with tf.Session(graph=g) as s:
            s.run(init)
            first = time.time()
            s.run(train)
            _sync()
            out[f"{tag}_first_step_s"] = round(time.time() - first, 2)
            host = {}
            out[f"{tag}_ms"], out[f"{tag}_steps"] = _steps(
                s, train, None, 3, 8, budget * 0.3, _sync, host)
            out[f"{tag}_host_cpu_ms"] = host["host_cpu_ms"]
            out[f"{tag}_loss"] = float(s.run(loss))
            out[f"{tag}_graphs"] = _graph_stats(s)
            if not on and name == "googlenet":
                out["profile"] = _profile(s, g, train, None)
    _graphs(True)
    out["tensorflux_setup_s"] = round(time.time() - t, 1)
    try:
        out["torch_ms"] = _torch_step_ms(name, xs, ys, size)
        out["ratio_vs_torch"] = out["tensorflux_ms"] / out["torch_ms"]
        if "tensorflux_kernels_ms" in out:
            out["ratio_vs_torch_kernel_by_kernel"] = (out["tensorflux_kernels_ms"]
                                                      / out["torch_ms"])
    except Exception as e:  # noqa: BLE001
        out["torch_error"] = f"{type(e).__name__}: {e}"[:500]
    return out


def _profile(sess, graph, fetch, feed, top=14):
    """Op types by device time in one traced step (GPU kernels are synchronized when
    traced, so each time is the kernel's own): [(op type, count, ms)]."""
    import tensorflux as tf
    meta = tf.RunMetadata()
    t = time.perf_counter()
    sess.run(fetch, feed, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
             run_metadata=meta)
    wall = (time.perf_counter() - t) * 1e3
    by_type: dict = {}
    for dev in meta.step_stats.dev_stats:
        for ns in dev.node_stats:
            try:
                op = graph.get_operation_by_name(ns.node_name).type
            except (KeyError, ValueError):
                op = ns.node_name.split("/")[-1]
            c, us = by_type.get(op, (0, 0))
            by_type[op] = (c + 1, us + ns.all_end_rel_micros)
    rows = sorted(by_type.items(), key=lambda kv: -kv[1][1])[:top]
    return {"traced_step_ms": round(wall, 1),
            "top": [(op, c, round(us / 1e3, 2)) for op, (c, us) in rows]}


def _torch_step_ms(name, xs, ys, size):
    """Median SGD step of the same net in PyTorch (cuDNN autotuned, TF32 on as TF's)."""
    import _convnets as convnets
    import torch
    import torch_nets
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    net = torch_nets.build(convnets.spec(name), size).cuda()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    tx = torch.from_numpy(xs.transpose(0, 3, 1, 2).copy()).cuda()
    ty = torch.from_numpy(ys).cuda()
    lossf = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        lossf(net(tx), ty).backward()
        opt.step()
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(10):
        t = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    return float(np.median(times)) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--budget", type=float, default=400.0)
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    REPORT["environment"] = environment()
    print(json.dumps(REPORT["environment"]), flush=True)
    save()
    import _convnets as convnets
    nets = sorted(convnets.NETS, key=lambda n: n != "googlenet")  # the one off target first
    plan = [("mlp_batch1024", lambda: mlp(40))]
    plan += [(f"table1_{n}", lambda n=n: item(f"table1_{n}")(table1)(n, 40)) for n in nets[:1]]
    plan += [("gpu_kernel_tests", lambda: gpu_tests(150)), ("lstm_lm", lambda: lstm(40)),
             ("cnn_step_batch64", lambda: cnn(30))]
    plan += [(f"table1_{n}", lambda n=n: item(f"table1_{n}")(table1)(n, 40)) for n in nets[1:]]
    for name, run in plan:
        if only and name not in only:
            continue
        if time.time() - T0 > args.budget:
            REPORT["items"][name] = {"skipped": "out of time"}
            continue
        run()
    try:
        import cupy
        pool = cupy.get_default_memory_pool()
        REPORT["gpu_pool_bytes"] = int(pool.total_bytes())
    except Exception:  # noqa: BLE001
        pass
    REPORT["total_s"] = round(time.time() - T0, 1)
    save()


if __name__ == "__main__":
    main()
