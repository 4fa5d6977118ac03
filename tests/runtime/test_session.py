"""Session.run: fetch structures, feeds, pruning, errors, devices, concurrency.

Error classes and messages were read off TensorFlow 2.21 for the same calls.
"""

import collections
import threading

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.runtime.exec_options import ExecOptions


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


def test_fetch_structures(graph):
    a = tf.constant(1.0, name="a")
    b = tf.constant([2, 3], name="b")
    Pair = collections.namedtuple("Pair", "x y")
    with tf.Session() as s:
        assert s.run(a) == 1.0 and isinstance(s.run(a), np.float32)
        assert s.run([a, b])[1].tolist() == [2, 3]
        out = s.run({"k": (a, [b, a]), "p": Pair(a, b)})
        assert out["k"][0] == 1.0 and out["k"][1][0].tolist() == [2, 3]
        assert isinstance(out["p"], Pair) and out["p"].y.tolist() == [2, 3]
        assert s.run("a:0") == 1.0
        assert s.run(["a:0", "b:0"])[0] == 1.0
        assert s.run(a.op) is None and s.run("a") is None
        od = s.run(collections.OrderedDict([("z", a), ("y", b)]))
        assert list(od) == ["z", "y"]


def test_fetch_errors(graph):
    tf.constant(1.0, name="a")
    with tf.Session() as s:
        with pytest.raises(TypeError, match="Cannot be None"):
            s.run(None)
        with pytest.raises(TypeError, match="must be a string or Tensor"):
            s.run(5)
        with pytest.raises(ValueError, match="cannot be interpreted as a Tensor"):
            s.run("nosuch:0")
    other = tf.Graph()
    with other.as_default():
        c = tf.constant(2.0)
    with tf.Session() as s, pytest.raises(ValueError, match="not an element of this graph"):
        s.run(c)


def test_feeds_and_partial_execution(graph):
    p = tf.placeholder(tf.float32, [None, 3], name="p")
    q = tf.identity(p, name="q")
    r = q + 1.0
    with tf.Session() as s:
        x = np.ones((2, 3), np.float32)
        np.testing.assert_array_equal(s.run(r, {p: x}), x + 1)
        np.testing.assert_array_equal(s.run(r, {"p:0": x}), x + 1)
        # Feeding an intermediate tensor cuts the graph there: p needs no value.
        np.testing.assert_array_equal(s.run(r, {q: x * 5}), x * 5 + 1)
        # A fed tensor that is also fetched returns the fed value.
        fed, out = s.run([q, r], {q: x * 2})
        np.testing.assert_array_equal(fed, x * 2)
        np.testing.assert_array_equal(out, x * 2 + 1)
        # Python lists convert to the placeholder's dtype; floats into ints truncate as in TF.
        assert s.run(r, {p: [[1, 2, 3]]}).dtype == np.float32


def test_control_edges_of_a_fed_placeholder_come_from_its_feed(graph):
    # TensorFlow's rule (a CriticalSection's lock waits for the placeholders fn reads): the
    # fed Placeholder does not run; what waited for it waits for the feed.
    p = tf.placeholder(tf.float32, [], name="p")
    d = tf.placeholder_with_default(1.0, [], name="d")
    with tf.control_dependencies([p.op]):
        z = tf.constant(3.0) * 2.0
    with tf.control_dependencies([d.op]):
        w = tf.constant(4.0)
    with tf.Session() as s:
        assert s.run(z, {p: 1.0}) == 6.0
        with pytest.raises(tf.errors.InvalidArgumentError, match="must feed"):
            s.run(z)
        assert s.run(w, {d: 2.0}) == 4.0 and s.run(w) == 4.0


def test_feed_validation_messages(graph):
    p = tf.placeholder(tf.float32, [None, 3], name="Placeholder")
    i = tf.placeholder(tf.int32, [], name="i")
    with tf.Session() as s:
        with pytest.raises(ValueError, match=r"Cannot feed value of shape \(1, 2\) for Tensor "
                                             r"'?Placeholder:0'?, which has shape '?\(\?, 3\)'?"):
            s.run(p, {p: [[1, 2]]})
        with pytest.raises(ValueError, match="could not convert string to float"):
            s.run(p, {p: [["a", "b", "c"]]})
        with pytest.raises(TypeError, match="is not compatible with Tensor type"):
            s.run(i, {i: 2 ** 40})
        assert s.run(i, {i: 1.7}) == 1
        with pytest.raises(TypeError, match="feed cannot be a tf.Tensor"):
            s.run(p, {p: p})
        with pytest.raises(TypeError, match="Cannot interpret feed_dict key"):
            s.run(p, {"nosuch:0": 1.0})
        graph.prevent_feeding(i)
        with pytest.raises(ValueError, match="may not be fed"):
            s.run(i, {i: 1})


