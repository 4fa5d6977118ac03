"""CPU kernel of DecodeWebP (tensorflux/ops/image_webp_ops.py), by Pillow; every frame of
an animated file, composed on its canvas."""

from __future__ import annotations

import io

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels.registry import kernel_factory


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def decode_webp(data: bytes, channels: int) -> np.ndarray:
    from PIL import Image, ImageSequence  # Pillow is imported only when decoding

    if channels not in (0, 3, 4):
        raise _invalid("WebP only supports 3 or 4 channels")
    if data[:4] != b"RIFF" or data[8:12] != b"WEBP":
        raise _invalid(f"Invalid WebP header, data size {len(data)}")
    try:
        img = Image.open(io.BytesIO(data), formats=["WEBP"])
        has_alpha = "A" in img.getbands() or img.info.get("transparency") is not None
        natural = 4 if has_alpha else 3
        if channels and channels != natural:
            raise _invalid("Number of channels requested does not match input")
        mode = "RGBA" if natural == 4 else "RGB"
        frames = [np.asarray(f.convert(mode), np.uint8) for f in ImageSequence.Iterator(img)]
    except errors.OpError:
        raise
    except Exception as e:  # noqa: BLE001 - Pillow raises many kinds; all mean bad data
        raise _invalid(f"Invalid WebP data, size {len(data)}: {e}") from None
    return np.stack(frames)


@kernel_factory("DecodeWebP")
def _decode_webp(node):
    channels = node.attrs["channels"]

    def compute(ctx, contents):
        return decode_webp(bytes(np.asarray(contents, dtype=object).item()), channels)

    return compute
