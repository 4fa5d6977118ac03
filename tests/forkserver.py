"""Fresh processes for crash tests without paying tensorflux's import in each.

A crash test starts a program, kills it with SIGKILL at a random moment and checks what it
left on disk, many times over. Each `python -c` pays the import of tensorflux (about 2.5 s of
CPU, far more wall time on a busy machine) before it does anything. `ForkServer` imports it
once in a process of its own and forks that process for every program: a child is a new
process with its own pid, files and memory, killed for real, and it starts where a fresh
`python -c` would be right after `import tensorflux` (no graph, no session, no thread of
tensorflux's made yet). Nothing of the test's own process is shared.

    with ForkServer(cwd) as fs:
        proc = fs.spawn(code, arg1, arg2)      # like Popen([python, "-c", code, ...])
        proc.stdout.readline(); proc.send_signal(signal.SIGKILL); proc.wait(timeout=30)
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap

# The server: one request at a time (argv and code as JSON, the child's stdout and stderr as
# passed descriptors); answers "pid N" when the child runs and "exit S" (a wait status) when
# it has ended.
_SERVER = textwrap.dedent("""
    import gc, json, os, socket, sys, traceback
    import tensorflux  # noqa: F401  (what every child shares)
    gc.freeze()  # the collector of a child then leaves the shared pages shared (not copied)
    sock = socket.socket(fileno=int(sys.argv[1]))
    devnull = os.open(os.devnull, os.O_RDONLY)
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(sock, 1 << 20, 2)
        except (ConnectionError, OSError):
            break
        if not msg:
            break
        req = json.loads(msg)
        pid = os.fork()
        if pid == 0:
            sock.close()
            os.dup2(devnull, 0)
            os.dup2(fds[0], 1)
            os.dup2(fds[1], 2)
            os.close(fds[0])
            os.close(fds[1])
            os.chdir(req["cwd"])
            sys.argv = ["-c"] + req["args"]
            code = 0
            try:
                exec(compile(req["code"], "<string>", "exec"), {"__name__": "__main__"})
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            except BaseException:
                traceback.print_exc()
                code = 1
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
        os.close(fds[0])
        os.close(fds[1])
        sock.sendall(f"pid {pid}\\n".encode())
        _, status = os.waitpid(pid, 0)
        sock.sendall(f"exit {status}\\n".encode())
""")


class ForkedProcess:
    """The part of `subprocess.Popen` the crash tests use, for a child of the fork server."""

    def __init__(self, server: ForkServer, pid: int, stdout, stderr):
        self._server = server
        self.pid = pid
        self.stdout = stdout
        self.stderr = stderr
        self.returncode: int | None = None

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        import signal

        self.send_signal(signal.SIGKILL)

    def _status(self, timeout: float | None) -> int | None:
        line = self._server._read_line(timeout)
        if line is None:
            return None
        assert line.startswith("exit "), line
        self.returncode = os.waitstatus_to_exitcode(int(line.split()[1]))
        return self.returncode

    def poll(self) -> int | None:
        if self.returncode is None:
            self._status(0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None and self._status(timeout) is None:
            raise subprocess.TimeoutExpired(f"forked child {self.pid}", timeout)
        return self.returncode

    def communicate(self, timeout: float | None = None) -> tuple[bytes, bytes]:
        # Both pipes are drained by threads so that a child filling one never blocks.
        import threading

        outs = {}

        def drain(name, f):
            outs[name] = f.read()
            f.close()

        threads = [threading.Thread(target=drain, args=(n, f), daemon=True)
                   for n, f in (("out", self.stdout), ("err", self.stderr))]
        for t in threads:
            t.start()
        self.wait(timeout)
        for t in threads:
            t.join(timeout)
        return outs.get("out", b""), outs.get("err", b"")


class ForkServer:
    """A process with tensorflux imported that forks one child per `spawn` (one at a time)."""

    def __init__(self, cwd: str | os.PathLike):
        self.cwd = str(cwd)
        self._sock, theirs = socket.socketpair()
        self._proc = subprocess.Popen([sys.executable, "-c", _SERVER, str(theirs.fileno())],
                                      pass_fds=[theirs.fileno()], cwd=self.cwd)
        theirs.close()
        self._buf = b""

    def _read_line(self, timeout: float | None) -> str | None:
        self._sock.settimeout(timeout)
        while b"\n" not in self._buf:
            try:
                chunk = self._sock.recv(4096)
            except (TimeoutError, BlockingIOError):
                return None
            assert chunk, f"fork server ended (exit {self._proc.poll()})"
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line.decode()

    def spawn(self, code: str, *args: str, bufsize: int = -1) -> ForkedProcess:
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            req = json.dumps({"code": code, "args": list(args), "cwd": self.cwd}).encode()
            socket.send_fds(self._sock, [req], [out_w, err_w])
        finally:
            os.close(out_w)
            os.close(err_w)
        line = self._read_line(120)
        assert line is not None and line.startswith("pid "), line
        return ForkedProcess(self, int(line.split()[1]), os.fdopen(out_r, "rb", bufsize),
                             os.fdopen(err_r, "rb"))

    def close(self) -> None:
        self._sock.close()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()

    def __enter__(self) -> ForkServer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
