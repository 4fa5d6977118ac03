"""`tf.image`: resizing, crops and pads, flips, colour, dtype conversion, boxes and codecs
(TF1 names). The compositions are in image_ops.py here; the raw ops in
tensorflux/ops/image_ops.py."""

from tensorflux.image.filters_and_metrics import (  # noqa: F401
    image_gradients,
    psnr,
    resize_image_with_pad,
    rgb_to_yiq,
    rgb_to_yuv,
    sobel_edges,
    ssim,
    ssim_multiscale,
    total_variation,
    yiq_to_rgb,
    yuv_to_rgb,
)
from tensorflux.image.image_ops import (  # noqa: F401
    ResizeMethod,
    adjust_brightness,
    adjust_contrast,
    adjust_gamma,
    adjust_hue,
    adjust_jpeg_quality,
    adjust_saturation,
    central_crop,
    convert_image_dtype,
    crop_to_bounding_box,
    flip_left_right,
    flip_up_down,
    grayscale_to_rgb,
    hsv_to_rgb,
    non_max_suppression_padded,
    pad_to_bounding_box,
    per_image_standardization,
    random_brightness,
    random_contrast,
    random_crop,
    random_flip_left_right,
    random_flip_up_down,
    random_hue,
    random_jpeg_quality,
    random_saturation,
    resize_area,
    resize_bicubic,
    resize_bilinear,
    resize_image_with_crop_or_pad,
    resize_images,
    resize_nearest_neighbor,
    resize_with_crop_or_pad,
    rgb_to_grayscale,
    rgb_to_hsv,
    rot90,
    transpose_image,
)
from tensorflux.image.image_ops import resize_images as resize  # noqa: F401
from tensorflux.image.image_ops import transpose_image as transpose  # noqa: F401
from tensorflux.ops.array_ext_ops import extract_image_patches  # noqa: F401
from tensorflux.ops.array_ext_ops import extract_image_patches as extract_patches  # noqa: F401
from tensorflux.ops.box_proposal_ops import generate_bounding_box_proposals  # noqa: F401
from tensorflux.ops.image_ops import (  # noqa: F401
    combined_non_max_suppression,
    crop_and_resize,
    decode_and_crop_jpeg,
    decode_bmp,
    decode_gif,
    decode_image,
    decode_jpeg,
    decode_png,
    draw_bounding_boxes,
    encode_jpeg,
    encode_png,
    extract_glimpse,
    extract_jpeg_shape,
    is_jpeg,
    non_max_suppression,
    non_max_suppression_overlaps,
    non_max_suppression_with_scores,
    sample_distorted_bounding_box,
)
from tensorflux.ops.image_webp_ops import decode_webp  # noqa: F401,E402 - tf.image.decode_webp
