"""tf.nondifferentiable_batch_function: a decorator whose function's ops run once for the
rows of concurrent calls (the BatchFunction op, tensorflux/ops/batch_ops.py, says how calls
are gathered into batches).

The decorated function is traced once per call of the decorator's result into a function
graph (framework/func_graph.py) on placeholders "batch_<i>" shaped like the arguments; the
tensors of the enclosing graph it uses become the op's `captured_tensors`. The op is built
in a "batch" name scope whose name is also its `shared_name`, as TF1 does.
"""

from __future__ import annotations

from tensorflux.control_flow.control_flow_util import flatten, pack_sequence_as
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.func_graph import FuncGraph, FunctionRef
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor

__all__ = ["nondifferentiable_batch_function"]


def _trace(fn, args: list) -> tuple[FunctionRef, list, object]:
    """`fn` traced on placeholders like `args` ("batch_<i>"): its FunctionRef, the outer
    tensors it captured, and its result structure."""
    outer = graph_lib.get_default_graph()
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in
                   getattr(fn, "__name__", "computation"))
    g = FuncGraph(f"__inference_{name}", outer)
    with g.as_default():
        inner = []
        for i, a in enumerate(args):
            t = g.add_argument(a.dtype.base_dtype, a.shape if a.shape.ndims is not None
                               else None, f"batch_{i}")
            t.set_shape(a.shape)
            inner.append(t)
        result = fn(*inner)
        flat = [convert_to_tensor(t) for t in flatten(result)]
        g.set_outputs(flat)
    return FunctionRef(g), [outer_t for outer_t, _ in g.captures], result


def nondifferentiable_batch_function(num_batch_threads, max_batch_size, batch_timeout_micros,
                                     allowed_batch_sizes=None, max_enqueued_batches=10,
                                     autograph=True, enable_large_batch_splitting=True):
    """Batches the computation of the decorated function across concurrent calls.

    If several Session.run calls compute the decorated function's result at about the same
    time, their arguments are concatenated along dimension 0 (in no fixed order), the
    function's ops run once on the batch, and each call gets its own rows of the results.

    Args:
      num_batch_threads: how many batches may be processed at once.
      max_batch_size: the most rows of one call, and of one batch.
      batch_timeout_micros: the longest a batch waits for more calls before it runs.
      allowed_batch_sizes: sizes batches are padded up to (increasing; the last equal to
        `max_batch_size` unless `enable_large_batch_splitting`, when it caps the batch).
      max_enqueued_batches: how many batches may wait.
      autograph: unused (TF1 programs build graphs directly).
      enable_large_batch_splitting: whether a call may be split across batches.

    Returns:
      A decorator: the decorated function takes Tensors (batched along dimension 0) and
      returns its function's result structure (a Tensor, or a list/tuple of Tensors) with
      the batched results. Raises ValueError when called with a non-Tensor argument.
    """
    del autograph

    def decorator(fn):
        def decorated(*args):
            for a in args:
                if not isinstance(a, Tensor):
                    raise ValueError("All arguments to functions decorated with "
                                     "`batch_function`  are supposed to be Tensors; found "
                                     f"{a!r}.")
            ref, captured, result = _trace(fn, list(args))
            with graph_lib.name_scope("batch") as name:
                outputs = apply_op(
                    "BatchFunction", in_tensors=list(args), captured_tensors=captured,
                    f=ref, num_batch_threads=num_batch_threads,
                    max_batch_size=max_batch_size,
                    batch_timeout_micros=batch_timeout_micros,
                    allowed_batch_sizes=list(allowed_batch_sizes or []),
                    max_enqueued_batches=max_enqueued_batches, shared_name=name,
                    enable_large_batch_splitting=enable_large_batch_splitting,
                    Tout=[t.dtype.base_dtype for t in ref.graph.outputs])
            if isinstance(outputs, Tensor):
                outputs = [outputs]
            return pack_sequence_as(result, list(outputs))
        return decorated
    return decorator
