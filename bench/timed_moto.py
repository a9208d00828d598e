"""A moto server on loopback that counts the requests it serves and the time spent inside moto serving them.

The benches compare what a lakehook path costs with what moto costs it: moto's share is the wall time of
moto's own WSGI application (routing, the backend's work, the response), summed over the requests it served;
what is left of the caller's wall time is boto3, HTTP on loopback and lakehook. The server is a thread of the
benching process, so its CPU also shows in ``time.process_time``; ``time.thread_time`` of the calling thread
does not include it.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tests.lakehouse import CountingMotoServer


@dataclass
class Served:
    """What the server served inside a ``TimedMotoServer.measure`` block (filled when the block ends)."""

    calls: Counter[tuple[str, str]] = field(default_factory=Counter)
    seconds: float = 0.0

    def by_service(self, service: str) -> dict[str, int]:
        return {op: n for (svc, op), n in sorted(self.calls.items()) if svc == service}


class TimedMotoServer(CountingMotoServer):
    """``CountingMotoServer`` that also adds up the wall time spent inside moto's application."""

    def __init__(self) -> None:
        super().__init__()
        self.seconds = 0.0
        self._time_lock = threading.Lock()

    def start(self) -> TimedMotoServer:
        super().start()
        wsgi = self._server._server
        assert wsgi is not None
        counted = wsgi.app

        def timed(environ: dict[str, Any], start_response: Any) -> Any:
            began = time.perf_counter()
            try:
                return list(counted(environ, start_response))  # moto builds the whole body here
            finally:
                with self._time_lock:
                    self.seconds += time.perf_counter() - began

        wsgi.app = timed
        return self

    @contextmanager
    def served(self) -> Iterator[Served]:
        """Requests and seconds inside moto for the block (every client's, every thread's)."""
        with self._time_lock:
            seconds = self.seconds
        served = Served()
        with self.measure() as calls:
            yield served
        with self._time_lock:
            served.seconds = self.seconds - seconds
        served.calls = calls
