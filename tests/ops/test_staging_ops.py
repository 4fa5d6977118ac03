"""Staging areas (tensorflux/ops/staging_ops.py, kernels/staging.py).

Every blocking case is bounded: steps that must block run with a RunOptions timeout, and
every thread is joined with a timeout.
"""

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.ops import data_flow_ops
from tests.oracle import run_tf
from tests.threads_util import blocked_steps, join, start, wait_until

TIMEOUT = tf.RunOptions(timeout_in_ms=300)
StagingArea = tf.contrib.staging.StagingArea
MapStagingArea = data_flow_ops.MapStagingArea


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


# ---- graph construction ------------------------------------------------------------------


def test_ops_names_attrs_and_colocation(graph):
    a = StagingArea([tf.float32, tf.int32], shapes=[[2], []], capacity=3, memory_limit=64)
    put = a.put([tf.constant([1.0, 2.0]), tf.constant(3)])
    got = a.get()
    peek = a.peek(0)
    size, clear = a.size(), a.clear()
    assert a.name == "StagingArea" and a.names is None
    assert a.dtypes == [tf.float32, tf.int32]
    assert [s.as_list() for s in a.shapes] == [[2], []]
    assert (put.type, put.name) == ("Stage", "StagingArea_put")
    assert [t.op.type for t in got] == ["Unstage"] * 2 and got[0].op.name == "StagingArea_get"
    assert peek[0].op.type == "StagePeek" and peek[0].op.name == "StagingArea_peek"
    assert (size.op.type, size.dtype, clear.type) == ("StageSize", tf.int32, "StageClear")
    assert [t.shape.as_list() for t in got] == [[2], []]
    for op in (put, got[0].op, peek[0].op, size.op, clear):
        assert op.get_attr("shared_name") in ("StagingArea", b"StagingArea")
        assert op.get_attr("capacity") == 3 and op.get_attr("memory_limit") == 64
        assert op.get_attr("container") in ("", b"")
        assert op.colocation_groups() == [b"loc:@StagingArea_root/NoOp"]
    assert StagingArea([tf.float32]).name == "StagingArea_1"
    assert StagingArea([tf.float32], shared_name="foo").put([1.0]).name == "foo_put"


def test_device_scope_places_every_op(graph):
    with tf.device("/cpu:0"):
        a = StagingArea([tf.float32], shapes=[[]])
    put = a.put([tf.constant(4.0)])
    got = a.get()
    with tf.Session() as sess:
        sess.run(put)
        assert sess.run(got) == [4.0]
    assert "CPU:0" in a._coloc_op.device.upper()


def test_map_ops_names_and_types(graph):
    m = MapStagingArea([tf.float32, tf.int32], shapes=[[2], []])
    k = tf.constant(1, tf.int64)
    put = m.put(k, [tf.constant([1.0, 2.0]), tf.constant(1)], indices=[0, 1])
    key, vals = m.get(k)
    nokey, vals2 = m.get()
    peek = m.peek(k, indices=[1])
    assert put.type == "MapStage" and put.get_attr("fake_dtypes") == [tf.float32, tf.int32]
    assert key is k and vals[0].op.type == "MapUnstage" and vals[0].op.name == "MapStagingArea_get"
    assert nokey.op.type == "MapUnstageNoKey" and nokey.dtype == tf.int64
    assert vals2[0].op.name == "MapStagingArea_get_nokey"
    assert peek[0].op.type == "MapPeek" and peek[0].op.name == "MapStagingArea_pop"
    assert [v.shape.as_list() for v in vals] == [[2], []]
    assert [m.size().op.type, m.incomplete_size().op.type, m.clear().type] == [
        "MapSize", "MapIncompleteSize", "MapClear"]
    o = MapStagingArea([tf.float32], ordered=True)
    types = [o.put(k, [tf.constant(1.0)], indices=[0]).type, o.get()[0].op.type,
             o.get(k)[1][0].op.type, o.peek(k)[0].op.type, o.size().op.type,
             o.incomplete_size().op.type, o.clear().type]
    assert types == ["OrderedMapStage", "OrderedMapUnstageNoKey", "OrderedMapUnstage",
                     "OrderedMapPeek", "OrderedMapSize", "OrderedMapIncompleteSize",
                     "OrderedMapClear"]


