"""parse_sequence_example and parse_single_sequence_example
(tensorflux/ops/parsing_seq_ops.py): values, static shapes, errors, and TensorFlow as the
oracle on the same serialized SequenceExamples."""

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_tf


def _fill(feature, values):
    if not values:
        return
    if isinstance(values[0], float):
        feature.float_list.value.extend(values)
    elif isinstance(values[0], int):
        feature.int64_list.value.extend(values)
    else:
        feature.bytes_list.value.extend(values)


def _seq_example(context, lists) -> bytes:
    ex = tf.train.SequenceExample()
    for key, values in context.items():
        _fill(ex.context.feature[key], values)
    for key, steps in lists.items():
        fl = ex.feature_lists.feature_list[key]
        for values in steps:
            _fill(fl.feature.add(), values)
    return ex.SerializeToString()


A = _seq_example({"c": [3], "v": [b"x", b"y"]},
                 {"f": [[1.0, 2.0], [3.0, 4.0]], "w": [[1], [2, 3], []]})
B = _seq_example({"v": [b"z"]}, {"f": [[5.0, 6.0]], "w": [[4, 5, 6]]})
EMPTY = _seq_example({}, {})
WRONG_COUNT = _seq_example({}, {"f": [[1.0, 2.0], [3.0]]})

# Feature specs as source text, evaluated under tensorflux here and TensorFlow there.
CTX = ('{"c": tf.FixedLenFeature([], tf.int64, default_value=-1), '
       '"v": tf.VarLenFeature(tf.string)}')
SEQ = ('{"f": tf.FixedLenSequenceFeature([2], tf.float32, allow_missing=True), '
       '"w": tf.VarLenFeature(tf.int64)}')
REQ = '{"f": tf.FixedLenSequenceFeature([2], tf.float32)}'
# (records (a list: batched, bytes: single), context spec, sequence spec)
CASES = [
    ([A, B, EMPTY], CTX, SEQ),
    (A, CTX, SEQ),
    (EMPTY, CTX, SEQ),
    ([A, B], "None", REQ),
    ([A, EMPTY], "None", REQ),
    ([WRONG_COUNT], "None", REQ),
    ([A], "None", '{"f": tf.FixedLenSequenceFeature([2], tf.int64)}'),
    ([A], "None", '{"w": tf.VarLenFeature(tf.float32)}'),
    ([A], '{"c": tf.FixedLenFeature([], tf.float32)}', "None"),
    ([A, EMPTY], '{"c": tf.FixedLenFeature([], tf.int64)}', "None"),
    ([b"\xff\xff"], '{"c": tf.FixedLenFeature([], tf.int64, 0)}', "None"),
    (_seq_example({}, {"s": [[1, 2, 3, 4], [5, 6, 7, 8]]}), "None",
     '{"s": tf.FixedLenSequenceFeature([2, 2], tf.int64)}'),
    (_seq_example({}, {"s": [[b"a"], [b"b"]]}), "None",
     '{"s": tf.FixedLenSequenceFeature([], tf.string)}'),
    ([A, B], '{"f": tf.VarLenFeature(tf.float32)}', '{"f": tf.VarLenFeature(tf.float32)}'),
]

# Runs one case; `flat` lists every output as (name, value) with sparse parts spelled out,
# or the error's class name.
RUNNER = """
def run_case(records, ctx, seq):
    try:
        if isinstance(records, list):
            out = tf.io.parse_sequence_example(records, ctx, seq)
        else:
            out = tf.io.parse_single_sequence_example(records, ctx, seq) + ({},)
    except (ValueError, TypeError) as e:
        return type(e).__name__
    with tf.Session() as sess:
        try:
            got = sess.run(out)
        except tf.errors.OpError as e:
            return type(e).__name__
    flat = []
    for part, d in zip(("context", "sequence", "length"), got):
        for k in sorted(d):
            v = d[k]
            if hasattr(v, "indices"):
                flat += [(part + k + ".indices", v.indices.tolist()),
                         (part + k + ".values", [x.decode() if isinstance(x, bytes) else x
                                                for x in v.values.tolist()]),
                         (part + k + ".shape", v.dense_shape.tolist())]
            else:
                v = np.asarray(v)
                flat.append((part + k, [x.decode() if isinstance(x, bytes) else x
                                        for x in v.reshape(-1).tolist()], list(v.shape)))
    return [list(f) for f in flat]
"""


