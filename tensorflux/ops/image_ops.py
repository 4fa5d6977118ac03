"""Image ops: the resize family (ResizeBilinear, ResizeNearestNeighbor, ResizeBicubic,
ResizeArea and their gradient ops), CropAndResize, the colour-space ops (RGBToHSV, HSVToRGB,
AdjustContrastv2, AdjustSaturation, AdjustHue), NonMaxSuppression(V2/V3), DrawBoundingBoxes,
SampleDistortedBoundingBox(V2) and the codecs (DecodePng, DecodeJpeg, DecodeBmp, DecodeGif,
DecodeImage, EncodePng, EncodeJpeg).

Only the ops live here; `tf.image`'s compositions (flips, crops, random colour jitter,
per-image standardization, dtype conversion) are in tensorflux/image/. Kernels are in
tensorflux/kernels/cpu/image_ops.py; every resize is a separable linear map there, so its
gradient op applies the transposed map.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.common_shapes import checked_dims, constant_value
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient, not_differentiable
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    gather_ops,
    math_ops,
    reduction_ops,
    slicing_ops,
    string_ops,
)

__all__: list[str] = []  # the public names are tf.image's (tensorflux/image)

_RESIZE_T = ("T: {int8, uint8, int16, uint16, int32, int64, bfloat16, half, float, double}")
_RESIZE_FLAGS = ["align_corners: bool = false", "half_pixel_centers: bool = false"]


# ---- the resize family ---------------------------------------------------------------------


def _size_dims(size) -> list:
    checked_dims(size, rank=1)
    if size.shape.as_list()[0] not in (None, 2):
        raise ValueError(f"Dimension must be 2 but is {size.shape.as_list()[0]}")
    value = constant_value(size)
    return [None, None] if value is None else [int(v) for v in np.reshape(value, -1)]


def _resize_shape(op):
    dims = checked_dims(op.inputs[0], rank=4) or [None] * 4
    h, w = _size_dims(op.inputs[1])
    return [[dims[0], h, w, dims[3]]]


def _check_flags(align_corners, half_pixel_centers):
    if align_corners and half_pixel_centers:
        raise ValueError("If half_pixel_centers is True, align_corners must be False.")


for _op, _out, _flags in (("ResizeBilinear", "float", _RESIZE_FLAGS),
                          ("ResizeNearestNeighbor", "T", _RESIZE_FLAGS),
                          ("ResizeBicubic", "float", _RESIZE_FLAGS),
                          ("ResizeArea", "float", _RESIZE_FLAGS[:1])):
    define_op(_op, inputs=["images: T", "size: int32"], outputs=[f"resized_images: {_out}"],
              attrs=[_RESIZE_T] + _flags, shape_fn=_resize_shape)


def _like_second(op):
    return [op.inputs[1].shape]


def _nn_grad_shape(op):
    dims = checked_dims(op.inputs[0], rank=4) or [None] * 4
    h, w = _size_dims(op.inputs[1])
    return [[dims[0], h, w, dims[3]]]


define_op("ResizeBilinearGrad", inputs=["grads: float", "original_image: T"],
          outputs=["output: T"], attrs=["T: {float, bfloat16, half, double}"] + _RESIZE_FLAGS,
          shape_fn=_like_second)
define_op("ResizeBicubicGrad", inputs=["grads: float", "original_image: T"],
          outputs=["output: T"], attrs=["T: {float, double}"] + _RESIZE_FLAGS,
          shape_fn=_like_second)
define_op("ResizeNearestNeighborGrad", inputs=["grads: T", "size: int32"],
          outputs=["output: T"],
          attrs=["T: {uint8, int8, int32, half, float, double, bfloat16}"] + _RESIZE_FLAGS,
          shape_fn=_nn_grad_shape)
not_differentiable("ResizeArea")
not_differentiable("ResizeBilinearGrad")
not_differentiable("ResizeBicubicGrad")
not_differentiable("ResizeNearestNeighborGrad")


def _flags(op) -> dict:
    return {"align_corners": op.attrs["align_corners"],
            "half_pixel_centers": op.attrs["half_pixel_centers"]}


@gradient("ResizeBilinear")
def _resize_bilinear_grad(op, grad):
    return [apply_op("ResizeBilinearGrad", grads=grad, original_image=op.inputs[0],
                     **_flags(op)), None]


@gradient("ResizeBicubic")
def _resize_bicubic_grad(op, grad):
    return [apply_op("ResizeBicubicGrad", grads=grad, original_image=op.inputs[0],
                     **_flags(op)), None]


@gradient("ResizeNearestNeighbor")
def _resize_nearest_grad(op, grad):
    x = op.inputs[0]
    size = x.shape[1:3] if x.shape[1:3].is_fully_defined() else None
    if size is not None:
        size = convert_to_tensor(np.array(size.as_list(), np.int32))
    else:
        size = slicing_ops.slice(array_ops.shape(x), [1], [2])
    return [apply_op("ResizeNearestNeighborGrad", grads=grad, size=size, **_flags(op)), None]


def resize(op_type: str, images, size, align_corners=False, half_pixel_centers=False,
           name=None):
    """One resize op on a 4-D batch (`tf.image.resize_bilinear` & co.)."""
    _check_flags(align_corners, half_pixel_centers)
    attrs = {"align_corners": bool(align_corners)}
    if op_type != "ResizeArea":
        attrs["half_pixel_centers"] = bool(half_pixel_centers)
    size = convert_to_tensor(size, dtype=dtypes.int32, name="size")
    return apply_op(op_type, images=images, size=size, name=name or op_type, **attrs)


# ---- CropAndResize -------------------------------------------------------------------------


def _crop_and_resize_shape(op):
    image = checked_dims(op.inputs[0], rank=4) or [None] * 4
    boxes = checked_dims(op.inputs[1], rank=2) or [None, None]
    checked_dims(op.inputs[2], rank=1)
    h, w = _size_dims(op.inputs[3])
    return [[boxes[0], h, w, image[3]]]


define_op("CropAndResize",
          inputs=["image: T", "boxes: float", "box_ind: int32", "crop_size: int32"],
          outputs=["crops: float"],
          attrs=["T: {uint8, uint16, int8, int16, int32, int64, half, float, double}",
                 "method: {'bilinear', 'nearest'} = 'bilinear'",
                 "extrapolation_value: float = 0"],
          shape_fn=_crop_and_resize_shape)


def _grad_image_shape(op):
    value = constant_value(op.inputs[3])
    return [None if value is None else [int(v) for v in value]]


define_op("CropAndResizeGradImage",
          inputs=["grads: float", "boxes: float", "box_ind: int32", "image_size: int32"],
          outputs=["output: T"], attrs=["T: {float, half, double}",
                                        "method: {'bilinear', 'nearest'} = 'bilinear'"],
          shape_fn=_grad_image_shape)
define_op("CropAndResizeGradBoxes",
          inputs=["grads: float", "image: T", "boxes: float", "box_ind: int32"],
          outputs=["output: float"],
          attrs=["T: {uint8, uint16, int8, int16, int32, int64, half, float, double}",
                 "method: {'bilinear'} = 'bilinear'"],
          shape_fn=lambda op: [op.inputs[2].shape])
not_differentiable("CropAndResizeGradImage")
not_differentiable("CropAndResizeGradBoxes")


@gradient("CropAndResize")
def _crop_and_resize_grad(op, grad):
    image, boxes, box_ind = op.inputs[0], op.inputs[1], op.inputs[2]
    image_size = image.shape if image.shape.is_fully_defined() else None
    image_size = (convert_to_tensor(np.array(image_size.as_list(), np.int32))
                  if image_size is not None else array_ops.shape(image))
    method = op.attrs["method"]
    grad_image = None
    if image.dtype.is_floating:
        grad_image = apply_op("CropAndResizeGradImage", grads=grad, boxes=boxes,
                              box_ind=box_ind, image_size=image_size, T=image.dtype,
                              method=method)
    grad_boxes = None
    if method == "bilinear":
        grad_boxes = apply_op("CropAndResizeGradBoxes", grads=grad, image=image, boxes=boxes,
                              box_ind=box_ind, method=method)
    return [grad_image, grad_boxes, None, None]


def crop_and_resize(image, boxes, box_ind=None, crop_size=None, method="bilinear",
                    extrapolation_value=0.0, name=None, box_indices=None):
    """Crops boxes out of a batch of images and resizes each to `crop_size`
    (`tf.image.crop_and_resize`). Boxes are `[y1, x1, y2, x2]` in normalized coordinates."""
    if box_ind is None:
        box_ind = box_indices
    with graph_lib.name_scope(name, "CropAndResize", [image, boxes]) as scope:
        return apply_op("CropAndResize", image=image,
                        boxes=convert_to_tensor(boxes, dtype=dtypes.float32),
                        box_ind=convert_to_tensor(box_ind, dtype=dtypes.int32),
                        crop_size=convert_to_tensor(crop_size, dtype=dtypes.int32),
                        method=method,
                        extrapolation_value=float(extrapolation_value or 0.0),
                        name=scope)


# ---- colour ---------------------------------------------------------------------------------


def _last_dim_3(op):
    dims = checked_dims(op.inputs[0], at_least=1)
    if dims is not None and dims[-1] not in (None, 3):
        raise ValueError(f"Dimension must be 3 but is {dims[-1]}")
    return [op.inputs[0].shape]


def _scalar_arg(k):
    def shape_fn(op):
        checked_dims(op.inputs[k], rank=0)
        return _last_dim_3(op) if op.type != "AdjustContrastv2" else \
            [checked_dims(op.inputs[0], at_least=3) and op.inputs[0].shape]
    return shape_fn


_FLOAT_T = "T: {half, bfloat16, float, double} = DT_FLOAT"
define_op("RGBToHSV", inputs=["images: T"], outputs=["output: T"], attrs=[_FLOAT_T],
          shape_fn=_last_dim_3)
define_op("HSVToRGB", inputs=["images: T"], outputs=["output: T"], attrs=[_FLOAT_T],
          shape_fn=_last_dim_3)
define_op("AdjustContrastv2", inputs=["images: T", "contrast_factor: float"],
          outputs=["output: T"], attrs=["T: {half, float} = DT_FLOAT"], shape_fn=_scalar_arg(1))
define_op("AdjustSaturation", inputs=["images: T", "scale: float"], outputs=["output: T"],
          attrs=["T: {half, float} = DT_FLOAT"], shape_fn=_scalar_arg(1))
define_op("AdjustHue", inputs=["images: T", "delta: float"], outputs=["output: T"],
          attrs=["T: {half, float} = DT_FLOAT"], shape_fn=_scalar_arg(1))
not_differentiable("HSVToRGB")
not_differentiable("AdjustContrastv2")
not_differentiable("AdjustSaturation")
not_differentiable("AdjustHue")


# Per pixel with max channel M, min channel m, v = x[M], d = v - x[m]: h is N / (6 d) plus a
# constant, where N is a difference of two channels chosen by M (rows of _HUE_NUMERATOR);
# s = 1 - x[m] / v. Their derivatives follow by the quotient rule (zero where d or v is 0).
_HUE_NUMERATOR = np.array([[0, 1, -1], [-1, 0, 1], [1, -1, 0]], np.float64)


@gradient("RGBToHSV")
def _rgb_to_hsv_grad(op, grad):
    x = op.inputs[0]
    dt = x.dtype
    i_max = gather_ops.one_hot(reduction_ops.argmax(x, -1), 3, dtype=dt)
    i_min = gather_ops.one_hot(reduction_ops.argmin(x, -1), 3, dtype=dt)
    v = reduction_ops.reduce_max(x, -1, keepdims=True)
    m = reduction_ops.reduce_min(x, -1, keepdims=True)
    d = v - m
    d_num = reduction_ops.reduce_sum(
        array_ops.expand_dims(i_max, -1) * _HUE_NUMERATOR.astype(dt.as_numpy_dtype), -2)
    num = reduction_ops.reduce_sum(d_num * x, -1, keepdims=True)
    dh = math_ops.div_no_nan(d_num, 6.0 * d) - math_ops.div_no_nan(num, 6.0 * d * d) * (
        i_max - i_min)
    ds = i_max * math_ops.div_no_nan(m, v * v) - math_ops.div_no_nan(i_min, v)
    gh, gs, gv = grad[..., 0:1], grad[..., 1:2], grad[..., 2:3]
    return [gh * dh + gs * ds + gv * i_max]


# ---- boxes ----------------------------------------------------------------------------------


def _nms_shape(op):
    checked_dims(op.inputs[0], rank=2)
    checked_dims(op.inputs[1], rank=1)
    for t in op.inputs[2:]:
        checked_dims(t, rank=0)
    return [[None]]


define_op("NonMaxSuppression", inputs=["boxes: float", "scores: float",
                                       "max_output_size: int32"],
          outputs=["selected_indices: int32"], attrs=["iou_threshold: float = 0.5"],
          shape_fn=_nms_shape)
define_op("NonMaxSuppressionV2", inputs=["boxes: T", "scores: T", "max_output_size: int32",
                                         "iou_threshold: T_threshold"],
          outputs=["selected_indices: int32"],
          attrs=["T: {half, float} = DT_FLOAT", "T_threshold: {half, float} = DT_FLOAT"],
          shape_fn=_nms_shape)
define_op("NonMaxSuppressionV3", inputs=["boxes: T", "scores: T", "max_output_size: int32",
                                         "iou_threshold: T_threshold",
                                         "score_threshold: T_threshold"],
          outputs=["selected_indices: int32"],
          attrs=["T: {half, float} = DT_FLOAT", "T_threshold: {half, float} = DT_FLOAT"],
          shape_fn=_nms_shape)
_NMS_IN = ["boxes: T", "scores: T", "max_output_size: int32", "iou_threshold: T_threshold",
           "score_threshold: T_threshold"]
define_op("NonMaxSuppressionV4", inputs=_NMS_IN,
          outputs=["selected_indices: int32", "valid_outputs: int32"],
          attrs=["T: {half, float} = DT_FLOAT", "T_threshold: {half, float} = DT_FLOAT",
                 "pad_to_max_output_size: bool = false"],
          shape_fn=lambda op: _nms_shape(op) + [[]])
define_op("NonMaxSuppressionV5", inputs=_NMS_IN[:3] + ["iou_threshold: T",
                                                       "score_threshold: T",
                                                       "soft_nms_sigma: T"],
          outputs=["selected_indices: int32", "selected_scores: T", "valid_outputs: int32"],
          attrs=["T: {half, float} = DT_FLOAT", "pad_to_max_output_size: bool = false"],
          shape_fn=lambda op: _nms_shape(op) * 2 + [[]])
define_op("NonMaxSuppressionWithOverlaps",
          inputs=["overlaps: float", "scores: float", "max_output_size: int32",
                  "overlap_threshold: float", "score_threshold: float"],
          outputs=["selected_indices: int32"], shape_fn=_nms_shape)
for _op in ("NonMaxSuppression", "NonMaxSuppressionV2", "NonMaxSuppressionV3",
            "NonMaxSuppressionV4", "NonMaxSuppressionV5", "NonMaxSuppressionWithOverlaps"):
    not_differentiable(_op)


def non_max_suppression(boxes, scores, max_output_size, iou_threshold=0.5,
                        score_threshold=float("-inf"), name=None):
    """Greedily selects boxes by descending score, dropping those overlapping an earlier
    pick by more than `iou_threshold` (`tf.image.non_max_suppression`)."""
    with graph_lib.name_scope(name, "non_max_suppression"):
        return apply_op("NonMaxSuppressionV3", boxes=boxes, scores=scores,
                        max_output_size=convert_to_tensor(max_output_size, dtypes.int32),
                        iou_threshold=convert_to_tensor(iou_threshold, dtypes.float32),
                        score_threshold=convert_to_tensor(score_threshold, dtypes.float32))


def _nms_args(max_output_size, iou_threshold, score_threshold, dtype=dtypes.float32):
    return dict(max_output_size=convert_to_tensor(max_output_size, dtypes.int32),
                iou_threshold=convert_to_tensor(iou_threshold, dtype),
                score_threshold=convert_to_tensor(score_threshold, dtype))


def non_max_suppression_with_scores(boxes, scores, max_output_size, iou_threshold=0.5,
                                    score_threshold=float("-inf"), soft_nms_sigma=0.0,
                                    name=None):
    """NMS returning (indices, scores); soft-NMS when `soft_nms_sigma` > 0
    (`tf.image.non_max_suppression_with_scores`)."""
    with graph_lib.name_scope(name, "non_max_suppression_with_scores"):
        scores = convert_to_tensor(scores, dtypes.float32, name="scores")
        idx, sc, _ = apply_op("NonMaxSuppressionV5", boxes=boxes, scores=scores,
                              soft_nms_sigma=convert_to_tensor(soft_nms_sigma, dtypes.float32),
                              pad_to_max_output_size=False,
                              **_nms_args(max_output_size, iou_threshold, score_threshold))
        return idx, sc


def non_max_suppression_padded(boxes, scores, max_output_size, iou_threshold=0.5,
                               score_threshold=float("-inf"), pad_to_max_output_size=False,
                               name=None, sorted_input=False, canonicalized_coordinates=False,
                               tile_size=512):
    """NMS of one image returning (indices, number valid), indices zero-padded to
    max_output_size when asked (`tf.image.non_max_suppression_padded`)."""
    del sorted_input, canonicalized_coordinates, tile_size  # hints for TF's batched kernel
    with graph_lib.name_scope(name, "non_max_suppression_padded"):
        boxes = convert_to_tensor(boxes, name="boxes")
        if boxes.shape.ndims is not None and boxes.shape.ndims > 2:
            raise NotImplementedError("non_max_suppression_padded of a batch of images")
        return tuple(apply_op("NonMaxSuppressionV4", boxes=boxes, scores=scores,
                              pad_to_max_output_size=pad_to_max_output_size,
                              **_nms_args(max_output_size, iou_threshold, score_threshold)))


def non_max_suppression_overlaps(overlaps, scores, max_output_size, overlap_threshold=0.5,
                                 score_threshold=float("-inf"), name=None):
    """Greedy NMS by a given [n, n] overlap matrix
    (`tf.image.non_max_suppression_overlaps`)."""
    with graph_lib.name_scope(name, "non_max_suppression_overlaps"):
        return apply_op("NonMaxSuppressionWithOverlaps", overlaps=overlaps, scores=scores,
                        max_output_size=convert_to_tensor(max_output_size, dtypes.int32),
                        overlap_threshold=convert_to_tensor(overlap_threshold,
                                                            dtypes.float32),
                        score_threshold=convert_to_tensor(score_threshold, dtypes.float32))


def _combined_nms_shape(op):
    boxes = checked_dims(op.inputs[0], rank=4) or [None] * 4
    scores = checked_dims(op.inputs[1], rank=3) or [None] * 3
    per_class, total = constant_value(op.inputs[2]), constant_value(op.inputs[3])
    n = None
    if total is not None:
        n = int(total)
        if op.attrs["pad_per_class"]:
            n = None if per_class is None or scores[2] is None else \
                min(n, int(per_class) * scores[2])
    b = boxes[0] if boxes[0] is not None else scores[0]
    return [[b, n, 4], [b, n], [b, n], [b]]


define_op("CombinedNonMaxSuppression",
          inputs=["boxes: float", "scores: float", "max_output_size_per_class: int32",
                  "max_total_size: int32", "iou_threshold: float", "score_threshold: float"],
          outputs=["nmsed_boxes: float", "nmsed_scores: float", "nmsed_classes: float",
                   "valid_detections: int32"],
          attrs=["pad_per_class: bool = false", "clip_boxes: bool = true"],
          shape_fn=_combined_nms_shape)
not_differentiable("CombinedNonMaxSuppression")


def combined_non_max_suppression(boxes, scores, max_output_size_per_class, max_total_size,
                                 iou_threshold=0.5, score_threshold=float("-inf"),
                                 pad_per_class=False, clip_boxes=True, name=None):
    """Per-class NMS over a batch, then the best `max_total_size` detections across classes
    (`tf.image.combined_non_max_suppression`): (boxes, scores, classes, valid counts)."""
    with graph_lib.name_scope(name, "combined_non_max_suppression"):
        return (apply_op(
            "CombinedNonMaxSuppression", boxes=convert_to_tensor(boxes, dtypes.float32),
            scores=convert_to_tensor(scores, dtypes.float32),
            max_output_size_per_class=convert_to_tensor(max_output_size_per_class,
                                                        dtypes.int32),
            max_total_size=convert_to_tensor(max_total_size, dtypes.int32),
            iou_threshold=convert_to_tensor(iou_threshold, dtypes.float32),
            score_threshold=convert_to_tensor(score_threshold, dtypes.float32),
            pad_per_class=pad_per_class, clip_boxes=clip_boxes))


define_op("DrawBoundingBoxes", inputs=["images: T", "boxes: float"], outputs=["output: T"],
          attrs=["T: {float, half} = DT_FLOAT"],
          shape_fn=lambda op: [checked_dims(op.inputs[0], rank=4) and op.inputs[0].shape])
define_op("DrawBoundingBoxesV2", inputs=["images: T", "boxes: float", "colors: float"],
          outputs=["output: T"], attrs=["T: {float, half} = DT_FLOAT"],
          shape_fn=lambda op: [checked_dims(op.inputs[0], rank=4) and op.inputs[0].shape])
not_differentiable("DrawBoundingBoxes")
not_differentiable("DrawBoundingBoxesV2")


def draw_bounding_boxes(images, boxes, name=None, colors=None):
    """Draws box outlines on a batch of images (`tf.image.draw_bounding_boxes`)."""
    if colors is None:
        return apply_op("DrawBoundingBoxes", images=images, boxes=boxes,
                        name=name or "DrawBoundingBoxes")
    return apply_op("DrawBoundingBoxesV2", images=images, boxes=boxes,
                    colors=convert_to_tensor(colors, dtypes.float32),
                    name=name or "DrawBoundingBoxesV2")


def _glimpse_shape(op):
    dims = checked_dims(op.inputs[0], rank=4) or [None] * 4
    checked_dims(op.inputs[2], rank=2)
    h, w = _size_dims(op.inputs[1]) if op.inputs[1].shape.rank is not None else (None, None)
    return [[dims[0], h, w, dims[3]]]


_GLIMPSE_ATTRS = ["centered: bool = true", "normalized: bool = true",
                  "uniform_noise: bool = true", "noise: string = 'uniform'"]
for _t in ("ExtractGlimpse", "ExtractGlimpseV2"):
    define_op(_t, inputs=["input: float", "size: int32", "offsets: float"],
              outputs=["glimpse: float"], attrs=_GLIMPSE_ATTRS, shape_fn=_glimpse_shape)
    not_differentiable(_t)


def extract_glimpse(input, size, offsets, centered=True, normalized=True,  # noqa: A002
                    uniform_noise=True, name=None):
    """Windows of `size` (height, width) cut from each image of `input` [batch, height,
    width, channels] around `offsets` [batch, 2] of (y, x) (TF1's `tf.image.
    extract_glimpse`, op ExtractGlimpse): centred coordinates run from -1 to 1 across the
    image when `normalized` (0 to 1 from the corner when not `centered`), else pixels; a
    window's centre is truncated to whole pixels, and where it leaves the image it holds
    noise: uniform between the image's minimum and maximum (the op's `noise` attr is
    "uniform", which also holds with `uniform_noise=False`, as in TF 1.14 and later).
    Not differentiable."""
    return apply_op("ExtractGlimpse", input=input, size=size, offsets=offsets,
                    centered=centered, normalized=normalized, uniform_noise=uniform_noise,
                    noise="uniform", name=name or "ExtractGlimpse")


_SDBB_ATTRS = ["T: {uint8, int8, int16, int32, int64}", "seed: int = 0", "seed2: int = 0",
               "aspect_ratio_range: list(float) = [0.75, 1.33]",
               "area_range: list(float) = [0.05, 1.0]", "max_attempts: int = 100",
               "use_image_if_no_bounding_boxes: bool = false"]


def _sdbb_shape(op):
    checked_dims(op.inputs[0], rank=1)
    return [[3], [3], [1, 1, 4]]


define_op("SampleDistortedBoundingBox", inputs=["image_size: T", "bounding_boxes: float"],
          outputs=["begin: T", "size: T", "bboxes: float"],
          attrs=_SDBB_ATTRS[:4] + ["min_object_covered: float = 0.1"] + _SDBB_ATTRS[4:],
          shape_fn=_sdbb_shape, stateful=True)
define_op("SampleDistortedBoundingBoxV2",
          inputs=["image_size: T", "bounding_boxes: float", "min_object_covered: float"],
          outputs=["begin: T", "size: T", "bboxes: float"], attrs=_SDBB_ATTRS,
          shape_fn=_sdbb_shape, stateful=True)
not_differentiable("SampleDistortedBoundingBox")
not_differentiable("SampleDistortedBoundingBoxV2")


def sample_distorted_bounding_box(image_size, bounding_boxes, seed=None, seed2=None,
                                  min_object_covered=0.1, aspect_ratio_range=None,
                                  area_range=None, max_attempts=None,
                                  use_image_if_no_bounding_boxes=None, name=None):
    """A random crop (begin, size, box) of an image covering part of the given boxes
    (`tf.image.sample_distorted_bounding_box`)."""
    # TF1's wrapper hands seed and seed2 to the op as given: the graph seed plays no part
    # (both 0: a fresh random stream per Session, as in TF)
    s1, s2 = int(seed or 0), int(seed2 or 0)
    return apply_op(
        "SampleDistortedBoundingBoxV2", image_size=image_size,
        bounding_boxes=convert_to_tensor(bounding_boxes, dtypes.float32),
        min_object_covered=convert_to_tensor(min_object_covered, dtypes.float32),
        seed=s1, seed2=s2, aspect_ratio_range=list(aspect_ratio_range or [0.75, 1.33]),
        area_range=list(area_range or [0.05, 1.0]),
        max_attempts=100 if max_attempts is None else max_attempts,
        use_image_if_no_bounding_boxes=bool(use_image_if_no_bounding_boxes),
        name=name or "SampleDistortedBoundingBoxV2")


# ---- codecs --------------------------------------------------------------------------------


def _decode_shape(rank: int):
    def shape_fn(op):
        checked_dims(op.inputs[0], rank=0)
        channels = op.attrs.get("channels", 0)
        if op.type == "DecodeGif":
            return [[None, None, None, 3]]
        if op.type == "DecodeImage":
            return [None if op.attrs["expand_animations"] else
                    [None, None, channels or None]]
        return [[None] * (rank - 1) + [channels or None]]
    return shape_fn


define_op("DecodePng", inputs=["contents: string"], outputs=["image: dtype"],
          attrs=["channels: int = 0", "dtype: {uint8, uint16} = DT_UINT8"],
          shape_fn=_decode_shape(3))
define_op("DecodeJpeg", inputs=["contents: string"], outputs=["image: uint8"],
          attrs=["channels: int = 0", "ratio: int = 1", "fancy_upscaling: bool = true",
                 "try_recover_truncated: bool = false", "acceptable_fraction: float = 1",
                 "dct_method: string = ''"], shape_fn=_decode_shape(3))
define_op("DecodeBmp", inputs=["contents: string"], outputs=["image: uint8"],
          attrs=["channels: int = 0"], shape_fn=_decode_shape(3))
define_op("DecodeGif", inputs=["contents: string"], outputs=["image: uint8"],
          shape_fn=_decode_shape(4))
define_op("DecodeImage", inputs=["contents: string"], outputs=["image: dtype"],
          attrs=["channels: int = 0", "dtype: {uint8, uint16, float} = DT_UINT8",
                 "expand_animations: bool = true"], shape_fn=_decode_shape(3))


def _encode_shape(op):
    checked_dims(op.inputs[0], rank=3)
    return [[]]


define_op("EncodePng", inputs=["image: T"], outputs=["contents: string"],
          attrs=["compression: int = -1", "T: {uint8, uint16} = DT_UINT8"],
          shape_fn=_encode_shape)
define_op("EncodeJpeg", inputs=["image: uint8"], outputs=["contents: string"],
          attrs=["format: {'', 'grayscale', 'rgb'} = ''", "quality: int = 95",
                 "progressive: bool = false", "optimize_size: bool = false",
                 "chroma_downsampling: bool = true", "density_unit: {'in', 'cm'} = 'in'",
                 "x_density: int = 300", "y_density: int = 300",
                 "xmp_metadata: string = ''"], shape_fn=_encode_shape)
define_op("DecodeAndCropJpeg", inputs=["contents: string", "crop_window: int32"],
          outputs=["image: uint8"],
          attrs=["channels: int = 0", "ratio: int = 1", "fancy_upscaling: bool = true",
                 "try_recover_truncated: bool = false", "acceptable_fraction: float = 1",
                 "dct_method: string = ''"], shape_fn=_decode_shape(3))
define_op("ExtractJpegShape", inputs=["contents: string"], outputs=["image_shape: output_type"],
          attrs=["output_type: {int32, int64} = DT_INT32"],
          shape_fn=lambda op: [checked_dims(op.inputs[0], rank=0) and [3]])
define_op("EncodeJpegVariableQuality", inputs=["images: uint8", "quality: int32"],
          outputs=["contents: string"], shape_fn=_encode_shape)
for _op in ("DecodePng", "DecodeJpeg", "DecodeBmp", "DecodeGif", "DecodeImage", "EncodePng",
            "EncodeJpeg", "DecodeAndCropJpeg", "ExtractJpegShape", "EncodeJpegVariableQuality"):
    not_differentiable(_op)


def _contents(contents):
    return convert_to_tensor(contents, dtype=dtypes.string)


def decode_png(contents, channels=0, dtype=dtypes.uint8, name=None):
    """Decodes a PNG to a uint8/uint16 [height, width, channels] tensor (`tf.image.decode_png`)."""
    return apply_op("DecodePng", contents=_contents(contents), channels=channels,
                    dtype=dtypes.as_dtype(dtype), name=name or "DecodePng")


def decode_jpeg(contents, channels=0, ratio=1, fancy_upscaling=True,
                try_recover_truncated=False, acceptable_fraction=1, dct_method="", name=None):
    """Decodes a JPEG to a uint8 [height, width, channels] tensor (`tf.image.decode_jpeg`)."""
    return apply_op("DecodeJpeg", contents=_contents(contents), channels=channels, ratio=ratio,
                    fancy_upscaling=fancy_upscaling,
                    try_recover_truncated=try_recover_truncated,
                    acceptable_fraction=float(acceptable_fraction), dct_method=dct_method,
                    name=name or "DecodeJpeg")


def decode_and_crop_jpeg(contents, crop_window, channels=0, ratio=1, fancy_upscaling=True,
                         try_recover_truncated=False, acceptable_fraction=1, dct_method="",
                         name=None):
    """Decodes the window [y, x, height, width] of a JPEG (`tf.image.decode_and_crop_jpeg`)."""
    return apply_op("DecodeAndCropJpeg", contents=_contents(contents),
                    crop_window=convert_to_tensor(crop_window, dtypes.int32),
                    channels=channels, ratio=ratio, fancy_upscaling=fancy_upscaling,
                    try_recover_truncated=try_recover_truncated,
                    acceptable_fraction=float(acceptable_fraction), dct_method=dct_method,
                    name=name or "DecodeAndCropJpeg")


def extract_jpeg_shape(contents, output_type=dtypes.int32, name=None):
    """[height, width, channels] of a JPEG, read from its header
    (`tf.image.extract_jpeg_shape`)."""
    return apply_op("ExtractJpegShape", contents=_contents(contents),
                    output_type=dtypes.as_dtype(output_type), name=name or "ExtractJpegShape")


def is_jpeg(contents, name=None):
    """Whether `contents` starts with JPEG's magic bytes (`tf.image.is_jpeg`)."""
    with graph_lib.name_scope(name, "is_jpeg"):
        head = string_ops.substr(_contents(contents), 0, 3)
        return comparison_ops.equal(head, b"\xff\xd8\xff", name=name)


def decode_bmp(contents, channels=0, name=None):
    """Decodes a BMP to a uint8 [height, width, channels] tensor (`tf.image.decode_bmp`)."""
    return apply_op("DecodeBmp", contents=_contents(contents), channels=channels,
                    name=name or "DecodeBmp")


def decode_gif(contents, name=None):
    """Decodes a GIF to a uint8 [frames, height, width, 3] tensor (`tf.image.decode_gif`)."""
    return apply_op("DecodeGif", contents=_contents(contents), name=name or "DecodeGif")


def decode_image(contents, channels=None, dtype=dtypes.uint8, name=None,
                 expand_animations=True):
    """Decodes a BMP, GIF, JPEG or PNG by its magic bytes (`tf.image.decode_image`); a float
    `dtype` scales to [0, 1) as `convert_image_dtype` does."""
    dtype = dtypes.as_dtype(dtype)
    with graph_lib.name_scope(name, "decode_image"):
        return apply_op("DecodeImage", contents=_contents(contents), channels=channels or 0,
                        dtype=dtype, expand_animations=expand_animations)


def encode_jpeg_variable_quality(images, quality, name=None):
    """encode_jpeg with the quality given as a tensor."""
    return apply_op("EncodeJpegVariableQuality", images=convert_to_tensor(images, dtypes.uint8),
                    quality=convert_to_tensor(quality, dtypes.int32),
                    name=name or "EncodeJpegVariableQuality")


def encode_png(image, compression=-1, name=None):
    """Encodes a uint8/uint16 [height, width, channels] image as PNG (`tf.image.encode_png`)."""
    return apply_op("EncodePng", image=convert_to_tensor(image), compression=compression,
                    name=name or "EncodePng")


def encode_jpeg(image, format="", quality=95, progressive=False, optimize_size=False,  # noqa: A002
                chroma_downsampling=True, density_unit="in", x_density=300, y_density=300,
                xmp_metadata="", name=None):
    """Encodes a uint8 [height, width, channels] image as JPEG (`tf.image.encode_jpeg`)."""
    return apply_op("EncodeJpeg", image=convert_to_tensor(image, dtypes.uint8), format=format,
                    quality=quality, progressive=progressive, optimize_size=optimize_size,
                    chroma_downsampling=chroma_downsampling, density_unit=density_unit,
                    x_density=x_density, y_density=y_density, xmp_metadata=xmp_metadata,
                    name=name or "EncodeJpeg")
