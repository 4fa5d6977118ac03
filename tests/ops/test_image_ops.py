"""Image ops and tf.image (tensorflux/ops/image_ops.py, tensorflux/image/): the resize family
against TensorFlow on a table of sizes and flags, finite-difference gradients, colour
conversions against NumPy, crops/pads/flips, codecs round trips, the CIFAR-10 tutorial's
preprocessing, and a batch of tf.image expressions compared with TensorFlow itself."""

from __future__ import annotations

import io

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework import op_registry
from tensorflux.kernels import registry as kernel_registry
from tests import oracle
from tests.op_test_util import OpCase, check_gradient, check_value

RESIZE_OPS = ["ResizeBilinear", "ResizeNearestNeighbor", "ResizeBicubic", "ResizeArea"]
SIZES = [(3, 4), (10, 13), (5, 7), (1, 1), (8, 3)]
FLAGS = [(False, False), (True, False), (False, True)]
RESIZE_TABLE = [(op, size, ac, hp) for op in RESIZE_OPS for size in SIZES for ac, hp in FLAGS
                if not (op == "ResizeArea" and hp)]


def _image(shape=(2, 5, 7, 3), seed=0):
    return np.random.default_rng(seed).uniform(0, 255, shape).astype(np.float32)


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


@pytest.fixture(autouse=True)
def _fresh_graph():
    with tf.Graph().as_default():
        yield


# ---- resize ---------------------------------------------------------------------------------


def _resize(op, x, size, ac, hp):
    kw = {"align_corners": ac} if op == "ResizeArea" else \
        {"align_corners": ac, "half_pixel_centers": hp}
    fn = {"ResizeBilinear": tf.image.resize_bilinear,
          "ResizeNearestNeighbor": tf.image.resize_nearest_neighbor,
          "ResizeBicubic": tf.image.resize_bicubic, "ResizeArea": tf.image.resize_area}[op]
    return fn(x, size, **kw)


@pytest.mark.oracle
def test_resize_table_matches_tensorflow():
    table = RESIZE_TABLE
    theirs = oracle.run_tf(f"""
from tensorflow.python.ops import gen_image_ops as g
X = np.random.default_rng(0).uniform(0, 255, (2, 5, 7, 3)).astype(np.float32)
fns = {{"ResizeBilinear": g.resize_bilinear, "ResizeNearestNeighbor": g.resize_nearest_neighbor,
        "ResizeBicubic": g.resize_bicubic, "ResizeArea": g.resize_area}}
outs = []
for op, size, ac, hp in {table!r}:
    kw = dict(align_corners=ac) if op == "ResizeArea" else dict(align_corners=ac,
                                                                half_pixel_centers=hp)
    outs.append(fns[op](X, size, **kw))
with tf.Session() as s:
    result = s.run(outs)
""")
    x = _image()
    ours = _run([_resize(op, x, size, ac, hp) for op, size, ac, hp in table])
    for cfg, got, want in zip(table, ours, theirs, strict=True):
        assert got.dtype == want.dtype, cfg
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-4, err_msg=str(cfg))


def test_resize_nearest_keeps_dtype_and_identity():
    x = np.arange(24, dtype=np.uint8).reshape(1, 4, 6, 1)
    same, double = _run([tf.image.resize_nearest_neighbor(x, [4, 6]),
                         tf.image.resize_nearest_neighbor(x, [8, 12])])
    np.testing.assert_array_equal(same, x)
    np.testing.assert_array_equal(double, x.repeat(2, 1).repeat(2, 2))
    assert double.dtype == np.uint8


def test_resize_bilinear_align_corners_values():
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32).reshape(1, 2, 2, 1)
    out = _run(tf.image.resize_bilinear(x, [3, 3], align_corners=True))[0, :, :, 0]
    np.testing.assert_allclose(out, [[1, 1.5, 2], [2, 2.5, 3], [3, 3.5, 4]])


def test_resize_images_3d_and_methods():
    x = _image((5, 7, 3))
    a = tf.image.resize_images(x, [10, 14])
    b = tf.image.resize_images(x, [10, 14], method=tf.image.ResizeMethod.NEAREST_NEIGHBOR)
    assert a.shape.as_list() == [10, 14, 3] and a.dtype == tf.float32
    va, vb = _run([a, b])
    want = _run(tf.image.resize_bilinear(x[None], [10, 14]))[0]
    np.testing.assert_allclose(va, want)
    np.testing.assert_array_equal(vb, x.repeat(2, 0).repeat(2, 1))
    assert tf.image.resize_images(x, [5, 7]) is not None


def test_resize_flag_conflict_and_bad_size():
    x = _image()
    with pytest.raises(ValueError, match="half_pixel_centers"):
        tf.image.resize_bilinear(x, [3, 3], align_corners=True, half_pixel_centers=True)
    s = tf.placeholder(tf.int32, [2])
    y = tf.image.resize_bilinear(x, s)
    assert y.shape.as_list() == [2, None, None, 3]
    with pytest.raises(tf.errors.InvalidArgumentError, match="positive"):
        _run(y, {s: [0, 3]})


