"""Dataset.element_spec, Iterator.element_spec and tf.data.experimental.get_structure;
from_generator's output_signature; RaggedTensor elements (from_tensor_slices, map, batch,
unbatch, dense_to_ragged_batch).

The pipelines run under tensorflux and TensorFlow: the repr of each element_spec, the
legacy output_types / output_shapes / output_classes (classes by name) and the elements.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_both

PIPELINES = """
D = tf.data.Dataset
r = D.range(6)
sp = tf.SparseTensor([[0, 0], [1, 2], [2, 1]], [1., 2., 3.], [3, 4])
rt = tf.ragged.constant([[1, 2], [3], [], [4, 5, 6]])
rt2 = tf.ragged.constant([[[1], [2, 3]], [[4]], []])
gen_sig = (tf.TensorSpec([None], tf.int32), tf.TensorSpec([], tf.string, name="n"))
named = tf.TensorSpec([], tf.string, name="n")


def _ex(v):
    return tf.train.Example(features=tf.train.Features(feature={"r": tf.train.Feature(
        int64_list=tf.train.Int64List(value=v))})).SerializeToString()


pipelines = {
    "range": r,
    "map_dict": r.map(lambda x: {"a": x, "b": (tf.cast(x, tf.float32), [x, x])}),
    "batch": r.batch(4),
    "batch_drop": r.batch(4, drop_remainder=True),
    "padded": r.map(lambda x: tf.fill([x], x)).padded_batch(2, padded_shapes=[5],
                                                            drop_remainder=True),
    "padded_none": r.map(lambda x: tf.fill([x], x)).padded_batch(2, padded_shapes=[None]),
    "zip": D.zip((r, r.batch(2), {"k": r.map(lambda x: tf.fill([2, x], 1.))})),
    "sparse": D.from_tensor_slices(sp),
    "sparse_batch": D.from_tensor_slices(sp).batch(2),
    "sparse_tensors": D.from_tensors(sp),
    "sparse_unbatch": D.from_tensors(sp).unbatch(),
    "dense_to_sparse": r.map(lambda x: tf.fill([2], x)).apply(
        tf.data.experimental.dense_to_sparse_batch(2, [4])),
    "window": r.window(3),
    "window_flat": r.window(3).flat_map(lambda w: w.batch(3)),
    "concat_relax": r.map(lambda x: tf.fill([2], x)).concatenate(
        r.map(lambda x: tf.fill([3], x))),
    "gen_sig": D.from_generator(lambda: iter([([1, 2], "a"), ([3], "b")]),
                                output_signature=gen_sig),
    "gen_sig_repeat_batch": D.from_generator(lambda: iter([([1, 2], "a")]),
                                             output_signature=gen_sig).repeat(2).batch(2),
    "gen_sig_dict": D.from_generator(lambda: iter([{"a": [1, 2]}]),
                                     output_signature={"a": tf.TensorSpec([None], tf.int32)}),
    "gen_sparse": D.from_generator(
        lambda: iter([tf.SparseTensorValue([[0], [2]], [1, 5], [3])]),
        output_signature=tf.SparseTensorSpec([3], tf.int32)),
    "gen_ragged": D.from_generator(
        lambda: iter([tf.ragged.RaggedTensorValue(np.array([1, 2, 3]), np.array([0, 1, 3]))]),
        output_signature=tf.RaggedTensorSpec([None, None], tf.int64)),
    "gen_named_kept": D.from_generator(lambda: iter([b"x"]), output_signature=named).repeat(
        2).take(3).prefetch(1).concatenate(D.from_generator(lambda: iter([b"y"]),
                                                            output_signature=named)),
    "gen_named_dropped": D.zip((D.from_generator(lambda: iter([b"x"]),
                                                 output_signature=named).map(lambda v: v),
                                D.from_generator(lambda: iter([b"x"]),
                                                 output_signature=named).batch(1))),
    "gen_types": D.from_generator(lambda: iter([(1, "a")]), (tf.int32, tf.string),
                                  (tf.TensorShape([]), tf.TensorShape([]))),
    "ragged_slices": D.from_tensor_slices(rt),
    "ragged_tensors": D.from_tensors(rt),
    "ragged_batch": D.from_tensor_slices(rt).batch(3),
    "ragged_unbatch": D.from_tensor_slices(rt).batch(3).unbatch(),
    "ragged2_batch": D.from_tensor_slices(rt2).batch(2, drop_remainder=True),
    "ragged_map": r.take(4).map(lambda x: tf.RaggedTensor.from_row_lengths(
        tf.range(x), tf.stack([x]))),
    "ragged_map_batch": r.take(4).map(lambda x: tf.RaggedTensor.from_row_lengths(
        tf.range(x), tf.stack([x]))).batch(2),
    "ragged_map_unbatch": r.take(4).map(lambda x: tf.RaggedTensor.from_row_lengths(
        tf.range(x), tf.stack([0, x]))).unbatch(),
    "ragged_arg": D.from_tensor_slices(rt).batch(2).map(lambda v: v.flat_values * 2),
    "dense_to_ragged": r.take(5).map(lambda x: tf.fill([x], x)).apply(
        tf.data.experimental.dense_to_ragged_batch(2)),
    "dense_to_ragged_mixed": r.take(5).map(lambda x: {
        "a": tf.fill([x, 2], x), "b": x, "c": tf.fill([2, x], 1.), "d": tf.fill([3], x)}).apply(
        tf.data.experimental.dense_to_ragged_batch(3, drop_remainder=True)),
    "dense_to_ragged_in": D.from_tensor_slices(rt).apply(
        tf.data.experimental.dense_to_ragged_batch(2)),
    "ragged_batch_method": r.take(4).map(lambda x: tf.range(x)).ragged_batch(2),
    "parse_ragged": D.from_tensor_slices([_ex([1, 2]), _ex([]), _ex([3])]).batch(2).apply(
        tf.data.experimental.parse_example_dataset({"r": tf.io.RaggedFeature(tf.int64)})),
}
"""

PROGRAM = """
def _cls(c):
    if isinstance(c, dict):
        return {k: _cls(v) for k, v in c.items()}
    if isinstance(c, tuple):
        return [_cls(v) for v in c]
    return c.__name__ if isinstance(c, type) else repr(c)

