"""Batch normalization: the `BatchNormalization` layer and `tf.layers.batch_normalization`.

Training (`training` true, a Python bool or a boolean tensor): the output is normalized
with the batch's mean and variance, and two update ops (`updates`, and the
`tf.GraphKeys.UPDATE_OPS` collection) move the moving statistics toward them:
moving -= (moving - batch) * (1 - momentum). Inference uses the moving statistics.
With `fused` (the default for 4-D and 5-D inputs normalized over their channel axis) the
layer runs FusedBatchNormV3, whose batch variance for the moving average is the
Bessel-corrected one (as TF1's); otherwise `tf.nn.moments` and
`tf.nn.batch_normalization`, with the biased variance. With a boolean tensor the update
ops run under `tf.cond` and leave the statistics unchanged when it is false.
"""

from __future__ import annotations

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.layers.base import InputSpec, Layer, constant_bool, smart_cond
from tensorflux.nn import nn_impl
from tensorflux.ops import array_ops, batch_norm_ops, constant_op, math_ops
from tensorflux.variables import init_ops

__all__ = ["BatchNormalization", "BatchNorm", "batch_normalization"]


class BatchNormalization(Layer):
    """Batch normalization over all axes but `axis` (TF1's `tf.layers.BatchNormalization`).

    Args:
      axis: the feature axis (an int or a list of ints).
      momentum: the moving averages' decay.
      epsilon: added to the variance.
      center, scale: whether to learn an offset `beta` and a scale `gamma`.
      beta_initializer, gamma_initializer, moving_mean_initializer,
        moving_variance_initializer, beta_regularizer, gamma_regularizer, beta_constraint,
        gamma_constraint: for the four variables.
      fused: True, False, or None (fused when the input allows it).
      trainable, name: as `Layer`.

    Raises:
      ValueError: renorm, virtual batches or an adjustment (not supported), a bad axis,
        `fused=True` where the fused op cannot be used.
    """

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer=init_ops.zeros_initializer(),
                 gamma_initializer=init_ops.ones_initializer(),
                 moving_mean_initializer=init_ops.zeros_initializer(),
                 moving_variance_initializer=init_ops.ones_initializer(),
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, renorm=False, renorm_clipping=None,
                 renorm_momentum=0.99, fused=None, trainable=True, virtual_batch_size=None,
                 adjustment=None, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name, **kwargs)
        if renorm or virtual_batch_size is not None or adjustment is not None:
            raise ValueError("BatchNormalization: renorm, virtual_batch_size and adjustment "
                             "are not supported by tensorflux.")
        del renorm_clipping, renorm_momentum
        self.axis = list(axis) if isinstance(axis, (list, tuple)) else [axis]
        self.momentum, self.epsilon = momentum, epsilon
        self.center, self.scale = center, scale
        self.beta_initializer, self.gamma_initializer = beta_initializer, gamma_initializer
        self.moving_mean_initializer = moving_mean_initializer
        self.moving_variance_initializer = moving_variance_initializer
        self.beta_regularizer, self.gamma_regularizer = beta_regularizer, gamma_regularizer
        self.beta_constraint, self.gamma_constraint = beta_constraint, gamma_constraint
        self.fused = fused
        self.gamma = self.beta = self.moving_mean = self.moving_variance = None

    def _resolve(self, rank: int) -> None:
        axes = sorted(a + rank if a < 0 else a for a in self.axis)
        if any(a < 0 or a >= rank for a in axes) or len(set(axes)) != len(axes):
            raise ValueError(f"Invalid axis: {self.axis}")
        self.axis = axes
        can_fuse = rank in (4, 5) and axes in ([1], [rank - 1])
        if self.fused and not can_fuse:
            raise ValueError("fused=True needs a 4-D or 5-D input normalized over axis 1 or "
                             f"the last axis; got rank {rank} and axis {self.axis}")
        self.fused = can_fuse if self.fused is None else bool(self.fused)

    def build(self, input_shape) -> None:
        input_shape = tensor_shape.TensorShape(input_shape)
        if input_shape.ndims is None:
            raise ValueError(f"Input has undefined rank: {input_shape}")
        rank = input_shape.ndims
        self._resolve(rank)
        dims = input_shape.as_list()
        sizes = [dims[a] for a in self.axis]
        if any(s is None for s in sizes):
            raise ValueError(f"Input has undefined `axis` dimension. Input shape: "
                             f"{input_shape}")
        self.input_spec = InputSpec(ndim=rank, axes=dict(zip(self.axis, sizes, strict=True)))
        shape = sizes if len(sizes) == 1 else [d if i in self.axis else 1
                                               for i, d in enumerate(dims)]
        dtype = self._dtype or dtypes.float32
        if dtype in (dtypes.float16, dtypes.bfloat16):
            dtype = dtypes.float32  # statistics in float32, as TF keeps them
        if self.scale:
            self.gamma = self.add_weight("gamma", shape, dtype, self.gamma_initializer,
                                         self.gamma_regularizer,
                                         constraint=self.gamma_constraint)
        if self.center:
            self.beta = self.add_weight("beta", shape, dtype, self.beta_initializer,
                                        self.beta_regularizer, constraint=self.beta_constraint)
        self.moving_mean = self.add_weight("moving_mean", shape, dtype,
                                           self.moving_mean_initializer, trainable=False)
        self.moving_variance = self.add_weight("moving_variance", shape, dtype,
                                               self.moving_variance_initializer,
                                               trainable=False)
        self.built = True

    def _assign_moving_average(self, variable, value, momentum):
        with graph_lib.name_scope(None, "AssignMovingAvg", [variable, value, momentum]) as scope:
            decay = convert_to_tensor(1.0 - momentum, name="decay")
            decay = math_ops.cast(decay, variable.dtype.base_dtype)
            delta = (variable - math_ops.cast(value, variable.dtype.base_dtype)) * decay
            return variable.assign_sub(delta, name=scope)

    def _param_or(self, var, value, like):
        return var if var is not None else constant_op.constant(
            value, dtype=like.dtype, shape=like.shape)

    def _fused_call(self, inputs, training):
        fmt = {(4, True): "NCHW", (4, False): "NHWC", (5, True): "NCDHW",
               (5, False): "NDHWC"}[(inputs.shape.ndims, self.axis == [1])]
        gamma = self._param_or(self.gamma, 1.0, self.moving_mean)
        beta = self._param_or(self.beta, 0.0, self.moving_mean)
        outs = smart_cond(
            training,
            lambda: batch_norm_ops.fused_batch_norm(inputs, gamma, beta, epsilon=self.epsilon,
                                                    data_format=fmt),
            lambda: batch_norm_ops.fused_batch_norm(
                inputs, gamma, beta, self.moving_mean, self.moving_variance,
                epsilon=self.epsilon, is_training=False, data_format=fmt))
        return outs

    def call(self, inputs, training=False):
        known = constant_bool(training)
        if self.fused:
            output, mean, variance = self._fused_call(inputs, training)
            momentum = (smart_cond(training, lambda: constant_op.constant(self.momentum),
                                   lambda: constant_op.constant(1.0))
                        if known is None else self.momentum)
            if known is not False:
                self.add_update(self._assign_moving_average(self.moving_mean, mean, momentum))
                self.add_update(self._assign_moving_average(self.moving_variance, variance,
                                                            momentum))
            return output
        if known is False:
            mean, variance = self.moving_mean, self.moving_variance
        else:
            reduce = [i for i in range(inputs.shape.ndims) if i not in self.axis]
            batch_mean, batch_var = nn_impl.moments(inputs, reduce,
                                                    keep_dims=len(self.axis) > 1)
            mean = smart_cond(training, lambda: batch_mean,
                              lambda: convert_to_tensor(self.moving_mean))
            variance = smart_cond(training, lambda: batch_var,
                                  lambda: convert_to_tensor(self.moving_variance))
            for var, value in ((self.moving_mean, mean), (self.moving_variance, variance)):
                self.add_update(smart_cond(
                    training,
                    lambda var=var, value=value: self._assign_moving_average(
                        var, value, self.momentum),
                    lambda var=var: convert_to_tensor(var)))
        rank = inputs.shape.ndims
        # One feature axis that is not the last: parameters of shape [C] broadcast as
        # [1, C, 1, ...].
        bshape = [inputs.shape.as_list()[i] if i in self.axis else 1 for i in range(rank)]
        reshape = len(self.axis) == 1 and self.axis != [rank - 1]

        def cast(t):
            if t is None:
                return None
            t = math_ops.cast(t, inputs.dtype)
            return array_ops.reshape(t, bshape) if reshape else t

        outputs = nn_impl.batch_normalization(inputs, cast(mean), cast(variance),
                                              cast(self.beta), cast(self.gamma), self.epsilon)
        outputs.set_shape(inputs.shape)
        return outputs

    def compute_output_shape(self, input_shape):
        return tensor_shape.TensorShape(input_shape)


