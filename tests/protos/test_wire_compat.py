"""tensorflux/protos against TensorFlow's own protos: same descriptors, same bytes both ways.

One TensorFlow subprocess (module-scoped fixture) does all the TensorFlow-side work: it builds
real messages (a GraphDef of a small graph, RunMetadata of a FULL_TRACE run, a MetaGraphDef
from tf.train.export_meta_graph, ...), parses the messages our classes built, and dumps the
descriptors of every TensorFlow message we mirror. Serializations are deterministic on both
sides, so equal messages give equal bytes.

TensorFlow 2.21's wheel has no Python modules for master.proto and worker.proto (the
distributed runtime's requests and responses); their descriptors exist only compiled into
libtensorflow_cc.so.2. The TensorFlow side cuts them out of that library and stands in
`tensorflow.core.protobuf.master_pb2` / `worker_pb2` modules built from them, so they are
compared and round-tripped like every other module.
"""

from __future__ import annotations

import base64
import importlib
import json
import struct
from pathlib import Path

import pytest
from google.protobuf import text_format

from tensorflux.protos import (
    attr_value_pb2,
    checkpoint_state_pb2,
    config_pb2,
    device_attributes_pb2,
    error_codes_pb2,
    event_pb2,
    example_pb2,
    graph_pb2,
    master_pb2,
    meta_graph_pb2,
    named_tensor_pb2,
    rewriter_config_pb2,
    step_stats_pb2,
    summary_pb2,
    tensor_bundle_pb2,
    tensor_pb2,
    tensorflow_server_pb2,
    tfprof_output_pb2,
    types_pb2,
    worker_pb2,
)
from tests.oracle import run_tf

PROTO_DIR = Path(__file__).resolve().parents[2] / "tensorflux" / "protos"
MODULES = sorted(p.stem + "_pb2" for p in PROTO_DIR.glob("*.proto"))

# Where TensorFlow 2.21 keeps the messages each of our modules defines (for parsing our bytes).
TF_MODULE = {
    "checkpoint_state_pb2": "tensorflow.python.training.checkpoint_state_pb2",
    "config_pb2": "tensorflow.core.protobuf.config_pb2",
    "control_flow_pb2": "tensorflow.core.protobuf.control_flow_pb2",
    "device_attributes_pb2": "tensorflow.core.framework.device_attributes_pb2",
    "device_filters_pb2": "tensorflow.core.protobuf.device_filters_pb2",
    "event_pb2": "tensorflow.core.util.event_pb2",
    "example_pb2": "tensorflow.core.example.example_pb2",
    "graph_pb2": "tensorflow.core.framework.graph_pb2",
    "master_pb2": "tensorflow.core.protobuf.master_pb2",  # stood in by the TensorFlow side
    "meta_graph_pb2": "tensorflow.core.protobuf.meta_graph_pb2",
    "named_tensor_pb2": "tensorflow.core.protobuf.named_tensor_pb2",
    "saved_model_pb2": "tensorflow.core.protobuf.saved_model_pb2",
    "queue_runner_pb2": "tensorflow.core.protobuf.queue_runner_pb2",
    "step_stats_pb2": "tensorflow.core.framework.step_stats_pb2",
    "tensor_bundle_pb2": "tensorflow.core.protobuf.tensor_bundle_pb2",
    "tensor_pb2": "tensorflow.core.framework.tensor_pb2",
    "tensorflow_server_pb2": "tensorflow.core.protobuf.tensorflow_server_pb2",
    "tfprof_output_pb2": "tensorflow.core.profiler.tfprof_output_pb2",
    "tfprof_log_pb2": "tensorflow.core.profiler.tfprof_log_pb2",
    "worker_pb2": "tensorflow.core.protobuf.worker_pb2",  # stood in by the TensorFlow side
}

# Where TensorFlow puts names one package below `tensorflow`, ours sit the same level below
# `tensorflux`, so that full names differ only in their first component.
SUBPACKAGES = {
    "error_codes_pb2": "tensorflux.error",  # tensorflow.error.Code
    "tfprof_output_pb2": "tensorflux.tfprof",  # tensorflow.tfprof.GraphNodeProto
    "tfprof_log_pb2": "tensorflux.tfprof",  # tensorflow.tfprof.OpLogProto
    "boosted_trees_pb2": "tensorflux.boosted_trees",  # tensorflow.boosted_trees.TreeEnsemble
    "master_service_pb2": "tensorflux.grpc",  # tensorflow.grpc.MasterService
    "worker_service_pb2": "tensorflux.grpc",  # tensorflow.grpc.WorkerService
    "serving_predict_pb2": "tensorflux.serving",  # tensorflow.serving.PredictRequest
}

# Modules mirroring messages that TensorFlow's wheel does not carry: TensorFlow Serving's
# (tests/serving/test_grpc.py checks their wire bytes instead) and TensorBoard's projector
# configuration (TensorBoard is not among TensorFlow 2.21's dependencies; the projector test in
# tests/compat_programs/test_tf_tutorials_rnn.py reads the text file it writes), and the
# boosted-trees ensemble (its proto is compiled into TensorFlow's kernels only).
NOT_IN_TENSORFLOW = {"serving_predict_pb2", "projector_config_pb2", "boosted_trees_pb2"}


