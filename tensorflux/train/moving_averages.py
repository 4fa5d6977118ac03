"""`tf.train.ExponentialMovingAverage` and `assign_moving_average`: shadow copies of
variables (or tensors) kept as exponential moving averages, built from graph ops only.

Names and semantics as TensorFlow 1's: a variable `v`'s shadow is `v/<name>` (default name
"ExponentialMovingAverage"), colocated with `v`, non-trainable, initialized to `v`'s initial
value (a tensor's shadow starts at zero, zero-debiased when asked); each `apply` adds the
averaged variables to the MOVING_AVERAGE_VARIABLES collection; with `num_updates` the decay
is min(decay, (1 + num_updates) / (10 + num_updates)); `variables_to_restore` maps shadow
names to the variables, for restoring averaged weights into a model.
"""

from __future__ import annotations

from tensorflux.control_flow import builders
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.graph import GraphKeys
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, math_ops
from tensorflux.variables import variables

__all__ = ["ExponentialMovingAverage", "assign_moving_average"]


def _zero_debias(shadow, value, decay, update_name):
    """shadow := EMA of `value` divided by 1 - decay^t (the bias of a zero start), with the
    biased average and the step count kept in variables beside `shadow`.

    As TF's, those are made by get_variable in a variable scope named after `shadow`'s
    op, opened inside the current variable scope: inside scope "s" (contrib's batch_norm),
    "s/s/moving_mean/biased"; a name taken gets "_1", "_2", ... unless reusing."""
    from tensorflux.variables import init_ops, variable_scope

    g = graph_lib.get_default_graph()
    with variable_scope.variable_scope(shadow.op.name, values=[shadow, value, decay]):
        scope = variable_scope.get_variable_scope()

        def unique(name):
            if scope.reuse:
                return name
            taken = {v.op.name for v in scope.global_variables()}
            full, i = f"{scope.name}/{name}", 1
            if full not in taken:
                return name
            while f"{full}_{i}" in taken:
                i += 1
            return f"{name}_{i}"
        with g.colocate_with(shadow.handle):
            biased = variable_scope.get_variable(
                unique("biased"), shape=shadow.shape, dtype=shadow.dtype.base_dtype,
                initializer=init_ops.zeros_initializer(), trainable=False)
            local_step = variable_scope.get_variable(
                unique("local_step"), shape=[], dtype=shadow.dtype.base_dtype,
                initializer=init_ops.zeros_initializer(), trainable=False)
    one = math_ops.cast(1.0, shadow.dtype.base_dtype)
    update_biased = biased.assign_sub((biased - value) * (one - decay))
    update_step = local_step.assign_add(one)
    factor = one - math_ops.pow(decay, update_step)
    # The update is named by the caller's scope, as TF's: "<scope>/AssignMovingAvg".
    return shadow.assign(update_biased / factor, name=update_name)


def assign_moving_average(variable, value, decay, zero_debias=True, name=None):
    """variable := variable - (1 - decay) * (variable - value) (`tf.train` /
    `moving_averages.assign_moving_average`); with `zero_debias`, the average of a
    variable that started at zero, corrected for that start."""
    with graph_lib.name_scope(name, "AssignMovingAvg", [variable, value, decay]) as scope:
        g = graph_lib.get_default_graph()
        with g.colocate_with(variable.handle):
            decay = convert_to_tensor(decay, dtype=variable.dtype.base_dtype)
            value = convert_to_tensor(value, dtype=variable.dtype.base_dtype)
            if zero_debias:
                return _zero_debias(variable, value, decay, scope)
            one = math_ops.cast(1.0, variable.dtype.base_dtype)
            return variable.assign_sub((variable - value) * (one - decay), name=scope)


