"""`tf.keras.optimizers` for graph mode: SGD, Adam, RMSprop, Adagrad, Adadelta with
Keras's arguments and defaults (`learning_rate` or `lr`; Adam/RMSprop/Adagrad/Adadelta
epsilon 1e-7; `decay`, `clipnorm`, `clipvalue`), built on the tf.train optimizers.

What Keras adds over tf.train: the learning rate is a variable ("<name>/learning_rate",
so `K.set_value(model.optimizer.lr, x)` and LearningRateScheduler work); `decay` makes
it lr / (1 + decay * iterations); gradients are clipped per tensor; weight constraints
are applied after each update. RMSprop's accumulator starts at zero (Keras), not one
(tf.train), and RMSprop (without momentum) and Adagrad add epsilon outside the root, as
Keras does (sparse updates use tf.train's kernels). `get` accepts names and tf.train
optimizers.
"""

from __future__ import annotations

import numpy as np

from tensorflux.control_flow import builders
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.keras import backend as K
from tensorflux.nn import clip_ops
from tensorflux.ops import math_ops, state_ops, unary_ops
from tensorflux.train import adadelta, adagrad, adam, momentum, rmsprop
from tensorflux.train.optimizer import Optimizer as TFOptimizer
from tensorflux.variables import variables as variables_lib

__all__ = ["Optimizer", "SGD", "Adam", "RMSprop", "Adagrad", "Adadelta", "get",
           "serialize", "deserialize", "TFOptimizer"]


class Optimizer:
    """The Keras additions (module docstring), mixed into a tf.train optimizer class whose
    learning-rate attribute is named by `_lr_attr`."""

    _lr_attr = "_lr"

    def _keras_init(self, learning_rate, kwargs) -> dict:
        lr = kwargs.pop("lr", learning_rate)
        self._initial_lr = float(lr)
        self.decay_value = float(kwargs.pop("decay", 0.0))
        self.clipnorm = kwargs.pop("clipnorm", None)
        self.clipvalue = kwargs.pop("clipvalue", None)
        kwargs.pop("global_clipnorm", None)
        if self.decay_value < 0:
            raise ValueError(f"decay cannot be less than 0. Received: decay={self.decay_value}")
        if kwargs:
            raise TypeError(f"Unexpected keyword argument passed to optimizer: "
                            f"{sorted(kwargs)[0]}")
        self._lr_var = self._iterations = None
        return {}

    # ---- the learning rate and iterations --------------------------------------------
    def _keras_hypers(self):
        if self._lr_var is None or self._lr_var.graph is not graph_lib.get_default_graph():
            with graph_lib.control_dependencies(None), graph_lib.name_scope(self._name + "/"):
                self._lr_var = variables_lib.Variable(
                    np.float32(self._initial_lr), trainable=False, name="learning_rate")
                self._iterations = variables_lib.Variable(
                    np.int64(0), trainable=False, name="iterations", dtype=dtypes.int64)
                lr = self._lr_var
                if self.decay_value:
                    lr = lr * (1.0 / (1.0 + self.decay_value *
                                      math_ops.cast(self._iterations, dtypes.float32)))
                setattr(self, self._lr_attr, lr)
        return self._lr_var

    @property
    def lr(self):
        return self._keras_hypers()

    @lr.setter
    def lr(self, value):
        if self._lr_var is None:
            self._initial_lr = float(value)
        else:
            K.set_value(self._lr_var, value)

    learning_rate = lr

    @property
    def iterations(self):
        self._keras_hypers()
        return self._iterations

    # ---- the update -------------------------------------------------------------------
    def compute_gradients(self, loss, var_list=None, **kwargs):
        self._keras_hypers()
        pairs = TFOptimizer.compute_gradients(self, loss, var_list=var_list, **kwargs)
        if self.clipnorm is not None:
            pairs = [(clip_ops.clip_by_norm(g, self.clipnorm) if g is not None else g, v)
                     for g, v in pairs]
        if self.clipvalue is not None:
            pairs = [(clip_ops.clip_by_value(g, -self.clipvalue, self.clipvalue)
                      if g is not None else g, v) for g, v in pairs]
        return pairs

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        self._keras_hypers()
        grads_and_vars = list(grads_and_vars)
        update = TFOptimizer.apply_gradients(self, grads_and_vars, global_step, name)
        with graph_lib.control_dependencies([update]):
            after = [state_ops.assign_add(self._iterations, np.int64(1))]
            for g, v in grads_and_vars:
                constraint = getattr(v, "constraint", None)
                if g is not None and constraint is not None:
                    after.append(state_ops.assign(v, constraint(v)))
        return builders.group(update, *after)

    def get_updates(self, loss, params):
        """Keras 2's interface: the list of update ops minimizing `loss` over `params`."""
        return [self.minimize(loss, var_list=params)]

    def get_config(self) -> dict:
        config = {"name": self._name, "learning_rate": self._initial_lr,
                  "decay": self.decay_value}
        for key in ("clipnorm", "clipvalue"):
            if getattr(self, key) is not None:
                config[key] = getattr(self, key)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config.pop("name", None)
        return cls(**config)


