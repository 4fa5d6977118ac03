"""SparseTensors through TF1's queue batchers (train/input.py): stored in a SparseTensors
map before the enqueue, taken back after the dequeue (ops/sparse_map_ops.py)."""

import pytest

import tensorflux as tf
from tensorflux.ops import sparse_map_ops
from tests import oracle
from tests.train.test_input import _drain

pytestmark = pytest.mark.timeout(120)


def _row_of_length(i):
    """The SparseTensor [i + 1] of values 10 i, 10 i + 1, ... (the example i)."""
    n = tf.cast(i, tf.int64) + 1
    return tf.SparseTensor(tf.reshape(tf.range(n), [-1, 1]),
                           tf.cast(tf.range(n) + 10 * tf.cast(i, tf.int64), tf.float32),
                           tf.reshape(n, [1]))


def _examples(batch):
    """{dense label: its sparse row's values} of a batch (SparseTensorValue, labels)."""
    st, labels = batch
    rows = {}
    for (r, _), v in zip(st.indices.tolist(), st.values.tolist(), strict=True):
        rows.setdefault(r, []).append(v)
    return {int(labels[r]): rows.get(r, []) for r in range(len(labels))}


def test_batch_of_sparse_rows_of_different_lengths():
    with tf.Graph().as_default():
        i = tf.train.range_input_producer(5, num_epochs=1, shuffle=False).dequeue()
        st, label = tf.train.batch([_row_of_length(i), i], batch_size=3,
                                   allow_smaller_final_batch=True)
        assert isinstance(st, tf.SparseTensor) and st.shape.as_list() == [None, None]
        first, last = _drain([st, label])
    assert first[0].indices.tolist() == [[0, 0], [1, 0], [1, 1], [2, 0], [2, 1], [2, 2]]
    assert first[0].values.tolist() == [0, 10, 11, 20, 21, 22]
    assert first[0].dense_shape.tolist() == [3, 3]
    assert last[0].dense_shape.tolist() == [2, 5]  # the smaller final batch
    assert _examples(last) == {3: [30, 31, 32, 33], 4: [40, 41, 42, 43, 44]}


def test_shuffle_batch_join_keeps_each_sparse_row_with_its_example():
    with tf.Graph().as_default():
        lists = []
        for k in range(2):
            i = tf.train.range_input_producer(8, num_epochs=1, shuffle=False).dequeue()
            lists.append([_row_of_length(i), i + 100 * k])
        batch = tf.train.shuffle_batch_join(lists, batch_size=4, capacity=20,
                                            min_after_dequeue=2, seed=3,
                                            allow_smaller_final_batch=True)
        got = _drain(batch)
    seen = {}
    for b in got:
        seen.update(_examples(b))
    # both lists' examples, each with the row its own i made (through one shared map)
    assert sorted(seen) == list(range(8)) + list(range(100, 108))
    for label, values in seen.items():
        i = label % 100
        assert values == [10 * i + j for j in range(i + 1)]


def test_maybe_batch_drops_sparse_examples_scalar_and_vector_keep_input():
    with tf.Graph().as_default():
        i = tf.train.range_input_producer(6, num_epochs=1, shuffle=False).dequeue()
        st, label = tf.train.maybe_batch([_row_of_length(i), i],
                                         keep_input=tf.equal(i % 2, 0), batch_size=3)
        (got,) = _drain([st, label])
    assert _examples(got) == {0: [0], 2: [20, 21, 22], 4: [40, 41, 42, 43, 44]}
    with tf.Graph().as_default():
        many = tf.SparseTensor([[0, 0], [1, 1], [1, 2], [2, 0]], [1.0, 2.0, 3.0, 4.0], [3, 4])
        got = tf.train.maybe_batch([many], keep_input=[True, False, True], batch_size=2,
                                   enqueue_many=True)
        with tf.Session() as s:
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(s, coord)
            value = s.run(got)
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=10)
    assert value.indices.tolist() == [[0, 0], [1, 0]] and value.values.tolist() == [1, 4]
    assert value.dense_shape.tolist() == [2, 4]


