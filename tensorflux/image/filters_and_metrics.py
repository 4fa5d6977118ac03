"""More `tf.image` compositions: YIQ and YUV colour spaces, image gradients, Sobel edges,
total variation, PSNR, SSIM (single- and multi-scale) and resize_image_with_pad. Built from
ops only; gradients follow."""

from __future__ import annotations

import numpy as np

from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.image import image_ops as _image_ops
from tensorflux.ops import (
    array_ops,
    joining_ops,
    math_ops,
    matrix_ops,
    pooling_ops,
    reduction_ops,
    unary_ops,
)

_RGB_TO_YIQ = [[0.299, 0.59590059, 0.2115], [0.587, -0.27455667, -0.52273617],
               [0.114, -0.32134392, 0.31119955]]
_YIQ_TO_RGB = [[1, 1, 1], [0.95598634, -0.27201283, -1.10674021],
               [0.6208248, -0.64720424, 1.70423049]]
_RGB_TO_YUV = [[0.299, -0.14714119, 0.61497538], [0.587, -0.28886916, -0.51496512],
               [0.114, 0.43601035, -0.10001026]]
_YUV_TO_RGB = [[1, 1, 1], [0, -0.394642334, 2.03206185], [1.13988303, -0.58062185, 0]]


def _channels_times(images, kernel, name):
    with graph_lib.name_scope(None, name, [images]):
        images = convert_to_tensor(images, name="images")
        k = convert_to_tensor(np.array(kernel, images.dtype.as_numpy_dtype), name="kernel")
        flat = array_ops.reshape(images, [-1, 3])
        out = array_ops.reshape(matrix_ops.matmul(flat, k), array_ops.shape(images))
        out.set_shape(images.shape)
        return out


def rgb_to_yiq(images):
    """RGB to YIQ (`tf.image.rgb_to_yiq`)."""
    return _channels_times(images, _RGB_TO_YIQ, "rgb_to_yiq")


def yiq_to_rgb(images):
    """YIQ to RGB (`tf.image.yiq_to_rgb`)."""
    return _channels_times(images, _YIQ_TO_RGB, "yiq_to_rgb")


def rgb_to_yuv(images):
    """RGB to YUV (`tf.image.rgb_to_yuv`)."""
    return _channels_times(images, _RGB_TO_YUV, "rgb_to_yuv")


def yuv_to_rgb(images):
    """YUV to RGB (`tf.image.yuv_to_rgb`)."""
    return _channels_times(images, _YUV_TO_RGB, "yuv_to_rgb")


def image_gradients(image):
    """(dy, dx): forward differences of a 4-D batch, zero in the last row / column
    (`tf.image.image_gradients`).

    Raises:
      ValueError: the image is not 4-D.
    """
    image = convert_to_tensor(image, name="image")
    if image.shape.ndims != 4:
        raise ValueError("image_gradients expects a 4D tensor [batch_size, h, w, d], not "
                         f"{image.shape}.")
    dy = image[:, 1:, :, :] - image[:, :-1, :, :]
    dx = image[:, :, 1:, :] - image[:, :, :-1, :]
    shape = array_ops.shape(image)
    zero_row = array_ops.zeros(joining_ops.stack([shape[0], 1, shape[2], shape[3]]),
                               image.dtype)
    zero_col = array_ops.zeros(joining_ops.stack([shape[0], shape[1], 1, shape[3]]),
                               image.dtype)
    dy = joining_ops.concat([dy, zero_row], 1)
    dx = joining_ops.concat([dx, zero_col], 2)
    dy.set_shape(image.shape)
    dx.set_shape(image.shape)
    return dy, dx


_SOBEL = [np.array([[-1, -2, -1], [0, 0, 0], [1, 2, 1]], np.float64),
          np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], np.float64)]


def sobel_edges(image):
    """Vertical and horizontal Sobel responses, [batch, h, w, d, 2], on a reflect-padded
    4-D batch (`tf.image.sobel_edges`)."""
    image = convert_to_tensor(image, name="image")
    padded = joining_ops.pad(image, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="REFLECT")
    shape = array_ops.shape(image)
    outs = []
    for kernel in _SOBEL:
        total = None
        for i in range(3):
            for j in range(3):
                if kernel[i, j] == 0:
                    continue
                window = padded[:, i:, j:, :][:, :shape[1], :shape[2], :]
                term = window * np.asarray(kernel[i, j], image.dtype.as_numpy_dtype)
                total = term if total is None else total + term
        outs.append(total)
    out = joining_ops.stack(outs, axis=-1)
    if image.shape.ndims is not None:
        out.set_shape(image.shape.concatenate([2]))
    return out


