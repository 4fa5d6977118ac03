"""What the math-family CPU kernels share (math_ops.py, unary_ops.py, comparison_ops.py,
reduction_ops.py, matrix_ops.py, sequence_ops.py): dtype groups, TF's error messages and
the elementwise wrappers with their broadcasting errors.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from tensorflux.framework import errors

_BF16 = np.dtype(ml_dtypes.bfloat16)
_F16 = np.dtype(np.float16)
_LOW_PRECISION = (_BF16, _F16)
_BLAS_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _shape_str(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def _incompatible(x, y) -> errors.InvalidArgumentError:
    return _invalid(f"Incompatible shapes: {_shape_str(np.shape(x))} vs. "
                    f"{_shape_str(np.shape(y))}")


def _is_int(a) -> bool:
    return a.dtype.kind in "iu"