def test_unfed_placeholder_names_node_and_session_survives(graph):
    p = tf.placeholder(tf.float32, [None, 3], name="Placeholder")
    q = p + 1.0
    with tf.Session() as s:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            s.run(q)
        msg = str(info.value)
        assert "You must feed a value for placeholder tensor 'Placeholder' with dtype float " \
               "and shape [?,3]" in msg
        assert "Placeholder" in msg and info.value.op is p.op
        np.testing.assert_array_equal(s.run(q, {p: np.zeros((1, 3))}), np.ones((1, 3)))


def test_pruning_skips_unneeded_nodes(graph):
    unfed = tf.placeholder(tf.float32, name="unfed")
    a = tf.constant(2.0)
    tf.identity(unfed, name="never_run")
    b = a + 1.0
    with tf.Session() as s:
        assert s.run(b) == 3.0  # the unfed placeholder is not needed, so it never runs


def test_strings(graph):
    p = tf.placeholder(tf.string, [None])
    c = tf.constant("hi")
    with tf.Session() as s:
        assert s.run(c) == b"hi"
        out = s.run(tf.identity(p), {p: ["a", b"bc"]})
        assert out.tolist() == [b"a", b"bc"]
        assert s.run(tf.constant(["a", "bc"])).tolist() == [b"a", b"bc"]


def test_closed_and_empty(graph):
    s = tf.Session()
    with pytest.raises(RuntimeError, match="graph is empty"):
        s.run([])
    c = tf.constant(1.0)
    s.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        s.run(c)


def test_eval_run_and_default_session(graph):
    c = tf.constant(3.0)
    op = tf.no_op()
    with pytest.raises(ValueError, match="No default session"):
        c.eval()
    with tf.Session() as s:
        assert tf.get_default_session() is s
        assert c.eval() == 3.0
        op.run()
    assert tf.get_default_session() is None
    s = tf.InteractiveSession()
    try:
        assert c.eval() == 3.0
    finally:
        s.close()


def test_fetched_constant_is_a_private_copy(graph):
    c = tf.constant([1.0, 2.0])
    with tf.Session() as s:
        v = s.run(c)
        v[0] = 99.0
        assert s.run(c).tolist() == [1.0, 2.0]


def test_make_callable(graph):
    p = tf.placeholder(tf.float32, [])
    q = p + 2.0
    with tf.Session() as s:
        f = s.make_callable([q], [p])
        assert f(1.0)[0] == 3.0 and f(2.0)[0] == 4.0


def test_two_devices_send_recv_and_errors():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/cpu:0"):
            p = tf.placeholder(tf.float32, [2], name="p")
            a = p + 1.0
        with tf.device("/cpu:1"):
            b = tf.identity(a) + 10.0
            bad = tf.placeholder(tf.float32, name="bad_unfed")
            c = tf.identity(bad)
        with tf.device("/cpu:0"):
            d = b + c
    config = tf.ConfigProto(device_count={"CPU": 2})
    with tf.Session(graph=g, config=config) as s:
        assert len(s.list_devices()) == 2
        np.testing.assert_allclose(s.run(b, {p: [1.0, 2.0]}), [12.0, 13.0])
        # An error on one device aborts the step everywhere and surfaces as itself.
        with pytest.raises(tf.errors.InvalidArgumentError, match="bad_unfed"):
            s.run(d, {p: [1.0, 2.0]})
        np.testing.assert_allclose(s.run(d, {p: [1.0, 2.0], bad: 1.0}), [13.0, 14.0])
    with tf.Session(graph=g) as s, pytest.raises(tf.errors.InvalidArgumentError,
                                                 match="Cannot assign a device"):
        s.run(b, {p: [1.0, 2.0]})


def test_executors_agree(graph):
    p = tf.placeholder(tf.float32, [None])
    x = p
    outs = []
    for _ in range(20):
        x = tf.identity(x + 1.0)
        outs.append(x)
    dataflow = ExecOptions(strategy="dataflow")
    with tf.Session() as s1, tf.Session(exec_options=dataflow) as s2:
        v = np.arange(4, dtype=np.float32)
        for a, b in zip(s1.run(outs, {p: v}), s2.run(outs, {p: v}), strict=True):
            np.testing.assert_array_equal(a, b)


def test_many_threads_one_session(graph):
    p = tf.placeholder(tf.float32, [])
    q = tf.identity(p) + 1.0
    errors = []
    with tf.Session() as s:
        def worker(k):
            try:
                for i in range(200):
                    v = float(k * 1000 + i)
                    out = s.run(q, {p: v})
                    if out != v + 1:
                        errors.append((k, i, out))
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(32)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
    assert not errors


