"""Dataset and iterator ops (tf.data in graph mode), with TensorFlow's names and attrs.

A dataset op outputs a scalar `variant`: at run time a description of the dataset
(kernels/datasets.py), cheap to make, read only when an iterator is made from it. Ops
that apply a function (MapDataset, FilterDataset, FlatMapDataset, InterleaveDataset,
ParallelMapDatasetV2, OneShotIterator) carry it in a `func` attr whose body is a traced
FuncGraph (framework/func_graph.py); the tensors the body captured are the op's
`other_arguments`. Iterator ops hold an IteratorResource in the device's ResourceMgr:
IteratorV2 / OneShotIterator / IteratorFromStringHandleV2 give its handle, MakeIterator
starts a pass over a dataset, IteratorGetNext returns the next element (OutOfRangeError at
the end).

The user-facing library (tf.data.Dataset, tf.data.Iterator) is tensorflux/data/.
Datasets and iterators have no gradients.
"""

from __future__ import annotations

from tensorflux.framework import common_shapes, tensor_shape
from tensorflux.framework.op_registry import define_op, not_differentiable

TensorShape = tensor_shape.TensorShape
scalar = common_shapes.scalar

_TYPED = ["output_types: list(type) >= 1", "output_shapes: list(shape) >= 1",
          "metadata: string = ''"]
_FUNC = ["Targuments: list(type) >= 0"]


def _element_shapes(op):
    """IteratorGetNext: the shapes its `output_shapes` attr promises."""
    return [tensor_shape.unknown_shape() if s is None else TensorShape(s)
            for s in op._attrs["output_shapes"]]


def _no_outputs(op):
    return []


# ---- sources -----------------------------------------------------------------------------
define_op("TensorSliceDataset", inputs=["components: Toutput_types"],
          outputs=["handle: variant"],
          attrs=["Toutput_types: list(type) >= 1", "output_shapes: list(shape) >= 1",
                 "is_files: bool = false", "metadata: string = ''",
                 "replicate_on_split: bool = false"], shape_fn=scalar, stateful=True)
define_op("TensorDataset", inputs=["components: Toutput_types"], outputs=["handle: variant"],
          attrs=["Toutput_types: list(type) >= 1", "output_shapes: list(shape) >= 1",
                 "metadata: string = ''"], shape_fn=scalar, stateful=True)
define_op("RangeDataset", inputs=["start: int64", "stop: int64", "step: int64"],
          outputs=["handle: variant"], attrs=_TYPED + ["replicate_on_split: bool = false"],
          shape_fn=scalar, stateful=True)
define_op("TFRecordDataset",
          inputs=["filenames: string", "compression_type: string", "buffer_size: int64"],
          outputs=["handle: variant"], attrs=["metadata: string = ''"], shape_fn=scalar,
          stateful=True)
define_op("TextLineDataset",
          inputs=["filenames: string", "compression_type: string", "buffer_size: int64"],
          outputs=["handle: variant"], attrs=["metadata: string = ''"], shape_fn=scalar,
          stateful=True)
define_op("FixedLengthRecordDatasetV2",
          inputs=["filenames: string", "header_bytes: int64", "record_bytes: int64",
                  "footer_bytes: int64", "buffer_size: int64", "compression_type: string"],
          outputs=["handle: variant"], attrs=["metadata: string = ''"], shape_fn=scalar,
          stateful=True)
# A Python generator's elements (tf.data.Dataset.from_generator): the process-local
# callable registered under `token` (data/dataset_ops.py) runs on the reading thread, called
# with the values of `args` (from_generator's `args=`, evaluated when the iterator starts).
define_op("PyGeneratorDataset", inputs=["args: Targs"], outputs=["handle: variant"],
          attrs=["token: string", "Targs: list(type) >= 0"] + _TYPED, shape_fn=scalar,
          stateful=True)

# ---- transformations ---------------------------------------------------------------------
define_op("MapDataset", inputs=["input_dataset: variant", "other_arguments: Targuments"],
          outputs=["handle: variant"],
          attrs=["f: func"] + _FUNC + _TYPED[:2] + [
              "use_inter_op_parallelism: bool = true", "preserve_cardinality: bool = false",
              "force_synchronous: bool = false", "metadata: string = ''"], shape_fn=scalar)
