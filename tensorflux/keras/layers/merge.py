"""Keras merge layers (a list of tensors in, one out) and their functional forms."""

from __future__ import annotations

from tensorflux.keras import backend as K
from tensorflux.keras.engine.base_layer import Layer
from tensorflux.ops import array_ops, math_ops

__all__ = ["Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate",
           "Dot", "add", "subtract", "multiply", "average", "maximum", "minimum",
           "concatenate", "dot"]


class _Merge(Layer):
    """Merges a list of at least two tensors elementwise (shapes broadcast)."""

    _min_inputs = 2
    supports_masking = True

    def build(self, input_shape) -> None:
        if not isinstance(input_shape, (list, tuple)) or len(input_shape) < self._min_inputs:
            raise ValueError(f"A merge layer should be called on a list of at least "
                             f"{self._min_inputs} inputs. Got {input_shape}")
        self.built = True

    def __call__(self, inputs, *args, **kwargs):
        if not isinstance(inputs, (list, tuple)):
            raise ValueError("A merge layer should be called on a list of inputs. "
                             f"Received: inputs={inputs} (not a list of tensors)")
        return super().__call__(list(inputs), *args, **kwargs)

    def call(self, inputs):
        out = inputs[0]
        for x in inputs[1:]:
            out = self._merge(out, x)
        return self._finish(out, len(inputs))

    def _finish(self, out, n):
        return out

    def compute_mask(self, inputs, mask=None):
        """All the inputs' masks and-ed together (None when no input has one).

        Raises:
          ValueError: a mask that is not a list with one entry per input."""
        if mask is None:
            return None
        if not isinstance(mask, (list, tuple)) or len(mask) != len(inputs):
            raise ValueError("`mask` should be a list with one entry per input. Received: "
                             f"mask={mask}")
        masks = [array_ops.expand_dims(m, 0) for m in mask if m is not None]
        if not masks:
            return None
        return K.all(K.concatenate(masks, axis=0), axis=0, keepdims=False)


class Add(_Merge):
    _merge = staticmethod(math_ops.add)


class Subtract(_Merge):
    def build(self, input_shape) -> None:
        if not isinstance(input_shape, (list, tuple)) or len(input_shape) != 2:
            raise ValueError("A `Subtract` layer should be called on exactly 2 inputs")
        self.built = True

    _merge = staticmethod(math_ops.subtract)


class Multiply(_Merge):
    _merge = staticmethod(math_ops.multiply)


class Average(_Merge):
    _merge = staticmethod(math_ops.add)

    def _finish(self, out, n):
        return out / float(n)


class Maximum(_Merge):
    _merge = staticmethod(math_ops.maximum)


class Minimum(_Merge):
    _merge = staticmethod(math_ops.minimum)


class Concatenate(_Merge):
    """Concatenates along `axis`.

    Raises:
      ValueError: shapes that differ off the concatenation axis."""

    _min_inputs = 1

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def build(self, input_shape) -> None:
        super().build(input_shape)
        shapes = [s.as_list() for s in input_shape if s.ndims is not None]
        if len({len(s) for s in shapes}) > 1:
            raise ValueError("A `Concatenate` layer requires inputs with matching shapes "
                             f"except for the concatenation axis. Received: input_shape="
                             f"{[tuple(s) for s in shapes]}")
        if shapes:
            rank = len(shapes[0])
            axis = self.axis % rank
            for i in range(rank):
                sizes = {s[i] for s in shapes if s[i] is not None}
                if i != axis and i != 0 and len(sizes) > 1:
                    raise ValueError("A `Concatenate` layer requires inputs with matching "
                                     "shapes except for the concatenation axis. Received: "
                                     f"input_shape={[tuple(s) for s in shapes]}")

    def call(self, inputs):
        return K.concatenate(inputs, axis=self.axis)

    def compute_mask(self, inputs, mask=None):
        """The inputs' masks (all-true where an input has none) concatenated along
        `axis`, then all-reduced over the last axis, as Keras does."""
        if mask is None or all(m is None for m in mask):
            return None
        masks = []
        for x, m in zip(inputs, mask, strict=True):
            if m is None:
                masks.append(array_ops.ones_like(x, dtype="bool"))
            elif K.ndim(m) < K.ndim(x):
                masks.append(array_ops.expand_dims(m, -1))
            else:
                masks.append(m)
        return K.all(K.concatenate(masks, axis=self.axis), axis=-1, keepdims=False)


class Dot(_Merge):
    """Dot products between samples of two tensors over `axes` (L2-normalized first when
    `normalize`: cosine proximity)."""

    def __init__(self, axes, normalize=False, **kwargs):
        super().__init__(**kwargs)
        self.axes, self.normalize = axes, normalize

    def call(self, inputs):
        if len(inputs) != 2:
            raise ValueError("A `Dot` layer should be called on exactly 2 inputs")
        x, y = inputs
        axes = self.axes if isinstance(self.axes, (list, tuple)) else (self.axes, self.axes)
        axes = [a % K.ndim(t) for a, t in zip(axes, (x, y), strict=True)]
        if self.normalize:
            x, y = K.l2_normalize(x, axis=axes[0]), K.l2_normalize(y, axis=axes[1])
        return K.batch_dot(x, y, axes)

    def compute_mask(self, inputs, mask=None):
        return None


def _functional(cls):
    def merge(inputs, **kwargs):
        return cls(**kwargs)(inputs)

    merge.__doc__ = f"The functional form of `{cls.__name__}`."
    merge.__name__ = cls.__name__.lower()
    return merge


add, subtract, multiply, average, maximum, minimum = map(
    _functional, (Add, Subtract, Multiply, Average, Maximum, Minimum))


def concatenate(inputs, axis=-1, **kwargs):
    """The functional form of `Concatenate`."""
    return Concatenate(axis=axis, **kwargs)(inputs)


def dot(inputs, axes, normalize=False, **kwargs):
    """The functional form of `Dot`."""
    return Dot(axes=axes, normalize=normalize, **kwargs)(inputs)
