"""Trigger keys: the same versions give the same key; any difference that matters gives another."""

from __future__ import annotations

import re
from urllib.parse import quote

from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.domain.triggers import GroupCursor, PinnedInput, Trigger, TriggerStatus, Window, trigger_key
from tests.hypothesis_profiles import examples

A = "paimon://lake/ods/a"
B = "iceberg://glue/ods/b"
IDS = st.from_regex(r"[A-Za-z0-9_.-]{1,64}", fullmatch=True)


def pin(asset: str, snapshot: int | None, **extra: int) -> PinnedInput:
    return PinnedInput(asset_key=asset, snapshot_id=snapshot, **extra)  # type: ignore[arg-type]


def test_key_is_readable_and_one_url_segment() -> None:
    key = trigger_key("dwd_trade.v2", "trade-group", [pin(A, 1001), pin(B, 7)], None, 0)
    assert key.startswith("dwd_trade.v2.trade-group.")
    assert re.fullmatch(r"[A-Za-z0-9_.-]+", key)
    assert quote(key, safe="") == key  # nothing to escape: safe as /triggers/{triggerKey}


@settings(max_examples=examples(100), deadline=None)
@given(rule=IDS, group=IDS, snapshots=st.lists(st.integers(0, 2**63 - 1), min_size=1, max_size=5))
def test_key_never_holds_a_slash(rule: str, group: str, snapshots: list[int]) -> None:
    pins = [pin(f"paimon://lake/db/t{i}", s) for i, s in enumerate(snapshots)]
    key = trigger_key(rule, group, pins, None, 0)
    assert "/" not in key and key.startswith(f"{rule}.{group}.")


def test_member_order_and_incidental_fields_do_not_change_the_key() -> None:
    one = trigger_key("r", "g", [pin(A, 1, schema_id=5, watermark=10, state_version=3), pin(B, 2)], None, 0)
    two = trigger_key("r", "g", [pin(B, 2, state_version=9), pin(A, 1, watermark=99)], None, 0)
    assert one == two


def test_every_versioned_part_changes_the_key() -> None:
    base = trigger_key("r", "g", [pin(A, 1), pin(B, 2)], None, 0)
    variants = {
        trigger_key("r", "g", [pin(A, 2), pin(B, 2)], None, 0),  # another snapshot
        trigger_key("r2", "g", [pin(A, 1), pin(B, 2)], None, 0),  # another rule
        trigger_key("r", "g2", [pin(A, 1), pin(B, 2)], None, 0),  # another group
        trigger_key("r", "g", [pin(A, 1), pin(B, 2)], Window(start=0, end=3_600_000), 0),  # a window
        trigger_key("r", "g", [pin(A, 1), pin(B, 2)], None, 1),  # a replay
        trigger_key("r", "g", [pin(A, 1)], None, 0),  # fewer members
    }
    assert base not in variants and len(variants) == 6


def test_ids_that_concatenate_alike_still_differ() -> None:
    # "a.b" + "c" and "a" + "b.c" read the same as a prefix; the hash tells them apart.
    assert trigger_key("a.b", "c", [pin(A, 1)], None, 0) != trigger_key("a", "b.c", [pin(A, 1)], None, 0)


def test_a_snapshotless_member_is_versioned_by_its_watermark() -> None:
    one = trigger_key("r", "g", [pin(A, None, watermark=100)], None, 0)
    two = trigger_key("r", "g", [pin(A, None, watermark=200)], None, 0)
    assert one != two
    assert pin(A, None, watermark=200).ordinal > pin(A, None, watermark=100).ordinal


def test_the_cursor_moves_with_each_claim_and_keeps_the_cooldown_across_skips() -> None:
    start = GroupCursor.initial("r", "g")
    first = Trigger(trigger_key="k1", rule_id="r", group_id="g", inputs=(pin(A, 1),), created_at=10, updated_at=10)
    after = start.after(first, {A: "bf1"})
    assert (after.seq, after.trigger_key, after.claimed_at) == (1, "k1", 10)
    assert after.pins[A].snapshot_id == 1 and after.backfills == {A: "bf1"}
    skip = Trigger(
        trigger_key="k2",
        rule_id="r",
        group_id="g",
        inputs=(pin(A, 5),),
        created_at=20,
        updated_at=20,
        status=TriggerStatus.SKIPPED,
    )
    later = after.after(skip, {A: "bf2"})
    assert (later.seq, later.claimed_at, later.pins[A].snapshot_id) == (2, 10, 5)


def test_cursor_round_trips_through_json() -> None:
    cursor = GroupCursor.initial("r", "g").after(
        Trigger(
            trigger_key="k",
            rule_id="r",
            group_id="g",
            inputs=(pin(A, 1, schema_id=3),),
            window=Window(start=0, end=60_000),
            created_at=1,
            updated_at=1,
        ),
        {},
    )
    assert GroupCursor.model_validate_json(cursor.to_json()) == cursor
