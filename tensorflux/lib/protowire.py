"""The protobuf wire format's varints, for the few places that write or read protobuf
bytes by hand (tensors on the wire, a reader's saved state)."""

from __future__ import annotations


def varint(n: int) -> bytes:
    """`n` as a base-128 varint (negative numbers as their 64-bit two's complement)."""
    if 0 <= n < 0x80:
        return _ONE_BYTE[n]
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


_ONE_BYTE = [bytes((i,)) for i in range(0x80)]


def read_varint(buf, pos: int) -> tuple[int, int]:
    """(value, position after it) of the varint at `buf[pos:]`.

    Raises:
      ValueError: the varint is truncated or longer than 64 bits.
    """
    result = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
