"""`tf.keras.optimizers` for graph mode: SGD, Adam (and AMSGrad), RMSprop, Adagrad,
Adadelta, Adamax, Nadam with Keras's arguments and defaults (`learning_rate` or `lr`;
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
from tensorflux.keras.optimizer_checkpoints import CheckpointMixin
from tensorflux.nn import clip_ops
from tensorflux.ops import gather_ops, math_ops, state_ops, training_ops, unary_ops
from tensorflux.train import adadelta, adagrad, adam, momentum, rmsprop
from tensorflux.train.optimizer import Optimizer as TFOptimizer
from tensorflux.variables import variables as variables_lib

__all__ = ["Optimizer", "SGD", "Adam", "RMSprop", "Adagrad", "Adadelta", "Adamax", "Nadam",
           "get",
           "serialize", "deserialize", "TFOptimizer"]


class Optimizer(CheckpointMixin):
    """The Keras additions (module docstring), mixed into a tf.train optimizer class whose
    learning-rate attribute is named by `_lr_attr`; object-based checkpoints see it as
    TensorFlow's Keras optimizer (keras/optimizer_checkpoints.py)."""

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
    """var -= lr * g; with `momentum` > 0 Keras's rule, whose slot "momentum" is the
    velocity (what TensorFlow's Keras keeps, so checkpoints cross): velocity = momentum *
    velocity - lr * g; var += velocity (Nesterov: var += momentum * velocity - lr * g),
    TF's ResourceApplyKerasMomentum (the same arithmetic built from assignments for a
    reference variable)."""

    _lr_attr = "_learning_rate"
    _checkpoint_hyper_attrs = {"momentum": "momentum_value"}

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name="SGD",
                 **kwargs):
        self._keras_init(learning_rate, kwargs)
        if momentum < 0 or momentum > 1:
            raise ValueError(f"`momentum` must be between [0, 1]. Received: {momentum}")
        self.momentum_value, self.nesterov = float(momentum), nesterov
        _momentum_init(self, self._initial_lr, float(momentum), name, nesterov)

    def get_config(self) -> dict:
        return {**super().get_config(), "momentum": self.momentum_value,
                "nesterov": self.nesterov}

    def _checkpoint_slot_names(self) -> dict:
        """Keras keeps momentum slots only with momentum > 0."""
        return {"momentum": "momentum"} if self.momentum_value > 0 else {}

    def _keras_momentum_args(self, var):
        return (self.get_slot(var, "momentum"),
                self._hyper(self._learning_rate, var, "learning_rate"),
                self._hyper(self._momentum, var, "momentum"))

    def _resource_apply_dense(self, grad, var):
        if not self.momentum_value:
            return super()._resource_apply_dense(grad, var)
        accum, lr, mom = self._keras_momentum_args(var)
        if _is_ref(var):
            velocity = state_ops.assign(accum, accum * mom - grad * lr)
            step = velocity * mom - grad * lr if self.nesterov else velocity
            return state_ops.assign_add(var, step).op
        return training_ops.resource_apply_keras_momentum(
            var.handle, accum.handle, lr, grad, mom, use_locking=self._use_locking,
            use_nesterov=bool(self.nesterov))

    def _resource_apply_sparse(self, grad, var, indices):
        if not self.momentum_value:
            return super()._resource_apply_sparse(grad, var, indices)
        accum, lr, mom = self._keras_momentum_args(var)
        if _is_ref(var):
            rows = gather_ops.gather(accum, indices) * mom - grad * lr
            velocity = state_ops.resource_scatter("ResourceScatterUpdate", accum.handle,
                                                  indices, rows)
            with graph_lib.control_dependencies([velocity]):
                step = rows * mom - grad * lr if self.nesterov else rows
                return state_ops.resource_scatter("ResourceScatterAdd", var.handle,
                                                  indices, step)
        return training_ops.resource_sparse_apply_keras_momentum(
            var.handle, accum.handle, lr, grad, indices, mom,
            use_locking=self._use_locking, use_nesterov=bool(self.nesterov))


def _is_ref(var) -> bool:
    handle = getattr(var, "handle", None)
    return handle is not None and handle.dtype._is_ref_dtype


def _momentum_init(self, lr, mom, name, nesterov):
    momentum.MomentumOptimizer.__init__(self, lr, mom, name=name, use_nesterov=nesterov)


