"""tf.nest with `expand_composites`: SparseTensors, RaggedTensors, IndexedSlices, datasets
and their TypeSpecs (TensorSpec aside) flatten to their components and pack back. The
same expressions run under TensorFlow."""

from __future__ import annotations

import pytest

import tensorflux as tf
from tests.oracle import run_both

PROGRAM = """
def _try(f):
    try:
        return repr(f())
    except Exception as e:  # noqa: BLE001 - the type is the answer
        return "ERR " + type(e).__name__

sp = tf.SparseTensor([[0]], [1.], [3])
rt = tf.ragged.constant([[1], [2, 3]])
n = tf.nest
cases = {
    "values": lambda: n.flatten({"a": sp, "b": [rt, 1]}, expand_composites=True),
    "not_expanded": lambda: len(n.flatten({"a": sp, "b": [rt, 1]})),
    "sparse_spec": lambda: n.flatten(tf.SparseTensorSpec([3]), expand_composites=True),
    "ragged_spec": lambda: n.flatten(tf.RaggedTensorSpec([None, None, 2], tf.int32, 2),
                                     expand_composites=True),
    "tensor_spec": lambda: n.flatten(tf.TensorSpec([3]), expand_composites=True),
    "dataset_spec": lambda: n.flatten(tf.data.DatasetSpec(tf.TensorSpec([])),
                                      expand_composites=True),
    "dataset": lambda: n.flatten(tf.data.Dataset.range(2), expand_composites=True),
    "sparse_value": lambda: n.flatten(tf.SparseTensorValue([[0]], [1.], [3]),
                                      expand_composites=True),
    "slices": lambda: n.flatten(tf.IndexedSlices(tf.zeros([2]), tf.constant([0, 1])),
                                expand_composites=True),
    "map_identity": lambda: n.map_structure(tf.identity, {"a": sp, "b": rt},
                                            expand_composites=True),
    "map_specs_shapes": lambda: n.map_structure(
        lambda s: s.shape, {"a": tf.SparseTensorSpec([3])}, expand_composites=True),
    "pack_sparse": lambda: n.pack_sequence_as(
        tf.SparseTensorSpec([3]), [tf.constant([[0]], tf.int64), tf.constant([5.]),
                                   tf.constant([3], tf.int64)], expand_composites=True),
    "pack_ragged": lambda: n.pack_sequence_as(
        rt, [tf.constant([7, 8, 9]), tf.constant([0, 1, 3], tf.int64)],
        expand_composites=True),
    "pack_wrong_count": lambda: n.pack_sequence_as(rt, [1], expand_composites=True),
    "same_kinds": lambda: n.assert_same_structure(
        sp, tf.SparseTensor([[0, 1]], [1.], [3, 4]), expand_composites=True),
    "sparse_vs_ragged": lambda: n.assert_same_structure(sp, rt, expand_composites=True),
    "ragged_ranks": lambda: n.assert_same_structure(rt, tf.ragged.constant([[[1]]]),
                                                    expand_composites=True),
    "value_vs_spec": lambda: n.assert_same_structure(sp, tf.SparseTensorSpec([3]),
                                                     expand_composites=True),
    "sparse_vs_tensor": lambda: n.assert_same_structure(sp, tf.constant(1),
                                                        expand_composites=True),
    "leaves_unexpanded": lambda: n.assert_same_structure(sp, tf.constant(1)),
}
result = {k: _try(f) for k, f in cases.items()}
"""


@pytest.mark.oracle
def test_expand_composites_as_tensorflow():
    ours, theirs = run_both(PROGRAM, tf)
    assert set(ours) == set(theirs)
    wrong = [f"{k}: {ours[k]} != TF's {theirs[k]}" for k in theirs if ours[k] != theirs[k]]
    assert not wrong, "\n".join(wrong)


def test_expand_composites_without_the_oracle():
    with tf.Graph().as_default():
        sp = tf.SparseTensor([[0]], [1.], [3])
        flat = tf.nest.flatten([sp, 2], expand_composites=True)
        assert flat[:3] == [sp.indices, sp.values, sp.dense_shape] and flat[3] == 2
        back = tf.nest.pack_sequence_as([sp, 2], flat, expand_composites=True)
        assert isinstance(back[0], tf.SparseTensor) and back[0].values is sp.values
        assert tf.nest.flatten(sp) == [sp]
        with pytest.raises(ValueError, match="don't have the same nested structure"):
            tf.nest.assert_same_structure(sp, tf.ragged.constant([[1]]),
                                          expand_composites=True)
