"""A function's execution environments, each in a process of its own, as Lambda runs them.

:mod:`lakehook.local.invoker` has :mod:`lakehook.local.forkserver` fork :func:`zygote` from a process that has
the heavy third-party libraries and lakehook's pure packages imported already. The zygote becomes the
function's:

1. its environment is the function's own (the template's variables for this function and the stack's
   local values, nothing of any other function's), with the variables Lambda's runtime sets;
2. its standard output and error go to a pipe the stack relays line by line (``lakehook.local.logs``);
3. it imports the handler from the function's CodeUri (the init phase) once, and says ``ready`` or why not;
4. it forks an execution environment each time the stack needs one more: a copy of the initialised process,
   as if its init had run again, which answers invocations one at a time, each a JSON event in and a JSON
   result (or Lambda's error object: errorType, errorMessage, stackTrace) out, until its channel closes.

The environments of one function share the zygote's output pipe (a line is written whole, so lines do not
mix up below the pipe's atomic size, 4 KiB). Timeouts and memory are enforced from outside, by the stack,
which kills an environment as Lambda stops one; nothing here needs to cooperate.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import socket
import sys
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

Handler = Callable[[dict[str, Any], Any], Any]
_PR_SET_PDEATHSIG = 1


@dataclass
class LocalContext:
    """The parts of the Lambda context object that handlers and Powertools read."""

    function_name: str
    timeout_seconds: int
    memory_limit_in_mb: int = 128
    function_version: str = "$LATEST"
    aws_request_id: str = ""
    log_group_name: str = ""
    log_stream_name: str = "local"

    def __post_init__(self) -> None:
        self.aws_request_id = self.aws_request_id or str(uuid.uuid4())
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{self.function_name}"
        self.log_group_name = f"/aws/lambda/{self.function_name}"
        self._deadline = time.monotonic() + self.timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


@dataclass(frozen=True)
class WorkerSpec:
    """What a worker needs to become one function's execution environment (sent pickled to the child)."""

    name: str
    code_uri: str
    handler: str
    timeout: int
    memory_size: int
    environment: dict[str, str]


def lambda_environment(spec: WorkerSpec) -> dict[str, str]:
    """The variables Lambda's runtime sets in every execution environment, for this function."""
    return {
        "AWS_LAMBDA_FUNCTION_NAME": spec.name,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(spec.memory_size),
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{spec.name}",
        "AWS_LAMBDA_LOG_STREAM_NAME": "local",
        "AWS_EXECUTION_ENV": "AWS_Lambda_python_local",
    }


def load_handler(spec: WorkerSpec) -> Handler:
    """Import ``Handler`` (``module.attr``) from the function's CodeUri, the code directory first on the path."""
    module_name, _, attr = spec.handler.rpartition(".")
    path = Path(spec.code_uri) / (module_name.replace(".", "/") + ".py")
    if not path.exists():
        raise FileNotFoundError(f"{spec.name}: handler file {path} does not exist")
    sys.path.insert(0, spec.code_uri)
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[module_name] = module
    loader_spec.loader.exec_module(module)
    handler: Handler = getattr(module, attr)
    return handler


def error_object(exc: BaseException) -> dict[str, Any]:
    """Lambda's error object for an unhandled exception (what the Python runtime returns and logs)."""
    return {
        "errorType": type(exc).__name__,
        "errorMessage": str(exc),
        "stackTrace": traceback.format_list(traceback.extract_tb(exc.__traceback__)),
    }


def die_with_parent() -> None:
    """Linux: be killed when the fork server (this process's parent) ends, so no environment outlives a stack."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _become(spec: WorkerSpec, log_fd: int) -> None:
    die_with_parent()
    os.environ.clear()
    os.environ.update(spec.environment)
    os.environ.update(lambda_environment(spec))
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.close(log_fd)
    for stream in (sys.stdout, sys.stderr):
        stream.reconfigure(line_buffering=True)  # type: ignore[union-attr]


def zygote(spec: WorkerSpec, control: socket.socket, log_fd: int) -> None:
    """A function's zygote: become its environment, run its init once, then fork an execution environment
    for each ``spawn`` the stack asks for, each a copy of the initialised process, until ``control`` closes.

    Requests and answers are JSON datagrams on ``control`` (a SOCK_SEQPACKET socket): ``spawn`` carries the
    new environment's invocation socket (SCM_RIGHTS) and is answered with its pid; ``reap`` waits for an
    environment that ended and answers its exit status, as a parent must. Single-threaded, so a fork is safe.
    """
    _become(spec, log_fd)
    try:
        handler = load_handler(spec)
    except BaseException as exc:  # the init phase failed: Lambda's Runtime.ImportModuleError and friends
        _log_unhandled(exc)
        control.send(json.dumps({"init": "failed", "error": error_object(exc)}).encode())
        return
    control.send(json.dumps({"init": "ready"}).encode())
    children: set[int] = set()
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 65536, 1)
        except OSError:
            break
        if not message:
            break  # the stack stopped this function
        request = json.loads(message)
        if request["op"] == "spawn":
            pid = os.fork()
            if pid == 0:  # the new environment
                control.close()
                die_with_parent()
                _serve(spec, handler, Connection(fds[0]))
                os._exit(0)
            os.close(fds[0])
            children.add(pid)
            control.send(json.dumps({"pid": pid}).encode())
        elif request["op"] == "reap":
            control.send(json.dumps({"status": _reap(int(request["pid"]))}).encode())
            children.discard(int(request["pid"]))
    for pid in children:  # each saw its channel close with the stack's stop, or is killed now
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        _reap(pid)


def _log_unhandled(exc: BaseException) -> None:
    """What Lambda's Python runtime logs of an unhandled error: ``[ERROR] Type: message``, then the traceback."""
    print(f"[ERROR] {type(exc).__name__}: {exc}", file=sys.stderr)
    traceback.print_exc()


def _reap(pid: int) -> int | None:
    """Wait for an environment that ended: its exit code, or minus the signal that ended it."""
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return None
    return os.waitstatus_to_exitcode(status)


def _serve(spec: WorkerSpec, handler: Handler, channel: Connection) -> None:
    """An execution environment: answer invocations one at a time until the stack closes the channel."""
    channel.send_bytes(json.dumps({"init": "ready"}).encode())
    while True:
        try:
            request = json.loads(channel.recv_bytes())
        except (EOFError, OSError):
            return  # the stack stopped or dropped this environment
        context = LocalContext(spec.name, spec.timeout, spec.memory_size, aws_request_id=request.get("requestId", ""))
        try:
            result = handler(request["event"], context)
        except Exception as exc:  # unhandled: the runtime logs it and returns it as the function's error
            _log_unhandled(exc)
            channel.send_bytes(json.dumps({"error": error_object(exc)}).encode())
            continue
        try:
            reply = json.dumps({"result": result})
        except (TypeError, ValueError) as exc:  # Lambda answers only JSON
            error = {"errorType": "Runtime.MarshalError", "errorMessage": f"Unable to marshal response: {exc}"}
            reply = json.dumps({"error": error})
        channel.send_bytes(reply.encode())
