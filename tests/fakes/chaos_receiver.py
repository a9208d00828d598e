"""A webhook receiver for chaos tests: it keeps the receiver's contract and misbehaves on a seeded plan.

The contract (as :class:`tests.fakes.webhook_receiver.WebhookReceiver`, and what lakehook's webhook target
relies on): ``X-Lakehook-Signature`` must verify (401 otherwise), ``Idempotency-Key`` is required (400), the
first request for a key starts a run (202 ``{"runId"}``) and any later one answers 409 with the same run id.

Misbehaviour, decided per (idempotency key, delivery number) from the seed, so a re-run with the same seed
and the same keys meets the same faults whatever order requests arrive in (except that the first keys to
arrive meet each fault once on their first delivery, so every run sees every fault):

- ``500``: fails before acting;
- ``hang``: answers 503 after the client's timeout, having done nothing;
- ``slow``: starts the run, then answers after the client's timeout (the re-send must find it: 409);
- ``refuse``: answers 422, which a webhook target treats as final (the trigger FAILs until retried).

``down()`` closes the listening socket (connections are refused) until ``up()`` reopens it on the same port.
``healthy = True`` stops every fault. Every delivery is recorded; a run is a key processed for the first time.
"""

from __future__ import annotations

import hashlib
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum
from http.server import ThreadingHTTPServer
from typing import Any

from lakehook.domain.errors import AuthenticationError
from lakehook.domain.signing import verify
from tests.fakes.http_server import FakeServer, Handler, Request, Response


class Fault(StrEnum):
    NONE = "none"
    ERROR = "500"
    HANG = "hang"
    SLOW = "slow"
    REFUSE = "refuse"


@dataclass(frozen=True)
class FaultPlan:
    """The chance of each fault on a key's first, second and later deliveries (later ones are clean)."""

    seed: int
    first: dict[Fault, float] = field(
        default_factory=lambda: {Fault.ERROR: 0.2, Fault.HANG: 0.08, Fault.SLOW: 0.08, Fault.REFUSE: 0.05}
    )
    second: dict[Fault, float] = field(default_factory=lambda: {Fault.ERROR: 0.15, Fault.SLOW: 0.05})
    forced: tuple[Fault, ...] = (Fault.ERROR, Fault.HANG, Fault.SLOW, Fault.REFUSE)

    def fault(self, key: str, delivery: int, arrival: int) -> Fault:
        """The fault for the ``delivery``-th request of ``key``, the ``arrival``-th distinct key (1-based)."""
        if delivery == 1 and arrival <= len(self.forced):
            return self.forced[arrival - 1]
        chances = self.first if delivery == 1 else self.second if delivery == 2 else {}
        digest = hashlib.sha256(f"{self.seed}:{key}:{delivery}".encode()).digest()
        draw = random.Random(int.from_bytes(digest[:8], "big")).random()
        for fault, chance in chances.items():
            if draw < chance:
                return fault
            draw -= chance
        return Fault.NONE


@dataclass(frozen=True)
class Delivery:
    key: str
    hook: str
    number: int  # the n-th request for this key
    fault: Fault
    status: int
    processed: bool  # this request started the run
    late: bool  # answered after the client's timeout
    at: float


@dataclass(frozen=True)
class Run:
    key: str
    hook: str
    payload: dict[str, Any]
    seq: int  # order in which runs started, across hooks
    at: float


class ChaosReceiver(FakeServer):
    def __init__(self, secret: str, plan: FaultPlan, timeout_seconds: float) -> None:
        super().__init__()
        self.secret = secret
        self.plan = plan
        self.late_by = timeout_seconds + 0.4
        self.healthy = False
        self.deliveries: list[Delivery] = []
        self.runs: dict[str, Run] = {}
        self.counts: Counter[str] = Counter()
        self._port = self._server.server_address[1]
        self._down = False
        self._timer: threading.Timer | None = None
        self._closed = False

    def routes(self) -> dict[tuple[str, str], Handler]:
        return {("POST", "/hooks/{name}"): self.receive}

    # --- outages -------------------------------------------------------------------------------------

    def down(self, seconds: float | None = None) -> None:
        """Refuse connections: the listening socket is closed (for ``seconds``, else until ``up()``)."""
        with self.lock:
            if self._down:
                return
            self._down = True
        self._server.shutdown()
        self._server.server_close()
        if seconds is not None:
            self._timer = threading.Timer(seconds, self.up)
            self._timer.daemon = True
            self._timer.start()

    def up(self) -> None:
        """Listen again on the same port."""
        with self.lock:
            if not self._down or self._closed:
                return
            self._down = False
            handler = self._server.RequestHandlerClass
            self._server = ThreadingHTTPServer(("127.0.0.1", self._port), handler)
            self._server.daemon_threads = True
            self._thread = threading.Thread(
                target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
            )
            self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def __exit__(self, *exc: object) -> None:
        if self._timer is not None:
            self._timer.cancel()
        with self.lock:
            self._closed = True  # an outage's timer must not reopen it
            server = self._server
        server.shutdown()
        server.server_close()

    # --- the hook ------------------------------------------------------------------------------------

    def receive(self, request: Request) -> Response:
        try:
            verify(self.secret, request.body, request.headers.get("x-lakehook-signature"), int(time.time()))
        except AuthenticationError as exc:
            return Response(401, {"error": str(exc)})
        key = request.headers.get("idempotency-key")
        if not key:
            return Response(400, {"error": "Idempotency-Key is required"})
        hook = request.query.get("name", "")
        with self.lock:
            self.counts[key] += 1
            number = self.counts[key]
            fault = Fault.NONE if self.healthy else self.plan.fault(key, number, len(self.counts))
            seen = key in self.runs
            processed = False
            if fault in (Fault.NONE, Fault.SLOW) and not seen:
                self.runs[key] = Run(key, hook, request.json(), len(self.runs) + 1, time.monotonic())
                processed = True
            if fault is Fault.ERROR:
                response = Response(500, {"error": "internal error"})
            elif fault is Fault.HANG:
                response = Response(503, {"error": "gave up"}, delay=self.late_by)
            elif fault is Fault.REFUSE:
                response = Response(422, {"error": "pipeline paused"})
            elif seen:
                response = Response(409, {"runId": f"run-{self.runs[key].seq}", "error": "already started"})
            else:
                response = Response(202, {"runId": f"run-{self.runs[key].seq}"})
            if fault is Fault.SLOW:
                response = Response(response.status, response.body, delay=self.late_by)
            self.deliveries.append(
                Delivery(key, hook, number, fault, response.status, processed, response.delay > 0, time.monotonic())
            )
        return response

    # --- what it saw ---------------------------------------------------------------------------------

    def runs_of(self, hook: str) -> list[Run]:
        with self.lock:
            return sorted((r for r in self.runs.values() if r.hook == hook), key=lambda r: r.seq)

    def runs_per_trigger(self) -> Counter[str]:
        """Runs by the trigger key in their payload: more than one is a double run, whatever the header said."""
        with self.lock:
            return Counter(str(r.payload.get("triggerKey")) for r in self.runs.values())

    def resent_after_prompt_success(self) -> list[str]:
        """Keys sent again after a prompt 2xx: a receiver without deduplication would have run them twice."""
        with self.lock:
            answered: set[str] = set()
            again: list[str] = []
            for d in self.deliveries:
                if d.key in answered:
                    again.append(d.key)
                if 200 <= d.status < 300 and not d.late:
                    answered.add(d.key)
            return again