def _ours(records, ctx, seq):
    scope = {"tf": tf, "np": np}
    exec(RUNNER, scope)  # noqa: S102 - the same runner text the oracle runs
    with tf.Graph().as_default():
        return scope["run_case"](records, eval(ctx), eval(seq))  # noqa: S307


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


def test_batch_values_and_shapes(graph):
    ser = tf.placeholder(tf.string, [3])
    ctx, seq, lengths = tf.io.parse_sequence_example(ser, eval(CTX), eval(SEQ))  # noqa: S307
    assert ctx["c"].shape.as_list() == [3]
    assert ctx["v"].indices.shape.as_list() == [None, 2]
    assert seq["w"].indices.shape.as_list() == [None, 3]
    assert seq["f"].shape.as_list() == [3, None, 2]
    assert lengths["f"].shape.as_list() == [3]
    assert seq["f"].op.type == "ParseSequenceExampleV2"
    assert seq["f"].op.name == "ParseSequenceExample/ParseSequenceExample/ParseSequenceExampleV2"
    with tf.Session() as sess:
        c, s, n = sess.run((ctx, seq, lengths), {ser: [A, B, EMPTY]})
    assert c["c"].tolist() == [3, -1, -1]
    assert c["v"].indices.tolist() == [[0, 0], [0, 1], [1, 0]]
    assert c["v"].values.tolist() == [b"x", b"y", b"z"]
    assert c["v"].dense_shape.tolist() == [3, 2]
    np.testing.assert_array_equal(s["f"], [[[1, 2], [3, 4]], [[5, 6], [0, 0]],
                                           [[0, 0], [0, 0]]])
    assert s["w"].indices.tolist() == [[0, 0, 0], [0, 1, 0], [0, 1, 1], [1, 0, 0],
                                       [1, 0, 1], [1, 0, 2]]
    assert s["w"].values.tolist() == [1, 2, 3, 4, 5, 6]
    assert s["w"].dense_shape.tolist() == [3, 3, 3]
    assert n["f"].tolist() == [2, 1, 0]


def test_single_values_and_shapes(graph):
    ctx, seq = tf.parse_single_sequence_example(A, eval(CTX), eval(SEQ))  # noqa: S307
    assert ctx["c"].shape.as_list() == []
    assert ctx["v"].indices.shape.as_list() == [None, 1]
    assert seq["w"].dense_shape.shape.as_list() == [2]
    assert seq["f"].shape.as_list() == [None, 2]
    with tf.Session() as sess:
        c, s = sess.run((ctx, seq))
    assert c["c"] == 3 and c["v"].indices.tolist() == [[0], [1]]
    np.testing.assert_array_equal(s["f"], [[1, 2], [3, 4]])
    assert s["w"].indices.tolist() == [[0, 0], [1, 0], [1, 1]]
    assert s["w"].dense_shape.tolist() == [3, 2]


def test_sparse_feature_in_context(graph):
    rec = _seq_example({"i": [3, 1], "x": [0.5, 1.5]}, {})
    ctx, _ = tf.io.parse_single_sequence_example(
        rec, {"sp": tf.io.SparseFeature("i", "x", tf.float32, 5)})
    with tf.Session() as sess:
        got = sess.run(ctx["sp"])
    assert got.indices.tolist() == [[1], [3]]
    assert got.values.tolist() == [1.5, 0.5]
    assert got.dense_shape.tolist() == [5]


@pytest.mark.parametrize("ctx,seq,message", [
    (None, None, "at least one should have values"),
    (None, {"f": tf.FixedLenFeature([2], tf.float32)}, "Unsupported FixedLenFeature"),
    ({"f": tf.FixedLenSequenceFeature([2], tf.float32, allow_missing=True)}, None,
     "Unsupported FixedLenSequenceFeature"),
    (None, {"f": tf.FixedLenSequenceFeature([2], tf.float32, True, 9.0)},
     r"feature_list.dense_defaults\[f\] must be None"),
    ({"c": tf.FixedLenFeature([None], tf.int64)}, None, "First dimension of shape"),
])
def test_construction_errors(graph, ctx, seq, message):
    with pytest.raises(ValueError, match=message):
        tf.io.parse_sequence_example([A], ctx, seq)


