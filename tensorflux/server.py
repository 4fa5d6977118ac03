"""`tensorflux-server` (also `python -m tensorflux.server`): one task of a cluster.

    tensorflux-server --job_name=ps --task_index=0 \\
        --ps_hosts=ps0:2222 --worker_hosts=worker0:2222,worker1:2222

The cluster comes from `--ps_hosts`/`--worker_hosts` (comma-separated "host:port"), or
`--cluster_spec` ("ps|h:1;h:2,worker|h:3" or JSON as in TF_CONFIG's "cluster"), or, with
none of those, from the TF_CONFIG environment variable (so does the task, when
`--job_name`/`--task_index` are not given). Security: `--token_file` (a shared secret every
call must carry), `--tls_cert`/`--tls_key` (serve TLS), `--tls_client_ca` (require client
certificates it signed), `--tls_root_ca`/`--tls_client_cert`/`--tls_client_key` (what this
task uses when it calls other tasks; with `--tls_client_ca` it presents its own
certificate unless told otherwise). Each flag wins over its TENSORFLUX_* environment
variable (rpc.RpcConfig.from_env).

Once serving, the command prints one line to stdout:

    tensorflux-server: /job:ps/replica:0/task:0 serving at grpc://ps0:2222

and logs one line to stderr per session created or closed and per failed step. SIGTERM or
SIGINT (or a Shutdown call, `tf.train.Server.shutdown_job`) stops the server: running steps
are cancelled, in-flight calls get `--grace` seconds, and the process exits 0 (a second
signal exits at once, with 1). Malformed flags, cluster or TF_CONFIG exit 2 with a one-line
error; a port that cannot be bound exits 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import signal
import sys
import threading
from collections.abc import Mapping, Sequence

from tensorflux.distributed import cluster as cluster_lib
from tensorflux.distributed import rpc
from tensorflux.distributed.server import Server
from tensorflux.framework import errors
from tensorflux.protos import config_pb2

PROG = "tensorflux-server"
LOGGER = logging.getLogger("tensorflux.server")

# flag -> (RpcConfig field, TENSORFLUX_TLS_* suffix) of the PEM files.
_PEM_FLAGS = {
    "tls_cert": ("server_cert", "CERT"), "tls_key": ("server_key", "KEY"),
    "tls_client_ca": ("client_ca", "CLIENT_CA"), "tls_root_ca": ("root_ca", "ROOT_CA"),
    "tls_client_cert": ("client_cert", "CLIENT_CERT"),
    "tls_client_key": ("client_key", "CLIENT_KEY"),
}
_EVENT_LEVELS = {"session_created": logging.INFO, "session_closed": logging.INFO,
                 "step_failed": logging.WARNING}


class UsageError(Exception):
    """Malformed flags, cluster or TF_CONFIG (exit code 2)."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are UsageErrors (one line, no usage dump)."""

    def error(self, message: str):
        raise UsageError(message)


