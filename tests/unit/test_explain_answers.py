"""Explain's group answer (``lakehook.answers.explain``) is built from the resolver's verdict outside the domain:
its body, byte for byte, is what the domain's ``to_api`` methods wrote before they were dropped (the expected JSON
below was captured from them), every part included: members (an alias), until, backlog, schedule (ticks in UTC and
in the zone, a cron that never fires), partitions, partial commits, the require tree, pins and window, the last
trigger and the late versions skipped."""

from __future__ import annotations

import json

import pytest

from lakehook.answers.explain import GroupExplanation, RuleErrorAnswer
from lakehook.domain.member_verdict import MemberEvaluation
from lakehook.domain.requirements import NodeVerdict
from lakehook.domain.schedule_explanation import ScheduleExplanation
from lakehook.domain.schedules import GroupSchedule
from lakehook.domain.status import Status
from lakehook.domain.triggers import PinnedInput, Trigger, TriggerStatus, Window
from lakehook.domain.verdicts import Backlog, GroupEvaluation, PartialCommit
from lakehook.ports.rules import RuleError

HOUR = 3_600_000
T0 = 1_764_547_200_000  # 2025-12-01T00:00:00Z
A, B = "paimon://lake/ods/a", "iceberg://glue/db/b"
PIN_A = PinnedInput(asset_key=A, snapshot_id=7, snapshot_order=3, commit_time=T0, state_version=4)
PIN_B = PinnedInput(asset_key=B, watermark=T0 + HOUR, manifest_uri="s3://spool/m.json", manifest_sha256="ab" * 32)
READY_A = MemberEvaluation(A, Status.READY, PIN_A, {"snapshotId": 7}, {"snapshotId": {"newerThan": 6}}, None, "orders")
WAITING_B = MemberEvaluation(
    B, Status.BLOCKED_BY_WATERMARK, None, {"watermark": None}, {"watermarkAtLeast": 9}, "b: no watermark"
)
READY_B = MemberEvaluation(B, Status.READY, PIN_B, {"watermark": T0 + HOUR}, {})
TREE = NodeVerdict(
    holds=True,
    op="atLeast",
    needed=1,
    terms=(NodeVerdict(holds=True, ref="orders", members=(A,)), NodeVerdict(holds=False, ref=B, members=(B,))),
)
SCHEDULE = ScheduleExplanation(
    GroupSchedule(cron="0 6 * * *", timezone="Europe/Berlin"), T0 + 5 * HOUR, T0 + 29 * HOUR, False, (WAITING_B,)
)


def cases() -> dict[str, GroupEvaluation]:
    ready = GroupEvaluation(
        "g",
        Status.READY,
        (READY_A, READY_B),
        pins=(PIN_A, PIN_B),
        window=Window(start=T0, end=T0 + HOUR),
        reason="ready",
        require=TREE,
        schedule=SCHEDULE,
    )
    partitioned = GroupEvaluation(
        "p",
        Status.WAITING_FOR_PARTITION,
        (READY_A, WAITING_B),
        reason="dt=2025-12-01: waiting",
        until=T0 + 2 * HOUR,
        partitions=(
            GroupEvaluation("p", Status.READY, (READY_A,), pins=(PIN_A,), partition="dt=2025-12-02"),
            GroupEvaluation(
                "p",
                Status.COOLDOWN,
                (READY_A, WAITING_B),
                reason="cooling",
                until=T0 + 3 * HOUR,
                partition="dt=2025-12-01",
            ),
        ),
        pending_partitions=2,
        partial=(PartialCommit(A, 7, 1500, 1000),),
    )
    behind = GroupEvaluation(
        "w",
        Status.CATCHING_UP,
        (READY_A,),
        reason="behind",
        backlog=Backlog(4, Window(start=T0, end=T0 + HOUR), T0 + 60_000),
        window=Window(start=T0, end=T0 + HOUR),
        pins=(PIN_A,),
    )
    never = GroupEvaluation(
        "s",
        Status.ERROR,
        (WAITING_B,),
        reason="broken",
        schedule=ScheduleExplanation(
            GroupSchedule.model_construct(cron="0 0 30 2 *", timezone="UTC"), never_fires="the cron matches no date"
        ),
    )
    return {"ready": ready, "partitioned": partitioned, "behind": behind, "never": never}


