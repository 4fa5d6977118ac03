"""tf.train.AdamOptimizer (Kingma & Ba), with TensorFlow's epsilon-hat formulation.

lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t); m = beta1 m + (1 - beta1) g;
v = beta2 v + (1 - beta2) g^2; var -= lr_t m / (sqrt(v) + epsilon). The powers beta1^t and
beta2^t are two non-slot variables updated once per step, after all variables' updates.
"""

from __future__ import annotations

from tensorflux.control_flow import builders
from tensorflux.framework import graph as graph_lib
from tensorflux.ops import state_ops, training_ops, unary_ops
from tensorflux.train.optimizer import Optimizer


class AdamOptimizer(Optimizer):
    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 use_locking: bool = False, name: str = "Adam"):
        super().__init__(use_locking, name)
        self._lr, self._beta1, self._beta2, self._epsilon = learning_rate, beta1, beta2, epsilon

    def _get_beta_accumulators(self):
        g = graph_lib.get_default_graph()
        return (self._get_non_slot_variable("beta1_power", g),
                self._get_non_slot_variable("beta2_power", g))

    def _create_slots(self, var_list):
        first = min(var_list, key=lambda v: v.name)
        self._non_slot_variable(float(self._beta1), "beta1_power", first)
        self._non_slot_variable(float(self._beta2), "beta2_power", first)
        for v in var_list:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name)

    def _args(self, var):
        b1p, b2p = self._get_beta_accumulators()
        h = self._hyper
        return (var.handle, self.get_slot(var, "m").handle, self.get_slot(var, "v").handle,
                # value(), not read_value(): the read must not join `var`'s colocation
                # group, or every variable would be tied to the beta powers' device.
                h(b1p.value(), var, "beta1_power"),
                h(b2p.value(), var, "beta2_power"),
                h(self._lr, var, "learning_rate"), h(self._beta1, var, "beta1"),
                h(self._beta2, var, "beta2"), h(self._epsilon, var, "epsilon"))

    def _resource_apply_dense(self, grad, var):
        return training_ops.resource_apply_adam(*self._args(var), grad,
                                                use_locking=self._use_locking)

    def _resource_apply_sparse(self, grad, var, indices):
        """Sparse Adam as TensorFlow does it: decay every row of m and v, add the new
        gradient rows with scatter-add, then update the variable densely."""
        b1p, b2p = self._get_beta_accumulators()
        h = self._hyper
        lr = h(self._lr, var, "learning_rate")
        beta1, beta2 = h(self._beta1, var, "beta1"), h(self._beta2, var, "beta2")
        eps = h(self._epsilon, var, "epsilon")
        b1p, b2p = h(b1p.value(), var, "b1p"), h(b2p.value(), var, "b2p")
        lr_t = lr * unary_ops.sqrt(1 - b2p) / (1 - b1p)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m_t = m.assign(m.read_value() * beta1, use_locking=self._use_locking)
        with graph_lib.control_dependencies([m_t]):
            m_t = state_ops.resource_scatter_add(m.handle, indices, grad * (1 - beta1))
        v_t = v.assign(v.read_value() * beta2, use_locking=self._use_locking)
        with graph_lib.control_dependencies([v_t]):
            v_t = state_ops.resource_scatter_add(v.handle, indices,
                                                 grad * grad * (1 - beta2))
        with graph_lib.control_dependencies([m_t, v_t]):
            step = lr_t * m.read_value() / (unary_ops.sqrt(v.read_value()) + eps)
            return var.assign_sub(step, use_locking=self._use_locking, read_value=False)

    def _finish(self, update_ops, name_scope):
        b1p, b2p = self._get_beta_accumulators()
        with graph_lib.control_dependencies(update_ops):
            g = b1p.op.graph
            with g.colocate_with(b1p.handle):
                u1 = b1p.assign(_current(b1p) * self._beta1, use_locking=self._use_locking,
                                read_value=False)
                u2 = b2p.assign(_current(b2p) * self._beta2, use_locking=self._use_locking,
                                read_value=False)
        return builders.group(*update_ops, u1, u2, name=name_scope)


def _current(v):
    """The power's value for its update: a new read of a resource variable, the snapshot
    ("beta1_power/read") of a TF1 reference variable, as TensorFlow builds each."""
    return v.value() if v.handle.dtype._is_ref_dtype else v.read_value()
