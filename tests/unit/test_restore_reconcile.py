"""``lakehook restore reconcile``: the claims a table restore lost come back from their run manifests, once.

The table as restored holds the claims made up to the restore point; the manifests of every dispatched run are in
S3. After the reconcile the table holds a claim for every manifest (the ones it lacked as SUCCEEDED, with the
manifest's own key), so the resolver meets each such key when it claims that combination again.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakehook.answers.restore import ReconcileAnswer
from lakehook.domain.dispatch import RunManifest
from lakehook.domain.restore import RESTORED_REASON, restored_claim
from lakehook.domain.triggers import GroupCursor, PinnedInput, Trigger, TriggerStatus, Window, next_trigger
from lakehook.ports.restore import ManifestArchive
from lakehook.ports.rules import ClaimOutcome
from lakehook.usecases.restore import BATCH, ReconcileRestore
from tests.fakes.memory_dispatch import InMemoryManifestStore
from tests.fakes.memory_rules import InMemoryTriggerStore

RESTORE_POINT = 1_765_000_000_000
NOW = RESTORE_POINT + 3_600_000


class Archive(ManifestArchive):
    """A fake of our own port: the in-memory manifests, each with the instant it was written."""

    def __init__(self, manifests: InMemoryManifestStore) -> None:
        self.manifests = manifests
        self.written: dict[str, int] = {}

    def write(self, trigger: Trigger, at: int) -> str:
        uri = self.manifests.put_if_absent(trigger.trigger_key, RunManifest.for_trigger(trigger))
        self.written[uri] = at
        return uri

    def written_since(self, since_ms: int) -> Iterator[str]:
        return iter([uri for uri, at in self.written.items() if at >= since_ms])


def a_trigger(n: int, *, group: str = "g", window: Window | None = None, partition: str | None = None) -> Trigger:
    pins = (
        PinnedInput(asset_key="paimon://lake/ods_db/orders", snapshot_id=n, schema_id=1, commit_time=n * 10),
        PinnedInput(asset_key="iceberg://glue/db/pay", snapshot_id=9_000 + n, metadata_location=f"s3://w/{n}.json"),
    )
    base = GroupCursor.initial("rule", group, partition)
    created = RESTORE_POINT - 600_000 + n * 1_000
    return next_trigger(
        "rule",
        group,
        base,
        pins,
        status=TriggerStatus.TRIGGERING,
        reason=None,
        now=created,
        window=window,
        partition=partition,
    )


def stack() -> tuple[InMemoryTriggerStore, InMemoryManifestStore, Archive, ReconcileRestore]:
    triggers, manifests = InMemoryTriggerStore(), InMemoryManifestStore()
    archive = Archive(manifests)
    return triggers, manifests, archive, ReconcileRestore(archive, manifests, triggers, clock=lambda: NOW)


def test_a_claim_lost_with_the_restore_comes_back_dispatched_and_is_not_claimed_again() -> None:
    triggers, _, archive, reconcile = stack()
    kept, lost = a_trigger(1), a_trigger(2)
    triggers.put_replay(kept)  # claimed before the restore point: in the restored table
    archive.write(kept, RESTORE_POINT - 1)
    uri = archive.write(lost, RESTORE_POINT + 5)  # claimed and dispatched after it: only its manifest is left

    report = reconcile.reconcile(RESTORE_POINT)

    assert [t.trigger_key for t in report.restored] == [lost.trigger_key] and report.refused == []
    back = triggers.get(lost.trigger_key)
    assert back is not None and back.status is TriggerStatus.SUCCEEDED and back.manifest_uri == uri
    assert back.reason == RESTORED_REASON and back.inputs == lost.inputs and back.created_at == lost.created_at
    assert triggers.get(kept.trigger_key) == kept  # what the restored table held is left as it was
    # the resolver claiming that combination again meets the key: nothing is dispatched a second time
    cursor = GroupCursor.initial("rule", "g")
    again = lost.model_copy(update={"created_at": NOW, "updated_at": NOW})
    assert triggers.claim(again, cursor.after(again, {}), None).outcome is ClaimOutcome.DUPLICATE


def test_a_claim_the_restored_table_holds_is_left_as_it_is_whatever_its_status() -> None:
    triggers, _, archive, reconcile = stack()
    failed = a_trigger(3).model_copy(update={"status": TriggerStatus.FAILED, "reason": "refused by the target"})
    triggers.put_replay(failed)
    archive.write(failed, RESTORE_POINT + 1)  # its manifest written after the restore point (a later attempt)

    report = reconcile.reconcile(RESTORE_POINT)

    assert report.present == [failed.trigger_key] and report.restored == [] and report.in_flight == []
    assert triggers.get(failed.trigger_key) == failed


def test_a_claim_still_triggering_in_the_restored_table_whose_dispatch_began_since_is_named() -> None:
    triggers, _, archive, reconcile = stack()
    claimed = a_trigger(5)  # claimed before the restore point, its first attempt after it
    triggers.put_replay(claimed)
    archive.write(claimed, RESTORE_POINT + 1)
    report = reconcile.reconcile(RESTORE_POINT)
    assert report.in_flight == [claimed.trigger_key] == report.present
    assert ReconcileAnswer.from_domain(report).dump()["inFlight"] == [claimed.trigger_key]


def test_reconciling_twice_writes_each_claim_once_and_a_dry_run_writes_nothing() -> None:
    triggers, _, archive, reconcile = stack()
    for n in range(5):
        archive.write(a_trigger(n), RESTORE_POINT + n)

    dry = reconcile.reconcile(RESTORE_POINT, dry_run=True)
    assert len(dry.restored) == 5 and dry.dry_run and triggers.triggers == {}

    first = reconcile.reconcile(RESTORE_POINT)
    second = reconcile.reconcile(RESTORE_POINT)
    assert len(first.restored) == 5 and second.restored == [] and sorted(second.present) == sorted(triggers.triggers)
    assert len(triggers.claim_order) == 5


def test_more_manifests_than_one_batch_are_all_read() -> None:
    triggers, _, archive, reconcile = stack()
    for n in range(BATCH * 2 + 3):
        archive.write(a_trigger(n), RESTORE_POINT + n)
    assert len(reconcile.reconcile(RESTORE_POINT).restored) == BATCH * 2 + 3 == len(triggers.triggers)


def test_an_altered_or_misplaced_manifest_is_refused_by_name_and_the_others_are_written() -> None:
    triggers, manifests, archive, reconcile = stack()
    good, altered, other = a_trigger(1), a_trigger(2), a_trigger(3)
    archive.write(good, RESTORE_POINT + 1)
    altered_uri = archive.write(altered, RESTORE_POINT + 2)
    manifests.objects[altered_uri] = manifests.objects[altered_uri].replace(b'"snapshotId":2', b'"snapshotId":7')
    misplaced = manifests.uri_for("rule.g.elsewhere")
    manifests.objects[misplaced] = RunManifest.for_trigger(other).document()
    archive.written[misplaced] = RESTORE_POINT + 3

    report = reconcile.reconcile(RESTORE_POINT)

    assert [t.trigger_key for t in report.restored] == [good.trigger_key]
    refused = {r.manifest_uri: r.reason for r in report.refused}
    assert set(refused) == {altered_uri, misplaced}
    assert "sha256" in refused[altered_uri] and other.trigger_key in refused[misplaced]
    assert set(triggers.triggers) == {good.trigger_key}


@pytest.mark.parametrize(
    ("window", "partition", "replay_of"),
    [(None, None, None), (Window(start=1_000, end=61_000), None, None), (None, "dt=2026-12-01", "rule.g.first")],
)
def test_the_claim_written_back_makes_the_very_manifest_it_came_from(
    window: Window | None, partition: str | None, replay_of: str | None
) -> None:
    trigger = a_trigger(4, window=window, partition=partition)
    manifest = RunManifest.for_trigger(trigger, replay_of=replay_of)
    claim = restored_claim(manifest, "s3://b/manifests/x.json", NOW)
    # a retry or a replay of the written-back claim finds its own manifest (byte for byte), never a conflict
    assert RunManifest.for_trigger(claim, replay_of=claim.replay_of).document() == manifest.document()
    assert (claim.window, claim.partition, claim.replay_of) == (window, partition, replay_of)


@given(
    claimed=st.lists(
        st.tuples(st.integers(0, 10_000), st.sampled_from(["a", "b"]), st.integers(-5_000, 5_000)),
        max_size=30,
        unique_by=lambda c: (c[0], c[1]),
    ),
    restore_offset=st.integers(-6_000, 6_000),
)
def test_after_a_restore_every_dispatched_run_has_one_claim_and_no_other_claim_changes(
    claimed: list[tuple[int, str, int]], restore_offset: int
) -> None:
    """Any claims, each dispatched (its manifest written) before or after any restore point: the restored table
    holds those before it; after the reconcile it holds every one, those it held unchanged."""
    triggers, _, archive, reconcile = stack()
    restore_point = RESTORE_POINT + restore_offset
    runs = [(a_trigger(n, group=group), RESTORE_POINT + offset) for n, group, offset in claimed]
    for trigger, at in runs:
        archive.write(trigger, at)
        if at < restore_point:
            triggers.put_replay(trigger)
    before = dict(triggers.triggers)

    reconcile.reconcile(restore_point)

    assert set(triggers.triggers) == {t.trigger_key for t, _ in runs}
    assert all(triggers.triggers[k] == t for k, t in before.items())
    assert all(t.status is TriggerStatus.SUCCEEDED for k, t in triggers.triggers.items() if k not in before)


def claimed_by_resolver(triggers: InMemoryTriggerStore, trigger: Trigger) -> GroupCursor:
    """Claim as the resolver does: the claim and its group's cursor moved, in one write."""
    ref = (trigger.rule_id, GroupCursor.initial("rule", trigger.group_id, trigger.partition).group_id)
    cursor = triggers.cursors.get(ref) or GroupCursor.initial("rule", trigger.group_id, trigger.partition)
    moved = cursor.after(trigger.model_copy(update={"sequence": cursor.seq + 1}), {})
    assert triggers.claim(trigger, moved, triggers.cursors.get(ref)).outcome is ClaimOutcome.CLAIMED
    return moved


