"""Fused optimizer updates on resource variables: ResourceApply* and ResourceSparseApply*.

Each op reads its variable and slot variables through their handles and updates them in
place (copy-on-write if a read of the old value is still alive), under the variables' locks
when `use_locking` is set. Dense ops take a gradient of the variable's shape; sparse ops take
`grad` rows and their `indices` (an IndexedSlices' parts) and touch only those rows.
Kernels are in tensorflux/kernels/cpu/training_ops.py.
"""

from __future__ import annotations

from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable

T_ATTR = "T: {bfloat16, half, float, double, complex64, complex128}"
TINDICES_ATTR = "Tindices: {int32, int64}"
LOCK_ATTR = "use_locking: bool = false"

# name -> (resource slots after var, scalar/dense hyperparameter inputs in order, extra attrs)
DENSE = {
    "ResourceApplyGradientDescent": ([], ["alpha: T", "delta: T"], []),
    "ResourceApplyMomentum": (["accum"], ["lr: T", "grad: T", "momentum: T"],
                              ["use_nesterov: bool = false"]),
    "ResourceApplyKerasMomentum": (["accum"], ["lr: T", "grad: T", "momentum: T"],
                                   ["use_nesterov: bool = false"]),
    "ResourceApplyAdagrad": (["accum"], ["lr: T", "grad: T"], ["update_slots: bool = true"]),
    "ResourceApplyAdadelta": (["accum", "accum_update"],
                              ["lr: T", "rho: T", "epsilon: T", "grad: T"], []),
    "ResourceApplyRMSProp": (["ms", "mom"],
                             ["lr: T", "rho: T", "momentum: T", "epsilon: T", "grad: T"], []),
    "ResourceApplyCenteredRMSProp": (["mg", "ms", "mom"],
                                     ["lr: T", "rho: T", "momentum: T", "epsilon: T",
                                      "grad: T"], []),
    "ResourceApplyAdam": (["m", "v"], ["beta1_power: T", "beta2_power: T", "lr: T",
                                       "beta1: T", "beta2: T", "epsilon: T", "grad: T"],
                          ["use_nesterov: bool = false"]),
    "ResourceApplyFtrl": (["accum", "linear"],
                          ["grad: T", "lr: T", "l1: T", "l2: T", "lr_power: T"],
                          ["multiply_linear_by_lr: bool = false"]),
    "ResourceApplyFtrlV2": (["accum", "linear"],
                            ["grad: T", "lr: T", "l1: T", "l2: T", "l2_shrinkage: T",
                             "lr_power: T"], ["multiply_linear_by_lr: bool = false"]),
    "ResourceApplyProximalGradientDescent": ([], ["alpha: T", "l1: T", "l2: T", "delta: T"],
                                             []),
    "ResourceApplyProximalAdagrad": (["accum"], ["lr: T", "l1: T", "l2: T", "grad: T"], []),
    "ResourceApplyAdagradDA": (["gradient_accumulator", "gradient_squared_accumulator"],
                               ["grad: T", "lr: T", "l1: T", "l2: T", "global_step: int64"],
                               []),
}

