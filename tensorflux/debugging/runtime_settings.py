"""The TF2 `tf.debugging` switches that a TF1 graph program can use too:
traceback filtering (tensorflux/framework/traceback_utils.py) and the process default for
device-placement logging (tensorflux/runtime/session.py)."""

from tensorflux.framework.traceback_utils import (  # noqa: F401
    disable_traceback_filtering,
    enable_traceback_filtering,
    is_traceback_filtering_enabled,
)
from tensorflux.runtime.session import (  # noqa: F401
    get_log_device_placement,
    set_log_device_placement,
)

__all__ = ["disable_traceback_filtering", "enable_traceback_filtering",
           "is_traceback_filtering_enabled", "get_log_device_placement",
           "set_log_device_placement"]
