"""The TF1 control-flow builders on top of the control-flow ops (ops/control_flow_ops.py):
`tf.group`, `tf.tuple`, `with_dependencies`, `tf.cond`, `tf.case`, `tf.switch_case`,
`tf.while_loop` (TensorFlow keeps them in control_flow_ops.py beside the ops).

The builders only drive the contexts of control_flow_context.py (CondContext, WhileContext),
which route values into branches and loops as ops are created; control_flow_grad.py and
control_flow_state.py give the gradients through conds and loops.
"""

from __future__ import annotations

import builtins

from tensorflux.control_flow import (
    context_protos,  # noqa: F401 - the contexts in meta graphs
    control_flow_util,
)
from tensorflux.control_flow.control_flow_context import CondContext, WhileContext
from tensorflux.framework import graph as graph_lib
from tensorflux.framework import tensor_shape
from tensorflux.framework.operation import Operation, Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.framework.tensor_spec import TensorSpec
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    constant_op,
    joining_ops,
    math_ops,
    reduction_ops,
    tensor_array_ops,
)
from tensorflux.ops.control_flow_ops import (
    merge,
    no_op,
    switch,
)
from tensorflux.ops.logging_ops import Assert

# The TF1 public names of this module.
__all__ = ["group", "tuple", "cond", "case", "switch_case", "while_loop"]


# ---- tf.group, tf.tuple, with_dependencies --------------------------------------------------


def _as_op(x) -> Operation:
    if isinstance(x, Operation):
        return x
    if isinstance(x, Tensor):
        return x.op
    if hasattr(x, "_as_graph_element"):
        return _as_op(x._as_graph_element())
    if hasattr(x, "op"):
        return x.op
    raise TypeError(f"Expected an Operation or Tensor, got {x!r}")


def _flatten(inputs):
    for x in inputs:
        if isinstance(x, (list, builtins.tuple)):  # `tuple` is tf.tuple in this module
            yield from _flatten(x)
        elif isinstance(x, dict):
            yield from _flatten(list(x.values()))
        elif x is not None:
            yield x


def group(*inputs, name: str | None = None) -> Operation:
    """An op that runs after all of `inputs` (`tf.group`); outputs nothing.

    Ops on several devices are first grouped per device, as TensorFlow does, so the final
    NoOp waits on one NoOp per device.
    """
    ops = [_as_op(x) for x in _flatten(inputs)]
    g = graph_lib.get_graph_from_inputs(ops) if ops else graph_lib.get_default_graph()
    with g.as_default(), graph_lib.name_scope(name, "group_deps", ops) as scope:
        by_device: dict[str, list[Operation]] = {}
        for op in ops:
            by_device.setdefault(op.device, []).append(op)
        if len(by_device) <= 1:
            with g.control_dependencies(ops):
                return no_op(name=scope)
        deps = []
        for dev in sorted(by_device):
            with g.device(dev), g.control_dependencies(by_device[dev]):
                deps.append(no_op())
        with g.control_dependencies(deps):
            return no_op(name=scope)


def tuple(tensors, name: str | None = None, control_inputs=None):  # noqa: A001
    """Copies of `tensors` that are available only after all of them are (`tf.tuple`)."""
    tensors = list(tensors)
    deps = [t for t in tensors if t is not None] + list(control_inputs or ())
    with graph_lib.name_scope(name, "tuple", [t for t in tensors if t is not None]):
        gate = group(*deps)
        out = []
        for t in tensors:
            if t is None:
                out.append(None)
                continue
            with graph_lib.control_dependencies([gate]):
                out.append(array_ops.identity(t))
        return out


def with_dependencies(dependencies, output_tensor, name: str | None = None):
    """`output_tensor`, produced only after every op in `dependencies` has run.

    An Operation as `output_tensor` gives a NoOp with the control inputs instead.
    """
    with graph_lib.name_scope(name, "control_dependency",
                              list(dependencies) + [output_tensor]) as scope:
        with graph_lib.control_dependencies(dependencies):
            if isinstance(output_tensor, Operation):
                with graph_lib.control_dependencies([output_tensor]):
                    return no_op(name=scope)
            if hasattr(output_tensor, "_is_indexed_slices"):
                return output_tensor._map_values(lambda v: array_ops.identity(v, name=scope))
            return array_ops.identity(output_tensor, name=scope)


# ---- tf.cond, tf.case, tf.while_loop -------------------------------------------------------


def _unpack_if_singleton(res):
    if isinstance(res, (list, builtins.tuple)) and len(res) == 1:
        return res[0]
    return res


