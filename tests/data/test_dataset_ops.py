"""tf.data datasets: element sequences of sources and transformations against plain Python.

Each case builds a dataset on a fresh graph, reads it to the end through a one-shot and an
initializable iterator, and compares the elements with the Python expectation; reading past
the end is OutOfRangeError.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf

Dataset = tf.data.Dataset


def drain(sess, next_element, limit=10_000):
    out = []
    for _ in range(limit):
        try:
            out.append(sess.run(next_element))
        except tf.errors.OutOfRangeError:
            return out
    raise AssertionError("dataset did not end")


def plain(x):
    """Elements as plain Python: arrays to lists, numpy scalars to Python values."""
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, tuple):
        return tuple(plain(v) for v in x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    return x


CASES = {
    "range": (lambda: Dataset.range(5), list(range(5))),
    "range_start_stop_step": (lambda: Dataset.range(2, 11, 3), [2, 5, 8]),
    "range_negative_step": (lambda: Dataset.range(5, 0, -2), [5, 3, 1]),
    "slices": (lambda: Dataset.from_tensor_slices([[1, 2], [3, 4], [5, 6]]),
               [[1, 2], [3, 4], [5, 6]]),
    "slices_tuple": (lambda: Dataset.from_tensor_slices(([1, 2], [b"a", b"b"])),
                     [(1, b"a"), (2, b"b")]),
    "slices_dict": (lambda: Dataset.from_tensor_slices({"x": [1.0, 2.0], "y": [[1], [2]]}),
                    [{"x": 1.0, "y": [1]}, {"x": 2.0, "y": [2]}]),
    "slices_nested": (lambda: Dataset.from_tensor_slices(([1, 2], ([3, 4], [5, 6]))),
                      [(1, (3, 5)), (2, (4, 6))]),
    "from_tensors": (lambda: Dataset.from_tensors(([1, 2], 3)), [([1, 2], 3)]),
    "map": (lambda: Dataset.range(4).map(lambda x: x * x), [0, 1, 4, 9]),
    "map_tuple_args": (lambda: Dataset.from_tensor_slices(([1, 2], [10, 20]))
                       .map(lambda a, b: a + b), [11, 22]),
    "map_to_tuple": (lambda: Dataset.range(3).map(lambda x: (x, x + 1)),
                     [(0, 1), (1, 2), (2, 3)]),
    "map_dict": (lambda: Dataset.from_tensor_slices({"a": [1, 2]})
                 .map(lambda d: {"b": d["a"] * 3}), [{"b": 3}, {"b": 6}]),
    "map_capture": (lambda: Dataset.range(3).map(lambda x: x + tf.constant(100, tf.int64)),
                    [100, 101, 102]),
    "map_parallel": (lambda: Dataset.range(50).map(lambda x: x * 2, num_parallel_calls=4),
                     [2 * i for i in range(50)]),
    "map_autotune": (lambda: Dataset.range(20).map(
        lambda x: x - 1, num_parallel_calls=tf.data.experimental.AUTOTUNE),
        [i - 1 for i in range(20)]),
    "filter": (lambda: Dataset.range(10).filter(lambda x: tf.equal(x % 3, 0)), [0, 3, 6, 9]),
    "flat_map": (lambda: Dataset.range(3).flat_map(
        lambda x: Dataset.from_tensors(x).repeat(x)), [1, 2, 2]),
    "interleave": (lambda: Dataset.range(3).interleave(
        lambda x: Dataset.range(10 * x, 10 * x + 4 + x), cycle_length=2, block_length=2),
        [0, 1, 10, 11, 2, 3, 12, 13, 14, 20, 21, 22, 23, 24, 25]),
    "interleave_block1": (lambda: Dataset.from_tensor_slices([1, 2]).interleave(
        lambda x: Dataset.from_tensors(x).repeat(3), cycle_length=2), [1, 2, 1, 2, 1, 2]),
    "batch": (lambda: Dataset.range(7).batch(3), [[0, 1, 2], [3, 4, 5], [6]]),
    "batch_drop": (lambda: Dataset.range(7).batch(3, drop_remainder=True),
                   [[0, 1, 2], [3, 4, 5]]),
    "batch_tuple": (lambda: Dataset.range(4).map(lambda x: (x, -x)).batch(2),
                    [([0, 1], [0, -1]), ([2, 3], [-2, -3])]),
    "padded_batch": (lambda: Dataset.range(1, 4).map(lambda x: tf.fill([x], x))
                     .padded_batch(2, padded_shapes=[None]), [[[1, 0], [2, 2]], [[3, 3, 3]]]),
    "padded_batch_fixed": (lambda: Dataset.range(1, 3).map(lambda x: tf.fill([x], x))
                           .padded_batch(2, padded_shapes=[4], padding_values=tf.constant(
                               -1, tf.int64)), [[[1, -1, -1, -1], [2, 2, -1, -1]]]),
    "repeat": (lambda: Dataset.range(2).repeat(3), [0, 1] * 3),
    "repeat_then_take": (lambda: Dataset.range(2).repeat().take(5), [0, 1, 0, 1, 0]),
    "take": (lambda: Dataset.range(10).take(3), [0, 1, 2]),
    "take_all": (lambda: Dataset.range(3).take(-1), [0, 1, 2]),
    "skip": (lambda: Dataset.range(5).skip(3), [3, 4]),
    "skip_all": (lambda: Dataset.range(5).skip(-1), []),
    "prefetch": (lambda: Dataset.range(20).prefetch(3), list(range(20))),
    "prefetch_autotune": (lambda: Dataset.range(5).prefetch(tf.data.experimental.AUTOTUNE),
                          list(range(5))),
    "cache_repeat": (lambda: Dataset.range(3).cache().repeat(2), [0, 1, 2] * 2),
    "zip": (lambda: Dataset.zip((Dataset.range(3), Dataset.range(10, 20))),
            [(0, 10), (1, 11), (2, 12)]),
    "zip_dict": (lambda: Dataset.zip({"a": Dataset.range(2), "b": Dataset.range(5, 7)}),
                 [{"a": 0, "b": 5}, {"a": 1, "b": 6}]),
    "concatenate": (lambda: Dataset.range(2).concatenate(Dataset.range(5, 7)), [0, 1, 5, 6]),
    "unbatch": (lambda: Dataset.range(5).batch(2).unbatch(), list(range(5))),
    "enumerate": (lambda: Dataset.from_tensor_slices([7, 8]).enumerate(3), [(3, 7), (4, 8)]),
    "apply": (lambda: Dataset.range(6).apply(lambda d: d.skip(2).take(2)), [2, 3]),
    "generator": (lambda: Dataset.from_generator(lambda: iter([1, 2, 3]), tf.int64),
                  [1, 2, 3]),
    "generator_tuple": (lambda: Dataset.from_generator(
        lambda: ((i, [i] * i) for i in range(1, 3)), (tf.int32, tf.float32),
        (tf.TensorShape([]), tf.TensorShape([None]))), [(1, [1.0]), (2, [2.0, 2.0])]),
    "generator_strings": (lambda: Dataset.from_generator(lambda: iter(["a", "bc"]),
                                                         tf.string), [b"a", b"bc"]),
    "empty_repeat": (lambda: Dataset.range(0).repeat(), []),
    "pipeline": (lambda: Dataset.range(10).filter(lambda x: x % 2 > 0).map(lambda x: x * 10)
                 .batch(2).prefetch(1), [[10, 30], [50, 70], [90]]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_elements(name):
    make, expected = CASES[name]
    with tf.Graph().as_default():
        ds = make()
        one_shot = tf.data.make_one_shot_iterator(ds).get_next()
        init_it = ds.make_initializable_iterator()
        nxt = init_it.get_next()
        with tf.Session() as sess:
            assert [plain(x) for x in drain(sess, one_shot)] == expected
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(one_shot)
            for _ in range(2):  # re-initializing starts over
                sess.run(init_it.initializer)
                assert [plain(x) for x in drain(sess, nxt)] == expected


def test_output_signature():
    ds = Dataset.from_tensor_slices(({"a": np.zeros((4, 2), np.float32)}, [1, 2, 3, 4]))
    assert ds.output_types == ({"a": tf.float32}, tf.int32)
    assert ds.output_shapes[0]["a"].as_list() == [2]
    assert ds.output_shapes[1].as_list() == []
    assert ds.output_classes == ({"a": tf.Tensor}, tf.Tensor)
    batched = ds.batch(2)
    assert batched.output_shapes[1].as_list() == [None]
    assert ds.batch(2, drop_remainder=True).output_shapes[1].as_list() == [2]
    assert tf.data.get_output_types(batched) == batched.output_types
    assert tf.data.get_output_shapes(batched)[0]["a"].as_list() == [None, 2]
    assert tf.data.get_output_classes(batched) == batched.output_classes
    nxt = tf.data.make_one_shot_iterator(batched).get_next()
    assert nxt[0]["a"].shape.as_list() == [None, 2]
    assert nxt[1].dtype == tf.int32


def test_graph_ops_are_tensorflows():
    with tf.Graph().as_default() as g:
        ds = Dataset.range(5).map(lambda x: x * 2).shuffle(3, seed=1).batch(2).repeat()
        it = ds.make_initializable_iterator()
        it.get_next()
        types = [op.type for op in g.get_operations()]
        for t in ("RangeDataset", "MapDataset", "ShuffleDataset", "BatchDatasetV2",
                  "RepeatDataset", "IteratorV2", "MakeIterator", "IteratorGetNext"):
            assert t in types
        gd = g.as_graph_def()
        (node,) = [n for n in gd.node if n.op == "MapDataset"]
        assert node.attr["f"].func.name.startswith("__inference_Dataset_map_")
        assert [d for d in node.attr["output_types"].list.type] == [tf.int64.as_datatype_enum]


def test_errors_at_run_time():
    with tf.Graph().as_default():
        bad_batch = Dataset.from_generator(lambda: iter([[1], [1, 2]]), tf.int64,
                                           tf.TensorShape([None])).batch(2)
        nxt = tf.data.make_one_shot_iterator(bad_batch).get_next()
        bad_gen = Dataset.from_generator(lambda: iter([[1, 2]]), tf.int64, tf.TensorShape([3]))
        nxt2 = tf.data.make_one_shot_iterator(bad_gen).get_next()
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="Cannot batch tensors"):
                sess.run(nxt)
            with pytest.raises(tf.errors.InvalidArgumentError, match="yielded an element"):
                sess.run(nxt2)


def test_errors_at_graph_construction():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="scalar boolean"):
            Dataset.range(3).filter(lambda x: x)
        with pytest.raises(TypeError, match="must return a `Dataset`"):
            Dataset.range(3).flat_map(lambda x: x)
        with pytest.raises(TypeError, match="different types"):
            Dataset.range(3).concatenate(Dataset.from_tensors(1.0))
        with pytest.raises(ValueError, match="not compatible"):
            Dataset.from_tensor_slices(([1, 2], [1, 2, 3]))


def test_map_with_random_op_and_stateful_capture():
    with tf.Graph().as_default():
        v = tf.Variable(5, dtype=tf.int64)
        ds = Dataset.range(3).map(lambda x: x + v)
        with pytest.raises(ValueError, match="stateful"):
            tf.data.make_one_shot_iterator(ds)
        it = ds.make_initializable_iterator()
        nxt = it.get_next()
        noisy = Dataset.range(4).map(lambda x: tf.random_uniform([]) + tf.cast(x, tf.float32))
        nxt2 = tf.data.make_one_shot_iterator(noisy).get_next()
        with tf.Session() as sess:
            sess.run(v.initializer)
            sess.run(it.initializer)
            assert drain(sess, nxt) == [5, 6, 7]
            vals = drain(sess, nxt2)
            assert len(vals) == 4
            assert all(i <= x < i + 1 for i, x in enumerate(vals))


@pytest.mark.parametrize("strategy", ["auto", "reference", "dataflow"])
def test_functions_with_loops_and_nested_captures_under_every_strategy(strategy):
    from tensorflux.runtime.exec_options import ExecOptions

    with tf.Graph().as_default():
        c = tf.constant(10, tf.int64)

        def triangle(x):  # 0 + 1 + ... + (x - 1), by a while loop inside the function
            _, acc = tf.while_loop(lambda i, a: i < x, lambda i, a: (i + 1, a + i),
                                   [tf.constant(0, tf.int64), tf.constant(0, tf.int64)])
            return acc

        # The innermost map captures `c` from two graphs out (through flat_map's body).
        ds = Dataset.range(5).map(triangle).flat_map(
            lambda x: Dataset.range(2).map(lambda y: y + x + c))
        nxt = tf.data.make_one_shot_iterator(ds).get_next()
        with tf.Session(exec_options=ExecOptions(strategy=strategy)) as sess:
            got = drain(sess, nxt)
    expected = [t + y + 10 for t in (0, 0, 1, 3, 6) for y in (0, 1)]
    assert got == expected


def test_datasets_on_another_device():
    with tf.Graph().as_default():
        with tf.device("/cpu:1"):
            ds = Dataset.range(5).map(lambda x: x * 2)
        it = ds.make_initializable_iterator()
        nxt = it.get_next()
        with tf.Session(config=tf.ConfigProto(device_count={"CPU": 2})) as sess:
            sess.run(it.initializer)
            assert drain(sess, nxt) == [0, 2, 4, 6, 8]
