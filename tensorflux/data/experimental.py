"""tf.data.experimental: transformations for `Dataset.apply`, more sources and writers.

Most are one Dataset method applied (`ds.apply(unique())` is `ds.unique()`); the ones with
work of their own are bucket_by_sequence_length, sample_from_datasets, group_by_reducer,
the CSV readers and make_batched_features_dataset, built from the Dataset methods and ops
as TensorFlow builds them.
"""

from __future__ import annotations

import collections
import csv
import glob
import os

import numpy as np

from tensorflux.data import structure as st
from tensorflux.data.dataset_ops import (
    AUTOTUNE,
    DatasetSpec,
    DatasetV1,
    _directed_interleave,
)
from tensorflux.data.iterator_ops import Iterator, make_saveable_from_iterator
from tensorflux.data.lookup import (
    DatasetInitializer,
    index_table_from_dataset,
    table_from_dataset,
)
from tensorflux.data.optional_ops import Optional, OptionalSpec, get_next_as_optional
from tensorflux.data.options import (
    INFINITE_CARDINALITY,
    UNKNOWN_CARDINALITY,
    AutoShardPolicy,
    AutotuneAlgorithm,
    AutotuneOptions,
    DistributeOptions,
    ExternalStatePolicy,
    OptimizationOptions,
    ThreadingOptions,
)
from tensorflux.data.readers import TextLineDataset, TFRecordDataset
from tensorflux.data.snapshot import snapshot
from tensorflux.framework import dtypes, errors, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.operation import Tensor
from tensorflux.framework.sparse_tensor import SparseTensorSpec
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.framework.tensor_spec import TensorSpec
from tensorflux.framework.type_spec import TypeSpec
from tensorflux.ops.tensor_array_ops import TensorArraySpec
from tensorflux.ragged import ragged_parsing
from tensorflux.ragged.ragged_tensor_spec import RaggedTensorSpec

__all__ = [
    "AUTOTUNE", "SHARD_HINT", "AutoShardPolicy", "AutotuneAlgorithm", "AutotuneOptions",
    "DistributeOptions", "ExternalStatePolicy", "OptimizationOptions", "enable_debug_mode",
    "from_list",
    "from_variant", "get_structure", "to_variant", "pad_to_cardinality",
    "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "Counter", "CsvDataset",
    "RandomDataset", "Reducer", "SqlDataset", "rejection_resample", "Optional",
    "get_next_as_optional", "TFRecordWriter", "ThreadingOptions",
    "assert_cardinality",
    "bucket_by_sequence_length", "cardinality", "choose_from_datasets", "copy_to_device",
    "dense_to_sparse_batch", "dense_to_ragged_batch", "enumerate_dataset",
    "get_single_element", "group_by_reducer",
    "group_by_window", "ignore_errors", "make_batched_features_dataset", "make_csv_dataset",
    "map_and_batch", "map_and_batch_with_legacy_function", "parallel_interleave",
    "parse_example_dataset", "prefetch_to_device", "sample_from_datasets", "scan",
    "shuffle_and_repeat", "snapshot", "take_while", "unbatch", "unique",
    "make_saveable_from_iterator",
    "DatasetInitializer", "table_from_dataset", "index_table_from_dataset",
    "Structure", "DatasetStructure", "OptionalStructure", "TensorStructure",
    "SparseTensorStructure", "RaggedTensorStructure", "TensorArrayStructure",
]


SHARD_HINT = -1  # a shard count filled in by a distribution strategy (TF2); recorded


def enable_debug_mode():
    """TensorFlow's debug mode runs map functions eagerly and in order; tensorflux runs
    traced functions in order on the consumer's thread unless num_parallel_calls is set,
    so there is nothing to switch."""