def _resize_case(op, size, ac, hp):
    return OpCase(f"{op}{size}{'_ac' if ac else ''}{'_hp' if hp else ''}",
                  lambda x: _resize(op, x, size, ac, hp), lambda x: x, shapes=[(1, 4, 5, 2)])


GRAD_CASES = [_resize_case(op, size, ac, hp)
              for op in ("ResizeBilinear", "ResizeBicubic", "ResizeNearestNeighbor")
              for size, ac, hp in [((7, 3), False, False), ((3, 8), True, False),
                                   ((6, 6), False, True)]]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_resize_gradients(case):
    check_gradient(case, np.float32)  # the op's output is float32 whatever the input


@pytest.mark.parametrize("grads_hw, size, ac, hp", [
    ((8, 10), (4, 5), False, False),  # the gradient of a 2x upsampling: strided adds
    ((12, 15), (4, 5), False, True),  # 3x
    ((7, 3), (4, 5), False, False), ((3, 8), (4, 5), True, False),  # uneven runs
    ((6, 6), (4, 5), False, True), ((2, 2), (4, 5), True, True),  # downsampling: zeros
])
def test_resize_nearest_grad_sums_like_scattered_adds(grads_hw, size, ac, hp):
    """ResizeNearestNeighborGrad adds every gradient pixel into the input pixel its output
    pixel was read from (np.add.at in float64 as the reference)."""
    from tensorflux.framework.op_def_library import apply_op
    from tensorflux.kernels.cpu import image_ops as kernels

    g = np.random.default_rng(5).standard_normal((2, *grads_hw, 3)).astype(np.float32)
    got = _run(apply_op("ResizeNearestNeighborGrad", grads=g, size=list(size),
                        align_corners=ac, half_pixel_centers=hp))
    iy = kernels._nearest_index(size[0], grads_hw[0], ac, hp)
    ix = kernels._nearest_index(size[1], grads_hw[1], ac, hp)
    want = np.zeros((2, *size, 3))
    np.add.at(want, (slice(None), iy[:, None], ix[None, :]), g.astype(np.float64))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_crop_and_resize_gradients():
    boxes = np.array([[0.1, 0.2, 0.8, 0.7], [0.3, 0.1, 0.6, 0.9]], np.float32)
    case = OpCase("crop_and_resize_image",
                  lambda x: tf.image.crop_and_resize(x, boxes, [0, 1], [3, 4]),
                  lambda x: x, shapes=[(2, 5, 6, 2)])
    check_gradient(case, np.float32)
    image = np.random.default_rng(1).standard_normal((1, 5, 6, 1)).astype(np.float32)
    case = OpCase("crop_and_resize_boxes",
                  lambda b: tf.image.crop_and_resize(image, b, [0, 0], [3, 4]),
                  lambda b: b, shapes=[(2, 4)],
                  make=lambda rng, shape, dt: (np.array([[0.12, 0.23, 0.83, 0.71],
                                                         [0.33, 0.15, 0.61, 0.93]], dt)))
    check_gradient(case, np.float32)


def test_rgb_to_hsv_gradient_and_value():
    case = OpCase("rgb_to_hsv", tf.image.rgb_to_hsv, _np_rgb_to_hsv, shapes=[(4, 5, 3)],
                  make=lambda rng, shape, dt: rng.uniform(0.1, 0.9, shape).astype(dt))
    check_value(case, np.float32)
    check_gradient(case, np.float64)


def _np_rgb_to_hsv(x):
    import colorsys
    flat = x.reshape(-1, 3).astype(np.float64)
    return np.array([colorsys.rgb_to_hsv(*p) for p in flat]).reshape(x.shape).astype(x.dtype)


def test_hsv_round_trip():
    x = np.random.default_rng(2).uniform(0, 1, (3, 4, 3)).astype(np.float32)
    back = _run(tf.image.hsv_to_rgb(tf.image.rgb_to_hsv(x)))
    np.testing.assert_allclose(back, x, atol=1e-5)


# ---- tf.image compositions against TensorFlow ------------------------------------------------

