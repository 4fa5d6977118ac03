"""`tf.contrib.layers`' layer functions and `arg_scope` (also `tf.contrib.framework` and
`tf.contrib.slim`): fully_connected, conv2d, conv2d_transpose, max_pool2d, avg_pool2d,
dropout, batch_norm, layer_norm, one_hot_encoding, embed_sequence, repeat and stack.

Each makes its variables with TF1 contrib's names in a variable scope of the layer's
default name (`fully_connected/weights`, `fully_connected/biases`, `Conv/weights`,
`BatchNorm/beta`, `BatchNorm/moving_mean`, ...), as model variables (the GLOBAL_VARIABLES
and MODEL_VARIABLES collections; moving statistics also in MOVING_AVERAGE_VARIABLES), so
TF1 contrib checkpoints restore. `arg_scope([f, g], key=value)` sets defaults for the
functions decorated with `add_arg_scope` (all of these) within its block.
"""

from __future__ import annotations

import contextlib
import functools
import threading

from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor

_ARG_SCOPE = threading.local()


def _stack() -> list[dict]:
    if not hasattr(_ARG_SCOPE, "stack"):
        _ARG_SCOPE.stack = [{}]
    return _ARG_SCOPE.stack


def _key(fn) -> tuple:
    fn = getattr(fn, "_arg_scope_target", fn)
    return (fn.__module__, fn.__name__)


def add_arg_scope(fn):
    """`fn` taking the defaults an enclosing `arg_scope` gives it (explicit arguments
    win)."""
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        defaults = _stack()[-1].get(_key(fn), {})
        return fn(*args, **{**defaults, **kwargs})
    wrapped._arg_scope_target = fn
    return wrapped


def has_arg_scope(fn) -> bool:
    return hasattr(fn, "_arg_scope_target")


@contextlib.contextmanager
def arg_scope(list_ops_or_scope, **kwargs):
    """Within the block, the functions in `list_ops_or_scope` take `kwargs` as defaults
    (inner scopes add to outer ones); a dict (a scope yielded before) restores that scope.

    Raises:
      ValueError: a function not decorated with add_arg_scope.
    """
    if isinstance(list_ops_or_scope, dict):
        if kwargs:
            raise ValueError("When attempting to re-use a scope by supplying a dictionary, "
                             "kwargs must be empty.")
        _stack().append(list_ops_or_scope)
    else:
        current = dict(_stack()[-1])
        for op in list_ops_or_scope:
            if not has_arg_scope(op):
                raise ValueError(f"{getattr(op, '__name__', op)} is not decorated with "
                                 "@add_arg_scope")
            key = _key(op)
            current[key] = {**current.get(key, {}), **kwargs}
        _stack().append(current)
    try:
        yield _stack()[-1]
    finally:
        _stack().pop()


def current_arg_scope() -> dict:
    return _stack()[-1]


def arg_scope_func_key(op):
    """The key of `op`'s defaults in an arg_scope dict (`tf.contrib.framework`'s
    `arg_scope_func_key`): `current_arg_scope()[arg_scope_func_key(slim.conv2d)]`."""
    return _key(op)


# ---- variables ----------------------------------------------------------------------------

def _collections(collections, *defaults) -> list:
    out = list(defaults)
    if collections:
        out += [c for c in (collections if isinstance(collections, (list, tuple))
                            else [collections]) if c not in out]
    return out


@add_arg_scope
def variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
             trainable=True, collections=None, caching_device=None, device=None,
             partitioner=None, custom_getter=None, use_resource=None):
    """A variable in GLOBAL_VARIABLES (and `collections`), through get_variable."""
    from tensorflux.variables import variable_scope

    cols = _collections(collections, graph_lib.GraphKeys.GLOBAL_VARIABLES)
    with graph_lib.get_default_graph().device(device or ""):
        return variable_scope.get_variable(
            name, shape=shape, dtype=dtype or dtypes.float32, initializer=initializer,
            regularizer=regularizer, trainable=trainable, collections=cols)


@add_arg_scope
def model_variable(name, shape=None, dtype=dtypes.float32, initializer=None,
                   regularizer=None, trainable=True, collections=None, caching_device=None,
                   device=None, partitioner=None, custom_getter=None, use_resource=None):
    """A variable also in MODEL_VARIABLES."""
    return variable(name, shape=shape, dtype=dtype, initializer=initializer,
                    regularizer=regularizer, trainable=trainable,
                    collections=_collections(collections, graph_lib.GraphKeys.MODEL_VARIABLES),
                    device=device)


