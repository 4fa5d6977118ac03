"""`tf.debugging`: assertions, numeric checks and value tests under their TF1 names.

The same functions are also top-level (`tf.assert_equal`, `tf.check_numerics`, ...), except
`assert_shapes` and `assert_all_finite`, which TF1 has only here. The assertions are in
check_ops.py, `add_check_numerics_ops` and `verify_tensor_all_finite` in numerics.py; the
ops they build on (Assert, CheckNumerics) are in tensorflux/ops/logging_ops.py.
"""

from tensorflux.debugging.check_numerics_callback import (  # noqa: F401
    disable_check_numerics,
    enable_check_numerics,
)
from tensorflux.debugging.check_ops import *  # noqa: F401,F403
from tensorflux.debugging.check_ops import assert_shapes  # noqa: F401
from tensorflux.debugging.numerics import verify_tensor_all_finite as assert_all_finite  # noqa: F401
from tensorflux.debugging.runtime_settings import *  # noqa: F401,F403,E402
from tensorflux.ops.logging_ops import Assert, check_numerics  # noqa: F401
from tensorflux.ops.unary_ops import is_finite, is_inf, is_nan  # noqa: F401
