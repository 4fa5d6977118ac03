"""A matplotlib for the reinforcement-learning programs (neither venv has one): figures are
not drawn, but every `plt.plot` prints a summary of the series it was given, so the curves
the programs end by plotting (costs, Q values, running rewards) can be compared in the logs."""

import sys
import types

import numpy as np


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


def _plot(*args, label=None, **kwargs):
    series = [a for a in args if not isinstance(a, str)]
    if not series:
        return _Anything()
    y = np.asarray(series[-1], dtype=np.float64).ravel()
    if y.size:
        print(f"plot[{label or ''}]: n={y.size} first={y[0]:.6g} last={y[-1]:.6g} "
              f"mean={y.mean():.6g} min={y.min():.6g} max={y.max():.6g}", flush=True)
    return _Anything()


def use(*args, **kwargs):
    pass


rc = use
for _name in ("pyplot", "gridspec", "patches", "image", "font_manager"):
    _module = types.ModuleType("matplotlib." + _name)
    _module.__getattr__ = lambda name: _Anything()
    _module.subplots = lambda *args, **kwargs: (_Anything(), _Anything())
    sys.modules["matplotlib." + _name] = _module
    globals()[_name] = _module
sys.modules["matplotlib.pyplot"].plot = _plot
