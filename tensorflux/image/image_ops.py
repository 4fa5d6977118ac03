"""`tf.image` compositions built from ops (paper §4): resizing wrappers, crops and pads,
flips and rotations, colour adjustments and their random variants, dtype conversion and
per-image standardization, and `tf.random_crop`.

Images are 3-D [height, width, channels] or 4-D [batch, height, width, channels] tensors, as in
TF1. Static checks raise ValueError with TensorFlow's messages; the raw ops are in
tensorflux/ops/image_ops.py.
"""

from __future__ import annotations

import enum

import numpy as np

from tensorflux.control_flow.builders import case, cond, with_dependencies
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.common_shapes import constant_value
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    image_ops,
    joining_ops,
    logging_ops,
    math_ops,
    random_ops,
    reduction_ops,
    slicing_ops,
    unary_ops,
)


class ResizeMethod(enum.IntEnum):
    """The interpolation of `resize_images` (TF1's integer constants)."""

    BILINEAR = 0
    NEAREST_NEIGHBOR = 1
    BICUBIC = 2
    AREA = 3


_RESIZE_OPS = {ResizeMethod.BILINEAR: "ResizeBilinear",
               ResizeMethod.NEAREST_NEIGHBOR: "ResizeNearestNeighbor",
               ResizeMethod.BICUBIC: "ResizeBicubic", ResizeMethod.AREA: "ResizeArea"}
_METHOD_NAMES = {"bilinear": 0, "nearest": 1, "bicubic": 2, "area": 3}


def _image(image, name="image"):
    """The tensor and whether it is a batch (4-D); ValueError for other ranks."""
    image = convert_to_tensor(image, name=name)
    ndims = image.shape.ndims
    if ndims is None:
        raise ValueError("'image' (shape <unknown>) must have either 3 or 4 dimensions.")
    if ndims not in (3, 4):
        raise ValueError(f"'image' (shape {image.shape}) must have either 3 or 4 dimensions.")
    return image, ndims == 4


def _static_or_dynamic(image):
    """(height, width) as ints where known, else scalar int32 tensors."""
    dims = image.shape.as_list()[-3:-1]
    shape = None
    out = []
    for k, d in enumerate(dims):
        if d is None:
            if shape is None:
                shape = array_ops.shape(image)
            out.append(shape[image.shape.ndims - 3 + k])
        else:
            out.append(d)
    return out


def _resize(images, size, op_type, align_corners=False, half_pixel_centers=False, name=None):
    images, batch = _image(images, "images")
    with graph_lib.name_scope(name, "resize", [images, size]):
        if not batch:
            images = array_ops.expand_dims(images, 0)
        out = image_ops.resize(op_type, images, size, align_corners, half_pixel_centers)
        return out if batch else array_ops.squeeze(out, [0])


def resize_images(images, size, method=ResizeMethod.BILINEAR, align_corners=False,
                  preserve_aspect_ratio=False, name=None):
    """Resizes images to `size` = [new_height, new_width] (`tf.image.resize_images`).

    Args:
      images: a 3-D or 4-D image tensor.
      size: two int32 values.
      method: a `ResizeMethod` (or its name: 'bilinear', 'nearest', 'bicubic', 'area').
      align_corners: align the corner pixels of input and output.
      preserve_aspect_ratio: fit within `size` keeping the aspect ratio.
      name: a name scope.

    Returns:
      float32 images (the input's dtype for nearest neighbour), of the input's rank.

    Raises:
      ValueError: bad rank, or an unknown method.
    """
    images, batch = _image(images, "images")
    method = _METHOD_NAMES.get(method, method) if isinstance(method, str) else method
    if method not in _RESIZE_OPS.keys():
        raise ValueError("Resize method is not implemented.")
    size_value = constant_value(convert_to_tensor(size, dtypes.int32))
    if preserve_aspect_ratio and size_value is not None:
        h, w = images.shape.as_list()[-3:-1]
        if h is not None and w is not None:
            scale = min(size_value[0] / h, size_value[1] / w)
            size = [int(round(h * scale)), int(round(w * scale))]
            size_value = size
    if size_value is not None and images.shape.as_list()[-3:-1] == list(size_value):
        return images
    return _resize(images, size, _RESIZE_OPS[ResizeMethod(method)], align_corners, False, name)


