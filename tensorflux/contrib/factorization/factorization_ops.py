"""Weighted alternating least squares (TF1's `tf.contrib.factorization.WALSModel`).

A sparse [input_rows, input_cols] matrix A is factored as U V^T (U: row factors, V: column
factors, n_components columns each) by minimizing

    sum_ij W_ij (A_ij - u_i . v_j)^2 + lambda (|U|^2 + |V|^2)

over all entries, the unobserved ones read as 0, with W_ij = w0 (`unobserved_weight`) where
A_ij is unobserved and W_ij = w0 + r_i c_j where it is observed (r, c: `row_weights`,
`col_weights`; both None make W = w0 everywhere, plain ALS of the matrix with zeros).
Holding V fixed, row i's factor solves the normal equations

    (w0 V^T V + lambda I + sum_{j observed} r_i c_j v_j v_j^T) u_i
        = sum_{j observed} (w0 + r_i c_j) A_ij v_j,

the observed sums from the WALSComputePartialLhsAndRhs op and V^T V (the gramian) computed
once per sweep. A sweep over the rows then over the columns, as TF1's tutorials run it:

    model = WALSModel(rows, cols, k, unobserved_weight=0.1, regularization=0.05)
    row_update = model.update_row_factors(sp_input=A)[1]
    col_update = model.update_col_factors(sp_input=A)[1]
    sess.run(model.initialize_op); sess.run(model.worker_init)
    for _ in range(sweeps):
        sess.run(model.row_update_prep_gramian_op)   # V^T V
        sess.run(model.initialize_row_update_op)     # caches V, c and V^T V
        sess.run(row_update)
        sess.run(model.col_update_prep_gramian_op)   # U^T U
        sess.run(model.initialize_col_update_op)
        sess.run(col_update)

Factors and weights are split into shards of consecutive rows (the first size %
num_shards shards one row longer: embedding_lookup's "div" strategy). With the caches on,
an update reads the other side's factors, weights and gramian from worker-local copies
(LOCAL_VARIABLES, made empty by `worker_init`) that `initialize_row_update_op` /
`initialize_col_update_op` fill; with them off it reads the variables themselves.
"""

from __future__ import annotations

import numbers

import numpy as np

from tensorflux.control_flow import builders
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.sparse_tensor import SparseTensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    factorization_ops,
    gather_ops,
    joining_ops,
    linalg_factor_ops,
    linalg_ops,
    math_ops,
    matrix_ops,
    random_ops,
    reduction_ops,
    state_ops,
    unary_ops,
)
from tensorflux.variables import variables

_F32 = dtypes.float32


