"""gRPC `/tensorflow.serving.PredictionService/Predict` with TF Serving's messages."""

from __future__ import annotations

import grpc
import numpy as np
import pytest

from tensorflux.framework import tensor_util
from tensorflux.protos import serving_predict_pb2 as pb
from tensorflux.serving.grpc_service import start_grpc_server
from tensorflux.serving.manager import ModelManager
from tests.serving import models
from tests.serving.conftest import write_version

X = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)


@pytest.fixture(scope="module")
def predict(tmp_path_factory, export_root):
    base = str(tmp_path_factory.mktemp("grpc_models"))
    write_version(base, 3, 1.0, export_root)
    manager = ModelManager("m", base, poll_wait_seconds=0, version_labels={"stable": 3})
    manager.start()
    server, port = start_grpc_server(manager, "127.0.0.1", 0)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    call = channel.unary_unary("/tensorflow.serving.PredictionService/Predict",
                               request_serializer=pb.PredictRequest.SerializeToString,
                               response_deserializer=pb.PredictResponse.FromString)
    try:
        yield lambda req: call(req, timeout=30)
    finally:
        channel.close()
        server.stop(None)
        manager.stop()


def _request(signature="", version=None, label=None, **inputs):
    req = pb.PredictRequest()
    req.model_spec.name = "m"
    req.model_spec.signature_name = signature
    if version is not None:
        req.model_spec.version.value = version
    if label is not None:
        req.model_spec.version_label = label
    for k, v in inputs.items():
        req.inputs[k].CopyFrom(tensor_util.make_tensor_proto(v))
    return req


def test_predict(predict):
    for req in (_request(x=X), _request("serving_default", version=3, x=X),
                _request(label="stable", x=X)):
        resp = predict(req)
        np.testing.assert_allclose(tensor_util.MakeNdarray(resp.outputs["y"]),
                                   models.expected_y(X, 1.0))
        assert (resp.model_spec.name, resp.model_spec.version.value,
                resp.model_spec.signature_name) == ("m", 3, "serving_default")


def test_output_filter_and_strings(predict):
    req = _request("two", a=np.array([1.5], np.float32), b=np.array([2], np.int32))
    req.output_filter.append("twice")
    resp = predict(req)
    assert list(resp.outputs) == ["twice"]
    assert tensor_util.MakeNdarray(resp.outputs["twice"]).tolist() == [4]
    resp = predict(_request("echo", s=np.array([b"\xff\x00", b"ok"], object)))
    assert tensor_util.MakeNdarray(resp.outputs["s_bytes"]).tolist() == [b"\xff\x00", b"ok"]


@pytest.mark.parametrize("req,code", [
    (_request(x=np.ones((2, 2), np.float32)), grpc.StatusCode.INVALID_ARGUMENT),
    (_request("nope", x=X), grpc.StatusCode.INVALID_ARGUMENT),
    (_request(version=9, x=X), grpc.StatusCode.NOT_FOUND),
    (_request(z=X), grpc.StatusCode.INVALID_ARGUMENT),
])
def test_errors_are_grpc_statuses(predict, req, code):
    with pytest.raises(grpc.RpcError) as info:
        predict(req)
    assert info.value.code() == code and info.value.details()
    assert predict(_request(x=X)).outputs["y"].tensor_shape.dim[0].size == 2


def test_wire_bytes_are_tf_servings():
    # Field numbers of TF Serving's model.proto and predict.proto: ModelSpec name=1,
    # version=2 (Int64Value), signature_name=3, version_label=4; PredictRequest
    # model_spec=1, inputs=2, output_filter=3; PredictResponse outputs=1, model_spec=2.
    req = pb.PredictRequest()
    req.model_spec.name = "m"
    req.model_spec.version.value = 5
    req.model_spec.signature_name = "s"
    req.output_filter.append("y")
    assert req.SerializeToString() == (
        b"\x0a\x0a" + b"\x0a\x01m" + b"\x12\x02\x08\x05" + b"\x1a\x01s" + b"\x1a\x01y")
    spec = pb.ModelSpec(version_label="L")
    assert spec.SerializeToString() == b"\x22\x01L"
    resp = pb.PredictResponse()
    resp.model_spec.name = "m"
    resp.outputs["y"].dtype = 1
    assert resp.SerializeToString() == b"\x0a\x07\x0a\x01y\x12\x02\x08\x01" + b"\x12\x03\x0a\x01m"
