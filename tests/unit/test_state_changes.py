"""The domain decides a state change over typed fields, the store applies it, the use case reads the answer.

``advance_for`` answers an ``Advance`` whose every field is a ``StateField`` (no stored attribute name in the domain);
the store applies it as one conditional write and hands a refusal back with the fields it saw; the use case
(``usecases.ingest_state``) decides ALREADY or STALE, one store call per decision (two for a late event whose
remainder still applies). Attribute paths and DynamoDB's condition semantics live in the adapters only.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.adapters.dynamodb.state_items import attribute_path
from lakehook.domain.events import AssetEvent, EventType
from lakehook.domain.state import AssetState, advance_for
from lakehook.domain.state_changes import Advance, AllOf, Below, NotAllEqual, NotInSet, StateField, WhileEqual
from lakehook.ports.store import AdvanceOutcome, ChangeApplied, ChangeRefused, ChangeResult
from lakehook.usecases.ingest_state import advance_state
from tests.fakes.memory import InMemoryAssetStore
from tests.hypothesis_profiles import examples

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "shared" / "lakehook"
ASSET = "paimon://lake/ods_db/orders"
T0 = 1_750_000_000_000


def event_of(event_type: EventType, version: int) -> AssetEvent:
    """An event of any type whose content is a function of its version, so that copies and older ones collide."""
    payload: dict[EventType, dict[str, Any]] = {
        EventType.SNAPSHOT_COMMITTED: {"snapshotId": version, "schemaId": version // 2, "commitTime": T0 + version}
        | ({"commitKind": "COMPACT"} if version % 3 == 0 else {}),
        EventType.WATERMARK_ADVANCED: {"watermark": T0 + version},
        EventType.TAG_CREATED: {"tag": f"t{version}", "snapshotId": version},
        EventType.QUALITY_CHECK_PASSED: {"snapshotId": version},
        EventType.QUALITY_CHECK_FAILED: {"snapshotId": version},
        EventType.SCHEMA_CHANGE_APPROVED: {"schemaId": version},
        EventType.SCHEMA_CHANGE_REJECTED: {"schemaId": version},
        EventType.BACKFILL_STARTED: {"backfillId": f"b{version}"},
        EventType.BACKFILL_COMPLETED: {"backfillId": f"b{version}"},
        EventType.CDC_LAG_RECOVERED: {"watermark": T0 + version},
        EventType.MANIFEST_SEALED: {"manifestUri": f"s3://spool/m/{version}.json", "snapshotId": version},
        EventType.MANIFEST_INTERRUPTED: {"manifestUri": f"s3://spool/m/{version}.json", "snapshotId": version},
        EventType.INTERVAL_COVERED: {"interval": {"start": version * 60_000, "end": (version + 1) * 60_000}},
    }
    return AssetEvent.model_validate({"eventType": event_type, "assetKey": ASSET, **payload[event_type]})


EVENTS = st.builds(event_of, st.sampled_from(list(EventType)), st.integers(1, 5))


class CountingAssetStore(InMemoryAssetStore):
    """The in-memory fake, keeping every change the use case sends it and what it answered."""

    def __init__(self) -> None:
        super().__init__()
        self.changes: list[tuple[Advance, ChangeResult]] = []

    def apply_change(self, asset_key: str, change: Advance, marker: str, now_ms: int) -> ChangeResult:
        result = super().apply_change(asset_key, change, marker, now_ms)
        self.changes.append((change, result))
        return result


def _fields(advance: Advance) -> list[Any]:
    """Every field an advance names: in its guard, its sets, its decision on a refusal and its late remainder."""
    guards = advance.guard.guards if isinstance(advance.guard, AllOf) else (advance.guard,)
    named: list[Any] = []
    for guard in guards:
        if isinstance(guard, Below | NotInSet):
            named.append(guard.field)
        elif isinstance(guard, WhileEqual):
            named += [name for name, _ in guard.pairs + guard.changes]
        elif isinstance(guard, NotAllEqual):
            named += [name for name, _ in guard.pairs]
    named += [*advance.sets, *advance.set_if_absent, *advance.add_to_set, *advance.settled_later]
    named += [name for name, _ in advance.applied_if]
    return named + (_fields(advance.late) if advance.late is not None else [])


@given(EVENTS, st.integers(0, 10**6))
def test_every_change_the_domain_decides_names_typed_state_fields_only(event: AssetEvent, recorded_at: int) -> None:
    change = advance_for(event, recorded_at)
    if change is None:
        return
    named = _fields(change)
    assert named and all(type(name) is StateField for name in named), named


@settings(max_examples=examples(200))
@given(st.lists(st.tuples(EVENTS, st.booleans()), min_size=1, max_size=24))
def test_one_store_call_per_decision_and_the_use_case_decides_on_the_fields_seen(
    deliveries: list[tuple[AssetEvent, bool]],
) -> None:
    store = CountingAssetStore()
    first_recorded: dict[str, int] = {}
    for at, (event, twice) in enumerate(deliveries):
        outcomes = []
        for _ in range(2 if twice else 1):
            delivered_before = event.event_id in first_recorded
            recorded = first_recorded.setdefault(event.event_id, T0 + at)
            before = len(store.changes)
            outcomes.append(advance_state(store, event, T0 + at, recorded_at=recorded))
            change = advance_for(event, recorded)
            _check_answer(outcomes[-1], store.changes[before:], change)
            assert delivered_before or outcomes[-1] is not AdvanceOutcome.ALREADY, event  # ALREADY: a copy
        if outcomes[0] in (AdvanceOutcome.ADVANCED, AdvanceOutcome.ALREADY) and twice:  # a copy right after
            assert outcomes[1] is AdvanceOutcome.ALREADY, (event, outcomes)


def _check_answer(outcome: AdvanceOutcome, sent: list[tuple[Advance, ChangeResult]], change: Advance | None) -> None:
    """The outcome follows from the store's answers alone: applied, or refused with typed fields the use case read."""
    if change is None:
        assert outcome is AdvanceOutcome.NO_STATE and sent == []
        return
    first = sent[0][1]
    assert (outcome is AdvanceOutcome.ADVANCED) is isinstance(first, ChangeApplied)
    if isinstance(first, ChangeRefused):
        assert all(type(name) is StateField for name in first.seen)
    remainder = outcome is AdvanceOutcome.STALE and change.late is not None
    assert [c for c, _ in sent] == [change, change.late] if remainder else [change]


def test_each_state_field_is_stored_where_the_read_model_reads_it() -> None:
    paths = {name: attribute_path(name) for name in StateField}
    assert len(set(paths.values())) == len(paths)  # no two fields share an attribute
    read = AssetState.model_fields
    for name, path in paths.items():
        if name.value in read:
            assert path == (read[name.value].alias or name.value,), name
    assert paths[StateField.LATEST_DATA_ORDER] == ("latestData", "order")


def _imported_names(module: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("lakehook.domain"):
            found |= {alias.name for alias in node.names}
    return found


def _defined_functions(module: Path) -> set[str]:
    return {n.name for n in ast.walk(ast.parse(module.read_text())) if isinstance(n, ast.FunctionDef)}


def test_the_adapters_decide_nothing_and_the_domain_emulates_no_condition() -> None:
    decisions = {"advance_for", "already_applied", "verdict_touch", "verification_advance"}
    emulator = {"guard_holds", "apply_advance"}
    for module in (PACKAGE / "adapters").rglob("*.py"):
        assert not _imported_names(module) & decisions, module
        if module.parent.name != "memory":
            assert not _defined_functions(module) & emulator, module
    for module in (PACKAGE / "domain").glob("*.py"):
        assert not _defined_functions(module) & emulator, module
