"""`tf.train.warm_start` and `tf.train.VocabInfo`: initializing a new model's variables
from another model's checkpoint, by name (`var_name_to_prev_var_name` renames), with the
rows (or columns) of embedding-like variables remapped when the vocabulary changed.

Like `init_from_checkpoint` (train/checkpoint_utils.py) this only rewrites initializers:
the values load when the initializers run. A remapped variable's initializer restores the
old tensor, gathers the rows of the tokens the old vocabulary had, and takes the rest
(new tokens and the OOV buckets) from `backup_initializer` (zeros by default).
"""

from __future__ import annotations

import collections

import numpy as np

from tensorflux.framework import graph as graph_lib
from tensorflux.platform import tf_logging as logging
from tensorflux.train import checkpoint_utils

__all__ = ["VocabInfo", "warm_start"]


class VocabInfo(collections.namedtuple("VocabInfo", [
        "new_vocab", "new_vocab_size", "num_oov_buckets", "old_vocab", "old_vocab_size",
        "backup_initializer", "axis"])):
    """How a variable's rows (axis 0) or columns (axis 1) follow a vocabulary: the first
    `new_vocab_size` lines of file `new_vocab` plus `num_oov_buckets` OOV rows, warm-started
    from the checkpoint's rows for the first `old_vocab_size` lines (-1: all) of
    `old_vocab`."""

    def __new__(cls, new_vocab, new_vocab_size, num_oov_buckets, old_vocab,
                old_vocab_size=-1, backup_initializer=None, axis=0):
        if axis not in (0, 1):
            raise ValueError(f"Invalid axis entry for VocabInfo: {axis}; axis must be 0 or 1.")
        return super().__new__(cls, new_vocab, new_vocab_size, num_oov_buckets, old_vocab,
                               old_vocab_size, backup_initializer, axis)


def warm_start(ckpt_to_initialize_from, vars_to_warm_start=".*",
               var_name_to_vocab_info=None, var_name_to_prev_var_name=None) -> None:
    """Warm-starts variables from a checkpoint (or the latest one in a directory).

    `vars_to_warm_start`: a regular expression over the TRAINABLE_VARIABLES collection; a
    list of regular expressions over GLOBAL_VARIABLES; a list of variables; or None (only
    the variables of `var_name_to_vocab_info`).

    Raises:
      ValueError: a variable's tensor is missing from the checkpoint or has another shape;
        a key of `var_name_to_vocab_info` or `var_name_to_prev_var_name` names no variable
        being warm-started.
    """
    vocab_infos = dict(var_name_to_vocab_info or {})
    prev_names = dict(var_name_to_prev_var_name or {})
    prefix = checkpoint_utils._prefix(ckpt_to_initialize_from)
    stored = checkpoint_utils.load_checkpoint(prefix).get_variable_to_shape_map()
    grouped = _grouped(vars_to_warm_start, vocab_infos)
    used_vocab, used_prev = set(), set()
    for name, parts in grouped.items():
        prev = prev_names.get(name, name)
        if name in prev_names:
            used_prev.add(name)
        info = vocab_infos.get(name)
        if info is None:
            checkpoint_utils._init_one(parts, prefix, prev, stored)
            continue
        used_vocab.add(name)
        _warm_start_with_vocab(parts, prefix, prev, stored, info)
    for what, given, used in (("var_name_to_vocab_info", vocab_infos, used_vocab),
                              ("var_name_to_prev_var_name", prev_names, used_prev)):
        unused = set(given) - used
        if unused:
            raise ValueError(f"You provided the following variables in {what} that were not "
                             f"used: {unused}.  Perhaps you misspelled them?  Here is the list "
                             f"of viable variable names: {list(grouped)}")
    logging.info("Warm-started %d variables.", len(grouped))


def _grouped(vars_to_warm_start, vocab_infos) -> dict:
    """{variable name: [the variable] or its parts in order}, in collection order."""
    from tensorflux.variables import variables

    keys = graph_lib.GraphKeys
    if isinstance(vars_to_warm_start, str):
        chosen = graph_lib.get_collection(keys.TRAINABLE_VARIABLES, scope=vars_to_warm_start)
    elif vars_to_warm_start is None:
        chosen = [v for v in graph_lib.get_collection(keys.TRAINABLE_VARIABLES)
                  if checkpoint_utils._whole_name(v.op.name) in vocab_infos]
    elif all(isinstance(v, str) for v in vars_to_warm_start):
        chosen = [v for scope in vars_to_warm_start
                  for v in graph_lib.get_collection(keys.GLOBAL_VARIABLES, scope=scope)]
    elif all(isinstance(v, variables.Variable) for v in vars_to_warm_start):
        chosen = list(vars_to_warm_start)
    else:
        raise ValueError(f"vars_to_warm_start must be a string, a list of strings or a list "
                         f"of Variables, given: {vars_to_warm_start}")
    grouped: dict = {}
    for v in chosen:
        parts = grouped.setdefault(checkpoint_utils._whole_name(v.op.name), [])
        if all(p is not v for p in parts):
            parts.append(v)
    for parts in grouped.values():
        if len(parts) > 1:
            parts.sort(key=lambda v: v._get_save_slice_info().var_offset)
    return grouped