def cond(pred, true_fn=None, false_fn=None, strict: bool = False, name: str | None = None,
         fn1=None, fn2=None):
    """`true_fn()` if `pred` else `false_fn()` (`tf.cond`, TF1 semantics).

    Both functions are called once, at construction, each in its own CondContext; only the
    taken branch's ops run (stateful ones included). A tensor created outside the cond and
    used inside enters each branch through a Switch, so the ops consuming it are on the
    branch; ops created outside run whatever `pred` is. A function may return an Operation
    (the result is then the branch's pivot, after that op) and nested lists/tuples/dicts.

    Args:
      pred: a scalar bool tensor.
      true_fn, false_fn: callables returning the same structure of same-dtype tensors.
      strict: keep singleton lists/tuples instead of unpacking them.
      name: name scope of the ops (default "cond").
      fn1, fn2: deprecated spellings of true_fn and false_fn.

    Returns:
      The Merge of the two results, shaped like true_fn's result.

    Raises:
      TypeError: `pred` is a Python bool, not a bool tensor, or a function is not callable.
      ValueError: a function returns None or nothing, or the branches differ in structure or
        dtypes.
    """
    if fn1 is not None:
        if true_fn is not None:
            raise TypeError("cond(): 'true_fn' and 'fn1' may not be set simultaneously.")
        true_fn = fn1
    if fn2 is not None:
        if false_fn is not None:
            raise TypeError("cond(): 'false_fn' and 'fn2' may not be set simultaneously.")
        false_fn = fn2
    if not callable(true_fn):
        raise TypeError("'true_fn' must be callable.")
    if not callable(false_fn):
        raise TypeError("'false_fn' must be callable.")
    with graph_lib.name_scope(name, "cond", [pred]):
        if isinstance(pred, bool):
            raise TypeError("'pred' must not be a Python bool.")
        g = graph_lib.get_default_graph()
        p_2, p_1 = switch(pred, pred)
        pivot_1 = array_ops.identity(p_1, name="switch_t")
        pivot_2 = array_ops.identity(p_2, name="switch_f")
        pred = array_ops.identity(pred, name="pred_id")
        for t in (p_1, p_2, pivot_1, pivot_2, pred):
            g.prevent_fetching(t.op)
        results = []
        for branch, pivot, fn, fn_name in ((1, pivot_1, true_fn, "true_fn"),
                                           (0, pivot_2, false_fn, "false_fn")):
            ctx = CondContext(pred, pivot, branch)
            try:
                ctx.Enter()
                orig_res, res = ctx.BuildCondBranch(fn)
                if orig_res is None:
                    raise ValueError(f"'{fn_name}' must have a return value.")
                ctx.ExitResult(res)
            finally:
                ctx.Exit()
            results.append((ctx, orig_res, res))
        (ctx_t, orig_res_t, res_t), (ctx_f, orig_res_f, res_f) = results
        if not strict:
            orig_res_t = _unpack_if_singleton(orig_res_t)
            orig_res_f = _unpack_if_singleton(orig_res_f)
        control_flow_util.assert_same_structure(orig_res_t, orig_res_f)
        if not res_t:
            raise ValueError("'true_fn' and 'false_fn' must return at least one result.")
        for x, y in zip(res_t, res_f, strict=True):
            if x.dtype.base_dtype != y.dtype.base_dtype:
                raise ValueError(
                    "Outputs of 'true_fn' and 'false_fn' must have the same type(s). "
                    f"Received {x.dtype.name} from 'true_fn' and {y.dtype.name} from "
                    "'false_fn'.")
        merges = [merge([f, t])[0] for f, t in zip(res_f, res_t, strict=True)]
        merges = _restore_tensor_arrays(control_flow_util.flatten(orig_res_t), merges)
        if ctx_t.outer_context is None:
            g.add_to_collection(graph_lib.GraphKeys.COND_CONTEXT, ctx_t)
            g.add_to_collection(graph_lib.GraphKeys.COND_CONTEXT, ctx_f)
        merges = control_flow_util.pack_sequence_as(orig_res_t, merges)
        return merges if strict else _unpack_if_singleton(merges)


def _restore_tensor_arrays(originals, flows) -> list:
    """TensorArrays among `originals` come back as TensorArrays with the new flows."""
    return [tensor_array_ops.build_ta_with_new_flow(o, f)
            if isinstance(o, tensor_array_ops.TensorArray) else f
            for o, f in zip(originals, flows, strict=True)]