def test_every_generated_module_imports():
    assert len(MODULES) >= 30
    for name in MODULES:
        module = importlib.import_module(f"tensorflux.protos.{name}")
        assert module.DESCRIPTOR.package == SUBPACKAGES.get(name, "tensorflux"), name


# ---------------------------------------------------------------------------------------------
# Messages built with our classes, to be parsed by TensorFlow.


def _attr_of_every_kind() -> dict[str, attr_value_pb2.AttrValue]:
    AttrValue = attr_value_pb2.AttrValue
    shape = {"dim": [{"size": 2}, {"size": -1, "name": "batch"}]}
    tensor = tensor_pb2.TensorProto(
        dtype=types_pb2.DT_FLOAT, tensor_shape={"dim": [{"size": 2}]}, float_val=[1.5, -2.0]
    )
    func = attr_value_pb2.NameAttrList(name="f", attr={"T": AttrValue(type=types_pb2.DT_INT32)})
    return {
        "s": AttrValue(s=b"VALID"),
        "i": AttrValue(i=-7),
        "f": AttrValue(f=0.25),
        "b": AttrValue(b=True),
        "type": AttrValue(type=types_pb2.DT_HALF),
        "ref_type": AttrValue(type=types_pb2.DT_FLOAT_REF),
        "shape": AttrValue(shape=shape),
        "unknown_rank": AttrValue(shape={"unknown_rank": True}),
        "tensor": AttrValue(tensor=tensor),
        "func": AttrValue(func=func),
        "placeholder": AttrValue(placeholder="T"),
        "empty_list": AttrValue(list={}),
        "list": AttrValue(
            list={
                "s": [b"a", b""],
                "i": [1, -2, 1 << 40],
                "f": [0.5, -1.0],
                "b": [True, False],
                "type": [types_pb2.DT_STRING, types_pb2.DT_BFLOAT16],
                "shape": [shape, {"unknown_rank": True}],
                "tensor": [tensor],
                "func": [func],
            }
        ),
    }


def _our_graph_def() -> graph_pb2.GraphDef:
    g = graph_pb2.GraphDef(versions={"producer": 1205, "min_consumer": 12, "bad_consumers": [3]})
    g.node.add(name="x", op="Placeholder", device="/device:CPU:0", attr=_attr_of_every_kind())
    g.node.add(name="y", op="Identity", input=["x", "^x"], attr={"T": {"type": 1}})
    g.node[1].experimental_debug_info.original_node_names.append("x0")
    fn = g.library.function.add(ret={"out": "y:output:0"}, attr={"_noinline": {"b": True}})
    fn.signature.name = "f"
    fn.signature.input_arg.add(name="a", type_attr="T")
    fn.signature.output_arg.add(name="out", type_attr="T")
    fn.signature.attr.add(name="T", type="type", allowed_values={"list": {"type": [1, 3]}})
    fn.node_def.add(name="y", op="Identity", input=["a"], attr={"T": {"placeholder": "T"}})
    fn.arg_attr[0].attr["_user_specified_name"].s = b"a"
    g.library.gradient.add(function_name="f", gradient_func="f_grad")
    g.library.registered_gradients.add(gradient_func="f", registered_op_type="F")
    return g


def _our_config() -> config_pb2.ConfigProto:
    opts = config_pb2.OptimizerOptions
    return config_pb2.ConfigProto(
        device_count={"CPU": 4, "GPU": 0},
        intra_op_parallelism_threads=2,
        inter_op_parallelism_threads=3,
        session_inter_op_thread_pool=[{"num_threads": 2, "global_name": "pool"}],
        allow_soft_placement=True,
        log_device_placement=True,
        gpu_options={
            "allow_growth": True,
            "visible_device_list": "0,1",
            "experimental": {"virtual_devices": [{"memory_limit_mb": [512.0, 256.0]}]},
        },
        graph_options={
            "optimizer_options": {"opt_level": opts.L0, "global_jit_level": opts.OFF},
            "enable_bfloat16_sendrecv": True,
            "rewrite_options": {
                "disable_meta_optimizer": True,
                "constant_folding": rewriter_config_pb2.RewriterConfig.OFF,
                "optimizers": ["pruning"],
            },
        },
        rpc_options={"compression_algorithm": "gzip"},
        cluster_def={"job": [{"name": "ps", "tasks": {0: "localhost:2222"}}]},
        experimental={"collective_group_leader": "/job:w", "coordination_config": {}},
    )


def _our_run_metadata() -> config_pb2.RunMetadata:
    stats = step_stats_pb2.StepStats()
    dev = stats.dev_stats.add(device="/job:localhost/replica:0/task:0/device:CPU:0")
    node = dev.node_stats.add(node_name="y", all_start_micros=1_700_000_000_000_000)
    node.op_end_rel_micros = 3
    node.output.add(slot=0).tensor_description.dtype = types_pb2.DT_FLOAT
    node.memory.add(allocator_name="cpu", total_bytes=64, peak_bytes=64)
    return config_pb2.RunMetadata(step_stats=stats, partition_graphs=[_our_graph_def()])


