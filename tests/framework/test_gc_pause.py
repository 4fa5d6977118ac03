"""framework/gc_pause.py: the collector is off inside, restored after, nesting and threads
included; a step build and a GraphDef import run with it paused."""

from __future__ import annotations

import gc
import threading

import numpy as np

import tensorflux as tf
from tensorflux.framework import gc_pause


def test_paused_nests_and_restores():
    assert gc.isenabled()
    with gc_pause.paused():
        assert not gc.isenabled()
        with gc_pause.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer pause still holds
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled():
    gc.disable()
    try:
        with gc_pause.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_restored_after_an_exception():
    try:
        with gc_pause.paused():
            raise KeyError("x")
    except KeyError:
        pass
    assert gc.isenabled()


def test_overlapping_pauses_on_threads_end_enabled():
    inside = threading.Barrier(8, timeout=30)

    def work():
        with gc_pause.paused():
            inside.wait()  # all eight are inside at once
            assert not gc.isenabled()

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads)
    assert gc.isenabled()


def test_step_build_and_import_run_with_the_collector_paused(monkeypatch):
    seen = []
    real = gc_pause.paused

    def spy():
        seen.append(True)
        return real()

    monkeypatch.setattr(gc_pause, "paused", spy)
    with tf.Graph().as_default() as g:
        p = tf.placeholder(tf.float32, [3])
        y = tf.reduce_sum(tf.tanh(p * 2.0))
        with tf.Session() as s:
            assert np.isclose(s.run(y, {p: [0.1, 0.2, 0.3]}), np.tanh([0.2, 0.4, 0.6]).sum())
    assert len(seen) == 1
    with tf.Graph().as_default():
        tf.import_graph_def(g.as_graph_def(), name="copy")
    assert len(seen) == 2 and gc.isenabled()