def _case_verify_and_canonicalize_args(pred_fn_pairs, exclusive: bool):
    if not isinstance(pred_fn_pairs, (list, builtins.tuple, dict)):
        raise TypeError(f"'pred_fn_pairs' must be a list, tuple, or dict. Received: "
                        f"{type(pred_fn_pairs)}")
    if isinstance(pred_fn_pairs, dict):
        pairs = list(pred_fn_pairs.items())
        if type(pred_fn_pairs) is dict:  # unordered in TF1: sorted by predicate name
            pairs.sort(key=lambda item: item[0].name)
    else:
        pairs = list(pred_fn_pairs)
    for pair in pairs:
        if not isinstance(pair, builtins.tuple) or len(pair) != 2:
            raise TypeError(f"Each entry in 'pred_fn_pairs' must be a 2-tuple. Received "
                            f"{pair}.")
        pred, fn = pair
        if isinstance(pred, Tensor):
            if pred.dtype.base_dtype.name != "bool":
                raise TypeError(f"pred must be Tensor of type bool: {pred.name}")
        else:
            raise TypeError(f"pred must be a Tensor, got: {pred}")
        if not callable(fn):
            raise TypeError(f"fn for pred {pred.name} must be callable.")
    return [p for p, _ in pairs], [f for _, f in pairs]


def _assert_at_most_n_true(predicates, n: int, msg: str):
    """An Assert that at most `n` of the bool scalars `predicates` are true."""
    preds_c = joining_ops.stack(predicates, name="preds_c")
    num_true = reduction_ops.reduce_sum(math_ops.cast(preds_c, "int32"), name="num_true")
    condition = comparison_ops.less_equal(num_true, n, name="n_true_conds")
    preds = [f"(Condition {i})" for i in range(len(predicates))]
    return Assert(condition, data=[msg, "Conditions:", preds[0] if len(preds) == 1 else
                                   ", ".join(preds), preds_c], summarize=len(predicates))


def case(pred_fn_pairs, default=None, exclusive: bool = False, strict: bool = False,
         name: str = "case"):
    """The function paired with the first true predicate, else `default` (`tf.case`).

    Built as nested conds, evaluated in order. With `exclusive`, an assertion checks at run
    time that at most one predicate is true. Without `default`, the last pair is the
    default, guarded by an assertion that its predicate is true.

    Args:
      pred_fn_pairs: a list of (bool scalar tensor, callable) pairs, or a dict of them (an
        unordered dict is sorted by predicate name).
      default: callable for when no predicate is true.
      exclusive: check that at most one predicate is true.
      strict: as in `cond`.
      name: name scope.

    Raises:
      TypeError: malformed pairs, a non-bool or non-Tensor predicate, a non-callable fn.
    """
    import functools

    predicates, actions = _case_verify_and_canonicalize_args(pred_fn_pairs, exclusive)
    with graph_lib.name_scope(name, "case", predicates):
        if default is None:
            k = len(predicates) - 1
            predicate, action = predicates[k], actions[k]
            others, other_actions = predicates[:k], actions[:k]

            def default_action(predicate=predicate, action=action, others=others,
                               predicates=predicates):
                deps = []
                if others:
                    deps.append(_assert_at_most_n_true(
                        others, 0, f"Implementation error: selected default action #{k} "
                        "was called, but some of other predicates are True: "))
                deps.append(Assert(predicate, data=[
                    "Input error: None of conditions evaluated as True:",
                    joining_ops.stack(predicates, name="preds_c")]))
                with graph_lib.control_dependencies(deps):
                    return action()

            default, predicates, actions = default_action, others, other_actions
        fn = default
        for predicate, action in reversed(list(zip(predicates, actions, strict=True))):
            fn = functools.partial(cond, predicate, true_fn=action, false_fn=fn,
                                   strict=strict)
        if exclusive and predicates:
            check = _assert_at_most_n_true(predicates, 1, "Input error: exclusive=True")
            with graph_lib.control_dependencies([check]):
                return fn()
        return fn()


def switch_case(branch_index, branch_fns, default=None, name: str = "switch_case"):
    """`branch_fns[branch_index]()`, or `default()` when the index is out of range.

    Args:
      branch_index: an int32 scalar tensor.
      branch_fns: a list of callables, a list of (int, callable) pairs, or a dict int->fn.
      default: callable for out-of-range indices (default: the last branch).
      name: name scope.
    """
    if isinstance(branch_fns, dict):
        branch_fns = sorted(branch_fns.items())
    elif branch_fns and isinstance(branch_fns[0], builtins.tuple):
        branch_fns = list(branch_fns)
    else:
        branch_fns = list(enumerate(branch_fns))
    if not branch_fns:
        raise ValueError("Must provide at least one item in `branch_fns`.")
    for key, fn in branch_fns:
        if not isinstance(key, int):
            raise TypeError(f"branch_fns[{key}] key must be an int")
        if not callable(fn):
            raise TypeError(f"fn for branch_fns[{key}] must be callable.")
    with graph_lib.name_scope(name, "switch_case", [branch_index]):
        index = convert_to_tensor(branch_index, name="branch_index")
        if default is None:
            default = branch_fns[-1][1]
            branch_fns = branch_fns[:-1]
        pairs = [(comparison_ops.equal(index, key), fn) for key, fn in branch_fns]
        fn = default
        for pred, action in reversed(pairs):
            fn = _bind_cond(pred, action, fn)
        return fn()


