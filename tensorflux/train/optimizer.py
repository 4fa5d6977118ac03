"""tf.train.Optimizer: gradients in, update ops out, built only from graph ops (paper §4.1).

`minimize` = `compute_gradients` (tf.gradients of the loss with respect to each variable's
handle) + `apply_gradients` (one fused ResourceApply* op per variable, or its sparse form for
IndexedSlices, grouped into one train op that also increments `global_step`). Subclasses
provide `_create_slots`, `_prepare`, `_resource_apply_dense` and `_resource_apply_sparse`.
"""

from __future__ import annotations

from tensorflux.autodiff import gradients
from tensorflux.control_flow import builders
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.graph import GraphKeys
from tensorflux.framework.indexed_slices import IndexedSlices
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, gather_ops, math_ops, sequence_ops
from tensorflux.variables import partitioned_variables, variable_scope, variables

GATE_NONE, GATE_OP, GATE_GRAPH = 0, 1, 2


def _var_key(var) -> tuple:
    return (var.op.graph, var.op.name)


def _is_resource(var) -> bool:
    """Whether `var` is a resource variable (not a TF1 reference variable): slots and the
    optimizer's own variables are made of the same kind, as TensorFlow's slot creator does."""
    handle = getattr(var, "handle", None)
    return handle is None or not handle.dtype._is_ref_dtype


