"""What every client signed as a producer shares: the API's URL, the producer's id and secret, bounded retries, and
headers signed afresh at each attempt (the signature's time must be fresh). The push client and the watcher SDK's
watermark client are ones."""

from __future__ import annotations

import time
from collections.abc import Callable

from lakehook.client.retrying import Retrying
from lakehook.client.signing import SIGNATURE_HEADER, sign

PRODUCER_HEADER = "X-Lakehook-Producer"


class SignedClient:
    """A producer's client of one route of lakehook's API: given the API's base URL, ``self.url`` is the route's
    (the subclass's ``PATH`` after it)."""

    PATH = ""

    def __init__(
        self,
        url: str,
        producer_id: str,
        secret: str,
        *,
        max_attempts: int = 5,
        backoff_seconds: float = 0.5,
        max_backoff_seconds: float = 10.0,
        timeout_seconds: float = 10.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.url = url.rstrip("/") + self.PATH
        self.producer_id = producer_id
        self._secret = secret
        self._clock = clock
        self._retrying = Retrying(max_attempts, backoff_seconds, max_backoff_seconds, timeout_seconds, sleep)

    @property
    def attempts(self) -> int:
        """Attempts of the last request, for logs and tests."""
        return self._retrying.attempts

    def _signed_headers(self, body: bytes) -> Callable[[], dict[str, str]]:
        """The headers of one attempt to send ``body``, signed when called."""

        def headers() -> dict[str, str]:
            return {
                "Content-Type": "application/json",
                PRODUCER_HEADER: self.producer_id,
                SIGNATURE_HEADER: sign(self._secret, body, int(self._clock())),
            }

        return headers