def local_variable(initial_value, validate_shape=True, name=None, use_resource=None):
    """A non-trainable variable of `initial_value` in LOCAL_VARIABLES only."""
    from tensorflux.variables import variables

    return variables.Variable(initial_value, trainable=False,
                              collections=[graph_lib.GraphKeys.LOCAL_VARIABLES],
                              validate_shape=validate_shape, name=name,
                              use_resource=use_resource)


def get_variables(scope=None, suffix=None, collection=graph_lib.GraphKeys.GLOBAL_VARIABLES):
    scope = getattr(scope, "name", scope)
    found = graph_lib.get_collection(collection, scope)
    return [v for v in found if suffix is None or v.op.name.endswith(suffix)]


def get_model_variables(scope=None, suffix=None):
    return get_variables(scope, suffix, graph_lib.GraphKeys.MODEL_VARIABLES)


def get_trainable_variables(scope=None, suffix=None):
    return get_variables(scope, suffix, graph_lib.GraphKeys.TRAINABLE_VARIABLES)


def get_variables_to_restore(include=None, exclude=None):
    """The global variables under the `include` scopes (default all) and not under
    `exclude`."""
    chosen = get_variables() if include is None else \
        [v for s in include for v in get_variables(s)]
    excluded = {v for s in (exclude or []) for v in get_variables(s)}
    return [v for v in chosen if v not in excluded]


def get_variables_by_name(given_name, scope=None):
    return [v for v in get_variables(scope) if v.op.name.split("/")[-1] == given_name]


def _collect(collections, alias, outputs):
    """Adds a layer's `outputs` to `collections` (contrib's outputs_collections) under
    `alias`, the layer's scope name (layers_utils.collect_named_outputs)."""
    from tensorflux.contrib.layers_utils import collect_named_outputs

    return collect_named_outputs(collections, alias, outputs)


def _pair(v, what: str) -> list[int]:
    if isinstance(v, int):
        return [v, v]
    v = list(v)
    if len(v) != 2:
        raise ValueError(f"{what} must be an int or a pair of ints, got {v}")
    return [int(v[0]), int(v[1])]


def _xavier():
    from tensorflux.contrib.layers_extra import xavier_initializer

    return xavier_initializer()


def _zeros():
    from tensorflux.variables import init_ops

    return init_ops.zeros_initializer()


def _relu(x):
    from tensorflux.ops import nn_ops

    return nn_ops.relu(x)


def _finish(outputs, normalizer_fn, normalizer_params, biases_initializer,
            biases_regularizer, num_outputs, variables_collections, trainable, activation_fn,
            outputs_collections, data_format="NHWC", alias=None):
    """The normalizer or the biases, then the activation; the output collected."""
    from tensorflux.ops import nn_ops

    if normalizer_fn is not None:
        outputs = normalizer_fn(outputs, **(normalizer_params or {}))
    elif biases_initializer is not None:
        biases = model_variable("biases", [num_outputs], initializer=biases_initializer,
                                regularizer=biases_regularizer, trainable=trainable,
                                collections=_var_collections(variables_collections,
                                                             "biases"))
        outputs = nn_ops.bias_add(outputs, biases, data_format=data_format)
    if activation_fn is not None:
        outputs = activation_fn(outputs)
    return _collect(outputs_collections, alias, outputs)


def _var_collections(variables_collections, name):
    if isinstance(variables_collections, dict):
        return variables_collections.get(name)
    return variables_collections


# ---- layers -------------------------------------------------------------------------------

