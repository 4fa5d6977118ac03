"""A device's memory counters (runtime/device.py MemoryTracker): the C extension's Tracker
against the Python reference, operation for operation; many threads; trackers that go away
before their arrays."""

import gc

import numpy as np
import pytest

from tensorflux.kernels.cpu import native
from tensorflux.runtime.device import MemoryTracker, _PyTracker
from tests import threads_util

needs_native = pytest.mark.skipif(getattr(native._mod, "Tracker", None) is None,
                                  reason="the C extension is not built")


def _trackers():
    out = [("python", MemoryTracker("cpu_0", _PyTracker()))]
    if getattr(native._mod, "Tracker", None) is not None:
        out.append(("c", MemoryTracker("cpu_0", native._mod.Tracker(np.ndarray))))
    return out


def _script(tracker):
    """One sequence of counts and deaths; the stats after each step."""
    seen = []
    a = np.zeros(1000, np.float32)  # 4000 bytes
    b = np.zeros((10, 10))  # 800
    seen.append(tracker.track(a))
    seen.append(tracker.track(a))  # counted once
    seen.append(tracker.track(a[2:]))  # a view: nothing
    seen.append(tracker.track(b.T))  # a view
    seen.append(tracker.track(5.0))  # not an array
    seen.append(tracker.track(np.float32(3)))  # a NumPy scalar: not an ndarray
    seen.append(tracker.track(b))
    seen.append(tracker.stats())
    del a
    seen.append(tracker.stats())
    tracker.reset_peak()
    seen.append(tracker.stats())
    c = np.empty(12345, np.uint8)
    seen.append(tracker.track(c))
    seen.append(tracker.track(np.empty(0)))  # owns no bytes: counted as 0 bytes
    seen.append(tracker.stats())
    del b, c
    seen.append(tracker.stats())
    seen.append((tracker.bytes_in_use, tracker.peak_bytes_in_use, tracker.num_allocs,
                 tracker.largest_alloc_size))
    return seen


def test_the_c_counters_do_what_the_python_ones_do():
    results = {name: _script(t) for name, t in _trackers()}
    want = results["python"]
    assert want[:7] == [4000, 0, 0, 0, 0, 0, 800]
    assert want[7] == {"bytes_in_use": 4800, "peak_bytes_in_use": 4800, "num_allocs": 2,
                       "largest_alloc_size": 4000}
    assert want[8]["bytes_in_use"] == 800 and want[8]["peak_bytes_in_use"] == 4800
    assert want[9]["peak_bytes_in_use"] == 800
    assert want[-1] == (0, 13145, 4, 12345)
    for name, got in results.items():
        assert got == want, name


@pytest.mark.parametrize("name", ["python", "c"])
def test_many_threads_count_every_array_once(name):
    trackers = dict(_trackers())
    if name not in trackers:
        pytest.skip("the C extension is not built")
    tracker = trackers[name]
    shared = [np.ones(256, np.float64)]  # every thread tracks it too: counted once
    errors = []

    def work(seed):
        try:
            rng = np.random.default_rng(seed)
            kept = []
            for _ in range(400):
                x = np.empty(int(rng.integers(1, 300)), np.float32)
                assert tracker.track(x) == x.nbytes
                tracker.track(shared[0])
                if rng.random() < 0.3:
                    kept.append(x)
            kept.clear()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads_util.join(*(threads_util.start(work, k) for k in range(8)), timeout=60)
    assert not errors
    assert tracker.num_allocs == 8 * 400 + 1
    assert tracker.bytes_in_use == shared[0].nbytes
    shared.clear()
    assert tracker.bytes_in_use == 0


@needs_native
def test_a_tracker_can_go_before_its_arrays():
    kind = native._mod.Tracker
    gc.collect()
    before = sum(type(o) is kind for o in gc.get_objects())
    tracker = kind(np.ndarray)
    arrays = [np.empty(100) for _ in range(10)]
    for a in arrays:
        tracker.track(a)
    assert tracker.bytes_in_use == 8000
    assert sum(type(o) is kind for o in gc.get_objects()) == before + 1
    del tracker
    gc.collect()  # its cycle through the weak references' callback is collected
    assert sum(type(o) is kind for o in gc.get_objects()) == before
    arrays.clear()  # dying arrays find no tracker: nothing happens
    gc.collect()


@needs_native
def test_the_c_tracker_checks_its_argument():
    with pytest.raises(TypeError):
        native._mod.Tracker("ndarray")
    tracker = native._mod.Tracker(np.ndarray)
    with pytest.raises(TypeError):
        tracker.track()
    assert tracker.track(object()) == 0
