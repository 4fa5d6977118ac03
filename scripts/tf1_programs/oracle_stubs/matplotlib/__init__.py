"""A no-op matplotlib, for the oracle venv (which has none) and for the few programs whose
plotting blocks or needs a macOS font: plots are not what is compared."""

import sys
import types


class _Anything:
    """Absorbs any call, attribute or index; iterates as empty."""

    def __call__(self, *args, **kwargs):
        return _Anything()

    def __getattr__(self, name):
        return _Anything()

    def __getitem__(self, key):
        return _Anything()

    def __iter__(self):
        return iter([])


def use(*args, **kwargs):
    pass


rc = use
for _name in ("pyplot", "gridspec", "patches", "image", "font_manager"):
    _module = types.ModuleType("matplotlib." + _name)
    _module.__getattr__ = lambda name: _Anything()
    _module.subplots = lambda *args, **kwargs: (_Anything(), _Anything())
    sys.modules["matplotlib." + _name] = _module
    globals()[_name] = _module
