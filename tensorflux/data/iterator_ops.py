"""tf.data.Iterator (TF1 graph mode): a handle to an IteratorResource and the ops that
start a pass over a dataset (`initializer`, `make_initializer`) and take elements from it
(`get_next`, OutOfRangeError at the end).

- `make_one_shot_iterator(ds)`: a OneShotIterator whose `dataset_factory` function holds a
  copy of the dataset's ops (captured by value: placeholders and variables cannot be), so
  the iterator needs no initializer.
- `make_initializable_iterator(ds)`: IteratorV2 + MakeIterator; re-running the initializer
  starts over, with the current values of the placeholders the dataset was built from.
- `Iterator.from_structure(types, shapes)`: one iterator, initialized from any dataset of
  that structure (`make_initializer(ds)`).
- `Iterator.from_string_handle(handle, types, shapes)`: the iterator whose
  `string_handle()` is fed to `handle` (a feedable iterator).
"""

from __future__ import annotations

from tensorflux.data import structure as st
from tensorflux.data.dataset_ops import DatasetV1, element_op
from tensorflux.data.options import ExternalStatePolicy
from tensorflux.framework import dtypes, random_seed
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.func_graph import FuncGraph, FunctionRef
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.train.saver import SaveableObject, SaveSpec

_BY_VALUE_FORBIDDEN = ("Placeholder", "PlaceholderV2", "PlaceholderWithDefault")


class Iterator(st.HasElementSignature):
    """A TF1 iterator over dataset elements of one structure."""

    def __init__(self, iterator_resource, initializer, structure):
        self._iterator_resource = iterator_resource
        self._initializer = initializer
        self._structure = st.without_names(structure)
        self._string_handle = None

    # ---- construction --------------------------------------------------------------------
    @staticmethod
    def from_structure(output_types, output_shapes=None, shared_name=None,
                       output_classes=None) -> Iterator:
        """An uninitialized iterator for elements of this structure."""
        specs = st.specs_from(output_types, output_shapes, output_classes)
        handle = apply_op("IteratorV2", shared_name=shared_name or "", container="",
                          **st.flat_attrs(specs), name="Iterator")
        return Iterator(handle, None, specs)

    @staticmethod
    def from_string_handle(string_handle, output_types, output_shapes=None,
                           output_classes=None) -> Iterator:
        """The iterator named by `string_handle` (a scalar string tensor, e.g. a
        placeholder fed with another iterator's `string_handle()`)."""
        specs = st.specs_from(output_types, output_shapes, output_classes)
        string_handle = convert_to_tensor(string_handle, dtype=dtypes.string)
        handle = apply_op("IteratorFromStringHandleV2", string_handle=string_handle,
                          **st.flat_attrs(specs))
        return Iterator(handle, None, specs)

    # ---- ops -----------------------------------------------------------------------------
    @property
    def initializer(self):
        if self._initializer is None:
            raise ValueError("Iterator does not have an initializer.")
        return self._initializer

    def make_initializer(self, dataset: DatasetV1, name=None):
        """The op that starts a pass of this iterator over `dataset`.

        Raises:
          TypeError: `dataset`'s element structure or types differ from the iterator's.
        """
        if not st.same_structure(self._structure, dataset._structure):
            raise TypeError(f"Expected output structure {self.output_types}, but got "
                            f"dataset with output structure {dataset.output_types}.")
        mine, theirs = st.flatten(self._structure), st.flatten(dataset._structure)
        if [(type(s), s._to_legacy_output_types()) for s in mine] != \
                [(type(s), s._to_legacy_output_types()) for s in theirs]:
            raise TypeError(f"Expected output types {self.output_types} but got dataset with "
                            f"output types {dataset.output_types}.")
        for a, b in zip(mine, theirs, strict=True):
            if not a._to_legacy_output_shapes().is_compatible_with(
                    b._to_legacy_output_shapes()):
                raise TypeError(f"Expected output shapes compatible with "
                                f"{self.output_shapes} but got dataset with output shapes "
                                f"{dataset.output_shapes}.")
        with graph_lib.colocate_with(self._iterator_resource.op):
            return apply_op("MakeIterator", dataset=dataset._variant_tensor,
                            iterator=self._iterator_resource, name=name or "MakeIterator")

    def get_next(self, name=None):
        """The next element (OutOfRangeError when the run reaches the end)."""
        return element_op("IteratorGetNext", self._structure, name or "IteratorGetNext",
                          iterator=self._iterator_resource)

    def string_handle(self, name=None):
        """A scalar string naming this iterator, for `from_string_handle`."""
        if name is None and self._string_handle is not None:
            return self._string_handle
        h = apply_op("IteratorToStringHandle", resource_handle=self._iterator_resource,
                     name=name or "IteratorToStringHandle")
        if name is None:
            self._string_handle = h
        return h


