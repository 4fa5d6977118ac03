"""Variables kept in the push segment and lent to the consumer (distributed/shm.py
`Segment.resident`, `storage_for`, `piggyback`): no copy per push, the lent tensor never
changes, the producer writes in place only once every lending is handed back, and the
handing back rides on the consumer's next frame to the producer's task."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.distributed import shm

from .conftest import Cluster

pytestmark = [pytest.mark.timeout(90),
              pytest.mark.skipif(not shm.enabled(), reason="no memfd/SCM_RIGHTS here")]

PS = "/job:ps/replica:0/task:0"
F32 = 1  # DT_FLOAT


def _pair(size: int = 1 << 20):
    """A segment, the consumer's mapping of it, and its releases (frames kept, not
    written)."""
    segment = shm.Segment(size)
    frames: list = []
    releases = shm.Releases(lambda frame: frames.append(frame) or True)
    mapping = shm.Mapping(os.dup(segment.fd), segment.size, segment.nonce, releases)
    return segment, mapping, releases


def _address(arr) -> int:
    return arr.__array_interface__["data"][0]


def test_a_resident_array_is_lent_without_a_copy_and_written_in_place_once_handed_back():
    segment, mapping, releases = _pair()
    start = np.arange(65536, dtype=np.float32)  # 256 KiB
    res = segment.resident(start)
    np.testing.assert_array_equal(res, start)
    assert res.flags.writeable and shm.storage_for(res) is None  # not lent: in place
    slot, offset = segment.put(res)
    assert slot & shm.LENT and not res.flags.writeable
    assert offset == shm._residents[_address(res)].offset  # the very extent, no copy
    view = mapping.array(F32, [65536], offset, res.nbytes, slot)
    assert not view.flags.writeable  # the consumer never writes into what we keep
    np.testing.assert_array_equal(view, start)

    moved = shm.storage_for(res)  # an update while lent: a fresh resident copy
    assert moved is not None and _address(moved) != _address(res)
    np.testing.assert_array_equal(moved, start)
    assert moved.flags.writeable
    moved += 1.0  # the update writes the copy; the lent tensor stays as it was
    np.testing.assert_array_equal(view, start)

    second = segment.put(res)  # two lendings out: read-only until both come back
    segment.release([second[0]])
    assert not res.flags.writeable
    del view
    releases.flush(force=True)
    assert releases._pending == type(releases._pending)()
    segment.release([slot])
    assert res.flags.writeable and shm.storage_for(res) is None

    used = segment.in_use()
    lent = segment.put(moved)
    del moved  # the producer lets go first: the extent waits for the consumer
    assert segment.in_use() == used
    segment.release([lent[0]])
    assert segment.in_use() == used - 1
    segment.close()


def test_a_pushed_copy_moves_into_the_segment_once_and_stays_in_the_first_one():
    segment, _, _ = _pair()
    other, _, _ = _pair()
    heap = np.full((256, 256), 2.0, np.float32)
    slot, _ = segment.put(heap)  # copied: the storage is not in the segment yet
    assert not slot & shm.LENT
    res = shm.storage_for(heap)
    assert res is not None and shm._residents[_address(res)].segment is segment
    np.testing.assert_array_equal(res, heap)
    assert shm.storage_for(heap) is None  # once

    other.put(res)  # pushed by a copy to a second consumer: no moving back and forth
    assert shm.storage_for(res) is None
    for value in (np.ones(4, np.float32), [1.0, 2.0], None):
        assert shm.storage_for(value) is None
    full, _, _ = _pair(2 << 20)
    big = np.zeros(1 << 19, np.float32)  # 2 MiB: no room beside the nonce's page
    full.put(np.zeros(1 << 16, np.float32))
    assert full.resident(big) is None
    for s in (segment, other, full):
        s.close()


def test_releases_ride_on_the_next_frame_to_the_producers_task():
    segment, mapping, releases = _pair()
    res = segment.resident(np.ones(65536, np.float32))
    slot, offset = segment.put(res)
    view = mapping.array(F32, [65536], offset, res.nbytes, slot)
    shm.incoming(PS, releases, mapping.nonce)
    try:
        assert shm.piggyback(PS) is None  # nothing handed back yet
        del view
        frame, taken_from, slots = shm.piggyback(PS)
        assert taken_from is releases and slots == [slot]
        assert shm.piggyback(PS) is None  # taken
        releases.restore(slots)  # a write that failed puts them back
        frame, _, _ = shm.piggyback(PS)
        assert not res.flags.writeable
        shm.release_foreign(frame)  # found by the segment's nonce
        assert res.flags.writeable
        unknown = bytearray(frame)
        unknown[2] ^= 0xFF  # another nonce: ignored, as unknown slots are
        shm.release_foreign(bytes(unknown))
        with pytest.raises(ValueError):
            shm.release_foreign(frame[:5])
        assert shm.piggyback("/job:worker/replica:0/task:9") is None
    finally:
        shm.forget_incoming(PS, releases)
    assert PS not in shm._incoming
    segment.close()


def _lending_counts(monkeypatch) -> dict:
    """Counts the lendings and resident copies made in this process."""
    counts = {"lent": 0, "resident": 0}
    put, resident = shm.Segment.put, shm.Segment.resident

    def counted_put(self, arr):
        placed = put(self, arr)
        counts["lent"] += bool(placed and placed[0] & shm.LENT)
        return placed

    def counted_resident(self, arr):
        out = resident(self, arr)
        counts["resident"] += out is not None
        return out

    monkeypatch.setattr(shm.Segment, "put", counted_put)
    monkeypatch.setattr(shm.Segment, "resident", counted_resident)
    return counts


def _model(w0, ps, worker):
    with tf.device(ps):
        w = tf.Variable(w0, name="w")
    with tf.device(worker):
        x = tf.placeholder(tf.float32, [32, 300])
        y = tf.matmul(x, w)
        loss = tf.reduce_mean(tf.square(y - 1.0))
        train = tf.train.AdamOptimizer(0.01).minimize(loss)
        queue = tf.FIFOQueue(4, [tf.float32], shapes=[[300, 200]])
        keep = queue.enqueue(tf.identity(w))  # the worker keeps the pushed tensor itself
        kept = queue.dequeue()
    return x, w, loss, train, keep, kept


def test_a_lent_variable_trains_as_in_process_and_what_the_worker_kept_never_changes(
        monkeypatch):
    """Adam on a PS whose weight is lent to the worker: losses and weights equal an
    in-process session's bit for bit; after the first steps every push of the weight is a
    lending, not a copy; a tensor the worker keeps (a queue) across later updates keeps
    the value it had (the update wrote a copy), and a fetched one is the user's to write."""
    counts = _lending_counts(monkeypatch)
    rng = np.random.default_rng(5)
    w0 = (rng.standard_normal((300, 200)) * 0.1).astype(np.float32)
    feeds = [rng.standard_normal((32, 300)).astype(np.float32) for _ in range(4)]
    results = []
    c = Cluster(1, 1)
    try:
        for target in (None, c.target):
            g = tf.Graph()
            with g.as_default():
                x, w, loss, train, keep, kept = _model(
                    w0, target and "/job:ps/task:0", target and "/job:worker/task:0")
                init = tf.global_variables_initializer()
            with tf.Session(target or "", graph=g) as s:
                s.run(init)
                got = [s.run([loss, train], {x: feeds[k % 4]})[0] for k in range(10)]
                lent_before = counts["lent"]
                before = s.run(w)
                s.run(keep)
                for k in range(5):
                    got.append(s.run([loss, train], {x: feeds[k % 4]})[0])
                np.testing.assert_array_equal(s.run(kept), before)
                fetched = s.run(w)
                fetched += 1.0  # a fetch is a copy of its own
                got.append(s.run(w))
                results.append(got)
    finally:
        c.stop()
    for a, b in zip(*results, strict=True):
        np.testing.assert_array_equal(a, b)
    assert counts["lent"] - lent_before >= 5, counts
    assert counts["resident"] <= 4, counts  # moved in once, a copy while the queue held it
