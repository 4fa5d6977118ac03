"""Histograms of values over TensorFlow's default buckets (what HistogramSummary records).

The bucket edges are fixed: 0, and on each side of it edges that start at 1e-12 and grow by
a factor of 1.1 (repeated double multiplication) while below 1e20, then the largest double.
A value `v` falls in the first bucket whose edge is greater than `v`. When a histogram is
written to a `HistogramProto`, each bucket holding values is kept with its edge, and each
run of empty buckets becomes one empty bucket carrying the run's last edge. `min`, `max`,
`sum` and `sum_squares` are accumulated in double precision in the order of the values.
"""

from __future__ import annotations

import sys

import numpy as np

__all__ = ["default_bucket_limits", "bucket_indices", "fill_histogram_proto"]

_DBL_MAX = sys.float_info.max


def _bucket_limits() -> np.ndarray:
    positive = []
    v = 1.0e-12
    while v < 1.0e20:
        positive.append(v)
        v *= 1.1
    positive.append(_DBL_MAX)
    negative = [-x for x in reversed(positive)]
    return np.array(negative + [0.0] + positive, dtype=np.float64)


_LIMITS = _bucket_limits()
_LIMITS.flags.writeable = False
_POSITIVE = (len(_LIMITS) - 1) // 2  # edges above 0 (also below it); _LIMITS[_POSITIVE] == 0
# Value v is in bucket b when _LOW[b] <= v < _HIGH[b] (the edges with -inf before them and
# +inf after them).
_LOW = np.concatenate([[-np.inf], _LIMITS])
_HIGH = np.concatenate([_LIMITS, [np.inf]])
# How many positive edges are <= a, for 1e-12 <= a < 1e20: about log(a / 1e-12) / log(1.1)
# + 1, i.e. log(a) * _SLOPE + _OFFSET.
_SLOPE = 1.0 / float(np.log(1.1))
_OFFSET = 12.0 * float(np.log(10.0)) * _SLOPE + 1.0


def default_bucket_limits() -> np.ndarray:
    """The right edges of the default buckets, ascending (read-only)."""
    return _LIMITS


def bucket_indices(v: np.ndarray) -> np.ndarray:
    """For each float64 value, the index of the first edge greater than it (the edge count
    when none is; no NaN). The same as a binary search over the edges, an order of
    magnitude faster: a guess from the logarithm, checked against the edges (a binary
    search for the few it misses)."""
    with np.errstate(divide="ignore"):
        k = np.floor(np.log(np.abs(v)) * _SLOPE + _OFFSET)
    k = np.clip(k, 0, _POSITIVE - 1).astype(np.intp)  # log(0) = -inf: 0
    b = np.where(v >= 0, _POSITIVE + 1 + k, _POSITIVE - k)
    # The guess is off only for values within ~1e-13 (relative) of an edge, or beyond the
    # last finite edge.
    wrong = (_LOW[b] > v) | (_HIGH[b] <= v)
    if wrong.any():
        b[wrong] = np.searchsorted(_LIMITS, v[wrong], side="right")
    return b


def fill_histogram_proto(proto, values) -> None:
    """Writes the histogram of `values` into `proto` (a HistogramProto, cleared first).

    Args:
      proto: a `HistogramProto` message.
      values: an array of finite real numbers (any shape; converted to float64).
    """
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    proto.Clear()
    n = len(_LIMITS)
    if v.size:
        index = bucket_indices(v)
        np.minimum(index, n - 1, out=index)  # the largest double itself: the last bucket
        counts = np.bincount(index, minlength=n).astype(np.float64)
        proto.min = float(v.min())
        proto.max = float(v.max())
        proto.sum = float(np.add.accumulate(v)[-1])
        proto.sum_squares = float(np.add.accumulate(v * v)[-1])
    else:
        counts = np.zeros(n, dtype=np.float64)
        proto.min = _DBL_MAX
        proto.max = -_DBL_MAX
        proto.sum = 0.0
        proto.sum_squares = 0.0
    proto.num = float(v.size)
    filled = counts > 0
    # Keep every filled bucket and the last bucket of each run of empty ones.
    keep = filled | np.append(filled[1:], True)
    proto.bucket_limit.extend(_LIMITS[keep].tolist())
    proto.bucket.extend(counts[keep].tolist())
