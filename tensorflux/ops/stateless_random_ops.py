"""Stateless random ops: the same seed gives the same values, in every run and every
Session, equal bit for bit to TensorFlow's (Philox4x32-10, tensorflux/lib/philox.py).

Two generations of ops, both TensorFlow's:
- seed ops (StatelessRandomUniform, ..., StatelessMultinomial): a seed tensor of shape [2];
- key/counter ops (StatelessRandomUniformV2, ...): StatelessRandomGetKeyCounter turns the
  seed into a Philox key [1] and counter [2] (uint64), which the V2 ops take with an
  algorithm id (1 Philox, 2 ThreeFry, 3 auto-select, which is Philox on CPU).
The TF1 wrappers `tf.random.stateless_*`, `fold_in` and `split` build the graphs TensorFlow
builds. Every op gives TensorFlow's values (with glibc's libm, as TensorFlow on Linux uses);
StatelessMultinomial and StatelessParameterizedTruncatedNormal give them where TensorFlow
runs the op in one shard (TensorFlow's own values there depend on its thread count for
large outputs). Kernels: tensorflux/kernels/cpu/stateless_random_ops.py.
"""

from __future__ import annotations

import enum

import numpy as np

from tensorflux.framework import common_shapes, dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient, not_differentiable
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, comparison_ops, joining_ops, reduction_ops, unary_ops
from tensorflux.ops.math_ops import add, maximum, minimum, multiply, subtract, truediv
from tensorflux.ops.random_ops import _shape_tensor
from tensorflux.ops.sequence_ops import range as _range

__all__ = [
    "Algorithm", "fold_in", "split", "stateless_binomial", "stateless_categorical",
    "stateless_gamma", "stateless_multinomial", "stateless_normal",
    "stateless_parameterized_truncated_normal", "stateless_poisson",
    "stateless_truncated_normal", "stateless_uniform",
]


class Algorithm(enum.Enum):
    """The counter-based RNG algorithms (`tf.random.Algorithm`)."""

    PHILOX = 1
    THREEFRY = 2
    AUTO_SELECT = 3


_FLOATS = "{half, bfloat16, float, double}"
_INTS = "{int32, int64, uint32, uint64}"


def convert_alg_to_int(alg) -> int:
    """An algorithm given as Algorithm, int or name ('philox', 'threefry', 'auto_select')."""
    if isinstance(alg, Algorithm):
        return alg.value
    if isinstance(alg, int):
        return alg
    if isinstance(alg, str):
        key = alg.strip().lower()
        for member in Algorithm:
            if member.name.lower() == key:
                return member.value
    raise ValueError(f"Argument `alg` got unsupported value {alg}. Supported values are "
                     "philox for the Philox algorithm, threefry for the ThreeFry algorithm, "
                     "and auto_select for auto-selection.")


def _seed_shape(op, index=1):
    dims = common_shapes.static_dims(op.inputs[index])
    if dims is not None:
        if len(dims) != 1:
            raise ValueError(f"Shape must be rank 1 but is rank {len(dims)}")
        if dims[0] is not None and dims[0] != 2:
            raise ValueError(f"Dimension must be 2 but is {dims[0]}")


def _requested_shape(op):
    dims = common_shapes.static_dims(op.inputs[0])
    if dims is not None and len(dims) != 1:
        raise ValueError(f"Shape must be rank 1 but is rank {len(dims)}")
    return common_shapes.constant_value_as_shape(op.inputs[0])


def _int_range_shape(op):
    """The requested shape; minval and maxval (the last two inputs) must be scalars."""
    for arg, t in zip(("minval", "maxval"), op.inputs[-2:], strict=True):
        dims = common_shapes.static_dims(t)
        if dims:
            raise ValueError(f"{arg} must be a scalar; got a tensor of shape "
                             f"{common_shapes.shape_str(dims)}")
    if op.type == "StatelessRandomUniformInt":
        _seed_shape(op)
    return [_requested_shape(op)]


def _seeded_shape(op):
    _seed_shape(op)
    return [_requested_shape(op)]


