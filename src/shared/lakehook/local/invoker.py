"""Invoke a template's function as Lambda would: in execution environments of its own, with its limits.

Each :class:`LocalFunction` keeps a pool of execution environments, each a process running
:mod:`lakehook.local.worker` with the function's own environment variables, logger and metrics (nothing
is shared with another function or with the stack's process). An invocation takes an idle environment,
the most recently used first, or starts one (a cold start) while fewer than ``max_environments`` run;
otherwise it waits for one, as a function at its concurrency limit would queue its event source.

What the template sets is enforced from outside the environment, as Lambda does:

- ``Timeout``: an invocation still running at its deadline has its environment killed, and fails with
  ``Sandbox.Timedout`` ("Task timed out after N.00 seconds"); its caller retries as an event source would.
- ``MemorySize``: the environment's resident memory is read while an invocation runs; past the size, the
  environment is killed and the invocation fails with ``Runtime.OutOfMemory``. (Resident memory, not an
  address-space limit: ``RLIMIT_AS`` makes pyarrow's allocator fail at far less than the size.)
- a crash of the process (``os._exit``, a signal) fails the invocation with ``Runtime.ExitError``.

Processes: one fork server per stack process (the standard library's), with the heavy third-party
libraries and lakehook's pure packages imported; from it, one zygote per function, which runs the
function's init (imports its handler) once; from the zygote, each execution environment, forked already
initialised. So the stack's start costs each function's own imports once, and one more environment (a
cold start under concurrency) costs a fork.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import json
import logging
import os
import pkgutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from multiprocessing.connection import Connection
from typing import Any

from lakehook.local import logs
from lakehook.local.forkserver import BOOTSTRAP
from lakehook.local.template import FunctionSpec
from lakehook.local.worker import LocalContext, WorkerSpec

__all__ = ["FunctionError", "LocalContext", "LocalFunction"]

log = logging.getLogger("lakehook.local.invoker")

# Imported once in the fork server, so that an environment's init costs only what is its function's own:
# the third-party libraries every function imports, and lakehook's pure packages (the domain and the ports),
# which read nothing from the environment and start no thread. Never a module that reads settings, builds a
# logger or a client at import (``lakehook.observability``, ``lakehook.settings``, adapters): the
# environment they would read is each function's own. tests/unit/test_local_preload.py keeps it so.
THIRD_PARTY_PRELOAD = [
    "boto3",
    "botocore.session",
    "botocore.client",
    "pydantic",
    "aws_lambda_powertools",
    "aws_lambda_powertools.logging",
    "aws_lambda_powertools.metrics",
    "aws_lambda_powertools.event_handler",
    "aws_lambda_powertools.utilities.batch",
    "requests",
]
PURE_PACKAGES = ("lakehook.domain", "lakehook.ports", "lakehook.wire")


def preload_modules() -> list[str]:
    """The modules the fork server imports: the third-party ones, then every module of the pure packages."""
    modules = list(THIRD_PARTY_PRELOAD)
    for package in PURE_PACKAGES:
        spec = importlib.util.find_spec(package)
        locations = list(spec.submodule_search_locations or []) if spec else []
        modules += [package, *sorted(f"{package}.{m.name}" for m in pkgutil.iter_modules(locations))]
    return modules


INIT_GRACE_SECONDS = 10.0  # Lambda's init phase limit, on top of the function's timeout
_SLICE = 0.05  # seconds between memory readings while an invocation runs
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class _ForkServer:
    """The stack process's fork server (:mod:`lakehook.local.forkserver`), started on first use."""

    _lock = threading.Lock()
    _running: _ForkServer | None = None

    def __init__(self) -> None:
        self._control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        paths = [p for p in sys.path if p]
        argv = [sys.executable, "-c", BOOTSTRAP, json.dumps(paths), json.dumps(preload_modules()), str(theirs.fileno())]
        # Its own session: a terminal's Ctrl-C reaches the stack alone, which stops the functions itself.
        self.process = subprocess.Popen(
            argv, pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, start_new_session=True
        )
        theirs.close()
        self._request = threading.Lock()

    @classmethod
    def get(cls) -> _ForkServer:
        with cls._lock:
            if cls._running is None or cls._running.process.poll() is not None:
                cls._running = cls()
            return cls._running

    def zygote(self, spec: WorkerSpec, control: socket.socket, log_fd: int) -> int:
        """Fork a zygote for ``spec`` with its control socket and output pipe: its pid."""
        message = json.dumps(dataclasses.asdict(spec)).encode()
        with self._request:
            socket.send_fds(self._control, [message], [control.fileno(), log_fd])
            answer = self._control.recv(65536)
        if not answer:
            raise RuntimeError("the local runtime's fork server ended")
        return int(json.loads(answer)["pid"])