def _bind_cond(pred, true_fn, false_fn):
    return lambda: cond(pred, true_fn, false_fn)


def while_loop(cond, body, loop_vars, shape_invariants=None,  # noqa: A002 - TF's names
               parallel_iterations: int = 10, back_prop: bool = True,
               swap_memory: bool = False, name: str | None = None, maximum_iterations=None,
               return_same_structure: bool = False):
    """Repeats `body` while `cond` is true (`tf.while_loop`, TF1 semantics).

    `cond(*loop_vars)` must return a bool scalar and `body(*loop_vars)` the new loop
    variables, with the same structure and dtypes; both are called once, at construction,
    in one WhileContext (one executor frame). Loop variables may be nested lists, tuples,
    dicts and TensorArrays. Tensors from outside enter as loop invariants.

    Args:
      cond, body: callables.
      loop_vars: a list or tuple of the initial values.
      shape_invariants: TensorShapes or TensorSpecs (nested like loop_vars) a loop
        variable may take; by default its initial shape, which the body may not change.
      parallel_iterations: how many iterations may run at once.
      back_prop: whether gradients flow through the loop.
      swap_memory: accepted for compatibility.
      name: name scope (default "while").
      maximum_iterations: stop after this many iterations even if `cond` is still true.
      return_same_structure: always return loop_vars' structure (no unpacking of a single
        loop variable).

    Returns:
      The loop variables after the last iteration.

    Raises:
      TypeError: cond/body not callable, parallel_iterations < 1, the body returns a loop
        variable of another dtype, or a different sequence type.
      ValueError: empty loop_vars, a body result with another structure or a shape outside
        its invariant, a shape invariant incompatible with the initial value, a
        non-scalar maximum_iterations.
    """
    with graph_lib.name_scope(name, "while", _loop_var_tensors(loop_vars)):
        if not loop_vars:
            raise ValueError("'loop_vars' must be provided.")
        if not callable(cond):
            raise TypeError("'cond' must be callable.")
        if not callable(body):
            raise TypeError("'body' must be callable.")
        if parallel_iterations < 1:
            raise TypeError("'parallel_iterations' must be a positive integer.")
        try_to_pack = len(loop_vars) == 1 and not return_same_structure
        if shape_invariants is not None:  # a TensorSpec stands for its shape (TF2's form)
            shape_invariants = control_flow_util.map_structure(
                lambda s: s.shape if isinstance(s, TensorSpec) else s, shape_invariants)
        if maximum_iterations is not None:
            maximum_iterations = convert_to_tensor(maximum_iterations,
                                                   name="maximum_iterations")
            if maximum_iterations.shape.ndims != 0:
                raise ValueError(f"'maximum_iterations' must be a scalar. Received shape: "
                                 f"{maximum_iterations.shape}")
            counter = constant_op.constant(0, dtype=maximum_iterations.dtype,
                                           name="iteration_counter")
            orig_cond, orig_body, limit = cond, body, maximum_iterations
            if try_to_pack:
                loop_vars = (counter, loop_vars[0])

                def cond(i, lv):
                    return comparison_ops.logical_and(i < limit, orig_cond(lv))

                def body(i, lv):
                    return (i + 1, orig_body(lv))
            else:
                loop_vars = (counter, loop_vars)

                def cond(i, lv):
                    return comparison_ops.logical_and(i < limit, orig_cond(*lv))

                def body(i, lv):
                    return (i + 1, orig_body(*lv))
            try_to_pack = False
            if shape_invariants is not None:
                shape_invariants = (tensor_shape.TensorShape([]), shape_invariants)
        ctx = WhileContext(maximum_iterations=maximum_iterations,
                           parallel_iterations=parallel_iterations, back_prop=back_prop,
                           swap_memory=swap_memory)
        if ctx.outer_context is None:
            graph_lib.add_to_collection(graph_lib.GraphKeys.WHILE_CONTEXT, ctx)
        result = ctx.BuildLoop(cond, body, loop_vars, shape_invariants,
                               return_same_structure)
        if maximum_iterations is not None:
            return result[1]
        return result


def _loop_var_tensors(loop_vars) -> list:
    try:
        leaves = control_flow_util.flatten(loop_vars)
    except TypeError:
        return []
    return [v for v in leaves if isinstance(v, Tensor)]
