"""`tf.contrib.opt.ExternalOptimizerInterface` and `ScipyOptimizerInterface`: a loss
minimized by an optimizer outside the graph (SciPy's `scipy.optimize.minimize`), which
calls back into the session for the loss and its gradient at each point it tries.

The variables are packed into one float64 vector (each flattened, in `var_list` order);
each evaluation assigns a point to the variables and runs the loss, its gradient and any
constraint in one step; at the end the optimum is assigned to the variables.
"""

from __future__ import annotations

import numpy as np

from tensorflux.autodiff import gradients as gradients_lib
from tensorflux.control_flow import builders
from tensorflux.ops import array_ops, joining_ops
from tensorflux.platform import tf_logging as logging
from tensorflux.runtime.session import get_default_session
from tensorflux.variables import variables


def _flat(tensors):
    return joining_ops.concat([array_ops.reshape(t, [-1]) for t in tensors], 0) \
        if tensors else None


def _gradients_or_zeros(loss, var_list):
    grads = gradients_lib.gradients(loss, var_list)
    return [array_ops.zeros_like(v.read_value()) if g is None else g
            for g, v in zip(grads, var_list, strict=True)]


class ExternalOptimizerInterface:
    """Base class of optimizers that run outside the graph; subclasses implement
    `_minimize(initial_val, loss_grad_func, equality_funcs, equality_grad_funcs,
    inequality_funcs, inequality_grad_funcs, packed_bounds, step_callback,
    optimizer_kwargs)`.

    Args:
      loss: the scalar Tensor to minimize.
      var_list: the variables to vary (default: the trainable ones).
      equalities, inequalities: Tensors that must be == 0 and >= 0 at the optimum.
      var_to_bounds: {variable: (lower, upper)}, each a scalar or an array of the variable's
        shape; None (or -inf/inf) for no bound.
      **optimizer_kwargs: passed to the external optimizer.
    """

    def __init__(self, loss, var_list=None, equalities=None, inequalities=None,
                 var_to_bounds=None, **optimizer_kwargs):
        self._loss = loss
        self._equalities = list(equalities or [])
        self._inequalities = list(inequalities or [])
        self._vars = list(variables.trainable_variables() if var_list is None else var_list)
        self._packed_bounds = None if var_to_bounds is None else \
            self._pack_bounds(var_to_bounds)
        self._update_placeholders = [array_ops.placeholder(v.dtype.base_dtype,
                                                           shape=v.shape)
                                     for v in self._vars]
        self._var_updates = builders.group(*[
            v.assign(p, read_value=False)
            for v, p in zip(self._vars, self._update_placeholders, strict=True)])
        self._packed_var = _flat([v.read_value() for v in self._vars])
        self._packed_loss_grad = _flat(_gradients_or_zeros(loss, self._vars))
        self._packed_equality_grads = [_flat(_gradients_or_zeros(c, self._vars))
                                       for c in self._equalities]
        self._packed_inequality_grads = [_flat(_gradients_or_zeros(c, self._vars))
                                         for c in self._inequalities]
        sizes = [int(np.prod(v.shape.as_list())) for v in self._vars]
        ends = np.cumsum([0] + sizes)
        self._packing_slices = [slice(a, b) for a, b in zip(ends[:-1], ends[1:], strict=True)]
        self.optimizer_kwargs = optimizer_kwargs

    def _pack_bounds(self, var_to_bounds):
        lower, upper = [], []
        for v in self._vars:
            lo, hi = var_to_bounds.get(v, (-np.inf, np.inf))
            shape = v.shape.as_list()
            lower.append(np.broadcast_to(-np.inf if lo is None else lo, shape).ravel())
            upper.append(np.broadcast_to(np.inf if hi is None else hi, shape).ravel())
        return list(zip(np.concatenate(lower), np.concatenate(upper), strict=True))

    def minimize(self, session=None, feed_dict=None, fetches=None, step_callback=None,
                 loss_callback=None, **run_kwargs):
        """Runs the external optimizer and assigns its result to the variables.

        Args:
          session: the Session (default: the default session).
          feed_dict: feeds for every evaluation.
          fetches: tensors evaluated with each loss and passed to `loss_callback`.
          step_callback: called with the packed variables after each iteration.
          loss_callback: called with the values of `fetches` after each loss evaluation.
          **run_kwargs: passed to `Session.run`.
        """
        session = session or get_default_session()
        feed_dict = dict(feed_dict or {})
        fetches = list(fetches or [])
        loss_callback = loss_callback or (lambda *values: None)
        step_callback = step_callback or (lambda xk: None)

        def evaluate(tensors, callback=None):
            def function(x):
                self._assign(session, x, run_kwargs)
                values = session.run(list(tensors) + fetches, feed_dict=feed_dict,
                                     **run_kwargs)
                if callback is not None:
                    callback(*values[len(tensors):])
                out = values[:len(tensors)]
                return out if len(out) > 1 else out[0]
            return function

        loss_grad_func = evaluate([self._loss, self._packed_loss_grad], loss_callback)
        equality_funcs = [evaluate([c]) for c in self._equalities]
        equality_grad_funcs = [evaluate([g]) for g in self._packed_equality_grads]
        inequality_funcs = [evaluate([c]) for c in self._inequalities]
        inequality_grad_funcs = [evaluate([g]) for g in self._packed_inequality_grads]
        initial = session.run(self._packed_var, feed_dict=feed_dict, **run_kwargs)
        packed = self._minimize(initial_val=initial, loss_grad_func=loss_grad_func,
                                equality_funcs=equality_funcs,
                                equality_grad_funcs=equality_grad_funcs,
                                inequality_funcs=inequality_funcs,
                                inequality_grad_funcs=inequality_grad_funcs,
                                packed_bounds=self._packed_bounds,
                                step_callback=step_callback,
                                optimizer_kwargs=self.optimizer_kwargs)
        self._assign(session, packed, run_kwargs)

    def _assign(self, session, x, run_kwargs):
        feeds = {p: np.asarray(x[s]).reshape(v.shape.as_list()).astype(
                     v.dtype.base_dtype.as_numpy_dtype)
                 for p, v, s in zip(self._update_placeholders, self._vars,
                                    self._packing_slices, strict=True)}
        session.run(self._var_updates, feed_dict=feeds, **run_kwargs)

    def _minimize(self, initial_val, loss_grad_func, equality_funcs, equality_grad_funcs,
                  inequality_funcs, inequality_grad_funcs, packed_bounds, step_callback,
                  optimizer_kwargs):
        raise NotImplementedError("Subclasses of ExternalOptimizerInterface implement "
                                  "_minimize")


