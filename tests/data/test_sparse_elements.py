"""SparseTensor components in tf.data elements: a VarLenFeature parsed in a map, a
SparseTensor returned by a map, sliced by from_tensor_slices, batched (one SparseTensor
with a leading batch dimension and the batch's largest dense shape), unbatched (each row
with the batch's dense shape), shuffled, filtered, zipped and concatenated, and through
Iterator.from_structure; as TensorFlow 2.21's tf.compat.v1 does it."""

from __future__ import annotations

import pytest

import tensorflux as tf
from tests import oracle

pytestmark = pytest.mark.timeout(120)

PROGRAM = """
def ex(vals, label):
    return tf.train.Example(features=tf.train.Features(feature={
        "ids": tf.train.Feature(int64_list=tf.train.Int64List(value=vals)),
        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label]))
    })).SerializeToString()

recs = [ex([1, 2], 0), ex([], 1), ex([3, 4, 5], 2), ex([6], 3), ex([7, 8], 4)]
spec = {"ids": tf.VarLenFeature(tf.int64), "label": tf.FixedLenFeature([], tf.int64)}
D = tf.data.Dataset
parsed = D.from_tensor_slices(recs).map(lambda r: tf.parse_single_example(r, spec))
sp = tf.SparseTensor([[0, 1], [2, 0], [2, 3]], [1.5, 2.5, 3.5], [3, 4])
pipelines = {
    "parsed": parsed, "batch": parsed.batch(2), "batch_drop": parsed.batch(2, True),
    "unbatch": parsed.batch(2).unbatch(), "shuffle_batch": parsed.shuffle(1).batch(3),
    "prefetch_batch": parsed.prefetch(2).batch(5),
    "map_2d": D.range(3).map(lambda i: {"ids": tf.SparseTensor(
        [[0, 0], [1, 2]], tf.stack([i, i + 1]), [2, 3]), "label": i}).batch(2),
    "parse_example": D.from_tensor_slices(recs).batch(2).map(
        lambda r: tf.parse_example(r, spec)),
    "slices": D.from_tensor_slices(sp), "slices_batch": D.from_tensor_slices(sp).batch(2),
    "tensors": D.from_tensors(sp).repeat(2), "tensors_unbatch": D.from_tensors(sp).unbatch(),
    "filter": D.from_tensor_slices(sp).filter(lambda s: tf.size(s.values) > 0),
    "dense_and_back": D.from_tensor_slices(sp).map(tf.sparse.to_dense).map(
        tf.sparse.from_dense),
    "zip_concat": D.zip((D.from_tensor_slices(sp), D.range(3))).map(
        lambda a, b: a).concatenate(D.from_tensor_slices(sp)),
}


def value(v):
    if hasattr(v, "indices"):
        return [v.indices.tolist(), v.values.tolist(), v.dense_shape.tolist()]
    return v.tolist()


result = {}
for name, ds in pipelines.items():
    shapes = tf.data.get_output_shapes(ds)
    classes = tf.data.get_output_classes(ds)
    flat = lambda s: s if isinstance(s, dict) else {"": s}
    static = {k: [str(flat(shapes)[k]), flat(classes)[k].__name__] for k in flat(shapes)}
    nxt = tf.data.make_one_shot_iterator(ds).get_next()
    out = []
    with tf.Session() as s:
        for _ in range(8):
            try:
                v = s.run(nxt)
            except tf.errors.OutOfRangeError:
                break
            out.append({k: value(x) for k, x in v.items()} if isinstance(v, dict)
                       else value(v))
    result[name] = [static, out]

it = tf.data.Iterator.from_structure(tf.float32, tf.TensorShape([None]),
                                     output_classes=tf.SparseTensor)
nxt = it.get_next()
with tf.Session() as s:
    s.run(it.make_initializer(D.from_tensor_slices(sp)))
    result["from_structure"] = [value(s.run(nxt)) for _ in range(3)]
"""


def _run_ours() -> dict:
    import json

    import numpy as np

    ns = {"tf": tf, "np": np, "json": json}
    with tf.Graph().as_default():
        exec(PROGRAM, ns)  # noqa: S102 - the shared test program
    return ns["result"]


def test_sparse_elements_batch_as_tensorflow_does():
    got = _run_ours()
    static, out = got["batch"]
    assert static == {"ids": ["(?, ?)", "SparseTensor"], "label": ["(?,)", "Tensor"]}
    assert out == [{"ids": [[[0, 0], [0, 1]], [1, 2], [2, 2]], "label": [0, 1]},
                   {"ids": [[[0, 0], [0, 1], [0, 2], [1, 0]], [3, 4, 5, 6], [2, 3]],
                    "label": [2, 3]},
                   {"ids": [[[0, 0], [0, 1]], [7, 8], [1, 2]], "label": [4]}]
    # Unbatched rows take the batch's dense shape (TensorFlow's unbatch re-encodes them).
    assert [e["ids"][2] for e in got["unbatch"][1]] == [[2], [2], [3], [3], [2]]
    assert got["slices_batch"][1] == [[[[0, 1]], [1.5], [2, 4]],
                                      [[[0, 0], [0, 3]], [2.5, 3.5], [1, 4]]]
    assert got["from_structure"][1] == [[], [], [4]]
    assert got["slices_batch"][0] == {"": ["(?, 4)", "SparseTensor"]}
    assert got["dense_and_back"][0] == {"": ["(4,)", "SparseTensor"]}


@pytest.mark.oracle
def test_sparse_elements_match_tensorflow():
    theirs = oracle.run_tf("import json\n" + PROGRAM)
    ours = _run_ours()
    for name in theirs:  # TF names a graph tensor SymbolicTensor
        if name != "from_structure":
            for v in theirs[name][0].values():
                v[1] = v[1].replace("SymbolicTensor", "Tensor")
    assert ours == theirs
