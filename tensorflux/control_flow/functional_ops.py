"""Higher-order functions over the first dimension of tensors: `tf.map_fn`, `tf.foldl`,
`tf.foldr` and `tf.scan`, built (as in TF1) from one tf.while_loop each.

The inputs are unstacked into TensorArrays (read by the loop counter), results are written
into TensorArrays and stacked after the loop. Inputs and accumulators may be nested
structures; gradients flow through the loop and the arrays.
"""

from __future__ import annotations

from tensorflux.control_flow import builders
from tensorflux.control_flow import control_flow_util as nest
from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.sparse_tensor import SparseTensorSpec
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.framework.tensor_spec import TensorSpec
from tensorflux.framework.type_spec import TypeSpec
from tensorflux.ops import array_ops, constant_op, gather_ops, parsing_ops, ragged_conversion_ops
from tensorflux.ops.tensor_array_ops import TensorArray

__all__ = ["map_fn", "foldl", "foldr", "scan", "vectorized_map"]


def _check_callable(fn) -> None:
    if not callable(fn):
        raise TypeError(f"{getattr(fn, '__name__', fn)} is not callable. Please provide a "
                        "callable function.")


def _leading_dim(elems_flat):
    """(static first dimension or None, first dimension as a tensor or int)."""
    shape = elems_flat[0].shape
    if shape.ndims is not None and shape.ndims < 1:
        if len(elems_flat) == 1:
            raise ValueError("elems must be a 1+ dimensional Tensor, not a scalar")
        raise ValueError("elements in elems must be 1+ dimensional Tensors, not scalars")
    static = shape.as_list()[0] if shape.ndims else None
    return static, static if static is not None else array_ops.shape(elems_flat[0])[0]


def _unstacked(elems_flat, n, with_element_shape: bool = False) -> list[TensorArray]:
    return [TensorArray(dtype=e.dtype, size=n, dynamic_size=False, infer_shape=True,
                        element_shape=e.shape[1:] if with_element_shape and e.shape.ndims
                        else None).unstack(e) for e in elems_flat]


def _set_leading_dim(results, elems_flat) -> None:
    n_static = tensor_shape.Dimension(elems_flat[0].shape.with_rank_at_least(1).as_list()[0]
                                      if elems_flat[0].shape.ndims else None)
    for e in elems_flat[1:]:
        if e.shape.ndims:
            n_static.assert_is_compatible_with(tensor_shape.Dimension(e.shape.as_list()[0]))
    for r in results:
        if r.shape.ndims is not None:
            r.set_shape(tensor_shape.TensorShape([n_static]).concatenate(r.shape[1:]))


# ---- map_fn results of a TypeSpec -------------------------------------------------------
# A TensorSpec stands for its dtype. A SparseTensor or RaggedTensor result is accumulated
# as a variant per element (SerializeSparse: [3]; RaggedTensorToVariant: a scalar) and
# the stacked variants decode as one SparseTensor / RaggedTensor with a leading dimension.


def _ragged_spec_class():
    from tensorflux.ragged.ragged_tensor_spec import RaggedTensorSpec  # ragged imports this package

    return RaggedTensorSpec


def _carried_dtype(signature):
    """The dtype a result of `signature` (a DType or a TypeSpec) is accumulated as.

    Raises:
      TypeError: a TypeSpec map_fn cannot carry.
    """
    if isinstance(signature, TensorSpec):
        return signature.dtype
    if isinstance(signature, (SparseTensorSpec, _ragged_spec_class())):
        return dtypes.variant
    if isinstance(signature, TypeSpec):
        raise TypeError(f"tensorflux's map_fn takes TensorSpec, SparseTensorSpec and "
                        f"RaggedTensorSpec results, not {signature}.")
    return dtypes.as_dtype(signature)


