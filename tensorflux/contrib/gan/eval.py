"""`tf.contrib.gan.eval`: GAN metrics on a classifier's outputs, image grids and the
summaries TF-GAN adds.

Metrics (computed in float64, returned in the input's dtype):
- `classifier_score_from_logits(logits)`: exp(E_x KL(p(y|x) || p(y))), p(y) the batch's
  mean prediction (the Inception Score, given the Inception network's logits);
  `classifier_score(images, classifier_fn, num_batches)` runs `classifier_fn` first.
- `frechet_classifier_distance_from_activations(real, generated)`:
  |m - m_w|^2 + Tr(C + C_w - 2 (C C_w)^(1/2)), means and (N-1)-normalized covariances of
  the activations; the matrix square root through SVDs of symmetric matrices
  (`trace_sqrt_product`). `mean_only_...` keeps the first term, `diagonal_only_...`
  replaces the second by sum (sigma - sigma_w)^2 over the per-feature deviations.
  `frechet_classifier_distance(real_images, generated_images, classifier_fn)`.
- `sliced_wasserstein_distance(real_images, fake_images)`: per Laplacian-pyramid level,
  contrib/gan/sliced_wasserstein.py.
- `kernel_classifier_distance_from_activations` (KID): the unbiased MMD^2 with the kernel
  (x.y / d + 1)^3, averaged over blocks of at most `max_block_size` examples, in the
  activations' dtype (`..._and_std_...` also gives the estimate's standard error).
The Inception wrappers (`inception_score`, `frechet_inception_distance`, `run_inception`)
import a frozen Inception GraphDef (`run_image_classifier`): the one given, else, as in
TF, the one of TF-GAN's tarball (`INCEPTION_URL`, downloaded into the working directory
unless already there; a machine without network gets the download's error).
"""

from __future__ import annotations

import functools
import math
import os

from tensorflux.contrib.gan import namedtuples
from tensorflux.contrib.gan.sliced_wasserstein import sliced_wasserstein_distance
from tensorflux.contrib.layers_extra import flatten
from tensorflux.control_flow import builders, functional_ops
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.importer import import_graph_def
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.image import image_ops
from tensorflux.linalg import linalg_impl
from tensorflux.losses import util
from tensorflux.nn import nn_impl
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    constant_op,
    gather_ops,
    joining_ops,
    linalg_factor_ops,
    linalg_ops,
    math_ops,
    matrix_ops,
    nn_ops,
    reduction_ops,
    sequence_ops,
    unary_ops,
)
from tensorflux.platform import gfile
from tensorflux.protos import graph_pb2
from tensorflux.summary import summary
from tensorflux.variables import variable_scope

__all__ = ["add_cyclegan_image_summaries", "add_gan_model_image_summaries",
           "add_gan_model_summaries", "add_image_comparison_summaries",
           "add_regularization_loss_summaries", "add_stargan_image_summaries", "classifier_score",
           "classifier_score_from_logits",
           "diagonal_only_frechet_classifier_distance_from_activations",
           "frechet_classifier_distance", "frechet_classifier_distance_from_activations",
           "frechet_inception_distance", "get_graph_def_from_disk", "get_graph_def_from_resource",
           "get_graph_def_from_url_tarball", "image_grid", "image_reshaper",
           "INCEPTION_DEFAULT_IMAGE_SIZE", "INCEPTION_FINAL_POOL", "INCEPTION_FROZEN_GRAPH",
           "INCEPTION_INPUT", "INCEPTION_OUTPUT", "inception_score", "INCEPTION_URL",
           "kernel_classifier_distance", "kernel_classifier_distance_and_std",
           "kernel_classifier_distance_and_std_from_activations",
           "kernel_classifier_distance_from_activations",
           "mean_only_frechet_classifier_distance_from_activations", "preprocess_image",
           "run_image_classifier", "run_inception", "sliced_wasserstein_distance",
           "trace_sqrt_product"]


# ---- classifier metrics -------------------------------------------------------------------


def _as_float64(x):
    x = convert_to_tensor(x)
    return x, math_ops.cast(x, dtypes.float64)


def _back(value, dtype):
    return value if dtype == dtypes.float64 else math_ops.cast(value, dtype)


