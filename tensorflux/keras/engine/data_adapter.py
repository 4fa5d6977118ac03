"""The data `fit`/`evaluate`/`predict` take: NumPy arrays (or lists/dicts of them), a
`keras.utils.Sequence`, a generator with `steps`, a `tf.data.Dataset` or a tf.data
iterator (one-shot or initializable); batching, shuffling, the validation split, and the
shape checks Keras makes before feeding.

Each source tells the loops how TF1 Keras counts it: `use_steps` (the progress bar and
the epoch loss count steps: the loss is the mean of the batch losses) and `log_size` (the
"size" in the batch logs: the batch's samples, or 1 for datasets, as Keras logs)."""

from __future__ import annotations

import numpy as np

__all__ = ["make_source", "unpack_validation", "check_arrays", "check_targets",
           "check_lengths", "sample_weights"]


class SparseRows:
    """Sparse input data (a SciPy sparse matrix or a SparseTensorValue) as the sources cut
    it: `rows[idx]` takes rows by position (renumbered from 0), `value()` is what a sparse
    Input is fed; `len`, `shape`, `ndim`, `dtype` and `astype` as an array's."""

    def __init__(self, indices, values, shape):
        self.indices = np.asarray(indices, np.int64).reshape(-1, len(shape))
        self.values = np.asarray(values)
        self.shape = tuple(int(d) for d in shape)
        order = np.argsort(self.indices[:, 0], kind="stable") if len(self.indices) else \
            np.zeros(0, np.int64)
        self._order = order
        self._bounds = np.searchsorted(self.indices[order, 0], np.arange(self.shape[0] + 1))

    @classmethod
    def of(cls, value) -> SparseRows:
        if isinstance(value, SparseRows):
            return value
        if hasattr(value, "tocoo"):  # SciPy
            coo = value.tocoo()
            return cls(np.stack([coo.row, coo.col], 1), coo.data, coo.shape)
        return cls(value.indices, value.values, value.dense_shape)

    ndim = property(lambda self: len(self.shape))
    dtype = property(lambda self: self.values.dtype)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, idx) -> SparseRows:
        idx = np.arange(self.shape[0])[idx]
        picks = [self._order[self._bounds[r]:self._bounds[r + 1]] for r in idx]
        at = np.concatenate(picks) if picks else np.zeros(0, np.int64)
        indices = self.indices[at].copy()
        indices[:, 0] = np.repeat(np.arange(len(idx)), [len(p) for p in picks])
        return SparseRows(indices, self.values[at], (len(idx),) + self.shape[1:])

    def astype(self, dtype, copy=False) -> SparseRows:
        return SparseRows(self.indices, self.values.astype(dtype, copy=copy), self.shape)

    def value(self):
        from tensorflux.framework.sparse_tensor import SparseTensorValue

        return SparseTensorValue(self.indices, self.values, np.array(self.shape, np.int64))


def is_sparse_data(x) -> bool:
    """A SciPy sparse matrix, a SparseTensorValue or SparseRows."""
    from tensorflux.framework.sparse_tensor import SparseTensorValue

    return isinstance(x, (SparseRows, SparseTensorValue)) or \
        (hasattr(x, "tocoo") and hasattr(x, "nnz"))


def _as_array(a):
    return SparseRows.of(a) if is_sparse_data(a) else np.asarray(a)


def _as_list(x):
    if x is None:
        return None
    if isinstance(x, dict):
        return x
    if isinstance(x, (list, tuple)) and not is_sparse_data(x):
        return [_as_array(a) for a in x]
    return [_as_array(x)]