def _key_counter_shape(op):
    _seed_shape(op, 0)
    return [tensor_shape.TensorShape([1]), tensor_shape.TensorShape([2])]


def _key_counter_alg_shape(op):
    return _key_counter_shape(op) + [tensor_shape.TensorShape([])]


def _sample_then_params(op):
    """The requested shape (it must end with the parameters' broadcast shape)."""
    _seed_shape(op)
    return [_requested_shape(op)]


def _multinomial_shape(op):
    _seed_shape(op, 2)
    logits = common_shapes.static_dims(op.inputs[0])
    batch = logits[0] if logits is not None and len(logits) == 2 else None
    return [tensor_shape.TensorShape([batch, common_shapes.scalar_value(op.inputs[1])])]


_SEED = "seed: Tseed"
_TSEED = "Tseed: {int32, int64} = DT_INT64"
_KC = ["shape: Tshape", "key: uint64", "counter: uint64", "alg: int32"]
_TSHAPE = "Tshape: {int32, int64} = DT_INT32"

define_op("StatelessRandomGetKeyCounter", inputs=[_SEED],
          outputs=["key: uint64", "counter: uint64"], attrs=[_TSEED],
          shape_fn=_key_counter_shape)
define_op("StatelessRandomGetKeyCounterAlg", inputs=[_SEED],
          outputs=["key: uint64", "counter: uint64", "alg: int32"], attrs=[_TSEED],
          shape_fn=_key_counter_alg_shape)
define_op("StatelessRandomGetAlg", outputs=["alg: int32"], shape_fn=common_shapes.scalar)
for _op in ("StatelessRandomUniform", "StatelessRandomNormal", "StatelessTruncatedNormal"):
    define_op(_op, inputs=["shape: T", _SEED], outputs=["output: dtype"],
              attrs=[f"dtype: {_FLOATS} = DT_FLOAT", "T: {int32, int64} = DT_INT32", _TSEED],
              shape_fn=_seeded_shape)
define_op("StatelessRandomUniformInt", inputs=["shape: T", _SEED, "minval: dtype",
                                               "maxval: dtype"],
          outputs=["output: dtype"], attrs=["dtype: {int32, int64}", "T: {int32, int64}",
                                            _TSEED], shape_fn=_int_range_shape)
define_op("StatelessRandomUniformFullInt", inputs=["shape: T", _SEED],
          outputs=["output: dtype"],
          attrs=[f"dtype: {_INTS} = DT_UINT64", "T: {int32, int64} = DT_INT32",
                 "Tseed: {int32, int64, uint32, uint64} = DT_INT64"],
          shape_fn=_seeded_shape)
define_op("StatelessMultinomial", inputs=["logits: T", "num_samples: int32", _SEED],
          outputs=["output: output_dtype"],
          attrs=["T: {half, bfloat16, float, double, int32, int64}", _TSEED,
                 "output_dtype: {int32, int64} = DT_INT64"], shape_fn=_multinomial_shape)
for _op in ("StatelessRandomUniformV2", "StatelessRandomNormalV2",
            "StatelessTruncatedNormalV2"):
    define_op(_op, inputs=_KC, outputs=["output: dtype"],
              attrs=[f"dtype: {_FLOATS} = DT_FLOAT", _TSHAPE],
              shape_fn=lambda op: [_requested_shape(op)])
define_op("StatelessRandomUniformIntV2", inputs=_KC + ["minval: dtype", "maxval: dtype"],
          outputs=["output: dtype"], attrs=[f"dtype: {_INTS}", _TSHAPE],
          shape_fn=_int_range_shape)
define_op("StatelessRandomUniformFullIntV2", inputs=_KC, outputs=["output: dtype"],
          attrs=[f"dtype: {_INTS} = DT_UINT64", _TSHAPE],
          shape_fn=lambda op: [_requested_shape(op)])
define_op("StatelessRandomPoisson", inputs=["shape: T", _SEED, "lam: Rtype"],
          outputs=["output: dtype"],
          attrs=["Rtype: {half, float, double, int32, int64}",
                 "dtype: {half, float, double, int32, int64}", "T: {int32, int64}", _TSEED],
          shape_fn=_sample_then_params)