def from_list(elements):
    """A dataset of `elements` (a list of equally structured values), in order."""
    if not elements:
        raise ValueError("Invalid `elements`. `elements` should not be empty.")
    from tensorflux.ops import joining_ops

    flat = [st.flatten(e if not isinstance(e, list) else convert_to_tensor(e))
            for e in elements]
    stacked = [joining_ops.stack([row[i] for row in flat]) for i in range(len(flat[0]))]
    like = elements[0] if not isinstance(elements[0], list) else 0
    return DatasetV1.from_tensor_slices(st.pack(like, stacked) if st.is_structure(like)
                                        else stacked[0])


def to_variant(dataset):
    """The dataset's scalar variant tensor."""
    return dataset._variant_tensor


def from_variant(variant, structure):
    """The dataset a variant tensor holds; `structure` as `get_structure` gives it."""
    return DatasetV1(variant, structure)


def get_structure(dataset_or_iterator):
    """The `element_spec` of a dataset or an iterator: a structure of TypeSpecs.

    Raises:
      TypeError: neither a dataset nor an iterator.
    """
    if not isinstance(dataset_or_iterator, (DatasetV1, Iterator)):
        raise TypeError(f"Invalid `dataset_or_iterator`. `dataset_or_iterator` must be a "
                        f"`tf.data.Dataset` or tf.data.Iterator object, but got "
                        f"{type(dataset_or_iterator)}.")
    return dataset_or_iterator.element_spec


def pad_to_cardinality(cardinality, mask_key="valid"):
    """Pads a finite dataset of dicts to `cardinality` elements with zero elements; each
    element gets a bool `mask_key` entry, True for the original ones."""
    from tensorflux.ops import array_ops

    def apply(ds):
        if not isinstance(ds._structure, dict):
            raise ValueError("`pad_to_cardinality` requires its elements to be dicts.")
        if mask_key in ds._structure:
            raise ValueError(f"The dataset already has the key {mask_key!r}.")
        n = ds.cardinality()
        valid = ds.map(lambda x: {**x, mask_key: convert_to_tensor(True)})
        zeros = {k: array_ops.zeros(s.shape.as_list(), s.dtype)
                 for k, s in ds._structure.items()}
        zeros[mask_key] = convert_to_tensor(False)
        pad = DatasetV1.from_tensors(zeros).repeat(cardinality - n)
        checked = valid.apply(assert_cardinality(n))
        return checked.concatenate(pad)
    return apply


# ---- transformations for Dataset.apply ---------------------------------------------------

def map_and_batch(map_func, batch_size, num_parallel_batches=None, drop_remainder=False,
                  num_parallel_calls=None):
    """map then batch (run fused: kernels/dataset_batching.py)."""
    if num_parallel_batches is not None and num_parallel_calls is not None:
        raise ValueError("`map_and_batch` allows only one of `num_parallel_batches` and "
                         "`num_parallel_calls` to be set.")
    return lambda ds: ds.map(map_func, num_parallel_calls).batch(batch_size, drop_remainder)


map_and_batch_with_legacy_function = map_and_batch


def shuffle_and_repeat(buffer_size, count=None, seed=None):
    return lambda ds: ds.shuffle(buffer_size, seed).repeat(count)


def parallel_interleave(map_func, cycle_length, block_length=1, sloppy=False,
                        buffer_output_elements=None, prefetch_input_elements=None):
    """interleave, in its deterministic order (`sloppy` allows any order: this one)."""
    return lambda ds: ds.interleave(map_func, cycle_length, block_length)


def unbatch():
    return lambda ds: ds.unbatch()


def unique():
    return lambda ds: ds.unique()


def ignore_errors(log_warning=False):
    return lambda ds: ds.ignore_errors(log_warning)


def take_while(predicate):
    return lambda ds: ds.take_while(predicate)


def scan(initial_state, scan_func):
    return lambda ds: ds.scan(initial_state, scan_func)


def enumerate_dataset(start=0):
    return lambda ds: ds.enumerate(start)


