"""The pinned version's event details for target tests: a manifest that carries them, its invocation, and the check
that what a target received (read back through ``lakehook.receiver``) holds them."""

from __future__ import annotations

from typing import Any

from lakehook.domain.dispatch import Invocation, RunManifest
from lakehook.domain.input_details import InputDetails
from lakehook.domain.triggers import Trigger
from lakehook.receiver import Invocation as ReceivedInvocation

PAYLOAD: dict[str, Any] = {"producerRun": "spark-4711", "note": "nightly façade load", "rows": {"eu": 10, "us": 12}}
DETAILS = InputDetails(
    commit_kind="OVERWRITE",
    data_changed=True,
    total_record_count=1200,
    delta_record_count=-30,
    partitions={"keys": ["dt=2026-12-01"], "count": 1, "truncated": False},
    payload=PAYLOAD,
)


def detailed(trigger: Trigger, attempt: int = 1, limit: int | None = None) -> Invocation:
    """The invocation of ``trigger`` whose manifest gives each input ``DETAILS`` (fitted to ``limit`` when given)."""
    manifest = RunManifest.for_trigger(trigger, details=[DETAILS] * len(trigger.inputs))
    invocation = Invocation.of(trigger, manifest, f"s3://m/manifests/{trigger.trigger_key}.json", attempt)
    return invocation if limit is None else invocation.fitted(limit)


def assert_details(received: ReceivedInvocation) -> None:
    """Every input the run received carries the details, and the payload says they are there."""
    assert not received.details_in_manifest and received.inputs
    for pinned in received.inputs:
        facts = (pinned.commit_kind, pinned.data_changed, pinned.total_record_count, pinned.delta_record_count)
        assert facts == ("OVERWRITE", True, 1200, -30)
        assert pinned.payload == PAYLOAD and pinned.partitions == DETAILS.partitions
