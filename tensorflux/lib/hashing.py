"""The 64-bit string hashes TensorFlow's string ops use, in pure Python, bit-exact:

- `hash64`: TensorFlow's legacy Hash64 (a MurmurHash64A variant, seed 0xDECAFCAFFE), used by
  StringToHashBucket;
- `fingerprint64`: FarmHash's Fingerprint64 (farmhashna::Hash64), used by
  StringToHashBucketFast and tf.feature_column's hashing;
- `siphash24`: SipHash-2-4 with a 128-bit key given as two uint64s, used by
  StringToHashBucketStrong;
- `fingerprint128`: FarmHash's Fingerprint128 (farmhashcc, CityHash128 v1.1), used by
  SdcaFprint.

All arithmetic is modulo 2**64 (`_M`).
"""

from __future__ import annotations

import struct

_M = (1 << 64) - 1
_K0 = 0xC3A5C85C97CB3127
_K1 = 0xB492B66FBE98F273
_K2 = 0x9AE16A3B2F90404F


def _fetch64(s: bytes, i: int) -> int:
    return struct.unpack_from("<Q", s, i)[0]


def _fetch32(s: bytes, i: int) -> int:
    return struct.unpack_from("<I", s, i)[0]


def _rot(v: int, shift: int) -> int:
    return v if shift == 0 else ((v >> shift) | (v << (64 - shift))) & _M


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def _hash_len16(u: int, v: int, mul: int) -> int:
    a = ((u ^ v) * mul) & _M
    a ^= a >> 47
    b = ((v ^ a) * mul) & _M
    b ^= b >> 47
    return (b * mul) & _M


def _len0to16(s: bytes) -> int:
    n = len(s)
    if n >= 8:
        mul = _K2 + n * 2
        a = (_fetch64(s, 0) + _K2) & _M
        b = _fetch64(s, n - 8)
        c = (_rot(b, 37) * mul + a) & _M
        d = ((_rot(a, 25) + b) * mul) & _M
        return _hash_len16(c, d, mul)
    if n >= 4:
        mul = _K2 + n * 2
        a = _fetch32(s, 0)
        return _hash_len16((n + (a << 3)) & _M, _fetch32(s, n - 4), mul)
    if n > 0:
        y = (s[0] + (s[n >> 1] << 8)) & 0xFFFFFFFF
        z = (n + (s[n - 1] << 2)) & 0xFFFFFFFF
        return (_shift_mix(((y * _K2) ^ (z * _K0)) & _M) * _K2) & _M
    return _K2


def _len17to32(s: bytes) -> int:
    n = len(s)
    mul = _K2 + n * 2
    a = (_fetch64(s, 0) * _K1) & _M
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & _M
    d = (_fetch64(s, n - 16) * _K2) & _M
    return _hash_len16((_rot((a + b) & _M, 43) + _rot(c, 30) + d) & _M,
                       (a + _rot((b + _K2) & _M, 18) + c) & _M, mul)


def _len33to64(s: bytes) -> int:
    n = len(s)
    mul = _K2 + n * 2
    a = (_fetch64(s, 0) * _K2) & _M
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & _M
    d = (_fetch64(s, n - 16) * _K2) & _M
    y = (_rot((a + b) & _M, 43) + _rot(c, 30) + d) & _M
    z = _hash_len16(y, (a + _rot((b + _K2) & _M, 18) + c) & _M, mul)
    e = (_fetch64(s, 16) * mul) & _M
    f = _fetch64(s, 24)
    g = ((y + _fetch64(s, n - 32)) * mul) & _M
    h = ((z + _fetch64(s, n - 24)) * mul) & _M
    return _hash_len16((_rot((e + f) & _M, 43) + _rot(g, 30) + h) & _M,
                       (e + _rot((f + a) & _M, 18) + g) & _M, mul)


def _weak32(s: bytes, i: int, a: int, b: int) -> tuple[int, int]:
    w, x, y, z = (_fetch64(s, i + k) for k in (0, 8, 16, 24))
    a = (a + w) & _M
    b = _rot((b + a + z) & _M, 21)
    c = a
    a = (a + x + y) & _M
    b = (b + _rot(a, 44)) & _M
    return (a + z) & _M, (b + c) & _M


