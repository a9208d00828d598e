"""What the answers say of a source that is not healthy: explain's "cannot decide: <asset> is BLOCKED since … because
…", the freshness check naming the source as an overdue promise's cause, and the asset view's health. Through the
container on the in-memory fakes and the fake table of test_poll, polled as the poll worker polls."""

from __future__ import annotations

import argparse
import io
from collections.abc import Collection
from typing import Any

from lakehook.answers.freshness import OverdueAnswer
from lakehook.cli_commands.commands import explain, state
from lakehook.cli_commands.manage import assets_list
from lakehook.cli_commands.output import captured
from lakehook.domain.assets import AssetRegistration
from lakehook.domain.events import AssetEvent, SourceType
from lakehook.domain.snapshots import PollStatus
from lakehook.domain.time import now_ms
from lakehook.freshness_metrics import publish_freshness
from lakehook.observability import MetricName
from lakehook.ports.lakehouse import CorruptMetadataError, SourceAccessError
from lakehook.usecases.poll import PollAsset, PollAssets
from tests.fakes.memory import InMemoryPollStatusStore
from tests.unit.test_poll import KEY, ORDERS, FakeSnapshotSource, RecordingMetrics
from tests.wiring import in_memory

PUSHED = "custom://ods/pushed"


class Stack:
    """A container of fakes with one polled table (ORDERS, ``maxAgeSeconds`` 60) and a rule over it and a pushed
    asset."""

    def __init__(self, mode: str = "ALL_UPDATED", **parts: Any) -> None:
        self.source = FakeSnapshotSource()
        self.table = self.source.table("ods.orders")
        self.c = in_memory(**parts)
        self.c.asset_registry.put_asset(ORDERS.model_copy(update={"max_age_seconds": 60}), 0)
        self.c.asset_registry.put_asset(AssetRegistration.model_validate({"assetKey": PUSHED, "format": "custom"}), 0)
        self.now = now_ms()
        poller = PollAsset(lambda fmt: self.source, self.c.watermark_store, self.c.ingest, clock=self.clock)
        self.poll = PollAssets(poller, self.statuses, clock=self.clock)
        body = {
            "groups": [{"groupId": "g", "members": [{"assetKey": KEY}, {"assetKey": PUSHED}]}],
            "policy": {"mode": mode},
            "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
        }
        self.c.put_rule.put("daily", body)

    def clock(self) -> int:
        return self.now

    @property
    def statuses(self) -> Any:
        return self.c.poll_status_store

    def group(self) -> dict[str, Any]:
        (group,) = self.c.explain_rule.explain("daily")["groups"]
        return dict(group)


def test_explain_says_it_cannot_decide_while_a_members_source_is_blocked_and_stops_once_repaired() -> None:
    stack = Stack()
    stack.table.commit(1)
    stack.poll([ORDERS])
    waiting = stack.group()
    assert waiting["status"] != "READY" and not waiting["reason"].startswith("cannot decide")
    assert "cannotDecide" not in waiting and all("sourceHealth" not in m for m in waiting["members"])

    stack.table.failure = SourceAccessError("s3://lake/orders: metadata could not be read (AccessDenied)")
    stack.poll([ORDERS])  # one poll period later
    group = stack.group()
    assert group["reason"].startswith(f"cannot decide: {KEY} is BLOCKED since ")
    assert "because access to the table is refused" in group["reason"] and "AccessDenied" in group["reason"]
    assert group["waitingReason"] == waiting["reason"]  # what the resolver says is kept
    (blocked,) = group["cannotDecide"]
    assert (blocked["assetKey"], blocked["state"], blocked["blockedBy"]) == (KEY, "BLOCKED", "CREDENTIALS")
    member = next(m for m in group["members"] if m["assetKey"] == KEY)
    assert member["sourceHealth"]["state"] == "BLOCKED"

    stack.table.failure = None
    stack.now += 3_600_000  # past the backoff: the next poll reads the table
    stack.poll([ORDERS])  # repaired: explain is back to the resolver's reason
    assert stack.group()["reason"] == waiting["reason"]


def test_a_gap_makes_explain_say_it_cannot_decide_and_a_ready_group_only_shows_the_health() -> None:
    stack = Stack(mode="ANY_UPDATED")
    stack.c.ingest.ingest(AssetEvent(eventType="SNAPSHOT_COMMITTED", assetKey=PUSHED, snapshotId=1), SourceType.PUSH)
    stack.table.commit(1)
    stack.poll([ORDERS])
    stack.table.commit(3)
    stack.table.expire_through(3)  # expired faster than the poll period
    stack.poll([ORDERS])
    group = stack.group()
    assert group["status"] == "READY" and "cannotDecide" not in group
    member = next(m for m in group["members"] if m["assetKey"] == KEY)
    assert member["sourceHealth"]["state"] == "GAP"

    gap = Stack()
    gap.table.commit(1)
    gap.poll([ORDERS])
    gap.table.commit(3)
    gap.table.expire_through(3)
    gap.poll([ORDERS])
    reason = gap.group()["reason"]
    assert reason.startswith(f"cannot decide: {KEY} is GAP since ") and "2 version(s) after snapshot 1" in reason