ORACLE_PROGRAM = '''
rng = np.random.RandomState(3)
img = rng.uniform(0, 1, (6, 8, 3)).astype(np.float32)
u8 = (img * 255).astype(np.uint8)
batch = rng.uniform(0, 1, (2, 6, 8, 3)).astype(np.float32)
boxes = np.array([[0.1, 0.2, 0.8, 0.7], [0.3, -0.1, 0.6, 1.2], [0.5, 0.5, 0.5, 0.5]], np.float32)
nms_boxes = np.array([[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11],
                      [0, 10.1, 1, 11.1], [0, 100, 1, 101]], np.float32)
nms_scores = np.array([0.9, 0.75, 0.6, 0.95, 0.5, 0.3], np.float32)
canvas = np.zeros((1, 7, 9, 3), np.float32)
k_ph = tf.placeholder(tf.int32, [])
cboxes = np.concatenate([nms_boxes / 12.0, nms_boxes[::-1] / 11.0], 0).reshape(
    2, 6, 1, 4).astype(np.float32)
cboxes_q = np.stack([cboxes[:, :, 0], cboxes[:, :, 0] * 0.9 + 0.05, cboxes[:, :, 0] * 1.1],
                    2).astype(np.float32)
cscores = rng.permutation(36).reshape(2, 6, 3).astype(np.float32) / 36.0
big = rng.uniform(0, 1, (2, 16, 14, 3)).astype(np.float32)
big2 = np.clip(big + rng.normal(0, 0.1, big.shape), 0, 1).astype(np.float32)
huge = np.kron(rng.uniform(0, 1, (2, 10, 9, 1)), np.ones((1, 9, 9, 3))).astype(np.float32)
huge2 = np.clip(huge + rng.normal(0, 0.05, huge.shape), 0, 1).astype(np.float32)
dyn = tf.placeholder(tf.float32, [None, None, 3])
off = tf.placeholder(tf.int32, [])
dboxes = np.array([[[0.1, 0.1, 0.7, 0.8], [0.0, 0.5, 1.0, 1.0], [-0.2, -0.1, 0.4, 0.3]]],
                  np.float32)
ex = {
    "hsv": tf.image.rgb_to_hsv(img), "rgb": tf.image.hsv_to_rgb(img),
    "gray": tf.image.rgb_to_grayscale(img), "gray_u8": tf.image.rgb_to_grayscale(u8),
    "to_rgb": tf.image.grayscale_to_rgb(tf.constant(img[:, :, :1])),
    "bright": tf.image.adjust_brightness(img, 0.2),
    "bright_u8": tf.image.adjust_brightness(u8, 0.3),
    "contrast": tf.image.adjust_contrast(img, 1.7),
    "contrast_u8": tf.image.adjust_contrast(u8, 0.5),
    "sat": tf.image.adjust_saturation(img, 1.6), "sat_u8": tf.image.adjust_saturation(u8, 0.4),
    "hue": tf.image.adjust_hue(img, 0.3), "hue_neg": tf.image.adjust_hue(img, -0.45),
    "gamma": tf.image.adjust_gamma(img, 2.0, 1.5),
    "std": tf.image.per_image_standardization(img),
    "std_u8": tf.image.per_image_standardization(u8),
    "std_batch": tf.image.per_image_standardization(batch),
    "f2u8": tf.image.convert_image_dtype(img, tf.uint8),
    "f2u8_sat": tf.image.convert_image_dtype(img * 1.5, tf.uint8, saturate=True),
    "u82f": tf.image.convert_image_dtype(u8, tf.float32),
    "u82i32": tf.image.convert_image_dtype(u8, tf.int32),
    "i322u8": tf.image.convert_image_dtype(tf.constant([[[2 ** 30]]], tf.int32), tf.uint8),
    "crop": tf.image.crop_to_bounding_box(img, 1, 2, 3, 4),
    "crop_b": tf.image.crop_to_bounding_box(batch, 1, 2, 3, 4),
    "pad": tf.image.pad_to_bounding_box(img, 1, 2, 9, 11),
    "central": tf.image.central_crop(img, 0.5), "central_b": tf.image.central_crop(batch, 0.7),
    "cop_small": tf.image.resize_image_with_crop_or_pad(img, 4, 5),
    "cop_big": tf.image.resize_image_with_crop_or_pad(img, 9, 10),
    "cop_mixed": tf.image.resize_image_with_crop_or_pad(batch, 3, 11),
    "flip_lr": tf.image.flip_left_right(img), "flip_ud": tf.image.flip_up_down(batch),
    "rot1": tf.image.rot90(img), "rot2": tf.image.rot90(img, 2), "rot3": tf.image.rot90(batch, 3),
    "transpose": tf.image.transpose_image(batch),
    "resize_img": tf.image.resize_images(img, [9, 5]),
    "resize_nn": tf.image.resize_images(u8, [3, 11], tf.image.ResizeMethod.NEAREST_NEIGHBOR),
    "resize_bicubic_ac": tf.image.resize_images(batch, [4, 4], tf.image.ResizeMethod.BICUBIC,
                                                align_corners=True),
    "resize_area": tf.image.resize_images(img, [3, 3], tf.image.ResizeMethod.AREA),
    "car": tf.image.crop_and_resize(batch, boxes, [0, 1, 1], [4, 5]),
    "car_nn": tf.image.crop_and_resize(batch, boxes, [1, 0, 1], [3, 3], method="nearest",
                                       extrapolation_value=-1.0),
    "car_1": tf.image.crop_and_resize(batch, boxes, [0, 1, 1], [1, 1]),
    "nms": tf.image.non_max_suppression(nms_boxes, nms_scores, 3, 0.5),
    "nms_score": tf.image.non_max_suppression(nms_boxes, nms_scores, 6, 0.5, 0.55),
    "nms_all": tf.image.non_max_suppression(nms_boxes, nms_scores, 10, 1.0),
    "nms_soft": list(tf.image.non_max_suppression_with_scores(nms_boxes, nms_scores, 6, 1.0,
                                                              0.0, 0.5)),
    "nms_soft2": list(tf.image.non_max_suppression_with_scores(nms_boxes, nms_scores, 4, 0.3,
                                                               0.25, 0.2)),
    "nms_hard_scores": list(tf.image.non_max_suppression_with_scores(nms_boxes, nms_scores,
                                                                     6, 0.5)),
    "nms_padded": list(tf.image.non_max_suppression_padded(
        tf.constant(nms_boxes), nms_scores, 5, 0.5, pad_to_max_output_size=True)),
    "nms_unpadded": list(tf.image.non_max_suppression_padded(tf.constant(nms_boxes),
                                                             nms_scores, 5, 0.5)),
    "nms_batched": list(tf.image.non_max_suppression_padded(  # [2, 2] images of 6 boxes
        tf.constant(np.stack([[nms_boxes, nms_boxes[::-1]], [nms_boxes * 2, nms_boxes]])),
        np.stack([[nms_scores, nms_scores], [nms_scores[::-1], nms_scores]]), 4, 0.3, 0.4,
        pad_to_max_output_size=True)),
    "combined": list(tf.image.combined_non_max_suppression(
        cboxes, cscores, 3, 5, 0.5, 0.1)),
    "combined_q": list(tf.image.combined_non_max_suppression(
        cboxes_q, cscores, 2, 10, 0.4, 0.0, pad_per_class=True, clip_boxes=False)),
    "nms_overlaps": tf.image.non_max_suppression_overlaps(
        tf.constant(np.abs(np.sin(np.arange(36.0))).reshape(6, 6).astype(np.float32)),
        nms_scores, 4, 0.6, 0.35),
    "draw": tf.image.draw_bounding_boxes(canvas, dboxes),
    "draw_colors": tf.image.draw_bounding_boxes(canvas, dboxes,
                                                colors=[[0.2, 0.4, 0.6], [1, 1, 1]]),
    "aspect": tf.image.resize_images(img, [12, 9], preserve_aspect_ratio=True),
    "rot_k": tf.image.rot90(batch, k_ph), "rot_k3": tf.image.rot90(img, k_ph + 2),
    "cop_dyn": tf.image.resize_image_with_crop_or_pad(dyn, 5, 9),
    "central_dyn": tf.image.central_crop(dyn, 0.6),
    "crop_dyn": tf.image.crop_to_bounding_box(dyn, off, 1, 3, 4),
    "pad_dyn": tf.image.pad_to_bounding_box(dyn, off, 1, 8, 10),
    "yiq": tf.image.rgb_to_yiq(img), "yiq_back": tf.image.yiq_to_rgb(img),
    "yuv": tf.image.rgb_to_yuv(batch), "yuv_back": tf.image.yuv_to_rgb(batch),
    "grad_dy": tf.image.image_gradients(tf.constant(batch))[0],
    "grad_dx": tf.image.image_gradients(tf.constant(batch))[1],
    "sobel": tf.image.sobel_edges(tf.constant(batch)),
    "tv": tf.image.total_variation(tf.constant(img)),
    "tv_b": tf.image.total_variation(tf.constant(batch)),
    "psnr": tf.image.psnr(batch, batch[::-1] * 0.9, 1.0),
    "psnr_u8": tf.image.psnr(u8, u8 // 2, 255),
    "pad_resize": tf.image.resize_image_with_pad(img, 10, 7),
    "ssim": tf.image.ssim(tf.constant(big), tf.constant(big2), 1.0),
    "ms_ssim": tf.image.ssim_multiscale(tf.constant(huge), tf.constant(huge2), 1.0,
                                        filter_size=5),
    "ms_ssim3": tf.image.ssim_multiscale(tf.constant(huge[0, :45, :38]),
                                         tf.constant(huge2[0, :45, :38]), 1.0,
                                         power_factors=(0.3, 0.3, 0.4), filter_size=5),
    "ssim_u8": tf.image.ssim(tf.constant((big * 255).astype(np.uint8)),
                             tf.constant((big2 * 255).astype(np.uint8)), 255,
                             filter_size=7, filter_sigma=1.0),
    "pad_resize_nn": tf.image.resize_image_with_pad(batch, 4, 12,
                                                    tf.image.ResizeMethod.NEAREST_NEIGHBOR),
    "patches": tf.image.extract_image_patches(batch, [1, 2, 2, 1], [1, 1, 2, 1],
                                              [1, 1, 1, 1], "SAME"),
}
with tf.Session() as s:
    result = s.run(ex, {k_ph: 1, dyn: img, off: 2})
for key in list(result):
    if isinstance(result[key], list):
        for i, v in enumerate(result.pop(key)):
            result[f"{key}.{i}"] = v
'''


