"""PNG encoding of 8-bit images, written with zlib (no imaging library needed).

The file has one IHDR, one IDAT and the IEND chunk; every row uses filter type 0 (None).
Any PNG decoder reads back exactly the pixels that were given.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

__all__ = ["encode_png", "encode_png16"]

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# Channels -> PNG colour type: grey, grey+alpha, RGB, RGBA.
_COLOR_TYPE = {1: 0, 2: 4, 3: 2, 4: 6}


def _chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(data, zlib.crc32(kind)) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


_DEFLATE_BYTES = 1 << 20  # rows compressed between two calls of `between`: tens of ms


def _deflate(rows: np.ndarray, compression: int, between=None) -> bytes:
    """zlib's stream of `rows` (a C-contiguous uint8 matrix) at `compression`; with
    `between`, fed to one compressor in blocks of rows, calling `between()` before every
    block but the first (to stop a long encode): for levels 1-9 the bytes are those of one
    call (the compressor's choices do not depend on how its input comes); level 0 (stored
    blocks, whose cuts would move) and small images in one call."""
    if between is None or compression == 0 or rows.nbytes <= _DEFLATE_BYTES:
        return zlib.compress(rows.tobytes(), compression)
    c = zlib.compressobj(compression)
    per = max(1, _DEFLATE_BYTES // max(1, rows.shape[1]))
    parts = []
    for lo in range(0, rows.shape[0], per):
        if lo:
            between()
        parts.append(c.compress(rows[lo:lo + per]))
    parts.append(c.flush())
    return b"".join(parts)


def encode_png(image, compression: int = -1, between=None) -> bytes:
    """The PNG file of an 8-bit image.

    Args:
      image: a uint8 array shaped [height, width, channels], channels 1 to 4.
      compression: the zlib level, 0-9, or -1 for zlib's default.
      between: called between blocks of a large image's compression (it may raise to
        stop the encode); the bytes are the same with or without it.

    Returns:
      The PNG file's bytes.

    Raises:
      ValueError: the array is not 3-D uint8 with 1 to 4 channels, or is empty.
    """
    a = np.asarray(image)
    if a.dtype != np.uint8 or a.ndim != 3 or a.shape[2] not in _COLOR_TYPE:
        raise ValueError(f"encode_png takes a uint8 [height, width, 1-4] array, got "
                         f"{a.dtype} {list(a.shape)}")
    height, width, channels = a.shape
    if height == 0 or width == 0:
        raise ValueError(f"encode_png needs a non-empty image, got {list(a.shape)}")
    rows = np.zeros((height, 1 + width * channels), dtype=np.uint8)  # filter byte 0
    rows[:, 1:] = a.reshape(height, width * channels)
    header = struct.pack(">IIBBBBB", width, height, 8, _COLOR_TYPE[channels], 0, 0, 0)
    return (_SIGNATURE + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", _deflate(rows, compression, between))
            + _chunk(b"IEND", b""))


def encode_png16(image, compression: int = -1, between=None) -> bytes:
    """The PNG file of a 16-bit image (uint16 [height, width, channels], channels 1 to 4).

    Raises:
      ValueError: the array is not 3-D uint16 with 1 to 4 channels, or is empty.
    """
    a = np.asarray(image)
    if a.dtype != np.uint16 or a.ndim != 3 or a.shape[2] not in _COLOR_TYPE or 0 in a.shape:
        raise ValueError(f"encode_png16 takes a non-empty uint16 [height, width, 1-4] array, "
                         f"got {a.dtype} {list(a.shape)}")
    height, width, channels = a.shape
    rows = np.zeros((height, 1 + 2 * width * channels), dtype=np.uint8)
    rows[:, 1:] = a.astype(">u2").view(np.uint8).reshape(height, 2 * width * channels)
    header = struct.pack(">IIBBBBB", width, height, 16, _COLOR_TYPE[channels], 0, 0, 0)
    return (_SIGNATURE + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", _deflate(rows, compression, between))
            + _chunk(b"IEND", b""))
