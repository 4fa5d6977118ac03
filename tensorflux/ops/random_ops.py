"""Random ops: uniform, normal, truncated normal, shuffle and multinomial sampling.

Every random op carries two seed attributes, `seed` and `seed2`, derived by
`framework/random_seed.get_seed` from the graph seed (`tf.set_random_seed`) and the op's
own `seed` argument. Kernels (tensorflux/kernels/cpu/random_ops.py) keep one generator per op
per Session, seeded from the pair: successive runs of one op give fresh values, and the same
graph and seeds give the same sequence in every new Session. The ops are stateful, so the
graph optimizer never folds or merges them.
"""

from __future__ import annotations

from tensorflux.framework import common_shapes, dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable
from tensorflux.framework.operation import Tensor
from tensorflux.framework.random_seed import get_seed, set_random_seed
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import joining_ops, math_ops

# The TF1 public names of this module.
__all__ = ["random_uniform", "random_normal", "truncated_normal", "random_shuffle",
           "multinomial", "set_random_seed", "get_seed"]

_SEEDS = ["seed: int = 0", "seed2: int = 0"]
_FLOATS = "dtype: {half, bfloat16, float, double}"


def _shape_from_input(op):
    """Output 0 has the shape that input 0 (a shape vector) holds, as far as it is known."""
    return [common_shapes.constant_value_as_shape(op.inputs[0])]


# ---- RandomUniform, RandomStandardNormal, TruncatedNormal, RandomUniformInt ---------------

for _op_type in ("RandomUniform", "RandomStandardNormal", "TruncatedNormal"):
    define_op(_op_type, inputs=["shape: T"], outputs=["output: dtype"],
              attrs=_SEEDS + [_FLOATS, "T: {int32, int64}"], shape_fn=_shape_from_input,
              stateful=True)
define_op("RandomUniformInt", inputs=["shape: T", "minval: Tout", "maxval: Tout"],
          outputs=["output: Tout"], attrs=_SEEDS + ["Tout: {int32, int64}", "T: {int32, int64}"],
          shape_fn=_shape_from_input, stateful=True)
not_differentiable("RandomUniform", "RandomStandardNormal", "TruncatedNormal",
                   "RandomUniformInt")


def _shape_tensor(shape) -> Tensor:
    """A 1-D integer tensor from a shape-like value (TF's `tensor_util.shape_tensor`)."""
    if isinstance(shape, Tensor):
        if shape.dtype.base_dtype not in (dtypes.int32, dtypes.int64):
            raise TypeError(f"Shape tensor {shape.name} must be int32 or int64, not "
                            f"{shape.dtype.name}")
        return shape
    if isinstance(shape, tensor_shape.TensorShape):
        if not shape.is_fully_defined():
            raise ValueError(f"Cannot convert a partially known TensorShape {shape} to a "
                             "Tensor")
        shape = shape.as_list()
    if isinstance(shape, (list, tuple)):
        if any(_symbolic(d) for d in shape):
            return joining_ops.stack(list(shape), name="shape")
        shape = [int(d) if isinstance(d, tensor_shape.Dimension) else d for d in shape]
        if not shape:
            return convert_to_tensor(shape, dtype=dtypes.int32, name="shape")
        if any(isinstance(d, int) and not -2**31 <= d < 2**31 for d in shape):
            return convert_to_tensor(shape, dtype=dtypes.int64, name="shape")  # never wrapped
    return convert_to_tensor(shape, name="shape")  # a dtype other than int32/int64 fails, as TF


def _math(fn_name: str):
    """A math_ops wrapper, looked up when first needed (math ops live in another module)."""
    fn = getattr(math_ops, fn_name, None)
    if fn is None:
        raise NotImplementedError(f"tf.{fn_name} is needed here and tensorflux does not "
                                  "define it yet")
    return fn


def _symbolic(d) -> bool:
    """A shape entry that is a tensor or converts to one (a variable: `[n, tf.Variable(3)]`)."""
    return isinstance(d, Tensor) or hasattr(d, "_as_graph_element")


def _set_static_shape(result: Tensor, shape) -> None:
    if isinstance(shape, (list, tuple)) and not any(_symbolic(d) for d in shape):
        result.set_shape(shape)