class SGD(Optimizer, momentum.MomentumOptimizer):
    """var -= lr * g, with momentum (and Nesterov's variant) when `momentum` > 0."""

    _lr_attr = "_learning_rate"

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name="SGD",
                 **kwargs):
        self._keras_init(learning_rate, kwargs)
        if momentum < 0 or momentum > 1:
            raise ValueError(f"`momentum` must be between [0, 1]. Received: {momentum}")
        self.momentum_value, self.nesterov = float(momentum), nesterov
        _momentum_init(self, self._initial_lr, float(momentum), name, nesterov)


def _momentum_init(self, lr, mom, name, nesterov):
    momentum.MomentumOptimizer.__init__(self, lr, mom, name=name, use_nesterov=nesterov)


class Adam(Optimizer, adam.AdamOptimizer):
    """Adam with Keras's defaults (lr 0.001, epsilon 1e-7); `amsgrad` is not supported."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, name="Adam", **kwargs):
        if amsgrad:
            raise ValueError("tensorflux.keras: Adam(amsgrad=True) is not supported")
        self._keras_init(learning_rate, kwargs)
        adam.AdamOptimizer.__init__(self, self._initial_lr, beta_1, beta_2,
                                    epsilon if epsilon is not None else K.epsilon(), name=name)


class RMSprop(Optimizer, rmsprop.RMSPropOptimizer):
    """RMSprop with Keras's defaults (lr 0.001, rho 0.9, epsilon 1e-7) and its zero-start
    accumulator."""

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7,
                 centered=False, name="RMSprop", **kwargs):
        self._keras_init(learning_rate, kwargs)
        rmsprop.RMSPropOptimizer.__init__(self, self._initial_lr, decay=rho, momentum=momentum,
                                          epsilon=epsilon if epsilon is not None
                                          else K.epsilon(), centered=centered, name=name)

    def _resource_apply_dense(self, grad, var):
        """Without momentum or centering, Keras's update: rms = rho rms + (1 - rho) g^2;
        var -= lr g / (sqrt(rms) + epsilon) (tf.train's puts epsilon inside the root)."""
        if self._centered or self._momentum:
            return super()._resource_apply_dense(grad, var)
        rms = self.get_slot(var, "rms")
        rho = self._hyper(self._decay, var, "rho")
        new_rms = state_ops.assign(rms, rho * rms + (1.0 - rho) * unary_ops.square(grad))
        lr = self._hyper(self._lr, var, "learning_rate")
        eps = self._hyper(self._epsilon, var, "epsilon")
        return state_ops.assign_sub(var, lr * grad / (unary_ops.sqrt(new_rms) + eps))

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "rms", self._name)
            if self._centered:
                self._zeros_slot(v, "mg", self._name)
            self._zeros_slot(v, "momentum", self._name)


class Adagrad(Optimizer, adagrad.AdagradOptimizer):
    """Adagrad with Keras's defaults (lr 0.001, initial accumulator 0.1)."""

    _lr_attr = "_learning_rate"

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7,
                 name="Adagrad", **kwargs):
        self._keras_init(learning_rate, kwargs)
        self.epsilon = epsilon if epsilon is not None else K.epsilon()
        adagrad.AdagradOptimizer.__init__(self, self._initial_lr,
                                          initial_accumulator_value=initial_accumulator_value,
                                          name=name)

    def _resource_apply_dense(self, grad, var):
        """Keras's update: acc += g^2; var -= lr g / (sqrt(acc) + epsilon)."""
        acc = self.get_slot(var, "accumulator")
        new_acc = state_ops.assign_add(acc, unary_ops.square(grad))
        lr = self._hyper(self._learning_rate, var, "learning_rate")
        eps = self._hyper(self.epsilon, var, "epsilon")
        return state_ops.assign_sub(var, lr * grad / (unary_ops.sqrt(new_acc) + eps))


class Adadelta(Optimizer, adadelta.AdadeltaOptimizer):
    """Adadelta with Keras's defaults (lr 0.001, rho 0.95, epsilon 1e-7)."""

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-7, name="Adadelta",
                 **kwargs):
        self._keras_init(learning_rate, kwargs)
        adadelta.AdadeltaOptimizer.__init__(self, self._initial_lr, rho=rho,
                                            epsilon=epsilon if epsilon is not None
                                            else K.epsilon(), name=name)


_BY_NAME = {"sgd": SGD, "adam": Adam, "rmsprop": RMSprop, "adagrad": Adagrad,
            "adadelta": Adadelta}


def get(identifier):
    """An optimizer from a name ('adam', 'sgd', ...), a config dict, or an optimizer
    (Keras's or tf.train's, returned as is).

    Raises:
      ValueError: an unknown name or an identifier of another kind."""
    if isinstance(identifier, TFOptimizer):
        return identifier
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier.lower())
        if cls is None:
            raise ValueError(f"Unknown optimizer: {identifier}. Please ensure this object is "
                             "passed to the `custom_objects` argument.")
        return cls()
    if isinstance(identifier, dict):
        return deserialize(identifier)
    raise ValueError(f"Could not interpret optimizer identifier: {identifier}")


def serialize(optimizer) -> dict:
    return {"class_name": type(optimizer).__name__, "config": optimizer.get_config()}


def deserialize(config, custom_objects=None):
    name = config["class_name"]
    cls = (custom_objects or {}).get(name) or _BY_NAME.get(name.lower())
    if cls is None:
        raise ValueError(f"Unknown optimizer: {name}")
    return cls.from_config(config.get("config", {}))
