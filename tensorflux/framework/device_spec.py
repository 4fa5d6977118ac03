"""Device names: `tf.DeviceSpec`, partial specs, and the merge rule of nested `tf.device`.

A full device name is `/job:<job>/replica:<r>/task:<t>/device:<TYPE>:<index>`, e.g.
`/job:localhost/replica:0/task:0/device:CPU:0`. A *spec* may leave any field unset
(`/job:ps/task:2`, `/gpu:0`, `/device:GPU:*`); the placer then picks a device whose set
fields match (`is_compatible`). Short forms `cpu:1`, `/GPU:0`, `/cpu` (any CPU) are
accepted; `cpu` and `gpu` are spelled `CPU` and `GPU` in the canonical string.

`DeviceSpecV2` is immutable (`replace`, `make_merged_spec` give new specs); TF1's
`tf.DeviceSpec` is the mutable `DeviceSpecV1` (`merge_from`, `parse_from_string` and field
setters change it in place).

Nested `tf.device` blocks: each block's spec becomes a device function
(`merge_device(spec)`); the graph applies them innermost first, and each fills in only the
fields the op's device does not have yet, so the innermost block's fields win.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "DeviceSpecV1", "DeviceSpecV2", "DeviceSpec", "merge_device", "canonical_name",
    "fill_defaults", "is_compatible", "is_device_spec", "check_valid",
]

_Fields = tuple  # (job, replica, task, device_type, device_index)
_EMPTY: _Fields = (None, None, None, None, None)
_PARSE_CACHE: dict[str, _Fields] = {}
_PARSE_CACHE_LIMIT = 4096
_SHORT_TYPES = ("CPU", "GPU", "TPU", "CUSTOM")  # usable without "device:", any case


def _as_int(value: Any, what: str, spec: Any = None) -> int | None:
    if value is None or type(value) is int:
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            where = f" in device spec {spec!r}" if spec is not None else ""
            raise ValueError(f"{what} must be an integer, got {value!r}{where}.") from None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be an integer, got {value!r}.") from None


def _as_device_type(value: Any) -> str | None:
    if value is None:
        return None
    value = str(value)
    return value.upper() if value in ("cpu", "gpu") else value


def _as_device_index(value: Any, spec: Any = None) -> int | None:
    if value == "*":
        return None
    return _as_int(value, "Device index", spec)


def _parse(spec: str) -> _Fields:
    """Parses a device string into its five fields; results are cached."""
    fields = _PARSE_CACHE.get(spec)
    if fields is not None:
        return fields
    job = replica = task = device_type = device_index = None
    seen_device = False
    for part in spec.split("/"):
        if not part:
            continue
        items = part.split(":")
        key = items[0]
        if len(items) == 2 and key == "job":
            job = items[1]
        elif len(items) == 2 and key == "replica":
            replica = _as_int(items[1], "Replica", spec)
        elif len(items) == 2 and key == "task":
            task = _as_int(items[1], "Task", spec)
        elif len(items) <= 2 and key.upper() in _SHORT_TYPES:
            # Short forms: cpu, CPU:0, /gpu:*.
            if seen_device:
                raise ValueError("Multiple device types are not allowed while parsing the "
                                 f"device spec: {spec}.")
            seen_device = True
            device_type = key.upper()
            device_index = _as_device_index(items[1], spec) if len(items) == 2 else None
        elif len(items) == 3 and key == "device":
            if seen_device:
                raise ValueError("Multiple device types are not allowed while parsing the "
                                 f"device spec: {spec}.")
            seen_device = True
            device_type = _as_device_type(items[1])
            device_index = _as_device_index(items[2], spec)
        else:
            raise ValueError(f"Unknown attribute {key!r} is encountered while parsing the "
                             f"device spec: {spec!r}.")
    fields = (job, replica, task, device_type, device_index)
    if len(_PARSE_CACHE) >= _PARSE_CACHE_LIMIT:
        _PARSE_CACHE.clear()
    _PARSE_CACHE[spec] = fields
    return fields


def _format(job, replica, task, device_type, device_index) -> str:
    out = []
    if job is not None:
        out.append("/job:" + job)
    if replica is not None:
        out.append(f"/replica:{replica}")
    if task is not None:
        out.append(f"/task:{task}")
    if device_type is not None:
        out.append(f"/device:{device_type}:{'*' if device_index is None else device_index}")
    return "".join(out)


def _merge(base: _Fields, over: _Fields) -> _Fields:
    """`base` with every field that `over` sets replaced by `over`'s."""
    return tuple(b if o is None else o for b, o in zip(base, over, strict=True))