def triggers() -> tuple[Trigger, Trigger]:
    last = Trigger(
        trigger_key="tk-1",
        rule_id="r",
        group_id="g",
        status=TriggerStatus.SUCCEEDED,
        inputs=(PIN_A,),
        created_at=T0,
        updated_at=T0 + 1,
    )
    skip = Trigger(
        trigger_key="tk-0",
        rule_id="r",
        group_id="g",
        status=TriggerStatus.SKIPPED,
        inputs=(PIN_A,),
        created_at=T0 + 2,
        updated_at=T0 + 2,
        reason="version 7 arrived after 9 and will not run for rule r",
    )
    return last, skip


EXPECTED = {
    "ready": (
        '{"groupId":"g","status":"READY","reason":"ready","members":[{"assetKey":"paimon://lake/ods/a","a'
        'lias":"orders","status":"READY","current":{"snapshotId":7},"required":{"snapshotId":{"newerThan"'
        ':6}},"reason":null},{"assetKey":"iceberg://glue/db/b","status":"READY","current":{"watermark":17'
        '64550800000},"required":{},"reason":null}],"schedule":{"cron":"0 6 * * *","timezone":"Europe/Ber'
        'lin","neverFires":false,"lastTick":{"utc":"2025-12-01T05:00:00Z","local":"2025-12-01T06:00:00+01'
        ':00"},"nextTick":{"utc":"2025-12-02T05:00:00Z","local":"2025-12-02T06:00:00+01:00"},"pendingTick'
        '":{"utc":"2025-12-01T05:00:00Z","local":"2025-12-01T06:00:00+01:00"},"ranForLastTick":false,"wai'
        'tsFor":[{"assetKey":"iceberg://glue/db/b","status":"BLOCKED_BY_WATERMARK","reason":"b: no waterm'
        'ark"}],"reason":null},"require":{"op":"atLeast","holds":true,"needed":1,"holding":1,"terms":[{"r'
        'ef":"orders","holds":true,"assetKeys":["paimon://lake/ods/a"]},{"ref":"iceberg://glue/db/b","hol'
        'ds":false,"assetKeys":["iceberg://glue/db/b"]}]},"pins":[{"assetKey":"paimon://lake/ods/a","snap'
        'shotId":7,"snapshotOrder":3,"commitTime":1764547200000,"stateVersion":4},{"assetKey":"iceberg://'
        'glue/db/b","watermark":1764550800000,"stateVersion":0,"manifestUri":"s3://spool/m.json","manifes'
        'tSha256":"abababababababababababababababababababababababababababababababab"}],"window":{"start":'
        '"2025-12-01T00:00:00Z","end":"2025-12-01T01:00:00Z"}}'
    ),
    "partitioned": (
        '{"groupId":"p","status":"WAITING_FOR_PARTITION","reason":"dt=2025-12-01: waiting","members":[{"a'
        'ssetKey":"paimon://lake/ods/a","alias":"orders","status":"READY","current":{"snapshotId":7},"req'
        'uired":{"snapshotId":{"newerThan":6}},"reason":null},{"assetKey":"iceberg://glue/db/b","status":'
        '"BLOCKED_BY_WATERMARK","current":{"watermark":null},"required":{"watermarkAtLeast":9},"reason":"'
        'b: no watermark"}],"until":"2025-12-01T02:00:00Z","pendingPartitions":2,"partitions":[{"partitio'
        'n":"dt=2025-12-02","status":"READY","reason":null,"pins":[{"assetKey":"paimon://lake/ods/a","sna'
        'pshotId":7,"snapshotOrder":3,"commitTime":1764547200000,"stateVersion":4}]},{"partition":"dt=202'
        '5-12-01","status":"COOLDOWN","reason":"cooling","waitingFor":["iceberg://glue/db/b"],"until":"20'
        '25-12-01T03:00:00Z"}],"partialCommits":[{"assetKey":"paimon://lake/ods/a","snapshotId":7,"touche'
        'd":1500,"evaluated":1000}]}'
    ),
    "behind": (
        '{"groupId":"w","status":"CATCHING_UP","reason":"behind","members":[{"assetKey":"paimon://lake/od'
        's/a","alias":"orders","status":"READY","current":{"snapshotId":7},"required":{"snapshotId":{"new'
        'erThan":6}},"reason":null}],"backlog":{"pendingWindows":4,"next":{"start":"2025-12-01T00:00:00Z"'
        ',"end":"2025-12-01T01:00:00Z"},"nextAt":"2025-12-01T00:01:00Z"}}'
    ),
    "never": (
        '{"groupId":"s","status":"ERROR","reason":"broken","members":[{"assetKey":"iceberg://glue/db/b","'
        'status":"BLOCKED_BY_WATERMARK","current":{"watermark":null},"required":{"watermarkAtLeast":9},"r'
        'eason":"b: no watermark"}],"schedule":{"cron":"0 0 30 2 *","timezone":"UTC","neverFires":true,"l'
        'astTick":null,"nextTick":null,"pendingTick":null,"ranForLastTick":null,"waitsFor":null,"reason":'
        '"the cron matches no date"}}'
    ),
    "history": (
        '{"groupId":"w","status":"CATCHING_UP","reason":"behind","members":[{"assetKey":"paimon://lake/od'
        's/a","alias":"orders","status":"READY","current":{"snapshotId":7},"required":{"snapshotId":{"new'
        'erThan":6}},"reason":null}],"backlog":{"pendingWindows":4,"next":{"start":"2025-12-01T00:00:00Z"'
        ',"end":"2025-12-01T01:00:00Z"},"nextAt":"2025-12-01T00:01:00Z"},"lastTrigger":{"triggerKey":"tk-'
        '1","groupId":"g","status":"SUCCEEDED","createdAt":"2025-12-01T00:00:00Z","inputs":[{"assetKey":"'
        'paimon://lake/ods/a","snapshotId":7,"snapshotOrder":3,"commitTime":1764547200000,"stateVersion":'
        '4}]},"skipped":[{"assetKey":"paimon://lake/ods/a","snapshotId":7,"reason":"version 7 arrived aft'
        'er 9 and will not run for rule r","triggerKey":"tk-0","skippedAt":"2025-12-01T00:00:00.002Z"}]}'
    ),
}


