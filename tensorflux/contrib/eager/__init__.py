"""`tf.contrib.eager` (`tensorflow.contrib.eager.python.tfe`): the graph-mode half of TF 1.15's
eager helpers, for TF1 libraries whose tests and modules import them (Sonnet v1).

tensorflux has no eager mode, so:

* `run_test_in_graph_and_eager_modes` / `run_all_tests_in_graph_and_eager_modes` run each
  test once, in graph mode, with the test's cached session as the default one (TF runs the
  graph half that way, then the body again eagerly);
* `defun(f)` calls `f` when called: in graph mode TF traces `f` into a function called by
  one op, whose outputs are the values `f`'s ops give when built inline;
* `executing_eagerly()` is False.
"""

from tensorflux.contrib.eager.python import tfe  # noqa: F401
from tensorflux.contrib.eager.python.tfe import (  # noqa: F401
    defun,
    executing_eagerly,
    function,
    in_graph_mode,
    run_all_tests_in_graph_and_eager_modes,
    run_test_in_graph_and_eager_modes,
)

__all__ = ["defun", "executing_eagerly", "function", "in_graph_mode",
           "run_all_tests_in_graph_and_eager_modes", "run_test_in_graph_and_eager_modes"]
