"""lakehook.receiver without a network: it agrees with what the dispatcher sends, and refuses what it must."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakehook.domain import signing
from lakehook.domain.dispatch import Invocation as SentInvocation
from lakehook.domain.dispatch import ManifestInput, RunManifest
from lakehook.domain.json_form import json_form
from lakehook.domain.partitions import format_partition_key, parse_partition_key
from lakehook.domain.triggers import GroupCursor, PinnedInput, TriggerStatus, next_trigger
from lakehook.receiver import (
    InMemoryDedupStore,
    InvalidPayloadError,
    Invocation,
    SignatureError,
    WebhookReceiver,
    from_dolphinscheduler_params,
    from_eventbridge_event,
    parse_invocation,
    sign,
    verify_signature,
)
from lakehook.receiver import PinnedInput as ReceivedInput

SECRET = "receiver-secret"
NOW = 1_760_000_000


def sent(attempt: int = 1, **changes: Any) -> SentInvocation:
    """An invocation as the dispatcher builds it (lakehook.domain.dispatch)."""
    fields: dict[str, Any] = {
        "trigger_key": "dwd.g.0123456789abcdef01234567",
        "rule_id": "dwd",
        "group_id": "g",
        "inputs": (
            ManifestInput(
                asset_key="iceberg://glue/ods/orders", snapshot_id=7, schema_id=2, metadata_location="s3://m"
            ),
            ManifestInput(
                asset_key="s3://spool/orders",
                interval={"start": "2025-06-01T10:00:00Z", "end": "2025-06-01T11:00:00Z"},
                watermark=1748772000000,
            ),
        ),
        "window": {"start": "2025-06-01T10:00:00Z", "end": "2025-06-01T11:00:00Z"},
        "manifest_uri": "s3://manifests/dwd/dwd.g.0123456789abcdef01234567.json",
        "attempt": attempt,
        "completion_token": "ab" * 32,
        **changes,
    }
    return SentInvocation(**fields)


@given(secret=st.text(min_size=1, max_size=64), body=st.binary(max_size=256), at=st.integers(0, 2**40))
def test_signatures_are_the_dispatchers(secret: str, body: bytes, at: int) -> None:
    header = signing.sign(secret, body, at)
    assert sign(secret, body, at) == header
    assert verify_signature(secret, body, header, now=at) == at


@given(body=st.binary(min_size=1, max_size=64), flip=st.integers(0, 63))
def test_a_changed_body_or_another_secret_is_refused(body: bytes, flip: int) -> None:
    header = sign(SECRET, body, NOW)
    changed = bytearray(body)
    changed[flip % len(body)] ^= 1
    with pytest.raises(SignatureError, match="does not match"):
        verify_signature(SECRET, bytes(changed), header, now=NOW)
    with pytest.raises(SignatureError, match="does not match"):
        verify_signature("another", body, header, now=NOW)


def test_stale_missing_and_malformed_signatures() -> None:
    header = sign(SECRET, b"{}", NOW)
    with pytest.raises(SignatureError, match="300 s"):
        verify_signature(SECRET, b"{}", header, now=NOW + 301)
    assert verify_signature(SECRET, b"{}", header, now=NOW - 300) == NOW
    for bad in (None, "", "v1=abc", "t=x,v1=abc", f"t={NOW}", f"t={NOW},v1=ü"):
        with pytest.raises(SignatureError):
            verify_signature(SECRET, b"{}", bad, now=NOW)
    # two signatures during a rotation: one matching is enough
    rotating = f"{header},v1={'0' * 64}"
    assert verify_signature(SECRET, b"{}", rotating, now=NOW) == NOW


def test_the_payload_parses_into_typed_objects_wherever_it_arrives() -> None:
    invocation = sent()
    parsed = parse_invocation(invocation.body())
    assert parsed.trigger_key == invocation.trigger_key and parsed.attempt == 1
    assert parsed.completion_token == "ab" * 32
    assert parsed.completion_path == f"/runs/{invocation.trigger_key}/complete"
    assert parsed.input("iceberg://glue/ods/orders").snapshot_id == 7
    assert parsed.input("iceberg://glue/ods/orders").metadata_location == "s3://m"
    spool = parsed.input("s3://spool/orders")
    assert spool.interval is not None and spool.interval.end == "2025-06-01T11:00:00Z"
    assert parsed.window is not None and not parsed.is_replay
    assert "ab" * 32 not in repr(parsed)  # the token is a credential: kept out of logs
    # Step Functions input / a Lambda event / Airflow conf: the same object, decoded
    assert parse_invocation(invocation.payload()) == parsed
    assert from_eventbridge_event({"detail-type": "lakehook.trigger", "detail": invocation.payload()}) == parsed
    params = {"lakehook_trigger_key": invocation.trigger_key, "lakehook_payload": invocation.body().decode()}
    assert from_dolphinscheduler_params(params) == parsed
    # every attempt is the same trigger
    assert parse_invocation(sent(attempt=3).body()).trigger_key == parsed.trigger_key
    # an unpartitioned run names no partition
    assert parsed.partition is None and parsed.partition_values == {}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def test_the_receiver_reads_every_field_the_dispatcher_sends() -> None:
    # every optional field set, so every key the dispatcher can send is in the payload
    payload = sent(replay_of="dwd.g.earlier", partition="dt=2026-12-01").payload()
    read = {_camel(f.name) for f in dataclasses.fields(Invocation)} - {"raw"}
    assert set(payload) <= read, f"the receiver's Invocation does not read {sorted(set(payload) - read)}"
    pinned = {_camel(f.name) for f in dataclasses.fields(ReceivedInput)}
    every_input_field = json_form(
        ManifestInput(
            asset_key="a",
            snapshot_id=1,
            schema_id=1,
            metadata_location="m",
            watermark=1,
            commit_time=1,
            interval={"start": "2025-06-01T10:00:00Z", "end": "2025-06-01T11:00:00Z"},
        )
    )
    assert set(every_input_field) <= pinned, sorted(set(every_input_field) - pinned)


PART_NAMES = st.text(min_size=1, max_size=12)
PART_VALUES = st.none() | st.text(max_size=16)


@given(
    fields=st.lists(st.tuples(PART_NAMES, PART_VALUES), min_size=1, max_size=3, unique_by=lambda f: f[0]),
    attempt=st.integers(1, 10),
)
def test_a_partitions_run_names_its_partition_and_its_values(
    fields: list[tuple[str, str | None]], attempt: int
) -> None:
    # GIVEN a partitioned group's claim, its run manifest and its payload, as the resolver and dispatcher make them
    key = format_partition_key(fields)
    pins = (PinnedInput(asset_key="paimon://lake/ods/orders", snapshot_id=5),)
    cursor = GroupCursor.initial("r", "daily", key)
    trigger = next_trigger(
        "r", "daily", cursor, pins, status=TriggerStatus.TRIGGERING, reason=None, now=NOW * 1000, partition=key
    )
    manifest = RunManifest.for_trigger(trigger)
    payload = SentInvocation.of(trigger, manifest, "s3://m/x.json", attempt, completion_token="ab" * 32)

    # WHEN the receiver parses it, wherever it arrives
    parsed = parse_invocation(payload.body())
    assert from_eventbridge_event({"detail": payload.payload()}) == parsed

    # THEN it names the partition the run is for, and its values as the server reads them (null: the default)
    assert parsed.partition == key == manifest.partition
    assert parsed.partition_values == dict(parse_partition_key(key))
    assert parsed.partition_values == {name: (value if value != "" else None) for name, value in fields}
    assert list(parsed.partition_values) == [name for name, _ in fields]  # in the key's order


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"triggerKey": None}, "triggerKey"),
        ({"inputs": "x"}, "inputs"),
        ({"attempt": "1"}, "attempt"),
        ({"attempt": 0}, "attempt"),
        ({"attempt": True}, "attempt"),
        ({"inputs": [{"snapshotId": 1}]}, "inputs[0].assetKey"),
        ({"inputs": [{"assetKey": "a", "snapshotId": 1.5}]}, "inputs[0].snapshotId"),
        ({"window": {"start": "x"}}, "end"),
        ({"partition": 20261201}, "partition must be a string"),
        ({"partition": "2026-12-01"}, "partition"),
        ({"partition": "dt=1/dt=2"}, "partition"),
    ],
)
def test_a_payload_that_is_not_an_invocation_is_named(change: dict[str, Any], field: str) -> None:
    payload = {**sent().payload(), **change}
    with pytest.raises(InvalidPayloadError, match=field.replace("[", r"\[").replace("]", r"\]")):
        parse_invocation(json.dumps(payload))
    with pytest.raises(InvalidPayloadError, match="not JSON"):
        parse_invocation(b"\xff")
    with pytest.raises(InvalidPayloadError, match="lakehook_payload"):
        from_dolphinscheduler_params({})


def deliver(receiver: WebhookReceiver, body: bytes, **headers: str) -> tuple[int, dict[str, Any]]:
    signed = {"X-Lakehook-Signature": sign(SECRET, body, NOW), **headers}
    answer = receiver.handle(signed, body)
    return answer.status, dict(answer.body)


def test_the_receiver_starts_once_per_trigger_key() -> None:
    started: list[str] = []
    receiver = WebhookReceiver(SECRET, lambda i: started.append(i.trigger_key) or "run-1", clock=lambda: NOW)
    first, again = sent(attempt=1).body(), sent(attempt=2).body()
    key = sent().trigger_key
    assert deliver(receiver, first, **{"Idempotency-Key": key}) == (200, {"runId": "run-1", "triggerKey": key})
    assert deliver(receiver, again, **{"idempotency-key": key}) == (200, {"runId": "run-1", "triggerKey": key})
    assert started == [key]
    assert deliver(receiver, first, **{"Idempotency-Key": "other"})[0] == 400
    assert receiver.handle({"X-Lakehook-Signature": sign("wrong", first, NOW)}, first).status == 401
    assert deliver(receiver, b'{"not": "an invocation"}')[0] == 400


def test_a_key_in_progress_is_409_and_a_failed_start_is_retried() -> None:
    inside, finish = threading.Event(), threading.Event()
    calls: list[int] = []

    def start(invocation: Any) -> None:
        calls.append(invocation.attempt)
        if invocation.attempt == 1:
            inside.set()
            finish.wait(10)
        if invocation.attempt == 3:
            raise RuntimeError("queue full")

    receiver = WebhookReceiver(SECRET, start, clock=lambda: NOW)
    slow = threading.Thread(target=deliver, args=(receiver, sent(attempt=1).body()))
    slow.start()
    assert inside.wait(10)
    assert deliver(receiver, sent(attempt=2).body())[0] == 409  # lakehook timed out and sent it again
    finish.set()
    slow.join(10)
    assert calls == [1]

    failing = WebhookReceiver(SECRET, start, clock=lambda: NOW)
    assert deliver(failing, sent(attempt=3).body())[0] == 503
    assert deliver(failing, sent(attempt=4).body())[0] == 200  # forgotten, so the retry starts it
    assert calls == [1, 3, 4]


def test_in_memory_keys_expire() -> None:
    now = [0.0]
    store = InMemoryDedupStore(ttl_seconds=10, clock=lambda: now[0])
    assert store.begin("k") is None
    store.finish("k", {"runId": "r"})
    seen = store.begin("k")
    assert seen is not None and seen.answer == {"runId": "r"} and not seen.in_progress
    now[0] = 11
    assert store.begin("k") is None


def test_the_wsgi_app_serves_post_on_its_path() -> None:
    receiver = WebhookReceiver(SECRET, lambda i: None, clock=lambda: NOW)
    app = receiver.wsgi(path="/hook")
    body = sent().body()

    def call(method: str, path: str, length: str | None = None) -> str:
        import io

        statuses: list[str] = []
        environ = {
            "REQUEST_METHOD": method,
            "PATH_INFO": path,
            "CONTENT_LENGTH": length if length is not None else str(len(body)),
            "wsgi.input": io.BytesIO(body),
            "HTTP_X_LAKEHOOK_SIGNATURE": sign(SECRET, body, NOW),
        }
        b"".join(app(environ, lambda status, headers: statuses.append(status)))
        return statuses[0]

    assert call("POST", "/hook") == "200 OK"
    assert call("GET", "/hook").startswith("405")
    assert call("POST", "/other").startswith("404")
    assert call("POST", "/hook", str(2 * 1024 * 1024)).startswith("413")


def test_the_receiver_needs_the_standard_library_only() -> None:
    code = (
        "import sys, lakehook.receiver; "
        "ours = {'lakehook', '__main__'}; "
        "print(sorted({m.split('.')[0] for m in sys.modules} - set(sys.stdlib_module_names) - ours))"
    )
    source = str(Path(__file__).resolve().parents[2] / "src" / "shared")
    # -S: no site-packages at all, so a third-party import would fail, not just show up
    found = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, check=True, env={"PYTHONPATH": source}
    )
    assert found.stdout.strip() == "[]", found.stdout
