"""`tf.test.StubOutForTesting`: replace attributes of modules, classes or objects during a
test and put them back afterwards.

Two kinds of stub, undone separately (and both by `CleanUp`, leaving the `with` block, or
the object's deletion, which a test should not rely on):

- `Set(parent, name, value)` replaces `parent.name` where it is found from `parent`;
  `UnsetAll()` undoes every Set, the latest first.
- `SmartSet(obj, name, value)` stubs a module or an instance's own attribute in place, and
  for anything else (a class, an instance whose class provides the attribute) the class:
  every instance sees the stub. `SmartUnsetAll()` undoes every SmartSet, the latest first.

Undoing restores exactly what the target held itself (a staticmethod or classmethod stays
one) and removes a stub that shadowed an inherited attribute.
"""

from __future__ import annotations

import inspect

__all__ = ["StubOutForTesting"]

_MISSING = object()


def _swap(target, name: str, value) -> tuple:
    """Sets `target.name = value`; the record that undoes it."""
    own = vars(target).get(name, _MISSING) if hasattr(target, "__dict__") else _MISSING
    setattr(target, name, value)
    return target, name, own


def _undo(records: list) -> None:
    while records:
        target, name, own = records.pop()
        if own is _MISSING:
            try:
                delattr(target, name)
            except AttributeError:
                pass
        else:
            setattr(target, name, own)


class StubOutForTesting:
    """Stubs attributes for a test (see the module docstring).

    Example:

        stubs = tf.test.StubOutForTesting()
        stubs.Set(os.path, "exists", lambda path: True)
        ...
        stubs.CleanUp()
    """

    def __init__(self):
        self.cache: list = []  # Set's records
        self.stubs: list = []  # SmartSet's records

    def __del__(self):
        self.CleanUp()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, tb):
        self.CleanUp()

    def CleanUp(self) -> None:  # noqa: N802 - TensorFlow's names
        """Undoes every SmartSet and Set."""
        self.SmartUnsetAll()
        self.UnsetAll()

    def Set(self, parent, child_name: str, new_child) -> None:  # noqa: N802
        """Replaces `parent.child_name` with `new_child` until `UnsetAll`.

        Raises:
          AttributeError: `parent` has no attribute `child_name`.
        """
        getattr(parent, child_name)
        self.cache.append(_swap(parent, child_name, new_child))

    def UnsetAll(self) -> None:  # noqa: N802
        """Undoes every Set, the latest first."""
        _undo(self.cache)

    def SmartSet(self, obj, attr_name: str, new_attr) -> None:  # noqa: N802
        """Replaces `attr_name` of a module or of an instance itself, else of the class
        (`obj` or its class), until `SmartUnsetAll`.

        Raises:
          AttributeError: `obj` has no attribute `attr_name`.
        """
        obj = inspect.unwrap(obj) if callable(obj) and not inspect.isclass(obj) else obj
        if not hasattr(obj, attr_name):
            raise AttributeError("Attribute not found.")
        own = getattr(obj, "__dict__", {})
        if inspect.ismodule(obj) or (not inspect.isclass(obj) and attr_name in own):
            target = obj
        else:
            target = obj if inspect.isclass(obj) else type(obj)
        self.stubs.append(_swap(target, attr_name, new_attr))

    def SmartUnsetAll(self) -> None:  # noqa: N802
        """Undoes every SmartSet, the latest first."""
        _undo(self.stubs)
