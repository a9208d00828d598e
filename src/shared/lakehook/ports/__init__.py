"""Ports: what the use cases need from the outside world, one module per area. Adapters implement them.

- ``ports.store``      events, asset state, registries, secrets, watermarks (the foundation)
"""

from lakehook.ports.store import (
    AdvanceOutcome,
    AssetRegistry,
    AssetStore,
    Page,
    ProducerRegistry,
    RecordedEvent,
    Recording,
    SecretStore,
    WatermarkStore,
)

__all__ = [
    "AdvanceOutcome",
    "AssetRegistry",
    "AssetStore",
    "Page",
    "ProducerRegistry",
    "RecordedEvent",
    "Recording",
    "SecretStore",
    "WatermarkStore",
]