def _our_event() -> event_pb2.Event:
    Summary = summary_pb2.Summary
    summary = Summary(
        value=[
            Summary.Value(tag="loss", simple_value=0.5),
            Summary.Value(tag="img", image={"height": 1, "width": 1, "colorspace": 3}),
            Summary.Value(tag="h", histo={"min": -1.0, "max": 1.0, "num": 2, "bucket": [1, 1]}),
            Summary.Value(
                tag="t",
                metadata={"plugin_data": {"plugin_name": "text"}},
                tensor={"dtype": types_pb2.DT_STRING, "string_val": [b"hi"]},
            ),
        ]
    )
    return event_pb2.Event(wall_time=1.5, step=10, summary=summary)


def _our_example() -> example_pb2.SequenceExample:
    return example_pb2.SequenceExample(
        context={
            "feature": {
                "label": {"int64_list": {"value": [1, -(1 << 40)]}},
                "name": {"bytes_list": {"value": [b"cat"]}},
            }
        },
        feature_lists={"feature_list": {"x": {"feature": [{"float_list": {"value": [0.5]}}]}}},
    )


def _our_meta_graph() -> meta_graph_pb2.MetaGraphDef:
    m = meta_graph_pb2.MetaGraphDef(graph_def=_our_graph_def())
    m.meta_info_def.tags.append("serve")
    m.saver_def.filename_tensor_name = "save/Const:0"
    m.collection_def["ints"].int64_list.value.extend([1, 2])
    m.collection_def["floats"].float_list.value.append(0.5)
    m.collection_def["nodes"].node_list.value.append("x:0")
    m.collection_def["bytes"].bytes_list.value.append(b"\x00\x01")
    sig = m.signature_def["serving_default"]
    sig.inputs["x"].name = "x:0"
    sig.outputs["y"].coo_sparse.values_tensor_name = "y:0"
    sig.method_name = "tensorflow/serving/predict"
    m.asset_file_def.add(filename="vocab.txt").tensor_info.name = "asset:0"
    m.object_graph_def.nodes.add().user_object.identifier = "trackable"
    return m


def _named(name: str, tensor: tensor_pb2.TensorProto) -> named_tensor_pb2.NamedTensorProto:
    return named_tensor_pb2.NamedTensorProto(name=name, tensor=tensor)


def _float_tensor(*shape: int) -> tensor_pb2.TensorProto:
    """A DT_FLOAT tensor whose values travel in tensor_content, as Session.run sends them."""
    count = 1
    for d in shape:
        count *= d
    content = b"".join(struct.pack("<f", 0.5 * i - 1.0) for i in range(count))
    return tensor_pb2.TensorProto(
        dtype=types_pb2.DT_FLOAT,
        tensor_shape={"dim": [{"size": d} for d in shape]},
        tensor_content=content,
    )


_WORKER0 = "/job:worker/replica:0/task:0/device:CPU:0"
_WORKER1 = "/job:worker/replica:0/task:1/device:CPU:0"
_RENDEZVOUS_KEY = f"{_WORKER0};7d3c1a2b4e5f6071;{_WORKER1};edge_4_x;0:0"


def _our_device(name: str, incarnation: int) -> device_attributes_pb2.DeviceAttributes:
    return device_attributes_pb2.DeviceAttributes(
        name=name,
        device_type="CPU",
        memory_limit=268435456,
        locality={"bus_id": 1, "links": {"link": [{"device_id": 1, "type": "SE", "strength": 2}]}},
        incarnation=incarnation,
        physical_device_desc="host cpu",
        xla_global_id=-1,
    )


