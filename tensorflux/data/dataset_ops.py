"""tf.data.Dataset (TF1 graph mode): each Dataset is one dataset op's `variant` output
plus the structure of its elements.

Functions given to map, filter, flat_map and interleave are traced once into a FuncGraph
(framework/func_graph.py) on placeholder arguments; the tensors they capture become the
op's `other_arguments`. At run time the traced body runs per element
(runtime/functions.py), or once per chunk of elements for a map of parse_single_example
(kernels/datasets._RowWiseMapIterator); the Python function is never called again.
"""

from __future__ import annotations

import numpy as np

from tensorflux.data import structure as st
from tensorflux.data.options import Options
from tensorflux.framework import (
    dtypes,
    nested_structure_coder,
    random_seed,
    tensor_shape,
    type_spec,
)
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.func_graph import FuncGraph, FunctionRef
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.operation import Tensor
from tensorflux.framework.sparse_tensor import SparseTensor, SparseTensorSpec, SparseTensorValue
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.framework.tensor_spec import TensorSpec
from tensorflux.kernels import datasets as ds_kernels
from tensorflux.ops import dataset_ops as _ops  # noqa: F401 - defines the dataset ops
from tensorflux.ops import parsing_ops
from tensorflux.protos import struct_pb2
from tensorflux.ragged.ragged_tensor import RaggedTensor
from tensorflux.ragged.ragged_tensor_spec import RaggedTensorSpec
from tensorflux.ragged.ragged_tensor_value import RaggedTensorValue
from tensorflux.runtime import functions as _functions  # noqa: F401 - runs traced bodies

AUTOTUNE = ds_kernels.AUTOTUNE
_INT64_MAX = np.iinfo(np.int64).max


def _int64(value, name: str) -> Tensor:
    return convert_to_tensor(value, dtype=dtypes.int64, name=name)


def _to_tensors(value):
    """`value`'s leaves as tensors or composite values (SparseTensors, RaggedTensors,
    datasets, Optionals); a list is one tensor, as in tf.data."""
    def convert(v):
        if isinstance(v, (Tensor, SparseTensor, RaggedTensor)) or \
                hasattr(type(v), "_type_spec"):
            return v
        if isinstance(v, SparseTensorValue):
            return SparseTensor.from_value(v)
        if isinstance(v, RaggedTensorValue):
            return RaggedTensor._from_value(v)
        return convert_to_tensor(v, name="component")
    return st.map_structure(convert, value)


# ---- composite components ----------------------------------------------------------
# A component that is not a Tensor travels through the dataset ops as one variant tensor
# (TensorFlow's encodings). A SparseTensor: its three parts, [3] per element; batching
# stacks them ([N, 3]) and DeserializeSparse turns [..., 3] back into one SparseTensor with
# those leading dimensions (dense shape: the largest of the batch's). A RaggedTensor (or a
# Tensor of a RaggedTensorSpec of ragged rank 0): RaggedTensorToVariant, a scalar per
# element; batching stacks them ([N]) and RaggedTensorFromVariant makes the leading
# dimensions ragged ones. A dataset or an Optional: its own variant. Functions and
# iterators decode their arguments and outputs; functions encode what they return.


def _encode(v, many: bool = False, spec=None):
    """A component value as the tensor the dataset ops carry (`many`: its first dimension
    as separate elements, for slicing; `spec`: the component's spec, when it is not the
    value's own, as for a Tensor carried as a RaggedTensorSpec)."""
    if isinstance(v, SparseTensor):
        fn = parsing_ops.serialize_many_sparse if many else parsing_ops.serialize_sparse
        return fn(v, out_type=dtypes.variant)
    if isinstance(v, RaggedTensor):
        return v._to_variant(batched_input=many)
    if isinstance(spec, RaggedTensorSpec):  # a Tensor as a ragged tensor of ragged rank 0
        with graph_lib.name_scope(None, "RaggedToVariant", [v]):
            return apply_op("RaggedTensorToVariant", rt_nested_splits=[], rt_dense_values=v,
                            Tsplits=spec.row_splits_dtype, batched_input=many)
    if isinstance(v, Tensor):
        return v
    return v._type_spec._to_components(v)  # a dataset or an Optional: its variant


def _decode(t: Tensor, spec):
    """The component value of `t`, as `spec` describes it."""
    if isinstance(spec, TensorSpec):
        return t
    if isinstance(spec, SparseTensorSpec):
        sp = parsing_ops.deserialize_sparse(t, spec.dtype, rank=spec.shape.ndims)
        if spec.shape.is_fully_defined():  # then the dense shape is known: a constant (TF)
            return SparseTensor(sp.indices, sp.values, convert_to_tensor(
                spec.shape.as_list(), dtype=dtypes.int64, name="dense_shape"))
        sp.set_shape(spec.shape)
        return sp
    if isinstance(spec, RaggedTensorSpec):
        out = RaggedTensor._from_variant(t, spec.dtype, spec.ragged_rank, -1,
                                         spec.row_splits_dtype)
        if spec.shape.ndims is not None:
            (out._set_shape if isinstance(out, RaggedTensor) else out.set_shape)(spec.shape)
        return out
    return spec._from_components(t)  # a DatasetSpec or an OptionalSpec