@pytest.mark.oracle
def test_tf_image_matches_tensorflow():
    ours, theirs = oracle.run_both(ORACLE_PROGRAM, tf)
    assert set(ours) == set(theirs)
    for key in sorted(theirs):
        w, g = np.asarray(theirs[key]), np.asarray(ours[key])
        assert g.shape == w.shape, f"{key}: {g.shape} vs TF {w.shape}"
        if w.ndim:  # scalars come back from the oracle as Python numbers
            assert g.dtype == w.dtype, f"{key}: {g.dtype} vs TF {w.dtype}"
        if np.issubdtype(w.dtype, np.integer):
            np.testing.assert_allclose(g.astype(np.int64), w.astype(np.int64), atol=1,
                                       err_msg=key)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4, err_msg=key)


def test_static_errors():
    img = np.zeros((6, 8, 3), np.float32)
    cases = [
        (lambda: tf.image.crop_to_bounding_box(img, -1, 0, 2, 2), "offset_height must be >= 0"),
        (lambda: tf.image.crop_to_bounding_box(img, 0, 0, 2, 9), "width must be >= target"),
        (lambda: tf.image.pad_to_bounding_box(img, 0, 0, 5, 9), "height must be <= target"),
        (lambda: tf.image.central_crop(img, 0.0), "central_fraction"),
        (lambda: tf.image.random_brightness(img, -1), "max_delta must be non-negative"),
        (lambda: tf.image.random_contrast(img, 0.5, 0.5), "upper must be > lower"),
        (lambda: tf.image.random_hue(img, 0.6), "max_delta must be <= 0.5"),
        (lambda: tf.image.flip_left_right(np.zeros((2, 2), np.float32)), "3 or 4 dimensions"),
    ]
    for fn, message in cases:
        with pytest.raises(ValueError, match=message):
            fn()