class ArraySource:
    """Arrays cut into batches (`x`, `y`, `sw` lists of arrays, or dicts by name)."""

    use_steps = False
    exhausted = False

    def __init__(self, x, y, sw, batch_size):
        self.x, self.y, self.sw = x, y, sw
        self.batch_size = int(batch_size)
        first = list(x.values())[0] if isinstance(x, dict) else x[0]
        self.samples = len(first)
        xs = list(x.values()) if isinstance(x, dict) else x
        ys = list(y.values()) if isinstance(y, dict) else (y or [])
        if ys and {len(a) for a in xs} != {len(a) for a in ys} and \
                len({len(a) for a in xs}) == 1 and len({len(a) for a in ys}) == 1:
            raise ValueError("Input arrays should have the same number of samples as target "
                             f"arrays. Found {len(xs[0])} input samples and {len(ys[0])} "
                             "target samples.")
        self.steps = None

    def peek_x(self):
        return self.x

    def _take(self, data, idx):
        if data is None:
            return None
        if isinstance(data, dict):
            return {k: None if v is None else _as_array(v)[idx] for k, v in data.items()}
        if isinstance(data, np.ndarray):  # sample weights of every output
            return data[idx]
        return [None if a is None else a[idx] for a in data]

    def batches(self, shuffle):
        order = np.arange(self.samples)
        if shuffle:
            np.random.shuffle(order)
        for start in range(0, self.samples, self.batch_size):
            idx = order[start:start + self.batch_size]
            yield self._take(self.x, idx), self._take(self.y, idx), self._take(self.sw, idx)

    def split(self, fraction):
        cut = int(self.samples * (1.0 - fraction))
        if cut == 0 or cut == self.samples:
            raise ValueError(f"validation_split={fraction} leaves no training or validation "
                             f"samples out of {self.samples}")
        head, tail = np.arange(cut), np.arange(cut, self.samples)
        def part(idx):
            return ArraySource(self._take(self.x, idx), self._take(self.y, idx),
                               self._take(self.sw, idx), self.batch_size)

        return part(head), part(tail)

    def on_epoch_end(self) -> None:
        pass


class SequenceSource:
    """A keras.utils.Sequence (len and __getitem__) or a generator, `steps` batches an
    epoch; each item is x, (x,), (x, y) or (x, y, sample_weight)."""

    use_steps = True
    exhausted = False

    def __init__(self, seq, steps):
        self.seq = seq
        self.is_sequence = hasattr(seq, "__getitem__") and hasattr(seq, "__len__")
        if not self.is_sequence and steps is None:
            raise ValueError("`steps_per_epoch` (or `steps`) is required for a generator "
                             "input")
        self.steps = int(steps) if steps is not None else len(seq)
        self.samples = None
        self._peeked = None
        self._iter = None if self.is_sequence else iter(seq)

    def _item(self, i):
        if self.is_sequence:
            return self.seq[i]
        if self._peeked is not None:
            item, self._peeked = self._peeked, None
            return item
        return next(self._iter)

    def peek_x(self):
        if self.is_sequence:
            item = self.seq[0]
        else:
            if self._peeked is None:
                self._peeked = next(self._iter)
            item = self._peeked
        return _unpack(item)[0]

    def batches(self, shuffle):
        order = np.arange(self.steps)
        if shuffle and self.is_sequence:
            np.random.shuffle(order)
        for i in order:
            yield _unpack(self._item(int(i)))

    def split(self, fraction):
        raise ValueError("`validation_split` is only supported for NumPy array inputs, not "
                         "for a Sequence or generator.")

    def on_epoch_end(self) -> None:
        if self.is_sequence and hasattr(self.seq, "on_epoch_end"):
            self.seq.on_epoch_end()


