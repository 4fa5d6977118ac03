"""tensorflux/lib/philox.py: Philox4x32-10 known answers (Random123's test vectors) and the
glibc logf/sincosf emulation against the C library itself."""

import ctypes
import ctypes.util

import numpy as np
import pytest

from tensorflux.lib import philox

_KAT = [  # (counter, key, output) from the Random123 distribution's kat_vectors
    ([0, 0, 0, 0], [0, 0], [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
    ([0xFFFFFFFF] * 4, [0xFFFFFFFF] * 2, [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
    ([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0],
     [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]),
]


@pytest.mark.parametrize("counter,key,expected", _KAT)
def test_philox_known_answers(counter, key, expected):
    out = philox.philox(np.array(counter, np.uint32).reshape(4, 1),
                        np.array(key, np.uint32))
    assert out[:, 0].tolist() == expected


def test_blocks_carry_into_the_high_counter_half():
    key, counter = np.array([7], np.uint64), np.array([2**64 - 1, 5], np.uint64)
    two = philox.blocks(key, counter, 2)
    nxt = philox.blocks(key, np.array([0, 6], np.uint64), 1)
    np.testing.assert_array_equal(two[1], nxt[0])


def _libm():
    path = ctypes.util.find_library("m")
    if path is None:
        pytest.skip("no C math library")
    lib = ctypes.CDLL(path)
    for name in ("logf", "sinf", "cosf"):
        getattr(lib, name).restype = ctypes.c_float
        getattr(lib, name).argtypes = [ctypes.c_float]
    return lib


def _uniform_floats(n, seed):
    bits = np.random.default_rng(seed).integers(0, 2**23, n).astype(np.uint32)
    return philox.uint32_to_float(bits)


def test_logf_equals_the_c_library():
    lib = _libm()
    x = np.maximum(_uniform_floats(20000, 0), np.float32(1e-7))
    want = np.array([lib.logf(float(v)) for v in x], np.float32)
    np.testing.assert_array_equal(philox.logf(x), want)


def test_sincosf_equals_the_c_library():
    lib = _libm()
    v = (2.0 * np.pi * _uniform_floats(20000, 1).astype(np.float64)).astype(np.float32)
    s, c = philox.sincosf(v)
    np.testing.assert_array_equal(s, np.array([lib.sinf(float(a)) for a in v], np.float32))
    np.testing.assert_array_equal(c, np.array([lib.cosf(float(a)) for a in v], np.float32))


def test_word_stream_draws_in_pieces_equal_one_draw_and_stay_small():
    """Draws split anywhere give the one draw's values (a sampler checks its step between
    blocks: kernels/cpu/candidate_sampling_ops.py `_draw`), and the words already consumed
    are dropped as more are made."""
    key, counter = np.array([7], np.uint64), np.array([3, 1], np.uint64)
    whole = philox.WordStream(key, counter).uniform(20_000, 1000, wide=True)
    words = philox.WordStream(key, counter)
    pieces, sizes = [], [1, 2, 3, 61, 997, 4096, 14840]
    for n in sizes:
        pieces.append(words.uniform(n, 1000, wide=True))
        assert words.buf.size <= 4 * (2 * n + 64) + 4
    np.testing.assert_array_equal(np.concatenate(pieces), whole)
    taken = philox.WordStream(key, counter)
    first = taken.take(4_097)
    rest = taken.take(10_000)
    np.testing.assert_array_equal(np.concatenate([first, rest]),
                                  philox.WordStream(key, counter).take(14_097))