def _encode_result(value, signature):
    if isinstance(signature, SparseTensorSpec):
        return parsing_ops.serialize_sparse(value, out_type=dtypes.variant)
    if isinstance(signature, _ragged_spec_class()):
        if hasattr(value, "_to_variant"):  # a RaggedTensor
            return value._to_variant(batched_input=False)
        return ragged_conversion_ops.ragged_tensor_to_variant(  # a Tensor: ragged rank 0
            [], convert_to_tensor(value), batched_input=False)
    return value


def _decode_result(stacked, signature):
    """The stacked results of `signature` as one value with a leading dimension."""
    if isinstance(signature, SparseTensorSpec):
        rank = signature.shape.ndims
        return parsing_ops.deserialize_sparse(stacked, signature.dtype,
                                              rank=None if rank is None else rank + 1)
    if isinstance(signature, _ragged_spec_class()):
        from tensorflux.ragged.ragged_tensor import RaggedTensor  # ragged imports this package

        out = RaggedTensor._from_variant(stacked, signature.dtype, signature.ragged_rank + 1,
                                         signature.ragged_rank, signature.row_splits_dtype)
        if signature.shape.ndims is not None:
            out._set_shape(tensor_shape.TensorShape([stacked.shape[0].value]).concatenate(
                signature.shape))
        return out
    return stacked


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop: bool = True,
           swap_memory: bool = False, infer_shape: bool = True, name: str | None = None,
           fn_output_signature=None):
    """`fn` applied to each element of `elems` along dimension 0, results stacked.

    Args:
      fn: callable from one element (structured like `elems`) to the output structure.
      elems: a tensor or a (nested) structure of tensors with the same first dimension.
      dtype: the output structure's dtypes (or TypeSpecs: TensorSpec, SparseTensorSpec,
        RaggedTensorSpec) when it differs from `elems`'.
      parallel_iterations: iterations run at once (default 10).
      back_prop: whether gradients flow through.
      swap_memory: accepted for compatibility.
      infer_shape: require one shape for all results.
      name: name scope (default "map").
      fn_output_signature: TF2 spelling of `dtype`.

    Returns:
      The stacked results, structured like `dtype` (or `elems`).

    Raises:
      TypeError: `fn` is not callable.
      ValueError: `elems` are scalars; `fn`'s result does not match `dtype`'s structure.
    """
    _check_callable(fn)
    if dtype is None:
        dtype = fn_output_signature
    if not parallel_iterations:
        parallel_iterations = 10
    input_is_nested = nest.is_nested(elems)

    def input_pack(x):
        return nest.pack_sequence_as(elems, x) if input_is_nested else x[0]

    if dtype is None:
        output_is_nested, output_structure = input_is_nested, elems
    else:
        output_is_nested, output_structure = nest.is_nested(dtype), dtype

    def output_flatten(x):
        return nest.flatten(x) if output_is_nested else [x]

    def output_pack(x):
        return nest.pack_sequence_as(output_structure, x) if output_is_nested else x[0]

    elems_flat = nest.flatten(elems) if input_is_nested else [elems]
    with graph_lib.name_scope(name, "map", [e for e in elems_flat
                                            if isinstance(e, graph_lib.Tensor)]):
        elems_flat = [convert_to_tensor(e, name="elem") for e in elems_flat]
        if dtype is None:
            signature_flat = dtype_flat = [e.dtype for e in elems_flat]
        else:
            signature_flat = output_flatten(dtype)
            dtype_flat = [_carried_dtype(d) for d in signature_flat]
        _, n = _leading_dim(elems_flat)
        elems_ta = _unstacked(elems_flat, n)
        accs_ta = [TensorArray(dtype=dt, size=n, dynamic_size=False, infer_shape=infer_shape)
                   for dt in dtype_flat]

        def compute(i, tas):
            packed_values = input_pack([ta.read(i) for ta in elems_ta])
            packed_fn_values = fn(packed_values)
            nest.assert_same_structure(output_structure, packed_fn_values)
            flat_fn_values = [_encode_result(v, d) for v, d in zip(
                output_flatten(packed_fn_values), signature_flat, strict=True)]
            return (i + 1, [ta.write(i, v) for ta, v in zip(tas, flat_fn_values,
                                                            strict=True)])

        i = _zero()
        _, r_a = builders.while_loop(
            lambda i, _: i < n, compute, (i, accs_ta),
            parallel_iterations=parallel_iterations, back_prop=back_prop,
            swap_memory=swap_memory, maximum_iterations=n)
        results_flat = [r.stack() for r in r_a]
        _set_leading_dim(results_flat, elems_flat)
        return output_pack([_decode_result(r, d)
                            for r, d in zip(results_flat, signature_flat, strict=True)])


