"""ImageProjectiveTransformV2: images resampled through a projective map per image (the op
under `tf.contrib.image.transform`, `rotate` and `translate`; tensorflux/contrib/image.py);
and BipartiteMatch, `tf.contrib.image.bipartite_match`'s greedy matching (below).

A transform row [a0, a1, a2, b0, b1, b2, c0, c1] maps the *output* point (x, y) to the
input point ((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k), k = c0 x + c1 y + 1; points
outside the input (and k == 0) read 0. Interpolation NEAREST or BILINEAR; fill_mode
CONSTANT only (TF1's op has no other). The kernel is in kernels/cpu/image_transform_ops.py.

The gradient is TF1's: the output gradient transformed by the inverse map (exact for
permutations such as translations by whole pixels; an approximation otherwise).
"""

from __future__ import annotations

from tensorflux.framework.common_shapes import checked_dims, constant_value
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient, not_differentiable
from tensorflux.ops import array_ops, joining_ops, matrix_ops, slicing_ops

__all__: list[str] = []  # the public names are tf.contrib.image's


def _transform_shape(op):
    images = checked_dims(op.inputs[0], rank=4) or [None] * 4
    checked_dims(op.inputs[1], rank=2)
    size = constant_value(op.inputs[2])
    h, w = (None, None) if size is None or len(size) != 2 else (int(size[0]), int(size[1]))
    return [[images[0], h, w, images[3]]]


define_op("ImageProjectiveTransformV2",
          inputs=["images: dtype", "transforms: float", "output_shape: int32"],
          outputs=["transformed_images: dtype"],
          attrs=["dtype: {uint8, int32, int64, half, float, double}",
                 "interpolation: string", "fill_mode: string = 'CONSTANT'"],
          shape_fn=_transform_shape)


def image_projective_transform_v2(images, transforms, output_shape, interpolation,
                                  fill_mode="CONSTANT", name=None):
    """The raw op (`tf.raw_ops.ImageProjectiveTransformV2`)."""
    return apply_op("ImageProjectiveTransformV2", images=images, transforms=transforms,
                    output_shape=output_shape, interpolation=interpolation,
                    fill_mode=fill_mode, name=name or "ImageProjectiveTransformV2")


def flat_transforms_to_matrices(transforms):
    """[N, 8] (or [8]) transform rows -> [N, 3, 3] matrices (last entry 1)."""
    with_ones = joining_ops.concat(
        [array_ops.reshape(transforms, [-1, 8]),
         array_ops.ones([array_ops.shape(array_ops.reshape(transforms, [-1, 8]))[0], 1])],
        axis=1)
    return array_ops.reshape(with_ones, [-1, 3, 3])


def matrices_to_flat_transforms(transform_matrices):
    """[N, 3, 3] matrices -> [N, 8] rows, each divided by its last entry."""
    flat = array_ops.reshape(transform_matrices, [-1, 9])
    flat = flat / slicing_ops.strided_slice(flat, [0, 8], [0, 9], end_mask=1, begin_mask=1)
    return slicing_ops.strided_slice(flat, [0, 0], [0, 8], begin_mask=1, end_mask=1)


@gradient("ImageProjectiveTransformV2")
def _image_projective_transform_grad(op, grad):
    inverse = matrices_to_flat_transforms(
        matrix_ops.matrix_inverse(flat_transforms_to_matrices(op.inputs[1])))
    size = slicing_ops.strided_slice(array_ops.shape(op.inputs[0]), [1], [3])
    back = image_projective_transform_v2(grad, inverse, size,
                                         interpolation=op.get_attr("interpolation"),
                                         fill_mode=op.get_attr("fill_mode"))
    return [back, None, None]


# BipartiteMatch(distance_mat [rows, cols], num_valid_rows, top_k): greedy matching. Only the
# first `num_valid_rows` rows take part (all when negative); each step pairs the unmatched
# row and column with the smallest distance (the first in row-major order on ties; NaN and
# distances >= the largest float32 never match) until `top_k` pairs (negative: as many as
# the smaller side allows) or no candidate is left. Outputs the matched column of each row
# and the matched row of each column, -1 where unmatched.
def _bipartite_match_shape(op):
    dims = checked_dims(op.inputs[0], rank=2) or [None, None]
    return [[dims[0]], [dims[1]]]


define_op("BipartiteMatch", inputs=["distance_mat: float", "num_valid_rows: float"],
          outputs=["row_to_col_match_indices: int32", "col_to_row_match_indices: int32"],
          attrs=["top_k: int = -1"], shape_fn=_bipartite_match_shape)
not_differentiable("BipartiteMatch")


def bipartite_match(distance_mat, num_valid_rows, top_k=-1, name=None):
    """The raw op (`tf.raw_ops.BipartiteMatch`)."""
    return apply_op("BipartiteMatch", distance_mat=distance_mat,
                    num_valid_rows=num_valid_rows, top_k=top_k,
                    name=name or "BipartiteMatch")
