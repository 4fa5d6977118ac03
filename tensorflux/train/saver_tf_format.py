"""Saving a Saver's variables in TensorFlow's own checkpoint format (the tensor bundle).

tensorflux's SaveV2 kernel writes tensorflux checkpoints; a SavedModel must hold a bundle
that TensorFlow's RestoreV2 reads. The Saver's graph stays TensorFlow's (so TensorFlow can
run its restore op); only the writing differs: the SaveV2 ops that the save tensor depends
on are found in the graph, their inputs (names, slice specs, values) are fetched in one
step, and tensorflux/checkpoint/tf_bundle_writer.py writes the bundle.
"""

from __future__ import annotations

import numpy as np

from tensorflux.checkpoint.tf_bundle_writer import write_tf_bundle

__all__ = ["save_tf_bundle"]


def _save_ops(graph, save_tensor_name: str) -> list:
    """The SaveV2 ops that the save tensor depends on (data or control), in graph order."""
    start = graph.as_graph_element(save_tensor_name)
    stack, seen, found = [getattr(start, "op", start)], set(), []
    while stack:
        op = stack.pop()
        if op in seen:
            continue
        seen.add(op)
        if op.type == "SaveV2":
            found.append(op)
            continue
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
    order = {op: i for i, op in enumerate(graph.get_operations())}
    return sorted(found, key=order.get)


def _texts(value) -> list[str]:
    return [v.decode("utf-8") if isinstance(v, bytes) else str(v)
            for v in np.asarray(value, dtype=object).reshape(-1)]


def save_tf_bundle(sess, saver_def, save_path: str) -> str:
    """Writes the variables that `saver_def`'s save op would save as a TensorFlow bundle at
    `save_path`; returns `save_path`.

    Raises:
      tf.errors.OpError: reading a variable or writing the files failed.
    """
    ops = _save_ops(sess.graph, saver_def.save_tensor_name)
    fetches = [[op.inputs[1], op.inputs[2], list(op.inputs[3:])] for op in ops]
    feed = {saver_def.filename_tensor_name: save_path} if saver_def.filename_tensor_name \
        else None
    tensors = []
    for op, (names, specs, values) in zip(ops, sess.run(fetches, feed), strict=True):
        for name, spec, value, t in zip(_texts(names), _texts(specs), values, op.inputs[3:],
                                        strict=True):
            tensors.append((name, t.dtype.base_dtype, value, spec))
    write_tf_bundle(save_path, tensors)
    return save_path
