"""Fuzzing `tf.import_graph_def` and `Session.run` with mutated GraphDefs.

Seeds: five small valid graphs built with tensorflux (an MLP training step, a while loop,
a cond, a queue, string ops), serialized. Each case mutates one seed, either its bytes
(then parsed as TF1 programs do, `GraphDef.FromString`; a DecodeError ends the case) or
its proto fields (op types, attr values and kinds, dtypes, input names, shapes, tensor
values and huge sizes), imports it into a fresh graph and runs the seed's fetches, each with
a 2 s RunOptions deadline (a comma-separated fetch runs as one step). Only the errors TF1
gives for bad graphs may come out: `tf.errors.OpError`, ValueError, TypeError, KeyError.
No other exception, no hang, and the peak RSS grows by less than 1 GiB
(fuzz_util.bounded_memory; splat tensors are bounded at 64 MiB with
tensor_util.set_max_expanded_bytes).

Ops that touch the file system (WriteFile, SaveV2, MergeV2Checkpoints, readers, ...) are
never mutated in, and a case whose graph names one is skipped: a mutated filename must not
write or delete files. The cases run in a temporary working directory all the same.
"""

from __future__ import annotations

import numpy as np
import pytest
from google.protobuf.message import DecodeError
from hypothesis import given
from hypothesis import strategies as st

import tensorflux as tf
from tensorflux.framework import op_registry, tensor_util
from tensorflux.protos import graph_pb2, types_pb2
from tests.fuzz.fuzz_util import GiB, bounded_memory, byte_mutations, fuzz_settings, mutate_bytes

ALLOWED = (tf.errors.OpError, ValueError, TypeError, KeyError)
_FILE_OPS = frozenset(("WriteFile", "ReadFile", "SaveV2", "RestoreV2", "MergeV2Checkpoints",
                       "MatchingFiles", "ShardedFilename", "ShardedFilespec",
                       "TFRecordReaderV2", "TextLineReaderV2", "WholeFileReaderV2",
                       "FixedLengthRecordReaderV2", "IdentityReaderV2", "ReaderReadV2",
                       "ReaderReadUpToV2", "ReaderRestoreStateV2"))
_OP_TYPES = sorted(set(op_registry.registered_ops()) - _FILE_OPS)
_DTYPES = sorted(types_pb2.DataType.values())
_RUN_OPTIONS = tf.RunOptions(timeout_in_ms=2000)


# ---- seeds -------------------------------------------------------------------------------


def _mlp():
    x = tf.constant(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3), name="x")
    y = tf.constant([0, 1, 1, 0], name="y")
    w1 = tf.Variable(tf.random_normal([3, 5], seed=1), name="w1")
    w2 = tf.Variable(tf.zeros([5, 2]), name="w2")
    logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1)), w2)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                         logits=logits))
    loss = tf.identity(loss, name="loss")
    tf.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
    tf.group(w1.initializer, w2.initializer, name="init")
    return ["init", "train", "loss:0"]


def _while():
    i, s = tf.while_loop(lambda i, s: i < 10, lambda i, s: (i + 1, s + tf.cast(i, tf.float32)),
                         [tf.constant(0), tf.constant(0.0)])
    tf.identity(s, name="out")
    return ["out:0"]


def _cond():
    x = tf.constant([1.0, -2.0, 3.0], name="x")
    r = tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2.0, lambda: tf.square(x))
    tf.identity(r, name="out")
    return ["out:0"]


def _queue():
    q = tf.FIFOQueue(4, [tf.float32, tf.int32], shapes=[[2], []], name="q")
    q.enqueue_many([tf.ones([3, 2]), tf.range(3)], name="enq")
    a, b = q.dequeue_many(2, name="deq")
    tf.identity(a, name="a")
    tf.identity(b, name="b")
    return ["enq", "a:0,b:0"]


def _strings():
    records = tf.constant(["1.5,2,abc", "3,4,xyz"], name="records")
    cols = tf.decode_csv(records, [[1.0], [0], [""]], name="csv")
    raw = tf.decode_raw(tf.constant(["abcdefgh", "12345678"]), tf.int32, name="raw")
    tf.identity(cols[0], name="c0")
    tf.identity(cols[2], name="c2")
    tf.identity(raw, name="r")
    return ["c0:0", "c2:0", "r:0"]


