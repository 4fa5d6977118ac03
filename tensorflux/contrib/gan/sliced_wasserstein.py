"""`tf.contrib.gan.eval.sliced_wasserstein_distance`: the multi-scale sliced Wasserstein
distance of Karras et al. (https://arxiv.org/abs/1710.10196) between two batches of RGB
images.

Each batch becomes a Laplacian pyramid (5x5 binomial filter, reflect padding: OpenCV's
pyrDown/pyrUp) from the full resolution down to `resolution_min`; at each level
`patches_per_image` random patch_size x patch_size patches per image are cut (centres drawn
uniformly where a patch fits), each normalized by its own mean and deviation, and two sets
of patches are compared by projecting them on random unit directions (or, `use_svd`, on
the singular vectors of both sets), sorting each projection and averaging the absolute
differences. A level gives (distance between two patch samples of the real images,
distance between the real and the fake patches): the first is the noise floor of the
second.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import dtypes
from tensorflux.nn import conv_impl, nn_impl
from tensorflux.ops import (
    array_ops,
    gather_ops,
    joining_ops,
    linalg_factor_ops,
    math_ops,
    matrix_ops,
    random_ops,
    reduction_ops,
    unary_ops,
)

__all__ = ["sliced_wasserstein_distance"]

_BINOMIAL = np.array([1, 4, 6, 4, 1], np.float32)
_GAUSSIAN_FILTER = (np.outer(_BINOMIAL, _BINOMIAL) / 256.0).reshape(5, 5, 1, 1)


def _spatial_conv(batch, gain):
    """Each channel filtered by the 5x5 binomial kernel times `gain`, reflect-padded."""
    channels = batch.shape.as_list()[3]
    kernel = np.tile(_GAUSSIAN_FILTER * gain, [1, 1, channels, 1]).astype(np.float32)
    padded = joining_ops.pad(batch, [[0, 0], [2, 2], [2, 2], [0, 0]], "REFLECT")
    return conv_impl.depthwise_conv2d(padded, kernel, [1, 1, 1, 1], "VALID")


def _pyr_down(batch):
    return _spatial_conv(batch, 1.0)[:, ::2, ::2]


def _pyr_up(batch):
    """Zeros between the pixels (the input on even rows and columns), then the filter
    with gain 4."""
    rows = array_ops.shape(batch)
    dims = batch.shape.as_list()
    wide = joining_ops.stack([batch, array_ops.zeros_like(batch)], axis=3)
    wide = array_ops.reshape(wide, [rows[0], rows[1], 2 * rows[2], dims[3]])
    tall = joining_ops.stack([wide, array_ops.zeros_like(wide)], axis=2)
    tall = array_ops.reshape(tall, [rows[0], 2 * rows[1], 2 * rows[2], dims[3]])
    return _spatial_conv(tall, 4.0)


def _laplacian_pyramid(batch, num_levels):
    """The levels from the finest to the coarsest: each the difference between an image
    and its upsampled half-resolution version, the last the smallest image itself."""
    pyramid = [math_ops.to_float(batch)]
    for _ in range(1, num_levels):
        pyramid.append(_pyr_down(pyramid[-1]))
        pyramid[-2] = pyramid[-2] - _pyr_up(pyramid[-1])
    return pyramid


def _batch_to_patches(batch, patches_per_image, patch_size):
    """[batch * patches_per_image, size, size, channels] random patches, those of image
    i first for each i."""
    batch_size, height, width, channels = batch.shape.as_list()
    count = patches_per_image * batch_size
    half = patch_size // 2
    y = random_ops.random_uniform([count, 1, 1, 1], half, height - half, dtypes.int32)
    x = random_ops.random_uniform([count, 1, 1, 1], half, width - half, dtypes.int32)
    offsets = np.arange(-half, half + 1, dtype=np.int32)
    image = (np.arange(count, dtype=np.int32) // patches_per_image).reshape(-1, 1, 1, 1)
    index = (((image * height + y + offsets.reshape(1, -1, 1, 1)) * width
              + x + offsets.reshape(1, 1, -1, 1)) * channels
             + np.arange(channels, dtype=np.int32).reshape(1, 1, 1, -1))
    return gather_ops.gather(array_ops.reshape(batch, [-1]), index)


def _normalize_patches(patches):
    mean, variance = nn_impl.moments(patches, [1, 2, 3], keep_dims=True)
    patches = (patches - mean) / unary_ops.sqrt(variance)
    return array_ops.reshape(patches, [array_ops.shape(patches)[0], -1])


def _sort_rows(matrix, num_rows):
    """Each column sorted (descending), its first `num_rows` values."""
    return array_ops.transpose(gather_ops.top_k(array_ops.transpose(matrix), num_rows)[0])


def _sliced_wasserstein(a, b, random_sampling_count, random_projection_dim):
    rows = array_ops.shape(a)[0]
    means = []
    for _ in range(random_sampling_count):
        proj = random_ops.random_normal([array_ops.shape(a)[1], random_projection_dim])
        proj = proj * unary_ops.rsqrt(reduction_ops.reduce_sum(unary_ops.square(proj), 0,
                                                               keepdims=True))
        proj_a = _sort_rows(matrix_ops.matmul(a, proj), rows)
        proj_b = _sort_rows(matrix_ops.matmul(b, proj), rows)
        means.append(reduction_ops.reduce_mean(unary_ops.abs(proj_a - proj_b)))
    return reduction_ops.reduce_mean(joining_ops.stack(means))


def _sliced_wasserstein_svd(a, b):
    rows = array_ops.shape(a)[0]
    sig, u = linalg_factor_ops.svd(joining_ops.concat([a, b], 0))[:2]
    proj_a, proj_b = joining_ops.split(u * sig, 2, axis=0)
    proj_a = _sort_rows(proj_a[:, ::-1], rows)
    proj_b = _sort_rows(proj_b[:, ::-1], rows)
    return reduction_ops.reduce_mean(unary_ops.abs(proj_a - proj_b))


def sliced_wasserstein_distance(real_images, fake_images, resolution_min=16,
                                patches_per_image=64, patch_size=7, random_sampling_count=1,
                                random_projection_dim=7 * 7 * 3, use_svd=False):
    """[(distance between real patches, distance real-fake)] for each pyramid level, from
    the full resolution (a power of two) down to `resolution_min`.

    Raises:
      ValueError: images that are not square RGB batches of one static shape.
    """
    height = real_images.shape.as_list()[1]
    real_images.shape.assert_is_compatible_with([None, None, height, 3])
    fake_images.shape.assert_is_compatible_with(real_images.shape)
    resolution_min = min(resolution_min, int(height))
    resolutions = [2 ** i for i in range(int(np.log2(int(height))),
                                         int(np.log2(resolution_min)) - 1, -1)]
    real_levels = _laplacian_pyramid(real_images, len(resolutions))
    fake_levels = _laplacian_pyramid(fake_images, len(resolutions))
    scores = []
    for real, fake in zip(real_levels, fake_levels, strict=True):
        patches_real, patches_test, patches_fake = (
            _normalize_patches(_batch_to_patches(level, patches_per_image, patch_size))
            for level in (real, real, fake))
        if use_svd:
            scores.append((_sliced_wasserstein_svd(patches_real, patches_test),
                           _sliced_wasserstein_svd(patches_real, patches_fake)))
        else:
            scores.append((_sliced_wasserstein(patches_real, patches_test,
                                               random_sampling_count, random_projection_dim),
                           _sliced_wasserstein(patches_real, patches_fake,
                                               random_sampling_count, random_projection_dim)))
    return scores