def _our_distributed() -> dict[str, tuple[str, str, object]]:
    """Requests and responses of the master and worker services, built with our classes."""
    run_step = master_pb2.RunStepRequest(
        session_handle="8f2a",
        feed=[
            _named("x:0", _float_tensor(2, 3)),
            _named(
                "k:0",
                tensor_pb2.TensorProto(
                    dtype=types_pb2.DT_STRING, tensor_shape={}, string_val=[b"key"]
                ),
            ),
        ],
        fetch=["y:0", "loss:0"],
        target=["train_op"],
        options={"trace_level": config_pb2.RunOptions.SOFTWARE_TRACE, "timeout_in_ms": 500},
        store_errors_in_response_body=True,
        request_id=-(1 << 62),
    )
    run_step_response = master_pb2.RunStepResponse(
        tensor=[_named("y:0", _float_tensor(3))],
        metadata=_our_run_metadata(),
        status_code=error_codes_pb2.RESOURCE_EXHAUSTED,
        status_error_message="OOM when allocating tensor",
    )
    run_graph = worker_pb2.RunGraphRequest(
        session_handle="8f2a",
        create_worker_session_called=True,
        graph_handle="0000000000000001",
        step_id=(1 << 62) + 5,
        exec_opts={"record_timeline": True, "record_partition_graphs": True},
        send=[_named(_RENDEZVOUS_KEY, _float_tensor(4, 1))],
        recv_key=[_RENDEZVOUS_KEY.replace("edge_4_x", "edge_9_y")],
        is_partial=True,
        is_last_partial_run=True,
        request_id=77,
    )
    recv = worker_pb2.RecvTensorResponse(
        tensor=_float_tensor(2, 2), send_start_micros=1_700_000_000_000_000, require_ack=True
    )
    server_def = tensorflow_server_pb2.ServerDef(
        cluster={
            "job": [
                {"name": "ps", "tasks": {0: "ps0:2222"}},
                {"name": "worker", "tasks": {0: "w0:2222", 1: "w1:2222"}},
            ]
        },
        job_name="worker",
        task_index=1,
        default_session_config={"allow_soft_placement": True, "device_count": {"GPU": 0}},
        protocol="grpc",
        port=2222,
        cluster_device_filters={
            "jobs": [
                {
                    "name": "worker",
                    "tasks": {1: {"device_filters": ["/job:ps", "/job:worker/task:1"]}},
                }
            ]
        },
    )
    return {
        "run_step_request": ("master_pb2", "RunStepRequest", run_step),
        "run_step_response": ("master_pb2", "RunStepResponse", run_step_response),
        "create_session": (
            "master_pb2",
            "CreateSessionRequest",
            master_pb2.CreateSessionRequest(
                graph_def=_our_graph_def(), config=_our_config(), target="grpc://w0:2222"
            ),
        ),
        "list_devices": (
            "master_pb2",
            "ListDevicesResponse",
            master_pb2.ListDevicesResponse(
                local_device=[_our_device(_WORKER0, 1 << 63)],
                remote_device=[_our_device(_WORKER1, 12345)],
            ),
        ),
        "run_graph_request": ("worker_pb2", "RunGraphRequest", run_graph),
        "recv_tensor_response": ("worker_pb2", "RecvTensorResponse", recv),
        "get_status": (
            "worker_pb2",
            "GetStatusResponse",
            worker_pb2.GetStatusResponse(device_attributes=[_our_device(_WORKER0, 99)]),
        ),
        "create_worker_session": (
            "worker_pb2",
            "CreateWorkerSessionRequest",
            worker_pb2.CreateWorkerSessionRequest(
                session_handle="8f2a",
                server_def=server_def,
                isolate_session_state=True,
                cluster_device_attributes=[_our_device(_WORKER1, 5)],
                master_task="/job:worker/replica:0/task:0",
                master_incarnation=-3,
            ),
        ),
        "recv_buf_request": (
            "worker_pb2",
            "RecvBufRequest",
            worker_pb2.RecvBufRequest(
                step_id=3,
                buf_rendezvous_key="k",
                num_bytes=16,
                buf_ptr=(1 << 64) - 8,
                src_device=_WORKER0,
                dst_device=_WORKER1,
                src_incarnation=(1 << 64) - 1,
            ),
        ),
        "complete_instance": (
            "worker_pb2",
            "CompleteInstanceRequest",
            worker_pb2.CompleteInstanceRequest(
                name="allreduce",
                type=2,
                data_type=types_pb2.DT_BFLOAT16,
                shape={"dim": [{"size": 8}]},
                group_key=1,
                group_size=2,
                instance_key=4,
                device_type="CPU",
                subdiv_offset=[0, -1],
                device=_WORKER1,
                step_id=9,
            ),
        ),
        "server_def": ("tensorflow_server_pb2", "ServerDef", server_def),
    }


def _ours() -> dict[str, tuple[str, str, object]]:
    """What TensorFlow is asked to parse: key -> (our module, class name, message)."""
    bundle = tensor_bundle_pb2.BundleEntryProto(
        dtype=types_pb2.DT_FLOAT, shape={"dim": [{"size": 3}]}, offset=8, size=12, crc32c=7
    )
    bundle.slices.add(extent=[{"start": 1, "length": 2}, {}])
    profile = tfprof_output_pb2.GraphNodeProto(
        name="_TFProfRoot", total_parameters=2762, total_float_ops=49479,
        total_definition_count=3,
        children=[{"name": "dense/kernel", "parameters": 2048, "total_parameters": 2048,
                   "float_ops": 7, "input_shapes": {0: {"dim": [{"size": 1}]}},
                   "shapes": [{"dim": [{"size": 32}, {"size": 64}]}], "devices": ["/cpu:0"],
                   "tensor_value": {"dtype": types_pb2.DT_FLOAT, "value_double": [0.5]}}])
    checkpoint = checkpoint_state_pb2.CheckpointState(
        model_checkpoint_path="model.ckpt-2", all_model_checkpoint_paths=["model.ckpt-1"]
    )
    return {
        "graph": ("graph_pb2", "GraphDef", _our_graph_def()),
        "config": ("config_pb2", "ConfigProto", _our_config()),
        "run_options": (
            "config_pb2",
            "RunOptions",
            config_pb2.RunOptions(
                trace_level=config_pb2.RunOptions.FULL_TRACE,
                timeout_in_ms=1000,
                inter_op_thread_pool=1,
                output_partition_graphs=True,
                debug_options={"debug_tensor_watch_opts": [{"node_name": "x"}]},
                experimental={"collective_graph_key": 5},
            ),
        ),
        "run_metadata": ("config_pb2", "RunMetadata", _our_run_metadata()),
        "event": ("event_pb2", "Event", _our_event()),
        "example": ("example_pb2", "SequenceExample", _our_example()),
        "meta_graph": ("meta_graph_pb2", "MetaGraphDef", _our_meta_graph()),
        "checkpoint": ("checkpoint_state_pb2", "CheckpointState", checkpoint),
        "bundle_entry": ("tensor_bundle_pb2", "BundleEntryProto", bundle),
        "tfprof": ("tfprof_output_pb2", "GraphNodeProto", profile),
        **_our_distributed(),
    }


