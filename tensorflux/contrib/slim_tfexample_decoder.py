"""`slim.tfexample_decoder`: decodes a serialized `tf.train.Example` into named items.

    decoder = slim.tfexample_decoder.TFExampleDecoder(
        {"image/encoded": tf.FixedLenFeature((), tf.string, default_value=""),
         "image/format": tf.FixedLenFeature((), tf.string, default_value="png"),
         "image/class/label": tf.FixedLenFeature([1], tf.int64)},
        {"image": slim.tfexample_decoder.Image(shape=[28, 28, 1], channels=1),
         "label": slim.tfexample_decoder.Tensor("image/class/label", shape=[])})
    image, label = decoder.decode(serialized, ["image", "label"])

`decode` parses the example once (`parse_single_example` with `keys_to_features`), reshapes
each FixedLenFeature to its declared shape, then hands each item's handler the parsed
tensors of the handler's `keys` (a key that is not a feature is a KeyError while building).
An `Image` handler decodes `raw`/`RAW` formats with `decode_raw`, JPEG data (by its header,
whatever the format string says) with `decode_jpeg` and anything else with
`decode_image` (PNG, GIF, BMP), then casts to `dtype` and reshapes to `shape`.
"""

from __future__ import annotations

import abc

from tensorflux.contrib.slim_data import DataDecoder
from tensorflux.control_flow import builders, functional_ops
from tensorflux.framework import dtypes
from tensorflux.framework.sparse_tensor import SparseTensor as _SparseTensor
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    image_ops,
    joining_ops,
    math_ops,
    parsing_ops,
    reduction_ops,
    slicing_ops,
    sparse_ops,
)

__all__ = ["BackupHandler", "BoundingBox", "Image", "ItemHandler", "ItemHandlerCallback",
           "LookupTensor", "SparseTensor", "TFExampleDecoder", "Tensor"]


class ItemHandler(abc.ABC):
    """Turns the parsed tensors of its `keys` into one item (`tensors_to_item`)."""

    def __init__(self, keys):
        if not isinstance(keys, (tuple, list)):
            keys = [keys]
        self._keys = list(keys)

    @property
    def keys(self) -> list:
        return self._keys

    @abc.abstractmethod
    def tensors_to_item(self, keys_to_tensors):
        """The item from `{key: parsed tensor}`."""


class ItemHandlerCallback(ItemHandler):
    """An item computed by `func(keys_to_tensors)`."""

    def __init__(self, keys, func):
        super().__init__(keys)
        self._func = func

    def tensors_to_item(self, keys_to_tensors):
        return self._func(keys_to_tensors)


def _dense_values(tensor):
    return tensor.values if isinstance(tensor, _SparseTensor) else tensor


class BoundingBox(ItemHandler):
    """Boxes `[num_boxes, 4]` from four per-side features (default
    `<prefix>ymin`, `xmin`, `ymax`, `xmax`), each a VarLenFeature or a dense vector."""

    def __init__(self, keys=None, prefix=""):
        if keys is None:
            keys = ["ymin", "xmin", "ymax", "xmax"]
        elif len(keys) != 4:
            raise ValueError(f"BoundingBox expects 4 keys but got {len(keys)}")
        self._prefix = prefix
        self._full_keys = [prefix + k for k in keys]
        super().__init__(self._full_keys)

    def tensors_to_item(self, keys_to_tensors):
        sides = [array_ops.expand_dims(_dense_values(keys_to_tensors[key]), 0)
                 for key in self._full_keys]
        return array_ops.transpose(joining_ops.concat(sides, 0))


