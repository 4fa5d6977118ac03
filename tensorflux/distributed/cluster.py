"""The cluster description: which jobs a cluster has and where each task listens.

- `ClusterSpec` is TF1's `tf.train.ClusterSpec`: job name -> task index -> "host:port",
  convertible to and from the `ClusterDef` proto. Its observable behaviour is TensorFlow's,
  quirks included (bytes addresses stay bytes, `==` compares with the internal job -> index
  -> address dict, a `ClusterDef` argument is kept, not copied).
- `resolve` turns what `tf.train.Server` is given (a cluster, job name, task index,
  protocol) and the `TF_CONFIG` environment variable into a `ServerTarget`, with the
  precedence of TensorFlow's TF_CONFIG cluster resolver.
- `parse_hosts` and `parse_cluster_spec` read the customary command-line flags of a server.

Validation sits where TensorFlow's checks sit, only earlier and cleaner: a ClusterSpec checks
neither job names nor addresses (TensorFlow's does not); `resolve` checks job names (TensorFlow's
server aborts its process on a job name its device-name parser rejects), and the flag parsers
check job names and addresses (`validate_job_name`, `validate_address`).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import os
import re
from collections.abc import Mapping
from typing import Any, Union

from tensorflux.protos import cluster_pb2

DEFAULT_PROTOCOL = "grpc"
TF_CONFIG = "TF_CONFIG"

ClusterLike = Union[dict, cluster_pb2.ClusterDef, "ClusterSpec"]

# A job name as TensorFlow's device-name parser accepts it in "/job:<name>/...".
_JOB_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_HOST_NAME = re.compile(r"[A-Za-z0-9_.-]+")
_PORT = re.compile(r"[0-9]{1,5}")
_DIGITS = re.compile(r"[0-9]+")
_MAX_PORT = 65535

# TF_CONFIG's top-level keys that this module reads or checks, and the JSON type each must
# have when present and not null. Other keys (e.g. "session_master") are left alone.
_TF_CONFIG_TYPES: dict[str, tuple[type, str]] = {
    "cluster": (dict, "an object mapping job names to lists (or objects) of addresses"),
    "task": (dict, 'an object like {"type": "worker", "index": 0}'),
    "rpc_layer": (str, 'a string such as "grpc"'),
    "environment": (str, "a string"),
}


class ClusterSpec:
    """Represents a cluster as a set of "tasks", organized into "jobs".

    A job maps task indices to network addresses ("host:port"). A job given as a list is
    dense (task i at position i); one given as a dictionary may be sparse, so that a server
    can be configured without knowing every other task:

        tf.train.ClusterSpec({"worker": {1: "worker1.example.com:2222"},
                              "ps": ["ps0.example.com:2222", "ps1.example.com:2222"]})

    Instances are unhashable; `==` compares the job -> task index -> address mapping (also
    with a plain dict of that shape, as TensorFlow's does).
    """

    __slots__ = ("_jobs", "_cluster_def")

    def __init__(self, cluster: ClusterLike) -> None:
        """Creates a `ClusterSpec`.

        Args:
          cluster: a dict mapping job names to (i) a list or tuple of network addresses or
            (ii) a dict from task indices (ints, or anything `int()` accepts) to network
            addresses; or a `tf.train.ClusterDef` proto (kept, not copied); or another
            `ClusterSpec` (copied).

        Raises:
          TypeError: `cluster` is none of these, a job's tasks are neither a list nor a
            dict, or a job name or address is neither str nor bytes.
          ValueError: a task index is not an integer, is negative or does not fit in int32.
        """
        if isinstance(cluster, dict):
            self._jobs = {name: _job_from_tasks(name, tasks) for name, tasks in cluster.items()}
            self._cluster_def = _make_cluster_def(self._jobs)
        elif isinstance(cluster, cluster_pb2.ClusterDef):
            self._cluster_def = cluster
            self._jobs = _jobs_from_def(cluster)
        elif isinstance(cluster, ClusterSpec):
            self._cluster_def = cluster_pb2.ClusterDef()
            self._cluster_def.MergeFrom(cluster.as_cluster_def())
            self._jobs = _jobs_from_def(self._cluster_def)
        else:
            raise TypeError("`cluster` must be a dictionary mapping one or more job names to "
                            "lists of network addresses, or a `ClusterDef` protocol buffer")

    def __bool__(self) -> bool:
        return bool(self._jobs)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ClusterSpec):
            return self._jobs == other._jobs
        return self._jobs == other

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment] - unhashable, as TensorFlow's

    def __repr__(self) -> str:
        as_dict = self.as_dict()
        items = [f"{key!r}: {as_dict[key]!r}" for key in sorted(as_dict)]
        return "ClusterSpec({" + ", ".join(items) + "})"

    def as_dict(self) -> dict:
        """Returns a dictionary from job names to their tasks.

        Returns:
          For each job, a list of addresses when its task indices are 0..n-1, otherwise a
          dict from task index to address (an empty dict for a job without tasks).
        """
        result: dict = {}
        for job in self.jobs:
            indices = self.task_indices(job)
            if indices and indices[-1] + 1 == len(indices):
                result[job] = self.job_tasks(job)
            else:
                result[job] = {i: self._jobs[job][i] for i in indices}
        return result

    def as_cluster_def(self) -> cluster_pb2.ClusterDef:
        """Returns the `tf.train.ClusterDef` proto of this cluster (jobs sorted by name)."""
        return self._cluster_def

    @property
    def jobs(self) -> list:
        """The job names of this cluster, in the order they were given."""
        return list(self._jobs)

    def num_tasks(self, job_name: str) -> int:
        """Returns the number of tasks defined in the given job.

        Args:
          job_name: the name of a job in this cluster.

        Returns:
          The number of tasks of the job.

        Raises:
          ValueError: `job_name` names no job of this cluster.
        """
        return len(self._tasks(job_name))

    def task_indices(self, job_name: str) -> list[int]:
        """Returns the sorted task indices of the given job.

        Args:
          job_name: the name of a job in this cluster.

        Returns:
          A sorted list of the job's task indices.

        Raises:
          ValueError: `job_name` names no job of this cluster.
        """
        return sorted(self._tasks(job_name))

    def task_address(self, job_name: str, task_index: int) -> Any:
        """Returns the address of the given task in the given job.

        Args:
          job_name: the name of a job in this cluster.
          task_index: a task index of that job.

        Returns:
          The task's address as given (str, or bytes when given as bytes).

        Raises:
          ValueError: no such job, or no task with index `task_index` in it.
        """
        tasks = self._tasks(job_name)
        try:
            return tasks[task_index]
        except KeyError:
            raise ValueError(f"No task with index {task_index!r} in job {job_name!r}") from None

    def job_tasks(self, job_name: str) -> list:
        """Returns the addresses of the given job's tasks, indexed by task index.

        Args:
          job_name: the name of a job in this cluster.

        Returns:
          A list whose element i is the address of task i, None where a sparse job has no
          task i. Its length is the largest task index + 1, not the number of tasks (see
          `num_tasks`); empty for a job without tasks.

        Raises:
          ValueError: `job_name` names no job of this cluster.
        """
        tasks = self._tasks(job_name)
        result = [None] * (max(tasks) + 1 if tasks else 0)
        for index, address in tasks.items():
            result[index] = address
        return result

    def _tasks(self, job_name: str) -> dict:
        try:
            return self._jobs[job_name]
        except KeyError:
            raise ValueError(f"No such job in cluster: {job_name!r}") from None


def _task_index(job_name: Any, key: Any) -> int:
    """A task-dict key as a task index: `int(key)`, refusing fractions and negatives."""
    if isinstance(key, float) and not key.is_integer():
        raise ValueError(f"Task index {key!r} in job {job_name!r} is not an integer")
    try:
        index = int(key)
    except (TypeError, ValueError) as e:
        raise type(e)(f"Task index {key!r} in job {job_name!r} is not an integer") from None
    if index < 0:
        raise ValueError(f"Task index {key!r} in job {job_name!r} is negative")
    return index


def _job_from_tasks(job_name: Any, tasks: Any) -> dict[int, Any]:
    if isinstance(tasks, (list, tuple)):
        return dict(enumerate(tasks))
    if isinstance(tasks, dict):
        return {_task_index(job_name, key): address for key, address in tasks.items()}
    raise TypeError(f"The tasks for job {job_name!r} must be a list or a dictionary from "
                    "integers to strings.")


def _jobs_from_def(cluster_def: cluster_pb2.ClusterDef) -> dict[str, dict[int, str]]:
    # A name given twice keeps its first position and its last tasks, as TensorFlow's does.
    jobs: dict[str, dict[int, str]] = {}
    for job_def in cluster_def.job:
        jobs[job_def.name] = {_task_index(job_def.name, i): address
                              for i, address in job_def.tasks.items()}
    return jobs


def _as_text(value: Any, what: str) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, str):
        return value
    raise TypeError(f"{what} {value!r} must be bytes or unicode")


def _make_cluster_def(jobs: dict) -> cluster_pb2.ClusterDef:
    """The ClusterDef of job -> task index -> address; jobs and tasks sorted."""
    try:
        ordered = sorted(jobs.items(), key=lambda item: item[0])
    except TypeError:
        for name in jobs:
            _as_text(name, "Job name")
        raise TypeError(f"Job names mix str and bytes: {list(jobs)!r}") from None
    cluster_def = cluster_pb2.ClusterDef()
    for name, tasks in ordered:
        job_def = cluster_def.job.add()
        job_def.name = _as_text(name, "Job name")
        for index, address in sorted(tasks.items()):
            job_def.tasks[index] = _as_text(address, "Task address")
    return cluster_def


# ---- TF_CONFIG -----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ServerTarget:
    """The place of one server in its cluster, as `tf.train.Server` resolves it.

    Attributes:
      cluster_spec: the whole cluster.
      job_name: the server's job, a job of `cluster_spec`.
      task_index: the server's task index, a task of that job.
      protocol: the RPC layer, e.g. "grpc".
    """

    cluster_spec: ClusterSpec
    job_name: str
    task_index: int
    protocol: str


def load_tf_config(environ: Mapping[str, str] | None = None) -> dict:
    """Reads and checks the `TF_CONFIG` environment variable.

    Args:
      environ: the environment to read (default `os.environ`).

    Returns:
      The decoded JSON object; {} when TF_CONFIG is unset or blank.

    Raises:
      ValueError: TF_CONFIG is not JSON, not a JSON object, or one of its keys "cluster",
        "task", "rpc_layer", "environment" has the wrong JSON type.
    """
    text = (os.environ if environ is None else environ).get(TF_CONFIG, "")
    if not text.strip():
        return {}
    try:
        config = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"TF_CONFIG is not valid JSON ({e}): {text!r}") from None
    if not isinstance(config, dict):
        raise ValueError(f"TF_CONFIG must be a JSON object, got {text!r}")
    for key, (kind, description) in _TF_CONFIG_TYPES.items():
        value = config.get(key)
        if value is not None and not isinstance(value, kind):
            raise ValueError(f'TF_CONFIG\'s "{key}" must be {description}, got {value!r}')
    return config


def resolve(cluster: ClusterLike | None = None, job_name: str | None = None,
            task_index: int | None = None, protocol: str | None = None,
            environ: Mapping[str, str] | None = None) -> ServerTarget:
    """Resolves a server's cluster, job, task and protocol from arguments and TF_CONFIG.

    Explicit arguments win. Otherwise the cluster is TF_CONFIG's "cluster" (no cluster at
    all: an empty one), the job TF_CONFIG's "task"."type", the task index its "task"."index"
    (each looked up on its own), the protocol TF_CONFIG's "rpc_layer", then "grpc". A job
    still unknown is the cluster's only job; a task index still unknown is the job's only
    task.

    Args:
      cluster: a dict, `ClusterDef` or `ClusterSpec` (see `ClusterSpec`), or None.
      job_name: the server's job, or None.
      task_index: the server's task index, or None.
      protocol: the RPC layer, or None.
      environ: the environment holding TF_CONFIG (default `os.environ`).

    Returns:
      A `ServerTarget` naming a task that exists in its cluster.

    Raises:
      TypeError: an explicit argument has the wrong type.
      ValueError: TF_CONFIG is malformed (see `load_tf_config`; also a task type that is
        not a string, an index that is not an integer); a job name of the cluster is
        invalid; the job or task cannot be inferred or is not in the cluster.
    """
    config = load_tf_config(environ)
    task = config.get("task") or {}
    origin = {"job": "argument job_name", "task": "argument task_index"}
    if cluster is not None:
        spec = ClusterSpec(cluster)
    else:
        spec = _config_cluster(config.get("cluster"))
    if job_name is None:
        job_name, origin["job"] = _config_task_type(task.get("type")), "TF_CONFIG task type"
    elif not isinstance(job_name, str):
        raise TypeError(f"job_name must be a string, got {job_name!r}")
    if task_index is None:
        task_index, origin["task"] = _config_task_index(task.get("index")), "TF_CONFIG task index"
    elif isinstance(task_index, bool) or not hasattr(task_index, "__index__"):
        raise TypeError(f"task_index must be an integer, got {task_index!r}")
    if protocol is None:
        protocol = config.get("rpc_layer") or DEFAULT_PROTOCOL
    elif not isinstance(protocol, str):
        raise TypeError(f"protocol must be a string, got {protocol!r}")
    job_name, task_index = _place(spec, job_name, task_index, origin)
    return ServerTarget(spec, job_name, task_index, protocol)


def _config_cluster(raw: dict | None) -> ClusterSpec:
    try:
        return ClusterSpec(raw or {})
    except (TypeError, ValueError) as e:
        raise ValueError(f'TF_CONFIG\'s "cluster" is malformed ({e}): {raw!r}') from None


def _config_task_type(raw: Any) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str) or not raw:
        raise ValueError(f"TF_CONFIG's task type must be a non-empty string, got {raw!r}")
    return raw


def _config_task_index(raw: Any) -> int | None:
    """TF_CONFIG's task index: an integer, an integral float or a string of digits."""
    if raw is None:
        return None
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if isinstance(raw, float) and raw.is_integer():
        return int(raw)
    if isinstance(raw, str) and _DIGITS.fullmatch(raw.strip()):
        return int(raw)
    raise ValueError(f"TF_CONFIG's task index must be an integer, got {raw!r}")