# ---------------------------------------------------------------------------------------------
# The TensorFlow side. `OURS` is substituted with {key: [tf module, class, base64 bytes]}.

_TF_SNIPPET = """
import importlib
import mmap
import types
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format
from tensorflow.core.framework import attr_value_pb2, device_attributes_pb2, summary_pb2
from tensorflow.core.protobuf import error_codes_pb2, named_tensor_pb2, tensorflow_server_pb2
from tensorflow.core.util import event_pb2
from tensorflow.python.client import device_lib

OURS = json.loads(OURS_JSON)

def det(m):
    return m.SerializeToString(deterministic=True)

# --- master.proto and worker.proto, from the C++ library ------------------------------------
# protoc embeds each file's serialized FileDescriptorProto in the C++ code it generates. Find
# it by its leading `name` field and take top-level fields while they are FileDescriptorProto
# fields in increasing number order (protoc's order; singular ones at most once): the first
# byte that breaks that is past the end. Every dependency is already in the default pool
# (imported above), so the files can join it and yield ordinary message classes.
def varint(buf, pos):
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos

def embedded_file_proto(blob, name):
    start = blob.find(bytes([10, len(name)]) + name.encode() + bytes([18]))
    assert start >= 0, name
    known = {f.number: f for f in descriptor_pb2.FileDescriptorProto.DESCRIPTOR.fields}
    pos, last = start, 0
    while True:
        tag, body = varint(blob, pos)
        number, wire = tag >> 3, tag & 7
        f = known.get(number)
        if (f is None or wire not in (0, 2) or number < last
                or (number == last and not f.is_repeated)):
            break
        pos = varint(blob, body)[1] if wire == 0 else sum(varint(blob, body))
        last = number
    fp = descriptor_pb2.FileDescriptorProto.FromString(blob[start:pos])
    assert fp.name == name and fp.package == "tensorflow" and fp.syntax == "proto3", fp.name
    return fp

with open(os.path.join(tf.sysconfig.get_lib(), "libtensorflow_cc.so.2"), "rb") as lib:
    blob = mmap.mmap(lib.fileno(), 0, access=mmap.ACCESS_READ)
    runtime_files = [embedded_file_proto(blob, f"tensorflow/core/protobuf/{n}.proto")
                     for n in ("master", "worker")]
    blob.close()
for fp in runtime_files:
    descriptor_pool.Default().AddSerializedFile(fp.SerializeToString())
    fd = descriptor_pool.Default().FindFileByName(fp.name)
    module = types.ModuleType(fp.name[:-len(".proto")].replace("/", ".") + "_pb2")
    module.DESCRIPTOR = fd
    for name, md in fd.message_types_by_name.items():
        setattr(module, name, message_factory.GetMessageClass(md))
    sys.modules[module.__name__] = module
master_pb2 = importlib.import_module("tensorflow.core.protobuf.master_pb2")
worker_pb2 = importlib.import_module("tensorflow.core.protobuf.worker_pb2")

# --- real messages ------------------------------------------------------------------------
made = {}
g = tf.Graph()
with g.as_default():
    x = tf.placeholder(tf.float32, [None, 4, 4, 1], name="x")
    k = tf.constant(np.ones([2, 2, 1, 1], np.float32), name="k")
    c = tf.nn.conv2d(x, k, strides=[1, 1, 1, 1], padding="SAME")
    a = tf.nn.leaky_relu(c, alpha=0.1)
    h = tf.cast(a, tf.float16)
    q = tf.FIFOQueue(3, [tf.float32, tf.int32], shapes=[[2], []])
    ids = tf.identity_n([x, q.size()])

    @tf.function
    def double(v):
        return v * 2.0

    d = double(x)
    v = tf.Variable(tf.zeros([3]), name="v")
    tf.add_to_collection("ints", 3)
    tf.add_to_collection("floats", 0.5)
    tf.add_to_collection("ops", a)
    tf.summary.scalar("loss", tf.reduce_mean(x))
    tf.summary.histogram("hist", x)
    tf.summary.image("img", x)
    tf.summary.audio("snd", tf.zeros([1, 8]), 8000.0)
    tf.summary.text("txt", tf.constant("hello"))
    merged = tf.summary.merge_all()
    saver = tf.train.Saver([v])

    gd = g.as_graph_def()
    extra = gd.node.add(name="every_kind", op="NoOp")
    A = attr_value_pb2.AttrValue
    t = tf.make_tensor_proto(np.array([1.5, 2.5], np.float16))
    fn = attr_value_pb2.NameAttrList(name="double", attr={"T": A(type=1)})
    shape = tf.TensorShape([None, 3]).as_proto()
    every_list = A.ListValue(s=[b"a"], i=[1, 2], f=[0.5], b=[False], type=[1, 7],
                             shape=[shape, tf.TensorShape(None).as_proto()], tensor=[t], func=[fn])
    for key, val in dict(s=A(s=b"s"), i=A(i=-3), f=A(f=0.5), b=A(b=True), type=A(type=101),
                         shape=A(shape=shape), tensor=A(tensor=t), func=A(func=fn),
                         placeholder=A(placeholder="T"), list=A(list=every_list)).items():
        extra.attr[key].CopyFrom(val)
    made["graph"] = ("graph_pb2", "GraphDef", gd)

    config = tf.ConfigProto(
        device_count={"CPU": 2, "GPU": 0}, inter_op_parallelism_threads=2,
        allow_soft_placement=True,
        graph_options=tf.GraphOptions(
            optimizer_options=tf.OptimizerOptions(opt_level=tf.OptimizerOptions.L0,
                                                  do_function_inlining=True),
            place_pruned_graph=True))
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    config.gpu_options.experimental.virtual_devices.add(memory_limit_mb=[100.0])
    config.experimental.session_metadata.name = "s"
    made["config"] = ("config_pb2", "ConfigProto", config)

    opts = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE, output_partition_graphs=True)
    md = tf.RunMetadata()
    with tf.Session(graph=g, config=tf.ConfigProto(device_count={"CPU": 2})) as sess:
        sess.run(v.initializer)
        feed = {x: np.ones([1, 4, 4, 1], np.float32)}
        h_value, summ = sess.run([h, merged], feed, options=opts, run_metadata=md)
    made["run_metadata"] = ("config_pb2", "RunMetadata", md)
    made["run_options"] = ("config_pb2", "RunOptions", opts)

    events = []
    events.append(event_pb2.Event(wall_time=1.0, file_version="brain.Event:2"))
    events.append(event_pb2.Event(wall_time=2.0, step=3,
                                  summary=summary_pb2.Summary.FromString(summ)))
    events.append(event_pb2.Event(step=4, session_log=event_pb2.SessionLog(
        status=event_pb2.SessionLog.CHECKPOINT, checkpoint_path="ckpt")))
    events.append(event_pb2.Event(tagged_run_metadata=event_pb2.TaggedRunMetadata(
        tag="step", run_metadata=md.SerializeToString())))
    events.append(event_pb2.Event(graph_def=gd.SerializeToString()))
    for i, e in enumerate(events):
        made[f"event{i}"] = ("event_pb2", "Event", e)

    mg = tf.train.export_meta_graph(saver_def=saver.saver_def)
    made["meta_graph"] = ("meta_graph_pb2", "MetaGraphDef", mg)

    builder = tf.profiler.ProfileOptionBuilder
    profile = tf.profiler.profile(g, options=builder(builder.float_operation())
                                  .with_empty_output().build())
    made["tfprof"] = ("tfprof_output_pb2", "GraphNodeProto", profile)

example = tf.train.Example(features=tf.train.Features(feature={
    "b": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"x", b""])),
    "f": tf.train.Feature(float_list=tf.train.FloatList(value=[0.5, -1e30])),
    "i": tf.train.Feature(int64_list=tf.train.Int64List(value=[-1, 1 << 62])),
}))
made["example"] = ("example_pb2", "Example", example)

# --- distributed runtime ------------------------------------------------------------------
NT = named_tensor_pb2.NamedTensorProto
devices = device_lib.list_local_devices()
w0, w1 = "/job:worker/replica:0/task:0/device:CPU:0", "/job:worker/replica:0/task:1/device:CPU:0"
key = f"{w0};0000000000000001;{w1};edge_7_x;0:0"
cluster = tf.train.ClusterSpec({"ps": ["ps0:2222"], "worker": ["w0:2222", "w1:2222"]})
filters = tf.config.experimental.ClusterDeviceFilters()
filters.set_device_filters("worker", 1, ["/job:ps", "/job:worker/task:1"])
server_def = tensorflow_server_pb2.ServerDef(
    cluster=cluster.as_cluster_def(), job_name="worker", task_index=1, protocol="grpc",
    port=2223, default_session_config=config,
    cluster_device_filters=filters._as_cluster_device_filters())
made["server_def"] = ("tensorflow_server_pb2", "ServerDef", server_def)
made["create_session"] = ("master_pb2", "CreateSessionRequest", master_pb2.CreateSessionRequest(
    graph_def=gd, config=config, target="grpc://w0:2222"))
made["run_step_request"] = ("master_pb2", "RunStepRequest", master_pb2.RunStepRequest(
    session_handle="f00d", feed=[NT(name=x.name, tensor=tf.make_tensor_proto(feed[x]))],
    fetch=[h.name, merged.name], target=[v.initializer.name], options=opts,
    store_errors_in_response_body=True, request_id=(1 << 62) + 1))
made["run_step_response"] = ("master_pb2", "RunStepResponse", master_pb2.RunStepResponse(
    tensor=[NT(name=h.name, tensor=tf.make_tensor_proto(h_value)),
            NT(name=merged.name, tensor=tf.make_tensor_proto(summ))],
    metadata=md, status_code=error_codes_pb2.DEADLINE_EXCEEDED, status_error_message="late"))
made["list_devices"] = ("master_pb2", "ListDevicesResponse",
                        master_pb2.ListDevicesResponse(local_device=devices))
made["run_graph_request"] = ("worker_pb2", "RunGraphRequest", worker_pb2.RunGraphRequest(
    session_handle="f00d", create_worker_session_called=True, graph_handle="0123abcd",
    step_id=-(1 << 40), exec_opts=worker_pb2.ExecutorOpts(record_costs=True, record_timeline=True),
    send=[NT(name=key, tensor=tf.make_tensor_proto(np.arange(6, dtype=np.float32).reshape(2, 3))),
          NT(name=key.replace("7_x", "8_i"), tensor=tf.make_tensor_proto(np.int64(-5)))],
    recv_key=[key.replace("7_x", "9_y")], is_partial=True))
made["run_graph_response"] = ("worker_pb2", "RunGraphResponse", worker_pb2.RunGraphResponse(
    recv=[NT(name=key, tensor=tf.make_tensor_proto(h_value))], step_stats=md.step_stats,
    cost_graph=md.cost_graph, partition_graph=md.partition_graphs,
    status_code=error_codes_pb2.ABORTED, status_error_message="retry"))
made["recv_tensor_response"] = ("worker_pb2", "RecvTensorResponse", worker_pb2.RecvTensorResponse(
    tensor=tf.make_tensor_proto(np.linspace(0, 1, 8, dtype=np.float16).reshape(2, 4)),
    send_start_micros=1_700_000_000_123_456, require_ack=True))
made["get_status"] = ("worker_pb2", "GetStatusResponse",
                      worker_pb2.GetStatusResponse(device_attributes=devices))
made["create_worker_session"] = (
    "worker_pb2", "CreateWorkerSessionRequest", worker_pb2.CreateWorkerSessionRequest(
        session_handle="f00d", server_def=server_def, isolate_session_state=True,
        cluster_device_attributes=devices, master_task="/job:worker/replica:0/task:0",
        master_incarnation=devices[0].incarnation >> 1))

result = {"made": {k: [mod, cls, det(m), text_format.MessageToString(m)]
                   for k, (mod, cls, m) in made.items()}}

# --- parse the messages our classes built ------------------------------------------------
parsed = {}
for key, (mod, cls, b64) in OURS.items():
    m = getattr(importlib.import_module(mod), cls).FromString(base64.b64decode(b64))
    parsed[key] = [det(m), text_format.MessageToString(m)]
result["parsed"] = parsed

# --- descriptors of every message we mirror ------------------------------------------------
from tensorflow.core.framework import graph_pb2, tensor_slice_pb2
from tensorflow.core.protobuf import config_pb2, device_filters_pb2, meta_graph_pb2
from tensorflow.core.protobuf import tensor_bundle_pb2
from tensorflow.core.protobuf import saved_model_pb2, queue_runner_pb2, control_flow_pb2
from tensorflow.core.example import example_pb2
from tensorflow.core.profiler import tfprof_output_pb2, tfprof_log_pb2
from tensorflow.python.training import checkpoint_state_pb2

def strip(full_name):
    return full_name.split(".", 1)[1]

def label(f):
    return "repeated" if f.is_repeated else "required" if f.is_required else "optional"

def field(f):
    t = f.message_type or f.enum_type
    return [f.number, f.type, label(f), strip(t.full_name) if t else "",
            f.containing_oneof.name if f.containing_oneof else "", f.is_packed, f.has_presence]

messages, enums, files = {}, {}, {}
def walk_message(m):
    messages[strip(m.full_name)] = {f.name: field(f) for f in m.fields}
    for e in m.enum_types:
        enums[strip(e.full_name)] = {v.name: v.number for v in e.values}
    for n in m.nested_types:
        walk_message(n)
def walk_file(fd):
    if fd.name in files or fd.name.startswith("google/"):
        return
    files[fd.name] = fd
    for d in fd.dependencies:
        walk_file(d)
    for m in fd.message_types_by_name.values():
        walk_message(m)
    for e in fd.enum_types_by_name.values():
        enums[strip(e.full_name)] = {v.name: v.number for v in e.values}
for mod in (graph_pb2, config_pb2, meta_graph_pb2, event_pb2, summary_pb2, example_pb2,
            checkpoint_state_pb2, tensor_bundle_pb2, tensor_slice_pb2, master_pb2, worker_pb2,
            tensorflow_server_pb2, device_filters_pb2, device_attributes_pb2, named_tensor_pb2,
            error_codes_pb2, tfprof_output_pb2, saved_model_pb2, queue_runner_pb2,
            control_flow_pb2):
    walk_file(mod.DESCRIPTOR)
# of tfprof_log.proto only the op log (its ProfileProto is the profiler UI's, not mirrored)
for m in (tfprof_log_pb2.CodeDef, tfprof_log_pb2.OpLogEntry, tfprof_log_pb2.OpLogProto):
    walk_message(m.DESCRIPTOR)
result["descriptors"] = {"messages": messages, "enums": enums}
"""


