"""Image file codecs for the DecodePng/DecodeJpeg/DecodeBmp/DecodeGif/DecodeImage and
EncodePng/EncodeJpeg kernels, through Pillow (DESIGN §8), with TensorFlow's conventions:
channels 0 keeps the file's own (grey 1, grey+alpha 2, RGB 3, RGBA 4; palettes expand to RGB
or RGBA), a GIF is every frame composed, [frames, height, width, 3].

Every function raises ValueError with a TensorFlow-like message on bad input; the kernels turn
it into InvalidArgumentError.
"""

from __future__ import annotations

import io

import numpy as np

from tensorflux.lib import png as png_lib

_MODES = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}


def sniff(data: bytes) -> str | None:
    """'jpeg', 'png', 'gif', 'bmp' by magic bytes, else None."""
    if data[:3] == b"\xff\xd8\xff":
        return "jpeg"
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return "png"
    if data[:4] in (b"GIF8",):
        return "gif"
    if data[:2] == b"BM":
        return "bmp"
    return None


def _open(data: bytes, kind: str):
    from PIL import Image  # Pillow is imported only when an image is decoded

    try:
        img = Image.open(io.BytesIO(data))
        img.load()
    except Exception as e:  # noqa: BLE001 - Pillow raises many kinds; all mean bad data
        raise ValueError(f"Invalid {kind.upper()} data, size {len(data)}: {e}") from None
    return img


def _natural_channels(img) -> int:
    mode = img.mode
    if mode in ("1", "L", "I", "I;16", "I;16B", "F"):
        return 1
    if mode == "LA":
        return 2
    if mode == "P":
        return 4 if "transparency" in img.info else 3
    if mode in ("RGBA", "PA"):
        return 4
    return 3


def _to_array(img, channels: int, dtype: str) -> np.ndarray:
    """The pixels with `channels` channels (0: the file's), as uint8 or uint16."""
    want = channels or _natural_channels(img)
    if img.mode.startswith("I"):  # 16-bit grey: TF keeps the high byte for uint8
        grey = np.asarray(img, dtype=np.int64).astype(np.uint16)
        top = 65535
        if dtype != "uint16":
            grey, top = (grey >> 8).astype(np.uint8), 255
        planes = [grey] * (3 if want in (3, 4) else 1)
        if want in (2, 4):  # an opaque alpha channel
            planes.append(np.full_like(grey, top))
        return np.stack(planes, axis=-1)
    a = np.asarray(img.convert(_MODES[want]), dtype=np.uint8)
    if a.ndim == 2:
        a = a[:, :, None]
    if dtype == "uint16":
        return a.astype(np.uint16) * 257
    return a


def _check_channels(channels: int, allowed=(0, 1, 2, 3, 4)) -> None:
    if channels not in allowed:
        raise ValueError(f"channels must be 0, 1, 3, or 4, got {channels}"
                         if 2 not in allowed else
                         f"channels must be 0, 1, 2, 3, or 4, got {channels}")


def decode_png(data: bytes, channels: int = 0, dtype: str = "uint8") -> np.ndarray:
    if channels not in (0, 1, 3, 4):  # 0 keeps a grey+alpha file's two; 2 is not asked for
        raise ValueError(f"`channels` must be 0, 1, 3 or 4 but got {channels}")
    if sniff(data) != "png":
        raise ValueError(f"Invalid PNG header, data size {len(data)}")
    return _to_array(_open(data, "png"), channels, dtype)


def decode_jpeg(data: bytes, channels: int = 0, ratio: int = 1) -> np.ndarray:
    _check_channels(channels, (0, 1, 3))
    if ratio not in (1, 2, 4, 8):
        raise ValueError(f"ratio must be 1, 2, 4, or 8, got {ratio}")
    img = _open(data, "jpeg")
    if ratio != 1:
        img = img.reduce(ratio)
    if not channels:
        channels = 1 if img.mode == "L" else 3
    return _to_array(img, channels, "uint8")


def jpeg_shape(data: bytes) -> tuple[int, int, int]:
    """(height, width, channels) from a JPEG's header, without decoding it."""
    from PIL import Image

    if sniff(data) != "jpeg":
        raise ValueError(f"Invalid JPEG data, size {len(data)}")
    try:
        img = Image.open(io.BytesIO(data))
    except Exception as e:  # noqa: BLE001 - Pillow raises many kinds; all mean bad data
        raise ValueError(f"Invalid JPEG data, size {len(data)}: {e}") from None
    return img.size[1], img.size[0], len(img.getbands())