def _place(spec: ClusterSpec, job_name: str | None, task_index: int | None,
           origin: dict[str, str]) -> tuple[str, int]:
    """Infers a missing job or task index from the cluster, then checks both exist."""
    jobs = spec.jobs
    for name in jobs:
        validate_job_name(name.decode("utf-8") if isinstance(name, bytes) else name)
    if job_name is None:
        if len(jobs) != 1:
            raise ValueError(f"Must specify an explicit `job_name`: TF_CONFIG names no task "
                             f"type and the cluster has {len(jobs)} jobs {jobs!r}")
        job_name = jobs[0]
    if job_name not in jobs:
        raise ValueError(f"Job {job_name!r} ({origin['job']}) is not in the cluster, whose "
                         f"jobs are {jobs!r}")
    indices = spec.task_indices(job_name)
    if task_index is None:
        if len(indices) != 1:
            raise ValueError(f"Must specify an explicit `task_index`: TF_CONFIG names no task "
                             f"index and job {job_name!r} has tasks {indices!r}")
        task_index = indices[0]
    if task_index not in indices:
        raise ValueError(f"Task index {task_index!r} ({origin['task']}) is not a task of job "
                         f"{job_name!r}, whose task indices are {indices!r}")
    return job_name, int(task_index)


# ---- command-line flags --------------------------------------------------------------------


