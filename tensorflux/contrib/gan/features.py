"""`tf.contrib.gan.features`: pieces GAN networks and training use.

- `clip_variables` / `clip_discriminator_weights`: an optimizer that clips each listed
  variable elementwise to [-c, c] after its update (WGAN's weight clipping;
  `tf.contrib.opt.VariableClippingOptimizer` with no norm dimensions).
- `condition_tensor(tensor, conditioning)`: tensor + a linear map of the flattened
  conditioning (a `fully_connected` layer, variables `fully_connected/weights|biases`)
  reshaped to the tensor's shape; `condition_tensor_from_onehot` embeds the one-hot
  labels' argmax first (variable `embedding`, [classes, embedding_size]).
- `VBN`: virtual batch normalization: each example is normalized with the statistics of
  the reference batch plus itself (weights B/(B+1) and 1/(B+1)), so one example's output
  does not depend on the rest of its batch.
- `tensor_pool`: a pool (a RandomShuffleQueue) of earlier values; once full, each call
  returns with probability `pooling_probability` a random earlier value (the discriminator
  then trains on older generated data), else the current one, and stores the current one.
- spectral normalization (`spectral_normalize`, `compute_spectral_norm`, the regularizer
  and the custom getter): contrib/gan/spectral_normalization.py.
"""

from __future__ import annotations

from tensorflux.contrib.gan.spectral_normalization import (
    compute_spectral_norm,
    spectral_norm_regularizer,
    spectral_normalization_custom_getter,
    spectral_normalize,
)
from tensorflux.contrib.layers_core import fully_connected
from tensorflux.contrib.layers_extra import flatten
from tensorflux.contrib.opt.wrappers import VariableClippingOptimizer
from tensorflux.control_flow import builders, nest
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.framework.tensor_shape import TensorShape
from tensorflux.nn import embedding_ops, nn_impl
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    data_flow_ops,
    math_ops,
    random_ops,
    reduction_ops,
    unary_ops,
)
from tensorflux.variables import init_ops, variable_scope

__all__ = ["VBN", "clip_discriminator_weights", "clip_variables", "compute_spectral_norm",
           "condition_tensor", "condition_tensor_from_onehot", "spectral_norm_regularizer",
           "spectral_normalization_custom_getter", "spectral_normalize", "tensor_pool"]


def clip_variables(optimizer, variables, weight_clip):
    """`optimizer` whose updates end by clipping each of `variables` to
    [-weight_clip, weight_clip] elementwise.

    Raises:
      ValueError: a negative `weight_clip`.
    """
    if weight_clip < 0:
        raise ValueError(f"`discriminator_weight_clip` must be positive. Instead, was "
                         f"{weight_clip}")
    return VariableClippingOptimizer(
        opt=optimizer, vars_to_clip_dims={var: [] for var in variables},
        max_norm=weight_clip, use_locking=True, colocate_clip_ops_with_vars=True)


def clip_discriminator_weights(optimizer, model, weight_clip):
    """`clip_variables` of the model's discriminator variables."""
    return clip_variables(optimizer, model.discriminator_variables, weight_clip)


def _shape_of(tensor):
    """The static shape, its unknown batch dimension read at run time."""
    static = tensor.shape.as_list()
    if static[0] is None:
        return [array_ops.shape(tensor)[0]] + static[1:]
    return static


def condition_tensor(tensor, conditioning):
    """`tensor` plus a learned linear map of `conditioning` to `tensor`'s shape.

    Raises:
      ValueError: `tensor`'s non-batch shape is not fully defined, or `conditioning` has
        rank below 2.
    """
    tensor.shape[1:].assert_is_fully_defined()
    num_features = tensor.shape[1:].num_elements()
    if conditioning.shape.ndims is not None and conditioning.shape.ndims < 2:
        raise ValueError(f"conditioning must be at least 2D, but saw shape: "
                         f"{conditioning.shape}")
    mapped = fully_connected(flatten(conditioning), num_features, activation_fn=None)
    if not mapped.shape.is_compatible_with(tensor.shape):
        mapped = array_ops.reshape(mapped, _shape_of(tensor))
    return tensor + mapped