def total_variation(images, name=None):
    """The sum of absolute differences of neighbouring pixels, per image for a batch
    (`tf.image.total_variation`)."""
    with graph_lib.name_scope(name, "total_variation", [images]):
        images = convert_to_tensor(images, name="images")
        ndims = images.shape.ndims
        if ndims == 3:
            dif1 = images[1:, :, :] - images[:-1, :, :]
            dif2 = images[:, 1:, :] - images[:, :-1, :]
            axis = None
        elif ndims == 4:
            dif1 = images[:, 1:, :, :] - images[:, :-1, :, :]
            dif2 = images[:, :, 1:, :] - images[:, :, :-1, :]
            axis = [1, 2, 3]
        else:
            raise ValueError("'images' must be either 3 or 4-dimensional.")
        return reduction_ops.reduce_sum(unary_ops.abs(dif1), axis=axis) + \
            reduction_ops.reduce_sum(unary_ops.abs(dif2), axis=axis)


def psnr(a, b, max_val, name=None):
    """Peak signal-to-noise ratio over the last three dimensions (`tf.image.psnr`)."""
    with graph_lib.name_scope(name, "PSNR", [a, b]):
        a = convert_to_tensor(a, name="a")
        b = convert_to_tensor(b, name="b")
        max_val = math_ops.cast(max_val, a.dtype)
        max_val = _image_ops.convert_image_dtype(max_val, dtypes.float32)
        a = _image_ops.convert_image_dtype(a, dtypes.float32)
        b = _image_ops.convert_image_dtype(b, dtypes.float32)
        mse = reduction_ops.reduce_mean(math_ops.squared_difference(a, b), [-3, -2, -1])
        return math_ops.subtract(
            20 * unary_ops.log(max_val) / np.float32(np.log(10.0)),
            np.float32(10 / np.log(10)) * unary_ops.log(mse), name="psnr")


def resize_image_with_pad(image, target_height, target_width,
                          method=_image_ops.ResizeMethod.BILINEAR, align_corners=False):
    """Resizes keeping the aspect ratio, then zero-pads to the target size
    (`tf.image.resize_image_with_pad`); the image's size must be known."""
    with graph_lib.name_scope(None, "resize_image_with_pad", [image]):
        image = convert_to_tensor(image, name="image")
        height, width = image.shape.as_list()[-3:-1]
        if height is None or width is None:
            raise ValueError("resize_image_with_pad needs the image's height and width")
        if target_height <= 0 or target_width <= 0:
            raise ValueError("target_height and target_width must be > 0.")
        f32 = np.float32
        ratio = max(f32(width) / f32(target_width), f32(height) / f32(target_height))
        resized_h_f, resized_w_f = f32(height) / ratio, f32(width) / f32(ratio)
        resized_h, resized_w = int(np.floor(resized_h_f)), int(np.floor(resized_w_f))
        pad_h = max(0, int(np.floor((f32(target_height) - resized_h_f) / f32(2))))
        pad_w = max(0, int(np.floor((f32(target_width) - resized_w_f) / f32(2))))
        resized = _image_ops.resize_images(image, [resized_h, resized_w], method,
                                           align_corners)
        return _image_ops.pad_to_bounding_box(resized, pad_h, pad_w, target_height,
                                              target_width)


def _gaussian_valid(x, size: int, sigma: float):
    """x [..., h, w, c] filtered by a normalized size x size Gaussian, VALID padding (the
    Gaussian is separable: one pass along each spatial axis)."""
    coords = np.arange(size, dtype=np.float64) - (size - 1) / 2.0
    g = np.exp(-0.5 * coords ** 2 / sigma ** 2)
    g = (g / g.sum()).astype(x.dtype.as_numpy_dtype)
    rank = x.shape.ndims
    out = x
    for axis in (rank - 3, rank - 2):
        total = None
        for a in range(size):
            index = [slice(None)] * rank
            index[axis] = slice(a, a - size + 1 if a < size - 1 else None)
            term = out[tuple(index)] * g[a]
            total = term if total is None else total + term
        out = total
    return out