class FunctionError(Exception):
    """An invocation that failed: Lambda's error object (errorType, errorMessage, stackTrace)."""

    def __init__(self, function: str, error: dict[str, Any]) -> None:
        self.function = function
        self.error = error
        trace = "".join(error.get("stackTrace") or [])
        super().__init__(
            f"{function}: {error.get('errorType')}: {error.get('errorMessage')}" + (f"\n{trace}" if trace else "")
        )

    @property
    def error_type(self) -> str:
        return str(self.error.get("errorType", ""))


def _resident_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * _PAGE / (1024 * 1024)
    except (OSError, ValueError, IndexError):
        return 0.0


class _Zygote:
    """A function's zygote process (:func:`lakehook.local.worker.zygote`): its init, run once, and the
    execution environments forked from it; with the relay of their output."""

    def __init__(self, spec: WorkerSpec) -> None:
        self.spec = spec
        self._control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        log_reader, log_writer = os.pipe()
        try:
            self.pid = _ForkServer.get().zygote(spec, theirs, log_writer)
        finally:
            theirs.close()
            os.close(log_writer)
        self._lock = threading.Lock()  # one request and its answer at a time
        self._relay = threading.Thread(
            target=logs.relay, args=(spec.name, log_reader), name=f"lakehook-logs-{spec.name}", daemon=True
        )
        self._relay.start()

    def init(self) -> dict[str, Any] | None:
        """Wait for the init phase; Lambda's error object when it failed, None when ready."""
        self._control.settimeout(self.spec.timeout + INIT_GRACE_SECONDS)
        try:
            message = self._control.recv(65536)
        except TimeoutError:
            self.stop()
            error = f"Init timed out after {self.spec.timeout + INIT_GRACE_SECONDS:.2f} seconds"
            return {"errorType": "Sandbox.Timedout", "errorMessage": error}
        finally:
            self._control.settimeout(None)
        if not message:
            return {"errorType": "Runtime.ExitError", "errorMessage": "Runtime exited without providing a reason"}
        answer = json.loads(message)
        return dict(answer["error"]) if "error" in answer else None

    def spawn(self) -> _Environment:
        """A new execution environment, forked from the initialised zygote."""
        ours, theirs = socket.socketpair()
        with self._lock:
            socket.send_fds(self._control, [json.dumps({"op": "spawn"}).encode()], [theirs.fileno()])
            theirs.close()
            pid = int(json.loads(self._control.recv(65536))["pid"])
        return _Environment(self, pid, Connection(ours.detach()))

    def reap(self, pid: int) -> int | None:
        """The exit status of an environment that ended (the zygote, its parent, waits for it)."""
        with self._lock:
            try:
                self._control.send(json.dumps({"op": "reap", "pid": pid}).encode())
                status = json.loads(self._control.recv(65536) or b'{"status": null}')["status"]
            except OSError:
                return None
        return None if status is None else int(status)

    def stop(self) -> None:
        with self._lock:
            self._control.close()  # the zygote ends its environments and exits
        self._relay.join(timeout=5)  # its output ends with it
        if self._relay.is_alive():  # still running: stop it as Lambda would
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            self._relay.join(timeout=2)


def _how(code: int | None) -> str:
    return f"signal: {-code}" if code is not None and code < 0 else f"exit status {code}"


class _Environment:
    """One execution environment: a process forked from its function's zygote, and its invocation channel."""

    def __init__(self, zygote: _Zygote, pid: int, channel: Connection) -> None:
        self.spec = zygote.spec
        self._zygote = zygote
        self.pid = pid
        self.channel = channel

    def ready(self) -> dict[str, Any] | None:
        message = self._receive(INIT_GRACE_SECONDS, "init")
        return dict(message["error"]) if "error" in message else None

    def call(self, event: dict[str, Any], request_id: str) -> dict[str, Any]:
        try:
            self.channel.send_bytes(json.dumps({"event": event, "requestId": request_id}).encode())
        except OSError:  # it ended while idle
            return self._exited(request_id)
        return self._receive(float(self.spec.timeout), request_id)

    def _receive(self, seconds: float, request_id: str) -> dict[str, Any]:
        deadline = time.monotonic() + seconds
        while True:
            remaining = deadline - time.monotonic()
            try:
                if self.channel.poll(max(0.0, min(_SLICE, remaining))):
                    return dict(json.loads(self.channel.recv_bytes()))
            except (EOFError, OSError):
                return self._exited(request_id)
            if remaining <= 0:
                self.kill()
                message = f"RequestId: {request_id} Error: Task timed out after {seconds:.2f} seconds"
                return {"error": {"errorType": "Sandbox.Timedout", "errorMessage": message}, "killed": True}
            used = _resident_mb(self.pid)
            if used > self.spec.memory_size:
                self.kill()
                message = (
                    f"RequestId: {request_id} Error: Runtime exited with error: signal: killed "
                    f"(Max Memory Used: {used:.0f} MB of {self.spec.memory_size} MB)"
                )
                return {"error": {"errorType": "Runtime.OutOfMemory", "errorMessage": message}, "killed": True}

    def _exited(self, request_id: str) -> dict[str, Any]:
        """The process ended by itself: Lambda's error for it, with its exit status."""
        message = f"RequestId: {request_id} Error: Runtime exited with error: {_how(self.end())}"
        return {"error": {"errorType": "Runtime.ExitError", "errorMessage": message}, "killed": True}

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        self.end()

    def end(self) -> int | None:
        """Close the channel and reap the process: its exit status."""
        self.channel.close()
        return self._zygote.reap(self.pid)

    def stop(self) -> None:
        self.end()  # the environment sees its channel close and returns


