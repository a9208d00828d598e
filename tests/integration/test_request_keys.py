"""The request record of the TriggerStore port, on DynamoDB (moto) and in the in-memory fake alike: written with its
claim or not at all, answered while it lives, and free again once its 7 days are over (DynamoDB's TTL deletes
lazily, so an expired record still stored must not answer nor block)."""

from __future__ import annotations

from typing import Any

import pytest

from lakehook.adapters.dynamodb.trigger_store import DynamoDBTriggerStore
from lakehook.domain.requests import REQUEST_RETENTION_SECONDS, RecordedRequest, RequestKey
from lakehook.domain.triggers import PinnedInput, Trigger, TriggerStatus, trigger_key
from lakehook.ports.rules import TriggerStore
from tests.fakes.memory_rules import InMemoryTriggerStore

pytestmark = pytest.mark.integration

NOW = 1_750_000_000_000
PINS = (PinnedInput(asset_key="paimon://lake/ods/a", snapshot_id=1),)


def replay(epoch: int) -> Trigger:
    key = trigger_key("r", "g", PINS, None, epoch)
    return Trigger(
        trigger_key=key,
        rule_id="r",
        group_id="g",
        status=TriggerStatus.TRIGGERING,
        inputs=PINS,
        created_at=NOW,
        updated_at=NOW,
        replay_epoch=epoch,
    )


def recorded(trigger: Trigger, at: int, request: RequestKey | None = None) -> RecordedRequest:
    request = request or RequestKey.of("k-1", "replay", {"triggerKey": "r.g.original"})
    assert request is not None
    return RecordedRequest.of(request, 201, {"replay": {"triggerKey": trigger.trigger_key}}, trigger.trigger_key, at)


@pytest.fixture(params=["dynamodb", "memory"])
def store(request: pytest.FixtureRequest, table: Any) -> TriggerStore:
    return DynamoDBTriggerStore(table) if request.param == "dynamodb" else InMemoryTriggerStore()


def test_the_claim_and_its_request_record_are_written_together_or_not_at_all(store: TriggerStore) -> None:
    first = store.put_replay_once(replay(1), recorded(replay(1), NOW))
    assert first.claimed and first.answered is None
    # the same key again, for the next epoch: nothing written, the first answer handed back
    again = store.put_replay_once(replay(2), recorded(replay(2), NOW + 1))
    assert not again.claimed and again.answered == recorded(replay(1), NOW)
    assert store.get(replay(2).trigger_key) is None
    # another key, for a trigger key that is taken: nothing written, no answer (the caller tries the next epoch)
    other = RequestKey.of("k-2", "replay", {"triggerKey": "r.g.original"})
    taken = store.put_replay_once(replay(1), recorded(replay(1), NOW, other))
    assert (taken.claimed, taken.answered) == (False, None)
    assert store.get_request("k-2", NOW) is None


def test_a_request_record_answers_for_seven_days_then_the_key_is_free_again(store: TriggerStore) -> None:
    assert store.put_replay_once(replay(1), recorded(replay(1), NOW)).claimed
    last = NOW + REQUEST_RETENTION_SECONDS * 1000 - 1000
    assert store.get_request("k-1", last) == recorded(replay(1), NOW)
    over = NOW + REQUEST_RETENTION_SECONDS * 1000
    assert store.get_request("k-1", over) is None  # expired, though the record may still be stored
    fresh = store.put_replay_once(replay(2), recorded(replay(2), over))
    assert fresh.claimed and store.get_request("k-1", over) == recorded(replay(2), over)
