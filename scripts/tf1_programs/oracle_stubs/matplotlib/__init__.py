"""A no-op matplotlib, for the oracle venv (which has none) and for the few programs whose
plotting blocks or needs a macOS font: plots are not what is compared. Programs that show their
numbers only in the plot (MorvanZhou's `plt.text('Loss=%.4f' % l)`, loss histories drawn with
`plt.plot(history, label=...)`) get them echoed to stdout, prefixed `[plt.text]` / `[plt.plot]`."""

import sys
import types

import numpy


class _Anything:
    """Absorbs any call, attribute or index; iterates as empty."""

    def __call__(self, *args, **kwargs):
        return _Anything()

    def __getattr__(self, name):
        return _Anything()

    def __getitem__(self, key):
        return _Anything()

    def __setitem__(self, key, value):  # plt.rcParams[...] = ... (ageron's notebooks)
        pass

    def __iter__(self):
        return iter([])


def use(*args, **kwargs):
    pass


def _text(x, y, s, *args, **kwargs):
    print("[plt.text]", s, flush=True)
    return _Anything()


def _plot(*args, **kwargs):
    ys = [a for a in args if not isinstance(a, str)][-1:]
    if "label" in kwargs and ys:
        ys = numpy.ravel(numpy.asarray(ys[0], dtype=float))
        if ys.size:
            print(f"[plt.plot] {kwargs['label']}: last {ys[-1]:.6g} of {ys.size}", flush=True)
    return [_Anything()]


rc = use
for _name in ("pyplot", "gridspec", "patches", "image", "font_manager", "cm", "colors",
              "animation"):
    _module = types.ModuleType("matplotlib." + _name)
    _module.__getattr__ = lambda name: _Anything()
    _module.subplots = lambda *args, **kwargs: (_Anything(), _Anything())
    sys.modules["matplotlib." + _name] = _module
    globals()[_name] = _module
sys.modules["matplotlib.pyplot"].text = _text
sys.modules["matplotlib.pyplot"].plot = _plot
