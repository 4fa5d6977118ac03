"""UnicodeScript (`tf.strings.unicode_script`): the ICU script code (UScriptCode) of each
int32 code point, -1 for values that are not code points. The script table is
tensorflux/lib/unicode_scripts.py (ICU's data, as TensorFlow uses it); kernel:
tensorflux/kernels/cpu/unicode_script_ops.py.
"""

from __future__ import annotations

from tensorflux.framework import dtypes
from tensorflux.framework.common_shapes import unchanged
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable
from tensorflux.framework.tensor_conversion import convert_to_tensor

__all__ = ["unicode_script"]

define_op("UnicodeScript", inputs=["input: int32"], outputs=["output: int32"],
          shape_fn=unchanged)
not_differentiable("UnicodeScript")


def unicode_script(input, name=None):  # noqa: A002
    """The ICU script code of each code point (`tf.strings.unicode_script`): e.g. 25 for
    Latin, 17 for Han, 8 for Cyrillic; -1 for values outside [0, 0x10FFFF]."""
    return apply_op("UnicodeScript", input=convert_to_tensor(input, dtype=dtypes.int32),
                    name=name or "UnicodeScript")