class DatasetSource:
    """A `tf.data.Dataset` (read through an initializable iterator of its own, made once
    per source) or a tf.data iterator the caller made (and initialized), one batch a
    step, fetched in the Keras session.

    As TF1 Keras: without `steps`, an epoch is the dataset's cardinality in batches (a
    full pass read until the end when unknown) and the dataset starts over each epoch;
    with `steps`, the iterator goes on across epochs, and running out of data stops
    training. An iterator needs `steps`.

    Raises (from the constructor):
      ValueError: an infinite dataset without steps; more steps * epochs than a finite
        dataset holds; an iterator without steps.
    """

    use_steps = True

    def __init__(self, data, steps, epochs=1, steps_name="steps", restart=False):
        from tensorflux.data import dataset_ops
        from tensorflux.keras import backend as K

        self.exhausted = False
        self.samples = None
        self._session = K.get_session()
        self._reset_each_epoch = False
        self._restart = restart
        if isinstance(data, dataset_ops.DatasetV1):
            size = int(self._session.run(data.cardinality()))
            if steps is None:
                if size == -1:
                    raise ValueError("When passing an infinitely repeating dataset, you must "
                                     f"specify the `{steps_name}` argument.")
                steps = size if size >= 0 else None
                self._reset_each_epoch = True
            elif size >= 0 and steps * epochs > size:
                if epochs > 1:
                    raise ValueError(f"The dataset you passed contains {size} batches, but "
                                     f"you passed `epochs={epochs}` and `{steps_name}="
                                     f"{steps}`, which is a total of {steps * epochs} steps. "
                                     "We cannot draw that many steps from this dataset. We "
                                     f"suggest to set `{steps_name}={size // epochs}`.")
                raise ValueError(f"The dataset you passed contains {size} batches, but you "
                                 f"passed `{steps_name}={steps}`. We cannot draw that many "
                                 f"steps from this dataset. We suggest to set "
                                 f"`{steps_name}={size}`.")
            self.iterator = data.make_initializable_iterator()
            self._owned = True
            self._session.run(self.iterator.initializer)
        else:
            if steps is None:
                raise ValueError(f"When using an iterator as input to a model, you should "
                                 f"specify the `{steps_name}` argument.")
            self.iterator = data
            self._owned = False
        self.steps = None if steps is None else int(steps)
        self._next = self.iterator.get_next()
        self._fresh = True

    def peek_x(self):
        """The element's input tensors (their static shapes and dtypes build a model)."""
        return _unpack(self._next if not isinstance(self._next, list) else
                       tuple(self._next))[0]

    def batches(self, shuffle):
        del shuffle  # (a dataset shuffles itself)
        from tensorflux.framework import errors

        if self._owned and (self._restart or
                            (self._reset_each_epoch and not self._fresh)):
            self._session.run(self.iterator.initializer)
        self._fresh = False
        step = 0
        while self.steps is None or step < self.steps:
            try:
                item = self._session.run(self._next)
            except errors.OutOfRangeError:
                if self.steps is None and step > 0:
                    self.steps = step
                else:
                    self.exhausted = True
                    print("WARNING: Your dataset ran out of data; interrupting training. "
                          "Make sure that your dataset can generate at least `steps * "
                          "epochs` batches. You may need to use the repeat() function "
                          "when building your dataset.")
                return
            step += 1
            yield _unpack(tuple(item) if isinstance(item, list) else item)

    def split(self, fraction):
        raise ValueError("`validation_split` is only supported for Tensors or NumPy "
                         "arrays, found a dataset.")

    def on_epoch_end(self) -> None:
        pass


def _is_dataset(x) -> bool:
    from tensorflux.data import dataset_ops, iterator_ops

    return isinstance(x, (dataset_ops.DatasetV1, iterator_ops.Iterator))


def _unpack(item):
    if isinstance(item, tuple):
        if len(item) == 1:
            return item[0], None, None
        if len(item) == 2:
            return item[0], item[1], None
        if len(item) == 3:
            return item
        raise ValueError(f"A generator/Sequence item must be (x, y) or (x, y, sample_weight); "
                         f"got a tuple of {len(item)}")
    return item, None, None


def make_source(x, y, sample_weight, batch_size, steps, epochs=1, steps_name="steps",
                restart=False):
    """An ArraySource, a SequenceSource or a DatasetSource for `x` (`restart`: a
    dataset starts over at each pass, as Keras's validation and evaluation do).

    Raises:
      ValueError: no x, or `y` given with a Sequence/generator/dataset."""
    if x is None:
        raise ValueError("No input data was given (x is None).")
    if _is_dataset(x):
        if y is not None:
            raise ValueError("`y` argument is not supported when using dataset as input.")
        if sample_weight is not None:
            raise ValueError("`sample_weight` argument is not supported when using dataset "
                             "as input.")
        return DatasetSource(x, steps, epochs, steps_name, restart)
    if not isinstance(x, (np.ndarray, list, tuple, dict)) and not is_sparse_data(x) and (
            hasattr(x, "__getitem__") and hasattr(x, "__len__") or hasattr(x, "__next__")):
        if y is not None:
            raise ValueError("`y` argument is not supported when using a keras.utils.Sequence "
                             "or a generator as input.")
        return SequenceSource(x, steps)
    xs = _as_list(x)
    ys = _as_list(y)
    return ArraySource(xs, ys, _as_weights(sample_weight), batch_size)