@pytest.fixture(scope="module")
def tf_side():
    ours = {
        key: [TF_MODULE[mod], cls, base64.b64encode(msg.SerializeToString()).decode()]
        for key, (mod, cls, msg) in _ours().items()
    }
    code = f"OURS_JSON = {json.dumps(json.dumps(ours))}\n" + _TF_SNIPPET
    return run_tf(code)


def _our_class(module: str, cls: str):
    return getattr(importlib.import_module(f"tensorflux.protos.{module}"), cls)


@pytest.mark.oracle
def test_tensorflow_messages_round_trip_through_ours(tf_side):
    made = tf_side["made"]
    assert {"graph", "config", "run_metadata", "meta_graph", "event1", "example"} <= set(made)
    for key, (module, cls, data, tf_text) in made.items():
        msg = _our_class(module, cls).FromString(data)
        assert msg.SerializeToString(deterministic=True) == data, key
        # Text format names every field, so it also proves that nothing was left unknown.
        assert text_format.MessageToString(msg) == tf_text, key
    run_metadata = config_pb2.RunMetadata.FromString(made["run_metadata"][2])
    assert run_metadata.step_stats.dev_stats and run_metadata.partition_graphs
    summary = event_pb2.Event.FromString(made["event1"][2]).summary
    assert {v.WhichOneof("value") for v in summary.value} >= {"simple_value", "histo", "image"}
    graph = graph_pb2.GraphDef.FromString(made["graph"][2])
    kinds = {a.WhichOneof("value") for n in graph.node for a in n.attr.values()}
    value_oneof = attr_value_pb2.AttrValue.DESCRIPTOR.oneofs_by_name["value"]
    assert kinds == {f.name for f in value_oneof.fields}
    assert graph.library.function
    run_graph = worker_pb2.RunGraphRequest.FromString(made["run_graph_request"][2])
    assert run_graph.send[0].tensor.tensor_content and run_graph.exec_opts.record_timeline
    status = worker_pb2.GetStatusResponse.FromString(made["get_status"][2])
    assert status.device_attributes[0].device_type == "CPU"
    assert status.device_attributes[0].incarnation
    run_step = master_pb2.RunStepResponse.FromString(made["run_step_response"][2])
    assert run_step.status_code == error_codes_pb2.DEADLINE_EXCEEDED
    assert run_step.metadata.step_stats.dev_stats
    server_def = tensorflow_server_pb2.ServerDef.FromString(made["server_def"][2])
    assert [job.name for job in server_def.cluster.job] == ["ps", "worker"]
    assert server_def.cluster_device_filters.jobs[0].tasks[1].device_filters