def _resize_fn(op_type):
    def fn(images, size, align_corners=False, name=None, half_pixel_centers=False):
        return image_ops.resize(op_type, images, size, align_corners, half_pixel_centers, name)
    fn.__name__ = op_type
    fn.__doc__ = f"The {op_type} op on a 4-D batch (`tf.image.{op_type}`)."
    return fn


resize_bilinear = _resize_fn("ResizeBilinear")
resize_nearest_neighbor = _resize_fn("ResizeNearestNeighbor")
resize_bicubic = _resize_fn("ResizeBicubic")


def resize_area(images, size, align_corners=False, name=None):
    """The ResizeArea op on a 4-D batch (`tf.image.resize_area`)."""
    return image_ops.resize("ResizeArea", images, size, align_corners, False, name)


# ---- crops and pads -------------------------------------------------------------------------


def _check(condition, message):
    if condition is False:
        raise ValueError(message)


def _known(*values):
    return all(isinstance(v, (int, np.integer)) for v in values)


def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """The [target_height, target_width] window at (offset_height, offset_width)
    (`tf.image.crop_to_bounding_box`)."""
    with graph_lib.name_scope(None, "crop_to_bounding_box", [image]):
        image, batch = _image(image)
        height, width = _static_or_dynamic(image)
        for value, msg in ((offset_width, "offset_width must be >= 0."),
                           (offset_height, "offset_height must be >= 0.")):
            _check(not _known(value) or value >= 0, msg)
        _check(not _known(target_width) or target_width > 0, "target_width must be > 0.")
        _check(not _known(target_height) or target_height > 0, "target_height must be > 0.")
        if _known(width, target_width, offset_width):
            _check(width >= target_width + offset_width, "width must be >= target + offset.")
        if _known(height, target_height, offset_height):
            _check(height >= target_height + offset_height,
                   "height must be >= target + offset.")
        begin = joining_ops.stack([offset_height, offset_width, 0])
        size = joining_ops.stack([target_height, target_width, -1])
        if batch:
            begin = joining_ops.concat([[0], begin], 0)
            size = joining_ops.concat([[-1], size], 0)
        cropped = slicing_ops.slice(image, begin, size)
        # as TF: the window's static shape, the depth (and batch) kept from the input's
        dims = image.shape.as_list()
        dims[-3:-1] = [int(v) if _known(v) else None for v in (target_height, target_width)]
        cropped.set_shape(dims)
        return cropped


def pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """Zero-pads `image` to [target_height, target_width], placing it at the offsets
    (`tf.image.pad_to_bounding_box`)."""
    with graph_lib.name_scope(None, "pad_to_bounding_box", [image]):
        image, batch = _image(image)
        height, width = _static_or_dynamic(image)
        after_w = target_width - offset_width - width
        after_h = target_height - offset_height - height
        _check(not _known(offset_height) or offset_height >= 0,
               "offset_height must be >= 0")
        _check(not _known(offset_width) or offset_width >= 0, "offset_width must be >= 0")
        _check(not _known(after_w) or after_w >= 0, "width must be <= target - offset")
        _check(not _known(after_h) or after_h >= 0, "height must be <= target - offset")
        rows = [[offset_height, after_h], [offset_width, after_w], [0, 0]]
        if batch:
            rows = [[0, 0]] + rows
        paddings = joining_ops.stack([joining_ops.stack(r) for r in rows])
        return joining_ops.pad(image, paddings)