def _as_weights(sample_weight):
    """Sample weights as ArraySource cuts them: None, one array (every output's), a list
    (one per output, None for none) or a dict (by output name)."""
    if sample_weight is None:
        return None
    if isinstance(sample_weight, dict):
        return {k: None if v is None else np.asarray(v) for k, v in sample_weight.items()}
    if isinstance(sample_weight, (list, tuple)):
        return [None if v is None else np.asarray(v) for v in sample_weight]
    return np.asarray(sample_weight)


def unpack_validation(validation_data):
    """(x, y, sample_weight) from validation_data.

    Raises:
      ValueError: anything but a tuple of 2 or 3 or a Sequence/generator."""
    if isinstance(validation_data, (tuple, list)) and len(validation_data) in (2, 3):
        x, y = validation_data[0], validation_data[1]
        sw = validation_data[2] if len(validation_data) == 3 else None
        return x, y, sw
    if hasattr(validation_data, "__getitem__") or hasattr(validation_data, "__next__") or \
            _is_dataset(validation_data):
        return validation_data, None, None
    raise ValueError("When passing validation_data, it must contain 2 (x_val, y_val) or 3 "
                     "(x_val, y_val, val_sample_weights) items, however it contains "
                     f"{len(validation_data)} items")


def check_arrays(x, tensors, names, what) -> list:
    """`x` as one array per tensor, checked against the tensors' static shapes.

    Raises:
      ValueError: a different count, a missing name, a rank or size that does not fit."""
    if isinstance(x, dict):
        missing = [n for n in names if n not in x]
        if missing:
            raise ValueError(f"No data provided for \"{missing[0]}\". Need data for each key "
                             f"in: {names}")
        arrays = [_as_array(x[n]) for n in names]
    else:
        arrays = _as_list(x)
    if len(arrays) != len(tensors):
        raise ValueError(f"Error when checking model {what}: the list of Numpy arrays that "
                         f"you are passing to your model is not the size the model expected. "
                         f"Expected to see {len(tensors)} array(s), but instead got "
                         f"{len(arrays)} arrays.")
    out = []
    for a, t, name in zip(arrays, tensors, names, strict=True):
        shape = t.shape.as_list() if t.shape.ndims is not None else None
        if shape is not None:
            if a.ndim != len(shape):
                raise ValueError(f"Error when checking {what}: expected {name} to have "
                                 f"{len(shape)} dimensions, but got array with shape "
                                 f"{a.shape}")
            for d, n in zip(shape[1:], a.shape[1:], strict=True):
                if d is not None and d != n:
                    raise ValueError(f"Error when checking {what}: expected {name} to have "
                                     f"shape {tuple(shape[1:])} but got array with shape "
                                     f"{a.shape[1:]}")
        dtype = t.dtype.base_dtype.as_numpy_dtype
        out.append(a.astype(dtype, copy=False) if a.dtype != dtype else a)
    return out


def check_targets(y, outputs, names, sparse) -> list:
    """`y` as one array per output (sparse losses: integer labels, any trailing 1).

    Raises:
      ValueError: a count, rank or size that does not fit the outputs."""
    if isinstance(y, dict):
        arrays = [np.asarray(y[n]) for n in names]
    else:
        listed = isinstance(y, (list, tuple)) and (
            len(outputs) > 1 or (len(y) == 1 and isinstance(y[0], np.ndarray)))
        arrays = [np.asarray(a) for a in y] if listed else [np.asarray(y)]
    if len(arrays) != len(outputs):
        raise ValueError(f"Error when checking model target: expected {len(outputs)} arrays, "
                         f"got {len(arrays)}")
    out = []
    for a, t, name, is_sparse in zip(arrays, outputs, names, sparse, strict=True):
        shape = t.shape.as_list()
        if is_sparse:
            out.append(a)
            continue
        if a.ndim == len(shape) - 1 and shape[-1] == 1:
            a = a[..., None]
        if a.ndim != len(shape):
            raise ValueError(f"Error when checking target: expected {name} to have "
                             f"{len(shape)} dimensions, but got array with shape {a.shape}")
        for d, n in zip(shape[1:], a.shape[1:], strict=True):
            if d is not None and d != n:
                raise ValueError(f"Error when checking target: expected {name} to have shape "
                                 f"{tuple(shape[1:])} but got array with shape {a.shape[1:]}")
        out.append(a.astype(t.dtype.base_dtype.as_numpy_dtype, copy=False))
    return out


