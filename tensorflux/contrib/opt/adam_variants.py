"""contrib.opt's Adam family: LazyAdamOptimizer (sparse gradients update only the rows they
name), NadamOptimizer (Adam with Nesterov momentum) and AdaMaxOptimizer (the infinity-norm
Adam), as TF 1.15 computes each."""

from __future__ import annotations

from tensorflux.control_flow import builders
from tensorflux.framework import graph as graph_lib
from tensorflux.ops import gather_ops, math_ops, state_ops, training_ops, unary_ops
from tensorflux.train.adam import AdamOptimizer


def _slice(var, indices):
    return gather_ops.gather(var.read_value(), indices)


def _sparse_terms(opt, var):
    """(lr_t, beta1, beta2, epsilon, m, v) of an Adam-family optimizer's sparse update of
    `var`: lr_t = lr sqrt(1 - beta2^t) / (1 - beta1^t), the hyperparameters as tensors
    of `var`'s dtype, and the slots."""
    b1p, b2p = opt._get_beta_accumulators()  # noqa: SLF001 - AdamOptimizer's own parts
    h = opt._hyper  # noqa: SLF001
    b1p, b2p = h(b1p.value(), var, "beta1_power"), h(b2p.value(), var, "beta2_power")
    lr = h(opt._lr, var, "learning_rate") * unary_ops.sqrt(1 - b2p) / (1 - b1p)  # noqa: SLF001
    beta1, beta2 = h(opt._beta1, var, "beta1"), h(opt._beta2, var, "beta2")  # noqa: SLF001
    eps = h(opt._epsilon, var, "epsilon")  # noqa: SLF001
    return lr, beta1, beta2, eps, opt.get_slot(var, "m"), opt.get_slot(var, "v")


class LazyAdamOptimizer(AdamOptimizer):
    """Adam whose sparse update touches only the rows a gradient names
    (`tf.contrib.opt.LazyAdamOptimizer`): m and v of the other rows are not decayed, so on
    sparse gradients it differs from Adam; on dense gradients it is Adam."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 use_locking=False, name="LazyAdam"):
        super().__init__(learning_rate, beta1, beta2, epsilon, use_locking, name)

    def _resource_apply_sparse(self, grad, var, indices):
        lr, beta1, beta2, eps, m, v = _sparse_terms(self, var)
        m_new = beta1 * _slice(m, indices) + (1 - beta1) * grad
        m_t = state_ops.resource_scatter_update(m.handle, indices, m_new)
        v_new = beta2 * _slice(v, indices) + (1 - beta2) * unary_ops.square(grad)
        v_t = state_ops.resource_scatter_update(v.handle, indices, v_new)
        with graph_lib.control_dependencies([m_t, v_t]):
            step = lr * _slice(m, indices) / (unary_ops.sqrt(_slice(v, indices)) + eps)
            return state_ops.resource_scatter_sub(var.handle, indices, step)


class NadamOptimizer(AdamOptimizer):
    """Adam with Nesterov momentum (Dozat 2016; `tf.contrib.opt.NadamOptimizer`):
    var -= lr_t (beta1 m_t + (1 - beta1) g) / (sqrt(v_t) + epsilon)."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 use_locking=False, name="Adam"):
        super().__init__(learning_rate, beta1, beta2, epsilon, use_locking, name)

    def _resource_apply_dense(self, grad, var):
        return training_ops.resource_apply_adam(*self._args(var), grad,
                                                use_locking=self._use_locking,
                                                use_nesterov=True)

    def _resource_apply_sparse(self, grad, var, indices):
        lr, beta1, beta2, eps, m, v = _sparse_terms(self, var)
        m_scaled = grad * (1 - beta1)
        m_t = m.assign(m.read_value() * beta1, use_locking=self._use_locking)
        with graph_lib.control_dependencies([m_t]):
            m_t = state_ops.resource_scatter_add(m.handle, indices, m_scaled)
        with graph_lib.control_dependencies([m_t]):
            m_bar = m_scaled + beta1 * _slice(m, indices)
        v_t = v.assign(v.read_value() * beta2, use_locking=self._use_locking)
        with graph_lib.control_dependencies([v_t]):
            v_t = state_ops.resource_scatter_add(v.handle, indices,
                                                 (grad * grad) * (1 - beta2))
        with graph_lib.control_dependencies([v_t]):
            v_sqrt = unary_ops.sqrt(_slice(v, indices))
            return state_ops.resource_scatter_add(var.handle, indices,
                                                  -lr * m_bar / (v_sqrt + eps))


class AdaMaxOptimizer(AdamOptimizer):
    """Adam with the infinity norm (Kingma & Ba, section 7; `tf.contrib.opt.AdaMaxOptimizer`):
    m = beta1 m + (1 - beta1) g; v = max(beta2 v, |g|);
    var -= lr / (1 - beta1^t) m / (v + epsilon)."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 use_locking=False, name="AdaMax"):
        super().__init__(learning_rate, beta1, beta2, epsilon, use_locking, name)

    def _create_slots(self, var_list):
        first = min(var_list, key=lambda v: v.name)
        self._non_slot_variable(float(self._beta1), "beta1_power", first)
        for v in var_list:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name)

    def _finish(self, update_ops, name_scope):
        b1p = self._get_non_slot_variable("beta1_power", graph_lib.get_default_graph())
        with graph_lib.control_dependencies(update_ops):
            with b1p.op.graph.colocate_with(b1p.handle):
                u1 = b1p.assign(b1p.read_value() * self._beta1,
                                use_locking=self._use_locking, read_value=False)
        return builders.group(*update_ops, u1, name=name_scope)

    def _step(self, var):
        b1p = self._get_non_slot_variable("beta1_power", graph_lib.get_default_graph())
        h = self._hyper
        lr = h(self._lr, var, "learning_rate") / (1 - h(b1p.value(), var, "beta1_power"))
        return (lr, h(self._beta1, var, "beta1"), h(self._beta2, var, "beta2"),
                h(self._epsilon, var, "epsilon"))

    def _resource_apply_dense(self, grad, var):
        lr, beta1, beta2, eps = self._step(var)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m_t = m.assign(beta1 * m.read_value() + (1 - beta1) * grad,
                       use_locking=self._use_locking)
        v_t = v.assign(math_ops.maximum(beta2 * v.read_value(), unary_ops.abs(grad)),
                       use_locking=self._use_locking)
        with graph_lib.control_dependencies([m_t, v_t]):
            return var.assign_sub(lr * m.read_value() / (v.read_value() + eps),
                                  use_locking=self._use_locking, read_value=False)

    def _resource_apply_sparse(self, grad, var, indices):
        lr, beta1, beta2, eps = self._step(var)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m_t = state_ops.resource_scatter_update(
            m.handle, indices, beta1 * _slice(m, indices) + (1 - beta1) * grad)
        v_t = state_ops.resource_scatter_update(
            v.handle, indices,
            math_ops.maximum(beta2 * _slice(v, indices), unary_ops.abs(grad)))
        with graph_lib.control_dependencies([m_t, v_t]):
            step = lr * _slice(m, indices) / (_slice(v, indices) + eps)
            return state_ops.resource_scatter_sub(var.handle, indices, step)
