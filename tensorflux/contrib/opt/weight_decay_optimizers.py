"""Decoupled weight decay (Loshchilov & Hutter, "Decoupled Weight Decay Regularization"),
`tf.contrib.opt.extend_with_decoupled_weight_decay`, AdamWOptimizer and MomentumWOptimizer.

Before the wrapped optimizer's update, each variable (or each row a sparse gradient names)
is decayed by `var -= weight_decay * var`; the decay is not scaled by the learning rate.
`decay_var_list` (to `apply_gradients`) limits the decay to those variables. Given to
`minimize` it has no effect, as in TF 1.15: `minimize` calls `apply_gradients`, which resets
the list (every variable is decayed).
"""

from __future__ import annotations

from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import control_flow_ops, gather_ops, state_ops
from tensorflux.train.adam import AdamOptimizer
from tensorflux.train.momentum import MomentumOptimizer
from tensorflux.train.optimizer import GATE_OP


class DecoupledWeightDecayExtension:
    """The mixin that adds decoupled weight decay to an optimizer class (put it first in the
    bases: `class MyW(DecoupledWeightDecayExtension, MyOptimizer)`).

    Args:
      weight_decay: a float, a Tensor, or a callable returning one (read per step).
    """

    def __init__(self, weight_decay, *args, **kwargs):
        self._decay_var_list = None
        self._weight_decay = weight_decay
        self._weight_decay_tensor = None
        super().__init__(*args, **kwargs)

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=GATE_OP,
                 aggregation_method=None, colocate_gradients_with_ops=False, name=None,
                 grad_loss=None, decay_var_list=None):
        """As Optimizer.minimize. `decay_var_list` is overridden by the `apply_gradients` call
        it makes (TF 1.15's behaviour): every variable is decayed."""
        self._decay_var_list = list(decay_var_list) if decay_var_list else False
        return super().minimize(loss, global_step=global_step, var_list=var_list,
                                gate_gradients=gate_gradients,
                                aggregation_method=aggregation_method,
                                colocate_gradients_with_ops=colocate_gradients_with_ops,
                                name=name, grad_loss=grad_loss)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None,
                        decay_var_list=None):
        """As Optimizer.apply_gradients; `decay_var_list` as in `minimize`."""
        self._decay_var_list = list(decay_var_list) if decay_var_list else False
        return super().apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def _prepare(self):
        weight_decay = self._weight_decay
        if callable(weight_decay):
            weight_decay = weight_decay()
        self._weight_decay_tensor = convert_to_tensor(weight_decay, name="weight_decay")
        super()._prepare()

    def _decays(self, var) -> bool:
        return not self._decay_var_list or any(var is v for v in self._decay_var_list)

    def _decay_weights_op(self, var):
        if self._decays(var):
            decay = self._hyper(self._weight_decay_tensor, var, "weight_decay")
            return var.assign_sub(decay * var.read_value(), use_locking=self._use_locking,
                                  read_value=False)
        return control_flow_ops.no_op()

    def _decay_weights_sparse_op(self, var, indices):
        if self._decays(var):
            decay = self._hyper(self._weight_decay_tensor, var, "weight_decay")
            rows = gather_ops.gather(var.read_value(), indices)
            return state_ops.resource_scatter_add(var.handle, indices, -decay * rows)
        return control_flow_ops.no_op()

    def _resource_apply_dense(self, grad, var):
        with graph_lib.control_dependencies([self._decay_weights_op(var)]):
            return super()._resource_apply_dense(grad, var)

    def _resource_apply_sparse(self, grad, var, indices):
        with graph_lib.control_dependencies([self._decay_weights_sparse_op(var, indices)]):
            return super()._resource_apply_sparse(grad, var, indices)


def extend_with_decoupled_weight_decay(base_optimizer):
    """A subclass of `base_optimizer` (an Optimizer class) with decoupled weight decay; its
    constructor takes `weight_decay` first, then `base_optimizer`'s arguments.

    Returns:
      The new optimizer class.
    """

    class OptimizerWithDecoupledWeightDecay(DecoupledWeightDecayExtension, base_optimizer):
        __doc__ = f"{base_optimizer.__name__} with decoupled weight decay."

        def __init__(self, weight_decay, *args, **kwargs):
            super().__init__(weight_decay, *args, **kwargs)

    return OptimizerWithDecoupledWeightDecay


class MomentumWOptimizer(DecoupledWeightDecayExtension, MomentumOptimizer):
    """Momentum with decoupled weight decay (`tf.contrib.opt.MomentumWOptimizer`)."""

    def __init__(self, weight_decay, learning_rate, momentum, use_locking=False,
                 name="MomentumW", use_nesterov=False):
        super().__init__(weight_decay, learning_rate=learning_rate, momentum=momentum,
                         use_locking=use_locking, name=name, use_nesterov=use_nesterov)


class AdamWOptimizer(DecoupledWeightDecayExtension, AdamOptimizer):
    """Adam with decoupled weight decay (`tf.contrib.opt.AdamWOptimizer`)."""

    def __init__(self, weight_decay, learning_rate=0.001, beta1=0.9, beta2=0.999,
                 epsilon=1e-8, use_locking=False, name="AdamW"):
        super().__init__(weight_decay, learning_rate=learning_rate, beta1=beta1, beta2=beta2,
                         epsilon=epsilon, use_locking=use_locking, name=name)