def group_by_window(key_func, reduce_func, window_size=None, window_size_func=None):
    return lambda ds: ds.group_by_window(key_func, reduce_func, window_size,
                                         window_size_func)


def dense_to_sparse_batch(batch_size, row_shape):
    return lambda ds: ds.sparse_batch(batch_size, row_shape)


def dense_to_ragged_batch(batch_size, drop_remainder=False, row_splits_dtype=dtypes.int64):
    """Batches whose components of varying shape become RaggedTensors
    (`Dataset.ragged_batch`)."""
    return lambda ds: ds.ragged_batch(batch_size, drop_remainder, row_splits_dtype)


def assert_cardinality(expected_cardinality):
    """Fails the iteration when the dataset has more or fewer elements than expected."""
    def apply(ds):
        v = apply_op("AssertCardinalityDataset", input_dataset=ds._variant_tensor,
                     cardinality=convert_to_tensor(expected_cardinality, dtype=dtypes.int64,
                                                   name="cardinality"),
                     **st.flat_attrs(ds._structure))
        return DatasetV1(v, ds._structure)
    return apply


def copy_to_device(target_device, source_device="/cpu:0"):
    """The same elements: the datasets of this process live on the host."""
    return lambda ds: ds


def prefetch_to_device(device, buffer_size=None):
    return lambda ds: ds.prefetch(1 if buffer_size is None else buffer_size)


def parse_example_dataset(features, num_parallel_calls=1, deterministic=None):
    """Batches of serialized Examples parsed by `tf.io.parse_example(features)`
    (RaggedFeatures give RaggedTensor components)."""
    return lambda ds: ds.map(lambda s: ragged_parsing.parse_example(s, features),
                             num_parallel_calls)


def bucket_by_sequence_length(element_length_func, bucket_boundaries, bucket_batch_sizes,
                              padded_shapes=None, padding_values=None,
                              pad_to_bucket_boundary=False, no_padding=False,
                              drop_remainder=False):
    """Elements put in buckets by `element_length_func(element)` (bucket i holds lengths
    in [boundaries[i-1], boundaries[i])) and padded-batched per bucket with
    `bucket_batch_sizes[i]`; with `pad_to_bucket_boundary` unknown dimensions are padded
    to the bucket's boundary - 1."""
    from tensorflux.debugging import check_ops
    from tensorflux.ops import comparison_ops, gather_ops, math_ops, reduction_ops

    boundaries = list(bucket_boundaries)
    if len(bucket_batch_sizes) != len(boundaries) + 1:
        raise ValueError(f"len(bucket_batch_sizes) must equal len(bucket_boundaries) + 1 "
                         f"({len(bucket_batch_sizes)} vs {len(boundaries)} + 1)")
    if boundaries != sorted(boundaries):
        raise ValueError("bucket_boundaries must be sorted.")
    low = [np.iinfo(np.int32).min] + boundaries
    high = boundaries + [np.iinfo(np.int32).max]

    def bucket_id(*args):
        length = math_ops.cast(element_length_func(*args), dtypes.int64)
        inside = comparison_ops.logical_and(
            comparison_ops.less_equal(convert_to_tensor(low, dtype=dtypes.int64), length),
            comparison_ops.less(length, convert_to_tensor(high, dtype=dtypes.int64)))
        return reduction_ops.reduce_min(comparison_ops.where(inside))

    def window_size(key):
        return gather_ops.gather(convert_to_tensor(bucket_batch_sizes, dtype=dtypes.int64),
                                 key)

    def batching(key, group):
        size = window_size(key)
        if no_padding:
            return group.batch(size, drop_remainder)
        filler = None
        if pad_to_bucket_boundary:
            check = check_ops.assert_less(
                key, convert_to_tensor(len(bucket_batch_sizes) - 1, dtype=dtypes.int64),
                message="When pad_to_bucket_boundary=True, elements must have length < "
                "max(bucket_boundaries).")
            with graph_lib.get_default_graph().control_dependencies([check]):
                filler = gather_ops.gather(convert_to_tensor(boundaries or [0],
                                                             dtype=dtypes.int64), key) - 1
        shapes = padded_shapes if padded_shapes is not None else group.output_shapes
        shapes = st.map_structure(lambda s: _fill_unknown(s, filler),
                                  _shapes_structure(group, shapes))
        return group.padded_batch(size, shapes, padding_values, drop_remainder)

    return lambda ds: ds.group_by_window(bucket_id, batching, window_size_func=window_size)