def run_image_classifier(tensor, graph_def, input_tensor, output_tensor,
                         scope="RunClassifier"):
    """The classifier of `graph_def` imported under `scope` with `tensor` in place of its
    `input_tensor`; returns its `output_tensor` (a name, or a list of names)."""
    single = isinstance(output_tensor, str)
    names = [output_tensor] if single else list(output_tensor)
    outputs = import_graph_def(graph_def, {input_tensor: tensor}, names, name=scope)
    return outputs[0] if single else outputs


def get_graph_def_from_disk(filename):
    """The GraphDef stored (binary) in `filename`."""
    with gfile.GFile(filename, "rb") as f:
        return graph_pb2.GraphDef.FromString(f.read())


def get_graph_def_from_resource(filename):
    """The GraphDef stored in `filename`, relative to the package's directory (TF's
    resource loader reads relative to TensorFlow's) or, failing that, as given."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    path = os.path.join(root, filename)
    return get_graph_def_from_disk(path if os.path.exists(path) else filename)


def get_graph_def_from_url_tarball(url, filename, tar_filename=None):
    """The GraphDef `filename` inside the gzipped tarball at `url`, downloaded to
    `tar_filename` unless that file exists already."""
    import tarfile  # here, not at the top: 7 ms of every tensorflux import otherwise
    import urllib.request

    if not (tar_filename and os.path.exists(tar_filename)):
        tar_filename, _ = urllib.request.urlretrieve(url, tar_filename)
    with tarfile.open(tar_filename, "r:gz") as tar:
        return graph_pb2.GraphDef.FromString(tar.extractfile(filename).read())


INCEPTION_URL = "http://download.tensorflow.org/models/frozen_inception_v1_2015_12_05.tar.gz"
INCEPTION_FROZEN_GRAPH = "inceptionv1_for_inception_score.pb"
INCEPTION_INPUT = "Mul:0"
INCEPTION_OUTPUT = "logits:0"
INCEPTION_FINAL_POOL = "pool_3:0"
INCEPTION_DEFAULT_IMAGE_SIZE = 299


def _default_graph_def_fn():
    return get_graph_def_from_url_tarball(INCEPTION_URL, INCEPTION_FROZEN_GRAPH,
                                          os.path.basename(INCEPTION_URL))


def preprocess_image(images, height=INCEPTION_DEFAULT_IMAGE_SIZE,
                     width=INCEPTION_DEFAULT_IMAGE_SIZE, scope=None):
    """Images (a batch or one image, values in [0, 255]) resized bilinearly to
    height x width and scaled to [-1, 1) as (x - 128) / 128, as Inception expects."""
    images = convert_to_tensor(images)
    single = images.shape.ndims == 3
    with graph_lib.name_scope(scope, "preprocess", [images, height, width]):
        if not images.dtype.is_floating:
            images = math_ops.to_float(images)
        if single:
            images = array_ops.expand_dims(images, axis=0)
        resized = (image_ops.resize_bilinear(images, [height, width]) - 128.0) / 128.0
        return array_ops.squeeze(resized, axis=0) if single else resized


def run_inception(images, graph_def=None, default_graph_def_fn=_default_graph_def_fn,
                  image_size=INCEPTION_DEFAULT_IMAGE_SIZE, input_tensor=INCEPTION_INPUT,
                  output_tensor=INCEPTION_OUTPUT):
    """The Inception network's `output_tensor` (one name or a list; outputs of rank
    above 2 flattened) on preprocessed [N, image_size, image_size, 3] images; the graph
    is `graph_def`, else `default_graph_def_fn()`."""
    images = convert_to_tensor(images)
    images.shape.assert_is_compatible_with([None, image_size, image_size, 3])
    if graph_def is None:
        graph_def = default_graph_def_fn()
    outputs = run_image_classifier(images, graph_def, input_tensor, output_tensor)
    if isinstance(outputs, list):
        return [o if o.shape.ndims == 2 else flatten(o) for o in outputs]
    return outputs if outputs.shape.ndims == 2 else flatten(outputs)


def inception_score(images, num_batches=1):
    """`classifier_score` with Inception's logits as the classifier."""
    return classifier_score(images, functools.partial(
        run_inception, output_tensor=INCEPTION_OUTPUT), num_batches)