@add_arg_scope
def fully_connected(inputs, num_outputs, activation_fn=_relu, normalizer_fn=None,
                    normalizer_params=None, weights_initializer=None,
                    weights_regularizer=None, biases_initializer=_zeros(),
                    biases_regularizer=None, reuse=None, variables_collections=None,
                    outputs_collections=None, trainable=True, scope=None):
    """outputs = activation(inputs @ weights + biases) over the last dimension."""
    from tensorflux.ops import math_ext_ops, matrix_ops
    from tensorflux.variables import variable_scope

    if not isinstance(num_outputs, int):
        raise ValueError(f"num_outputs type should be one of (int, long), got "
                         f"{type(num_outputs)}.")
    with variable_scope.variable_scope(scope, "fully_connected", [inputs],
                                       reuse=reuse) as sc:
        inputs = convert_to_tensor(inputs)
        n_in = inputs.shape.as_list()[-1]
        if n_in is None:
            raise ValueError("The last dimension of the inputs to `fully_connected` should "
                             "be defined.")
        weights = model_variable("weights", [n_in, num_outputs],
                                 dtype=inputs.dtype.base_dtype,
                                 initializer=weights_initializer or _xavier(),
                                 regularizer=weights_regularizer, trainable=trainable,
                                 collections=_var_collections(variables_collections,
                                                              "weights"))
        if inputs.shape.ndims == 2:
            outputs = matrix_ops.matmul(inputs, weights)
        else:
            outputs = math_ext_ops.tensordot(inputs, weights, [[inputs.shape.ndims - 1],
                                                               [0]])
        return _finish(outputs, normalizer_fn, normalizer_params,
                       biases_initializer, biases_regularizer, num_outputs,
                       variables_collections, trainable, activation_fn, outputs_collections,
                       alias=sc.name)


@add_arg_scope
def conv2d(inputs, num_outputs, kernel_size, stride=1, padding="SAME", data_format=None,
           rate=1, activation_fn=_relu, normalizer_fn=None, normalizer_params=None,
           weights_initializer=None, weights_regularizer=None, biases_initializer=_zeros(),
           biases_regularizer=None, reuse=None, variables_collections=None,
           outputs_collections=None, trainable=True, scope=None):
    """A 2-D convolution (dilated by `rate`) with biases or a normalizer, then the
    activation."""
    from tensorflux.ops import conv_ops
    from tensorflux.variables import variable_scope

    data_format = data_format or "NHWC"
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"data_format has to be either NCHW or NHWC, got {data_format}")
    kh, kw = _pair(kernel_size, "kernel_size")
    sh, sw = _pair(stride, "stride")
    rh, rw = _pair(rate, "rate")
    from tensorflux.contrib.layers_utils import check_stride_and_rate

    check_stride_and_rate([sh, sw], [rh, rw])
    with variable_scope.variable_scope(scope, "Conv", [inputs], reuse=reuse) as sc:
        inputs = convert_to_tensor(inputs)
        if inputs.shape.ndims != 4:
            raise ValueError(f"Convolution expects input with rank 4, got "
                             f"{inputs.shape.ndims}")
        channels = inputs.shape.as_list()[-1 if data_format == "NHWC" else 1]
        weights = model_variable("weights", [kh, kw, channels, num_outputs],
                                 dtype=inputs.dtype.base_dtype,
                                 initializer=weights_initializer or _xavier(),
                                 regularizer=weights_regularizer, trainable=trainable,
                                 collections=_var_collections(variables_collections,
                                                              "weights"))
        strides = [1, sh, sw, 1] if data_format == "NHWC" else [1, 1, sh, sw]
        dilations = [1, rh, rw, 1] if data_format == "NHWC" else [1, 1, rh, rw]
        outputs = conv_ops.conv2d(inputs, weights, strides, padding.upper(),
                                  data_format=data_format, dilations=dilations)
        return _finish(outputs, normalizer_fn, normalizer_params,
                       biases_initializer, biases_regularizer, num_outputs,
                       variables_collections, trainable, activation_fn, outputs_collections,
                       data_format, alias=sc.name)


convolution2d = conv2d


