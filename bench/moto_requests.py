"""Count the requests a moto server answers, by operation, with the CPU each costs the server's thread.

Installed at moto's WSGI entry (``DomainDispatcherApplication.__call__``), so it counts what every client of
the server sends: the functions' processes, the local runtime's pollers, the bench itself. The operation is
the ``X-Amz-Target`` header (DynamoDB, DynamoDB Streams, SQS, Secrets Manager …) or the method and host of
a REST request (S3). CPU is ``time.thread_time`` around the call: the server thread's own work, not the time
it waited for the interpreter lock.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class MotoRequests:
    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.cpu: Counter[str] = Counter()
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self.counts.clear()
            self.cpu.clear()

    def record(self, operation: str, seconds: float) -> None:
        with self._lock:
            self.counts[operation] += 1
            self.cpu[operation] += seconds

    def per_event(self, events: int) -> tuple[float, float]:
        """Requests and milliseconds of moto CPU per event."""
        with self._lock:
            return sum(self.counts.values()) / events, sum(self.cpu.values()) * 1000 / events

    def top(self, events: int, n: int = 5) -> str:
        """The ``n`` commonest operations: ``UpdateItem 2.67/ev 6.8 ms, …`` (REST ones as ``GET host``)."""
        with self._lock:
            return ", ".join(
                f"{op if ' ' in op else op.rsplit('.', 1)[-1]} {k / events:.2f}/ev {self.cpu[op] / k * 1000:.1f} ms"
                for op, k in self.counts.most_common(n)
            )


def _operation(environ: dict[str, Any]) -> str:
    target = environ.get("HTTP_X_AMZ_TARGET")
    if target:
        return str(target)
    host = str(environ.get("HTTP_HOST", "")).split(":", 1)[0]
    return f"{environ.get('REQUEST_METHOD', '')} {host}"


@contextmanager
def counting() -> Iterator[MotoRequests]:
    """Count every request moto's server answers while the block runs (servers started in it included)."""
    from moto.moto_server import werkzeug_app

    seen = MotoRequests()
    original = werkzeug_app.DomainDispatcherApplication.__call__

    def counted(self: Any, environ: dict[str, Any], start_response: Any) -> Any:
        began = time.thread_time()
        try:
            return original(self, environ, start_response)
        finally:
            seen.record(_operation(environ), time.thread_time() - began)

    werkzeug_app.DomainDispatcherApplication.__call__ = counted  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        werkzeug_app.DomainDispatcherApplication.__call__ = original  # type: ignore[method-assign]