def _fn_name(fn) -> str:
    name = getattr(fn, "__name__", type(fn).__name__)
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)


class _Traced:
    """A traced function: its FunctionRef, captured outer tensors and result structure
    (leaves: tensors of the body, or Datasets built inside it)."""

    def __init__(self, fn, spec_structure, what: str):
        outer = graph_lib.get_default_graph()
        g = FuncGraph(f"__inference_Dataset_{what}_{_fn_name(fn)}", outer)
        with g.as_default():
            flat = []
            for i, spec in enumerate(st.flatten(spec_structure)):
                (carried,) = spec._flat_tensor_specs
                shape = carried.shape
                t = g.add_argument(carried.dtype, shape if shape.ndims is not None
                                   else None, f"args_{i}")
                t.set_shape(shape)
                flat.append(_decode(t, spec))
            args = st.pack(spec_structure, flat)
            result = fn(*args) if type(args) is tuple else fn(args)
            if isinstance(result, list):
                result = tuple(result)
            result = _to_tensors(result)
            g.set_outputs([_encode(v) for v in st.flatten(result)])
        self.ref = FunctionRef(g)
        self.captured = [outer_t for outer_t, _ in g.captures]
        self.result = result

    def output_specs(self):
        return st.map_structure(st.spec_of, self.result)


