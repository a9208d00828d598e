"""Pick the SnapshotSource for an asset format, importing pyiceberg / pypaimon only when first needed.

Delta and Hudi sources read their logs with the standard library and boto3 (no table-format library).

The API function imports this module (through the container) without ever loading a lakehouse
library; only the poller and the compensator call it with a table format.
"""

from __future__ import annotations

import threading

from lakehook.adapters.lakehouse.credentials import CredentialResolver, ParameterReader
from lakehook.domain.assets import AssetFormat
from lakehook.domain.errors import ValidationError
from lakehook.domain.secret_names import AS_GIVEN, ProducerSecrets, SecretNames
from lakehook.domain.url_policy import UrlPolicy
from lakehook.ports import SecretStore
from lakehook.ports.lakehouse import SnapshotSource


class LakehouseSnapshotSources:
    """``sources(AssetFormat.ICEBERG)`` → the one IcebergSnapshotSource of this process, built on first use."""

    def __init__(self, resolver: CredentialResolver, cache_ttl_seconds: float = 900.0) -> None:
        self._resolver = resolver
        self._ttl = cache_ttl_seconds
        self._built: dict[AssetFormat, SnapshotSource] = {}
        self._lock = threading.Lock()

    def __call__(self, fmt: AssetFormat) -> SnapshotSource:
        with self._lock:
            source = self._built.get(fmt)
            if source is None:
                source = self._built[fmt] = self._build(fmt)
            return source

    def _build(self, fmt: AssetFormat) -> SnapshotSource:
        if fmt is AssetFormat.ICEBERG:
            from lakehook.adapters.lakehouse.iceberg import IcebergSnapshotSource

            return IcebergSnapshotSource(self._resolver, self._ttl)
        if fmt is AssetFormat.PAIMON:
            from lakehook.adapters.lakehouse.paimon import PaimonSnapshotSource

            return PaimonSnapshotSource(self._resolver, self._ttl)
        if fmt is AssetFormat.DELTA:
            from lakehook.adapters.lakehouse.delta import DeltaSnapshotSource

            return DeltaSnapshotSource(self._resolver, self._ttl)
        if fmt is AssetFormat.HUDI:
            from lakehook.adapters.lakehouse.hudi import HudiSnapshotSource

            return HudiSnapshotSource(self._resolver, self._ttl)
        raise ValidationError(f"assets of format {fmt.value!r} have no snapshots to poll", field="format")


def snapshot_sources(
    secrets: SecretStore,
    parameters: ParameterReader | None = None,
    cache_ttl_seconds: float = 900.0,
    reserved: ProducerSecrets | None = None,
    url_policy: UrlPolicy | None = None,
    names: SecretNames = AS_GIVEN,
) -> LakehouseSnapshotSources:
    """The composition root's entry point: sources resolving credential references through ``secrets``
    (never a producer signing secret, ``reserved``); with ``url_policy`` every endpoint a source names is
    checked (and its host resolved and checked) before a catalog or client is built from it; ``names``: how a
    ``secretsmanager:`` reference becomes a secret's name (the stack's naming rule)."""
    guard = None
    if url_policy is not None:
        from lakehook.adapters.targets.egress import AddressGuard

        guard = AddressGuard(url_policy).address_for
    resolver = CredentialResolver(secrets, parameters, reserved=reserved, policy=url_policy, guard=guard, names=names)
    return LakehouseSnapshotSources(resolver, cache_ttl_seconds)
