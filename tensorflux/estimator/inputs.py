"""tf.estimator.inputs: input_fns over NumPy arrays (and pandas frames when pandas is
installed), as batches from tf.data."""

from __future__ import annotations

import numpy as np


def _dataset(x, y, batch_size, num_epochs, shuffle, queue_capacity):
    from tensorflux.data.dataset_ops import DatasetV1

    lengths = {len(v) for v in (x.values() if isinstance(x, dict) else [x])}
    if y is not None:
        lengths |= {len(v) for v in (y.values() if isinstance(y, dict) else [y])}
    if len(lengths) != 1:
        raise ValueError(f"Length of tensors in x and y is mismatched. All elements in x "
                         f"and y must have the same length: {sorted(lengths)}.")
    ds = DatasetV1.from_tensor_slices(x if y is None else (x, y))
    if shuffle:
        ds = ds.shuffle(max(queue_capacity, 1))
    return ds.repeat(num_epochs).batch(batch_size)


def numpy_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None,
                   queue_capacity=1000, num_threads=1):
    """An input_fn giving batches of `x` (a dict of arrays, or one array) and `y`, for
    `num_epochs` passes (None: without end), shuffled through a buffer of
    `queue_capacity` when `shuffle`; the last batch may be smaller.

    Raises:
      ValueError: `shuffle` is not a bool; x and y differ in length.
      TypeError: `x` is not an array or a dict of arrays.
    """
    if not isinstance(shuffle, bool):
        raise ValueError(f"shuffle must be provided explicitly as a bool, got {shuffle} "
                         "instead.")
    if not isinstance(x, (dict, np.ndarray)):
        raise TypeError(f"x must be a dict or array; got {type(x).__name__}")
    if isinstance(x, dict) and isinstance(y, dict) and set(x) & set(y):
        raise ValueError(f"{sorted(set(x) & set(y))} duplicate keys are found in both x "
                         "and y.")

    def input_fn():
        from tensorflux.data import iterator_ops

        ds = _dataset(dict(x) if isinstance(x, dict) else x, y, batch_size, num_epochs,
                      shuffle, queue_capacity)
        return iterator_ops.make_one_shot_iterator(ds).get_next()
    return input_fn


def pandas_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None,
                    queue_capacity=1000, num_threads=1, target_column="target"):
    """numpy_input_fn over a pandas DataFrame's columns (and a Series of targets)."""
    columns = {str(k): np.asarray(x[k]) for k in x.columns}
    target = None if y is None else np.asarray(y)
    return numpy_input_fn(columns, target, batch_size, num_epochs, shuffle, queue_capacity,
                          num_threads)
