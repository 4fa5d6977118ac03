"""TF1's persistent tensors (`tf.get_session_handle`, `tf.get_session_tensor`,
`tf.delete_session_tensor`): a step leaves a tensor in its session, named by a string
handle, and a later step reads it by feeding the handle, until it is deleted or the session
closes.

GetSessionHandle stores its input in the session's store (kernels/cpu/session_ops.py) and
outputs the handle "<node>;<n>;<device>"; Session.run returns a fetched handle as a
`TensorHandle` (its `eval()` and `delete()` run the reader and the deleter; as in TF1 the
tensor is dropped when the TensorHandle object is garbage collected), and a `TensorHandle`
fed anywhere feeds its handle string. GetSessionTensor reads the tensor named by the fed
string, DeleteSessionTensor drops it.
"""

from __future__ import annotations

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable
from tensorflux.framework.operation import Tensor
from tensorflux.ops import array_ops

__all__ = ["get_session_handle", "get_session_tensor", "delete_session_tensor"]

_SCALAR = tensor_shape.TensorShape([])
define_op("GetSessionHandle", inputs=["value: T"], outputs=["handle: string"],
          attrs=["T: type"], shape_fn=lambda op: [_SCALAR], stateful=True)
define_op("GetSessionTensor", inputs=["handle: string"], outputs=["value: dtype"],
          attrs=["dtype: type"], shape_fn=lambda op: [tensor_shape.unknown_shape()],
          stateful=True)
define_op("DeleteSessionTensor", inputs=["handle: string"], shape_fn=lambda op: [],
          stateful=True)
HANDLE_OPS = frozenset({"GetSessionHandle"})
for _t in ("GetSessionHandle", "GetSessionTensor", "DeleteSessionTensor"):
    not_differentiable(_t)


def device_of(handle: str) -> str:
    """The device a handle's tensor was stored from (its last ';' field)."""
    return handle.split(";")[-1]


class TensorHandle:
    """A tensor left in a session (what Session.run returns for a `get_session_handle`
    fetch): `handle` is its string; `eval()` reads the tensor, `delete()` drops it.

    Args:
      handle: the handle string.
      dtype: the stored tensor's dtype.
      session: the session that holds it.
    """

    def __init__(self, handle, dtype, session):
        self._handle = handle.decode() if isinstance(handle, bytes) else str(handle)
        self._dtype = dtypes.as_dtype(dtype)
        self._session = session
        self._reader = self._deleter = None
        self._deleted = False

    def __del__(self):
        if not getattr(self, "_deleted", True):
            drop = getattr(self._session, "_drop_persistent_tensor", None)
            if drop is not None:
                drop(self._handle)

    def _check_alive(self) -> None:
        if self._deleted:
            raise TypeError(f"Persistent tensor {self._handle} may have already been "
                            "deleted.")

    @property
    def handle(self) -> str:
        return self._handle

    @property
    def dtype(self):
        return self._dtype

    def __str__(self) -> str:
        return self._handle

    def __repr__(self) -> str:
        return f"<TensorHandle {self._handle} of {self._dtype.name}>"

    def get_raw_handle(self) -> str:
        return self._handle

    def to_numpy_array(self):
        """The handle as what a feed of it sends (its string)."""
        return self._handle

    def eval(self):
        """The stored tensor's value (runs a reader in the session's graph).

        Raises:
          TypeError: the tensor was deleted through this handle.
        """
        self._check_alive()
        if self._reader is None:
            with self._session.graph.as_default():
                self._reader = get_session_tensor(self._handle, self._dtype)
        holder, tensor = self._reader
        return self._session.run(tensor, feed_dict={holder: self._handle})

    def delete(self) -> None:
        """Drops the stored tensor from the session.

        Raises:
          TypeError: it was deleted through this handle already.
        """
        self._check_alive()
        if self._deleter is None:
            with self._session.graph.as_default():
                self._deleter = delete_session_tensor(self._handle)
        holder, deleter = self._deleter
        self._session.run(deleter, feed_dict={holder: self._handle})
        self._deleted = True


def get_session_handle(data, name=None) -> Tensor:
    """A string tensor: the handle of `data`, which the step leaves in its session.

    Raises:
      TypeError: `data` is not a Tensor.
    """
    if not isinstance(data, Tensor):
        raise TypeError("`data` must be of type Tensor.")
    with graph_lib.get_default_graph().colocate_with(data):
        return apply_op("GetSessionHandle", value=data, name=name or "GetSessionHandle")


def get_session_tensor(handle, dtype, name=None):
    """(a string placeholder to feed a handle into, the tensor it names, of `dtype`), placed
    on the device of `handle` (a handle string or TensorHandle)."""
    with graph_lib.device(device_of(str(handle))):
        holder = array_ops.placeholder(dtypes.string)
        tensor = apply_op("GetSessionTensor", handle=holder, dtype=dtypes.as_dtype(dtype),
                          name=name or "GetSessionTensor")
    return holder, tensor


def delete_session_tensor(handle, name=None):
    """(a string placeholder to feed a handle into, the op that drops its tensor)."""
    with graph_lib.device(device_of(str(handle))):
        holder = array_ops.placeholder(dtypes.string)
        deleter = apply_op("DeleteSessionTensor", handle=holder,
                           name=name or "DeleteSessionTensor")
    return holder, deleter