class LocalFunction:
    """One function of the template, with its execution environments (warm ones reused, like Lambda's)."""

    def __init__(
        self, spec: FunctionSpec, environment: dict[str, str] | None = None, max_environments: int = 8
    ) -> None:
        self.spec = spec
        self.environment = dict(environment or spec.environment)
        self.max_environments = max_environments
        self._worker_spec = WorkerSpec(
            name=spec.name,
            code_uri=str(spec.code_uri),
            handler=spec.handler,
            timeout=spec.timeout,
            memory_size=spec.memory_size,
            environment=self.environment,
        )
        self._cond = threading.Condition()
        self._idle: list[_Environment] = []
        self._running = 0  # environments started and not discarded, idle or busy
        self._stopped = False
        self._zygote: _Zygote | None = None
        self.cold_starts = 0

    @property
    def environments(self) -> int:
        """How many execution environments this function has now (idle or busy)."""
        with self._cond:
            return self._running

    def processes(self) -> list[int]:
        """The pids of this function's zygote and idle environments (busy ones are in use elsewhere)."""
        with self._cond:
            return ([self._zygote.pid] if self._zygote else []) + [e.pid for e in self._idle]

    def start(self) -> None:
        """Run the function's init (its zygote) and start one environment, so a broken handler fails now."""
        zygote = _Zygote(self._worker_spec)
        error = zygote.init()
        if error is not None:
            zygote.stop()
            raise FunctionError(self.spec.name, error)
        self._zygote = zygote
        environment = self._start_environment()
        with self._cond:
            self._idle.append(environment)
            self._cond.notify()

    def invoke(self, event: dict[str, Any]) -> Any:
        """The handler's result, or :class:`FunctionError` with Lambda's error object."""
        request_id = str(uuid.uuid4())
        environment = self._acquire()
        answer = environment.call(event, request_id)
        if answer.get("killed"):
            self._discard(environment)
        else:
            self._release(environment)
        if "error" in answer:
            raise FunctionError(self.spec.name, answer["error"])
        return answer["result"]

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            idle, self._idle = self._idle, []
            self._cond.notify_all()
        for environment in idle:
            environment.stop()
        if self._zygote is not None:
            self._zygote.stop()

    # --- the pool ----------------------------------------------------------------------------------

    def _start_environment(self) -> _Environment:
        assert self._zygote is not None, "start() first"
        with self._cond:
            self._running += 1
        try:
            environment = self._zygote.spawn()
            error = environment.ready()
        except BaseException:
            with self._cond:
                self._running -= 1
                self._cond.notify()
            raise
        if error is not None:
            environment.kill()
            with self._cond:
                self._running -= 1
                self._cond.notify()
            raise FunctionError(self.spec.name, error)
        self.cold_starts += 1
        return environment

    def _acquire(self) -> _Environment:
        with self._cond:
            while not self._idle and self._running >= self.max_environments and not self._stopped:
                self._cond.wait(1.0)
            if self._stopped:
                raise FunctionError(self.spec.name, {"errorType": "Local.Stopped", "errorMessage": "the stack stopped"})
            if self._idle:
                return self._idle.pop()  # the most recently used: warm, as Lambda reuses
        return self._start_environment()

    def _release(self, environment: _Environment) -> None:
        with self._cond:
            if not self._stopped:
                self._idle.append(environment)
                self._cond.notify()
                return
        environment.stop()

    def _discard(self, environment: _Environment) -> None:
        environment.kill()
        with self._cond:
            self._running -= 1
            self._cond.notify()
        log.warning("%s: an execution environment was stopped; the next invocation starts a new one", self.spec.name)
