"""lib/_philox.c, the C loops of TensorFlow's random distributions, against lib/philox.py's
NumPy functions (the reference, checked against TF in test_philox.py and the stateless and
stateful random op tests): the same bits for every distribution, dtype, length and counter,
a 128-bit carry included."""

import functools

import ml_dtypes
import numpy as np
import pytest

from tensorflux.lib import philox

pytestmark = pytest.mark.skipif(not philox.native_available(),
                                reason="the C extension is not built")

_SEEDS = [(0, 0), (1, 2), (-7, 2**40), (2**31 - 1, -(2**33))]
_LENGTHS = [0, 1, 3, 4, 5, 7, 257]
_FLOATS = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16]


def _streams():
    for seed in _SEEDS:
        yield philox.key_counter_from_seed(np.array(seed, np.int64))
    yield np.array([7], np.uint64), np.array([2**64 - 3, 5], np.uint64)  # carry at block 3


def _same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("dist", ["uniform", "normal", "truncated_normal"])
@pytest.mark.parametrize("dtype", _FLOATS, ids=lambda d: np.dtype(d).name)
def test_float_distributions_equal_the_numpy_reference(dist, dtype):
    for key, counter in _streams():
        for n in _LENGTHS:
            _same(getattr(philox, dist)(key, counter, n, dtype),
                  getattr(philox, "_np_" + dist)(key, counter, n, dtype))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32, np.uint64])
def test_full_range_integers_equal_the_numpy_reference(dtype):
    for key, counter in _streams():
        for n in _LENGTHS:
            _same(philox.uniform_full_int(key, counter, n, dtype),
                  philox._np_uniform_full_int(key, counter, n, dtype))


@pytest.mark.parametrize("dtype,lo,hi", [
    (np.int32, -5, 17), (np.int32, -2**31, 2**31 - 1), (np.int32, 0, 1),
    (np.int64, -2**40, 2**50), (np.int64, 3, 4), (np.int64, -2**63, 2**63 - 1)])
def test_integer_ranges_equal_the_numpy_reference(dtype, lo, hi):
    for key, counter in _streams():
        for n in _LENGTHS:
            got = philox.uniform_int(key, counter, n, lo, hi, dtype)
            _same(got, philox._np_uniform_int(key, counter, n, lo, hi, dtype))
            assert ((got >= lo) & (got < hi)).all()


@pytest.mark.parametrize("n", [0, 1, 2, 3, 10, 257])
def test_shuffle_permutation_equals_the_numpy_reference(monkeypatch, n):
    for key, counter in _streams():
        fast = philox.shuffle_permutation(key, counter, n)
        with monkeypatch.context() as m:
            m.setattr(philox, "_native", None)
            slow = philox.shuffle_permutation(key, counter, n)
        _same(fast, slow)
        assert sorted(fast.tolist()) == list(range(n))


