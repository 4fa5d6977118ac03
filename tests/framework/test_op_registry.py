"""The op registry: signature parsing, and that every op is complete (DESIGN §3)."""

import pytest

import tensorflux as tf  # noqa: F401 - registers every op and kernel
from tensorflux.framework import dtypes, op_registry
from tensorflux.framework.op_registry import NO_DEFAULT, define_op
from tensorflux.kernels import registry as kernel_registry

# Ops the runtime inserts itself (no gradient needed beyond not_differentiable, which they
# declare) are included; nothing is exempt.


def test_every_op_has_shape_fn_kernel_and_gradient_decision():
    missing = []
    for name, opdef in sorted(op_registry.registered_ops().items()):
        if opdef.shape_fn is None:
            missing.append(f"{name}: no shape function")
        if not kernel_registry.has_kernel(name, "CPU"):
            missing.append(f"{name}: no CPU kernel")
        if op_registry.get_gradient(name) is None:
            missing.append(f"{name}: no gradient and not marked not_differentiable")
    assert not missing, "\n".join(missing)


def test_signature_parsing():
    opdef = op_registry.get("Merge")
    assert [a.name for a in opdef.inputs] == ["inputs"]
    assert opdef.inputs[0].number_attr == "N" and opdef.inputs[0].type_attr == "T"
    assert opdef.attrs["N"].minimum == 1
    assert opdef.outputs[1].dtype is dtypes.int32
    enter = op_registry.get("Enter")
    assert enter.attrs["is_constant"].default is False
    assert enter.attrs["parallel_iterations"].default == 10
    assert enter.attrs["frame_name"].default is NO_DEFAULT


def test_define_op_rejects_duplicates_and_bad_specs():
    with pytest.raises(ValueError, match="already registered"):
        define_op("Identity")
    with pytest.raises(TypeError, match="NotAType"):
        define_op("_TestBadSpec", inputs=["x: NotAType"])
    assert op_registry.lookup("_TestBadSpec") is None


def test_op_def_proto():
    proto = op_registry.get("Enter").to_proto()
    assert proto.name == "Enter"
    assert [a.name for a in proto.attr] == ["T", "frame_name", "is_constant",
                                            "parallel_iterations"]
    assert proto.attr[3].default_value.i == 10
