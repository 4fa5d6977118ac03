"""CPU kernels of the fused optimizer updates (tensorflux/ops/training_ops.py).

Each kernel looks up its variable and slot variables, takes arrays it may write (the stored
array itself when nothing else holds it, else a fresh copy that replaces it: copy-on-write,
so earlier reads stay snapshots), and applies the update in place with as few temporaries as
NumPy allows. With `use_locking` every involved variable's lock is held for the whole update
(in a fixed order); without it, concurrent steps race as TensorFlow's do (Hogwild).

Dense updates of big variables (at least `intra_op.MIN_ELEMENTS` elements, every array
contiguous) run over chunks of the flattened arrays on the intra-op threads: every rule is
elementwise, so each chunk is an independent update (Adam on a 784x512 variable: 0.45 ms on
one core).

The graph optimizer fuses a step's dense Adam, Momentum and gradient-descent updates of
small variables into one `_Fused<op>` node per device (runtime/graph_optimizer.py
`fuse_optimizer_updates`); its kernel checks and takes each update's arrays as the single
kernel does and applies them all in one native pass (`native.updates_many`).

Sparse kernels update only the rows in `indices` (assumed unique: the optimizer sums
duplicates first); out-of-range indices are an InvalidArgumentError.
"""

from __future__ import annotations

import contextlib
import functools
import operator

import numpy as np

from tensorflux.framework import errors, op_registry
from tensorflux.kernels import buffers, intra_op
from tensorflux.kernels.cpu import native
from tensorflux.kernels.cpu.state_ops import FoundVars, _existing, as_handle, own_value
from tensorflux.kernels.registry import kernel_factory


def _own(var, name: str):
    """An array of `var`'s value that this update may write into (copy-on-write)."""
    if var.value is None:
        raise errors.FailedPreconditionError(
            None, None, f"Attempting to use uninitialized value {name}")
    return own_value(var)


class _Locks:
    """Holds the locks of `vars_` (each once, in a fixed order) while in use."""

    __slots__ = ("ordered",)

    def __init__(self, vars_):
        self.ordered = sorted(set(vars_), key=id)

    def acquire(self) -> None:
        taken = []
        try:
            for v in self.ordered:
                v.lock.acquire()
                taken.append(v)
        except BaseException:
            for v in reversed(taken):
                v.lock.release()
            raise

    def release(self) -> None:
        for v in reversed(self.ordered):
            v.lock.release()

    def __enter__(self):
        self.acquire()

    def __exit__(self, *exc):
        self.release()


_UNLOCKED = contextlib.nullcontext()


def _locked(vars_, use_locking: bool):
    """The variables' locks held for an update with `use_locking`; else nothing (a
    generator-based context manager cost more than a small update's arithmetic)."""
    return _Locks(vars_) if use_locking else _UNLOCKED


def _check_shape(arr, grad, what: str) -> None:
    if arr.shape != np.shape(grad):
        raise errors.InvalidArgumentError(
            None, None, f"{what} and grad do not have the same shape: {list(arr.shape)} vs "
            f"{list(np.shape(grad))}")