def frechet_inception_distance(real_images, generated_images, num_batches=1):
    """`frechet_classifier_distance` on Inception's final pool activations."""
    return frechet_classifier_distance(real_images, generated_images, functools.partial(
        run_inception, output_tensor=INCEPTION_FINAL_POOL), num_batches)


def _run_classifier_fn(images, classifier_fn, num_batches):
    """`classifier_fn` on `num_batches` equal splits of `images`, concatenated."""
    images = convert_to_tensor(images)
    if num_batches == 1:
        return classifier_fn(images)
    parts = joining_ops.split(images, num_or_size_splits=num_batches)
    return joining_ops.concat([classifier_fn(p) for p in parts], 0)


def classifier_score_from_logits(logits):
    """exp(mean over the batch of KL(softmax(logits) || mean softmax)).

    Raises:
      ValueError: `logits` not of rank 2.
    """
    logits, logits64 = _as_float64(logits)
    logits.shape.assert_has_rank(2)
    p = nn_ops.softmax(logits64)
    q = reduction_ops.reduce_mean(p, axis=0)
    kl = reduction_ops.reduce_sum(p * (nn_ops.log_softmax(logits64) - unary_ops.log(q)),
                                  axis=1)
    return _back(unary_ops.exp(reduction_ops.reduce_mean(kl)), logits.dtype)


def classifier_score(images, classifier_fn, num_batches=1):
    """`classifier_score_from_logits` of `classifier_fn(images)`."""
    return classifier_score_from_logits(_run_classifier_fn(images, classifier_fn,
                                                           num_batches))


def _symmetric_sqrt(mat, eps=1e-10):
    """The square root of a symmetric positive semi-definite matrix, U sqrt(S) V^T from
    its SVD (singular values below `eps` kept as they are)."""
    s, u, v = linalg_factor_ops.svd(mat)
    si = comparison_ops.where(comparison_ops.less(s, eps), s, unary_ops.sqrt(s))
    return matrix_ops.matmul(matrix_ops.matmul(u, linalg_ops.matrix_diag(si)), v,
                             transpose_b=True)


def trace_sqrt_product(sigma, sigma_v):
    """Tr((sigma sigma_v)^(1/2)) as Tr((A sigma_v A)^(1/2)), A = sigma^(1/2) (same
    eigenvalues, and symmetric)."""
    sqrt_sigma = _symmetric_sqrt(sigma)
    product = matrix_ops.matmul(sqrt_sigma, matrix_ops.matmul(sigma_v, sqrt_sigma))
    return linalg_impl.trace(_symmetric_sqrt(product))


def _mean_and_covariance(activations):
    mean = reduction_ops.reduce_mean(activations, 0)
    centered = activations - mean
    n = math_ops.cast(array_ops.shape(activations)[0], dtypes.float64)
    return mean, matrix_ops.matmul(centered, centered, transpose_a=True) / (n - 1)


def frechet_classifier_distance_from_activations(real_activations, generated_activations):
    """The Frechet distance between Gaussians fitted to the two sets of activations.

    Raises:
      ValueError: activations not of rank 2.
    """
    real_activations.shape.assert_has_rank(2)
    generated_activations.shape.assert_has_rank(2)
    dtype = real_activations.dtype
    real = math_ops.cast(real_activations, dtypes.float64)
    gen = math_ops.cast(generated_activations, dtypes.float64)
    m, sigma = _mean_and_covariance(real)
    m_w, sigma_w = _mean_and_covariance(gen)
    sqrt_trace = trace_sqrt_product(sigma, sigma_w)
    trace = linalg_impl.trace(sigma + sigma_w) - 2.0 * sqrt_trace
    mean = reduction_ops.reduce_sum(math_ops.squared_difference(m, m_w))
    return _back(trace + mean, dtype)


def mean_only_frechet_classifier_distance_from_activations(real_activations,
                                                           generated_activations):
    """|m - m_w|^2: the Frechet distance's mean term."""
    real_activations.shape.assert_has_rank(2)
    generated_activations.shape.assert_has_rank(2)
    dtype = real_activations.dtype
    m = reduction_ops.reduce_mean(math_ops.cast(real_activations, dtypes.float64), 0)
    m_w = reduction_ops.reduce_mean(math_ops.cast(generated_activations, dtypes.float64), 0)
    return _back(reduction_ops.reduce_sum(math_ops.squared_difference(m, m_w)), dtype)