def condition_tensor_from_onehot(tensor, one_hot_labels, embedding_size=256):
    """`condition_tensor` of the embedding of each row's label (its argmax: labels of
    any numeric dtype).

    Raises:
      ValueError: the labels are not of rank 2 with a known number of classes.
    """
    one_hot_labels.shape.assert_has_rank(2)
    one_hot_labels.shape[1:].assert_is_fully_defined()
    num_classes = one_hot_labels.shape.as_list()[1]
    label_id = reduction_ops.argmax(one_hot_labels, axis=1)
    embedding = variable_scope.get_variable("embedding", [num_classes, embedding_size])
    embedded = embedding_ops.embedding_lookup(embedding, label_id, name="token_to_embedding")
    return condition_tensor(tensor, embedded)


def _statistics(x, axes):
    """(mean, mean of squares) of `x` over `axes`, kept as dimensions of size 1 (they
    broadcast against `x`); the mean is taken around a shift (the mean itself, without
    gradient) for precision; float16 is computed in float32."""
    y = math_ops.cast(x, dtypes.float32) if x.dtype == dtypes.float16 else x
    shift = array_ops.stop_gradient(reduction_ops.reduce_mean(y, axes, keepdims=True))
    mean = reduction_ops.reduce_mean(y - shift, axes, keepdims=True) + shift
    mean_sq = reduction_ops.reduce_mean(unary_ops.square(y), axes, keepdims=True)
    if x.dtype == dtypes.float16:
        mean, mean_sq = math_ops.cast(mean, x.dtype), math_ops.cast(mean_sq, x.dtype)
    return mean, mean_sq