def make_initializable_iterator(dataset: DatasetV1, shared_name=None) -> Iterator:
    """An iterator over `dataset` started by running its `initializer`."""
    with graph_lib.name_scope(None):
        handle = apply_op("IteratorV2", shared_name=shared_name or "", container="",
                          **st.flat_attrs(dataset._structure), name="IteratorV2")
    it = Iterator(handle, None, dataset._structure)
    it._initializer = it.make_initializer(dataset)
    return it


def make_one_shot_iterator(dataset: DatasetV1) -> Iterator:
    """An iterator that starts its one pass over `dataset` on first use.

    Raises:
      ValueError: the dataset depends on a placeholder or a variable (use
        make_initializable_iterator).
    """
    random_seed.get_seed(None)  # as TF, which seeds its factory function from the next op seed
    outer = graph_lib.get_default_graph()
    g = FuncGraph("__inference_Dataset_dataset_factory", outer)
    with g.as_default():
        g.set_outputs([_copy_by_value(dataset._variant_tensor, g, {})])
    handle = apply_op("OneShotIterator", dataset_factory=FunctionRef(g),
                      **st.flat_attrs(dataset._structure))
    return Iterator(handle, None, dataset._structure)


def _copy_by_value(t, g: FuncGraph, memo: dict):
    """`t`'s op and everything it depends on (control inputs too), copied into `g`."""
    return _copy_op(t.op, g, memo).outputs[t.value_index]


def _copy_op(op, g: FuncGraph, memo: dict):
    if op not in memo:
        if op.type in _BY_VALUE_FORBIDDEN:
            raise ValueError(f"Cannot capture a placeholder (name:{op.name}, "
                             f"type:{op.type}) by value.")
        if any(o.dtype == dtypes.resource or o.dtype._is_ref_dtype for o in op.outputs):
            raise ValueError("Failed to create a one-shot iterator for a dataset. "
                             "`Dataset.make_one_shot_iterator()` does not support datasets "
                             "that capture stateful objects, such as a `Variable` or "
                             "`LookupTable`. In these cases, use "
                             "`Dataset.make_initializable_iterator()`. (Original error: "
                             f"cannot capture {op.name} of type {op.type} by value.)")
        inputs = tuple(_copy_by_value(i, g, memo) for i in op.inputs)
        control = [_copy_op(c, g, memo) for c in op.control_inputs]
        attrs = {k: v for k, v in op._attrs.items() if k != "_class"}
        memo[op] = g._create_op_internal(op.type, inputs, attrs, op.name,
                                         control_inputs=control)
    return memo[op]


def get_output_types(dataset_or_iterator):
    return dataset_or_iterator.output_types


def get_output_shapes(dataset_or_iterator):
    return dataset_or_iterator.output_shapes


def get_output_classes(dataset_or_iterator):
    return dataset_or_iterator.output_classes




# ---- iterator state in checkpoints -------------------------------------------------------

class _IteratorSaveable(SaveableObject):
    """An iterator's state as one checkpoint entry, "<resource name>_STATE" (TF's
    _IteratorSaveable): SerializeIterator saves it, DeserializeIterator restores it
    (kernels/dataset_state.py: the dataset's graph and the pass's position)."""

    def __init__(self, iterator_resource, name: str, external_state_policy: int):
        state = apply_op("SerializeIterator", resource_handle=iterator_resource,
                         external_state_policy=external_state_policy)
        super().__init__(iterator_resource, [SaveSpec(state, "", name + "_STATE",
                                                      device=iterator_resource.device)], name)

    def restore(self, restored_tensors, restored_shapes):
        with graph_lib.colocate_with(self.op.op):
            return apply_op("DeserializeIterator", resource_handle=self.op,
                            serialized=restored_tensors[0])


def make_saveable_from_iterator(iterator: Iterator, external_state_policy=None):
    """A SaveableObject that saves `iterator`'s position with tf.train.Saver.

    Add it to the `tf.GraphKeys.SAVEABLE_OBJECTS` collection (or pass it in the Saver's
    var_list): saving records the iterator's dataset and how many elements its current
    pass has given; restoring starts a pass over that dataset past them, so the next
    element is the one after the saved position.

    Args:
      iterator: a tf.data Iterator.
      external_state_policy: a `tf.data.experimental.ExternalStatePolicy` (default FAIL):
        what saving does when the dataset's functions hold state outside it (a py_func, a
        random op, a variable read): FAIL raises FailedPreconditionError when saving, WARN
        logs a warning, IGNORE saves anyway.

    Returns:
      The SaveableObject.
    """
    if external_state_policy is None:
        external_state_policy = ExternalStatePolicy.FAIL
    policy = int(getattr(external_state_policy, "value", external_state_policy))
    resource = iterator._iterator_resource
    return _IteratorSaveable(resource, resource.name, policy)
