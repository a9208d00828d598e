"""Producers: register them with a generated signing secret, and authenticate their pushes."""

from __future__ import annotations

import hmac
import secrets as pysecrets
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from lakehook.domain.errors import AuthenticationError, ConflictError, NotFoundError
from lakehook.domain.producers import PRODUCER_ID, Producer, ProducerSpec, split_api_key, validate_producer_id
from lakehook.domain.secret_names import ProducerSecrets
from lakehook.domain.signing import SIGNATURE_HEADER, parse_signature, verify
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
        self,
        registry: ProducerRegistry,
        secrets: SecretStore,
        namespace: ProducerSecrets,
        clock: Callable[[], int] = now_ms,
        changed: Callable[[str], None] | None = None,
    ) -> None:
        self._registry = registry
        self._secrets = secrets
        self._namespace = namespace
        self._clock = clock
        self._changed = changed  # told each producer written (this process's PushAuthenticator forgets it)

    def __call__(
        self, producer_id: str, spec: ProducerSpec, rotate_secret: bool = False, dry_run: bool = False
    ) -> ProducerRegistration:
        """With ``dry_run`` everything is checked and nothing written: no secret is generated or stored."""
        validate_producer_id(producer_id)
        existing = self._registry.get_producer(producer_id)
        new_secret = self._new_secret_needed(existing, rotate_secret)
        if new_secret and not self._secrets.may_own_secret(
            self._namespace.name(producer_id), secret_owner(producer_id)
        ):
            raise ConflictError(foreign_secret(self._namespace.name(producer_id), producer_id))  # nothing written
        # EventBridge sources are claimed before anything else is written (a taken one is a 409 with nothing
        # changed) and released after the producer stops naming them: never named by two producers at once.
        self._claim_event_sources(producer_id, spec.event_sources, dry_run)
        now = self._clock()
        secret: str | None = None
        secret_ref = existing.secret_ref if existing else self._namespace.name(producer_id)
        secret_version = existing.secret_version if existing else 0
        if (existing is None or rotate_secret) and not dry_run:
            secret = pysecrets.token_hex(32)
            try:
                secret_ref = self._store_secret(producer_id, existing, secret)
            except ConflictError:  # one created since the check above: release what this request claimed
                self._release_event_sources(producer_id, set(spec.event_sources) - _event_sources(existing))
                raise
            secret_version += 1  # written after the secret: a reader seeing it finds the new secret
        producer = Producer(
            producer_id=producer_id,
            asset_key_prefixes=spec.asset_key_prefixes,
            secret_ref=secret_ref,
            description=spec.description,
            lineage_datasets=spec.lineage_datasets,
            event_sources=spec.event_sources,
            lineage_bearer=spec.lineage_bearer,
            bus_accounts=spec.bus_accounts,
            watermark_namespaces=spec.watermark_namespaces,
            created_at=existing.created_at if existing else now,
            updated_at=now,
            secret_version=secret_version,
        )
        if dry_run:
            return ProducerRegistration(producer, existing is None, None)
        self._registry.put_producer(producer)
        if self._changed is not None:
            self._changed(producer_id)
        self._release_event_sources(producer_id, _event_sources(existing) - set(spec.event_sources))
        return ProducerRegistration(producer, existing is None, secret)

    def _claim_event_sources(self, producer_id: str, sources: Iterable[str], dry_run: bool) -> None:
        """Claim each EventBridge source for the producer (ConflictError when another holds one); with ``dry_run``
        only check that none is another producer's."""
        for source in sources:
            if dry_run:
                owner = self._registry.event_source_owner(source)
                if owner not in (None, producer_id):
                    raise ConflictError(f"event source {source!r} belongs to producer {owner!r}")
            else:
                self._registry.claim_event_source(source, producer_id)

    def _release_event_sources(self, producer_id: str, sources: Iterable[str]) -> None:
        for source in sources:
            self._registry.release_event_source(source, producer_id)

    def _new_secret_needed(self, existing: Producer | None, rotate_secret: bool) -> bool:
        """Whether a secret is created in the namespace: for a new producer, or rotating one registered
        before the namespace existed (its secret moves in)."""
        return existing is None or (rotate_secret and not self._namespace.is_current(existing.secret_ref))

    def _store_secret(self, producer_id: str, existing: Producer | None, secret: str) -> str:
        """Where the new secret is written: a new producer (or one registered before the producer namespace,
        rotating) gets a secret of its own in the namespace, never overwriting one lakehook did not create
        for it (ConflictError, a 409, with nothing written); a rotation in the namespace puts a new value."""
        if existing is not None and not self._new_secret_needed(existing, rotate_secret=True):
            return self._secrets.put_secret(existing.secret_ref, secret)
        return self._secrets.put_owned_secret(self._namespace.name(producer_id), secret, secret_owner(producer_id))