def validate_job_name(name: str) -> str:
    """Checks a job name as TensorFlow's device names need it: `[A-Za-z][A-Za-z0-9_]*`.

    Args:
      name: the job name.

    Returns:
      `name`.

    Raises:
      ValueError: `name` is not a string of that form.
    """
    if not isinstance(name, str) or not _JOB_NAME.fullmatch(name):
        raise ValueError(f"Invalid job name {name!r}: a job name starts with a letter and has "
                         "only letters, digits and '_'")
    return name


def validate_address(address: str) -> str:
    """Checks a task address "host:port" (IPv6 hosts in brackets: "[::1]:2222").

    Args:
      address: the address.

    Returns:
      `address`.

    Raises:
      ValueError: `address` is not a string "host:port" with a host name, IPv4 address or
        bracketed IPv6 address and a port in 0..65535.
    """
    if not isinstance(address, str):
        raise ValueError(f"Address {address!r} must be a string host:port")
    host, colon, port = address.rpartition(":")
    if not colon:
        raise ValueError(f"Address {address!r} is not of the form host:port")
    if not _PORT.fullmatch(port) or int(port) > _MAX_PORT:
        raise ValueError(f"Address {address!r}: port {port!r} is not an integer in "
                         f"0..{_MAX_PORT}")
    if host.startswith("[") and host.endswith("]"):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            raise ValueError(f"Address {address!r}: {host!r} is not a bracketed IPv6 "
                             "address") from None
    elif not _HOST_NAME.fullmatch(host):
        raise ValueError(f"Address {address!r}: host {host!r} is not a host name or IPv4 "
                         "address (an IPv6 address goes in brackets: [::1]:2222)")
    return address


