"""TensorFlow's protocol-buffer modules under the paths TF1 programs import them from
(`from tensorflow.core.framework import graph_pb2`, `...core.protobuf import config_pb2`,
`...core.example import example_pb2`, `...core.util import event_pb2`): each
`tensorflux.core.<package>.<name>_pb2` is the module `tensorflux.protos.<name>_pb2` itself,
whichever of TF's directories the program names.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys

_PREFIX = __name__ + "."
_PACKAGES = ("framework", "protobuf", "example", "util", "lib")


class _Loader(importlib.abc.Loader):
    def create_module(self, spec):
        rest = spec.name[len(_PREFIX):]
        if "." not in rest:
            return None  # a package: a plain module object
        return importlib.import_module("tensorflux.protos." + rest.rpartition(".")[2])

    def exec_module(self, module) -> None:
        if module.__name__[len(_PREFIX):] in _PACKAGES:
            module.__path__ = []


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(_PREFIX):
            return None
        rest = fullname[len(_PREFIX):].split(".")
        if rest[0] not in _PACKAGES or len(rest) > 2:
            return None
        if len(rest) == 2 and importlib.util.find_spec("tensorflux.protos." + rest[1]) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader(), is_package=len(rest) == 1)


if not any(isinstance(f, _Finder) for f in sys.meta_path):
    sys.meta_path.append(_Finder())
