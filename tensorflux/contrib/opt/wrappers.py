"""contrib.opt's optimizers that wrap another one: MovingAverageOptimizer (an exponential
moving average of the trained variables, and a Saver that swaps them in),
VariableClippingOptimizer (max-norm clipping of variables after each update), and
`clip_gradients_by_global_norm`."""

from __future__ import annotations

from tensorflux.control_flow import builders
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.indexed_slices import IndexedSlices
from tensorflux.nn import clip_ops
from tensorflux.ops import gather_ops, state_ops
from tensorflux.train import moving_averages
from tensorflux.train import saver as saver_lib
from tensorflux.train.optimizer import WrappingOptimizer
from tensorflux.variables import variables


class MovingAverageOptimizer(WrappingOptimizer):
    """`opt` plus an exponential moving average of the variables it trains, updated after
    each step (`sequential_update`) or beside it; `swapping_saver()` saves the averages
    under the variables' names (and the variables under the averages'), so a model restored
    from its checkpoints evaluates the averaged weights."""

    def __init__(self, opt, average_decay=0.9999, num_updates=None, sequential_update=True):
        super().__init__(False, "MovingAverage")
        self._opt = self._optimizer = opt
        self._ema = moving_averages.ExponentialMovingAverage(average_decay,
                                                             num_updates=num_updates,
                                                             zero_debias=False)
        self._swapped_variable_name_map = None
        self._sequential_update = sequential_update

    def compute_gradients(self, *args, **kwargs):
        """The wrapped optimizer's gradients."""
        return self._opt.compute_gradients(*args, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """The wrapped optimizer's step, then the averages' update ("train_with_avg")."""
        grads_and_vars = list(grads_and_vars)
        train_op = self._opt.apply_gradients(grads_and_vars, global_step=global_step,
                                             name=name)
        var_list = [v for g, v in grads_and_vars if g is not None]
        self._swapped_variable_name_map = {}
        if self._sequential_update:
            with graph_lib.control_dependencies([train_op]):
                ma_op = self._ema.apply(var_list)
        else:
            ma_op = self._ema.apply(var_list)
        for v in var_list:
            v_avg = self._ema.average(v)
            self._swapped_variable_name_map[v.op.name] = v_avg.op.name
            self._swapped_variable_name_map[v_avg.op.name] = v.op.name
        return builders.group(train_op, ma_op, name="train_with_avg")

    def swapping_saver(self, var_list=None, name="swapping_saver", **kwargs):
        """A Saver writing each averaged variable's average under its name and back.

        Raises:
          RuntimeError: called before `apply_gradients`/`minimize`.
          ValueError: a variable's counterpart is not among those saved.
        """
        if self._swapped_variable_name_map is None:
            raise RuntimeError("Must call apply_gradients or minimize before creating the "
                               "swapping_saver")
        if var_list is None:
            var_list = variables.global_variables()
        if not isinstance(var_list, dict):
            var_list = {v.op.name: v for v in var_list}
        swapped = {}
        for key, var in var_list.items():
            other = self._swapped_variable_name_map.get(key)
            if other is None:
                swapped[key] = var
            elif other in var_list:
                swapped[key] = var_list[other]
            else:
                raise ValueError(f"Variable to swap {other} is not part of variables to save. "
                                 "This breaks MovingAverageOptimizer.")
        return saver_lib.Saver(swapped, name=name, **kwargs)


class VariableClippingOptimizer(WrappingOptimizer):
    """`opt`, then each variable in `vars_to_clip_dims` ({variable: dims}) clipped to
    `max_norm` along `dims` (max-norm regularisation; `tf.contrib.opt.
    VariableClippingOptimizer`). For a sparse gradient only the rows it names are clipped.
    """

    def __init__(self, opt, vars_to_clip_dims, max_norm, use_locking=False,
                 colocate_clip_ops_with_vars=False, name="VariableClipping"):
        super().__init__(use_locking, name)
        self._opt = opt
        self._vars_to_clip_dims = {_key(v): (v, dims) for v, dims in
                                   vars_to_clip_dims.items()}
        self._max_norm = max_norm
        self._colocate_clip_ops_with_vars = colocate_clip_ops_with_vars

    def compute_gradients(self, *args, **kwargs):
        """The wrapped optimizer's gradients."""
        return self._opt.compute_gradients(*args, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """The wrapped optimizer's step, then the clipping of the listed variables."""
        grads_and_vars = list(grads_and_vars)
        with graph_lib.name_scope(name, self._name) as scope:
            update_op = self._opt.apply_gradients(grads_and_vars, global_step=global_step)
            clips = []
            with graph_lib.control_dependencies([update_op]):
                for grad, var in grads_and_vars:
                    if grad is None or _key(var) not in self._vars_to_clip_dims:
                        continue
                    dims = self._vars_to_clip_dims[_key(var)][1]
                    with graph_lib.name_scope("clip_" + var.op.name):
                        if isinstance(grad, IndexedSlices):
                            clips.append(self._clip_sparse(grad, var, dims))
                        else:
                            clips.append(self._clip_dense(var, dims))
            return builders.group(update_op, *clips, name=scope)

    def _clip_dense(self, var, dims):
        value = var.read_value()
        delta = value - clip_ops.clip_by_norm(value, self._max_norm, dims)
        return var.assign_sub(delta, use_locking=self._use_locking, read_value=False)

    def _clip_sparse(self, grad, var, dims):
        if 0 in [d % max(var.shape.ndims or 1, 1) for d in dims]:
            raise ValueError("Cannot clip along the first dimension of a variable updated "
                             "sparsely")
        indices = gather_ops.unique(grad.indices)[0]
        rows = gather_ops.gather(var.read_value(), indices)
        delta = rows - clip_ops.clip_by_norm(rows, self._max_norm, dims)
        return state_ops.resource_scatter_sub(var.handle, indices, delta)


def _key(var):
    return var.handle if isinstance(var, variables.Variable) else var


def clip_gradients_by_global_norm(gradients_variables, clip_norm=20.0):
    """[(gradient, variable)] with the gradients scaled together so their global norm is at
    most `clip_norm`; returns (pairs, global norm)."""
    gradients, variables_ = zip(*gradients_variables, strict=True)
    clipped, norm = clip_ops.clip_by_global_norm(list(gradients), clip_norm)
    return list(zip(clipped, variables_, strict=True)), norm