def _seed(build) -> tuple[bytes, list[str]]:
    g = tf.Graph()
    with g.as_default():
        fetches = build()
    return g.as_graph_def().SerializeToString(), fetches


SEEDS = [_seed(b) for b in (_mlp, _while, _cond, _queue, _strings)]


# ---- proto mutations ---------------------------------------------------------------------

_HUGE = st.sampled_from([0, -1, -2, 1, 2**31 - 1, 2**31, 2**40, 2**62, 2**63 - 1, -(2**63)])
_INTS = st.one_of(st.integers(-4, 8), _HUGE)


@st.composite
def _attr_value(draw, av):
    """A new value for AttrValue `av` (in place): same kind, another kind, or empty."""
    kind = draw(st.sampled_from(["i", "f", "b", "type", "s", "shape", "list", "clear",
                                 "tensor_shape", "tensor_content", "tensor_dtype"]))
    if draw(st.booleans()):  # a value of the kind it has: more cases get past the import
        which = av.WhichOneof("value")
        kind = draw(st.sampled_from(["tensor_shape", "tensor_content", "tensor_dtype"])) \
            if which == "tensor" else which or kind
    if kind == "clear":
        av.Clear()
    elif kind == "i":
        av.i = draw(_INTS)
    elif kind == "f":
        av.f = draw(st.floats(allow_nan=True, allow_infinity=True, width=32))
    elif kind == "b":
        av.b = draw(st.booleans())
    elif kind == "type":
        av.type = draw(st.sampled_from(_DTYPES))
    elif kind == "s":
        av.s = draw(st.binary(max_size=12))
    elif kind == "shape":
        dims = draw(st.lists(_INTS, max_size=4))
        av.shape.Clear()
        av.shape.unknown_rank = draw(st.booleans()) and not dims
        for d in dims:
            av.shape.dim.add(size=d)
    elif kind == "list":
        av.list.Clear()
        field = draw(st.sampled_from(["i", "type", "s", "shape"]))
        n = draw(st.integers(0, 3))
        if field == "i":
            av.list.i.extend(draw(st.lists(_INTS, min_size=n, max_size=n)))
        elif field == "type":
            av.list.type.extend(draw(st.lists(st.sampled_from(_DTYPES), min_size=n,
                                              max_size=n)))
        elif field == "s":
            av.list.s.extend([b"x"] * n)
        else:
            for _ in range(n):
                av.list.shape.add().dim.add(size=draw(_INTS))
    elif kind == "tensor_shape" and av.HasField("tensor"):
        dims = draw(st.lists(_INTS, max_size=4))
        del av.tensor.tensor_shape.dim[:]
        for d in dims:
            av.tensor.tensor_shape.dim.add(size=d)
    elif kind == "tensor_content" and av.HasField("tensor"):
        t = av.tensor
        if t.tensor_content:
            t.tensor_content = mutate_bytes(t.tensor_content, draw(byte_mutations()))
        else:
            t.tensor_content = draw(st.binary(max_size=16))
    elif kind == "tensor_dtype" and av.HasField("tensor"):
        av.tensor.dtype = draw(st.sampled_from(_DTYPES))