class DatasetV1(st.HasElementSignature):
    """A TF1 dataset: `_variant_tensor` (the dataset op's output) and `_structure`
    (its `element_spec`: a structure of TypeSpecs, one per element component)."""

    def __init__(self, variant_tensor: Tensor, structure):
        self._variant_tensor = variant_tensor
        self._structure = structure

    @property
    def _type_spec(self) -> DatasetSpec:
        return DatasetSpec(self._structure)

    def _flat_attrs(self) -> dict:
        return st.flat_attrs(self._structure)

    def _derive(self, op_type: str, structure=None, **inputs) -> DatasetV1:
        structure = self._structure if structure is None else structure
        v = apply_op(op_type, input_dataset=self._variant_tensor, **st.flat_attrs(structure),
                     **inputs)
        return DatasetV1(v, structure)

    def __repr__(self) -> str:
        return f"<DatasetV1 shapes: {self.output_shapes}, types: {self.output_types}>"

    # ---- sources -------------------------------------------------------------------------
    @staticmethod
    def from_tensor_slices(tensors) -> DatasetV1:
        """Elements are the slices of `tensors` along their first dimension."""
        with graph_lib.name_scope("TensorSliceDataset"):
            tensors = _to_tensors(tensors)
        flat = st.flatten(tensors)
        first = None
        for t in flat:
            if t.shape.ndims == 0:
                raise ValueError(f"Unbatching a tensor is only supported for rank >= 1: {t}")
            dim = t.shape.as_list()[0] if t.shape.ndims else None
            if dim is not None and first is not None and dim != first:
                raise ValueError(f"Dimensions {first} and {dim} are not compatible")
            first = dim if dim is not None else first
        specs = st.map_structure(lambda t: st.spec_of(t)._unbatch(), tensors)
        with graph_lib.name_scope("TensorSliceDataset"):
            flat = [_encode(t, many=True) for t in flat]
        v = apply_op("TensorSliceDataset", components=flat,
                     output_shapes=st.flat_attrs(specs)["output_shapes"])
        return DatasetV1(v, specs)

    @staticmethod
    def from_sparse_tensor_slices(sparse_tensor) -> DatasetV1:
        """Elements are the rows of `sparse_tensor` (SparseTensors of one rank less)."""
        if not isinstance(sparse_tensor, (SparseTensor, SparseTensorValue)):
            raise TypeError(f"`sparse_tensor` must be a `tf.sparse.SparseTensor` object. "
                            f"Was {sparse_tensor}.")
        return DatasetV1.from_tensor_slices(sparse_tensor)

    @staticmethod
    def from_tensors(tensors) -> DatasetV1:
        """One element: `tensors`."""
        with graph_lib.name_scope("TensorDataset"):
            tensors = _to_tensors(tensors)
        specs = st.map_structure(st.spec_of, tensors)
        with graph_lib.name_scope("TensorDataset"):
            flat = [_encode(t) for t in st.flatten(tensors)]
        v = apply_op("TensorDataset", components=flat,
                     output_shapes=st.flat_attrs(specs)["output_shapes"])
        return DatasetV1(v, specs)

    @staticmethod
    def range(*args, output_type=dtypes.int64) -> DatasetV1:  # noqa: A003
        """`range(stop)`, `range(start, stop)` or `range(start, stop, step)` as int64."""
        if not 1 <= len(args) <= 3:
            raise ValueError(f"Invalid arguments to RangeDataset: {args}")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (
            (args[0], args[1], 1) if len(args) == 2 else args)
        output_type = dtypes.as_dtype(output_type)
        v = apply_op("RangeDataset", start=_int64(start, "start"), stop=_int64(stop, "stop"),
                     step=_int64(step, "step"), output_types=[output_type],
                     output_shapes=[tensor_shape.TensorShape([])])
        return DatasetV1(v, TensorSpec([], output_type))

    @staticmethod
    def zip(datasets) -> DatasetV1:  # noqa: A003
        """Elements are structures (like `datasets`) of the datasets' elements."""
        flat = st.flatten(datasets)
        for d in flat:
            if not isinstance(d, DatasetV1):
                raise TypeError(f"The argument to `Dataset.zip()` must be a (nested) "
                                f"structure of `Dataset` objects, got {type(d).__name__}")
        structure = st.map_structure(lambda d: d._structure, datasets)
        v = apply_op("ZipDataset", input_datasets=[d._variant_tensor for d in flat],
                     **st.flat_attrs(structure))
        return DatasetV1(v, structure)

    @staticmethod
    def from_generator(generator, output_types=None, output_shapes=None, args=None,
                       output_signature=None, name=None) -> DatasetV1:
        """Elements yielded by `generator(*args)` (called anew for every pass), of
        `output_signature` (a structure of TensorSpec, SparseTensorSpec and
        RaggedTensorSpec) or of TF1's `output_types` and `output_shapes`. `args` are
        converted to tensors here and evaluated when an iterator starts a pass (placeholders
        among them are fed to the iterator's initializer); the generator gets their NumPy
        values: arrays, NumPy scalars, strings as `bytes`. See data/generator.py.

        Raises:
          TypeError: `generator` is not callable; both or neither of `output_types` and
            `output_signature`; a leaf of `output_signature` that is no TypeSpec.
        """
        from tensorflux.data import generator as generator_lib  # it imports this module

        return generator_lib.from_generator(generator, output_types, output_shapes, args,
                                            output_signature)

    # ---- transformations -----------------------------------------------------------------
    def map(self, map_func, num_parallel_calls=None, deterministic=None) -> DatasetV1:  # noqa: A003
        """`map_func` applied to each element (in order, also with num_parallel_calls)."""
        traced = _Traced(map_func, self._structure, "map")
        specs = traced.output_specs()
        if num_parallel_calls is None:
            return self._derive("MapDataset", specs, other_arguments=traced.captured,
                                f=traced.ref)
        return self._derive("ParallelMapDatasetV2", specs, other_arguments=traced.captured,
                            f=traced.ref,
                            num_parallel_calls=_int64(num_parallel_calls,
                                                      "num_parallel_calls"))

    def filter(self, predicate) -> DatasetV1:  # noqa: A003
        """The elements for which `predicate` is True."""
        traced = _Traced(predicate, self._structure, "filter")
        r = traced.result
        if not isinstance(r, Tensor) or r.dtype.base_dtype != dtypes.bool or \
                not r.shape.is_compatible_with(tensor_shape.TensorShape([])):
            raise ValueError("`predicate` return type must be convertible to a scalar "
                             f"boolean tensor. Was {r}.")
        return self._derive("FilterDataset", other_arguments=traced.captured,
                            predicate=traced.ref)

    def _dataset_fn(self, fn, what: str) -> _Traced:
        traced = _Traced(fn, self._structure, what)
        if not isinstance(traced.result, DatasetV1):
            raise TypeError(f"`map_func` must return a `Dataset` object. Got "
                            f"{type(traced.result)}.")
        return traced

    def flat_map(self, map_func) -> DatasetV1:
        """The elements of the datasets `map_func` returns, one after another."""
        traced = self._dataset_fn(map_func, "flat_map")
        return self._derive("FlatMapDataset", traced.result._structure,
                            other_arguments=traced.captured, f=traced.ref)

    def interleave(self, map_func, cycle_length=None, block_length=None,
                   num_parallel_calls=None, deterministic=None) -> DatasetV1:
        """The elements of `cycle_length` datasets of `map_func` at a time, `block_length`
        from each in turn (TensorFlow's order)."""
        traced = self._dataset_fn(map_func, "interleave")
        return self._derive(
            "InterleaveDataset", traced.result._structure, other_arguments=traced.captured,
            f=traced.ref,
            cycle_length=_int64(AUTOTUNE if cycle_length is None else cycle_length,
                                "cycle_length"),
            block_length=_int64(1 if block_length is None else block_length, "block_length"))

    def batch(self, batch_size, drop_remainder: bool = False) -> DatasetV1:
        """Consecutive elements stacked `batch_size` at a time."""
        size = _int64(batch_size, "batch_size")
        static = _constant(size) if drop_remainder is True else None
        specs = st.map_structure(lambda s: s._batch(static), self._structure)
        return self._derive("BatchDatasetV2", specs, batch_size=size,
                            drop_remainder=convert_to_tensor(drop_remainder,
                                                             dtype=dtypes.bool,
                                                             name="drop_remainder"))

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None,
                     drop_remainder: bool = False) -> DatasetV1:
        """Batches with each component padded to `padded_shapes` (None/-1: the batch's
        longest) with `padding_values` (default 0, or b"" for strings)."""
        flat_specs = st.flatten(self._structure)
        for s in flat_specs:
            if not isinstance(s, TensorSpec):
                raise TypeError("`padded_batch` is only supported for datasets that produce "
                                "tensor elements but type spec of elements in the input "
                                f"dataset is not a subclass of TensorSpec: `{s}`.")
        if padded_shapes is None:
            given = [s.shape for s in flat_specs]
        else:
            given = st.flatten_up_to(self._structure, padded_shapes)
        # A shape given as an int64 tensor is known at run time only.
        shapes = [tensor_shape.TensorShape([None] * (p.shape.as_list()[0] or 0))
                  if isinstance(p, Tensor) else tensor_shape.as_shape(p) for p in given]
        if padding_values is None:
            values = [b"" if s.dtype == dtypes.string else 0 for s in flat_specs]
        else:
            values = st.flatten_up_to(self._structure, padding_values)
        size = _int64(batch_size, "batch_size")
        static = _constant(size) if drop_remainder is True else None
        out_specs = [TensorSpec(tensor_shape.TensorShape([static]).concatenate(p), s.dtype)
                     for s, p in zip(flat_specs, shapes, strict=True)]
        v = apply_op(
            "PaddedBatchDatasetV2", input_dataset=self._variant_tensor, batch_size=size,
            padded_shapes=[g if isinstance(g, Tensor) else
                           _int64([-1 if d is None else d for d in p.as_list()],
                                  "padded_shapes") for g, p in zip(given, shapes, strict=True)],
            padding_values=[convert_to_tensor(pv, dtype=s.dtype, name="padding_value")
                            for pv, s in zip(values, flat_specs, strict=True)],
            drop_remainder=convert_to_tensor(drop_remainder, dtype=dtypes.bool,
                                             name="drop_remainder"),
            output_shapes=[s.shape for s in out_specs])
        return DatasetV1(v, st.pack(self._structure, out_specs))

    def unbatch(self) -> DatasetV1:
        """The slices of each element along its first dimension (a SparseTensor's slices
        all take the batch's dense shape, as in TensorFlow).

        Raises:
          ValueError: a component of rank 0.
        """
        specs = st.map_structure(lambda s: s._unbatch(), self._structure)
        mine = self._structure
        if not any(isinstance(s, (SparseTensorSpec, RaggedTensorSpec))
                   for s in st.flatten(mine)):
            return self._derive("UnbatchDataset", specs)

        def per_row(*x):
            """Each SparseTensor or RaggedTensor re-encoded as one variant per row."""
            flat = st.flatten(x[0] if len(x) == 1 else x)
            return st.pack(mine, [
                _encode(v, many=True, spec=s)
                if isinstance(s, (SparseTensorSpec, RaggedTensorSpec)) else v
                for v, s in zip(flat, st.flatten(mine), strict=True)])

        traced = _Traced(per_row, mine, "unbatch")
        rows = self._derive("MapDataset", other_arguments=traced.captured, f=traced.ref)
        return rows._derive("UnbatchDataset", specs)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None) -> DatasetV1:
        """Elements in a random order drawn through a buffer of `buffer_size`."""
        seed, seed2 = random_seed.get_seed(seed)
        return self._derive(
            "ShuffleDataset", buffer_size=_int64(buffer_size, "buffer_size"),
            seed=_int64(seed or 0, "seed"), seed2=_int64(seed2 or 0, "seed2"),
            reshuffle_each_iteration=True if reshuffle_each_iteration is None
            else bool(reshuffle_each_iteration))

    def repeat(self, count=None) -> DatasetV1:
        return self._derive("RepeatDataset", count=_int64(-1 if count is None else count,
                                                          "count"))

    def take(self, count) -> DatasetV1:
        return self._derive("TakeDataset", count=_int64(count, "count"))

    def skip(self, count) -> DatasetV1:
        return self._derive("SkipDataset", count=_int64(count, "count"))

    def prefetch(self, buffer_size) -> DatasetV1:
        """Elements produced ahead by a background thread, up to `buffer_size`."""
        return self._derive("PrefetchDataset",
                            buffer_size=_int64(buffer_size, "buffer_size"))

    def cache(self, filename: str = "") -> DatasetV1:
        return self._derive("CacheDataset",
                            filename=convert_to_tensor(filename, dtype=dtypes.string,
                                                       name="filename"))

    def snapshot(self, path, compression="AUTO", reader_func=None, shard_func=None,
                 name=None) -> DatasetV1:
        """The elements, written under `path` by the first complete pass and read from
        there by later ones (data/snapshot.py)."""
        from tensorflux.data import snapshot  # snapshot imports this module

        return snapshot.snapshot_dataset(self, path, compression, reader_func, shard_func)

    def concatenate(self, dataset) -> DatasetV1:
        """This dataset's elements, then `dataset`'s."""
        if not st.same_structure(self._structure, dataset._structure) or \
                st.flatten(self.output_types) != st.flatten(dataset.output_types):
            raise TypeError(f"Two datasets to concatenate have different types "
                            f"{self.output_types} and {dataset.output_types}")
        specs = st.pack(self._structure, [
            st.with_shape(a, st.most_specific_compatible(a.shape, b.shape))
            for a, b in zip(st.flatten(self._structure), st.flatten(dataset._structure),
                            strict=True)])
        return self._derive("ConcatenateDataset", specs,
                            another_dataset=dataset._variant_tensor)

    def enumerate(self, start=0) -> DatasetV1:  # noqa: A003
        return DatasetV1.zip((DatasetV1.range(start, _INT64_MAX), self))

    def shard(self, num_shards, index) -> DatasetV1:
        """Every `num_shards`-th element, from the `index`-th on."""
        return self._derive("ShardDataset", num_shards=_int64(num_shards, "num_shards"),
                            index=_int64(index, "index"))

    def unique(self) -> DatasetV1:
        """The elements not seen before (one int32, int64 or string component)."""
        flat = st.flatten(self._structure)
        if len(flat) != 1 or not isinstance(flat[0], TensorSpec) or \
                flat[0].dtype not in (dtypes.int32, dtypes.int64, dtypes.string):
            raise TypeError("`tf.data.Dataset.unique` does not support type "
                            f"{self.output_types}: one tf.int32, tf.int64 or tf.string "
                            "component only.")
        return self._derive("UniqueDataset")

    def ignore_errors(self, log_warning: bool = False) -> DatasetV1:
        """The elements whose production did not fail."""
        return self._derive("IgnoreErrorsDataset", log_warning=bool(log_warning))

    def take_while(self, predicate) -> DatasetV1:
        """The elements until `predicate` is first False."""
        traced = _Traced(predicate, self._structure, "take_while")
        _check_predicate(traced.result, "predicate")
        return self._derive("TakeWhileDataset", other_arguments=traced.captured,
                            predicate=traced.ref)

    def scan(self, initial_state, scan_func) -> DatasetV1:
        """Elements `output` of `scan_func(state, element) -> (new_state, output)`."""
        state, traced = _trace_stateful(self, initial_state, scan_func, "scan", pairs=True)
        specs = st.map_structure(st.spec_of, traced.result[1])
        return self._derive("ScanDataset", specs, initial_state=st.flatten(state),
                            other_arguments=traced.captured, f=traced.ref,
                            Tstate=[t.dtype for t in st.flatten(state)],
                            preserve_cardinality=True)

    def reduce(self, initial_state, reduce_func):
        """The state after `reduce_func(state, element) -> new_state` over every element
        (tensors of the structure of `initial_state`)."""
        state, traced = _trace_stateful(self, initial_state, reduce_func, "reduce")
        specs = st.flatten(st.map_structure(st.spec_of, traced.result))
        out = apply_op("ReduceDataset", input_dataset=self._variant_tensor,
                       initial_state=st.flatten(state), other_arguments=traced.captured,
                       f=traced.ref, Tstate=[t.dtype for t in st.flatten(state)],
                       output_types=[s.dtype for s in specs],
                       output_shapes=[s.shape for s in specs])
        return st.pack(traced.result, list(out) if isinstance(out, (list, tuple)) else [out])

    def window(self, size, shift=None, stride=1, drop_remainder: bool = False) -> DatasetV1:
        """Windows of `size` elements (every `stride`-th) starting every `shift` (default
        `size`) elements: each element is a structure of datasets, one per component."""
        size_t = _int64(size, "size")
        specs = st.map_structure(DatasetSpec, self._structure)
        return self._derive(
            "WindowDataset", specs, size=size_t,
            shift=size_t if shift is None else _int64(shift, "shift"),
            stride=_int64(stride, "stride"),
            drop_remainder=convert_to_tensor(drop_remainder, dtype=dtypes.bool,
                                             name="drop_remainder"))

    def group_by_window(self, key_func, reduce_func, window_size=None,
                        window_size_func=None) -> DatasetV1:
        """Elements grouped by `key_func(element)` (int64), each group of `window_size`
        (or `window_size_func(key)`) elements, and each group left at the end, given to
        `reduce_func(key, dataset)`; the output is the datasets' elements."""
        if (window_size is None) == (window_size_func is None):
            raise ValueError("Either the `window_size` argument or the `window_size_func` "
                             "argument must be specified.")
        if window_size_func is None:
            def window_size_func(_key):
                return convert_to_tensor(window_size, dtype=dtypes.int64)
        key = _Traced(key_func, self._structure, "key_func")
        _check_scalar(key.result, dtypes.int64, "key_func")
        scalar = TensorSpec([], dtypes.int64)
        size = _Traced(window_size_func, scalar, "window_size_func")
        _check_scalar(size.result, dtypes.int64, "window_size_func")
        red = _Traced(reduce_func, (scalar, DatasetSpec(self._structure)),
                      "reduce_func")
        if not isinstance(red.result, DatasetV1):
            raise TypeError("`reduce_func` must return a `Dataset` object.")
        return self._derive(
            "GroupByWindowDataset", red.result._structure,
            key_func_other_arguments=key.captured, reduce_func_other_arguments=red.captured,
            window_size_func_other_arguments=size.captured, key_func=key.ref,
            reduce_func=red.ref, window_size_func=size.ref)

    def bucket_by_sequence_length(self, element_length_func, bucket_boundaries,
                                  bucket_batch_sizes, padded_shapes=None,
                                  padding_values=None, pad_to_bucket_boundary=False,
                                  no_padding=False, drop_remainder=False) -> DatasetV1:
        """Elements batched by length buckets (see data/experimental.py)."""
        from tensorflux.data import experimental  # experimental imports this module

        return self.apply(experimental.bucket_by_sequence_length(
            element_length_func, bucket_boundaries, bucket_batch_sizes, padded_shapes,
            padding_values, pad_to_bucket_boundary, no_padding, drop_remainder))

    def ragged_batch(self, batch_size, drop_remainder=False, row_splits_dtype=dtypes.int64,
                     name=None) -> DatasetV1:
        """Batches of `batch_size` elements whose components of varying shape become
        RaggedTensors (see data/ragged_batch.py)."""
        from tensorflux.data import ragged_batch as ragged_lib  # it imports this module

        return ragged_lib.ragged_batch(self, batch_size, drop_remainder, row_splits_dtype)

    def sparse_batch(self, batch_size, row_shape) -> DatasetV1:
        """Batches of one dense component as SparseTensors of dense shape
        [batch_size, *row_shape]."""
        spec = st.flatten(self._structure)[0]
        row = tensor_shape.as_shape(row_shape) if not isinstance(row_shape, Tensor) else \
            tensor_shape.unknown_shape()
        out = SparseTensorSpec(tensor_shape.TensorShape([None]).concatenate(row), spec.dtype)
        v = apply_op("DenseToSparseBatchDataset", input_dataset=self._variant_tensor,
                     batch_size=_int64(batch_size, "batch_size"),
                     row_shape=_int64(row_shape, "row_shape"), **st.flat_attrs(out))
        return DatasetV1(v, out)

    def cardinality(self) -> Tensor:
        """The number of elements as an int64 scalar: INFINITE_CARDINALITY (-1) or
        UNKNOWN_CARDINALITY (-2) where it is not known without reading them."""
        return apply_op("DatasetCardinality", input_dataset=self._variant_tensor)

    def get_single_element(self, name=None):
        """The dataset's one element (InvalidArgumentError if it has none or more)."""
        return element_op("DatasetToSingleElement", self._structure, name,
                          dataset=self._variant_tensor)

    @staticmethod
    def random(seed=None) -> DatasetV1:
        """Endless pseudo-random int64 scalars."""
        seed, seed2 = random_seed.get_seed(seed)
        spec = TensorSpec([], dtypes.int64)
        v = apply_op("RandomDataset", seed=_int64(seed or 0, "seed"),
                     seed2=_int64(seed2 or 0, "seed2"), output_types=[dtypes.int64],
                     output_shapes=[spec.shape])
        return DatasetV1(v, spec)

    @staticmethod
    def counter(start=0, step=1, dtype=dtypes.int64) -> DatasetV1:
        """start, start + step, ... without end, as `dtype`."""
        dtype = dtypes.as_dtype(dtype)
        ds = DatasetV1.range(start, _INT64_MAX if _positive(step) else -_INT64_MAX - 1,
                             step)
        return ds if dtype == dtypes.int64 else ds.map(
            lambda x: _cast(x, dtype))

    @staticmethod
    def choose_from_datasets(datasets, choice_dataset,
                             stop_on_empty_dataset: bool = True) -> DatasetV1:
        """The next element of `datasets[i]` for each int64 `i` of `choice_dataset`."""
        return _directed_interleave(datasets, choice_dataset, stop_on_empty_dataset)

    @staticmethod
    def sample_from_datasets(datasets, weights=None, seed=None,
                             stop_on_empty_dataset: bool = False) -> DatasetV1:
        """Elements of `datasets` picked at random with `weights` (default uniform)."""
        from tensorflux.data import experimental  # experimental imports this module

        return experimental.sample_from_datasets(datasets, weights, seed,
                                                 stop_on_empty_dataset)

    @staticmethod
    def list_files(file_pattern, shuffle=None, seed=None) -> DatasetV1:
        """The files matching `file_pattern` (one pattern or several), sorted, in a
        random order unless `shuffle=False`; InvalidArgumentError at run time when none
        match."""
        from tensorflux.ops import (
            array_ops,
            comparison_ops,
            io_ops,
            logging_ops,
            math_ops,
            string_ops,
        )

        with graph_lib.name_scope("list_files"):
            pattern = convert_to_tensor(file_pattern, dtype=dtypes.string,
                                        name="file_pattern")
            names = io_ops.matching_files(pattern)
            count = array_ops.size(names, out_type=dtypes.int64)
            shown = pattern if pattern.shape.ndims == 0 else \
                string_ops.reduce_join(pattern, separator=", ")
            check = logging_ops.Assert(comparison_ops.greater(count, 0),
                                       ["No files matched pattern: ", shown], summarize=1,
                                       name="assert_not_empty")
            with graph_lib.get_default_graph().control_dependencies([check]):
                names = array_ops.identity(names)
        ds = DatasetV1.from_tensor_slices(names)
        if shuffle is None or shuffle:
            ds = ds.shuffle(math_ops.maximum(count, 1), seed=seed)
        return ds

    def filter_with_legacy_function(self, predicate) -> DatasetV1:
        return self.filter(predicate)

    def map_with_legacy_function(self, map_func, num_parallel_calls=None,
                                 deterministic=None) -> DatasetV1:
        return self.map(map_func, num_parallel_calls, deterministic)

    def with_options(self, options) -> DatasetV1:
        """The same dataset with `options` merged into its options (tf.data.Options;
        recorded, see data/options.py)."""
        out = DatasetV1(self._variant_tensor, self._structure)
        mine = getattr(self, "_options", None)
        out._options = options if mine is None else mine.merge(options)
        return out

    def options(self):
        """The options set with `with_options` (a fresh tf.data.Options if none)."""
        return getattr(self, "_options", None) or Options()

    def apply(self, transformation_func) -> DatasetV1:
        dataset = transformation_func(self)
        if not isinstance(dataset, DatasetV1):
            raise TypeError("`transformation_func` must return a Dataset.")
        return dataset

    # ---- iterators -----------------------------------------------------------------------
    def make_one_shot_iterator(self):
        from tensorflux.data import iterator_ops  # iterator_ops imports this module

        return iterator_ops.make_one_shot_iterator(self)

    def make_initializable_iterator(self, shared_name=None):
        from tensorflux.data import iterator_ops  # iterator_ops imports this module

        return iterator_ops.make_initializable_iterator(self, shared_name)


