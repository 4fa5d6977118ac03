"""`tf.random.Generator`: a counter-based generator whose Philox state (counter_lo,
counter_hi, key; int64[3]) lives in a resource variable. Each draw reads the state and
moves the counter on (RngReadAndSkip), then runs the stateless key/counter ops
(tensorflux/ops/stateless_random_ops.py), so values equal TensorFlow's for the same state.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ext_ops, joining_ops, reduction_ops, slicing_ops
from tensorflux.ops import stateless_random_ops as _srs
from tensorflux.ops.math_ops import add, cast, multiply, subtract
from tensorflux.ops.random_ops import _shape_tensor
from tensorflux.variables import variables

__all__ = ["Generator", "create_rng_state", "get_global_generator", "set_global_generator"]

_STATE_SIZE = 3  # Philox: two words of counter, one of key


def _philox_alg(alg) -> int:
    alg = _srs.convert_alg_to_int(_srs.Algorithm.PHILOX if alg is None else alg)
    if alg == _srs.Algorithm.THREEFRY.value:
        raise ValueError("The ThreeFry algorithm is not supported by tensorflux; use "
                         "'philox' or 'auto_select'.")
    return _srs.Algorithm.PHILOX.value


def create_rng_state(seed, alg):
    """The initial int64[3] state tensor for `seed` (`tf.random.create_rng_state`): a Python
    int is cut into 64-bit words (low first); shorter seeds are zero-padded on the left."""
    _philox_alg(alg)
    if isinstance(seed, (int, np.integer)):
        seed = int(seed)
        words = []
        for _ in range(_STATE_SIZE):
            words.append(seed & (2**64 - 1))
            seed >>= 64
        seed = words
    flat = np.array([int(v) % 2**64 for v in np.ravel(seed)], np.uint64).view(np.int64)
    flat = flat[:_STATE_SIZE]
    return convert_to_tensor(np.concatenate([np.zeros(_STATE_SIZE - flat.size, np.int64), flat]))


class Generator:
    """A random generator with its state in a variable (`tf.random.Generator`)."""

    def __init__(self, copy_from=None, state=None, alg=None):
        if copy_from is not None:
            if state is not None or alg is not None:
                raise ValueError("When `copy_from` is not None, neither `state` nor `alg` "
                                 "can be given.")
            state, alg = copy_from.state.initialized_value(), copy_from.algorithm
        elif state is None:
            raise ValueError("Either `copy_from` or `state` must be given.")
        self._alg = _philox_alg(alg)
        with graph_lib.name_scope("random_generator"):
            self._state_var = variables.Variable(
                convert_to_tensor(state, dtypes.int64), trainable=False, name="StateVar",
                use_resource=True)  # RngReadAndSkip takes a resource, even in TF1 mode

    @classmethod
    def from_state(cls, state, alg):
        return cls(state=state, alg=alg)

    @classmethod
    def from_seed(cls, seed, alg=None):
        """A generator whose state comes from the integer `seed`."""
        alg = _philox_alg(alg)
        return cls(state=create_rng_state(seed, alg), alg=alg)

    @classmethod
    def from_non_deterministic_state(cls, alg=None):
        """A generator seeded from OS entropy."""
        alg = _philox_alg(alg)
        seed = np.frombuffer(os.urandom(8 * _STATE_SIZE), np.int64)
        return cls(state=create_rng_state(seed, alg), alg=alg)

    @classmethod
    def from_key_counter(cls, key, counter, alg):
        state = np.concatenate([np.ravel(counter), np.ravel(key)]).astype(np.int64)
        return cls(state=state, alg=alg)

    @property
    def state(self):
        """The resource variable holding the state."""
        return self._state_var

    @property
    def algorithm(self) -> int:
        return self._alg

    @property
    def key(self):
        return self._state_var.value()[-1]

    def reset(self, state):
        return self._state_var.assign(convert_to_tensor(state, dtypes.int64))

    def reset_from_seed(self, seed):
        return self.reset(create_rng_state(seed, self._alg))

    def skip(self, delta):
        """Reads the state and moves the counter on by 256 * delta blocks; returns the old
        state."""
        return apply_op("RngReadAndSkip", resource=self._state_var.handle,
                        alg=convert_to_tensor(self._alg, dtypes.int32),
                        delta=cast(delta, dtypes.uint64))

    def _key_counter(self, shape_t):
        state = self.skip(reduction_ops.reduce_prod(shape_t))
        counter = array_ext_ops.bitcast(slicing_ops.strided_slice(state, [0], [2]),
                                        dtypes.uint64)
        key = array_ext_ops.bitcast(slicing_ops.strided_slice(state, [2], [3]), dtypes.uint64)
        return key, counter, convert_to_tensor(self._alg, dtypes.int32)

    def _draw(self, op_type, scope, shape, dtype, name, **extra):
        with graph_lib.name_scope(name, scope, [shape]) as name:
            shape_t = _shape_tensor(shape)
            key, counter, alg = self._key_counter(shape_t)
            return shape_t, apply_op(op_type, shape=shape_t, key=key, counter=counter,
                                     alg=alg, dtype=dtype, **extra), name

    def uniform(self, shape, minval=0, maxval=None, dtype=dtypes.float32, name=None):
        """Uniform values in [minval, maxval) (integers need maxval)."""
        dtype = dtypes.as_dtype(dtype)
        if dtype.is_integer:
            if maxval is None:
                raise ValueError(f"Must specify maxval for integer dtype {dtype!r}")
            with graph_lib.name_scope(name, "stateful_uniform_int", [shape]) as scope:
                shape_t = _shape_tensor(shape)
                key, counter, alg = self._key_counter(shape_t)
                return apply_op("StatelessRandomUniformIntV2", shape=shape_t, key=key,
                                counter=counter, alg=alg,
                                minval=convert_to_tensor(minval, dtype, name="min"),
                                maxval=convert_to_tensor(maxval, dtype, name="max"),
                                name=scope)
        maxval = 1 if maxval is None else maxval
        with graph_lib.name_scope(name, "stateful_uniform", [shape]) as scope:
            shape_t = _shape_tensor(shape)
            key, counter, alg = self._key_counter(shape_t)
            minval = convert_to_tensor(minval, dtype, name="min")
            maxval = convert_to_tensor(maxval, dtype, name="max")
            rnd = apply_op("StatelessRandomUniformV2", shape=shape_t, key=key, counter=counter,
                           alg=alg, dtype=dtype)
            return add(multiply(rnd, subtract(maxval, minval)), minval, name=scope)

    def _scaled(self, op_type, scope, shape, mean, stddev, dtype, name):
        dtype = dtypes.as_dtype(dtype)
        with graph_lib.name_scope(name, scope, [shape, mean, stddev]) as scope:
            shape_t = _shape_tensor(shape)
            key, counter, alg = self._key_counter(shape_t)
            mean = convert_to_tensor(mean, dtype, name="mean")
            stddev = convert_to_tensor(stddev, dtype, name="stddev")
            rnd = apply_op(op_type, shape=shape_t, key=key, counter=counter, alg=alg,
                           dtype=dtype)
            return add(multiply(rnd, stddev), mean, name=scope)

    def normal(self, shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, name=None):
        """Normal values."""
        return self._scaled("StatelessRandomNormalV2", "stateful_normal", shape, mean,
                            stddev, dtype, name)

    def truncated_normal(self, shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, name=None):
        """Normal values redrawn beyond two standard deviations."""
        return self._scaled("StatelessTruncatedNormalV2", "stateful_truncated_normal", shape,
                            mean, stddev, dtype, name)

    def uniform_full_int(self, shape, dtype=dtypes.uint64, name=None):
        """Integers over the whole range of `dtype`."""
        with graph_lib.name_scope(name, "stateful_uniform_full_int", [shape]) as scope:
            shape_t = _shape_tensor(shape)
            key, counter, alg = self._key_counter(shape_t)
            return apply_op("StatelessRandomUniformFullIntV2", shape=shape_t, key=key,
                            counter=counter, alg=alg, dtype=dtypes.as_dtype(dtype),
                            name=scope)

    def make_seeds(self, count=1):
        """`count` seeds for the stateless ops, as a [2, count] int64 tensor."""
        keys = self.uniform_full_int([count], dtypes.int64)
        return joining_ops.stack([keys, multiply(keys, 0)])

    def split(self, count=1):
        """`count` new generators whose keys this generator draws."""
        keys = self.uniform_full_int([count], dtypes.int64)
        zeros = convert_to_tensor([0] * (_STATE_SIZE - 1), dtypes.int64)
        return [Generator(state=joining_ops.concat([zeros, slicing_ops.strided_slice(
                    keys, [i], [i + 1])], 0), alg=self._alg) for i in range(count)]


_GLOBAL_LOCK = threading.Lock()
_global_generators: dict = {}


def get_global_generator():
    """The default graph's global Generator, created from OS entropy on first use
    (`tf.random.get_global_generator`)."""
    g = graph_lib.get_default_graph()
    with _GLOBAL_LOCK:
        gen = _global_generators.get(g)
        if gen is None:
            gen = _global_generators[g] = Generator.from_non_deterministic_state()
        return gen


def set_global_generator(generator):
    """Makes `generator` the default graph's global Generator
    (`tf.random.set_global_generator`)."""
    with _GLOBAL_LOCK:
        _global_generators[graph_lib.get_default_graph()] = generator