def diagonal_only_frechet_classifier_distance_from_activations(real_activations,
                                                               generated_activations):
    """|m - m_w|^2 + |sigma - sigma_w|^2 with per-feature standard deviations (the
    Frechet distance of Gaussians with diagonal covariances; variances normalized by N).

    Raises:
      ValueError: activations not of rank 2 or of different shapes.
    """
    real_activations.shape.assert_has_rank(2)
    generated_activations.shape.assert_has_rank(2)
    real_activations.shape.assert_is_compatible_with(generated_activations.shape)
    dtype = real_activations.dtype
    m, var = nn_impl.moments(math_ops.cast(real_activations, dtypes.float64), axes=[0])
    m_w, var_w = nn_impl.moments(math_ops.cast(generated_activations, dtypes.float64),
                                 axes=[0])
    mean_part = reduction_ops.reduce_sum(math_ops.squared_difference(m, m_w))
    std_part = reduction_ops.reduce_sum(
        math_ops.squared_difference(unary_ops.sqrt(var), unary_ops.sqrt(var_w)))
    return _back(mean_part + std_part, dtype)


def frechet_classifier_distance(real_images, generated_images, classifier_fn,
                                num_batches=1):
    """`frechet_classifier_distance_from_activations` of `classifier_fn` on both."""
    real = _run_classifier_fn(real_images, classifier_fn, num_batches)
    gen = _run_classifier_fn(generated_images, classifier_fn, num_batches)
    return frechet_classifier_distance_from_activations(real, gen)


def _block_sizes(n: int, n_blocks: int) -> list[int]:
    """`n` split into `n_blocks` sizes differing by at most one, the larger last."""
    small, extra = divmod(n, n_blocks)
    return [small] * (n_blocks - extra) + [small + 1] * extra


def _kid_block(real, gen, dim):
    """The unbiased MMD^2 estimate of one block, in the activations' dtype."""
    def kernel(a, b):
        return (matrix_ops.matmul(a, b, transpose_b=True) / dim + 1) ** 3

    def mean_off_diagonal(k):
        n = math_ops.cast(array_ops.shape(k)[0], k.dtype)
        return (reduction_ops.reduce_sum(k) - linalg_impl.trace(k)) / (n * (n - 1))

    return (-2 * reduction_ops.reduce_mean(kernel(real, gen))
            + mean_off_diagonal(kernel(real, real)) + mean_off_diagonal(kernel(gen, gen)))


def _dynamic_block_bounds(n, n_blocks):
    """[n_blocks + 1] block starts (then the end) of `_block_sizes`, as a tensor."""
    small = n // n_blocks
    extra = n - small * n_blocks
    sizes = joining_ops.concat([array_ops.fill([n_blocks - extra], small),
                                array_ops.fill([extra], small + 1)], 0)
    return joining_ops.concat([constant_op.constant([0]), sequence_ops.cumsum(sizes)], 0)


def _kid_estimates(real, gen, max_block_size):
    """The per-block estimates (a vector) and their number (a scalar tensor); blocks cut
    in Python when the sizes are known, else at run time (`max_block_size` may be a
    tensor)."""
    dim = math_ops.cast(real.shape.as_list()[1] or array_ops.shape(real)[1], real.dtype)
    n_r, n_g = real.shape.as_list()[0], gen.shape.as_list()[0]
    if n_r is not None and n_g is not None and isinstance(max_block_size, int):
        n_blocks = math.ceil(max(n_r, n_g) / max_block_size)
        ests, start_r, start_g = [], 0, 0
        for size_r, size_g in zip(_block_sizes(n_r, n_blocks), _block_sizes(n_g, n_blocks),
                                  strict=True):
            ests.append(_kid_block(real[start_r:start_r + size_r],
                                   gen[start_g:start_g + size_g], dim))
            start_r, start_g = start_r + size_r, start_g + size_g
        return joining_ops.stack(ests), constant_op.constant(n_blocks)
    rows_r, rows_g = array_ops.shape(real)[0], array_ops.shape(gen)[0]
    bigger = math_ops.cast(math_ops.maximum(rows_r, rows_g), dtypes.float64)
    n_blocks = math_ops.cast(unary_ops.ceil(
        bigger / math_ops.cast(max_block_size, dtypes.float64)), dtypes.int32)
    bounds_r = _dynamic_block_bounds(rows_r, n_blocks)
    bounds_g = _dynamic_block_bounds(rows_g, n_blocks)

    def block(i):
        return _kid_block(real[bounds_r[i]:bounds_r[i + 1]],
                          gen[bounds_g[i]:bounds_g[i + 1]], dim)

    ests = functional_ops.map_fn(block, sequence_ops.range(n_blocks), dtype=real.dtype,
                                 back_prop=False)
    return ests, n_blocks


