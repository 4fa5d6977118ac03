"""`tf.contrib.estimator.replicate_model_fn` and `TowerOptimizer` (TF 1.5-1.8's in-graph
replication of an Estimator's model_fn over local devices).

The replicated model_fn cuts the batch along its first dimension into one shard per device
and calls the user's model_fn once per shard (a "tower"), the first tower under the
model's own names, tower i under the name scope `tower_i`, variables shared (made once, on
one device: the CPU when there are several devices, the device itself when it is a single
GPU). What comes back is one EstimatorSpec:

  - the loss: the towers' losses added on the consolidation device (divided by the number
    of towers first unless `loss_reduction` is SUM);
  - TRAIN: each tower's `TowerOptimizer` records its gradients; the last tower's call
    adds them per variable and applies them once (its train_op is the spec's);
  - EVAL: each metric's variables of towers 1.. are added into tower 0's and then zeroed
    by the update op, so tower 0's metric values cover the whole batch;
  - PREDICT: predictions and export outputs concatenated along the batch;
  - everything else from the first tower (the last one for TRAIN, whose hooks saw the
    apply call).

With one device nothing is split and the model_fn runs as it is, on that device.
"""

from __future__ import annotations

import copy
import inspect

from tensorflux.control_flow.builders import group
from tensorflux.estimator import export as export_output_lib
from tensorflux.estimator.model_fn import ModeKeys
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.device_spec import DeviceSpecV1
from tensorflux.framework.indexed_slices import IndexedSlices
from tensorflux.framework.sparse_tensor import SparseTensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.losses.losses_impl import Reduction
from tensorflux.ops.array_ops import zeros_like
from tensorflux.ops.control_flow_ops import no_op
from tensorflux.ops.joining_ops import concat, split, stack
from tensorflux.ops.math_ops import add_n, div
from tensorflux.ops.state_ops import assign, assign_add
from tensorflux.train.optimizer import Optimizer

_TOWER_STATE = "replicate_model_fn_graph_states"  # TF's collection name for the state
_VARIABLE_OPS = frozenset({"Variable", "VariableV2", "VarHandleOp"})


class _Towers:
    """What the towers of one replicated model_fn call share, kept in the graph's
    `_TOWER_STATE` collection while the towers are built: how many, which one is being
    built, how losses are reduced, the first tower's scopes, and each tower's list of
    `apply_gradients` calls (one list of (gradient, variable) pairs per call)."""

    def __init__(self):
        self.count, self.index, self.reduction = 1, 0, None
        self.first_scopes = (None, None)
        self.applied: dict[int, list] = {}
        self.optimizer_used = False

    def scale(self, loss):
        """`loss` divided by the number of towers unless the losses are summed."""
        if loss is None or self.count == 1 or self.reduction == Reduction.SUM:
            return loss
        return div(loss, 1.0 * self.count, name="averaged_loss")

    def same_calls_in_every_tower(self) -> bool:
        calls = [len(v) for v in self.applied.values()]
        return sum(calls) % self.count == 0


def _towers() -> _Towers:
    states = graph_lib.get_default_graph().get_collection_ref(_TOWER_STATE)
    if not states:
        states.append(_Towers())
    return states[-1]


def _forget_towers() -> None:
    graph_lib.get_default_graph().clear_collection(_TOWER_STATE)


class TowerOptimizer(Optimizer):
    """Wraps an optimizer (or a function making one) for `replicate_model_fn`: each tower
    calls it as usual; the gradients of all towers are added and applied once, by the
    last tower's `apply_gradients`. Outside replicate_model_fn (or with one tower) every
    call goes straight to the wrapped optimizer."""

    COLLECTION_FOR_GRAPH_STATES = _TOWER_STATE

    def __init__(self, optimizer_or_optimizer_fn):
        self._optimizer_or_optimizer_fn = optimizer_or_optimizer_fn

    def _optimizer(self) -> Optimizer:
        if not isinstance(self._optimizer_or_optimizer_fn, Optimizer):
            # A function: made on first use, inside the model's graph.
            self._optimizer_or_optimizer_fn = self._optimizer_or_optimizer_fn()
        _towers().optimizer_used = True
        return self._optimizer_or_optimizer_fn

    @staticmethod
    def has_been_used() -> bool:
        return _towers().optimizer_used

    def get_name(self, *args, **kwargs):
        return self._optimizer().get_name(*args, **kwargs)

    def get_slot(self, *args, **kwargs):
        return self._optimizer().get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._optimizer().get_slot_names(*args, **kwargs)

    def variables(self, *args, **kwargs):
        return self._optimizer().variables(*args, **kwargs)

    def compute_gradients(self, loss, *args, **kwargs):
        """The wrapped optimizer's gradients of `loss`, scaled as the towers' losses are
        reduced (so that the summed gradients are those of the reduced loss)."""
        return self._optimizer().compute_gradients(_towers().scale(loss), *args, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, **kwargs):
        """One tower's gradients: recorded (the tower's train_op is a no-op depending on
        them) until the last tower, whose call applies every tower's sum."""
        state = _towers()
        grads_and_vars = list(grads_and_vars)
        if state.count == 1:
            return self._optimizer().apply_gradients(grads_and_vars, global_step, **kwargs)
        state.applied.setdefault(state.index, []).append(grads_and_vars)
        if state.index < state.count - 1:
            deps = [_dense_part(g) for g, _ in grads_and_vars if g is not None]
            with graph_lib.get_default_graph().control_dependencies(deps):
                return no_op(name="train_op_placeholder")
        call = len(state.applied[state.index]) - 1
        by_var: dict[int, tuple] = {}
        for tower in range(state.count):
            for grad, var in state.applied[tower][call]:
                if grad is not None:
                    by_var.setdefault(id(var), (var, []))[1].append(grad)
        var_scope, name_scope = state.first_scopes
        from tensorflux.framework.graph import name_scope as name_scope_ctx
        from tensorflux.variables import variable_scope

        with variable_scope.variable_scope(var_scope), name_scope_ctx(name_scope):
            with name_scope_ctx("gradient_aggregating"):
                summed = [(_sum_on(grads, var.device), var) for var, grads in by_var.values()]
            return self._optimizer().apply_gradients(summed, global_step=global_step,
                                                     **kwargs)