define_op("StatelessRandomGammaV3", inputs=["shape: shape_dtype"] + _KC[1:] + ["alpha: dtype"],
          outputs=["output: dtype"],
          attrs=["dtype: {half, float, double}", "shape_dtype: {int32, int64} = DT_INT64"],
          shape_fn=lambda op: [_requested_shape(op)])
define_op("StatelessRandomBinomial", inputs=["shape: S", _SEED, "counts: T", "probs: T"],
          outputs=["output: dtype"],
          attrs=["S: {int32, int64}", _TSEED, "T: {half, float, double, int32, int64} = "
                 "DT_DOUBLE", "dtype: {half, float, double, int32, int64} = DT_INT64"],
          shape_fn=_sample_then_params)
define_op("StatelessParameterizedTruncatedNormal",
          inputs=["shape: S", _SEED, "means: dtype", "stddevs: dtype", "minvals: dtype",
                  "maxvals: dtype"], outputs=["output: dtype"],
          attrs=["S: {int32, int64}", _TSEED, "dtype: {half, float, double}"],
          shape_fn=_sample_then_params, broadcasts=True)
not_differentiable(
    "StatelessRandomGetKeyCounter", "StatelessRandomGetKeyCounterAlg", "StatelessRandomGetAlg",
    "StatelessRandomUniform", "StatelessRandomNormal", "StatelessTruncatedNormal",
    "StatelessRandomUniformInt", "StatelessRandomUniformFullInt", "StatelessMultinomial",
    "StatelessRandomUniformV2", "StatelessRandomNormalV2", "StatelessTruncatedNormalV2",
    "StatelessRandomUniformIntV2", "StatelessRandomUniformFullIntV2",
    "StatelessRandomPoisson", "StatelessRandomBinomial")


@gradient("StatelessRandomGammaV3")
def _stateless_gamma_grad(op, grad):
    """d sample / d alpha (RandomGammaGrad), summed over the leading sample dimensions."""
    shape, alpha = op.inputs[0], op.inputs[4]
    sample = op.outputs[0]
    n = subtract(array_ops.size(shape), array_ops.rank(alpha))
    ones = array_ops.ones(array_ops.reshape(n, [1]), dtypes.int32)
    broadcastable = array_ops.reshape(alpha, joining_ops.concat(
        [ones, array_ops.shape(alpha)], 0))
    partial = apply_op("RandomGammaGrad", alpha=broadcastable, sample=sample)
    return [None, None, None, None,
            reduction_ops.reduce_sum(multiply(grad, partial), _range(0, n))]


def _ndtr(x):
    """The standard normal CDF from erf / erfc (accurate in both tails)."""
    half_sqrt_2 = convert_to_tensor(0.5 * np.sqrt(2.0), x.dtype)
    w = multiply(x, half_sqrt_2)
    z = unary_ops.abs(w)
    one, two = convert_to_tensor(1.0, x.dtype), convert_to_tensor(2.0, x.dtype)
    y = comparison_ops.where(
        comparison_ops.less(z, half_sqrt_2), add(one, unary_ops.erf(w)),
        comparison_ops.where(comparison_ops.greater(w, array_ops.zeros_like(w)),
                             subtract(two, unary_ops.erfc(z)), unary_ops.erfc(z)))
    return multiply(convert_to_tensor(0.5, x.dtype), y)


