"""GPU kernels of the fused optimizer updates (ops/training_ops.py), for resource
variables on a GPU: the CPU kernels' rules, in place on device arrays.

With CuPy, Adam, Momentum and plain gradient descent are one fused elementwise kernel each
(`cupy.ElementwiseKernel`: one pass over var, slots and grad); the other rules (and every
rule on the simulated GPUs) are written with the array module's in-place operations.
The hyperparameters (learning rate, betas, ...) are 0-d tensors: a host one becomes a
typed scalar argument, a device one (beta1_power lives in a variable on the GPU) is read
by the fused kernel where it is, without a copy to the host.
"""

from __future__ import annotations

import contextlib

import numpy as np

from tensorflux.framework import errors, op_registry
from tensorflux.kernels import registry
from tensorflux.kernels.cpu.state_ops import _existing, as_handle
from tensorflux.kernels.gpu import backend
from tensorflux.kernels.gpu._common import FLOATS, dev
from tensorflux.kernels.gpu.state_ops import own_device_value

_FUSED: dict = {}


def _fused(name: str, dtype):
    """The cupy.ElementwiseKernel of rule `name` (None without CuPy, or for half floats,
    which take the array-module path)."""
    b = backend.backend()
    if b.cupy is None or dtype not in (np.float32, np.float64):
        return None
    k = _FUSED.get(name)
    if k is None:
        ek = b.cupy.ElementwiseKernel
        if name == "Adam":
            k = ek("T g, T lr, T b1, T b2, T eps, T b1p, T b2p", "T w, T m, T v",
                   "T lr_t = lr * sqrt(T(1) - b2p) / (T(1) - b1p);"
                   "m += (g - m) * (T(1) - b1); v += (g * g - v) * (T(1) - b2);"
                   "w -= (m * lr_t) / (sqrt(v) + eps);", "tfx_adam")
        elif name == "Momentum":
            k = ek("T g, T lr, T mom", "T w, T a", "a = mom * a + g; w -= lr * a;",
                   "tfx_momentum")
        elif name == "GradientDescent":
            k = ek("T g, T lr", "T w", "w -= lr * g;", "tfx_sgd")
        _FUSED[name] = k
    return k


def _as_param(v, dtype):
    """A hyperparameter: device 0-d arrays as they are, host values as typed scalars."""
    return v.astype(dtype, copy=False) if backend.is_device_array(v) else \
        dtype.type(backend.to_host(v))


def _gradient_descent(w, *, alpha, delta):
    k = _fused("GradientDescent", w.dtype)
    if k is not None:
        k(delta, _as_param(alpha, w.dtype), w)
    else:
        w -= dev(alpha) * delta


def _momentum(w, accum, *, lr, grad, momentum, use_nesterov=False):
    k = _fused("Momentum", w.dtype)
    if k is not None and not use_nesterov:
        k(grad, _as_param(lr, w.dtype), _as_param(momentum, w.dtype), w, accum)
        return
    lr, momentum = dev(lr), dev(momentum)
    accum *= momentum
    accum += grad
    if use_nesterov:  # TF's order, as the CPU rule
        w -= grad * lr + accum * momentum * lr
    else:
        w -= lr * accum


def _keras_momentum(w, accum, *, lr, grad, momentum, use_nesterov=False):
    lr, momentum = dev(lr), dev(momentum)
    accum *= momentum  # TF's order, as the CPU rule
    accum -= grad * lr
    if use_nesterov:
        w += accum * momentum - grad * lr
    else:
        w += accum


def _adam(w, m, v, *, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad,
          use_nesterov=False):
    k = _fused("Adam", w.dtype)
    if k is not None and not use_nesterov:
        p = [_as_param(x, w.dtype) for x in (lr, beta1, beta2, epsilon, beta1_power,
                                              beta2_power)]
        k(grad, *p, w, m, v)
        return
    xp = backend.xp()
    beta1_power, beta2_power, lr, beta1, beta2, epsilon = (
        dev(x) for x in (beta1_power, beta2_power, lr, beta1, beta2, epsilon))
    lr_t = lr * xp.sqrt(1 - beta2_power) / (1 - beta1_power)
    m += (grad - m) * (1 - beta1)  # TF's order, as the CPU rule
    v += (grad * grad - v) * (1 - beta2)
    num = grad * (1 - beta1) + beta1 * m if use_nesterov else m
    w -= (num * lr_t) / (xp.sqrt(v) + epsilon)


def _rms_prop(w, ms, mom, *, lr, rho, momentum, epsilon, grad):
    xp = backend.xp()
    lr, rho, momentum, epsilon = (dev(x) for x in (lr, rho, momentum, epsilon))
    ms += (grad * grad - ms) * (1 - rho)  # TF's order, as the CPU rule
    mom *= momentum
    mom += grad * lr / xp.sqrt(ms + epsilon)
    w -= mom


def _adagrad(w, accum, *, lr, grad, update_slots=True):
    xp = backend.xp()
    if update_slots:
        accum += grad * grad
    w -= dev(lr) * grad / xp.sqrt(accum)


_RULES = {
    "GradientDescent": ((), _gradient_descent),
    "Momentum": (("accum",), _momentum),
    "KerasMomentum": (("accum",), _keras_momentum),
    "Adagrad": (("accum",), _adagrad),
    "RMSProp": (("ms", "mom"), _rms_prop),
    "Adam": (("m", "v"), _adam),
}


@contextlib.contextmanager
def _locked(vars_, use_locking: bool):
    ordered = sorted(set(vars_), key=id) if use_locking else []
    for v in ordered:
        v.lock.acquire()
    try:
        yield
    finally:
        for v in reversed(ordered):
            v.lock.release()


def _dense_kernel(op_type: str, slot_names, update):
    @registry.kernel_factory(op_type, device="GPU", type_constraints={"T": FLOATS},
                             expensive=True)
    def factory(node):
        dtype = node.attrs["T"]
        lock = node.attrs["use_locking"]
        nslots = len(slot_names)
        arg_names = [a.name for a in op_registry.get(op_type).inputs][1 + nslots:]
        flags = {k: node.attrs[k] for k in ("use_nesterov", "update_slots") if k in node.attrs}

        def compute(ctx, var_h, *rest):
            handles, args = rest[:nslots], rest[nslots:]
            hyper = dict(zip(arg_names, args, strict=True))
            key = "grad" if "grad" in hyper else "delta"
            hyper[key] = backend.to_device(hyper[key])
            var = _existing(ctx, as_handle(var_h), dtype, "update")
            slot_vars = [_existing(ctx, as_handle(h), dtype, "update") for h in handles]
            with _locked([var, *slot_vars], lock):
                for v, h in zip([var, *slot_vars], [var_h, *handles], strict=True):
                    if v.value is None:
                        raise errors.FailedPreconditionError(
                            None, None, f"Attempting to use uninitialized value "
                            f"{as_handle(h).name}")
                w = own_device_value(var)
                if w.shape != hyper[key].shape:
                    raise errors.InvalidArgumentError(
                        None, None, f"var and grad do not have the same shape: "
                        f"{list(w.shape)} vs {list(hyper[key].shape)}")
                slots = [own_device_value(sv) for sv in slot_vars]
                update(w, *slots, **hyper, **flags)

        return compute

    return factory


for _name, (_slots, _rule) in _RULES.items():
    _dense_kernel(f"ResourceApply{_name}", _slots, _rule)
