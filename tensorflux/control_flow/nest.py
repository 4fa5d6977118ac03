"""TensorFlow's structure utilities as one module: `tf.nest` (flatten, pack_sequence_as,
map_structure, assert_same_structure, is_nested) and, for TF1 programs, what
`tf.contrib.framework.nest` / `tensorflow.python.util.nest` add: `is_sequence`, the
"up to a shallow structure" forms and `flatten_dict_items`.

Lists, tuples (namedtuples too) and dicts are the containers; a dict's children go in
sorted key order (tensorflux/control_flow/control_flow_util.py holds the core). With
`expand_composites=True`, composite values (SparseTensor, RaggedTensor, IndexedSlices,
datasets) and their TypeSpecs (but TensorSpec) are containers too: of their components
(`_to_components`, `_component_specs`), packed back with `_from_components`.
"""

from __future__ import annotations

from tensorflux.control_flow import control_flow_util as _util
from tensorflux.control_flow.control_flow_util import _children, _sorted_keys, is_nested
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_spec import TensorSpec
from tensorflux.framework.type_spec import TypeSpec

__all__ = ["assert_same_structure", "flatten", "is_nested", "map_structure",
           "pack_sequence_as", "is_sequence", "assert_shallow_structure", "flatten_up_to",
           "map_structure_up_to", "flatten_dict_items"]


def _spec_of_composite(x):
    """The TypeSpec of a composite value or spec (what `expand_composites` expands), or
    None for anything else."""
    if isinstance(x, TypeSpec):
        return None if isinstance(x, TensorSpec) else x
    if isinstance(x, (Tensor, type)) or not hasattr(type(x), "_type_spec"):
        return None
    return x._type_spec


def _expand(structure):
    """`structure` with each composite replaced by its components, recursively: a dict
    {spec class name: components}, so that composites of different kinds differ in
    structure."""
    spec = _spec_of_composite(structure)
    if spec is not None:
        parts = spec._component_specs if structure is spec else spec._to_components(structure)
        return {type(spec).__name__: _expand(parts)}
    if is_nested(structure):
        return _util._rebuild(structure, [_expand(c) for c in _children(structure)])
    return structure


def flatten(structure, expand_composites: bool = False) -> list:
    """The leaves of `structure` in order (dict values by sorted key); a leaf gives [leaf].
    `expand_composites`: composite values and specs give their components."""
    if expand_composites:
        structure = _expand(structure)
    return _util.flatten(structure)


def _pack_expanded(structure, it):
    spec = _spec_of_composite(structure)
    if spec is not None:
        return spec._from_components(_pack_expanded(spec._component_specs, it))
    if is_nested(structure):
        return _util._rebuild(structure, [_pack_expanded(c, it) for c in _children(structure)])
    return next(it)


def pack_sequence_as(structure, flat_sequence, expand_composites: bool = False):
    """`flat_sequence` (as `flatten` gives it) shaped like `structure`; with
    `expand_composites`, composites of `structure` are rebuilt from their components.

    Raises:
      ValueError: the number of leaves differs.
    """
    if not expand_composites:
        return _util.pack_sequence_as(structure, flat_sequence)
    flat_sequence = list(flat_sequence)
    n = len(flatten(structure, expand_composites=True))
    if n != len(flat_sequence):
        raise ValueError(f"Could not pack sequence. Structure had {n} elements, but "
                         f"flat_sequence had {len(flat_sequence)} elements.  Structure: "
                         f"{structure}, flat_sequence: {flat_sequence}.")
    return _pack_expanded(structure, iter(flat_sequence))


def assert_same_structure(nest1, nest2, check_types: bool = True,
                          expand_composites: bool = False) -> None:
    """Raises unless `nest1` and `nest2` nest the same way (with `expand_composites`,
    composites must be of one kind and their components nest alike).

    Raises:
      ValueError, TypeError: TensorFlow's, as control_flow_util.assert_same_structure.
    """
    if expand_composites:
        nest1, nest2 = _expand(nest1), _expand(nest2)
    _util.assert_same_structure(nest1, nest2, check_types)