def test_random_ops_shapes_and_ranges():
    x = np.arange(2 * 5 * 6 * 3, dtype=np.float32).reshape(2, 5, 6, 3)
    crop = tf.random_crop(x[0], [3, 4, 3], seed=1)
    flips = [tf.image.random_flip_left_right(x[0], seed=k) for k in range(6)]
    flips_b = tf.image.random_flip_up_down(x, seed=3)
    sat = tf.image.random_saturation(x[0] / 90.0, 0.5, 1.5, seed=1)
    hue = tf.image.random_hue(x[0] / 90.0, 0.2, seed=2)
    assert crop.shape.as_list() == [3, 4, 3]
    c, f, fb, s, h = _run([crop, flips, flips_b, sat, hue])
    assert any(np.array_equal(c, x[0][i:i + 3, j:j + 4]) for i in range(3) for j in range(3))
    for v in f:
        assert np.array_equal(v, x[0]) or np.array_equal(v, x[0][:, ::-1])
    for b in range(2):
        assert np.array_equal(fb[b], x[b]) or np.array_equal(fb[b], x[b][::-1])
    assert s.shape == h.shape == (5, 6, 3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Need value.shape >= size"):
        _run(tf.random_crop(x[0], [6, 4, 3]))


def test_cifar10_preprocessing_runs():
    """The TF1 CIFAR-10 tutorial's distorted_inputs pipeline, on one record."""
    raw = tf.placeholder(tf.uint8, [32, 32, 3])
    reshaped = tf.cast(raw, tf.float32)
    distorted = tf.random_crop(reshaped, [24, 24, 3])
    distorted = tf.image.random_flip_left_right(distorted)
    distorted = tf.image.random_brightness(distorted, max_delta=63)
    distorted = tf.image.random_contrast(distorted, lower=0.2, upper=1.8)
    out = tf.image.per_image_standardization(distorted)
    eval_img = tf.image.per_image_standardization(
        tf.image.resize_image_with_crop_or_pad(reshaped, 24, 24))
    assert out.shape.as_list() == [24, 24, 3] == eval_img.shape.as_list()
    value = np.random.default_rng(0).integers(0, 256, (32, 32, 3)).astype(np.uint8)
    a, b = _run([out, eval_img], {raw: value})
    for v in (a, b):
        assert abs(v.mean()) < 1e-4 and abs(v.std() - 1) < 1e-3


# ---- codecs --------------------------------------------------------------------------------


def test_png_round_trip_all_channels():
    rng = np.random.default_rng(4)
    for channels in (1, 2, 3, 4):
        img = rng.integers(0, 256, (5, 7, channels)).astype(np.uint8)
        enc = tf.image.encode_png(img)
        # TF refuses channels=2; 0 keeps a grey+alpha file's two.
        dec = tf.image.decode_png(enc, channels=channels if channels != 2 else 0)
        dec_any = tf.image.decode_image(enc)
        e, d, da = _run([enc, dec, dec_any])
        assert isinstance(e, bytes) and e.startswith(b"\x89PNG")
        np.testing.assert_array_equal(d, img)
        np.testing.assert_array_equal(da, img)
    img16 = rng.integers(0, 65536, (3, 4, 1)).astype(np.uint16)
    got = _run(tf.image.decode_png(tf.image.encode_png(img16), dtype=tf.uint16))
    np.testing.assert_array_equal(got, img16)


def test_jpeg_bmp_gif_decoding():
    from PIL import Image

    rng = np.random.default_rng(5)
    img = np.kron(rng.integers(0, 256, (4, 4, 3)), np.ones((8, 8, 1))).astype(np.uint8)
    jpeg = _run(tf.image.encode_jpeg(img, quality=100, chroma_downsampling=False))
    dec, gray = _run([tf.image.decode_jpeg(jpeg), tf.image.decode_jpeg(jpeg, channels=1)])
    assert dec.shape == (32, 32, 3) and gray.shape == (32, 32, 1)
    assert np.abs(dec.astype(int) - img).mean() < 3
    bmp = io.BytesIO()
    Image.fromarray(img).save(bmp, "BMP")
    np.testing.assert_array_equal(_run(tf.image.decode_bmp(bmp.getvalue())), img)
    gif = io.BytesIO()
    frames = [Image.fromarray(np.full((4, 5, 3), v, np.uint8)) for v in (0, 255)]
    frames[0].save(gif, "GIF", save_all=True, append_images=frames[1:])
    g, first = _run([tf.image.decode_gif(gif.getvalue()),
                     tf.image.decode_image(gif.getvalue(), expand_animations=False)])
    assert g.shape == (2, 4, 5, 3) and first.shape == (4, 5, 3)
    np.testing.assert_array_equal(g[1], 255)
    f = _run(tf.image.decode_image(bmp.getvalue(), dtype=tf.float32))
    np.testing.assert_allclose(f, img / 255.0, rtol=1e-6)


def test_decode_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="Unknown image file format"):
        _run(tf.image.decode_image(b"not an image"))
    with pytest.raises(tf.errors.InvalidArgumentError):
        _run(tf.image.decode_png(b"\x89PNG\r\n\x1a\nbroken"))