def _dense_part(grad):
    return grad.values if isinstance(grad, IndexedSlices) else grad


def _sum_on(values, device, name=None):
    """The towers' `values` added on `device`; IndexedSlices by concatenating their rows."""
    with graph_lib.get_default_graph().device(device):
        if isinstance(values[0], IndexedSlices):
            return IndexedSlices(concat([v.values for v in values], 0),
                                 concat([v.indices for v in values], 0),
                                 values[0].dense_shape)
        return add_n(values, name=name)


def _local_devices(device_type: str) -> list[str]:
    from tensorflux.runtime import device as device_lib

    return ["/device:" + d.name.rpartition("/device:")[2]
            for d in device_lib.make_local_devices(None) if d.device_type == device_type]


def _device_chooser(worker_device: str, ps_device: str):
    """Variables on `ps_device`, every other op on `worker_device`; a device the op
    already names wins field by field."""
    def choose(op):
        target = ps_device if op.type in _VARIABLE_OPS else worker_device
        spec = DeviceSpecV1.from_string(target or "")
        spec.merge_from(DeviceSpecV1.from_string(op.device or ""))
        return spec.to_string()
    return choose


def _shard(value, count: int, what: str):
    """`value` (a tensor, a SparseTensor or a dict of them) cut into `count` pieces along
    its first dimension.

    Raises:
      ValueError: a batch size (known statically) not divisible by `count`.
    """
    from tensorflux.sparse.sparse_extra import sparse_split

    if value is None:
        return [None] * count
    if isinstance(value, dict):
        pieces = {k: _shard(v, count, f"{what}[{k!r}]") for k, v in value.items()}
        return [{k: p[i] for k, p in pieces.items()} for i in range(count)]
    if isinstance(value, SparseTensor):
        return sparse_split(sp_input=value, num_split=count, axis=0)
    value = convert_to_tensor(value)
    batch = value.shape[0] if value.shape.ndims else None
    batch = getattr(batch, "value", batch)
    if batch is not None and batch % count:
        raise ValueError(f"Batch size {batch} needs to be divisible by the number of GPUs, "
                         f"which is {count}.")
    return split(value, count)


def _call_towers(model_fn, mode, features, labels, params, config, devices, ps_device,
                 loss_reduction):
    """The towers' EstimatorSpecs, model_fn called once per device on its shard."""
    from tensorflux.framework.graph import name_scope
    from tensorflux.variables import variable_scope

    accepted = inspect.signature(model_fn).parameters
    extra = {}
    if "params" in accepted:
        extra["params"] = copy.deepcopy(params)
    if "config" in accepted:
        extra["config"] = copy.deepcopy(config)
    state = _towers()
    state.count, state.reduction = len(devices), loss_reduction
    g = graph_lib.get_default_graph()
    specs = []
    for i, device in enumerate(devices):
        state.index = i
        with variable_scope.variable_scope("", reuse=i > 0) as var_scope, \
                name_scope(f"tower_{i}" if i else "") as scope_name:
            if i == 0:
                state.first_scopes = (var_scope, scope_name)
            with g.device(_device_chooser(device, ps_device)):
                spec = model_fn(mode=mode, features=features[i], labels=labels[i], **extra)
        if spec.train_op is not None and len(devices) > 1 and not state.optimizer_used:
            raise ValueError("Please wrap optimizers with TowerOptimizer in order to use "
                             "replicate_model_fn with multiple `devices`.")
        if spec.loss is not None:
            spec = spec._replace(loss=state.scale(spec.loss))
        specs.append(spec)
    if not state.same_calls_in_every_tower():
        raise ValueError("Each invocation of model_fn was supposed to make the same "
                         "optimizer calls.")
    _forget_towers()
    return specs


