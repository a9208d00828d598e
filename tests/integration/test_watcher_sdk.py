"""The watcher SDK (lakehook.client.watcher) over HTTP against the API itself, on the in-memory fakes: a producer's
signature reaches the watermarks of its ``watermarkNamespaces`` only, writes are compare-and-set, and the example
watcher (docs/examples/watchers/directory_watcher.py) announces new files once, across restarts."""

from __future__ import annotations

import importlib.util
import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from lakehook import container
from lakehook.client import (
    PushClient,
    Watcher,
    Watermark,
    WatermarkClient,
    WatermarkConflictError,
    WatermarkRejectedError,
)
from lakehook.client.signing import sign
from tests.api_server import ApiServer, api_on_fakes, register_producer
from tests.fakes.http_server import Request, Response

TOKEN = "watcher-admin"
ASSET = "file://landing/orders"
EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "watchers" / "directory_watcher.py"


@pytest.fixture
def api() -> Iterator[ApiServer]:
    with api_on_fakes(TOKEN) as server:
        yield server


def watcher_client(api: ApiServer, namespaces: list[str], producer: str = "dir-watcher") -> WatermarkClient:
    return WatermarkClient(api.base_url, producer, secret_of(producer, namespaces), backoff_seconds=0.01)


def secret_of(producer: str, namespaces: list[str]) -> str:
    """Register a watcher's producer: its assets under file://landing, its watermarks in ``namespaces``."""
    return register_producer(producer, {"assetKeyPrefixes": ["file://landing"], "watermarkNamespaces": namespaces})


class Counter(Watcher):
    def __init__(self, client: WatermarkClient, high: int) -> None:
        super().__init__(client, "watchers", ASSET, key="offset")
        self.high = high

    def get_high_watermark(self) -> int:
        return self.high


def test_low_watermark_is_none_until_persisted_then_what_was_persisted(api: ApiServer) -> None:
    client = watcher_client(api, ["watchers"])
    first = Counter(client, 10)
    assert first.low_watermark is None
    assert first.persist_watermark(first.get_high_watermark()) == Watermark(10, 1)
    restarted = Counter(client, 12)
    assert restarted.low_watermark == 10
    assert restarted.persist_watermark(12).version == 2
    stored = container.current().watermark_store.get("watchers", ASSET, "offset")
    assert stored is not None and (stored.value, stored.version) == (12, 2)


def test_two_copies_never_both_advance_from_the_same_low_watermark(api: ApiServer) -> None:
    client = watcher_client(api, ["watchers"])
    one, two = Counter(client, 5), Counter(client, 6)
    assert one.low_watermark is None and two.low_watermark is None
    one.persist_watermark(5)
    with pytest.raises(WatermarkConflictError):
        two.persist_watermark(6)
    assert two.refresh() == 5  # the loser re-reads what the winner persisted, and may go on from there
    assert two.persist_watermark(6).version == 2


@pytest.mark.parametrize("namespaces", [[], ["others"]])
def test_a_namespace_outside_the_producers_is_a_403(api: ApiServer, namespaces: list[str]) -> None:
    client = watcher_client(api, namespaces)
    for attempt in (lambda: client.get("watchers", ASSET, "offset"), lambda: Counter(client, 1).persist_watermark(1)):
        with pytest.raises(WatermarkRejectedError) as raised:
            attempt()
        assert raised.value.status == 403 and "watchers" in str(raised.value)
    assert container.current().watermark_store.get("watchers", ASSET, "offset") is None


def test_a_wrong_secret_is_a_401_and_a_producer_cannot_delete(api: ApiServer) -> None:
    watcher_client(api, ["watchers"])
    forged = WatermarkClient(api.base_url, "dir-watcher", "not-the-secret")
    with pytest.raises(WatermarkRejectedError) as raised:
        forged.get("watchers", ASSET, "offset")
    assert raised.value.status == 401
    secret = secret_of("deleter", ["watchers"])
    headers = {"X-Lakehook-Producer": "deleter", "X-Lakehook-Signature": sign(secret, b"", int(time.time()))}
    url = f"{api.base_url}/watermarks?namespace=watchers&assetKey={ASSET}&key=offset"
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(urllib.request.Request(url, method="DELETE", headers=headers))
    assert refused.value.code == 401  # DELETE takes management credentials only


