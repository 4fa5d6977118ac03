"""The C loops of the sparse kernels' checks (tensorflux/kernels/cpu/native.py): the range
check of gather and scatter indices against NumPy's."""

from __future__ import annotations

import numpy as np
import pytest

from tensorflux.kernels.cpu import native

needs_native = pytest.mark.skipif(not native.available(),
                                  reason="the C extension is not built")

# (indices, limit)
_RANGES = [([0, 4, 2], 5), ([0, 5, 2], 5), ([-1, 0], 5), ([], 0), ([], 3), ([0], 0),
           ([2**31 - 1], 2**31), ([-(2**31)], 2**31), ([[1, 2], [3, 4]], 5),
           ([[1, 2], [3, 5]], 5), (list(range(1000)), 1000), (list(range(1001)), 1000)]


@needs_native
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("indices, limit", _RANGES)
def test_indices_in_range_agrees_with_numpy(dtype, indices, limit):
    x = np.array(indices, dtype)
    want = bool(np.all((x >= 0) & (x < limit)))
    assert native.indices_in_range(x, limit) is want


@needs_native
def test_indices_in_range_leaves_other_arrays_to_the_caller():
    x = np.arange(10, dtype=np.int64)
    assert native.indices_in_range(x[::2], 100) is False  # not contiguous
    assert native.indices_in_range(x.astype(np.int16), 100) is False
    assert native.indices_in_range(x.astype(np.uint64), 100) is False
    assert native.indices_in_range(list(range(3)), 100) is False
    assert native.indices_in_range(x, -1) is False
    with pytest.raises(ValueError, match="int32 or int64"):
        native._mod.in_range(np.zeros(3, np.float64), 5)