def map_structure(func, *structure, check_types: bool = True,
                  expand_composites: bool = False):
    """`func` applied leafwise to `structure`s (which must nest alike); shaped like the
    first (its composites rebuilt from the results, with `expand_composites`).

    Raises:
      ValueError, TypeError: the structures differ.
    """
    if not expand_composites:
        return _util.map_structure(func, *structure, check_types=check_types)
    for other in structure[1:]:
        assert_same_structure(structure[0], other, check_types, expand_composites=True)
    flat = [flatten(s, expand_composites=True) for s in structure]
    return pack_sequence_as(structure[0], [func(*xs) for xs in zip(*flat, strict=True)],
                            expand_composites=True)


def is_sequence(seq) -> bool:
    """TF1's name for `is_nested`."""
    return is_nested(seq)


def assert_shallow_structure(shallow_tree, input_tree, check_types: bool = True) -> None:
    """Checks that `input_tree` has `shallow_tree`'s structure down to the shallow tree's
    leaves (below them the input may go deeper).

    Raises:
      TypeError: a container of another type (with `check_types`), or a leaf of the input
        where the shallow tree has a container.
      ValueError: containers of different lengths or, for dicts, keys.
    """
    if not is_nested(shallow_tree):
        return
    if not is_nested(input_tree):
        raise TypeError(f"If shallow structure is a sequence, input must also be a sequence. "
                        f"Input has type: {type(input_tree).__name__}.")
    if check_types and not isinstance(input_tree, type(shallow_tree)):
        raise TypeError(f"The two structures don't have the same sequence type. Input "
                        f"structure has type {type(input_tree).__name__}, while shallow "
                        f"structure has type {type(shallow_tree).__name__}.")
    if len(input_tree) != len(shallow_tree):
        raise ValueError(f"The two structures don't have the same sequence length. Input "
                         f"structure has length {len(input_tree)}, while shallow structure "
                         f"has length {len(shallow_tree)}.")
    if isinstance(shallow_tree, dict):
        if not isinstance(input_tree, dict) or set(input_tree) != set(shallow_tree):
            keys = sorted(input_tree) if isinstance(input_tree, dict) else "none"
            raise ValueError(f"The two structures don't have the same keys. Input structure "
                             f"has keys {keys}, while shallow structure has keys "
                             f"{_sorted_keys(shallow_tree)}.")
    for shallow, given in zip(_children(shallow_tree), _children(input_tree), strict=True):
        assert_shallow_structure(shallow, given, check_types=check_types)


def flatten_up_to(shallow_tree, input_tree, check_types: bool = True) -> list:
    """The subtrees of `input_tree` at `shallow_tree`'s leaves, in flatten's order."""
    assert_shallow_structure(shallow_tree, input_tree, check_types=check_types)
    if not is_nested(shallow_tree):
        return [input_tree]
    out = []
    for shallow, given in zip(_children(shallow_tree), _children(input_tree), strict=True):
        out.extend(flatten_up_to(shallow, given, check_types=check_types))
    return out


def map_structure_up_to(shallow_tree, func, *inputs, check_types: bool = True):
    """`func` applied to the subtrees of `inputs` at `shallow_tree`'s leaves, packed as
    `shallow_tree`.

    Raises:
      ValueError: no inputs.
    """
    if not inputs:
        raise ValueError("Cannot map over no sequences")
    flat = [flatten_up_to(shallow_tree, given, check_types=check_types) for given in inputs]
    results = [func(*args) for args in zip(*flat, strict=True)]
    return pack_sequence_as(shallow_tree, results)


def flatten_dict_items(dictionary) -> dict:
    """A dict whose nested-tuple keys (with values of the same structure) are split into
    one entry per leaf.

    Raises:
      TypeError: `dictionary` is not a dict.
      ValueError: a key and its value differ in structure, or a leaf key repeats.
    """
    if not isinstance(dictionary, dict):
        raise TypeError("input must be a dictionary")
    out: dict = {}
    for key, value in dictionary.items():
        if not is_nested(key):
            if key in out:
                raise ValueError(f"Could not flatten dictionary: key {key} is not unique.")
            out[key] = value
            continue
        flat_keys, flat_values = flatten(key), flatten(value) if is_nested(value) else None
        if flat_values is None or len(flat_keys) != len(flat_values):
            raise ValueError(f"Could not flatten dictionary. Key had {len(flat_keys)} "
                             f"elements, but value had "
                             f"{len(flat_values) if flat_values is not None else 1} "
                             f"elements. Key: {key}, value: {value}.")
        for k, v in zip(flat_keys, flat_values, strict=True):
            if k in out:
                raise ValueError(f"Could not flatten dictionary: key {k} is not unique.")
            out[k] = v
    return out
