"""`tf.keras.Input` and `InputLayer`: a placeholder that starts a functional graph."""

from __future__ import annotations

from tensorflux.framework import dtypes
from tensorflux.framework.sparse_tensor import SparseTensor
from tensorflux.keras import backend as K
from tensorflux.keras.engine.base_layer import Layer, Node
from tensorflux.ops import array_ops, sparse_ops

__all__ = ["Input", "InputLayer"]


class InputLayer(Layer):
    """The layer of a model's input: holds a placeholder of `batch_input_shape` (or the
    given `input_tensor`) named after the layer ("input_1", "dense_input", ...)."""

    def __init__(self, input_shape=None, batch_size=None, dtype=None, input_tensor=None,
                 sparse=None, name=None, ragged=None, batch_input_shape=None, type_spec=None,
                 **kwargs):
        if type_spec is not None:
            _reject_type_spec(input_shape if batch_input_shape is None else
                              batch_input_shape, batch_size, dtype, input_tensor, sparse,
                              ragged)
        if ragged:
            raise ValueError("tensorflux.keras: ragged inputs are not supported")
        if name is None:
            name = f"input_{K.get_uid('input')}"
        if batch_input_shape is None and input_shape is not None:
            batch_input_shape = (batch_size,) + tuple(input_shape)
        super().__init__(name=name, dtype=dtype, **kwargs)
        self.built = True
        if input_tensor is None:
            if batch_input_shape is None:
                raise ValueError("An InputLayer needs `input_shape`, `batch_input_shape` or "
                                 "`input_tensor`.")
            dtype = dtypes.as_dtype(dtype or K.floatx())
            if sparse:  # fed a SparseTensorValue or a SciPy sparse matrix
                input_tensor = sparse_ops.sparse_placeholder(dtype, shape=batch_input_shape,
                                                             name=name)
            else:
                input_tensor = array_ops.placeholder(dtype, shape=batch_input_shape, name=name)
        self.sparse = isinstance(input_tensor, SparseTensor)
        self._batch_input_shape = tuple(input_tensor.shape.as_list()) \
            if input_tensor.shape.ndims is not None else None
        self._dtype = input_tensor.dtype
        self.is_placeholder = (input_tensor.values if self.sparse else
                               input_tensor).op.type == "Placeholder"
        node = Node(self, [], [input_tensor], {}, [], [], True)
        self._inbound_nodes.append(node)
        input_tensor._keras_history = (self, 0, 0)

    def get_config(self) -> dict:
        return {"batch_input_shape": self._batch_input_shape, "dtype": self._dtype.name,
                "sparse": self.sparse, "name": self.name}


def _reject_type_spec(shape, batch_size, dtype, input_tensor, sparse, ragged) -> None:
    """Keras builds inputs from a TypeSpec only eagerly: in a TF1 graph (tensorflux's only
    mode) `type_spec` is refused, after the same check of the other arguments.

    Raises:
      ValueError: always.
    """
    for arg_name, arg in [("(input_)shape", shape), ("batch_size", batch_size),
                          ("dtype", dtype), ("input_tensor", input_tensor),
                          ("sparse", sparse), ("ragged", ragged)]:
        if arg is not None:
            raise ValueError(f"When `type_spec` is not None, all other args except `name` "
                             f"must be None, but {arg_name} is not None.")
    raise ValueError("Creating TF-Keras inputs from a type_spec is only supported when eager "
                     "execution is enabled.")


def Input(shape=None, batch_size=None, name=None, dtype=None, sparse=None, tensor=None,  # noqa: N802
          ragged=None, type_spec=None, batch_shape=None, **kwargs):
    """A placeholder (or `tensor`) that starts a functional model: `shape` leaves out the
    batch axis. `type_spec` is refused as in TF1 graph mode (Keras takes it only eagerly).

    Raises:
      ValueError: neither `shape`, `batch_shape`, `tensor` nor `type_spec`; a `type_spec`."""
    batch_shape = kwargs.pop("batch_input_shape", batch_shape)
    if kwargs:
        raise TypeError(f"Unrecognized keyword arguments: {sorted(kwargs)}")
    if shape is None and batch_shape is None and tensor is None and type_spec is None:
        raise ValueError("Please provide to Input a `shape` or a `tensor` or a `type_spec` "
                         "argument. Note that `shape` does not include the batch dimension.")
    if type_spec is not None:
        _reject_type_spec(shape if batch_shape is None else batch_shape, batch_size, dtype,
                          tensor, sparse, ragged)
    if shape is not None and batch_shape is None:
        batch_shape = (batch_size,) + tuple(shape)
    layer = InputLayer(batch_input_shape=batch_shape, name=name, dtype=dtype,
                       input_tensor=tensor, sparse=sparse, ragged=ragged)
    return layer._inbound_nodes[0].outputs[0]