def test_session_reset_and_config(graph):
    c = tf.constant(1.0)
    cfg = tf.ConfigProto(inter_op_parallelism_threads=2,
                         graph_options=tf.GraphOptions(optimizer_options=tf.OptimizerOptions(
                             opt_level=tf.OptimizerOptions.L0)))
    with tf.Session(config=cfg) as s:
        assert s.run(c) == 1.0
    tf.Session.reset("")


def test_bad_feeds_raise_tensorflows_error_classes(graph):
    x = tf.placeholder(tf.float32, [2])
    y = x * 2
    other = tf.Graph()
    with other.as_default():
        z = tf.placeholder(tf.float32, [2])
    cases = [  # (feed_dict, error class, message) as TensorFlow 2.21 raises them
        ([1, 2], TypeError, "feed_dict must be a dictionary"),
        ((1, 2), TypeError, "feed_dict must be a dictionary"),
        ({z: [1, 2]}, TypeError, "not an element of this graph"),
        ({3: [1, 2]}, TypeError, "Cannot interpret feed_dict key as Tensor"),
        ({x: object()}, TypeError, r"float\(\) argument .* \(while feeding Placeholder:0"),
        ({x: {}}, TypeError, "while feeding Placeholder:0"),
        ({x: ["a", "b"]}, ValueError, "could not convert string to float"),
        ({x: [1, [2, 3]]}, ValueError, "inhomogeneous"),
        ({x: [1, 2, 3]}, ValueError, "Cannot feed value of shape"),
    ]
    with tf.Session() as s:
        for feed, error, message in cases:
            with pytest.raises(error, match=message):
                s.run(y, feed)
        np.testing.assert_array_equal(s.run(y, {x: [1, 2]}), [2, 4])  # still healthy


def test_a_const_whose_value_is_not_its_dtype_fails_when_run(graph):
    from google.protobuf import text_format

    from tensorflux.protos import graph_pb2

    gd = text_format.Parse(
        'node { name: "c" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } } '
        'attr { key: "value" value { tensor { dtype: DT_STRING tensor_shape { dim { size: 1 } }'
        ' string_val: "zz" } } } } '
        'node { name: "d" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } } '
        'attr { key: "value" value { tensor { dtype: DT_FLOAT float_val: 2 } } } }',
        graph_pb2.GraphDef())
    tf.import_graph_def(gd, name="")
    with tf.Session() as s:
        assert s.run("d:0") == 2.0  # the bad Const is not in this step
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Type mismatch between value \(string\) and dtype "
                                 r"\(float32\)") as info:
            s.run("c:0")
        assert "node c" in str(info.value)


def test_make_callable_repeated_calls_equal_run(graph):
    """The callable's fast path (a built step run directly) gives Session.run's values:
    fetched constants and variables are copies, fed tensors fetched come back as fed,
    structures and RunOptions as run's."""
    p = tf.placeholder(tf.float32, [2])
    c = tf.constant([1.0, 2.0])
    v = tf.Variable([5.0, 6.0])
    q = p * 2.0 + c
    with tf.Session() as s:
        s.run(v.initializer)
        cases = [([q], [p]), ({"c": c, "q": (q, v)}, [p]), ([p, q], [p]),
                 ([q], [p, p]), (q, [p])]
        for fetches, feeds in cases:
            f = s.make_callable(fetches, feeds)
            values = [np.array([1.0, -1.0], np.float32)] * len(feeds)
            feed_dict = {t: val for t, val in zip(feeds, values, strict=True)}
            for _ in range(3):  # the first call builds the step, the next ones reuse it
                got, want = f(*values), s.run(fetches, feed_dict)
                assert str(got) == str(want)
        f = s.make_callable([c, v], [p])
        first = f(np.zeros(2, np.float32))
        first[0][0] = first[1][0] = 99.0  # the caller owns what it gets
        again = f(np.zeros(2, np.float32))
        assert again[0].tolist() == [1.0, 2.0] and again[1].tolist() == [5.0, 6.0]
        meta = tf.RunMetadata()
        opts = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
        f = s.make_callable([q], [p])
        assert f(np.ones(2, np.float32), options=opts, run_metadata=meta)[0].tolist() == \
            [3.0, 4.0]
        assert meta.step_stats.dev_stats


def test_run_with_nothing_to_fetch_returns_the_empty_structure():
    """TF returns [] for `sess.run([])` (e.g. an empty UPDATE_OPS collection)."""
    with tf.Graph().as_default():
        tf.constant(1.0)
        with tf.Session() as sess:
            assert sess.run([]) == [] and sess.run({"a": ()}) == {"a": ()}