def test_names_make_dicts(graph):
    a = StagingArea([tf.float32, tf.int32], names=["x", "y"])
    assert sorted(a.get()) == ["x", "y"] and sorted(a.peek(0)) == ["x", "y"]
    m = MapStagingArea([tf.float32, tf.int32], names=["x", "y"])
    put = m.put(tf.constant(1, tf.int64), {"y": tf.constant(2)})
    assert put.get_attr("fake_dtypes") == [tf.int32]
    _, got = m.get(tf.constant(1, tf.int64), indices=["y"])
    assert list(got) == ["y"] and got["y"].dtype == tf.int32


# Graph-time errors: (builder, error class, message). The messages are TF's.
def _sa2():
    return StagingArea([tf.float32, tf.int32], shapes=[[2], []])


def _named():
    return StagingArea([tf.float32, tf.int32], names=["x", "y"])


def _map2():
    return MapStagingArea([tf.float32, tf.int32], shapes=[[2], []])


BUILD_ERRORS = [
    (lambda: _sa2().put([tf.constant([1.0, 2.0, 3.0]), tf.constant(3)]), ValueError,
     "are incompatible"),
    (lambda: _sa2().put([tf.constant([1, 2]), tf.constant(3)]), ValueError,
     "Datatypes do not match"),
    (lambda: _named().put([tf.constant(1.0), tf.constant(2)]), ValueError,
     "You must enqueue a dictionary in a staging area with names"),
    (lambda: _named().put({"x": tf.constant(1.0), "z": tf.constant(2)}), ValueError,
     "Keys in dictionary to put do not match names of staging area"),
    (lambda: _sa2().put({"x": tf.constant(1.0)}), ValueError,
     "Staging areas must have names to enqueue a dictionary"),
    (lambda: StagingArea([tf.float32], shapes=[[2], [3]]), ValueError,
     "StagingArea shapes must be the same length as dtypes"),
    (lambda: StagingArea([tf.float32], names=["a", "b"]), ValueError,
     "StagingArea names must be the same length as dtypes"),
    (lambda: _map2().put(1, [tf.constant([1.0, 2.0]), tf.constant(1)]), ValueError,
     "Indices must be supplied when inserting a list of tensors"),
    (lambda: _map2().put(1, [tf.constant([1.0, 2.0])], indices=[0, 1]), ValueError,
     "Number of indices 2 doesn't match number of values 1"),
    (lambda: _map2().put(tf.constant(1), [tf.constant([1.0, 2.0])], indices=[0]), TypeError,
     "int32"),
    (lambda: _map2().get(tf.constant(1, tf.int64), indices=["a"]), ValueError,
     "String indices provided"),
]


@pytest.mark.parametrize("case", range(len(BUILD_ERRORS)))
def test_build_errors(graph, case):
    build, cls, message = BUILD_ERRORS[case]
    with pytest.raises(cls, match=message):
        build()


# ---- StagingArea at run time -------------------------------------------------------------


def test_fifo_values_peek_size_clear(graph):
    p = tf.placeholder(tf.float32, [None])
    a = StagingArea([tf.float32, tf.string])
    put = a.put([p, tf.constant("s")])
    got, peek1, size = a.get(), a.peek(1), a.size()
    with tf.Session() as sess:
        for value in ([1.0], [2.0, 3.0], []):
            sess.run(put, {p: value})
        assert sess.run(size) == 3
        assert sess.run(peek1)[0].tolist() == [2.0, 3.0] and sess.run(size) == 3
        first = sess.run(got)
        assert first[0].tolist() == [1.0] and first[1] == b"s"
        assert sess.run(got)[0].tolist() == [2.0, 3.0]
        sess.run(a.clear())
        assert sess.run(size) == 0


