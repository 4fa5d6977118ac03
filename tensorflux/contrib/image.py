"""`tf.contrib.image`: projective transforms of images (`transform`, `rotate`, `translate`
and the helpers that build and compose transform rows; the op is ImageProjectiveTransformV2,
tensorflux/ops/image_transform_ops.py) and `dense_image_warp` (bilinear sampling at
per-pixel offsets, built from gathers so it has gradients in image and flow), as TF 1.15;
`bipartite_match` (the BipartiteMatch op). TF1's path `tf.contrib.image.python.ops.image_ops`
imports as this module.

Images are [height, width], [height, width, channels] or [batch, height, width, channels];
the result has the rank of the input.
"""

from __future__ import annotations

import sys as _sys

from tensorflux.contrib import tf1_paths as _tf1_paths
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.common_shapes import constant_value
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import (
    array_ext_ops,
    array_ops,
    gather_ops,
    joining_ops,
    math_ops,
    matrix_ops,
    sequence_ops,
    unary_ops,
)
from tensorflux.ops.image_transform_ops import (
    bipartite_match as _bipartite_match_op,
)
from tensorflux.ops.image_transform_ops import (
    flat_transforms_to_matrices as _to_matrices,
)
from tensorflux.ops.image_transform_ops import (
    image_projective_transform_v2,
)
from tensorflux.ops.image_transform_ops import (
    matrices_to_flat_transforms as _to_flat,
)

_IMAGE_DTYPES = (dtypes.uint8, dtypes.int32, dtypes.int64, dtypes.float16, dtypes.float32,
                 dtypes.float64)

__all__ = ["angles_to_projective_transforms", "bipartite_match", "compose_transforms",
           "dense_image_warp",
           "flat_transforms_to_matrices", "interpolate_bilinear",
           "matrices_to_flat_transforms", "rotate", "transform", "translate",
           "translations_to_projective_transforms"]


def _as_batch(images):
    """(4-D images, rank of the input)."""
    if images.dtype.base_dtype not in _IMAGE_DTYPES:
        raise TypeError(f"Invalid dtype {images.dtype}.")
    rank = images.shape.ndims
    if rank is None:
        raise TypeError("image_or_images rank must be statically known")
    if rank == 2:
        return images[None, :, :, None], rank
    if rank == 3:
        return images[None, :, :, :], rank
    if rank == 4:
        return images, rank
    raise TypeError("Images should have rank between 2 and 4.")


def _from_batch(output, rank):
    if rank == 2:
        return output[0, :, :, 0]
    if rank == 3:
        return output[0, :, :, :]
    return output


def transform(images, transforms, interpolation="NEAREST", output_shape=None, name=None):
    """Each image resampled through its projective transform row (or one row for all).

    Args:
      images: images of rank 2, 3 or 4 (batch first) of a numeric dtype.
      transforms: [8] or [N, 8] float32 rows [a0, a1, a2, b0, b1, b2, c0, c1]: the output
        point (x, y) reads the input at ((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k),
        k = c0 x + c1 y + 1; points outside the image read 0.
      interpolation: "NEAREST" or "BILINEAR".
      output_shape: [new_height, new_width] (default: the input's).
      name: the name scope.

    Raises:
      TypeError: a dtype not supported, or a rank that is unknown or not 2-4 (1-2 for
        transforms).
      ValueError: `output_shape` is not 2 elements.
    """
    with graph_lib.name_scope(name, "transform"):
        image_or_images = convert_to_tensor(images, name="images")
        transform_or_transforms = convert_to_tensor(transforms, name="transforms",
                                                    dtype=dtypes.float32)
        images, rank = _as_batch(image_or_images)
        if output_shape is None:
            output_shape = array_ops.shape(images)[1:3]
            value = constant_value(output_shape)
            if value is not None:
                output_shape = value
        output_shape = convert_to_tensor(output_shape, dtypes.int32, name="output_shape")
        if not output_shape.shape.is_compatible_with([2]):
            raise ValueError("output_shape must be a 1-D Tensor of 2 elements: new_height, "
                             "new_width")
        t_rank = transform_or_transforms.shape.ndims
        if t_rank == 1:
            transforms = transform_or_transforms[None]
        elif t_rank is None:
            raise TypeError("transforms rank must be statically known")
        elif t_rank == 2:
            transforms = transform_or_transforms
        else:
            raise TypeError("Transforms should have rank 1 or 2.")
        output = image_projective_transform_v2(images, transforms=transforms,
                                               output_shape=output_shape,
                                               interpolation=interpolation.upper())
        return _from_batch(output, rank)