class _Side:
    """One side of the factorization (rows or columns): its sharded factors and weights,
    its gramian variable, and the caches the other side's updates read."""

    __slots__ = ("name", "size", "factors", "weights", "gramian", "factors_cache",
                 "weights_cache", "gramian_cache", "prep_gramian")

    def __init__(self, name, size, factors, weights, gramian):
        self.name, self.size = name, size
        self.factors, self.weights, self.gramian = factors, weights, gramian
        self.factors_cache, self.weights_cache, self.gramian_cache = factors, weights, gramian
        self.prep_gramian = None

    def sharding(self, ids):
        """(shard, position in the shard) of int64 ids under the "div" strategy."""
        shards = len(self.factors)
        per, extras = self.size // shards, self.size % shards
        shard = math_ops.maximum(ids // (per + 1), (ids - extras) // per)
        position = comparison_ops.where(shard < extras, ids % (per + 1), (ids - extras) % per)
        return shard, position


class WALSModel:
    """Matrix factorization by weighted alternating least squares (module docstring).

    Args:
      input_rows, input_cols: the matrix's shape.
      n_components: the factors' width k.
      unobserved_weight: w0, the weight of every entry (the whole weight of unobserved ones).
      regularization: lambda, the weight of the factors' squared norms (None: 0).
      row_init, col_init: "random" (standard normals), or the initial factors: one
        [rows, k] value when there is one shard, else a list with one value per shard.
      num_row_shards, num_col_shards: how many variables each side's factors span.
      row_weights, col_weights: None (both), one non-negative number for every row
        (column), or a list with one list of weights per shard.
      use_factors_weights_cache: updates read cached copies of the other side's factors
        and weights (filled by initialize_row/col_update_op).
      use_gramian_cache: updates read a cached copy of the other side's gramian.
      use_scoped_vars: accepted for TF1's signature; the variables are made in the current
        variable scope either way.

    Raises:
      ValueError: a non-positive shape, width or shard count, more shards than rows, only
        one of the weights None, or initial values / weights not matching the shards.
    """

    def __init__(self, input_rows, input_cols, n_components, unobserved_weight=0.1,
                 regularization=None, row_init="random", col_init="random",
                 num_row_shards=1, num_col_shards=1, row_weights=1, col_weights=1,
                 use_factors_weights_cache=True, use_gramian_cache=True,
                 use_scoped_vars=False):
        del use_scoped_vars
        for value, what in ((input_rows, "input_rows"), (input_cols, "input_cols"),
                            (n_components, "n_components"), (num_row_shards, "num_row_shards"),
                            (num_col_shards, "num_col_shards")):
            if not isinstance(value, numbers.Integral) or value <= 0:
                raise ValueError(f"{what} must be a positive int, got {value!r}")
        if num_row_shards > input_rows or num_col_shards > input_cols:
            raise ValueError("there must be at least one row (column) per shard")
        if (row_weights is None) != (col_weights is None):
            raise ValueError("row_weights and col_weights must both be None or both set")
        if unobserved_weight < 0:
            raise ValueError(f"unobserved_weight must be non-negative, got {unobserved_weight}")
        self._k = int(n_components)
        # Updates and projections read the gramian variables (or their caches), as TF1's do;
        # True: they compute the other side's gramian from its factors instead (the
        # estimator's prediction and evaluation, where no prep op ran).
        self._fresh_gramians = False
        self._w0 = float(unobserved_weight)
        self._lambda = float(regularization) if regularization else 0.0
        self._rows = _Side("row", int(input_rows),
                           _create_factors(input_rows, self._k, num_row_shards, row_init,
                                           "row_factors"),
                           _create_weights(row_weights, input_rows, num_row_shards,
                                           "row_weights"),
                           _gramian_variable(self._k, "row_gramian"))
        self._cols = _Side("col", int(input_cols),
                           _create_factors(input_cols, self._k, num_col_shards, col_init,
                                           "col_factors"),
                           _create_weights(col_weights, input_cols, num_col_shards,
                                           "col_weights"),
                           _gramian_variable(self._k, "col_gramian"))
        with graph_lib.name_scope("row_prepare_gramian"):
            self._rows.prep_gramian = _prepare_gramian(self._cols)
        with graph_lib.name_scope("col_prepare_gramian"):
            self._cols.prep_gramian = _prepare_gramian(self._rows)
        with graph_lib.name_scope("transient_vars"):
            self._make_caches(use_factors_weights_cache, use_gramian_cache)
        sides = (self._rows, self._cols)
        self._initialize_op = builders.group(
            *[v.initializer for s in sides for v in s.factors + (s.weights or [])],
            *[s.gramian.initializer for s in sides], name="initialize_op")

    # ---- the TF1 properties --------------------------------------------------------------
    row_factors = property(lambda self: list(self._rows.factors),
                           doc="The row factors' shards (variables of [rows, k]).")
    col_factors = property(lambda self: list(self._cols.factors),
                           doc="The column factors' shards (variables of [cols, k]).")
    row_weights = property(lambda self: self._rows.weights and list(self._rows.weights),
                           doc="The row weights' shards, or None.")
    col_weights = property(lambda self: self._cols.weights and list(self._cols.weights),
                           doc="The column weights' shards, or None.")
    initialize_op = property(lambda self: self._initialize_op,
                             doc="Initializes the factors, weights and gramians.")
    worker_init = property(lambda self: self._worker_init,
                           doc="Initializes this worker's caches (empty).")
    row_update_prep_gramian_op = property(
        lambda self: self._rows.prep_gramian,
        doc="Computes the column factors' gramian V^T V for the row updates.")
    col_update_prep_gramian_op = property(
        lambda self: self._cols.prep_gramian,
        doc="Computes the row factors' gramian U^T U for the column updates.")
    initialize_row_update_op = property(
        lambda self: self._row_updates_init,
        doc="Fills the caches the row updates read (column factors, weights, gramian).")
    initialize_col_update_op = property(
        lambda self: self._col_updates_init,
        doc="Fills the caches the column updates read (row factors, weights, gramian).")

    def _make_caches(self, cache_factors: bool, cache_gramian: bool):
        """Worker-local copies of each side's factors, weights and gramian. Initializing
        one side's updates fills the other side's copies and empties its own."""
        fills = {"row": [], "col": []}
        resets = {"row": [], "col": []}
        local = []
        for side in (self._rows, self._cols):
            def cached(var, name, on, side=side):
                if not on:
                    return var
                cache = variables.Variable(
                    np.zeros(0, np.float32), trainable=False, validate_shape=False,
                    collections=[graph_lib.GraphKeys.LOCAL_VARIABLES], name=name)
                local.append(cache)
                fills[side.name].append(state_ops.assign(cache, var.value(),
                                                         validate_shape=False))
                resets[side.name].append(state_ops.assign(
                    cache, np.zeros(0, np.float32), validate_shape=False))
                return cache

            side.factors_cache = [cached(v, f"{side.name}_factors_cache_{i}", cache_factors)
                                  for i, v in enumerate(side.factors)]
            if side.weights is not None:
                side.weights_cache = [cached(v, f"{side.name}_wt_cache_{i}", cache_factors)
                                      for i, v in enumerate(side.weights)]
            side.gramian_cache = cached(side.gramian, f"{side.name}_gramian_cache",
                                        cache_gramian)
        self._row_updates_init = builders.group(*fills["col"], *resets["row"],
                                                name="row_updates_init")
        self._col_updates_init = builders.group(*fills["row"], *resets["col"],
                                                name="col_updates_init")
        self._worker_init = builders.group(*[v.initializer for v in local],
                                           name="worker_init")

    # ---- updates ------------------------------------------------------------------------
    def update_row_factors(self, sp_input=None, transpose_input=False):
        """Solves for the row factors of the rows present in `sp_input`.

        Args:
          sp_input: a SparseTensor of entries (row, column) of A with global indices (rows
            with no entry are not updated).
          transpose_input: `sp_input` holds entries (column, row) instead.

        Returns:
          (new_values, update_op, unregularized_loss, regularization, sum_weights): the
          [rows present, k] new factors in the order the rows first appear; the op that
          writes them into the shards; the weighted squared error of those rows with the
          new factors, the regularization (lambda |U_I|^2 for them plus lambda |V|^2), and
          the sum of their weights, the first two and the last scaled by
          input_rows / rows present (so sqrt(unregularized_loss / sum_weights) is the
          weighted root mean square error).
        """
        return self._process_input(self._rows, self._cols, sp_input, transpose_input)

    def update_col_factors(self, sp_input=None, transpose_input=False):
        """`update_row_factors` for the columns: `sp_input` holds entries (row, column) of
        A, or (column, row) with `transpose_input`."""
        return self._process_input(self._cols, self._rows, sp_input, not transpose_input)

    def project_row_factors(self, sp_input=None, transpose_input=False,
                            projection_weights=None):
        """The row factors that new rows `sp_input` (rows numbered from 0) would get against
        the current column factors, with `projection_weights` as their row weights (default
        ones); nothing is updated."""
        return self._process_input(self._rows, self._cols, sp_input, transpose_input,
                                   projection_weights=projection_weights, project=True)[0]

    def project_col_factors(self, sp_input=None, transpose_input=False,
                            projection_weights=None):
        """`project_row_factors` for new columns."""
        return self._process_input(self._cols, self._rows, sp_input, not transpose_input,
                                   projection_weights=projection_weights, project=True)[0]

    def _process_input(self, left, right, sp_input, transposed, projection_weights=None,
                       project=False):
        """Solves for `left`'s factors of the ids in `sp_input` against `right`'s (cached)
        factors; `transposed`: the entries are (right id, left id)."""
        if not isinstance(sp_input, SparseTensor):
            raise TypeError(f"sp_input must be a SparseTensor, got {type(sp_input).__name__}")
        with graph_lib.name_scope(f"{left.name}_update" if not project
                                  else f"{left.name}_project"):
            indices = sp_input.indices
            values = math_ops.cast(sp_input.values, _F32)
            left_ids = indices[:, 1] if transposed else indices[:, 0]
            right_ids = indices[:, 0] if transposed else indices[:, 1]
            ids, local = gather_ops.unique(left_ids, out_idx=dtypes.int64)
            batch = array_ops.size(ids, out_type=dtypes.int64)
            entries = joining_ops.stack([local, right_ids], axis=1)
            right_factors = _concat([f.value() for f in right.factors_cache], self._k)
            gramian = (_gramian(right) if self._fresh_gramians else
                       array_ops.reshape(right.gramian_cache.value(), [self._k, self._k]))
            input_w, factor_w = self._weights(left, right, ids, batch, projection_weights,
                                              project)
            partial_lhs, rhs = factorization_ops.wals_compute_partial_lhs_and_rhs(
                right_factors, factor_w, self._w0, input_w, entries, values,
                np.zeros(0, np.float32), batch, False)
            lhs = self._w0 * gramian + self._lambda * np.eye(self._k, dtype=np.float32)
            new = array_ops.squeeze(linalg_factor_ops.matrix_solve(
                array_ops.expand_dims(lhs, 0) + partial_lhs, array_ops.expand_dims(rhs, -1)), [2])
            if project:
                return new, None, None, None, None
            update = self._write(left, ids, new)
            losses = self._losses(left.size, right.size, new, right_factors, gramian,
                                  entries, values, input_w, factor_w, batch)
        return (new, update) + losses

    def _weights(self, left, right, ids, batch, projection_weights, project):
        """The left ids' weights and the right side's, zeros when the model has none."""
        if left.weights is None:
            return (array_ops.zeros(array_ops.reshape(batch, [1]), _F32),
                    array_ops.zeros([right.size], _F32))
        if project:
            # One weight for all (default 1) or one per projected row.
            weights = math_ops.cast(convert_to_tensor(
                1.0 if projection_weights is None else projection_weights), _F32)
            input_w = array_ops.ones(array_ops.reshape(batch, [1]), _F32) * weights
        else:
            input_w = gather_ops.gather(_concat([w.value() for w in left.weights], None), ids)
        return input_w, _concat([w.value() for w in right.weights_cache], None)

    def _write(self, left, ids, new):
        """The op writing the new factors of `ids` into `left`'s shards."""
        if len(left.factors) == 1:
            return state_ops.scatter_update(left.factors[0], ids, new).op
        shard, position = left.sharding(ids)
        shard = math_ops.cast(shard, dtypes.int32)
        n = len(left.factors)
        positions = gather_ops.dynamic_partition(position, shard, n)
        rows = gather_ops.dynamic_partition(new, shard, n)
        return builders.group(*[state_ops.scatter_update(var, p, r) for var, p, r in
                                zip(left.factors, positions, rows, strict=True)])

    def _losses(self, left_size, right_size, new, right_factors, gramian, entries, values,
                input_w, factor_w, batch):
        """(unregularized loss, regularization, sum of weights) of the updated ids, each
        scaled to the whole side (`update_row_factors`)."""
        w0 = self._w0
        predicted = factorization_ops.masked_matmul(new, right_factors, entries, False, True)
        observed_w = (gather_ops.gather(input_w, entries[:, 0])
                      * gather_ops.gather(factor_w, entries[:, 1]))
        # Every entry weighs w0 against a zero target; observed ones add their own term.
        error = (reduction_ops.reduce_sum((w0 + observed_w) * unary_ops.square(values - predicted)
                                          - w0 * unary_ops.square(predicted))
                 + w0 * reduction_ops.reduce_sum(matrix_ops.matmul(new, gramian) * new))
        scale = left_size / math_ops.cast(batch, _F32)
        # The other side's squared norm is its gramian's trace, as TF1 reads it.
        regularization = (self._lambda * scale * reduction_ops.reduce_sum(unary_ops.square(new))
                          + self._lambda * reduction_ops.reduce_sum(linalg_ops.diag_part(gramian)))
        sum_weights = scale * (w0 * math_ops.cast(batch, _F32) * right_size
                               + reduction_ops.reduce_sum(observed_w))
        return error * scale, regularization, sum_weights


def _shard_sizes(size: int, shards: int) -> list[int]:
    per, extras = divmod(size, shards)
    return [per + 1 if i < extras else per for i in range(shards)]


def _create_factors(size, k, shards, init, name):
    sizes = _shard_sizes(size, shards)
    if isinstance(init, str):
        if init != "random":
            raise ValueError(f"{name}'s init must be 'random' or values, got {init!r}")
        values = [lambda n=n: random_ops.random_normal([n, k]) for n in sizes]
    else:
        values = list(init) if isinstance(init, (list, tuple)) and shards > 1 else [init]
        if len(values) != shards:
            raise ValueError(f"{name}: {len(values)} initial values for {shards} shards")
        values = [math_ops.cast(convert_to_tensor(v), _F32) for v in values]
        for v, n in zip(values, sizes, strict=True):
            if not v.shape.is_compatible_with([n, k]):
                raise ValueError(f"{name}: an initial value of shape {v.shape} for a shard "
                                 f"of shape [{n}, {k}]")
    return [variables.Variable(v, dtype=_F32, name=f"{name}_shard_{i}")
            for i, v in enumerate(values)]


def _create_weights(init, size, shards, name):
    if init is None:
        return None
    sizes = _shard_sizes(size, shards)
    if isinstance(init, numbers.Real):
        if init < 0:
            raise ValueError(f"{name} must be non-negative, got {init}")
        values = [np.full(n, init, np.float32) for n in sizes]
    else:
        values = [np.asarray(w, np.float32) for w in init]
        if len(values) != shards or any(v.shape != (n,) for v, n in
                                        zip(values, sizes, strict=True)):
            raise ValueError(f"{name} must hold one list per shard of the shard's length "
                             f"{sizes}, got lengths {[np.shape(v) for v in values]}")
    return [variables.Variable(v, name=f"{name}_shard_{i}") for i, v in enumerate(values)]


def _gramian_variable(k, name):
    return variables.Variable(np.zeros((k, k), np.float32), name=name, trainable=False)


def _gramian(side: _Side):
    """`side`'s gramian F^T F over its shards."""
    parts = [matrix_ops.matmul(f.value(), f.value(), transpose_a=True) for f in side.factors]
    return parts[0] if len(parts) == 1 else math_ops.add_n(parts)


def _prepare_gramian(side: _Side):
    """The op computing `side`'s gramian into its variable."""
    return state_ops.assign(side.gramian, _gramian(side)).op


def _concat(parts, k):
    out = parts[0] if len(parts) == 1 else joining_ops.concat(parts, 0)
    return array_ops.reshape(out, [-1] if k is None else [-1, k])