@gradient("StatelessParameterizedTruncatedNormal")
def _parameterized_truncated_normal_grad(op, grad):
    """Implicit reparameterization: d sample / d parameter at a fixed truncated-normal CDF
    value; the driver sums over the sample and broadcast dimensions."""
    mean, stddev, minval, maxval = op.inputs[2:]
    sample = op.outputs[0]
    np_dtype = mean.dtype.base_dtype.as_numpy_dtype
    lo = truediv(subtract(minval, mean), stddev)
    hi = truediv(subtract(maxval, mean), stddev)
    z = truediv(subtract(sample, mean), stddev)
    cdf = truediv(subtract(_ndtr(z), _ndtr(lo)), subtract(_ndtr(hi), _ndtr(lo)))
    cdf = minimum(maximum(cdf, convert_to_tensor(np.finfo(np_dtype).tiny, mean.dtype)),
                  convert_to_tensor(1 - np.finfo(np_dtype).eps, mean.dtype))
    half = convert_to_tensor(0.5, mean.dtype)
    d_max = unary_ops.exp(add(multiply(half, subtract(unary_ops.square(z),
                                                      unary_ops.square(hi))),
                              unary_ops.log(cdf)))
    d_min = unary_ops.exp(add(multiply(half, subtract(unary_ops.square(z),
                                                      unary_ops.square(lo))),
                              unary_ops.log1p(unary_ops.negative(cdf))))
    return [None, None, grad, multiply(grad, z), multiply(grad, d_min),
            multiply(grad, d_max)]


# ---- TF1 wrappers ----------------------------------------------------------------------

_UNIFORM_DTYPES = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64,
                   dtypes.int32, dtypes.int64, dtypes.uint32, dtypes.uint64)


def _seed_tensor(seed) -> graph_lib.Tensor:
    seed = convert_to_tensor(seed, name="seed")
    if seed.dtype.base_dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"Value passed to parameter 'seed' has DataType "
                        f"{seed.dtype.base_dtype.name} not in list of allowed values: "
                        "int32, int64")
    return seed


def _key_counter(seed, alg):
    """(key, counter, alg) for `seed` (StatelessRandomGetKeyCounter); the kernels run
    Philox only and reject ThreeFry (InvalidArgumentError) when the step runs."""
    alg = convert_alg_to_int(alg)
    key, counter = apply_op("StatelessRandomGetKeyCounter", seed=_seed_tensor(seed))
    return key, counter, convert_to_tensor(1 if alg == 3 else alg, dtypes.int32)


def _set_shape(result, shape):
    if isinstance(shape, (list, tuple)) and all(isinstance(d, int) for d in shape):
        result.set_shape(shape)
    return result


def stateless_uniform(shape, seed, minval=0, maxval=None, dtype=dtypes.float32, name=None,
                      alg="auto_select"):
    """Deterministic uniform values in [minval, maxval) (`tf.random.stateless_uniform`).

    Floats default to [0, 1). Integers need both bounds, or neither (then the full range of
    the type, unsigned types too).

    Args:
      shape: the output shape.
      seed: a shape [2] int32/int64 tensor.
      minval, maxval: the range.
      dtype: float16, bfloat16, float32, float64, int32, int64, uint32 or uint64.
      name: the op name.
      alg: 'auto_select' or 'philox' (or tf.random.Algorithm).

    Raises:
      ValueError: an unsupported dtype, only one bound for integers, or a seed not of
        shape [2].
    """
    dtype = dtypes.as_dtype(dtype)
    if dtype not in _UNIFORM_DTYPES:
        raise ValueError(f"Argument `dtype` got invalid value {dtype!r}. Accepted dtypes are "
                         f"({', '.join('tf.' + d.name for d in _UNIFORM_DTYPES)}).")
    full_int = dtype.is_integer and minval is None and maxval is None
    if dtype.is_integer and not full_int and (minval is None or maxval is None):
        raise ValueError(f"For integer `dtype` argument {dtype!r}, argument `minval` and "
                         "`maxval` must be both None or not None. Got `minval`="
                         f"{minval} and `maxval`={maxval}.")
    if dtype.is_unsigned and not full_int:
        raise ValueError(f"Argument `dtype` got invalid value {dtype!r} when argument "
                         "`minval` is not None. Please don't use unsigned integers in this "
                         "case.")
    if maxval is None and not dtype.is_integer:
        maxval = 1
    with graph_lib.name_scope(name, "stateless_random_uniform",
                              [shape, seed, minval, maxval]) as name:
        shape_t = _shape_tensor(shape)
        key, counter, alg_t = _key_counter(seed, alg)
        if full_int:
            result = apply_op("StatelessRandomUniformFullIntV2", shape=shape_t, key=key,
                              counter=counter, alg=alg_t, dtype=dtype, name=name)
        elif dtype.is_integer:
            result = apply_op("StatelessRandomUniformIntV2", shape=shape_t, key=key,
                              counter=counter, alg=alg_t,
                              minval=convert_to_tensor(minval, dtype, name="min"),
                              maxval=convert_to_tensor(maxval, dtype, name="max"), name=name)
        else:
            minval = convert_to_tensor(minval, dtype, name="min")
            maxval = convert_to_tensor(maxval, dtype, name="max")
            rnd = apply_op("StatelessRandomUniformV2", shape=shape_t, key=key,
                           counter=counter, alg=alg_t, dtype=dtype)
            result = add(multiply(rnd, subtract(maxval, minval, name="sub"), name="mul"),
                         minval, name=name)
        return _set_shape(result, shape)


