"""Builds the optional C extension tensorflux.kernels.cpu._native (everything else is in
pyproject.toml). It is optional: without a C compiler the install goes on and the kernels
take their NumPy paths (tensorflux/kernels/cpu/native.py)."""

import sys

from setuptools import Extension, setup

# No FMA contraction: the fused loops must round exactly as the NumPy paths do.
# -fno-math-errno and -fno-trapping-math let the loops vectorize (sqrt, compares); neither
# changes a value.
_FLAGS = [] if sys.platform == "win32" else [
    "-O3", "-ffp-contract=off", "-fno-math-errno", "-fno-trapping-math", "-std=c11", "-pthread"]

setup(ext_modules=[Extension(
    "tensorflux.kernels.cpu._native", ["tensorflux/kernels/cpu/_native.c"],
    extra_compile_args=_FLAGS, extra_link_args=[] if sys.platform == "win32" else ["-pthread"],
    optional=True)])