@pytest.mark.oracle
def test_our_messages_parse_in_tensorflow_to_equal_messages(tf_side):
    parsed = tf_side["parsed"]
    for key, (_, _, msg) in _ours().items():
        tf_bytes, tf_text = parsed[key]
        assert tf_bytes == msg.SerializeToString(deterministic=True), key
        assert tf_text == text_format.MessageToString(msg), key


def _strip(full_name: str) -> str:
    return full_name.split(".", 1)[1]


def _our_descriptors() -> dict[str, dict]:
    messages, enums = {}, {}

    def field(f):
        t = f.message_type or f.enum_type
        label = "repeated" if f.is_repeated else "required" if f.is_required else "optional"
        oneof = f.containing_oneof.name if f.containing_oneof else ""
        type_name = _strip(t.full_name) if t else ""
        return [f.number, f.type, label, type_name, oneof, f.is_packed, f.has_presence]

    def walk(m):
        messages[_strip(m.full_name)] = {f.name: field(f) for f in m.fields}
        for e in m.enum_types:
            enums[_strip(e.full_name)] = {v.name: v.number for v in e.values}
        for n in m.nested_types:
            walk(n)

    for name in MODULES:
        if name in NOT_IN_TENSORFLOW:
            continue
        fd = importlib.import_module(f"tensorflux.protos.{name}").DESCRIPTOR
        for m in fd.message_types_by_name.values():
            walk(m)
        for e in fd.enum_types_by_name.values():
            enums[_strip(e.full_name)] = {v.name: v.number for v in e.values}
    return {"messages": messages, "enums": enums}


@pytest.mark.oracle
def test_descriptors_match_tensorflow(tf_side):
    theirs, ours = tf_side["descriptors"], _our_descriptors()
    # The distributed runtime's files really were walked (master/worker from the C++ library).
    assert {
        "RunStepRequest",
        "ReleaseCallableResponse",
        "RunGraphRequest",
        "RecvBufResponse",
        "GetStepSequenceResponse",
        "ServerDef",
        "JobDeviceFilters.TasksEntry",
        "DeviceAttributes",
        "NamedTensorProto",
    } <= set(theirs["messages"])
    assert "error.Code" in theirs["enums"]
    for kind in ("messages", "enums"):
        assert sorted(ours[kind]) == sorted(theirs[kind]), kind
        for name, fields in theirs[kind].items():
            assert ours[kind][name] == fields, f"{kind[:-1]} {name}"
