"""FarmHash Fingerprint128 (tensorflux/lib/hashing.py), pinned to TensorFlow's values (its
SdcaFprint, as unsigned halves; tests/ops/test_sdca_ops.py compares many more strings with
the oracle): the short path (< 16 bytes), CityMurmur (< 128) and the 128-byte loop with its
32-byte tail chunks."""

import numpy as np
import pytest

from tensorflux.lib.hashing import fingerprint128


def _u(v: int) -> int:
    return int(np.int64(v).view(np.uint64))


@pytest.mark.parametrize("data, low, high", [
    (b"", _u(4463240938071824939), _u(4374473821787594281)),
    (b"a", _u(7969074168056553668), _u(5955762262185338209)),
    (b"hello world", _u(2911873174415414509), _u(6996746284954752264)),
    (b"x" * 100, _u(-2678948576289439314), _u(-1323440425602353700)),
    (b"x" * 300, 13684524338801613069, 11037234928023257419),
    (bytes(range(256)) * 2, 10854872197597634834, 8522793670436570599),
])
def test_fingerprint128_pinned(data, low, high):
    assert fingerprint128(data) == (low, high)