def _kid_inputs(activations1, activations2, dtype):
    activations1.shape.assert_has_rank(2)
    activations2.shape.assert_has_rank(2)
    activations1.shape[1:2].assert_is_compatible_with(activations2.shape[1:2])
    if dtype is None:
        return activations1, activations2
    return math_ops.cast(activations1, dtype), math_ops.cast(activations2, dtype)


def kernel_classifier_distance_and_std_from_activations(real_activations,
                                                        generated_activations,
                                                        max_block_size=1024, dtype=None):
    """(KID, an estimate of its standard error): the mean over blocks of at most
    `max_block_size` examples of the unbiased MMD^2 estimate with the kernel
    (x.y / d + 1)^3, computed in the activations' dtype (or `dtype`), and the blocks'
    Bessel-corrected deviation over sqrt(blocks) (NaN for one block).

    Raises:
      ValueError: activations not of rank 2, or of different widths.
    """
    real, gen = _kid_inputs(real_activations, generated_activations, dtype)
    ests, n_blocks = _kid_estimates(real, gen, max_block_size)
    mean = reduction_ops.reduce_mean(ests)
    blocks = math_ops.cast(n_blocks, real.dtype)
    var = builders.cond(
        comparison_ops.less_equal(n_blocks, 1),
        lambda: constant_op.constant(float("nan"), dtype=real.dtype),
        lambda: reduction_ops.reduce_sum(unary_ops.square(ests - mean)) / (blocks - 1))
    return mean, unary_ops.sqrt(var / blocks)


def kernel_classifier_distance_from_activations(real_activations, generated_activations,
                                                max_block_size=1024, dtype=None):
    """The KID of `kernel_classifier_distance_and_std_from_activations` alone."""
    real, gen = _kid_inputs(real_activations, generated_activations, dtype)
    return reduction_ops.reduce_mean(_kid_estimates(real, gen, max_block_size)[0])


def kernel_classifier_distance(real_images, generated_images, classifier_fn, num_batches=1,
                               max_block_size=1024, dtype=None):
    """`kernel_classifier_distance_from_activations` of `classifier_fn` on both."""
    real = _run_classifier_fn(real_images, classifier_fn, num_batches)
    gen = _run_classifier_fn(generated_images, classifier_fn, num_batches)
    return kernel_classifier_distance_from_activations(real, gen, max_block_size, dtype)


def kernel_classifier_distance_and_std(real_images, generated_images, classifier_fn,
                                       num_batches=1, max_block_size=1024, dtype=None):
    """`kernel_classifier_distance_and_std_from_activations` of `classifier_fn` on both."""
    real = _run_classifier_fn(real_images, classifier_fn, num_batches)
    gen = _run_classifier_fn(generated_images, classifier_fn, num_batches)
    return kernel_classifier_distance_and_std_from_activations(real, gen, max_block_size,
                                                               dtype)


# ---- image grids --------------------------------------------------------------------------


