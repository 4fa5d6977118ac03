"""CPU kernels of TensorFlow 1's reference variable ops (tensorflux/ops/ref_variable_ops.py).

A ref is the variable's ResourceHandle (kernels/cpu/state_ops.py), so each kernel here is a
resource kernel behind another face: it builds the resource kernel for a node with the
resource op's attribute names (`T` becomes `dtype` where the resource op says so) and, for
ops with an `output_ref`/`out`, returns the handle it was given.
"""

from __future__ import annotations

from types import SimpleNamespace

from tensorflux.framework import errors
from tensorflux.kernels import registry
from tensorflux.kernels.cpu import state_ops, training_ops  # noqa: F401 - registers them
from tensorflux.kernels.cpu.state_ops import Var, as_handle
from tensorflux.kernels.registry import kernel_factory

_ALL = ("CPU", "GPU")


# A ref is the handle VarHandleOp makes (VariableV2's attrs have VarHandleOp's names).
kernel_factory("VariableV2", "Variable", device=_ALL)(state_ops._var_handle)


def _resource_compute(resource_op: str, node, **renamed):
    """The compute function of `resource_op`'s CPU kernel for `node`, its attributes given
    the resource op's names (`renamed`: resource attr -> this node's attr)."""
    attrs = dict(node.attrs)
    for to, frm in renamed.items():
        attrs[to] = node.attrs[frm]
    kdef = registry.find_kernel(resource_op, "CPU", attrs)
    return kdef.factory(SimpleNamespace(name=node.name, op=resource_op, attrs=attrs,
                                        inputs=node.inputs))


def _returns_ref(resource_op: str, **renamed):
    """A factory running `resource_op`'s kernel and outputting its input 0 (the ref)."""

    def factory(node):
        compute = _resource_compute(resource_op, node, **renamed)

        def run(ctx, ref, *rest):
            compute(ctx, ref, *rest)
            return ref

        return run

    return factory


kernel_factory("Assign")(_returns_ref("AssignVariableOp", dtype="T"))
kernel_factory("AssignAdd")(_returns_ref("AssignAddVariableOp", dtype="T"))
kernel_factory("AssignSub")(_returns_ref("AssignSubVariableOp", dtype="T"))
for _op in ("ScatterUpdate", "ScatterAdd", "ScatterSub", "ScatterMul", "ScatterDiv",
            "ScatterMin", "ScatterMax"):
    kernel_factory(_op)(_returns_ref(f"Resource{_op}", dtype="T"))
for _op in ("ScatterNdUpdate", "ScatterNdAdd", "ScatterNdSub"):
    kernel_factory(_op)(_returns_ref(f"Resource{_op}"))
for _rop in [*training_ops.registered_rules()]:
    kernel_factory(_rop.removeprefix("Resource"))(_returns_ref(_rop))


@kernel_factory("IsVariableInitialized", device=_ALL)
def _is_initialized(node):
    return _resource_compute("VarIsInitializedOp", node)


@kernel_factory("CountUpTo")
def _count_up_to(node):
    return _resource_compute("ResourceCountUpTo", node)


@kernel_factory("_RefRead", device=_ALL, forwards_input=True)
def _ref_read(node):
    """The variable's value now (a snapshot, as ReadVariableOp's); TF1's message when it
    was never assigned."""
    dtype = node.attrs["T"]

    def compute(ctx, ref):
        h = as_handle(ref)
        var = ctx.resource_mgr.get(h.container, h.name)
        value = var.value if isinstance(var, Var) else None
        if value is None:
            raise errors.FailedPreconditionError(
                None, None, f"Attempting to use uninitialized value {h.name}")
        if var.dtype != dtype:
            raise errors.InvalidArgumentError(
                None, None, f"Variable {h.name} holds {var.dtype.name}, read as {dtype.name}")
        with var.lock:
            return var.value

    return compute