def test_runtime_error_messages(graph):
    ser = tf.placeholder(tf.string, [None])
    _, seq, _ = tf.io.parse_sequence_example(ser, None, eval(REQ),  # noqa: S307
                                             example_names=["ex0", "ex1"])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Name: ex1, Feature list 'f' is required"):
            sess.run(seq, {ser: [A, EMPTY]})
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Number of values != expected"):
            sess.run(seq, {ser: [WRONG_COUNT]})
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Invalid protocol message input"):
            sess.run(seq, {ser: [b"\xff\xff"]})


@pytest.mark.parametrize("case", range(len(CASES)))
def test_cases_run(case):
    got = _ours(*CASES[case])
    assert got  # a result list or an error class name


@pytest.mark.oracle
def test_matches_tensorflow():
    code = RUNNER + f"""
cases = {[(r, c, s) for r, c, s in CASES]!r}
result = []
for records, ctx, seq in cases:
    with tf.Graph().as_default():
        result.append(run_case(records, eval(ctx), eval(seq)))
"""
    want = run_tf(code, timeout=180)
    for (records, ctx, seq), w in zip(CASES, want, strict=True):
        got = _ours(records, ctx, seq)
        assert got == w, (ctx, seq)


# The TF1 ops, built by TensorFlow's raw-op wrappers, imported from its GraphDef and run.
V1_GRAPH = """
ser = tf.placeholder(tf.string, [None], name="ser")
one = tf.placeholder(tf.string, [], name="one")
tf.raw_ops.ParseSequenceExample(
    serialized=ser, debug_name=tf.constant([], tf.string),
    context_dense_defaults=[tf.constant(-1, tf.int64)],
    feature_list_dense_missing_assumed_empty=["f"], context_sparse_keys=["v"],
    context_dense_keys=["c"], feature_list_sparse_keys=["w"], feature_list_dense_keys=["f"],
    context_sparse_types=[tf.string], feature_list_dense_types=[tf.float32],
    context_dense_shapes=[[]], feature_list_sparse_types=[tf.int64],
    feature_list_dense_shapes=[[2]], Ncontext_sparse=1, Ncontext_dense=1,
    Nfeature_list_sparse=1, Nfeature_list_dense=1, name="batch")
tf.raw_ops.ParseSingleSequenceExample(
    serialized=one, feature_list_dense_missing_assumed_empty=tf.constant([], tf.string),
    context_sparse_keys=[tf.constant("v")], context_dense_keys=[tf.constant("c")],
    feature_list_sparse_keys=[tf.constant("w")], feature_list_dense_keys=[tf.constant("f")],
    context_dense_defaults=[tf.constant(-1, tf.int64)], debug_name=tf.constant(""),
    context_sparse_types=[tf.string], feature_list_dense_types=[tf.float32],
    context_dense_shapes=[[]], feature_list_sparse_types=[tf.int64],
    feature_list_dense_shapes=[[2]], name="single")
"""
V1_FETCHES = [f"batch:{i}" for i in range(9)] + [f"single:{i}" for i in range(8)]


@pytest.mark.oracle
def test_tf1_ops_from_a_tensorflow_graphdef(graph):
    code = V1_GRAPH + f"""
g = tf.get_default_graph()
with tf.Session() as s:
    values = s.run({V1_FETCHES!r}, {{"ser:0": [{A!r}, {B!r}, {EMPTY!r}], "one:0": {A!r}}})
result = [g.as_graph_def().SerializeToString(),
          [[x.decode() if isinstance(x, bytes) else x for x in np.ravel(v).tolist()]
           for v in values]]
"""
    graph_def_bytes, want = run_tf(code, timeout=180)
    graph_def = tf.GraphDef.FromString(graph_def_bytes)
    tf.import_graph_def(graph_def, name="")
    graph = tf.get_default_graph()
    assert graph.get_operation_by_name("batch").type == "ParseSequenceExample"
    assert graph.get_operation_by_name("single").type == "ParseSingleSequenceExample"
    with tf.Session() as sess:
        got = sess.run(V1_FETCHES, {"ser:0": [A, B, EMPTY], "one:0": A})
    got = [[x.decode() if isinstance(x, bytes) else x for x in np.ravel(v).tolist()]
           for v in got]
    assert got == want