@st.composite
def _mutate_node(draw, gd: graph_pb2.GraphDef):
    nodes = gd.node
    n = nodes[draw(st.integers(0, len(nodes) - 1))]
    what = draw(st.sampled_from(["op", "attr", "add_attr", "drop_attr", "input", "add_input",
                                 "drop_input", "name", "drop_node", "dup_node", "device"]))
    names = [m.name for m in nodes]
    if what == "op":
        n.op = draw(st.one_of(st.sampled_from(_OP_TYPES), st.text(max_size=6)))
    elif what == "attr" and n.attr:
        key = draw(st.sampled_from(sorted(n.attr)))
        draw(_attr_value(n.attr[key]))
    elif what == "add_attr":
        key = draw(st.sampled_from(["T", "dtype", "shape", "N", "value", "_class", "axis", "x"]))
        draw(_attr_value(n.attr[key]))
    elif what == "drop_attr" and n.attr:
        del n.attr[draw(st.sampled_from(sorted(n.attr)))]
    elif what == "input" and n.input:
        k = draw(st.integers(0, len(n.input) - 1))
        src = draw(st.sampled_from(names))
        n.input[k] = draw(st.sampled_from([src, f"{src}:{draw(_INTS)}", "^" + src, "",
                                           src + ":x", "nope:0"]))
    elif what == "add_input":
        src = draw(st.sampled_from(names))
        n.input.append(draw(st.sampled_from([src, f"{src}:1", "^" + src])))
    elif what == "drop_input" and n.input:
        del n.input[draw(st.integers(0, len(n.input) - 1))]
    elif what == "name":
        n.name = draw(st.sampled_from(names + ["", "a b", "_x", "x/", n.name + "/y"]))
    elif what == "drop_node":
        gd.node.remove(n)
    elif what == "dup_node":
        gd.node.add().CopyFrom(n)
    elif what == "device":
        n.device = draw(st.sampled_from(["/cpu:0", "/gpu:0", "/job:x/task:9", "bad device"]))


@st.composite
def proto_cases(draw):
    data, fetches = draw(st.sampled_from(SEEDS))
    gd = graph_pb2.GraphDef.FromString(data)
    for _ in range(draw(st.integers(1, 3))):
        if gd.node:
            draw(_mutate_node(gd))
    return gd, fetches


@st.composite
def byte_cases(draw):
    data, fetches = draw(st.sampled_from(SEEDS))
    return mutate_bytes(data, draw(byte_mutations())), fetches


# ---- the check ---------------------------------------------------------------------------


def _import_and_run(gd: graph_pb2.GraphDef, fetches: list[str]) -> None:
    """Imports `gd` and runs each fetch that exists; only ALLOWED errors may escape."""
    if any(n.op in _FILE_OPS for n in gd.node):
        return
    g = tf.Graph()
    with g.as_default():
        try:
            tf.import_graph_def(gd, name="")
        except ALLOWED:
            return
        with tf.Session(graph=g) as sess:
            for names in fetches:
                try:
                    target = [g.as_graph_element(name) for name in names.split(",")]
                except ALLOWED:
                    continue
                try:
                    sess.run(target, options=_RUN_OPTIONS)
                except ALLOWED:
                    pass


def _check_byte_case(case) -> None:
    data, fetches = case
    try:
        gd = graph_pb2.GraphDef.FromString(data)
    except DecodeError:
        return  # what the protobuf runtime says of bad bytes, before tensorflux sees them
    _import_and_run(gd, fetches)


@pytest.fixture(autouse=True)
def _sandbox(tmp_path, monkeypatch):
    """A temporary working directory and a 64 MiB bound on splat tensors."""
    monkeypatch.chdir(tmp_path)
    old = tensor_util._max_expanded_bytes
    tensor_util.set_max_expanded_bytes(64 << 20)
    yield
    tensor_util.set_max_expanded_bytes(old)


def test_seeds_run():
    for data, fetches in SEEDS:
        g = tf.Graph()
        with g.as_default():
            tf.import_graph_def(graph_pb2.GraphDef.FromString(data), name="")
            with tf.Session(graph=g) as sess:
                for names in fetches:
                    sess.run([g.as_graph_element(n) for n in names.split(",")],
                             options=_RUN_OPTIONS)


def _fuzz(strategy, check, n):
    @fuzz_settings(n)
    @given(strategy)
    def run(case):
        check(case)

    with bounded_memory(GiB):
        run()


@pytest.mark.timeout(90)
def test_fuzz_graph_def_fields():
    _fuzz(proto_cases(), lambda c: _import_and_run(*c), 150)


@pytest.mark.timeout(90)
def test_fuzz_graph_def_bytes():
    _fuzz(byte_cases(), _check_byte_case, 100)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_fuzz_graph_def_fields_long():
    _fuzz(proto_cases(), lambda c: _import_and_run(*c), 1500)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_fuzz_graph_def_bytes_long():
    _fuzz(byte_cases(), _check_byte_case, 3000)