def test_staged_values_are_copies(graph):
    p = tf.placeholder(tf.float32, [3])
    a = StagingArea([tf.float32])
    put, got = a.put([p]), a.get()
    with tf.Session() as sess:
        value = np.array([1, 2, 3], np.float32)
        sess.run(put, {p: value})
        value[:] = 0
        assert sess.run(got)[0].tolist() == [1, 2, 3]


@pytest.mark.parametrize("capacity,memory_limit,sizes,fits", [
    (2, 0, [1, 1], 2),  # the third put waits
    (0, 16, [2, 2], 2),  # 8 + 8 bytes fit exactly in 16
    (0, 16, [3, 1], 2),  # 12 + 4
    (0, 16, [3, 2], 1),  # 12 + 8 > 16: the second waits
    (3, 100, [1, 1, 1], 3),
])
def test_capacity_and_memory_limit_block_puts(graph, capacity, memory_limit, sizes, fits):
    p = tf.placeholder(tf.float32, [None])
    a = StagingArea([tf.float32], capacity=capacity, memory_limit=memory_limit)
    put, size = a.put([p]), a.size()
    with tf.Session() as sess:
        for i, n in enumerate(sizes + [1]):
            if i < fits:
                sess.run(put, {p: np.ones(n)})
            else:
                with pytest.raises(tf.errors.DeadlineExceededError):
                    sess.run(put, {p: np.ones(n)}, options=TIMEOUT)
                break
        assert sess.run(size) == fits


def test_tuple_over_memory_limit_is_resource_exhausted(graph):
    p = tf.placeholder(tf.float32, [None])
    a = StagingArea([tf.float32], memory_limit=8)
    put = a.put([p])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.ResourceExhaustedError,
                           match="combined size of '12' bytes .* memory limit of '8'") as e:
            sess.run(put, {p: [1.0, 2.0, 3.0]})
        assert "StagingArea_put" in str(e.value)


def test_blocked_get_deadline_then_unblocked_by_put(graph):
    a = StagingArea([tf.int32], shapes=[[]])
    put, got, peek2 = a.put([tf.constant(7)]), a.get(), a.peek(2)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(got, options=TIMEOUT)
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(peek2, options=TIMEOUT)
        result = []
        t = start(lambda: result.append(sess.run(got)))
        wait_until(blocked_steps(sess, 1))
        sess.run(put)
        join(t)
        assert result == [[7]]
        assert sess.run(a.size()) == 0  # the cancelled get took nothing


def test_blocked_put_unblocked_by_get_and_by_clear(graph):
    a = StagingArea([tf.int32], capacity=1)
    p = tf.placeholder(tf.int32)
    put, got = a.put([p]), a.get()
    with tf.Session() as sess:
        sess.run(put, {p: 1})
        t = start(sess.run, put, {p: 2})
        wait_until(blocked_steps(sess, 1))
        assert sess.run(got) == [1]
        join(t)
        assert sess.run(got) == [2]
        sess.run(put, {p: 3})
        t = start(sess.run, put, {p: 4})
        wait_until(blocked_steps(sess, 1))
        sess.run(a.clear())
        join(t)
        assert sess.run(got) == [4]


def test_producer_and_consumer_threads(graph):
    a = StagingArea([tf.int32], shapes=[[]], capacity=2)
    p = tf.placeholder(tf.int32, [])
    put, got = a.put([p]), a.get()
    sess = tf.Session()
    taken = []

    def produce():
        for i in range(50):
            sess.run(put, {p: i})

    def consume():
        for _ in range(50):
            taken.append(int(sess.run(got)[0]))

    join(start(produce), start(consume), timeout=50)
    assert taken == list(range(50))
    sess.close()


def test_session_close_cancels_blocked_get(graph):
    a = StagingArea([tf.float32])
    got = a.get()
    sess = tf.Session()
    caught = []

    def run():
        try:
            sess.run(got)
        except tf.errors.CancelledError as e:
            caught.append(e)

    t = start(run)
    wait_until(blocked_steps(sess, 1))
    sess.close()
    join(t)
    assert len(caught) == 1


