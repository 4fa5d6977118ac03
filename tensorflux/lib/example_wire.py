"""A fast reader of serialized tf.train.Example protos for the common case, straight from
the protobuf wire format (example.proto: Example{features=1} -> Features{map<string,
Feature> feature=1} -> Feature{oneof bytes_list=1, float_list=2, int64_list=3} -> *List{
repeated value=1}).

`features(data)` gives each feature's key (bytes), kind and its list message's bytes
without building message objects; the parsing kernel then reads the values of many records at once
(`floats`, `int64s`, `bytes_values`). It answers only records it fully understands: anything
unusual (unknown or repeated fields, a feature with two kinds, a truncated or malformed
record) returns None, and the caller parses that record with the protobuf runtime, which
gives the exact semantics and errors. So this reader can be wrong only by declining.
"""

from __future__ import annotations

BYTES, FLOAT, INT64 = 1, 2, 3  # Feature's oneof field numbers


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def features(data: bytes) -> dict | None:
    """{key (bytes): (kind, list message bytes)} of one serialized Example, or None when
    the record is not in the plain form this reader handles (parse it with protobuf then).
    Keys are checked to be UTF-8, as protobuf does."""
    try:
        out = _features(data)
    except (IndexError, ValueError):
        return None
    if out is None:
        return None
    try:
        for key in out:
            if not key.isascii():
                key.decode()
    except UnicodeDecodeError:
        return None
    return out


def _features(data: bytes) -> dict | None:
    # Lengths under 128 (one-byte varints) are read inline: nearly all of them are.
    n = len(data)
    if n == 0:
        return {}
    if data[0] != 0x0A:  # Example.features, length-delimited
        return None
    size, pos = _varint(data, 1)
    if pos + size != n:  # trailing or repeated fields: not the plain form
        return None
    out: dict = {}
    while pos < n:
        if data[pos] != 0x0A:  # Features.feature map entry
            return None
        size = data[pos + 1]
        if size < 0x80:
            pos += 2
        else:
            size, pos = _varint(data, pos + 1)
        end = pos + size
        if end > n or data[pos] != 0x0A:  # entry.key first
            return None
        klen = data[pos + 1]
        if klen < 0x80:
            pos += 2
        else:
            klen, pos = _varint(data, pos + 1)
        kend = pos + klen
        if kend >= end or data[kend] != 0x12:  # then entry.value
            return None
        key = data[pos:kend]
        vlen = data[kend + 1]
        if vlen < 0x80:
            pos = kend + 2
        else:
            vlen, pos = _varint(data, kend + 1)
        if pos + vlen != end:
            return None
        if vlen == 0:
            out[key] = (0, b"")  # a Feature with no kind set
        else:
            tag = data[pos]
            kind = tag >> 3
            if tag & 7 != 2 or not BYTES <= kind <= INT64:
                return None
            llen = data[pos + 1]
            if llen < 0x80:
                pos += 2
            else:
                llen, pos = _varint(data, pos + 1)
            if pos + llen != end:  # more than one field in the Feature
                return None
            out[key] = (kind, data[pos:end])
        pos = end
    return out


def _packed_or_items(msg: bytes, wire_single: int) -> tuple[list, list]:
    """The packed runs and the single (unpacked) item offsets of a *List message."""
    packed, single = [], []
    pos, n = 0, len(msg)
    while pos < n:
        tag = msg[pos]
        if tag == 0x0A:
            size, pos = _varint(msg, pos + 1)
            if pos + size > n:
                raise ValueError("truncated")
            packed.append((pos, pos + size))
            pos += size
        elif tag == (0x08 | wire_single):
            single.append(pos + 1)
            pos = pos + 5 if wire_single == 5 else _varint(msg, pos + 1)[1]
            if pos > n:
                raise ValueError("truncated")
        else:
            raise ValueError("unexpected field")
    return packed, single


def floats(msg: bytes) -> bytes:
    """The little-endian float32 bytes of a FloatList message."""
    if not msg:
        return b""
    if msg[0] == 0x0A:  # one packed run (what writers write)
        size, pos = (msg[1], 2) if msg[1] < 0x80 else _varint(msg, 1)
        if pos + size == len(msg) and size % 4 == 0:
            return msg[pos:]
    packed, single = _packed_or_items(msg, 5)
    if packed and single:  # interleaved forms: keep the wire order
        raise ValueError("mixed packed and unpacked floats")
    if single:
        return b"".join(msg[p:p + 4] for p in single)
    parts = [msg[a:b] for a, b in packed]
    if any(len(p) % 4 for p in parts):
        raise ValueError("bad packed floats")
    return b"".join(parts)


def int64s(msg: bytes) -> list[int]:
    """The values of an Int64List message."""
    out: list[int] = []
    pos, n = 0, len(msg)
    while pos < n:
        tag = msg[pos]
        if tag == 0x0A:
            size = msg[pos + 1]
            size, pos = (size, pos + 2) if size < 0x80 else _varint(msg, pos + 1)
            end = pos + size
            if end > n:
                raise ValueError("truncated")
            v = shift = 0
            for b in msg[pos:end]:  # the packed varints, inline
                v |= (b & 0x7F) << shift
                if b < 0x80:
                    out.append(v)
                    v = shift = 0
                else:
                    shift += 7
            if shift:
                raise ValueError("bad packed varints")
            pos = end
        elif tag == 0x08:
            v, pos = _varint(msg, pos + 1)
            out.append(v)
        else:
            raise ValueError("unexpected field")
    if out and max(out) >> 63:  # negative numbers are 10-byte varints
        if max(out) >> 64:
            raise ValueError("varint over 64 bits")
        return [v - (1 << 64) if v >> 63 else v for v in out]
    return out


def bytes_values(msg: bytes) -> list[bytes]:
    """The values of a BytesList message."""
    out: list[bytes] = []
    pos, n = 0, len(msg)
    while pos < n:
        if msg[pos] != 0x0A:
            raise ValueError("unexpected field")
        size = msg[pos + 1]
        size, pos = (size, pos + 2) if size < 0x80 else _varint(msg, pos + 1)
        if pos + size > n:
            raise ValueError("truncated")
        out.append(msg[pos:pos + size])
        pos += size
    return out