def vectorized_map(fn, elems, fallback_to_while_loop: bool = True, warn: bool = True):
    """`fn` over dimension 0 of `elems`, results stacked (`tf.vectorized_map`).

    TensorFlow vectorizes `fn` (pfor) and falls back to a while loop for what it cannot;
    tensorflux always runs the loop (`map_fn`, up to 64 iterations at once), which gives
    the same values, structure and static shapes. The output structure and dtypes come
    from calling `fn` once on the first elements (ops that are built but never run).

    Raises:
      TypeError: `fn` is not callable.
      ValueError: `elems` are scalars.
    """
    del fallback_to_while_loop, warn
    _check_callable(fn)
    flat = [convert_to_tensor(e, name="elem") for e in nest.flatten(elems)]
    if any(e.shape.ndims == 0 for e in flat):
        raise ValueError("elems must be at least 1-D: vectorized_map works along dimension 0")
    packed = nest.pack_sequence_as(elems, flat) if nest.is_nested(elems) else flat[0]
    with graph_lib.name_scope("vectorized_map_trace"):
        firsts = [gather_ops.gather(e, 0) for e in flat]
        probe = fn(nest.pack_sequence_as(elems, firsts) if nest.is_nested(elems)
                   else firsts[0])
    dtype = nest.map_structure(lambda t: convert_to_tensor(t).dtype, probe)
    n = _leading_dim(flat)[1]
    return map_fn(lambda x: nest.map_structure(convert_to_tensor, fn(x)), packed, dtype=dtype,
                  parallel_iterations=min(n, 64) if isinstance(n, int) and n > 0 else 64,
                  name="vectorized_map")


def _zero():
    return constant_op.constant(0)


def _fold(fn, elems, initializer, parallel_iterations, back_prop, swap_memory, name,
          default_name: str, reverse: bool):
    _check_callable(fn)
    with graph_lib.name_scope(name, default_name, [e for e in nest.flatten(elems)
                                                   if isinstance(e, graph_lib.Tensor)]):
        elems_flat = [convert_to_tensor(e, name="elem") for e in nest.flatten(elems)]
        _, n = _leading_dim(elems_flat)
        elems_ta = nest.pack_sequence_as(elems, _unstacked(elems_flat, n))
        if initializer is None:
            first = n - 1 if reverse else 0
            a = nest.map_structure(lambda ta: ta.read(first), elems_ta)
            i = n - 2 if reverse else constant_op.constant(1)
        else:
            a = initializer
            i = n - 1 if reverse else constant_op.constant(0)

        def compute(i, a):
            elem_i = nest.map_structure(lambda ta: ta.read(i), elems_ta)
            a = fn(a, elem_i)
            return [i - 1 if reverse else i + 1, a]

        def cond(i, a):
            return i >= 0 if reverse else i < n

        _, r_a = builders.while_loop(
            cond, compute, [i, a], parallel_iterations=parallel_iterations,
            back_prop=back_prop, swap_memory=swap_memory, maximum_iterations=n)
        return r_a


