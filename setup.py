"""Builds the optional C extensions tensorflux.kernels.cpu._native and ._qkernels,
tensorflux.lib._philox (TF's random streams) and tensorflux.serving._jsonnum (everything
else is in pyproject.toml). They are optional: without a C compiler the install goes on,
the kernels take their NumPy paths (tensorflux/kernels/cpu/native.py, _qnative.py,
lib/philox.py) and the model server decodes every request with json
(tensorflux/serving/codec.py)."""

import sys

from setuptools import Extension, setup

# No FMA contraction: the fused loops must round exactly as the NumPy paths do.
# -fno-math-errno and -fno-trapping-math let the loops vectorize (sqrt, compares); neither
# changes a value.
_FLAGS = [] if sys.platform == "win32" else [
    "-O3", "-ffp-contract=off", "-fno-math-errno", "-fno-trapping-math", "-std=c11", "-pthread"]

_LINK = [] if sys.platform == "win32" else ["-pthread"]

# _qkernels: the eight-bit kernels. Built for the baseline CPU like the rest; its AVX2 and
# AVX-512 VNNI code carries target attributes and is chosen at run time (never -march).
setup(ext_modules=[
    Extension("tensorflux.kernels.cpu._native", ["tensorflux/kernels/cpu/_native.c"],
              depends=["tensorflux/kernels/cpu/_pool.h", "tensorflux/kernels/cpu/_thin_gemm.h",
                       "tensorflux/kernels/cpu/_stem_conv.h"],
              extra_compile_args=_FLAGS, extra_link_args=_LINK, optional=True),
    Extension("tensorflux.kernels.cpu._qkernels", ["tensorflux/kernels/cpu/_qkernels.c"],
              depends=["tensorflux/kernels/cpu/_pool.h"],
              extra_compile_args=_FLAGS, extra_link_args=_LINK, optional=True),
    Extension("tensorflux.lib._philox", ["tensorflux/lib/_philox.c"],
              extra_compile_args=_FLAGS, extra_link_args=_LINK + ["-lm"], optional=True),
    Extension("tensorflux.serving._jsonnum", ["tensorflux/serving/_jsonnum.c"],
              extra_compile_args=[] if sys.platform == "win32" else ["-O2", "-std=c11"],
              optional=True),
])