class DeviceSpecV2:
    """A (possibly partial) device specification; immutable (`tf.compat.v2.DeviceSpec`).

    Args:
      job: job name, e.g. "ps", or None.
      replica: replica index, or None.
      task: task index, or None.
      device_type: e.g. "CPU" or "GPU" ("cpu"/"gpu" are upper-cased), or None.
      device_index: device index, or None (also "*") for any device of the type.

    Raises:
      ValueError: if an index is not an integer.
    """

    __slots__ = ("_job", "_replica", "_task", "_device_type", "_device_index", "_string")

    def __init__(self, job: str | None = None, replica: int | None = None,
                 task: int | None = None, device_type: str | None = None,
                 device_index: int | None = None) -> None:
        self._job = None if job is None else str(job)
        self._replica = _as_int(replica, "Replica")
        self._task = _as_int(task, "Task")
        self._device_type = _as_device_type(device_type)
        self._device_index = _as_device_index(device_index)
        self._string: str | None = None

    @classmethod
    def _from_fields(cls, fields: _Fields):
        spec = cls.__new__(cls)
        (spec._job, spec._replica, spec._task, spec._device_type,
         spec._device_index) = fields
        spec._string = None
        return spec

    def _fields(self) -> _Fields:
        return (self._job, self._replica, self._task, self._device_type, self._device_index)

    @classmethod
    def from_string(cls, spec: str):
        """Parses a device string (full, partial or short form) into a spec.

        Args:
          spec: e.g. "/job:ps/task:1/device:GPU:0", "/cpu:1", "GPU:*", "" (no fields).

        Returns:
          A spec of this class.

        Raises:
          ValueError: if `spec` is malformed.
        """
        return cls._from_fields(_parse(spec or ""))

    def parse_from_string(self, spec: str):
        """A new spec parsed from `spec` (DeviceSpecV1 overrides this to parse in place).

        Raises:
          ValueError: if `spec` is malformed.
        """
        return self.from_string(spec)

    def to_string(self) -> str:
        """The canonical string, e.g. "/job:ps/replica:0/task:1/device:CPU:0" ("" if empty)."""
        s = self._string
        if s is None:
            s = self._string = _format(*self._fields())
        return s

    def make_merged_spec(self, dev: DeviceSpecV2):
        """A new spec: this one's fields, overridden by every field `dev` sets.

        Args:
          dev: a DeviceSpec.

        Returns:
          A spec of this class.
        """
        return type(self)._from_fields(_merge(self._fields(), dev._fields()))

    def replace(self, **kwargs: Any):
        """A new spec with the given fields (job, replica, task, device_type, device_index).

        Raises:
          TypeError: for an unknown field name.
        """
        init = {"job": self._job, "replica": self._replica, "task": self._task,
                "device_type": self._device_type, "device_index": self._device_index}
        unknown = set(kwargs) - set(init)
        if unknown:
            raise TypeError(f"replace() got unexpected keyword argument(s) {sorted(unknown)}")
        init.update(kwargs)
        return type(self)(**init)

    @property
    def job(self) -> str | None:
        return self._job

    @property
    def replica(self) -> int | None:
        return self._replica

    @property
    def task(self) -> int | None:
        return self._task

    @property
    def device_type(self) -> str | None:
        return self._device_type

    @property
    def device_index(self) -> int | None:
        return self._device_index

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, DeviceSpecV2) and self.to_string() == other.to_string()

    def __hash__(self) -> int:
        return hash(self.to_string())

    def __repr__(self) -> str:
        return (f"<DeviceSpec(job={self._job}, replica={self._replica}, task={self._task}, "
                f"device_type={self._device_type}, device_index={self._device_index})>")


class DeviceSpecV1(DeviceSpecV2):
    """TF1's mutable `tf.DeviceSpec`: fields are settable and `merge_from` works in place."""

    __slots__ = ()

    def _set(self, fields: _Fields) -> None:
        (self._job, self._replica, self._task, self._device_type,
         self._device_index) = fields
        self._string = None

    @DeviceSpecV2.job.setter
    def job(self, job: str | None) -> None:
        self._job = None if job is None else str(job)
        self._string = None

    @DeviceSpecV2.replica.setter
    def replica(self, replica: int | None) -> None:
        self._replica = _as_int(replica, "Replica")
        self._string = None

    @DeviceSpecV2.task.setter
    def task(self, task: int | None) -> None:
        self._task = _as_int(task, "Task")
        self._string = None

    @DeviceSpecV2.device_type.setter
    def device_type(self, device_type: str | None) -> None:
        self._device_type = _as_device_type(device_type)
        self._string = None

    @DeviceSpecV2.device_index.setter
    def device_index(self, device_index: int | None) -> None:
        self._device_index = _as_device_index(device_index)
        self._string = None

    def parse_from_string(self, spec: str) -> DeviceSpecV1:
        """Resets this spec to the fields parsed from `spec`; returns self.

        Raises:
          ValueError: if `spec` is malformed.
        """
        self._set(_parse(spec or ""))
        return self

    def merge_from(self, dev: DeviceSpecV2) -> None:
        """Overrides this spec's fields with every field `dev` sets, in place.

        Args:
          dev: a DeviceSpec.
        """
        self._set(_merge(self._fields(), dev._fields()))



