"""The protobuf wire format's varints, for the few places that write or read protobuf
bytes by hand (tensors on the wire, a reader's saved state)."""

from __future__ import annotations


def varint(n: int) -> bytes:
    """`n` as a base-128 varint (negative numbers as their 64-bit two's complement)."""
    global _last
    if 0 <= n < 0x80:
        return _ONE_BYTE[n]
    if 0 <= n < 0x4000:
        return bytes(((n & 0x7F) | 0x80, n >> 7))
    last = _last  # (a step id recurs in every frame of its step: the last large one kept)
    if last[0] == n:
        return last[1]
    m = n & ((1 << 64) - 1)
    out = bytearray()
    while m >= 0x80:
        out.append((m & 0x7F) | 0x80)
        m >>= 7
    out.append(m)
    encoded = bytes(out)
    _last = (n, encoded)  # one tuple replaced at once: any thread reads a matching pair
    return encoded


_ONE_BYTE = [bytes((i,)) for i in range(0x80)]
_last: tuple = (None, b"")


def read_varint(buf, pos: int) -> tuple[int, int]:
    """(value, position after it) of the varint at `buf[pos:]` (`pos` >= 0).

    Raises:
      ValueError: the varint is truncated or longer than 64 bits.
    """
    try:
        b = buf[pos]
        if b < 0x80:  # (most tags and lengths)
            return b, pos + 1
        result, shift = b & 0x7F, 7
        while True:
            pos += 1
            b = buf[pos]
            result |= (b & 0x7F) << shift
            if b < 0x80:
                if shift > 63:
                    break
                return result, pos + 1
            shift += 7
            if shift > 63:
                break
    except IndexError:
        pass
    raise ValueError("truncated varint")
