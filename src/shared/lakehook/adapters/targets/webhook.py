"""Webhook target: POST of the invocation payload, HMAC-signed, with ``Idempotency-Key: <trigger key>``.

Headers: ``Content-Type: application/json``, ``Idempotency-Key``, ``X-Lakehook-Trigger-Key`` and
``X-Lakehook-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`` exactly like a
push to lakehook (``lakehook.domain.signing``), the secret read by reference (``secretRef``).

Answers: 2xx started (the run id is the body's ``runId`` / ``run_id`` / ``id`` when it has one, else the
trigger key); 409 already started; 408, 425, 429 and 5xx retry (``Retry-After`` honoured); any other 4xx
(and a redirect) fails for good. Timeouts are bounded (``timeoutSeconds``).

The receiver's side of the contract: it remembers idempotency keys and answers 409 (or its first 2xx
again) for a key it has seen. That makes a re-send after a timeout safe, which is why this plug-in
``deduplicates`` although it cannot look a run up (it is not ``confirmable``).
"""

from __future__ import annotations

from typing import Any, ClassVar

import requests

from lakehook.adapters.targets.deps import CachedSecrets, TargetDeps
from lakehook.adapters.targets.http import json_or_none, refuse_insecure, send, transport_outcome
from lakehook.domain.dispatch import Invocation, Outcome, http_outcome
from lakehook.domain.errors import NotFoundError
from lakehook.domain.signing import SIGNATURE_HEADER, sign
from lakehook.domain.targets import TargetConfig, WebhookTarget
from lakehook.domain.url_policy import UrlPolicy
from lakehook.ports.dispatch import TargetClient

IDEMPOTENCY_HEADER = "Idempotency-Key"
TRIGGER_KEY_HEADER = "X-Lakehook-Trigger-Key"


def run_id_of(body: Any, fallback: str) -> str:
    """The receiver's run id when its answer names one, else ``fallback``."""
    if isinstance(body, dict):
        for name in ("runId", "run_id", "id"):
            value = body.get(name)
            if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
                return str(value)[:256]
    return fallback


class WebhookTargetClient(TargetClient):
    """POSTs the payload; the receiver deduplicates on the idempotency key."""

    type_name: ClassVar[str] = "webhook"
    confirmable: ClassVar[bool] = False
    deduplicates: ClassVar[bool] = True

    def __init__(
        self,
        secrets: CachedSecrets,
        session: requests.Session,
        allow_insecure_loopback: bool = False,
        clock: Any = None,
        url_policy: UrlPolicy | None = None,
    ) -> None:
        import time

        self._secrets = secrets
        self._session = session
        self._policy = url_policy or UrlPolicy(local_mode=allow_insecure_loopback)
        self._clock = clock or time.time

    @classmethod
    def build(cls, deps: TargetDeps) -> WebhookTargetClient:
        return cls(deps.cached_secrets, deps.session, clock=deps.clock, url_policy=deps.policy)

    def start(self, invocation: Invocation, config: TargetConfig) -> Outcome:
        assert isinstance(config, WebhookTarget)
        refused = refuse_insecure(config.url, self._policy)
        if refused is not None:
            return refused
        try:
            secret = self._secrets.get(config.secret_ref)
        except NotFoundError as exc:
            return Outcome.fatal(f"signing secret (secretRef): {exc}", "secret_missing")
        body = invocation.body()
        headers = {
            "Content-Type": "application/json",
            IDEMPOTENCY_HEADER: invocation.trigger_key,
            TRIGGER_KEY_HEADER: invocation.trigger_key,
            SIGNATURE_HEADER: sign(secret, body, int(self._clock())),
        }
        try:
            response = send(self._session, "POST", config.url, config.timeout_seconds, data=body, headers=headers)
        except requests.RequestException as exc:
            return transport_outcome(exc, "webhook")
        if response.status_code in (401, 403):
            self._secrets.forget(config.secret_ref)  # perhaps rotated: read it again next time
        run_id = run_id_of(json_or_none(response), invocation.trigger_key)
        return http_outcome(response.status_code, run_id, response.text, response.headers.get("Retry-After"))

    def find_run(self, trigger_key: str, config: TargetConfig, not_before_ms: int) -> str | None:
        # A webhook offers no look-up; the idempotency key makes the re-send itself the confirmation.
        return None