def test_the_freshness_check_and_explain_name_a_blocked_source_as_the_cause_of_an_overdue_asset() -> None:
    stack = Stack()
    stack.table.commit(1)  # committed at epoch 1 s: long overdue for maxAgeSeconds 60
    stack.poll([ORDERS])
    report = stack.c.check_freshness()
    (overdue,) = report.assets
    assert overdue.asset_key == KEY and overdue.cause is None  # old, but nothing says the source is to blame
    stack.table.failure = SourceAccessError("storage could not be reached: timed out")
    stack.poll([ORDERS])
    (overdue,) = stack.c.check_freshness().assets
    assert overdue.cause is not None and overdue.cause.startswith(f"{KEY} is BLOCKED since ")
    assert "timed out" in OverdueAnswer.from_domain(overdue).dump()["cause"]
    assert "timed out" in report.to_log()["assetsOverdue"][0].get("cause", "timed out")
    freshness = stack.c.explain_rule.explain("daily")["freshness"]
    assert freshness["overdue"][0]["cause"].startswith(f"{KEY} is BLOCKED")


def test_the_freshness_check_counts_the_untrusted_sources_for_its_alarm_and_names_them() -> None:
    stack = Stack()
    stack.table.commit(1)
    stack.poll([ORDERS])
    sink = RecordingMetrics()
    publish_freshness(stack.c.check_freshness(), sink)
    assert sink.values[MetricName.SOURCES_UNTRUSTED] == 0
    stack.table.commit(3)
    stack.table.expire_through(3)
    stack.poll([ORDERS])  # a gap
    report = stack.c.check_freshness()
    sink = RecordingMetrics()
    publish_freshness(report, sink)
    assert sink.values[MetricName.SOURCES_UNTRUSTED] == 1
    (named,) = report.to_log()["sourcesUntrusted"]
    assert named.startswith(f"{KEY} is GAP since ")


def test_the_asset_view_shows_the_source_health() -> None:
    stack = Stack()
    stack.table.commit(1)
    stack.poll([ORDERS])
    assert stack.c.read_asset_state(KEY)["sourceHealth"] == {"assetKey": KEY, "state": "HEALTHY"}
    stack.table.failure = RuntimeError("bug")
    stack.poll([ORDERS])
    health = stack.c.read_asset_state(KEY)["sourceHealth"]
    assert (health["state"], health["blockedBy"]) == ("BLOCKED", "POLLER_FAILING") and "since" in health
    stack.c.ingest.ingest(AssetEvent(eventType="SNAPSHOT_COMMITTED", assetKey=PUSHED, snapshotId=1), SourceType.PUSH)
    assert "sourceHealth" not in stack.c.read_asset_state(PUSHED)  # pushed: no poller to judge it


class StackApi:
    """The CLI's API client answering from the stack's use cases (explain and the asset view)."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack

    def get(self, path: str, query: Any = None) -> dict[str, Any]:
        if path == "/assets":
            return dict(self.stack.c.list_assets(query.get("limit", 100), query.get("nextToken")))
        if path == "/assets/state":
            return dict(self.stack.c.read_asset_state(query["assetKey"]))
        return dict(self.stack.c.explain_rule.explain(path.split("/")[2]))


def cli_text(stack: Stack, command: Any, **args: Any) -> list[str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    with captured(stdout, stderr):
        command(StackApi(stack), argparse.Namespace(output="text", **args))
    return stdout.getvalue().splitlines()


def test_the_cli_prints_the_cannot_decide_line_and_each_sources_health() -> None:
    stack = Stack()
    stack.table.commit(1)
    stack.poll([ORDERS])
    stack.table.failure = CorruptMetadataError("snapshot-2 is not JSON")
    stack.poll([ORDERS])
    lines = cli_text(stack, explain, rule="daily")
    assert any(line.startswith(f"    cannot decide: {KEY} is BLOCKED since ") for line in lines)
    assert any(line.startswith("        source: BLOCKED since ") and "is not JSON" in line for line in lines)
    (source,) = [line for line in cli_text(stack, state, asset=KEY) if line.startswith("  source: ")]
    assert "BLOCKED since" in source and "the table cannot be read" in source


class CountingStatuses(InMemoryPollStatusStore):
    """The in-memory poll status store, counting single reads and batches."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = self.batches = 0

    def get(self, asset_key: str) -> PollStatus | None:
        self.reads += 1
        return super().get(asset_key)

    def get_many(self, asset_keys: Collection[str]) -> dict[str, PollStatus]:
        self.batches += 1
        return {k: s for k in asset_keys if (s := self.statuses.get(k)) is not None}


def test_the_asset_list_shows_each_polled_sources_health_for_one_batch_of_reads_per_page() -> None:
    counting = CountingStatuses()
    stack = Stack(poll_status_store=counting)
    stack.table.commit(1)
    stack.table.failure = SourceAccessError("ExpiredToken")
    stack.poll([ORDERS])
    counting.reads = 0
    page = stack.c.list_assets(100)
    by_key = {a["assetKey"]: a for a in page["items"]}
    assert by_key[KEY]["sourceHealth"]["state"] == "BLOCKED" and "sourceHealth" not in by_key[PUSHED]
    assert (counting.batches, counting.reads) == (1, 0)
    lines = cli_text(stack, assets_list, limit=100)
    assert any(line.startswith(KEY) and " BLOCKED " in line for line in lines)
    counting.batches = 0
    stack.c.explain_rule.explain("daily")
    assert (counting.batches, counting.reads) == (1, 0)  # explain reads its members' health in one batch too