def _lines(path, limit: int) -> list[str]:
    from tensorflux.io import gfile

    with gfile.GFile(path, "r") as f:
        tokens = [line.rstrip("\r\n") for line in f]
    return tokens if limit is None or limit < 0 else tokens[:limit]


def _warm_start_with_vocab(parts, prefix: str, prev: str, stored: dict, info) -> None:
    from tensorflux.framework import dtypes
    from tensorflux.ops import (
        array_ops,
        comparison_ops,
        constant_op,
        gather_ops,
        joining_ops,
        save_restore_ops,
        slicing_ops,
        state_ops,
    )

    first = parts[0]
    slice_info = first._get_save_slice_info()
    full_shape = list(slice_info.full_shape) if slice_info is not None else \
        first.shape.as_list()
    axis = info.axis
    if len(full_shape) != 2 and not (axis == 0 and len(full_shape) == 1):
        raise ValueError(f"Vocabulary remapping needs a 2-D variable (or 1-D for axis 0): "
                         f"{first.op.name} has shape {full_shape}")
    if prev not in stored:
        raise ValueError(f"Tensor {prev} is not found in {prefix} checkpoint {stored}")
    new_tokens = _lines(info.new_vocab, info.new_vocab_size)
    if info.new_vocab_size is not None and info.new_vocab_size >= 0 and \
            len(new_tokens) < info.new_vocab_size:
        raise ValueError(f"new_vocab {info.new_vocab} has {len(new_tokens)} lines, fewer than "
                         f"new_vocab_size {info.new_vocab_size}")
    rows = len(new_tokens) + info.num_oov_buckets
    if full_shape[axis] != rows:
        raise ValueError(f"Variable {first.op.name} has {full_shape[axis]} entries on axis "
                         f"{axis}; its VocabInfo gives {len(new_tokens)} tokens + "
                         f"{info.num_oov_buckets} OOV buckets = {rows}")
    old_index: dict[str, int] = {}
    for i, token in enumerate(_lines(info.old_vocab, info.old_vocab_size)):
        old_index.setdefault(token, i)
    source = np.array([old_index.get(t, -1) for t in new_tokens] +
                      [-1] * info.num_oov_buckets, np.int64)
    old_shape = list(stored[prev])
    if len(old_shape) != len(full_shape) or source.max(initial=-1) >= old_shape[axis] or \
            any(old_shape[k] != full_shape[k] for k in range(len(full_shape)) if k != axis):
        raise ValueError(f"Shape of variable {first.op.name} ({tuple(full_shape)}) cannot be "
                         f"remapped from tensor {prev} ({old_shape}) with the vocabularies "
                         f"given")
    dtype = first.dtype.base_dtype
    g = first.graph
    with g.as_default(), graph_lib.name_scope(checkpoint_utils._whole_name(first.op.name) +
                                              "/warm_start/"):
        old = save_restore_ops.restore_v2(prefix, [prev], [""], [dtype], shapes=[old_shape],
                                          name="checkpoint_initializer")[0]
        gathered = gather_ops.gather(old, constant_op.constant(np.maximum(source, 0)),
                                     axis=axis)
        mask_shape = [1] * len(full_shape)
        mask_shape[axis] = rows
        mask = joining_ops.broadcast_to(
            constant_op.constant((source >= 0).reshape(mask_shape), dtype=dtypes.bool),
            full_shape)
        if info.backup_initializer is not None:
            backup = info.backup_initializer(full_shape, dtype=dtype)
        else:
            backup = array_ops.zeros(full_shape, dtype)
        value = comparison_ops.where(mask, gathered, backup)
    for v in parts:
        part_info = v._get_save_slice_info()
        with g.as_default(), graph_lib.name_scope(v.op.name + "/"), \
                g.colocate_with(None, ignore_existing=True), g.device(v.handle.device):
            part = value if part_info is None or part_info.var_shape == full_shape else \
                slicing_ops.slice(value, part_info.var_offset, part_info.var_shape)
            v._initializer_op = state_ops.assign_variable_op(v.handle, part,
                                                             name="warm_start_init")
        v._initial_value = part