def test_shared_name_shares_one_area_per_session(graph):
    a = StagingArea([tf.float32], shared_name="shared")
    b = StagingArea([tf.float32], shared_name="shared", capacity=5)
    put, got = a.put([tf.constant(2.0)]), b.get()
    with tf.Session() as sess:
        sess.run(put)
        assert sess.run(b.size()) == 1
        assert sess.run(got) == [2.0]
    with tf.Session() as sess:  # another session: another area
        sess.run(put)
        sess.run(put)
        assert sess.run(b.size()) == 2


def test_unstage_of_another_arity_is_invalid_argument(graph):
    x = StagingArea([tf.float32, tf.int32], shared_name="shx")
    y = StagingArea([tf.float32], shared_name="shx")
    with tf.Session() as sess:
        sess.run(y.put([tf.constant(1.0)]))
        with pytest.raises(tf.errors.InvalidArgumentError, match="Mismatch stage/unstage") as e:
            sess.run(x.get())
        assert "shx_get" in str(e.value)


def test_raw_ops_stage(graph):
    put = tf.raw_ops.Stage(values=[tf.constant(1.5)], shared_name="raw")
    (got,) = [tf.raw_ops.Unstage(dtypes=[tf.float32], shared_name="raw")]
    with tf.Session() as sess:
        sess.run(put)
        assert sess.run(tf.raw_ops.StageSize(dtypes=[tf.float32], shared_name="raw")) == 1
        assert sess.run(got) == [1.5]


# ---- MapStagingArea at run time ----------------------------------------------------------


@pytest.fixture
def map2(graph):
    m = MapStagingArea([tf.float32, tf.float32])
    k, a, b = tf.placeholder(tf.int64), tf.placeholder(tf.float32), tf.placeholder(tf.float32)
    ops = {"put": m.put(k, [a, b], indices=[0, 1]), "put0": m.put(k, [a], indices=[0]),
           "put1": m.put(k, [b], indices=[1]), "get": m.get(k)[1], "get1": m.get(k, [1])[1],
           "peek": m.peek(k), "sizes": [m.size(), m.incomplete_size()]}
    sess = tf.Session()
    yield sess, ops, (k, a, b)
    sess.close()


def test_map_partial_puts_and_incomplete_set(map2):
    sess, ops, (k, a, b) = map2
    sess.run(ops["put0"], {k: 9, a: 3.0})
    assert sess.run(ops["sizes"]) == [0, 1]
    with pytest.raises(tf.errors.InvalidArgumentError, match="for key '9' was already init"):
        sess.run(ops["put0"], {k: 9, a: 3.0})
    sess.run(ops["put1"], {k: 9, b: 4.0})
    assert sess.run(ops["sizes"]) == [1, 0]
    assert sess.run(ops["get"], {k: 9}) == [3.0, 4.0]
    assert sess.run(ops["sizes"]) == [0, 0]


def test_map_duplicate_key_keeps_the_first(map2):
    sess, ops, (k, a, b) = map2
    sess.run(ops["put"], {k: 1, a: 1.0, b: 2.0})
    sess.run(ops["put"], {k: 1, a: 10.0, b: 20.0})  # TF accepts it and keeps the first
    assert sess.run(ops["sizes"]) == [1, 0]
    assert sess.run(ops["peek"], {k: 1}) == [1.0, 2.0]


def test_map_partial_get_then_removed_component(map2):
    sess, ops, (k, a, b) = map2
    sess.run(ops["put"], {k: 1, a: 1.0, b: 2.0})
    assert sess.run(ops["get1"], {k: 1}) == [2.0]
    assert sess.run(ops["sizes"]) == [1, 0]
    for op in ("get1", "peek"):
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Tensor at index '1' for key '1' has already been removed"):
            sess.run(ops[op], {k: 1})
    m_get0 = MapStagingArea([tf.float32, tf.float32], shared_name="MapStagingArea").get(
        k, indices=[0])[1]
    assert sess.run(m_get0, {k: 1}) == [1.0]
    assert sess.run(ops["sizes"]) == [0, 0]


