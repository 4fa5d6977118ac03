"""TF_DETERMINISTIC_OPS and TF_CUDNN_DETERMINISTIC on the GPU kernels (kernels/determinism.py):
scatter-adds add repeated indices in index order (np.add.at's bits) instead of atomically,
and cuDNN's algorithm is the deterministic one of lowest number instead of the fastest one
measured. Without a GPU the kernels run on simulated GPUs (kernels/gpu/backend.py); where
CuPy finds a GPU the same tests run the real kernels."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.kernels import determinism
from tensorflux.kernels.gpu import backend, cudnn

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(autouse=True)
def gpus():
    n = backend.simulate_gpus(1)
    yield n
    backend.simulate_gpus(0)


@pytest.mark.parametrize("value, on", [("1", True), ("true", True), ("TRUE", True),
                                       ("0", False), ("false", False), ("", False)])
def test_the_flags_read_tensorflow_booleans(monkeypatch, value, on):
    monkeypatch.setenv("TF_DETERMINISTIC_OPS", value)
    monkeypatch.delenv("TF_CUDNN_DETERMINISTIC", raising=False)
    assert determinism.op_determinism_required() is on
    assert determinism.cudnn_determinism_required() is on
    monkeypatch.setenv("TF_DETERMINISTIC_OPS", "0")
    monkeypatch.setenv("TF_CUDNN_DETERMINISTIC", value)
    assert determinism.cudnn_determinism_required() is on
    assert not determinism.op_determinism_required()


@pytest.mark.parametrize("width", [0, 3])
def test_scatter_add_in_order_has_the_bits_of_add_at(width):
    rng = np.random.default_rng(width)
    shape = (40,) + ((width,) if width else ())
    idx = np.concatenate([rng.zipf(1.5, 300) % 40, [-1, 39, -40, 0]]).astype(np.int64)
    updates = (rng.standard_normal((idx.size,) + shape[1:]) *
               10.0 ** rng.integers(-5, 5, (idx.size,) + shape[1:])).astype(np.float32)
    target = rng.standard_normal(shape).astype(np.float32)
    want = target.copy()
    np.add.at(want, idx, updates)
    got = backend.to_device(target)
    backend.scatter_add_in_order(got, backend.to_device(idx), backend.to_device(updates))
    assert np.asarray(backend.to_host(got)).tobytes() == want.tobytes()


def _run(device, build, feeds):
    g = tf.Graph()
    with g.as_default(), tf.device(device):
        phs = {k: tf.placeholder(tf.as_dtype(v.dtype), v.shape, name=k) for k, v in feeds.items()}
        fetches = build(**phs)
        init = tf.global_variables_initializer()
    with tf.Session(graph=g) as s:
        s.run(init)
        return s.run(fetches, {phs[k]: v for k, v in feeds.items()})


def test_deterministic_scatters_on_the_gpu_have_the_cpus_bits(monkeypatch):
    """UnsortedSegmentSum and ResourceScatterAdd with repeated indices (a sparse gradient
    and its update) give the CPU kernels' values bit for bit, on every run."""
    monkeypatch.setenv("TF_DETERMINISTIC_OPS", "1")
    rng = np.random.default_rng(0)
    ids = (rng.zipf(1.3, 500) % 30).astype(np.int32)
    data = (rng.standard_normal((500, 8)) * 10.0 ** rng.integers(-4, 4, (500, 8))).astype(
        np.float32)

    def build(d):
        v = tf.get_variable("v", initializer=np.ones((30, 8), np.float32), use_resource=True)
        with tf.control_dependencies([tf.scatter_add(v, ids, d)]):
            return [tf.unsorted_segment_sum(d, ids, 30), v.read_value()]

    cpu = _run("/cpu:0", build, {"d": data})
    for _ in range(2):
        gpu = _run("/gpu:0", build, {"d": data})
        for c, g in zip(cpu, gpu, strict=True):
            assert np.asarray(g).tobytes() == np.asarray(c).tobytes()


def _perfs(*rows):
    """cudnnFind results (fastest first): (algo, status, time, memory, determinism)."""
    out = (cudnn._Perf * len(rows))()
    for p, (algo, status, time, memory, det) in zip(out, rows, strict=True):
        p.algo, p.status, p.time, p.memory, p.determinism = algo, status, time, memory, det
    return list(out)


def test_cudnn_takes_the_fastest_algorithm_or_a_fixed_deterministic_one():
    found = _perfs((1, 0, 0.1, 64, 0), (6, 0, 0.2, 4096, 1), (7, 3, 0.0, 0, 1),
                   (2, 0, 0.3, 128, 1), (0, 0, 0.5, 0, 0))
    assert cudnn._choose(found, False) == (1, 64)  # the fastest that ran
    assert cudnn._choose(found, True) == (2, 128)  # 7 failed; 0 and 1 not deterministic
    assert cudnn._choose(list(reversed(found)), True) == (2, 128)  # whatever the timings
    assert cudnn._choose(_perfs((0, 0, 0.1, 0, 0)), True) is None
    assert cudnn._choose([], False) is None
