"""TF1's module paths inside a contrib package (`tensorflow.contrib.image.python.ops.image_ops`,
`tensorflow.contrib.layers.python.layers.initializers`), which libraries import directly:
each path is registered in `sys.modules` to the tensorflux module that holds its names, and
the packages on the way that no module stands for are module objects with no files of their
own. The owner and every module on a path get a `__path__`, so the import system also takes
them as packages when `tensorflow` is aliased to tensorflux (scripts/tf1_programs/alias)."""

from __future__ import annotations

import sys
import types


def _as_package(module: types.ModuleType) -> types.ModuleType:
    if not hasattr(module, "__path__"):
        module.__path__ = []
    return module


def register(owner: str, paths: dict[str, types.ModuleType]) -> types.ModuleType | None:
    """Registers `owner + "." + path` for each dotted `path` ("python.ops.image_ops") to its
    module, making packages for the prefixes no entry names; returns the module at the
    first level (`owner.python`), for the owner to keep as an attribute, as TF1's have."""
    _as_package(sys.modules[owner])
    levels: dict[str, types.ModuleType] = {}
    for path in sorted(paths, key=lambda p: p.count(".")):
        parts = path.split(".")
        for i in range(1, len(parts) + 1):
            prefix = ".".join(parts[:i])
            if prefix in levels:
                continue
            if prefix in paths:
                module = paths[prefix]
            else:
                module = _as_package(types.ModuleType(f"{owner}.{prefix}"))
            levels[prefix] = sys.modules.setdefault(f"{owner}.{prefix}", module)
            if i > 1:
                parent = _as_package(levels[".".join(parts[:i - 1])])
                if not hasattr(parent, parts[i - 1]):
                    setattr(parent, parts[i - 1], levels[prefix])
    first = next(iter(sorted(paths)), "").split(".")[0]
    return levels.get(first)