@add_arg_scope
def conv2d_transpose(inputs, num_outputs, kernel_size, stride=1, padding="SAME",
                     data_format="NHWC", activation_fn=_relu, normalizer_fn=None,
                     normalizer_params=None, weights_initializer=None,
                     weights_regularizer=None, biases_initializer=_zeros(),
                     biases_regularizer=None, reuse=None, variables_collections=None,
                     outputs_collections=None, trainable=True, scope=None):
    """A transposed 2-D convolution (weights [kh, kw, num_outputs, in]) with biases or a
    normalizer. Each output spatial size is `size * stride` (SAME) or
    `size * stride + max(k - stride, 0)` (VALID), from the input's dynamic shape where the
    static one is unknown.

    Raises:
      ValueError: data_format is not NHWC or NCHW.
    """
    from tensorflux.ops import array_ops, conv_ops, joining_ops
    from tensorflux.variables import variable_scope

    if data_format not in ("NHWC", "NCHW"):
        raise ValueError("data_format has to be either NCHW or NHWC.")
    kh, kw = _pair(kernel_size, "kernel_size")
    sh, sw = _pair(stride, "stride")
    first = data_format == "NCHW"
    with variable_scope.variable_scope(scope, "Conv2d_transpose", [inputs],
                                       reuse=reuse) as sc:
        inputs = convert_to_tensor(inputs)
        static = inputs.shape.as_list()
        h_axis, w_axis, c_axis = (2, 3, 1) if first else (1, 2, 3)
        weights = model_variable("weights", [kh, kw, num_outputs, static[c_axis]],
                                 dtype=inputs.dtype.base_dtype,
                                 initializer=weights_initializer or _xavier(),
                                 regularizer=weights_regularizer, trainable=trainable,
                                 collections=_var_collections(variables_collections,
                                                              "weights"))

        def out_dim(size, k, s):
            if size is None:
                return None
            return size * s if padding.upper() == "SAME" else size * s + max(k - s, 0)
        dynamic = array_ops.shape(inputs)
        out_h = out_dim(dynamic[h_axis], kh, sh)
        out_w = out_dim(dynamic[w_axis], kw, sw)
        dims = [dynamic[0], num_outputs, out_h, out_w] if first else \
            [dynamic[0], out_h, out_w, num_outputs]
        strides = [1, 1, sh, sw] if first else [1, sh, sw, 1]
        outputs = conv_ops.conv2d_transpose(inputs, weights, joining_ops.stack(dims),
                                            strides, padding=padding.upper(),
                                            data_format=data_format)
        static_out = [static[0], None, None, None]
        static_out[c_axis] = num_outputs
        static_out[h_axis] = out_dim(static[h_axis], kh, sh)
        static_out[w_axis] = out_dim(static[w_axis], kw, sw)
        outputs.set_shape(static_out)
        return _finish(outputs, normalizer_fn, normalizer_params,
                       biases_initializer, biases_regularizer, num_outputs,
                       variables_collections, trainable, activation_fn, outputs_collections,
                       data_format, alias=sc.name)


convolution2d_transpose = conv2d_transpose


def _pool(kind, inputs, kernel_size, stride, padding, data_format, outputs_collections,
          scope):
    from tensorflux.ops import pooling_ops

    kh, kw = _pair(kernel_size, "kernel_size")
    sh, sw = _pair(stride, "stride")
    name = "MaxPool2D" if kind == "max" else "AvgPool2D"
    with graph_lib.name_scope(scope, name, [inputs]) as sc:
        fn = pooling_ops.max_pool if kind == "max" else pooling_ops.avg_pool
        ksize = [1, kh, kw, 1] if data_format == "NHWC" else [1, 1, kh, kw]
        strides = [1, sh, sw, 1] if data_format == "NHWC" else [1, 1, sh, sw]
        outputs = fn(inputs, ksize, strides, padding.upper(), data_format=data_format)
        return _collect(outputs_collections, sc, outputs)


@add_arg_scope
def max_pool2d(inputs, kernel_size, stride=2, padding="VALID", data_format="NHWC",
               outputs_collections=None, scope=None):
    return _pool("max", inputs, kernel_size, stride, padding, data_format,
                 outputs_collections, scope)


@add_arg_scope
def avg_pool2d(inputs, kernel_size, stride=2, padding="VALID", data_format="NHWC",
               outputs_collections=None, scope=None):
    return _pool("avg", inputs, kernel_size, stride, padding, data_format,
                 outputs_collections, scope)


@add_arg_scope
def dropout(inputs, keep_prob=0.5, noise_shape=None, is_training=True,
            outputs_collections=None, scope=None, seed=None):
    """Dropout with `keep_prob` while training (a bool or a bool tensor)."""
    from tensorflux.control_flow import builders
    from tensorflux.nn import nn_impl
    from tensorflux.ops import array_ops
    from tensorflux.variables import variable_scope

    with variable_scope.variable_scope(scope, "Dropout", [inputs]) as sc:
        inputs = convert_to_tensor(inputs)
        if isinstance(is_training, bool):
            outputs = nn_impl.dropout(inputs, keep_prob=keep_prob, noise_shape=noise_shape,
                                      seed=seed) if is_training else \
                array_ops.identity(inputs)
        else:
            outputs = builders.cond(
                is_training, lambda: nn_impl.dropout(inputs, keep_prob=keep_prob,
                                                     noise_shape=noise_shape, seed=seed),
                lambda: array_ops.identity(inputs))
        return _collect(outputs_collections, sc.name, outputs)