def test_parsed_var_len_features_batch_as_tf1_pipelines_do(tmp_path):
    path = str(tmp_path / "r.tfrecord")
    with tf.python_io.TFRecordWriter(path) as w:
        for k in range(4):
            feats = {"ids": tf.train.Feature(int64_list=tf.train.Int64List(value=list(
                range(k)))), "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[k]))}
            w.write(tf.train.Example(features=tf.train.Features(feature=feats))
                    .SerializeToString())
    with tf.Graph().as_default():
        _, record = tf.TFRecordReader().read(
            tf.train.string_input_producer([path], num_epochs=1, shuffle=False))
        parsed = tf.parse_single_example(record, {"ids": tf.VarLenFeature(tf.int64),
                                                  "y": tf.FixedLenFeature([], tf.int64)})
        batch = tf.train.batch(parsed, batch_size=4)
        (got,) = _drain(batch)
    assert got["y"].tolist() == [0, 1, 2, 3]
    assert got["ids"].indices.tolist() == [[1, 0], [2, 0], [2, 1], [3, 0], [3, 1], [3, 2]]
    assert got["ids"].values.tolist() == [0, 0, 1, 0, 1, 2]
    assert got["ids"].dense_shape.tolist() == [4, 3]


def test_take_many_sparse_errors_name_the_handle_and_the_map():
    with tf.Graph().as_default():
        st = tf.SparseTensor([[0, 0], [1, 1], [1, 2]], [1.0, 2.0, 3.0], [2, 4])
        many = sparse_map_ops.add_sparse_to_tensors_map(st, many=True)
        one = sparse_map_ops.add_sparse_to_tensors_map(
            tf.SparseTensor([[0, 0]], [5.0], [1, 1]), shared_name=many.op.name)
        with tf.Session() as s:
            handles = s.run(many)
            back = s.run(sparse_map_ops.take_many_sparse_from_tensors_map(
                many.op, handles[::-1]))
            assert back.indices.tolist() == [[0, 1], [0, 2], [1, 0]]
            assert back.values.tolist() == [2, 3, 1] and back.dense_shape.tolist() == [2, 4]
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=rf"Unable to find SparseTensor: {handles[0]} in map: "
                                     rf"{many.op.name}"):
                s.run(sparse_map_ops.take_many_sparse_from_tensors_map(many.op, handles))
            h = tf.placeholder(tf.int64)
            take = sparse_map_ops.take_many_sparse_from_tensors_map(many.op, h)
            mixed = [s.run(many)[0], s.run(one)]
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match="Inconsistent rank across SparseTensors"):
                s.run(take, {h: mixed})
            with pytest.raises(tf.errors.InvalidArgumentError, match="should be a vector"):
                s.run(take, {h: 1})
            with pytest.raises(tf.errors.InvalidArgumentError, match="should be > 1"):
                s.run(sparse_map_ops.add_sparse_to_tensors_map(
                    tf.SparseTensor([[0]], [1.0], [3]), many=True))


@pytest.mark.oracle
def test_batched_sparse_tensors_match_tensorflow():
    program = """
q = tf.train.range_input_producer(5, shuffle=False)
i = q.dequeue()
n = tf.cast(i, tf.int64) + 1
st = tf.SparseTensor(tf.reshape(tf.range(n), [-1, 1]),
                     tf.cast(tf.range(n) + 10 * tf.cast(i, tf.int64), tf.float32),
                     tf.reshape(n, [1]))
b = tf.train.batch([st, tf.cast(i, tf.float32)], batch_size=3)
st2 = tf.SparseTensor([[0, 0], [1, 1], [1, 2], [2, 0]], [1., 2., 3., 4.], [3, 4])
b2 = tf.train.batch([st2], batch_size=2, enqueue_many=True)
result = {"static": b[0].shape.as_list()}
with tf.Session() as s:
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(s, coord)
    for k in range(2):
        r = s.run(b)
        result[k] = [r[0].indices.tolist(), r[0].values.tolist(), r[0].dense_shape.tolist(),
                     r[1].tolist()]
    r = s.run(b2)
    result["many"] = [r.indices.tolist(), r.values.tolist(), r.dense_shape.tolist()]
    coord.request_stop()
    coord.join(threads, stop_grace_period_secs=10)
result = {str(k): v for k, v in result.items()}
"""
    ours, theirs = oracle.run_both(program, tf)
    assert ours == theirs


@pytest.mark.oracle
@pytest.mark.parametrize("names", [
    ["AddSparseToTensorsMap", "AddManySparseToTensorsMap", "TakeManySparseFromTensorsMap"],
    ["DenseToSparseSetOperation", "SparseToSparseSetOperation"]])
def test_op_defs_match_tensorflow(names):
    want = oracle.run_tf(f"""
from tensorflow.python.framework import op_def_registry
result = {{}}
for n in {names!r}:
    od = op_def_registry.get(n)
    result[n] = [[a.name for a in od.input_arg], [a.name for a in od.output_arg],
                 sorted(a.name for a in od.attr), od.is_stateful]
""")
    from tensorflux.framework import op_registry

    for name, (inputs, outputs, attrs, stateful) in want.items():
        opdef = op_registry.get(name)
        assert [a.name for a in opdef.inputs] == inputs, name
        assert [a.name for a in opdef.outputs] == outputs, name
        assert sorted(opdef.attrs) == attrs, name
        assert opdef.is_stateful == stateful, name