Dataset = DatasetV1


class DatasetSpec(type_spec.TypeSpec):
    """The type of a dataset (`tf.data.DatasetSpec`): its `element_spec` and, for a batch of
    datasets, `dataset_shape`. A dataset component travels as its variant tensor."""

    __slots__ = ("_element_spec", "_dataset_shape")
    _batchable = True

    def __init__(self, element_spec, dataset_shape=()):
        self._element_spec = element_spec
        self._dataset_shape = tensor_shape.as_shape(dataset_shape)

    value_type = property(lambda self: DatasetV1)
    element_spec = property(lambda self: self._element_spec)
    shape = property(lambda self: self._dataset_shape)

    def _serialize(self) -> tuple:
        return (self._element_spec, self._dataset_shape)

    @staticmethod
    def from_value(value) -> DatasetSpec:
        return DatasetSpec(value.element_spec)

    _component_specs = property(
        lambda self: TensorSpec(self._dataset_shape, dtypes.variant))

    def _to_components(self, value):
        return value._variant_tensor

    def _from_components(self, components):
        return DatasetV1(components, self._element_spec)

    _flat_tensor_specs = property(
        lambda self: [TensorSpec(self._dataset_shape, dtypes.variant)])

    def _batch(self, batch_size) -> DatasetSpec:
        return DatasetSpec(self._element_spec,
                           tensor_shape.TensorShape([batch_size]).concatenate(
                               self._dataset_shape))

    def _unbatch(self) -> DatasetSpec:
        if self._dataset_shape.ndims == 0:
            raise ValueError("Slicing dataset elements is not supported for rank 0.")
        return DatasetSpec(self._element_spec, self._dataset_shape[1:])