def random_uniform(shape, minval=0, maxval=None, dtype=dtypes.float32, seed=None,
                   name: str | None = None) -> Tensor:
    """Values drawn uniformly from [minval, maxval) (`tf.random_uniform`).

    Floating types give RandomUniform scaled to the range (nothing more for the default
    [0, 1)); integer types give RandomUniformInt, for which `maxval` is required.

    Args:
      shape: the output shape (a list of ints or a 1-D integer tensor).
      minval, maxval: the range (maxval defaults to 1 for floating types).
      dtype: half, bfloat16, float32, float64, int32 or int64.
      seed: the op-level seed (see `tf.set_random_seed`).
      name: the op name.

    Raises:
      ValueError: an unsupported dtype, or no `maxval` for an integer dtype.
    """
    dtype = dtypes.as_dtype(dtype)
    if dtype not in (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64,
                     dtypes.int32, dtypes.int64):
        raise ValueError(f"Invalid dtype {dtype!r}")
    if maxval is None:
        if dtype.is_integer:
            raise ValueError(f"Must specify maxval for integer dtype {dtype!r}")
        maxval = 1
    with graph_lib.name_scope(name, "random_uniform", [shape, minval, maxval]) as name:
        shape_t = _shape_tensor(shape)
        # [0, 1) floating results need no range at all (TF skips the Consts too).
        min_is_zero = type(minval) is int and minval == 0
        max_is_one = type(maxval) is int and maxval == 1
        if not min_is_zero or not max_is_one or dtype.is_integer:
            minval = convert_to_tensor(minval, dtype=dtype, name="min")
            maxval = convert_to_tensor(maxval, dtype=dtype, name="max")
        seed1, seed2 = get_seed(seed)
        if dtype.is_integer:
            result = apply_op("RandomUniformInt", shape=shape_t, minval=minval, maxval=maxval,
                              seed=seed1, seed2=seed2, name=name)
        else:
            result = apply_op("RandomUniform", shape=shape_t, dtype=dtype, seed=seed1,
                              seed2=seed2)
            if min_is_zero:
                if not max_is_one:
                    result = _math("multiply")(result, maxval)
            else:
                span = _math("subtract")(maxval, minval, name="sub")
                result = _math("add")(_math("multiply")(result, span, name="mul"), minval,
                                      name=name)
        _set_static_shape(result, shape)
        return result


def _scaled_normal(op_type: str, scope: str, shape, mean, stddev, dtype, seed, name):
    dtype = dtypes.as_dtype(dtype)
    with graph_lib.name_scope(name, scope, [shape, mean, stddev]) as name:
        shape_t = _shape_tensor(shape)
        mean_t = convert_to_tensor(mean, dtype=dtype, name="mean")
        stddev_t = convert_to_tensor(stddev, dtype=dtype, name="stddev")
        seed1, seed2 = get_seed(seed)
        rnd = apply_op(op_type, shape=shape_t, dtype=dtype, seed=seed1, seed2=seed2)
        mul = _math("multiply")(rnd, stddev_t, name="mul")
        value = _math("add")(mul, mean_t, name=name)
        _set_static_shape(value, shape)
        return value


def random_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None,
                  name: str | None = None) -> Tensor:
    """Values drawn from a normal distribution (`tf.random_normal`).

    Args:
      shape: the output shape (a list of ints or a 1-D integer tensor).
      mean, stddev: the distribution's parameters (scalars or tensors of `dtype`).
      dtype: a floating type.
      seed: the op-level seed.
      name: the op name.
    """
    return _scaled_normal("RandomStandardNormal", "random_normal", shape, mean, stddev, dtype,
                          seed, name)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None,
                     name: str | None = None) -> Tensor:
    """Normal values, redrawn while more than 2 standard deviations from the mean
    (`tf.truncated_normal`). Arguments as `random_normal`."""
    return _scaled_normal("TruncatedNormal", "truncated_normal", shape, mean, stddev, dtype,
                          seed, name)


# ---- RandomShuffle -----------------------------------------------------------------------

define_op("RandomShuffle", inputs=["value: T"], outputs=["output: T"],
          attrs=_SEEDS + ["T: type"], shape_fn=common_shapes.unchanged, stateful=True)
not_differentiable("RandomShuffle")


def random_shuffle(value, seed=None, name: str | None = None) -> Tensor:
    """`value` with its first dimension randomly permuted (`tf.random_shuffle`)."""
    seed1, seed2 = get_seed(seed)
    return apply_op("RandomShuffle", value=value, seed=seed1, seed2=seed2,
                    name=name or "RandomShuffle")


# ---- Multinomial -------------------------------------------------------------------------


def _multinomial_shape(op):
    logits = op.inputs[0].shape
    if logits.ndims is not None and logits.ndims != 2:
        raise ValueError(f"Shape must be rank 2 but is rank {logits.ndims}")
    batch = logits.as_list()[0] if logits.ndims == 2 else None
    n = common_shapes.constant_value(op.inputs[1])
    return [tensor_shape.TensorShape([batch, None if n is None else int(n)])]


define_op("Multinomial", inputs=["logits: T", "num_samples: int32"],
          outputs=["output: output_dtype"],
          attrs=_SEEDS + ["T: realnumbertype", "output_dtype: {int32, int64} = DT_INT64"],
          shape_fn=_multinomial_shape, stateful=True)
not_differentiable("Multinomial")


def multinomial(logits, num_samples, seed=None, name: str | None = None,
                output_dtype=None) -> Tensor:
    """Samples class indices from categorical distributions (`tf.multinomial`).

    Args:
      logits: [batch_size, num_classes] unnormalized log-probabilities.
      num_samples: how many samples to draw per row (a scalar).
      seed: the op-level seed.
      name: the op name scope.
      output_dtype: int32 or int64 (the default).

    Returns:
      An int tensor of shape [batch_size, num_samples].
    """
    with graph_lib.name_scope(name, "multinomial", [logits]):
        logits = convert_to_tensor(logits, name="logits")
        seed1, seed2 = get_seed(seed)
        return apply_op("Multinomial", logits=logits, num_samples=num_samples, seed=seed1,
                        seed2=seed2, output_dtype=output_dtype)