class ScipyOptimizerInterface(ExternalOptimizerInterface):
    """Minimizes with `scipy.optimize.minimize` (default method L-BFGS-B; `method=` and
    `options=` among the keyword arguments choose others, e.g. SLSQP for constraints).

    Example: `ScipyOptimizerInterface(loss, options={"maxiter": 100}).minimize(session)`.
    """

    _DEFAULT_METHOD = "L-BFGS-B"

    def _minimize(self, initial_val, loss_grad_func, equality_funcs, equality_grad_funcs,
                  inequality_funcs, inequality_grad_funcs, packed_bounds, step_callback,
                  optimizer_kwargs):
        import scipy.optimize

        def loss_grad(x):
            loss, gradient = loss_grad_func(x)
            return float(loss), np.asarray(gradient).astype("float64")

        def f64(func):  # SciPy's Fortran methods take float64 only
            return lambda x: np.asarray(func(x), dtype=np.float64)

        equality_funcs = [f64(f) for f in equality_funcs]
        equality_grad_funcs = [f64(f) for f in equality_grad_funcs]
        inequality_funcs = [f64(f) for f in inequality_funcs]
        inequality_grad_funcs = [f64(f) for f in inequality_grad_funcs]
        optimizer_kwargs = dict(optimizer_kwargs)
        method = optimizer_kwargs.pop("method", self._DEFAULT_METHOD)
        constraints = [{"type": "eq", "fun": f, "jac": j}
                       for f, j in zip(equality_funcs, equality_grad_funcs, strict=True)]
        constraints += [{"type": "ineq", "fun": f, "jac": j}
                        for f, j in zip(inequality_funcs, inequality_grad_funcs, strict=True)]
        minimize_kwargs = {"jac": True, "callback": step_callback, "method": method,
                           "constraints": constraints, "bounds": packed_bounds}
        for kwarg in minimize_kwargs:
            if kwarg in optimizer_kwargs:
                if kwarg == "bounds":
                    raise ValueError("Bounds must be set using the var_to_bounds argument")
                raise ValueError(f"Optimizer keyword arg '{kwarg}' is set automatically "
                                 "and cannot be injected manually")
        minimize_kwargs.update(optimizer_kwargs)
        if not constraints:
            del minimize_kwargs["constraints"]  # methods without constraints warn on them
        result = scipy.optimize.minimize(loss_grad, np.asarray(initial_val, np.float64),
                                         **minimize_kwargs)
        lines = ["Optimization terminated with:", "  Message: %s",
                 "  Objective function value: %f"]
        args = [result.message, result.fun]
        for attr, label in (("nit", "Number of iterations"),
                            ("nfev", "Number of functions evaluations"),
                            ("njev", "Number of gradient evaluations")):
            if hasattr(result, attr):
                lines.append(f"  {label}: %d")
                args.append(getattr(result, attr))
        logging.info("\n".join(lines), *args)
        return result["x"]
