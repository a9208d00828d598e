"""Racing dispatchers over run slots against a moto server: two never both take the last slot.

Twelve threads, each with its own boto3 session (as separate dispatcher invocations), admit twelve claims of one rule
with ``maxInFlight: 3`` at once: exactly three hold a slot, nine wait in claim order, each marked waiting on its claim.
Then the three holders' runs end at once: their slots go to the three earliest waiting, each woken through its claim
(``wake`` = ``SLOT``, the record that starts the dispatcher). The server applies one DynamoDB request at a time, as
the service does per request (``tests.racing``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lakehook.adapters.dynamodb.run_slot_store import DynamoDBRunSlotStore
from lakehook.adapters.dynamodb.trigger_ledger import DynamoDBTriggerLedger
from lakehook.adapters.dynamodb.trigger_store import DynamoDBTriggerStore
from lakehook.domain.run_slots import Admission, SlotLimit, SlotScope
from lakehook.domain.triggers import PinnedInput, Trigger
from lakehook.usecases.run_slots import RunSlotGate, place_of
from tests import racing
from tests.racing import atomic_dynamodb_server, race

pytestmark = pytest.mark.integration

TABLE = "lakehook-slots-race"
RACERS = 12
LIMIT = SlotLimit(3, 3_600_000)
T0 = 1_750_000_000_000
ODS = "paimon://lake/ods/orders"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with atomic_dynamodb_server(TABLE) as url:
        yield url


def claim(rule_id: str, n: int) -> Trigger:
    return Trigger(
        trigger_key=f"{rule_id}.g.{n:024x}",
        rule_id=rule_id,
        group_id="g",
        inputs=(PinnedInput(asset_key=ODS, snapshot_id=n),),
        created_at=T0 + n,
        updated_at=T0 + n,
        sequence=n,
    )


def gates(url: str) -> list[RunSlotGate]:
    """One gate per racer, each on its own session."""
    made = []
    for _ in range(RACERS):
        table = racing.table_at(url, TABLE)
        made.append(RunSlotGate(DynamoDBRunSlotStore(table), DynamoDBTriggerLedger(table), clock=lambda: T0 + 100))
    return made


@pytest.mark.parametrize("round_", range(2))
def test_racing_dispatchers_take_exactly_max_in_flight_slots_and_queue_the_rest_in_claim_order(
    endpoint: str, round_: int
) -> None:
    rule_id = f"race{round_}"
    table = racing.table_at(endpoint, TABLE)
    claims = [claim(rule_id, n) for n in range(RACERS)]
    for c in claims:
        assert DynamoDBTriggerStore(table).put_replay(c)
    racers = gates(endpoint)

    answers: list[Admission] = race(RACERS, lambda i: racers[i].admit(claims[(i * 5) % RACERS], LIMIT))
    assert sum(a.granted for a in answers) == LIMIT.max_in_flight
    slots, _ = DynamoDBRunSlotStore(table).read(SlotScope(rule_id))
    assert len(slots.holders) == 3 and len(slots.queue) == RACERS - 3
    assert [p.trigger_key for p in slots.queue] == sorted(p.trigger_key for p in slots.queue)  # claim order
    ledger = DynamoDBTriggerLedger(table)
    waiting = {c.trigger_key for c in claims if (e := ledger.get(c.trigger_key)) and e.trigger.slot_wait}
    assert waiting == {p.trigger_key for p in slots.queue}

    holders = sorted(slots.holders)
    handed = race(3, lambda i: racers[i].release(claim(rule_id, int(holders[i].rsplit(".", 1)[1], 16)), LIMIT))
    woken = sorted(k for keys in handed for k in keys)
    assert woken == [p.trigger_key for p in slots.queue[:3]]  # the three claimed earliest, whoever released first
    after, _ = DynamoDBRunSlotStore(table).read(SlotScope(rule_id))
    assert sorted(after.holders) == woken and len(after.queue) == RACERS - 6
    for key in woken:
        entry = ledger.get(key)
        assert entry is not None and entry.trigger.slot_wait is None
        item = table.get_item(Key={"PK": f"TRIGGER#{key}", "SK": "CLAIM"})["Item"]
        assert item["wake"] == "SLOT"


def test_a_write_based_on_a_read_from_before_the_scope_was_emptied_fails(endpoint: str) -> None:
    """X holds the only slot; Z reads; X's run ends (the scope is emptied, its item deleted); Y takes the slot (the item
    made anew); Z's write, based on its read from before the delete, must fail, or Y's slot is lost (found in review:
    the version restarted at 1, so it went through)."""
    table = racing.table_at(endpoint, TABLE)
    store = DynamoDBRunSlotStore(table)
    scope = SlotScope("emptied")
    one = SlotLimit(1, 3_600_000)
    x, y, z = (place_of(claim("emptied", n)) for n in (1, 2, 3))
    slots, version = store.read(scope)
    admitted, _ = slots.admit(x, T0, one)
    assert store.write(scope, admitted, version)
    stale, stale_version = store.read(scope)  # Z's read: X holds the slot
    held, version = store.read(scope)
    released, _ = held.release((x.trigger_key,), T0 + 1, one)
    assert released.empty and store.write(scope, released, version)  # X ends: the item is deleted
    fresh, version = store.read(scope)
    taken, _ = fresh.admit(y, T0 + 2, one)
    assert store.write(scope, taken, version)  # Y holds the slot
    late, _ = stale.admit(z, T0 + 3, one)
    assert not store.write(scope, late, stale_version)
    assert list(store.read(scope)[0].holders) == [y.trigger_key]