def _shapes_structure(ds, shapes):
    """`shapes` arranged as `ds`'s elements (a shape given as a list is one leaf)."""
    return st.pack(ds._structure, st.flatten_up_to(ds._structure, shapes))


def _fill_unknown(shape, filler):
    """`shape` with its unknown dimensions set to `filler` (an int64 tensor): an int64
    vector tensor; or the shape itself when there is no filler."""
    from tensorflux.ops import joining_ops

    if isinstance(shape, Tensor):
        return shape
    shape = tensor_shape.as_shape(shape)
    if filler is None or shape.is_fully_defined():
        return shape
    dims = [filler if d is None else convert_to_tensor(d, dtype=dtypes.int64)
            for d in shape.as_list()]
    return joining_ops.stack(dims)


def sample_from_datasets(datasets, weights=None, seed=None, stop_on_empty_dataset=False):
    """Elements of `datasets` drawn at random: input i with probability weights[i]
    (a list, a float tensor, or a dataset of weight vectors; default uniform)."""
    from tensorflux.ops import math_ops, stateless_random_ops, unary_ops

    datasets = list(datasets)
    n = len(datasets)
    if weights is None:
        weights = [1.0 / n] * n
    if isinstance(weights, DatasetV1):
        pairs = DatasetV1.zip((DatasetV1.random(seed).batch(2), weights))
    else:
        w = convert_to_tensor(weights, dtype=dtypes.float32, name="weights")
        if w.shape.ndims is not None and w.shape.ndims != 1:
            raise ValueError("`weights` must be a vector.")
        pairs = DatasetV1.zip((DatasetV1.random(seed).batch(2), DatasetV1.from_tensors(
            w).repeat()))

    def select(seeds, w):
        logits = unary_ops.log(math_ops.cast(w, dtypes.float32))[None, :]
        return stateless_random_ops.stateless_multinomial(logits, 1, seed=seeds)[0, 0]

    return _directed_interleave(datasets, pairs.map(select), stop_on_empty_dataset)


