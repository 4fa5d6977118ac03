"""decode_csv, decode_raw, parse_example and parse_single_example
(tensorflux/ops/parsing_ops.py), table-driven, with TensorFlow as the oracle."""

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_tf

DEFAULTS = "[[1.0], [0], [''], tf.constant([], tf.int64)]"
# (records, what TensorFlow gives: values per column, or "Error: first message line")
CSV_CASES = [
    (["1.5,2,abc,7", '3,4,"q,x",8'], None),
    ([",,,9"], None),
    (["1,2,abc,"], "InvalidArgumentError: Field 3 is required but missing in record 0!"),
    (["x1.5,2,abc,7"], "InvalidArgumentError: Field 0 in record 0 is not a valid float: x1.5"),
    (["1.5,2.5,abc,7"], "InvalidArgumentError: Field 1 in record 0 is not a valid int32: 2.5"),
    (["1.5,2,abc"], "InvalidArgumentError: Expect 4 fields but have 3 in record 0"),
    (["1.5,2,abc,7,9"], "InvalidArgumentError: Expect 4 fields but have 5 in record 0"),
    (['1,2,"a""b",7'], None),
    ([" 1 ,2,ab,7"], None),
    (["1e3,-2,ab,99999999999"], None),
    (["1,99999999999,ab,9"], "InvalidArgumentError: Field 1 in record 0 is not a valid int32: "
                             "99999999999"),
    (["nan,2,ab,9"], None),
    (["inf,0x10,ab,9"], "InvalidArgumentError: Field 1 in record 0 is not a valid int32: 0x10"),
]


def _run_ours(records):
    r = tf.placeholder(tf.string, [None])
    cols = tf.decode_csv(r, [[1.0], [0], [""], tf.constant([], tf.int64)])
    with tf.Session() as sess:
        try:
            return [c.tolist() for c in sess.run(cols, {r: records})]
        except tf.errors.OpError as e:
            return f"{type(e).__name__}: {e.message.splitlines()[0]}"


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


@pytest.mark.parametrize("records,expected", CSV_CASES)
def test_decode_csv(graph, records, expected):
    got = _run_ours(records)
    if expected is None:
        assert isinstance(got, list), got
    else:
        assert got == expected


@pytest.mark.oracle
def test_decode_csv_matches_tensorflow(graph):
    code = f"""
r = tf.placeholder(tf.string, [None])
cols = tf.decode_csv(r, {DEFAULTS})
result = []
with tf.Session() as s:
    for records in {[c[0] for c in CSV_CASES]!r}:
        try:
            result.append([c.tolist() for c in s.run(cols, {{r: records}})])
        except tf.errors.OpError as e:
            msg = [l for l in e.message.splitlines() if l.strip() and not l.startswith(" ")
                   and "Graph execution" not in l and "Detected at" not in l
                   and "Node:" not in l][0]
            result.append(type(e).__name__ + ": " + msg)
"""
    want = run_tf(code)
    for (records, _), w in zip(CSV_CASES, want, strict=True):
        got = _run_ours(records)
        if isinstance(w, list):
            np.testing.assert_equal(got, w, err_msg=str(records))
        else:
            assert got == w, records


def test_decode_csv_quoting_errors_quote_the_record(graph):
    r = tf.placeholder(tf.string, [None])
    cols = tf.decode_csv(r, [[""], [""]])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Quoted field has to end with quote followed by delim or "
                                 "end .record 0: '\"ab,c'"):
            sess.run(cols, {r: ['"ab,c']})
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Unquoted fields cannot have quotes/CRLFs inside .record 0, "
                                 "field 'a\"b'"):
            sess.run(cols, {r: ['a"b,c']})


def test_decode_csv_options(graph):
    r = tf.placeholder(tf.string, [None])
    cols = tf.decode_csv(r, [[1.0], ["z"]], field_delim=";", na_value="NA", select_cols=[0, 2])
    scalar = tf.decode_csv(tf.constant("1,2"), [[1], [2]])
    with tf.Session() as sess:
        a, b = sess.run(cols, {r: ["1;x;y", "NA;x;NA"]})
        assert a.tolist() == [1.0, 1.0] and b.tolist() == [b"y", b"z"]
        assert sess.run(scalar) == [1, 2]
    with pytest.raises(ValueError, match="Shape of a default must be"):
        tf.decode_csv(r, [[1, 2]])
    with pytest.raises(ValueError, match="select_cols is not strictly increasing"):
        tf.decode_csv(r, [[1], [2]], select_cols=[1, 0])


def test_decode_raw(graph):
    b = tf.placeholder(tf.string)
    out = tf.decode_raw(b, tf.int16)
    big = tf.decode_raw(b, tf.int16, little_endian=False)
    with tf.Session() as sess:
        assert sess.run(out, {b: [b"\x01\x00\x02\x00", b"\xff\xff\x00\x01"]}).tolist() == \
            [[1, 2], [-1, 256]]
        assert sess.run(big, {b: [b"\x01\x00"]}).tolist() == [[256]]
        assert sess.run(out, {b: b"\x01\x00\x02\x00"}).tolist() == [1, 2]
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="DecodeRaw requires input strings to all be the same size, "
                                 "but element 1 has size 2 != 4"):
            sess.run(out, {b: [b"\x01\x00\x02\x00", b"\xff\xff"]})
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Input to DecodeRaw has length 3 that is not a multiple of "
                                 "2, the size of int16"):
            sess.run(out, {b: [b"\x01\x00\x02"]})
    f = tf.decode_raw(tf.constant([np.arange(3, dtype=np.float32).tobytes()]), tf.float32)
    with tf.Session() as sess:
        assert sess.run(f).tolist() == [[0.0, 1.0, 2.0]]