def foldl(fn, elems, initializer=None, parallel_iterations: int = 10, back_prop: bool = True,
          swap_memory: bool = False, name: str | None = None):
    """`fn(...fn(fn(initializer, elems[0]), elems[1])..., elems[n-1])` (`tf.foldl`).

    Without `initializer` the fold starts from `elems[0]`. `elems` may be nested.

    Raises:
      TypeError: `fn` is not callable.
    """
    return _fold(fn, elems, initializer, parallel_iterations, back_prop, swap_memory, name,
                 "foldl", reverse=False)


def foldr(fn, elems, initializer=None, parallel_iterations: int = 10, back_prop: bool = True,
          swap_memory: bool = False, name: str | None = None):
    """foldl from the last element to the first (`tf.foldr`)."""
    return _fold(fn, elems, initializer, parallel_iterations, back_prop, swap_memory, name,
                 "foldr", reverse=True)


def scan(fn, elems, initializer=None, parallel_iterations: int = 10, back_prop: bool = True,
         swap_memory: bool = False, infer_shape: bool = True, reverse: bool = False,
         name: str | None = None):
    """Every intermediate accumulator of a fold, stacked (`tf.scan`).

    `fn(accumulator, element)` returns the next accumulator (structured like
    `initializer`, or like `elems` without one, in which case the scan starts from the
    first element, which is also the first result).

    Raises:
      TypeError: `fn` is not callable.
      ValueError: `fn`'s result does not match the accumulator's structure.
    """
    _check_callable(fn)
    input_is_nested = nest.is_nested(elems)

    def input_pack(x):
        return nest.pack_sequence_as(elems, x) if input_is_nested else x[0]

    structure = elems if initializer is None else initializer
    output_is_nested = nest.is_nested(structure)

    def output_flatten(x):
        return nest.flatten(x) if output_is_nested else [x]

    def output_pack(x):
        return nest.pack_sequence_as(structure, x) if output_is_nested else x[0]

    elems_flat = nest.flatten(elems) if input_is_nested else [elems]
    with graph_lib.name_scope(name, "scan", [e for e in elems_flat
                                             if isinstance(e, graph_lib.Tensor)]):
        elems_flat = [convert_to_tensor(e, name="elem") for e in elems_flat]
        _, n = _leading_dim(elems_flat)
        elems_ta = _unstacked(elems_flat, n, with_element_shape=True)
        if initializer is None:
            a_flat = [ta.read(n - 1 if reverse else 0) for ta in elems_ta]
            start = 1
        else:
            a_flat = [convert_to_tensor(x) for x in output_flatten(initializer)]
            start = 0
        accs_ta = [TensorArray(dtype=a.dtype, size=n, dynamic_size=False,
                               element_shape=a.shape if infer_shape else None,
                               infer_shape=infer_shape) for a in a_flat]
        if initializer is None:
            accs_ta = [ta.write(n - 1 if reverse else 0, a)
                       for ta, a in zip(accs_ta, a_flat, strict=True)]

        def compute(i, a_flat, tas):
            packed_elems = input_pack([ta.read(i) for ta in elems_ta])
            a_out = fn(output_pack(a_flat), packed_elems)
            nest.assert_same_structure(structure, a_out)
            flat_a_out = output_flatten(a_out)
            tas = [ta.write(i, v) for ta, v in zip(tas, flat_a_out, strict=True)]
            return (i - 1 if reverse else i + 1, flat_a_out, tas)

        if reverse:
            initial_i = n - 1 - start

            def condition(i, _1, _2):
                return i >= 0
        else:
            initial_i = start

            def condition(i, _1, _2):
                return i < n

        if isinstance(initial_i, int):
            initial_i = constant_op.constant(initial_i)
        _, _, r_a = builders.while_loop(
            condition, compute, (initial_i, a_flat, accs_ta),
            parallel_iterations=parallel_iterations, back_prop=back_prop,
            swap_memory=swap_memory, maximum_iterations=n)
        results_flat = [r.stack() for r in r_a]
        _set_leading_dim(results_flat, elems_flat)
        return output_pack(results_flat)
