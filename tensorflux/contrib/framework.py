"""`tf.contrib.framework`: arg_scope and the variable helpers of contrib's layers, `nest`
(tensorflux/control_flow/nest.py), `smart_cond`, and the checkpoint readers `load_checkpoint` /
`list_variables`; and the tensor helpers TF1 also exported here (`is_tensor`, `sort`,
`argsort`, `assert_same_float_dtype`, `get_graph_from_inputs`)."""

import sys as _sys

from tensorflux.contrib import tf1_paths as _tf1_paths  # noqa: E402
from tensorflux.contrib.framework_variables import *  # noqa: E402,F401,F403
from tensorflux.contrib.layers_core import (  # noqa: F401
    add_arg_scope,
    arg_scope,
    arg_scope_func_key,
    current_arg_scope,
    get_model_variables,
    get_trainable_variables,
    get_variables,
    get_variables_by_name,
    get_variables_to_restore,
    has_arg_scope,
    local_variable,
    model_variable,
    variable,
)
from tensorflux.control_flow import nest  # noqa: E402,F401
from tensorflux.debugging.check_ops import assert_same_float_dtype  # noqa: E402,F401
from tensorflux.framework.graph import get_graph_from_inputs  # noqa: E402,F401
from tensorflux.framework.tensor_conversion import is_tensor  # noqa: E402,F401
from tensorflux.layers.base import smart_cond, smart_constant_value  # noqa: E402,F401
from tensorflux.ops.math_ext_ops import argsort, sort  # noqa: E402,F401
from tensorflux.train.checkpoint_utils import (  # noqa: E402,F401
    list_variables,
    load_checkpoint,
    load_variable,
)
from tensorflux.train.global_step import (  # noqa: E402,F401
    create_global_step,
    get_global_step,
    get_or_create_global_step,
)
from tensorflux.train.training_util import assert_global_step  # noqa: E402,F401

python = _tf1_paths.register(__name__, {
    "python.ops": _sys.modules[__name__],
    **{f"python.ops.{_name}": _sys.modules[__name__]
       for _name in ("variables", "arg_scope", "ops", "checkpoint_ops")},
    "python.framework": _sys.modules[__name__],
    **{f"python.framework.{_name}": _sys.modules[__name__]
       for _name in ("checkpoint_utils", "tensor_util")}})
