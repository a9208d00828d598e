"""The end of the story: every trigger and its pins, exactly-once at the consumer, the manifests, the data."""

from __future__ import annotations

import json
from typing import Any

import boto3

from lakehook.demo.gmv import ADS, ADS_RULE, CALENDAR_DAYS, DWD_RULE, DWS, ORDERS, PAYMENTS, RULES, short, table
from lakehook.demo.lake import REGION
from lakehook.demo.story import Story, pinned, pins
from lakehook.domain.dispatch import ManifestIntegrityError, RunManifest


def summarize(story: Story) -> None:
    api = story.api
    story.view.step("summary: triggers, runs, manifests, data, and the rule still blocked")
    story.tick()
    triggers = [t for rule_id in RULES for t in sorted(api.triggers(rule_id), key=lambda t: t.get("createdAt", ""))]
    say_triggers(story, triggers)
    check_runs(story, triggers)
    check_events(story)
    check_manifests(story, triggers)
    check_data(story, triggers)
    explain_blocked(story)
    late = story.late()
    if late:
        story.view.say("   the waits that gave up, checked once more at the end:")
        for line in late:
            story.view.say(f"   {line}")


def say_triggers(story: Story, triggers: list[dict[str, Any]]) -> None:
    """Each trigger: its rule, key, status, attempts, pins and how often its consumer started it."""
    consumers, say = story.consumers, story.view.say
    say("   triggers (rule, key, status, attempts, pinned inputs, invocations started at the consumer):")
    for t in triggers:
        key = t["triggerKey"]
        say(
            f"   - {t['ruleId']:22} {key.rsplit('.', 1)[-1][:12]}  {t['status']:9} attempts {t.get('attempts')}  "
            f"{pins(t)}  "
            f"started {consumers.started_per_key[key]}x (requests {consumers.requests_per_key[key]})"
        )
        if t["status"] != "SUCCEEDED" and t.get("reason"):
            say(f"       reason: {t['reason']}")


def check_runs(story: Story, triggers: list[dict[str, Any]]) -> None:
    """Six triggers, each started once at its consumer (the refused one re-sent with its key), each run reading
    exactly its pins."""
    api, consumers = story.api, story.consumers
    keys = [t["triggerKey"] for t in triggers]
    api.expect("six triggers, all SUCCEEDED", len(triggers) == 6 and all(t["status"] == "SUCCEEDED" for t in triggers))
    api.expect(
        "each trigger started exactly once at its consumer, and nothing else started",
        all(consumers.started_per_key[k] == 1 for k in keys) and sum(consumers.started_per_key.values()) == len(keys),
        dict(consumers.started_per_key),
    )
    api.expect(
        "the one refused request (503) was the DWS target's, re-sent with the same key",
        len(consumers.refused) == 1 and consumers.requests_per_key[consumers.refused[0]] == 2,
        consumers.refused,
    )
    by_key = {t["triggerKey"]: t for t in triggers}
    runs = list(consumers.runs.values())
    api.expect(
        "every run read exactly its pinned snapshots and reported completion",
        len(runs) == 6 and all(r.completed and r.read == pinned(by_key.get(r.trigger_key, {})) for r in runs),
        [(r.rule_id, r.read, r.error) for r in runs],
    )


