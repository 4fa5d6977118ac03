"""`import aliasedtf...` as tensorflux, for tests of TF1's import paths: the rule of
scripts/tf1_programs/alias under another name, so that nothing else sees it."""

import contextlib
import importlib
import importlib.abc
import importlib.util
import sys

_KEPT = ("__spec__", "__loader__", "__name__", "__package__")


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Hands out tensorflux's modules for `aliasedtf...`. The import system writes the
    alias's spec and loader into them; `saved` keeps what they had."""

    def __init__(self):
        self.saved = []

    def find_spec(self, name, path=None, target=None):
        if name == "aliasedtf" or name.startswith("aliasedtf."):
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        module = importlib.import_module("tensorflux" + spec.name[len("aliasedtf"):])
        self.saved.append((module, {k: getattr(module, k, None) for k in _KEPT}))
        return module

    def exec_module(self, module):
        pass


@contextlib.contextmanager
def aliased_tensorflux():
    """Within it `importlib.import_module("aliasedtf.X")` imports tensorflux.X as a
    program's `import tensorflow.X` would under the alias; afterwards the real modules get
    their own spec and names back (else `tensorflux` would report itself as `aliasedtf` to
    later tests) and the alias's entries leave sys.modules."""
    alias = _Alias()
    sys.meta_path.insert(0, alias)
    try:
        yield
    finally:
        sys.meta_path.remove(alias)
        for module, attrs in reversed(alias.saved):
            for key, value in attrs.items():
                setattr(module, key, value)
        for key in [k for k in sys.modules if k == "aliasedtf" or k.startswith("aliasedtf.")]:
            del sys.modules[key]
