"""`tf.audio`: WAV decoding and encoding (tensorflux/ops/audio_ops.py)."""

from tensorflux.ops.audio_ops import decode_wav, encode_wav  # noqa: F401