class VBN:
    """Virtual batch normalization (https://arxiv.org/abs/1606.03498) over the feature
    axis `axis`, with the statistics of `reference_batch` (whose examples lie along
    `batch_axis`).

    Raises:
      ValueError: unknown rank, an axis out of range, `axis` equal to `batch_axis`, or a
        feature dimension that is not known.
    """

    def __init__(self, reference_batch, axis=-1, epsilon=1e-3, center=True, scale=True,
                 beta_initializer=init_ops.zeros_initializer(),
                 gamma_initializer=init_ops.ones_initializer(), beta_regularizer=None,
                 gamma_regularizer=None, trainable=True, name=None, batch_axis=0):
        reference_batch = convert_to_tensor(reference_batch)
        ndims = reference_batch.shape.ndims
        if ndims is None:
            raise ValueError("`reference_batch` has unknown dimensions.")
        for value in (axis, batch_axis):
            if not -ndims <= value < ndims:
                raise ValueError(f"Value of `axis` argument {value} is out of range for "
                                 f"input with rank {ndims}.")
        self._axis = axis % ndims
        self._batch_axis = batch_axis % ndims
        if self._axis == self._batch_axis:
            raise ValueError("`axis` and `batch_axis` cannot be the same.")
        if reference_batch.shape.as_list()[self._axis] is None:
            raise ValueError(f"`reference_batch` has unknown dimension {axis}: "
                             f"{reference_batch.shape}")
        self._epsilon, self._center, self._scale = epsilon, center, scale
        self._reduction_axes = [i for i in range(ndims) if i != self._axis]
        self._example_reduction_axes = [i for i in range(ndims)
                                        if i not in (self._axis, self._batch_axis)]
        self._reference_batch = reference_batch
        with variable_scope.variable_scope(name, "VBN", values=[reference_batch]) as vs:
            self._vs = vs
            params_shape = [reference_batch.shape.as_list()[self._axis]]
            self._beta = variable_scope.get_variable(
                "beta", params_shape, initializer=beta_initializer,
                regularizer=beta_regularizer, trainable=trainable) if center else None
            self._gamma = variable_scope.get_variable(
                "gamma", params_shape, initializer=gamma_initializer,
                regularizer=gamma_regularizer, trainable=trainable) if scale else None
            self._ref_mean, self._ref_mean_sq = _statistics(reference_batch,
                                                            self._reduction_axes)
            batch_size = reference_batch.shape.as_list()[self._batch_axis]
            if batch_size is None:
                batch_size = array_ops.shape(reference_batch)[self._batch_axis]
            self._example_weight = 1. / (math_ops.to_float(batch_size) + 1.)
            self._reference_weight = 1. - self._example_weight

    def _normalize(self, x, mean, mean_sq):
        variance = mean_sq - unary_ops.square(mean)
        shape = [1] * self._reference_batch.shape.ndims
        shape[self._axis] = -1
        params = [None if p is None else array_ops.reshape(p, shape)
                  for p in (self._beta, self._gamma)]
        return nn_impl.batch_normalization(x, mean, variance, params[0], params[1],
                                           self._epsilon)

    def reference_batch_normalization(self):
        """The reference batch normalized with its own statistics."""
        with graph_lib.name_scope(self._vs.name + "/"):
            return self._normalize(self._reference_batch, self._ref_mean,
                                   self._ref_mean_sq)

    def __call__(self, inputs):
        """`inputs` (the reference batch's shape but for the batch dimension), each
        example normalized with the reference statistics mixed with its own.

        Raises:
          ValueError: a shape incompatible with the reference batch's off the batch axis.
        """
        inputs = convert_to_tensor(inputs)
        ref = self._reference_batch.shape.as_list()
        got = inputs.shape.as_list() if inputs.shape.ndims is not None else None
        if got is None or len(got) != len(ref):
            raise ValueError(f"Shapes {inputs.shape} and {self._reference_batch.shape} are "
                             "incompatible")
        del ref[self._batch_axis], got[self._batch_axis]
        TensorShape(ref).assert_is_compatible_with(TensorShape(got))
        with graph_lib.name_scope(self._vs.name + "/"):
            mean, mean_sq = _statistics(inputs, self._example_reduction_axes)
            vb_mean = self._example_weight * mean + self._reference_weight * self._ref_mean
            vb_mean_sq = (self._example_weight * mean_sq
                          + self._reference_weight * self._ref_mean_sq)
            return self._normalize(inputs, vb_mean, vb_mean_sq)


def tensor_pool(input_values, pool_size=50, pooling_probability=0.5, name="tensor_pool"):
    """`input_values` (a tensor or a nested structure of them) or, once the pool holds
    `pool_size` earlier values, with probability `pooling_probability` a random one of
    them; the current values always join the pool (the returned pooled ones leave it).
    `pool_size=0` returns `input_values` as they are."""
    if pool_size == 0:
        return input_values
    original = input_values
    flat = [convert_to_tensor(v) for v in nest.flatten(input_values)]
    with graph_lib.name_scope(f"{name}_pool_queue", values=flat + [pooling_probability]):
        queue = data_flow_ops.RandomShuffleQueue(
            capacity=pool_size, min_after_dequeue=0, dtypes=[v.dtype for v in flat])

        def fill():
            with graph_lib.control_dependencies([queue.enqueue(flat)]):
                return [array_ops.identity(v) for v in flat]

        def swap():
            pooled = queue.dequeue()
            pooled = list(pooled) if isinstance(pooled, (list, tuple)) else [pooled]
            with graph_lib.control_dependencies(pooled):
                with graph_lib.control_dependencies([queue.enqueue(flat)]):
                    prob = random_ops.random_uniform((), dtype=dtypes.float32)
                    return builders.cond(comparison_ops.less(prob, pooling_probability),
                                         lambda: pooled, lambda: flat)

        outputs = builders.cond(comparison_ops.less(queue.size(), pool_size), fill, swap)
        outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        for value, output in zip(flat, outputs, strict=True):
            output.set_shape(value.shape)
    return nest.pack_sequence_as(original, outputs)
