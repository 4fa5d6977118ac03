"""Walks over a graph's ops (TF's `tensorflow.python.ops.op_selector`, which libraries such as
tensorpack import to find what a fetch depends on).

`get_backward_walk_ops` visits ops breadth first from the seeds through their inputs (and,
when asked, their control inputs): each op once, in the order it is first reached.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable

from tensorflux.framework import op_registry
from tensorflux.framework.operation import Operation, Tensor


def _as_list(items) -> list:
    if isinstance(items, (Tensor, Operation)) or not isinstance(items, Iterable):
        return [items]
    return list(items)


def _as_ops(items) -> list[Operation]:
    """Seeds as ops: a tensor stands for the op that makes it."""
    out = []
    for item in _as_list(items):
        if isinstance(item, Tensor):
            item = item.op
        if not isinstance(item, Operation):
            raise TypeError(f"Expected a tf.Operation or tf.Tensor, got {type(item).__name__}: "
                            f"{item!r}")
        out.append(item)
    return out


def is_differentiable(op: Operation) -> bool:
    """Whether a gradient function is registered for the op's type (an op declared not
    differentiable, or one with none, is not)."""
    fn = op_registry.get_gradient(op.type)
    return callable(fn)


def get_generating_ops(ts) -> list[Operation]:
    """The ops that make the tensors `ts`."""
    return [t.op for t in _as_list(ts)]


def get_consuming_ops(ts) -> list[Operation]:
    """The ops that read any of the tensors `ts`, each once."""
    out: list[Operation] = []
    for t in _as_list(ts):
        for op in t.consumers():
            if op not in out:
                out.append(op)
    return out


def get_backward_walk_ops(seed_ops, inclusive: bool = True, within_ops=None,
                          within_ops_fn: Callable[[Operation], bool] | None = None,
                          stop_at_ts=(), control_inputs: bool = False,
                          only_differentiable: bool = False) -> list[Operation]:
    """The ops the seeds depend on, breadth first from the seeds.

    Args:
      seed_ops: an op or tensor, or a list of them (a tensor stands for its op).
      inclusive: whether the seeds themselves are in the result.
      within_ops: if given, ops outside it are neither returned nor walked through.
      within_ops_fn: if given, ops for which it returns False are skipped likewise.
      stop_at_ts: tensors the walk does not cross (their ops are not reached through them).
      control_inputs: whether the walk also follows control inputs.
      only_differentiable: whether the walk stops at ops with no gradient function (they
        are returned, their inputs not walked).

    Returns:
      A list of Operations, each once, in the order the walk first reaches them.

    Raises:
      TypeError: a seed is neither a tf.Operation nor a tf.Tensor.
    """
    seeds = _as_ops(seed_ops)
    allowed = None if within_ops is None else set(_as_ops(within_ops))
    stops = set(_as_list(stop_at_ts)) if stop_at_ts else set()

    def admitted(op: Operation) -> bool:
        if allowed is not None and op not in allowed:
            return False
        return within_ops_fn is None or bool(within_ops_fn(op))

    seen: set[Operation] = set()
    order: list[Operation] = []
    queue = collections.deque()
    for op in seeds:
        if op not in seen and admitted(op):
            seen.add(op)
            order.append(op)
            queue.append(op)
    while queue:
        op = queue.popleft()
        reached = []
        if not only_differentiable or is_differentiable(op):
            reached = [t.op for t in op.inputs if t not in stops]
        if control_inputs:
            reached += op.control_inputs
        for prev in reached:
            if prev not in seen and admitted(prev):
                seen.add(prev)
                order.append(prev)
                queue.append(prev)
    if not inclusive:
        order = [op for op in order if op not in seeds]
    return order


__all__: list[str] = []