def _dense_kernel(op_type: str, slot_names: tuple[str, ...], update):
    """Registers a dense kernel: `update(var_array, slot_arrays, **hyper, grad)` in place."""

    @kernel_factory(op_type, expensive=True)
    def factory(node):
        dtype = node.attrs["T"]
        lock = node.attrs["use_locking"]
        np_dtype = dtype.numpy_dtype
        nslots = len(slot_names)
        arg_names = [a.name for a in _opdef(op_type).inputs][1 + nslots:]
        flags = {k: node.attrs[k] for k in ("use_nesterov", "update_slots",
                                            "multiply_linear_by_lr") if k in node.attrs}

        found = FoundVars(lambda ctx, h: _existing(ctx, h, dtype, "update"))
        # A rule with a native many-update (_MANY) takes it for one variable too: the
        # bias-corrected rate and the checks in C, no NumPy scalars (the same values bit
        # for bit). Right after a big gradient product the interpreter runs cold, and the
        # Python path's ~30 calls cost ~70 us a big Adam update in the MLP step.
        rule, order = _MANY.get(update, (None, ()))
        # the rule's inputs (gradient, then scalars) from the kernel's, as one C call (a
        # scalar with dimensions makes updates_many return False: the path below reports it)
        pick = operator.itemgetter(*[arg_names.index(k) for k in order]) if order else None
        nesterov = flags.get("use_nesterov", False)

        def compute(ctx, var_h, *rest):
            handles, args = rest[:nslots], rest[nslots:]
            var, *slot_vars = found.look_up(ctx, (var_h, *handles))
            # the locks taken by hand: `with` over a no-op context manager is two Python
            # frames, and this runs right after the gradient's product
            locks = _Locks([var, *slot_vars]) if lock else None
            if locks is not None:
                locks.acquire()
            try:
                if rule is not None:
                    picked = pick(args)
                    w, slots = _owned(var, slot_vars, var_h, handles, {"grad": picked[0]})
                    if native.updates_many(rule, [(w, *slots, *picked)], nesterov,
                                           intra_op.workers(ctx)):
                        return
                hyper = _hyper(np_dtype, dict(zip(arg_names, args, strict=True)))
                if rule is None:
                    w, slots = _owned(var, slot_vars, var_h, handles, hyper)
                _apply_dense(ctx, update, w, slots, hyper, flags)
            finally:
                if locks is not None:
                    locks.release()

        return compute

    return factory


def _hyper(np_dtype, named: dict) -> dict:
    """A dense update's inputs after var and its slots, by name, in var's type (the
    gradient as it came)."""
    return {k: (np.asarray(v, np_dtype) if k != "grad" else v) for k, v in named.items()}


def _owned(var, slot_vars, var_h, handles, hyper):
    """(var's array, the slots' arrays) an update may write (under the locks it takes),
    after checking the gradient's shape."""
    w, *slots = _own_all([var, *slot_vars], (var_h, *handles))
    grad = hyper["grad"] if "grad" in hyper else hyper["delta"]
    if w.shape != getattr(grad, "shape", None):
        _check_shape(w, grad, "var")
    return w, slots


def _own_all(vars_: list, handles, updated: int = 1) -> list:
    """`_own` of each variable (`handles` name them for the error), in one native call
    when the extension is built; the first `updated` are the updates' variables (not
    slots), whose storage the transport may move first (buffers.relocate_storage)."""
    if buffers.storage_relocator is not None:
        buffers.relocate_storage(vars_[:updated])
    arrays = native.own_many(vars_)
    if arrays is None:
        return [_own(v, as_handle(h).name) for v, h in zip(vars_, handles, strict=True)]
    if type(arrays) is int:  # that variable has no value
        _own(vars_[arrays], as_handle(handles[arrays]).name)  # raises
    return arrays


