"""Queue resources (tensorflux/kernels/queues.py) driven directly: the lock discipline that
leaves an operation finding the lock taken to the lock's holder, and many threads at once."""

import sys
import threading

import numpy as np
import pytest

from tensorflux.framework import dtypes, errors
from tensorflux.kernels import queues
from tensorflux.runtime.cancellation import CancellationManager


def _fifo(capacity=10):
    return queues.FIFOQueue("q", [dtypes.int64], [()], capacity)


def _shuffle(capacity=10, min_after=0):
    return queues.RandomShuffleQueue("s", [dtypes.int64], [()], capacity, min_after, 1, 0)


def test_operations_finding_the_lock_taken_are_run_by_its_holder_in_order():
    q = _fifo()
    got = []
    q._lock.acquire()  # as if another thread were inside an operation
    q.enqueue(None, q.own([np.int64(1)]), lambda r: got.append(("enq", r)))
    q.enqueue(None, q.own([np.int64(2)]), lambda r: got.append(("enq", r)))
    q.dequeue(None, lambda r: got.append(("deq", int(r[0]))))
    assert got == [] and len(q._deferred) == 3  # nothing ran, no thread waited
    q._release([])  # the holder lets go: it runs what was left to it first
    assert got == [("enq", None), ("enq", None), ("deq", 1)]
    assert not q._lock.locked() and q.size() == 1


def test_a_deferred_wait_is_cancellable_and_a_deferred_close_fails_it():
    q = _fifo(capacity=1)
    q.enqueue(None, q.own([np.int64(0)]), lambda r: None)
    cm = CancellationManager()
    got = []
    q._lock.acquire()
    q.enqueue(cm, q.own([np.int64(1)]), got.append)  # will wait: the queue is full
    q.close(None, True, lambda r: got.append("closed"))
    q._release([])
    assert isinstance(got[0], errors.CancelledError) and got[1] == "closed"
    cm.start_cancel()  # already finished: nothing more happens
    assert len(got) == 2


@pytest.fixture
def switch_often():
    """Threads switch every microsecond, so holders of the queue's lock are often
    interrupted and other threads find it taken (the deferred path)."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def _hammer(q, producers, per_producer, consumers, batch):
    """Enqueues distinct values from `producers` threads (one element per call, as a queue
    runner does), dequeues batches from `consumers` threads until the queue is closed and
    empty; returns everything dequeued."""
    seen, lock = [], threading.Lock()
    producers_done = threading.Barrier(producers + 1)

    def produce(k):
        for i in range(per_producer):
            ev, box = threading.Event(), []
            q.enqueue(None, q.own([np.int64(k * per_producer + i)]),
                      lambda r, ev=ev, box=box: (box.append(r), ev.set()))
            assert ev.wait(20) and box == [None]
        producers_done.wait(20)

    def consume():
        while True:
            ev, box = threading.Event(), []
            q.dequeue_many(None, batch, True, lambda r, ev=ev, box=box: (box.append(r),
                                                                         ev.set()))
            assert ev.wait(20)
            if isinstance(box[0], errors.OutOfRangeError):
                return
            with lock:
                seen.extend(box[0][0].tolist())

    threads = [threading.Thread(target=produce, args=(k,), daemon=True)
               for k in range(producers)]
    threads += [threading.Thread(target=consume, daemon=True) for _ in range(consumers)]
    for t in threads:
        t.start()
    producers_done.wait(30)
    q.close(None, False, lambda r: None)
    for t in threads:
        t.join(30)
        assert not t.is_alive()
    return seen


def test_many_threads_lose_and_repeat_nothing_fifo(switch_often):
    seen = _hammer(_fifo(capacity=7), producers=12, per_producer=300, consumers=4, batch=5)
    assert sorted(seen) == list(range(3600))


def test_many_threads_lose_and_repeat_nothing_shuffle(switch_often):
    q = _shuffle(capacity=30, min_after=10)
    seen = _hammer(q, producers=12, per_producer=300, consumers=4, batch=8)
    assert sorted(seen) == list(range(3600))
    assert q.size() == 0 and not q._lock.locked() and not q._deferred