class Optimizer:
    """Base class for optimizers (`tf.train.Optimizer`)."""

    GATE_NONE = GATE_NONE
    GATE_OP = GATE_OP
    GATE_GRAPH = GATE_GRAPH

    def __init__(self, use_locking: bool, name: str):
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name
        self._slots: dict[str, dict[tuple, object]] = {}
        self._non_slot_dict: dict[tuple, object] = {}

    def get_name(self) -> str:
        return self._name

    # ---- gradients ----------------------------------------------------------------------
    def compute_gradients(self, loss, var_list=None, gate_gradients=GATE_OP,
                          aggregation_method=None, colocate_gradients_with_ops=False,
                          grad_loss=None):
        """[(gradient, variable)] for every variable in var_list (default: trainable ones).

        A PartitionedVariable in var_list stands for its shards (TensorFlow raises
        AttributeError for it); each shard gets its own pair.

        Raises:
          ValueError: var_list is empty, or gate_gradients is not a GATE_* value.
          TypeError: the loss is not a floating-point tensor.
        """
        if callable(loss):
            loss = loss()
        if gate_gradients not in (GATE_NONE, GATE_OP, GATE_GRAPH):
            raise ValueError(f"gate_gradients must be one of: Optimizer.GATE_NONE, "
                             f"Optimizer.GATE_OP, Optimizer.GATE_GRAPH. Not {gate_gradients}")
        loss = convert_to_tensor(loss)
        if not (loss.dtype.is_floating or loss.dtype.is_complex):
            raise TypeError(f"Loss {loss.name} must be a floating-point tensor, got "
                            f"{loss.dtype.name}")
        if var_list is None:
            g = loss.graph
            var_list = g.get_collection(GraphKeys.TRAINABLE_VARIABLES) + \
                g.get_collection(GraphKeys.TRAINABLE_RESOURCE_VARIABLES)
        else:
            # A PartitionedVariable (or a list holding one) stands for its shards.
            if isinstance(var_list, partitioned_variables.PartitionedVariable):
                var_list = [var_list]
            var_list = partitioned_variables.flatten_variables(var_list)
        var_list = list(dict.fromkeys(var_list))
        if not var_list:
            raise ValueError("No variables to optimize.")
        grads = gradients.gradients(
            loss, var_list, grad_ys=grad_loss, gate_gradients=(gate_gradients == GATE_OP),
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops)
        if gate_gradients == GATE_GRAPH:
            dense = [gr for gr in grads if isinstance(gr, Tensor)]
            gated = iter(builders.tuple(dense))
            grads = [next(gated) if isinstance(gr, Tensor) else gr for gr in grads]
        pairs = list(zip(grads, var_list, strict=True))
        for gr, v in pairs:
            if gr is not None and gr.dtype.base_dtype is not v.dtype.base_dtype and \
                    v.dtype.base_dtype is not dtypes.resource:
                raise ValueError(f"Gradient of {v.name} has dtype {gr.dtype.name}, expected "
                                 f"{v.dtype.base_dtype.name}")
        return pairs

    def apply_gradients(self, grads_and_vars, global_step=None, name: str | None = None):
        """An op applying the gradients; it also increments `global_step` when given.

        Raises:
          ValueError: no variable has a gradient (TensorFlow's message lists them).
          TypeError: a gradient that is neither a Tensor nor IndexedSlices.
        """
        grads_and_vars = list(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("No variables provided.")
        for gr, _ in grads_and_vars:
            if gr is not None and not isinstance(gr, (Tensor, IndexedSlices)):
                raise TypeError(f"Gradient must be convertible to a Tensor or IndexedSlices, "
                                f"or None: {gr!r}")
        with_grad = [v for gr, v in grads_and_vars if gr is not None]
        if not with_grad:
            names = [v.name for _, v in grads_and_vars]
            raise ValueError(f"No gradients provided for any variable, check your graph for "
                             f"ops that do not support gradients, between variables {names} "
                             "and loss.")
        g = graph_lib.get_graph_from_inputs([v.handle for v in with_grad])
        with g.as_default():
            # Slots are made in the caller's name scope, as TF's init_scope leaves it, so
            # the update ops below get the scope "<name>", not "<name>_1".
            with g.control_dependencies(None):
                self._create_slots(with_grad)
            updates = []
            with graph_lib.name_scope(name, self._name, []) as scope:
                self._prepare()
                for gr, v in grads_and_vars:
                    if gr is None:
                        continue
                    with graph_lib.name_scope("update_" + v.op.name), g.colocate_with(v.handle):
                        if isinstance(gr, IndexedSlices):
                            updates.append(self._resource_apply_sparse_duplicate_indices(
                                gr.values, v, gr.indices))
                        else:
                            updates.append(self._resource_apply_dense(gr, v))
                if global_step is None:
                    apply_updates = self._finish(updates, scope)
                else:
                    with g.control_dependencies([self._finish(updates, "update")]):
                        with g.colocate_with(global_step.handle):
                            inc = global_step.assign_add(1, name=scope, read_value=False)
                            apply_updates = inc if not isinstance(inc, Tensor) else (
                                builders.group(inc, name=scope))
            # TF1 adds every train op to the TRAIN_OP collection (ptb_word_lm.py reads it
            # back after import_meta_graph).
            if isinstance(apply_updates, Tensor):
                apply_updates = apply_updates.op
            train_ops = g.get_collection_ref(GraphKeys.TRAIN_OP)
            if apply_updates not in train_ops:
                train_ops.append(apply_updates)
            return apply_updates

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=GATE_OP,
                 aggregation_method=None, colocate_gradients_with_ops=False,
                 name: str | None = None, grad_loss=None):
        """compute_gradients + apply_gradients; returns the train op."""
        grads_and_vars = self.compute_gradients(
            loss, var_list=var_list, gate_gradients=gate_gradients,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops, grad_loss=grad_loss)
        if not any(gr is not None for gr, _ in grads_and_vars):
            names = [v.name for _, v in grads_and_vars]
            loss_name = loss.name if isinstance(loss, Tensor) else loss
            raise ValueError(f"No gradients provided for any variable, check your graph for "
                             f"ops that do not support gradients, between variables {names} "
                             f"and loss {loss_name}.")
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    # ---- slots --------------------------------------------------------------------------
    def get_slot_names(self) -> list[str]:
        return sorted(self._slots)

    def get_slot(self, var, name: str):
        slots = self._slots.get(name)
        return None if slots is None else slots.get(_var_key(var))

    def _checkpoint_children(self) -> list:
        """The non-slot variables of the default graph by name (Adam's beta powers), as
        TF1 optimizers track them for object-based checkpoints; the slot variables are
        found through `get_slot` (variables/trackable.py)."""
        graph = graph_lib.get_default_graph()
        return [(name, v) for (g, name), v in self._non_slot_dict.items() if g is graph]

    def variables(self) -> list:
        """Slot and non-slot variables this optimizer created, sorted by name."""
        out = [v for slots in self._slots.values() for v in slots.values()]
        out += list(self._non_slot_dict.values())
        return sorted(out, key=lambda v: v.name)

    def _zeros_slot(self, var, slot_name: str, op_name: str):
        return self._slot(var, slot_name, op_name,
                          lambda: array_ops.zeros(var.shape.as_list(), var.dtype.base_dtype))

    def _get_or_make_slot(self, var, value, slot_name: str, op_name: str):
        return self._slot(var, slot_name, op_name,
                          lambda: convert_to_tensor(value, dtype=var.dtype.base_dtype))

    def _slot(self, var, slot_name: str, op_name: str, make_initial):
        """A slot variable for `var`, colocated with it, named `<var>/<op_name>` under the
        caller's variable scope (as TF's slot creator: `minimize` inside
        `variable_scope("train")` makes "train/w/Adam")."""
        slots = self._slots.setdefault(slot_name, {})
        key = _var_key(var)
        if key not in slots:
            g = var.op.graph
            with g.as_default():
                scope = variable_scope.get_variable_scope().name
            prefix = (scope + "/" if scope else "") + var.op.name + "/"
            with g.as_default(), graph_lib.name_scope(None), g.colocate_with(var.handle):
                with g.name_scope(prefix):
                    slots[key] = variables.Variable(make_initial, trainable=False,
                                                    name=op_name,
                                                    dtype=var.dtype.base_dtype,
                                                    use_resource=_is_resource(var))
        return slots[key]

    def _non_slot_variable(self, initial_value, name: str, colocate_with):
        """One variable per graph shared by all slots (e.g. Adam's beta powers), named in
        the caller's name scope as TF does ("optimizer/beta1_power" when `minimize` runs in
        `name_scope("optimizer")`): TF1 checkpoints carry these names."""
        g = colocate_with.op.graph
        key = (g, name)
        if key not in self._non_slot_dict:
            with g.as_default(), g.colocate_with(colocate_with.handle):
                self._non_slot_dict[key] = variables.Variable(
                    initial_value, name=name, trainable=False,
                    use_resource=_is_resource(colocate_with))
        return self._non_slot_dict[key]

    def _get_non_slot_variable(self, name: str, graph=None):
        graph = graph or graph_lib.get_default_graph()
        return self._non_slot_dict.get((graph, name))

    # ---- subclass hooks -----------------------------------------------------------------
    def _create_slots(self, var_list) -> None:
        pass

    def _prepare(self) -> None:
        pass

    def _resource_apply_dense(self, grad, var):
        raise NotImplementedError

    def _resource_apply_sparse(self, grad, var, indices):
        raise NotImplementedError

    def _resource_apply_sparse_duplicate_indices(self, grad, var, indices):
        """Sums the rows of repeated indices first, then applies the sparse update."""
        values, unique = _deduplicate(grad, indices)
        return self._resource_apply_sparse(values, var, unique)

    def _finish(self, update_ops, name_scope: str):
        return builders.group(*update_ops, name=name_scope)

    def _hyper(self, value, var, name: str):
        """A hyperparameter as a tensor of the variable's dtype."""
        t = convert_to_tensor(value, name=name) if not isinstance(value, Tensor) else value
        if t.dtype.base_dtype is not var.dtype.base_dtype:
            t = math_ops.cast(t, var.dtype.base_dtype)
        return t



class WrappingOptimizer(Optimizer):
    """An optimizer around another one, `self._opt` (SyncReplicasOptimizer, contrib.tpu's
    CrossShardOptimizer): the slots and variables are the wrapped optimizer's."""

    def get_slot(self, *args, **kwargs):
        """The wrapped optimizer's slot."""
        return self._opt.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        """The wrapped optimizer's slot names."""
        return self._opt.get_slot_names(*args, **kwargs)

    def variables(self):
        """The wrapped optimizer's variables."""
        return self._opt.variables()

def _deduplicate(values, indices):
    unique, positions = gather_ops.unique(indices)
    summed = sequence_ops.unsorted_segment_sum(values, positions, array_ops.shape(unique)[0])
    return summed, unique