def image_grid(input_tensor, grid_shape, image_shape=(32, 32), num_channels=3):
    """A batch of images ([N, h, w, c], or flat [N, h*w*c]) laid out as one image of
    grid_shape[0] rows and grid_shape[1] columns, row by row: [1, rows*h, cols*w, c].

    Raises:
      ValueError: N is not rows * cols, the images' shape is not `image_shape` x
        `num_channels`, or the input is not of rank 2 or 4.
    """
    input_tensor = convert_to_tensor(input_tensor)
    rows, cols = grid_shape
    batch = input_tensor.shape.as_list()[0]
    if batch is None or rows * cols != int(batch):
        raise ValueError(f"Grid shape {grid_shape} incompatible with minibatch size "
                         f"{batch}.")
    dims = input_tensor.shape.as_list()
    if len(dims) == 2:
        if dims[1] != image_shape[0] * image_shape[1] * num_channels:
            raise ValueError("Image shape and number of channels incompatible with input "
                             "tensor.")
    elif len(dims) == 4:
        if dims[1:] != [image_shape[0], image_shape[1], num_channels]:
            raise ValueError("Image shape and number of channels incompatible with input "
                             "tensor.")
    else:
        raise ValueError("Unrecognized input tensor format.")
    h, w = image_shape
    grid = array_ops.reshape(input_tensor, [rows, cols, h, w, num_channels])
    grid = array_ops.transpose(grid, [0, 2, 1, 3, 4])
    return array_ops.reshape(grid, [1, rows * h, cols * w, num_channels])


def image_reshaper(images, num_cols=None):
    """A list of images ([h, w, c] each, or a [N, h, w, c] tensor) tiled row by row,
    `num_cols` per row (default ceil(sqrt(N))), the last row padded with black images:
    [1, rows*h, cols*w, c]."""
    if not isinstance(images, (list, tuple)):
        images = joining_ops.unstack(convert_to_tensor(images))
    images = list(images)
    num_images = len(images)
    num_cols = num_cols or int(math.ceil(math.sqrt(num_images)))
    num_rows = int(math.ceil(num_images / num_cols))
    images += [array_ops.zeros_like(images[-1])] * (num_rows * num_cols - num_images)
    rows = [joining_ops.concat(images[i:i + num_cols], 1)
            for i in range(0, len(images), num_cols)]
    return array_ops.expand_dims(joining_ops.concat(rows, 0), 0)


# ---- summaries ----------------------------------------------------------------------------


def _assert_is_image(data) -> None:
    data.shape.assert_has_rank(4)
    data.shape[1:].assert_is_fully_defined()


def add_gan_model_image_summaries(gan_model, grid_size=4, model_summaries=True):
    """Image summaries 'real_data' and 'generated_data': grids of the first grid_size^2
    images of each; also `add_gan_model_summaries` when `model_summaries`.

    Raises:
      ValueError: a CycleGANModel, or data that are not batches of images of known size.
    """
    if isinstance(gan_model, namedtuples.CycleGANModel):
        raise ValueError("`add_gan_model_image_summaries` does not take CycleGANModels. "
                         "Please use `add_cyclegan_image_summaries` instead.")
    _assert_is_image(gan_model.real_data)
    _assert_is_image(gan_model.generated_data)
    num_images = grid_size ** 2
    for tag, data in (("real_data", gan_model.real_data),
                      ("generated_data", gan_model.generated_data)):
        dims = data.shape.as_list()
        summary.image(tag, image_grid(data[:num_images], grid_shape=(grid_size, grid_size),
                                      image_shape=dims[1:3], num_channels=dims[3]),
                      max_outputs=1)
    if model_summaries:
        add_gan_model_summaries(gan_model)


def add_image_comparison_summaries(gan_model, num_comparisons=2, display_diffs=False):
    """One image summary 'image_comparison': the first `num_comparisons` generator
    inputs, generated and real images in rows (and |generated - real| with
    `display_diffs`), for image-to-image models.

    Raises:
      ValueError: data that are not images of one shape.
    """
    for data in (gan_model.generator_inputs, gan_model.generated_data, gan_model.real_data):
        _assert_is_image(data)
    gan_model.generated_data.shape.assert_is_compatible_with(
        gan_model.generator_inputs.shape)
    gan_model.real_data.shape.assert_is_compatible_with(gan_model.generated_data.shape)
    picks = [d[:num_comparisons] for d in (gan_model.generator_inputs,
                                           gan_model.generated_data, gan_model.real_data)]
    if display_diffs:
        picks.append(unary_ops.abs(picks[1] - picks[2]))
    images = [image for pick in picks for image in joining_ops.unstack(pick)]
    summary.image("image_comparison", image_reshaper(images, num_cols=num_comparisons),
                  max_outputs=1)


