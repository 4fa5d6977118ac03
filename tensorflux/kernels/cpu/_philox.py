"""TensorFlow's Philox4x32-10 counter-based generator (Salmon et al., 2011), as its kernels
draw from it: `PhiloxRandom(seed_lo, seed_hi)` keys on seed_lo and starts its 128-bit
counter at seed_hi << 64; `GuardedPhiloxRandom.ReserveSamples32(n)` hands out a copy and
skips ceil(n / 4) blocks; `SingleSampleAdapter` returns a block's four words one by one.

Pure Python integers: for kernels that draw a handful of numbers per run (the fractional
pools' pooling sequences), where matching TensorFlow's values for a seed matters more than
speed.
"""

from __future__ import annotations

import struct

_M0, _M1, _W0, _W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
_MASK32, _MASK64 = 0xFFFFFFFF, (1 << 64) - 1


class Philox:
    """One Philox4x32-10 stream: a key (2 words) and a 128-bit counter (4 words)."""

    __slots__ = ("key", "counter")

    def __init__(self, seed_lo: int, seed_hi: int):
        seed_lo, seed_hi = seed_lo & _MASK64, seed_hi & _MASK64
        self.key = (seed_lo & _MASK32, seed_lo >> 32)
        self.counter = seed_hi << 64

    def copy(self) -> Philox:
        other = Philox.__new__(Philox)
        other.key, other.counter = self.key, self.counter
        return other

    def skip(self, blocks: int) -> None:
        self.counter = (self.counter + blocks) & ((1 << 128) - 1)

    def block(self) -> list[int]:
        """The next four 32-bit words; the counter moves on by one."""
        c = [(self.counter >> (32 * i)) & _MASK32 for i in range(4)]
        k0, k1 = self.key
        for r in range(10):
            p0, p1 = _M0 * c[0], _M1 * c[2]
            c = [(p1 >> 32) ^ c[1] ^ k0, p1 & _MASK32, (p0 >> 32) ^ c[3] ^ k1, p0 & _MASK32]
            if r < 9:
                k0, k1 = (k0 + _W0) & _MASK32, (k1 + _W1) & _MASK32
        self.skip(1)
        return c

    def reserve32(self, samples: int) -> Philox:
        """A copy of this stream for `samples` 32-bit draws; this one skips past them."""
        local = self.copy()
        self.skip((samples + 3) // 4)
        return local


class SingleSamples:
    """32-bit words of a stream one at a time (TF's SingleSampleAdapter)."""

    __slots__ = ("gen", "words")

    def __init__(self, gen: Philox):
        self.gen, self.words = gen, []

    def __call__(self) -> int:
        if not self.words:
            self.words = self.gen.block()[::-1]
        return self.words.pop()

    def rand_double(self) -> float:
        """A double in [0, 1) from two words: 52 mantissa bits, as TF's Uint64ToDouble."""
        hi, lo = self(), self()
        bits = (1023 << 52) | ((hi & 0xFFFFF) << 32) | lo
        return struct.unpack("<d", struct.pack("<Q", bits))[0] - 1.0