def rejection_resample(class_func, target_dist, initial_dist=None, seed=None):
    """(class, element) pairs resampled so that the classes (`class_func(element)`, an
    int32 or int64 scalar) follow `target_dist`: each element is kept with its class's
    acceptance probability, mixed with the unfiltered input where that rejects less
    (`initial_dist`, the input's class distribution, is estimated from the classes seen so
    far when not given)."""
    from tensorflux.ops import (
        array_ops,
        comparison_ops,
        gather_ops,
        joining_ops,
        math_ext_ops,
        math_ops,
        random_ops,
        reduction_ops,
        unary_ops,
    )

    def acceptance(initial, target):
        """(acceptance probability per class, probability of taking the unfiltered
        input): the smallest target/initial ratio is served by the input itself."""
        ratio = target / initial
        ratio = comparison_ops.where(unary_ops.is_nan(ratio), array_ops.zeros_like(ratio),
                                     ratio)
        high, low = reduction_ops.reduce_max(ratio), reduction_ops.reduce_min(ratio)
        return (ratio - low) / (high - low), low

    def apply(ds):
        target = convert_to_tensor(target_dist, dtype=dtypes.float32, name="target_dist")
        n_classes = target.shape.as_list()[0]
        classes = ds.map(class_func)
        if initial_dist is not None:
            initial = convert_to_tensor(initial_dist, dtype=dtypes.float32,
                                        name="initial_dist")
            accept, original = acceptance(initial, target)
            accept_ds = DatasetV1.from_tensors(accept).repeat()
            original_ds = DatasetV1.from_tensors(original).repeat()
        else:  # the distribution of the classes seen so far, updated 32 at a time
            def update(counts, batch):
                counts = counts + math_ops.cast(math_ext_ops.bincount(
                    math_ops.cast(batch, dtypes.int32), minlength=n_classes,
                    maxlength=n_classes), dtypes.int64)
                dist = math_ops.cast(counts, dtypes.float32) / math_ops.cast(
                    reduction_ops.reduce_sum(counts), dtypes.float32)
                tiled = joining_ops.tile(array_ops.expand_dims(dist, 0),
                                         joining_ops.stack([array_ops.size(batch), 1]))
                return counts, tiled
            initial_ds = classes.batch(32).scan(
                array_ops.zeros([n_classes], dtypes.int64), update).unbatch()
            pairs = initial_ds.map(lambda d: acceptance(d, target))
            accept_ds = pairs.map(lambda a, o: a)
            original_ds = pairs.map(lambda a, o: o)

        def class_of(element):
            return class_func(*element) if type(element) is tuple else class_func(element)

        def with_class(*x):
            element = x[0] if len(x) == 1 else x
            return class_of(element), element

        def with_probability(a, element):
            c = class_of(element)
            return c, gather_ops.gather(a, c), element

        def keep(c, p, element):
            return random_ops.random_uniform([], seed=seed) < p

        filtered = DatasetV1.zip((accept_ds, ds)).map(with_probability).filter(keep).map(
            lambda c, p, element: (c, element)).prefetch(3)
        return sample_from_datasets(
            [ds.map(with_class), filtered],
            weights=original_ds.map(lambda o: joining_ops.stack([o, 1.0 - o])), seed=seed)
    return apply


def choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset=False):
    """The next element of datasets[i] for each i of `choice_dataset` (an empty input's
    turns are skipped unless `stop_on_empty_dataset`)."""
    return _directed_interleave(datasets, choice_dataset, stop_on_empty_dataset)


class Reducer:
    """init_func(key) -> state, reduce_func(state, element) -> state,
    finalize_func(state) -> output element (for group_by_reducer)."""

    def __init__(self, init_func, reduce_func, finalize_func):
        self.init_func, self.reduce_func = init_func, reduce_func
        self.finalize_func = finalize_func


def group_by_reducer(key_func, reducer):
    """One element per key: the key's elements reduced by `reducer`, in the order of the
    keys' first appearance."""
    from tensorflux.ops import math_ops

    def apply(ds):
        is_tuple = type(ds._structure) is tuple
        last = convert_to_tensor(np.iinfo(np.int64).max, dtype=dtypes.int64)

        def reduce_group(key, group):
            first = group.map(lambda i, x: i).reduce(last, math_ops.minimum)
            state = group.map(lambda i, x: x).reduce(reducer.init_func(key),
                                                     reducer.reduce_func)
            out = reducer.finalize_func(*state) if type(state) is tuple else \
                reducer.finalize_func(state)
            return DatasetV1.from_tensors((first, out))

        grouped = ds.enumerate().group_by_window(
            lambda i, x: key_func(*x) if is_tuple else key_func(x), reduce_group,
            window_size=np.iinfo(np.int64).max)
        return _by_first(grouped)
    return apply


def _by_first(ds):
    """The `out`s of (first, out) elements in increasing order of `first`."""
    from tensorflux.ops import gather_ops, math_ext_ops

    def order(first, out):
        perm = math_ext_ops.argsort(first)
        return st.map_structure(lambda t: gather_ops.gather(t, perm), out)
    return ds.batch(np.iinfo(np.int32).max).map(order).unbatch()


def cardinality(dataset):
    return dataset.cardinality()


def get_single_element(dataset):
    return dataset.get_single_element()