def _fused_dense_kernel(op_type: str, slot_names: tuple[str, ...], update):
    """Registers the kernel of `_Fused<op_type>` (ops/training_ops.py: N dense updates of
    one rule as one node, made by the graph optimizer's `fuse_optimizer_updates`): each
    update checked and its arrays taken as the single kernel does, then all of them in one
    native pass over the pool (`native.updates_many`), else one after another. A variable
    named by two of its updates gets them one after another, each on the array the other
    left."""

    @kernel_factory("_Fused" + op_type, expensive=True)
    def factory(node):
        dtype = node.attrs["T"]
        lock = node.attrs["use_locking"]
        count = node.attrs["N"]
        np_dtype = dtype.numpy_dtype
        nslots = len(slot_names)
        arg_names = [a.name for a in _opdef(op_type).inputs][1 + nslots:]
        flags = {k: node.attrs[k] for k in ("use_nesterov",) if k in node.attrs}
        rule, order = _MANY[update]
        nesterov = flags.get("use_nesterov", False)

        found = FoundVars(lambda ctx, h: _existing(ctx, h, dtype, "update"))
        handle_count = (1 + nslots) * count
        # the inputs (by index in arg_names) the rule takes after the arrays, in its order
        picks = [arg_names.index(k) for k in order]
        # each input's `count` values among the node's inputs, and each array's (var, then
        # each slot) among the arrays taken (map over slices: no comprehension frames)
        arg_slices = [slice(handle_count + j * count, handle_count + (j + 1) * count)
                      for j in range(len(arg_names))]
        array_slices = [slice(k * count, (k + 1) * count) for k in range(1 + nslots)]

        def compute(ctx, *inputs):
            handles = inputs[:handle_count]  # var handles, then each slot's, by update
            *_, every, twice = found.entry_for(ctx, handles)
            args = list(map(inputs.__getitem__, arg_slices))
            locks = _Locks(every) if lock else None  # by hand, as in _dense_kernel
            if locks is not None:
                locks.acquire()
            try:
                if twice:  # a variable named by two updates: one after another
                    for i in range(count):
                        hs = handles[i::count]
                        named = {k: a[i] for k, a in zip(arg_names, args, strict=True)}
                        hyper = _hyper(np_dtype, named)
                        w, slots = _owned(every[i], every[i + count::count], hs[0], hs[1:],
                                          hyper)
                        _apply_dense(ctx, update, w, slots, hyper, flags)
                    return
                arrays = _own_all(every, handles, count)
                for w, grad in zip(arrays[:count], args[picks[0]], strict=True):
                    if w.shape != getattr(grad, "shape", None):
                        _check_shape(w, grad, "var")
                # one item per update: its arrays (var, then each slot), then its scalars
                # (one with dimensions makes updates_many return False: the loop below
                # reports it)
                items = list(zip(*map(arrays.__getitem__, array_slices),
                                 *map(args.__getitem__, picks), strict=True))
                if native.updates_many(rule, items, nesterov, intra_op.workers(ctx)):
                    return
                for i in range(count):
                    named = {k: a[i] for k, a in zip(arg_names, args, strict=True)}
                    _apply_dense(ctx, update, arrays[i], arrays[i + count::count],
                                 _hyper(np_dtype, named), flags)
            finally:
                if locks is not None:
                    locks.release()

        return compute

    return factory


def _apply_dense(ctx, update, w, slots, hyper, flags) -> None:
    """`update(w, *slots, **hyper, **flags)`, over flat chunks in parallel when big (or
    through the rule's fused native loop when it has one and the arrays qualify)."""
    parts = intra_op.workers(ctx)
    fused = _NATIVE.get(update)
    if fused is not None and fused(w, *slots, **hyper, **flags, parts=parts):
        return
    arrays = [w, *slots, *(v for v in hyper.values() if np.ndim(v))]
    if parts <= 1 or w.size < intra_op.MIN_ELEMENTS or \
            not all(type(a) is np.ndarray and a.shape == w.shape and a.flags.c_contiguous
                    for a in arrays):
        update(w, *slots, **hyper, **flags)
        return
    flat_w, flat_slots = w.reshape(-1), [s.reshape(-1) for s in slots]
    flat = {k: (v.reshape(-1) if np.ndim(v) else v) for k, v in hyper.items()}

    def work(lo, hi):
        update(flat_w[lo:hi], *(s[lo:hi] for s in flat_slots),
               **{k: (v[lo:hi] if np.ndim(v) else v) for k, v in flat.items()}, **flags)

    intra_op.parallel_rows(work, w.size, w.size, parts)