def _number(kind, allow_zero: bool = False):
    """An argparse type: a positive (or non-negative) `kind`."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid {kind.__name__} value: {text!r}") \
                from None
        if not (value >= 0 if allow_zero else value > 0) or value != value:
            raise argparse.ArgumentTypeError(
                f"{text!r} must be {'non-negative' if allow_zero else 'positive'}")
        return value

    return parse


def make_parser() -> argparse.ArgumentParser:
    """The command's flags (TensorFlow's customary server flags, plus security)."""
    p = _Parser(prog=PROG, allow_abbrev=False, description=(
        "Runs one task (master and worker services) of a tensorflux cluster."))
    p.add_argument("--job_name", help="this task's job, e.g. ps or worker (default: "
                   "TF_CONFIG's task type, or the cluster's only job)")
    p.add_argument("--task_index", type=int, help="this task's index in its job (default: "
                   "TF_CONFIG's task index, or the job's only task)")
    p.add_argument("--ps_hosts", default="", help="comma-separated host:port of the ps job")
    p.add_argument("--worker_hosts", default="",
                   help="comma-separated host:port of the worker job")
    p.add_argument("--cluster_spec", default="", help="the whole cluster: "
                   "'ps|h:1;h:2,worker|h:3' or JSON {\"ps\": [\"h:1\"], ...}")
    p.add_argument("--device_count_cpu", type=_number(int), help="CPU devices of this task "
                   "(ConfigProto device_count; default 1)")
    p.add_argument("--token_file", help="file holding the shared token every call must carry "
                   "(default: TENSORFLUX_RPC_TOKEN)")
    for flag, (_, suffix) in _PEM_FLAGS.items():
        p.add_argument(f"--{flag}", metavar="PEM_FILE",
                       help=f"default: $TENSORFLUX_TLS_{suffix}")
    p.add_argument("--unavailable_timeout", type=_number(float), help="seconds a call "
                   "waits for an unreachable task (default: "
                   "$TENSORFLUX_RPC_UNAVAILABLE_TIMEOUT or 60)")
    p.add_argument("--grace", type=_number(float, allow_zero=True), default=5.0,
                   help="seconds in-flight calls get when the server stops (default 5)")
    p.add_argument("--log_level", default="INFO",
                   choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return p


def cluster_from_flags(args: argparse.Namespace) -> cluster_lib.ClusterSpec | None:
    """The cluster the flags give, or None (then TF_CONFIG's).

    Raises:
      UsageError: both kinds of cluster flags, or a malformed one.
    """
    hosts = bool(args.ps_hosts.strip() or args.worker_hosts.strip())
    try:
        if args.cluster_spec.strip():
            if hosts:
                raise UsageError("give either --cluster_spec or --ps_hosts/--worker_hosts, "
                                 "not both")
            return cluster_lib.parse_cluster_spec(args.cluster_spec)
        if hosts:
            return cluster_lib.parse_hosts(args.ps_hosts, args.worker_hosts)
    except ValueError as e:
        raise UsageError(str(e)) from None
    return None


def rpc_config_from_flags(args: argparse.Namespace, environ: Mapping[str, str]
                          ) -> rpc.RpcConfig:
    """The RpcConfig of the flags over the TENSORFLUX_* environment.

    Raises:
      UsageError: an unreadable or empty file, a malformed variable, a TLS key without
        its certificate (or the reverse).
    """
    env = {k: v for k, v in environ.items() if k.startswith("TENSORFLUX_")}
    for flag, (_, suffix) in _PEM_FLAGS.items():
        if getattr(args, flag):
            env[f"TENSORFLUX_TLS_{suffix}"] = getattr(args, flag)
    try:
        config = rpc.RpcConfig.from_env(env)
    except OSError as e:
        raise UsageError(f"cannot read {e.filename!r}: {e.strerror}") from None
    except ValueError as e:
        raise UsageError(f"malformed TENSORFLUX_RPC_* variable: {e}") from None
    changes: dict = {}
    if args.token_file:
        changes["token"] = _read_token(args.token_file)
    if args.unavailable_timeout is not None:
        changes["unavailable_timeout"] = args.unavailable_timeout
    if (config.server_cert is None) != (config.server_key is None):
        raise UsageError("--tls_cert and --tls_key (or TENSORFLUX_TLS_CERT/KEY) go together")
    if config.client_ca is not None and config.server_cert is None:
        raise UsageError("--tls_client_ca needs --tls_cert and --tls_key")
    if config.client_ca is not None and config.client_cert is None:
        changes.update(client_cert=config.server_cert, client_key=config.server_key)
    return dataclasses.replace(config, **changes)


def _read_token(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            token = f.read().strip()
    except OSError as e:
        raise UsageError(f"--token_file {path!r}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"--token_file {path!r} is not UTF-8 text") from None
    if not token:
        raise UsageError(f"--token_file {path!r} is empty")
    return token


def make_server(args: argparse.Namespace, environ: Mapping[str, str]) -> Server:
    """The (not yet started) Server the flags and environment describe.

    Raises:
      UsageError: malformed flags, cluster or TF_CONFIG, or a task not in the cluster.
      UnavailableError: the task's address cannot be bound.
    """
    cluster = cluster_from_flags(args)
    rpc_config = rpc_config_from_flags(args, environ)
    config = None
    if args.device_count_cpu is not None:
        config = config_pb2.ConfigProto(device_count={"CPU": args.device_count_cpu})
    try:
        return Server(cluster, args.job_name, args.task_index, config=config, start=False,
                      rpc_config=rpc_config, log=_log_event, shutdown_grace=args.grace)
    except (ValueError, TypeError) as e:
        raise UsageError(str(e)) from None


def _log_event(event: str, message: str) -> None:
    LOGGER.log(_EVENT_LEVELS.get(event, logging.INFO), "%s", " ".join(message.split("\n")))


def _configure_logging(level: str, task: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(
        f"%(asctime)s %(levelname)s {PROG} {task}: %(message)s"))
    LOGGER.handlers[:] = [handler]
    LOGGER.propagate = False
    LOGGER.setLevel(level)


def _install_signal_handlers(server: Server, grace: float) -> None:
    """SIGTERM and SIGINT stop `server` (on a thread: a handler must return quickly); a
    second signal exits at once. Only the main thread can install handlers."""
    if threading.current_thread() is not threading.main_thread():
        return
    received: list[str] = []

    def stop(name: str) -> None:
        LOGGER.info("%s: stopping (grace %gs)", name, grace)
        server.stop(grace)

    def handler(signum, frame):
        name = signal.Signals(signum).name
        if received:
            os._exit(1)
        received.append(name)
        threading.Thread(target=stop, args=(name,), name="tfx-stop", daemon=True).start()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, handler)


def _fail(message: str, code: int) -> int:
    print(f"{PROG}: error: {' '.join(message.split())}", file=sys.stderr, flush=True)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Runs one task until it is stopped (see the module docstring).

    Args:
      argv: the flags (default: sys.argv[1:]).

    Returns:
      The exit code: 0 after a stop, 2 for malformed flags/cluster/TF_CONFIG, 1 when the
      server cannot start.
    """
    try:
        args = make_parser().parse_args(argv)
        server = make_server(args, os.environ)
    except UsageError as e:
        return _fail(str(e), 2)
    except errors.OpError as e:
        return _fail(e.message, 1)
    sd = server.server_def
    task = f"/job:{sd.job_name}/replica:0/task:{sd.task_index}"
    _configure_logging(args.log_level, task)
    _install_signal_handlers(server, args.grace)
    server.start()
    LOGGER.info("serving at %s", server.target)
    print(f"{PROG}: {task} serving at {server.target}", flush=True)
    server.join()
    LOGGER.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
