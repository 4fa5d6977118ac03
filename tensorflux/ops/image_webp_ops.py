"""DecodeWebP (`tf.io.decode_webp`, `tf.image.decode_webp`): a WebP file, still or
animated, as uint8 [frames, height, width, channels] (a still image has one frame).
`channels` is 0 (the file's: 4 with alpha, else 3), 3 or 4, and must match the file when
given, as in TensorFlow. Decoding is Pillow's; kernel: kernels/cpu/image_webp_ops.py.
"""

from __future__ import annotations

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework.common_shapes import checked_dims
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable
from tensorflux.framework.tensor_conversion import convert_to_tensor

__all__ = ["decode_webp"]


def _decode_webp_shape(op):
    checked_dims(op.inputs[0], rank=0)
    return [tensor_shape.TensorShape([None, None, None, op.attrs["channels"] or None])]


define_op("DecodeWebP", inputs=["contents: string"], outputs=["image: dtype"],
          attrs=["channels: int = 0", "dtype: {uint8} = DT_UINT8"],
          shape_fn=_decode_webp_shape)
not_differentiable("DecodeWebP")


def decode_webp(contents, channels=0, dtype=dtypes.uint8, name=None):
    """Decodes a WebP image to uint8 [frames, height, width, channels]
    (`tf.io.decode_webp`)."""
    return apply_op("DecodeWebP", contents=convert_to_tensor(contents, dtype=dtypes.string),
                    channels=channels, dtype=dtypes.as_dtype(dtype),
                    name=name or "DecodeWebP")