@pytest.mark.parametrize("swaps", [1, 3, 4, 5, 64])
def test_a_shuffle_in_pieces_is_the_permutation_of_one_pass(monkeypatch, swaps):
    """A long Fisher-Yates pass runs in pieces (the stream positioned at the piece's first
    word, 4 words a block, a 128-bit carry included), `between` called between them."""
    monkeypatch.setattr(philox, "SHUFFLE_SWAPS", swaps)
    for key, counter in _streams():
        for n in (2, 5, 9, 257):
            calls = []
            got = philox.shuffle_permutation(key, counter, n,
                                             between=functools.partial(calls.append, 1))
            _same(got, philox.shuffle_permutation(key, counter, n))
            pieces = -(-(n - 1) // swaps) if n > swaps else 1  # one call for a short pass
            assert len(calls) == pieces - 1


def test_a_stopped_shuffle_stops_between_pieces(monkeypatch):
    monkeypatch.setattr(philox, "SHUFFLE_SWAPS", 4)
    key, counter = next(_streams())

    def stop():
        raise RuntimeError("stopped")

    with pytest.raises(RuntimeError, match="stopped"):
        philox.shuffle_permutation(key, counter, 100, between=stop)


@pytest.mark.parametrize("name,args", [
    ("log1pf", (-np.linspace(0, 0.999, 257, dtype=np.float32),)),
    ("expm1f", (np.linspace(-30, 3, 257, dtype=np.float32),)),
    ("powf", (np.linspace(0, 1e6, 257, dtype=np.float32), np.float32(0.75))),
])
def test_libm_float_in_c_equals_the_ctypes_path(monkeypatch, name, args):
    fast = philox.libm_float(name, *args)
    with monkeypatch.context() as m:
        m.setattr(philox, "_native", None)
        slow = philox.libm_float(name, *args)
    _same(fast, slow)
    assert fast.dtype == np.float32 and fast.shape == args[0].shape
    np.testing.assert_allclose(fast, getattr(np, {"powf": "power"}.get(name, name[:-1]))(
        *(np.float64(a) for a in args)), rtol=1e-6, atol=1e-30)


@pytest.mark.parametrize("name,x", [
    ("log", np.concatenate([(np.arange(1, 5000) + 2.0) / (np.arange(1, 5000) + 1.0),
                            [0.0, -1.0, np.inf, 1e-310, 1.0]])),
    ("exp", np.concatenate([np.linspace(-750, 710, 4001), [-np.inf, np.inf, 0.0]])),
])
def test_libm_double_in_c_equals_the_math_module(monkeypatch, name, x):
    """The log-uniform sampler's probabilities take each log from the C library (TF's
    values): the loop in C gives the math module's value for every input, IEEE results
    (-inf, NaN, inf, 0) where the math module raises."""
    fast = philox.libm_double(name, x)
    with monkeypatch.context() as m:
        m.setattr(philox, "_native", None)
        slow = philox.libm_double(name, x)
    nan = np.isnan(slow)  # (a NaN's sign bit is the C library's business)
    assert (np.isnan(fast) == nan).all()
    _same(fast[~nan], slow[~nan])
    assert fast.dtype == np.float64 and fast.shape == x.shape
    with pytest.raises(ValueError):
        philox._native.libm_double(2, x, np.empty_like(x))


@pytest.mark.parametrize("weights", [
    np.zeros(0, np.float32), np.zeros(1, np.float32), np.zeros(3, np.float32),
    np.float32([0, 2, 0, 5, 1e-30, 3]),
    (np.random.default_rng(4).zipf(1.5, 5000) % 997).astype(np.float32) ** np.float32(0.75),
])
def test_alias_table_in_c_equals_the_numpy_reference(weights):
    prob, alt = philox.alias_table(weights)
    ref_prob, ref_alt = philox._np_alias_table(weights)
    _same(prob, ref_prob)
    _same(alt, ref_alt)
    assert prob.dtype == np.float32 and alt.dtype == np.int64


def test_truncated_normals_stay_inside_two_and_normals_look_normal():
    key, counter = philox.key_counter_from_seed(np.array([3, 4]))
    t = philox.truncated_normal(key, counter, 100_000, np.float32)
    assert np.abs(t).max() < 2.0
    n = philox.normal(key, counter, 100_000, np.float64)
    assert abs(n.mean()) < 0.02 and abs(n.std() - 1.0) < 0.02


def test_bad_calls_raise_value_error():
    out = np.empty(4, np.float32)
    with pytest.raises(ValueError):
        philox._native.fill(99, 1, 0, 0, out)
    with pytest.raises(ValueError):
        philox._native.fill(8, 1, 0, 0, np.empty(4, np.uint32), 0, 0)  # an empty range
    with pytest.raises(ValueError):
        philox._native.fill(3, 1, 0, 0, out, 40)  # mantissa bits out of range
    with pytest.raises(TypeError):
        philox._native.fill(1, 1, 0, 0, b"read-only")
    with pytest.raises(ValueError):  # mismatched lengths
        philox._native.libm_float(0, np.zeros(3, np.float32), np.zeros(3, np.float32), out)
    with pytest.raises(ValueError):
        philox._native.alias_table(out, np.empty(4, np.float32), np.empty(3, np.int64))