class ExponentialMovingAverage:
    """Keeps moving averages of variables and tensors (`tf.train.ExponentialMovingAverage`).

    Args:
      decay: the decay (e.g. 0.999).
      num_updates: an optional count of updates (e.g. the global step): the decay is
        min(decay, (1 + num_updates) / (10 + num_updates)), so early averages move faster.
      zero_debias: zero-debias the averages of tensors (variables start at their value).
      name: the shadow variables' suffix and the name of `apply`'s op.
    """

    def __init__(self, decay, num_updates=None, zero_debias=False,
                 name="ExponentialMovingAverage"):
        self._decay = decay
        self._num_updates = num_updates
        self._zero_debias = zero_debias
        self._name = name
        self._averages: dict = {}

    @property
    def name(self) -> str:
        return self._name

    @staticmethod
    def _key(v):
        return v.handle if isinstance(v, variables.Variable) else v

    def apply(self, var_list=None):
        """Creates the shadows of `var_list` (default: the trainable variables) and returns
        the op that updates them all.

        Raises:
          TypeError: an entry that is not a float variable or tensor.
          ValueError: an entry given twice across calls.
        """
        if var_list is None:
            var_list = variables.trainable_variables()
        var_list = list(var_list)
        for v in var_list:
            dtype = v.dtype.base_dtype
            if dtype not in (dtypes.float16, dtypes.float32, dtypes.float64, dtypes.bfloat16):
                raise TypeError(f"The variables must be half, float, or double: {v.name}")
            if self._key(v) in self._averages:
                raise ValueError(f"Moving average already computed for: {v.name}")
        g = graph_lib.get_default_graph()
        zero_debiased = set()
        for v in var_list:
            is_var = isinstance(v, variables.Variable)
            base = v.op.name
            with graph_lib.name_scope(None), g.colocate_with(v.handle if is_var else v.op):
                with g.name_scope(base + "/"):
                    initial = v.initialized_value() if is_var else \
                        array_ops.zeros(v.shape.as_list(), v.dtype.base_dtype)
                    # The shadow of a variable is of its kind (TF's slot creator).
                    shadow = variables.Variable(
                        initial, trainable=False, name=self._name, dtype=v.dtype.base_dtype,
                        use_resource=not v.handle.dtype._is_ref_dtype if is_var else None)
            self._averages[self._key(v)] = shadow
            if is_var:
                graph_lib.add_to_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, v)
            elif self._zero_debias:
                zero_debiased.add(id(shadow))
        with graph_lib.name_scope(self._name) as scope:
            decay = convert_to_tensor(self._decay, name="decay")
            if self._num_updates is not None:
                n = math_ops.cast(self._num_updates, dtypes.float32, name="num_updates")
                decay = math_ops.minimum(decay, (1.0 + n) / (10.0 + n))
            updates = []
            for v in var_list:
                shadow = self._averages[self._key(v)]
                value = v.read_value() if isinstance(v, variables.Variable) else v
                d = math_ops.cast(decay, shadow.dtype.base_dtype)
                updates.append(assign_moving_average(
                    shadow, value, d, zero_debias=id(shadow) in zero_debiased))
            return builders.group(*updates, name=scope)

    def average(self, var):
        """The shadow variable of `var`, or None."""
        return self._averages.get(self._key(var))

    def average_name(self, var) -> str:
        """The name `var`'s shadow has (or would have): `<var op name>/<name>`."""
        if isinstance(var, variables.Variable):
            return f"{var.op.name}/{self._name}"
        avg = self._averages.get(self._key(var))
        return avg.op.name if avg is not None else f"{var.op.name}/{self._name}"

    def variables_to_restore(self, moving_avg_variables=None) -> dict:
        """{name in a checkpoint: variable}: each averaged variable under its shadow's name,
        every other global variable under its own (for `Saver(ema.variables_to_restore())`
        loading averaged weights into the model)."""
        if moving_avg_variables is None:
            moving_avg_variables = variables.trainable_variables() + \
                variables.moving_average_variables()
        name_map = {}
        seen = set()
        for v in moving_avg_variables:
            if id(v.handle) in seen:
                continue
            seen.add(id(v.handle))
            name_map[self.average_name(v)] = v
        names = {v.name for v in moving_avg_variables}
        for v in variables.global_variables():
            if v.name not in names and v.op.name not in name_map:
                name_map[v.op.name] = v
        return name_map