def _gamma_first(updates_collections, zero_debias_moving_mean, fused, rank) -> bool:
    """Whether TF1's batch_norm makes gamma before beta: where it builds the core
    BatchNormalization layer (updates through UPDATE_OPS, no zero-debiasing, not a fused
    rank-2 input); beta comes first on its fused and legacy paths. The order of the
    variables' lists and of checkpoints' indexes."""
    return (updates_collections == graph_lib.GraphKeys.UPDATE_OPS
            and not zero_debias_moving_mean and not (fused is not False and rank == 2))


@add_arg_scope
def batch_norm(inputs, decay=0.999, center=True, scale=False, epsilon=0.001,
               activation_fn=None, param_initializers=None, param_regularizers=None,
               updates_collections=graph_lib.GraphKeys.UPDATE_OPS, is_training=True,
               reuse=None, variables_collections=None, outputs_collections=None,
               trainable=True, batch_weights=None, fused=None, data_format="NHWC",
               zero_debias_moving_mean=False, scope=None, renorm=False,
               renorm_clipping=None, renorm_decay=0.99, adjustment=None):
    """Batch normalization over every axis but the channels': the batch's statistics
    while training (the moving averages updated through `updates_collections`, or at
    once when it is None), the moving averages otherwise.

    As TF1's: `renorm` (with `renorm_clipping`, `renorm_decay`) and `adjustment` run
    `tf.layers.BatchNormalization` in this scope (see `_core_layer_batch_norm`), which
    needs the UPDATE_OPS collection, no zero-debiasing and no `batch_weights` (else renorm
    raises and an adjustment is ignored). `batch_weights` ([batch] per-example weights):
    the batch's statistics are `tf.nn.weighted_moments`' and the moving averages move
    toward them.

    Raises:
      ValueError: renorm with `batch_weights`, other `updates_collections` or
        `zero_debias_moving_mean`; an input of unknown rank or channels; `batch_weights`
        whose length is not the batch's.
    """
    from tensorflux.ops import array_ops
    from tensorflux.variables import init_ops, variable_scope

    core_layer = (batch_weights is None and not zero_debias_moving_mean
                  and updates_collections is graph_lib.GraphKeys.UPDATE_OPS)
    if core_layer and (renorm or adjustment is not None):
        return _core_layer_batch_norm(
            inputs, decay=decay, center=center, scale=scale, epsilon=epsilon,
            activation_fn=activation_fn, param_initializers=param_initializers,
            param_regularizers=param_regularizers, is_training=is_training, reuse=reuse,
            variables_collections=variables_collections,
            outputs_collections=outputs_collections, trainable=trainable, fused=fused,
            data_format=data_format, scope=scope, renorm=renorm,
            renorm_clipping=renorm_clipping, renorm_decay=renorm_decay,
            adjustment=adjustment)
    if renorm:
        raise ValueError("renorm is not supported with batch_weights, updates_collections "
                         "or zero_debias_moving_mean")
    inits = dict(param_initializers or {})
    regs = dict(param_regularizers or {})
    with variable_scope.variable_scope(scope, "BatchNorm", [inputs], reuse=reuse) as sc:
        inputs = convert_to_tensor(inputs)
        rank = inputs.shape.ndims
        if rank is None:
            raise ValueError(f"Inputs {inputs.name} has undefined rank.")
        channel_axis = 1 if data_format == "NCHW" and rank > 2 else rank - 1
        n = inputs.shape.as_list()[channel_axis]
        if n is None:
            raise ValueError(f"Inputs {inputs.name} has undefined channels dimension.")
        dtype = inputs.dtype.base_dtype
        axes = [a for a in range(rank) if a != channel_axis]

        def param(name, default, trainable_):
            return model_variable(name, [n], dtype=dtype,
                                  initializer=inits.get(name, default),
                                  regularizer=regs.get(name), trainable=trainable_,
                                  collections=_var_collections(variables_collections, name))
        wanted = [("gamma", scale, init_ops.ones_initializer()),
                  ("beta", center, init_ops.zeros_initializer())]
        if batch_weights is not None:
            batch_weights = convert_to_tensor(batch_weights)
            inputs.shape[0:1].assert_is_compatible_with(batch_weights.shape)
            # One weight per example, broadcast over the other axes.
            batch_weights = array_ops.reshape(batch_weights, [-1] + [1] * (rank - 1))
        if batch_weights is not None or not _gamma_first(
                updates_collections, zero_debias_moving_mean, fused, rank):
            wanted.reverse()
        made = {name: param(name, init, trainable) for name, on, init in wanted if on}
        beta, gamma = made.get("beta"), made.get("gamma")
        moving_collections = _collections(
            _var_collections(variables_collections, "moving_mean"),
            graph_lib.GraphKeys.MOVING_AVERAGE_VARIABLES)
        moving_mean = model_variable("moving_mean", [n], dtype=dtype,
                                     initializer=inits.get("moving_mean",
                                                           init_ops.zeros_initializer()),
                                     trainable=False, collections=moving_collections)
        moving_variance = model_variable(
            "moving_variance", [n], dtype=dtype,
            initializer=inits.get("moving_variance", init_ops.ones_initializer()),
            trainable=False, collections=moving_collections)
        norm = _BatchNormGraph(inputs, axes, channel_axis, n, epsilon, decay, fused,
                               batch_weights, zero_debias_moving_mean, updates_collections,
                               (beta, gamma, moving_mean, moving_variance))
        outputs = norm.outputs(is_training)
        outputs.set_shape(inputs.shape)
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return _collect(outputs_collections, sc.name, outputs)


