"""CPU kernel of tensorflux/ops/random_index_shuffle_ops.py: TensorFlow's cycle-walking
cipher, vectorised over the outputs.

The cipher (TensorFlow's random_index_shuffle): a block of B bits, B the smallest even
number >= ceil(log2(max_index)) and at least 16, is split into two words of W = B/2 bits.
Round keys: the seed's three words (cut to W bits), then, up to `rounds` keys,
k[i] = c ^ (z & 1) ^ k[i-3] ^ rotr(k[i-1], 3) ^ rotr(k[i-1], 4) with the constants c and z
cut to W bits (z shifts right once per key). Each pair of keys is one double round of
Simon's Feistel step, f(x) = (rotl(x, 1) & rotl(x, 8)) ^ rotl(x, 2). Encrypting maps the
2^B block values to themselves bijectively; re-encrypting until the value is <= max_index
(cycle walking) restricts that bijection to [0, max_index].
"""

from __future__ import annotations

import math

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels.registry import kernel_factory

_C = 0xFFFFFFFC
_Z = 0x7369F885192C0EF5
_MIN_BLOCK = 16
# Walks whose expected length (2^B / (max_index + 1)) passes this run on a table of the
# whole block instead (only 16-bit blocks of small max_index get there).
_TABLE_RATIO = 64


def block_bits(max_index: int) -> int:
    """The cipher's block size for `max_index` > 0, as TensorFlow computes it (in double)."""
    bits = math.ceil(math.log2(float(max_index)))
    return min(max(bits + bits % 2, _MIN_BLOCK), 64)


class _Simon:
    """The cipher on W-bit words, with one key schedule per element (arrays of uint64)."""

    def __init__(self, w: int, keys: np.ndarray, rounds: int):
        self.w = np.uint64(w)
        self.mask = np.uint64((1 << w) - 1)
        c, z = _C & ((1 << w) - 1), _Z & ((1 << w) - 1)
        rk = [keys[:, i] & self.mask for i in range(3)]
        for i in range(3, rounds):
            rk.append(np.uint64(c ^ (z & 1)) ^ rk[i - 3] ^ self._rotr(rk[i - 1], 3)
                      ^ self._rotr(rk[i - 1], 4))
            z >>= 1
        self.round_keys = np.stack(rk[:rounds], axis=1)

    def _rotl(self, x, r):
        return ((x << np.uint64(r)) & self.mask) | (x >> (self.w - np.uint64(r)))

    def _rotr(self, x, r):
        return (x >> np.uint64(r)) | ((x << (self.w - np.uint64(r))) & self.mask)

    def _f(self, x):
        return (self._rotl(x, 1) & self._rotl(x, 8)) ^ self._rotl(x, 2)

    def encrypt(self, x: np.ndarray, rows) -> np.ndarray:
        """x encrypted once with the keys of `rows` (an index into the schedules)."""
        keys = self.round_keys[rows]
        left = (x >> self.w) & self.mask
        right = x & self.mask
        for i in range(0, keys.shape[1], 2):
            left = left ^ self._f(right) ^ keys[:, i]
            right = right ^ self._f(left) ^ keys[:, i + 1]
        return (left << self.w) | right


def _walk(cipher: _Simon, index: np.ndarray, max_index: np.ndarray) -> np.ndarray:
    """Cycle walking element by element (vectorised): each value encrypted until in range."""
    out = index.copy()
    live = np.arange(index.size)
    while live.size:
        out[live] = cipher.encrypt(out[live], live)
        live = live[out[live] > max_index[live]]
    return out


def _walk_by_table(cipher: _Simon, bits: int, index, max_index, keys) -> np.ndarray:
    """Cycle walking through the whole block's permutation, one table per distinct key:
    pointer doubling finds every value's first successor in range in `bits` passes."""
    out = np.empty_like(index)
    block = np.arange(1 << bits, dtype=np.uint64)
    groups = np.unique(np.stack([keys[:, 0], keys[:, 1], keys[:, 2], max_index], axis=1),
                       axis=0, return_inverse=True)[1].reshape(-1)
    for g in np.unique(groups):
        rows = np.flatnonzero(groups == g)
        limit = max_index[rows[0]]
        nxt = cipher.encrypt(block, np.full(block.size, rows[0]))
        done = nxt <= limit
        for _ in range(bits):
            if done.all():
                break
            todo = ~done
            step = nxt[todo]
            nxt[todo], done[todo] = nxt[step], done[step]
        out[rows] = nxt[index[rows] & np.uint64((1 << bits) - 1)]
    return out