def Counter(start=0, step=1, dtype=dtypes.int64):  # noqa: N802 - TF's name
    return DatasetV1.counter(start, step, dtype)


# ---- TF 1.15's names of the element specs -----------------------------------------------

Structure = TypeSpec
DatasetStructure = DatasetSpec
OptionalStructure = OptionalSpec


def TensorStructure(dtype, shape):  # noqa: N802 - TF's name
    """TF 1.15's name of `tf.TensorSpec(shape, dtype)`."""
    return TensorSpec(shape, dtype)


def SparseTensorStructure(dtype, shape):  # noqa: N802 - TF's name
    """TF 1.15's name of `tf.SparseTensorSpec(shape, dtype)`."""
    return SparseTensorSpec(shape, dtype)


def RaggedTensorStructure(dtype, shape, ragged_rank):  # noqa: N802 - TF's name
    """TF 1.15's name of `tf.RaggedTensorSpec(shape, dtype, ragged_rank)`."""
    return RaggedTensorSpec(shape, dtype, ragged_rank)


def TensorArrayStructure(dtype, element_shape, dynamic_size, infer_shape):  # noqa: N802
    """TF 1.15's name of `tf.TensorArraySpec(element_shape, dtype, dynamic_size,
    infer_shape)`."""
    return TensorArraySpec(element_shape, dtype, dynamic_size, infer_shape)


def RandomDataset(seed=None):  # noqa: N802 - TF's name (a class there)
    return DatasetV1.random(seed)


class TFRecordWriter:
    """Writes a dataset of scalar strings to a TFRecord file: `write(dataset)` is the op
    that does it when run."""

    def __init__(self, filename, compression_type=None):
        self._filename = convert_to_tensor(filename, dtype=dtypes.string, name="filename")
        self._compression = convert_to_tensor(compression_type or "", dtype=dtypes.string,
                                              name="compression_type")

    def write(self, dataset):
        spec = st.flatten(dataset._structure)
        if len(spec) != 1 or spec[0].dtype != dtypes.string or \
                not spec[0].shape.is_compatible_with(tensor_shape.TensorShape([])):
            raise TypeError("`dataset` must produce scalar `DT_STRING` tensors whereas it "
                            f"produces shape {dataset.output_shapes} and types "
                            f"{dataset.output_types}")
        return apply_op("DatasetToTFRecord", input_dataset=dataset._variant_tensor,
                        filename=self._filename, compression_type=self._compression)


class SqlDataset(DatasetV1):
    """The rows of `query` on a database (`driver_name` "sqlite", `data_source_name` its
    file) as tuples of scalars of `output_types`."""

    def __init__(self, driver_name, data_source_name, query, output_types):
        types = output_types if isinstance(output_types, tuple) else (output_types,) \
            if not isinstance(output_types, list) else tuple(output_types)
        specs = tuple(TensorSpec([], dtypes.as_dtype(t)) for t in types)
        v = apply_op("SqlDataset",
                     driver_name=convert_to_tensor(driver_name, dtype=dtypes.string),
                     data_source_name=convert_to_tensor(data_source_name,
                                                        dtype=dtypes.string),
                     query=convert_to_tensor(query, dtype=dtypes.string),
                     output_types=[s.dtype for s in specs],
                     output_shapes=[s.shape for s in specs])
        super().__init__(v, specs if isinstance(output_types, (tuple, list)) else specs[0])


# ---- CSV -------------------------------------------------------------------------------------

def _csv_default(d):
    """A record default: a dtype means a required column (an empty default)."""
    if isinstance(d, dtypes.DType) or (isinstance(d, type) and d is not str):
        return convert_to_tensor(np.zeros([0], dtypes.as_dtype(d).numpy_dtype)
                                 if dtypes.as_dtype(d) != dtypes.string else
                                 np.zeros([0], object), dtype=dtypes.as_dtype(d))
    t = convert_to_tensor(d)
    return t if t.shape.ndims == 1 else convert_to_tensor([d], dtype=t.dtype)