def _event_sources(producer: Producer | None) -> set[str]:
    """The EventBridge sources a registered producer names (none before it is registered)."""
    return set(producer.event_sources) if producer is not None else set()


def secret_owner(producer_id: str) -> str:
    """What marks a signing secret as made by lakehook for this producer (the ``lakehook:owner`` tag)."""
    return f"producer/{producer_id}"


def foreign_secret(name: str, producer_id: str) -> str:
    return (
        f"secret {name!r} already exists and lakehook did not create it for producer {producer_id!r}; it is left "
        "as it is: delete it, or register the producer under another id"
    )


# One text for an unknown producer and a wrong signature: a caller cannot tell which producer ids exist.
NOT_VERIFIED = "the signature does not verify for this producer"
NOT_VERIFIED_KEY = "the API key does not verify for this producer"


class PushAuthenticator:
    """Check a push's HMAC signature against the producer's current secret and prefixes.

    The producer item (one consistent GetItem) is kept per process for ``registration_seconds``: a warm function
    spends no read on a producer it read that recently, and a prefix change, a rotation's end of the old secret or a
    deletion applies within that bound (0: every request reads it, and they apply to the next request). A signature
    the kept registration does not verify reads the producer again before it is refused, so a rotated secret's new
    value is accepted at once. The secret is cached, keyed by the producer's ``secretVersion`` (which a rotation
    bumps after writing the new secret): a warm function spends no Secrets Manager request. A secret changed in
    Secrets Manager directly, outside lakehook, is picked up within ``cache_seconds``.
    """

    def __init__(
        self,
        registry: ProducerRegistry,
        secrets: SecretStore,
        tolerance_seconds: int,
        cache_seconds: float,
        clock: Callable[[], float] = time.time,
        registration_seconds: float = 0.0,
    ) -> None:
        self._registry = registry
        self._registration_seconds = registration_seconds
        self._registrations: dict[str, tuple[float, Producer]] = {}  # producer id -> (read at, registration)
        self.registration_reads_saved = 0  # producer reads a kept registration answered (the cost it saves)
        self._secrets = secrets
        self._tolerance = tolerance_seconds
        self._cache_seconds = cache_seconds
        self._clock = clock
        self._cache: dict[tuple[str, str, int], tuple[float, str]] = {}
        self._lock = threading.Lock()

    def _registration(self, producer_id: str, fresh: bool = False) -> tuple[Producer | None, bool]:
        """The producer's registration, and whether it is one kept from an earlier request (never an unknown one:
        a producer registered meanwhile is found on its first request)."""
        now = self._clock()
        with self._lock:
            kept = self._registrations.get(producer_id)
            if not fresh and kept is not None and now - kept[0] < self._registration_seconds:
                self.registration_reads_saved += 1
                return kept[1], True
        producer = self._registry.get_producer(producer_id)
        with self._lock:
            if producer is None or self._registration_seconds <= 0:
                self._registrations.pop(producer_id, None)
            else:
                self._registrations[producer_id] = (now, producer)
        return producer, False

    def _verified_producer(self, producer_id: str, check: Callable[[Producer | None], Producer]) -> Producer:
        """``check`` of the producer's registration; a refusal of a kept one is checked again on a fresh read (a
        rotated secret's new value, a producer registered again), so only an accepted request relies on the cache."""
        producer, kept = self._registration(producer_id)
        try:
            return check(producer)
        except AuthenticationError:
            if not kept:
                raise
        return check(self._registration(producer_id, fresh=True)[0])

    def forget(self, producer_id: str) -> None:
        """Drop the kept registration of a producer this process just wrote: its next request reads it."""
        with self._lock:
            self._registrations.pop(producer_id, None)

    def _secret(self, producer: Producer) -> str | None:
        key = (producer.producer_id, producer.secret_ref, producer.secret_version)
        now = self._clock()
        with self._lock:
            hit = self._cache.get(key)
        if hit and now - hit[0] < self._cache_seconds:
            return hit[1]
        try:
            secret = self._secrets.get_secret(producer.secret_ref)
        except NotFoundError:
            return None
        with self._lock:
            # Older versions of this producer's secret can never be used again: drop them.
            for old in [k for k in self._cache if k[0] == producer.producer_id]:
                del self._cache[old]
            self._cache[key] = (now, secret)
        return secret

    def authenticate(self, producer_id: str | None, signature: str | None, body: bytes) -> Producer:
        """The producer that signed this body, or AuthenticationError saying why not.

        What a caller can check without lakehook's data (headers present and well formed, the timestamp
        within the tolerance) is answered precisely; an unknown producer, a producer without a secret
        and a signature by another secret all answer ``NOT_VERIFIED``.
        """
        if not producer_id:
            raise AuthenticationError("missing X-Lakehook-Producer header")
        if not PRODUCER_ID.fullmatch(producer_id):  # never a store key: DynamoDB refuses keys over 2 KB
            raise AuthenticationError("X-Lakehook-Producer is not a valid producer id")
        if not signature:
            raise AuthenticationError(f"missing {SIGNATURE_HEADER} header")
        timestamp, _ = parse_signature(signature)
        now = int(self._clock())
        if abs(now - timestamp) > self._tolerance:
            raise AuthenticationError(f"signature timestamp is outside the {self._tolerance} s tolerance")
        return self._verified_producer(producer_id, lambda producer: self._signed_by(producer, body, signature, now))

    def _signed_by(self, producer: Producer | None, body: bytes, signature: str, now: int) -> Producer:
        secret = self._secret(producer) if producer is not None else None
        if producer is None or secret is None:
            raise AuthenticationError(NOT_VERIFIED)
        try:
            verify(secret, body, signature, now, self._tolerance)
        except AuthenticationError as exc:
            raise AuthenticationError(NOT_VERIFIED) from exc
        return producer

    def authenticate_api_key(self, key: str | None) -> Producer:
        """The producer whose API key (``<producerId>:<secret>``, see ``api_key``) this is, if it takes one
        (``lineageBearer``), or AuthenticationError; an unknown producer and a wrong secret answer alike."""
        parts = split_api_key(key or "")
        if parts is None:
            raise AuthenticationError("expected 'Authorization: Bearer <producerId>:<secret>' (the producer's apiKey)")
        producer_id, given = parts
        # a bearer key has no replay window, so its registration is read on every request, never kept: turning
        # lineageBearer off (or deleting the producer) applies to the next request in every warm function
        return self._keyed_by(self._registration(producer_id, fresh=True)[0], producer_id, given)

    def _keyed_by(self, producer: Producer | None, producer_id: str, given: str) -> Producer:
        secret = self._secret(producer) if producer is not None else None
        if producer is None or secret is None or not hmac.compare_digest(given.encode(), secret.encode()):
            raise AuthenticationError(NOT_VERIFIED_KEY)
        if not producer.lineage_bearer:  # said only to a caller holding the secret: no producer id is revealed
            raise AuthenticationError(bearer_not_enabled(producer_id))
        return producer


def bearer_not_enabled(producer_id: str) -> str:
    return (
        f"producer {producer_id!r} does not take its apiKey as a bearer key (lineageBearer is off): sign the "
        "request (X-Lakehook-Producer and X-Lakehook-Signature, as POST /asset-events), or register the "
        "producer with lineageBearer: true"
    )