def test_a_groups_cursor_moves_to_its_newest_run_written_back() -> None:
    triggers, _, archive, reconcile = stack()
    first, second, third = a_trigger(1), a_trigger(2), a_trigger(3)
    restored_cursor = claimed_by_resolver(triggers, first)  # the table at the restore point
    for n, run in enumerate((first, second, third)):
        archive.write(run, RESTORE_POINT + n)

    report = reconcile.reconcile(RESTORE_POINT)

    assert report.cursors_moved == ["rule/g"] and report.cursors_left == {}
    cursor = triggers.cursors[("rule", "g")]
    assert cursor.seq == restored_cursor.seq + 1 and cursor.trigger_key == third.trigger_key
    assert cursor.pins == {p.asset_key: p for p in third.inputs} and cursor.claimed_at == third.created_at
    assert triggers.triggers[third.trigger_key].sequence == cursor.seq
    # the resolver planning on the moved cursor: the newest run is claimed already, the next one is new
    assert triggers.claim(third, cursor.after(third, {}), restored_cursor).outcome is ClaimOutcome.DUPLICATE
    fourth = a_trigger(4)
    assert triggers.claim(fourth, cursor.after(fourth, {}), cursor).outcome is ClaimOutcome.CLAIMED


def test_a_cursor_stays_when_the_manifest_cannot_say_where_a_snapshot_stands() -> None:
    """An Iceberg snapshot's order is its sequence number, which a manifest does not pin: a cursor moved to the
    snapshot id would compare ids with sequence numbers."""
    triggers, _, archive, reconcile = stack()
    ordered = PinnedInput(asset_key="iceberg://glue/db/pay", snapshot_id=5_551_234, snapshot_order=1)
    first = a_trigger(1).model_copy(update={"inputs": (a_trigger(1).inputs[0], ordered)})
    restored_cursor = claimed_by_resolver(triggers, first)
    archive.write(a_trigger(2), RESTORE_POINT + 1)

    report = reconcile.reconcile(RESTORE_POINT)

    assert "iceberg://glue/db/pay" in report.cursors_left["rule/g"] and report.cursors_moved == []
    assert triggers.cursors[("rule", "g")] == restored_cursor
    assert triggers.triggers[a_trigger(2).trigger_key].status is TriggerStatus.SUCCEEDED  # written back all the same