class CsvDataset(DatasetV1):
    """The records of CSV files as tuples of scalars, one per (selected) column."""

    def __init__(self, filenames, record_defaults, compression_type=None, buffer_size=None,
                 header=False, field_delim=",", use_quote_delim=True, na_value="",
                 select_cols=None, exclude_cols=None):
        from tensorflux.ops import parsing_ops

        if select_cols is not None and exclude_cols is not None:
            raise ValueError("Either select_cols or exclude_cols should be empty")
        with graph_lib.name_scope("CsvDataset"):
            defaults = [_csv_default(d) for d in record_defaults]
        if exclude_cols is not None:
            excluded = set(exclude_cols)
            select_cols = [i for i in range(len(defaults) + len(excluded))
                           if i not in excluded]

        def one(name):
            lines = TextLineDataset(name, compression_type, buffer_size)
            return lines.skip(1) if header else lines

        files = DatasetV1.from_tensor_slices(_vector(filenames))
        ds = files.flat_map(one).map(lambda line: tuple(parsing_ops.decode_csv(
            line, defaults, field_delim=field_delim, use_quote_delim=use_quote_delim,
            na_value=na_value, select_cols=select_cols)))
        super().__init__(ds._variant_tensor, ds._structure)


def _vector(filenames):
    from tensorflux.ops import array_ops

    t = convert_to_tensor(filenames, dtype=dtypes.string, name="filenames")
    return array_ops.reshape(t, [-1]) if t.shape.ndims != 1 else t


def _files(file_pattern) -> list[str]:
    """The sorted files matching `file_pattern` (one pattern or a list), at build time."""
    patterns = [file_pattern] if isinstance(file_pattern, (str, bytes)) else file_pattern
    found = sorted({f for p in patterns for f in glob.glob(os.fsdecode(p))})
    if not found:
        raise errors.InvalidArgumentError(None, None,
                                          f"No files match `file_pattern` {file_pattern}.")
    return found


def _infer_type(values: list[str], na_value: str):
    """The narrowest of int32, int64, float32, float64, string that holds `values`."""
    kinds = [(dtypes.int32, int, np.int32), (dtypes.int64, int, np.int64),
             (dtypes.float32, float, np.float32), (dtypes.float64, float, np.float64)]
    present = [v for v in values if v and v != na_value]
    for dtype, parse, np_type in kinds:
        try:
            for v in present:
                x = parse(v)
                if np_type is not np.float64 and np_type(x) != x and parse is int:
                    raise ValueError
                if parse is int and not np.iinfo(np_type).min <= x <= np.iinfo(np_type).max:
                    raise ValueError
                if parse is float and np_type is np.float32 and np.isinf(np.float32(x)) \
                        and not np.isinf(x):
                    raise ValueError
        except ValueError:
            continue
        return dtype
    return dtypes.string