def _sparse_kernel(op_type: str, slot_names: tuple[str, ...], update):
    """Registers a sparse kernel: rows `indices` of var and slots get `update` with grad rows."""

    @kernel_factory(op_type, expensive=True)
    def factory(node):
        dtype = node.attrs["T"]
        lock = node.attrs["use_locking"]
        np_dtype = dtype.numpy_dtype
        nslots = len(slot_names)
        arg_names = [a.name for a in _opdef(op_type).inputs][1 + nslots:]
        flags = {k: node.attrs[k] for k in ("use_nesterov", "update_slots",
                                            "multiply_linear_by_lr") if k in node.attrs}

        def compute(ctx, var_h, *rest):
            handles, args = rest[:nslots], rest[nslots:]
            hyper = {k: (v if k in ("grad", "indices") else np.asarray(v, np_dtype))
                     for k, v in zip(arg_names, args, strict=True)}
            indices = np.asarray(hyper.pop("indices")).astype(np.int64, copy=False)
            grad = hyper.pop("grad")
            var = _existing(ctx, as_handle(var_h), dtype, "update")
            slot_vars = [_existing(ctx, as_handle(h), dtype, "update") for h in handles]
            with _locked([var, *slot_vars], lock):
                w = _own(var, as_handle(var_h).name)
                n = w.shape[0] if w.ndim else 0
                bad = (indices < 0) | (indices >= n)
                if bad.any():
                    k = int(np.argmax(bad))
                    raise errors.InvalidArgumentError(
                        None, None, f"Index {int(indices[k])} at offset {k} in indices is out "
                        f"of range [0, {n})")
                if np.shape(grad)[1:] != w.shape[1:] or np.shape(grad)[0] != len(indices):
                    raise errors.InvalidArgumentError(
                        None, None, f"var and grad do not have the same shape (for the rows "
                        f"in indices): {list(w.shape)} vs {list(np.shape(grad))}")
                slots = [_own(sv, as_handle(h).name) for sv, h in zip(slot_vars, handles,
                                                                      strict=True)]
                rows = [w[indices]] + [s[indices] for s in slots]
                update(*rows, grad=np.asarray(grad, np_dtype), **hyper, **flags)
                w[indices] = rows[0]
                for s, r in zip(slots, rows[1:], strict=True):
                    s[indices] = r

        return compute

    return factory


def _opdef(op_type):
    return op_registry.get(op_type)


# ---- the update rules (in place on the arrays given) ---------------------------------------


def _gradient_descent(var, *, alpha, delta):
    var -= alpha * delta


def _momentum(var, accum, *, lr, grad, momentum, use_nesterov=False, sparse=False):
    accum *= momentum
    accum += grad
    if use_nesterov and sparse:  # TF's sparse kernel: lr grad + (lr momentum) accum
        var -= lr * grad + lr * momentum * accum
    elif use_nesterov:  # TF's dense kernel: grad lr + (accum momentum) lr
        var -= grad * lr + accum * momentum * lr
    else:
        var -= lr * accum


def _keras_momentum(var, accum, *, lr, grad, momentum, use_nesterov=False):
    # TF's kernel (dense and sparse alike): accum = accum momentum - grad lr; var += accum
    # (Nesterov: var += accum momentum - grad lr)
    accum *= momentum
    accum -= grad * lr
    if use_nesterov:
        var += accum * momentum - grad * lr
    else:
        var += accum


def _adagrad(var, accum, *, lr, grad, update_slots=True):
    if update_slots:
        accum += grad * grad
    var -= lr * grad / np.sqrt(accum)


def _adadelta(var, accum, accum_update, *, lr, rho, epsilon, grad):
    accum *= rho
    accum += (1 - rho) * grad * grad
    update = np.sqrt(accum_update + epsilon) / np.sqrt(accum + epsilon) * grad
    accum_update *= rho
    accum_update += (1 - rho) * update * update
    var -= lr * update