def test_replays_and_manual_runs_leave_cursors_and_a_partitions_run_moves_the_partitions_cursor() -> None:
    triggers, _, archive, reconcile = stack()
    day = "dt=2026-12-01"
    claimed_by_resolver(triggers, a_trigger(1, partition=day))
    manual = a_trigger(2).model_copy(update={"trigger_key": "rule.g.manual-1.0123456789abcdef"})
    archive.write(manual, RESTORE_POINT + 1)
    replay = a_trigger(3).model_copy(update={"trigger_key": "rule.g." + "f" * 24})  # a key like a run's
    uri = archive.manifests.put_if_absent(replay.trigger_key, RunManifest.for_trigger(replay, replay_of="rule.g.x"))
    archive.written[uri] = RESTORE_POINT + 2
    partition_run = a_trigger(4, partition=day)
    archive.write(partition_run, RESTORE_POINT + 3)

    report = reconcile.reconcile(RESTORE_POINT)

    ref = GroupCursor.initial("rule", "g", day).group_id
    assert report.cursors_moved == [f"rule/{ref}"] and ("rule", "g") not in triggers.cursors
    assert triggers.cursors[("rule", ref)].trigger_key == partition_run.trigger_key
    assert len(report.restored) == 3


def test_a_dry_run_names_the_cursors_it_would_move_and_moves_none() -> None:
    triggers, _, archive, reconcile = stack()
    restored_cursor = claimed_by_resolver(triggers, a_trigger(1))
    archive.write(a_trigger(2), RESTORE_POINT + 1)
    report = reconcile.reconcile(RESTORE_POINT, dry_run=True)
    assert report.cursors_moved == ["rule/g"] and len(report.restored) == 1
    assert triggers.cursors[("rule", "g")] == restored_cursor and a_trigger(2).trigger_key not in triggers.triggers