def _scaled(op_type, scope, shape, seed, mean, stddev, dtype, name, alg):
    dtype = dtypes.as_dtype(dtype)
    with graph_lib.name_scope(name, scope, [shape, seed, mean, stddev]) as name:
        shape_t = _shape_tensor(shape)
        key, counter, alg_t = _key_counter(seed, alg)
        mean = convert_to_tensor(mean, dtype, name="mean")
        stddev = convert_to_tensor(stddev, dtype, name="stddev")
        rnd = apply_op(op_type, shape=shape_t, key=key, counter=counter, alg=alg_t,
                       dtype=dtype)
        return _set_shape(add(multiply(rnd, stddev, name="mul"), mean, name=name), shape)


def stateless_normal(shape, seed, mean=0.0, stddev=1.0, dtype=dtypes.float32, name=None,
                     alg="auto_select"):
    """Deterministic normal values (`tf.random.stateless_normal`); see stateless_uniform
    for `seed` and `alg`."""
    return _scaled("StatelessRandomNormalV2", "stateless_random_normal", shape, seed, mean,
                   stddev, dtype, name, alg)


def stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0, dtype=dtypes.float32,
                               name=None, alg="auto_select"):
    """Deterministic normal values redrawn beyond two standard deviations
    (`tf.random.stateless_truncated_normal`)."""
    return _scaled("StatelessTruncatedNormalV2", "stateless_truncated_normal", shape, seed,
                   mean, stddev, dtype, name, alg)


def stateless_multinomial(logits, num_samples, seed, output_dtype=dtypes.int64, name=None):
    """Deterministic class indices drawn from softmax(logits) rows
    (`tf.random.stateless_multinomial`); shape [batch, num_samples]."""
    with graph_lib.name_scope(name, "stateless_multinomial", [logits, seed]):
        return _multinomial(logits, num_samples, seed, output_dtype)


def stateless_categorical(logits, num_samples, seed, dtype=dtypes.int64, name=None):
    """Deterministic class indices drawn from softmax(logits) rows
    (`tf.random.stateless_categorical`); shape [batch, num_samples]."""
    with graph_lib.name_scope(name, "stateless_categorical", [logits, seed]):
        return _multinomial(logits, num_samples, seed, dtype)


def _multinomial(logits, num_samples, seed, output_dtype):
    logits = convert_to_tensor(logits, name="logits")
    return apply_op("StatelessMultinomial", logits=logits,
                    num_samples=convert_to_tensor(num_samples, dtypes.int32),
                    seed=_seed_tensor(seed), output_dtype=dtypes.as_dtype(output_dtype))


def stateless_poisson(shape, seed, lam, dtype=dtypes.int32, name=None):
    """Deterministic Poisson(lam) samples; `shape` must end with lam's shape
    (`tf.random.stateless_poisson`)."""
    with graph_lib.name_scope(name, "stateless_random_poisson", [shape, seed, lam]):
        shape_t = _shape_tensor(shape)
        return _set_shape(apply_op("StatelessRandomPoisson", shape=shape_t,
                                   seed=_seed_tensor(seed), lam=convert_to_tensor(lam, name="lam"),
                                   dtype=dtypes.as_dtype(dtype)), shape)