def test_map_get_waits_for_its_key(map2):
    sess, ops, (k, a, b) = map2
    with pytest.raises(tf.errors.DeadlineExceededError):
        sess.run(ops["get"], {k: 5}, options=TIMEOUT)
    with pytest.raises(tf.errors.DeadlineExceededError):
        sess.run(ops["peek"], {k: 5}, options=TIMEOUT)
    result = []
    t = start(lambda: result.append(sess.run(ops["get"], {k: 5})))
    wait_until(blocked_steps(sess, 1))
    sess.run(ops["put"], {k: 4, a: 0.0, b: 0.0})  # another key: still waiting
    assert t.is_alive()
    sess.run(ops["put"], {k: 5, a: 1.0, b: 2.0})
    join(t)
    assert result == [[1.0, 2.0]] and sess.run(ops["sizes"]) == [1, 0]


@pytest.mark.parametrize("ordered", [True, False])
def test_map_get_without_key(graph, ordered):
    m = MapStagingArea([tf.float32], ordered=ordered)
    k, v = tf.placeholder(tf.int64), tf.placeholder(tf.float32)
    put, (key, vals) = m.put(k, [v], indices=[0]), m.get()
    with tf.Session() as sess:
        for kk in (5, 2, 9, 1):
            sess.run(put, {k: kk, v: kk * 10.0})
        got = [sess.run([key, vals]) for _ in range(4)]
    assert all(float(vs[0]) == kk * 10.0 for kk, vs in got)
    keys = [int(kk) for kk, _ in got]
    assert keys == [1, 2, 5, 9] if ordered else sorted(keys) == [1, 2, 5, 9]


def test_map_capacity_counts_complete_tuples(graph):
    m = MapStagingArea([tf.float32, tf.float32], capacity=1)
    k = tf.placeholder(tf.int64)
    one = tf.constant(1.0)
    full, half = m.put(k, [one, one], indices=[0, 1]), m.put(k, [one], indices=[0])
    with tf.Session() as sess:
        sess.run(full, {k: 1})
        for kk in (2, 3, 4):  # incomplete tuples are not bounded
            sess.run(half, {k: kk})
        assert sess.run([m.size(), m.incomplete_size()]) == [1, 3]
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(full, {k: 5}, options=TIMEOUT)
        t = start(sess.run, full, {k: 6})
        wait_until(blocked_steps(sess, 1))
        sess.run(m.get(tf.constant(1, tf.int64)))
        join(t)
        assert sess.run([m.size(), m.incomplete_size()]) == [1, 3]
        sess.run(m.clear())
        assert sess.run([m.size(), m.incomplete_size()]) == [0, 0]


def test_map_memory_limit(graph):
    m = MapStagingArea([tf.float32], memory_limit=8)
    k, v = tf.placeholder(tf.int64), tf.placeholder(tf.float32, [None])
    put = m.put(k, [v], indices=[0])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.ResourceExhaustedError, match="memory limit of '8'"):
            sess.run(put, {k: 1, v: [1.0, 2.0, 3.0]})
        sess.run(put, {k: 1, v: [1.0, 2.0]})
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(put, {k: 2, v: [1.0]}, options=TIMEOUT)


def test_map_indices_out_of_order_are_invalid(graph):
    m = MapStagingArea([tf.float32, tf.float32])
    k = tf.constant(1, tf.int64)
    with tf.Session() as sess:
        sess.run(m.put(k, [tf.constant(1.0), tf.constant(2.0)], indices=[0, 1]))
        with pytest.raises(tf.errors.InvalidArgumentError, match="not strictly ordered"):
            sess.run(m.get(k, indices=[1, 0]))


# ---- TensorFlow as the oracle ------------------------------------------------------------

