"""Dataset.from_generator: elements yielded by a Python generator (PyGeneratorDataset).

The element structure is `output_signature` (a structure of TensorSpec, SparseTensorSpec
and RaggedTensorSpec), or TF1's `output_types` / `output_shapes`. Each yielded element is
checked against it and converted here, in the generator's thread: a Tensor component to an
array of the promised dtype, a SparseTensorValue to the [3] variant a SparseTensor
component travels as, a RaggedTensorValue to the scalar variant of a ragged component.
"""

from __future__ import annotations

import numpy as np

from tensorflux.data import structure as st
from tensorflux.data.dataset_ops import DatasetV1
from tensorflux.framework import dtypes, errors, tensor_shape
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.sparse_tensor import SparseTensorSpec, SparseTensorValue
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.framework.tensor_spec import TensorSpec
from tensorflux.framework.type_spec import TypeSpec
from tensorflux.kernels import datasets as ds_kernels
from tensorflux.kernels.cpu.ragged_conversion_ops import RaggedVariant
from tensorflux.ragged.ragged_tensor_spec import RaggedTensorSpec
from tensorflux.ragged.ragged_tensor_value import RaggedTensorValue


def _tuples(s):
    """`s` with its lists as tuples (tf.nest's lists are tf.data's tuples here)."""
    if isinstance(s, (list, tuple)) and not hasattr(s, "_fields"):
        return tuple(_tuples(v) for v in s)
    if isinstance(s, dict):
        return {k: _tuples(v) for k, v in s.items()}
    return s


def signature(output_types, output_shapes, output_signature):
    """The element structure of a from_generator dataset.

    Raises:
      TypeError: both or neither of `output_types` and `output_signature`, `output_shapes`
        with `output_signature`, or a leaf of `output_signature` that is no TypeSpec.
    """
    if output_signature is None:
        if output_types is None:
            raise TypeError("To specify the output signature you need to provide either the "
                            "`output_signature` argument or the `output_types` argument.")
        return st.specs_from(output_types, output_shapes)
    if output_types is not None:
        raise TypeError("The `output_types` argument can not be used together with the "
                        "`output_signature` argument.")
    if output_shapes is not None:
        raise TypeError("The `output_shapes` argument can not be used together with the "
                        "`output_signature` argument.")
    structure = _tuples(output_signature)
    for spec in st.flatten(structure):
        if not isinstance(spec, TypeSpec):
            raise TypeError(f"`output_signature` must contain objects that are subclass of "
                            f"`tf.TypeSpec` but found {type(spec)} which is not.")
        if not isinstance(spec, (TensorSpec, SparseTensorSpec, RaggedTensorSpec)):
            raise TypeError(f"`output_signature` of tensorflux's from_generator takes "
                            f"TensorSpec, SparseTensorSpec and RaggedTensorSpec, not {spec}.")
    return structure


def from_generator(generator, output_types=None, output_shapes=None, args=None,
                   output_signature=None) -> DatasetV1:
    """See DatasetV1.from_generator."""
    if not callable(generator):
        raise TypeError("`generator` must be a Python callable.")
    structure = signature(output_types, output_shapes, output_signature)
    flat_specs = st.flatten(structure)
    arg_tensors = [convert_to_tensor(a, name="args") for a in (args or ())]
    legacy_types = st.types(structure)

    def make(*call_args):
        for value in generator(*call_args):
            yield _element(value, structure, legacy_types, flat_specs)

    token = ds_kernels.register_generator(make)
    v = apply_op("PyGeneratorDataset", args=arg_tensors, token=token,
                 **st.flat_attrs(structure))
    return DatasetV1(v, structure)


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _element(value, structure, legacy_types, flat_specs) -> list:
    """One yielded element as the flat list of arrays its components travel as.

    Raises:
      InvalidArgumentError: the element does not fit the promised structure, type or shape.
    """
    if isinstance(value, list) and isinstance(structure, tuple):
        value = tuple(value)
    try:
        leaves = st.flatten_up_to(structure, value)
    except ValueError as e:
        raise _invalid(f"`generator` yielded an element that did not match the expected "
                       f"structure. The expected structure was {legacy_types}, but the "
                       f"yielded element was {value!r}. ({e})") from None
    out = []
    for v, spec in zip(leaves, flat_specs, strict=True):
        if isinstance(spec, SparseTensorSpec):
            out.append(_sparse(v, spec))
        elif isinstance(spec, RaggedTensorSpec):
            out.append(_ragged(v, spec))
        else:
            out.append(_dense(v, spec.dtype, spec.shape))
    return out