def stateless_gamma(shape, seed, alpha, beta=None, dtype=dtypes.float32, name=None):
    """Deterministic Gamma(alpha, rate beta) samples; `shape` must end with the broadcast
    shape of alpha and beta (`tf.random.stateless_gamma`); differentiable in alpha."""
    dtype = dtypes.as_dtype(dtype)
    with graph_lib.name_scope(name, "stateless_random_gamma", [shape, seed, alpha, beta]):
        shape_t = _shape_tensor(shape)
        alpha = convert_to_tensor(alpha, dtype, name="alpha")
        beta = convert_to_tensor(1 if beta is None else beta, dtype, name="beta")
        params_shape = joining_ops.broadcast_dynamic_shape(array_ops.shape(alpha),
                                                           array_ops.shape(beta))
        alpha = joining_ops.broadcast_to(alpha, params_shape)
        key, counter, alg_t = _key_counter(seed, "auto_select")
        sample = apply_op("StatelessRandomGammaV3", shape=shape_t, key=key, counter=counter,
                          alg=alg_t, alpha=alpha)
        tiny = convert_to_tensor(_tiny(dtype), dtype)
        return _set_shape(maximum(tiny, truediv(sample, beta)), shape)


def _tiny(dtype):
    return np.finfo(dtype.as_numpy_dtype).tiny


def stateless_binomial(shape, seed, counts, probs, output_dtype=dtypes.int32, name=None):
    """Deterministic Binomial(counts, probs) samples (`tf.random.stateless_binomial`)."""
    with graph_lib.name_scope(name, "stateless_random_binomial",
                              [shape, seed, counts, probs]):
        shape_t = _shape_tensor(shape)
        probs = convert_to_tensor(probs, name="probs", preferred_dtype=dtypes.float32)
        counts = convert_to_tensor(counts, dtype=probs.dtype, name="counts")
        return _set_shape(apply_op("StatelessRandomBinomial", shape=shape_t,
                                   seed=_seed_tensor(seed), counts=counts, probs=probs,
                                   dtype=dtypes.as_dtype(output_dtype)), shape)


def stateless_parameterized_truncated_normal(shape, seed, means=0.0, stddevs=1.0,
                                             minvals=-2.0, maxvals=2.0, name=None):
    """Deterministic normal(means, stddevs) samples restricted to [minvals, maxvals]
    (`tf.random.stateless_parameterized_truncated_normal`)."""
    with graph_lib.name_scope(name, "stateless_parameterized_truncated_normal",
                              [shape, means, stddevs, minvals, maxvals]):
        shape_t = _shape_tensor(shape)
        means = convert_to_tensor(means, name="means")
        dtype = means.dtype.base_dtype
        stddevs = convert_to_tensor(stddevs, dtype, name="stddevs")
        minvals = convert_to_tensor(minvals, dtype, name="minvals")
        maxvals = convert_to_tensor(maxvals, dtype, name="maxvals")
        return _set_shape(apply_op("StatelessParameterizedTruncatedNormal", shape=shape_t,
                                   seed=_seed_tensor(seed), means=means, stddevs=stddevs,
                                   minvals=minvals, maxvals=maxvals), shape)


def split(seed, num=2, alg="auto_select"):
    """`num` new seeds (shape [num, 2]) derived from `seed` (`tf.random.split`)."""
    seed = convert_to_tensor(seed)
    return stateless_uniform([num, 2], seed=seed, dtype=seed.dtype, minval=None,
                             maxval=None, alg=alg)


def fold_in(seed, data, alg="auto_select"):
    """A new seed from `seed` and the integer `data` (`tf.random.fold_in`)."""
    data = convert_to_tensor(data)
    seed1 = stateless_uniform([], seed=seed, dtype=data.dtype, minval=None, maxval=None,
                              alg=alg)
    return joining_ops.stack([seed1, data])


# ---- the state op of tf.random.Generator (tensorflux/random/generator.py) ------------------

define_op("RngReadAndSkip", inputs=["resource: resource", "alg: int32", "delta: uint64"],
          outputs=["value: int64"], shape_fn=lambda op: [tensor_shape.TensorShape([3])],
          stateful=True)
not_differentiable("RngReadAndSkip")
