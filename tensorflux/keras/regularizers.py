"""`tf.keras.regularizers`: L1/L2 penalties as Keras computes them (l2: `l2 * sum(w^2)`,
not `tf.nn.l2_loss`'s half), and `get` by name or config."""

from __future__ import annotations

from tensorflux.keras._lookup import make_lookup
from tensorflux.ops import reduction_ops, unary_ops

__all__ = ["Regularizer", "L1L2", "L1", "L2", "l1", "l2", "l1_l2", "get", "serialize",
           "deserialize"]


class Regularizer:
    """A callable from a weight tensor to a scalar loss."""

    def __call__(self, x):
        return 0.0

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class L1L2(Regularizer):
    """l1 * sum(|x|) + l2 * sum(x^2)."""

    def __init__(self, l1=0.0, l2=0.0):
        self.l1, self.l2 = float(l1), float(l2)

    def __call__(self, x):
        loss = 0.0
        if self.l1:
            loss = loss + self.l1 * reduction_ops.reduce_sum(unary_ops.abs(x))
        if self.l2:
            loss = loss + self.l2 * reduction_ops.reduce_sum(unary_ops.square(x))
        if isinstance(loss, float):
            from tensorflux.ops import array_ops

            return array_ops.zeros([], x.dtype.base_dtype)
        return loss

    def get_config(self) -> dict:
        return {"l1": self.l1, "l2": self.l2}


class L1(L1L2):
    def __init__(self, l1=0.01, **kwargs):
        super().__init__(l1=kwargs.pop("l", l1))


class L2(L1L2):
    def __init__(self, l2=0.01, **kwargs):
        super().__init__(l2=kwargs.pop("l", l2))


def l1(l1=0.01):  # noqa: E741
    return L1L2(l1=l1)


def l2(l2=0.01):
    return L1L2(l2=l2)


def l1_l2(l1=0.01, l2=0.01):  # noqa: E741
    return L1L2(l1=l1, l2=l2)


_BY_NAME = {"l1": L1, "l2": L2, "l1_l2": lambda: L1L2(0.01, 0.01), "l1l2": L1L2,
            "L1L2": L1L2, "L1": L1, "L2": L2}


get, serialize, deserialize = make_lookup("regularizer", _BY_NAME)