define_op("ParallelMapDatasetV2",
          inputs=["input_dataset: variant", "other_arguments: Targuments",
                  "num_parallel_calls: int64"], outputs=["handle: variant"],
          attrs=["f: func"] + _FUNC + _TYPED[:2] + [
              "use_inter_op_parallelism: bool = true", "deterministic: string = 'default'",
              "preserve_cardinality: bool = false", "use_unbounded_threadpool: bool = false",
              "metadata: string = ''"], shape_fn=scalar)
define_op("FilterDataset", inputs=["input_dataset: variant", "other_arguments: Targuments"],
          outputs=["handle: variant"], attrs=["predicate: func"] + _FUNC + _TYPED,
          shape_fn=scalar)
define_op("FlatMapDataset", inputs=["input_dataset: variant", "other_arguments: Targuments"],
          outputs=["handle: variant"], attrs=["f: func"] + _FUNC + _TYPED, shape_fn=scalar)
define_op("InterleaveDataset",
          inputs=["input_dataset: variant", "other_arguments: Targuments",
                  "cycle_length: int64", "block_length: int64"],
          outputs=["handle: variant"], attrs=["f: func"] + _FUNC + _TYPED, shape_fn=scalar)
define_op("BatchDatasetV2",
          inputs=["input_dataset: variant", "batch_size: int64", "drop_remainder: bool"],
          outputs=["handle: variant"], attrs=["parallel_copy: bool = false"] + _TYPED,
          shape_fn=scalar)
define_op("PaddedBatchDatasetV2",
          inputs=["input_dataset: variant", "batch_size: int64", "padded_shapes: N * int64",
                  "padding_values: Toutput_types", "drop_remainder: bool"],
          outputs=["handle: variant"],
          attrs=["parallel_copy: bool = false", "Toutput_types: list(type) >= 1",
                 "output_shapes: list(shape) >= 1", "N: int >= 1", "metadata: string = ''"],
          shape_fn=scalar)
define_op("ShuffleDataset",
          inputs=["input_dataset: variant", "buffer_size: int64", "seed: int64",
                  "seed2: int64"], outputs=["handle: variant"],
          attrs=["reshuffle_each_iteration: bool = true"] + _TYPED, shape_fn=scalar)
for _op in ("RepeatDataset", "TakeDataset", "SkipDataset"):
    define_op(_op, inputs=["input_dataset: variant", "count: int64"],
              outputs=["handle: variant"], attrs=_TYPED, shape_fn=scalar)
define_op("PrefetchDataset", inputs=["input_dataset: variant", "buffer_size: int64"],
          outputs=["handle: variant"],
          attrs=_TYPED[:2] + ["slack_period: int = 0", "legacy_autotune: bool = true",
                              "buffer_size_min: int = 0", "metadata: string = ''"],
          shape_fn=scalar)
define_op("CacheDataset", inputs=["input_dataset: variant", "filename: string"],
          outputs=["handle: variant"], attrs=_TYPED, shape_fn=scalar)
define_op("SnapshotDatasetV2",
          inputs=["input_dataset: variant", "path: string",
                  "reader_func_other_args: Treader_func_args",
                  "shard_func_other_args: Tshard_func_args"],
          outputs=["handle: variant"],
          attrs=_TYPED[:2] + ["compression: string = ''", "reader_prefix: string = ''",
                              "writer_prefix: string = ''", "hash_valid: bool = false",
                              "hash: int = 0", "reader_func: func", "shard_func: func",
                              "Treader_func_args: list(type) >= 0",
                              "Tshard_func_args: list(type) >= 0", "metadata: string = ''"],
          shape_fn=scalar)
define_op("ZipDataset", inputs=["input_datasets: N * variant"], outputs=["handle: variant"],
          attrs=_TYPED[:2] + ["N: int >= 1", "metadata: string = ''"], shape_fn=scalar)
define_op("ConcatenateDataset", inputs=["input_dataset: variant", "another_dataset: variant"],
          outputs=["handle: variant"], attrs=_TYPED, shape_fn=scalar)
