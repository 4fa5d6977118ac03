"""CPU kernels of the summary ops (tensorflux/ops/summary_ops.py): each returns a serialized
`Summary` as a string scalar, built as TensorFlow's kernels build it.

- ScalarSummary: one `simple_value` (the value cast to float32) per tag.
- HistogramSummary: the default-bucket histogram (tensorflux/lib/histogram.py); a NaN or an
  infinity fails the step.
- ImageSummary: PNG (tensorflux/lib/png.py). uint8 pixels are kept; float and half images
  are scaled one image at a time: with no negative value by 255 / max, otherwise by
  127 / max(|min|, |max|) around 128, the extremes taken over pixels whose channels are all
  finite (in float32), the product and sum computed in the image's type and truncated to
  uint8; a pixel with a non-finite channel gets `bad_color`.
- AudioSummary(V2): 16-bit WAV (tensorflux/lib/wav.py) at the sample rate rounded to an
  integer (at least 1).
- TensorSummaryV2: the tensor as a TensorProto (`tensor_content`, `string_val` for strings)
  with the given SummaryMetadata.
- MergeSummary: the values of every input Summary, in order; a repeated non-empty tag fails.
"""

from __future__ import annotations

import numpy as np
from google.protobuf.message import DecodeError

from tensorflux.framework import errors
from tensorflux.kernels.registry import kernel, kernel_factory
from tensorflux.lib.histogram import fill_histogram_proto
from tensorflux.lib.png import encode_png
from tensorflux.lib.wav import encode_wav
from tensorflux.protos import summary_pb2


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _shape_str(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def _text(s) -> str:
    return s.decode("utf-8", "replace") if isinstance(s, bytes) else str(s)


def _scalar_tag(tag, message: str) -> str:
    tag = np.asarray(tag, dtype=object)
    if tag.ndim != 0:
        raise _invalid(message)
    return _text(tag[()])


def _serialized(summary) -> np.ndarray:
    return np.array(summary.SerializeToString(), dtype=object)


@kernel("ScalarSummary")
def _scalar_summary(ctx, tags, values):
    tags = np.asarray(tags, dtype=object)
    values = np.asarray(values)
    if tags.shape != values.shape:
        single = f" (tag '{_text(tags.reshape(-1)[0])}')" if tags.size == 1 else ""
        raise _invalid(f"tags and values are not the same shape: {_shape_str(tags.shape)} "
                       f"!= {_shape_str(values.shape)}{single}")
    summary = summary_pb2.Summary()
    for tag, value in zip(tags.reshape(-1).tolist(),
                          values.astype(np.float32).reshape(-1).tolist(), strict=True):
        summary.value.add(tag=_text(tag), simple_value=value)
    return _serialized(summary)


@kernel_factory("HistogramSummary")
def _histogram_summary(node):
    name = node.name

    def compute(ctx, tag, values):
        return _serialized(histogram_summary(tag, values, name))

    return compute


def histogram_summary(tag, values, name: str) -> summary_pb2.Summary:
    """A Summary with the histogram of the finite `values` under the scalar `tag`; a NaN
    or an infinity is an InvalidArgumentError naming `name`."""
    tag = _scalar_tag(tag, "tags must be scalar")
    v = np.asarray(values, dtype=np.float64)
    if not np.isfinite(v).all():
        first = v.reshape(-1)[~np.isfinite(v.reshape(-1))][0]
        if np.isnan(first):
            raise _invalid(f"Nan in summary histogram for: {name}")
        raise _invalid(f"Infinity in Histogram for: {name}")
    summary = summary_pb2.Summary()
    fill_histogram_proto(summary.value.add(tag=tag).histo, v)
    return summary


# ---- images ------------------------------------------------------------------------------

_ZERO_THRESHOLD = np.float32(1e-6)


def _normalize_image(image: np.ndarray, bad_color: np.ndarray) -> np.ndarray:
    """A float or half [h*w, depth] image as uint8 (see the module docstring)."""
    t = image.dtype.type
    finite = np.isfinite(image).all(axis=1)
    good = image[finite].astype(np.float32)
    lo = good.min() if good.size else np.float32(np.inf)
    hi = good.max() if good.size else np.float32(-np.inf)
    if lo < 0:
        max_val = max(abs(lo), abs(hi))
        scale = np.float32(0) if max_val < _ZERO_THRESHOLD else np.float32(127) / max_val
        offset = t(128)
    else:
        scale = np.float32(0) if hi < _ZERO_THRESHOLD else np.float32(255) / hi
        offset = t(0)
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = image * t(scale) + offset
        out = np.clip(np.trunc(scaled), 0, 255)
    out = np.where(finite[:, None], out, 0).astype(np.uint8)
    out[~finite] = bad_color
    return out


def _image_values(summary, tag: str, images: np.ndarray, max_images: int,
                  bad_color: np.ndarray) -> None:
    batch, h, w, depth = images.shape
    flat = images.reshape(batch, h * w, depth)
    for i in range(min(max_images, batch)):
        suffix = f"/image/{i}" if max_images > 1 else "/image"
        pixels = flat[i] if flat.dtype == np.uint8 else _normalize_image(flat[i], bad_color)
        summary.value.add(tag=tag + suffix, image=summary_pb2.Summary.Image(
            height=h, width=w, colorspace=depth,
            encoded_image_string=encode_png(pixels.reshape(h, w, depth))))


@kernel_factory("ImageSummary")
def _image_summary(node):
    max_images = node.attrs["max_images"]
    bad_color_full = np.asarray(node.attrs["bad_color"], dtype=np.uint8).reshape(-1)

    def compute(ctx, tag, tensor):
        return _serialized(image_summary(tag, tensor, max_images, bad_color_full))

    return compute


def image_summary(tag, tensor, max_images: int, bad_color: np.ndarray) -> summary_pb2.Summary:
    """A Summary with up to `max_images` PNGs of the [batch, h, w, 1|3|4] `tensor`
    (`bad_color`: the flat uint8 colour of non-finite pixels)."""
    tag = _scalar_tag(tag, "Tags must be a scalar")
    images = np.asarray(tensor)
    if images.ndim != 4 or images.shape[3] not in (1, 3, 4):
        raise _invalid(f"Tensor must be 4-D with last dim 1, 3, or 4, not "
                       f"{_shape_str(images.shape)}")
    batch, h, w, depth = images.shape
    if h * w >= 1 << 29:
        raise _invalid(f"Tensor too large for summary {_shape_str(images.shape)}")
    if h * w == 0:
        raise _invalid(f"input tensor must have non-zero dims. Found: [{batch}, {h}, "
                       f"{w}, {depth}].")
    if images.dtype != np.uint8 and bad_color.size < depth:
        raise _invalid(f"expected depth <= bad_color.size, got depth = {depth}, "
                       f"bad_color.size = {bad_color.size}")
    summary = summary_pb2.Summary()
    _image_values(summary, tag, images, max_images, bad_color[:depth])
    return summary


# ---- audio -------------------------------------------------------------------------------


def audio_summary(tag, tensor, sample_rate: float, max_outputs: int) -> summary_pb2.Summary:
    """A Summary with up to `max_outputs` 16-bit WAV clips of the [batch, frames(,
    channels)] float `tensor`."""
    tag = _scalar_tag(tag, "Tag must be a scalar")
    audio = np.asarray(tensor, dtype=np.float32)
    if audio.ndim not in (2, 3):
        raise _invalid(f"Tensor must be 3-D or 2-D, got: {_shape_str(audio.shape)}")
    if not sample_rate > 0:
        raise _invalid("sample_rate must be > 0")
    batch, frames = audio.shape[:2]
    channels = 1 if audio.ndim == 2 else audio.shape[2]
    clips = audio.reshape(batch, frames, channels)
    rate = max(int(np.rint(np.float32(sample_rate))), 1)
    summary = summary_pb2.Summary()
    for i in range(min(max_outputs, batch)):
        suffix = f"/audio/{i}" if max_outputs > 1 else "/audio"
        try:
            wav = encode_wav(clips[i], rate)
        except ValueError as e:
            raise _invalid(str(e)) from None
        summary.value.add(tag=tag + suffix, audio=summary_pb2.Summary.Audio(
            sample_rate=sample_rate, num_channels=channels, length_frames=frames,
            content_type="audio/wav", encoded_audio_string=wav))
    return summary


@kernel_factory("AudioSummaryV2")
def _audio_summary_v2(node):
    max_outputs = node.attrs["max_outputs"]

    def compute(ctx, tag, tensor, sample_rate):
        rate = np.asarray(sample_rate, dtype=np.float32)
        if rate.size != 1:
            raise _invalid("sample_rate must be rank-0 or contain a single value")
        return _serialized(audio_summary(tag, tensor, float(rate.reshape(-1)[0]), max_outputs))

    return compute


@kernel_factory("AudioSummary")
def _audio_summary_v1(node):
    max_outputs, rate = node.attrs["max_outputs"], float(np.float32(node.attrs["sample_rate"]))

    def compute(ctx, tag, tensor):
        return _serialized(audio_summary(tag, tensor, rate, max_outputs))

    return compute


# ---- tensors and merging -----------------------------------------------------------------


def fill_tensor_proto(proto, value: np.ndarray, dtype) -> None:
    """Fills the TensorProto `proto` with `value` of type `dtype`."""
    proto.dtype = dtype.as_datatype_enum
    proto.tensor_shape.SetInParent()
    for d in value.shape:
        proto.tensor_shape.dim.add(size=d)
    if value.dtype == object:
        proto.string_val.extend(s if isinstance(s, bytes) else str(s).encode()
                                for s in value.reshape(-1).tolist())
    else:
        proto.tensor_content = np.ascontiguousarray(
            value, dtype=value.dtype.newbyteorder("<")).tobytes()


@kernel_factory("TensorSummaryV2")
def _tensor_summary_v2(node):
    dtype = node.attrs["T"]

    def compute(ctx, tag, tensor, serialized_summary_metadata):
        tag = _scalar_tag(tag, "tag must be scalar")
        summary = summary_pb2.Summary()
        v = summary.value.add(tag=tag)
        fill_tensor_proto(v.tensor, np.asarray(tensor), dtype)
        v.metadata.SetInParent()
        meta = np.asarray(serialized_summary_metadata, dtype=object).reshape(-1)
        try:
            v.metadata.ParseFromString(meta[0] if meta.size else b"")
        except DecodeError:
            v.metadata.Clear()
        return _serialized(summary)

    return compute


@kernel("MergeSummary")
def _merge_summary(ctx, *inputs):
    merged = summary_pb2.Summary()
    tags: set[str] = set()
    for x in inputs:
        for s in np.asarray(x, dtype=object).reshape(-1).tolist():
            part = summary_pb2.Summary()
            try:
                part.ParseFromString(s)
            except (DecodeError, TypeError):
                raise _invalid("Could not parse one of the summary inputs") from None
            for value in part.value:
                if value.tag and value.tag in tags:
                    raise _invalid(f"Duplicate tag {value.tag} found in summary inputs ")
                tags.add(value.tag)
            merged.value.extend(part.value)
    return _serialized(merged)
