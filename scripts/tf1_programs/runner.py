"""python runner.py PROG [ARGS]: seeds numpy and random (the programs do not), restores two
NumPy names the authors' code uses that NumPy 2 removed, hides the modules named in
$TF1_HIDE_MODULES, then runs PROG as __main__."""

import os
import random
import runpy
import sys

import numpy as np

np.random.seed(0)
random.seed(0)
os.environ.setdefault("MPLBACKEND", "Agg")
_reshape = np.reshape  # np.reshape(newshape=) (ay/gan.py, ay/dcgan.py), gone in NumPy 2.4


def _reshape_compat(a, shape=None, *args, newshape=None, **kwargs):
    return _reshape(a, shape if newshape is None else newshape, *args, **kwargs)


np.reshape = _reshape_compat
np.int = int  # the Hvass notebooks; gone since NumPy 1.24
np.infty = np.inf  # ageron's chapter 10 (Perceptron(tol=-np.infty)); gone in NumPy 2
np.bool8 = np.bool_  # gym 0.25's step checker; gone in NumPy 2
for _name in filter(None, os.environ.get("TF1_HIDE_MODULES", "").split(",")):
    sys.modules[_name] = None  # `import _name` raises ImportError (run.py's HIDE)
prog = sys.argv[1]
sys.argv = [prog] + sys.argv[2:]
sys.path.insert(0, os.path.dirname(os.path.abspath(prog)))
runpy.run_path(prog, run_name="__main__")
