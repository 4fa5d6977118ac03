"""Audio ops: DecodeWav, EncodeWav (`tf.audio.decode_wav`, `tf.audio.encode_wav`).

16-bit PCM WAV only, as TensorFlow: samples are floats in [-1, 1) (`int16 / 32768`),
shaped [frames, channels]. The codec is tensorflux/lib/wav.py (the writer is the one
AudioSummary uses); kernels: tensorflux/kernels/cpu/audio_ops.py.
"""

from __future__ import annotations

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable
from tensorflux.framework.tensor_conversion import convert_to_tensor

__all__ = ["decode_wav", "encode_wav"]

TensorShape = tensor_shape.TensorShape


def _rank(op, i: int, rank: int):
    shape = op.inputs[i].shape
    if shape.ndims is not None and shape.ndims != rank:
        raise ValueError(f"Shape must be rank {rank} but is rank {shape.ndims} for "
                         f"'{op.name}' ({op.type}) with input shapes: "
                         + ", ".join(str(t.shape) for t in op.inputs) + ".")


def _decode_wav_shape(op):
    _rank(op, 0, 0)
    samples, channels = op.attrs["desired_samples"], op.attrs["desired_channels"]
    return [TensorShape([samples if samples >= 0 else None,
                         channels if channels >= 0 else None]), TensorShape([])]


def _encode_wav_shape(op):
    _rank(op, 0, 2)
    _rank(op, 1, 0)
    return [TensorShape([])]


define_op("DecodeWav", inputs=["contents: string"],
          outputs=["audio: float", "sample_rate: int32"],
          attrs=["desired_channels: int = -1", "desired_samples: int = -1"],
          shape_fn=_decode_wav_shape)
not_differentiable("DecodeWav")
define_op("EncodeWav", inputs=["audio: float", "sample_rate: int32"],
          outputs=["contents: string"], shape_fn=_encode_wav_shape)
not_differentiable("EncodeWav")


def decode_wav(contents, desired_channels=-1, desired_samples=-1, name=None):
    """Decodes a 16-bit PCM WAV file (`tf.audio.decode_wav`).

    Args:
      contents: a scalar string, the file's bytes.
      desired_channels: the channels of the output (-1: the file's). Extra channels repeat
        the file's last one; fewer keep the first ones.
      desired_samples: the frames of the output (-1: the file's), truncated or zero-padded.
      name: a name for the op.

    Returns:
      (audio, sample_rate): float32 [samples, channels] in [-1, 1), and an int32 scalar.
    """
    return apply_op("DecodeWav", contents=convert_to_tensor(contents, dtype=dtypes.string),
                    desired_channels=desired_channels, desired_samples=desired_samples,
                    name=name or "DecodeWav")


def encode_wav(audio, sample_rate, name=None):
    """Encodes float audio [frames, channels] as a 16-bit PCM WAV file
    (`tf.audio.encode_wav`); samples are clipped to [-1, 1)."""
    return apply_op("EncodeWav", audio=convert_to_tensor(audio, dtype=dtypes.float32),
                    sample_rate=convert_to_tensor(sample_rate, dtype=dtypes.int32),
                    name=name or "EncodeWav")
