"""The package's layout and size budget (DESIGN §2-§3, STYLE "Names say where things are").

- Mirroring: every op defined in `tensorflux/ops/X.py` has its CPU kernels registered from
  `tensorflux/kernels/cpu/X.py` and its gradient (or `not_differentiable`) from
  `tensorflux/ops/X.py`, so an op's definition, kernel, gradient and tests are found in
  predictable files. The registries record the registering module (`OpDef.module`,
  `KernelDef.module`, `op_registry.gradient_module`).
- Budget: no module of the package over MAX_MODULE_LINES lines, no function over
  MAX_FUNCTION_LINES lines. Both are cheap: they read the registries and parse the sources.
"""

from __future__ import annotations

import ast
import pathlib

import tensorflux  # noqa: F401 - registers every op, kernel and gradient
from tensorflux.framework import op_registry
from tensorflux.kernels import registry as kernel_registry

PACKAGE = pathlib.Path(tensorflux.__file__).parent
OPS = "tensorflux.ops."
CPU_KERNELS = "tensorflux.kernels.cpu."

MAX_MODULE_LINES = 1000
MAX_FUNCTION_LINES = 100

# Ops whose gradient is registered away from their definition, and why.
GRADIENT_ELSEWHERE = {
    op: "control-flow gradients are built by the control-flow library, which keeps the loop "
        "state they need (control_flow/control_flow_grad.py)"
    for op in ("Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond")
}

# Functions over MAX_FUNCTION_LINES that are known and scheduled to shrink: "path:function"
# -> why it is allowed for now. Empty today; an entry needs a note and an owner.
LONG_FUNCTIONS: dict[str, str] = {}

# Kernel modules that are shared helpers, not an op family's kernels.
KERNEL_HELPERS = {"native"}


def _family(module: str | None, prefix: str) -> str | None:
    if module is None or not module.startswith(prefix):
        return None
    return module[len(prefix):]


def _package_ops() -> dict[str, op_registry.OpDef]:
    """The ops the package defines (tests and user programs may define their own)."""
    return {name: opdef for name, opdef in op_registry.registered_ops().items()
            if (opdef.module or "").startswith("tensorflux.")}


def test_every_op_is_defined_in_an_ops_module():
    bad = {name: opdef.module for name, opdef in _package_ops().items()
           if _family(opdef.module, OPS) is None}
    assert not bad, f"ops defined outside tensorflux/ops/: {bad}"


def test_every_cpu_kernel_mirrors_its_op_module():
    kernels = kernel_registry.registered_kernels()
    bad = []
    for name, opdef in sorted(_package_ops().items()):
        family = _family(opdef.module, OPS)
        modules = {k.module for k in kernels.get((name, "CPU"), ())}
        if modules and modules != {CPU_KERNELS + family}:
            bad.append(f"{name}: defined in ops/{family}.py, CPU kernel in "
                       f"{sorted(m.removeprefix(CPU_KERNELS) for m in modules)}")
    assert not bad, "\n".join(bad)


def test_every_gradient_is_registered_beside_its_op():
    bad = []
    for name, opdef in sorted(_package_ops().items()):
        if name in GRADIENT_ELSEWHERE or op_registry.get_gradient(name) is None:
            continue
        module = op_registry.gradient_module(name)
        if module != opdef.module:
            bad.append(f"{name}: defined in {opdef.module}, gradient registered in {module}")
    assert not bad, "\n".join(bad)


def test_exceptions_are_still_needed():
    for name in GRADIENT_ELSEWHERE:
        opdef = op_registry.get(name)
        assert op_registry.gradient_module(name) != opdef.module, (
            f"{name}'s gradient is beside its op now: drop it from GRADIENT_ELSEWHERE")


def test_every_kernel_module_has_an_ops_module():
    """kernels/cpu/X.py exists only for an op family ops/X.py (or is a private helper)."""
    ops_modules = {p.stem for p in (PACKAGE / "ops").glob("*.py")}
    bad = [p.name for p in sorted((PACKAGE / "kernels" / "cpu").glob("*.py"))
           if not p.stem.startswith("_") and p.stem not in KERNEL_HELPERS
           and p.stem not in ops_modules]
    assert not bad, f"kernel modules with no ops module of the same name: {bad}"


def _sources():
    for path in sorted(PACKAGE.rglob("*.py")):
        if not path.name.endswith("_pb2.py"):  # generated protocol buffer code
            yield path, path.read_text()


def test_no_module_over_budget():
    bad = {str(path.relative_to(PACKAGE.parent)): n for path, text in _sources()
           if (n := len(text.splitlines())) > MAX_MODULE_LINES}
    assert not bad, f"modules over {MAX_MODULE_LINES} lines (split them by concept): {bad}"


def test_no_function_over_budget():
    bad = {}
    for path, text in _sources():
        rel = str(path.relative_to(PACKAGE.parent))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES and f"{rel}:{node.name}" not in LONG_FUNCTIONS:
                    bad[f"{rel}:{node.name}"] = n
    assert not bad, f"functions over {MAX_FUNCTION_LINES} lines: {bad}"