def check_lengths(xs, ys) -> None:
    """Raises ValueError when the input and target arrays hold different sample counts."""
    nx = {len(a) for a in xs}
    ny = {len(a) for a in ys}
    if len(nx) > 1:
        raise ValueError("All input arrays (x) should have the same number of samples. Got "
                         f"array shapes: {[a.shape for a in xs]}")
    if len(ny) > 1:
        raise ValueError("All target arrays (y) should have the same number of samples. Got "
                         f"array shapes: {[a.shape for a in ys]}")
    if nx != ny:
        raise ValueError("Input arrays should have the same number of samples as target "
                         f"arrays. Found {nx.pop()} input samples and {ny.pop()} target "
                         "samples.")


def _per_output_weights(sample_weight, n: int, names) -> list:
    """`sample_weight` (an array for every output, a list, or a dict by output name) as
    one entry per output (None: none).

    Raises:
      ValueError: a list of another length, or unknown names."""
    if isinstance(sample_weight, dict):
        unknown = set(sample_weight) - set(names or ())
        if unknown:
            raise ValueError(f"Unknown entries in sample_weight dictionary: {sorted(unknown)}."
                             f" Only expected following keys: {list(names or ())}")
        return [sample_weight.get(name) for name in names]
    if isinstance(sample_weight, (list, tuple)):
        if len(sample_weight) != n:
            raise ValueError(f"When passing a list as sample_weight, it should have one entry "
                             f"per model output. The model has {n} outputs, but you passed "
                             f"sample_weight with {len(sample_weight)} entries")
        return list(sample_weight)
    return [sample_weight] * n


def sample_weights(ys, sample_weight, class_weight, n_outputs, modes=None, names=None):
    """Per-output sample weights from `sample_weight` and/or `class_weight` (None: none):
    a weight per sample, or per sample and timestep for an output whose mode (`modes`,
    compile's sample_weight_mode per output) is "temporal".

    Raises:
      ValueError: a sample_weight whose shape does not fit the batch or the mode, as
        Keras words it; class weights for a temporal output."""
    if sample_weight is None and class_weight is None:
        return None
    given = _per_output_weights(sample_weight, len(ys), names)
    out = []
    for i, y in enumerate(ys):
        temporal = bool(modes) and modes[i] == "temporal"
        if temporal and y.ndim < 3:
            raise ValueError(f"Found a sample_weight array for an input with shape {y.shape}"
                             ". Timestep-wise sample weighting (use of sample_weight_mode="
                             "\"temporal\") is restricted to outputs that are at least 3D, "
                             "i.e. that have a time dimension.")
        w = np.ones(y.shape[:2] if temporal else len(y), np.float32)
        if given[i] is not None:
            w = w * _checked_weights(np.asarray(given[i], np.float32), y, temporal,
                                     modes[i] if modes else None)
        if class_weight is not None:
            if y.ndim > 2:
                raise ValueError("`class_weight` not supported for 3+ dimensional targets.")
            classes = np.argmax(y, axis=-1) if y.ndim > 1 and y.shape[-1] > 1 else \
                np.reshape(y, (len(y),)).astype(np.int64)
            w = w * np.asarray([class_weight.get(int(c), 1.0) for c in classes], np.float32)
        out.append(w)
    return out if n_outputs == len(out) else out[:n_outputs]


def _checked_weights(sw, y, temporal: bool, mode):
    if temporal and sw.ndim != 2:
        raise ValueError(f"Found a sample_weight array with shape {sw.shape}. In order to use "
                         "timestep-wise sample weighting, you should pass a 2D sample_weight "
                         "array.")
    if not temporal and sw.ndim != 1:
        raise ValueError(f"Found a sample_weight array with shape {sw.shape}. In order to use "
                         "timestep-wise sample weights, you should specify sample_weight_mode"
                         f"=\"temporal\" in compile(); found \"{mode}\" instead. If you just "
                         "mean to use sample-wise weights, make sure your sample_weight array "
                         "is 1D.")
    if sw.shape != y.shape[:sw.ndim]:
        raise ValueError(f"Found a sample_weight array with shape {sw.shape} for an input with "
                         f"shape {y.shape}. sample_weight cannot be broadcast.")
    return sw
