"""`tf.make_template`: a function whose variables are created on the first call and shared
by every later call.

The first call opens a fresh variable scope (unique from `name_`, or `unique_name_`) and
runs the function; later calls re-enter that scope with `reuse=True`, so `get_variable`
returns the existing variables. A later call that creates a trainable variable (a
`tf.Variable` where `tf.get_variable` was meant) is an error, as in TensorFlow. An exception
raised by the function gets, as TensorFlow's do, "originally defined at:" and the stack
where the template was made (less the frames it shares with the failing call) appended to
its first argument.
"""

from __future__ import annotations

import functools
import traceback

from tensorflux.framework import graph as graph_lib
from tensorflux.framework.graph import GraphKeys
from tensorflux.variables import variable_scope as vs

__all__ = ["make_template", "Template"]


def make_template(name_, func_, create_scope_now_=False, unique_name_=None,
                  custom_getter_=None, **kwargs):
    """Wraps `func_` so that all its calls share the variables of the first
    (`tf.make_template`).

    Args:
      name_: the base name of the template's variable scope (made unique).
      func_: the function; its `get_variable` calls create variables once.
      create_scope_now_: open the scope now rather than at the first call.
      unique_name_: use exactly this scope name (no uniquifying).
      custom_getter_: a custom getter for the scope.
      **kwargs: keyword arguments bound to `func_`.

    Returns:
      A `Template`, callable like `func_`.

    Raises:
      ValueError: `name_` is None.
    """
    return Template(name_, func_, create_scope_now=create_scope_now_,
                    unique_name=unique_name_, custom_getter=custom_getter_, **kwargs)


class Template:
    """A function sharing its variables across calls (see `make_template`)."""

    def __init__(self, name, func, create_scope_now=False, unique_name=None,
                 custom_getter=None, **kwargs):
        if name is None:
            raise ValueError("name cannot be None.")
        self._func = functools.partial(func, **kwargs) if kwargs else func
        self._name = name
        self._unique_name = unique_name
        self._custom_getter = custom_getter
        self._variable_scope = None
        self._variables_created = False
        # Where the template was made, less this module's frames.
        self._stacktrace = [line for line in traceback.format_stack()
                            if __file__ not in line]
        if create_scope_now:  # a variable scope only: the name scope comes with each call
            with vs._pure_variable_scope(unique_name or vs._unique_variable_scope(name),
                                         custom_getter=custom_getter) as scope:
                self._variable_scope = scope

    def _call_func(self, args, kwargs):
        trainable_before = len(graph_lib.get_collection(GraphKeys.TRAINABLE_VARIABLES))
        try:
            result = self._func(*args, **kwargs)
        except Exception as e:
            self._add_origin(e)
            raise
        if self._variables_created:
            trainable = graph_lib.get_collection(GraphKeys.TRAINABLE_VARIABLES)
            if len(trainable) != trainable_before:
                raise ValueError(
                    "Trainable variable created when calling a template after the first "
                    "time, perhaps you used tf.Variable when you meant tf.get_variable: "
                    f"{trainable[trainable_before:]}")
        self._variables_created = True
        return result

    def _add_origin(self, exc: Exception) -> None:
        """Appends where the template was made to `exc`'s first argument."""
        here = traceback.format_stack()
        common = 0
        while (common < min(len(here), len(self._stacktrace))
               and here[common] == self._stacktrace[common]):
            common += 1
        origin = "".join(self._stacktrace[common:])
        first = exc.args[0] if exc.args else ""
        exc.args = (f"{first}\n\noriginally defined at:\n{origin}",) + tuple(exc.args[1:])

    def __call__(self, *args, **kwargs):
        if self._variable_scope is None:
            with vs.variable_scope(self._unique_name, self._name,
                                   custom_getter=self._custom_getter) as scope:
                self._variable_scope = scope
                return self._call_func(args, kwargs)
        reuse = True if self._variables_created else None
        with vs.variable_scope(self._variable_scope, reuse=reuse):
            return self._call_func(args, kwargs)

    @property
    def name(self) -> str:
        return self._name

    @property
    def func(self):
        return self._func

    @property
    def variable_scope(self):
        return self._variable_scope

    @property
    def variable_scope_name(self) -> str | None:
        """The scope's name with a trailing "/" (None before the scope exists)."""
        if self._variable_scope is None:
            return None
        name = self._variable_scope.name
        return name if not name or name.endswith("/") else name + "/"

    def _collection(self, key: str) -> list:
        if self._variable_scope is None:
            return []
        return graph_lib.get_collection(key, self.variable_scope_name)

    @property
    def variables(self) -> list:
        return self.global_variables + self.local_variables

    @property
    def trainable_variables(self) -> list:
        return self._collection(GraphKeys.TRAINABLE_VARIABLES)

    @property
    def non_trainable_variables(self) -> list:
        trainable = set(map(id, self.trainable_variables))
        return [v for v in self.global_variables if id(v) not in trainable]

    @property
    def global_variables(self) -> list:
        return self._collection(GraphKeys.GLOBAL_VARIABLES)

    @property
    def local_variables(self) -> list:
        return self._collection(GraphKeys.LOCAL_VARIABLES)

    @property
    def weights(self) -> list:
        return self.variables

    @property
    def trainable_weights(self) -> list:
        return self.trainable_variables

    @property
    def non_trainable_weights(self) -> list:
        return self.non_trainable_variables