BatchNorm = BatchNormalization


def batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=1e-3, center=True,
                        scale=True, beta_initializer=init_ops.zeros_initializer(),
                        gamma_initializer=init_ops.ones_initializer(),
                        moving_mean_initializer=init_ops.zeros_initializer(),
                        moving_variance_initializer=init_ops.ones_initializer(),
                        beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                        gamma_constraint=None, training=False, trainable=True, name=None,
                        reuse=None, renorm=False, renorm_clipping=None, renorm_momentum=0.99,
                        fused=None, virtual_batch_size=None, adjustment=None):
    """The functional form of `BatchNormalization` (`tf.layers.batch_normalization`).
    Run the ops in `tf.GraphKeys.UPDATE_OPS` with the train op to update the moving
    statistics."""
    layer = BatchNormalization(
        axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
        beta_initializer=beta_initializer, gamma_initializer=gamma_initializer,
        moving_mean_initializer=moving_mean_initializer,
        moving_variance_initializer=moving_variance_initializer,
        beta_regularizer=beta_regularizer, gamma_regularizer=gamma_regularizer,
        beta_constraint=beta_constraint, gamma_constraint=gamma_constraint, renorm=renorm,
        renorm_clipping=renorm_clipping, renorm_momentum=renorm_momentum, fused=fused,
        trainable=trainable, virtual_batch_size=virtual_batch_size, adjustment=adjustment,
        name=name, _scope=name, _reuse=reuse)
    return layer.apply(inputs, training=training)
