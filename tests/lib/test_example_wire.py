"""lib/example_wire: the fast Example reader agrees with protobuf on every record it
answers, and declines (None) the forms it does not handle."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from tensorflux.lib import example_wire as ew
from tensorflux.lib.protowire import varint
from tensorflux.protos import example_pb2


def _reference(data: bytes) -> dict:
    feats = example_pb2.Example.FromString(data).features.feature
    out = {}
    for key, f in feats.items():
        kind = f.WhichOneof("kind")
        out[key] = (kind, list(getattr(f, kind).value) if kind else [])
    return out


def _decoded(data: bytes) -> dict | None:
    got = ew.features(data)
    if got is None:
        return None
    names = {0: None, ew.BYTES: "bytes_list", ew.FLOAT: "float_list", ew.INT64: "int64_list"}
    out = {}
    for key, (kind, msg) in got.items():
        if kind == ew.FLOAT:
            vals = np.frombuffer(ew.floats(msg), "<f4").tolist()
        elif kind == ew.INT64:
            vals = ew.int64s(msg)
        elif kind == ew.BYTES:
            vals = ew.bytes_values(msg)
        else:
            vals = []
        out[key.decode()] = (names[kind], vals)
    return out


def _example(rng) -> bytes:
    ex = example_pb2.Example()
    for k in range(int(rng.integers(0, 5))):
        f = ex.features.feature[f"k{k}" * int(rng.integers(1, 70))]
        kind = int(rng.integers(0, 4))
        n = int(rng.integers(0, 40))
        if kind == 0:
            f.float_list.value.extend(rng.standard_normal(n).astype(np.float32).tolist())
        elif kind == 1:
            f.int64_list.value.extend(int(v) for v in rng.integers(-2**63, 2**63 - 1, n,
                                                                   dtype=np.int64))
        elif kind == 2:
            f.bytes_list.value.extend(bytes(rng.integers(0, 256, int(rng.integers(0, 300)),
                                                         dtype=np.uint8)) for _ in range(n))
        # kind 3: a Feature with no kind set
    return ex.SerializeToString()


def test_random_examples_match_protobuf():
    rng = np.random.default_rng(0)
    for _ in range(300):
        data = _example(rng)
        assert _decoded(data) == _reference(data)


def _field(num: int, wire: int, payload: bytes) -> bytes:
    tag = varint(num << 3 | wire)
    return tag + (varint(len(payload)) + payload if wire == 2 else payload)


def _entry(key: bytes, feature: bytes) -> bytes:
    return _field(1, 2, _field(1, 2, key) + _field(2, 2, feature))


def _wrap(*entries: bytes) -> bytes:
    return _field(1, 2, b"".join(entries))


UNPACKED_FLOATS = _wrap(_entry(b"f", _field(2, 2, b"".join(
    _field(1, 5, struct.pack("<f", v)) for v in (1.5, -2.0)))))
UNPACKED_INTS = _wrap(_entry(b"i", _field(3, 2, _field(1, 0, varint(7)) +
                                          _field(1, 0, varint(-3)))))
TWO_PACKED_RUNS = _wrap(_entry(b"i", _field(3, 2, _field(1, 2, varint(1) + varint(2)) +
                                            _field(1, 2, varint(300)))))
DUPLICATE_KEY = _wrap(_entry(b"a", _field(3, 2, _field(1, 2, varint(1)))),
                      _entry(b"a", _field(2, 2, _field(1, 2, struct.pack("<f", 4.0)))))


@pytest.mark.parametrize("data", [UNPACKED_FLOATS, UNPACKED_INTS, TWO_PACKED_RUNS,
                                  DUPLICATE_KEY, b""])
def test_other_wire_forms_match_protobuf(data):
    assert _decoded(data) == _reference(data)


TWO_KINDS = _wrap(_entry(b"a", _field(3, 2, _field(1, 2, varint(1))) +
                         _field(2, 2, _field(1, 2, struct.pack("<f", 4.0)))))
VALUE_FIRST = _field(1, 2, _field(1, 2, _field(2, 2, b"") + _field(1, 2, b"k")))
REPEATED_FEATURES = _wrap(_entry(b"a", b"")) + _wrap(_entry(b"b", b""))
UNKNOWN_FIELD = _wrap(_entry(b"a", b"")) + _field(5, 0, varint(1))
BAD_UTF8 = _wrap(_entry(b"\xff", b""))


@pytest.mark.parametrize("data", [TWO_KINDS, VALUE_FIRST, REPEATED_FEATURES, UNKNOWN_FIELD,
                                  BAD_UTF8])
def test_unusual_forms_are_declined(data):
    assert ew.features(data) is None


def test_truncated_and_garbage_records_are_declined():
    good = _example(np.random.default_rng(1))
    for cut in range(1, len(good)):
        got = ew.features(good[:cut])
        if got is not None:  # a prefix that is itself a whole record
            assert _decoded(good[:cut]) == _reference(good[:cut])
    assert ew.features(b"\x0a\xff") is None
    assert ew.features(b"garbage!") is None


def test_malformed_value_lists_raise_value_error():
    with pytest.raises(ValueError):
        ew.int64s(b"\x0a\x05\x01")
    with pytest.raises(ValueError):
        ew.floats(b"\x0a\x03abc")
    with pytest.raises(ValueError):
        ew.bytes_values(b"\x12\x00")