define_op("UnbatchDataset", inputs=["input_dataset: variant"], outputs=["handle: variant"],
          attrs=_TYPED, shape_fn=scalar)

# ---- more transformations (kernels/dataset_transforms.py) ----------------------------------
define_op("ShardDataset",
          inputs=["input_dataset: variant", "num_shards: int64", "index: int64"],
          outputs=["handle: variant"], attrs=["require_non_empty: bool = false"] + _TYPED,
          shape_fn=scalar)
define_op("ScanDataset",
          inputs=["input_dataset: variant", "initial_state: Tstate",
                  "other_arguments: Targuments"], outputs=["handle: variant"],
          attrs=["f: func", "Tstate: list(type) >= 1"] + _FUNC + _TYPED[:2] + [
              "preserve_cardinality: bool = false", "use_default_device: bool = true",
              "metadata: string = ''"], shape_fn=scalar)
define_op("ReduceDataset",
          inputs=["input_dataset: variant", "initial_state: Tstate",
                  "other_arguments: Targuments"], outputs=["components: output_types"],
          attrs=["f: func", "Tstate: list(type) >= 1"] + _FUNC + _TYPED[:2] + [
              "use_inter_op_parallelism: bool = true", "metadata: string = ''"],
          shape_fn=_element_shapes)
define_op("WindowDataset",
          inputs=["input_dataset: variant", "size: int64", "shift: int64", "stride: int64",
                  "drop_remainder: bool"], outputs=["handle: variant"], attrs=_TYPED,
          shape_fn=scalar)
for _op in ("UniqueDataset", "IgnoreErrorsDataset"):
    define_op(_op, inputs=["input_dataset: variant"], outputs=["handle: variant"],
              attrs=_TYPED + (["log_warning: bool = false"] if _op == "IgnoreErrorsDataset"
                              else []), shape_fn=scalar)
define_op("TakeWhileDataset", inputs=["input_dataset: variant", "other_arguments: Targuments"],
          outputs=["handle: variant"], attrs=["predicate: func"] + _FUNC + _TYPED,
          shape_fn=scalar)
define_op("GroupByWindowDataset",
          inputs=["input_dataset: variant",
                  "key_func_other_arguments: Tkey_func_other_arguments",
                  "reduce_func_other_arguments: Treduce_func_other_arguments",
                  "window_size_func_other_arguments: Twindow_size_func_other_arguments"],
          outputs=["handle: variant"],
          attrs=["key_func: func", "reduce_func: func", "window_size_func: func",
                 "Tkey_func_other_arguments: list(type) >= 0",
                 "Treduce_func_other_arguments: list(type) >= 0",
                 "Twindow_size_func_other_arguments: list(type) >= 0"] + _TYPED,
          shape_fn=scalar)
define_op("DirectedInterleaveDataset",
          inputs=["selector_input_dataset: variant", "data_input_datasets: N * variant"],
          outputs=["handle: variant"],
          attrs=_TYPED[:2] + ["N: int >= 1", "stop_on_empty_dataset: bool = false"],
          shape_fn=scalar)
define_op("RandomDataset", inputs=["seed: int64", "seed2: int64"],
          outputs=["handle: variant"], attrs=_TYPED, shape_fn=scalar, stateful=True)
define_op("AssertCardinalityDataset", inputs=["input_dataset: variant", "cardinality: int64"],
          outputs=["handle: variant"], attrs=_TYPED[:2], shape_fn=scalar)
define_op("DenseToSparseBatchDataset",
          inputs=["input_dataset: variant", "batch_size: int64", "row_shape: int64"],
          outputs=["handle: variant"], attrs=_TYPED[:2], shape_fn=scalar)
define_op("DatasetCardinality", inputs=["input_dataset: variant"],
          outputs=["cardinality: int64"], attrs=["cardinality_options: string = ''"],
          shape_fn=scalar)
define_op("DatasetToSingleElement", inputs=["dataset: variant"],
          outputs=["components: output_types"], attrs=_TYPED, shape_fn=_element_shapes)
# An optional value: a scalar variant holding an element or nothing (get_next_as_optional).
define_op("OptionalFromValue", inputs=["components: Toutput_types"],
          outputs=["optional: variant"], attrs=["Toutput_types: list(type) >= 1"],
          shape_fn=scalar)