def index_shuffle(index: np.ndarray, keys: np.ndarray, max_index: np.ndarray,
                  rounds: int) -> np.ndarray:
    """TensorFlow's shuffled position of each `index` (uint64 vectors of one length, `keys`
    [n, 3] uint64 words), every index already checked to lie in [0, max_index]."""
    out = np.zeros_like(index)
    bits = np.array([block_bits(int(m)) if m else 0 for m in max_index.tolist()])
    for b in np.unique(bits[bits > 0]).tolist():
        rows = np.flatnonzero(bits == b)
        cipher = _Simon(b // 2, keys[rows], rounds)
        part_index, part_max = index[rows], max_index[rows]
        if (1 << b) > _TABLE_RATIO * (int(part_max.min()) + 1):
            out[rows] = _walk_by_table(cipher, b, part_index, part_max, keys[rows])
        else:
            out[rows] = _walk(cipher, part_index, part_max)
    return out


def _check_shapes(index, seed, max_index):
    n = max(index.size, max_index.size, seed.size // 3)
    if not (index.ndim == 0 or (index.ndim == 1 and index.shape[0] == n)):
        raise errors.InvalidArgumentError(None, None, "Index bust be a scalar or vector.")
    if not ((seed.ndim == 1 and seed.shape[0] == 3)
            or (seed.ndim == 2 and seed.shape[0] == n and seed.shape[1] == 3)):
        raise errors.InvalidArgumentError(
            None, None, f"Seed must be a vector of size [3] or a matrix of size [{n}, 3] but "
            f"got [{','.join(map(str, seed.shape))}].")
    if not (max_index.ndim == 0 or (max_index.ndim == 1 and max_index.shape[0] == n)):
        raise errors.InvalidArgumentError(
            None, None, "Maxval must be a scalar or a vector of the same size as index but "
            f"got [{','.join(map(str, max_index.shape))}]")
    return n


def _check_values(index, max_index):
    """TensorFlow's order: a negative index, a negative max_index, then index > max_index."""
    for name, values in (("index", index), ("max_index", max_index)):
        if values.dtype.kind == "i" and values.size and values.min() < 0:
            raise errors.InvalidArgumentError(
                None, None, f"{name} must be >= 0 but was {values.min()}")
    above = np.flatnonzero(index > max_index)
    if above.size:
        i = above[0]
        raise errors.InvalidArgumentError(
            None, None, f"max_index must be >= index, but {max_index[i]} < {index[i]}")


@kernel_factory("RandomIndexShuffle")
def _random_index_shuffle(node):
    rounds = node.attrs["rounds"]

    def compute(ctx, index, seed, max_index):
        # TensorFlow only asserts this (its cipher reads past the round keys otherwise).
        if rounds < 4 or rounds % 2:
            raise errors.InvalidArgumentError(
                None, None, f"rounds must be an even number of at least 4, but is {rounds}")
        n = _check_shapes(index, seed, max_index)
        all_scalar = index.ndim == 0 and seed.ndim == 1 and max_index.ndim == 0
        idx = np.broadcast_to(index.reshape(-1), (n,))
        top = np.broadcast_to(max_index.reshape(-1), (n,))
        _check_values(idx, top)
        words = (seed.reshape(-1, 3).astype(np.int64).view(np.uint64)
                 & np.uint64(0xFFFFFFFF))
        words = np.broadcast_to(words, (n, 3))
        out = index_shuffle(idx.astype(np.uint64), words, top.astype(np.uint64), rounds)
        out = out.astype(index.dtype)
        return out.reshape(index.shape) if all_scalar else out

    return compute