def add_cyclegan_image_summaries(cyclegan_model):
    """For each direction, an 'image_comparison' of the first input, its translation and
    its reconstruction.

    Raises:
      ValueError: not a CycleGANModel, or data that are not images.
    """
    if not isinstance(cyclegan_model, namedtuples.CycleGANModel):
        raise ValueError(f"`cyclegan_model` was not a CycleGANModel. Instead, was "
                         f"{type(cyclegan_model)}")
    for model, reconstructed, scope in (
            (cyclegan_model.model_x2y, cyclegan_model.reconstructed_x,
             "x2y_image_comparison_summaries"),
            (cyclegan_model.model_y2x, cyclegan_model.reconstructed_y,
             "y2x_image_comparison_summaries")):
        for data in (model.generator_inputs, model.generated_data, reconstructed):
            _assert_is_image(data)
        with graph_lib.name_scope(scope):
            images = (joining_ops.unstack(model.generator_inputs[:1])
                      + joining_ops.unstack(model.generated_data[:1])
                      + joining_ops.unstack(reconstructed[:1]))
            summary.image("image_comparison", image_reshaper(images, num_cols=len(images)),
                          max_outputs=1)


def add_stargan_image_summaries(stargan_model, num_images=2, display_diffs=False):
    """One image summary 'stargan_image_generation' of up to `num_images` images: each a
    row [input, its translation to domain 0, 1, ...] (and, `display_diffs`, a second row
    [black, translation - input, ...]), the generator reused on the fly.

    Raises:
      ValueError: input data that are not images, or domain labels not of rank 2 with
        a known number of domains.
    """
    _assert_is_image(stargan_model.input_data)
    labels_shape = stargan_model.input_data_domain_label.shape
    labels_shape.assert_has_rank(2)
    labels_shape[1:].assert_is_fully_defined()
    num_domains = labels_shape.as_list()[-1]

    def build_image(image):
        images = joining_ops.tile(array_ops.expand_dims(image, 0), [num_domains, 1, 1, 1])
        targets = gather_ops.one_hot(list(range(num_domains)), num_domains)
        with variable_scope.variable_scope(stargan_model.generator_scope, reuse=True):
            generated = stargan_model.generator_fn(images, targets)
        tiles = [image] + joining_ops.unstack(generated, num=num_domains)
        if display_diffs:
            tiles += ([array_ops.zeros_like(image)]
                      + joining_ops.unstack(generated - images, num=num_domains))
        return array_ops.squeeze(image_reshaper(tiles, num_cols=num_domains + 1), 0)

    summary.image("stargan_image_generation", functional_ops.map_fn(
        build_image, stargan_model.input_data[:num_images], parallel_iterations=num_images,
        back_prop=False, swap_memory=True), max_outputs=num_images)


def add_gan_model_summaries(gan_model) -> None:
    """A histogram of each generator variable (under 'generator_variables') and each
    discriminator variable ('discriminator_variables'); both directions of a
    CycleGANModel."""
    if isinstance(gan_model, namedtuples.CycleGANModel):
        with graph_lib.name_scope("cyclegan_x2y_summaries"):
            add_gan_model_summaries(gan_model.model_x2y)
        with graph_lib.name_scope("cyclegan_y2x_summaries"):
            add_gan_model_summaries(gan_model.model_y2x)
        return
    with graph_lib.name_scope("generator_variables"):
        for var in gan_model.generator_variables:
            summary.histogram(var.name, var)
    with graph_lib.name_scope("discriminator_variables"):
        for var in gan_model.discriminator_variables:
            summary.histogram(var.name, var)


def add_regularization_loss_summaries(gan_model) -> None:
    """Scalars 'generator_regularization_loss' and 'discriminator_regularization_loss'
    (the regularization losses under each network's scope); both directions of a
    CycleGANModel."""
    if isinstance(gan_model, namedtuples.CycleGANModel):
        with graph_lib.name_scope("cyclegan_x2y_regularization_loss_summaries"):
            add_regularization_loss_summaries(gan_model.model_x2y)
        with graph_lib.name_scope("cyclegan_y2x_regularization_loss_summaries"):
            add_regularization_loss_summaries(gan_model.model_y2x)
        return
    if gan_model.generator_scope:
        summary.scalar("generator_regularization_loss",
                       util.get_regularization_loss(gan_model.generator_scope.name))
    if gan_model.discriminator_scope:
        summary.scalar("discriminator_regularization_loss",
                       util.get_regularization_loss(gan_model.discriminator_scope.name))
