"""CPU kernels of dataset and iterator ops (tensorflux/ops/dataset_ops.py).

Dataset kernels return a kernels/datasets.py Dataset (the `variant` value); functions in
their attrs are instantiated once per kernel, device and session (kernels/functions.py).
Iterator kernels keep an IteratorResource in the device's ResourceMgr, created like a
queue's (data_flow_ops.resource_op): per Session, under `shared_name` or a unique name.
`close_resource` (Session.close, a container reset) closes the current pass, which stops
its prefetch and parallel-map threads.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from tensorflux.framework import dtypes, errors, op_registry
from tensorflux.kernels import (
    dataset_batching,
    dataset_files,
    dataset_snapshot,
    dataset_state,
    dataset_transforms,
    determinism,
)
from tensorflux.kernels import datasets as ds_lib
from tensorflux.kernels import functions as functions_lib
from tensorflux.kernels.cpu.data_flow_ops import _make_handle, lookup, resource_op
from tensorflux.kernels.registry import kernel, kernel_factory
from tensorflux.protos import resource_handle_pb2

ITERATOR_TYPE_NAME = "tensorflow::data::IteratorResource"


class IteratorResource:
    """The state of one iterator: the current pass (None before MakeIterator) over
    `_dataset`, how many elements it has given (`_position`, errors of single elements
    included: what SerializeIterator saves), its element signature, and a lock that
    serializes `get_next` across threads."""

    kind = "IteratorResource"

    def __init__(self, name: str, types: list, shapes: list):
        self.name = name
        self.types, self.shapes = list(types), list(shapes)
        self.lock = threading.Lock()
        self.dropped = False
        self.factory_done = False  # OneShotIterator: its dataset was made
        self._iterator: ds_lib.Iterator | None = None
        self._dataset: ds_lib.Dataset | None = None
        self._position = 0

    def set_dataset(self, dataset: ds_lib.Dataset, position: int = 0) -> None:
        """Starts a new pass over `dataset` (past its first `position` elements: a restored
        state), closing the previous one."""
        it = dataset.iterate(ds_lib.Env())
        for _ in range(position):
            try:
                if it.next() is None:
                    break
            except Exception as e:  # noqa: BLE001 - an element that failed when first given
                if not ds_lib.resumable(e):
                    it.close()
                    raise
        with self.lock:
            old, self._iterator = self._iterator, it
            self._dataset, self._position = dataset, position
        if old is not None:
            old.close()

    def state(self) -> tuple[ds_lib.Dataset, int]:
        """(the dataset of the current pass, the elements it has given)."""
        with self.lock:
            if self._iterator is None:
                raise errors.FailedPreconditionError(
                    None, None, "Cannot save the state of an iterator that has not been "
                    "initialized.")
            return self._dataset, self._position

    def get_next(self) -> list:
        with self.lock:
            if self.dropped:
                raise errors.CancelledError(None, None, "Iterator resource was deleted")
            if self._iterator is None:
                raise errors.FailedPreconditionError(
                    None, None, "GetNext() failed because the iterator has not been "
                    "initialized. Ensure that you have run the initializer operation for "
                    "this iterator before getting the next element.")
            try:
                x = self._iterator.next()
            except Exception as e:
                if ds_lib.resumable(e):
                    self._position += 1
                raise
            if x is not None:
                self._position += 1
        if x is None:
            raise errors.OutOfRangeError(None, None, "End of sequence")
        return x

    def close_resource(self) -> None:
        self.dropped = True
        it, self._iterator = self._iterator, None
        if it is not None:
            it.close()


def _str(v) -> str:
    v = v.item() if isinstance(v, np.ndarray) else v
    return os.fsdecode(v) if isinstance(v, bytes) else str(v)


def _strings(value) -> list[str]:
    return [_str(v) for v in np.asarray(value, dtype=object).reshape(-1)]


def _function(node, attr: str):
    """ctx -> the call of `node`'s function `attr` on ctx's device (made once per device
    and session)."""
    func = node.attrs[attr]
    cache: dict = {}

    def get(ctx):
        key = (id(ctx.device), id(ctx.session))
        call = cache.get(key)
        if call is None:
            call = cache.setdefault(key, functions_lib.instantiate(func, ctx))
        return call

    return get



# ---- dataset kernels record their recipes ------------------------------------------------

def _with_recipe(factory):
    """`factory(node)`, whose computed Dataset records (node, inputs), its recipe
    (kernels/dataset_state.py saves iterators by it)."""
    def recording(node):
        compute = factory(node)

        def run(ctx, *inputs):
            ds = compute(ctx, *inputs)
            dataset_state.record(ds, node, inputs)
            return ds
        return run
    return recording


def dataset_kernel(*op_types: str):
    """`kernel` for an op whose plain compute returns a Dataset (recording its recipe)."""
    def register(fn):
        kernel_factory(*op_types)(_with_recipe(lambda node: fn))
        return fn
    return register


def dataset_kernel_factory(*op_types: str):
    """`kernel_factory` for an op whose compute returns a Dataset (recording its recipe)."""
    def register(factory):
        kernel_factory(*op_types)(_with_recipe(factory))
        return factory
    return register


# ---- sources -----------------------------------------------------------------------------

@dataset_kernel("TensorSliceDataset")
def _tensor_slice_dataset(ctx, *components):
    return ds_lib.TensorSliceDataset([np.asarray(c) for c in components])


@dataset_kernel("TensorDataset")
def _tensor_dataset(ctx, *components):
    return ds_lib.TensorDataset([np.asarray(c) for c in components])


@dataset_kernel_factory("RangeDataset")
def _range_dataset(node):
    dtype = node.attrs["output_types"][0].numpy_dtype

    def compute(ctx, start, stop, step):
        return ds_lib.RangeDataset(int(start), int(stop), int(step), dtype)
    return compute


@dataset_kernel("TFRecordDataset")
def _tfrecord_dataset(ctx, filenames, compression, buffer_size):
    return dataset_files.TFRecordDataset(_strings(filenames), _str(compression),
                                         int(buffer_size))


@dataset_kernel("TextLineDataset")
def _text_line_dataset(ctx, filenames, compression, buffer_size):
    return dataset_files.TextLineDataset(_strings(filenames), _str(compression))


@dataset_kernel("FixedLengthRecordDatasetV2")
def _fixed_length_dataset(ctx, filenames, header, record, footer, buffer_size, compression):
    return dataset_files.FixedLengthRecordDataset(_strings(filenames), int(header),
                                                  int(record), int(footer), _str(compression))


@dataset_kernel_factory("PyGeneratorDataset")
def _py_generator_dataset(node):
    token = node.attrs["token"]

    def compute(ctx, *args):
        make = ds_lib.generator(token)
        if make is None:
            raise errors.NotFoundError(None, None, f"Generator {token} is not registered "
                                       "in this process (from_generator runs in the process "
                                       "that built the graph).")
        values = tuple(_generator_argument(a) for a in args)
        return ds_lib.ListDataset(lambda: make(*values))
    return compute


def _generator_argument(value):
    """An argument of a from_generator generator as TF1 passes it: arrays as NumPy arrays
    (strings as bytes objects), scalars as NumPy scalars, a string scalar as `bytes`."""
    arr = np.asarray(value)
    if arr.ndim:
        return arr
    item = arr[()]
    return item if isinstance(item, (bytes, np.generic)) else arr.dtype.type(item)


# ---- transformations ---------------------------------------------------------------------

def _function_kernel(op_type: str, attr: str, make, n_extra: int = 0, **options):
    """A dataset kernel whose op has `input_dataset, other_arguments..., extras...`.
    `row_wise=True`: `make` takes `row_wise`, whether the function may map stacked
    elements in one call (functions_lib.row_wise)."""

    @dataset_kernel_factory(op_type)
    def factory(node):
        fn = _function(node, attr)
        kw = {"row_wise": functions_lib.row_wise(node.attrs[attr])} \
            if options.get("row_wise") else {}

        def compute(ctx, input_ds, *rest):
            captured = list(rest[:len(rest) - n_extra])
            extras = [int(x) for x in rest[len(rest) - n_extra:]]
            return make(ds_lib.as_dataset(input_ds), fn(ctx), captured, *extras, **kw)
        return compute
    return factory


_function_kernel("MapDataset", "f", ds_lib.MapDataset, row_wise=True)


@dataset_kernel_factory("ParallelMapDatasetV2")
def _parallel_map_dataset(node):
    """MapDataset with `num_parallel_calls`; one call at a time when TF_DETERMINISTIC_OPS
    asks for determinism and the function holds a stateful op (its random draws would
    follow the threads' timing; TensorFlow runs such a map sequentially too)."""
    fn = _function(node, "f")
    row_wise = functions_lib.row_wise(node.attrs["f"])
    sequential = determinism.op_determinism_required() and _runs_stateful_op(node.attrs["f"])

    def compute(ctx, input_ds, *rest):
        captured, parallel = list(rest[:-1]), int(rest[-1])
        return ds_lib.MapDataset(ds_lib.as_dataset(input_ds), fn(ctx), captured,
                                 1 if sequential else parallel, row_wise=row_wise)
    return compute


def _runs_stateful_op(func) -> bool:
    """Whether the body of dataset function `func` runs a stateful op (random ops,
    variable reads, ...)."""
    graph = getattr(func, "graph", None)
    if graph is None:
        return True
    for op in graph.get_operations():
        opdef = op_registry.lookup(op.type)
        if opdef is None or opdef.is_stateful:
            return True
    return False


_function_kernel("FilterDataset", "predicate", ds_lib.FilterDataset)
_function_kernel("FlatMapDataset", "f", ds_lib.FlatMapDataset)
_function_kernel("InterleaveDataset", "f", ds_lib.InterleaveDataset, 2)


@dataset_kernel("BatchDatasetV2")
def _batch_dataset(ctx, input_ds, batch_size, drop_remainder):
    return dataset_batching.BatchDataset(ds_lib.as_dataset(input_ds), int(batch_size),
                               bool(drop_remainder))


@dataset_kernel_factory("PaddedBatchDatasetV2")
def _padded_batch_dataset(node):
    n = node.attrs["N"]

    def compute(ctx, input_ds, batch_size, *rest):
        shapes, values, drop = rest[:n], rest[n:2 * n], rest[2 * n]
        return dataset_batching.PaddedBatchDataset(ds_lib.as_dataset(input_ds), int(batch_size),
                                         list(shapes), list(values), bool(drop))
    return compute


@dataset_kernel_factory("ShuffleDataset")
def _shuffle_dataset(node):
    reshuffle = node.attrs["reshuffle_each_iteration"]

    def compute(ctx, input_ds, buffer_size, seed, seed2):
        return ds_lib.ShuffleDataset(ds_lib.as_dataset(input_ds), int(buffer_size), int(seed),
                                     int(seed2), reshuffle)
    return compute


@dataset_kernel("RepeatDataset")
def _repeat_dataset(ctx, input_ds, count):
    return ds_lib.RepeatDataset(ds_lib.as_dataset(input_ds), int(count))


@dataset_kernel("TakeDataset")
def _take_dataset(ctx, input_ds, count):
    return ds_lib.TakeDataset(ds_lib.as_dataset(input_ds), int(count))


@dataset_kernel("SkipDataset")
def _skip_dataset(ctx, input_ds, count):
    return ds_lib.SkipDataset(ds_lib.as_dataset(input_ds), int(count))


@dataset_kernel("PrefetchDataset")
def _prefetch_dataset(ctx, input_ds, buffer_size):
    return ds_lib.PrefetchDataset(ds_lib.as_dataset(input_ds), int(buffer_size))


@dataset_kernel_factory("CacheDataset")
def _cache_dataset(node):
    n = len(node.attrs["output_types"])

    def compute(ctx, input_ds, filename):
        filename = _str(filename)
        if filename:
            return dataset_files.FileCacheDataset(ds_lib.as_dataset(input_ds), filename, n)
        return ds_lib.CacheDataset(ds_lib.as_dataset(input_ds))
    return compute


@dataset_kernel_factory("SnapshotDatasetV2")
def _snapshot_dataset(node):
    reader, shard = _function(node, "reader_func"), _function(node, "shard_func")
    n_reader = len(node.attrs["Treader_func_args"])
    types, compression = node.attrs["output_types"], node.attrs["compression"]
    dataset_snapshot.check_compression(compression)

    def compute(ctx, input_ds, path, *captured):
        return dataset_snapshot.SnapshotDataset(
            ds_lib.as_dataset(input_ds), _str(path), compression, types,
            (reader(ctx), captured[:n_reader]), (shard(ctx), captured[n_reader:]))
    return compute


@dataset_kernel("ZipDataset")
def _zip_dataset(ctx, *inputs):
    return ds_lib.ZipDataset([ds_lib.as_dataset(d) for d in inputs])


@dataset_kernel("ConcatenateDataset")
def _concatenate_dataset(ctx, first, second):
    return ds_lib.ConcatenateDataset(ds_lib.as_dataset(first), ds_lib.as_dataset(second))


@dataset_kernel("UnbatchDataset")
def _unbatch_dataset(ctx, input_ds):
    return dataset_batching.UnbatchDataset(ds_lib.as_dataset(input_ds))


# ---- more transformations (kernels/dataset_transforms.py) ----------------------------------

@dataset_kernel("ShardDataset")
def _shard_dataset(ctx, input_ds, num_shards, index):
    return dataset_transforms.ShardDataset(ds_lib.as_dataset(input_ds), int(num_shards),
                                           int(index))


for _op, _cls in (("UniqueDataset", dataset_transforms.UniqueDataset),
                  ("IgnoreErrorsDataset", dataset_transforms.IgnoreErrorsDataset)):
    dataset_kernel(_op)(lambda ctx, input_ds, _cls=_cls: _cls(ds_lib.as_dataset(input_ds)))

_function_kernel("TakeWhileDataset", "predicate", dataset_transforms.TakeWhileDataset)


def _stateful_function(node):
    """(function getter, number of state inputs) of a Scan/ReduceDataset node."""
    return _function(node, "f"), len(node.attrs["Tstate"])


@dataset_kernel_factory("ScanDataset")
def _scan_dataset(node):
    fn, n = _stateful_function(node)

    def compute(ctx, input_ds, *rest):
        return dataset_transforms.ScanDataset(ds_lib.as_dataset(input_ds), fn(ctx),
                                              list(rest[:n]), list(rest[n:]))
    return compute


def _whole_pass(dataset: ds_lib.Dataset):
    """The elements of one pass over `dataset` (a failed element raises)."""
    it = dataset.iterate(ds_lib.Env())
    try:
        while (x := it.next()) is not None:
            yield x
    finally:
        it.close()


@kernel_factory("ReduceDataset")
def _reduce_dataset(node):
    fn, n = _stateful_function(node)

    def compute(ctx, input_ds, *rest):
        call, state, captured = fn(ctx), list(rest[:n]), list(rest[n:])
        for x in _whole_pass(ds_lib.as_dataset(input_ds)):
            state = list(call(state + list(x) + captured))
        return tuple(state) if n > 1 else state[0]
    return compute


@kernel_factory("DatasetToSingleElement")
def _dataset_to_single_element(node):
    n = len(node.attrs["output_types"])

    def compute(ctx, dataset):
        it = ds_lib.as_dataset(dataset).iterate(ds_lib.Env())
        try:
            x = it.next()
            if x is None:
                raise errors.InvalidArgumentError(None, None, "Dataset was empty.")
            if it.next() is not None:
                raise errors.InvalidArgumentError(None, None,
                                                  "Dataset had more than one element.")
        finally:
            it.close()
        return tuple(x) if n > 1 else x[0]
    return compute


@dataset_kernel("WindowDataset")
def _window_dataset(ctx, input_ds, size, shift, stride, drop_remainder):
    return dataset_transforms.WindowDataset(ds_lib.as_dataset(input_ds), int(size),
                                            int(shift), int(stride), bool(drop_remainder))


@dataset_kernel_factory("GroupByWindowDataset")
def _group_by_window_dataset(node):
    fns = [_function(node, a) for a in ("key_func", "reduce_func", "window_size_func")]
    counts = [len(node.attrs[f"T{a}_other_arguments"])
              for a in ("key_func", "reduce_func", "window_size_func")]

    def compute(ctx, input_ds, *rest):
        nk, nr = counts[0], counts[1]
        args = [list(rest[:nk]), list(rest[nk:nk + nr]), list(rest[nk + nr:])]
        key, red, size = (f(ctx) for f in fns)
        return dataset_transforms.GroupByWindowDataset(ds_lib.as_dataset(input_ds), key,
                                                       red, size, *args)
    return compute


@dataset_kernel_factory("DirectedInterleaveDataset")
def _directed_interleave_dataset(node):
    stop = node.attrs["stop_on_empty_dataset"]

    def compute(ctx, selector, *inputs):
        return dataset_transforms.DirectedInterleaveDataset(
            ds_lib.as_dataset(selector), [ds_lib.as_dataset(d) for d in inputs], stop)
    return compute


@dataset_kernel("RandomDataset")
def _random_dataset(ctx, seed, seed2):
    return dataset_transforms.RandomDataset(int(seed), int(seed2))


@dataset_kernel("AssertCardinalityDataset")
def _assert_cardinality_dataset(ctx, input_ds, cardinality):
    return dataset_transforms.AssertCardinalityDataset(ds_lib.as_dataset(input_ds),
                                                       int(cardinality))


@dataset_kernel("DenseToSparseBatchDataset")
def _dense_to_sparse_batch_dataset(ctx, input_ds, batch_size, row_shape):
    return dataset_transforms.DenseToSparseBatchDataset(
        ds_lib.as_dataset(input_ds), int(batch_size),
        [int(d) for d in np.reshape(row_shape, -1)])


@kernel("DatasetCardinality")
def _dataset_cardinality(ctx, input_ds):
    return np.asarray(dataset_transforms.cardinality(ds_lib.as_dataset(input_ds)),
                      dtype=np.int64)


@dataset_kernel_factory("SqlDataset")
def _sql_dataset(node):
    types = [t.numpy_dtype if t.name != "string" else object
             for t in node.attrs["output_types"]]

    def compute(ctx, driver, source, query):
        return dataset_transforms.SqlDataset(_str(driver), _str(source), _str(query), types)
    return compute


@kernel("DatasetToTFRecord")
def _dataset_to_tfrecord(ctx, input_ds, filename, compression_type):
    from tensorflux.lib.io.tf_record import TFRecordWriter

    writer = TFRecordWriter(_str(filename), _str(compression_type))
    try:
        for x in _whole_pass(ds_lib.as_dataset(input_ds)):
            v = np.asarray(x[0])
            if v.shape != () or v.dtype != object:
                raise errors.InvalidArgumentError(
                    None, None, "DatasetToTFRecord expects a dataset of scalar strings, "
                    f"got an element of dtype {v.dtype} and shape {v.shape}.")
            writer.write(v.item())
    finally:
        writer.close()


# ---- iterators ---------------------------------------------------------------------------

def _signature(node):
    return list(node.attrs.get("output_types", ())), list(node.attrs.get("output_shapes", ()))


@kernel_factory("IteratorV2")
def _iterator_v2(node):
    types, shapes = _signature(node)
    return resource_op(node, lambda name: IteratorResource(name, types, shapes))


@kernel_factory("OneShotIterator")
def _one_shot_iterator(node):
    types, shapes = _signature(node)
    make_handle = resource_op(node, lambda name: IteratorResource(name, types, shapes))
    factory = _function(node, "dataset_factory")

    def compute(ctx):
        h = make_handle(ctx)
        res = h.resource
        if not res.factory_done:
            with res.lock:
                build = not res.factory_done
                res.factory_done = True
            if build:
                (dataset,) = factory(ctx)([])
                res.set_dataset(ds_lib.as_dataset(dataset))
        return h
    return compute


def _iterator(ctx, handle) -> IteratorResource:
    return lookup(ctx, handle, IteratorResource, "IteratorResource")


@kernel("MakeIterator")
def _make_iterator(ctx, dataset, handle):
    _iterator(ctx, handle).set_dataset(ds_lib.as_dataset(dataset))


@kernel_factory("SerializeIterator")
def _serialize_iterator(node):
    policy = int(node.attrs.get("external_state_policy", 0))

    def compute(ctx, handle):
        dataset, position = _iterator(ctx, handle).state()
        return dataset_state.serialize(dataset, position, policy)
    return compute


@kernel("DeserializeIterator")
def _deserialize_iterator(ctx, handle, serialized):
    res = _iterator(ctx, handle)
    dataset, position = dataset_state.deserialize(serialized, ctx)
    res.set_dataset(dataset, position)


@kernel_factory("IteratorGetNext")
def _iterator_get_next(node):
    types, shapes = _signature(node)

    def compute(ctx, handle):
        x = _iterator(ctx, handle).get_next()
        if len(x) != len(types):
            raise errors.InvalidArgumentError(
                None, None, f"Number of components of the element ({len(x)}) does not match "
                f"the iterator's output_types ({len(types)})")
        out = []
        for i, (v, dt, shape) in enumerate(zip(x, types, shapes, strict=True)):
            v = np.asarray(v)
            if dt.numpy_dtype != v.dtype and dt.is_numpy_compatible:
                v = v.astype(dt.numpy_dtype)
            if shape is not None and not _fits(v.shape, shape):
                raise errors.InvalidArgumentError(
                    None, None, f"Component {i} of the element has shape {list(v.shape)}, "
                    f"which is incompatible with the iterator's output shape {shape}")
            out.append(v)
        return out[0] if len(out) == 1 else tuple(out)
    return compute


class OptionalValue:
    """What an optional variant holds: an element (its components) or None."""

    __slots__ = ("components",)

    def __init__(self, components):
        self.components = components


def _optional(value) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = value
    return out


def _held(optional) -> OptionalValue:
    v = np.asarray(optional, dtype=object).reshape(-1)[0] if isinstance(
        optional, np.ndarray) else optional
    if not isinstance(v, OptionalValue):
        raise errors.InvalidArgumentError(None, None, f"Expected an optional variant, got "
                                          f"{type(v).__name__}")
    return v


@kernel("OptionalFromValue")
def _optional_from_value(ctx, *components):
    return _optional(OptionalValue([np.asarray(c) for c in components]))


@kernel("OptionalNone")
def _optional_none(ctx):
    return _optional(OptionalValue(None))


@kernel("OptionalHasValue")
def _optional_has_value(ctx, optional):
    return np.asarray(_held(optional).components is not None)


@kernel_factory("OptionalGetValue")
def _optional_get_value(node):
    n = len(node.attrs["output_types"])

    def compute(ctx, optional):
        parts = _held(optional).components
        if parts is None:
            raise errors.InvalidArgumentError(None, None,
                                              "The optional variant does not have a value.")
        if len(parts) != n:
            raise errors.InvalidArgumentError(
                None, None, f"The optional has {len(parts)} components; {n} were expected.")
        return parts[0] if n == 1 else tuple(parts)
    return compute


@kernel("IteratorGetNextAsOptional")
def _iterator_get_next_as_optional(ctx, handle):
    try:
        x = _iterator(ctx, handle).get_next()
    except errors.OutOfRangeError:
        return _optional(OptionalValue(None))
    return _optional(OptionalValue([np.asarray(v) for v in x]))


def _fits(got: tuple, want) -> bool:
    if want is None or getattr(want, "ndims", 0) is None:
        return True
    dims = want.as_list() if hasattr(want, "as_list") else want
    if dims is None:
        return True
    return len(got) == len(dims) and all(w is None or w == g
                                         for g, w in zip(got, dims, strict=True))


@kernel("IteratorToStringHandle")
def _iterator_to_string_handle(ctx, handle):
    res = _iterator(ctx, handle)
    proto = resource_handle_pb2.ResourceHandleProto(
        device=ctx.device.name if ctx.device is not None else "",
        container=getattr(handle, "container", "") or ctx.resource_mgr.default_container,
        name=res.name, maybe_type_name=ITERATOR_TYPE_NAME)
    out = np.empty((), dtype=object)
    out[()] = proto.SerializeToString()
    return out


@kernel_factory("IteratorFromStringHandleV2")
def _iterator_from_string_handle(node):
    types, shapes = _signature(node)

    def compute(ctx, string_handle):
        proto = resource_handle_pb2.ResourceHandleProto()
        try:
            raw = np.asarray(string_handle, dtype=object).item()
            proto.ParseFromString(raw if isinstance(raw, bytes) else str(raw).encode())
        except Exception:  # noqa: BLE001 - any undecodable input is the same error
            proto = None
        if proto is None or proto.maybe_type_name != ITERATOR_TYPE_NAME:
            raise errors.InvalidArgumentError(
                None, None, "Could not parse string_handle as a valid ResourceHandle")
        res = ctx.resource_mgr.get(proto.container, proto.name)
        if not isinstance(res, IteratorResource):
            raise errors.NotFoundError(None, None, f"Resource {proto.container}/"
                                       f"{proto.name}/IteratorResource does not exist.")
        if types and [dtypes.as_dtype(t) for t in types] != res.types:
            want = ", ".join(t.name for t in types)
            got = ", ".join(t.name for t in res.types)
            raise errors.InvalidArgumentError(
                None, None, f"Iterator's output types ({got}) do not match the expected "
                f"output types ({want})")
        return _make_handle(proto.container, proto.name, ctx.device.name, res,
                            ctx.resource_mgr)
    return compute
