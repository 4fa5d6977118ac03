"""RaggedTensorToVariant and RaggedTensorFromVariant: a RaggedTensor (its row splits and
flat values) as `variant` tensors and back, the way tf.data carries ragged components.

- `RaggedTensorToVariant(splits..., values, batched_input=False)`: one scalar variant
  holding the whole ragged tensor (RAGGED_RANK splits; RAGGED_RANK 0 holds a dense tensor).
- `batched_input=True`: a [nrows] vector, each entry one row (a ragged tensor of one
  ragged rank less; for RAGGED_RANK 0, the rows of the dense tensor).
- `RaggedTensorFromVariant(encoded, input_ragged_rank, output_ragged_rank)`: a variant
  tensor of rank k whose entries are ragged tensors of `input_ragged_rank` (-1: inferred
  as `output_ragged_rank - k`) combined into one of `output_ragged_rank = k +
  input_ragged_rank`: the k leading dimensions become uniform ragged dimensions.

No gradients: tf.data's ragged components do not take part in differentiation.
"""

from __future__ import annotations

from tensorflux.framework import tensor_shape
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable

__all__: list[str] = []

TensorShape = tensor_shape.TensorShape


def _to_variant_shape(op):
    """A scalar, or [nrows] with batched_input (nrows from the outer splits or values)."""
    if not op._attrs["batched_input"]:
        return [TensorShape([])]
    first = op.inputs[0].shape
    if op._attrs["RAGGED_RANK"] > 0:
        n = first[0].value if first.ndims else None
        return [TensorShape([None if n is None else n - 1])]
    return [TensorShape([first[0].value if first.ndims else None])]


def _from_variant_shape(op):
    """Splits are vectors; the values' rank is that of the encoded rows' values."""
    out_rank = op._attrs["output_ragged_rank"]
    in_rank = op._attrs["input_ragged_rank"]
    k = op.inputs[0].shape.ndims
    if in_rank == -1 and k is not None:
        in_rank = out_rank - k
    if k is not None and in_rank + k != out_rank:
        raise ValueError(f"output_ragged_rank ({out_rank}) must equal input_ragged_rank "
                         f"({in_rank}) plus the rank of encoded_ragged ({k})")
    return [TensorShape([None])] * out_rank + [tensor_shape.unknown_shape()]


define_op("RaggedTensorToVariant",
          inputs=["rt_nested_splits: RAGGED_RANK * Tsplits", "rt_dense_values: Tvalues"],
          outputs=["encoded_ragged: variant"],
          attrs=["RAGGED_RANK: int >= 0", "Tvalues: type",
                 "Tsplits: {int32, int64} = DT_INT64", "batched_input: bool"],
          shape_fn=_to_variant_shape)
not_differentiable("RaggedTensorToVariant")


def ragged_tensor_to_variant(rt_nested_splits, rt_dense_values, batched_input: bool,
                             name=None):
    """`rt_nested_splits` and `rt_dense_values` encoded as a variant (see the module
    docstring)."""
    return apply_op("RaggedTensorToVariant", rt_nested_splits=list(rt_nested_splits),
                    rt_dense_values=rt_dense_values, batched_input=bool(batched_input),
                    name=name or "RaggedTensorToVariant")


define_op("RaggedTensorFromVariant", inputs=["encoded_ragged: variant"],
          outputs=["output_nested_splits: output_ragged_rank * Tsplits",
                   "output_dense_values: Tvalues"],
          attrs=["input_ragged_rank: int >= -1", "output_ragged_rank: int >= 0",
                 "Tvalues: type", "Tsplits: {int32, int64} = DT_INT64"],
          shape_fn=_from_variant_shape)
not_differentiable("RaggedTensorFromVariant")


def ragged_tensor_from_variant(encoded_ragged, input_ragged_rank: int,
                               output_ragged_rank: int, Tvalues, Tsplits, name=None):  # noqa: N803
    """(nested splits, dense values) of the ragged tensor `encoded_ragged` holds."""
    out = apply_op("RaggedTensorFromVariant", encoded_ragged=encoded_ragged,
                   input_ragged_rank=input_ragged_rank,
                   output_ragged_rank=output_ragged_rank, Tvalues=Tvalues, Tsplits=Tsplits,
                   name=name or "RaggedTensorFromVariant")
    return list(out.output_nested_splits), out.output_dense_values
