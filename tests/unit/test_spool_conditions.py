"""Rule conditions over spooled assets: coverage windows, sealed manifests, completed backfills (fakes)."""

from __future__ import annotations

from typing import Any

from lakehook.adapters.dynamodb.state_items import asset_state_from_item
from lakehook.domain.evaluation import Status, select_member
from lakehook.domain.rules import Member
from lakehook.domain.state import AssetState
from lakehook.domain.time import ms_to_iso
from lakehook.usecases.coverage import RecordCoverage
from lakehook.usecases.resolve import ResolverStores
from lakehook.usecases.rule_explain import ExplainRule
from tests.fakes.memory_coverage import InMemoryCoverageStore
from tests.unit.test_resolve_usecase import START, World, rule
from tests.wiring import ingest_events, resolve_asset_change

SPOOL = "s3://spool/orders"
HOUR = 3_600_000
H0 = (START // HOUR + 1) * HOUR  # the first whole hour after the world starts
MIN = 60_000


class CoverageWorld(World):
    """The resolver world with the ingest path and the resolver on one in-memory coverage store."""

    def __init__(self, *rules: Any) -> None:
        super().__init__(*rules)
        self.coverage = InMemoryCoverageStore()
        self.ingest = ingest_events(self.store, clock=lambda: self.now, coverage=RecordCoverage(self.coverage))
        self.resolve = resolve_asset_change(
            ResolverStores(
                self.rules, self.reader, self.triggers, self.history, self.deferrals, coverage=self.coverage
            ),
            clock=lambda: self.now,
            observer=None,
        )
        self.explainer = ExplainRule(
            self.rules,
            self.triggers,
            self.reader,
            clock=lambda: self.now,
            resolver=self.resolve,
        )

    def cover(self, start: int, end: int) -> None:
        self.push("INTERVAL_COVERED", SPOOL, interval={"start": start, "end": end})

    def windows(self) -> list[tuple[str, str]]:
        order = [self.triggers.triggers[k] for k in self.triggers.claim_order]
        return [(ms_to_iso(t.window.start), ms_to_iso(t.window.end)) for t in order if t.window is not None]


def hourly(lateness_seconds: int = 0) -> Any:
    condition = {"coverage": {"window": "PT1H", "allowedLatenessSeconds": lateness_seconds}}
    return rule("hourly", {"assetKey": SPOOL, "condition": condition})


def test_each_fully_covered_hour_triggers_once_with_the_window_in_its_key() -> None:
    world = CoverageWorld(hourly())
    world.now = H0 + HOUR + MIN
    world.cover(H0 + 30 * MIN, H0 + HOUR)  # reprocessed slices arrive out of order
    world.cover(H0, H0 + 30 * MIN)
    world.deliver()
    assert world.windows() == [(ms_to_iso(H0), ms_to_iso(H0 + HOUR))]
    world.cover(H0, H0 + HOUR)  # a re-processed hour that supersedes the slices adds nothing new
    world.cover(H0 + HOUR, H0 + 3 * HOUR)  # two more hours at once: one trigger each, in order
    world.now = H0 + 3 * HOUR + MIN
    world.deliver()
    assert world.windows() == [(ms_to_iso(H0 + h * HOUR), ms_to_iso(H0 + (h + 1) * HOUR)) for h in range(3)]
    assert len(set(world.triggers.claim_order)) == 3


def test_a_gap_blocks_its_window_and_explain_lists_exactly_the_missing_ranges() -> None:
    world = CoverageWorld(hourly())
    world.now = H0 + HOUR + MIN
    world.cover(H0, H0 + 20 * MIN)
    world.cover(H0 + 30 * MIN, H0 + 40 * MIN)
    world.cover(H0 + 45 * MIN, H0 + HOUR)
    assert world.deliver().claimed == []
    member = world.explainer.explain("hourly")["groups"][0]["members"][0]
    assert member["status"] == "BLOCKED_BY_COVERAGE"
    assert member["current"]["missing"] == [
        {"start": ms_to_iso(H0 + 20 * MIN), "end": ms_to_iso(H0 + 30 * MIN)},
        {"start": ms_to_iso(H0 + 40 * MIN), "end": ms_to_iso(H0 + 45 * MIN)},
    ]
    assert member["current"]["coveredRatio"] == 0.75  # 45 of the window's 60 minutes
    assert ms_to_iso(H0 + 20 * MIN) in member["reason"] and ms_to_iso(H0 + 45 * MIN) in member["reason"]
    world.cover(H0 + 20 * MIN, H0 + 45 * MIN)
    assert [t.window for t in world.deliver().claimed] != []
    assert world.windows() == [(ms_to_iso(H0), ms_to_iso(H0 + HOUR))]


def test_a_later_hour_waits_for_the_gap_before_it_so_every_window_triggers_in_order() -> None:
    world = CoverageWorld(hourly())
    world.now = H0 + HOUR + MIN
    world.cover(H0, H0 + HOUR)
    world.deliver()
    world.now = H0 + 3 * HOUR + MIN
    world.cover(H0 + 2 * HOUR, H0 + 3 * HOUR)  # hour 2 is covered, hour 1 is not
    assert world.deliver().claimed == []
    explained = world.explainer.explain("hourly")["groups"][0]
    assert explained["status"] == "BLOCKED_BY_COVERAGE"
    assert explained["members"][0]["current"]["missing"] == [
        {"start": ms_to_iso(H0 + HOUR), "end": ms_to_iso(H0 + 2 * HOUR)}
    ]
    world.cover(H0 + HOUR, H0 + 2 * HOUR)
    world.deliver()
    assert [w[0] for w in world.windows()] == [ms_to_iso(H0 + h * HOUR) for h in range(3)]


def test_a_covered_window_waits_out_its_lateness_then_triggers_without_a_new_event() -> None:
    world = CoverageWorld(hourly(lateness_seconds=600))
    world.now = H0 + HOUR + MIN
    world.cover(H0, H0 + HOUR)
    report = world.deliver()
    assert report.claimed == []
    verdict = report.verdicts[("hourly", "g")]
    assert verdict.status is Status.BLOCKED_BY_COVERAGE and verdict.until == H0 + HOUR + 10 * MIN
    assert "closes at" in (verdict.reason or "")
    assert world.sweep(4 * MIN).claimed == []  # not yet due
    assert [t.window for t in world.sweep(5 * MIN).claimed] != []
    assert world.windows() == [(ms_to_iso(H0), ms_to_iso(H0 + HOUR))]


def state(**attrs: Any) -> AssetState:
    return asset_state_from_item(SPOOL, {"version": 3, **attrs})


def manifest_member() -> Member:
    return Member.model_validate({"assetKey": SPOOL, "condition": {"manifest": "SEALED"}})


def test_only_a_verified_sealed_manifest_satisfies_a_manifest_member() -> None:
    uri = "s3://bucket/spool/orders/7.manifest.json"
    cases = {
        "INTERRUPTED": state(manifestUri=uri, manifestStatus="INTERRUPTED"),
        "INVALID": state(manifestUri=uri, manifestStatus="INVALID", manifestReason="part-0001.parquet: sha256 differs"),
        "PENDING": state(manifestUri=uri, manifestStatus="PENDING"),
        "none": state(),
    }
    verdicts = {name: select_member(manifest_member(), s) for name, s in cases.items()}
    assert {v.status for v in verdicts.values()} == {Status.BLOCKED_BY_MANIFEST}
    assert "INTERRUPTED" in (verdicts["INTERRUPTED"].reason or "")
    assert "sha256 differs" in (verdicts["INVALID"].reason or "")
    assert verdicts["INVALID"].current["manifestStatus"] == "INVALID"
    assert "verified" in (verdicts["PENDING"].reason or "")
    sealed = select_member(manifest_member(), state(manifestUri=uri, manifestStatus="SEALED", manifestSnapshotId=7))
    assert sealed.status is Status.READY and sealed.pin is not None
    assert (sealed.pin.snapshot_id, sealed.pin.manifest_uri) == (7, uri)


def test_a_new_sealed_manifest_is_a_new_combination_of_inputs() -> None:
    first = select_member(manifest_member(), state(manifestUri="s3://b/spool/1.manifest.json", manifestStatus="SEALED"))
    second = select_member(
        manifest_member(), state(manifestUri="s3://b/spool/2.manifest.json", manifestStatus="SEALED")
    )
    assert first.pin is not None and second.pin is not None
    assert first.pin.identity() != second.pin.identity()


def test_backfill_status_completed_waits_for_the_backfill() -> None:
    member = Member.model_validate({"assetKey": SPOOL, "condition": {"backfillStatus": "COMPLETED"}})
    snapshot = {"latestSnapshotId": 5, "latestSnapshotOrder": 5}
    running = select_member(member, state(backfillId="b1", backfillStatus="RUNNING", **snapshot))
    assert running.status is Status.BLOCKED_BY_BACKFILL and "b1 is running" in (running.reason or "")
    assert select_member(member, state(**snapshot)).status is Status.BLOCKED_BY_BACKFILL
    done = select_member(member, state(backfillId="b1", backfillStatus="COMPLETED", **snapshot))
    assert done.status is Status.READY
