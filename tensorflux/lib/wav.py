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


# ---- reading -----------------------------------------------------------------------------

__all__ += ["decode_wav"]


class _Reader:
    """Little-endian reads from a byte string; reading past its end is a ValueError."""

    __slots__ = ("data", "offset")

    def __init__(self, data: bytes):
        self.data, self.offset = data, 0

    def take(self, n: int, what: str) -> bytes:
        if n < 0 or self.offset + n > len(self.data):
            raise ValueError(f"Data too short when trying to read {what}")
        out = self.data[self.offset:self.offset + n]
        self.offset += n
        return out

    def tag(self, expected: str | None = None) -> str:
        got = self.take(4, "string").decode("latin-1")
        if expected is not None and got != expected:
            raise ValueError(f"Header mismatch: Expected {expected} but found {got}")
        return got

    def u16(self) -> int:
        return struct.unpack("<H", self.take(2, "value"))[0]

    def u32(self) -> int:
        return struct.unpack("<I", self.take(4, "value"))[0]


def _read_format(r: _Reader) -> tuple[int, int, int]:
    """The `fmt ` chunk: (channels, sample rate, bytes per frame); only 16-bit PCM."""
    r.tag("fmt ")
    size = r.u32()
    if size not in (16, 18):
        raise ValueError(f"Bad format chunk size for WAV: Expected 16 or 18, but got {size}")
    audio_format, channels, rate = r.u16(), r.u16(), r.u32()
    if audio_format != 1:
        raise ValueError(f"Bad audio format for WAV: Expected 1 (PCM), but got {audio_format}")
    if channels < 1:
        raise ValueError(f"Bad number of channels for WAV: Expected at least 1, but got "
                         f"{channels}")
    byte_rate, block_align, bits = r.u32(), r.u16(), r.u16()
    if bits != 16:
        raise ValueError(f"Can only read 16-bit WAV files, but received {bits}")
    if size == 18:
        r.take(2, "value")
    if block_align != 2 * channels:
        raise ValueError(f"Bad bytes per sample in WAV header: Expected {2 * channels} but "
                         f"got {block_align}")
    if byte_rate != block_align * rate:
        raise ValueError(f"Bad bytes per second in WAV header: Expected "
                         f"{block_align * rate} but got {byte_rate}")
    return channels, rate, block_align


def decode_wav(contents: bytes) -> tuple[np.ndarray, int]:
    """The samples and sample rate of a 16-bit PCM WAV file.

    Chunks other than `fmt ` and `data` are skipped; samples become `x / 32768`.

    Args:
      contents: the file's bytes.

    Returns:
      (float32 samples shaped [frames, channels], sample rate).

    Raises:
      ValueError: the bytes are not a 16-bit PCM WAV file (the message says why).
    """
    r = _Reader(bytes(contents))
    r.tag("RIFF")
    r.u32()
    r.tag("WAVE")
    channels, rate, block_align = _read_format(r)
    samples = None
    while r.offset < len(r.data):
        chunk, size = r.tag(), r.u32()
        if size > 0x7FFFFFFF:
            raise ValueError(f"WAV chunk '{chunk}' is too large: {size} bytes")
        body = r.take(size, "string")
        if chunk != "data":
            continue
        if samples is not None:
            raise ValueError("More than one data chunk found in WAV")
        frames = size // block_align
        samples = np.frombuffer(body[:frames * block_align], dtype="<i2")
    if samples is None:
        raise ValueError("No data chunk found in WAV")
    audio = (samples.astype(np.float32) / np.float32(32768.0)).reshape(-1, channels)
    return audio, rate
