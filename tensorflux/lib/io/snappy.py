"""Snappy streams as TensorFlow's record files use them (compression "SNAPPY", what a
tf.data snapshot's AUTO picks), in pure Python.

The stream is a sequence of blocks, each a big-endian uint32 length and then one raw
Snappy block of that many bytes. A raw block (Snappy's format description) is the
uncompressed length as a varint, then elements, each starting with a tag byte whose low two
bits say what it is:

- 0: a literal; the upper six bits are its length - 1 when below 60, else 60..63 say the
  length - 1 follows in 1..4 little-endian bytes; the literal bytes follow.
- 1: a copy of 4 + ((tag >> 2) & 7) bytes from (tag >> 5) << 8 | next byte back.
- 2: a copy of (tag >> 2) + 1 bytes from a 2-byte little-endian offset back.
- 3: the same with a 4-byte offset.

A copy may overlap what it writes (an offset below its length repeats bytes). Blocks
written here hold literals only (valid Snappy that any decoder reads, without compressing:
a matcher in Python would cost more than the bytes it saves); reading takes any block.
"""

from __future__ import annotations

import struct

from tensorflux.framework import errors
from tensorflux.lib.protowire import read_varint, varint

__all__ = ["compress_block", "decompress_block", "encode_stream", "decode_stream"]

BLOCK = 1 << 16  # uncompressed bytes per written block
_LITERAL = 1 << 16  # bytes per literal element written


def compress_block(data: bytes) -> bytes:
    """`data` as one raw Snappy block (literals only)."""
    out = [varint(len(data))]
    for start in range(0, len(data), _LITERAL):
        n = min(_LITERAL, len(data) - start) - 1
        if n < 60:
            out.append(bytes([n << 2]))
        elif n < 1 << 8:
            out.append(bytes([60 << 2, n]))
        else:
            out.append(bytes([61 << 2]) + struct.pack("<H", n))
        out.append(data[start:start + n + 1])
    return b"".join(out)


def _corrupt(what: str) -> errors.DataLossError:
    return errors.DataLossError(None, None, f"Corrupt snappy block: {what}")


def decompress_block(block: bytes) -> bytes:
    """The bytes of one raw Snappy block.

    Raises:
      DataLossError: a malformed block.
    """
    try:
        size, pos = read_varint(block, 0)
    except (IndexError, ValueError):
        raise _corrupt("no length") from None
    out = bytearray()
    n = len(block)
    while pos < n:
        tag = block[pos]
        pos += 1
        kind = tag & 3
        extra = (tag >> 2) - 59 if kind == 0 and tag >> 2 >= 60 else (0, 1, 2, 4)[kind]
        if pos + extra > n:
            raise _corrupt("an element cut short")
        if kind == 0:
            length = tag >> 2
            if extra:
                length = int.from_bytes(block[pos:pos + extra], "little")
                pos += extra
            length += 1
            if pos + length > n:
                raise _corrupt("a literal past the block's end")
            out += block[pos:pos + length]
            pos += length
            continue
        if kind == 1:
            length, offset = 4 + ((tag >> 2) & 7), (tag >> 5) << 8 | block[pos]
            pos += 1
        else:
            length = (tag >> 2) + 1
            offset = int.from_bytes(block[pos:pos + extra], "little")
            pos += extra
        if offset == 0 or offset > len(out):
            raise _corrupt(f"a copy from {offset} bytes back of {len(out)}")
        start = len(out) - offset
        if offset >= length:
            out += out[start:start + length]
        else:  # overlapping: the copied run repeats
            for i in range(length):
                out.append(out[start + i])
    if len(out) != size:
        raise _corrupt(f"{len(out)} bytes where the block says {size}")
    return bytes(out)


def encode_stream(data: bytes) -> bytes:
    """`data` as TensorFlow's Snappy stream: length-prefixed blocks of `BLOCK` bytes."""
    out = []
    for start in range(0, len(data), BLOCK):
        block = compress_block(data[start:start + BLOCK])
        out.append(struct.pack(">I", len(block)) + block)
    return b"".join(out)


def decode_stream(data: bytes) -> bytes:
    """The bytes of a TensorFlow Snappy stream.

    Raises:
      DataLossError: a block cut short or malformed.
    """
    out, pos = [], 0
    while pos < len(data):
        if pos + 4 > len(data):
            raise _corrupt("a block length cut short")
        (length,) = struct.unpack_from(">I", data, pos)
        pos += 4
        if pos + length > len(data):
            raise _corrupt("a block cut short")
        out.append(decompress_block(data[pos:pos + length]))
        pos += length
    return b"".join(out)