def decode_and_crop_jpeg(data: bytes, window, channels: int = 0) -> np.ndarray:
    """The [y, x, height, width] window of a decoded JPEG."""
    y, x, h, w = (int(v) for v in window)
    image = decode_jpeg(data, channels)
    if y < 0 or x < 0 or h <= 0 or w <= 0 or y + h > image.shape[0] or \
            x + w > image.shape[1]:
        raise ValueError(f"Invalid JPEG data or crop window, data size {len(data)}")
    return np.ascontiguousarray(image[y:y + h, x:x + w])


def decode_bmp(data: bytes, channels: int = 0) -> np.ndarray:
    _check_channels(channels, (0, 1, 3, 4))
    if sniff(data) != "bmp":
        raise ValueError("Malformed BMP: invalid header")
    return _to_array(_open(data, "bmp"), channels, "uint8")


def decode_gif(data: bytes) -> np.ndarray:
    """Every frame, composed, as uint8 [frames, height, width, 3]."""
    from PIL import ImageSequence

    if sniff(data) != "gif":
        raise ValueError("Invalid GIF data (no GIF header)")
    img = _open(data, "gif")
    frames = [np.asarray(f.convert("RGB"), dtype=np.uint8)
              for f in ImageSequence.Iterator(img)]
    return np.stack(frames)


def decode_any(data: bytes, channels: int, dtype: str, expand_animations: bool) -> np.ndarray:
    """decode_image: any of the four formats; GIFs 4-D unless `expand_animations` is off.
    A float `dtype` scales to [0, 1]."""
    kind = sniff(data)
    wide = dtype == "uint16"
    if kind == "png":
        a = decode_png(data, channels, "uint16" if dtype != "uint8" else "uint8")
    elif kind == "jpeg":
        a = decode_jpeg(data, channels)
    elif kind == "bmp":
        a = decode_bmp(data, channels)
    elif kind == "gif":
        if channels not in (0, 3):
            raise ValueError(f"channels must be 0 or 3 for GIF, got {channels}")
        a = decode_gif(data)
        if not expand_animations:
            a = a[0]
    else:
        raise ValueError("Unknown image file format. One of JPEG, PNG, GIF, BMP required.")
    if dtype == "float32":
        return (a.astype(np.float32) / np.float32(np.iinfo(a.dtype).max)).astype(np.float32)
    if wide and a.dtype == np.uint8:
        return a.astype(np.uint16) * 257
    return a


def encode_png(image: np.ndarray, compression: int = -1, between=None) -> bytes:
    """`between`: called between blocks of a large image's compression (png.encode_png)."""
    if image.ndim != 3 or image.shape[2] not in (1, 2, 3, 4):
        raise ValueError(f"image must have 1, 2, 3, or 4 channels, got {image.shape[-1]}")
    if image.dtype == np.uint8:
        return png_lib.encode_png(image, compression, between)
    return png_lib.encode_png16(image, compression, between)


def encode_jpeg(image: np.ndarray, fmt: str = "", quality: int = 95, progressive=False,
                optimize_size=False, chroma_downsampling=True, density_unit="in",
                x_density=300, y_density=300) -> bytes:
    from PIL import Image

    channels = image.shape[-1]
    if fmt == "grayscale":
        want = 1
    elif fmt == "rgb":
        want = 3
    else:
        want = channels
    if channels != want or channels not in (1, 3):
        raise ValueError(f"image must have 1 or 3 channels, got {channels}"
                         if not fmt else f"format {fmt} requires {want} channel(s), got "
                         f"{channels}")
    if not 0 <= quality <= 100:
        raise ValueError(f"quality must be in [0,100], got {quality}")
    img = Image.fromarray(image[:, :, 0] if want == 1 else image, _MODES[want])
    out = io.BytesIO()
    dpi = (x_density, y_density) if density_unit == "in" else \
        (x_density * 2.54, y_density * 2.54)
    img.save(out, "JPEG", quality=quality, progressive=progressive, optimize=optimize_size,
             subsampling=2 if chroma_downsampling else 0, dpi=dpi)
    return out.getvalue()