class _BatchNormGraph:
    """The ops of contrib's batch_norm once its variables exist (`params`: beta, gamma,
    moving_mean, moving_variance; beta/gamma None when off)."""

    def __init__(self, inputs, axes, channel_axis, n, epsilon, decay, fused, batch_weights,
                 zero_debias, updates_collections, params):
        self.inputs, self.axes, self.n, self.epsilon, self.decay = inputs, axes, n, epsilon, \
            decay
        self.fused, self.batch_weights, self.zero_debias = fused, batch_weights, zero_debias
        self.updates_collections = updates_collections
        self.beta, self.gamma, self.moving_mean, self.moving_variance = params
        self.shape = [1] * inputs.shape.ndims
        self.shape[channel_axis] = n

    def _bcast(self, v):
        from tensorflux.ops import array_ops

        return None if v is None else array_ops.reshape(v, self.shape)

    def normalize(self, mean, variance):
        from tensorflux.nn import nn_impl

        return nn_impl.batch_normalization(self.inputs, self._bcast(mean),
                                           self._bcast(variance), self._bcast(self.beta),
                                           self._bcast(self.gamma), self.epsilon)

    def statistics(self):
        """The batch's mean and variance, and the variance the moving one moves to."""
        from tensorflux.nn import nn_extra, nn_impl
        from tensorflux.ops import array_ops, math_ops

        if self.batch_weights is None:
            mean, variance = nn_impl.moments(self.inputs, self.axes)
        else:
            mean, variance = nn_extra.weighted_moments(self.inputs, self.axes,
                                                       self.batch_weights)
        moving = variance
        if self.inputs.shape.ndims in (2, 4) and self.fused is not False and \
                self.batch_weights is None:  # the fused kernel's unbiased variance
            count = math_ops.cast(array_ops.size(self.inputs) // self.n,
                                  self.inputs.dtype.base_dtype)
            moving = variance * count / math_ops.maximum(count - 1.0, 1.0)
        return mean, variance, moving

    def updates(self, mean, moving):
        from tensorflux.train import moving_averages

        return (moving_averages.assign_moving_average(
                    self.moving_mean, mean, self.decay, zero_debias=self.zero_debias),
                moving_averages.assign_moving_average(
                    self.moving_variance, moving, self.decay, zero_debias=False))

    def publish(self, update_mean, update_variance):
        collections = self.updates_collections
        for c in (collections if isinstance(collections, (list, tuple)) else [collections]):
            graph_lib.add_to_collection(c, update_mean)
            graph_lib.add_to_collection(c, update_variance)

    def training_branch(self):
        from tensorflux.ops import array_ops

        mean, variance, moving = self.statistics()
        update_mean, update_variance = self.updates(mean, moving)
        if self.updates_collections is None:
            with graph_lib.get_default_graph().control_dependencies(
                    [update_mean, update_variance]):
                return array_ops.identity(self.normalize(mean, variance))
        self.publish(update_mean, update_variance)
        return self.normalize(mean, variance)

    def moving_statistics(self):
        from tensorflux.ops import array_ops

        return array_ops.identity(self.moving_mean), array_ops.identity(self.moving_variance)

    def outputs(self, is_training):
        from tensorflux.control_flow import builders

        if isinstance(is_training, bool):
            return self.training_branch() if is_training else \
                self.normalize(self.moving_mean, self.moving_variance)
        if self.updates_collections is None:
            return builders.cond(is_training, self.training_branch,
                                 lambda: self.normalize(self.moving_mean,
                                                        self.moving_variance))
        # Collected update ops must be fetchable, so outside any cond's branch: the
        # moments unconditionally, the updates and the statistics each under a cond.
        mean, variance, moving = self.statistics()
        self.publish(*builders.cond(is_training, lambda: self.updates(mean, moving),
                                    self.moving_statistics))
        return self.normalize(*builders.cond(is_training, lambda: (mean, variance),
                                             self.moving_statistics))