class Adam(Optimizer, adam.AdamOptimizer):
    """Adam with Keras's defaults (lr 0.001, epsilon 1e-7). With `amsgrad`, the update
    divides by the root of the largest second moment so far (slot "vhat"):
    vhat = max(vhat, v); var -= (m lr_t) / (sqrt(vhat) + epsilon)."""

    _checkpoint_hyper_attrs = {"beta_1": "_beta1", "beta_2": "_beta2"}

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, name="Adam", **kwargs):
        self._keras_init(learning_rate, kwargs)
        self.amsgrad = bool(amsgrad)
        adam.AdamOptimizer.__init__(self, self._initial_lr, beta_1, beta_2,
                                    epsilon if epsilon is not None else K.epsilon(), name=name)

    def _create_slots(self, var_list):
        super()._create_slots(var_list)
        if self.amsgrad:
            for v in var_list:
                self._zeros_slot(v, "vhat", self._name)

    def _resource_apply_dense(self, grad, var):
        if not self.amsgrad:
            return super()._resource_apply_dense(grad, var)
        b1p, b2p = (self._hyper(p.value(), var, n) for p, n in
                    zip(self._get_beta_accumulators(), ("beta1_power", "beta2_power"),
                        strict=True))
        h = self._hyper
        lr, eps = h(self._lr, var, "learning_rate"), h(self._epsilon, var, "epsilon")
        beta1, beta2 = h(self._beta1, var, "beta1"), h(self._beta2, var, "beta2")
        m, v, vhat = (self.get_slot(var, n) for n in ("m", "v", "vhat"))
        # TF's ResourceApplyAdamWithAmsgrad's arithmetic, as the Adam kernel's
        m_t = state_ops.assign(m, m + (grad - m) * (1.0 - beta1))
        v_t = state_ops.assign(v, v + (unary_ops.square(grad) - v) * (1.0 - beta2))
        vhat_t = state_ops.assign(vhat, math_ops.maximum(vhat, v_t))
        lr_t = lr * unary_ops.sqrt(1.0 - b2p) / (1.0 - b1p)
        return state_ops.assign_sub(var, (m_t * lr_t) / (unary_ops.sqrt(vhat_t) + eps))

    def _resource_apply_sparse(self, grad, var, indices):
        if not self.amsgrad:
            return super()._resource_apply_sparse(grad, var, indices)
        return self._resource_apply_dense(_dense(grad, var, indices), var)

    def get_config(self) -> dict:
        return {**super().get_config(), **_adam_config(self), "amsgrad": self.amsgrad}


def _adam_config(opt) -> dict:
    return {"beta_1": opt._beta1, "beta_2": opt._beta2, "epsilon": opt._epsilon}


class Adamax(Optimizer, adam.AdamOptimizer):
    """Adamax (Keras's defaults: lr 0.001, epsilon 1e-7): m = beta_1 m + (1 - beta_1) g;
    v = max(beta_2 v, |g|); var -= lr / (1 - beta_1^t) * m / (v + epsilon). Sparse
    gradients are applied as dense ones."""

    _checkpoint_hyper_attrs = {"beta_1": "_beta1", "beta_2": "_beta2"}

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 name="Adamax", **kwargs):
        self._keras_init(learning_rate, kwargs)
        adam.AdamOptimizer.__init__(self, self._initial_lr, beta_1, beta_2,
                                    epsilon if epsilon is not None else K.epsilon(), name=name)

    def _resource_apply_dense(self, grad, var):
        h = self._hyper
        b1p = h(self._get_beta_accumulators()[0].value(), var, "beta1_power")
        lr, eps = h(self._lr, var, "learning_rate"), h(self._epsilon, var, "epsilon")
        beta1, beta2 = h(self._beta1, var, "beta1"), h(self._beta2, var, "beta2")
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m_t = state_ops.assign(m, beta1 * m + (1.0 - beta1) * grad)
        v_t = state_ops.assign(v, math_ops.maximum(beta2 * v, unary_ops.abs(grad)))
        return state_ops.assign_sub(var, lr / (1.0 - b1p) * m_t / (v_t + eps))

    def _resource_apply_sparse(self, grad, var, indices):
        return self._resource_apply_dense(_dense(grad, var, indices), var)

    def get_config(self) -> dict:
        return {**super().get_config(), **_adam_config(self)}


