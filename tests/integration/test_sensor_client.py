"""``LakehookClient`` (lakehook.client.sensor) over HTTP against the API itself, on the in-memory fakes: evaluate once,
wait for a condition that comes true while it waits, time out naming what it still waits for."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from lakehook import container
from lakehook.client import LakehookClient, SensorRejectedError, SensorTimeoutError, SensorUnavailableError
from lakehook.client import sensor as client_sensor
from lakehook.domain import sensors
from tests.api_server import ApiServer, api_on_fakes
from tests.fakes.http_server import Request, Response

TOKEN = "sensor-admin"
A = "paimon://lake/ods/a"
GROUP = {"members": [{"assetKey": A, "condition": {"minSnapshotId": 2}}]}


@pytest.fixture
def api() -> Iterator[ApiServer]:
    with api_on_fakes(TOKEN) as server:
        yield server


def push(snapshot_id: int) -> None:
    """A commit of A, ingested as a push is (straight to the use case: the API serves one request at a time per
    process, as Lambda does, and a long-poll is holding it)."""
    event = {"eventType": "SNAPSHOT_COMMITTED", "assetKey": A, "snapshotId": snapshot_id, "commitTime": 1_750_000_000}
    assert [r.status.value for r in container.current().push_events(event, None)] == ["ACCEPTED"]


def test_the_client_bound_is_the_servers() -> None:
    assert client_sensor.MAX_WAIT_SECONDS == sensors.MAX_WAIT_SECONDS


def test_evaluate_once_answers_the_verdict_and_the_pins(api: ApiServer) -> None:
    client = LakehookClient(api.base_url, token=TOKEN)
    result = client.evaluate(group=GROUP)
    assert (result.ready, result.verdict, result.pins) == (False, "BLOCKED_BY_UNKNOWN_ASSET", [])
    push(2)
    result = client.evaluate(group=GROUP)
    assert result.ready and result.verdict == "READY" and [p["snapshotId"] for p in result.pins] == [2]


def test_wait_for_returns_once_a_commit_satisfies_the_condition(api: ApiServer) -> None:
    client = LakehookClient(api.base_url, token=TOKEN)
    push(1)  # below minSnapshotId
    later = threading.Timer(1.0, push, args=(2,))
    later.start()
    try:
        result = client.wait_for(group=GROUP, timeout=15)
    finally:
        later.cancel()
    assert result.ready and [p["snapshotId"] for p in result.pins] == [2]
    evaluations = [r for r in api.requests if r.path == "/sensors/evaluate"]
    assert len(evaluations) == 1  # one long-poll saw it: no request per second


def test_wait_for_times_out_with_what_it_still_waits_for(api: ApiServer) -> None:
    push(1)
    client = LakehookClient(api.base_url, token=TOKEN)
    with pytest.raises(SensorTimeoutError) as raised:
        client.wait_for(group=GROUP, timeout=1)
    assert raised.value.last.verdict == "BLOCKED_BY_SNAPSHOT" and A in str(raised.value)


@pytest.mark.parametrize(
    ("call", "status"),
    [
        ({"rule": "nope"}, 404),
        ({"group": {"members": [{"assetKey": A, "bogus": 1}]}}, 400),
    ],
)
def test_refusals_are_not_retried(api: ApiServer, call: dict[str, Any], status: int) -> None:
    client = LakehookClient(api.base_url, token=TOKEN)
    with pytest.raises(SensorRejectedError) as raised:
        client.evaluate(**call)
    assert raised.value.status == status
    assert len([r for r in api.requests if r.path == "/sensors/evaluate"]) == 1


def test_without_credentials_it_is_a_401(api: ApiServer) -> None:
    with pytest.raises(SensorRejectedError) as raised:
        LakehookClient(api.base_url).evaluate("orders")
    assert raised.value.status == 401


class Flaky(ApiServer):
    """The API, answering 503 to the first ``failures`` requests (an outage while a sensor waits)."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    def dispatch(self, request: Request) -> Response:
        if self.failures > 0:
            self.failures -= 1
            return Response(503, {"message": "Service Unavailable"})
        return super().dispatch(request)


def test_wait_for_waits_an_outage_out_but_not_past_its_timeout(api: ApiServer) -> None:
    push(2)
    with Flaky(failures=5) as flaky:  # each evaluate gives up after 2 attempts: 3 evaluations fail
        client = LakehookClient(flaky.base_url, token=TOKEN, max_attempts=2, backoff_seconds=0.01)
        assert client.wait_for(group=GROUP, timeout=30).ready
        assert len(flaky.requests) == 6
    with Flaky(failures=10**6) as down:
        client = LakehookClient(down.base_url, token=TOKEN, max_attempts=2, backoff_seconds=0.01)
        with pytest.raises(SensorUnavailableError):
            client.wait_for(group=GROUP, timeout=1)