def make_csv_dataset(file_pattern, batch_size, column_names=None, column_defaults=None,
                     label_name=None, select_columns=None, field_delim=",",
                     use_quote_delim=True, na_value="", header=True, num_epochs=None,
                     shuffle=True, shuffle_buffer_size=10000, shuffle_seed=None,
                     prefetch_buffer_size=None, num_parallel_reads=None, sloppy=False,
                     num_rows_for_inference=100, compression_type=None,
                     ignore_errors=False, encoding="utf-8"):
    """Batches of CSV records as (features dict, label) or a features dict: column names
    from the first file's header unless given, column types inferred from the first
    `num_rows_for_inference` rows unless `column_defaults` are given."""
    files = _files(file_pattern)
    rows = []
    with open(files[0], newline="", encoding=encoding) as f:
        reader = csv.reader(f, delimiter=field_delim)
        first = next(reader, None)
        if first is None:
            raise ValueError(f"Cannot read the first line of {files[0]}.")
        if header and column_names is None:
            column_names = first
        elif not header:
            rows.append(first)
        for row in reader:
            if num_rows_for_inference and len(rows) >= num_rows_for_inference:
                break
            rows.append(row)
    if column_names is None:
        raise ValueError("Expected `column_names` or `header=True` to infer column names.")
    column_names = list(column_names)
    if len(set(column_names)) != len(column_names):
        raise ValueError("Cannot have duplicate column names.")
    if select_columns is not None:
        index = [column_names.index(c) if isinstance(c, str) else int(c)
                 for c in select_columns]
        select_cols = sorted(set(index))
    else:
        select_cols = list(range(len(column_names)))
    names = [column_names[i] for i in select_cols]
    if label_name is not None and label_name not in names:
        raise ValueError(f"`label_name` provided must be one of the columns: {names}.")
    if column_defaults is None:
        inferred = [_infer_type([r[i] if i < len(r) else "" for r in rows], na_value)
                    for i in select_cols]  # empty fields default to 0 or "" (as TF)
        column_defaults = [convert_to_tensor([b"" if t == dtypes.string else 0], dtype=t)
                           for t in inferred]
    elif len(column_defaults) != len(select_cols):
        raise ValueError("If specified, column_defaults and select_columns must have same "
                         "length.")
    file_ds = DatasetV1.from_tensor_slices(files)
    if shuffle:
        file_ds = file_ds.shuffle(len(files), seed=shuffle_seed)

    def records(name):
        return CsvDataset(name, column_defaults, compression_type, None, header, field_delim,
                          use_quote_delim, na_value, select_cols)

    ds = file_ds.interleave(records, cycle_length=num_parallel_reads or 1, block_length=1)
    if ignore_errors:
        ds = ds.ignore_errors()
    if shuffle:
        ds = ds.shuffle(shuffle_buffer_size, seed=shuffle_seed)
    if num_epochs != 1:
        ds = ds.repeat(num_epochs)
    ds = ds.batch(batch_size, drop_remainder=num_epochs is None)

    def to_features(*columns):
        features = collections.OrderedDict(zip(names, columns, strict=True))
        if label_name is None:
            return features
        label = features.pop(label_name)
        return features, label

    return ds.map(to_features).prefetch(AUTOTUNE if prefetch_buffer_size is None
                                        else prefetch_buffer_size)


def make_batched_features_dataset(file_pattern, batch_size, features, reader=None,
                                  label_key=None, reader_args=None, num_epochs=None,
                                  shuffle=True, shuffle_buffer_size=10000, shuffle_seed=None,
                                  prefetch_buffer_size=None, reader_num_threads=None,
                                  parser_num_threads=None, sloppy_ordering=False,
                                  drop_final_batch=False):
    """Batches of Examples read by `reader` (default TFRecordDataset) from the files
    matching `file_pattern`, parsed with `features` (a dict, or (dict, label) with
    `label_key`)."""
    reader = reader or TFRecordDataset
    files = DatasetV1.list_files(file_pattern, shuffle=shuffle, seed=shuffle_seed)
    ds = files.interleave(lambda f: reader(f, *(reader_args or [])),
                          cycle_length=reader_num_threads or 1, block_length=1)
    if shuffle:
        ds = ds.shuffle(shuffle_buffer_size, seed=shuffle_seed)
    if num_epochs != 1:
        ds = ds.repeat(num_epochs)
    ds = ds.batch(batch_size, drop_remainder=drop_final_batch)
    ds = ds.map(lambda s: ragged_parsing.parse_example(s, features))
    if label_key is not None:
        if label_key not in features:
            raise ValueError(f"The `label_key` provided ({label_key}) must be one of the "
                             "`features` keys.")
        ds = ds.map(lambda f: (f, f.pop(label_key)))
    return ds.prefetch(AUTOTUNE if prefetch_buffer_size is None else prefetch_buffer_size)
