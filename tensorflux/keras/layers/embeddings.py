"""Keras Embedding: integer ids -> rows of "embeddings" [input_dim, output_dim]."""

from __future__ import annotations

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.keras.engine.base_layer import Layer, resolve_identifiers
from tensorflux.nn import embedding_ops
from tensorflux.ops import comparison_ops, math_ops

__all__ = ["Embedding"]


class Embedding(Layer):
    """Looks up rows of an [input_dim, output_dim] matrix (default initializer uniform in
    [-0.05, 0.05]).

    Args:
      input_dim: the vocabulary size.
      output_dim: the embedding size.
      input_length: the sequence length (for the static output shape).
      mask_zero: id 0 is padding: the output's mask is `ids != 0`, for the layers after
        it (recurrent layers skip those steps, the losses and metrics of `fit` leave them
        out).
    """

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform",
                 embeddings_regularizer=None, activity_regularizer=None,
                 embeddings_constraint=None, mask_zero=False, input_length=None, **kwargs):
        if "input_shape" not in kwargs and input_length is not None:
            kwargs["input_shape"] = (input_length,)
        kwargs.setdefault("input_shape", (None,)) if "batch_input_shape" not in kwargs else None
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        if int(input_dim) <= 0 or int(output_dim) <= 0:
            raise ValueError("Both `input_dim` and `output_dim` should be positive, found "
                             f"input_dim {input_dim} and output_dim {output_dim}")
        self.input_dim, self.output_dim = int(input_dim), int(output_dim)
        self.input_length = input_length
        self.mask_zero = bool(mask_zero)
        ids = resolve_identifiers({"embeddings_initializer": embeddings_initializer,
                                   "embeddings_regularizer": embeddings_regularizer,
                                   "embeddings_constraint": embeddings_constraint})
        self._ids = ids

    def build(self, input_shape) -> None:
        self.embeddings = self.add_weight(
            "embeddings", (self.input_dim, self.output_dim),
            initializer=self._ids["embeddings_initializer"],
            regularizer=self._ids["embeddings_regularizer"],
            constraint=self._ids["embeddings_constraint"], dtype=dtypes.float32)
        self.built = True

    def __call__(self, inputs, *args, **kwargs):
        self._dtype = self._dtype or dtypes.float32
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs):
        if inputs.dtype not in (dtypes.int32, dtypes.int64):
            inputs = math_ops.cast(inputs, dtypes.int32)
        return embedding_ops.embedding_lookup(self.embeddings, inputs)

    def compute_mask(self, inputs, mask=None):
        if not self.mask_zero:
            return None
        return comparison_ops.not_equal(inputs, 0)

    def compute_output_shape(self, input_shape):
        return tensor_shape.TensorShape(input_shape).concatenate(self.output_dim)