def check_manifests(story: Story, triggers: list[dict[str, Any]]) -> None:
    s3 = boto3.client("s3", endpoint_url=story.endpoint, region_name=REGION)
    story.view.say("   run manifests (S3):")
    verified = 0
    for t in triggers:
        uri = str(t.get("manifestUri") or "")
        bucket, _, key = uri.removeprefix("s3://").partition("/")
        if not bucket or not key:
            story.view.say(
                f"   - {t['ruleId']} {t['triggerKey'][-12:]}: no manifest ({t.get('reason') or 'no reason given'})"
            )
            continue
        try:
            manifest = RunManifest.from_document(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
        except (ManifestIntegrityError, s3.exceptions.NoSuchKey) as exc:
            story.view.say(f"   - {uri}: {exc}")
            continue
        inputs = {i.asset_key: i.snapshot_id for i in manifest.inputs}
        verified += inputs == pinned(t) and manifest.trigger_key == t["triggerKey"]
        story.view.say(f"   - {uri}  sha256 {manifest.sha256[:16]}")
    api = story.api
    api.expect("a manifest per trigger in S3, its hash verified, pinning the trigger's inputs", verified == 6, verified)


def check_data(story: Story, triggers: list[dict[str, Any]]) -> None:
    dwd = [pinned(t) for t in triggers if t["ruleId"] == DWD_RULE]
    last = dwd[-1] if dwd else {}
    expected = story.expected_gmv(last.get(ORDERS, 0), last.get(PAYMENTS, 0))
    latest = story.lake.iceberg.load_table(table(ADS)).scan().to_arrow().to_pylist()
    shown = round(sum(float(str(r["gmv"]).replace(",", "")) for r in latest) * 100)
    story.view.say(
        f"   {short(ADS)} now: " + "; ".join(f"{r['order_date']} GMV {r['gmv']} ({r['orders']} orders)" for r in latest)
    )
    story.api.expect(
        "the dashboard's GMV equals the paid orders at the pinned ODS snapshots (not orders 4)",
        shown == expected and expected > 0,
        (shown, expected),
    )
    daily = story.lake.iceberg.load_table(table(DWS)).scan().to_arrow().to_pylist()
    weeks = {r["order_date"]: r["week"] for r in daily}
    story.api.expect(
        "each day of the daily GMV carries its week from the Delta calendar it pinned",
        bool(weeks) and all(week == CALENDAR_DAYS.get(day) for day, week in weeks.items()),
        weeks,
    )


def explain_blocked(story: Story) -> None:
    explained = story.api.explain(DWD_RULE)
    say = story.view.say
    say(f"   GET /rules/{DWD_RULE}/explain -> ready {str(explained.get('ready')).lower()}")
    for group in explained.get("groups", []):
        say(f"     group {group.get('groupId')}: {group.get('status')}")
        for member in group.get("members", []):
            say(f"       {short(member['assetKey'])}: {member.get('status')} - {member.get('reason')}")
            say(f"         current  {json.dumps(member.get('current'), separators=(',', ':'))}")
            say(f"         required {json.dumps(member.get('required'), separators=(',', ':'))}")
    member = explained["groups"][0]["members"][0]
    story.api.expect(
        "the DWD rule is still blocked: orders 4 failed its quality check (BLOCKED_BY_QUALITY)",
        not explained.get("ready")
        and member.get("status") == "BLOCKED_BY_QUALITY"
        and "4" in str(member.get("reason")),
        member,
    )


def check_events(story: Story) -> None:
    """Push and poll converge: one SNAPSHOT_COMMITTED per orders snapshot, whoever saw it first."""
    events = [e for e in story.api.events(ORDERS) if e["eventType"] == "SNAPSHOT_COMMITTED"]
    ids = sorted(int(e["snapshotId"]) for e in events)
    by_source = sorted(f"{e['snapshotId']}:{e.get('source')}" for e in events)
    story.view.say(f"   orders snapshot events (id:source): {', '.join(by_source)}")
    story.api.expect("push and poll converge: one event per orders snapshot (1, 2, 3, 4)", ids == [1, 2, 3, 4], ids)
    check_outlet_events(story)


def check_outlet_events(story: Story) -> None:
    """Each dashboard snapshot the ADS run reported is one event, whether its outlet or a poll recorded it."""
    outlets = [r.wrote.snapshot_id for r in story.consumers.runs.values() if r.rule_id == ADS_RULE and r.wrote]
    polled = [e for e in story.api.events(ADS) if e["eventType"] == "SNAPSHOT_COMMITTED"]
    seen = {int(e["snapshotId"]): str(e.get("source")) for e in polled}
    story.view.say(f"   dashboard snapshot events (id:source): {', '.join(f'{k}:{v}' for k, v in seen.items())}")
    story.api.expect(
        "each dashboard snapshot the ADS run reported is one event, by outlet or by poll",
        bool(outlets) and all(sum(1 for e in polled if int(e["snapshotId"]) == s) == 1 for s in outlets),
        (outlets, seen),
    )
