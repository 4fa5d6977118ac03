"""Component values of tf.data elements as TensorProtos and back, variants included: what
`Dataset.cache(filename)`, snapshots and saved iterator states write.

A plain array is an ordinary TensorProto (tensor_util). An object array whose entries are
not strings holds variants, the encodings composite components travel in
(data/dataset_ops.py): a `RaggedVariant` per ragged tensor, or an array per part of a
SparseTensor ([3]: indices, values, dense shape). It becomes a DT_VARIANT TensorProto with
one VariantTensorDataProto per entry, as TensorFlow encodes them: a ragged tensor as
type_name "RaggedTensorVariant" with its nested row splits and then its flat values as
`tensors`; an array as type_name "tensorflow::Tensor" with the array as its one tensor.
Other variants (a dataset, an Optional) cannot be written.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import dtypes, errors, tensor_util
from tensorflux.kernels.cpu.ragged_conversion_ops import RaggedVariant
from tensorflux.lib.protowire import read_varint
from tensorflux.protos import tensor_pb2

RAGGED_TYPE_NAME = "RaggedTensorVariant"
TENSOR_TYPE_NAME = "tensorflow::Tensor"


def is_variant_array(arr) -> bool:
    """Whether `arr` is an object array of variants (not of strings)."""
    return isinstance(arr, np.ndarray) and arr.dtype == object and arr.size > 0 and \
        not all(isinstance(v, (bytes, str)) for v in arr.reshape(-1))


def to_proto(arr) -> tensor_pb2.TensorProto:
    """`arr` (an array, or a 0-d/N-d object array of variants) as a TensorProto.

    Raises:
      FailedPreconditionError: a variant that has no encoding (a dataset, an Optional).
    """
    arr = np.asarray(arr) if not isinstance(arr, np.ndarray) else arr
    if not is_variant_array(arr):
        return tensor_util.make_tensor_proto(arr)
    proto = tensor_pb2.TensorProto(dtype=dtypes.variant.as_datatype_enum)
    for d in arr.shape:
        proto.tensor_shape.dim.add().size = d
    for v in arr.reshape(-1):
        _encode(v, proto.variant_val.add())
    return proto


def _encode(v, out) -> None:
    if isinstance(v, RaggedVariant):
        out.type_name = RAGGED_TYPE_NAME
        for part in (*v.splits, v.values):
            out.tensors.add().CopyFrom(tensor_util.make_tensor_proto(np.asarray(part)))
    elif isinstance(v, np.ndarray) and not is_variant_array(v):
        out.type_name = TENSOR_TYPE_NAME
        out.tensors.add().CopyFrom(tensor_util.make_tensor_proto(v))
    else:
        raise errors.FailedPreconditionError(
            None, None, f"Cannot write a variant holding a {type(v).__name__}: only "
            "tensors, RaggedTensors and SparseTensors can be written")


def from_proto(proto) -> np.ndarray:
    """The array a `to_proto` TensorProto holds.

    Raises:
      DataLossError: a variant entry of an unknown type or a malformed one.
    """
    packed = proto.dtype in _LISTS and proto.tensor_content
    if proto.dtype != dtypes.variant.as_datatype_enum and not packed:
        return tensor_util.MakeNdarray(proto)
    shape = tuple(d.size for d in proto.tensor_shape.dim)
    if packed:  # TensorFlow's compact form (AsProtoTensorContent), as its snapshots write
        items = _unpack_list(bytes(proto.tensor_content), int(np.prod(shape)))
        if proto.dtype == dtypes.string.as_datatype_enum:
            out = np.empty(len(items), dtype=object)
            out[:] = items
            return out.reshape(shape)
        entries = [tensor_pb2.VariantTensorDataProto.FromString(b) for b in items]
    else:
        entries = list(proto.variant_val)
    if len(entries) != int(np.prod(shape)):
        raise errors.DataLossError(None, None, f"A variant tensor of shape {list(shape)} "
                                   f"holds {len(entries)} entries")
    out = np.empty(len(entries), dtype=object)
    for i, entry in enumerate(entries):
        out[i] = _decode(entry)
    return out.reshape(shape)


_LISTS = (dtypes.string.as_datatype_enum, dtypes.variant.as_datatype_enum)


def _unpack_list(content: bytes, n: int) -> list[bytes]:
    """The `n` byte strings of a string or variant tensor_content: their lengths as
    varints, then their bytes one after another."""
    lengths, pos = [], 0
    try:
        for _ in range(n):
            length, pos = read_varint(content, pos)
            lengths.append(length)
    except (IndexError, ValueError):
        raise errors.DataLossError(None, None, "A tensor_content list cut short") from None
    out = []
    for length in lengths:
        out.append(content[pos:pos + length])
        pos += length
    if pos != len(content):
        raise errors.DataLossError(None, None, f"A tensor_content list of {n} items holds "
                                   f"{len(content)} bytes, not {pos}")
    return out


def _decode(entry):
    parts = [from_proto(t) for t in entry.tensors]
    if entry.type_name == RAGGED_TYPE_NAME and parts:
        return RaggedVariant(tuple(parts[:-1]), parts[-1])
    if entry.type_name == TENSOR_TYPE_NAME and len(parts) == 1:
        return parts[0]
    raise errors.DataLossError(None, None, f"Cannot read a variant of type "
                               f"{entry.type_name!r} with {len(parts)} tensors")