def _dense(v, dtype, shape) -> np.ndarray:
    try:
        if dtype == dtypes.string:
            arr = np.asarray(v, dtype=object)
            arr = np.vectorize(lambda s: s.encode() if isinstance(s, str) else s,
                               otypes=[object])(arr) if arr.size else arr
        else:
            arr = _array(v, dtype.numpy_dtype)
    except (TypeError, ValueError):
        raise _invalid(f"TypeError: `generator` yielded an element that could not be "
                       f"converted to the expected type. The expected type was {dtype.name}, "
                       f"but the yielded element was {v!r}.") from None
    if not shape.is_compatible_with(tensor_shape.TensorShape(arr.shape)):
        raise _invalid(f"`generator` yielded an element of shape {arr.shape} where an "
                       f"element of shape {_shape_str(shape)} was expected.")
    return arr


def _array(value, numpy_dtype) -> np.ndarray:
    """A yielded numeric value as an array of the promised dtype, converted as TF1's
    from_generator converts it: NumPy's `asarray(value, dtype)`, so floats promised as
    integers are truncated (word2vec generators yield labels from `np.zeros`, float64, for
    an int32 component); a Python int too large for the dtype wraps, as TF's does. Text
    that is no number raises ValueError."""
    try:
        return np.asarray(value, dtype=numpy_dtype)
    except OverflowError:
        return np.asarray(value).astype(numpy_dtype)


def _sparse(v, spec: SparseTensorSpec) -> np.ndarray:
    """A yielded SparseTensorValue as the variant triple of a SparseTensor component."""
    if not isinstance(v, SparseTensorValue):
        raise _invalid(f"`generator` yielded {v!r} where a SparseTensorValue of "
                       f"{spec} was expected.")
    dense_shape = _dense(v.dense_shape, dtypes.int64, tensor_shape.TensorShape([None]))
    if not spec.shape.is_compatible_with(tensor_shape.TensorShape(dense_shape.tolist())):
        raise _invalid(f"`generator` yielded a SparseTensorValue of dense shape "
                       f"{tuple(dense_shape.tolist())} where one of shape "
                       f"{_shape_str(spec.shape)} was expected.")
    out = np.empty(3, dtype=object)
    out[0] = _dense(v.indices, dtypes.int64, tensor_shape.TensorShape(
        [None, dense_shape.size]))
    out[1] = _dense(v.values, spec.dtype, tensor_shape.TensorShape([None]))
    out[2] = dense_shape
    return out


def _ragged(v, spec: RaggedTensorSpec) -> np.ndarray:
    """A yielded RaggedTensorValue (or, for ragged rank 0, an array) as the scalar variant
    of a ragged component."""
    if isinstance(v, RaggedTensorValue):
        splits = tuple(_dense(s, spec.row_splits_dtype, tensor_shape.TensorShape([None]))
                       for s in v.nested_row_splits)
        values, shape = v.flat_values, tensor_shape.TensorShape(list(v.shape))
    elif spec.ragged_rank == 0:
        splits, values = (), v
        shape = tensor_shape.TensorShape(np.shape(v))
    else:
        raise _invalid(f"`generator` yielded {v!r} where a RaggedTensorValue of {spec} was "
                       f"expected.")
    if len(splits) != spec.ragged_rank or not spec.shape.is_compatible_with(shape):
        raise _invalid(f"`generator` yielded a ragged value of shape {_shape_str(shape)} and "
                       f"ragged rank {len(splits)} where {spec} was expected.")
    out = np.empty((), dtype=object)
    out[()] = RaggedVariant(splits, _dense(values, spec.dtype, tensor_shape.unknown_shape()))
    return out


def _shape_str(shape: tensor_shape.TensorShape) -> str:
    return "None" if shape.ndims is None else str(tuple(shape.as_list()))