def _rms_prop(var, ms, mom, *, lr, rho, momentum, epsilon, grad):
    # TF's arithmetic, step for step (ms += (g^2 - ms)(1 - rho), not rho ms + (1 - rho) g^2:
    # equal in exact arithmetic, an ulp apart in float32, enough for a DQN's argmax to
    # take another action thousands of steps later).
    ms += (np.square(grad) - ms) * (1 - rho)
    mom *= momentum
    mom += grad * lr / np.sqrt(ms + epsilon)
    var -= mom


def _centered_rms_prop(var, mg, ms, mom, *, lr, rho, momentum, epsilon, grad):
    # TF's float32 arithmetic, step for step (as _rms_prop)
    ms += (np.square(grad) - ms) * (1 - rho)
    mg += (grad - mg) * (1 - rho)
    mom *= momentum
    mom += grad * lr / np.sqrt((ms - np.square(mg)) + epsilon)
    var -= mom


def _adam(var, m, v, *, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad,
          use_nesterov=False):
    # TF's arithmetic, step for step: m += (g - m)(1 - b1); v += (g^2 - v)(1 - b2);
    # var -= (m lr_t) / (sqrt(v) + eps), Nesterov's numerator g (1 - b1) + b1 m (the
    # same numbers as b1 m + (1 - b1) g in exact arithmetic, not in float32).
    lr_t = lr * np.sqrt(1 - beta2_power) / (1 - beta1_power)
    tmp = np.asarray(grad - m)  # an array even for 0-d variables (ufuncs give scalars)
    tmp *= 1 - beta1
    m += tmp
    np.square(grad, out=tmp)
    tmp -= v
    tmp *= 1 - beta2
    v += tmp
    num = (grad * (1 - beta1) + beta1 * m) * lr_t if use_nesterov else m * lr_t
    np.sqrt(v, out=tmp)
    tmp += epsilon
    var -= num / tmp


def _adam_native(var, m, v, *, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad,
                 use_nesterov=False, parts=1) -> bool:
    """`_adam` in one native pass (the same operations in the same order and type); False
    when the arrays do not qualify."""
    lr_t = lr * np.sqrt(1 - beta2_power) / (1 - beta1_power)
    return native.adam(var, m, v, grad, lr_t, beta1, beta2, epsilon, use_nesterov, parts)


def _momentum_native(var, accum, *, lr, grad, momentum, use_nesterov=False, parts=1) -> bool:
    """`_momentum` in one native pass; False when the arrays do not qualify."""
    return native.momentum(var, accum, grad, lr, momentum, use_nesterov, parts)


def _gradient_descent_native(var, *, alpha, delta, parts=1) -> bool:
    """`_gradient_descent` in one native pass (no temporary); False when the arrays do not
    qualify."""
    return native.gradient_descent(var, delta, alpha, parts)


def _ftrl(var, accum, linear, *, grad, lr, l1, l2, lr_power, l2_shrinkage=None,
          multiply_linear_by_lr=False):
    shrunk = grad if l2_shrinkage is None else grad + 2 * l2_shrinkage * var
    new_accum = accum + grad * grad
    if lr_power == -0.5:
        sigma = (np.sqrt(new_accum) - np.sqrt(accum)) / lr
        quadratic = np.sqrt(new_accum) / lr + 2 * l2
    else:
        sigma = (new_accum ** -lr_power - accum ** -lr_power) / lr
        quadratic = new_accum ** -lr_power / lr + 2 * l2
    linear += shrunk - sigma * var
    clipped = np.clip(linear, -l1, l1)
    var[...] = np.where(np.abs(linear) > l1, (clipped - linear) / quadratic, 0)
    accum[...] = new_accum


def _ftrl_v2(var, accum, linear, *, grad, lr, l1, l2, l2_shrinkage, lr_power,
             multiply_linear_by_lr=False):
    _ftrl(var, accum, linear, grad=grad, lr=lr, l1=l1, l2=l2, lr_power=lr_power,
          l2_shrinkage=l2_shrinkage)