def _core_layer_batch_norm(inputs, decay, center, scale, epsilon, activation_fn,
                           param_initializers, param_regularizers, is_training, reuse,
                           variables_collections, outputs_collections, trainable, fused,
                           data_format, scope, renorm, renorm_clipping, renorm_decay,
                           adjustment):
    """`batch_norm` through `tf.layers.BatchNormalization` opened in the `BatchNorm`
    variable scope (gamma, beta, moving_mean, moving_variance, then renorm's
    moving_stddev, renorm_mean, renorm_stddev), its variables made model variables (the
    moving mean and variance also moving-average variables) and added to
    `variables_collections`; its update ops go to UPDATE_OPS."""
    from tensorflux.layers import normalization
    from tensorflux.variables import init_ops, variable_scope

    def model_getter(getter, name, *args, collections=None, **kwargs):
        short = name.rsplit("/", 1)[-1]
        defaults = [graph_lib.GraphKeys.GLOBAL_VARIABLES, graph_lib.GraphKeys.MODEL_VARIABLES]
        if short in ("moving_mean", "moving_variance"):
            defaults.append(graph_lib.GraphKeys.MOVING_AVERAGE_VARIABLES)
        cols = _collections(_var_collections(variables_collections, short), *defaults)
        return getter(name, *args, collections=cols, **kwargs)

    inits = dict(param_initializers or {})
    regs = dict(param_regularizers or {})
    with variable_scope.variable_scope(scope, "BatchNorm", [inputs], reuse=reuse,
                                       custom_getter=model_getter) as sc:
        layer = normalization.BatchNormalization(
            axis=1 if data_format == "NCHW" else -1, momentum=decay, epsilon=epsilon,
            center=center, scale=scale,
            beta_initializer=inits.get("beta", init_ops.zeros_initializer()),
            gamma_initializer=inits.get("gamma", init_ops.ones_initializer()),
            moving_mean_initializer=inits.get("moving_mean", init_ops.zeros_initializer()),
            moving_variance_initializer=inits.get("moving_variance",
                                                  init_ops.ones_initializer()),
            beta_regularizer=regs.get("beta"), gamma_regularizer=regs.get("gamma"),
            trainable=trainable, renorm=renorm, renorm_clipping=renorm_clipping,
            renorm_momentum=renorm_decay, adjustment=adjustment, fused=fused,
            name=sc.name, _scope=sc, _reuse=reuse)
        outputs = layer.apply(convert_to_tensor(inputs), training=is_training)
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return _collect(outputs_collections, sc.name, outputs)


