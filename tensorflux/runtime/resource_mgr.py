"""Per-device resource manager: stateful objects (variables, queues, ...) in named containers.

A resource lives in `container` under `name` (a `shared_name`, or a unique name derived from
the node). Lookups are thread-safe; `cleanup(container)` drops a whole container, which is
what `Session.reset(target, containers)` does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from tensorflux.framework import errors

DEFAULT_CONTAINER = "localhost"


class ResourceMgr:
    def __init__(self, default_container: str = DEFAULT_CONTAINER):
        self.default_container = default_container
        self._containers: dict[str, dict[str, object]] = {}
        self._lock = threading.Lock()
        # Counts removals, so that a holder of resources (a step captured into a CUDA
        # graph) can tell with one comparison that none of them went away.
        self.version = 0

    def _container(self, container: str) -> str:
        return container or self.default_container

    def create(self, container: str, name: str, resource) -> None:
        """Adds `resource`; AlreadyExistsError if the name is taken."""
        with self._lock:
            c = self._containers.setdefault(self._container(container), {})
            if name in c:
                raise errors.AlreadyExistsError(None, None, f"Resource {container}/{name} "
                                                "already exists")
            c[name] = resource

    def lookup(self, container: str, name: str):
        """The resource, or NotFoundError naming it."""
        c = self._containers.get(self._container(container))
        resource = c.get(name) if c is not None else None
        if resource is None:
            raise errors.NotFoundError(
                None, None, f"Resource {self._container(container)}/{name} does not exist.")
        return resource

    def get(self, container: str, name: str):
        """The resource, or None."""
        c = self._containers.get(self._container(container))
        return c.get(name) if c is not None else None

    def lookup_or_create(self, container: str, name: str, creator: Callable[[], object]):
        """The resource, created by `creator()` under the lock if it does not exist yet."""
        key = self._container(container)
        c = self._containers.get(key)
        if c is not None and name in c:
            return c[name]
        with self._lock:
            c = self._containers.setdefault(key, {})
            if name not in c:
                c[name] = creator()
            return c[name]

    def delete(self, container: str, name: str) -> None:
        """Removes the resource; NotFoundError if it does not exist."""
        with self._lock:
            c = self._containers.get(self._container(container))
            if c is None or name not in c:
                raise errors.NotFoundError(None, None, f"Resource {container}/{name} does not "
                                           "exist.")
            resource = c.pop(name)
            self.version += 1
        _close(resource)

    def cleanup(self, container: str) -> None:
        """Drops every resource in `container` (no error if it does not exist)."""
        with self._lock:
            c = self._containers.pop(self._container(container), {})
            self.version += 1
        for r in c.values():
            _close(r)

    def clear(self) -> None:
        with self._lock:
            containers, self._containers = self._containers, {}
            self.version += 1
        for c in containers.values():
            for r in c.values():
                _close(r)

    def resources(self) -> list:
        """Every resource of every container."""
        with self._lock:
            return [r for c in self._containers.values() for r in c.values()]

    def containers(self) -> list[str]:
        with self._lock:
            return list(self._containers)


def _close(resource) -> None:
    close = getattr(resource, "close_resource", None)
    if close is not None:
        close()
