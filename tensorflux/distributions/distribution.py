"""`tf.distributions.Distribution`: TF1's base class of probability distributions.

A distribution holds parameter tensors whose broadcast shape is its *batch shape* (one
independent distribution per element) and draws events of its *event shape* (scalar,
or a vector `[k]` for Dirichlet and the multinomials). `sample(sample_shape)` returns a
tensor of shape `sample_shape + batch_shape + event_shape`; the statistics (`log_prob`,
`entropy`, ...) return one value per batch element.

Each public method opens the distribution's own name scope (the unique scope taken when it
was built, e.g. `Normal_1/`) and then one named after the method, and calls the subclass's
hook: `_sample_n(n, seed)` draws `n` batches (shape `[n] + batch_shape + event_shape`), and
`_log_prob`, `_prob`, `_cdf`, `_log_cdf`, `_survival_function`, `_log_survival_function`,
`_quantile`, `_entropy`, `_mean`, `_variance`, `_stddev`, `_mode`, `_covariance` compute
the statistics.
A subclass defines whichever it can; `log_prob`/`prob`, `cdf`/`log_cdf`, the survival
functions and `variance`/`stddev` fall back on each other, and a statistic with neither
hook raises NotImplementedError.
"""

from __future__ import annotations

import numpy as np

from tensorflux.distributions import kullback_leibler
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.common_shapes import constant_value
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.framework.tensor_shape import TensorShape
from tensorflux.ops import array_ops, constant_op, joining_ops, reduction_ops, unary_ops

__all__ = ["Distribution", "ReparameterizationType", "FULLY_REPARAMETERIZED",
           "NOT_REPARAMETERIZED"]


class ReparameterizationType:
    """Whether samples are a differentiable function of the parameters (pathwise
    gradients flow through `sample`) or not."""

    __slots__ = ("_rep_type",)

    def __init__(self, rep_type: str):
        self._rep_type = rep_type

    def __repr__(self) -> str:
        return f"<Reparameterization Type: {self._rep_type}>"

    def __eq__(self, other) -> bool:
        return self is other

    __hash__ = object.__hash__


FULLY_REPARAMETERIZED = ReparameterizationType("FULLY_REPARAMETERIZED")
NOT_REPARAMETERIZED = ReparameterizationType("NOT_REPARAMETERIZED")


def float_parameters(values: dict, dtype=None) -> dict:
    """Converts the named parameters to tensors of one floating dtype (python numbers take
    the dtype of the first tensor among them, else float32).

    Raises:
      ValueError: the parameters' dtypes differ, or are not floating point.
    """
    if dtype is None:
        given = [v.dtype.base_dtype for v in values.values() if hasattr(v, "dtype")
                 and isinstance(v.dtype, dtypes.DType)]
        dtype = given[0] if given else dtypes.float32
    out = {k: array_ops.identity(convert_to_tensor(v, dtype=dtype), name=k)
           for k, v in values.items()}
    for k, t in out.items():
        if not t.dtype.base_dtype.is_floating:
            raise ValueError(f"{k} must be a floating tensor, got {t.dtype.name}")
    return out


