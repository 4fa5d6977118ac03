"""The master and worker services on gRPC: TensorFlow's method paths, our Python calls.

Each method is a thin adapter: the request arrives parsed (a malformed one is refused
with INVALID_ARGUMENT before it gets here, rpc.py), the Master or Worker method runs, and
an OpError becomes the gRPC status of its code with its message. A call's deadline and
cancellation reach the step it runs: RunGraph and RunStep get the time the caller has
left as their step deadline, and a cancelled RunGraph (the master gave up on the step)
cancels the step on this task.
"""

from __future__ import annotations

import time

from tensorflux.distributed import rpc, wire
from tensorflux.distributed.master import Master
from tensorflux.distributed.worker import Worker
from tensorflux.framework import errors
from tensorflux.protos import master_pb2, worker_pb2
from tensorflux.runtime.cancellation import CancellationManager


def _deadline(context) -> float | None:
    remaining = context.time_remaining()
    if remaining is None or remaining > 1e9:
        return None
    return time.monotonic() + remaining


def _serialize(message) -> bytes:
    return message.SerializeToString()


def _identity(data: bytes) -> bytes:
    return data


class _with_tensors:  # noqa: N801 - stands where a message class stands
    """A request "class" whose FromString reads the repeated NamedTensorProto field
    `number` by hand (`wire.decode_with_named_tensors`): (message, [(name, array)])."""

    def __init__(self, cls, number: int):
        self.cls, self.number = cls, number

    def FromString(self, data: bytes):  # noqa: N802 - protobuf's name
        return wire.decode_with_named_tensors(data, self.number, self.cls)


def worker_handler(worker: Worker, config: rpc.RpcConfig):
    """The `/tensorflow.WorkerService/*` handler of `worker`."""
    w = worker_pb2

    def plain(fn):
        return lambda request, context: fn(request)

    def run_graph(parsed, context):
        request, sends = parsed
        cm = CancellationManager()
        running = [True]  # the callback also runs when the call ends normally
        context.add_callback(lambda: running[0] and cm.start_cancel())
        try:
            response, recvs = worker.run_graph(request, _deadline(context), cm, sends)
        finally:
            running[0] = False
        return wire.encode_with_named_tensors(response, 1, recvs)

    def recv_tensor(request, context):
        remaining = context.time_remaining()
        value, is_dead = worker.recv_value(request.step_id, request.rendezvous_key,
                                           remaining if remaining and remaining < 1e9
                                           else None)
        return wire.encode_recv_tensor_response(value, is_dead,
                                                int(time.time() * 1e6))

    def unimplemented(name):
        def fn(request, context):
            raise errors.UnimplementedError(None, None, f"WorkerService.{name} is not "
                                            "supported by tensorflux workers")
        return fn

    methods = {
        "GetStatus": (plain(worker.get_status), w.GetStatusRequest, _serialize),
        "CreateWorkerSession": (plain(worker.create_worker_session),
                                w.CreateWorkerSessionRequest, _serialize),
        "DeleteWorkerSession": (plain(worker.delete_worker_session),
                                w.DeleteWorkerSessionRequest, _serialize),
        "RegisterGraph": (plain(worker.register_graph), w.RegisterGraphRequest, _serialize),
        "DeregisterGraph": (plain(worker.deregister_graph), w.DeregisterGraphRequest,
                            _serialize),
        "RunGraph": (run_graph, _with_tensors(w.RunGraphRequest, 3), _identity),
        "CleanupGraph": (plain(worker.cleanup_graph), w.CleanupGraphRequest, _serialize),
        "CleanupAll": (plain(worker.cleanup_all), w.CleanupAllRequest, _serialize),
        "RecvTensor": (recv_tensor, w.RecvTensorRequest, _identity),
        "Logging": (plain(worker.logging), w.LoggingRequest, _serialize),
        "Tracing": (plain(worker.tracing), w.TracingRequest, _serialize),
    }
    for name, req in (("RecvBuf", w.RecvBufRequest), ("CompleteGroup", w.CompleteGroupRequest),
                      ("CompleteInstance", w.CompleteInstanceRequest),
                      ("GetStepSequence", w.GetStepSequenceRequest),
                      ("MarkRecvFinished", w.MarkRecvFinishedRequest)):
        methods[name] = (unimplemented(name), req, _serialize)
    return rpc.service_handler(rpc.WORKER_SERVICE, methods, config)


