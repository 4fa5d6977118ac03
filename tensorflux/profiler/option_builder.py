"""`tf.profiler.ProfileOptionBuilder`: the options dict `tf.profiler.profile` takes.

The three presets are TF's (`trainable_variables_parameter()`, `float_operation()`,
`time_and_memory()`); the `with_*`, `order_by` and `select` methods change one group of
keys each and return the builder, and `build()` returns a copy of the dict.
"""

from __future__ import annotations

import copy

TRAINABLE_VARIABLES = "_trainable_variables"


def _base(**changes) -> dict:
    options = {
        "max_depth": 10000, "min_bytes": 0, "min_micros": 0, "min_params": 0,
        "min_float_ops": 0, "min_occurrence": 0, "order_by": "name",
        "account_type_regexes": [".*"], "start_name_regexes": [".*"],
        "trim_name_regexes": [], "show_name_regexes": [".*"], "hide_name_regexes": [],
        "account_displayed_op_only": True, "select": ["micros"], "step": -1,
        "output": "stdout"}
    options.update(changes)
    return options


class ProfileOptionBuilder:
    """Builds profiling options.

    Args:
      options: a dict to start from (copied), e.g. one of the presets; None for the
        builder's defaults (max_depth 100, select micros, ordered by name).
    """

    def __init__(self, options: dict | None = None):
        self._options = copy.deepcopy(options) if options is not None else _base(
            max_depth=100, account_displayed_op_only=False)

    @staticmethod
    def trainable_variables_parameter() -> dict:
        """Parameter counts of the trainable variables (for the scope view).

        Returns:
          A dict of profiling options.
        """
        return _base(account_type_regexes=[TRAINABLE_VARIABLES], select=["params"])

    @staticmethod
    def float_operation() -> dict:
        """Float operations of the ops that have a FLOP formula, largest first.

        Returns:
          A dict of profiling options.
        """
        return _base(min_float_ops=1, order_by="float_ops", select=["float_ops"])

    @staticmethod
    def time_and_memory(min_micros=1, min_bytes=1, min_accelerator_micros=0,
                        min_cpu_micros=0, min_peak_bytes=0, min_residual_bytes=0,
                        min_output_bytes=0) -> dict:
        """Execution time and memory of the nodes a traced step ran (needs `run_meta`).

        Args:
          min_micros: show nodes with at least this much time.
          min_bytes: show nodes that requested at least this many bytes.
          min_accelerator_micros: ... this much accelerator time.
          min_cpu_micros: ... this much CPU time.
          min_peak_bytes: ... this many bytes at peak.
          min_residual_bytes: ... this many bytes left allocated.
          min_output_bytes: ... this many output bytes.

        Returns:
          A dict of profiling options.
        """
        options = {"max_depth": 10000, "min_bytes": min_bytes, "min_peak_bytes": min_peak_bytes,
                   "min_residual_bytes": min_residual_bytes,
                   "min_output_bytes": min_output_bytes, "min_micros": min_micros,
                   "min_accelerator_micros": min_accelerator_micros,
                   "min_cpu_micros": min_cpu_micros}
        options.update((k, v) for k, v in _base(order_by="micros",
                                                 select=["micros", "bytes"]).items()
                       if k not in options)
        return options

    def build(self) -> dict:
        """A copy of the options built so far."""
        return copy.deepcopy(self._options)

    def with_max_depth(self, max_depth: int) -> ProfileOptionBuilder:
        """Shows nodes at most `max_depth` levels below the root."""
        self._options["max_depth"] = max_depth
        return self

    def with_min_memory(self, min_bytes=0, min_peak_bytes=0, min_residual_bytes=0,
                        min_output_bytes=0) -> ProfileOptionBuilder:
        """Shows nodes with at least these byte counts."""
        self._options.update(min_bytes=min_bytes, min_peak_bytes=min_peak_bytes,
                             min_residual_bytes=min_residual_bytes,
                             min_output_bytes=min_output_bytes)
        return self

    def with_min_execution_time(self, min_micros=0, min_accelerator_micros=0,
                                min_cpu_micros=0) -> ProfileOptionBuilder:
        """Shows nodes with at least these execution times."""
        self._options.update(min_micros=min_micros,
                             min_accelerator_micros=min_accelerator_micros,
                             min_cpu_micros=min_cpu_micros)
        return self

    def with_min_parameters(self, min_params: int) -> ProfileOptionBuilder:
        """Shows nodes with at least `min_params` parameters of their own."""
        self._options["min_params"] = min_params
        return self

    def with_min_occurrence(self, min_occurrence: int) -> ProfileOptionBuilder:
        """Shows nodes that ran at least `min_occurrence` times."""
        self._options["min_occurrence"] = min_occurrence
        return self

    def with_min_float_operations(self, min_float_ops: int) -> ProfileOptionBuilder:
        """Shows nodes with at least `min_float_ops` float operations of their own."""
        self._options["min_float_ops"] = min_float_ops
        return self

    def with_accounted_types(self, account_type_regexes) -> ProfileOptionBuilder:
        """Counts only nodes whose op type (or logged type) matches one of the regexes."""
        self._options["account_type_regexes"] = copy.copy(account_type_regexes)
        return self

    def with_node_names(self, start_name_regexes=None, show_name_regexes=None,
                        hide_name_regexes=None, trim_name_regexes=None):
        """Where the tree starts, which names show, which hide, below which to cut."""
        for key, value in (("start_name_regexes", start_name_regexes),
                           ("show_name_regexes", show_name_regexes),
                           ("hide_name_regexes", hide_name_regexes),
                           ("trim_name_regexes", trim_name_regexes)):
            if value is not None:
                self._options[key] = copy.copy(value)
        return self

    def account_displayed_op_only(self, is_true: bool) -> ProfileOptionBuilder:
        """Totals count displayed nodes only (True) or every node below (False)."""
        self._options["account_displayed_op_only"] = is_true
        return self

    def with_empty_output(self) -> ProfileOptionBuilder:
        """Prints nothing (the returned proto still has everything)."""
        self._options["output"] = "none"
        return self

    def with_stdout_output(self) -> ProfileOptionBuilder:
        self._options["output"] = "stdout"
        return self

    def with_file_output(self, outfile: str) -> ProfileOptionBuilder:
        """Writes the report to `outfile` instead of stdout."""
        self._options["output"] = f"file:outfile={outfile}"
        return self

    def with_timeline_output(self, timeline_file: str) -> ProfileOptionBuilder:
        self._options["output"] = f"timeline:outfile={timeline_file}"
        return self

    def with_pprof_output(self, pprof_file: str) -> ProfileOptionBuilder:
        self._options["output"] = f"pprof:outfile={pprof_file}"
        return self

    def order_by(self, attribute: str) -> ProfileOptionBuilder:
        """Orders siblings by "name", "params", "float_ops", "micros", "bytes", ..."""
        self._options["order_by"] = attribute
        return self

    def select(self, attributes) -> ProfileOptionBuilder:
        """The columns shown: "params", "float_ops", "micros", "bytes", ..."""
        self._options["select"] = copy.copy(attributes)
        return self

    def with_step(self, step: int) -> ProfileOptionBuilder:
        self._options["step"] = step
        return self
