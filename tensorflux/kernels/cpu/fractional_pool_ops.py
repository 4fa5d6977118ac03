"""CPU kernels of FractionalMaxPool, FractionalAvgPool and their gradients
(ops/fractional_pool_ops.py).

A pooling sequence for an axis of length n pooled to m = floor(n / ratio) outputs is the
cumulative sum, from 0, of m region sizes, each k = n // m or k + 1. When m divides n every
size is k. Otherwise the random mode shuffles (n % m) sizes k + 1 among the rest; the
pseudo-random mode takes boundaries ceil(alpha * (i + u)) - 1 with alpha = n / m and one
uniform offset u, bounded so every size stays k or k + 1 (Graham's construction). Region i
covers [seq[i], seq[i + 1]) and, when overlapping, also seq[i + 1] (clipped to n - 1).

The draws come from TensorFlow's Philox stream (lib/philox.py's WordStream over reservations
of a random_ops.GeneratorState, as TF's SimplePhilox) in TensorFlow's
order (rows, then columns; a Fisher-Yates shuffle taking word % remaining, or one double for
the offset), so for the same seed and seed2 the sequences equal TensorFlow's. With
deterministic=True each run starts the stream afresh (same regions every run); otherwise
each run seeds it from OS entropy.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels import interrupt
from tensorflux.kernels.cpu._nn_common import _invalid
from tensorflux.kernels.cpu.random_ops import GeneratorState
from tensorflux.kernels.registry import kernel_factory
from tensorflux.lib import philox


def _words(gen, n: int) -> philox.WordStream:
    """A reservation of n 32-bit words of the stream (TF's ReserveSamples32(n))."""
    return philox.WordStream(*gen.reserve(n, 0.25))


def _pseudo_random_sizes(n, m, gen):
    alpha = n / m
    k = n // m
    u_max = min((k + 2) / alpha - 1, (n + 1 - k) / alpha - (m - 1))
    u = _words(gen, 2).rand_double() * u_max
    cum = np.empty(m + 1, dtype=np.int64)
    cum[0], cum[m] = 1, n + 1
    cum[1:m] = np.ceil(alpha * (np.arange(1, m) + u)).astype(np.int64)
    return np.diff(cum)


def _shuffled_sizes(n, m, gen):
    sizes = [n // m + (1 if i < n % m else 0) for i in range(m)]
    words = _words(gen, m).take(max(m - 1, 0)).tolist()
    for i in range(m - 1):
        j = i + words[i] % (m - i)
        sizes[i], sizes[j] = sizes[j], sizes[i]
    return np.array(sizes, dtype=np.int64)


def pooling_sequence(n, m, gen, pseudo_random):
    """The m + 1 boundaries of m regions tiling an axis of length n, drawn from the Philox
    stream `gen`."""
    if n % m == 0:
        sizes = np.full(m, n // m, dtype=np.int64)
    elif pseudo_random:
        sizes = _pseudo_random_sizes(n, m, gen)
    else:
        sizes = _shuffled_sizes(n, m, gen)
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


def _regions(seq, n, overlapping):
    """(start, inclusive end) of each region of an axis of length n."""
    starts = seq[:-1]
    ends = seq[1:] if overlapping else seq[1:] - 1
    return starts, np.minimum(ends, n - 1)


def _check_sequences(rows, cols, x_shape):
    for name, seq, n in (("row", rows, x_shape[1]), ("col", cols, x_shape[2])):
        if seq.ndim != 1 or len(seq) < 2 or seq[0] != 0 or np.any(np.diff(seq) < 1) \
                or seq[-1] > n:
            raise _invalid(f"{name}_pooling_sequence {seq.tolist()} does not tile an axis "
                           f"of length {n}")


def _pool(x, rows, cols, overlapping, reduce):
    """`reduce(window [N, h, w, C]) -> [N, C]` over every region."""
    r0, r1 = _regions(rows, x.shape[1], overlapping)
    c0, c1 = _regions(cols, x.shape[2], overlapping)
    out = np.empty((x.shape[0], len(r0), len(c0), x.shape[3]), dtype=x.dtype)
    for i in range(len(r0)):
        interrupt.check()
        for j in range(len(c0)):
            out[:, i, j, :] = reduce(x[:, r0[i]:r1[i] + 1, c0[j]:c1[j] + 1, :])
    return out


def _output_sizes(x, ratio, what):
    if x.ndim != 4:
        raise _invalid(f"input must be 4-dimensional, got {list(x.shape)}")
    if ratio[0] != 1 or ratio[3] != 1:
        raise errors.UnimplementedError(
            None, None, f"Fractional {what} pooling is not yet supported on the batch nor "
                        "channel dimension.")
    sizes = []
    for i in (1, 2):
        m = int(np.floor(x.shape[i] / ratio[i]))
        if m <= 0:
            raise _invalid(f"Pooling ratio is higher than input dimension size for dimension "
                           f"{i}. Input dim size: {x.shape[i]} pooling ratio: {ratio[i]:g}")
        sizes.append(m)
    return sizes


def _fractional_pool_factory(what, reduce):
    def factory(node):
        a = node.attrs
        ratio, pseudo, overlapping = a["pooling_ratio"], a["pseudo_random"], a["overlapping"]
        seed, seed2 = a["seed"], a["seed2"]
        if a["deterministic"] and seed == 0 and seed2 == 0:
            seed, seed2 = (int(v) for v in np.random.default_rng().integers(1, 2**62, 2))

        def compute(ctx, x):
            if not a["deterministic"] and (seed or seed2):
                raise _invalid("Both seed and seed2 should be 0 if deterministic is false.")
            out_rows, out_cols = _output_sizes(x, ratio, what)
            if a["deterministic"]:
                gen = GeneratorState(seed, seed2)
            else:  # seeded from the OS
                gen = GeneratorState(0, 0)
            rows = pooling_sequence(x.shape[1], out_rows, gen, pseudo)
            cols = pooling_sequence(x.shape[2], out_cols, gen, pseudo)
            return _pool(x, rows, cols, overlapping, reduce), rows, cols

        return compute

    return factory


def _max_window(w):
    return w.max(axis=(1, 2))


def _mean_window(w):
    if w.dtype.kind == "f":
        return w.mean(axis=(1, 2), dtype=np.float64).astype(w.dtype)
    # Integer division truncating toward zero, as TF's kernel divides.
    return np.trunc(w.sum(axis=(1, 2)) / (w.shape[1] * w.shape[2])).astype(w.dtype)


kernel_factory("FractionalMaxPool", expensive=True)(_fractional_pool_factory("max",
                                                                              _max_window))
kernel_factory("FractionalAvgPool", expensive=True)(_fractional_pool_factory("average",
                                                                              _mean_window))


@kernel_factory("FractionalMaxPoolGrad", expensive=True)
def _fractional_max_pool_grad(node):
    overlapping = node.attrs["overlapping"]

    def compute(ctx, x, y, dy, rows, cols):
        if x.ndim != 4:
            raise _invalid(f"orig_input must be 4-dimensional, got {list(x.shape)}")
        _check_sequences(rows, cols, x.shape)
        r0, r1 = _regions(rows, x.shape[1], overlapping)
        c0, c1 = _regions(cols, x.shape[2], overlapping)
        want = (x.shape[0], len(r0), len(c0), x.shape[3])
        if dy.shape != want:
            raise _invalid(f"out_backprop has shape {list(dy.shape)}, expected {list(want)}")
        dx = np.zeros(x.shape, dtype=dy.dtype)
        batch, chan = np.ogrid[:x.shape[0], :x.shape[3]]
        for i in range(len(r0)):
            interrupt.check()
            for j in range(len(c0)):
                win = x[:, r0[i]:r1[i] + 1, c0[j]:c1[j] + 1, :]
                width = win.shape[2]
                # The first maximum in row-major order takes the whole gradient.
                flat = win.reshape(x.shape[0], -1, x.shape[3]).argmax(axis=1)
                hh, ww = r0[i] + flat // width, c0[j] + flat % width
                np.add.at(dx, (batch, hh, ww, chan), dy[:, i, j, :])
        return dx

    return compute


@kernel_factory("FractionalAvgPoolGrad", expensive=True)
def _fractional_avg_pool_grad(node):
    overlapping = node.attrs["overlapping"]

    def compute(ctx, shape, dy, rows, cols):
        if shape.shape != (4,):
            raise _invalid(f"orig_input_tensor_shape must be a 4-vector, got {shape.tolist()}")
        shape = tuple(int(v) for v in shape)
        _check_sequences(rows, cols, shape)
        r0, r1 = _regions(rows, shape[1], overlapping)
        c0, c1 = _regions(cols, shape[2], overlapping)
        want = (shape[0], len(r0), len(c0), shape[3])
        if dy.shape != want:
            raise _invalid(f"out_backprop has shape {list(dy.shape)}, expected {list(want)}")
        dx = np.zeros(shape, dtype=np.float64)
        for i in range(len(r0)):
            interrupt.check()
            for j in range(len(c0)):
                count = (r1[i] - r0[i] + 1) * (c1[j] - c0[j] + 1)
                dx[:, r0[i]:r1[i] + 1, c0[j]:c1[j] + 1, :] += \
                    dy[:, i, j, None, None, :].astype(np.float64) / count
        return dx.astype(dy.dtype)

    return compute