class Tensor(ItemHandler):
    """The tensor of feature `tensor_key`, reshaped to `shape` or to the shape read from
    the features `shape_keys`; a sparse one is made dense with `default_value`."""

    def __init__(self, tensor_key, shape_keys=None, shape=None, default_value=0):
        if shape_keys and shape is not None:
            raise ValueError("Cannot specify both shape_keys and shape parameters.")
        if shape_keys and not isinstance(shape_keys, list):
            shape_keys = [shape_keys]
        self._tensor_key = tensor_key
        self._shape_keys = shape_keys
        self._shape = shape
        self._default_value = default_value
        keys = [tensor_key] + (shape_keys or [])
        super().__init__(keys)

    def tensors_to_item(self, keys_to_tensors):
        tensor = keys_to_tensors[self._tensor_key]
        shape = self._shape
        if self._shape_keys:
            dims = []
            for key in self._shape_keys:
                dim = keys_to_tensors[key]
                if isinstance(dim, _SparseTensor):
                    dim = sparse_ops.sparse_tensor_to_dense(dim)
                dims.append(dim)
            shape = array_ops.reshape(joining_ops.stack(dims), [-1])
        if isinstance(tensor, _SparseTensor):
            if shape is not None:
                tensor = sparse_ops.sparse_reshape(tensor, shape)
            return sparse_ops.sparse_tensor_to_dense(tensor, self._default_value)
        if shape is not None:
            tensor = array_ops.reshape(tensor, shape)
        return tensor


class LookupTensor(Tensor):
    """A Tensor item mapped through `table.lookup` (e.g. a string->id HashTable)."""

    def __init__(self, tensor_key, table, shape_keys=None, shape=None, default_value=""):
        self._table = table
        super().__init__(tensor_key, shape_keys, shape, default_value)

    def tensors_to_item(self, keys_to_tensors):
        return self._table.lookup(super().tensors_to_item(keys_to_tensors))


class BackupHandler(ItemHandler):
    """The item of `handler`, or of `backup` when that item has no elements."""

    def __init__(self, handler, backup):
        if not isinstance(handler, ItemHandler):
            raise ValueError(f"Primary handler is of type {type(handler)} instead of "
                             "ItemHandler")
        if not isinstance(backup, ItemHandler):
            raise ValueError(f"Backup handler is of type {type(backup)} instead of "
                             "ItemHandler")
        self._handler = handler
        self._backup = backup
        super().__init__(handler.keys + backup.keys)

    def tensors_to_item(self, keys_to_tensors):
        item = self._handler.tensors_to_item(keys_to_tensors)
        empty = comparison_ops.equal(reduction_ops.reduce_prod(array_ops.shape(item)), 0)
        return builders.cond(empty,
                             lambda: self._backup.tensors_to_item(keys_to_tensors),
                             lambda: item)


class SparseTensor(ItemHandler):
    """A SparseTensor whose last index column comes from the values of the
    `indices_key` feature and whose values from `values_key` (both VarLenFeatures), of
    shape `shape`, the `shape_key` feature, or the indices' dense shape; dense with
    `default_value` when `densify`."""

    def __init__(self, indices_key=None, values_key=None, shape_key=None, shape=None,
                 densify=False, default_value=0):
        indices_key = indices_key or "indices"
        values_key = values_key or "values"
        self._indices_key = indices_key
        self._values_key = values_key
        self._shape_key = shape_key
        self._shape = shape
        self._densify = densify
        self._default_value = default_value
        keys = [indices_key, values_key] + ([shape_key] if shape_key else [])
        super().__init__(keys)

    def tensors_to_item(self, keys_to_tensors):
        indices = keys_to_tensors[self._indices_key]
        values = keys_to_tensors[self._values_key]
        if self._shape_key:
            shape = _dense_values(keys_to_tensors[self._shape_key])
        elif self._shape:
            shape = self._shape
        else:
            shape = indices.dense_shape
        rank = array_ops.shape(indices.indices)[1]
        ids = math_ops.cast(indices.values, dtypes.int64)
        kept = slicing_ops.slice(indices.indices, [0, 0], joining_ops.stack([-1, rank - 1]))
        new_indices = joining_ops.concat([kept, array_ops.reshape(ids, [-1, 1])], 1)
        tensor = _SparseTensor(new_indices, values.values, shape)
        if self._densify:
            tensor = sparse_ops.sparse_tensor_to_dense(tensor, self._default_value)
        return tensor