def _merge_metric_variables(towers: int):
    """An op adding the metric variables of towers 1.. into tower 0's and zeroing them
    (so running it twice adds nothing twice)."""
    if towers == 1:
        return no_op(name="no_eval_metric_reduction")
    variables = graph_lib.get_collection(graph_lib.GraphKeys.METRIC_VARIABLES)
    per_tower, extra = divmod(len(variables), towers)
    if extra:
        raise ValueError("Different `EstimatorSpec.eval_metric_ops` across `model_fn()` "
                         f"calls. Expected {per_tower * towers} local variables, but got "
                         f"{len(variables)} instead.")
    updates = []
    for i in range(per_tower):
        copies = variables[i + per_tower::per_tower]
        added = assign_add(variables[i], add_n([c.value() for c in copies]))
        with graph_lib.get_default_graph().control_dependencies([added]):
            updates += [assign(c, zeros_like(c)) for c in copies]
    return group(*updates)


def _concat_dicts(dicts):
    return {k: concat([d[k] for d in dicts], 0, name=k) for k in dicts[0]}


def _concat_export_outputs(outputs_per_tower):
    """The towers' export outputs of each signature, joined along the batch."""
    joined = {}
    for key, first in outputs_per_tower[0].items():
        parts = [o[key] for o in outputs_per_tower]
        if isinstance(first, export_output_lib.PredictOutput):
            joined[key] = export_output_lib.PredictOutput(_concat_dicts(
                [p.outputs for p in parts]))
        elif isinstance(first, export_output_lib.RegressionOutput):
            joined[key] = export_output_lib.RegressionOutput(
                concat([p.value for p in parts], 0))
        elif isinstance(first, export_output_lib.ClassificationOutput):
            scores = None if first.scores is None else concat(
                [p.scores for p in parts], 0)
            classes = None if first.classes is None else stack(
                [p.classes for p in parts], 0)
            joined[key] = export_output_lib.ClassificationOutput(scores=scores,
                                                                 classes=classes)
    return joined


def _combine(specs, mode, device):
    """One EstimatorSpec of the towers' specs (see the module's docstring)."""
    if mode == ModeKeys.PREDICT:
        preds = [s.predictions for s in specs]
        with graph_lib.get_default_graph().device(device):
            predictions = (_concat_dicts(preds) if isinstance(preds[0], dict)
                           else concat(preds, 0))
            exports = _concat_export_outputs([s.export_outputs or {} for s in specs])
        return specs[0]._replace(predictions=predictions, export_outputs=exports)
    loss = _sum_on([s.loss for s in specs], device, "loss")
    if mode == ModeKeys.TRAIN:
        return specs[-1]._replace(loss=loss, train_op=specs[-1].train_op)
    updates = [update for s in specs for _, update in s.eval_metric_ops.values()]
    with graph_lib.get_default_graph().control_dependencies(updates):
        merged = _merge_metric_variables(len(specs))
    metrics = {name: (value, merged)
               for name, (value, _) in specs[0].eval_metric_ops.items()}
    return specs[0]._replace(loss=loss, eval_metric_ops=metrics)


def replicate_model_fn(model_fn, loss_reduction=Reduction.SUM_BY_NONZERO_WEIGHTS,
                       devices=None):
    """`model_fn` replicated over `devices` (default: every local GPU, else the CPU), as
    the module's docstring describes. Optimizers inside `model_fn` must be wrapped in
    `TowerOptimizer` when there are several devices.

    Raises:
      ValueError: `loss_reduction` NONE; at call time, optimizers not wrapped, towers
        making different optimizer calls, or a batch not divisible by the device count.
    """
    if loss_reduction == Reduction.NONE:
        raise ValueError(f"Tower losses need to be reduced in some way, yet "
                         f"{loss_reduction} reduction is specified.")
    devices = list(devices or _local_devices("GPU") or _local_devices("CPU"))
    one_gpu = len(devices) == 1 and "GPU" in devices[0].upper()
    consolidation = devices[0] if one_gpu else "/CPU:0"

    def replicated_model_fn(features, labels, mode, params=None, config=None):
        if len(devices) == 1:
            return _call_towers(model_fn, mode, [features], [labels], params, config,
                                devices, consolidation, loss_reduction)[0]
        from tensorflux.framework.graph import name_scope

        with name_scope("split_inputs"), \
                graph_lib.get_default_graph().device(consolidation):
            feature_shards = _shard(features, len(devices), "features")
            label_shards = _shard(labels, len(devices), "labels")
        specs = _call_towers(model_fn, mode, feature_shards, label_shards, params,
                             config, devices, consolidation, loss_reduction)
        return _combine(specs, mode, consolidation)

    return replicated_model_fn


__all__ = ["replicate_model_fn", "TowerOptimizer"]
