"""CPU kernels of the staging ops (tensorflux/ops/staging_ops.py).

Each op finds its area itself, as TensorFlow's staging kernels do: the first op of a
session run with a given (container, shared_name) creates it in the device's ResourceMgr
with its own `capacity`/`memory_limit` (later ops' bounds are not compared, as in
TensorFlow); an op with no shared_name gets an area of its own. Puts, gets and peeks are
asynchronous kernels over kernels/staging.py: a waiting one holds no thread and ends with
CancelledError when the step is cancelled (DeadlineExceededError once its deadline passed).
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels import staging
from tensorflux.kernels.cpu.data_flow_ops import resource_op
from tensorflux.kernels.registry import kernel_factory


def _area_of(node, cls, *extra):
    """ctx -> the area `node` names (created with the node's bounds on first use)."""
    a = node.attrs

    def check(res):
        if not isinstance(res, cls):
            raise errors.InvalidArgumentError(
                None, None, f"Expected {cls.kind}, found {type(res).__name__}")

    handle_of = resource_op(node, lambda name: cls(name, *extra, a["capacity"],
                                                   a["memory_limit"]), check)
    return lambda ctx: handle_of(ctx).resource


def _outputs(done, n: int, lead: int = 0):
    """done as the executor wants it: one value for one output, a tuple for several; and
    the check that the tuple taken has the components the op outputs."""
    def finish(result):
        if isinstance(result, BaseException):
            done(result)
        elif len(result) != n + lead:
            done(errors.InvalidArgumentError(
                None, None, f"Mismatch stage/unstage: {len(result) - lead} vs. {n}"))
        elif len(result) == 1:
            done(result[0])
        else:
            done(tuple(result))

    return finish


# ---- StagingArea -------------------------------------------------------------------------


def _fifo(node):
    return _area_of(node, staging.StagingArea)


@kernel_factory("Stage", is_async=True)
def _stage(node):
    area = _fifo(node)

    def compute(ctx, done, *values):
        area(ctx).put(ctx.cancellation, staging.own(values), done)

    return compute


@kernel_factory("Unstage", is_async=True)
def _unstage(node):
    area, n = _fifo(node), len(node.attrs["dtypes"])

    def compute(ctx, done):
        area(ctx).get(ctx.cancellation, _outputs(done, n))

    return compute


@kernel_factory("StagePeek", is_async=True)
def _stage_peek(node):
    area, n = _fifo(node), len(node.attrs["dtypes"])

    def compute(ctx, done, index):
        index = int(index)
        if index < 0:
            raise errors.InvalidArgumentError(None, None, f"Peek index {index} is negative")
        area(ctx).peek(ctx.cancellation, index, _outputs(done, n))

    return compute


@kernel_factory("StageSize")
def _stage_size(node):
    area = _fifo(node)
    return lambda ctx: np.int32(area(ctx).size())


@kernel_factory("StageClear")
def _stage_clear(node):
    area = _fifo(node)

    def compute(ctx):
        area(ctx).clear()

    return compute


# ---- MapStagingArea ----------------------------------------------------------------------


def _map(node, ordered: bool):
    return _area_of(node, staging.MapStagingArea, len(node.attrs["dtypes"]), ordered)


def _indices(indices, n: int) -> list[int]:
    """The component indices of a map op: strictly increasing, each in [0, n)."""
    out = [int(i) for i in np.asarray(indices).reshape(-1)]
    if any(b <= a for a, b in zip(out, out[1:], strict=False)):
        raise errors.InvalidArgumentError(None, None, "Indices are not strictly ordered")
    bad = next((i for i in out if not 0 <= i < n), None)
    if bad is not None:
        raise errors.InvalidArgumentError(
            None, None, f"Index '{bad}' is out of range: the staging area has {n} components")
    return out


def _map_kernels(prefix: str) -> None:
    ordered = prefix == "Ordered"

    @kernel_factory(f"{prefix}MapStage", is_async=True)
    def _map_stage(node):
        area, n = _map(node, ordered), len(node.attrs["dtypes"])

        def compute(ctx, done, key, indices, *values):
            indices = _indices(indices, n)
            if len(indices) != len(values):
                raise errors.InvalidArgumentError(
                    None, None, f"Number of indices {len(indices)} doesn't match number of "
                    f"values {len(values)}")
            area(ctx).put(ctx.cancellation, int(key), indices, staging.own(values), done)

        return compute

    def take(op_type: str, remove: bool):
        @kernel_factory(f"{prefix}{op_type}", is_async=True)
        def factory(node):
            area, n = _map(node, ordered), len(node.attrs["dtypes"])

            def compute(ctx, done, key, indices):
                res = area(ctx)
                res.get(ctx.cancellation, int(key), _indices(indices, res.n),
                        _outputs(done, n), remove=remove)

            return compute

    take("MapUnstage", True)
    take("MapPeek", False)

    @kernel_factory(f"{prefix}MapUnstageNoKey", is_async=True)
    def _map_unstage_no_key(node):
        area, n = _map(node, ordered), len(node.attrs["dtypes"])

        def compute(ctx, done, indices):
            res = area(ctx)
            res.get(ctx.cancellation, None, _indices(indices, res.n), _outputs(done, n, 1))

        return compute

    @kernel_factory(f"{prefix}MapSize")
    def _map_size(node):
        area = _map(node, ordered)
        return lambda ctx: np.int32(area(ctx).size())

    @kernel_factory(f"{prefix}MapIncompleteSize")
    def _map_incomplete_size(node):
        area = _map(node, ordered)
        return lambda ctx: np.int32(area(ctx).incomplete_size())

    @kernel_factory(f"{prefix}MapClear")
    def _map_clear(node):
        area = _map(node, ordered)

        def compute(ctx):
            area(ctx).clear()

        return compute


_map_kernels("")
_map_kernels("Ordered")
