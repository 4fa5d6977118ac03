"""TF Serving's gRPC `tensorflow.serving.PredictionService/Predict` for `tensorflux-serve
--grpc_port`: the messages of protos/serving_predict.proto (wire-compatible with TF
Serving's), so TF Serving's own Python, Go or C++ clients can call it.

A request names the model (`model_spec.name`), optionally a version or version label, and a
signature ("serving_default" when empty); its inputs are TensorProtos by alias, and
`output_filter` picks output aliases (all when empty). Errors are gRPC statuses with the
TensorFlow error code (INVALID_ARGUMENT, NOT_FOUND, ...) and message: an input TensorProto
whose dtype is not the signature's, whose contents do not fit its shape, or whose shape has a
negative dimension is INVALID_ARGUMENT; one that repeats a few values over more bytes than
the request size limit is RESOURCE_EXHAUSTED (nothing is allocated); bytes that are not a
PredictRequest are INVALID_ARGUMENT (as the distributed services answer them). The RPC runs
on gRPC's own thread pool, outside server-side batching.
"""

from __future__ import annotations

from concurrent import futures

import grpc

from tensorflux.framework import dtypes, errors, tensor_util
from tensorflux.protos import serving_predict_pb2

__all__ = ["SERVICE", "start_grpc_server"]

SERVICE = "tensorflow.serving.PredictionService"


class _Malformed:
    """What the request deserializer returns for bytes that do not parse. (A deserializer
    that raises makes grpcio answer INTERNAL, and grpcio 1.85 keeps ~19 KB per such call.)"""

    def __init__(self, error: str):
        self.error = error


def _parse_request(data: bytes):
    try:
        return serving_predict_pb2.PredictRequest.FromString(data)
    except Exception as e:  # noqa: BLE001 - any parse failure is the client's
        return _Malformed(f"{type(e).__name__}: {e}")


def _input_arrays(request, signature, max_bytes: int) -> dict:
    """The request's inputs as arrays, each TensorProto's dtype checked against the
    signature's before its values are read."""
    inputs = {}
    for alias, proto in request.inputs.items():
        info = signature.inputs.get(alias)
        if info is not None and proto.dtype != info.dtype:
            raise errors.InvalidArgumentError(
                None, None, f"input tensor alias {alias} has dtype {_dtype_name(proto.dtype)}, "
                f"which does not match the signature's dtype {_dtype_name(info.dtype)}")
        try:
            inputs[alias] = tensor_util.make_ndarray_within(proto, max_bytes)
        except (TypeError, ValueError) as e:
            raise errors.InvalidArgumentError(
                None, None, f"Bad input tensor {alias}: {e}") from None
    return inputs


def _dtype_name(enum: int) -> str:
    try:
        return dtypes.as_dtype(enum).name
    except TypeError:
        return f"<invalid DataType {enum}>"


def _predict(manager, request, context, max_bytes: int):
    if isinstance(request, _Malformed):
        context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                      f"{SERVICE}/Predict: malformed request ({request.error})")
    spec = request.model_spec
    try:
        if spec.name != manager.name:
            raise errors.NotFoundError(
                None, None, f"Servable not found for request: Latest({spec.name})")
        choice = spec.WhichOneof("version_choice")
        version = spec.version.value if choice == "version" else None
        label = spec.version_label if choice == "version_label" else None
        with manager.acquire(version, label) as servable:
            name = spec.signature_name or "serving_default"
            signature = servable.signature(name)
            inputs = _input_arrays(request, signature, max_bytes)
            unknown = [a for a in request.output_filter if a not in signature.outputs]
            if unknown:
                raise errors.InvalidArgumentError(
                    None, None, f"output tensor alias not found in signature: {unknown[0]}")
            outputs = servable.run(name, inputs)
            response = serving_predict_pb2.PredictResponse()
            response.model_spec.name = manager.name
            response.model_spec.version.value = servable.version
            response.model_spec.signature_name = name
            for alias in request.output_filter or outputs:
                response.outputs[alias].CopyFrom(tensor_util.make_tensor_proto(outputs[alias]))
            return response
    except errors.OpError as e:
        context.abort(grpc.StatusCode(_status_code(e.error_code)), e.message)


def _status_code(code: int):
    for c in grpc.StatusCode:
        if c.value[0] == code:
            return c.value
    return grpc.StatusCode.UNKNOWN.value


def start_grpc_server(manager, host: str, port: int, max_workers: int = 8,
                      max_request_bytes: int = 64 << 20) -> tuple[grpc.Server, int]:
    """Serves Predict for `manager`'s model on host:port (0 picks one); returns the started
    server and its port."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers, thread_name_prefix="serve-rpc"),
                         options=[("grpc.max_receive_message_length", max_request_bytes),
                                  ("grpc.so_reuseport", 0)])
    handler = grpc.unary_unary_rpc_method_handler(
        lambda req, ctx: _predict(manager, req, ctx, max_request_bytes),
        request_deserializer=_parse_request,
        response_serializer=serving_predict_pb2.PredictResponse.SerializeToString)
    server.add_generic_rpc_handlers(
        [grpc.method_handlers_generic_handler(SERVICE, {"Predict": handler})])
    bound = server.add_insecure_port(f"{host}:{port}")
    if not bound:
        raise OSError(f"cannot bind {host}:{port} for gRPC")
    server.start()
    return server, bound
