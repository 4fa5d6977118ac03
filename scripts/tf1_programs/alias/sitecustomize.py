"""Makes `import tensorflow...` load tensorflux, for TF1 libraries whose many modules import
TensorFlow (tflearn): put this directory first on PYTHONPATH. Experiments only; programs
themselves change their import line."""
import importlib
import importlib.abc
import importlib.util
import sys


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name == "tensorflow" or name.startswith("tensorflow."):
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        real = "tensorflux" + spec.name[len("tensorflow"):]
        if real == "tensorflux.compat.v1":
            real = "tensorflux"
        return importlib.import_module(real)

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _Alias())
