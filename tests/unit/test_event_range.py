"""EventRange (``GET /assets/events``'s range): every range it accepts is a key range DynamoDB can query, its low
end at or below its high end (a ``BETWEEN`` with the bounds reversed is DynamoDB's ValidationException, a 500);
an empty one is refused naming its end."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.adapters.dynamodb import keys
from lakehook.domain.errors import ValidationError
from lakehook.domain.event_range import LAST_INSTANT, EventRange
from lakehook.domain.limits import MAX_LONG
from tests.hypothesis_profiles import examples

INSTANTS = st.none() | st.integers(0, 253_402_300_799_999) | st.sampled_from([0, 1, LAST_INSTANT])
VERSIONS = st.none() | st.integers(0, MAX_LONG) | st.sampled_from([0, 1, MAX_LONG])


@settings(max_examples=examples(300))
@given(start=INSTANTS, end=INSTANTS, from_version=VERSIONS, to_version=VERSIONS)
def test_every_range_accepted_is_a_key_range_with_its_low_end_below_its_high_end(
    start: int | None, end: int | None, from_version: int | None, to_version: int | None
) -> None:
    try:
        within = EventRange(start, end, from_version, to_version)
    except ValidationError as exc:
        assert exc.field in ("fromVersion", "toVersion", "start", "end")
        return
    if within.by_version:
        low, high = keys.events_version_range(*within.version_bounds)
    else:
        low, high = keys.events_received_range(*within.received_bounds)
    assert low <= high, (within, low, high)


def test_an_end_at_the_epoch_is_refused_naming_end() -> None:
    """``[start, 1970-01-01T00:00:00Z)`` holds nothing: refused, as an end at or before its start is."""
    with pytest.raises(ValidationError) as refused:
        EventRange(end=0)
    assert refused.value.field == "end"