def _shrink(prox, threshold, scale, l1):
    """TF's proximal step: `prox / scale` shrunk toward 0 by `threshold` when l1 > 0."""
    if l1 > 0:
        return np.sign(prox) * np.maximum(np.abs(prox) - threshold, 0) / scale
    return prox / scale


def _proximal_gradient_descent(var, *, alpha, l1, l2, delta=None, grad=None):
    step = delta if grad is None else grad
    var[...] = _shrink(var - alpha * step, alpha * l1, 1 + alpha * l2, l1)


def _proximal_adagrad(var, accum, *, lr, l1, l2, grad):
    accum += grad * grad
    rate = lr / np.sqrt(accum)
    var[...] = _shrink(var - grad * rate, rate * l1, 1 + rate * l2, l1)


def _adagrad_da(var, grad_acc, grad_sq_acc, *, grad, lr, l1, l2, global_step):
    grad_acc += grad
    grad_sq_acc += grad * grad
    denominator = l2 * global_step * lr + np.sqrt(grad_sq_acc)
    var[...] = _shrink(-grad_acc, l1 * global_step, denominator, l1) * lr


_RULES = {
    "GradientDescent": ((), _gradient_descent),
    "Momentum": (("accum",), _momentum),
    "KerasMomentum": (("accum",), _keras_momentum),
    "Adagrad": (("accum",), _adagrad),
    "Adadelta": (("accum", "accum_update"), _adadelta),
    "RMSProp": (("ms", "mom"), _rms_prop),
    "CenteredRMSProp": (("mg", "ms", "mom"), _centered_rms_prop),
    "Adam": (("m", "v"), _adam),
    "Ftrl": (("accum", "linear"), _ftrl),
    "FtrlV2": (("accum", "linear"), _ftrl_v2),
    "ProximalGradientDescent": ((), _proximal_gradient_descent),
    "ProximalAdagrad": (("accum",), _proximal_adagrad),
    "AdagradDA": (("gradient_accumulator", "gradient_squared_accumulator"), _adagrad_da),
}

# Rules with a fused native loop (tensorflux/kernels/cpu/native.py), tried first.
_NATIVE = {_adam: _adam_native, _momentum: _momentum_native,
           _gradient_descent: _gradient_descent_native}

# Rules whose updates the graph optimizer may fuse (`_Fused<op>`, `native.updates_many`):
# the native rule and the order of the arrays and scalars after var and its slots.
_MANY = {_adam: ("adam", ("grad", "beta1_power", "beta2_power", "lr", "beta1", "beta2",
                          "epsilon")),
         _momentum: ("momentum", ("grad", "lr", "momentum")),
         _gradient_descent: ("gradient_descent", ("delta", "alpha"))}

# Rules whose sparse kernel in TensorFlow orders the arithmetic otherwise than the dense one.
_SPARSE = {_momentum: functools.partial(_momentum, sparse=True)}

_REGISTERED: list[str] = []
for _name, (_slots, _rule) in _RULES.items():
    if _rule in _MANY:
        _fused_dense_kernel(f"ResourceApply{_name}", _slots, _rule)
    _dense_kernel(f"ResourceApply{_name}", _slots, _rule)
    _REGISTERED.append(f"ResourceApply{_name}")
    if _name not in ("GradientDescent", "Adam"):
        _sparse_kernel(f"ResourceSparseApply{_name}", _slots, _SPARSE.get(_rule, _rule))
        _REGISTERED.append(f"ResourceSparseApply{_name}")


# Rules TensorFlow has for resource variables only (no `Apply*` reference form).
_RESOURCE_ONLY = ("ResourceApplyKerasMomentum", "ResourceSparseApplyKerasMomentum")


def registered_rules() -> list[str]:
    """The op types of the update kernels registered here that have a reference form (the
    ref variable ops reuse them: kernels/cpu/ref_variable_ops.py)."""
    return [r for r in _REGISTERED if r not in _RESOURCE_ONLY]