def angles_to_projective_transforms(angles, image_height, image_width, name=None):
    """[N, 8] transform rows rotating images counterclockwise by `angles` (radians) about
    their centres.

    Raises:
      TypeError: `angles` of rank other than 0 or 1.
    """
    with graph_lib.name_scope(name, "angles_to_projective_transforms"):
        angle_or_angles = convert_to_tensor(angles, name="angles", dtype=dtypes.float32)
        if angle_or_angles.shape.ndims == 0:
            angles = angle_or_angles[None]
        elif angle_or_angles.shape.ndims == 1:
            angles = angle_or_angles
        else:
            raise TypeError("Angles should have rank 0 or 1.")
        cos, sin = unary_ops.cos(angles), unary_ops.sin(angles)
        x_offset = ((image_width - 1) - (cos * (image_width - 1) - sin * (image_height - 1))) \
            / 2.0
        y_offset = ((image_height - 1) - (sin * (image_width - 1) + cos * (image_height - 1))) \
            / 2.0
        num_angles = array_ops.shape(angles)[0]
        return joining_ops.concat(
            values=[cos[:, None], -sin[:, None], x_offset[:, None], sin[:, None],
                    cos[:, None], y_offset[:, None],
                    array_ops.zeros(joining_ops.stack([num_angles, 2]), dtypes.float32)],
            axis=1)


def rotate(images, angles, interpolation="NEAREST", name=None):
    """Images rotated counterclockwise by `angles` (radians; one per image or one for all),
    the corners that come from outside filled with 0.

    Raises:
      TypeError: as `transform`.
    """
    with graph_lib.name_scope(name, "rotate"):
        image_or_images = convert_to_tensor(images)
        images, rank = _as_batch(image_or_images)
        height = math_ops.cast(array_ops.shape(images)[1], dtypes.float32)[None]
        width = math_ops.cast(array_ops.shape(images)[2], dtypes.float32)[None]
        output = transform(images, angles_to_projective_transforms(angles, height, width),
                           interpolation=interpolation)
        return _from_batch(output, rank)


def translations_to_projective_transforms(translations, name=None):
    """[N, 8] transform rows shifting images by `translations` ([dx, dy] or [N, 2]).

    Raises:
      TypeError: a rank that is unknown or not 1 or 2.
    """
    with graph_lib.name_scope(name, "translations_to_projective_transforms"):
        translation_or_translations = convert_to_tensor(translations, name="translations",
                                                        dtype=dtypes.float32)
        t_rank = translation_or_translations.shape.ndims
        if t_rank is None:
            raise TypeError("translation_or_translations rank must be statically known")
        if t_rank == 1:
            translations = translation_or_translations[None]
        elif t_rank == 2:
            translations = translation_or_translations
        else:
            raise TypeError("Translations should have rank 1 or 2.")
        n = array_ops.shape(translations)[0]
        ones = array_ops.ones(joining_ops.stack([n, 1]), dtypes.float32)
        zeros = array_ops.zeros(joining_ops.stack([n, 1]), dtypes.float32)
        return joining_ops.concat(
            values=[ones, zeros, -translations[:, 0, None], zeros, ones,
                    -translations[:, 1, None],
                    array_ops.zeros(joining_ops.stack([n, 2]), dtypes.float32)], axis=1)


def translate(images, translations, interpolation="NEAREST", name=None):
    """Images shifted by `translations` ([dx, dy] per image, or one for all).

    Raises:
      TypeError: as `transform`.
    """
    with graph_lib.name_scope(name, "translate"):
        return transform(images, translations_to_projective_transforms(translations),
                         interpolation=interpolation)


def flat_transforms_to_matrices(transforms):
    """[N, 8] transform rows -> [N, 3, 3] matrices."""
    with graph_lib.name_scope("flat_transforms_to_matrices"):
        return _to_matrices(transforms)


def matrices_to_flat_transforms(transform_matrices):
    """[N, 3, 3] matrices -> [N, 8] rows (each divided by its last entry)."""
    with graph_lib.name_scope("matrices_to_flat_transforms"):
        return _to_flat(transform_matrices)


def compose_transforms(*transforms):
    """One transform row per image equal to applying the last given transform, then the one
    before, ... (the matrix product of the first with the next ones).

    Raises:
      AssertionError: no transform given.
    """
    assert transforms, "transforms cannot be empty"
    with graph_lib.name_scope("compose_transforms"):
        composed = flat_transforms_to_matrices(transforms[0])
        for tr in transforms[1:]:
            composed = matrix_ops.matmul(composed, flat_transforms_to_matrices(tr))
        return matrices_to_flat_transforms(composed)