SPARSE = {
    "ResourceSparseApplyMomentum": (["accum"], ["lr: T", "grad: T", "indices: Tindices",
                                                "momentum: T"], ["use_nesterov: bool = false"]),
    "ResourceSparseApplyKerasMomentum": (["accum"], ["lr: T", "grad: T", "indices: Tindices",
                                                     "momentum: T"],
                                         ["use_nesterov: bool = false"]),
    "ResourceSparseApplyAdagrad": (["accum"], ["lr: T", "grad: T", "indices: Tindices"],
                                   ["update_slots: bool = true"]),
    "ResourceSparseApplyAdadelta": (["accum", "accum_update"],
                                    ["lr: T", "rho: T", "epsilon: T", "grad: T",
                                     "indices: Tindices"], []),
    "ResourceSparseApplyRMSProp": (["ms", "mom"],
                                   ["lr: T", "rho: T", "momentum: T", "epsilon: T", "grad: T",
                                    "indices: Tindices"], []),
    "ResourceSparseApplyCenteredRMSProp": (["mg", "ms", "mom"],
                                           ["lr: T", "rho: T", "momentum: T", "epsilon: T",
                                            "grad: T", "indices: Tindices"], []),
    "ResourceSparseApplyFtrl": (["accum", "linear"],
                                ["grad: T", "indices: Tindices", "lr: T", "l1: T", "l2: T",
                                 "lr_power: T"], ["multiply_linear_by_lr: bool = false"]),
    "ResourceSparseApplyFtrlV2": (["accum", "linear"],
                                  ["grad: T", "indices: Tindices", "lr: T", "l1: T", "l2: T",
                                   "l2_shrinkage: T", "lr_power: T"],
                                  ["multiply_linear_by_lr: bool = false"]),
    "ResourceSparseApplyProximalGradientDescent": (
        [], ["alpha: T", "l1: T", "l2: T", "grad: T", "indices: Tindices"], []),
    "ResourceSparseApplyProximalAdagrad": (
        ["accum"], ["lr: T", "l1: T", "l2: T", "grad: T", "indices: Tindices"], []),
    "ResourceSparseApplyAdagradDA": (
        ["gradient_accumulator", "gradient_squared_accumulator"],
        ["grad: T", "indices: Tindices", "lr: T", "l1: T", "l2: T", "global_step: int64"], []),
}


# Updates TensorFlow has for resource variables only (no `Apply*` reference form).
RESOURCE_ONLY = frozenset({"ResourceApplyKerasMomentum", "ResourceSparseApplyKerasMomentum"})


def _no_outputs(op):
    return []


for _name, (_slots, _args, _attrs) in {**DENSE, **SPARSE}.items():
    _sparse = _name in SPARSE
    define_op(_name,
              inputs=["var: resource"] + [f"{s}: resource" for s in _slots] + _args,
              attrs=[T_ATTR, LOCK_ATTR] + ([TINDICES_ATTR] if _sparse else []) + _attrs,
              shape_fn=_no_outputs, stateful=True)
    not_differentiable(_name)


# A step's dense updates of one rule as one node, made only by the graph optimizer's
# rewrite of a step graph (runtime/graph_optimizer.py `fuse_optimizer_updates`): every input
# of the op repeated N times, the N variables first, then the N of each slot, then the N of
# each hyperparameter (update i takes the i-th of each).
FUSABLE = ("ResourceApplyGradientDescent", "ResourceApplyMomentum", "ResourceApplyAdam")
for _name in FUSABLE:
    _slots, _args, _attrs = DENSE[_name]
    define_op("_Fused" + _name,
              inputs=["var: N * resource"] + [f"{s}: N * resource" for s in _slots]
              + [a.replace(": ", ": N * ", 1) for a in _args],
              attrs=[T_ATTR, LOCK_ATTR, "N: int >= 1"] + _attrs,
              shape_fn=_no_outputs, stateful=True)
    not_differentiable("_Fused" + _name)


def _apply(op_type: str, use_locking: bool, name: str | None, **inputs):
    """The op `op_type`; for a TF1 reference variable (`var` a `Ref(T)` tensor, its slots
    too) the reference form TensorFlow 1 builds (`ResourceApplyAdam` -> `ApplyAdam`, defined
    in ops/ref_variable_ops.py). Returns the Operation either way."""
    var = inputs["var"]
    if getattr(var, "dtype", None) is not None and var.dtype._is_ref_dtype:
        op_type = op_type.removeprefix("Resource")
        return apply_op(op_type, use_locking=bool(use_locking), name=name or op_type,
                        **inputs).op
    return apply_op(op_type, use_locking=bool(use_locking), name=name or op_type, **inputs)


def resource_apply_gradient_descent(var, alpha, delta, use_locking=False, name=None):
    return _apply("ResourceApplyGradientDescent", use_locking, name, var=var, alpha=alpha,
                  delta=delta)


def resource_apply_momentum(var, accum, lr, grad, momentum, use_locking=False,
                            use_nesterov=False, name=None):
    return _apply("ResourceApplyMomentum", use_locking, name, var=var, accum=accum, lr=lr,
                  grad=grad, momentum=momentum, use_nesterov=use_nesterov)


