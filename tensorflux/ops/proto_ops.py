"""`tf.io.decode_proto` / `tf.io.encode_proto` (ops DecodeProtoV2, EncodeProto): fields of
serialized protocol buffers as tensors and back, by reflection over the message's
descriptor (kernels/cpu/proto_ops.py).

decode_proto gives `sizes` [batch..., fields] (how many values each message has of each
field: 0 or 1 for a singular field, 0 when it is unset) and one tensor per field of
[batch..., the largest count] (at least 1), padded with the field's default. Message-typed
fields come out as their serialized bytes. `descriptor_source` "local://" looks the type up
among the messages this process has loaded (TensorFlow's message names resolve to
tensorflux's mirrors of them: "tensorflow.Example" to "tensorflux.Example"), a file path or
"bytes://..." reads a serialized FileDescriptorSet.
"""

from __future__ import annotations

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable
from tensorflux.framework.tensor_conversion import convert_to_tensor

__all__: list[str] = []  # tf.io's names (tensorflux/io)


def _decode_shape(op):
    batch = op.inputs[0].shape
    n = len(op.attrs["field_names"])
    if batch.ndims is None:
        return [tensor_shape.unknown_shape()] * (n + 1)
    return [batch.concatenate([n])] + [batch.concatenate([None])] * n


define_op("DecodeProtoV2", inputs=["bytes: string"],
          outputs=["sizes: int32", "values: output_types"],
          attrs=["message_type: string", "field_names: list(string)",
                 "output_types: list(type) >= 0", "descriptor_source: string = 'local://'",
                 "message_format: string = 'binary'", "sanitize: bool = false"],
          shape_fn=_decode_shape)
define_op("EncodeProto", inputs=["sizes: int32", "values: Tinput_types"],
          outputs=["bytes: string"],
          attrs=["field_names: list(string)", "message_type: string",
                 "descriptor_source: string = 'local://'", "Tinput_types: list(type)"],
          shape_fn=lambda op: [op.inputs[0].shape[:-1] if op.inputs[0].shape.ndims
                               else tensor_shape.unknown_shape()])
not_differentiable("DecodeProtoV2")
not_differentiable("EncodeProto")


def decode_proto(bytes, message_type, field_names, output_types,  # noqa: A002
                 descriptor_source="local://", message_format="binary", sanitize=False,
                 name=None):
    """(sizes, [values per field]) of the serialized `message_type` messages in `bytes`."""
    outs = apply_op("DecodeProtoV2", bytes=convert_to_tensor(bytes, dtypes.string),
                    message_type=message_type, field_names=list(field_names),
                    output_types=[dtypes.as_dtype(t) for t in output_types],
                    descriptor_source=descriptor_source, message_format=message_format,
                    sanitize=sanitize, name=name or "DecodeProtoV2")
    return outs[0], list(outs[1])


def encode_proto(sizes, values, field_names, message_type, descriptor_source="local://",
                 name=None):
    """The serialized `message_type` messages whose fields hold the first `sizes` values of
    each field's tensor in `values` (decode_proto's inverse)."""
    return apply_op("EncodeProto", sizes=convert_to_tensor(sizes, dtypes.int32),
                    values=[convert_to_tensor(v) for v in values],
                    field_names=list(field_names), message_type=message_type,
                    descriptor_source=descriptor_source, name=name or "EncodeProto")
