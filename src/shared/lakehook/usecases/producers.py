"""Producers: register them with a generated signing secret, and authenticate their pushes."""

from __future__ import annotations

import secrets as pysecrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from lakehook.domain.errors import AuthenticationError, NotFoundError
from lakehook.domain.producers import PRODUCER_ID, Producer, ProducerSpec, validate_producer_id
from lakehook.domain.signing import verify
from lakehook.domain.time import now_ms
from lakehook.ports import ProducerRegistry, SecretStore


@dataclass(frozen=True)
class ProducerRegistration:
    """What ``PUT /producers/{id}`` answers: the secret only when it was just generated."""

    producer: Producer
    created: bool
    secret: str | None


class RegisterProducer:
    """Create or update a producer. A secret is generated on creation or on request, and shown once."""

    def __init__(
        self, registry: ProducerRegistry, secrets: SecretStore, secret_prefix: str, clock: Callable[[], int] = now_ms
    ) -> None:
        self._registry = registry
        self._secrets = secrets
        self._prefix = secret_prefix
        self._clock = clock

    def __call__(self, producer_id: str, spec: ProducerSpec, rotate_secret: bool = False) -> ProducerRegistration:
        validate_producer_id(producer_id)
        existing = self._registry.get_producer(producer_id)
        now = self._clock()
        secret: str | None = None
        secret_ref = existing.secret_ref if existing else f"{self._prefix}producers/{producer_id}"
        if existing is None or rotate_secret:
            secret = pysecrets.token_hex(32)
            secret_ref = self._secrets.put_secret(secret_ref, secret)
        producer = Producer(
            producer_id=producer_id,
            asset_key_prefixes=spec.asset_key_prefixes,
            secret_ref=secret_ref,
            description=spec.description,
            created_at=existing.created_at if existing else now,
            updated_at=now,
        )
        self._registry.put_producer(producer)
        return ProducerRegistration(producer, existing is None, secret)


class PushAuthenticator:
    """Check a push's HMAC signature. Producers and secrets are cached briefly per process,
    so a warm function spends no store request on them; a change applies within the TTL."""

    def __init__(
        self,
        registry: ProducerRegistry,
        secrets: SecretStore,
        tolerance_seconds: int,
        cache_seconds: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._registry = registry
        self._secrets = secrets
        self._tolerance = tolerance_seconds
        self._cache_seconds = cache_seconds
        self._clock = clock
        self._cache: dict[str, tuple[float, Producer, str]] = {}
        self._lock = threading.Lock()

    def _lookup(self, producer_id: str) -> tuple[Producer, str]:
        now = self._clock()
        with self._lock:
            hit = self._cache.get(producer_id)
        if hit and now - hit[0] < self._cache_seconds:
            return hit[1], hit[2]
        producer = self._registry.get_producer(producer_id)
        if producer is None:
            raise AuthenticationError(f"unknown producer {producer_id!r}")
        try:
            secret = self._secrets.get_secret(producer.secret_ref)
        except NotFoundError as exc:
            raise AuthenticationError(f"producer {producer_id!r} has no signing secret") from exc
        with self._lock:
            self._cache[producer_id] = (now, producer, secret)
        return producer, secret

    def authenticate(self, producer_id: str | None, signature: str | None, body: bytes) -> Producer:
        """The producer that signed this body, or AuthenticationError saying why not."""
        if not producer_id:
            raise AuthenticationError("missing X-Lakehook-Producer header")
        if not PRODUCER_ID.fullmatch(producer_id):  # never a store key: DynamoDB refuses keys over 2 KB
            raise AuthenticationError("X-Lakehook-Producer is not a valid producer id")
        producer, secret = self._lookup(producer_id)
        verify(secret, body, signature, int(self._clock()), self._tolerance)
        return producer