@add_arg_scope
def layer_norm(inputs, center=True, scale=True, activation_fn=None, reuse=None,
               variables_collections=None, outputs_collections=None, trainable=True,
               begin_norm_axis=1, begin_params_axis=-1, scope=None):
    """Normalization over the axes from `begin_norm_axis` on, with beta/gamma over those
    from `begin_params_axis` on."""
    from tensorflux.nn import nn_impl
    from tensorflux.variables import init_ops, variable_scope

    with variable_scope.variable_scope(scope, "LayerNorm", [inputs], reuse=reuse) as sc:
        inputs = convert_to_tensor(inputs)
        rank = inputs.shape.ndims
        if rank is None:
            raise ValueError(f"Inputs {inputs.name} has undefined rank.")
        begin_norm_axis %= rank
        begin_params_axis %= rank
        params_shape = inputs.shape.as_list()[begin_params_axis:]
        if any(d is None for d in params_shape):
            raise ValueError(f"Inputs {inputs.name}: shape[{begin_params_axis}:] is not "
                             "fully defined")
        dtype = inputs.dtype.base_dtype
        beta = model_variable("beta", params_shape, dtype=dtype,
                              initializer=init_ops.zeros_initializer(),
                              trainable=trainable,
                              collections=_var_collections(variables_collections, "beta")) \
            if center else None
        gamma = model_variable("gamma", params_shape, dtype=dtype,
                               initializer=init_ops.ones_initializer(), trainable=trainable,
                               collections=_var_collections(variables_collections, "gamma")) \
            if scale else None
        mean, variance = nn_impl.moments(inputs, list(range(begin_norm_axis, rank)),
                                         keep_dims=True)
        outputs = nn_impl.batch_normalization(inputs, mean, variance, beta, gamma, 1e-12)
        outputs.set_shape(inputs.shape)
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return _collect(outputs_collections, sc.name, outputs)


@add_arg_scope
def one_hot_encoding(labels, num_classes, on_value=1.0, off_value=0.0,
                     outputs_collections=None, scope=None):
    from tensorflux.ops import gather_ops, math_ops

    with graph_lib.name_scope(scope, "OneHotEncoding", [labels]) as sc:
        labels = convert_to_tensor(labels)
        if labels.dtype == dtypes.int32:
            labels = math_ops.cast(labels, dtypes.int64)
        outputs = gather_ops.one_hot(labels, num_classes, on_value=on_value,
                                     off_value=off_value)
        return _collect(outputs_collections, sc, outputs)


@add_arg_scope
def embed_sequence(ids, vocab_size=None, embed_dim=None, unique=False, initializer=None,
                   regularizer=None, trainable=True, scope=None, reuse=None):
    """Embeddings [batch, time, embed_dim] of ids [batch, time]."""
    from tensorflux.nn import embedding_ops
    from tensorflux.variables import variable_scope

    if vocab_size is None or embed_dim is None:
        raise ValueError(f"Must specify vocab size and embedding dimension when not "
                         f"reusing. Got vocab_size={vocab_size} and embed_dim={embed_dim}")
    with variable_scope.variable_scope(scope, "EmbedSequence", [ids], reuse=reuse):
        embeddings = variable_scope.get_variable(
            "embeddings", [vocab_size, embed_dim], initializer=initializer,
            regularizer=regularizer, trainable=trainable)
        return embedding_ops.embedding_lookup(embeddings, ids)


def repeat(inputs, repetitions, layer, *args, **kwargs):
    """`layer` applied `repetitions` times, scopes `<scope>/<scope>_<i>`."""
    from tensorflux.variables import variable_scope

    scope = kwargs.pop("scope", None)
    with variable_scope.variable_scope(scope, "Repeat", [inputs]):
        outputs = inputs
        for i in range(repetitions):
            kwargs["scope"] = f"{getattr(layer, '__name__', 'layer')}_{i + 1}" \
                if scope is None else f"{scope}_{i + 1}"
            outputs = layer(outputs, *args, **kwargs)
        return outputs


def stack(inputs, layer, stack_args, **kwargs):
    """`layer` applied once per entry of `stack_args` (a value or a tuple of arguments),
    scopes `<scope>/<scope>_<i>`."""
    from tensorflux.variables import variable_scope

    if not isinstance(stack_args, (list, tuple)):
        raise ValueError("stack_args need to be a list or tuple")
    scope = kwargs.pop("scope", None)
    with variable_scope.variable_scope(scope, "Stack", [inputs]):
        outputs = inputs
        for i, args in enumerate(stack_args):
            args = args if isinstance(args, (list, tuple)) else [args]
            kwargs["scope"] = f"{scope or getattr(layer, '__name__', 'layer')}_{i + 1}"
            outputs = layer(outputs, *args, **kwargs)
        return outputs
