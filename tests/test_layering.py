"""The package's layers import downward only (DESIGN.md §2; STYLE.md "Layers point down").

protos → framework → lib, checkpoint (file formats) → ops | kernels (neither imports the
other) → runtime → libraries (variables, control_flow, autodiff, nn, sparse, train, ...) →
the public namespace (`tensorflux/__init__.py`, compat). Every `tensorflux` import of every
module counts, function-local ones included: a local import moves the cycle to run time, it
does not remove the upward dependency. Module-level imports must also form no cycle.
"""

from __future__ import annotations

import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "tensorflux"

# Layer of the first package component under tensorflux; anything else is a library (5).
_LAYERS = {"protos": 0, "framework": 1, "lib": 2, "checkpoint": 2, "ops": 3, "kernels": 3,
           "runtime": 4, "compat": 6, "python": 6}
_LIBRARY = 5
_PUBLIC = 6

# (importing module, imported module) pairs allowed to point upward, each with its reason.
# Keep this empty: move the shared piece down instead, or register a hook from above.
ALLOWED_UPWARD: dict[tuple[str, str], str] = {}


def _modules() -> dict[str, pathlib.Path]:
    """Dotted name -> source file; C extensions (no source to parse) map to None."""
    mods: dict[str, pathlib.Path] = {}
    # C extensions count by their sources too: one not built here is still a module of
    # its own (with no imports), not its package.
    for path in sorted(PACKAGE.rglob("*.py")) + sorted(PACKAGE.rglob("*.so")) + \
            sorted(PACKAGE.rglob("*.c")):
        rel = path.relative_to(PACKAGE)
        parts = ("tensorflux",) + rel.parent.parts + (path.name.split(".")[0],)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods.setdefault(".".join(parts), path if path.suffix == ".py" else None)
    return mods


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(name: str, path: pathlib.Path, mods) -> list[tuple[str, int, bool]]:
    """(imported module, line, executed at import time) for each tensorflux import."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[str, int, bool]] = []

    def target(dotted: str) -> str:
        # A module that does not exist (an optional one) still names its layer.
        if dotted in mods:
            return dotted
        head = dotted.rpartition(".")[0]
        return dotted if head == "tensorflux" else (target(head) if head else dotted)

    def visit(node: ast.AST, eager: bool) -> None:
        for child in ast.iter_child_nodes(node):
            child_eager = eager and not isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and not (
                isinstance(child, ast.If) and _is_type_checking(child.test))
            if isinstance(child, ast.Import):
                found.extend((target(a.name), child.lineno, eager) for a in child.names
                             if a.name.split(".")[0] == "tensorflux")
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    up = package.split(".")[:len(package.split(".")) - child.level + 1]
                    base = ".".join(up + ([base] if base else []))
                if base.split(".")[0] == "tensorflux":
                    found.extend((target(f"{base}.{a.name}"), child.lineno, eager)
                                 for a in child.names)
            visit(child, child_eager)

    visit(ast.parse(path.read_text(), str(path)), True)
    return found


def _layer(module: str) -> int:
    parts = module.split(".")
    return _PUBLIC if len(parts) == 1 else _LAYERS.get(parts[1], _LIBRARY)


def _upward(src: str, dst: str) -> bool:
    a, b = src.split("."), dst.split(".")
    if a[:2] == b[:2]:
        return False
    if _layer(dst) > _layer(src):
        return True
    # ops and kernels share a layer and never import each other.
    return {a[1], b[1]} == {"ops", "kernels"} if len(a) > 1 and len(b) > 1 else False


def _graph():
    mods = _modules()
    return mods, {m: _imports(m, p, mods) if p else [] for m, p in mods.items()}


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_every_module_is_in_a_layer():
    mods, _ = _graph()
    assert "tensorflux.framework.graph" in mods and "tensorflux.runtime.session" in mods
    assert _layer("tensorflux.framework.slice_spec") < _layer("tensorflux.ops.array_ops") < \
        _layer("tensorflux.runtime.session") < _layer("tensorflux.train.saver") < \
        _layer("tensorflux")
    assert _upward("tensorflux.framework.operation", "tensorflux.runtime.session")
    assert _upward("tensorflux.kernels.cpu.slicing_ops", "tensorflux.ops.slicing_ops")
    assert _upward("tensorflux.ops.slicing_ops", "tensorflux.kernels.cpu.slicing_ops")
    assert not _upward("tensorflux.train.saver", "tensorflux.variables.variables")
    assert not _upward("tensorflux.runtime.session", "tensorflux.kernels.registry")


def test_no_module_imports_a_layer_above_it():
    _, imports = _graph()
    bad = [f"{src}:{line} imports {dst}{'' if eager else ' (function-local)'}"
           for src, found in sorted(imports.items()) for dst, line, eager in found
           if _upward(src, dst) and (src, dst) not in ALLOWED_UPWARD]
    assert not bad, "upward imports:\n" + "\n".join(bad)


def test_allowed_exceptions_are_still_needed():
    _, imports = _graph()
    used = {(src, dst) for src, found in imports.items() for dst, _, _ in found}
    assert not set(ALLOWED_UPWARD) - used


def test_no_module_level_import_cycle():
    mods, imports = _graph()
    edges = {m: {dst for dst, _, eager in imports[m] if eager and dst in mods and dst != m}
             for m in mods}
    cycles = _cycles(edges)
    assert not cycles, "module-level import cycles:\n" + "\n".join(
        " <-> ".join(c) for c in cycles)
