"""Request keys: an ``Idempotency-Key`` makes a request that starts a run (a replay, a forced manual run) happen once.

The first request under a key claims its run and records, in the same transaction, its answer under
``REQUEST#<key>`` (kept 7 days). A request repeated with the same key and the same content gets that
first answer again, marked ``Idempotent-Replayed: true``, and starts nothing; the same key with other
content is refused (409 ``IDEMPOTENCY_KEY_REUSED``). Only an answer that claimed a run is recorded: a
refusal (a failed pre-flight, a run of the same versions in flight) may be retried under the same key.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lakehook.domain.errors import ConflictError, ValidationError

IDEMPOTENCY_KEY_HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
IDEMPOTENCY_KEY_PATTERN = r"^[A-Za-z0-9_.:-]{1,128}$"
IDEMPOTENCY_KEY_RULE = "letters, digits, _ . : - (1 to 128), e.g. a UUID"
REQUEST_RETENTION_SECONDS = 7 * 86_400


class IdempotencyKeyReusedError(ConflictError):
    """The Idempotency-Key was used before for a different request."""


@dataclass(frozen=True)
class RequestKey:
    """A request's Idempotency-Key and the fingerprint of what it asks (operation, target, body)."""

    key: str
    fingerprint: str

    @classmethod
    def of(cls, key: str | None, operation: str, request: Mapping[str, Any]) -> RequestKey | None:
        """None without a key; raises ValidationError (400) for a malformed one."""
        if key is None:
            return None
        if not isinstance(key, str) or re.fullmatch(IDEMPOTENCY_KEY_PATTERN, key) is None:
            raise ValidationError(
                f"{IDEMPOTENCY_KEY_HEADER} must be {IDEMPOTENCY_KEY_RULE}", field=IDEMPOTENCY_KEY_HEADER
            )
        content = json.dumps({"operation": operation, **request}, sort_keys=True, separators=(",", ":"))
        return cls(key, hashlib.sha256(content.encode()).hexdigest())


@dataclass(frozen=True)
class RecordedRequest:
    """The first answer given under a key: its status and body, and the trigger it claimed."""

    key: str
    fingerprint: str
    status: int
    body: dict[str, Any]
    trigger_key: str
    created_at: int  # epoch ms

    @classmethod
    def of(cls, request: RequestKey, status: int, body: dict[str, Any], trigger_key: str, now: int) -> RecordedRequest:
        return cls(request.key, request.fingerprint, status, body, trigger_key, now)

    @property
    def expires_at(self) -> int:
        """Epoch seconds (the table's TTL attribute): the key may be used afresh after this."""
        return self.created_at // 1000 + REQUEST_RETENTION_SECONDS

    def answer_to(self, request: RequestKey) -> RecordedRequest:
        """This answer, for a repetition of the request; raises IdempotencyKeyReusedError for another request."""
        if request.fingerprint != self.fingerprint:
            raise IdempotencyKeyReusedError(
                f"{IDEMPOTENCY_KEY_HEADER} {request.key!r} was used for a different request "
                f"(it claimed {self.trigger_key}); send a new key for a new request"
            )
        return self


@dataclass(frozen=True)
class RequestAnswer:
    """What a route answers: the status and body, and whether they are a recorded first answer given again."""

    status: int
    body: dict[str, Any]
    replayed: bool = False

    @classmethod
    def replay_of(cls, recorded: RecordedRequest) -> RequestAnswer:
        return cls(recorded.status, recorded.body, replayed=True)

    def headers(self) -> dict[str, str] | None:
        return {REPLAYED_HEADER: "true"} if self.replayed else None