def _ssim_per_channel(img1, img2, max_val, filter_size, filter_sigma, k1, k2):
    c1 = (k1 * max_val) ** 2
    c2 = (k2 * max_val) ** 2

    def reduce(x):
        return _gaussian_valid(x, filter_size, filter_sigma)

    mean0, mean1 = reduce(img1), reduce(img2)
    num0 = mean0 * mean1 * 2.0
    den0 = unary_ops.square(mean0) + unary_ops.square(mean1)
    luminance = (num0 + c1) / (den0 + c1)
    num1 = reduce(img1 * img2) * 2.0
    den1 = reduce(unary_ops.square(img1) + unary_ops.square(img2))
    cs = (num1 - num0 + c2) / (den1 - den0 + c2)
    return (reduction_ops.reduce_mean(luminance * cs, [-3, -2]),
            reduction_ops.reduce_mean(cs, [-3, -2]))


def ssim(img1, img2, max_val, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03):
    """Structural similarity of two images (batches), averaged over channels
    (`tf.image.ssim`); images must be larger than the filter."""
    with graph_lib.name_scope(None, "SSIM", [img1, img2]):
        img1 = convert_to_tensor(img1, name="img1")
        img2 = convert_to_tensor(img2, name="img2")
        if img1.shape.ndims is None or img1.shape.ndims < 3:
            raise ValueError("ssim needs images of known rank of at least 3")
        max_val = math_ops.cast(max_val, img1.dtype)
        max_val = _image_ops.convert_image_dtype(max_val, dtypes.float32)
        img1 = _image_ops.convert_image_dtype(img1, dtypes.float32)
        img2 = _image_ops.convert_image_dtype(img2, dtypes.float32)
        per_channel, _ = _ssim_per_channel(img1, img2, max_val, int(filter_size),
                                           float(filter_sigma), k1, k2)
        return reduction_ops.reduce_mean(per_channel, [-1])


_MSSSIM_WEIGHTS = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333)


def ssim_multiscale(img1, img2, max_val, power_factors=_MSSSIM_WEIGHTS, filter_size=11,
                    filter_sigma=1.5, k1=0.01, k2=0.03):
    """Multi-scale SSIM (`tf.image.ssim_multiscale`): contrast-structure terms of each
    2x-downsampled scale and the SSIM of the last, weighted geometrically; the images'
    height and width must be known."""
    with graph_lib.name_scope(None, "MS-SSIM", [img1, img2]):
        imgs = [convert_to_tensor(img1, name="img1"), convert_to_tensor(img2, name="img2")]
        if imgs[0].shape.ndims is None or imgs[0].shape.ndims < 3 or \
                not imgs[0].shape[-3:].is_fully_defined():
            raise ValueError("ssim_multiscale needs images of known height, width, depth")
        max_val = math_ops.cast(max_val, imgs[0].dtype)
        max_val = _image_ops.convert_image_dtype(max_val, dtypes.float32)
        imgs = [_image_ops.convert_image_dtype(x, dtypes.float32) for x in imgs]
        heads = [array_ops.shape(x)[:-3] for x in imgs]
        tail = imgs[0].shape.as_list()[-3:]
        mcs = []
        for k in range(len(power_factors)):
            if k > 0:
                flat = [array_ops.reshape(x, [-1] + tail) for x in imgs]
                extra = [tail[0] % 2, tail[1] % 2]
                if any(extra):
                    flat = [joining_ops.pad(x, [[0, 0], [0, extra[0]], [0, extra[1]], [0, 0]],
                                            mode="SYMMETRIC") for x in flat]
                    tail = [tail[0] + extra[0], tail[1] + extra[1], tail[2]]
                flat = [pooling_ops.avg_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
                        for x in flat]
                tail = [tail[0] // 2, tail[1] // 2, tail[2]]
                imgs = [array_ops.reshape(x, joining_ops.concat([h, tail], 0))
                        for x, h in zip(flat, heads, strict=True)]
            ssim_per_channel, cs = _ssim_per_channel(imgs[0], imgs[1], max_val,
                                                     int(filter_size), float(filter_sigma),
                                                     k1, k2)
            mcs.append(math_ops.maximum(cs, 0.0))
        mcs.pop()  # the last scale contributes its full SSIM instead
        stacked = joining_ops.stack(mcs + [math_ops.maximum(ssim_per_channel, 0.0)], axis=-1)
        weights = np.asarray(power_factors, np.float32)
        ms_ssim = reduction_ops.reduce_prod(math_ops.pow(stacked, weights), [-1])
        return reduction_ops.reduce_mean(ms_ssim, [-1])
