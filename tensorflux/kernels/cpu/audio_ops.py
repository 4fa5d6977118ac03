"""CPU kernels of the audio ops (tensorflux/ops/audio_ops.py): DecodeWav, EncodeWav, on the
WAV codec of tensorflux/lib/wav.py. A file that is not 16-bit PCM WAV, or audio that
cannot be encoded, is an InvalidArgumentError naming the problem."""

from __future__ import annotations

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels.registry import kernel, kernel_factory
from tensorflux.lib import wav


@kernel_factory("DecodeWav")
def _decode_wav(node):
    want_channels = node.attrs["desired_channels"]
    want_samples = node.attrs["desired_samples"]

    def compute(ctx, contents):
        try:
            audio, rate = wav.decode_wav(bytes(np.asarray(contents, dtype=object).item()))
        except ValueError as e:
            raise errors.InvalidArgumentError(None, None, str(e)) from None
        if rate > np.iinfo(np.int32).max:
            raise errors.InvalidArgumentError(
                None, None, f"sample_rate {rate} does not fit in an int32")
        frames, channels = audio.shape
        if want_channels >= 0 and want_channels != channels:
            # Channels past the file's repeat its last one.
            source = np.minimum(np.arange(want_channels), channels - 1)
            audio = audio[:, source]
        if want_samples >= 0 and want_samples != frames:
            out = np.zeros((want_samples, audio.shape[1]), np.float32)
            n = min(frames, want_samples)
            out[:n] = audio[:n]
            audio = out
        return np.ascontiguousarray(audio, np.float32), np.int32(rate)

    return compute


@kernel("EncodeWav")
def _encode_wav(ctx, audio, sample_rate):
    audio = np.asarray(audio, np.float32)
    if audio.ndim != 2:
        raise errors.InvalidArgumentError(
            None, None, f"audio must be 2-dimensional: {list(audio.shape)}")
    if np.ndim(sample_rate) != 0:
        raise errors.InvalidArgumentError(
            None, None, f"Input sample_rate should be a scalar tensor, got "
            f"{list(np.shape(sample_rate))} instead.")
    rate = int(sample_rate)
    if rate < 0:
        rate += 2**64  # TensorFlow reads the rate as unsigned: the message shows it so
    try:
        data = wav.encode_wav(audio, rate)
    except ValueError as e:
        raise errors.InvalidArgumentError(None, None, str(e)) from None
    return np.array(data, dtype=object)