def fingerprint64(s: bytes) -> int:
    """FarmHash Fingerprint64 of `s` (an unsigned 64-bit int)."""
    n = len(s)
    if n <= 16:
        return _len0to16(s)
    if n <= 32:
        return _len17to32(s)
    if n <= 64:
        return _len33to64(s)
    seed = 81
    x = seed
    y = (seed * _K1 + 113) & _M
    z = (_shift_mix((y * _K2 + 113) & _M) * _K2) & _M
    v = (0, 0)
    w = (0, 0)
    x = (x * _K2 + _fetch64(s, 0)) & _M
    end = ((n - 1) // 64) * 64
    last64 = end + ((n - 1) & 63) - 63
    i = 0
    while True:
        x = (_rot((x + y + v[0] + _fetch64(s, i + 8)) & _M, 37) * _K1) & _M
        y = (_rot((y + v[1] + _fetch64(s, i + 48)) & _M, 42) * _K1) & _M
        x ^= w[1]
        y = (y + v[0] + _fetch64(s, i + 40)) & _M
        z = (_rot((z + w[0]) & _M, 33) * _K1) & _M
        v = _weak32(s, i, (v[1] * _K1) & _M, (x + w[0]) & _M)
        w = _weak32(s, i + 32, (z + w[1]) & _M, (y + _fetch64(s, i + 16)) & _M)
        z, x = x, z
        i += 64
        if i == end:
            break
    mul = _K1 + ((z & 0xFF) << 1)
    i = last64
    w = ((w[0] + ((n - 1) & 63)) & _M, w[1])
    v = ((v[0] + w[0]) & _M, v[1])
    w = ((w[0] + v[0]) & _M, w[1])
    x = (_rot((x + y + v[0] + _fetch64(s, i + 8)) & _M, 37) * mul) & _M
    y = (_rot((y + v[1] + _fetch64(s, i + 48)) & _M, 42) * mul) & _M
    x ^= (w[1] * 9) & _M
    y = (y + v[0] * 9 + _fetch64(s, i + 40)) & _M
    z = (_rot((z + w[0]) & _M, 33) * mul) & _M
    v = _weak32(s, i, (v[1] * mul) & _M, (x + w[0]) & _M)
    w = _weak32(s, i + 32, (z + w[1]) & _M, (y + _fetch64(s, i + 16)) & _M)
    z, x = x, z
    return _hash_len16((_hash_len16(v[0], w[0], mul) + _shift_mix(y) * _K0 + z) & _M,
                       (_hash_len16(v[1], w[1], mul) + x) & _M, mul)


def hash64(s: bytes, seed: int = 0xDECAFCAFFE) -> int:
    """TensorFlow's legacy Hash64 of `s` (an unsigned 64-bit int)."""
    m = 0xC6A4A7935BD1E995
    n = len(s)
    h = (seed ^ (n * m)) & _M
    full = n - n % 8
    for i in range(0, full, 8):
        k = (_fetch64(s, i) * m) & _M
        k ^= k >> 47
        k = (k * m) & _M
        h = ((h ^ k) * m) & _M
    rest = s[full:]
    if rest:
        for j in range(len(rest) - 1, -1, -1):
            h ^= rest[j] << (8 * j)
        h = (h * m) & _M
    h ^= h >> 47
    h = (h * m) & _M
    h ^= h >> 47
    return h


def siphash24(key: tuple[int, int], s: bytes) -> int:
    """SipHash-2-4 of `s` under the 128-bit key (k0, k1) (an unsigned 64-bit int)."""
    k0, k1 = key[0] & _M, key[1] & _M
    v0 = k0 ^ 0x736F6D6570736575
    v1 = k1 ^ 0x646F72616E646F6D
    v2 = k0 ^ 0x6C7967656E657261
    v3 = k1 ^ 0x7465646279746573

    def rounds(v0, v1, v2, v3, count):
        for _ in range(count):
            v0 = (v0 + v1) & _M
            v1 = _rot(v1, 64 - 13) ^ v0
            v0 = _rot(v0, 32)
            v2 = (v2 + v3) & _M
            v3 = _rot(v3, 64 - 16) ^ v2
            v0 = (v0 + v3) & _M
            v3 = _rot(v3, 64 - 21) ^ v0
            v2 = (v2 + v1) & _M
            v1 = _rot(v1, 64 - 17) ^ v2
            v2 = _rot(v2, 32)
        return v0, v1, v2, v3

    n = len(s)
    padded = s + b"\0" * (7 - n % 8) + bytes([n & 0xFF])
    for i in range(0, len(padded), 8):
        m = _fetch64(padded, i)
        v3 ^= m
        v0, v1, v2, v3 = rounds(v0, v1, v2, v3, 2)
        v0 ^= m
    v2 ^= 0xFF
    v0, v1, v2, v3 = rounds(v0, v1, v2, v3, 4)
    return v0 ^ v1 ^ v2 ^ v3


# ---- Fingerprint128 (farmhashcc) -----------------------------------------------------------

_KMUL = 0x9DDFEA08EB382D69


def _hash128to64(low: int, high: int) -> int:
    return _hash_len16(low, high, _KMUL)


def _city_murmur(s: bytes, seed_low: int, seed_high: int) -> tuple[int, int]:
    """The 128-bit hash of strings shorter than 128 bytes (CityMurmur)."""
    n = len(s)
    a, b = seed_low, seed_high
    if n <= 16:
        a = (_shift_mix((a * _K1) & _M) * _K1) & _M
        c = (b * _K1 + _len0to16(s)) & _M
        d = _shift_mix((a + (_fetch64(s, 0) if n >= 8 else c)) & _M)
    else:
        c = _hash128to64((_fetch64(s, n - 8) + _K1) & _M, a)
        d = _hash128to64((b + n) & _M, (c + _fetch64(s, n - 16)) & _M)
        a = (a + d) & _M
        for i in range(0, n - 16, 16):
            a ^= (_shift_mix((_fetch64(s, i) * _K1) & _M) * _K1) & _M
            a = (a * _K1) & _M
            b ^= a
            c ^= (_shift_mix((_fetch64(s, i + 8) * _K1) & _M) * _K1) & _M
            c = (c * _K1) & _M
            d ^= c
    a = _hash128to64(a, c)
    b = _hash128to64(d, b)
    return a ^ b, _hash128to64(b, a)


def _city128_chunk(s: bytes, i: int, state: list) -> None:
    """One 64-byte step of CityHash128WithSeed's main loop, on state [x, y, z, v, w]."""
    x, y, z, v, w = state
    x = (_rot((x + y + v[0] + _fetch64(s, i + 8)) & _M, 37) * _K1) & _M
    y = (_rot((y + v[1] + _fetch64(s, i + 48)) & _M, 42) * _K1) & _M
    x ^= w[1]
    y = (y + v[0] + _fetch64(s, i + 40)) & _M
    z = (_rot((z + w[0]) & _M, 33) * _K1) & _M
    v = _weak32(s, i, (v[1] * _K1) & _M, (x + w[0]) & _M)
    w = _weak32(s, i + 32, (z + w[1]) & _M, (y + _fetch64(s, i + 16)) & _M)
    state[:] = [z, y, x, v, w]  # x and z swap


def _city128_with_seed(s: bytes, seed_low: int, seed_high: int) -> tuple[int, int]:
    n = len(s)
    if n < 128:
        return _city_murmur(s, seed_low, seed_high)
    x, y, z = seed_low, seed_high, (n * _K1) & _M
    v0 = (_rot(y ^ _K1, 49) * _K1 + _fetch64(s, 0)) & _M
    v = (v0, (_rot(v0, 42) * _K1 + _fetch64(s, 8)) & _M)
    w = ((_rot((y + z) & _M, 35) * _K1 + x) & _M,
         (_rot((x + _fetch64(s, 88)) & _M, 53) * _K1) & _M)
    state = [x, y, z, v, w]
    pos, left = 0, n
    while True:
        _city128_chunk(s, pos, state)
        _city128_chunk(s, pos + 64, state)
        pos, left = pos + 128, left - 128
        if left < 128:
            break
    x, y, z, v, w = state
    x = (x + _rot((v[0] + z) & _M, 49) * _K0) & _M
    y = (y * _K0 + _rot(w[1], 37)) & _M
    z = (z * _K0 + _rot(w[0], 27)) & _M
    w = ((w[0] * 9) & _M, w[1])
    v = ((v[0] * _K0) & _M, v[1])
    done = 0
    while done < left:  # up to four 32-byte chunks from the end
        done += 32
        end = pos + left - done
        y = (_rot((x + y) & _M, 42) * _K0 + v[1]) & _M
        w = ((w[0] + _fetch64(s, end + 16)) & _M, w[1])
        x = (x * _K0 + w[0]) & _M
        z = (z + w[1] + _fetch64(s, end)) & _M
        w = (w[0], (w[1] + v[0]) & _M)
        v = _weak32(s, end, (v[0] + z) & _M, v[1])
        v = ((v[0] * _K0) & _M, v[1])
    x = _hash128to64(x, v[0])
    y = _hash128to64((y + z) & _M, w[0])
    return ((_hash128to64((x + v[1]) & _M, w[1]) + y) & _M,
            _hash128to64((x + w[1]) & _M, (y + v[1]) & _M))


def fingerprint128(s: bytes) -> tuple[int, int]:
    """FarmHash Fingerprint128 of `s`: (low, high) unsigned 64-bit ints."""
    if len(s) >= 16:
        return _city128_with_seed(s[16:], _fetch64(s, 0), (_fetch64(s, 8) + _K0) & _M)
    return _city128_with_seed(s, _K0, _K1)