def _split_addresses(text: str, separator: str, where: str) -> list[str]:
    """The addresses in `text` separated by `separator`; [] for a blank text."""
    if not text.strip():
        return []
    addresses = [part.strip() for part in text.split(separator)]
    for address in addresses:
        if not address:
            raise ValueError(f"{where}: empty address in {text!r}")
        try:
            validate_address(address)
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
    return addresses


def parse_hosts(ps_hosts: str, worker_hosts: str) -> ClusterSpec:
    """The cluster of the customary `--ps_hosts a:1,b:2 --worker_hosts c:3` flags.

    Args:
      ps_hosts: comma-separated addresses of the "ps" job; blank: no "ps" job.
      worker_hosts: comma-separated addresses of the "worker" job; blank: no "worker" job.

    Returns:
      A `ClusterSpec` with the jobs "ps" and "worker" (those given).

    Raises:
      ValueError: an address is empty or invalid (see `validate_address`).
    """
    jobs = {}
    for job, text in (("ps", ps_hosts), ("worker", worker_hosts)):
        addresses = _split_addresses(text, ",", f"--{job}_hosts")
        if addresses:
            jobs[job] = addresses
    return ClusterSpec(jobs)


def parse_cluster_spec(text: str) -> ClusterSpec:
    """The cluster of a `--cluster_spec` flag.

    Two formats: TensorFlow's old server flag "ps|host1:2222;host2:2222,worker|host3:2222"
    (jobs separated by ",", a job's name and its addresses by "|", addresses by ";"), and
    JSON as in TF_CONFIG's "cluster": {"ps": ["host1:2222"], "worker": {"1": "host3:2222"}}.

    Args:
      text: the flag's value; blank: an empty cluster.

    Returns:
      A `ClusterSpec`.

    Raises:
      ValueError: malformed text, a duplicated or invalid job name, a job without
        addresses, an invalid address (see `validate_address`); the message quotes the part.
    """
    stripped = text.strip()
    if not stripped:
        return ClusterSpec({})
    if stripped.startswith("{"):
        return _parse_json_cluster(stripped)
    jobs: dict[str, list[str]] = {}
    for part in stripped.split(","):
        name, bar, hosts = part.strip().partition("|")
        if not bar or "|" in hosts:
            raise ValueError(f"--cluster_spec: {part!r} is not of the form "
                             "job|host:port;host:port")
        _check_flag_job(name, jobs, part)
        jobs[name] = _split_addresses(hosts, ";", f"--cluster_spec job {name!r}")
        if not jobs[name]:
            raise ValueError(f"--cluster_spec: job {name!r} has no addresses in {part!r}")
    return ClusterSpec(jobs)


def _check_flag_job(name: str, seen: Mapping[str, Any], part: str) -> None:
    try:
        validate_job_name(name)
    except ValueError as e:
        raise ValueError(f"--cluster_spec: {e} in {part!r}") from None
    if name in seen:
        raise ValueError(f"--cluster_spec: job {name!r} is given twice")


def _parse_json_cluster(text: str) -> ClusterSpec:
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"--cluster_spec is not valid JSON ({e}): {text!r}") from None
    if not isinstance(raw, dict):
        raise ValueError(f"--cluster_spec must be a JSON object, got {text!r}")
    for name, tasks in raw.items():
        _check_flag_job(name, {}, text)
        addresses = tasks.values() if isinstance(tasks, dict) else tasks
        if not isinstance(tasks, (list, dict)) or not addresses:
            raise ValueError(f"--cluster_spec: job {name!r} must have a non-empty list or "
                             f"object of addresses, got {tasks!r}")
        for address in addresses:
            try:
                validate_address(address)
            except ValueError as e:
                raise ValueError(f"--cluster_spec job {name!r}: {e}") from None
    try:
        return ClusterSpec(raw)
    except (TypeError, ValueError) as e:
        raise ValueError(f"--cluster_spec: {e}") from None