class Nadam(Optimizer, adam.AdamOptimizer):
    """Nesterov Adam as Keras's (lr 0.001, epsilon 1e-7, `schedule_decay` 0.004): the
    momentum schedule mu_t = beta_1 (1 - 0.5 * 0.96^(0.004 t)) and its running product
    (a "momentum_cache" variable) correct m; v is corrected by 1 - beta_2^t. Keras's
    `decay` does not apply (its Nadam uses the argument for the schedule). Sparse
    gradients are applied as dense ones."""

    _checkpoint_hyper_attrs = {"beta_1": "_beta1", "beta_2": "_beta2"}
    _checkpoint_decay_attr = "schedule_decay"

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 name="Nadam", **kwargs):
        self.schedule_decay = float(kwargs.pop("schedule_decay", 0.004))
        kwargs.pop("decay", None)
        self._keras_init(learning_rate, kwargs)
        adam.AdamOptimizer.__init__(self, self._initial_lr, beta_1, beta_2,
                                    epsilon if epsilon is not None else K.epsilon(), name=name)

    def _create_slots(self, var_list):
        first = min(var_list, key=lambda v: v.name)
        self._non_slot_variable(1.0, "momentum_cache", first)
        for v in var_list:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name)

    def _prepare(self) -> None:
        cache = self._get_non_slot_variable("momentum_cache")
        step = math_ops.cast(self._iterations, dtypes.float32) + 1.0
        beta1 = float(self._beta1)

        def mu(t):
            return beta1 * (1.0 - 0.5 * math_ops.pow(0.96, self.schedule_decay * t))

        mu_t, mu_next = mu(step), mu(step + 1.0)
        schedule = state_ops.assign(cache, cache.value() * mu_t)
        self._nadam = {"mu_t": mu_t, "mu_next": mu_next, "schedule": schedule,
                       "schedule_next": schedule * mu_next,
                       "v_denominator": 1.0 - math_ops.pow(float(self._beta2), step)}

    def _resource_apply_dense(self, grad, var):
        c = {k: self._hyper(t, var, k) for k, t in self._nadam.items()}
        h = self._hyper
        lr, eps = h(self._lr, var, "learning_rate"), h(self._epsilon, var, "epsilon")
        beta1, beta2 = h(self._beta1, var, "beta1"), h(self._beta2, var, "beta2")
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        g_prime = grad / (1.0 - c["schedule"])
        m_t = state_ops.assign(m, beta1 * m + (1.0 - beta1) * grad)
        m_prime = m_t / (1.0 - c["schedule_next"])
        v_t = state_ops.assign(v, beta2 * v + (1.0 - beta2) * unary_ops.square(grad))
        v_prime = v_t / c["v_denominator"]
        m_bar = (1.0 - c["mu_t"]) * g_prime + c["mu_next"] * m_prime
        return state_ops.assign_sub(var, lr * m_bar / (unary_ops.sqrt(v_prime) + eps))

    def _resource_apply_sparse(self, grad, var, indices):
        return self._resource_apply_dense(_dense(grad, var, indices), var)

    def _finish(self, update_ops, name_scope):
        return builders.group(*update_ops, name=name_scope)

    def get_config(self) -> dict:
        config = super().get_config()
        config.pop("decay", None)
        return {**config, **_adam_config(self), "schedule_decay": self.schedule_decay}


def _dense(grad, var, indices):
    """IndexedSlices rows (already without repeats) as a dense gradient of `var`."""
    from tensorflux.ops import array_ops, sequence_ops

    return sequence_ops.unsorted_segment_sum(grad, indices, array_ops.shape(var)[0])


class RMSprop(Optimizer, rmsprop.RMSPropOptimizer):
    """RMSprop with Keras's defaults (lr 0.001, rho 0.9, epsilon 1e-7) and its zero-start
    accumulator."""

    _checkpoint_hyper_attrs = {"momentum": "_momentum", "rho": "_decay"}

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

    def get_config(self) -> dict:
        return {**super().get_config(), "rho": self._decay, "momentum": self._momentum,
                "epsilon": self._epsilon, "centered": self._centered}

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "rms", self._name)
            if self._centered:
                self._zeros_slot(v, "mg", self._name)
            self._zeros_slot(v, "momentum", self._name)

    def _checkpoint_slot_names(self) -> dict:
        """Keras keeps momentum slots only with momentum > 0."""
        names = super()._checkpoint_slot_names()
        if not self._momentum:
            names.pop("momentum", None)
        return names


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

    def get_config(self) -> dict:
        return {**super().get_config(),
                "initial_accumulator_value": self._initial_accumulator_value,
                "epsilon": self.epsilon}

    def _resource_apply_dense(self, grad, var):
        """Keras's update: acc += g^2; var -= lr g / (sqrt(acc) + epsilon)."""
        acc = self.get_slot(var, "accumulator")
        new_acc = state_ops.assign_add(acc, unary_ops.square(grad))
        lr = self._hyper(self._learning_rate, var, "learning_rate")
        eps = self._hyper(self.epsilon, var, "epsilon")
        return state_ops.assign_sub(var, lr * grad / (unary_ops.sqrt(new_acc) + eps))


class Adadelta(Optimizer, adadelta.AdadeltaOptimizer):
    """Adadelta with Keras's defaults (lr 0.001, rho 0.95, epsilon 1e-7)."""

    _checkpoint_hyper_attrs = {"rho": "_rho"}

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-7, name="Adadelta",
                 **kwargs):
        self._keras_init(learning_rate, kwargs)
        adadelta.AdadeltaOptimizer.__init__(self, self._initial_lr, rho=rho,
                                            epsilon=epsilon if epsilon is not None
                                            else K.epsilon(), name=name)

    def get_config(self) -> dict:
        return {**super().get_config(), "rho": self._rho, "epsilon": self._epsilon}

    def _checkpoint_slot_names(self) -> dict:
        """Keras's names for tf.train's accumulators."""
        return {"accum_grad": "accum", "accum_var": "accum_update"}


_BY_NAME = {"sgd": SGD, "adam": Adam, "rmsprop": RMSprop, "adagrad": Adagrad,
            "adadelta": Adadelta, "adamax": Adamax, "nadam": Nadam}


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