def central_crop(image, central_fraction):
    """The central `central_fraction` of the image (`tf.image.central_crop`)."""
    with graph_lib.name_scope(None, "central_crop", [image]):
        image, batch = _image(image)
        if central_fraction <= 0.0 or central_fraction > 1.0:
            raise ValueError("central_fraction must be within (0, 1]")
        if central_fraction == 1.0:
            return image
        height, width = _static_or_dynamic(image)
        starts = []
        for size in (height, width):
            if _known(size):
                starts.append(int((size - size * central_fraction) / 2))
            else:
                size_f = math_ops.cast(size, dtypes.float64)
                starts.append(math_ops.cast((size_f - size_f * central_fraction) / 2,
                                            dtypes.int32))
        top, left = starts
        return crop_to_bounding_box(image, top, left, height - top * 2, width - left * 2)


def _max(a, b):
    return max(a, b) if _known(a, b) else math_ops.maximum(a, b)


def _min(a, b):
    return min(a, b) if _known(a, b) else math_ops.minimum(a, b)


def resize_image_with_crop_or_pad(image, target_height, target_width):
    """Centrally crops or zero-pads `image` to [target_height, target_width]
    (`tf.image.resize_image_with_crop_or_pad`)."""
    with graph_lib.name_scope(None, "resize_image_with_crop_or_pad", [image]):
        image, _ = _image(image)
        _check(not _known(target_width) or target_width > 0, "target_width must be > 0.")
        _check(not _known(target_height) or target_height > 0, "target_height must be > 0.")
        height, width = _static_or_dynamic(image)
        width_diff = target_width - width
        height_diff = target_height - height
        cropped = crop_to_bounding_box(image, _max(-height_diff // 2, 0),
                                       _max(-width_diff // 2, 0),
                                       _min(target_height, height), _min(target_width, width))
        return pad_to_bounding_box(cropped, _max(height_diff // 2, 0),
                                   _max(width_diff // 2, 0), target_height, target_width)


resize_with_crop_or_pad = resize_image_with_crop_or_pad


def random_crop(value, size, seed=None, name=None):
    """A random window of shape `size` from `value` (`tf.random_crop`).

    Raises:
      InvalidArgumentError (at run time): `value` is smaller than `size` in some dimension.
    """
    with graph_lib.name_scope(name, "random_crop", [value, size]) as scope:
        value = convert_to_tensor(value, name="value")
        size = convert_to_tensor(size, dtype=dtypes.int32, name="size")
        shape = array_ops.shape(value)
        check = logging_ops.Assert(
            reduction_ops.reduce_all(comparison_ops.greater_equal(shape, size)),
            ["Need value.shape >= size, got ", shape, size], summarize=1000)
        shape = with_dependencies([check], shape)
        limit = shape - size + 1
        offset = random_ops.random_uniform(array_ops.shape(shape), dtype=size.dtype,
                                           maxval=size.dtype.max, seed=seed) % limit
        return slicing_ops.slice(value, offset, size, name=scope)


# ---- flips and rotations --------------------------------------------------------------------


def _flip(image, axis, scope):
    with graph_lib.name_scope(None, scope, [image]):
        image, batch = _image(image)
        return joining_ops.reverse(image, [axis + 1 if batch else axis])


def flip_left_right(image):
    """Mirrors the width axis (`tf.image.flip_left_right`)."""
    return _flip(image, 1, "flip_left_right")


def flip_up_down(image):
    """Mirrors the height axis (`tf.image.flip_up_down`)."""
    return _flip(image, 0, "flip_up_down")


def _random_flip(image, axis, seed, scope):
    with graph_lib.name_scope(None, scope, [image]):
        image, batch = _image(image)
        if not batch:
            u = random_ops.random_uniform([], 0, 1.0, seed=seed)
            flipped = cond(comparison_ops.less(u, 0.5),
                           lambda: joining_ops.reverse(image, [axis]), lambda: image)
            flipped.set_shape(image.shape)
            return flipped
        n = array_ops.shape(image)[0]
        u = random_ops.random_uniform(array_ops.expand_dims(n, 0), 0, 1.0, seed=seed)
        flips = math_ops.cast(unary_ops.round(array_ops.reshape(u, [-1, 1, 1, 1])),
                              image.dtype)
        return flips * joining_ops.reverse(image, [axis + 1]) + (1 - flips) * image


def random_flip_left_right(image, seed=None):
    """Mirrors the width axis with probability 1/2 (`tf.image.random_flip_left_right`)."""
    return _random_flip(image, 1, seed, "random_flip_left_right")


def random_flip_up_down(image, seed=None):
    """Mirrors the height axis with probability 1/2 (`tf.image.random_flip_up_down`)."""
    return _random_flip(image, 0, seed, "random_flip_up_down")


def transpose_image(image):
    """Swaps height and width (`tf.image.transpose_image`)."""
    with graph_lib.name_scope(None, "transpose", [image]):
        image, batch = _image(image)
        return array_ops.transpose(image, [0, 2, 1, 3] if batch else [1, 0, 2])


def _rot90_fixed(image, k, batch):
    h, w = (1, 2) if batch else (0, 1)
    perm = [0, 2, 1, 3] if batch else [1, 0, 2]
    if k == 0:
        return image
    if k == 1:
        return array_ops.transpose(joining_ops.reverse(image, [w]), perm)
    if k == 2:
        return joining_ops.reverse(image, [h, w])
    return joining_ops.reverse(array_ops.transpose(image, perm), [w])


def rot90(image, k=1, name=None):
    """Rotates counter-clockwise by k quarter turns (`tf.image.rot90`); `k` may be a
    tensor (then the four rotations are branches of one tf.case)."""
    with graph_lib.name_scope(name, "rot90", [image, k]):
        image, batch = _image(image)
        k_t = convert_to_tensor(k, dtypes.int32, name="k")
        value = constant_value(k_t)
        if value is not None:
            return _rot90_fixed(image, int(value) % 4, batch)
        k_t = math_ops.floormod(k_t, 4)
        branches = [(comparison_ops.equal(k_t, i),
                     (lambda i=i: _rot90_fixed(image, i, batch))) for i in range(3)]
        return case(branches, default=lambda: _rot90_fixed(image, 3, batch), exclusive=True)


# ---- dtype conversion and colour -----------------------------------------------------------


def _saturate_cast(value, dtype):
    dtype = dtypes.as_dtype(dtype)
    if value.dtype.is_floating and dtype.is_integer:
        value = math_ops.maximum(value, float(dtype.min))
        value = math_ops.minimum(value, float(dtype.max))
    return math_ops.cast(value, dtype)


def convert_image_dtype(image, dtype, saturate=False, name=None):
    """Converts between image dtypes, scaling integers to [0, 1] floats and back
    (`tf.image.convert_image_dtype`)."""
    image = convert_to_tensor(image, name="image")
    dtype = dtypes.as_dtype(dtype)
    if not (dtype.is_floating or dtype.is_integer):
        raise AttributeError("dtype must be either floating point or integer")
    if dtype == image.dtype:
        return array_ops.identity(image, name=name)
    with graph_lib.name_scope(name, "convert_image", [image]) as scope:
        src = image.dtype
        if src.is_integer and dtype.is_integer:
            scale_in, scale_out = src.max, dtype.max
            if scale_in > scale_out:
                scale = (scale_in + 1) // (scale_out + 1)
                scaled = math_ops.floordiv(image, convert_to_tensor(scale, src))
                return (_saturate_cast if saturate else math_ops.cast)(scaled, dtype)
            scale = (scale_out + 1) // (scale_in + 1)
            return math_ops.multiply(math_ops.cast(image, dtype),
                                     convert_to_tensor(scale, dtype), name=scope)
        if src.is_floating and dtype.is_floating:
            return math_ops.cast(image, dtype, name=scope)
        if src.is_integer:
            return math_ops.multiply(math_ops.cast(image, dtype),
                                     convert_to_tensor(1.0 / src.max, dtype), name=scope)
        scaled = math_ops.multiply(image, convert_to_tensor(dtype.max + 0.5, src))
        return (_saturate_cast if saturate else math_ops.cast)(scaled, dtype)


def _through_float(image, fn, scope, args):
    with graph_lib.name_scope(None, scope, [image] + list(args)):
        image = convert_to_tensor(image, name="image")
        orig = image.dtype
        flt = image if orig in (dtypes.float16, dtypes.float32) else \
            convert_image_dtype(image, dtypes.float32)
        return convert_image_dtype(fn(flt), orig, saturate=True)


def adjust_brightness(image, delta):
    """Adds `delta` to every pixel, in [0, 1] float units (`tf.image.adjust_brightness`)."""
    return _through_float(image, lambda x: math_ops.add(
        x, math_ops.cast(delta, x.dtype), name="adjust_brightness"), "adjust_brightness",
        [delta])


def adjust_contrast(images, contrast_factor):
    """(x - mean) * contrast_factor + mean per image and channel (`tf.image.adjust_contrast`)."""
    return _through_float(images, lambda x: apply_op(
        "AdjustContrastv2", images=x, contrast_factor=convert_to_tensor(
            contrast_factor, dtypes.float32)), "adjust_contrast", [contrast_factor])


def adjust_saturation(image, saturation_factor, name=None):
    """Scales the HSV saturation (`tf.image.adjust_saturation`)."""
    return _through_float(image, lambda x: apply_op(
        "AdjustSaturation", images=x, scale=convert_to_tensor(
            saturation_factor, dtypes.float32)), name or "adjust_saturation",
        [saturation_factor])


def adjust_hue(image, delta, name=None):
    """Rotates the HSV hue by `delta` in [-1, 1] turns (`tf.image.adjust_hue`)."""
    return _through_float(image, lambda x: apply_op(
        "AdjustHue", images=x, delta=convert_to_tensor(delta, dtypes.float32)),
        name or "adjust_hue", [delta])


def adjust_gamma(image, gamma=1, gain=1):
    """gain * image ** gamma in [0, 1] float units (`tf.image.adjust_gamma`).

    Raises:
      ValueError: a constant negative `gamma` (a fed one fails the step with
        InvalidArgumentError).
    """
    def fn(x):
        g = convert_to_tensor(gamma, name="gamma")
        message = "Gamma should be a non-negative real number."
        known = constant_value(g)
        if known is not None and np.any(known < 0):
            raise ValueError(message)
        if known is None:
            g = with_dependencies([logging_ops.Assert(
                comparison_ops.greater_equal(g, math_ops.cast(0, g.dtype)), [message])], g)
        return math_ops.multiply(math_ops.pow(x, math_ops.cast(g, x.dtype)),
                                 math_ops.cast(gain, x.dtype))
    return _through_float(image, fn, "adjust_gamma", [gamma, gain])


def random_brightness(image, max_delta, seed=None):
    """adjust_brightness by a delta uniform in [-max_delta, max_delta)
    (`tf.image.random_brightness`)."""
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    delta = random_ops.random_uniform([], -max_delta, max_delta, seed=seed)
    return adjust_brightness(image, delta)


def _check_range(lower, upper):
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")


def random_contrast(image, lower, upper, seed=None):
    """adjust_contrast by a factor uniform in [lower, upper) (`tf.image.random_contrast`)."""
    _check_range(lower, upper)
    return adjust_contrast(image, random_ops.random_uniform([], lower, upper, seed=seed))


def random_saturation(image, lower, upper, seed=None):
    """adjust_saturation by a factor uniform in [lower, upper)
    (`tf.image.random_saturation`)."""
    _check_range(lower, upper)
    return adjust_saturation(image, random_ops.random_uniform([], lower, upper, seed=seed))


def random_hue(image, max_delta, seed=None):
    """adjust_hue by a delta uniform in [-max_delta, max_delta) (`tf.image.random_hue`)."""
    if max_delta > 0.5:
        raise ValueError("max_delta must be <= 0.5.")
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    return adjust_hue(image, random_ops.random_uniform([], -max_delta, max_delta, seed=seed))


def rgb_to_hsv(images, name=None):
    """RGB to HSV, all in [0, 1] floats (`tf.image.rgb_to_hsv`)."""
    return apply_op("RGBToHSV", images=images, name=name or "RGBToHSV")


def hsv_to_rgb(images, name=None):
    """HSV to RGB, all in [0, 1] floats (`tf.image.hsv_to_rgb`)."""
    return apply_op("HSVToRGB", images=images, name=name or "HSVToRGB")


def rgb_to_grayscale(images, name=None):
    """Luma (0.2989 R + 0.587 G + 0.114 B) with one channel (`tf.image.rgb_to_grayscale`)."""
    with graph_lib.name_scope(name, "rgb_to_grayscale", [images]) as scope:
        images = convert_to_tensor(images, name="images")
        orig = images.dtype
        flt = convert_image_dtype(images, dtypes.float32)
        weights = convert_to_tensor(np.array([0.2989, 0.5870, 0.1140], np.float32))
        gray = reduction_ops.reduce_sum(flt * weights, -1, keepdims=True)
        return convert_image_dtype(gray, orig, name=scope)


def grayscale_to_rgb(images, name=None):
    """Repeats the one channel three times (`tf.image.grayscale_to_rgb`)."""
    with graph_lib.name_scope(name, "grayscale_to_rgb", [images]) as scope:
        images = convert_to_tensor(images, name="images")
        ndims = images.shape.ndims
        if ndims is not None and ndims < 2:
            raise ValueError(f"'images' (shape {images.shape}) must be at least two-dimensional.")
        multiples = [1] * (ndims - 1) + [3] if ndims is not None else \
            joining_ops.concat([array_ops.ones_like(array_ops.shape(images))[:-1], [3]], 0)
        out = joining_ops.tile(images, multiples, name=scope)
        return out


def per_image_standardization(image):
    """(x - mean) / max(stddev, 1 / sqrt(num_pixels)) per image
    (`tf.image.per_image_standardization`)."""
    with graph_lib.name_scope(None, "per_image_standardization", [image]) as scope:
        image = convert_to_tensor(image, name="image")
        if image.shape.ndims is not None and image.shape.ndims < 3:
            raise ValueError(f"'image' (shape {image.shape}) must be at least three-dimensional.")
        if not image.dtype.is_floating:
            image = math_ops.cast(image, dtypes.float32)
        num_pixels = reduction_ops.reduce_prod(array_ops.shape(image)[-3:])
        mean = reduction_ops.reduce_mean(image, axis=[-1, -2, -3], keepdims=True)
        centred = image - mean
        variance = reduction_ops.reduce_mean(unary_ops.square(centred), axis=[-1, -2, -3],
                                             keepdims=True)
        stddev = unary_ops.sqrt(variance)
        min_stddev = unary_ops.rsqrt(math_ops.cast(num_pixels, image.dtype))
        return math_ops.divide(centred, math_ops.maximum(stddev, min_stddev), name=scope)


def adjust_jpeg_quality(image, jpeg_quality, dct_method="", name=None):
    """The image after a JPEG round trip at `jpeg_quality` (`tf.image.adjust_jpeg_quality`)."""
    with graph_lib.name_scope(name, "adjust_jpeg_quality", [image]):
        image = convert_to_tensor(image, name="image")
        channels = image.shape.as_list()[-1] if image.shape.ndims else None
        orig = image.dtype
        image = convert_image_dtype(image, dtypes.uint8, saturate=True)
        encoded = image_ops.encode_jpeg_variable_quality(image, jpeg_quality)
        decoded = image_ops.decode_jpeg(encoded, channels=channels or 0,
                                        dct_method=dct_method)
        decoded.set_shape(image.shape)
        return convert_image_dtype(decoded, orig, saturate=True)


def random_jpeg_quality(image, min_jpeg_quality, max_jpeg_quality, seed=None):
    """adjust_jpeg_quality at a quality uniform in [min, max)
    (`tf.image.random_jpeg_quality`)."""
    if min_jpeg_quality < 0 or max_jpeg_quality < 0 or min_jpeg_quality > 100 or \
            max_jpeg_quality > 100:
        raise ValueError("jpeg encoding range must be between 0 and 100.")
    if min_jpeg_quality >= max_jpeg_quality:
        raise ValueError("`min_jpeg_quality` must be less than `max_jpeg_quality`.")
    quality = random_ops.random_uniform([], min_jpeg_quality, max_jpeg_quality, seed=seed,
                                        dtype=dtypes.int32)
    return adjust_jpeg_quality(image, quality)


def non_max_suppression_padded(boxes, scores, max_output_size, iou_threshold=0.5,
                               score_threshold=float("-inf"), pad_to_max_output_size=False,
                               name=None, sorted_input=False, canonicalized_coordinates=False,
                               tile_size=512):
    """NMS returning (selected indices, number valid) (`tf.image.non_max_suppression_padded`):
    of one image ([num_boxes, 4] boxes), or of a batch ([..., num_boxes, 4], each image on
    its own, indices padded to `max_output_size` with zeros, which a batch requires as in
    TF). `sorted_input`, `canonicalized_coordinates` and `tile_size` are hints for TF's
    batched algorithm; here every image's boxes are sorted by score (the same selection
    for inputs that are sorted) and either corner order is taken."""
    with graph_lib.name_scope(name, "non_max_suppression_padded"):
        boxes = convert_to_tensor(boxes, name="boxes")
        if boxes.shape.ndims is None or boxes.shape.ndims <= 2:
            return image_ops.non_max_suppression_padded(
                boxes, scores, max_output_size, iou_threshold, score_threshold,
                pad_to_max_output_size, None, sorted_input, canonicalized_coordinates,
                tile_size)
        if not pad_to_max_output_size:
            raise ValueError(f"'pad_to_max_output_size' (value {pad_to_max_output_size}) "
                             f"must be True for batched input")
        return _batched_nms_padded(boxes, scores, max_output_size, iou_threshold,
                                   score_threshold)


def _batched_nms_padded(boxes, scores, max_output_size, iou_threshold, score_threshold):
    """Each image's padded NMS (NonMaxSuppressionV4) under map_fn over the batch
    dimensions flattened into one."""
    from tensorflux.control_flow.functional_ops import map_fn

    scores = convert_to_tensor(scores, dtype=boxes.dtype, name="scores")
    max_output_size = convert_to_tensor(max_output_size, dtypes.int32)
    batch_shape = array_ops.shape(boxes)[:-2]
    num_boxes = array_ops.shape(boxes)[-2]
    flat_boxes = array_ops.reshape(boxes, joining_ops.concat([[-1], [num_boxes, 4]], 0))
    flat_scores = array_ops.reshape(scores, joining_ops.concat([[-1], [num_boxes]], 0))

    def one(image):
        b, s = image
        return image_ops.non_max_suppression_padded(
            b, s, max_output_size, iou_threshold, score_threshold,
            pad_to_max_output_size=True)

    indices, valid = map_fn(one, (flat_boxes, flat_scores),
                            dtype=(dtypes.int32, dtypes.int32), back_prop=False)
    indices = array_ops.reshape(indices, joining_ops.concat(
        [batch_shape, [max_output_size]], 0))
    valid = array_ops.reshape(valid, batch_shape)
    size = constant_value(max_output_size)
    indices.set_shape(boxes.shape[:-2].concatenate([None if size is None else int(size)]))
    valid.set_shape(boxes.shape[:-2])
    return indices, valid
