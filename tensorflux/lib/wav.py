"""WAV encoding of float audio as 16-bit little-endian PCM (what AudioSummary records).

The file is the 44-byte canonical header (RIFF, a 16-byte `fmt ` chunk for PCM, `data`)
followed by the samples, frames interleaved by channel. A sample `x` becomes
`round(x * 32768)` (halves away from zero) clamped to [-32768, 32767]; NaN becomes 0.
"""

from __future__ import annotations

import struct

import numpy as np

__all__ = ["encode_wav"]

_HEADER = struct.Struct("<4sI4s4sIHHIIHH4sI")
_UINT32_MAX = 0xFFFFFFFF


def _to_int16(samples: np.ndarray) -> np.ndarray:
    # x * 32768 is exact in float32 (a power of two); widening to float64 keeps the
    # round-half-away-from-zero below exact.
    scaled = (np.asarray(samples, dtype=np.float32) * np.float32(32768.0)).astype(np.float64)
    rounded = np.where(scaled >= 0, np.floor(scaled + 0.5), np.ceil(scaled - 0.5))
    rounded = np.clip(rounded, -32768.0, 32767.0)
    rounded[np.isnan(rounded)] = 0.0
    return rounded.astype("<i2")


def encode_wav(audio, sample_rate: int) -> bytes:
    """The WAV file of `audio`.

    Args:
      audio: float samples shaped [frames, channels].
      sample_rate: frames per second, an integer in (0, 2**32).

    Returns:
      The WAV file's bytes.

    Raises:
      ValueError: a sample rate or channel count out of range, or a file over 4 GiB.
    """
    a = np.asarray(audio, dtype=np.float32)
    frames, channels = a.shape
    if not 0 < sample_rate <= _UINT32_MAX:
        raise ValueError(f"sample_rate must be in (0, 2^32), got: {sample_rate}")
    if not 0 < channels <= 0xFFFF:
        raise ValueError(f"num_channels must be in (0, 2^16), got: {channels}")
    data_size = frames * channels * 2
    file_size = _HEADER.size + data_size
    if file_size > _UINT32_MAX:
        raise ValueError(f"Provided channels and frames cannot be encoded as a WAV: "
                         f"{channels} channels and {frames} frames")
    header = _HEADER.pack(b"RIFF", file_size - 8, b"WAVE", b"fmt ", 16, 1, channels,
                          sample_rate, sample_rate * 2 * channels, 2 * channels, 16,
                          b"data", data_size)
    return header + _to_int16(a).tobytes()