nested_structure_coder.register_type_spec(DatasetSpec,
                                          struct_pb2.TypeSpecProto.DATA_DATASET_SPEC)


def element_op(op_type: str, structure, name=None, **inputs):
    """An op whose outputs are one element of `structure` (IteratorGetNext, ...), its
    outputs decoded into that structure."""
    flat = st.flatten(structure)
    out = apply_op(op_type, **st.flat_attrs(structure), name=name, **inputs)
    out = list(out) if isinstance(out, (list, tuple)) else [out]
    return st.pack(structure, [_decode(t, s) for t, s in zip(out, flat, strict=True)])


def _constant(t: Tensor):
    """The static value of a Const int64 tensor, else None."""
    if t.op.type == "Const":
        return int(np.asarray(t.op._attrs["value"]))
    return None


def _check_scalar(t, dtype, what: str) -> None:
    if not isinstance(t, Tensor) or t.dtype.base_dtype != dtype or \
            not t.shape.is_compatible_with(tensor_shape.TensorShape([])):
        raise ValueError(f"`{what}` must return a scalar {dtype.name} tensor, got {t}.")


def _check_predicate(t, what: str) -> None:
    if not isinstance(t, Tensor) or t.dtype.base_dtype != dtypes.bool or \
            not t.shape.is_compatible_with(tensor_shape.TensorShape([])):
        raise ValueError(f"`{what}` return type must be convertible to a scalar boolean "
                         f"tensor. Was {t}.")