class Image(ItemHandler):
    """An image decoded from the features `image_key` (default `image/encoded`) and
    `format_key` (default `image/format`).

    Args:
      image_key, format_key: the features' names.
      shape: reshape the image to this (required for `raw` images to get a 3-D shape).
      channels: the channels to decode to (the static shape's last dimension).
      dtype: the decoded image's type (`raw` data is read as this type).
      repeated: the feature holds several images (decoded with map_fn).
      dct_method: passed to `decode_jpeg`.
    """

    def __init__(self, image_key=None, format_key=None, shape=None, channels=3,
                 dtype=dtypes.uint8, repeated=False, dct_method=""):
        image_key = image_key or "image/encoded"
        format_key = format_key or "image/format"
        super().__init__([image_key, format_key])
        self._image_key = image_key
        self._format_key = format_key
        self._shape = shape
        self._channels = channels
        self._dtype = dtypes.as_dtype(dtype)
        self._repeated = repeated
        self._dct_method = dct_method

    def tensors_to_item(self, keys_to_tensors):
        image_buffer = keys_to_tensors[self._image_key]
        image_format = keys_to_tensors[self._format_key]
        if self._repeated:
            return functional_ops.map_fn(lambda x: self._decode(x, image_format),
                                         image_buffer, dtype=self._dtype)
        return self._decode(image_buffer, image_format)

    def _decode(self, image_buffer, image_format):
        def decode_image():
            return math_ops.cast(image_ops.decode_image(image_buffer, channels=self._channels),
                                 self._dtype)

        def decode_jpeg():
            return math_ops.cast(image_ops.decode_jpeg(image_buffer, channels=self._channels,
                                                       dct_method=self._dct_method),
                                 self._dtype)

        def check_jpeg():
            return builders.cond(image_ops.is_jpeg(image_buffer), decode_jpeg, decode_image,
                                 name="cond_jpeg")

        def decode_raw():
            return parsing_ops.decode_raw(image_buffer, out_type=self._dtype)

        is_raw = comparison_ops.logical_or(comparison_ops.equal(image_format, "raw"),
                                     comparison_ops.equal(image_format, "RAW"))
        image = builders.case([(is_raw, decode_raw)], default=check_jpeg, exclusive=True)
        image.set_shape([None, None, self._channels])
        if self._shape is not None:
            image = array_ops.reshape(image, self._shape)
        return image


class TFExampleDecoder(DataDecoder):
    """Decodes serialized `tf.train.Example`s into items.

    Args:
      keys_to_features: `{feature key: FixedLenFeature or VarLenFeature}`, as for
        `tf.parse_single_example`.
      items_to_handlers: `{item name: ItemHandler}`.
    """

    def __init__(self, keys_to_features, items_to_handlers):
        self._keys_to_features = keys_to_features
        self._items_to_handlers = items_to_handlers

    def list_items(self) -> list:
        return list(self._items_to_handlers.keys())

    def decode(self, serialized_example, items=None) -> list:
        """The tensors of `items` (default all, in `list_items` order) decoded from one
        serialized Example.

        Raises:
          KeyError: an item is not a handler's, or a handler's key is not a feature.
        """
        example = parsing_ops.parse_single_example(serialized_example,
                                                   self._keys_to_features)
        for key in sorted(self._keys_to_features):
            feature = self._keys_to_features[key]
            if isinstance(feature, parsing_ops.FixedLenFeature):
                example[key] = array_ops.reshape(example[key], feature.shape)
        if not items:
            items = self._items_to_handlers.keys()
        outputs = []
        for item in items:
            handler = self._items_to_handlers[item]
            keys_to_tensors = {key: example[key] for key in handler.keys}
            outputs.append(handler.tensors_to_item(keys_to_tensors))
        return outputs