def interpolate_bilinear(grid, query_points, name="interpolate_bilinear", indexing="ij"):
    """Values of `grid` [batch, height, width, channels] at the float `query_points`
    [batch, n, 2] ((y, x) with indexing "ij", (x, y) with "xy"), bilinear, the points
    clamped to the grid.

    Raises:
      ValueError: `indexing` is not "ij"/"xy", or a grid that is not 4-D or smaller than
        2x2.
    """
    if indexing not in ("ij", "xy"):
        raise ValueError("Indexing mode must be 'ij' or 'xy'")
    with graph_lib.name_scope(name):
        grid = convert_to_tensor(grid)
        query_points = convert_to_tensor(query_points)
        dims = grid.shape.as_list() if grid.shape.ndims is not None else None
        if dims is None or len(dims) != 4:
            raise ValueError(f"Grid must be 4 dimensional. Received size: {dims}")
        shape = array_ops.shape(grid)
        batch, height, width, channels = (shape[i] for i in range(4))
        if dims[1] is not None and dims[1] < 2:
            raise ValueError("Grid height must be at least 2.")
        if dims[2] is not None and dims[2] < 2:
            raise ValueError("Grid width must be at least 2.")
        num_queries = array_ops.shape(query_points)[1]
        index_order = [0, 1] if indexing == "ij" else [1, 0]
        unstacked = joining_ops.unstack(query_points, num=2, axis=2)
        floors, ceils, alphas = [], [], []
        for dim in index_order:
            queries = unstacked[dim]
            size = shape[dim + 1]
            max_floor = math_ops.cast(size - 2, query_points.dtype)
            floor = math_ops.minimum(math_ops.maximum(0.0, unary_ops.floor(queries)),
                                     max_floor)
            int_floor = math_ops.cast(floor, dtypes.int32)
            floors.append(int_floor)
            ceils.append(int_floor + 1)
            alpha = math_ops.cast(queries - floor, grid.dtype)
            alpha = math_ops.minimum(math_ops.maximum(0.0, alpha), 1.0)
            alphas.append(array_ops.expand_dims(alpha, 2))
        flat = array_ops.reshape(grid, joining_ops.stack([batch * height * width, channels]))
        offsets = array_ops.reshape(sequence_ops.range(batch) * height * width, [-1, 1])

        def at(y, x):
            linear = offsets + y * width + x
            values = gather_ops.gather(flat, linear)
            return array_ops.reshape(values, joining_ops.stack([batch, num_queries,
                                                                channels]))

        top_left, top_right = at(floors[0], floors[1]), at(floors[0], ceils[1])
        bottom_left, bottom_right = at(ceils[0], floors[1]), at(ceils[0], ceils[1])
        top = alphas[1] * (top_right - top_left) + top_left
        bottom = alphas[1] * (bottom_right - bottom_left) + bottom_left
        return alphas[0] * (bottom - top) + top


def dense_image_warp(image, flow, name="dense_image_warp"):
    """image [batch, height, width, channels] sampled at (y - flow_y, x - flow_x) for every
    pixel (flow [batch, height, width, 2]), bilinear, clamped at the borders."""
    with graph_lib.name_scope(name):
        image = convert_to_tensor(image)
        flow = convert_to_tensor(flow)
        shape = array_ops.shape(image)
        batch, height, width, channels = (shape[i] for i in range(4))
        grid_x, grid_y = array_ext_ops.meshgrid(sequence_ops.range(width),
                                                sequence_ops.range(height))
        grid = math_ops.cast(joining_ops.stack([grid_y, grid_x], axis=2), flow.dtype)
        queries = array_ops.expand_dims(grid, axis=0) - flow
        flat = array_ops.reshape(queries, joining_ops.stack([batch, height * width, 2]))
        values = interpolate_bilinear(image, flat)
        return array_ops.reshape(values, joining_ops.stack([batch, height, width, channels]))


def bipartite_match(distance_mat, num_valid_rows, top_k=-1, name=None):
    """Greedy bipartite matching of rows to columns by smallest distance
    (`tf.contrib.image.bipartite_match`; the BipartiteMatch op's rules are in
    tensorflux/ops/image_transform_ops.py).

    Args:
      distance_mat: float32 [num_rows, num_columns] distances (smaller is closer).
      num_valid_rows: scalar or 1-element float: how many leading rows take part
        (negative: all).
      top_k: the most pairs to make (negative: as many as possible).
      name: name of the op.

    Returns:
      (row_to_col_match_indices [num_rows], col_to_row_match_indices [num_columns]),
      int32, -1 where unmatched.
    """
    return _bipartite_match_op(distance_mat, num_valid_rows, top_k=top_k,
                               name=name or "BipartiteMatch")


python = _tf1_paths.register(__name__, {"python.ops.image_ops": _sys.modules[__name__]})