def body(answer: GroupExplanation) -> str:
    return json.dumps(answer.dump(), separators=(",", ":"))


@pytest.mark.parametrize("name", ["ready", "partitioned", "behind", "never"])
def test_a_group_answer_is_the_body_explain_always_wrote(name: str) -> None:
    assert body(GroupExplanation.from_domain(cases()[name])) == "".join(EXPECTED[name])


def test_explain_adds_the_last_trigger_and_the_late_versions_skipped_after_the_verdict() -> None:
    last, skip = triggers()
    answer = GroupExplanation.from_domain(cases()["behind"]).with_history(last, [skip])
    assert body(answer) == "".join(EXPECTED["history"])


def test_a_group_that_never_triggered_says_null_and_a_rule_not_each_version_lists_no_skips() -> None:
    shown = GroupExplanation.from_domain(cases()["never"]).with_history(None, None).dump()
    assert shown["lastTrigger"] is None and "skipped" not in shown


def test_a_verdict_not_ready_shows_neither_pins_nor_window() -> None:
    shown = GroupExplanation.from_domain(cases()["behind"]).dump()
    assert "pins" not in shown and "window" not in shown and cases()["behind"].window is not None


def test_a_rule_error_is_the_last_error_explain_always_wrote() -> None:
    bodies = [
        json.dumps(RuleErrorAnswer.from_domain(error).dump(), separators=(",", ":"))
        for error in (RuleError("group g: boom", T0 + 123, "g"), RuleError("boom", T0))
    ]
    assert bodies == [
        '{"message":"group g: boom","at":"2025-12-01T00:00:00.123Z","groupId":"g"}',
        '{"message":"boom","at":"2025-12-01T00:00:00Z","groupId":null}',
    ]