def resource_sparse_apply_momentum(var, accum, lr, grad, indices, momentum, use_locking=False,
                                   use_nesterov=False, name=None):
    return _apply("ResourceSparseApplyMomentum", use_locking, name, var=var, accum=accum,
                  lr=lr, grad=grad, indices=indices, momentum=momentum,
                  use_nesterov=use_nesterov)


def resource_apply_keras_momentum(var, accum, lr, grad, momentum, use_locking=False,
                                  use_nesterov=False, name=None):
    """Keras's momentum (TF's ResourceApplyKerasMomentum): accum = accum * momentum -
    grad * lr; var += accum (Nesterov: var += accum * momentum - grad * lr)."""
    return _apply("ResourceApplyKerasMomentum", use_locking, name, var=var, accum=accum,
                  lr=lr, grad=grad, momentum=momentum, use_nesterov=use_nesterov)


def resource_sparse_apply_keras_momentum(var, accum, lr, grad, indices, momentum,
                                         use_locking=False, use_nesterov=False, name=None):
    """`resource_apply_keras_momentum` on the rows `indices` of var and accum."""
    return _apply("ResourceSparseApplyKerasMomentum", use_locking, name, var=var,
                  accum=accum, lr=lr, grad=grad, indices=indices, momentum=momentum,
                  use_nesterov=use_nesterov)


def resource_apply_adagrad(var, accum, lr, grad, use_locking=False, update_slots=True,
                           name=None):
    return _apply("ResourceApplyAdagrad", use_locking, name, var=var, accum=accum, lr=lr,
                  grad=grad, update_slots=update_slots)


def resource_sparse_apply_adagrad(var, accum, lr, grad, indices, use_locking=False,
                                  update_slots=True, name=None):
    return _apply("ResourceSparseApplyAdagrad", use_locking, name, var=var, accum=accum,
                  lr=lr, grad=grad, indices=indices, update_slots=update_slots)


def resource_apply_adadelta(var, accum, accum_update, lr, rho, epsilon, grad,
                            use_locking=False, name=None):
    return _apply("ResourceApplyAdadelta", use_locking, name, var=var, accum=accum,
                  accum_update=accum_update, lr=lr, rho=rho, epsilon=epsilon, grad=grad)


def resource_sparse_apply_adadelta(var, accum, accum_update, lr, rho, epsilon, grad, indices,
                                   use_locking=False, name=None):
    return _apply("ResourceSparseApplyAdadelta", use_locking, name, var=var, accum=accum,
                  accum_update=accum_update, lr=lr, rho=rho, epsilon=epsilon, grad=grad,
                  indices=indices)


def resource_apply_rms_prop(var, ms, mom, lr, rho, momentum, epsilon, grad, use_locking=False,
                            name=None):
    return _apply("ResourceApplyRMSProp", use_locking, name, var=var, ms=ms, mom=mom, lr=lr,
                  rho=rho, momentum=momentum, epsilon=epsilon, grad=grad)


def resource_sparse_apply_rms_prop(var, ms, mom, lr, rho, momentum, epsilon, grad, indices,
                                   use_locking=False, name=None):
    return _apply("ResourceSparseApplyRMSProp", use_locking, name, var=var, ms=ms, mom=mom,
                  lr=lr, rho=rho, momentum=momentum, epsilon=epsilon, grad=grad,
                  indices=indices)


def resource_apply_centered_rms_prop(var, mg, ms, mom, lr, rho, momentum, epsilon, grad,
                                     use_locking=False, name=None):
    return _apply("ResourceApplyCenteredRMSProp", use_locking, name, var=var, mg=mg, ms=ms,
                  mom=mom, lr=lr, rho=rho, momentum=momentum, epsilon=epsilon, grad=grad)


def resource_sparse_apply_centered_rms_prop(var, mg, ms, mom, lr, rho, momentum, epsilon,
                                            grad, indices, use_locking=False, name=None):
    return _apply("ResourceSparseApplyCenteredRMSProp", use_locking, name, var=var, mg=mg,
                  ms=ms, mom=mom, lr=lr, rho=rho, momentum=momentum, epsilon=epsilon,
                  grad=grad, indices=indices)


