"""Seeded programs give the same bits in every run, with the default (multi-threaded)
intra-op settings: across fresh processes (tests/runtime/determinism_programs.py), and
in-process for the kernels that split a sum over the intra-op threads, called many times
while other threads keep the pools busy (kernels/intra_op.py `parallel_sum`; the C pool's
k-sliced products and batch-norm sums). Also TF_DETERMINISTIC_OPS for what still depends
on thread timing: a parallel tf.data map of a stateful function (kernels/determinism.py).
No timing is asserted."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import threading
from types import SimpleNamespace

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.kernels import datasets as ds_lib
from tensorflux.kernels.cpu import (
    _fft_conv,
    _winograd,
    _winograd4,
    batch_norm_ops,
    conv_ops,
    matrix_ops,
    native,
)
from tensorflux.runtime.exec_options import ExecOptions
from tests import oracle
from tests.runtime import determinism_programs

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROCESSES = 3


@pytest.fixture(scope="module")
def digests():
    """{program: [digest per process]}: every program run in PROCESSES fresh processes at
    once (each with its own hash seed and address layout), with the default intra-op
    threads."""
    code = "from tests.runtime.determinism_programs import main; main()"
    procs = []
    for i in range(PROCESSES):
        env = dict(os.environ, PYTHONHASHSEED=str(i + 1))
        env.pop("TF_NUM_INTRAOP_THREADS", None)
        procs.append(subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=150)
            assert p.returncode == 0, err[-3000:]
            outs.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return {name: [o[name] for o in outs] for name in determinism_programs.PROGRAMS}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("program", list(determinism_programs.PROGRAMS))
def test_seeded_program_gives_the_same_bits_in_every_process(digests, program):
    assert len(set(digests[program])) == 1, digests[program]


# ---- kernels that sum over the intra-op split, hammered in-process -----------------------

PARTS = 4  # more threads than most test machines have cores: chunks finish in any order


def _conv_geometry(strides=(1, 1), padding="VALID"):
    return conv_ops._ConvGeometry(SimpleNamespace(
        attrs={"strides": [1, *strides, 1], "dilations": [1, 1, 1, 1], "padding": padding,
               "data_format": "NHWC"}, name="conv", op="Conv2DBackpropFilter"))


def _data(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(s) * rng.uniform(0.1, 10.0)).astype(np.float32)
            for s in shapes]


def _im2col_filter_grad():
    x, dy = _data((24, 20, 20, 8), (24, 16, 16, 24))
    return lambda: conv_ops._conv_backprop_filter(x, dy, 5, 5, _conv_geometry(), PARTS)


def _rows_filter_grad():
    x, dy = _data((6, 40, 40, 16), (6, 38, 38, 32))
    return lambda: conv_ops._backprop_filter_rows(x, dy, 3, 3, _conv_geometry(), PARTS,
                                                  np.dtype(np.float32))


def _pointwise_filter_grad():
    x, dy = _data((16, 24, 24, 32), (16, 24, 24, 48))
    return lambda: conv_ops._pointwise_backprop_filter(x, dy, _conv_geometry(), PARTS)


def _winograd_filter_grad(module, hw):
    xp, dy = _data((32, hw + 2, hw + 2, 48), (32, hw, hw, 48))
    return lambda: module.conv3x3_backprop_filter(xp, dy, PARTS)


def _fft_filter_grad():
    x, dy = _data((16, 16, 16, 32), (16, 16, 16, 64))
    return lambda: _fft_conv.conv_backprop_filter(x, dy, (5, 5), (2, 2), (1, 1), PARTS)


def _batch_norm_sums():
    x, dy = _data((8192, 64), (8192, 64))
    x += 20.0
    ctx = SimpleNamespace(workers=PARTS)

    def run():
        m, v = batch_norm_ops._rows_stats(ctx, x)
        inv = (1.0 / np.sqrt(v + 1e-3)).astype(np.float32)
        return (m, v) + tuple(batch_norm_ops._rows_backward(ctx, dy, x, np.ones(64, np.float32),
                                                            m, inv, True))
    return run


def _long_products():
    a, b, c = _data((2048, 96), (2048, 80), (96, 4096))
    return lambda: (native.gemm(a.T, b, PARTS), matrix_ops._split_matmul(a, c, PARTS))


KERNELS = {
    "conv_backprop_filter_im2col": _im2col_filter_grad,
    "conv_backprop_filter_rows": _rows_filter_grad,
    "conv_backprop_filter_pointwise": _pointwise_filter_grad,
    "winograd_f2x2_filter_grad": lambda: _winograd_filter_grad(_winograd, 14),
    "winograd_f4x4_filter_grad": lambda: _winograd_filter_grad(_winograd4, 28),
    "fft_filter_grad": _fft_filter_grad,
    "batch_norm_sums": _batch_norm_sums,
    "long_products": _long_products,
}


def _bits(value) -> list[bytes]:
    values = value if isinstance(value, tuple) else (value,)
    return [np.asarray(v).tobytes() for v in values if v is not None]


def _hammer(run, threads: int = 4, calls: int = 3) -> None:
    """Calls `run` on `threads` threads at once, `calls` times each (the Python pool and
    the C pool's slots busy, some calls running their chunks alone): every result has the
    bits of a first call made alone."""
    want = _bits(run())
    bad, errors = [], []

    def worker():
        try:
            for _ in range(calls):
                if _bits(run()) != want:
                    bad.append(1)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(timeout=100)
    assert not errors, errors
    assert not bad, f"{len(bad)} of {threads * calls} calls gave other bits"


@pytest.mark.timeout(240)
@pytest.mark.parametrize("native_on", [True, False], ids=["native", "numpy"])
@pytest.mark.parametrize("kernel", list(KERNELS))
def test_split_sums_give_the_same_bits_with_the_pools_busy(monkeypatch, kernel, native_on):
    if not native_on:
        monkeypatch.setattr(native, "_mod", None)
    elif not native.available():
        pytest.skip("no C extension")
    _hammer(KERNELS[kernel]())


def _cnn_gradients(strategy: str):
    """(session, gradients of the brief's convnet, feeds)."""
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(1)
        x = tf.placeholder(tf.float32, [None, 32, 32, 3])
        y = tf.placeholder(tf.int64, [None])
        h = tf.layers.conv2d(x, 32, 5, activation=tf.nn.relu)
        h = tf.layers.conv2d(tf.layers.max_pooling2d(h, 2, 2), 64, 5, activation=tf.nn.relu)
        h = tf.layers.batch_normalization(h, training=True)
        logits = tf.layers.dense(tf.layers.flatten(h), 10)
        loss = tf.losses.sparse_softmax_cross_entropy(y, logits)
        grads = tf.gradients(loss, tf.trainable_variables())
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=g, config=tf.ConfigProto(intra_op_parallelism_threads=PARTS),
                      exec_options=ExecOptions(strategy=strategy))
    sess.run(init)
    rng = np.random.default_rng(0)
    feeds = {x: rng.standard_normal((64, 32, 32, 3)).astype(np.float32),
             y: rng.integers(0, 10, 64)}
    return sess, grads, feeds


@pytest.mark.timeout(240)
@pytest.mark.parametrize("strategy", ["auto", "dataflow"])
def test_a_training_step_gives_the_same_gradients_when_steps_run_side_by_side(strategy):
    """Session.run of the convnet's gradients from several threads at once (the steps'
    kernels share the intra-op pools and the inter-op threads; the dataflow executor also
    runs a layer's two backprops side by side): every step's gradients have the bits of a
    step run alone."""
    sess, grads, feeds = _cnn_gradients(strategy)
    with sess:
        _hammer(lambda: tuple(sess.run(grads, feeds)), threads=3, calls=2)


# ---- TF_DETERMINISTIC_OPS: a parallel map of a stateful function -------------------------

def _mapped(parallel, stateful=True, n=600):
    """The elements of a seeded map over range(n) (a random draw per element when
    `stateful`), with `parallel` calls."""
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(3)

        def fn(i):
            v = tf.cast(i, tf.float32)
            return v + tf.random_uniform([]) if stateful else tf.tanh(v) * 2.0

        ds = tf.data.Dataset.range(n).map(fn, num_parallel_calls=parallel).batch(n)
        nxt = ds.make_one_shot_iterator().get_next()
    with tf.Session(graph=g) as sess:
        return sess.run(nxt)


@pytest.mark.timeout(120)
def test_deterministic_ops_map_a_stateful_function_in_order(monkeypatch):
    monkeypatch.setenv("TF_DETERMINISTIC_OPS", "1")
    want = _mapped(None)
    for _ in range(3):
        assert _mapped(8).tobytes() == want.tobytes()


@pytest.mark.parametrize("env, stateful, parallel", [
    ("1", False, True), ("0", True, True), ("true", True, False), ("", False, True)])
def test_only_a_stateful_map_under_deterministic_ops_loses_its_threads(
        monkeypatch, env, stateful, parallel):
    monkeypatch.setenv("TF_DETERMINISTIC_OPS", env)
    made = []
    real = ds_lib._ParallelMapIterator
    monkeypatch.setattr(ds_lib, "_ParallelMapIterator",
                        lambda *a, **k: made.append(1) or real(*a, **k))
    got = _mapped(4, stateful=stateful, n=40)
    assert bool(made) == parallel
    if not stateful:
        np.testing.assert_array_equal(got, np.tanh(np.arange(40, dtype=np.float32)) * 2.0)


@pytest.mark.oracle
@pytest.mark.skipif(not oracle.available(), reason="TensorFlow oracle venv not installed")
def test_deterministic_ops_map_draws_as_tensorflow(monkeypatch):
    """TensorFlow with TF_DETERMINISTIC_OPS=1 maps a stateful function in order too: the
    same draws, bit for bit."""
    want = oracle.run_tf("""
os.environ["TF_DETERMINISTIC_OPS"] = "1"
tf.set_random_seed(3)
ds = tf.data.Dataset.range(600).map(
    lambda i: tf.cast(i, tf.float32) + tf.random_uniform([]), num_parallel_calls=8).batch(600)
with tf.Session() as s:
    result = s.run(tf.data.make_one_shot_iterator(ds).get_next())
""")
    monkeypatch.setenv("TF_DETERMINISTIC_OPS", "1")
    assert _mapped(8).tobytes() == np.asarray(want, np.float32).tobytes()
