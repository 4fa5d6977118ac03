"""How Keras optimizers appear in object-based checkpoints: as TensorFlow's Keras
optimizers do (tf.keras.optimizers in TF1 graph mode, OptimizerV2), so that checkpoints
cross between tensorflux and TensorFlow.

TensorFlow's optimizer tracks "iter" (the iteration count), its hyperparameters as
variables, sorted by name ("beta_1", "beta_2", "decay", "learning_rate", "momentum",
"rho"), Nadam also "momentum_cache"; its slots keep Keras's names ("m", "v", "vhat",
"momentum" only with momentum > 0, "rms", "mg", "accumulator", "accum_grad",
"accum_var").

tensorflux's Keras optimizers run on tf.train's (keras/optimizers.py): only the learning
rate is a variable, the other hyperparameters are Python numbers, saved as constants and
left as they are on restore; Adam's and Adamax's bias corrections use tf.train's beta
powers, which TensorFlow's Keras does not have: they are not saved, and restoring "iter"
sets them to what `iter` steps made of them (beta ** (iter + 1), multiplied out in float32
step by step, as the updates do).
"""

from __future__ import annotations

import numpy as np

from tensorflux.control_flow import builders
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.ops import array_ops, constant_op, math_ops, sequence_ops
from tensorflux.variables import trackable

__all__: list[str] = []


class _Constant:
    """A hyperparameter that is a Python number here and a variable in TensorFlow: saved
    as a float32 constant, nothing restored into it."""

    def __init__(self, full_name: str, value: float):
        self._full_name, self._value = full_name, float(value)

    def _checkpoint_children(self) -> list:
        return []

    def _checkpoint_attributes(self) -> list:
        return [trackable.Attribute(
            trackable.VARIABLE_VALUE, self._full_name, dtypes.float32, [],
            lambda: constant_op.constant(np.float32(self._value)), None, ("hyper", id(self)))]


class _Iterations:
    """The optimizer's iteration count as "iter"; restoring it also sets the beta powers
    the optimizer has made so far."""

    def __init__(self, optimizer):
        self._optimizer = optimizer

    def _checkpoint_children(self) -> list:
        return []

    def _checkpoint_attributes(self) -> list:
        var = self._optimizer._iterations
        powers = self._optimizer._checkpoint_powers()

        def restore(value):
            ops = [trackable.assign_restored(var, value)]
            for power, base in powers:
                ops.append(trackable.assign_restored(power, _power_after(value, base)))
            return builders.group(*ops)

        key = ("iter", id(var)) + tuple(id(p) for p, _ in powers)
        return [trackable.Attribute(trackable.VARIABLE_VALUE, var.op.name, dtypes.int64, [],
                                    var._as_graph_element, restore, key)]


def _power_after(steps, base: float):
    """base ** (steps + 1) as a float32 product of that many factors, left to right."""
    count = array_ops.reshape(math_ops.cast(steps, dtypes.int32) + 1, [1])
    factors = array_ops.fill(count, np.float32(base))
    return sequence_ops.cumprod(factors)[-1]


class CheckpointMixin:
    """The checkpoint side of keras/optimizers.py's `Optimizer` (see the module docstring).
    Classes name their hyperparameters in `_checkpoint_hyper_attrs` ({TensorFlow's name:
    the attribute holding the value})."""

    _checkpoint_hyper_attrs: dict = {}
    _checkpoint_decay_attr = "decay_value"

    def _checkpoint_object(self, name: str, make):
        objects = self.__dict__.setdefault("_checkpoint_objects", {})
        if name not in objects:
            objects[name] = make()
        return objects[name]

    def _checkpoint_children(self) -> list:
        lr = getattr(self, "_lr_var", None)
        if lr is None or lr.graph is not graph_lib.get_default_graph():
            return []
        out = [("iter", self._checkpoint_object("iter", lambda: _Iterations(self)))]
        hypers = {"learning_rate": lr, "decay": getattr(self, self._checkpoint_decay_attr)}
        hypers.update({k: getattr(self, a) for k, a in self._checkpoint_hyper_attrs.items()})
        for name, value in sorted(hypers.items()):
            if not trackable.is_variable(value):
                full = f"{self._name}/{name}"
                value = self._checkpoint_object(name, lambda f=full, v=value: _Constant(f, v))
            out.append((name, value))
        cache = self._get_non_slot_variable("momentum_cache", lr.graph)
        if cache is not None:
            out.append(("momentum_cache", cache))
        return out

    def _checkpoint_powers(self) -> list:
        """[(beta power variable, beta)] this optimizer has made in the default graph."""
        graph = graph_lib.get_default_graph()
        out = []
        for name, attr in (("beta1_power", "_beta1"), ("beta2_power", "_beta2")):
            power = self._get_non_slot_variable(name, graph)
            if power is not None:
                out.append((power, float(getattr(self, attr))))
        return out

    def _checkpoint_slot_names(self) -> dict:
        """{Keras's slot name: this optimizer's}."""
        return {n: n for n in self.get_slot_names()}