def resource_apply_adam(var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad,
                        use_locking=False, use_nesterov=False, name=None):
    return _apply("ResourceApplyAdam", use_locking, name, var=var, m=m, v=v,
                  beta1_power=beta1_power, beta2_power=beta2_power, lr=lr, beta1=beta1,
                  beta2=beta2, epsilon=epsilon, grad=grad, use_nesterov=use_nesterov)


def resource_apply_ftrl_v2(var, accum, linear, grad, lr, l1, l2, l2_shrinkage, lr_power,
                           use_locking=False, name=None):
    return _apply("ResourceApplyFtrlV2", use_locking, name, var=var, accum=accum,
                  linear=linear, grad=grad, lr=lr, l1=l1, l2=l2, l2_shrinkage=l2_shrinkage,
                  lr_power=lr_power)


def resource_apply_ftrl(var, accum, linear, grad, lr, l1, l2, lr_power, use_locking=False,
                        name=None):
    return _apply("ResourceApplyFtrl", use_locking, name, var=var, accum=accum, linear=linear,
                  grad=grad, lr=lr, l1=l1, l2=l2, lr_power=lr_power)


def resource_sparse_apply_ftrl_v2(var, accum, linear, grad, indices, lr, l1, l2, l2_shrinkage,
                                  lr_power, use_locking=False, name=None):
    return _apply("ResourceSparseApplyFtrlV2", use_locking, name, var=var, accum=accum,
                  linear=linear, grad=grad, indices=indices, lr=lr, l1=l1, l2=l2,
                  l2_shrinkage=l2_shrinkage, lr_power=lr_power)


def resource_sparse_apply_ftrl(var, accum, linear, grad, indices, lr, l1, l2, lr_power,
                               use_locking=False, name=None):
    return _apply("ResourceSparseApplyFtrl", use_locking, name, var=var, accum=accum,
                  linear=linear, grad=grad, indices=indices, lr=lr, l1=l1, l2=l2,
                  lr_power=lr_power)


def resource_apply_proximal_gradient_descent(var, alpha, l1, l2, delta, use_locking=False,
                                             name=None):
    return _apply("ResourceApplyProximalGradientDescent", use_locking, name, var=var,
                  alpha=alpha, l1=l1, l2=l2, delta=delta)


def resource_sparse_apply_proximal_gradient_descent(var, alpha, l1, l2, grad, indices,
                                                    use_locking=False, name=None):
    return _apply("ResourceSparseApplyProximalGradientDescent", use_locking, name, var=var,
                  alpha=alpha, l1=l1, l2=l2, grad=grad, indices=indices)


def resource_apply_proximal_adagrad(var, accum, lr, l1, l2, grad, use_locking=False,
                                    name=None):
    return _apply("ResourceApplyProximalAdagrad", use_locking, name, var=var, accum=accum,
                  lr=lr, l1=l1, l2=l2, grad=grad)


def resource_sparse_apply_proximal_adagrad(var, accum, lr, l1, l2, grad, indices,
                                           use_locking=False, name=None):
    return _apply("ResourceSparseApplyProximalAdagrad", use_locking, name, var=var,
                  accum=accum, lr=lr, l1=l1, l2=l2, grad=grad, indices=indices)


def resource_apply_adagrad_da(var, gradient_accumulator, gradient_squared_accumulator, grad,
                              lr, l1, l2, global_step, use_locking=False, name=None):
    return _apply("ResourceApplyAdagradDA", use_locking, name, var=var,
                  gradient_accumulator=gradient_accumulator,
                  gradient_squared_accumulator=gradient_squared_accumulator, grad=grad,
                  lr=lr, l1=l1, l2=l2, global_step=global_step)


def resource_sparse_apply_adagrad_da(var, gradient_accumulator, gradient_squared_accumulator,
                                     grad, indices, lr, l1, l2, global_step,
                                     use_locking=False, name=None):
    return _apply("ResourceSparseApplyAdagradDA", use_locking, name, var=var,
                  gradient_accumulator=gradient_accumulator,
                  gradient_squared_accumulator=gradient_squared_accumulator, grad=grad,
                  indices=indices, lr=lr, l1=l1, l2=l2, global_step=global_step)
