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


def encode_png(image, compression: int = -1) -> bytes:
    """The PNG file of an 8-bit image.

    Args:
      image: a uint8 array shaped [height, width, channels], channels 1 to 4.
      compression: the zlib level, 0-9, or -1 for zlib's default.

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
            + _chunk(b"IDAT", zlib.compress(rows.tobytes(), compression))
            + _chunk(b"IEND", b""))


def encode_png16(image, compression: int = -1) -> bytes:
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
            + _chunk(b"IDAT", zlib.compress(rows.tobytes(), compression))
            + _chunk(b"IEND", b""))
