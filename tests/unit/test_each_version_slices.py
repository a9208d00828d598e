"""Each group's slice of the batch's whole-table version reads (``GroupVersions``): the reads are made once per asset
for the batch, and a group sharing an asset with another group (of its rule or of another, EACH_VERSION or not) sees
that asset's logs, snapshot log, late snapshots and first-seen snapshots as it did when they were batch-wide."""

from __future__ import annotations

from lakehook.domain.late_versions import is_late_skip
from lakehook.domain.rules import Rule
from lakehook.domain.versions import SnapshotRecord
from lakehook.ports.rules import StateChange
from tests.unit.test_each_version import each_rule
from tests.unit.test_resolve_usecase import World, rule

A = "paimon://lake/ods/a"
B = "paimon://lake/ods/b"


def skips(world: World) -> set[tuple[str, int | None]]:
    """The late versions recorded as skipped, per group: (group id, snapshot id)."""
    return {(t.group_id, t.inputs[0].snapshot_id) for t in world.triggers.triggers.values() if is_late_skip(t)}


def test_late_snapshots_in_a_batch_of_two_groups_are_skipped_once_for_each_group_and_never_for_a_latest_rule() -> None:
    """Both groups of the rule ran 5; the stream records of 3 and 4 (their push could not read the rules, so the
    resolver records the skips) come in one batch: each group records its own skips, noted as its own, and 6 runs
    for both; the LATEST rule on the same asset skips nothing."""
    world = World(each_rule(groups=2), rule("latest", {"assetKey": A}))
    world.snap(A, 5)
    world.deliver()
    world.resolve([StateChange(A, snapshot=SnapshotRecord(snapshot_id=s, order=s)) for s in (3, 4)])
    assert skips(world) == {("g", 3), ("g", 4), ("g1", 3), ("g1", 4)}
    late = [t for t in world.triggers.triggers.values() if is_late_skip(t)]
    assert all(t.reason is not None and t.reason.endswith(f"(group {t.group_id})") for t in late)
    world.snap(A, 6)
    world.deliver()
    order = [t for k in world.triggers.claim_order if not is_late_skip(t := world.triggers.triggers[k])]
    assert [(t.group_id, [p.snapshot_id for p in t.inputs]) for t in order if t.rule_id == "each"] == [
        ("g", [5]),
        ("g1", [5]),
        ("g", [6]),
        ("g1", [6]),
    ]
    assert world.claimed("latest") == [[5], [6]]
    assert len(late) == 4


def test_an_each_version_rule_sharing_its_asset_with_a_latest_rule_still_runs_every_version_in_order() -> None:
    """The EACH_VERSION rule waits at the gap 4 (then 2) leaves and runs 1..5 in order; the LATEST rule, which also
    needs B, runs once with the newest of A when B comes."""
    world = World(rule("each", {"assetKey": A}, mode="EACH_VERSION"), rule("latest", {"assetKey": A}, {"assetKey": B}))
    for sid in (1, 3, 2, 5, 4):
        world.now += 1_000
        world.snap(A, sid)
        world.deliver()
    world.snap(B, 9)
    world.deliver()
    assert world.claimed("each") == [[1], [2], [3], [4], [5]]
    assert world.claimed("latest") == [[5, 9]]
    assert skips(world) == set()


def test_two_each_version_groups_with_different_cursors_on_one_asset_each_step_through_it_from_their_own() -> None:
    """Group g runs A's 1 and 2 while g2 waits for B; g2's first run starts at the oldest of A it saw (1), so both
    run every version of A, each from its own cursor, and both wait at the gap 4 leaves until 3 comes."""
    two = each_rule(groups=1).model_dump(by_alias=True, mode="json")
    two["groups"].append({"groupId": "g2", "members": [{"assetKey": A}, {"assetKey": B}]})
    world = World(Rule.model_validate(two), rule("latest", {"assetKey": A}))
    world.snap(A, 1, 2)
    world.deliver()
    world.snap(B, 1)
    world.deliver()
    world.snap(A, 4)
    report = world.deliver()
    assert {g: v.status.value for (r, g), v in report.verdicts.items() if r == "each"} == {
        "g": "WAITING_FOR_VERSION",
        "g2": "WAITING_FOR_VERSION",
    }
    world.snap(A, 3)
    world.deliver()
    order = [t for k in world.triggers.claim_order if not is_late_skip(t := world.triggers.triggers[k])]
    ran = {
        g: [[p.snapshot_id for p in t.inputs] for t in order if t.rule_id == "each" and t.group_id == g]
        for g in ("g", "g2")
    }
    assert ran == {"g": [[1], [2], [3], [4]], "g2": [[1, 1], [2, 1], [3, 1], [4, 1]]}
    assert world.claimed("latest") == [[2], [4]]
    assert skips(world) == set()