def _trace_stateful(ds: DatasetV1, initial_state, fn, what: str, pairs: bool = False):
    """(state tensors, traced `fn(state, element)`), `fn` returning the new state (or
    `(new state, output)` with `pairs`). A new state of another structure or dtype is a
    TypeError; one of another static shape traces `fn` again with the shapes the two
    have in common (TensorFlow's shape relaxation)."""
    with graph_lib.name_scope(what):
        state = _to_tensors(initial_state)
    specs = st.map_structure(st.spec_of, state)
    for _ in range(8):
        traced = _Traced(fn, (specs, ds._structure), what)
        result = traced.result
        if pairs:
            if not (isinstance(result, tuple) and len(result) == 2):
                raise TypeError(f"The `{what}_func` must return a (new_state, "
                                f"output_element) tuple, got {result}.")
            result = result[0]
        if not st.same_structure(specs, result):
            raise TypeError(f"The element structure of the new state of `{what}_func` "
                            f"({result}) does not match the initial state {specs}.")
        new = st.flatten(st.map_structure(st.spec_of, result))
        old = st.flatten(specs)
        for a, b in zip(old, new, strict=True):
            if type(a) is not type(b) or a.dtype != b.dtype:
                raise TypeError(f"The element types for the new state must match the "
                                f"initial state. Expected {a._to_legacy_output_types()}; got "
                                f"{b._to_legacy_output_types()}.")
        relaxed = [st.with_shape(a, st.most_specific_compatible(a.shape, b.shape))
                   if a.shape != b.shape else a for a, b in zip(old, new, strict=True)]
        if all(r.shape == a.shape for r, a in zip(relaxed, old, strict=True)):
            return state, traced
        specs = st.pack(specs, relaxed)
    raise TypeError(f"The shapes of the state of `{what}_func` did not settle.")