DeviceSpec = DeviceSpecV1


def is_device_spec(obj: Any) -> bool:
    """Whether `obj` is a DeviceSpec (V1 or V2)."""
    return isinstance(obj, DeviceSpecV2)


def check_valid(spec: str) -> None:
    """Raises ValueError if `spec` is not a valid device string.

    Raises:
      ValueError: if `spec` is malformed.
    """
    _parse(spec)


def _fields_of(spec: Any) -> _Fields:
    if spec is None:
        return _EMPTY
    if isinstance(spec, str):
        return _parse(spec)
    if isinstance(spec, DeviceSpecV2):
        return spec._fields()
    raise TypeError(f"Expected a device string or DeviceSpec, got {spec!r} of type "
                    f"{type(spec).__name__}.")


def fill_defaults(spec: Any, job: str | None = None, replica: int | None = None,
                  task: int | None = None, device_type: str | None = None,
                  device_index: int | None = None) -> DeviceSpecV2:
    """`spec` with every unset field taken from the given defaults.

    Args:
      spec: a device string or DeviceSpec (or None for no fields).
      job, replica, task, device_type, device_index: the defaults (None leaves a field
        unset).

    Returns:
      A DeviceSpecV2.

    Raises:
      ValueError: if `spec` is malformed.
    """
    defaults = DeviceSpecV2(job, replica, task, device_type, device_index)
    return DeviceSpecV2._from_fields(_merge(defaults._fields(), _fields_of(spec)))


def canonical_name(spec: Any, default_job: str = "localhost", default_replica: int = 0,
                   default_task: int = 0, default_device_type: str | None = None,
                   default_device_index: int | None = None) -> str:
    """The full device name for `spec`, e.g. "/job:localhost/replica:0/task:0/device:CPU:0".

    Job, replica and task default to this process's task; the device type and index must
    be set by `spec` or given as defaults.

    Args:
      spec: a device string or DeviceSpec.
      default_job, default_replica, default_task: filled in where `spec` leaves them unset.
      default_device_type, default_device_index: likewise; None by default.

    Returns:
      The canonical full name.

    Raises:
      ValueError: if `spec` is malformed, or names no device type or no device index.
    """
    fields = _merge((default_job, default_replica, default_task,
                     _as_device_type(default_device_type),
                     _as_device_index(default_device_index)), _fields_of(spec))
    if fields[3] is None or fields[4] is None:
        raise ValueError(f"Device spec {_format(*_fields_of(spec))!r} does not name one "
                         "device: a device type and index are needed for a full name.")
    return _format(*fields)


def is_compatible(requested: Any, device_full_name: Any) -> bool:
    """Whether the device `device_full_name` satisfies the (partial) spec `requested`.

    Args:
      requested: a device string or DeviceSpec; unset fields match anything.
      device_full_name: a device string or DeviceSpec, normally a full name.

    Returns:
      True if every field `requested` sets equals the device's.

    Raises:
      ValueError: if either is malformed.
    """
    req = _fields_of(requested)
    dev = _fields_of(device_full_name)
    for r, d in zip(req, dev, strict=True):
        if r is not None and r != d:
            return False
    return True


def merge_device(spec: Any):
    """The device function of a `tf.device(spec)` block.

    The function takes an op (or NodeDef, or anything with a `device` string) and returns
    the DeviceSpecV2 of its current device with every field it leaves unset filled in from
    `spec`. The graph applies the functions of nested blocks innermost first, so the fields
    of inner blocks win.

    Args:
      spec: a device string or DeviceSpec.

    Returns:
      A function from op to DeviceSpecV2.

    Raises:
      ValueError: if `spec` is malformed.
    """
    fields = _fields_of(spec)
    if isinstance(spec, DeviceSpecV1):
        spec = DeviceSpecV2._from_fields(fields)  # snapshot: V1 specs are mutable
    cache: dict[str, DeviceSpecV2] = {}

    def _device_function(node: Any) -> DeviceSpecV2:
        current = node if isinstance(node, str) else (getattr(node, "device", None) or "")
        if not isinstance(current, str):
            current = current.to_string()
        merged = cache.get(current)
        if merged is None:
            merged = DeviceSpecV2._from_fields(_merge(fields, _parse(current)))
            if len(cache) < _PARSE_CACHE_LIMIT:
                cache[current] = merged
        return merged

    _device_function.spec = spec  # for introspection, as TF's MergeDevice keeps it
    return _device_function