@pytest.mark.oracle
def test_codecs_match_tensorflow():
    theirs = oracle.run_tf("""
rng = np.random.RandomState(6)
img = rng.randint(0, 256, (6, 9, 3)).astype(np.uint8)
with tf.Session() as s:
    png, jpg = s.run([tf.image.encode_png(img), tf.image.encode_jpeg(img, quality=90)])
    result = {"img": img, "png": png, "jpg": jpg,
              "jpg_dec": s.run(tf.image.decode_jpeg(jpg)),
              "png_gray": s.run(tf.image.decode_png(png, channels=1)),
              "jpg_shape": s.run(tf.image.extract_jpeg_shape(jpg)),
              "jpeg_q": s.run(tf.image.adjust_jpeg_quality(img.astype(np.float32) / 255, 40)),
              "jpg_crop": s.run(tf.image.decode_and_crop_jpeg(jpg, [1, 2, 4, 5])),
              "is_jpeg": s.run([tf.image.is_jpeg(jpg), tf.image.is_jpeg(png)])}
""")
    ours = _run({"png": tf.image.decode_png(theirs["png"]),
                 "png_gray": tf.image.decode_png(theirs["png"], channels=1),
                 "jpg_dec": tf.image.decode_jpeg(theirs["jpg"]),
                 "round": tf.image.decode_png(tf.image.encode_png(theirs["img"])),
                 "jpg_shape": tf.image.extract_jpeg_shape(theirs["jpg"]),
                 "jpg_crop": tf.image.decode_and_crop_jpeg(theirs["jpg"], [1, 2, 4, 5]),
                 "is_jpeg": [tf.image.is_jpeg(theirs["jpg"]), tf.image.is_jpeg(theirs["png"])]})
    np.testing.assert_array_equal(ours["jpg_shape"], theirs["jpg_shape"])
    q = _run(tf.image.adjust_jpeg_quality(theirs["img"].astype(np.float32) / 255, 40))
    assert q.dtype == np.float32 and q.shape == theirs["jpeg_q"].shape
    assert np.abs(q - theirs["jpeg_q"]).max() <= 8 / 255
    assert ours["is_jpeg"] == theirs["is_jpeg"]
    assert ours["jpg_crop"].shape == theirs["jpg_crop"].shape == (4, 5, 3)
    assert np.abs(ours["jpg_crop"].astype(int) - theirs["jpg_crop"]).max() <= 4
    np.testing.assert_array_equal(ours["png"], theirs["img"])
    np.testing.assert_array_equal(ours["round"], theirs["img"])
    assert np.abs(ours["png_gray"].astype(int) - theirs["png_gray"]).max() <= 1
    assert np.abs(ours["jpg_dec"].astype(int) - theirs["jpg_dec"]).max() <= 4


# ---- registry completeness -----------------------------------------------------------------

MY_OPS = [
    "ResizeBilinear", "ResizeNearestNeighbor", "ResizeBicubic", "ResizeArea",
    "ResizeBilinearGrad", "ResizeNearestNeighborGrad", "ResizeBicubicGrad", "CropAndResize",
    "CropAndResizeGradImage", "CropAndResizeGradBoxes", "RGBToHSV", "HSVToRGB",
    "AdjustContrastv2", "AdjustSaturation", "AdjustHue", "NonMaxSuppression",
    "NonMaxSuppressionV2", "NonMaxSuppressionV3", "NonMaxSuppressionV4", "NonMaxSuppressionV5",
    "NonMaxSuppressionWithOverlaps", "CombinedNonMaxSuppression", "DrawBoundingBoxes",
    "DrawBoundingBoxesV2",
    "SampleDistortedBoundingBox", "SampleDistortedBoundingBoxV2", "DecodePng", "DecodeJpeg",
    "DecodeBmp", "DecodeGif", "DecodeImage", "EncodePng", "EncodeJpeg", "DecodeAndCropJpeg",
    "EncodeJpegVariableQuality",
    "ExtractJpegShape",
]