define_op("OptionalNone", outputs=["optional: variant"], shape_fn=scalar)
define_op("OptionalHasValue", inputs=["optional: variant"], outputs=["has_value: bool"],
          shape_fn=scalar)
define_op("OptionalGetValue", inputs=["optional: variant"],
          outputs=["components: output_types"], attrs=_TYPED[:2], shape_fn=_element_shapes)
define_op("IteratorGetNextAsOptional", inputs=["iterator: resource"],
          outputs=["optional: variant"], attrs=_TYPED[:2], shape_fn=scalar, stateful=True)
define_op("SqlDataset",
          inputs=["driver_name: string", "data_source_name: string", "query: string"],
          outputs=["handle: variant"], attrs=_TYPED[:2], shape_fn=scalar, stateful=True)
define_op("DatasetToTFRecord",
          inputs=["input_dataset: variant", "filename: string", "compression_type: string"],
          shape_fn=_no_outputs, stateful=True)

# ---- iterators ---------------------------------------------------------------------------
define_op("IteratorV2", outputs=["handle: resource"],
          attrs=["shared_name: string", "container: string"] + _TYPED[:2], shape_fn=scalar,
          stateful=True)
define_op("OneShotIterator", outputs=["handle: resource"],
          attrs=["dataset_factory: func"] + _TYPED[:2] + ["container: string = ''",
                                                          "shared_name: string = ''"],
          shape_fn=scalar, stateful=True)
define_op("MakeIterator", inputs=["dataset: variant", "iterator: resource"],
          shape_fn=_no_outputs, stateful=True)
define_op("IteratorGetNext", inputs=["iterator: resource"],
          outputs=["components: output_types"], attrs=_TYPED[:2], shape_fn=_element_shapes,
          stateful=True)
define_op("IteratorToStringHandle", inputs=["resource_handle: resource"],
          outputs=["string_handle: string"], shape_fn=scalar, stateful=True)
define_op("IteratorFromStringHandleV2", inputs=["string_handle: string"],
          outputs=["resource_handle: resource"],
          attrs=["output_types: list(type) >= 0 = []", "output_shapes: list(shape) >= 0 = []"],
          shape_fn=scalar, stateful=True)
# An iterator's state (kernels/dataset_state.py): the dataset and the pass's position.
define_op("SerializeIterator", inputs=["resource_handle: resource"],
          outputs=["serialized: variant"], attrs=["external_state_policy: int = 0"],
          shape_fn=lambda op: [tensor_shape.TensorShape([None])], stateful=True)
define_op("DeserializeIterator", inputs=["resource_handle: resource", "serialized: variant"],
          shape_fn=_no_outputs, stateful=True)

not_differentiable(
    "SerializeIterator", "DeserializeIterator",
    "TensorSliceDataset", "TensorDataset", "RangeDataset", "TFRecordDataset",
    "TextLineDataset", "FixedLengthRecordDatasetV2", "PyGeneratorDataset", "MapDataset",
    "ParallelMapDatasetV2", "FilterDataset", "FlatMapDataset", "InterleaveDataset",
    "BatchDatasetV2", "PaddedBatchDatasetV2", "ShuffleDataset", "RepeatDataset",
    "TakeDataset", "SkipDataset", "PrefetchDataset", "CacheDataset", "SnapshotDatasetV2",
    "ZipDataset",
    "ConcatenateDataset", "UnbatchDataset", "IteratorV2", "OneShotIterator", "MakeIterator",
    "IteratorGetNext", "IteratorToStringHandle", "IteratorFromStringHandleV2",
    "ShardDataset", "ScanDataset", "ReduceDataset", "WindowDataset", "UniqueDataset",
    "IgnoreErrorsDataset", "TakeWhileDataset", "GroupByWindowDataset",
    "DirectedInterleaveDataset", "RandomDataset", "AssertCardinalityDataset",
    "DenseToSparseBatchDataset", "DatasetCardinality", "DatasetToSingleElement",
    "DatasetToTFRecord", "SqlDataset", "OptionalFromValue", "OptionalNone",
    "OptionalHasValue", "OptionalGetValue", "IteratorGetNextAsOptional")
