"""The local stack's fork server: one fresh interpreter with the common libraries imported, forking zygotes.

The stack (:mod:`lakehook.local.invoker`) starts it once per process, as
``python -c <bootstrap> SYS_PATH PRELOAD`` with one end of a SOCK_SEQPACKET socket pair, and asks it for
one zygote per function: a JSON datagram with the function's :class:`~lakehook.local.worker.WorkerSpec`
and two descriptors (SCM_RIGHTS), the zygote's control socket and the write end of its output pipe. The
answer is the zygote's pid. It imports nothing of the stack's program (unlike ``multiprocessing``'s fork
server, which imports the main module into every child), so nothing is imported with an environment other
than the function's own. It ends when the stack closes the socket or ends, taking its zygotes with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys

BOOTSTRAP = (
    "import json, sys; sys.path[:0] = json.loads(sys.argv[1]); "
    "from lakehook.local.forkserver import main; main(int(sys.argv[3]), json.loads(sys.argv[2]))"
)


def main(control_fd: int, preload: list[str]) -> None:
    from lakehook.local.worker import WorkerSpec, zygote

    # No PR_SET_PDEATHSIG here: it fires when the thread that started this process ends, and the stack
    # may start it from a short-lived thread. The stack's end closes the socket instead, which ends the loop.
    for name in preload:
        with contextlib.suppress(ImportError):  # not installed here: a function that needs it imports it itself
            __import__(name)
    control = socket.socket(fileno=control_fd)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the stack stops its functions itself, as Lambda would
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the zygotes are reaped by the kernel
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 1 << 20, 2)
        except OSError:
            break
        if not message:
            break  # the stack closed the socket, or ended
        spec = WorkerSpec(**json.loads(message))
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # a zygote waits for its own environments
            control.close()
            try:
                zygote(spec, socket.socket(fileno=fds[0]), fds[1])
            finally:
                os._exit(0)
        for fd in fds:
            os.close(fd)
        control.send(json.dumps({"pid": pid}).encode())
    sys.exit(0)