@pytest.mark.parametrize(
    ("namespaces", "named"),
    [(["bad ns"], "watermarkNamespaces"), (["a", "a"], "twice"), ([f"n{i}" for i in range(21)], "watermarkNamespaces")],
)
def test_bad_watermark_namespaces_are_a_400(api: ApiServer, namespaces: list[str], named: str) -> None:
    body = json.dumps({"assetKeyPrefixes": ["file://landing"], "watermarkNamespaces": namespaces}).encode()
    request = urllib.request.Request(
        f"{api.base_url}/producers/p1",
        data=body,
        method="PUT",
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request)
    answer: dict[str, Any] = json.loads(refused.value.read())
    assert refused.value.code == 400 and named in answer["message"], answer


def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("watcher_example_directory", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_example_watcher_announces_new_files_once_across_restarts(api: ApiServer, tmp_path: Path) -> None:
    module = example()
    secret = secret_of("dir-watcher", [module.NAMESPACE])
    client = WatermarkClient(api.base_url, "dir-watcher", secret)
    push = PushClient(api.base_url, "dir-watcher", secret, backoff_seconds=0.01)
    assert module.turn(module.DirectoryWatcher(client, ASSET, tmp_path), push) is None  # an empty directory
    (tmp_path / "a.csv").write_text("1")
    os.utime(tmp_path / "a.csv", ns=(1_750_000_000_000_000_000, 1_750_000_000_000_000_000))
    event = module.turn(module.DirectoryWatcher(client, ASSET, tmp_path), push)
    assert event == {"eventType": "WATERMARK_ADVANCED", "assetKey": ASSET, "watermark": 1_750_000_000_000}
    restarted = module.DirectoryWatcher(client, ASSET, tmp_path)
    assert module.turn(restarted, push) is None  # nothing new since the last turn, even in a new process
    (tmp_path / "b.csv").write_text("2")
    os.utime(tmp_path / "b.csv", ns=(1_750_000_060_000_000_000, 1_750_000_060_000_000_000))
    assert module.turn(restarted, push)["watermark"] == 1_750_000_060_000
    state = container.current().asset_store.get_state(ASSET)
    assert state is not None and state.watermark == 1_750_000_060_000


class LostAnswer(ApiServer):
    """Applies the first PUT, then answers it 503 (the answer was lost): the client's retry finds the write done."""

    lost = False

    def dispatch(self, request: Request) -> Response:
        answer = super().dispatch(request)
        if request.method == "PUT" and not self.lost:
            self.lost = True
            return Response(503, {"message": "Service Unavailable"})
        return answer


def test_a_write_retried_after_a_lost_answer_that_finds_itself_in_place_succeeded(api: ApiServer) -> None:
    secret = secret_of("dir-watcher", ["watchers"])
    with LostAnswer() as lossy:
        client = WatermarkClient(lossy.base_url, "dir-watcher", secret, backoff_seconds=0.01)
        assert Counter(client, 7).persist_watermark(7) == Watermark(7, 1)  # the retry's 409 was its own write
        assert [r.method for r in lossy.requests] == ["GET", "PUT", "PUT", "GET"]  # read, lost, 409, read back
        other = Counter(client, 8)
        assert other.low_watermark == 7
        lossy.lost = False  # lose the next answer too; meanwhile another copy moves the watermark on
        container.current().watermark_store.put("watchers", ASSET, "offset", 9, now_ms=1, expected_version=1)
        with pytest.raises(WatermarkConflictError):  # not its own write: a real conflict
            other.persist_watermark(8)