# ---- Example parsing ---------------------------------------------------------------------


def _example(**features):
    feats = {}
    for k, v in features.items():
        if isinstance(v[0], float):
            feats[k] = tf.train.Feature(float_list=tf.train.FloatList(value=v))
        elif isinstance(v[0], int):
            feats[k] = tf.train.Feature(int64_list=tf.train.Int64List(value=v))
        else:
            feats[k] = tf.train.Feature(bytes_list=tf.train.BytesList(value=v))
    return tf.train.Example(features=tf.train.Features(feature=feats)).SerializeToString()


FEATURES = {"a": tf.FixedLenFeature([2], tf.float32),
            "b": tf.FixedLenFeature([], tf.int64, default_value=-1),
            "c": tf.VarLenFeature(tf.string)}


def test_parse_example(graph):
    ser = tf.placeholder(tf.string, [None])
    p = tf.parse_example(ser, FEATURES)
    assert p["a"].op.type == "ParseExampleV2" and p["a"].op.name == "ParseExample/ParseExampleV2"
    assert p["a"].shape.as_list() == [None, 2] and isinstance(p["c"], tf.SparseTensor)
    e1 = _example(a=[1.0, 2.0], b=[7], c=[b"x", b"y"])
    e2 = _example(a=[3.0, 4.0], c=[b"z"])
    with tf.Session() as sess:
        got = sess.run(p, {ser: [e1, e2]})
        assert got["a"].tolist() == [[1, 2], [3, 4]] and got["a"].dtype == np.float32
        assert got["b"].tolist() == [7, -1]
        assert got["c"].indices.tolist() == [[0, 0], [0, 1], [1, 0]]
        assert got["c"].values.tolist() == [b"x", b"y", b"z"]
        assert got["c"].dense_shape.tolist() == [2, 2]
        empty = sess.run(p, {ser: []})
        assert empty["a"].shape == (0, 2) and empty["c"].dense_shape.tolist() == [0, 0]
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Name: <unknown>, Key: a, Index: 1.  Number of float values "
                                 r"!= expected.  Values size: 1 but output shape: \[2\]"):
            sess.run(p, {ser: [e1, _example(a=[1.0], b=[1])]})
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Name: <unknown>, Feature: a \(data type: float\) is "
                                 r"required but could not be found."):
            sess.run(p, {ser: [_example(b=[1])]})
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Data types don't match. Data type: float but expected "
                                 "type: int64"):
            sess.run(p, {ser: [_example(a=[1.0, 2.0], b=[1.5])]})
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Could not parse example input"):
            sess.run(p, {ser: [b"\xff\xff garbage"]})


def test_parse_single_example_and_defaults(graph):
    one = tf.placeholder(tf.string, [])
    p = tf.parse_single_example(one, FEATURES)
    assert p["a"].shape.as_list() == [2] and p["b"].shape.as_list() == []
    feats = {"m": tf.FixedLenFeature([2, 2], tf.int64, default_value=[[1, 2], [3, 4]]),
             "s": tf.FixedLenFeature([], tf.string, default_value="dflt"),
             "v": tf.FixedLenSequenceFeature([], tf.int64, allow_missing=True)}
    ser = tf.placeholder(tf.string, [None])
    p2 = tf.parse_example(ser, feats)
    with tf.Session() as sess:
        got = sess.run(p, {one: _example(a=[1.0, 2.0], c=[b"x", b"y"])})
        assert got["a"].tolist() == [1.0, 2.0] and got["b"] == -1
        assert got["c"].indices.tolist() == [[0], [1]] and got["c"].dense_shape.tolist() == [2]
        got = sess.run(p2, {ser: [_example(m=[5, 6, 7, 8], v=[5, 6, 7]),
                                  _example(s=[b"q"], v=[1])]})
        assert got["m"].tolist() == [[[5, 6], [7, 8]], [[1, 2], [3, 4]]]
        assert got["s"].tolist() == [b"dflt", b"q"]
        assert got["v"].tolist() == [[5, 6, 7], [1, 0, 0]]


@pytest.mark.oracle
def test_example_protos_and_parsing_match_tensorflow(graph):
    ours = _example(a=[1.0, 2.0], b=[7], c=[b"x", b"y"])
    code = """
ex = tf.train.Example(features=tf.train.Features(feature={
    "a": tf.train.Feature(float_list=tf.train.FloatList(value=[3.0, 4.0])),
    "c": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"z"]))}))
theirs = ex.SerializeToString()
ser = tf.placeholder(tf.string, [None])
feats = {"a": tf.FixedLenFeature([2], tf.float32),
         "b": tf.FixedLenFeature([], tf.int64, default_value=-1),
         "c": tf.VarLenFeature(tf.string)}
p = tf.parse_example(ser, feats)
with tf.Session() as s:
    got = s.run(p, {ser: [OURS, theirs]})
result = [theirs, got["a"], got["b"], got["c"].indices, got["c"].values.tolist(),
          got["c"].dense_shape]
""".replace("OURS", repr(ours))
    theirs, a, b, idx, vals, shape = run_tf(code)
    ser = tf.placeholder(tf.string, [None])
    p = tf.parse_example(ser, FEATURES)
    with tf.Session() as sess:
        got = sess.run(p, {ser: [ours, theirs]})
    np.testing.assert_array_equal(got["a"], a)
    np.testing.assert_array_equal(got["b"], b)
    np.testing.assert_array_equal(got["c"].indices, idx)
    assert got["c"].values.tolist() == vals
    np.testing.assert_array_equal(got["c"].dense_shape, shape)
    # TensorFlow's bytes parse to the same message ours builds (map order may differ)
    assert tf.train.Example.FromString(theirs) == \
        tf.train.Example.FromString(_example(a=[3.0, 4.0], c=[b"z"]))