_ORACLE_PROGRAM = """
StagingArea, MapStagingArea = {sa}, {msa}
result = {{}}
a = StagingArea([tf.float32, tf.int32], names=["x", "y"], capacity=4)
put = a.put({{"x": tf.constant([1.0, 2.0]), "y": tf.constant(3)}})
m = MapStagingArea([tf.float32, tf.float32], ordered=True)
k = tf.placeholder(tf.int64); v = tf.placeholder(tf.float32)
p0 = m.put(k, [v], indices=[0]); p1 = m.put(k, [v], indices=[1])
key, vals = m.get()
u = MapStagingArea([tf.float32, tf.float32])
pu = u.put(k, [v, v], indices=[0, 1])
with tf.Session() as s:
    s.run(put); s.run(put)
    result["size"] = int(s.run(a.size()))
    peek = s.run(a.peek(1))
    result["peek"] = [peek["x"].tolist(), int(peek["y"])]
    got = s.run(a.get())
    result["get"] = sorted(got)
    for kk in (7, 3, 5):
        s.run(p0, {{k: kk, v: kk}})
    result["incomplete"] = [int(x) for x in s.run([m.size(), m.incomplete_size()])]
    for kk in (7, 3):
        s.run(p1, {{k: kk, v: -kk}})
    result["sizes"] = [int(x) for x in s.run([m.size(), m.incomplete_size()])]
    kv = s.run([key, vals])
    result["first"] = [int(kv[0]), [float(x) for x in kv[1]]]
    try:
        s.run(p0, {{k: 5, v: 1}})
    except tf.errors.InvalidArgumentError:
        result["dup_partial"] = "InvalidArgumentError"
    s.run(pu, {{k: 1, v: 1}}); s.run(pu, {{k: 1, v: 2}})
    result["dup_full"] = [float(x) for x in s.run(u.peek(tf.constant(1, tf.int64)))]
    s.run(u.get(tf.constant(1, tf.int64), indices=[0]))
    try:
        s.run(u.get(tf.constant(1, tf.int64), indices=[0]))
    except tf.errors.InvalidArgumentError:
        result["removed"] = "InvalidArgumentError"
    result["after_partial_get"] = int(s.run(u.size()))
"""


@pytest.mark.oracle
def test_semantics_match_tensorflow(graph):
    want = run_tf("from tensorflow.python.ops import data_flow_ops\n" + _ORACLE_PROGRAM.format(
        sa="data_flow_ops.StagingArea", msa="data_flow_ops.MapStagingArea"))
    scope = {"tf": tf, "np": np, "data_flow_ops": data_flow_ops, "result": None}
    exec(_ORACLE_PROGRAM.format(sa="data_flow_ops.StagingArea",  # noqa: S102
                                msa="data_flow_ops.MapStagingArea"), scope)
    got = scope["result"]
    assert got == want


@pytest.mark.oracle
def test_op_defs_match_tensorflow(graph):
    want = run_tf("""
from tensorflow.python.framework import op_def_registry
result = {}
for n in ["Stage", "Unstage", "StagePeek", "StageSize", "StageClear", "MapStage",
          "MapUnstage", "MapUnstageNoKey", "MapPeek", "MapSize", "MapIncompleteSize",
          "MapClear", "OrderedMapStage", "OrderedMapUnstageNoKey", "OrderedMapPeek"]:
    od = op_def_registry.get(n)
    result[n] = [[a.name for a in od.input_arg], [a.name for a in od.output_arg],
                 sorted(a.name for a in od.attr)]
""")
    from tensorflux.framework import op_registry

    for name, (inputs, outputs, attrs) in want.items():
        opdef = op_registry.get(name)
        assert [a.name for a in opdef.inputs] == inputs, name
        assert [a.name for a in opdef.outputs] == outputs, name
        assert sorted(opdef.attrs) == attrs, name


def test_pipelined_put_and_get_in_one_step(graph):
    """tf_cnn_benchmarks' pattern: a warm-up put, then each step gets the tuple staged by
    the step before while it puts the next (with capacity 1 the put waits for the get)."""
    counter = tf.placeholder(tf.float32, [])
    with tf.device("/cpu:0"):
        a = StagingArea([tf.float32], shapes=[[]], capacity=1)
    put = a.put([counter])
    (got,) = a.get()
    out = got * 2.0
    with tf.Session() as sess:
        sess.run(put, {counter: 0.0})
        seen = [float(sess.run([out, put], {counter: float(i)}, options=tf.RunOptions(
            timeout_in_ms=10000))[0]) for i in range(1, 6)]
        assert seen == [0.0, 2.0, 4.0, 6.0, 8.0] and sess.run(a.size()) == 1
