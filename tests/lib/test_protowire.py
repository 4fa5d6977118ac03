"""Varints as protobuf writes them: values and malformed inputs, against the protobuf
library's own encoding."""

from __future__ import annotations

import random

import pytest

from tensorflux.lib import protowire
from tensorflux.protos import tensor_pb2

CASES = [(0, b"\x00"), (1, b"\x01"), (127, b"\x7f"), (128, b"\x80\x01"), (300, b"\xac\x02"),
         (1 << 56, b"\x80\x80\x80\x80\x80\x80\x80\x80\x01"),
         ((1 << 64) - 1, b"\xff" * 9 + b"\x01"), (-1, b"\xff" * 9 + b"\x01")]


@pytest.mark.parametrize("value,encoded", CASES)
def test_known_varints(value, encoded):
    assert protowire.varint(value) == encoded
    assert protowire.read_varint(b"\x05" + encoded + b"\x07", 1) == (
        value & ((1 << 64) - 1), 1 + len(encoded))


def test_random_varints_match_protobuf():
    rng = random.Random(4)
    for _ in range(2000):
        v = rng.getrandbits(rng.randint(1, 64))
        proto = tensor_pb2.TensorProto(version_number=0, int64_val=[v - (1 << 64) if v >> 63
                                                                     else v])
        encoded = protowire.varint(v)
        assert encoded in proto.SerializeToString()
        assert protowire.read_varint(memoryview(encoded), 0) == (v, len(encoded))


@pytest.mark.parametrize("data,pos", [(b"", 0), (b"\x80", 0), (b"\x01\x80\x80", 1),
                                      (b"\xff" * 10 + b"\x01", 0), (b"\x01", 1)])
def test_truncated_or_overlong_varints_are_value_errors(data, pos):
    with pytest.raises(ValueError, match="truncated varint"):
        protowire.read_varint(data, pos)


def test_threads_encoding_large_values_at_once_each_get_their_own():
    """varint keeps the last large value's bytes (a step id recurs in its frames): threads
    encoding different values at once never get another's."""
    from tests.threads_util import join, start

    def reference(v: int) -> bytes:
        out = bytearray()
        while v >= 0x80:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        return bytes(out + bytes((v,)))

    bad = []

    def work(seed: int) -> None:
        rng = random.Random(seed)
        values = [rng.getrandbits(56) | (1 << 50) for _ in range(4)]
        for i in range(5000):
            v = values[i % 4]
            if protowire.varint(v) != reference(v):
                bad.append(v)

    join(*[start(work, seed) for seed in range(8)], timeout=60)
    assert not bad
