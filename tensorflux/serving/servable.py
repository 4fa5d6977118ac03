"""A servable: one loaded version of a model, and what the server asks of it.

The server talks to a model only through `Servable`: its `version`, its `signatures`
(name -> SignatureDef proto) and `run(signature_name, inputs)`, which feeds NumPy arrays by
input alias and returns NumPy arrays by output alias. `SavedModelServable` is the real one,
built on the public TF1 API exactly as a TF-Serving-like server would use it:

    sess = tf.Session(graph=g)
    meta = tf.saved_model.loader.load(sess, ["serve"], version_dir)
    signatures = meta.signature_def

`run` may be called from many threads at once (Session.run is thread-safe); `run_count`
counts the model runs, so tests can see how many requests batching merged.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

import numpy as np

from tensorflux.framework import dtypes, errors
from tensorflux.framework import graph as graph_lib
from tensorflux.runtime.session import Session
from tensorflux.saved_model import loader, tag_constants

__all__ = ["InputCheck", "Servable", "SavedModelServable", "check_inputs"]


class Servable:
    """The interface of one loaded model version (see the module docstring)."""

    version: int
    signatures: Mapping  # name -> meta_graph_pb2.SignatureDef

    def __init__(self) -> None:
        self._count_lock = threading.Lock()
        self.run_count = 0

    def _count_run(self) -> None:
        with self._count_lock:
            self.run_count += 1

    def signature(self, name: str | None):
        """The SignatureDef `name` ("serving_default" when empty or None).

        Raises:
          tf.errors.InvalidArgumentError: no such signature (TF Serving answers 400 to it).
        """
        name = name or "serving_default"
        if name not in self.signatures:
            raise errors.InvalidArgumentError(
                None, None, f"Serving signature name: \"{name}\" not found in signature def")
        return self.signatures[name]

    def run(self, signature_name: str, inputs: Mapping[str, np.ndarray]) -> dict:
        raise NotImplementedError

    def close(self) -> None:
        pass


def _shape_error(alias: str, dims, shape) -> errors.InvalidArgumentError:
    want = "[" + ",".join("?" if d < 0 else str(d) for d in dims) + "]"
    return errors.InvalidArgumentError(
        None, None, f"input tensor alias {alias} has shape {list(shape)}, which does not "
        f"match the signature's shape {want}")


def check_inputs(signature, inputs: Mapping[str, np.ndarray]) -> None:
    """TF Serving's checks of a request against a signature: the same input aliases, and
    shapes that agree with the signature's known dimensions.

    Raises:
      tf.errors.InvalidArgumentError: a missing or extra alias, or a shape that disagrees.
    """
    InputCheck(signature)(inputs)


class InputCheck:
    """`check_inputs` for one signature, with the signature's aliases and dimensions read
    from its proto once (a served model checks every request against the same few)."""

    __slots__ = ("want", "dims", "_known")

    def __init__(self, signature):
        self.want = frozenset(signature.inputs)
        # alias -> the signature's dimensions (-1: any), or None for an unknown rank
        self.dims = {a: None if t.tensor_shape.unknown_rank else
                     tuple(d.size for d in t.tensor_shape.dim)
                     for a, t in signature.inputs.items()}
        # alias -> (rank, a getter of the known dimensions' sizes from a shape, those sizes)
        self._known = {}
        for a, dims in self.dims.items():
            if dims is not None:
                at = [i for i, d in enumerate(dims) if d >= 0]
                self._known[a] = (len(dims), lambda shape, at=at: [shape[i] for i in at],
                                  [dims[i] for i in at])

    def __call__(self, inputs: Mapping[str, np.ndarray]) -> None:
        if inputs.keys() != self.want:
            want, got = self.want, set(inputs)
            raise errors.InvalidArgumentError(
                None, None, f"input size does not match signature: {len(got)}!={len(want)} "
                f"len({{{','.join(sorted(got))}}}) != len({{{','.join(sorted(want))}}}). "
                f"Sent extra: {{{','.join(sorted(got - want))}}}. "
                f"Missing but required: {{{','.join(sorted(want - got))}}}.")
        known = self._known
        for alias, value in inputs.items():
            check = known.get(alias)
            if check is None:
                continue
            shape = value.shape if type(value) is np.ndarray else np.shape(value)
            rank, sizes_of, sizes = check
            if rank != len(shape) or sizes_of(shape) != sizes:
                raise _shape_error(alias, list(self.dims[alias]), shape)


def numpy_dtype(tensor_info):
    """The NumPy dtype of a TensorInfo's DataType (object for DT_STRING)."""
    return dtypes.as_dtype(tensor_info.dtype).as_numpy_dtype


class SavedModelServable(Servable):
    """One SavedModel version directory, loaded into its own Graph and Session.

    Raises (from the constructor): whatever loading raises (OSError for a missing or
    unparsable `saved_model.pb`, tf.errors.* for bad variables, RuntimeError for a
    missing tag set); the caller treats each as a failed load.
    """

    def __init__(self, export_dir: str, version: int, tags=(tag_constants.SERVING,)):
        super().__init__()
        self.version = version
        self.export_dir = export_dir
        self.graph = graph_lib.Graph()
        self.session = Session(graph=self.graph)
        try:
            meta = loader.load(self.session, list(tags), export_dir)
        except BaseException:
            self.session.close()
            raise
        self.signatures = {k: v for k, v in meta.signature_def.items()
                           if not k.startswith("__")}
        self._callables: dict[str, tuple] = {}
        self._callables_lock = threading.Lock()

    def _callable(self, signature_name: str):
        """(input aliases, output aliases, a Session callable, its InputCheck) for a
        signature, built once."""
        entry = self._callables.get(signature_name)
        if entry is not None:
            return entry
        with self._callables_lock:
            entry = self._callables.get(signature_name)
            if entry is None:
                sig = self.signatures[signature_name]
                ins, outs = sorted(sig.inputs), sorted(sig.outputs)
                fetches = [self.graph.as_graph_element(sig.outputs[a].name) for a in outs]
                feeds = [self.graph.as_graph_element(sig.inputs[a].name) for a in ins]
                entry = (ins, outs, self.session.make_callable(fetches, feed_list=feeds),
                         InputCheck(sig))
                self._callables[signature_name] = entry
            return entry

    def run(self, signature_name: str, inputs: Mapping[str, np.ndarray]) -> dict:
        """Runs a signature on `inputs` (alias -> array); returns alias -> array.

        Raises:
          tf.errors.InvalidArgumentError: unknown signature, wrong aliases or shapes, or the
            model's own run-time error.
        """
        signature_name = signature_name or "serving_default"
        entry = self._callables.get(signature_name)
        if entry is None:
            self.signature(signature_name)  # raises for an unknown one
            entry = self._callable(signature_name)
        ins, outs, fn, check = entry
        check(inputs)
        self._count_run()
        try:
            values = fn(*[inputs[a] for a in ins])
        except (TypeError, ValueError) as e:
            raise errors.InvalidArgumentError(None, None, str(e)) from None
        return dict(zip(outs, values, strict=True))

    def close(self) -> None:
        self.session.close()
