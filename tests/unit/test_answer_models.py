"""The answer models built from a domain model's own fields (``lakehook.answers``, ``api.answers``) declare every
field of it, in its order: an answer body is the model's dump, so a field the domain gains but the answer does not
declare would drop out of the answer (and the OpenAPI document) without a word, and one declared out of order would
move in the body."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal, get_args, get_origin

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from lakehook.answers.assets import (
    AssetAnswer,
    AssetStateAnswer,
    PollStatusAnswer,
    SnapshotGapAnswer,
    UnrecordedPartitionsAnswer,
)
from lakehook.answers.freshness import OverdueAnswer
from lakehook.answers.triggers import (
    ConfirmationAnswer,
    PinnedInputAnswer,
    PreflightItemAnswer,
    TriggerAnswer,
    TriggerSummary,
)
from lakehook.api.answers import EventResult, ProducerAnswer, WatermarkAnswer
from lakehook.domain.assets import AssetRegistration
from lakehook.domain.confirmation import Confirmation, ConfirmationState
from lakehook.domain.events import IngestStatus
from lakehook.domain.freshness import OverdueKind
from lakehook.domain.producers import Producer
from lakehook.domain.snapshots import PollStatus, SnapshotGap, UnrecordedPartitions
from lakehook.domain.state import AssetState
from lakehook.domain.time import MAX_ISO_MS
from lakehook.domain.triggers import FailureKind, PinnedInput, TriggerStatus
from lakehook.domain.watermarks import WatermarkRecord
from lakehook.usecases.spool import Check, ItemStatus

# (domain model, its answer, what the answer leaves out of it, whether the answer keeps the domain's order)
BUILT_FROM_FIELDS: list[tuple[type[BaseModel], type[BaseModel], set[str], bool]] = [
    (AssetState, AssetStateAnswer, {"tagRefs"}, True),  # tagRefs: the tags' snapshots, an internal index
    (AssetRegistration, AssetAnswer, set(), True),
    (Producer, ProducerAnswer, set(), True),
    (PinnedInput, PinnedInputAnswer, set(), True),
    (Confirmation, ConfirmationAnswer, set(), True),
    (WatermarkRecord, WatermarkAnswer, set(), True),
    (SnapshotGap, SnapshotGapAnswer, set(), True),
    (UnrecordedPartitions, UnrecordedPartitionsAnswer, set(), True),
    (PollStatus, PollStatusAnswer, set(), False),  # its lists and gaps are answered after its instants
]


def names(model: type[BaseModel]) -> list[str]:
    return [field.alias or name for name, field in model.model_fields.items()]


@pytest.mark.parametrize(
    ("domain", "answer", "left_out", "ordered"), BUILT_FROM_FIELDS, ids=lambda v: getattr(v, "__name__", "")
)
def test_an_answer_declares_every_field_of_its_domain_model_in_its_order(
    domain: type[BaseModel], answer: type[BaseModel], left_out: set[str], ordered: bool
) -> None:
    expected = [n for n in names(domain) if n not in left_out]
    declared = names(answer)
    assert set(expected) <= set(declared), f"{answer.__name__} lacks {sorted(set(expected) - set(declared))}"
    if ordered:
        assert [n for n in declared if n in expected] == expected


def test_a_field_the_domain_gains_shows_as_missing() -> None:
    class Grown(Confirmation):
        reviewed_by: str | None = None

    with pytest.raises(AssertionError, match="reviewed_by"):
        test_an_answer_declares_every_field_of_its_domain_model_in_its_order(Grown, ConfirmationAnswer, set(), True)


def literal_values(model: type[BaseModel], field: str) -> set[str]:
    """The strings a Literal field (optional or not) allows."""
    found: set[str] = set()
    pending = [model.model_fields[field].annotation]
    while pending:
        hint = pending.pop()
        if get_origin(hint) is Literal:
            found.update(get_args(hint))
        else:
            pending.extend(get_args(hint))
    return found


# An answer checks what it is built from: a Literal narrower than the domain's enum would fail a request (a 500).
ENUM_FIELDS: list[tuple[type[BaseModel], str, type[StrEnum]]] = [
    (TriggerAnswer, "status", TriggerStatus),
    (TriggerAnswer, "failure", FailureKind),
    (TriggerSummary, "status", TriggerStatus),
    (ConfirmationAnswer, "state", ConfirmationState),
    (EventResult, "status", IngestStatus),
    (PreflightItemAnswer, "check", Check),
    (PreflightItemAnswer, "status", ItemStatus),
    (OverdueAnswer, "kind", OverdueKind),
]


@pytest.mark.parametrize(("answer", "field", "enum"), ENUM_FIELDS, ids=lambda v: getattr(v, "__name__", str(v)))
def test_an_answer_takes_every_value_of_the_domain_enum_it_shows(
    answer: type[BaseModel], field: str, enum: type[StrEnum]
) -> None:
    assert literal_values(answer, field) == {e.value for e in enum}


# The state's scalar fields a read may find set or unset (the nested and derived ones are built apart below).
_STATE_SCALARS = {
    name: field.annotation
    for name, field in AssetState.model_fields.items()
    if field.annotation in (int | None, str | None, bool | None)
}


def _scalar(hint: object) -> st.SearchStrategy[object]:
    value: st.SearchStrategy[object] = (
        st.integers(0, 2**53) if hint == int | None else st.booleans() if hint == bool | None else st.text(max_size=8)
    )
    return st.none() | value


@st.composite
def asset_states(draw: st.DrawFn) -> AssetState:
    fields = {name: draw(_scalar(hint)) for name, hint in _STATE_SCALARS.items()}
    fields["updated_at"] = draw(st.none() | st.integers(0, MAX_ISO_MS))  # a clock's instant: one ISO can name
    tags = draw(st.frozensets(st.text(min_size=1, max_size=6), max_size=3))
    return AssetState.model_validate({**fields, "asset_key": "iceberg://glue/db/t", "version": 1, "tags": set(tags)})


@given(asset_states())
def test_the_state_answer_shows_each_field_the_state_has_and_none_it_lacks(state: AssetState) -> None:
    stored = state.model_dump(by_alias=True, mode="json", exclude_none=True, exclude={"tag_refs", "tags"})
    shown = AssetStateAnswer.from_domain(state, registered=True).dump()
    derived = {"tags", "watermark", "schemaStatus", "qualityStatus", "registered"}
    assert set(shown) == set(stored) | derived
    assert {k: v for k, v in shown.items() if k in stored and k != "updatedAt"} == {
        k: v for k, v in stored.items() if k != "updatedAt"
    }
    assert shown["tags"] == sorted(state.tags) and shown["watermark"] == state.watermark
    declared = names(AssetStateAnswer)
    assert list(shown) == sorted(shown, key=declared.index)  # in the answer's (the state's) order
