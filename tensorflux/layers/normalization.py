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

Three options run unfused only (`fused=True` falls back quietly here, as in TF1's
tf.layers; Keras's class refuses it):
- `renorm` (Batch Renormalization, Ioffe 2017): while training the normalized batch is
  mapped through x * r + d, with r = std_B / renorm_stddev and d = (mean_B - renorm_mean)
  / renorm_stddev clipped by `renorm_clipping` and held constant for the gradient.
  renorm_mean and renorm_stddev (the latter at least sqrt(epsilon)) are moving averages
  with `renorm_momentum`, updated before the moving mean's update runs; the inference
  statistics keep a moving standard deviation, `moving_stddev` = average of
  sqrt(variance_B + epsilon), and set moving_variance = relu(moving_stddev^2 - epsilon).
- `virtual_batch_size` (ghost batch norm): the batch [N, ...] is viewed as [V, N / V,
  ...] and normalized over axis 0 and the non-feature axes, each of the N / V columns
  (rows i, i + N/V, ...) with its own statistics; the variables gain two leading axes of
  size 1 and the moving averages move toward the mean over the virtual batches.
- `adjustment(shape)` -> (scale, bias): while training, the normalized value is mapped
  through x * scale + bias before gamma and beta.
"""

from __future__ import annotations

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.layers.base import InputSpec, Layer, constant_bool, smart_cond
from tensorflux.nn import nn_impl
from tensorflux.ops import (
    array_ops,
    batch_norm_ops,
    constant_op,
    math_ops,
    nn_ops,
    reduction_ops,
    unary_ops,
)
from tensorflux.ops.joining_ops import concat
from tensorflux.variables import init_ops

__all__ = ["BatchNormalization", "BatchNorm", "batch_normalization"]

_CLIPPING_KEYS = ["rmax", "rmin", "dmax"]


def _compose(scale, offset, then_scale, then_offset):
    """The affine map x -> (x * scale + offset) * then_scale + then_offset as one
    (scale, offset) pair; None stands for 1 (a scale) or 0 (an offset)."""
    if then_scale is not None:
        scale = then_scale if scale is None else scale * then_scale
        offset = None if offset is None else offset * then_scale
    if then_offset is not None:
        offset = then_offset if offset is None else offset + then_offset
    return scale, offset


def _sqrt_of(initializer):
    """An initializer giving the square root of `initializer`'s values."""
    def init(shape, dtype=None, partition_info=None):
        return unary_ops.sqrt(initializer(shape, dtype=dtype, partition_info=partition_info))
    return init


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
      renorm: Batch Renormalization (three more variables: moving_stddev, renorm_mean,
        renorm_stddev).
      renorm_clipping: a dict with any of 'rmax', 'rmin', 'dmax' (floats or scalar
        tensors): r clipped to [rmin, rmax], d to [-dmax, dmax]; a missing key, no clip.
      renorm_momentum: the decay of renorm_mean and renorm_stddev.
      fused: True, False, or None (fused when the input allows it).
      virtual_batch_size: normalize virtual batches of this many examples (a divisor of
        the batch size).
      adjustment: a function of the input's dynamic shape returning (scale, bias)
        tensors that adjust the normalized value while training.
      trainable, name: as `Layer`.

    Raises:
      ValueError: unknown `renorm_clipping` keys; a virtual batch size that is not
        positive, or with axis 0 or an adjustment; a bad axis; `fused=True` where the
        fused op cannot be used.
    """

    # Keras's subclass refuses fused=True with renorm, virtual batches or an adjustment
    # (TF2's rule); tf.layers' falls back to the unfused computation (TF1's).
    _refuse_fused_options = False

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
        self.axis = list(axis) if isinstance(axis, (list, tuple)) else [axis]
        self.momentum, self.epsilon = momentum, epsilon
        self.center, self.scale = center, scale
        self.beta_initializer, self.gamma_initializer = beta_initializer, gamma_initializer
        self.moving_mean_initializer = moving_mean_initializer
        self.moving_variance_initializer = moving_variance_initializer
        self.beta_regularizer, self.gamma_regularizer = beta_regularizer, gamma_regularizer
        self.beta_constraint, self.gamma_constraint = beta_constraint, gamma_constraint
        self.renorm = bool(renorm)
        self.renorm_clipping = dict(renorm_clipping or {})
        if self.renorm and set(self.renorm_clipping) - set(_CLIPPING_KEYS):
            raise ValueError(f"Received invalid keys for `renorm_clipping` argument: "
                             f"{renorm_clipping}. Supported values: {_CLIPPING_KEYS}.")
        self.renorm_momentum = renorm_momentum
        self.virtual_batch_size = virtual_batch_size
        self.adjustment = adjustment
        if fused and self._refuse_fused_options:
            if self.renorm:
                raise ValueError("Passing both `fused=True` and `renorm=True` is not "
                                 "supported")
            for option, value in (("virtual_batch_size", virtual_batch_size),
                                  ("adjustment", adjustment)):
                if value is not None:
                    raise ValueError(f"Passing `fused=True` is not supported when "
                                     f"`{option}` is specified.")
        self.fused = fused
        self.gamma = self.beta = self.moving_mean = self.moving_variance = None
        self.moving_stddev = self.renorm_mean = self.renorm_stddev = None

    def _resolve(self, rank: int) -> None:
        axes = sorted(a + rank if a < 0 else a for a in self.axis)
        if any(a < 0 or a >= rank for a in axes) or len(set(axes)) != len(axes):
            raise ValueError(f"Invalid axis: {self.axis}")
        self.axis = axes
        if self.virtual_batch_size is not None:
            if self.virtual_batch_size <= 0:
                raise ValueError("`virtual_batch_size` must be a positive integer that "
                                 "divides the true batch size of the input tensor. "
                                 f"Received: virtual_batch_size={self.virtual_batch_size}")
            if 0 in axes:
                raise ValueError("When using `virtual_batch_size`, the batch dimension "
                                 "must be 0 and thus axis cannot include 0. Received "
                                 f"axis={axes}")
            if self.adjustment is not None:
                raise ValueError("When using `virtual_batch_size`, adjustment cannot be "
                                 "specified")
        if (self.renorm or self.virtual_batch_size is not None
                or self.adjustment is not None):
            self.fused = False
            return
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
        if len(sizes) == 1 and self.virtual_batch_size is None:
            shape = sizes
        else:
            shape = [d if i in self.axis else 1 for i, d in enumerate(dims)]
        if self.virtual_batch_size is not None:
            # The virtual batches' axis (1 in the [V, N / V, ...] view) comes in.
            shape.insert(1, 1)
            self.axis = [a + 1 for a in self.axis]
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
        if self.renorm:
            stddev_init = _sqrt_of(self.moving_variance_initializer)
            self.moving_stddev = self.add_weight("moving_stddev", shape, dtype, stddev_init,
                                                 trainable=False)
            self.renorm_mean = self.add_weight("renorm_mean", shape, dtype,
                                               self.moving_mean_initializer, trainable=False)
            self.renorm_stddev = self.add_weight("renorm_stddev", shape, dtype, stddev_init,
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
        if self.virtual_batch_size is None:
            return self._unfused_call(inputs, training, known)
        static_shape = inputs.shape
        rest = array_ops.shape(inputs)[1:]
        flat_shape = concat([constant_op.constant([-1]), rest], 0)
        batch = static_shape.as_list()[0]
        if batch is not None and batch % self.virtual_batch_size:
            raise ValueError(f"virtual_batch_size={self.virtual_batch_size} does not divide "
                             f"the batch size of the input (shape {static_shape})")
        virtual = array_ops.reshape(
            inputs, concat([constant_op.constant([self.virtual_batch_size, -1]), rest], 0))
        virtual.set_shape([self.virtual_batch_size,
                           None if batch is None else batch // self.virtual_batch_size]
                          + static_shape.as_list()[1:])
        outputs = array_ops.reshape(self._unfused_call(virtual, training, known), flat_shape)
        outputs.set_shape(static_shape)
        return outputs

    def _unfused_call(self, inputs, training, known):
        """tf.nn.batch_normalization with the batch's or the moving statistics, gamma and
        beta composed with the adjustment and renorm's (r, d) while training."""
        rank = inputs.shape.ndims
        reduce = [i for i in range(rank) if i not in self.axis]
        if self.virtual_batch_size is not None:
            del reduce[1]  # each virtual batch has its own statistics
        # One feature axis that is not the last: parameters of shape [C] broadcast as
        # [1, C, 1, ...].
        bshape = [inputs.shape.as_list()[i] if i in self.axis else 1 for i in range(rank)]

        def broadcast(t):
            if t is None or t.shape.ndims == rank or reduce == list(range(rank - 1)):
                return t
            return array_ops.reshape(t, bshape)

        scale, offset = broadcast(self.gamma), broadcast(self.beta)
        if known is False:
            mean, variance = self.moving_mean, self.moving_variance
        else:
            if self.adjustment is not None:
                adj_scale, adj_bias = self.adjustment(array_ops.shape(inputs))
                adj_scale = smart_cond(training, lambda: adj_scale,
                                       lambda: array_ops.ones_like(adj_scale))
                adj_bias = smart_cond(training, lambda: adj_bias,
                                      lambda: array_ops.zeros_like(adj_bias))
                scale, offset = _compose(adj_scale, adj_bias, scale, offset)
            stats_dtype = self.moving_mean.dtype.base_dtype
            batch_mean, batch_var = nn_impl.moments(
                math_ops.cast(inputs, stats_dtype), reduce,
                keep_dims=self.virtual_batch_size is not None or len(self.axis) > 1)
            mean = smart_cond(training, lambda: batch_mean,
                              lambda: convert_to_tensor(self.moving_mean))
            variance = smart_cond(training, lambda: batch_var,
                                  lambda: convert_to_tensor(self.moving_variance))
            new_mean, new_variance = mean, variance
            if self.virtual_batch_size is not None:
                # The moving averages move once per step, toward the virtual batches' mean
                # statistics (not once per virtual batch).
                new_mean = reduction_ops.reduce_mean(mean, axis=1, keepdims=True)
                new_variance = reduction_ops.reduce_mean(variance, axis=1, keepdims=True)
            if self.renorm:
                r, d, new_mean, new_variance = self._renorm_corrections(
                    new_mean, new_variance, training)
                r = broadcast(array_ops.stop_gradient(r, name="renorm_r"))
                d = broadcast(array_ops.stop_gradient(d, name="renorm_d"))
                scale, offset = _compose(r, d, scale, offset)
            self._add_moving_updates(new_mean, new_variance, training)

        def cast(t):
            return None if t is None else math_ops.cast(t, inputs.dtype)

        outputs = nn_impl.batch_normalization(inputs, cast(broadcast(mean)),
                                              cast(broadcast(variance)), cast(offset),
                                              cast(scale), self.epsilon)
        outputs.set_shape(inputs.shape)
        return outputs

    def _renorm_corrections(self, mean, variance, training):
        """Batch renormalization's (r, d) for the batch's `mean` and `variance` (r = 1,
        d = 0 when not training), and the two moments again, available once renorm_mean
        and renorm_stddev moved toward them (r and d read them before)."""
        dtype = self.renorm_stddev.dtype.base_dtype
        stddev = unary_ops.sqrt(variance + self.epsilon)
        floor = unary_ops.sqrt(constant_op.constant(self.epsilon, dtype))
        renorm_stddev = math_ops.maximum(self.renorm_stddev, floor)
        r = stddev / renorm_stddev
        d = (mean - self.renorm_mean) / renorm_stddev
        with graph_lib.control_dependencies([r, d]):
            mean, stddev = array_ops.identity(mean), array_ops.identity(stddev)
        rmin, rmax, dmax = (self.renorm_clipping.get(k) for k in ("rmin", "rmax", "dmax"))
        if rmin is not None:
            r = math_ops.maximum(r, rmin)
        if rmax is not None:
            r = math_ops.minimum(r, rmax)
        if dmax is not None:
            d = math_ops.minimum(math_ops.maximum(d, -dmax), dmax)
        r = smart_cond(training, lambda: r, lambda: array_ops.ones_like(r))
        d = smart_cond(training, lambda: d, lambda: array_ops.zeros_like(d))
        updates = []
        for var, value in ((self.renorm_mean, mean), (self.renorm_stddev, stddev)):
            value = array_ops.identity(value)
            updates.append(smart_cond(
                training,
                lambda var=var, value=value: self._assign_moving_average(
                    var, value, self.renorm_momentum),
                lambda var=var: array_ops.identity(var)))
        with graph_lib.control_dependencies(updates):
            return r, d, array_ops.identity(mean), array_ops.identity(variance)

    def _add_moving_updates(self, mean, variance, training) -> None:
        """The update ops of moving_mean and moving_variance (through moving_stddev under
        renorm), identities of the variables when `training` is false."""
        def variance_update():
            if not self.renorm:
                return self._assign_moving_average(self.moving_variance, variance,
                                                   self.momentum)
            stddev = self._assign_moving_average(
                self.moving_stddev, unary_ops.sqrt(variance + self.epsilon), self.momentum)
            value = nn_ops.relu(stddev * stddev - self.epsilon)  # rounding can go below 0
            with graph_lib.name_scope(None, "AssignNewValue") as scope:
                return self.moving_variance.assign(value, name=scope)

        self.add_update(smart_cond(
            training,
            lambda: self._assign_moving_average(self.moving_mean, mean, self.momentum),
            lambda: convert_to_tensor(self.moving_mean)))
        self.add_update(smart_cond(training, variance_update,
                                   lambda: convert_to_tensor(self.moving_variance)))

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
