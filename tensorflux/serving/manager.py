"""The model manager: which version of a model is served, loaded from numbered directories.

Policy (TF Serving's default, "latest 1"): the numbered subdirectories of the base path are
the versions; the newest one that loads is served. A background thread polls the base path
every `poll_wait_seconds`:

- a directory newer than the served version is loaded (state LOADING) off the request path;
  once loaded it becomes AVAILABLE and requests for the latest version go to it at once; the
  old version goes UNLOADING, its in-flight requests finish on it, then its session closes
  and it is END. So a hot swap fails no request.
- a version that fails to load (corrupt, half-written) is skipped with one logged error and
  shown as END with its error in the status; the previous version keeps serving. It is
  tried again only when its directory's contents change (a half-written export finishing).
- if the served version's directory disappears, the newest remaining one is loaded and the
  old one unloaded.

Requests take a version with `acquire(version=None, label=None)` (a context manager counting
in-flight requests); `status()` gives TF Serving's model_version_status list.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable

from tensorflux.framework import errors
from tensorflux.serving.servable import SavedModelServable, Servable

__all__ = ["ModelManager", "VersionRecord"]

_log = logging.getLogger("tensorflux.serving")


class VersionRecord:
    """One version's state, its servable while loaded, and its in-flight request count."""

    __slots__ = ("version", "state", "error", "servable", "inflight", "fingerprint")

    def __init__(self, version: int):
        self.version = version
        self.state = "START"
        self.error = ""
        self.servable: Servable | None = None
        self.inflight = 0
        self.fingerprint = None

    def status(self) -> dict:
        code = "OK" if not self.error else "UNKNOWN"
        return {"version": str(self.version), "state": self.state,
                "status": {"error_code": code, "error_message": self.error}}


def _fingerprint(path: str):
    """What changes when a version directory's files change (names, sizes, mtimes)."""
    entries = []
    for root, _, files in os.walk(path):
        for f in files:
            p = os.path.join(root, f)
            with contextlib.suppress(OSError):
                st = os.stat(p)
                entries.append((os.path.relpath(p, path), st.st_size, st.st_mtime_ns))
    return tuple(sorted(entries))