def pushed_run_graph(worker: Worker):
    """RunGraph for calls that come on a push connection (push.py): `run(request bytes,
    deadline, cancellation, shared) -> RunGraphResponse bytes` (`shared`: (key, array)
    pairs of the request's `send` that crossed in shared memory; errors in the response
    body, or raised when the request does not ask for that)."""
    parse = _with_tensors(worker_pb2.RunGraphRequest, 3)

    def run(data, deadline, cm, shared=()) -> bytes:
        request, sends = parse.FromString(data)
        sends = sends + list(shared)
        try:
            response, recvs = worker.run_graph(request, deadline, cm, sends)
        except errors.OpError as e:
            response = worker_pb2.RunGraphResponse(status_code=e.error_code,
                                                   status_error_message=e.message)
            recvs = []
        return wire.encode_with_named_tensors(response, 1, recvs)

    return run


def pushed_run_step(master: Master):
    """RunStep for calls that come on a push connection from a client (push.py):
    `run(request bytes, deadline, cancellation, shared) -> RunStepResponse bytes`
    (`shared`: (name, array) pairs of the request's feeds that crossed in shared memory)."""
    parse = _with_tensors(master_pb2.RunStepRequest, 2)

    def run(data, deadline, cm, shared=()) -> bytes:
        request, feeds = parse.FromString(data)
        feeds = feeds + list(shared)
        if not request.options.timeout_in_ms:
            request.options.timeout_in_ms = max(1, int((deadline - time.monotonic()) * 1000))
        response, tensors = master.run_step_values(request, feeds)
        return wire.encode_with_named_tensors(response, 1, tensors)

    return run


def master_handler(master: Master, config: rpc.RpcConfig):
    """The `/tensorflow.MasterService/*` handler of `master`."""
    m = master_pb2

    def plain(fn):
        return lambda request, context: fn(request)

    def run_step(parsed, context):
        request, feeds = parsed
        deadline = _deadline(context)
        if deadline is not None and not request.options.timeout_in_ms:
            request.options.timeout_in_ms = max(1, int((deadline - time.monotonic()) * 1000))
        response, tensors = master.run_step_values(request, feeds)
        return wire.encode_with_named_tensors(response, 1, tensors)

    methods = {
        "CreateSession": (plain(master.create_session), m.CreateSessionRequest, _serialize),
        "ExtendSession": (plain(master.extend_session), m.ExtendSessionRequest, _serialize),
        "PartialRunSetup": (plain(master.partial_run_setup), m.PartialRunSetupRequest,
                            _serialize),
        "RunStep": (run_step, _with_tensors(m.RunStepRequest, 2), _identity),
        "CloseSession": (plain(master.close_session), m.CloseSessionRequest, _serialize),
        "ListDevices": (plain(master.list_devices), m.ListDevicesRequest, _serialize),
        "Reset": (plain(master.reset), m.ResetRequest, _serialize),
        "MakeCallable": (plain(master.make_callable), m.MakeCallableRequest, _serialize),
        "RunCallable": (plain(master.run_callable), m.RunCallableRequest, _serialize),
        "ReleaseCallable": (plain(master.release_callable), m.ReleaseCallableRequest,
                            _serialize),
        # tensorflux's own (a TensorFlow master has no such method): a RunStepRequest
        # naming the session and the partial run, answered with an empty RunStepResponse.
        "ReleasePartialRun": (plain(master.release_partial_run), m.RunStepRequest,
                              _serialize),
    }
    return rpc.service_handler(rpc.MASTER_SERVICE, methods, config)