class Distribution:
    """A batch of probability distributions (`tf.distributions.Distribution`)."""

    # The parameters that take the batch shape, for `param_shapes` (None: not defined).
    _PARAM_NAMES: tuple | None = None

    def __init__(self, dtype, reparameterization_type, validate_args, allow_nan_stats,
                 parameters=None, graph_parents=None, name=None):
        if not name or name[-1] != "/":
            with graph_lib.name_scope(name or type(self).__name__) as scope:
                name = scope
        self._dtype = dtype
        self._reparameterization_type = reparameterization_type
        self._validate_args = validate_args
        self._allow_nan_stats = allow_nan_stats
        self._parameters = dict(parameters or {})
        self._parameters.pop("self", None)
        self._parameters.pop("__class__", None)
        self._graph_parents = list(graph_parents or [])
        self._name = name

    # ----- parameter shapes -------------------------------------------------------
    @classmethod
    def param_shapes(cls, sample_shape, name="DistributionParamShapes"):
        """The shapes of the parameters for which `sample()` gives `sample_shape`: a dict
        of int32 tensors (`sample_shape` itself where it is a tensor).

        Raises:
          NotImplementedError: the class does not say (TF1's Categorical, Dirichlet and
            the multinomials).
        """
        with graph_lib.name_scope(name, values=[sample_shape]):
            return cls._param_shapes(sample_shape)

    @classmethod
    def _param_shapes(cls, sample_shape):
        if cls._PARAM_NAMES is None:
            raise NotImplementedError("_param_shapes not implemented")
        shape = convert_to_tensor(sample_shape, dtype=dtypes.int32)
        return {name: shape for name in cls._PARAM_NAMES}

    @classmethod
    def param_static_shapes(cls, sample_shape):
        """`param_shapes` as TensorShapes, for a `sample_shape` known when building.

        Raises:
          ValueError: `sample_shape` is a TensorShape not fully defined, or its values are
            not known statically.
        """
        if isinstance(sample_shape, TensorShape):
            if not sample_shape.is_fully_defined():
                raise ValueError("TensorShape sample_shape must be fully defined")
            sample_shape = sample_shape.as_list()
        static = {}
        for name, shape in cls.param_shapes(sample_shape).items():
            value = constant_value(shape)
            if value is None:
                raise ValueError("sample_shape must be a fully-defined TensorShape or "
                                 "list/tuple")
            static[name] = TensorShape([int(d) for d in np.reshape(value, [-1])])
        return static

    # ----- properties -----------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def dtype(self):
        return self._dtype

    @property
    def parameters(self) -> dict:
        return dict(self._parameters)

    @property
    def reparameterization_type(self):
        return self._reparameterization_type

    @property
    def allow_nan_stats(self) -> bool:
        return self._allow_nan_stats

    @property
    def validate_args(self) -> bool:
        return self._validate_args

    @property
    def batch_shape(self) -> TensorShape:
        return TensorShape(self._batch_shape())

    @property
    def event_shape(self) -> TensorShape:
        return TensorShape(self._event_shape())

    def _event_shape(self):
        return TensorShape([])

    def _event_shape_tensor(self):
        return constant_op.constant([], dtype=dtypes.int32)

    def batch_shape_tensor(self, name="batch_shape_tensor"):
        with self._name_scope(name):
            if self.batch_shape.is_fully_defined():
                return constant_op.constant(self.batch_shape.as_list(), dtype=dtypes.int32,
                                            name="batch_shape")
            return self._batch_shape_tensor()

    def event_shape_tensor(self, name="event_shape_tensor"):
        with self._name_scope(name):
            if self.event_shape.is_fully_defined():
                return constant_op.constant(self.event_shape.as_list(), dtype=dtypes.int32,
                                            name="event_shape")
            return self._event_shape_tensor()

    def is_scalar_event(self, name="is_scalar_event"):
        with self._name_scope(name):
            return constant_op.constant(self.event_shape.ndims == 0, name="is_scalar_event")

    def is_scalar_batch(self, name="is_scalar_batch"):
        with self._name_scope(name):
            return constant_op.constant(self.batch_shape.ndims == 0, name="is_scalar_batch")

    def copy(self, **override_parameters_kwargs):
        """A new distribution of this class with some parameters replaced."""
        parameters = dict(self.parameters, **override_parameters_kwargs)
        return type(self)(**parameters)

    def __repr__(self) -> str:
        return (f"<tf.distributions.{type(self).__name__} '{self.name}' "
                f"batch_shape={self.batch_shape} event_shape={self.event_shape} "
                f"dtype={self.dtype.name}>")

    # ----- sampling -------------------------------------------------------------
    def sample(self, sample_shape=(), seed=None, name="sample"):
        """Draws samples of shape `sample_shape + batch_shape + event_shape`."""
        with self._name_scope(name, values=[sample_shape]):
            sample_shape = convert_to_tensor(sample_shape, dtype=dtypes.int32,
                                             name="sample_shape")
            static = constant_value(sample_shape)
            if sample_shape.shape.ndims != 1:  # a scalar n means [n]
                sample_shape = array_ops.reshape(sample_shape, [-1])
            samples = self._sample_n(reduction_ops.reduce_prod(sample_shape), seed)
            final = joining_ops.concat([sample_shape, array_ops.shape(samples)[1:]], 0)
            samples = array_ops.reshape(samples, final)
            head = (TensorShape([int(d) for d in np.reshape(static, [-1])])
                    if static is not None else TensorShape(None))
            samples.set_shape(head.concatenate(self.batch_shape)
                              .concatenate(self.event_shape))
            return samples

    # ----- statistics -------------------------------------------------------------
    def log_prob(self, value, name="log_prob"):
        return self._call(name, value, ("_log_prob", None), ("_prob", unary_ops.log))

    def prob(self, value, name="prob"):
        return self._call(name, value, ("_prob", None), ("_log_prob", unary_ops.exp))

    def cdf(self, value, name="cdf"):
        return self._call(name, value, ("_cdf", None), ("_log_cdf", unary_ops.exp))

    def log_cdf(self, value, name="log_cdf"):
        return self._call(name, value, ("_log_cdf", None), ("_cdf", unary_ops.log))

    def survival_function(self, value, name="survival_function"):
        return self._call(name, value, ("_survival_function", None),
                          ("_log_survival_function", unary_ops.exp),
                          ("_cdf", lambda c: 1. - c))

    def log_survival_function(self, value, name="log_survival_function"):
        return self._call(name, value, ("_log_survival_function", None),
                          ("_survival_function", unary_ops.log),
                          ("_cdf", lambda c: unary_ops.log1p(-c)))

    def quantile(self, value, name="quantile"):
        return self._call(name, value, ("_quantile", None))

    def entropy(self, name="entropy"):
        return self._call(name, None, ("_entropy", None))

    def mean(self, name="mean"):
        return self._call(name, None, ("_mean", None))

    def mode(self, name="mode"):
        return self._call(name, None, ("_mode", None))

    def variance(self, name="variance"):
        return self._call(name, None, ("_variance", None), ("_stddev", unary_ops.square))

    def stddev(self, name="stddev"):
        return self._call(name, None, ("_stddev", None), ("_variance", unary_ops.sqrt))

    def covariance(self, name="covariance"):
        return self._call(name, None, ("_covariance", None))

    def cross_entropy(self, other, name="cross_entropy"):
        """H(self, other) = KL(self || other) + H(self)."""
        with self._name_scope(name):
            return kullback_leibler.cross_entropy(self, other)

    def kl_divergence(self, other, name="kl_divergence"):
        with self._name_scope(name):
            return kullback_leibler.kl_divergence(self, other)

    # ----- helpers ----------------------------------------------------------------
    def _name_scope(self, name=None, values=None):
        return _NestedScope(self.name, name, list(values or []) + self._graph_parents)

    def _call(self, name, value, *hooks):
        """Runs the first hook the subclass defines (applying its conversion), inside
        this distribution's scope and one named `name`."""
        for attr, convert in hooks:
            fn = getattr(type(self), attr, None)
            if fn is None or fn is getattr(Distribution, attr, None):
                continue
            with self._name_scope(name, values=[] if value is None else [value]):
                if value is None:
                    out = getattr(self, attr)()
                else:
                    out = getattr(self, attr)(convert_to_tensor(
                        value, name="value", preferred_dtype=self.dtype))
                return out if convert is None else convert(out)
        raise NotImplementedError(f"{name} is not implemented: {type(self).__name__}")


class _NestedScope:
    """`with dist._name_scope("op")`: the distribution's scope, then one for the op."""

    __slots__ = ("_outer", "_inner", "_values", "_stack")

    def __init__(self, outer, inner, values):
        self._outer, self._inner, self._values, self._stack = outer, inner, values, []

    def __enter__(self):
        values = [v for v in self._values if hasattr(v, "graph")] or None
        outer = graph_lib.name_scope(self._outer, values=values)
        self._stack.append(outer)
        scope = outer.__enter__()
        if self._inner:
            inner = graph_lib.name_scope(self._inner)
            self._stack.append(inner)
            scope = inner.__enter__()
        return scope

    def __exit__(self, *exc):
        while self._stack:
            self._stack.pop().__exit__(*exc)
        return False