class ModelManager:
    """Serves the newest loadable version under `base_path` (see the module docstring).

    Args:
      name: the model name requests use.
      base_path: the directory holding numbered version directories.
      load_fn: (version_dir, version) -> Servable; SavedModelServable by default.
      poll_wait_seconds: seconds between polls of the base path (0: poll only on `poll()`).
      version_labels: label -> version, for `/labels/L` requests.
    """

    def __init__(self, name: str, base_path: str,
                 load_fn: Callable[[str, int], Servable] = SavedModelServable,
                 poll_wait_seconds: float = 1.0, version_labels: dict | None = None):
        self.name = name
        self.base_path = base_path
        self._load_fn = load_fn
        self._poll_wait = poll_wait_seconds
        self.version_labels = dict(version_labels or {})
        self._records: dict[int, VersionRecord] = {}
        self._serving: VersionRecord | None = None
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._poll_lock = threading.Lock()
        self._list_error = ""

    # -- versions on disk ------------------------------------------------------------------
    def _versions_on_disk(self) -> dict[int, str]:
        try:
            names = os.listdir(self.base_path)
        except OSError as e:
            if str(e) != self._list_error:  # logged once, not on every poll
                _log.error("Cannot list model base path %s: %s", self.base_path, e)
            self._list_error = str(e)
            return {}
        self._list_error = ""
        out = {}
        for n in names:
            p = os.path.join(self.base_path, n)
            if n.isdigit() and os.path.isdir(p):
                out[int(n)] = p
        return out

    def poll(self) -> None:
        """One pass of the policy: load a newer version if there is one, unload the old."""
        with self._poll_lock:
            on_disk = self._versions_on_disk()
            current = self._serving
            if current is not None and current.version not in on_disk:
                _log.warning("Version %d of model %s was removed from disk", current.version,
                             self.name)
                current = None
            for v in sorted(on_disk, reverse=True):
                if current is not None and v <= current.version:
                    break
                if self._try_load(v, on_disk[v]):
                    break
            else:
                if current is None and self._serving is not None:
                    self._swap(None)

    def _try_load(self, version: int, path: str) -> bool:
        with self._cond:
            rec = self._records.get(version)
            if rec is None:
                rec = self._records[version] = VersionRecord(version)
        fp = _fingerprint(path)
        if rec.error and rec.fingerprint == fp:
            return False  # failed before and unchanged since: not retried, not re-logged
        rec.fingerprint = fp
        rec.state, rec.error = "LOADING", ""
        t0 = time.monotonic()
        try:
            servable = self._load_fn(path, version)
        except Exception as e:  # noqa: BLE001 - any failure of a load skips the version
            rec.state, rec.error = "END", f"{type(e).__name__}: {e}"
            _log.error("Failed to load version %d of model %s from %s; skipped (the "
                       "previous version, if any, keeps serving): %s", version, self.name,
                       path, rec.error)
            return False
        with self._cond:
            rec.servable, rec.state = servable, "AVAILABLE"
        _log.info("Loaded version %d of model %s in %.2fs", version, self.name,
                  time.monotonic() - t0)
        self._swap(rec)
        return True

    def _swap(self, new: VersionRecord | None) -> None:
        with self._cond:
            old, self._serving = self._serving, new
            if old is None or old is new:
                return
            old.state = "UNLOADING"
            self._cond.wait_for(lambda: old.inflight == 0, timeout=60.0)
            servable, old.servable = old.servable, None
            old.state = "END"
        if servable is not None:
            servable.close()
        _log.info("Unloaded version %d of model %s", old.version, self.name)

    # -- the polling thread --------------------------------------------------------------
    def start(self) -> None:
        """Loads the newest loadable version now, then polls in a daemon thread."""
        self.poll()
        if self._poll_wait > 0:
            self._thread = threading.Thread(target=self._run, name=f"poll-{self.name}",
                                            daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._poll_wait):
            try:
                self.poll()
            except Exception:  # noqa: BLE001 - the poller must outlive a bad pass
                _log.exception("Polling model %s failed", self.name)

    def stop(self) -> None:
        """Stops polling and unloads every version (after their in-flight requests)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        with self._poll_lock:
            self._swap(None)

    # -- requests ------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return self._serving is not None

    def _resolve(self, version: int | None, label: str | None) -> VersionRecord:
        if label is not None:
            if label not in self.version_labels:
                raise errors.NotFoundError(
                    None, None, f"Unrecognized servable version label: {label}")
            version = self.version_labels[label]
        if version is None:
            if self._serving is None:
                raise errors.NotFoundError(
                    None, None, f"Servable not found for request: Latest({self.name})")
            return self._serving
        rec = self._records.get(version)
        if rec is None or rec.state != "AVAILABLE":
            raise errors.NotFoundError(
                None, None, f"Servable not found for request: Specific({self.name}, "
                f"{version})")
        return rec

    @contextlib.contextmanager
    def acquire(self, version: int | None = None, label: str | None = None):
        """The servable for a request, kept loaded until the `with` block ends.

        Raises:
          tf.errors.NotFoundError: no such version or label, or nothing loaded yet.
        """
        with self._cond:
            rec = self._resolve(version, label)
            rec.inflight += 1
            servable = rec.servable
        try:
            yield servable
        finally:
            with self._cond:
                rec.inflight -= 1
                if rec.inflight == 0:
                    self._cond.notify_all()

    def status(self, version: int | None = None, label: str | None = None) -> list[dict]:
        """TF Serving's model_version_status entries, newest first."""
        with self._cond:
            if version is not None or label is not None:
                if label is not None:
                    if label not in self.version_labels:
                        raise errors.NotFoundError(
                            None, None, f"Unrecognized servable version label: {label}")
                    version = self.version_labels[label]
                rec = self._records.get(version)
                if rec is None:
                    raise errors.NotFoundError(
                        None, None, f"Could not find version {version} of model {self.name}")
                return [rec.status()]
            if not self._records:
                raise errors.NotFoundError(
                    None, None, f"Could not find any versions of model {self.name}")
            return [r.status() for _, r in sorted(self._records.items(), reverse=True)]