@pytest.mark.parametrize("op_type", MY_OPS)
def test_every_op_has_shape_fn_kernel_and_gradient(op_type):
    assert op_registry.get(op_type).shape_fn is not None
    assert kernel_registry.has_kernel(op_type, "CPU")
    assert op_registry.get_gradient(op_type) is not None


def test_sample_distorted_bounding_box():
    begin, size, box = tf.image.sample_distorted_bounding_box(
        [20, 30, 3], [[[0.1, 0.1, 0.9, 0.9]]], seed=3, min_object_covered=0.3)
    b, s, bx = _run([begin, size, box])
    assert b[2] == 0 and s[2] == -1 and 0 < s[0] <= 20 and 0 < s[1] <= 30
    assert b[0] + s[0] <= 20 and b[1] + s[1] <= 30 and bx.shape == (1, 1, 4)
    with pytest.raises(tf.errors.InvalidArgumentError, match="No bounding boxes"):
        _run(tf.image.sample_distorted_bounding_box([20, 30, 3], np.zeros((1, 0, 4))))


def test_sample_distorted_bounding_box_constraints():
    box = [[[0.2, 0.3, 0.7, 0.9]]]
    begin, size, _ = tf.image.sample_distorted_bounding_box(
        [40, 60, 3], box, min_object_covered=0.5, aspect_ratio_range=[0.5, 2.0],
        area_range=[0.1, 0.6], seed=7)
    with tf.Session() as s:
        for _ in range(20):
            b, sz = s.run([begin, size])
            h, w = int(sz[0]), int(sz[1])
            area = h * w / (40 * 60)
            whole = (h, w) == (40, 60)
            assert whole or (0.1 - 1e-6 <= area <= 0.6 + 1e-6 and 0.4 <= w / h <= 2.5)
            inter = max(0, min(b[0] + h, 28) - max(b[0], 8)) * \
                max(0, min(b[1] + w, 54) - max(b[1], 18))
            assert whole or inter / (20 * 36) >= 0.5
    # an inverted box is accepted and covers nothing (TF): the whole image comes back
    b, sz, _ = _run(tf.image.sample_distorted_bounding_box([20, 30, 3], [[[0.5, 0.1, 0.2, 0.9]]],
                                                           seed=1))
    assert b.tolist() == [0, 0, 0] and sz.tolist() == [20, 30, -1]
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"must be in \[0.0, 1.0\]: 1.2"):
        _run(tf.image.sample_distorted_bounding_box([20, 30, 3], [[[0.5, 0.1, 1.2, 0.9]]]))


def test_sample_distorted_bounding_box_gives_tensorflows_crops():
    """TF 2.21's crops: TF1's wrapper passes seed and seed2 as given (the graph seed plays
    no part), the crop sampler draws from the op's Philox stream in float32 arithmetic."""
    tf.set_random_seed(11)  # ignored, as in TF
    a = tf.image.sample_distorted_bounding_box(
        [480, 640, 3], [[[0.1, 0.2, 0.8, 0.9]]], min_object_covered=0.1,
        aspect_ratio_range=[0.75, 1.33], area_range=[0.05, 1.0], max_attempts=100, seed=4)
    b = tf.image.sample_distorted_bounding_box(
        tf.constant([224, 224, 3], tf.int64), tf.zeros([1, 0, 4]), min_object_covered=0.5,
        use_image_if_no_bounding_boxes=True, seed=3, seed2=8)
    with tf.Session() as s:
        first = s.run([a, b])
        second = s.run(a)
    begin, size, box = first[0]
    assert begin.tolist() == [25, 121, 0] and size.tolist() == [410, 499, -1]
    np.testing.assert_array_equal(box, np.float32([[[
        0.0520833320915699, 0.18906250596046448, 0.90625, 0.96875]]]))
    assert first[1][0].tolist() == [3, 4, 0] and first[1][1].tolist() == [213, 201, -1]
    assert first[1][0].dtype == np.int64
    assert second[0].tolist() == [146, 64, 0] and second[1].tolist() == [320, 295, -1]