def _plain(v):
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (tuple, list)):
        return [_plain(x) for x in v]
    if hasattr(v, "to_list"):
        return ["ragged", v.to_list()]
    if isinstance(v, tf.SparseTensorValue):
        return ["sparse", v.indices.tolist(), v.values.tolist(), v.dense_shape.tolist()]
    if isinstance(v, bytes):
        return v.decode()
    return v.tolist() if hasattr(v, "tolist") else v

result = {}
for name, ds in pipelines.items():
    it = tf.data.make_one_shot_iterator(ds)
    nxt = it.get_next()
    out = []
    with tf.Session() as s:
        while not isinstance(ds.element_spec, tf.data.DatasetSpec):  # datasets: no fetch
            try:
                out.append(_plain(s.run(nxt)))
            except tf.errors.OutOfRangeError:
                break
    result[name] = {
        "spec": repr(ds.element_spec), "iterator_spec": repr(it.element_spec),
        "structure": repr(tf.data.experimental.get_structure(ds)),
        "types": repr(tf.data.get_output_types(ds)),
        "shapes": repr(tf.data.get_output_shapes(ds)),
        "classes": _cls(tf.data.get_output_classes(ds)), "elements": out}
"""


@pytest.mark.oracle
def test_element_specs_and_elements_match_tensorflow():
    ours, theirs = run_both(PIPELINES + PROGRAM, tf, timeout=240)
    assert set(ours) == set(theirs)
    wrong = [f"{name}.{key}: {ours[name][key]!r} != TF's {theirs[name][key]!r}"
             for name in sorted(theirs) for key in theirs[name]
             if ours[name][key] != theirs[name][key]]
    assert not wrong, "\n".join(wrong)


def _drain(ds):
    nxt = tf.data.make_one_shot_iterator(ds).get_next()
    out = []
    with tf.Session() as s:
        while not isinstance(ds.element_spec, tf.data.DatasetSpec):  # datasets: no fetch
            try:
                v = s.run(nxt)
            except tf.errors.OutOfRangeError:
                return out
            out.append(v.to_list() if hasattr(v, "to_list") else v.tolist())


def test_element_spec_without_the_oracle():
    with tf.Graph().as_default():
        r = tf.data.Dataset.range(5)
        assert repr(r.batch(2, drop_remainder=True).element_spec) == \
            "TensorSpec(shape=(2,), dtype=tf.int64, name=None)"
        w = r.window(2)
        assert w.element_spec == tf.data.DatasetSpec(tf.TensorSpec([], tf.int64))
        assert w.output_types == w.output_classes == w.element_spec
        it = tf.data.make_initializable_iterator(r.map(lambda x: (x, {"y": tf.fill([x], 1)})))
        assert it.element_spec == (tf.TensorSpec([], tf.int64),
                                   {"y": tf.TensorSpec([None], tf.int32)})
        assert tf.data.experimental.get_structure(it) is it.element_spec
        with pytest.raises(TypeError, match="must be a `tf.data.Dataset` or tf.data.Iterator"):
            tf.data.experimental.get_structure(5)


def test_ragged_batches_without_the_oracle():
    with tf.Graph().as_default():
        ds = tf.data.Dataset.range(5).map(lambda x: tf.fill([x], x)).apply(
            tf.data.experimental.dense_to_ragged_batch(2))
        assert ds.element_spec == tf.RaggedTensorSpec([None, None], tf.int64, 1)
        assert _drain(ds) == [[[], [1]], [[2, 2], [3, 3, 3]], [[4, 4, 4, 4]]]
        rt = tf.ragged.constant([[[1], [2, 3]], [[4]], []])
        ds = tf.data.Dataset.from_tensor_slices(rt).batch(2).unbatch()
        assert ds.element_spec == tf.RaggedTensorSpec([None, None], tf.int32, 1)
        assert _drain(ds) == [[[1], [2, 3]], [[4]], []]
        with pytest.raises(TypeError, match="`padded_batch` is only supported"):
            tf.data.Dataset.from_tensor_slices(rt).padded_batch(2)


@pytest.mark.parametrize("kwargs, message", [
    (dict(output_types=tf.int32, output_signature=tf.TensorSpec([])),
     "The `output_types` argument can not be used together with the `output_signature`"),
    (dict(output_shapes=[], output_signature=tf.TensorSpec([])),
     "The `output_shapes` argument can not be used together with the `output_signature`"),
    (dict(output_signature=(tf.int64, tf.TensorSpec([]))),
     "`output_signature` must contain objects that are subclass of `tf.TypeSpec`"),
    (dict(), "you need to provide either the `output_signature` argument or the "
             "`output_types` argument"),
])
def test_from_generator_signature_errors(kwargs, message):
    with tf.Graph().as_default(), pytest.raises(TypeError, match=message):
        tf.data.Dataset.from_generator(lambda: iter([]), **kwargs)


@pytest.mark.parametrize("signature, yielded, message", [
    (tf.TensorSpec([2], tf.int32), [1, 2, 3],
     r"yielded an element of shape \(3,\) where an element of shape \(2,\) was expected"),
    (tf.TensorSpec([], tf.int32), "x", "could not be converted to the expected type"),
    ((tf.TensorSpec([]), tf.TensorSpec([])), 1.0, "did not match the expected structure"),
    (tf.SparseTensorSpec([3], tf.int32), [1], "where a SparseTensorValue of"),
    (tf.SparseTensorSpec([3], tf.int32), tf.SparseTensorValue([[0]], [1], [4]),
     "of dense shape"),
    (tf.RaggedTensorSpec([None, None], tf.int32), [[1], [2]], "where a RaggedTensorValue"),
])
def test_from_generator_checks_each_element(signature, yielded, message):
    with tf.Graph().as_default():
        ds = tf.data.Dataset.from_generator(lambda: iter([yielded]),
                                            output_signature=signature)
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            _drain(ds)


def test_structure_names_of_tf_1_15():
    e = tf.data.experimental
    assert e.TensorStructure(tf.int32, [2]) == tf.TensorSpec([2], tf.int32)
    assert e.SparseTensorStructure(tf.int32, [2]) == tf.SparseTensorSpec([2], tf.int32)
    assert e.RaggedTensorStructure(tf.int32, [2, None], 1) == \
        tf.RaggedTensorSpec([2, None], tf.int32, 1)
    assert e.TensorArrayStructure(tf.int32, [2], True, False) == \
        tf.TensorArraySpec([2], tf.int32, True, False)
    assert e.OptionalStructure is tf.OptionalSpec and e.DatasetStructure is tf.data.DatasetSpec
    assert e.Structure is tf.TypeSpec


def test_optional_of_a_structure_round_trips():
    with tf.Graph().as_default():
        opt = tf.data.experimental.Optional.from_value(
            {"a": tf.constant([1, 2]), "b": tf.ragged.constant([[1], [2, 3]])})
        assert tf.type_spec_from_value(opt) == tf.OptionalSpec(
            {"a": tf.TensorSpec([2], tf.int32),
             "b": tf.RaggedTensorSpec([2, None], tf.int32, 1)})
        value = opt.get_value()
        with tf.Session() as s:
            has, got = s.run([opt.has_value(), value])
        assert has and got["a"].tolist() == [1, 2] and got["b"].to_list() == [[1], [2, 3]]
        np.testing.assert_array_equal(got["a"], [1, 2])