def _positive(step) -> bool:
    return not isinstance(step, Tensor) and int(step) > 0


def _cast(x, dtype):
    from tensorflux.ops import math_ops  # math_ops is heavy; only counters cast

    return math_ops.cast(x, dtype)


def _directed_interleave(datasets, choice_dataset, stop_on_empty: bool) -> DatasetV1:
    """DirectedInterleaveDataset: `choice_dataset`'s int64 scalars pick the input."""
    datasets = list(datasets)
    if not datasets:
        raise ValueError("Invalid `datasets`. `datasets` should not be empty.")
    first = datasets[0]
    for d in datasets[1:]:
        if not st.same_structure(first._structure, d._structure) or \
                st.flatten(first.output_types) != st.flatten(d.output_types):
            raise TypeError(f"Incompatible dataset elements: {first.output_types} vs. "
                            f"{d.output_types}")
    spec = st.flatten(choice_dataset._structure)
    if len(spec) != 1 or not isinstance(spec[0], TensorSpec) or \
            spec[0].dtype != dtypes.int64 or \
            not spec[0].shape.is_compatible_with(tensor_shape.TensorShape([])):
        raise TypeError("Invalid `choice_dataset`. Elements of `choice_dataset` must be "
                        "scalar of `tf.int64` dtype.")
    structure = st.pack(first._structure, [
        st.with_shape(s, _common_shape([st.flatten(d._structure)[i].shape
                                        for d in datasets]))
        for i, s in enumerate(st.flatten(first._structure))])
    v = apply_op("DirectedInterleaveDataset",
                 selector_input_dataset=choice_dataset._variant_tensor,
                 data_input_datasets=[d._variant_tensor for d in datasets],
                 **st.flat_attrs(structure), stop_on_empty_dataset=bool(stop_on_empty))
    return DatasetV1(v, structure)


def _common_shape(shapes: list) -> tensor_shape.TensorShape:
    out = shapes[0]
    for s in shapes[1:]:
        out = st.most_specific_compatible(out, s)
    return out