def test_cifar10_input_pipeline_with_queues(tmp_path):
    """cifar10_input.distorted_inputs as the TF1 tutorial writes it: fixed-length records
    from a binary file, decode_raw, distortions, shuffle_batch with queue runners."""
    rng = np.random.default_rng(9)
    records = [np.concatenate([[k % 10], rng.integers(0, 256, 3072)]).astype(np.uint8)
               for k in range(20)]
    path = tmp_path / "data_batch_1.bin"
    path.write_bytes(b"".join(r.tobytes() for r in records))
    filename_queue = tf.train.string_input_producer([str(path)])
    reader = tf.FixedLengthRecordReader(record_bytes=1 + 3072)
    _, value = reader.read(filename_queue)
    record_bytes = tf.decode_raw(value, tf.uint8)
    label = tf.cast(tf.strided_slice(record_bytes, [0], [1]), tf.int32)
    depth_major = tf.reshape(tf.strided_slice(record_bytes, [1], [3073]), [3, 32, 32])
    uint8image = tf.transpose(depth_major, [1, 2, 0])
    reshaped = tf.cast(uint8image, tf.float32)
    distorted = tf.random_crop(reshaped, [24, 24, 3])
    distorted = tf.image.random_flip_left_right(distorted)
    distorted = tf.image.random_brightness(distorted, max_delta=63)
    distorted = tf.image.random_contrast(distorted, lower=0.2, upper=1.8)
    float_image = tf.image.per_image_standardization(distorted)
    float_image.set_shape([24, 24, 3])
    label.set_shape([1])
    images, labels = tf.train.shuffle_batch([float_image, label], batch_size=8, num_threads=2,
                                            capacity=40, min_after_dequeue=10)
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess=sess, coord=coord)
        try:
            imgs, labs = sess.run([images, labels], options=tf.RunOptions(timeout_in_ms=30000))
        finally:
            coord.request_stop()
            sess.run(filename_queue.close(cancel_pending_enqueues=True))
            coord.join(threads, stop_grace_period_secs=10)
    assert imgs.shape == (8, 24, 24, 3) and labs.shape == (8, 1)
    assert np.all((labs >= 0) & (labs < 10))
    np.testing.assert_allclose(imgs.mean(axis=(1, 2, 3)), 0, atol=1e-4)


@pytest.mark.parametrize("case", [
    OpCase("sobel_edges", tf.image.sobel_edges, lambda x: x, shapes=[(1, 4, 5, 2)]),
    OpCase("image_gradients", lambda x: list(tf.image.image_gradients(x)), lambda x: x,
           shapes=[(2, 3, 4, 1)]),
    OpCase("rgb_to_yiq", tf.image.rgb_to_yiq, lambda x: x, shapes=[(3, 4, 3)]),
    OpCase("adjust_gamma", lambda x: tf.image.adjust_gamma(x, 2.0, 1.5), lambda x: x,
           shapes=[(3, 4, 3)], make=lambda rng, shape, dt: rng.uniform(0.2, 1, shape).astype(dt)),
    OpCase("per_image_standardization", tf.image.per_image_standardization, lambda x: x,
           shapes=[(2, 3, 4, 3)]),
], ids=lambda c: c.name)
def test_composite_gradients(case):
    # adjust_gamma computes in float32 for float64 images too, as TF does.
    check_gradient(case, np.float32 if case.name == "adjust_gamma" else np.float64)


def test_non_max_suppression_padded_of_a_batch_is_each_images():
    rng = np.random.default_rng(5)
    boxes = rng.random((3, 2, 7, 4)).astype(np.float32)
    boxes[..., 2:] += boxes[..., :2]
    scores = rng.random((3, 2, 7)).astype(np.float32)
    b = tf.placeholder(tf.float32, [None, 2, 7, 4])
    s = tf.placeholder(tf.float32, [None, 2, 7])
    indices, valid = tf.image.non_max_suppression_padded(b, s, 5, 0.4, 0.3,
                                                         pad_to_max_output_size=True)
    assert indices.shape.as_list() == [None, 2, 5] and valid.shape.as_list() == [None, 2]
    one_b, one_s = tf.placeholder(tf.float32, [7, 4]), tf.placeholder(tf.float32, [7])
    one = tf.image.non_max_suppression_padded(one_b, one_s, 5, 0.4, 0.3,
                                              pad_to_max_output_size=True)
    with tf.Session() as sess:
        got_i, got_v = sess.run([indices, valid], {b: boxes, s: scores})
        for pos in np.ndindex(3, 2):
            want_i, want_v = sess.run(one, {one_b: boxes[pos], one_s: scores[pos]})
            np.testing.assert_array_equal(got_i[pos], want_i)
            assert got_v[pos] == want_v
    with pytest.raises(ValueError, match="must be True for batched input"):
        tf.image.non_max_suppression_padded(boxes, scores, 5)


def test_adjust_gamma_refuses_negative_gamma():
    # TF's messages: a constant gamma at graph time, a fed one when the step runs
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Gamma should be a non-negative"):
            tf.image.adjust_gamma(tf.ones([2, 2, 1]), -1.0)
        gamma = tf.placeholder(tf.float32, [])
        out = tf.image.adjust_gamma(tf.fill([2, 2, 1], 0.5), gamma)
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(out, {gamma: 2.0}), np.full([2, 2, 1], 0.25))
            with pytest.raises(tf.errors.InvalidArgumentError, match="Gamma should be"):
                sess.run(out, {gamma: -1.0})
